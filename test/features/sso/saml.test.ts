/**
 * SAML 2.0 sign-in through an organization's connection (docs/sso.md)
 * against an identity provider in the test process (test/helpers/saml_idp.ts:
 * keys made for each test, responses signed with xml-crypto): SP-initiated
 * (the AuthnRequest's ID answered in InResponseTo, the state cookie) and
 * IdP-initiated sign-in create the user, its membership with the
 * connection's default role and its mapped team, and a later sign-in brings
 * them up to the groups sent then. Each refusal — unsigned, wrong audience,
 * expired, replayed, signature wrapping, an assertion for another
 * connection, an InResponseTo of no request, a response out of the browser
 * that started the login — answers its reason and leaves no session; a
 * replay is refused by another instance sharing Redis too.
 */
import test from 'ava';
import { createVerify } from 'node:crypto';
import { inflateRawSync } from 'node:zlib';
import { ownedOrganization, startSsoServer, TestSamlIdp } from '../../helpers/saml_idp.ts';
import { redisUrl } from '../../helpers/databases.ts';
import { TEST_ADMIN_SECRET, startTestServer, type TestServer } from '../../helpers/server.ts';

const PASSWORD = 'a long enough passphrase';
const ADMIN = { 'x-service-admin-secret': TEST_ADMIN_SECRET };

interface Setup {
  srv: TestServer;
  idp: TestSamlIdp;
  other: TestSamlIdp;
  orgId: string;
  teamId: string;
  domain: string;
  conn: { id: string; acs: string; audience: string };
  connB: { id: string; acs: string; audience: string };
}

async function setup(): Promise<Setup> {
  const txt = new Map<string, string[][]>();
  const srv = await startSsoServer({ 'enable-email-verification': false }, { backend: 'sqlite', resolveTxt: async (name) => txt.get(name) ?? [] });
  const idp = new TestSamlIdp('okta');
  const other = new TestSamlIdp('entra');
  await idp.start();
  await other.start();
  const { ok, owner, orgId, domain } = await ownedOrganization(srv, txt, PASSWORD);
  const team = await ok('create_team', { organization_id: orgId, name: 'Engineering' }, owner);
  const teamId = team['id'] as string;
  const a = await ok('add_sso_connection', {
    organization_id: orgId,
    type: 'saml',
    name: 'Okta',
    domains: [domain],
    default_role: 'member',
    group_mapping: [{ group: 'eng', team_id: teamId }],
    saml: { idp_metadata_xml: idp.metadata() },
  }, owner);
  const b = await ok('add_sso_connection', { organization_id: orgId, type: 'saml', name: 'Entra', domains: [domain], saml: { idp_metadata_xml: other.metadata() } }, owner);
  const conn = { id: a['id'] as string, acs: (a['saml'] as Record<string, string>)['sp_acs_url']!, audience: (a['saml'] as Record<string, string>)['sp_entity_id']! };
  const connB = { id: b['id'] as string, acs: (b['saml'] as Record<string, string>)['sp_acs_url']!, audience: (b['saml'] as Record<string, string>)['sp_entity_id']! };
  idp.sp = { acsUrl: conn.acs, audience: conn.audience };
  return { srv, idp, other, orgId, teamId, domain, conn, connB };
}

async function teardown(s: Setup): Promise<void> {
  await s.srv.close();
  await s.idp.close();
  await s.other.close();
}

function sessionSet(res: Response): boolean {
  return res.headers.getSetCookie().some((c) => /^cookie_session=[^;]+/.test(c));
}

/** POSTs a response to an ACS as the IdP's form would. */
async function post(acs: string, samlResponse: string, extra: Record<string, string> = {}, cookie?: string): Promise<{ res: Response; text: string }> {
  const res = await fetch(acs, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded', origin: 'https://idp.example', ...(cookie === undefined ? {} : { cookie }) },
    body: new URLSearchParams({ SAMLResponse: samlResponse, ...extra }).toString(),
  });
  return { res, text: await res.text() };
}

test.serial('SAML: SP-initiated and IdP-initiated sign-in provision the user, its membership and mapped team; later sign-ins update the teams', async (t) => {
  const s = await setup();
  try {
    const ADMINOK = async (op: string, input: Record<string, unknown>) => (await s.srv.call(op, input, { protocol: 'rest', headers: ADMIN })).body!;
    // The SP metadata names the entity id and the ACS.
    const meta = await fetch(`${s.srv.httpUrl}/saml/${s.conn.id}/metadata`);
    t.is(meta.status, 200);
    t.regex(meta.headers.get('content-type') ?? '', /samlmetadata\+xml/);
    const metaXml = await meta.text();
    t.true(metaXml.includes(`entityID="${s.conn.audience}"`));
    t.true(metaXml.includes(`Location="${s.conn.acs}"`));

    // SP-initiated: /sso/<id> → the IdP with an AuthnRequest (HTTP-Redirect) and RelayState.
    const start = await fetch(`${s.srv.httpUrl}/sso/${s.conn.id}`, { redirect: 'manual' });
    t.is(start.status, 302);
    const location = new URL(start.headers.get('location')!);
    t.is(`${location.origin}${location.pathname}`, `${s.idp.url}/sso`);
    const request = inflateRawSync(Buffer.from(location.searchParams.get('SAMLRequest')!, 'base64')).toString();
    const requestId = /\sID="([^"]+)"/.exec(request)![1]!;
    t.true(request.includes(`AssertionConsumerServiceURL="${s.conn.acs}"`));
    const relayState = location.searchParams.get('RelayState')!;
    const stateCookie = start.headers.getSetCookie().find((c) => c.startsWith('service-sso-state='))!;
    t.regex(stateCookie, /HttpOnly/i);

    const email = 'ada@acme.example.com';
    const response = s.idp.response({ acsUrl: s.conn.acs, audience: s.conn.audience, email, inResponseTo: requestId, groups: ['eng'] });
    // Without the browser's state cookie the answer to the request is refused (and consumes it).
    const elsewhere = await post(s.conn.acs, s.idp.response({ acsUrl: s.conn.acs, audience: s.conn.audience, email, inResponseTo: requestId }), { RelayState: relayState });
    t.is(elsewhere.res.status, 400);
    t.true(elsewhere.text.includes('sso_state_invalid'));
    t.false(sessionSet(elsewhere.res));

    // Start again, and answer in the browser that started.
    const start2 = await fetch(`${s.srv.httpUrl}/sso/${s.conn.id}?state=xyz`, { redirect: 'manual' });
    const loc2 = new URL(start2.headers.get('location')!);
    const id2 = /\sID="([^"]+)"/.exec(inflateRawSync(Buffer.from(loc2.searchParams.get('SAMLRequest')!, 'base64')).toString())![1]!;
    const cookie2 = start2.headers.getSetCookie().find((c) => c.startsWith('service-sso-state='))!.split(';')[0]!;
    void response;
    const signedIn = await post(s.conn.acs, s.idp.response({ acsUrl: s.conn.acs, audience: s.conn.audience, email, inResponseTo: id2, groups: ['eng'] }), { RelayState: loc2.searchParams.get('RelayState')! }, cookie2);
    t.is(signedIn.res.status, 200, signedIn.text);
    t.true(sessionSet(signedIn.res), 'the session cookie is set');
    const next = /url=([^"]+)"/.exec(signedIn.text)![1]!.replace(/&#38;/g, '&');
    const nextUrl = new URL(next);
    t.is(nextUrl.pathname, '/app');
    const fragment = new URLSearchParams(nextUrl.hash.slice(1));
    t.is(fragment.get('state'), 'xyz');
    const token = fragment.get('access_token')!;
    const profile = await s.srv.call('profile', {}, { protocol: 'rest', headers: { authorization: `Bearer ${token}` } });
    t.like(profile.body, { email, given_name: 'Ada', family_name: 'Lovelace', email_verified: true });
    const userId = profile.body!['id'] as string;

    // Provisioned: the membership with the default role, the mapped team, their tuples.
    const members = await ADMINOK('admin_organization_members', { organization_id: s.orgId });
    t.like((members['members'] as { user_id: string; role: string }[]).find((m) => m.user_id === userId), { role: 'member' });
    const check = async (relation: string, object: string) => {
      const r = await s.srv.call('check_permissions', { checks: [{ relation, object }] }, { protocol: 'rest', headers: { authorization: `Bearer ${token}` } });
      return r.error === undefined ? (r.body!['results'] as { allowed: boolean }[])[0]!.allowed : r.error;
    };
    t.is(await check('member', `team:${s.teamId}`), true, 'the eng group made a team membership tuple');
    t.is(await check('member', `organization:${s.orgId}`), true);
    const provisioned = await ADMINOK('audit_logs', { action: 'organization.sso_user_provisioned' });
    t.is((provisioned['pagination'] as { total: number }).total, 1);

    // IdP-initiated, without the eng group now: the same user, the team left.
    const idpInit = s.idp.response({ acsUrl: s.conn.acs, audience: s.conn.audience, email });
    const again = await post(s.conn.acs, idpInit);
    t.is(again.res.status, 200, again.text);
    t.true(sessionSet(again.res));
    t.is(await check('member', `team:${s.teamId}`), false, 'a later sign-in without the group removes the team membership');
    t.is(((await ADMINOK('audit_logs', { action: 'organization.sso_user_provisioned' }))['pagination'] as { total: number }).total, 1, 'provisioned once');
    t.true(((await ADMINOK('audit_logs', { action: 'organization.sso_teams_synced' }))['pagination'] as { total: number }).total >= 2);

    // Single Logout from the IdP: an unsigned or foreign-signed LogoutRequest is refused; a signed one ends the sessions.
    const sessionCookie = again.res.headers.getSetCookie().find((c) => c.startsWith('cookie_session='))!.split(';')[0]!.slice('cookie_session='.length);
    const alive = async () => (await s.srv.call('profile', {}, { protocol: 'rest', cookies: { cookie_session: sessionCookie } })).error === undefined;
    t.true(await alive());
    const slo = `${s.srv.httpUrl}/saml/${s.conn.id}/slo`;
    const unsigned = await fetch(`${slo}?${s.idp.logoutQuery({ sloUrl: slo, nameId: email, sign: false })}`, { redirect: 'manual' });
    t.is(unsigned.status, 400);
    t.true((await unsigned.text()).includes('saml_logout_invalid'));
    const forged = await fetch(`${slo}?${s.idp.logoutQuery({ sloUrl: slo, nameId: email, signer: s.other })}`, { redirect: 'manual' });
    t.is(forged.status, 400, 'signed by another IdP');
    t.true(await alive(), 'refused logout requests end nothing');
    const loggedOut = await fetch(`${slo}?${s.idp.logoutQuery({ sloUrl: slo, nameId: email })}`, { redirect: 'manual' });
    t.is(loggedOut.status, 200, await loggedOut.text());
    t.false(await alive(), 'the IdP\'s logout ended the session');

    // Replayed: the same assertion a second time.
    const replay = await post(s.conn.acs, idpInit);
    t.is(replay.res.status, 400);
    t.true(replay.text.includes('saml_assertion_replayed'), replay.text);
    t.false(sessionSet(replay.res));

    // A connection from the IdP's metadata URL, signing its AuthnRequests with its own key pair.
    const owner = await s.srv.call('login', { email: 'owner@owner.example.com', password: PASSWORD }, { protocol: 'rest' });
    const ownerBearer = { authorization: `Bearer ${owner.body!['access_token'] as string}` };
    const spKeys = new TestSamlIdp('sp');
    const signing = await s.srv.call('add_sso_connection', {
      organization_id: s.orgId, type: 'saml', name: 'Signed', domains: [s.domain],
      saml: { idp_metadata_url: `${s.idp.url}/metadata`, sign_requests: true, sp_private_key: spKeys.privateKey, sp_certificate: spKeys.certificate },
    }, { protocol: 'rest', headers: ownerBearer });
    t.is(signing.error, undefined, JSON.stringify(signing.error));
    t.like(signing.body!['saml'], { idp_entity_id: s.idp.entityId, idp_sso_url: `${s.idp.url}/sso`, idp_metadata_url: `${s.idp.url}/metadata`, sign_requests: true });
    t.false(JSON.stringify(signing.body).includes('PRIVATE KEY'), 'the private key is never answered');
    const signedMeta = await (await fetch(`${s.srv.httpUrl}/saml/${signing.body!['id'] as string}/metadata`)).text();
    t.true(signedMeta.includes(spKeys.certificateBody.slice(0, 40)), 'the SP metadata publishes the signing certificate');
    const signedStart = await fetch(`${s.srv.httpUrl}/sso/${signing.body!['id'] as string}`, { redirect: 'manual' });
    const signedLoc = new URL(signedStart.headers.get('location')!);
    t.truthy(signedLoc.searchParams.get('Signature'), 'the AuthnRequest redirect is signed');
    t.regex(signedLoc.searchParams.get('SigAlg') ?? '', /rsa-sha256/);
    // SAML 2.0 Bindings §3.4.4.1: the signature covers SAMLRequest, RelayState and SigAlg as they were encoded.
    const raw = new Map(signedLoc.search.slice(1).split('&').map((kv) => [kv.slice(0, kv.indexOf('=')), kv] as const));
    const signedText = ['SAMLRequest', 'RelayState', 'SigAlg'].map((k) => raw.get(k)).filter((x) => x !== undefined).join('&');
    t.true(createVerify('RSA-SHA256').update(signedText).verify(spKeys.certificate, signedLoc.searchParams.get('Signature')!, 'base64'), 'signed by the connection\'s key');

    // A test run shows the claims and signs nobody in.
    const test1 = await fetch(`${s.srv.httpUrl}/sso/${s.conn.id}?test=1`, { redirect: 'manual' });
    const tl = new URL(test1.headers.get('location')!);
    const tid = /\sID="([^"]+)"/.exec(inflateRawSync(Buffer.from(tl.searchParams.get('SAMLRequest')!, 'base64')).toString())![1]!;
    const tc = test1.headers.getSetCookie().find((c) => c.startsWith('service-sso-state='))!.split(';')[0]!;
    const tested = await post(s.conn.acs, s.idp.response({ acsUrl: s.conn.acs, audience: s.conn.audience, email: 'new@acme.example.com', inResponseTo: tid, groups: ['eng', 'ops'] }), { RelayState: tl.searchParams.get('RelayState')! }, tc);
    t.is(tested.res.status, 200);
    t.true(tested.text.includes('new@acme.example.com') && tested.text.includes('ops'));
    t.false(sessionSet(tested.res));
    const users = (await ADMINOK('users', { pagination: { page: 1, limit: 100 } }))['users'] as { email: string }[];
    t.false(users.some((u) => u.email === 'new@acme.example.com'), 'a test run creates nobody');
  } finally {
    await teardown(s);
  }
});

test.serial('SAML: each refusal names its reason and leaves no session', async (t) => {
  const s = await setup();
  try {
    const email = 'eve@acme.example.com';
    const base = { acsUrl: s.conn.acs, audience: s.conn.audience, email };
    const refused = async (name: string, samlResponse: string, reason: string, acs = s.conn.acs) => {
      const r = await post(acs, samlResponse);
      t.is(r.res.status, 400, `${name}: ${r.text}`);
      t.true(r.text.includes(reason), `${name}: expected ${reason} in ${r.text}`);
      t.false(sessionSet(r.res), `${name}: no session`);
    };
    await refused('unsigned', s.idp.response({ ...base, sign: false }), 'saml_signature_invalid');
    await refused('wrong audience', s.idp.response({ ...base, audience: 'https://someone-else.example/sp' }), 'saml_audience_mismatch');
    await refused('expired', s.idp.response({ ...base, notBefore: -900, notOnOrAfter: -600 }), 'saml_assertion_expired');
    await refused('not yet valid', s.idp.response({ ...base, notBefore: 600, notOnOrAfter: 900 }), 'saml_assertion_expired');
    await refused('another recipient', s.idp.response({ ...base, recipient: 'https://elsewhere.example/acs' }), 'saml_recipient_mismatch');
    await refused('unknown InResponseTo', s.idp.response({ ...base, inResponseTo: '_never_issued' }), 'saml_in_response_to_invalid');
    // Signed by another connection's IdP, for that connection: refused at this one (its key is not this IdP's).
    await refused('another connection (other IdP)', s.other.response({ acsUrl: s.connB.acs, audience: s.connB.audience, email }), 'saml_signature_invalid');
    // Signed by this IdP but for the other connection (its audience and ACS).
    await refused('another connection (its audience)', s.idp.response({ acsUrl: s.connB.acs, audience: s.connB.audience, email }), 'saml_audience_mismatch');
    // And this IdP's assertion posted to the other connection's ACS: not its IdP.
    await refused('posted to the other connection', s.idp.response(base), 'saml_signature_invalid', s.connB.acs);

    // Signature wrapping (XSW): a forged assertion for another person, with the genuinely signed one kept
    // beside it, so that the signature still verifies over the original.
    const genuine = s.idp.responseXml({ ...base, email: 'mallory@acme.example.com' });
    const signedAssertion = /<saml:Assertion[\s\S]*<\/saml:Assertion>/.exec(genuine)![0];
    const forged = signedAssertion
      .replace(/ID="[^"]+"/, 'ID="_forged"')
      .replace(/<ds:Signature[\s\S]*<\/ds:Signature>/, '')
      .replace(/mallory@acme\.example\.com/g, 'ceo@acme.example.com');
    const wrapped1 = genuine.replace(signedAssertion, `${forged}${signedAssertion}`);
    await refused('XSW: forged assertion first', Buffer.from(wrapped1).toString('base64'), 'saml_');
    const wrapped2 = genuine.replace(signedAssertion, forged.replace('</saml:Issuer>', `</saml:Issuer><samlp:Extensions>${signedAssertion}</samlp:Extensions>`));
    await refused('XSW: signed assertion hidden inside the forged one', Buffer.from(wrapped2).toString('base64'), 'saml_');
    // A tampered signed assertion (the email changed after signing).
    await refused('tampered', Buffer.from(genuine.replace(/mallory@acme\.example\.com/g, 'ceo@acme.example.com')).toString('base64'), 'saml_signature_invalid');
    // An address outside the connection's domains.
    await refused('foreign domain', s.idp.response({ ...base, email: 'eve@evil.example.com' }), 'sso_email_domain_not_allowed');
    // Garbage.
    await refused('not XML', Buffer.from('hello').toString('base64'), 'saml_response_invalid');
    // Nobody of these was created.
    const users = await s.srv.call('users', { pagination: { page: 1, limit: 100 } }, { protocol: 'rest', headers: ADMIN });
    const emails = (users.body!['users'] as { email: string }[]).map((u) => u.email);
    t.false(emails.some((e) => e.endsWith('@acme.example.com') || e.endsWith('@evil.example.com')), emails.join(','));
    // A disabled connection answers not found.
    const r = await fetch(`${s.srv.httpUrl}/saml/00000000-0000-0000-0000-000000000000/metadata`);
    t.is(r.status, 404);
  } finally {
    await teardown(s);
  }
});

const redis = redisUrl();
if (redis) {
  test.serial('SAML: two instances sharing Redis and the database refuse an assertion replayed on the other one', async (t) => {
    const txt = new Map<string, string[][]>();
    const resolveTxt = async (name: string) => txt.get(name) ?? [];
    const a = await startSsoServer({ 'enable-email-verification': false, 'redis-url': redis }, { backend: 'sqlite', resolveTxt });
    t.teardown(() => a.close());
    // The second instance serves the same issuer (--url) from its own port, on the same database and Redis.
    const b = await startTestServer({ 'enable-email-verification': false, 'redis-url': redis, url: a.httpUrl }, { database: a.database, resolveTxt });
    t.teardown(() => b.close());
    const idp = new TestSamlIdp('okta');
    const { ok, owner, orgId } = await ownedOrganization(a, txt, PASSWORD);
    const org = { id: orgId };
    const conn = await ok('add_sso_connection', { organization_id: org['id'], type: 'saml', domains: ['acme.example.com'], saml: { idp_metadata_xml: idp.metadata('https://idp.example/sso') } }, owner);
    const saml = conn['saml'] as Record<string, string>;
    const response = idp.response({ acsUrl: saml['sp_acs_url']!, audience: saml['sp_entity_id']!, email: 'kim@acme.example.com' });
    const first = await post(`${a.httpUrl}/saml/${conn['id'] as string}/acs`, response);
    t.is(first.res.status, 200, first.text);
    t.true(sessionSet(first.res));
    const replayed = await post(`${b.httpUrl}/saml/${conn['id'] as string}/acs`, response);
    t.is(replayed.res.status, 400, replayed.text);
    t.true(replayed.text.includes('saml_assertion_replayed'));
    t.false(sessionSet(replayed.res));
  });
}
