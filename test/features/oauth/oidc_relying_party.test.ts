/**
 * The server as an OpenID provider, driven by a relying-party library it did
 * not write (`openid-client`): discovery, the authorization code flow with
 * PKCE, the token endpoint, `/userinfo`, refresh, `/oauth/introspect`
 * (RFC 7662) and RP-initiated logout (`/logout`), all through the library,
 * against the real server on RS256 keys. Plus the edges the library does not
 * reach: the logout confirmation without a hint, scope-filtered userinfo,
 * introspection without the client secret, the hybrid response types (which
 * the library does not speak; checked with jose), and discovery listing only
 * endpoints that answer.
 */
import test from 'ava';
import { createHash, generateKeyPairSync } from 'node:crypto';
import { createRemoteJWKSet, jwtVerify } from 'jose';
import * as client from 'openid-client';
import { TEST_CLIENT_ID, TEST_CLIENT_SECRET, startTestServerOnPort, type TestServer } from '../../helpers/server.ts';

const PASSWORD = 'Correct-Horse-7-Battery';

interface Provider {
  server: TestServer;
  issuer: string;
}

/** A server whose public URL (`--url`, the issuer) is its own address, signing with an RSA key pair. */
async function provider(): Promise<Provider> {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const server = await startTestServerOnPort((port) => ({
    url: `http://127.0.0.1:${port}`,
    'jwt-type': 'RS256',
    'jwt-secret': '',
    'jwt-private-key': privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
    'jwt-public-key': publicKey.export({ type: 'spki', format: 'pem' }).toString(),
    'enable-email-verification': false,
  }));
  return { server, issuer: server.httpUrl };
}

/** Signs up a user over REST; answers its id, email and browser session cookie. */
async function signUp(p: Provider): Promise<{ userId: string; email: string; cookie: string }> {
  const email = `rp${Math.random().toString(36).slice(2, 10)}@example.com`;
  const r = await p.server.call('signup', { email, password: PASSWORD, given_name: 'Ada' }, { protocol: 'rest' });
  if (!r.body) throw new Error(`signup failed: ${JSON.stringify(r.error)}`);
  const set = r.setCookies.find((c) => c.startsWith('cookie_session='));
  if (!set) throw new Error('no session cookie');
  return { userId: String((r.body.user as { id: string }).id), email, cookie: set.slice('cookie_session='.length, set.indexOf(';')) };
}

const discover = (p: Provider): Promise<client.Configuration> =>
  client.discovery(new URL(p.issuer), TEST_CLIENT_ID, TEST_CLIENT_SECRET, undefined, { execute: [client.allowInsecureRequests] });

/** Runs the browser's part of the code flow: /authorize with the session cookie; answers the callback URL. */
async function authorizeAsBrowser(config: client.Configuration, cookie: string, params: Record<string, string>): Promise<URL> {
  const res = await fetch(client.buildAuthorizationUrl(config, params), { headers: { cookie: `cookie_session=${cookie}` }, redirect: 'manual' });
  if (res.status !== 302) throw new Error(`authorize answered ${res.status}: ${await res.text()}`);
  return new URL(res.headers.get('location') ?? '');
}

test('openid-client: discovery, code + PKCE, token, userinfo, refresh, introspection and RP-initiated logout', async (t) => {
  const p = await provider();
  t.teardown(() => p.server.close());
  const user = await signUp(p);
  const config = await discover(p);
  t.is(config.serverMetadata().issuer, p.issuer);

  const verifier = client.randomPKCECodeVerifier();
  const state = client.randomState();
  const nonce = client.randomNonce();
  const redirectUri = `${p.issuer}/callback`;
  const callback = await authorizeAsBrowser(config, user.cookie, {
    redirect_uri: redirectUri,
    scope: 'openid email profile offline_access',
    code_challenge: await client.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
    state,
    nonce,
  });
  const tokens = await client.authorizationCodeGrant(config, callback, { pkceCodeVerifier: verifier, expectedState: state, expectedNonce: nonce });
  const idClaims = tokens.claims();
  t.is(idClaims?.sub, user.userId);
  t.is(idClaims?.email, user.email);
  t.truthy(tokens.refresh_token);

  const info = await client.fetchUserInfo(config, tokens.access_token, user.userId);
  t.is(info.sub, user.userId);
  t.is(info.email, user.email);
  t.is(info.email_verified, true);
  t.is(info.given_name, 'Ada');
  t.false('phone_number' in info, 'no phone scope, no phone claims');

  const refreshed = await client.refreshTokenGrant(config, tokens.refresh_token!);
  t.not(refreshed.access_token, tokens.access_token);

  const active = await client.tokenIntrospection(config, refreshed.access_token);
  t.true(active.active);
  t.is(active.sub, user.userId);
  t.is(active.client_id, TEST_CLIENT_ID);
  t.is(active.token_type, 'Bearer');
  t.deepEqual(String(active.scope).split(' ').sort(), ['email', 'offline_access', 'openid', 'profile']);
  t.is(active.username, user.email);
  t.true((await client.tokenIntrospection(config, refreshed.refresh_token!, { token_type_hint: 'refresh_token' })).active);
  // The refresh token that was rotated away is no longer active.
  t.deepEqual(await client.tokenIntrospection(config, tokens.refresh_token!), { active: false });
  t.deepEqual(await client.tokenIntrospection(config, 'not-a-token'), { active: false });

  const endUrl = client.buildEndSessionUrl(config, {
    id_token_hint: refreshed.id_token ?? tokens.id_token!,
    post_logout_redirect_uri: `${p.issuer}/signed-out`,
    state: 'bye',
  });
  const out = await fetch(endUrl, { headers: { cookie: `cookie_session=${user.cookie}` }, redirect: 'manual' });
  t.is(out.status, 302);
  t.is(out.headers.get('location'), `${p.issuer}/signed-out?state=bye`);
  t.true(out.headers.getSetCookie().some((c) => /^cookie_session=;/.test(c) && /Max-Age=0/.test(c)), 'the browser session cookie is cleared');

  // The grant's tokens and the browser session are over.
  t.deepEqual(await client.tokenIntrospection(config, refreshed.access_token), { active: false });
  t.deepEqual(await client.tokenIntrospection(config, refreshed.refresh_token!), { active: false });
  const denied = await client.fetchUserInfo(config, refreshed.access_token, user.userId).then(
    () => undefined,
    (err: unknown) => err,
  );
  t.truthy(denied, 'userinfo refuses a logged-out token');
  const profile = await p.server.call('profile', {}, { protocol: 'rest', cookies: { cookie_session: user.cookie } });
  t.is(profile.error?.code, 'unauthenticated');
});

test('userinfo releases only the claims of the granted scope, and refuses without a valid bearer token', async (t) => {
  const p = await provider();
  t.teardown(() => p.server.close());
  const user = await signUp(p);
  const config = await discover(p);
  const verifier = client.randomPKCECodeVerifier();
  const callback = await authorizeAsBrowser(config, user.cookie, {
    redirect_uri: `${p.issuer}/callback`,
    scope: 'openid',
    code_challenge: await client.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
    state: 's',
  });
  const tokens = await client.authorizationCodeGrant(config, callback, { pkceCodeVerifier: verifier, expectedState: 's' });
  t.deepEqual(await client.fetchUserInfo(config, tokens.access_token, user.userId), { sub: user.userId });

  // POST with the token in the form (RFC 6750 §2.2) answers the same, from a server-side caller without Origin.
  const posted = await fetch(`${p.issuer}/userinfo`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ access_token: tokens.access_token }).toString(),
  });
  t.deepEqual(await posted.json(), { sub: user.userId });

  const none = await fetch(`${p.issuer}/userinfo`);
  t.is(none.status, 401);
  t.regex(none.headers.get('www-authenticate') ?? '', /^Bearer error="invalid_token"/);
  const forged = await fetch(`${p.issuer}/userinfo`, { headers: { authorization: `Bearer ${tokens.access_token.slice(0, -4)}AAAA` } });
  t.is(forged.status, 401);
  t.is(((await forged.json()) as { error: string }).error, 'invalid_token');
});

test('introspection needs the client secret; logout without a hint asks first and ends the session only when confirmed', async (t) => {
  const p = await provider();
  t.teardown(() => p.server.close());
  const user = await signUp(p);

  const publicOnly = await fetch(`${p.issuer}/oauth/introspect`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ token: 'x', client_id: TEST_CLIENT_ID }).toString(),
  });
  t.is(publicOnly.status, 401);
  t.is(((await publicOnly.json()) as { error: string }).error, 'invalid_client');

  const ask = await fetch(`${p.issuer}/logout`, { headers: { cookie: `cookie_session=${user.cookie}` }, redirect: 'manual' });
  t.is(ask.status, 200);
  const page = await ask.text();
  t.regex(page, /<form method="post" action="\/logout">/);
  t.regex(ask.headers.get('content-security-policy') ?? '', /frame-ancestors 'none'/);
  t.deepEqual(ask.headers.getSetCookie(), [], 'nothing ends before the user confirms');
  t.truthy((await p.server.call('profile', {}, { protocol: 'rest', cookies: { cookie_session: user.cookie } })).body);

  // A redirect target without a hint or client_id is refused; one outside the allowed origins too.
  const unbound = await fetch(`${p.issuer}/logout?post_logout_redirect_uri=${encodeURIComponent(`${p.issuer}/x`)}`, { redirect: 'manual' });
  t.is(unbound.status, 400);
  const foreign = await fetch(`${p.issuer}/logout?client_id=${TEST_CLIENT_ID}&post_logout_redirect_uri=${encodeURIComponent('https://evil.example/x')}`, { redirect: 'manual' });
  t.is(foreign.status, 400);

  const confirmed = await fetch(`${p.issuer}/logout`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', origin: p.issuer, cookie: `cookie_session=${user.cookie}` },
    body: new URLSearchParams({ confirm: 'yes' }).toString(),
    redirect: 'manual',
  });
  t.is(confirmed.status, 200);
  t.regex(await confirmed.text(), /You are signed out/);
  t.is((await p.server.call('profile', {}, { protocol: 'rest', cookies: { cookie_session: user.cookie } })).error?.code, 'unauthenticated');
});

test('discovery lists only endpoints the server serves', async (t) => {
  const p = await provider();
  t.teardown(() => p.server.close());
  const meta = (await (await fetch(`${p.issuer}/.well-known/openid-configuration`)).json()) as Record<string, unknown>;
  const endpoints = Object.entries(meta).filter(([k, v]) => (k.endsWith('_endpoint') || k === 'jwks_uri') && typeof v === 'string');
  t.true(endpoints.length >= 7);
  for (const [name, url] of endpoints) {
    // The token, revocation, introspection, pushed-request and device endpoints take POST (RFC 6749 §3.2, RFC 7009 §2.1, RFC 7662 §2.1, RFC 9126 §2, RFC 8628 §3.1).
    const post = ['token_endpoint', 'revocation_endpoint', 'introspection_endpoint', 'pushed_authorization_request_endpoint', 'device_authorization_endpoint'].includes(name);
    const res = await fetch(String(url), post ? { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: '' } : { redirect: 'manual' });
    t.not(res.status, 404, `${name} ${String(url)}`);
  }
  t.is(meta.introspection_endpoint, `${p.issuer}/oauth/introspect`);
});

test('hybrid flows (code id_token, code token, code id_token token): front-channel tokens in the fragment, the id token bound to the code by c_hash, the code redeemable once', async (t) => {
  const p = await provider();
  t.teardown(() => p.server.close());
  const user = await signUp(p);
  const config = await discover(p);
  t.deepEqual(
    (config.serverMetadata().response_types_supported ?? []).filter((r) => r.startsWith('code ')),
    ['code id_token', 'code token', 'code id_token token'],
  );
  const keys = createRemoteJWKSet(new URL(`${p.issuer}/.well-known/jwks.json`));
  const half = (value: string): string => createHash('sha256').update(value, 'ascii').digest().subarray(0, 16).toString('base64url');
  for (const responseType of ['code id_token', 'code token', 'code id_token token']) {
    const verifier = client.randomPKCECodeVerifier();
    const nonce = client.randomNonce();
    const callback = await authorizeAsBrowser(config, user.cookie, {
      response_type: responseType,
      redirect_uri: `${p.issuer}/callback`,
      scope: 'openid email offline_access',
      code_challenge: await client.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      state: 'h',
      nonce,
    });
    t.is(callback.search, '', `${responseType}: nothing in the query`);
    const fragment = new URLSearchParams(callback.hash.slice(1));
    const code = fragment.get('code');
    t.truthy(code, responseType);
    t.is(fragment.get('state'), 'h');
    t.is(fragment.get('iss'), p.issuer);
    t.is(fragment.has('refresh_token'), false, 'no refresh token in the front channel');
    const accessToken = fragment.get('access_token');
    const parts = responseType.split(' ');
    t.is(accessToken !== null, parts.includes('token'), `${responseType}: access token`);
    const idToken = fragment.get('id_token');
    t.is(idToken !== null, parts.includes('id_token'), `${responseType}: id token`);
    if (idToken !== null) {
      const { payload } = await jwtVerify(idToken, keys, { issuer: p.issuer, audience: TEST_CLIENT_ID });
      t.is(payload.nonce, nonce);
      t.is(payload.sub, user.userId);
      t.is(payload.c_hash, half(code!), 'c_hash is the left half of the code\'s SHA-256');
      if (accessToken !== null) t.is(payload.at_hash, half(accessToken));
    }
    if (accessToken !== null) t.is((await client.fetchUserInfo(config, accessToken, user.userId)).sub, user.userId);
    // The code goes through the back channel as in the code flow, once.
    const form = { grant_type: 'authorization_code', code: code!, redirect_uri: `${p.issuer}/callback`, client_id: TEST_CLIENT_ID, code_verifier: verifier };
    const post = (): Promise<Response> =>
      fetch(`${p.issuer}/oauth/token`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams(form).toString() });
    const redeemed = (await (await post()).json()) as { access_token?: string; refresh_token?: string; id_token?: string };
    t.truthy(redeemed.access_token && redeemed.refresh_token && redeemed.id_token, responseType);
    t.is((await post()).status, 400, `${responseType}: the code is spent`);
  }

  // A hybrid request without a nonce, or asking for the query response mode, is refused back to the client.
  const noNonce = await fetch(
    client.buildAuthorizationUrl(config, { response_type: 'code token', redirect_uri: `${p.issuer}/callback`, scope: 'openid', state: 's' }),
    { headers: { cookie: `cookie_session=${user.cookie}` }, redirect: 'manual' },
  );
  t.is(new URLSearchParams(new URL(noNonce.headers.get('location') ?? '').hash.slice(1)).get('error'), 'invalid_request');
  const inQuery = await fetch(
    client.buildAuthorizationUrl(config, { response_type: 'code id_token', response_mode: 'query', redirect_uri: `${p.issuer}/callback`, scope: 'openid', nonce: 'n', state: 's' }),
    { headers: { cookie: `cookie_session=${user.cookie}` }, redirect: 'manual' },
  );
  const refused = new URL(inQuery.headers.get('location') ?? '');
  t.is(new URLSearchParams(refused.hash.slice(1)).get('error'), 'invalid_request');
  t.is(refused.searchParams.get('code'), null);
});

test('client_credentials: the client with its secret gets an access token about itself, active at introspection, opening no user operation', async (t) => {
  const p = await provider();
  t.teardown(() => p.server.close());
  const config = await discover(p);
  t.true((config.serverMetadata().grant_types_supported ?? []).includes('client_credentials'));
  const machine = await client.clientCredentialsGrant(config);
  t.is(machine.token_type.toLowerCase(), 'bearer');
  t.is(machine.refresh_token, undefined);
  t.is(machine.id_token, undefined);
  const keys = createRemoteJWKSet(new URL(`${p.issuer}/.well-known/jwks.json`));
  const { payload } = await jwtVerify(machine.access_token, keys, { issuer: p.issuer });
  t.is(payload.sub, TEST_CLIENT_ID);
  t.is(payload.gty, 'client_credentials');
  const active = await client.tokenIntrospection(config, machine.access_token);
  t.true(active.active);
  t.is(active.client_id, TEST_CLIENT_ID);
  t.is(active.sub, TEST_CLIENT_ID);

  // No session behind it: the user operations and userinfo refuse it.
  const profile = await p.server.call('profile', {}, { protocol: 'rest', headers: { authorization: `Bearer ${machine.access_token}` } });
  t.is(profile.error?.code, 'unauthenticated');
  t.is((await fetch(`${p.issuer}/userinfo`, { headers: { authorization: `Bearer ${machine.access_token}` } })).status, 401);

  const token = (fields: Record<string, string>): Promise<Response> =>
    fetch(`${p.issuer}/oauth/token`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams(fields).toString() });
  const publicClient = await token({ grant_type: 'client_credentials', client_id: TEST_CLIENT_ID });
  t.is(publicClient.status, 401);
  t.is(((await publicClient.json()) as { error: string }).error, 'invalid_client');
  const scoped = await token({ grant_type: 'client_credentials', client_id: TEST_CLIENT_ID, client_secret: TEST_CLIENT_SECRET, scope: 'openid' });
  t.is(((await scoped.json()) as { error: string }).error, 'invalid_scope');
  const wrong = await token({ grant_type: 'client_credentials', client_id: TEST_CLIENT_ID, client_secret: 'not-the-secret' });
  t.is(wrong.status, 401);
});
