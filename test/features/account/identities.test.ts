/**
 * The account's sign-in methods on every protocol: linked_identities lists
 * the providers an account signed in with (GitHub through a fake of its own
 * on loopback) and whether it has a password; unlink_identity removes one
 * and ends the other sessions it opened, and is refused for the last way in,
 * for a provider not linked and for a name that is no provider. Meta
 * advertises the generic OpenID provider with its display name, and the
 * languages.
 */
import anyTest, { type ExecutionContext } from 'ava';
import { socialLoginOf } from '../../../cmd/index.ts';
import { PROTOCOLS, startTestServer, type TestServer } from '../../helpers/server.ts';
import { CookieJar, drive, type FakeProvider, githubEndpoints, landingParams, startFakeProvider, startOnKnownPort } from '../../helpers/social.ts';

// Serial: the fake's account is shared by the tests of one server.
const test = anyTest.serial;
const PASSWORD = 'correct horse battery staple';

let github: FakeProvider;
let server: TestServer;
let base = '';

test.before(async () => {
  github = await startFakeProvider('github', { clientId: 'gh', clientSecret: 'gh-secret' });
  ({ server, base } = await startOnKnownPort(() => ({
    'enable-email-verification': false,
    'app-cookie-secure': false,
    'github-client-id': 'gh',
    'github-client-secret': 'gh-secret',
    'oidc-issuer': 'https://sso.example.com/realms/staff',
    'oidc-client-id': 'latchkey',
    'oidc-client-secret': 'oidc-secret',
    'oidc-display-name': 'Staff SSO',
  })));
  socialLoginOf(server.server.services)?.useEndpointsForTests('github', githubEndpoints(github));
});
test.after.always(async () => {
  await server?.close();
  await github?.close();
});

/** Signs in with GitHub as `email`; returns the access token of the session it opened. */
async function githubLogin(t: ExecutionContext, id: string, email: string): Promise<string> {
  github.account = { id, email, email_verified: true };
  const r = await drive(new CookieJar(), `${base}/oauth_login/github?redirect_uri=${encodeURIComponent(`${base}/done`)}`, (u) => u.origin === base && u.pathname === '/done');
  const token = landingParams(r.url)?.get('access_token');
  t.truthy(token, `signed in with GitHub: ${String(r.url)}`);
  return token!;
}

const bearer = (token: string, protocol: (typeof PROTOCOLS)[number]) => ({ protocol, headers: { authorization: `Bearer ${token}` } });

/** The answer of linked_identities with each `linked_at` checked to be a recent time and then left out. */
function withoutLinkTimes(t: ExecutionContext, body: Record<string, unknown> | undefined): Record<string, unknown> | undefined {
  if (body === undefined) return body;
  const identities = (body['identities'] as Record<string, unknown>[]).map(({ linked_at, ...rest }) => {
    t.true(typeof linked_at === 'number' && Math.abs(linked_at - Date.now() / 1000) < 600, `linked_at ${String(linked_at)}`);
    return rest;
  });
  return { ...body, identities };
}

for (const protocol of PROTOCOLS) {
  test(`${protocol}: a password account with GitHub linked lists both, unlinks GitHub, and GitHub's other sessions end`, async (t) => {
    const email = `linked-${protocol}@example.com`;
    t.is((await server.call('signup', { email, password: PASSWORD }, { protocol: 'rest' })).status, 200);
    const login = await server.call('login', { email, password: PASSWORD }, { protocol: 'rest' });
    const own = login.body!['access_token'] as string;
    const viaGithub = await githubLogin(t, String(100 + PROTOCOLS.indexOf(protocol)), email);

    // The callback recorded the device of the session GitHub opened.
    const sessions = (await server.call('list_sessions', {}, bearer(own, protocol))).body!['sessions'] as { login_method: string; ip: string; user_agent: string }[];
    const github_ = sessions.find((x) => x.login_method === 'github');
    t.is(github_?.ip, '127.0.0.1');
    t.truthy(github_?.user_agent);
    const linked = await server.call('linked_identities', {}, bearer(own, protocol));
    t.is(linked.error, undefined);
    t.deepEqual(withoutLinkTimes(t, linked.body), { identities: [{ provider: 'github', display_name: 'GitHub', email }], has_password: true });

    const unlinked = await server.call('unlink_identity', { provider: 'github' }, bearer(own, protocol));
    t.is(unlinked.error, undefined);
    t.is(unlinked.body?.['message'], 'GitHub unlinked');
    t.deepEqual((await server.call('linked_identities', {}, bearer(own, protocol))).body, { identities: [], has_password: true });
    t.is((await server.call('profile', {}, bearer(own, protocol))).body?.['signup_methods'], 'basic_auth');
    // The session GitHub opened is over; the password session that unlinked goes on.
    t.is((await server.call('profile', {}, bearer(viaGithub, protocol))).error?.code, 'unauthenticated');
    t.is((await server.call('profile', {}, bearer(own, protocol))).error, undefined);
    // Not linked any more: unlinking again is not_found.
    const again = await server.call('unlink_identity', { provider: 'github' }, bearer(own, protocol));
    t.is(again.error?.code, 'not_found');
    t.is(again.error?.reason, 'identity_not_linked');
  });

  test(`${protocol}: the last sign-in method cannot be unlinked; a name that is no provider is refused`, async (t) => {
    const token = await githubLogin(t, String(200 + PROTOCOLS.indexOf(protocol)), `only-${protocol}@example.com`);
    t.deepEqual(withoutLinkTimes(t, (await server.call('linked_identities', {}, bearer(token, protocol))).body), {
      identities: [{ provider: 'github', display_name: 'GitHub', email: `only-${protocol}@example.com` }],
      has_password: false,
    });
    const last = await server.call('unlink_identity', { provider: 'github' }, bearer(token, protocol));
    t.is(last.error?.code, 'failed_precondition');
    t.is(last.error?.reason, 'last_sign_in_method');
    // Nothing changed.
    t.is((await server.call('profile', {}, bearer(token, protocol))).body?.['signup_methods'], 'github');
    const bad = await server.call('unlink_identity', { provider: 'basic_auth' }, bearer(token, protocol));
    t.is(bad.error?.code, 'invalid_argument');
    t.is(bad.error?.reason, 'invalid_provider');
    t.is((await server.call('unlink_identity', { provider: '' }, bearer(token, protocol))).error?.code, 'invalid_argument');
    t.is((await server.call('linked_identities', {}, { protocol })).error?.code, 'unauthenticated');
    t.is((await server.call('unlink_identity', { provider: 'github' }, { protocol })).error?.code, 'unauthenticated');
  });

  test(`${protocol}: meta advertises the generic OpenID provider with its display name, and the languages`, async (t) => {
    const meta = (await server.call('meta', {}, { protocol })).body!;
    t.true(meta['is_oidc_login_enabled']);
    t.is(meta['oidc_display_name'], 'Staff SSO');
    t.true(meta['is_github_login_enabled']);
    t.true(Array.isArray(meta['languages']));
    t.is((meta['languages'] as string[])[0], 'en');
  });
}

test('meta without the generic OpenID provider: not enabled, the default display name', async (t) => {
  const plain = await startTestServer();
  t.teardown(() => plain.close());
  const meta = (await plain.call('meta', {}, { protocol: 'rest' })).body!;
  t.false(meta['is_oidc_login_enabled']);
  t.is(meta['oidc_display_name'], 'OpenID Connect');
});
