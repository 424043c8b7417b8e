/**
 * DPoP (RFC 9449) on the authorization code and refresh grants, through
 * `openid-client`: the token endpoint requires a server nonce
 * (`use_dpop_nonce`, `DPoP-Nonce`, rotated); a code bound by `dpop_jkt` (or
 * by a proof on the pushed request) is redeemed by that key only; the tokens
 * name the key (`cnf.jkt`, token type DPoP) and are accepted with a proof by
 * the API and `/userinfo`, refused as bearer tokens; a public client's
 * refresh token is bound to the key, a confidential client may move its grant
 * to a new key, and neither may refresh without a proof.
 */
import test from 'ava';
import * as client from 'openid-client';
import { SignJWT, calculateJwkThumbprint, decodeJwt, exportJWK, generateKeyPair, type CryptoKey, type JWK } from 'jose';
import { TestClock } from '../../helpers/oauth.ts';
import { TEST_ADMIN_SECRET, TEST_CLIENT_ID, TEST_CLIENT_SECRET, startTestServerOnPort, type TestServer } from '../../helpers/server.ts';

const ADMIN = { 'x-service-admin-secret': TEST_ADMIN_SECRET };
const DSL = 'model\n  schema 1.1\ntype user\ntype doc\n  relations\n    define viewer: [user]\n';

async function ok(server: TestServer, op: string, input: Record<string, unknown>): Promise<Record<string, unknown>> {
  const r = await server.call(op, input, { protocol: 'rest', headers: ADMIN });
  if (r.error !== undefined || r.body === undefined) throw new Error(`${op}: ${JSON.stringify(r.error)}`);
  return r.body;
}

interface Key {
  pair: { publicKey: CryptoKey; privateKey: CryptoKey };
  jwk: JWK;
  jkt: string;
}

async function newKey(): Promise<Key> {
  const pair = await generateKeyPair('ES256', { extractable: true });
  const jwk = await exportJWK(pair.publicKey);
  return { pair, jwk, jkt: await calculateJwkThumbprint(jwk) };
}

async function setup(t: import('ava').ExecutionContext): Promise<{ server: TestServer; issuer: string; clock: TestClock; browse: (url: URL) => Promise<Response>; userId: string }> {
  const clock = new TestClock();
  const server = await startTestServerOnPort((port) => ({ url: `http://127.0.0.1:${port}`, 'enable-email-verification': false }), { clock });
  const issuer = server.httpUrl;
  const port = new URL(issuer).port;
  t.teardown(() => server.close());
  const signup = await server.call('signup', { email: `dpop-${port}@example.com`, password: 'Correct-Horse-7-Battery' }, { protocol: 'rest' });
  const set = signup.setCookies.find((c) => c.startsWith('cookie_session=')) ?? '';
  const cookie = set.slice('cookie_session='.length, set.indexOf(';'));
  const userId = (signup.body?.['user'] as { id: string }).id;
  const browse = (url: URL): Promise<Response> => fetch(url, { headers: { cookie: `cookie_session=${cookie}` }, redirect: 'manual' });
  return { server, issuer, clock, browse, userId };
}

/** An authorization request with PKCE (and `extra`), answered with a code; the callback URL and the verifier. */
async function authorizeCode(config: client.Configuration, browse: (url: URL) => Promise<Response>, redirectUri: string, extra: Record<string, string> = {}): Promise<{ callback: URL; verifier: string }> {
  const verifier = client.randomPKCECodeVerifier();
  const url = client.buildAuthorizationUrl(config, { redirect_uri: redirectUri, scope: 'openid offline_access', code_challenge: await client.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256', ...extra });
  const res = await browse(url);
  if (res.status !== 302) throw new Error(`authorize answered ${res.status}`);
  return { callback: new URL(res.headers.get('location') ?? ''), verifier };
}

const errorOf = (err: unknown): string | undefined => (err as { error?: string }).error;

test('a public client: the code bound by dpop_jkt, tokens bound to the key, accepted with a proof and refused as bearer tokens; the refresh token bound to the key', async (t) => {
  const { server, issuer, browse, userId } = await setup(t);
  await ok(server, 'add_client', { client_id: 'dpop-cli', application_type: 'native', redirect_uris: ['http://127.0.0.1/callback'], scopes: ['openid', 'offline_access'] });
  await ok(server, 'fga_write_model', { dsl: DSL });
  await ok(server, 'fga_write_tuples', { tuples: [{ user: `user:${userId}`, relation: 'viewer', object: 'doc:1' }] });
  const config = await client.discovery(new URL(issuer), 'dpop-cli', {}, client.None(), { execute: [client.allowInsecureRequests] });
  t.true((config.serverMetadata().dpop_signing_alg_values_supported ?? []).includes('ES256'));
  const key = await newKey();
  const handle = client.getDPoPHandle(config, key.pair);
  const redirect = 'http://127.0.0.1:50123/callback';

  // dpop_jkt: the code is redeemed only with a proof by that key (the server's nonce challenge is answered by openid-client).
  const stranger = client.getDPoPHandle(config, (await newKey()).pair);
  const bound = await authorizeCode(config, browse, redirect, { dpop_jkt: key.jkt });
  const wrongKey = await client.authorizationCodeGrant(config, bound.callback, { pkceCodeVerifier: bound.verifier }, undefined, { DPoP: stranger }).catch((e: unknown) => e);
  t.is(errorOf(wrongKey), 'invalid_dpop_proof', 'a code bound by dpop_jkt is not redeemed with another key');
  const again = await authorizeCode(config, browse, redirect, { dpop_jkt: key.jkt });
  const noProof = await client.authorizationCodeGrant(config, again.callback, { pkceCodeVerifier: again.verifier }).catch((e: unknown) => e);
  t.is(errorOf(noProof), 'invalid_dpop_proof', 'nor without a proof');
  const malformed = await browse(client.buildAuthorizationUrl(config, { redirect_uri: redirect, scope: 'openid', code_challenge: await client.calculatePKCECodeChallenge(again.verifier), code_challenge_method: 'S256', dpop_jkt: 'short' }));
  t.regex(malformed.headers.get('location') ?? '', /error=invalid_request/);

  const third = await authorizeCode(config, browse, redirect, { dpop_jkt: key.jkt });
  const tokens = await client.authorizationCodeGrant(config, third.callback, { pkceCodeVerifier: third.verifier }, undefined, { DPoP: handle });
  t.is(tokens.token_type, 'dpop');
  t.deepEqual(decodeJwt(tokens.access_token)['cnf'], { jkt: key.jkt });
  t.is(tokens.claims()?.sub, userId);
  t.truthy(tokens.refresh_token);

  // The API and /userinfo take the token with a proof, and refuse it as a bearer token.
  const url = new URL(`${issuer}/v1/check_permissions`);
  const body = JSON.stringify({ checks: [{ relation: 'viewer', object: 'doc:1' }] });
  const headers = (): Headers => new Headers({ 'content-type': 'application/json', origin: issuer });
  const res = await client.fetchProtectedResource(config, tokens.access_token, url, 'POST', body, headers(), { DPoP: handle });
  t.is(res.status, 200);
  t.deepEqual(((await res.json()) as { results: Array<{ allowed: boolean }> }).results.map((r) => r.allowed), [true]);
  const asBearer = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', origin: issuer, authorization: `Bearer ${tokens.access_token}` }, body });
  t.is(asBearer.status, 401, 'a bound token is not a bearer token on the API');
  const byStranger = await client.fetchProtectedResource(config, tokens.access_token, url, 'POST', body, headers(), { DPoP: stranger });
  t.is(byStranger.status, 401, 'a proof by another key');
  const info = await client.fetchUserInfo(config, tokens.access_token, userId, { DPoP: handle });
  t.is(info.sub, userId);
  const infoBearer = await fetch(`${issuer}/userinfo`, { headers: { authorization: `Bearer ${tokens.access_token}` } });
  t.is(infoBearer.status, 401, 'a bound token is not a bearer token at /userinfo');
  const infoNoProof = await fetch(`${issuer}/userinfo`, { headers: { authorization: `DPoP ${tokens.access_token}` } });
  t.is(infoNoProof.status, 401);
  t.is(((await infoNoProof.json()) as { error: string }).error, 'invalid_dpop_proof');
  const intro = await fetch(`${issuer}/oauth/introspect`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: `Basic ${Buffer.from(`${TEST_CLIENT_ID}:${TEST_CLIENT_SECRET}`).toString('base64')}` },
    body: new URLSearchParams({ token: tokens.access_token }),
  });
  const introBody = (await intro.json()) as Record<string, unknown>;
  t.is(introBody['active'], true);
  t.deepEqual(introBody['cnf'], { jkt: key.jkt }, 'introspection shows the binding');
  t.is(introBody['token_type'], 'DPoP');

  // The refresh token is bound to the key: another key or no proof is refused, and the token is not spent by the refusal.
  const byOther = await client.refreshTokenGrant(config, tokens.refresh_token!, undefined, { DPoP: stranger }).catch((e: unknown) => e);
  t.is(errorOf(byOther), 'invalid_dpop_proof');
  const without = await client.refreshTokenGrant(config, tokens.refresh_token!).catch((e: unknown) => e);
  t.is(errorOf(without), 'invalid_dpop_proof');
  const viaSession = await server.call('session', { refresh_token: tokens.refresh_token! }, { protocol: 'rest' });
  t.is(viaSession.error?.code, 'unauthenticated', 'nor redeemed through the session operation, which takes no proof');
  const refreshed = await client.refreshTokenGrant(config, tokens.refresh_token!, undefined, { DPoP: handle });
  t.is(refreshed.token_type, 'dpop');
  t.deepEqual(decodeJwt(refreshed.access_token)['cnf'], { jkt: key.jkt });
  // The rotated refresh token is the client's and still bound: a second refresh works with the key only.
  t.is(errorOf(await client.refreshTokenGrant(config, refreshed.refresh_token!).catch((e: unknown) => e)), 'invalid_dpop_proof');
  const second = await client.refreshTokenGrant(config, refreshed.refresh_token!, undefined, { DPoP: handle });
  t.deepEqual(decodeJwt(second.access_token)['cnf'], { jkt: key.jkt });
});

test('a confidential client: a proof on the pushed request binds the code; the grant moves to a new key on refresh, never back to bearer tokens', async (t) => {
  const { server, issuer, browse } = await setup(t);
  const added = await ok(server, 'add_client', { client_id: 'dpop-web', redirect_uris: ['https://web.example/cb'], scopes: ['openid', 'offline_access'] });
  const config = await client.discovery(new URL(issuer), 'dpop-web', {}, client.ClientSecretBasic(added['client_secret'] as string), { execute: [client.allowInsecureRequests] });
  const first = await newKey();
  const handle = client.getDPoPHandle(config, first.pair);
  const verifier = client.randomPKCECodeVerifier();
  const params = { redirect_uri: 'https://web.example/cb', scope: 'openid offline_access', code_challenge: await client.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256' };

  // RFC 9449 §10.1: the push carries a proof; the code is then bound to its key.
  const pushed = await client.buildAuthorizationUrlWithPAR(config, params, { DPoP: handle });
  const res = await browse(pushed);
  t.is(res.status, 302);
  const callback = new URL(res.headers.get('location') ?? '');
  const stranger = client.getDPoPHandle(config, (await newKey()).pair);
  t.is(errorOf(await client.authorizationCodeGrant(config, callback, { pkceCodeVerifier: verifier }, undefined, { DPoP: stranger }).catch((e: unknown) => e)), 'invalid_dpop_proof');

  // An unbound code, redeemed with a proof: the tokens are bound to that key.
  const plain = await authorizeCode(config, browse, 'https://web.example/cb');
  const tokens = await client.authorizationCodeGrant(config, plain.callback, { pkceCodeVerifier: plain.verifier }, undefined, { DPoP: handle });
  t.deepEqual(decodeJwt(tokens.access_token)['cnf'], { jkt: first.jkt });

  // A confidential client's refresh token is bound to its authentication: a new key moves the grant to it.
  const next = await newKey();
  const moved = await client.refreshTokenGrant(config, tokens.refresh_token!, undefined, { DPoP: client.getDPoPHandle(config, next.pair) });
  t.deepEqual(decodeJwt(moved.access_token)['cnf'], { jkt: next.jkt });
  t.is(moved.token_type, 'dpop');
  // A bound grant is never refreshed into bearer tokens.
  t.is(errorOf(await client.refreshTokenGrant(config, moved.refresh_token!).catch((e: unknown) => e)), 'invalid_dpop_proof');

  // Without DPoP at all the grant stays a bearer grant.
  const bearer = await authorizeCode(config, browse, 'https://web.example/cb');
  const plainTokens = await client.authorizationCodeGrant(config, bearer.callback, { pkceCodeVerifier: bearer.verifier });
  t.is(plainTokens.token_type, 'bearer');
  t.is(decodeJwt(plainTokens.access_token)['cnf'], undefined);
  const plainRefresh = await client.refreshTokenGrant(config, plainTokens.refresh_token!);
  t.is(plainRefresh.token_type, 'bearer');
});

test('server nonces at the token endpoint: use_dpop_nonce with a DPoP-Nonce header, the nonce accepted, then rotated', async (t) => {
  const { server, issuer, clock } = await setup(t);
  const added = await ok(server, 'add_client', { client_id: 'nonce-bot', kind: 'service_account' });
  const key = await newKey();
  const proof = (jti: string, nonce?: string): Promise<string> =>
    new SignJWT({ htm: 'POST', htu: `${issuer}/oauth/token`, jti, iat: Math.floor(clock.now().getTime() / 1000), ...(nonce === undefined ? {} : { nonce }) })
      .setProtectedHeader({ alg: 'ES256', typ: 'dpop+jwt', jwk: key.jwk })
      .sign(key.pair.privateKey);
  const grant = (dpop: string): Promise<Response> =>
    fetch(`${issuer}/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', dpop, authorization: `Basic ${Buffer.from(`nonce-bot:${added['client_secret'] as string}`).toString('base64')}` },
      body: 'grant_type=client_credentials',
    });

  const challenged = await grant(await proof('n-1'));
  t.is(challenged.status, 400);
  t.is(((await challenged.json()) as { error: string }).error, 'use_dpop_nonce');
  const nonce = challenged.headers.get('dpop-nonce') ?? '';
  t.regex(nonce, /^[A-Za-z0-9_-]{20,}$/);
  // The challenged proof's jti was not spent: the same jti with the nonce is accepted.
  const accepted = await grant(await proof('n-1', nonce));
  t.is(accepted.status, 200);
  t.is(((await accepted.json()) as { token_type: string }).token_type, 'DPoP');
  t.is(accepted.headers.get('dpop-nonce'), nonce, 'the current nonce is sent with every answer');
  const wrong = await grant(await proof('n-2', 'not-a-nonce-of-this-server'));
  t.is(((await wrong.json()) as { error: string }).error, 'use_dpop_nonce');

  // Rotation: the nonce is accepted for one more window, then refused, and a new one is given.
  clock.offsetMs += 5 * 60 * 1000;
  const stillGood = await grant(await proof('n-3', nonce));
  t.is(stillGood.status, 200);
  const rotated = stillGood.headers.get('dpop-nonce') ?? '';
  t.not(rotated, nonce);
  clock.offsetMs += 5 * 60 * 1000;
  const stale = await grant(await proof('n-4', nonce));
  t.is(((await stale.json()) as { error: string }).error, 'use_dpop_nonce');
  t.is((await grant(await proof('n-5', stale.headers.get('dpop-nonce') ?? ''))).status, 200);
});
