/**
 * The answers without a promise that the bearer and cookie paths take when
 * they can (`SessionManager.getNow` and `fromCookieNow`,
 * `TokenService.verifiedNow`) agree with their asynchronous forms (`get`,
 * `fromCookie`, `verify`) after any sequence of logins, cookie rotations,
 * endings, endings of all a user's sessions (with and without the sweep), and
 * clock steps; on a store behind a network they decline.
 */
import test from 'ava';
import fc from 'fast-check';
import { InProcessMemoryStore, SessionManager, TokenService, type MemoryStore } from '../../auth/index.ts';
import { CLIENT_ID, ISSUER, manualClock } from './fixtures.ts';

const numRuns = process.env['CI'] ? 200 : 50;

type Step =
  | { kind: 'login'; user: number }
  | { kind: 'end'; pick: number }
  | { kind: 'rotate'; pick: number }
  | { kind: 'end_all'; user: number }
  | { kind: 'not_before'; user: number }
  | { kind: 'wait'; ms: number };

const step: fc.Arbitrary<Step> = fc.oneof(
  fc.record({ kind: fc.constant('login' as const), user: fc.integer({ min: 0, max: 2 }) }),
  fc.record({ kind: fc.constant('end' as const), pick: fc.nat() }),
  fc.record({ kind: fc.constant('rotate' as const), pick: fc.nat() }),
  fc.record({ kind: fc.constant('end_all' as const), user: fc.integer({ min: 0, max: 2 }) }),
  // The ending of all sessions recorded, but not yet swept (a login racing a revocation).
  fc.record({ kind: fc.constant('not_before' as const), user: fc.integer({ min: 0, max: 2 }) }),
  fc.record({ kind: fc.constant('wait' as const), ms: fc.integer({ min: 0, max: 3_000_000 }) }),
);

test('SessionManager.getNow and fromCookieNow answer as get and fromCookie after any sequence of logins, rotations, endings and waits', async (t) => {
  await t.notThrowsAsync(
    fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 15 }), async (steps) => {
        const clock = manualClock();
        const store = new InProcessMemoryStore({ now: clock.now });
        const sessions = new SessionManager({ store, now: clock.now, sessionTtl: 3600 });
        const sids: string[] = [];
        // Every cookie ever issued (a rotated one must stop working at once on both paths).
        const cookies: string[] = [];
        for (const s of steps) {
          if (s.kind === 'login') {
            const { session, cookieToken } = await sessions.create({ user_id: `u${s.user}`, roles: ['user'], scope: [], login_method: 'basic_auth', auth_time: Math.floor(clock.now() / 1000) });
            sids.push(session.sid);
            cookies.push(cookieToken);
          } else if (s.kind === 'rotate' && sids.length > 0) {
            const current = await sessions.get(sids[s.pick % sids.length]!);
            if (current !== undefined) cookies.push((await sessions.rotateCookie(current)).cookieToken);
          } else if (s.kind === 'end' && sids.length > 0) await sessions.end(sids[s.pick % sids.length]!);
          else if (s.kind === 'end_all') await sessions.endAllForUser(`u${s.user}`);
          else if (s.kind === 'not_before') await store.set(`user_nbf:u${s.user}`, String(clock.now()), 3600);
          else if (s.kind === 'wait') clock.advance(s.ms);
          clock.advance(1);
          for (const sid of [...sids, 'unknown-sid', '']) {
            const now = sessions.getNow(sid);
            if (now === undefined) return false;
            if (JSON.stringify(now ?? undefined) !== JSON.stringify(await sessions.get(sid))) return false;
          }
          for (const cookie of [...cookies, 'not-a-cookie', '', 'x'.repeat(257)]) {
            const now = sessions.fromCookieNow(cookie);
            if (now === undefined) return false;
            if (JSON.stringify(now ?? undefined) !== JSON.stringify(await sessions.fromCookie(cookie))) return false;
          }
        }
        return true;
      }),
      { numRuns },
    ),
  );
});

test('SessionManager.getNow and fromCookieNow decline on a store that cannot answer at once', async (t) => {
  const inner = new InProcessMemoryStore();
  // The same store without getNow, as a store behind a network is.
  const remote: MemoryStore = new Proxy(inner, {
    get: (target, p) => {
      if (p === 'getNow') return undefined;
      const v: unknown = Reflect.get(target, p, target);
      return typeof v === 'function' ? v.bind(target) : v;
    },
  }) as MemoryStore;
  const sessions = new SessionManager({ store: remote });
  const { session } = await sessions.create({ user_id: 'u1', roles: [], scope: [], login_method: 'basic_auth', auth_time: 0 });
  const { session: other, cookieToken } = await sessions.create({ user_id: 'u2', roles: [], scope: [], login_method: 'basic_auth', auth_time: 0 });
  t.is(sessions.getNow(session.sid), undefined);
  t.is((await sessions.get(session.sid))?.sid, session.sid);
  t.is(sessions.fromCookieNow(cookieToken), undefined);
  t.is((await sessions.fromCookie(cookieToken))?.sid, other.sid);
});

test('TokenService.verifiedNow answers only what verify accepts, after verify has accepted it', async (t) => {
  await t.notThrowsAsync(
    fc.assert(
      fc.asyncProperty(
        fc.array(fc.record({ wait: fc.integer({ min: 0, max: 400_000 }), type: fc.constantFrom('access_token' as const, 'id_token' as const, 'refresh_token' as const) }), { minLength: 1, maxLength: 8 }),
        async (steps) => {
          const clock = manualClock();
          const tokens = await TokenService.create({ algorithm: 'HS256', issuer: ISSUER, audience: CLIENT_ID, secret: 'verified-now-secret-0123456789abcdef', now: clock.now, accessTokenTtl: 600 });
          const { token } = await tokens.sign('access_token', 'user-1', { sid: 's1' });
          if (tokens.verifiedNow(token, 'access_token') !== undefined) return false; // never verified yet
          await tokens.verify(token, 'access_token');
          for (const s of steps) {
            clock.advance(s.wait);
            const now = tokens.verifiedNow(token, s.type);
            const full = await tokens.verify(token, s.type).then((c) => c, () => undefined);
            if (now !== full) return false;
          }
          return true;
        },
      ),
      { numRuns },
    ),
  );
});
