/**
 * The check path on the memory store against the naive baseline B, in one
 * run on the same data (targets P1, P2, P7 of issue #5):
 *
 * - P1 cold: `Engine.check` on the memory store, no answer cache (the
 *   synchronous evaluator), the same through `Engine.checkSync` (no promise
 *   per check, like baseline B), and the asynchronous evaluator for comparison;
 * - P2 warm: `Engine.check` and `Engine.checkSync` through a CheckCache whose
 *   answers are all cached;
 * - P7 memory: heap of the loaded memory store per million tuples, and of a
 *   graph mirror loaded from it;
 * - the floor of a warm check: an awaited async function doing one `Map.get`
 *   on the concatenated key (what performance-anchors §2.3 calls a cache hit).
 *
 * Every evaluator's answers are verified against the generator's expected
 * answers before anything is timed. Ratios are to baseline B measured in the
 * same process, minutes apart; the load average is printed with the figures.
 *
 * Every evaluator first runs `--warmup` untimed passes over each query set
 * (the JIT and the collector settle after loading a million tuples; no
 * evaluator here keeps answers between checks, so "cold" still means every
 * check is resolved from the index).
 *
 *   node --expose-gc bench/check_core.ts [--scale 1] [--queries 5000] [--passes 5] [--warmup 3]
 */
import { loadavg } from 'node:os';
import { ReferenceDataset, REFERENCE_MODEL_DSL, writeDataset } from './baseline/dataset.ts';
import { NaiveEvaluator } from './baseline/naive.ts';
import { QUERY_SETS, buildQueries, type CheckQuery } from './baseline/queries.ts';
import { gc, timeAsync, timeSync, type Timing } from './check_timing.ts';
import { CheckCache, Engine, GraphMirror, LocalChecker, MemoryStore } from '../engine/index.ts';

function arg(name: string, def: number): number {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : def;
}

const scale = arg('scale', 1);
const nq = arg('queries', 5000);
const passes = arg('passes', 5);
const warmup = arg('warmup', 3);
async function settle<T>(items: readonly T[], op: (item: T) => unknown): Promise<void> {
  for (let i = 0; i < warmup; i++) for (const it of items) await op(it);
}
const log = (s: string): void => void process.stderr.write(`${s}\n`);

async function verify(name: string, qs: readonly CheckQuery[], check: (q: CheckQuery) => Promise<boolean> | boolean): Promise<void> {
  for (const q of qs) {
    const got = await check(q);
    if (got !== q.expected) throw new Error(`${name}: wrong answer for ${q.object}#${q.relation}@${q.user}: expected ${q.expected}, got ${got}`);
  }
}

const ds = new ReferenceDataset(scale);
log(`scale ${scale}: ${ds.tupleCount} tuples, load average ${loadavg().map((x) => x.toFixed(2)).join(' ')}`);
const qsets: Record<string, CheckQuery[]> = {};
for (const set of QUERY_SETS) qsets[set] = buildQueries(ds, set, nq);

// ---- memory store (loaded first: its heap is measured on a collected heap holding nothing else)
gc();
const heapBefore = process.memoryUsage().heapUsed;
const store = new MemoryStore();
const loadS = await writeDataset(store, ds, 10_000);
gc();
const heapMiB = (process.memoryUsage().heapUsed - heapBefore) / 2 ** 20;
log(`memory store loaded in ${loadS.toFixed(2)} s, heap ${heapMiB.toFixed(1)} MiB`);

// ---- baseline B
const baseline: Record<string, Timing> = {};
const b = new NaiveEvaluator();
{
  ds.forEachTuple((obj, rel, user) => b.add(obj, rel, user));
  for (const set of QUERY_SETS) {
    const qs = qsets[set]!;
    await verify(`baseline ${set}`, qs, (q) => b.check(q.object, q.relation, q.user));
    await settle(qs, (q) => b.check(q.object, q.relation, q.user));
    baseline[set] = timeSync(qs, (q) => b.check(q.object, q.relation, q.user), passes);
  }
}
gc();

const engine = new Engine({ store });
await engine.writeModel({ dsl: REFERENCE_MODEL_DSL });
const cold: Record<string, Timing> = {};
for (const set of QUERY_SETS) {
  await verify(`memory ${set}`, qsets[set]!, async (q) => (await engine.check(q)).allowed);
  await settle(qsets[set]!, (q) => engine.check(q));
  cold[set] = await timeAsync(qsets[set]!, (q) => engine.check(q), { passes, concurrency: 1 });
}
// The same checks through `checkSync` (no promise per check, as baseline B).
const coldSync: Record<string, Timing> = {};
for (const set of QUERY_SETS) {
  await verify(`memory checkSync ${set}`, qsets[set]!, (q) => engine.checkSync(q).allowed);
  await settle(qsets[set]!, (q) => engine.checkSync(q));
  coldSync[set] = timeSync(qsets[set]!, (q) => engine.checkSync(q), passes);
}
log('cold done');

const slow = new Engine({ store, resolver: new LocalChecker({ sync: false }) });
const asyncCold: Record<string, Timing> = {};
for (const set of QUERY_SETS) {
  const qs = qsets[set]!.slice(0, Math.min(500, nq));
  await verify(`memory async ${set}`, qs, async (q) => (await slow.check(q)).allowed);
  asyncCold[set] = await timeAsync(qs, (q) => slow.check(q), { passes: 3, concurrency: 1 });
}
log('async evaluator done');

const cache = new CheckCache({ store, maxEntries: 200_000, revisionPollMs: 3_600_000 });
const cached = new Engine({ store: cache.store, resolver: cache.resolver() });
const warm: Record<string, Timing> = {};
for (const set of QUERY_SETS) {
  for (const q of qsets[set]!) await cached.check(q);
  await verify(`memory warm ${set}`, qsets[set]!, async (q) => (await cached.check(q)).allowed);
  await settle(qsets[set]!, (q) => cached.check(q));
  warm[set] = await timeAsync(qsets[set]!, (q) => cached.check(q), { passes, concurrency: 1 });
}
const warmSync: Record<string, Timing> = {};
for (const set of QUERY_SETS) {
  await verify(`memory warm checkSync ${set}`, qsets[set]!, (q) => cached.checkSync(q).allowed);
  await settle(qsets[set]!, (q) => cached.checkSync(q));
  warmSync[set] = timeSync(qsets[set]!, (q) => cached.checkSync(q), passes);
}
log('warm done');

// The floor of a cache hit: await + Map.get on `object#relation@user`.
const floorMap = new Map<string, boolean>();
for (const set of QUERY_SETS) for (const q of qsets[set]!) floorMap.set(`${q.object}#${q.relation}@${q.user}`, q.expected);
const floorGet = async (q: CheckQuery): Promise<boolean | undefined> => floorMap.get(`${q.object}#${q.relation}@${q.user}`);
const floor: Record<string, Timing> = {};
for (const set of QUERY_SETS) {
  await verify(`floor ${set}`, qsets[set]!, async (q) => (await floorGet(q)) === true);
  await settle(qsets[set]!, floorGet);
  floor[set] = await timeAsync(qsets[set]!, floorGet, { passes, concurrency: 1 });
}
log('floor done');

gc();
const mirrorBefore = process.memoryUsage().heapUsed;
const mirror = await GraphMirror.load({ store, revisionPollMs: 3_600_000 });
gc();
const mirrorMiB = (process.memoryUsage().heapUsed - mirrorBefore) / 2 ** 20;
const mirrored = new Engine({ store: mirror.store, resolver: mirror.resolver() });
const mirrorCold: Record<string, Timing> = {};
for (const set of QUERY_SETS) {
  await verify(`mirror ${set}`, qsets[set]!, async (q) => (await mirrored.check(q)).allowed);
  await settle(qsets[set]!, (q) => mirrored.check(q));
  mirrorCold[set] = await timeAsync(qsets[set]!, (q) => mirrored.check(q), { passes, concurrency: 1 });
}
log(`mirror done (${mirror.stats().fast} fast, ${mirror.stats().deferred} deferred)`);

// P1 as an independent harness measures it: baseline B, `check` and `checkSync` in interleaved rounds over the
// same queries (best round each), so that a neighbour's load or a collection hits all three alike.
const interleaved: Record<string, { baseline: number; check: number; check_sync: number }> = {};
for (const set of QUERY_SETS) {
  const qs = qsets[set]!;
  const best = { baseline: 0, check: 0, check_sync: 0 };
  const rate = (t0: bigint): number => qs.length / (Number(process.hrtime.bigint() - t0) / 1e9);
  for (let round = 0; round < 2 * passes + 1; round++) {
    let t0 = process.hrtime.bigint();
    for (const q of qs) b.check(q.object, q.relation, q.user);
    best.baseline = Math.max(best.baseline, rate(t0));
    t0 = process.hrtime.bigint();
    for (const q of qs) await engine.check(q);
    best.check = Math.max(best.check, rate(t0));
    t0 = process.hrtime.bigint();
    for (const q of qs) engine.checkSync(q);
    best.check_sync = Math.max(best.check_sync, rate(t0));
  }
  interleaved[set] = { baseline: Math.round(best.baseline), check: Math.round(best.check), check_sync: Math.round(best.check_sync) };
}
log('interleaved done');

const k = (x: number): string => (x >= 1e6 ? `${(x / 1e6).toFixed(2)} M` : `${(x / 1e3).toFixed(1)} k`);
const rows = QUERY_SETS.map((set) => {
  const b = baseline[set]!.ops_per_s;
  const c = cold[set]!;
  const w = warm[set]!.ops_per_s;
  const cs = coldSync[set]!;
  return `| ${set} | ${k(b)} | ${k(c.ops_per_s)} (${(c.ops_per_s / b).toFixed(2)}×) | ${c.p50_us} / ${c.p99_us} µs | ${k(cs.ops_per_s)} (${(cs.ops_per_s / b).toFixed(2)}×) | ${k(asyncCold[set]!.ops_per_s)} | ${k(mirrorCold[set]!.ops_per_s)} | ${k(w)} (${(w / floor[set]!.ops_per_s).toFixed(2)}× floor) | ${k(warmSync[set]!.ops_per_s)} | ${k(floor[set]!.ops_per_s)} |`;
});
process.stdout.write(
  [
    `${ds.tupleCount} tuples, Node ${process.version}, load average after the run ${loadavg().map((x) => x.toFixed(2)).join(' ')}`,
    `memory store: heap ${heapMiB.toFixed(1)} MiB = ${(heapMiB / (ds.tupleCount / 1e6)).toFixed(1)} MiB per million tuples, loaded in ${loadS.toFixed(2)} s; RSS ${(process.memoryUsage().rss / 2 ** 20).toFixed(0)} MiB at the end`,
    `graph mirror: heap ${mirrorMiB.toFixed(1)} MiB = ${(mirrorMiB / (ds.tupleCount / 1e6)).toFixed(1)} MiB per million tuples`,
    '',
    '| set | baseline B | cold, memory store (ratio to B) | cold p50 / p99 | cold, checkSync (ratio to B) | cold, async evaluator | cold, mirror | warm, cache hit (ratio to floor) | warm, checkSync | floor: await + Map.get |',
    '|---|---|---|---|---|---|---|---|---|---|',
    ...rows,
    '',
    'P1, interleaved rounds (best of each):',
    '',
    '| set | baseline B | `check` (ratio to B) | `checkSync` (ratio to B) |',
    '|---|---|---|---|',
    ...QUERY_SETS.map((set) => {
      const r = interleaved[set]!;
      return `| ${set} | ${k(r.baseline)} | ${k(r.check)} (${(r.check / r.baseline).toFixed(2)}×) | ${k(r.check_sync)} (${(r.check_sync / r.baseline).toFixed(2)}×) |`;
    }),
    '',
  ].join('\n'),
);
process.stdout.write(`${JSON.stringify({ tuples: ds.tupleCount, heap_mib: heapMiB, mirror_heap_mib: mirrorMiB, baseline, cold, cold_sync: coldSync, interleaved, async_cold: asyncCold, mirror_cold: mirrorCold, warm, warm_sync: warmSync, floor, loadavg: loadavg() })}\n`);
