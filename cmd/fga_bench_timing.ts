/**
 * How `latchkey fga bench` times an operation, and how `npm run bench` times
 * the check scenarios it is compared with (bench/check.ts `timeScenario`):
 * one loop, so that the two differ only in what they set up.
 *
 * 0. Under `node --expose-gc`, a full collection: the garbage of loading,
 *    and an earlier engine, are collected before the warm-up rather than
 *    while the operation is timed.
 * 1. Warm-up, untimed: whole passes over the operations until at least
 *    `warmupOps` operations and `warmupMs` have gone by (or `warmupMaxMs`,
 *    for slow operations). V8 compiles a function in tiers (interpreter,
 *    baseline, Maglev, TurboFan) as it is called, with the optimizing
 *    compilers on background threads; the check path reaches TurboFan after
 *    some ten thousand checks, later on a loaded machine, where the
 *    background compiles wait for a core. Optimized code also depends on
 *    the objects it was specialized for: once an earlier engine of the same
 *    process is collected, the check path is thrown back to the interpreter
 *    and climbs again. Timing before that has settled measures the compiler,
 *    not the engine: `latchkey fga bench` used to time check_cold after 250
 *    checks and read 0.36–0.59× of the check benchmark's throughput, whose
 *    verification pass had warmed it with 2,000 (docs/performance.md,
 *    "`latchkey fga bench` beside the check benchmark").
 * 2. Throughput: whole passes, the clock read once per pass, until at least
 *    `minPasses` passes and `minMs` (or `maxMs`); the median pass rate.
 *    Reading the clock around every operation would be part of what a
 *    microsecond operation measures.
 * 3. Latency: one more pass with the clock read around each operation, for
 *    the percentiles.
 *
 * A failed operation is counted and timed all the same: a try around the
 * await costs nothing, where a `.catch` or a wrapper per call would add a
 * promise to every operation timed.
 */

/** When warm-up and timing stop (milliseconds of wall-clock time, operation counts). */
export interface TimingPolicy {
  warmupOps: number;
  warmupMs: number;
  warmupMaxMs: number;
  minPasses: number;
  minMs: number;
  maxMs: number;
}

/** The command's and the check benchmark's policy. */
export const DEFAULT_TIMING: Readonly<TimingPolicy> = Object.freeze({
  warmupOps: 20_000,
  warmupMs: 300,
  warmupMaxMs: 3_000,
  minPasses: 5,
  minMs: 300,
  maxMs: 3_000,
});

/** One operation's figures, in milliseconds. */
export interface Timing {
  n: number;
  ops_per_s: number;
  p50_ms: number;
  p95_ms: number;
  p99_ms: number;
  /** Untimed operations run first, and the timed passes the throughput is the median of. */
  warmup_ops: number;
  passes: number;
}

const round = (x: number, d = 3): number => Math.round(x * 10 ** d) / 10 ** d;

function percentile(sorted: ArrayLike<number>, p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;
}

const elapsedMs = (since: bigint): number => Number(process.hrtime.bigint() - since) / 1e6;

/** Times `op(0)` … `op(n - 1)` as the module's comment says; `errors.count` counts the failed calls. */
export async function timeOperation(n: number, op: (i: number) => Promise<unknown>, errors: { count: number }, policy: Readonly<TimingPolicy> = DEFAULT_TIMING): Promise<Timing> {
  if (n <= 0) return { n: 0, ops_per_s: 0, p50_ms: 0, p95_ms: 0, p99_ms: 0, warmup_ops: 0, passes: 0 };
  (globalThis as { gc?: () => void }).gc?.();
  let warmed = 0;
  const warmStart = process.hrtime.bigint();
  for (;;) {
    for (let i = 0; i < n; i++) {
      try {
        await op(i);
      } catch {
        errors.count++;
      }
    }
    warmed += n;
    const ms = elapsedMs(warmStart);
    if ((warmed >= policy.warmupOps && ms >= policy.warmupMs) || ms >= policy.warmupMaxMs) break;
  }
  const rates: number[] = [];
  const timedStart = process.hrtime.bigint();
  for (;;) {
    const start = process.hrtime.bigint();
    for (let i = 0; i < n; i++) {
      try {
        await op(i);
      } catch {
        errors.count++;
      }
    }
    rates.push(n / Math.max(Number(process.hrtime.bigint() - start) / 1e9, 1e-9));
    const ms = elapsedMs(timedStart);
    if ((rates.length >= policy.minPasses && ms >= policy.minMs) || ms >= policy.maxMs) break;
  }
  const samples = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    const t0 = process.hrtime.bigint();
    try {
      await op(i);
    } catch {
      errors.count++;
    }
    samples[i] = Number(process.hrtime.bigint() - t0) / 1e6;
  }
  samples.sort();
  rates.sort((a, b) => a - b);
  const ms = (x: number): number => round(x, 4);
  return {
    n,
    ops_per_s: round(rates[Math.floor(rates.length / 2)]!, 1),
    p50_ms: ms(percentile(samples, 50)),
    p95_ms: ms(percentile(samples, 95)),
    p99_ms: ms(percentile(samples, 99)),
    warmup_ops: warmed,
    passes: rates.length,
  };
}
