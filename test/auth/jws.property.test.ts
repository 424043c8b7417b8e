/**
 * The server's own JWS (auth/jws.ts) against jose: whatever a token holds,
 * `TokenService.verify` accepts it exactly when jose's `jwtVerify` with the
 * same rules accepts it (the rules the service applied through jose before),
 * except where the service is stricter by design: a `crit` header, and a
 * segment not in canonical base64url (stray low bits in its last character,
 * padding, whitespace), which jose's decoder forgives. And jose verifies every
 * token the service signs, for every algorithm.
 */
import test from 'ava';
import fc from 'fast-check';
import { createHmac, createPrivateKey, sign as signWith } from 'node:crypto';
import { createLocalJWKSet, decodeProtectedHeader, jwtVerify, type JWTVerifyGetKey, type JWTVerifyOptions, type JWTVerifyResult } from 'jose';
import { JWT_ALGORITHMS, TOKEN_TYPES, TokenService, type JwtAlgorithm, type TokenType } from '../../auth/index.ts';
import { CLIENT_ID, ISSUER, manualClock, pemPair } from './fixtures.ts';

const numRuns = process.env['CI'] ? 400 : 100;
const SECRET = 'jws-property-secret-0123456789abcdefghij';
const TOLERANCE = 30;

const b64 = (value: unknown): string => Buffer.from(JSON.stringify(value), 'utf8').toString('base64url');

/** A compact JWS of any header and payload, signed with `alg` (the test's own encoder, not the service's). */
function encode(alg: string, header: Record<string, unknown>, payload: Record<string, unknown>, key: { secret?: string; privateKey?: string }): string {
  const input = `${b64(header)}.${b64(payload)}`;
  const data = Buffer.from(input);
  let signature: Buffer;
  if (alg.startsWith('HS')) signature = createHmac(`sha${alg.slice(2)}`, key.secret ?? '').update(data).digest();
  else signature = signWith(`sha${alg.slice(2)}`, data, { key: createPrivateKey(key.privateKey ?? ''), dsaEncoding: 'ieee-p1363' });
  return `${input}.${signature.toString('base64url')}`;
}

/** jose's `jwtVerify` with a key or a key set (its overloads take one or the other). */
const joseVerify = (token: string, key: Uint8Array | JWTVerifyGetKey, options: JWTVerifyOptions): Promise<JWTVerifyResult> =>
  typeof key === 'function' ? jwtVerify(token, key, options) : jwtVerify(token, key, options);

/** The rules of `TokenService.verify` as jose applied them: undefined when the token is refused. */
async function reference(svc: TokenService, key: Uint8Array | JWTVerifyGetKey, token: string, expected: TokenType, now: number): Promise<Record<string, unknown> | undefined> {
  try {
    if (token.length === 0 || token.length > 16384) return undefined;
    const header = decodeProtectedHeader(token);
    if (header.alg !== svc.algorithm || header.kid !== svc.kid) return undefined;
    for (const h of ['jku', 'jwk', 'x5u', 'x5c']) if (h in header) return undefined;
    const options = { algorithms: [svc.algorithm], issuer: ISSUER, audience: CLIENT_ID, requiredClaims: ['exp', 'iat', 'sub', 'jti'], clockTolerance: TOLERANCE, currentDate: new Date(now) };
    const { payload } = await joseVerify(token, key, options);
    if (typeof payload.sub !== 'string' || payload.sub.length === 0) return undefined;
    if (!(TOKEN_TYPES as readonly unknown[]).includes(payload['token_type']) || payload['token_type'] !== expected) return undefined;
    const seconds = Math.floor(now / 1000);
    if (typeof payload.iat !== 'number' || payload.iat > seconds + TOLERANCE) return undefined;
    return payload;
  } catch {
    return undefined;
  }
}

/** Every segment in the base64url alphabet, as its encoder writes it. */
const canonical = (token: string): boolean =>
  token.split('.').every((s) => /^[A-Za-z0-9_-]+$/.test(s) && Buffer.from(s, 'base64url').toString('base64url') === s);

async function ours(svc: TokenService, token: string, expected: TokenType): Promise<Record<string, unknown> | undefined> {
  try {
    return { ...(await svc.verify(token, expected)) };
  } catch (err) {
    if ((err as { reason?: string }).reason !== 'invalid_token') throw err;
    return undefined;
  }
}

const CHARS = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.= ';

const KEEP = Symbol('keep');
const DROP = Symbol('drop');
/** Mostly the value given, sometimes absent, sometimes one of `others`. */
const around = <T>(others: fc.Arbitrary<T>): fc.Arbitrary<T | typeof KEEP | typeof DROP> =>
  fc.oneof({ weight: 80, arbitrary: fc.constant(KEEP) }, { weight: 1, arbitrary: fc.constant(DROP) }, { weight: 2, arbitrary: others });

/** `base` with each field kept, dropped or replaced as `changes` say, and `extra` fields added. */
function apply(base: Record<string, unknown>, changes: Record<string, unknown>, extra: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...base };
  for (const [k, v] of Object.entries(changes)) {
    if (v === DROP) delete out[k];
    else if (v !== KEEP) out[k] = v;
  }
  return { ...out, ...extra };
}

/** Headers: ours, or with another alg or kid, a key-carrying field, `crit`, other fields. */
const headerArb = (alg: string, kid: string): fc.Arbitrary<Record<string, unknown>> =>
  fc
    .tuple(
      fc.record({ alg: around(fc.constantFrom('none', 'HS256', 'RS256', 'ES256', 'HS512')), kid: around(fc.constantFrom('another-kid', 7)), typ: around(fc.constantFrom('at+jwt', 'logout+jwt')) }),
      fc.oneof(
        { weight: 16, arbitrary: fc.constant({}) },
        { weight: 1, arbitrary: fc.constantFrom<Record<string, unknown>>({ jku: 'https://attacker.example/jwks' }, { jwk: { kty: 'oct', k: 'AAAA' } }, { x5u: 'https://attacker.example/x5u' }, { x5c: ['AAAA'] }) },
        { weight: 1, arbitrary: fc.constantFrom<Record<string, unknown>>({ crit: ['b64'], b64: true }, { crit: ['exp'] }, { b64: false }, { cty: 'JWT' }) },
      ),
    )
    .map(([changes, extra]) => apply({ alg, kid, typ: 'JWT' }, changes, extra));

/** Payloads around the service's own: each claim right, wrong, of another type, or missing. */
const payloadArb = (now: number): fc.Arbitrary<Record<string, unknown>> => {
  const seconds = Math.floor(now / 1000);
  const time = fc.oneof(fc.integer({ min: seconds - 4000, max: seconds + 4000 }), fc.constantFrom('soon', null, seconds + 0.5));
  return fc
    .record({
      iss: around(fc.constantFrom(`${ISSUER}/`, 'https://other.example', 1)),
      aud: around(fc.constantFrom([CLIENT_ID, 'https://api.example'], ['https://api.example'], [], 'another-client', 3)),
      sub: around(fc.constantFrom('', 42, 'user-2')),
      iat: around(time),
      exp: around(time),
      nbf: fc.oneof({ weight: 8, arbitrary: fc.constant(DROP) }, { weight: 1, arbitrary: time }),
      jti: around(fc.constant(5)),
      token_type: around(fc.constantFrom('id_token', 'refresh_token', 'session')),
      roles: around(fc.array(fc.string(), { maxLength: 2 })),
    })
    .map((changes) => apply({ iss: ISSUER, aud: CLIENT_ID, sub: 'user-1', iat: seconds - 10, exp: seconds + 600, jti: 'j1', token_type: 'access_token', roles: ['user'] }, changes, {}));
};

/** A token: signed from a header and payload, then possibly one character changed or the signature's last bits moved. */
const tokenArb = (alg: string, kid: string, now: number, key: { secret?: string; privateKey?: string }): fc.Arbitrary<string> =>
  fc
    .tuple(headerArb(alg, kid), payloadArb(now), fc.oneof(fc.constant('none'), fc.constant('char'), fc.constant('lastbits'), fc.constant('suffix')), fc.nat(), fc.constantFrom(...CHARS))
    .map(([header, payload, change, at, ch]) => {
      const token = encode(alg, header, payload, key);
      if (change === 'char') {
        const i = at % token.length;
        return token.slice(0, i) + ch + token.slice(i + 1);
      }
      if (change === 'lastbits') {
        const last = token[token.length - 1] ?? 'A';
        const i = CHARS.indexOf(last);
        return token.slice(0, -1) + CHARS[(i & ~3) + (at % 4)];
      }
      if (change === 'suffix') return token + ['=', '==', ' ', '.', '.e30'][at % 5];
      return token;
    });

const expectedArb = fc.oneof({ weight: 8, arbitrary: fc.constant<TokenType>('access_token') }, fc.constantFrom<TokenType>('id_token', 'refresh_token'));

for (const alg of ['HS256', 'ES256'] as const) {
  test(`${alg}: verify accepts exactly what jose accepts under the same rules, but for crit and non-canonical segments`, async (t) => {
    const clock = manualClock(Date.UTC(2026, 5, 1));
    const pair = alg === 'HS256' ? undefined : pemPair(alg);
    const svc = await TokenService.create({ algorithm: alg, issuer: ISSUER, audience: CLIENT_ID, now: clock.now, clockToleranceSeconds: TOLERANCE, ...(pair ?? { secret: SECRET }) });
    const key = pair === undefined ? new TextEncoder().encode(SECRET) : createLocalJWKSet(svc.jwks());
    const signer = pair === undefined ? { secret: SECRET } : { privateKey: pair.privateKey };
    let accepted = 0;
    let refused = 0;
    await t.notThrowsAsync(
      fc.assert(
        fc.asyncProperty(tokenArb(alg, svc.kid, clock.now(), signer), expectedArb, async (token, expected) => {
          const want = await reference(svc, key, token, expected, clock.now());
          const header = (() => {
            try {
              return decodeProtectedHeader(token);
            } catch {
              return {};
            }
          })();
          const stricter = 'crit' in header || !canonical(token);
          const got = await ours(svc, token, expected);
          if (got !== undefined) accepted++;
          else refused++;
          if (stricter) return got === undefined;
          return JSON.stringify(got) === JSON.stringify(want);
        }),
        { numRuns },
      ),
    );
    // The generators reach both answers.
    t.log(`accepted ${accepted}, refused ${refused}`);
    t.true(accepted >= 5 && refused >= 5, `accepted ${accepted}, refused ${refused}`);
  });
}

for (const alg of JWT_ALGORITHMS) {
  test(`${alg}: jose verifies every kind of token the service signs, with the claims the service set`, async (t) => {
    const pair = alg.startsWith('HS') ? undefined : pemPair(alg);
    const svc = await TokenService.create({ algorithm: alg as JwtAlgorithm, issuer: ISSUER, audience: CLIENT_ID, ...(pair ?? { secret: SECRET }) });
    const key = pair === undefined ? new TextEncoder().encode(SECRET) : createLocalJWKSet(svc.jwks());
    for (const type of TOKEN_TYPES) {
      // Claims named like the service's own are overridden by them.
      const { token, jti, expiresAt } = await svc.sign(type, 'user-9', { roles: ['admin'], iss: 'forged', sub: 'forged', token_type: 'forged' }, 120, ['https://api.example']);
      const { payload, protectedHeader } = await joseVerify(token, key, { algorithms: [alg], issuer: ISSUER, audience: CLIENT_ID });
      t.deepEqual(protectedHeader, { alg, kid: svc.kid, typ: 'JWT' });
      t.like(payload, { sub: 'user-9', iss: ISSUER, aud: [CLIENT_ID, 'https://api.example'], token_type: type, jti, exp: expiresAt, roles: ['admin'] });
      t.is((await svc.verify(token, type)).jti, jti);
    }
    const logout = await svc.signLogoutToken('rp-1', 'user-9', 'sid-1');
    const verified = await joseVerify(logout, key, { algorithms: [alg], issuer: ISSUER, audience: 'rp-1' });
    t.is(verified.protectedHeader.typ, 'logout+jwt');
    t.like(verified.payload, { sid: 'sid-1', sub: 'user-9', events: { 'http://schemas.openid.net/event/backchannel-logout': {} } });
  });
}
