/**
 * Timing helpers for the check benchmarks: throughput over whole passes
 * (median of passes) and per-operation latency percentiles from a separate
 * pass, so the clock reads do not distort the throughput figure.
 */

export interface Timing {
  ops_per_s: number;
  p50_us: number;
  p99_us: number;
  n: number;
}

function percentile(sorted: Float64Array, p: number): number {
  if (sorted.length === 0) return 0;
  const i = Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length));
  return sorted[i] as number;
}

const round = (x: number, d = 2): number => Math.round(x * 10 ** d) / 10 ** d;

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] as number;
}

/** Times a synchronous operation over `items`. */
export function timeSync<T>(items: readonly T[], op: (item: T) => unknown, passes = 5): Timing {
  const rates: number[] = [];
  for (let p = 0; p < passes; p++) {
    const t0 = process.hrtime.bigint();
    for (const it of items) op(it);
    const ns = Number(process.hrtime.bigint() - t0);
    rates.push(items.length / (ns / 1e9));
  }
  const lat = new Float64Array(items.length);
  for (let i = 0; i < items.length; i++) {
    const t0 = process.hrtime.bigint();
    op(items[i] as T);
    lat[i] = Number(process.hrtime.bigint() - t0) / 1000;
  }
  lat.sort();
  return { ops_per_s: Math.round(median(rates)), p50_us: round(percentile(lat, 50)), p99_us: round(percentile(lat, 99)), n: items.length };
}

/**
 * Times an asynchronous operation over `items` with `concurrency` operations
 * in flight (1 = strictly sequential awaits).
 */
export async function timeAsync<T>(
  items: readonly T[],
  op: (item: T) => Promise<unknown>,
  options: { passes?: number; concurrency?: number } = {},
): Promise<Timing> {
  const passes = options.passes ?? 5;
  const concurrency = options.concurrency ?? 1;
  const rates: number[] = [];
  // Throughput passes read the clock once per pass; latencies come from one more pass of their own.
  for (let p = 0; p < passes; p++) {
    let next = 0;
    const t0 = process.hrtime.bigint();
    const worker = async (): Promise<void> => {
      for (;;) {
        const i = next++;
        if (i >= items.length) return;
        await op(items[i] as T);
      }
    };
    await Promise.all(Array.from({ length: Math.min(concurrency, items.length) }, worker));
    const ns = Number(process.hrtime.bigint() - t0);
    rates.push(items.length / (ns / 1e9));
  }
  const lat = new Float64Array(items.length);
  let next = 0;
  const timed = async (): Promise<void> => {
    for (;;) {
      const i = next++;
      if (i >= items.length) return;
      const s = process.hrtime.bigint();
      await op(items[i] as T);
      lat[i] = Number(process.hrtime.bigint() - s) / 1000;
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, items.length) }, timed));
  lat.sort();
  return { ops_per_s: Math.round(median(rates)), p50_us: round(percentile(lat, 50)), p99_us: round(percentile(lat, 99)), n: items.length };
}

/** Heap and RSS in MiB. */
export function memoryMiB(): { heap_mib: number; rss_mib: number } {
  const m = process.memoryUsage();
  return { heap_mib: round(m.heapUsed / 2 ** 20, 1), rss_mib: round(m.rss / 2 ** 20, 1) };
}

/** Runs a full GC when node was started with --expose-gc. */
export function gc(): void {
  const g = (globalThis as { gc?: () => void }).gc;
  if (g) g();
}
