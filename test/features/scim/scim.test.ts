/**
 * SCIM 2.0 at /scim/v2 (docs/scim.md) end to end on the real server, on
 * every SQL backend: the requests Okta and Entra ID send (their documented
 * PATCH shapes) and the RFC 7644 answers; a pushed Group is a team, so a
 * check on a document shared with that team is allowed at once; a
 * deactivation ends the person's sessions, refresh tokens and grants in the
 * same moment; a revoked token is refused on the next request; bad requests
 * get the SCIM error schema.
 */
import test from 'ava';
import { sqlBackends } from '../../helpers/databases.ts';
import { PROTOCOLS, TEST_ADMIN_SECRET, startTestServer, sessionCookieOf, type TestServer } from '../../helpers/server.ts';
import { orgModelFragmentDsl } from '../../../auth/index.ts';
import { startReceiver } from '../../admin/receiver.ts';

const PASSWORD = 'a long enough passphrase';
const ADMIN = { 'x-service-admin-secret': TEST_ADMIN_SECRET };
const USER = 'urn:ietf:params:scim:schemas:core:2.0:User';
const GROUP = 'urn:ietf:params:scim:schemas:core:2.0:Group';
const ENTERPRISE = 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User';
const PATCH = 'urn:ietf:params:scim:api:messages:2.0:PatchOp';
const LIST = 'urn:ietf:params:scim:api:messages:2.0:ListResponse';
const ERROR = 'urn:ietf:params:scim:api:messages:2.0:Error';

interface Answer {
  status: number;
  body: Record<string, unknown>;
  headers: Headers;
}

function scimClient(srv: TestServer, token: string) {
  return async (method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Answer> => {
    const r = await fetch(`${srv.httpUrl}/scim/v2${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/scim+json' }), ...headers },
      ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
    });
    const text = await r.text();
    return { status: r.status, body: text === '' ? {} : (JSON.parse(text) as Record<string, unknown>), headers: r.headers };
  };
}

for (const backend of sqlBackends()) {
  const txt = new Map<string, string[][]>();
  const resolveTxt = async (name: string): Promise<string[][]> => txt.get(name) ?? [];

  test.serial(`SCIM: Okta and Entra ID provisioning, groups as teams, deactivation everywhere (${backend})`, async (t) => {
    const srv = await startTestServer({ 'webhook-allow-private-networks': true }, { backend, resolveTxt });
    const receiver = await startReceiver();
    try {
      const call = (op: string, input: Record<string, unknown>, headers: Record<string, string>) => srv.call(op, input, { protocol: 'rest', headers });
      const ok = async (op: string, input: Record<string, unknown>, headers: Record<string, string>) => {
        const r = await call(op, input, headers);
        if (r.error !== undefined) throw new Error(`${op}: ${JSON.stringify(r.error)}`);
        return r.body!;
      };
      for (const event_name of ['member.added', 'member.removed']) await ok('add_webhook', { event_name, endpoint: `${receiver.url}/${event_name}` }, ADMIN);
      /** The webhook events received so far about `userId` (deliveries are asynchronous: waited for up to 10 s). */
      const hooks = async (path: string, userId: string): Promise<Record<string, unknown>[]> => {
        for (let i = 0; i < 100; i++) {
          const found = receiver.received.filter((r) => r.path.endsWith(path)).map((r) => JSON.parse(r.body) as Record<string, unknown>).filter((b) => JSON.stringify(b).includes(userId));
          if (found.length > 0) return found;
          await new Promise((resolve) => setTimeout(resolve, 100));
        }
        return [];
      };
      const domain = `acme-${backend}.example.com`;
      const ownerSignup = await call('signup', { email: `owner@owner-${backend}.example.com`, password: PASSWORD }, {});
      const owner = { authorization: `Bearer ${ownerSignup.body!['access_token'] as string}` };
      const org = await ok('create_organization', { name: 'Acme', settings: { default_role: 'member' } }, owner);
      const orgId = org['id'] as string;
      const d = await ok('add_organization_domain', { organization_id: orgId, domain }, owner);
      txt.set(d['txt_record_name'] as string, [[d['txt_record_value'] as string]]);
      await ok('verify_organization_domain', { organization_id: orgId, domain }, owner);
      const tokenBody = await ok('create_scim_token', { organization_id: orgId, description: 'Okta' }, owner);
      const scim = scimClient(srv, tokenBody['token'] as string);

      // ---- discovery documents
      const spc = await scim('GET', '/ServiceProviderConfig');
      t.is(spc.status, 200);
      t.regex(spc.headers.get('content-type') ?? '', /^application\/scim\+json/);
      t.like(spc.body, { patch: { supported: true }, bulk: { supported: false }, filter: { supported: true }, etag: { supported: true } });
      const types = await scim('GET', '/ResourceTypes');
      t.deepEqual((types.body['Resources'] as { id: string }[]).map((r) => r.id), ['User', 'Group']);
      t.is((await scim('GET', `/Schemas/${ENTERPRISE}`)).body['name'], 'EnterpriseUser');
      t.is((await scim('GET', '/Schemas/urn:nothing')).status, 404);

      // ---- Okta: is the user there? (filter userName eq), then create it.
      const none = await scim('GET', `/Users?filter=${encodeURIComponent(`userName eq "ann@${domain}"`)}&startIndex=1&count=100`);
      t.is(none.status, 200);
      t.like(none.body, { schemas: [LIST], totalResults: 0, startIndex: 1, itemsPerPage: 0 });
      const annCreated = await scim('POST', '/Users', {
        schemas: [USER, ENTERPRISE],
        userName: `ann@${domain}`,
        externalId: '00u1okta',
        name: { givenName: 'Ann', familyName: 'Lee' },
        emails: [{ primary: true, value: `ann@${domain}`, type: 'work' }],
        displayName: 'Ann Lee',
        active: true,
        password: 'never stored',
        [ENTERPRISE]: { department: 'Sales', employeeNumber: '42' },
      });
      t.is(annCreated.status, 201, JSON.stringify(annCreated.body));
      const annId = annCreated.body['id'] as string;
      t.like(annCreated.body, { userName: `ann@${domain}`, externalId: '00u1okta', active: true, name: { givenName: 'Ann' }, [ENTERPRISE]: { department: 'Sales' }, meta: { resourceType: 'User' } });
      t.is(annCreated.body['password'], undefined, 'a password is never stored or answered');
      t.true((annCreated.headers.get('location') ?? '').endsWith(`/scim/v2/Users/${annId}`), 'Location names the new resource (under the issuer)');
      t.is(annCreated.headers.get('etag'), (annCreated.body['meta'] as { version: string }).version);
      // The user is a member with the default role, as a tuple.
      const members = await ok('organization_members', { organization_id: orgId }, owner);
      t.true((members['members'] as { user_id: string; role: string }[]).some((m) => m.user_id === annId && m.role === 'member'));
      // A second create of the same userName: 409 uniqueness.
      const again = await scim('POST', '/Users', { schemas: [USER], userName: `ANN@${domain}` });
      t.is(again.status, 409);
      t.like(again.body, { schemas: [ERROR], status: '409', scimType: 'uniqueness' });
      // Two directories' requests for one new userName at once: one 201, one 409, never a 500 or two accounts.
      const racing = await Promise.all([0, 1].map(() => scim('POST', '/Users', { schemas: [USER], userName: `cid@${domain}` })));
      t.deepEqual(racing.map((r) => r.status).sort(), [201, 409], JSON.stringify(racing.map((r) => r.body)));
      const cid = racing.find((r) => r.status === 201)!.body['id'] as string;
      t.is((await scim('DELETE', `/Users/${cid}`)).status, 204);
      // An address outside the organization's verified domains is refused (no account of another is claimed).
      const foreign = await scim('POST', '/Users', { schemas: [USER], userName: 'someone@gmail.com' });
      t.like(foreign.body, { status: '400', scimType: 'invalidValue' });

      // ---- Entra ID: a person who signed up before is linked; their session is what deactivation must end.
      const bobSignup = await call('signup', { email: `bob@${domain}`, password: PASSWORD }, {});
      const bobBearer = { authorization: `Bearer ${bobSignup.body!['access_token'] as string}` };
      const bobRefresh = bobSignup.body!['refresh_token'] as string;
      const bobCookie = sessionCookieOf(bobSignup);
      const bobCreated = await scim('POST', '/Users', {
        schemas: [USER, ENTERPRISE],
        externalId: 'entra-bob',
        userName: `bob@${domain}`,
        active: true,
        emails: [{ primary: true, type: 'work', value: `bob@${domain}` }],
        name: { formatted: 'Bob Ray', familyName: 'Ray', givenName: 'Bob' },
        [ENTERPRISE]: { employeeNumber: '7', department: 'R&D' },
      });
      t.is(bobCreated.status, 201);
      const bobId = bobCreated.body['id'] as string;
      t.is(bobId, (bobSignup.body!['user'] as { id: string }).id, 'the existing account is linked, not duplicated');

      // Entra ID's PATCH: capitalised ops, paths, a value filter with a sub-attribute, an extension attribute.
      const entraPatch = await scim('PATCH', `/Users/${bobId}`, {
        schemas: [PATCH],
        Operations: [
          { op: 'Replace', path: 'name.givenName', value: 'Robert' },
          { op: 'Add', path: 'emails[type eq "home"].value', value: 'bob@home.example.org' },
          { op: 'Replace', path: `${ENTERPRISE}:department`, value: 'Research' },
          { op: 'Add', path: 'title', value: 'Engineer' },
        ],
      });
      t.is(entraPatch.status, 200, JSON.stringify(entraPatch.body));
      t.like(entraPatch.body, { name: { givenName: 'Robert' }, title: 'Engineer', [ENTERPRISE]: { department: 'Research', employeeNumber: '7' } });
      t.true((entraPatch.body['emails'] as { type: string; value: string }[]).some((e) => e.type === 'home' && e.value === 'bob@home.example.org'));
      // Without a path, the value's keys may be paths themselves (sub-attributes, extension attributes).
      const dotted = await scim('PATCH', `/Users/${bobId}`, { schemas: [PATCH], Operations: [{ op: 'Replace', value: { 'name.familyName': 'Rey', [`${ENTERPRISE}:costCenter`]: 'CC-1', displayName: 'Robert Rey' } }] });
      t.like(dotted.body, { name: { givenName: 'Robert', familyName: 'Rey' }, displayName: 'Robert Rey', [ENTERPRISE]: { costCenter: 'CC-1', department: 'Research' } });
      // Removing an extension attribute; the account's names follow the directory's.
      const removed = await scim('PATCH', `/Users/${bobId}`, { schemas: [PATCH], Operations: [{ op: 'remove', path: `${ENTERPRISE}:costCenter` }] });
      t.is((removed.body[ENTERPRISE] as Record<string, unknown>)['costCenter'], undefined);
      t.like((await ok('user', { id: bobId }, ADMIN)), { given_name: 'Robert', family_name: 'Rey' });

      // Filters: value path, extension attribute, and/or, pagination and attribute selection.
      const q = async (filter: string, extra = '') => scim('GET', `/Users?filter=${encodeURIComponent(filter)}${extra}`);
      t.is((await q(`emails[type eq "work" and value ew "${domain}"]`)).body['totalResults'], 2);
      t.deepEqual(((await q(`${ENTERPRISE}:department eq "research"`)).body['Resources'] as { id: string }[]).map((r) => r.id), [bobId]);
      t.is((await q('externalId eq "00u1okta" or title pr')).body['totalResults'], 2);
      t.is((await q('not (title pr)')).body['totalResults'], 1);
      const paged = await scim('GET', '/Users?startIndex=2&count=1&attributes=userName');
      t.like(paged.body, { totalResults: 2, startIndex: 2, itemsPerPage: 1 });
      const only = (paged.body['Resources'] as Record<string, unknown>[])[0]!;
      t.deepEqual(Object.keys(only).sort(), ['id', 'meta', 'schemas', 'userName']);
      const excluded = await scim('GET', `/Users/${annId}?excludedAttributes=emails,name.familyName`);
      t.is(excluded.body['emails'], undefined);
      t.deepEqual(excluded.body['name'], { givenName: 'Ann' });
      const badFilter = await q('userName eq');
      t.like(badFilter, { status: 400, body: { schemas: [ERROR], status: '400', scimType: 'invalidFilter' } });

      // ETags: a stale If-Match is refused with 412 and changes nothing.
      const stale = await scim('PATCH', `/Users/${annId}`, { schemas: [PATCH], Operations: [{ op: 'replace', path: 'title', value: 'x' }] }, { 'if-match': 'W/"stale"' });
      t.is(stale.status, 412);
      t.is((await scim('GET', `/Users/${annId}`)).body['title'], undefined);

      // ---- Okta pushes a Group, then adds and removes members.
      const group = await scim('POST', '/Groups', { schemas: [GROUP], displayName: 'Engineering', externalId: '00g1okta', members: [{ value: annId }] });
      t.is(group.status, 201, JSON.stringify(group.body));
      const groupId = group.body['id'] as string;
      const teams = await ok('teams', { organization_id: orgId }, owner);
      t.true((teams['teams'] as { id: string; name: string }[]).some((x) => x.id === groupId && x.name === 'Engineering'), 'the group is a team');
      const dsl = `model\n  schema 1.1\n${orgModelFragmentDsl([])}type document\n  relations\n    define viewer: [user, team#member]\n`;
      await ok('fga_write_model', { dsl }, ADMIN);
      await ok('fga_write_tuples', { tuples: [{ user: `team:${groupId}#member`, relation: 'viewer', object: 'document:roadmap' }] }, ADMIN);
      const bobCan = async (bearer: Record<string, string>) => {
        const r = await call('check_permissions', { checks: [{ relation: 'viewer', object: 'document:roadmap' }] }, bearer);
        return r.error === undefined ? (r.body!['results'] as { allowed: boolean }[])[0]!.allowed : r.error;
      };
      t.false(await bobCan(bobBearer), 'not yet in the group');
      const oktaAdd = await scim('PATCH', `/Groups/${groupId}`, { schemas: [PATCH], Operations: [{ op: 'add', path: 'members', value: [{ value: bobId, display: `bob@${domain}` }] }] });
      t.is(oktaAdd.status, 200, JSON.stringify(oktaAdd.body));
      t.deepEqual((oktaAdd.body['members'] as { value: string }[]).map((m) => m.value).sort(), [annId, bobId].sort());
      t.true(await bobCan(bobBearer), 'a SCIM group push followed by a check on a document shared with that team is allowed');
      // The user resource lists its groups.
      t.deepEqual(((await scim('GET', `/Users/${bobId}`)).body['groups'] as { value: string }[]).map((g) => g.value), [groupId]);
      // Okta removes by value list; Entra ID by a value filter path.
      const oktaRemove = await scim('PATCH', `/Groups/${groupId}`, { schemas: [PATCH], Operations: [{ op: 'remove', path: 'members', value: [{ value: annId }] }] });
      t.deepEqual((oktaRemove.body['members'] as { value: string }[]).map((m) => m.value), [bobId]);
      const entraAdd = await scim('PATCH', `/Groups/${groupId}`, { schemas: [PATCH], Operations: [{ op: 'Add', path: 'members', value: [{ value: annId }] }, { op: 'Replace', path: 'displayName', value: 'Eng' }] });
      t.like(entraAdd.body, { displayName: 'Eng' });
      const entraRemove = await scim('PATCH', `/Groups/${groupId}`, { schemas: [PATCH], Operations: [{ op: 'Remove', path: `members[value eq "${annId}"]` }] });
      t.deepEqual((entraRemove.body['members'] as { value: string }[]).map((m) => m.value), [bobId]);
      const listed = await scim('GET', `/Groups?filter=${encodeURIComponent('displayName eq "eng"')}&excludedAttributes=members`);
      t.like(listed.body, { totalResults: 1 });
      t.is((listed.body['Resources'] as Record<string, unknown>[])[0]!['members'], undefined);
      // A group whose member is not a User of the organization: refused, and no team is left behind.
      const half = await scim('POST', '/Groups', { schemas: [GROUP], displayName: 'Half', members: [{ value: annId }, { value: 'not-a-user' }] });
      t.like(half.body, { status: '400', scimType: 'invalidValue' });
      t.false(((await ok('teams', { organization_id: orgId }, owner))['teams'] as { name: string }[]).some((x) => x.name === 'Half'), 'no partial write');
      // A member that is not a User of the organization: refused, nothing written.
      const stranger = await scim('PATCH', `/Groups/${groupId}`, { schemas: [PATCH], Operations: [{ op: 'add', path: 'members', value: [{ value: 'not-a-user' }] }] });
      t.like(stranger.body, { status: '400', scimType: 'invalidValue' });
      t.deepEqual(((await scim('GET', `/Groups/${groupId}`)).body['members'] as { value: string }[]).map((m) => m.value), [bobId], 'the refused PATCH changed nothing');

      // ---- Entra ID deactivates Bob: {"op":"Replace","path":"active","value":"False"}.
      const off = await scim('PATCH', `/Users/${bobId}`, { schemas: [PATCH], Operations: [{ op: 'Replace', path: 'active', value: 'False' }] });
      t.is(off.status, 200, JSON.stringify(off.body));
      t.is(off.body['active'], false);
      for (const protocol of PROTOCOLS) {
        t.is((await srv.call('validate_session', { cookie: bobCookie }, { protocol })).error?.code, 'unauthenticated', `the session is gone (${protocol})`);
        const checked = await srv.call('check_permissions', { checks: [{ relation: 'viewer', object: 'document:roadmap' }] }, { protocol, headers: bobBearer });
        t.is(checked.error?.code, 'unauthenticated', `the access token is refused (${protocol})`);
      }
      t.is((await call('session', { refresh_token: bobRefresh }, {})).error?.code, 'unauthenticated', 'the refresh token is gone');
      const check = await bobCan(bobBearer);
      t.true(typeof check === 'object' && (check as { code: string }).code === 'unauthenticated', 'the access token is refused');
      t.is((await call('login', { email: `bob@${domain}`, password: PASSWORD }, {})).error?.code !== undefined, true, 'sign-in is refused');
      // The grants are gone: the team tuple and the membership.
      const tuples = await ok('fga_read_tuples', { user: `user:${bobId}`, page_size: 50 }, ADMIN);
      t.deepEqual(tuples['tuples'], [], 'no tuple names Bob any more');
      t.false(((await ok('organization_members', { organization_id: orgId }, owner))['members'] as { user_id: string }[]).some((m) => m.user_id === bobId));
      // The webhooks: member.added when Bob was provisioned, member.removed when deactivated, each marked as SCIM's.
      t.like((await hooks('/member.added', bobId))[0], { event_name: 'member.added', user_id: bobId, organization_id: orgId, role: 'member', via: 'scim' });
      t.like((await hooks('/member.removed', bobId))[0], { event_name: 'member.removed', user_id: bobId, organization_id: orgId, via: 'scim' });
      // The audit log.
      const audit = await ok('audit_logs', { action: 'organization.scim_user_deactivated' }, ADMIN);
      t.is((audit['pagination'] as { total: number }).total, 1);
      t.is((await ok('audit_logs', { action: 'organization.member_removed' }, ADMIN))['pagination'] !== undefined, true);

      // ---- Okta re-activates ({"op":"replace","value":{"active":true}}): sign-in comes back, the team does not.
      const on = await scim('PATCH', `/Users/${bobId}`, { schemas: [PATCH], Operations: [{ op: 'replace', value: { active: true } }] });
      t.is(on.body['active'], true);
      const again2 = await call('login', { email: `bob@${domain}`, password: PASSWORD }, {});
      t.is(again2.error, undefined, 'sign-in is restored');
      t.false(await bobCan({ authorization: `Bearer ${again2.body!['access_token'] as string}` }), 'the old team grant is not');
      t.is(((await scim('GET', `/Groups/${groupId}`)).body['members'] as unknown[]).length, 0);

      // A super-admin's revoke_access is not the directory's deactivation: the directory's next PATCH keeps the membership.
      await ok('revoke_access', { user_id: bobId }, ADMIN);
      const afterRevoke = await scim('PATCH', `/Users/${bobId}`, { schemas: [PATCH], Operations: [{ op: 'replace', path: 'title', value: 'Lead' }] });
      t.like(afterRevoke.body, { active: true, title: 'Lead' });
      t.true(((await ok('organization_members', { organization_id: orgId }, owner))['members'] as { user_id: string }[]).some((m) => m.user_id === bobId));
      await ok('enable_access', { user_id: bobId }, ADMIN);

      // ---- PUT replaces; DELETE removes the account, its tuples and sessions.
      const put = await scim('PUT', `/Users/${annId}`, { schemas: [USER], userName: `ann@${domain}`, name: { givenName: 'Annie' }, active: true });
      t.is(put.status, 200);
      t.is(put.body['externalId'], undefined, 'PUT replaces: the omitted externalId is cleared');
      t.is(put.body[ENTERPRISE], undefined);
      t.is((await scim('DELETE', `/Users/${annId}`)).status, 204);
      t.is((await scim('GET', `/Users/${annId}`)).status, 404);
      t.is((await call('user', { id: annId }, ADMIN)).error?.code, 'not_found', 'the account is deleted');
      t.is((await scim('DELETE', `/Groups/${groupId}`)).status, 204);
      t.deepEqual((await ok('fga_read_tuples', { object: `team:${groupId}`, page_size: 10 }, ADMIN))['tuples'], []);

      // ---- Errors: malformed JSON, a wrong PATCH body, an unknown endpoint, no token.
      const malformed = await scim('POST', '/Users', '{"userName":');
      t.like(malformed.body, { schemas: [ERROR], status: '400', scimType: 'invalidSyntax' });
      const noSchema = await scim('PATCH', `/Users/${bobId}`, { Operations: [{ op: 'replace', path: 'title', value: 'x' }] });
      t.like(noSchema.body, { status: '400', scimType: 'invalidSyntax' });
      const badOp = await scim('PATCH', `/Users/${bobId}`, { schemas: [PATCH], Operations: [{ op: 'move', path: 'title' }] });
      t.like(badOp.body, { status: '400', scimType: 'invalidSyntax' });
      const readOnly = await scim('PATCH', `/Users/${bobId}`, { schemas: [PATCH], Operations: [{ op: 'replace', path: 'id', value: 'x' }] });
      t.like(readOnly.body, { status: '400', scimType: 'mutability' });
      t.is((await scim('GET', '/Nope')).status, 404);
      t.is((await scim('POST', '/Bulk', {})).status, 501);
      const anonymous = await fetch(`${srv.httpUrl}/scim/v2/Users`);
      t.is(anonymous.status, 401);
      t.like(await anonymous.json(), { schemas: [ERROR], status: '401' });

      // Attribute names outside the grammar are refused, not stored.
      const proto = await scim('PUT', `/Users/${bobId}`, JSON.parse(`{"schemas":["${USER}"],"userName":"bob@${domain}","__proto__":{"x":1}}`));
      t.like(proto.body, { status: '400', scimType: 'invalidSyntax' });
      // A page far past the end is empty, with the true total.
      t.like((await scim('GET', '/Users?startIndex=1000000&count=10')).body, { totalResults: 1, startIndex: 1000000, itemsPerPage: 0 });

      // ---- A token of another organization sees none of this one.
      const otherOwner = await call('signup', { email: `owner2@owner2-${backend}.example.com`, password: PASSWORD }, {});
      const owner2 = { authorization: `Bearer ${otherOwner.body!['access_token'] as string}` };
      const org2 = await ok('create_organization', { name: 'Globex' }, owner2);
      const token2 = await ok('create_scim_token', { organization_id: org2['id'] }, owner2);
      const scim2 = scimClient(srv, token2['token'] as string);
      t.is((await scim2('GET', `/Users/${bobId}`)).status, 404);
      t.is((await scim2('PATCH', `/Users/${bobId}`, { schemas: [PATCH], Operations: [{ op: 'replace', path: 'active', value: false }] })).status, 404);
      t.is((await scim2('GET', '/Users')).body['totalResults'], 0);
      t.like((await scim2('POST', '/Users', { schemas: [USER], userName: `bob@${domain}` })).body, { status: '400', scimType: 'invalidValue' }, 'another organization cannot claim an address of this one');
      t.is((await scim('GET', `/Users/${bobId}`)).body['active'], true, 'nothing changed');

      // ---- A revoked token is refused at once.
      await ok('revoke_scim_token', { token_id: tokenBody['id'] }, owner);
      const revoked = await scim('GET', '/Users');
      t.is(revoked.status, 401);
      t.like(revoked.body, { schemas: [ERROR], status: '401' });
    } finally {
      await srv.close();
      await receiver.close();
    }
  });
}
