/**
 * The OAuth endpoints under particular deployments: rate limiting, the
 * redirect rule without `--url`, RS256 tokens checked against the published
 * JWKS, and two server processes sharing Redis and one database.
 */
import test from 'ava';
import { generateKeyPairSync } from 'node:crypto';
import { createLocalJWKSet, jwtVerify } from 'jose';
import { redisUrl } from '../../helpers/databases.ts';
import { TEST_CLIENT_ID, startTestServer } from '../../helpers/server.ts';
import { ISSUER, TestClock, authorize, codeFor, exchange, expectOAuthError, pkce, postForm, signIn, start, startSecond, tokenValid, type Setup } from '../../helpers/oauth.ts';

const redis = redisUrl();

test('the OAuth endpoints are rate limited per client IP like every other path', async (t) => {
  const s = await start('sqlite', { 'rate-limit-rps': 1, 'rate-limit-burst': 1 });
  try {
    const answers = await Promise.all(Array.from({ length: 6 }, () => postForm(s, '/oauth/revoke', { token: 'x', client_id: TEST_CLIENT_ID }).then((r) => r.status)));
    t.true(answers.includes(429), String(answers));
    t.true(answers.includes(200), String(answers));
  } finally {
    await s.server.close();
  }
});

test('without --url, under --allowed-origins=*, /authorize redirects only to the server\'s own origin', async (t) => {
  const server = await startTestServer({ 'enable-email-verification': false });
  const s: Setup = { server, clock: new TestClock() };
  try {
    const { cookie } = await signIn(s);
    // The server's own origin is its issuer (here http://127.0.0.1:<the --http-port flag>).
    const { issuer } = (await (await fetch(`${server.httpUrl}/.well-known/openid-configuration`)).json()) as { issuer: string };
    const own = `${issuer}/callback`;
    for (const redirect_uri of ['https://evil.example/cb', 'http://localhost:1/cb']) {
      const r = await authorize(s, { response_type: 'token', client_id: TEST_CLIENT_ID, redirect_uri }, cookie);
      t.is(r.status, 400, redirect_uri);
      t.is(r.headers.get('location'), null);
    }
    const ok = await authorize(s, { response_type: 'code', client_id: TEST_CLIENT_ID, redirect_uri: own, code_challenge: pkce().challenge, code_challenge_method: 'S256' }, cookie);
    t.is(ok.status, 302);
    t.true((ok.headers.get('location') ?? '').startsWith(`${own}?code=`));
  } finally {
    await server.close();
  }
});

test('RS256: an access token from the code flow verifies with the published JWKS', async (t) => {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const s = await start('sqlite', {
    'jwt-type': 'RS256',
    'jwt-private-key': privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
    'jwt-public-key': publicKey.export({ type: 'spki', format: 'pem' }).toString(),
  });
  try {
    const { userId, cookie } = await signIn(s);
    const { code, verifier } = await codeFor(s, cookie);
    const tokens = await exchange(s, code, verifier);
    t.is(tokens.status, 200);
    const discovery = (await (await fetch(`${s.server.httpUrl}/.well-known/openid-configuration`)).json()) as Record<string, unknown>;
    t.deepEqual(discovery.code_challenge_methods_supported, ['S256'], 'discovery lists only what /authorize accepts');
    const jwks = (await (await fetch(`${s.server.httpUrl}/.well-known/jwks.json`)).json()) as Parameters<typeof createLocalJWKSet>[0];
    const { payload } = await jwtVerify(String(tokens.body.access_token), createLocalJWKSet(jwks), { issuer: ISSUER, audience: TEST_CLIENT_ID });
    t.is(payload.sub, userId);
    t.is(payload['token_type'], 'access_token');
  } finally {
    await s.server.close();
  }
});

if (redis) {
  test('two server processes sharing Redis: a code issued by one is redeemed once on the other, and a replay there revokes it', async (t) => {
    const a = await start('sqlite', { 'redis-url': redis });
    const second = await startSecond(a, redis);
    try {
      const b = second.b;
      const { cookie } = await signIn(a);
      const { code, verifier } = await codeFor(a, cookie);
      const tokens = await exchange(b, code, verifier);
      t.is(tokens.status, 200, JSON.stringify(tokens.body));
      t.true(await tokenValid(a, String(tokens.body.access_token)));
      expectOAuthError(t, await exchange(a, code, verifier), 400, 'invalid_grant');
      // The other process sees the revocation too.
      const check = await fetch(`${b.server.httpUrl}/v1/validate_jwt_token`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', origin: b.server.httpUrl },
        body: JSON.stringify({ token_type: 'access_token', token: String(tokens.body.access_token) }),
      });
      t.is(check.status, 401);
    } finally {
      await second.close();
      await a.server.close();
    }
  });
}
