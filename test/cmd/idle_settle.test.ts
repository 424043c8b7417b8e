/**
 * cmd/idle_settle.ts (an internal helper of the process entry): once the event
 * loop is quiet, a heap grown by start-up or load is collected and the young
 * generation shrunk, once; a busy loop is never interrupted, and a heap that
 * has not grown since is left alone. After the first settling, a load's growth
 * is given back only once the loop has been quiet for `quietMs` in a row: a
 * short pause between bursts keeps the young generation the load grew.
 */
import test from 'ava';
import { getHeapSpaceStatistics } from 'node:v8';
import { settleWhenIdle } from '../../cmd/idle_settle.ts';

const newSpace = (): number => getHeapSpaceStatistics().find((s) => s.space_name === 'new_space')?.space_size ?? 0;

test('idle settle (internal): a quiet process gives back the heap it grew, once; a busy one is left alone', async (t) => {
  t.timeout(60_000);
  // Grow both generations the way start-up does: many short-lived objects, some kept for a while.
  let kept: unknown[] = [];
  for (let i = 0; i < 2_000_000; i++) {
    kept.push({ i, s: `x${i}` });
    if (kept.length > 200_000) kept = [];
  }
  kept = [];
  const grown = newSpace();
  const settles: { heap_before_bytes: number; heap_after_bytes: number; ms: number }[] = [];
  const stop = settleWhenIdle({ intervalMs: 300, quietMs: 2400, onSettle: (f) => settles.push(f) });
  try {
    // Busy: the loop is never quiet for a whole interval, so nothing is collected.
    const busyUntil = performance.now() + 1000;
    while (performance.now() < busyUntil) {
      const spin = performance.now() + 50;
      while (performance.now() < spin);
      await new Promise((r) => setImmediate(r));
    }
    t.is(settles.length, 0, 'no collection while the loop is busy');
    // Quiet: the first quiet interval settles, and the heap shrinks.
    await new Promise((r) => setTimeout(r, 1500));
    t.is(settles.length, 1, 'one collection once quiet');
    const [settle] = settles;
    t.true(settle!.heap_after_bytes < settle!.heap_before_bytes, JSON.stringify(settle));
    t.true(newSpace() < grown || grown <= 2 ** 21, `the young generation shrank: ${grown} → ${newSpace()}`);
    // Still quiet, no growth since: no second collection.
    await new Promise((r) => setTimeout(r, 1200));
    t.is(settles.length, 1, 'no collection again without growth');
    t.is(typeof (globalThis as { gc?: unknown }).gc, 'undefined', 'gc is not exposed in the process context');
    // A load grows the heap again, then a pause shorter than quietMs: nothing is collected.
    let load: unknown[] = [];
    const loadUntil = performance.now() + 700;
    while (performance.now() < loadUntil) {
      for (let i = 0; i < 20_000; i++) {
        load.push({ i, s: `y${i}` });
        if (load.length > 200_000) load = [];
      }
      await new Promise((r) => setImmediate(r));
    }
    load = [];
    await new Promise((r) => setTimeout(r, 1200));
    t.is(settles.length, 1, 'a pause shorter than quietMs keeps what the load grew');
    // Quiet for quietMs in a row: the load's growth is given back.
    await new Promise((r) => setTimeout(r, 2400));
    t.is(settles.length, 2, 'settled once quiet for quietMs');
  } finally {
    stop();
  }
});
