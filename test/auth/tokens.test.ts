import test from 'ava';
import { generateKeyPairSync } from 'node:crypto';
import { SignJWT, base64url, importJWK, jwtVerify, createLocalJWKSet } from 'jose';
import { JWT_ALGORITHMS, TokenService, type JwtAlgorithm } from '../../auth/index.ts';
import { CLIENT_ID, ISSUER, errorOf, manualClock, pemPair } from './fixtures.ts';

const SECRET = 'b1-secret-of-sufficient-length-abcdefghijklmnop';

for (const alg of JWT_ALGORITHMS) {
  test(`${alg}: tokens sign and verify; JWKS publishes the public key only for asymmetric algorithms`, async (t) => {
    const keys = alg.startsWith('HS') ? { secret: SECRET } : pemPair(alg);
    const svc = await TokenService.create({ algorithm: alg as JwtAlgorithm, issuer: ISSUER, audience: CLIENT_ID, ...keys });
    const { token } = await svc.sign('access_token', 'u1', { roles: ['user'] });
    const claims = await svc.verify(token, 'access_token');
    t.is(claims.sub, 'u1');
    t.is(claims.iss, ISSUER);
    t.is(claims.aud, CLIENT_ID);
    const jwks = svc.jwks();
    if (alg.startsWith('HS')) {
      t.deepEqual(jwks, { keys: [] });
      // Another service holding the secret verifies our token with jose.
      const { payload, protectedHeader } = await jwtVerify(token, new TextEncoder().encode(SECRET), { algorithms: [alg], issuer: ISSUER, audience: CLIENT_ID });
      t.is(payload.sub, 'u1');
      t.deepEqual(protectedHeader, { alg, kid: svc.kid, typ: 'JWT' });
    } else {
      t.is(jwks.keys.length, 1);
      t.is(jwks.keys[0]!.alg, alg);
      t.is(jwks.keys[0]!.kid, svc.kid);
      t.false('d' in jwks.keys[0]!);
      // Another service can verify our token from the JWKS document alone.
      const { payload } = await jwtVerify(token, createLocalJWKSet(jwks), { issuer: ISSUER, audience: CLIENT_ID });
      t.is(payload.sub, 'u1');
    }
    const discovery = svc.openidConfiguration('http://127.0.0.1:8080/');
    t.is(discovery['jwks_uri'], 'http://127.0.0.1:8080/.well-known/jwks.json');
    t.deepEqual(discovery['id_token_signing_alg_values_supported'], [alg]);
  });
}

test('mismatched or missing keys are refused at creation with invalid_jwt_options', async (t) => {
  t.is((await errorOf(TokenService.create({ algorithm: 'HS256', issuer: ISSUER, audience: CLIENT_ID }))).reason, 'invalid_jwt_options');
  t.is((await errorOf(TokenService.create({ algorithm: 'RS256', issuer: ISSUER, audience: CLIENT_ID, secret: 'x' }))).reason, 'invalid_jwt_options');
  const a = pemPair('RS256');
  const b = pemPair('RS256');
  t.is((await errorOf(TokenService.create({ algorithm: 'RS256', issuer: ISSUER, audience: CLIENT_ID, privateKey: a.privateKey, publicKey: b.publicKey }))).reason, 'invalid_jwt_options');
  t.is((await errorOf(TokenService.create({ algorithm: 'ES256', issuer: ISSUER, audience: CLIENT_ID, ...a }))).reason, 'invalid_jwt_options');
  // A key of the right type but too weak, or on another curve than the algorithm's.
  const short = generateKeyPairSync('rsa', { modulusLength: 1024, publicKeyEncoding: { type: 'spki', format: 'pem' }, privateKeyEncoding: { type: 'pkcs8', format: 'pem' } });
  t.is((await errorOf(TokenService.create({ algorithm: 'RS256', issuer: ISSUER, audience: CLIENT_ID, ...short }))).reason, 'invalid_jwt_options');
  t.is((await errorOf(TokenService.create({ algorithm: 'ES256', issuer: ISSUER, audience: CLIENT_ID, ...pemPair('ES384') }))).reason, 'invalid_jwt_options');
});

test('B1: JWT pitfalls are all refused with invalid_token and nothing is fetched', async (t) => {
  const clock = manualClock(Date.UTC(2026, 5, 1));
  const hs = await TokenService.create({ algorithm: 'HS256', issuer: ISSUER, audience: CLIENT_ID, secret: SECRET, now: clock.now });
  const rsKeys = pemPair('RS256');
  const rs = await TokenService.create({ algorithm: 'RS256', issuer: ISSUER, audience: CLIENT_ID, ...rsKeys, now: clock.now });
  const now = Math.floor(clock.now() / 1000);
  const secretKey = new TextEncoder().encode(SECRET);
  const base = { sub: 'u1', iss: ISSUER, aud: CLIENT_ID, iat: now, exp: now + 600, jti: 'j1', token_type: 'access_token' };
  const forge = (claims: Record<string, unknown>, header: Record<string, unknown> = {}, key: Uint8Array = secretKey) =>
    new SignJWT(claims).setProtectedHeader({ alg: 'HS256', kid: hs.kid, ...header } as { alg: string }).sign(key);

  let fetches = 0;
  const realFetch = globalThis.fetch;
  globalThis.fetch = (async () => {
    fetches++;
    throw new Error('no network');
  }) as typeof fetch;
  try {
    // The baseline forged with the real secret verifies, so each failure below is due to its one defect.
    t.is((await hs.verify(await forge(base), 'access_token')).sub, 'u1');
    const enc = (o: unknown) => base64url.encode(JSON.stringify(o));
    const cases: Record<string, string> = {
      'alg none': `${enc({ alg: 'none', typ: 'JWT' })}.${enc(base)}.`,
      'alg none with kid': `${enc({ alg: 'none', kid: hs.kid })}.${enc(base)}.`,
      'HS256 signed with the RS public key': await new SignJWT(base).setProtectedHeader({ alg: 'HS256', kid: rs.kid }).sign(new TextEncoder().encode(rsKeys.publicKey)),
      'unknown kid': await forge(base, { kid: 'some-other-key' }),
      'path traversal kid': await forge(base, { kid: '../../etc/passwd' }),
      'jku header': await forge(base, { jku: 'http://127.0.0.1:1/jwks.json' }),
      'jwk header': await forge(base, { jwk: { kty: 'oct', k: base64url.encode(secretKey) } }),
      'x5u header': await forge(base, { x5u: 'http://127.0.0.1:1/cert.pem' }),
      'missing exp': await forge({ ...base, exp: undefined }),
      'expired beyond tolerance': await forge({ ...base, exp: now - 31 }),
      'future nbf': await forge({ ...base, nbf: now + 120 }),
      'future iat': await forge({ ...base, iat: now + 3600 }),
      'wrong aud': await forge({ ...base, aud: 'another-client' }),
      'wrong iss': await forge({ ...base, iss: 'https://evil.example' }),
      'id token as access token': await forge({ ...base, token_type: 'id_token' }),
      'refresh token as access token': await forge({ ...base, token_type: 'refresh_token' }),
      'missing token_type': await forge({ ...base, token_type: undefined }),
      'wrong secret': await forge(base, {}, new TextEncoder().encode('not-the-secret-not-the-secret-not-the-secret')),
      'HS384 header': await new SignJWT(base).setProtectedHeader({ alg: 'HS384', kid: hs.kid }).sign(secretKey),
      'empty string': '',
      'garbage': 'a.b.c',
    };
    for (const [name, token] of Object.entries(cases)) {
      const err = await errorOf(hs.verify(token, 'access_token'));
      t.is(err.code, 'unauthenticated', name);
      t.is(err.reason, 'invalid_token', name);
    }
    // RS256 service: an HS256 token made with its public key (the classic confusion) is refused.
    const confused = await new SignJWT(base).setProtectedHeader({ alg: 'HS256', kid: rs.kid }).sign(new TextEncoder().encode(rsKeys.publicKey));
    t.is((await errorOf(rs.verify(confused, 'access_token'))).reason, 'invalid_token');
    const jwk = rs.jwks().keys[0]!;
    const asHmac = await importJWK({ kty: 'oct', k: base64url.encode(JSON.stringify(jwk)) }, 'HS256');
    const confused2 = await new SignJWT(base).setProtectedHeader({ alg: 'HS256', kid: rs.kid }).sign(asHmac);
    t.is((await errorOf(rs.verify(confused2, 'access_token'))).reason, 'invalid_token');
    // Within the clock tolerance an expired-by-10s token still verifies; one second past it does not.
    t.truthy(await hs.verify(await forge({ ...base, exp: now - 10 }), 'access_token'));
    t.is((await errorOf(hs.verify(await forge({ ...base, exp: now - 31 }), 'access_token'))).reason, 'invalid_token');
    t.is(fetches, 0);
  } finally {
    globalThis.fetch = realFetch;
  }
});

test('a token verified once (internal verification cache) still expires and still has exactly one type', async (t) => {
  const clock = manualClock();
  const svc = await TokenService.create({ algorithm: 'HS256', issuer: ISSUER, audience: CLIENT_ID, secret: SECRET, now: clock.now, accessTokenTtl: 60 });
  const { token } = await svc.sign('access_token', 'u1', {});
  t.is((await svc.verify(token, 'access_token')).sub, 'u1');
  t.is((await svc.verify(token, 'access_token')).sub, 'u1');
  t.is((await errorOf(svc.verify(token, 'id_token'))).reason, 'invalid_token');
  t.is((await errorOf(svc.verify(token, 'refresh_token'))).reason, 'invalid_token');
  clock.advance(60_000 + 29_000);
  t.is((await svc.verify(token, 'access_token')).sub, 'u1');
  clock.advance(2_000);
  t.is((await errorOf(svc.verify(token, 'access_token'))).reason, 'invalid_token');
});
