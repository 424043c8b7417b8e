/**
 * Gives memory back when the server goes quiet. V8 grows its young generation
 * (up to 128 MiB committed on a 64-bit Node 24 with no semi-space limit) and
 * its old generation during start-up and under load, and shrinks them only in
 * a garbage collection made to reduce memory, which an idle process never
 * triggers: a server started on SQLite sat at about 195 MiB of RSS with 41 MiB
 * of heap in use, and after a load it stayed at the load's level
 * (docs/performance.md, "Server footprint").
 *
 * Every `intervalMs` (2 s) this looks at the event loop's utilisation over the
 * interval. An interval under `quietUtilization` is quiet (no request of note
 * was served). Once the loop has been quiet long enough and the committed heap
 * has grown by at least `growthBytes` since the last settling, it runs one
 * full, memory-reducing collection (V8's "last resort" flavour: both
 * generations compacted, the young generation shrunk to its minimum). That
 * costs tens of milliseconds of one core, on a process that had nothing else
 * to do; a request arriving during it waits that long. Under steady traffic
 * the loop is never quiet and nothing happens; V8's own collections run as
 * always.
 *
 * Long enough is one quiet interval after start-up (its growth is given back
 * at once), and `quietMs` (30 s) of quiet in a row after that. The young
 * generation a load grew is what makes the next burst cheap: after a settling,
 * V8 grows it back only as objects survive, and until it has, a burst costs
 * about twice the CPU per request for two to three seconds (docs/performance.md,
 * "Ninth round"). A pause between bursts shorter than `quietMs` keeps it.
 *
 * The collection function comes from `--expose-gc` switched on only long
 * enough to read it from a new context, then off again, so `globalThis.gc`
 * never appears in the server's own context.
 */
import { performance } from 'node:perf_hooks';
import { getHeapStatistics, setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

type GcFunction = (options?: { type?: 'major' | 'minor'; execution?: 'sync' | 'async'; flavor?: 'regular' | 'last-resort' }) => void;

export interface IdleSettleOptions {
  /** How often to look (default 2000 ms). */
  intervalMs?: number;
  /** Event-loop utilisation below which an interval counts as quiet (default 0.02). */
  quietUtilization?: number;
  /** Committed-heap growth since the last settling that makes one worth it (default 8 MiB). */
  growthBytes?: number;
  /** How long the loop must have been quiet, in a row, for a settling after the first (default 30 000 ms). */
  quietMs?: number;
  /** Called after each settling with the committed heap before and after, and its duration. */
  onSettle?: (figures: { heap_before_bytes: number; heap_after_bytes: number; ms: number }) => void;
}

function gcFunction(): GcFunction | undefined {
  const existing = (globalThis as { gc?: GcFunction }).gc;
  if (typeof existing === 'function') return existing;
  try {
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as unknown;
    return typeof gc === 'function' ? (gc as GcFunction) : undefined;
  } catch {
    return undefined;
  } finally {
    setFlagsFromString('--no-expose-gc');
  }
}

/** Starts watching; returns the function that stops it. The timer never keeps the process alive. */
export function settleWhenIdle(options: IdleSettleOptions = {}): () => void {
  const gc = gcFunction();
  if (gc === undefined) return () => undefined;
  const intervalMs = options.intervalMs ?? 2000;
  const quiet = options.quietUtilization ?? 0.02;
  const growth = options.growthBytes ?? 8 * 2 ** 20;
  const quietMs = options.quietMs ?? 30_000;
  // Start-up is growth: the first quiet interval after it settles. Zero until the first settling.
  let settledHeap = 0;
  // When the current run of quiet intervals began (undefined while the loop is busy).
  let quietSince: number | undefined;
  let last = performance.eventLoopUtilization();
  const timer = setInterval(() => {
    const now = performance.eventLoopUtilization();
    const { utilization } = performance.eventLoopUtilization(now, last);
    last = now;
    if (utilization >= quiet) {
      quietSince = undefined;
      return;
    }
    // The interval that just ended was quiet: the run began at its start.
    quietSince ??= performance.now() - intervalMs;
    if (settledHeap > 0 && performance.now() - quietSince < quietMs) return;
    const before = getHeapStatistics().total_heap_size;
    if (before < settledHeap + growth) return;
    const started = performance.now();
    gc({ type: 'major', execution: 'sync', flavor: 'last-resort' });
    settledHeap = getHeapStatistics().total_heap_size;
    // The collection itself must not count as activity in the next interval.
    last = performance.eventLoopUtilization();
    options.onSettle?.({ heap_before_bytes: before, heap_after_bytes: settledHeap, ms: performance.now() - started });
  }, intervalMs);
  timer.unref();
  return () => clearInterval(timer);
}
