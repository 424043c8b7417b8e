import test from 'ava';
import fc from 'fast-check';
import { STRONG_PASSWORD, makeService, manualClock } from './fixtures.ts';

const numRuns = process.env['CI'] ? 100 : 25;

type Action = { kind: 'refresh_latest' } | { kind: 'replay_old'; pick: number } | { kind: 'wait'; ms: number } | { kind: 'concurrent'; n: number };

const action: fc.Arbitrary<Action> = fc.oneof(
  fc.constant({ kind: 'refresh_latest' } as const),
  fc.record({ kind: fc.constant('replay_old' as const), pick: fc.nat() }),
  fc.record({ kind: fc.constant('wait' as const), ms: fc.integer({ min: 0, max: 20_000 }) }),
  fc.record({ kind: fc.constant('concurrent' as const), n: fc.integer({ min: 2, max: 6 }) }),
);

test('refresh lineages: never two live refresh tokens; a replay after the grace period kills the family for good', async (t) => {
  const clock = manualClock();
  const f = await makeService({ now: clock.now });
  let n = 0;
  try {
    await t.notThrowsAsync(
      fc.assert(
        fc.asyncProperty(fc.array(action, { minLength: 1, maxLength: 12 }), async (actions) => {
          clock.advance(60_000);
          const s = await f.auth.signup({ email: `p${n++}@example.com`, password: STRONG_PASSWORD });
          const issued: string[] = [s.response.refresh_token!];
          let dead = false;
          const rotatedAt = new Map<string, number>();
          for (const a of actions) {
            if (a.kind === 'wait') clock.advance(a.ms);
            else if (a.kind === 'refresh_latest' || a.kind === 'concurrent') {
              const token = issued[issued.length - 1]!;
              const tries = a.kind === 'concurrent' ? a.n : 1;
              const results = await Promise.allSettled(Array.from({ length: tries }, () => f.auth.refresh(token)));
              const ok = results.filter((r) => r.status === 'fulfilled');
              if (dead) {
                if (ok.length !== 0) return false;
              } else {
                if (ok.length !== 1) return false;
                issued.push((ok[0] as PromiseFulfilledResult<{ refresh_token?: string }>).value.refresh_token!);
                rotatedAt.set(token, clock.now());
              }
            } else if (issued.length > 1) {
              const old = issued[a.pick % (issued.length - 1)]!;
              const r = await Promise.allSettled([f.auth.refresh(old)]);
              if (r[0]!.status === 'fulfilled') return false;
              const at = rotatedAt.get(old)!;
              if (!dead && clock.now() - at > 10_000) dead = true;
            }
            // Invariant: at most one live refresh token, and none once the family is dead.
            let live = 0;
            for (const token of issued) {
              const v = await Promise.allSettled([f.auth.validateJwtToken({ token_type: 'refresh_token', token })]);
              if (v[0]!.status === 'fulfilled') live++;
            }
            if (live > 1 || (dead && live !== 0) || (!dead && live !== 1)) return false;
          }
          return true;
        }),
        { numRuns },
      ),
    );
  } finally {
    await f.close();
  }
});
