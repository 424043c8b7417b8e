/**
 * Social login over plain HTTP (fetch with manual redirects and a cookie jar)
 * against providers on loopback: `oidc-provider` as Google and as a generic
 * OpenID provider found by discovery (--oidc-issuer); fake OAuth 2.0 servers
 * as GitHub (profile plus /user/emails) and Discord; a fake OpenID server as
 * Apple (form_post, client-secret JWT signed by the server) and as Twitch
 * (ID tokens spoiled on purpose). Each flow goes redirect → provider →
 * callback → session: the browser lands on the redirect_uri with the tokens
 * and the session cookie works. Refusals: state mismatch, replayed state,
 * wrong nonce, ID tokens of another audience or issuer, an unverified
 * provider email matching an existing account (no link), sign-up disabled,
 * a revoked user, a protected role, a foreign redirect_uri.
 */
import anyTest, { type ExecutionContext } from 'ava';
import { exportJWK, exportPKCS8, generateKeyPair } from 'jose';
import { parseFlags, socialLoginOf } from '../../../cmd/index.ts';
import { TEST_ADMIN_SECRET, startTestServer, type TestServer, type TestServerOptions } from '../../helpers/server.ts';
import { CookieJar, drive, type FakeProvider, githubEndpoints, landingParams, type OidcProvider, request, startFakeProvider, startOidcProvider, startOnKnownPort } from '../../helpers/social.ts';
import { startSmtp } from '../../admin/smtp.ts';
import { postgresUrl, redisUrl } from '../../helpers/databases.ts';
import { mainBackends } from '../../helpers/main_databases.ts';
import { startReceiver } from '../../admin/receiver.ts';
import { onFreePort, PortTaken } from '../../helpers/started.ts';

// Serial: the fakes' accounts and spoilers are shared by the tests of one server.
const test = anyTest.serial;
const ADMIN = { protocol: 'rest' as const, headers: { 'x-service-admin-secret': TEST_ADMIN_SECRET } };
const PASSWORD = 'Correct-Horse-7-Battery';


interface World {
  server: TestServer;
  base: string;
  google: OidcProvider;
  github: FakeProvider;
  discord: FakeProvider;
  apple: FakeProvider;
  twitch: FakeProvider;
  microsoft: FakeProvider;
}

let world: World | undefined;
const closers: (() => Promise<void>)[] = [];

function startWorld(): Promise<World> {
  // The provider registers the callbacks of the server's port, and the server names the provider's issuer:
  // both start again on a port taken meanwhile (what a failed attempt started is closed with the rest, by `closers`).
  return onFreePort(async (port) => {
    try {
      return await startWorldOn(port);
    } catch (err) {
      if ((err as { code?: unknown }).code === 'EADDRINUSE') throw new PortTaken(`port ${port} was taken before the test server bound it`);
      throw err;
    }
  });
}

async function startWorldOn(port: number): Promise<World> {
  const base = `http://127.0.0.1:${port}`;
  const google = await startOidcProvider({ clientId: 'google-id', clientSecret: 'google-secret', redirectUris: [`${base}/oauth_callback/google`, `${base}/oauth_callback/oidc`] });
  closers.push(() => google.close());
  const github = await startFakeProvider('github', { clientId: 'github-id', clientSecret: 'github-secret' });
  const discord = await startFakeProvider('discord', { clientId: 'discord-id', clientSecret: 'discord-secret' });
  const apple = await startFakeProvider('oidc', { clientId: 'com.example.web', clientSecret: '' });
  const twitch = await startFakeProvider('oidc', { clientId: 'twitch-id', clientSecret: 'twitch-secret' });
  const microsoft = await startFakeProvider('oidc', { clientId: 'ms-id', clientSecret: 'ms-secret' });
  closers.push(() => github.close(), () => discord.close(), () => apple.close(), () => twitch.close(), () => microsoft.close());
  const appleKey = await generateKeyPair('ES256', { extractable: true });
  apple.appleSecretKey = { publicJwk: await exportJWK(appleKey.publicKey), teamId: 'TEAM123456' };
  const server = await startTestServer({
    'http-port': port,
    url: base,
    'enable-email-verification': false,
    'app-cookie-secure': false,
    roles: 'user,admin',
    'default-roles': 'user',
    'protected-roles': 'admin',
    'google-client-id': 'google-id',
    'google-client-secret': 'google-secret',
    'github-client-id': 'github-id',
    'github-client-secret': 'github-secret',
    'discord-client-id': 'discord-id',
    'discord-client-secret': 'discord-secret',
    'apple-client-id': 'com.example.web',
    'apple-client-secret': await exportPKCS8(appleKey.privateKey),
    'apple-team-id': 'TEAM123456',
    'apple-key-id': 'KEY1',
    'twitch-client-id': 'twitch-id',
    'twitch-client-secret': 'twitch-secret',
    'microsoft-client-id': 'ms-id',
    'microsoft-client-secret': 'ms-secret',
    'oidc-issuer': google.issuer,
    'oidc-client-id': 'google-id',
    'oidc-client-secret': 'google-secret',
    'oidc-display-name': 'Corporate SSO',
  });
  closers.push(() => server.close());
  const social = socialLoginOf(server.server.services);
  if (social === undefined) throw new Error('social login not plugged');
  social.useEndpointsForTests('google', { authorizationEndpoint: `${google.issuer}/auth`, tokenEndpoint: `${google.issuer}/token`, jwksUri: `${google.issuer}/jwks`, issuer: google.issuer });
  social.useEndpointsForTests('github', githubEndpoints(github));
  social.useEndpointsForTests('discord', { authorizationEndpoint: `${discord.url}/authorize`, tokenEndpoint: `${discord.url}/token`, userinfoEndpoint: `${discord.url}/user` });
  social.useEndpointsForTests('apple', { authorizationEndpoint: `${apple.url}/authorize`, tokenEndpoint: `${apple.url}/token`, jwksUri: `${apple.url}/jwks`, issuer: apple.url });
  social.useEndpointsForTests('twitch', { authorizationEndpoint: `${twitch.url}/authorize`, tokenEndpoint: `${twitch.url}/token`, jwksUri: `${twitch.url}/jwks`, issuer: twitch.url });
  // Entra's multi-tenant issuer: the tenant id of the token is part of it.
  social.useEndpointsForTests('microsoft', { authorizationEndpoint: `${microsoft.url}/authorize`, tokenEndpoint: `${microsoft.url}/token`, jwksUri: `${microsoft.url}/jwks`, issuer: `${microsoft.url}/{tenantid}/v2.0` });
  return { server, base, google, github, discord, apple, twitch, microsoft };
}

/** A server with GitHub pointed at a fake of its own (closed with the test); `extra` adds flags. */
async function serverWithGithub(t: ExecutionContext, extra: Record<string, string | number | boolean> = {}, options: TestServerOptions = {}) {
  const github = await startFakeProvider('github', { clientId: 'gh', clientSecret: 'gh-secret' });
  t.teardown(() => github.close());
  const { server, base } = await startOnKnownPort(() => ({ 'enable-email-verification': false, 'app-cookie-secure': false, 'github-client-id': 'gh', 'github-client-secret': 'gh-secret', ...extra }), options);
  t.teardown(() => server.close());
  socialLoginOf(server.server.services)?.useEndpointsForTests('github', githubEndpoints(github));
  return { github, server, base };
}

test.before(async () => {
  world = await startWorld();
});

test.after.always(async () => {
  for (const close of closers.reverse()) await close().catch(() => {});
});

const w = (): World => {
  if (world === undefined) throw new Error('no world');
  return world;
};

/** Runs a login from /oauth_login/<provider> to the redirect_uri (`/done` on the server's origin). */
async function login(provider: string, o: { jar?: CookieJar; query?: Record<string, string> } = {}) {
  const jar = o.jar ?? new CookieJar();
  const start = new URL(`${w().base}/oauth_login/${provider}`);
  start.searchParams.set('redirect_uri', `${w().base}/done`);
  start.searchParams.set('state', 'client-state-1');
  for (const [k, v] of Object.entries(o.query ?? {})) start.searchParams.set(k, v);
  const landing = await drive(jar, start, (u) => u.origin === w().base && u.pathname === '/done');
  return { jar, landing, params: landingParams(landing.url) };
}

async function profileOf(jar: CookieJar) {
  const cookie = jar.get(w().base, 'cookie_session');
  if (cookie === undefined) return undefined;
  const r = await w().server.call('profile', {}, { protocol: 'rest', cookies: { cookie_session: cookie } });
  return r.body as { id: string; email: string; email_verified: boolean; signup_methods: string; given_name: string | null; roles: string[] } | undefined;
}

async function auditActions(userId: string): Promise<{ action: string; metadata: string }[]> {
  const r = await w().server.call('audit_logs', { actor_id: userId, pagination: { limit: 100, page: 1 } }, ADMIN);
  return ((r.body?.['audit_logs'] ?? []) as { action: string; metadata: string }[]).map((x) => ({ action: x.action, metadata: x.metadata }));
}

function assertSignedIn(t: ExecutionContext, params: URLSearchParams | undefined): void {
  t.truthy(params?.get('access_token'));
  t.truthy(params?.get('id_token'));
  t.is(params?.get('token_type'), 'bearer');
  t.is(params?.get('state'), 'client-state-1');
  t.is(params?.get('error'), null);
}

test('Google (oidc-provider): first login signs up with the verified address, the session cookie and tokens work, the next login is the same user', async (t) => {
  const { google, server } = w();
  google.accounts.set('alice', { email: 'Alice@Example.com', email_verified: true, given_name: 'Alice', family_name: 'Liddell' });
  google.account = 'alice';
  const first = await login('google');
  assertSignedIn(t, first.params);
  const me = await profileOf(first.jar);
  t.is(me?.email, 'alice@example.com');
  t.true(me?.email_verified);
  t.is(me?.signup_methods, 'google');
  t.is(me?.given_name, 'Alice');
  t.deepEqual(me?.roles, ['user']);
  // The access token of the redirect is a live bearer token.
  const byToken = await server.call('profile', {}, { protocol: 'graphql', headers: { authorization: `Bearer ${first.params?.get('access_token') ?? ''}` } });
  t.is((byToken.body as { id?: string } | undefined)?.id, me?.id);
  // The state cookie is gone after the callback.
  t.is(first.jar.get(w().base, 'service-oauth-state'), undefined);

  const second = await login('google');
  assertSignedIn(t, second.params);
  t.is((await profileOf(second.jar))?.id, me?.id);
  const actions = await auditActions(me?.id ?? '');
  t.is(actions.filter((a) => a.action === 'user.signup').length, 1);
  t.is(actions.filter((a) => a.action === 'user.login_success').length, 2);
  t.true(actions.filter((a) => a.action === 'user.signup' || a.action === 'user.login_success').every((a) => JSON.parse(a.metadata).provider === 'google'));
});

test('a replayed callback (same state, code and state cookie) is refused and opens no session', async (t) => {
  w().google.accounts.set('rita', { email: 'rita@example.com', email_verified: true });
  w().google.account = 'rita';
  const jar = new CookieJar();
  const start = new URL(`${w().base}/oauth_login/google?redirect_uri=${encodeURIComponent(`${w().base}/done`)}`);
  // Stop at the callback to keep the state cookie for the replay.
  const toCallback = await drive(jar, start, (u) => u.pathname === '/oauth_callback/google');
  const callback = toCallback.url;
  const stateCookie = jar.get(w().base, 'service-oauth-state');
  t.truthy(callback);
  t.truthy(stateCookie);
  const done = await drive(jar, callback ?? '', (u) => u.pathname === '/done');
  assertSignedIn(t, landingParams(done.url) && new URLSearchParams({ ...Object.fromEntries(landingParams(done.url) ?? []), state: 'client-state-1' }));
  const replayJar = new CookieJar();
  replayJar.set(w().base, 'service-oauth-state', stateCookie ?? '');
  const replay = await request(replayJar, callback ?? new URL(w().base));
  t.is(replay.status, 400);
  t.is(((await replay.json()) as { error: string }).error, 'invalid_request');
  t.is(replayJar.get(w().base, 'cookie_session'), undefined);
});

test('a state that is not the browser\'s (login CSRF) is refused; the state is not burnt for its owner', async (t) => {
  w().google.accounts.set('mallory', { email: 'mallory@example.com', email_verified: true });
  w().google.account = 'mallory';
  const attacker = new CookieJar();
  const start = new URL(`${w().base}/oauth_login/google?redirect_uri=${encodeURIComponent(`${w().base}/done`)}`);
  const atCallback = await drive(attacker, start, (u) => u.pathname === '/oauth_callback/google');
  // The victim's browser has a login of its own in progress (its own state cookie), or none at all.
  const victim = new CookieJar();
  await request(victim, start);
  t.truthy(victim.get(w().base, 'service-oauth-state'));
  for (const jar of [victim, new CookieJar()]) {
    const res = await request(jar, atCallback.url ?? new URL(w().base));
    t.is(res.status, 400);
    t.is(jar.get(w().base, 'cookie_session'), undefined);
  }
  // The attacker's own browser can still finish (the mismatch consumed nothing).
  const done = await drive(attacker, atCallback.url ?? '', (u) => u.pathname === '/done');
  t.truthy(landingParams(done.url)?.get('access_token'));
});

test('Twitch-like OpenID provider: ID tokens with a wrong nonce, another audience or another issuer are refused; the right one signs in', async (t) => {
  const { twitch } = w();
  twitch.account = { id: 't-1', email: 'tess@example.com', email_verified: true };
  for (const spoil of [{ nonce: 'not-the-nonce' }, { aud: 'another-client' }, { iss: 'https://evil.example' }]) {
    twitch.idToken = spoil;
    const r = await login('twitch');
    t.is(r.params?.get('error'), 'access_denied', JSON.stringify(spoil));
    t.regex(r.params?.get('error_description') ?? '', /Twitch/);
    t.is(r.params?.get('access_token'), null);
    t.is(r.params?.get('state'), 'client-state-1');
    t.is(r.jar.get(w().base, 'cookie_session'), undefined);
  }
  twitch.idToken = {};
  const ok = await login('twitch');
  assertSignedIn(t, ok.params);
  t.is((await profileOf(ok.jar))?.signup_methods, 'twitch');
});

test('GitHub: the verified primary address of /user/emails signs up; PKCE and the client secret reach the token endpoint', async (t) => {
  const { github } = w();
  github.account = { id: '42', email: 'octo@example.com', email_verified: true, given_name: 'Octo', family_name: 'Cat' };
  github.emails = [
    { email: 'old@example.com', primary: false, verified: false },
    { email: 'octo@example.com', primary: true, verified: true },
  ];
  const r = await login('github');
  assertSignedIn(t, r.params);
  const me = await profileOf(r.jar);
  t.is(me?.email, 'octo@example.com');
  t.is(me?.signup_methods, 'github');
  const form = github.tokenRequests.at(-1);
  t.truthy(form?.get('code_verifier'));
  t.is(form?.get('client_secret'), 'github-secret');
  t.is(form?.get('redirect_uri'), `${w().base}/oauth_callback/github`);
  github.emails = undefined;
});

test('GitHub: an unverified address matching an existing account is refused with a clear message and links nothing', async (t) => {
  const { github, server } = w();
  const signup = await server.call('signup', { email: 'victim@example.com', password: PASSWORD }, { protocol: 'rest' });
  t.is(signup.status, 200);
  github.account = { id: '666', email: 'victim@example.com', email_verified: false };
  const r = await login('github');
  t.is(r.params?.get('error'), 'access_denied');
  t.regex(r.params?.get('error_description') ?? '', /not verified/);
  t.is(r.params?.get('access_token'), null);
  t.is(r.jar.get(w().base, 'cookie_session'), undefined);
  const user = await server.call('user', { email: 'victim@example.com' }, ADMIN);
  t.is((user.body as { signup_methods?: string } | undefined)?.signup_methods, 'basic_auth');
  // The password account is untouched.
  t.is((await server.call('login', { email: 'victim@example.com', password: PASSWORD }, { protocol: 'rest' })).status, 200);
  const failures = await w().server.call('audit_logs', { action: 'oauth.callback_failed', pagination: { limit: 100, page: 1 } }, ADMIN);
  const rows = (failures.body?.['audit_logs'] ?? []) as { metadata: string }[];
  t.true(rows.some((x) => JSON.parse(x.metadata).reason === 'unverified_provider_email' && JSON.parse(x.metadata).provider === 'github'));
});

test('GitHub: a verified fullwidth or invisible-character spelling of an address links no account and makes none', async (t) => {
  const { github, server } = w();
  await server.call('signup', { email: 'lookalike@example.com', password: PASSWORD }, { protocol: 'rest' });
  const fullwidth = `${[...'lookalike'].map((c) => String.fromCodePoint(c.charCodeAt(0) + 0xfee0)).join('')}@example.com`;
  for (const [id, email] of [
    ['901', fullwidth],
    ['902', 'look\u200balike@example.com'],
    ['903', 'ne\u200bw-lookalike@example.com'],
  ] as const) {
    github.account = { id, email, email_verified: true };
    const r = await login('github');
    t.is(r.params?.get('error'), 'access_denied', email);
    t.is(r.params?.get('access_token'), null);
    t.is(r.jar.get(w().base, 'cookie_session'), undefined);
  }
  const user = await server.call('user', { email: 'lookalike@example.com' }, ADMIN);
  t.is((user.body as { signup_methods?: string } | undefined)?.signup_methods, 'basic_auth');
  t.is((await server.call('user', { email: 'new-lookalike@example.com' }, ADMIN)).error?.code, 'not_found');
});

test('GitHub: a verified address of an existing account links it (sign-up method added), same user', async (t) => {
  const { github, server } = w();
  await server.call('signup', { email: 'linked@example.com', password: PASSWORD }, { protocol: 'rest' });
  github.account = { id: '77', email: 'linked@example.com', email_verified: true };
  const r = await login('github');
  assertSignedIn(t, r.params);
  const me = await profileOf(r.jar);
  t.is(me?.email, 'linked@example.com');
  t.is(me?.signup_methods, 'basic_auth,github');
});

test('Discord: `verified: false` is refused; a verified account signs up', async (t) => {
  const { discord } = w();
  discord.account = { id: 'd-1', email: 'disco@example.com', email_verified: false };
  const refused = await login('discord');
  t.is(refused.params?.get('error'), 'access_denied');
  discord.account = { id: 'd-1', email: 'disco@example.com', email_verified: true };
  const ok = await login('discord');
  assertSignedIn(t, ok.params);
  t.is((await profileOf(ok.jar))?.signup_methods, 'discord');
});

test('Apple: form_post callback, the client-secret JWT signed by the server (ES256, team id, key id), the name from the first callback', async (t) => {
  const { apple } = w();
  apple.account = { id: 'apple-sub-1', email: 'ann@privaterelay.example', email_verified: true, given_name: 'Ann', family_name: 'Apple' };
  const r = await login('apple');
  assertSignedIn(t, r.params);
  const me = await profileOf(r.jar);
  t.is(me?.email, 'ann@privaterelay.example');
  t.is(me?.given_name, 'Ann');
  t.is(me?.signup_methods, 'apple');
  t.true(r.landing.callbacks.some((c) => c.init.method === 'POST'));
});

test('a revoked user is refused; re-enabled, the user signs in again', async (t) => {
  const { google, server } = w();
  google.accounts.set('rob', { email: 'rob@example.com', email_verified: true });
  google.account = 'rob';
  const first = await login('google');
  const me = await profileOf(first.jar);
  t.truthy(me);
  t.is((await server.call('revoke_access', { user_id: me?.id }, ADMIN)).status, 200);
  const refused = await login('google');
  t.is(refused.params?.get('error'), 'access_denied');
  t.regex(refused.params?.get('error_description') ?? '', /revoked/);
  t.is(refused.jar.get(w().base, 'cookie_session'), undefined);
  // The session of before the revocation is over too.
  t.is(await profileOf(first.jar), undefined);
  await server.call('enable_access', { user_id: me?.id }, ADMIN);
  assertSignedIn(t, (await login('google')).params);
});

test('roles as the reference takes them: a protected role is refused at sign-up, roles not held are refused, a held role is granted', async (t) => {
  const { google } = w();
  google.accounts.set('pat', { email: 'pat@example.com', email_verified: true });
  google.account = 'pat';
  const protectedRole = await login('google', { query: { roles: 'admin' } });
  t.is(protectedRole.params?.get('error'), 'access_denied');
  const ok = await login('google', { query: { roles: 'user', scope: 'openid email' } });
  assertSignedIn(t, ok.params);
  t.is(ok.params?.get('refresh_token'), null, 'no offline_access, no refresh token');
  const notHeld = await login('google', { query: { roles: 'admin' } });
  t.is(notHeld.params?.get('error'), 'access_denied');
  const unknown = await request(new CookieJar(), new URL(`${w().base}/oauth_login/google?roles=superuser`));
  t.is(unknown.status, 400);
});

test('the login request: a redirect_uri off the allowed origins is refused before the provider; the state cookie is HttpOnly and scoped to the callback', async (t) => {
  const jar = new CookieJar();
  const foreign = await request(jar, new URL(`${w().base}/oauth_login/google?redirect_uri=${encodeURIComponent('https://evil.example/steal')}`));
  t.is(foreign.status, 400);
  t.is(((await foreign.json()) as { error: string }).error, 'invalid_request');
  t.is(jar.get(w().base, 'service-oauth-state'), undefined);
  const ok = await fetch(`${w().base}/oauth_login/github`, { redirect: 'manual' });
  t.is(ok.status, 302);
  const cookie = ok.headers.getSetCookie().find((c) => c.startsWith('service-oauth-state='));
  t.regex(cookie ?? '', /HttpOnly/);
  t.regex(cookie ?? '', /Path=\/oauth_callback\//);
  t.regex(cookie ?? '', /Max-Age=600/);
  const location = new URL(ok.headers.get('location') ?? '');
  t.is(location.searchParams.get('code_challenge_method'), 'S256');
  t.is(location.searchParams.get('redirect_uri'), `${w().base}/oauth_callback/github`);
  t.is(location.searchParams.get('state'), cookie?.split(';')[0]?.split('=')[1] ?? null);
  // Providers without credentials are not served; meta says which are.
  t.is((await fetch(`${w().base}/oauth_login/facebook`, { redirect: 'manual' })).status, 404);
  const meta = (await w().server.call('meta', {}, { protocol: 'rest' })).body as Record<string, boolean>;
  t.true(meta['is_google_login_enabled']);
  t.true(meta['is_apple_login_enabled']);
  t.false(meta['is_facebook_login_enabled']);
  t.true(meta['is_microsoft_login_enabled']);
  t.false(meta['is_roblox_login_enabled']);
});

test('any OpenID provider by discovery (--oidc-issuer): oidc-provider found through its discovery document, same rules', async (t) => {
  const { google } = w();
  google.accounts.set('sso-user', { email: 'sso@example.com', email_verified: true, given_name: 'Sso' });
  google.account = 'sso-user';
  const r = await login('oidc');
  assertSignedIn(t, r.params);
  const me = await profileOf(r.jar);
  t.is(me?.email, 'sso@example.com');
  t.is(me?.signup_methods, 'oidc');
  google.accounts.set('sso-unverified', { email: 'sso2@example.com', email_verified: false });
  google.account = 'sso-unverified';
  const refused = await login('oidc');
  t.is(refused.params?.get('error'), 'access_denied');
  t.regex(refused.params?.get('error_description') ?? '', /Corporate SSO/);
});

test('sign-up disabled: a new provider account is refused and no user is created', async (t) => {
  const { github, server, base } = await serverWithGithub(t, { 'enable-signup': false });
  github.account = { id: '5', email: 'newcomer@example.com', email_verified: true };
  const stop = (u: URL) => u.origin === base && u.pathname === '/done';
  const refused = await drive(new CookieJar(), `${base}/oauth_login/github?redirect_uri=${encodeURIComponent(`${base}/done`)}`, stop);
  t.is(refused.url?.searchParams.get('error'), 'access_denied');
  t.regex(refused.url?.searchParams.get('error_description') ?? '', /signup is disabled/);
  t.is((await server.call('user', { email: 'newcomer@example.com' }, ADMIN)).error?.code, 'not_found');
});

test('matrix B8: a verified provider address matching an unverified password account does not link it: the squat is replaced, its password no longer works', async (t) => {
  const smtp = await startSmtp();
  t.teardown(() => smtp.close());
  const { github, server, base } = await serverWithGithub(t, { 'enable-email-verification': true, 'smtp-host': '127.0.0.1', 'smtp-port': smtp.port, 'smtp-sender-email': 'noreply@example.com' });
  // The attacker pre-registers the victim's address with a password of their own; it stays unverified.
  const squat = await server.call('signup', { email: 'owner@example.com', password: PASSWORD, given_name: 'Squatter' }, { protocol: 'rest' });
  t.is(squat.status, 200);
  const squatId = (squat.body?.['user'] as { id: string }).id;
  // The owner signs in with GitHub, which verified the address.
  github.account = { id: '9', email: 'owner@example.com', email_verified: true, given_name: 'Owner' };
  const r = await drive(new CookieJar(), `${base}/oauth_login/github?redirect_uri=${encodeURIComponent(`${base}/done`)}`, (u) => u.origin === base && u.pathname === '/done');
  t.truthy(landingParams(r.url)?.get('access_token'));
  const user = (await server.call('user', { email: 'owner@example.com' }, ADMIN)).body as { id: string; signup_methods: string; email_verified: boolean; given_name: string };
  t.not(user.id, squatId, 'not linked: a new account');
  t.is(user.signup_methods, 'github');
  t.true(user.email_verified);
  t.is(user.given_name, 'Owner');
  t.is((await server.call('user', { id: squatId }, ADMIN)).error?.code, 'not_found');
  // The squatter's password opens nothing.
  const login = await server.call('login', { email: 'owner@example.com', password: PASSWORD }, { protocol: 'rest' });
  t.is(login.error?.code, 'unauthenticated');
  const audit = await server.call('audit_logs', { action: 'oauth.unverified_account_replaced', pagination: { limit: 10, page: 1 } }, ADMIN);
  t.is(((audit.body?.['audit_logs'] ?? []) as unknown[]).length, 1);
});

// The sign-up's event is written in the transaction that stores the user on SQL, right after it on DynamoDB: once either way.
for (const backend of mainBackends()) {
  test(`a social sign-up records user.signup once, with its provider, and queues its webhook once; a later login records no second sign-up (${backend})`, async (t) => {
    const receiver = await startReceiver();
    t.teardown(() => receiver.close());
    const { github, server, base } = await serverWithGithub(t, { 'webhook-allow-private-networks': true }, { backend });
    t.is((await server.call('add_webhook', { event_name: 'user.signup', endpoint: receiver.url }, ADMIN)).error, undefined);
    github.account = { id: '41', email: 'once@example.com', email_verified: true };
    const signIn = async () => landingParams((await drive(new CookieJar(), `${base}/oauth_login/github?redirect_uri=${encodeURIComponent(`${base}/done`)}`, (u) => u.origin === base && u.pathname === '/done')).url);
    t.truthy((await signIn())?.get('access_token'));
    t.truthy((await signIn())?.get('access_token'), 'the second login signs in to the same account');
    const user = (await server.call('user', { email: 'once@example.com' }, ADMIN)).body as { id: string };
    const audit = await server.call('audit_logs', { action: 'user.signup', pagination: { limit: 10, page: 1 } }, ADMIN);
    const rows = (audit.body?.['audit_logs'] ?? []) as { actor_id: string; resource_id: string; metadata: string }[];
    t.is(rows.length, 1);
    t.like(rows[0], { actor_id: user.id, resource_id: user.id });
    t.like(JSON.parse(rows[0]?.metadata ?? '{}'), { provider: 'github', login_method: 'github', protocol: 'oauth' });
    const deadline = Date.now() + 20_000;
    while (receiver.received.length < 1 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    await new Promise((r) => setTimeout(r, 300));
    const bodies = receiver.received.map((r) => JSON.parse(r.body) as { event_name: string; user: { id: string; email: string; signup_methods: string } });
    t.is(bodies.length, 1);
    t.like(bodies[0], { event_name: 'user.signup', user: { id: user.id, email: 'once@example.com', signup_methods: 'github' } });
  });
}

test('Microsoft (multi-tenant): the issuer names the token\'s tenant; the email counts as verified only with xms_edov or a consumer account (nOAuth)', async (t) => {
  const { microsoft } = w();
  const tenant = '11111111-2222-3333-4444-555555555555';
  const consumer = '9188040d-6c67-4c5b-b112-36a304b66dad';
  const issuer = (tid: string) => `${microsoft.url}/${tid}/v2.0`;
  microsoft.account = { id: 'ms-1', email: 'max@contoso.example' };
  microsoft.idToken = { iss: issuer(tenant), extra: { tid: tenant } };
  const unverified = await login('microsoft');
  t.is(unverified.params?.get('error'), 'access_denied');
  t.regex(unverified.params?.get('error_description') ?? '', /verified/);
  microsoft.idToken = { iss: issuer(tenant), extra: { tid: '99999999-2222-3333-4444-555555555555', xms_edov: true } };
  const otherTenantIssuer = await login('microsoft');
  t.is(otherTenantIssuer.params?.get('error'), 'access_denied', 'iss of another tenant than tid');
  microsoft.idToken = { iss: issuer(tenant), extra: { tid: tenant, xms_edov: true } };
  const ok = await login('microsoft');
  assertSignedIn(t, ok.params);
  t.is((await profileOf(ok.jar))?.signup_methods, 'microsoft');
  microsoft.account = { id: 'ms-2', email: 'mia@outlook.example' };
  microsoft.idToken = { iss: issuer(consumer), extra: { tid: consumer } };
  assertSignedIn(t, (await login('microsoft')).params);
  microsoft.idToken = {};
});

test('MFA applies as after a password: the challenge cookie and the screen to show, no session and no token', async (t) => {
  const { github, base } = await serverWithGithub(t, { 'enable-mfa': true, 'enforce-mfa': true, 'enable-totp-login': true });
  github.account = { id: '12', email: 'mfa@example.com', email_verified: true };
  const jar = new CookieJar();
  const r = await drive(jar, `${base}/oauth_login/github?state=s1&redirect_uri=${encodeURIComponent(`${base}/done`)}`, (u) => u.origin === base && u.pathname === '/done');
  t.is(r.url?.searchParams.get('should_show_totp_screen'), 'true');
  t.is(r.url?.searchParams.get('state'), 's1');
  t.is(landingParams(r.url)?.get('access_token'), null);
  t.truthy(jar.get(base, 'mfa'));
  t.is(jar.get(base, 'cookie_session'), undefined);
});

// The state's single use is the memory store's atomic delete: the same on Redis (shared by several server processes) and on PostgreSQL.
const shared = redisUrl();
if (shared !== undefined || postgresUrl() !== undefined) {
  test('on PostgreSQL with the memory store on Redis (when their URLs are set): a flow, then its replay refused', async (t) => {
    const { github, base } = await serverWithGithub(t, shared === undefined ? {} : { 'redis-url': shared }, { backend: postgresUrl() === undefined ? 'sqlite' : 'postgres' });
    github.account = { id: '31', email: 'shared@example.com', email_verified: true };
    const jar = new CookieJar();
    const atCallback = await drive(jar, `${base}/oauth_login/github?redirect_uri=${encodeURIComponent(`${base}/done`)}`, (u) => u.pathname === '/oauth_callback/github');
    const stateCookie = jar.get(base, 'service-oauth-state') ?? '';
    // Two callbacks with the same state at once: exactly one signs in.
    const twins = [new CookieJar(), new CookieJar()];
    for (const j of twins) j.set(base, 'service-oauth-state', stateCookie);
    const answers = await Promise.all(twins.map((j) => request(j, atCallback.url ?? new URL(base))));
    const signedIn = answers.filter((a) => a.status === 302 && landingParams(new URL(a.headers.get('location') ?? '', base))?.has('access_token'));
    t.is(signedIn.length, 1);
    t.is(answers.filter((a) => a.status === 400).length, 1);
  });
}

test('the --oidc-* flags go together, and --oidc-issuer is an http(s) URL', (t) => {
  const base = ['--admin-secret=a', '--client-id=c', '--client-secret=s', '--jwt-type=HS256', '--jwt-secret=0123456789abcdef0123456789abcdef', '--database-type=sqlite', '--database-url=:memory:'];
  const problems = (extra: string[]) => {
    const r = parseFlags([...base, ...extra]);
    return r.ok ? [] : r.problems;
  };
  t.deepEqual(problems(['--oidc-issuer=https://sso.example.com/realms/main', '--oidc-client-id=x', '--oidc-client-secret=y']), []);
  t.true(problems(['--oidc-issuer=https://sso.example.com']).some((p) => p.includes('go together')));
  t.true(problems(['--oidc-client-id=x', '--oidc-client-secret=y']).some((p) => p.includes('go together')));
  t.true(problems(['--oidc-issuer=sso.example.com', '--oidc-client-id=x', '--oidc-client-secret=y']).some((p) => p.includes('http(s) URL')));
});
