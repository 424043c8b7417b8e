/**
 * The hold that evens out a refusal's time with a success's (security matrix A6, auth/response_padding.ts):
 * a refusal waits until the recent successes' average has passed since it started, never longer than the
 * slowest of them, never less than the quickest, never past the 2 s cap, and not at all before any success
 * was seen or when it already took as long.
 */
import test from 'ava';
import fc from 'fast-check';
import { ResponsePadding } from '../../auth/response_padding.ts';

/** Milliseconds `hold` took for a refusal that started `ago` ms before. */
async function held(padding: ResponsePadding, ago = 0): Promise<number> {
  const now = performance.now();
  await padding.hold(now - ago);
  return performance.now() - now;
}

// Timer slack: a timer fires at or after its time, later on a busy machine.
const LATE_MS = 250;
// An answer not held still takes a turn of the event loop or two (more on a busy machine); every average compared with it is longer.
const NOT_HELD_MS = 100;

test('before any success is seen, a refusal is not held', async (t) => {
  t.true((await held(new ResponsePadding())) < NOT_HELD_MS);
});

test('a refusal is held until the average of the successes seen, counted from its start', async (t) => {
  const padding = new ResponsePadding();
  for (const ms of [400, 400, 400]) padding.observe(ms);
  const whole = await held(padding);
  t.true(whole >= 399 && whole < 400 + LATE_MS, `held ${whole} ms for an average of 400`);
  const rest = await held(padding, 250);
  t.true(rest >= 149 && rest < 150 + LATE_MS, `held ${rest} ms after 250 of 400 had passed`);
  t.true((await held(padding, 500)) < NOT_HELD_MS, 'a refusal that took longer already is not held');
});

test('the hold never passes 2 s, whatever the successes took', async (t) => {
  const padding = new ResponsePadding();
  padding.observe(30_000);
  const ms = await held(padding);
  t.true(ms >= 1_999 && ms < 2_000 + LATE_MS, `held ${ms} ms`);
});

test('durations that are not times are ignored', async (t) => {
  const padding = new ResponsePadding();
  for (const bad of [Number.NaN, -5, Number.POSITIVE_INFINITY]) padding.observe(bad);
  t.true((await held(padding)) < NOT_HELD_MS, 'nothing learnt from them');
  padding.observe(300);
  padding.observe(Number.NaN);
  const ms = await held(padding);
  t.true(ms >= 299 && ms < 300 + LATE_MS, `held ${ms} ms for the one real success of 300`);
});

test('property: for any successes, the hold lies between the quickest and the slowest of them', async (t) => {
  await t.notThrowsAsync(
    fc.assert(
      fc.asyncProperty(fc.array(fc.integer({ min: 5, max: 40 }), { minLength: 1, maxLength: 12 }), async (successes) => {
        const padding = new ResponsePadding();
        for (const ms of successes) padding.observe(ms);
        const ms = await held(padding);
        return ms >= Math.min(...successes) - 1 && ms < Math.max(...successes) + LATE_MS;
      }),
      { numRuns: process.env['CI'] ? 40 : 15 },
    ),
  );
});

test('the average follows the recent successes: after a slow start, quick successes bring the hold down', async (t) => {
  const padding = new ResponsePadding();
  for (let i = 0; i < 5; i++) padding.observe(1000);
  for (let i = 0; i < 20; i++) padding.observe(10);
  // 1,000 ms weighed down by 0.8 twenty times: under 22 ms, far from the 1,000 of the start.
  const ms = await held(padding);
  t.true(ms >= 10 - 1 && ms < 300, `held ${ms} ms`);
});
