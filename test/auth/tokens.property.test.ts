import test from 'ava';
import fc from 'fast-check';
import { InProcessMemoryStore, SessionManager, TokenService } from '../../auth/index.ts';
import { CLIENT_ID, ISSUER, errorOf, manualClock } from './fixtures.ts';

const numRuns = process.env['CI'] ? 500 : 100;

test('a tampered token is rejected (any changed character of header, payload or signature), with the original verified and cached', async (t) => {
  const svc = await TokenService.create({ algorithm: 'HS256', issuer: ISSUER, audience: CLIENT_ID, secret: 'property-secret-0123456789abcdefghij' });
  const { token } = await svc.sign('access_token', 'user-1', { roles: ['user'], sid: 's1' });
  // The verification cache holds the original: a tampered token sharing its signature (its cache key) is still refused.
  t.is((await svc.verify(token, 'access_token')).sub, 'user-1');
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.';
  // Every position matters, the final signature character too: its unused low bits must be zero (canonical base64url).
  await t.notThrowsAsync(
    fc.assert(
      fc.asyncProperty(fc.integer({ min: 0, max: token.length - 1 }), fc.constantFrom(...alphabet), async (pos, ch) => {
        fc.pre(token[pos] !== ch);
        const tampered = token.slice(0, pos) + ch + token.slice(pos + 1);
        const err = await errorOf(svc.verify(tampered, 'access_token'));
        return err.code === 'unauthenticated' && err.reason === 'invalid_token' && (await svc.verify(token, 'access_token')).sub === 'user-1';
      }),
      { numRuns },
    ),
  );
});

test('an expired token is rejected at any time past expiry plus tolerance', async (t) => {
  const clock = manualClock();
  const svc = await TokenService.create({ algorithm: 'HS256', issuer: ISSUER, audience: CLIENT_ID, secret: 'property-secret-0123456789abcdefghij', now: clock.now, accessTokenTtl: 60 });
  const { token } = await svc.sign('access_token', 'user-1', {});
  const start = clock.now();
  await t.notThrowsAsync(
    fc.assert(
      fc.asyncProperty(fc.integer({ min: 91, max: 10_000_000 }), async (secondsLater) => {
        clock.advance(start + secondsLater * 1000 - clock.now());
        const err = await errorOf(svc.verify(token, 'access_token'));
        return err.reason === 'invalid_token';
      }),
      { numRuns },
    ),
  );
});

test('a tampered or expired session cookie is rejected', async (t) => {
  const clock = manualClock();
  const sessions = new SessionManager({ store: new InProcessMemoryStore({ now: clock.now }), cookieTtl: 3600, now: clock.now });
  const { cookieToken } = await sessions.create({ user_id: 'u', roles: [], scope: [], login_method: 'basic_auth', auth_time: 0 });
  t.truthy(await sessions.fromCookie(cookieToken));
  await fc.assert(
    fc.asyncProperty(fc.integer({ min: 0, max: cookieToken.length - 1 }), fc.constantFrom(...'ABCxyz0189-_'), async (pos, ch) => {
      fc.pre(cookieToken[pos] !== ch);
      return (await sessions.fromCookie(cookieToken.slice(0, pos) + ch + cookieToken.slice(pos + 1))) === undefined;
    }),
    { numRuns },
  );
  clock.advance(3601_000);
  t.is(await sessions.fromCookie(cookieToken), undefined);
});
