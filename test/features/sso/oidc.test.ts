/**
 * OpenID Connect per organization (docs/sso.md) against `oidc-provider` run
 * in the test process as the organization's provider: `/sso/<id>` sends the
 * browser there with PKCE (S256), a nonce and the connection's scopes; the
 * callback with the browser's state exchanges the code, verifies the ID
 * token, provisions the user with the connection's default role and the
 * team its groups claim maps to, and lands on `/app` signed in. A callback
 * out of the browser that started, and a replayed state, are refused with no
 * session; an address outside the connection's domains is refused.
 */
import test from 'ava';
import { ownedOrganization, startSsoServer } from '../../helpers/saml_idp.ts';
import { CookieJar, request, startOidcProvider } from '../../helpers/social.ts';

const PASSWORD = 'a long enough passphrase';

test.serial('OIDC per organization: discovery, PKCE and nonce, claims and groups mapped, JIT membership and team; refusals leave no session', async (t) => {
  const txt = new Map<string, string[][]>();
  const srv = await startSsoServer({ 'enable-email-verification': false }, { backend: 'sqlite', resolveTxt: async (name) => txt.get(name) ?? [] });
  t.teardown(() => srv.close());
  const { ok, owner, orgId, domain } = await ownedOrganization(srv, txt, PASSWORD);
  const org = { id: orgId };
  const team = await ok('create_team', { organization_id: org['id'], name: 'Platform' }, owner);
  // The connection first (its redirect URI names its id), then the provider that allows it.
  const conn = await ok('add_sso_connection', {
    organization_id: org['id'], type: 'oidc', name: 'Corporate IdP', domains: [domain], default_role: 'member',
    oidc: { issuer: 'http://127.0.0.1:1', client_id: 'latchkey', client_secret: 'corp-secret', scopes: ['openid', 'email', 'profile', 'groups'] },
    group_mapping: [{ group: 'platform', team_id: team['id'] }, { group: 'it-admins', role: 'admin' }],
  }, owner);
  const redirectUri = (conn['oidc'] as Record<string, string>)['redirect_uri']!;
  t.is(redirectUri, `${srv.httpUrl}/sso/${conn['id'] as string}/callback`);
  const op = await startOidcProvider({ clientId: 'latchkey', clientSecret: 'corp-secret', redirectUris: [redirectUri], scopeClaims: { groups: ['groups'] } });
  t.teardown(() => op.close());
  await ok('update_sso_connection', { connection_id: conn['id'], oidc: { issuer: op.issuer } }, owner);
  op.accounts.set('lin', { email: 'lin@acme.example.com', email_verified: true, given_name: 'Lin', family_name: 'Chen', groups: ['platform', 'it-admins'] });
  op.account = 'lin';

  /** Follows redirects as a browser would, with its cookies, until an answer that is not a redirect. */
  const run = async (start: URL, jar: CookieJar): Promise<{ url: URL; res: Response }> => {
    let url = start;
    for (let i = 0; i < 20; i++) {
      const res = await request(jar, url);
      const loc = res.headers.get('location');
      if (loc === null) return { url, res };
      await res.arrayBuffer();
      url = new URL(loc, url);
    }
    throw new Error('too many redirects');
  };
  const jar = new CookieJar();
  const start = await request(jar, new URL(`${srv.httpUrl}/sso/${conn['id'] as string}?state=s1`));
  t.is(start.status, 302);
  const authorize = new URL(start.headers.get('location')!);
  t.is(authorize.origin, op.issuer);
  t.is(authorize.searchParams.get('code_challenge_method'), 'S256');
  t.truthy(authorize.searchParams.get('nonce'));
  t.is(authorize.searchParams.get('scope'), 'openid email profile groups');
  const landed = await run(authorize, jar);
  t.is(landed.res.status, 200);
  const text = await landed.res.text();
  t.is(landed.url.pathname, `/sso/${conn['id'] as string}/callback`);
  const next = new URL(/url=([^"]+)"/.exec(text)![1]!.replace(/&#38;/g, '&'));
  t.is(next.pathname, '/app');
  const fragment = new URLSearchParams(next.hash.slice(1));
  t.is(fragment.get('state'), 's1');
  const token = fragment.get('access_token')!;
  t.truthy(jar.get(srv.httpUrl, 'cookie_session'), 'the session cookie is set');
  const me = await srv.call('profile', {}, { protocol: 'rest', headers: { authorization: `Bearer ${token}` } });
  t.like(me.body, { email: 'lin@acme.example.com', given_name: 'Lin', family_name: 'Chen', signup_methods: 'sso_oidc' });
  const userId = (me.body as { id: string }).id;
  const check = async (relation: string, object: string) => {
    const r = await srv.call('check_permissions', { checks: [{ relation, object }] }, { protocol: 'rest', headers: { authorization: `Bearer ${token}` } });
    return r.error === undefined ? (r.body!['results'] as { allowed: boolean }[])[0]!.allowed : r.error;
  };
  t.is(await check('member', `team:${team['id'] as string}`), true, 'the platform group made a team membership');
  t.is(await check('admin', `organization:${org['id'] as string}`), true, 'the it-admins group made the admin role');
  t.truthy(userId);

  // A callback in another browser (no state cookie), and the same state again: refused, no session.
  const start2 = await fetch(`${srv.httpUrl}/sso/${conn['id'] as string}`, { redirect: 'manual' });
  const state2 = new URL(start2.headers.get('location')!).searchParams.get('state')!;
  const stranger = await fetch(`${srv.httpUrl}/sso/${conn['id'] as string}/callback?code=x&state=${encodeURIComponent(state2)}`, { redirect: 'manual' });
  t.is(stranger.status, 400);
  t.true((await stranger.text()).includes('sso_state_invalid'));
  t.false(stranger.headers.getSetCookie().some((c) => /^cookie_session=[^;]+/.test(c)));

  // An address outside the connection's domains: refused after the exchange, no session.
  op.accounts.set('mo', { email: 'mo@elsewhere.example.com', email_verified: true });
  op.account = 'mo';
  const jar3 = new CookieJar();
  const refused = await run(new URL(`${srv.httpUrl}/sso/${conn['id'] as string}`), jar3);
  t.is(refused.res.status, 400);
  t.true((await refused.res.text()).includes('sso_email_domain_not_allowed'));
  t.falsy(jar3.get(srv.httpUrl, 'cookie_session'));
});
