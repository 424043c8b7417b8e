/**
 * The in-process rate limiter (internal: server/rate_limit.ts), on an
 * injected clock: the steady allowance per second, the burst allowance over
 * its own window, the wait it answers, windows that end, and keys kept apart.
 * The server-level behaviour (429 with Retry-After on every protocol) is in
 * guards.test.ts.
 */
import test from 'ava';
import fc from 'fast-check';
import { createRateLimiter } from '../../server/rate_limit.ts';

function clock(start = 1_000_000): { now: () => number; advance(ms: number): void } {
  let t = start;
  return { now: () => t, advance: (ms) => void (t += ms) };
}

async function takeMany(limiter: ReturnType<typeof createRateLimiter>, key: string, n: number): Promise<(number | undefined)[]> {
  const out: (number | undefined)[] = [];
  for (let i = 0; i < n; i++) out.push(await limiter.take(key));
  return out;
}

test('internal: rps requests per second, then the burst, then refusals with the seconds until the sooner window ends', async (t) => {
  const c = clock();
  const limiter = createRateLimiter({ rps: 2, burst: 1, now: c.now });
  t.deepEqual(await takeMany(limiter, 'a', 5), [undefined, undefined, undefined, 1, 1]);
  c.advance(999);
  t.is(await limiter.take('a'), 1, 'both windows still open');
  c.advance(1);
  t.deepEqual(await takeMany(limiter, 'a', 4), [undefined, undefined, undefined, 1], 'a new second: the steady and the burst windows (1 s here) both restarted');
});

test('internal: a burst window longer than a second is spent once across seconds; the wait is the sooner end', async (t) => {
  const c = clock();
  // burst 5 at 2/s: the burst window is ceil(5 / 2) = 3 s.
  const limiter = createRateLimiter({ rps: 2, burst: 5, now: c.now });
  t.deepEqual(await takeMany(limiter, 'k', 8), [undefined, undefined, undefined, undefined, undefined, undefined, undefined, 1]);
  c.advance(1000);
  t.deepEqual(await takeMany(limiter, 'k', 3), [undefined, undefined, 1], 'the steady window restarted; the burst is spent until 3 s');
  c.advance(2000);
  t.deepEqual(await takeMany(limiter, 'k', 4), [undefined, undefined, undefined, undefined]);
});

test('internal: without a burst the steady window alone decides; keys are limited apart; rps 0 is unlimited', async (t) => {
  const c = clock();
  const limiter = createRateLimiter({ rps: 1, burst: 0, now: c.now });
  t.deepEqual(await takeMany(limiter, 'x', 3), [undefined, 1, 1]);
  t.is(await limiter.take('y'), undefined);
  c.advance(400);
  t.is(await limiter.take('x'), 1, 'ceil(600 ms) = 1 s');
  const off = createRateLimiter({ rps: 0, burst: 0, now: c.now });
  t.deepEqual(await takeMany(off, 'x', 50), Array(50).fill(undefined));
});

test('internal: in the first second of a key, the first rps + burst requests pass and the rest are refused (fast-check)', async (t) => {
  await fc.assert(
    fc.asyncProperty(fc.integer({ min: 1, max: 5 }), fc.integer({ min: 0, max: 6 }), fc.array(fc.integer({ min: 0, max: 120 }), { minLength: 1, maxLength: 60 }), async (rps, burst, gaps) => {
      const c = clock();
      const limiter = createRateLimiter({ rps, burst, now: c.now });
      const start = c.now();
      let index = 0;
      for (const gap of gaps) {
        if (c.now() + gap >= start + 1000) break;
        c.advance(gap);
        const wait = await limiter.take('ip');
        if (index < rps + burst) t.is(wait, undefined, `request ${index} within the allowance`);
        else t.true(wait !== undefined && Number.isInteger(wait) && wait >= 1, `request ${index} over the allowance`);
        index++;
      }
    }),
    { numRuns: 100 },
  );
});

test('internal: RateLimit-Policy names the steady and burst windows; RateLimit counts each down and says when it resets', async (t) => {
  const c = clock();
  const limiter = createRateLimiter({ rps: 2, burst: 5, now: c.now });
  t.is(limiter.policy, '"steady";q=2;w=1, "burst";q=5;w=3');
  t.is(limiter.status?.('k'), '"steady";r=2;t=1, "burst";r=5;t=3', 'an unseen key has the whole quota');
  await limiter.take('k');
  t.is(limiter.status?.('k'), '"steady";r=1;t=1, "burst";r=5;t=3');
  await takeMany(limiter, 'k', 2);
  t.is(limiter.status?.('k'), '"steady";r=0;t=1, "burst";r=4;t=3', 'past the steady allowance the burst is drawn on');
  c.advance(1500);
  t.is(limiter.status?.('k'), '"steady";r=2;t=1, "burst";r=4;t=2', 'the steady window ended; the burst one has 1.5 s left');
  t.is(createRateLimiter({ rps: 3, burst: 0, now: c.now }).policy, '"steady";q=3;w=1');
  t.is(createRateLimiter({ rps: 0, burst: 0 }).policy, undefined, 'nothing limited, nothing advertised');
});
