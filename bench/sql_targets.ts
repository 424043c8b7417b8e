/**
 * The SQL store's targets of issue #20, `npm run bench -- sql` (standalone:
 * `node bench/sql_targets.ts [--quick] [--scale 1] [--queries 500]
 * [--backends sqlite,postgres]`):
 *
 * - P9, on SQLite and PostgreSQL: writes through `Engine.write` in 100-tuple
 *   batches into a growing table, beside `SqlStore.write` in the same run,
 *   then alone, as a server writes its one database; the target is judged
 *   on the run alone (bench/sql_writes.ts).
 * - P6: cold 5-hop checks through `engine.check` as the server composes it
 *   without the graph mirror (the check cache in front of the level checker,
 *   server/handlers/permissions.ts), with the cache emptied before each
 *   pass and every query distinct, so each check goes to the database. Run on
 *   the database P9 loaded through the engine (the reference dataset), after
 *   `ANALYZE` and a checkpoint on PostgreSQL. Every answer is verified against
 *   the generator's expected answer before timing. Reported: p50/p99 over
 *   the best of three passes, the database round trips per check (level
 *   statements and any other store call that reaches the database), the same
 *   checks level by level (the level checker without tupleset chains, as
 *   before them) and the reference: as many bare round trips as a check
 *   makes (`SELECT 1` as a named statement on a `pg` client of its own); the
 *   three alternate query by query. The target is PostgreSQL's; SQLite is
 *   reported beside it.
 *
 * PostgreSQL runs when LATCHKEY_TEST_POSTGRES_URL is set (a throw-away
 * database per side); point it at another server (a tuned one, say) to
 * measure that server. Each backend's figures carry the settings they ran
 * under (`settings`): on PostgreSQL the server's `shared_buffers`,
 * `max_wal_size`, `checkpoint_timeout`, `wal_compression`,
 * `full_page_writes`, `synchronous_commit` and version; on SQLite the file's
 * `page_size`, `journal_mode` and the library's version. The load average is
 * reported: the machine is shared.
 */
import { PerformanceObserver, type PerformanceEntry } from 'node:perf_hooks';
import pg from 'pg';
import { CheckCache, Engine, LevelChecker, type TupleStore } from '../engine/index.ts';
import { ReferenceDataset } from './baseline/dataset.ts';
import { buildQueries, type CheckQuery } from './baseline/queries.ts';
import { load, round, writesScenario, type BenchDatabase } from './sql_writes.ts';
import { postgresUrl, type SqlBackend } from '../test/helpers/databases.ts';

const log = (m: string): void => void process.stderr.write(`[sql bench ${new Date().toISOString().slice(11, 19)}] ${m}\n`);

/** Store calls that are a database round trip of their own (the reads are counted as level statements). */
const OWN_ROUND_TRIP = ['latestModelId', 'readModel', 'readLatestModel', 'revision', 'readStartingWithUsers', 'readPage'];

function counting(store: TupleStore): { store: TupleStore; calls: () => number } {
  let n = 0;
  const proxy = new Proxy(store, {
    get(target, prop) {
      const v = Reflect.get(target, prop, target) as unknown;
      if (typeof v !== 'function') return v;
      return (...a: unknown[]) => {
        if (OWN_ROUND_TRIP.includes(String(prop))) n++;
        return (v as (...x: unknown[]) => unknown).apply(target, a);
      };
    },
  });
  return { store: proxy, calls: () => n };
}

function percentile(sorted: Float64Array, p: number): number {
  return sorted.length === 0 ? 0 : (sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] as number);
}

function stats(us: Float64Array): { p50_us: number; p99_us: number } {
  const s = Float64Array.from(us).sort();
  return { p50_us: round(percentile(s, 50)), p99_us: round(percentile(s, 99)) };
}

/**
 * Of the checks at or above the pass's p99, how many overlapped one of this
 * process's garbage collections (`started` in performance.now() ms, `us` the
 * durations): `"2 of 5"`.
 */
function slowDuringGc(us: Float64Array, started: Float64Array, collections: readonly PerformanceEntry[]): string {
  const p99 = percentile(Float64Array.from(us).sort(), 99);
  let slow = 0;
  let overlapped = 0;
  for (let i = 0; i < us.length; i++) {
    if ((us[i] as number) < p99) continue;
    slow++;
    const from = started[i] as number;
    const to = from + (us[i] as number) / 1000;
    if (collections.some((e) => e.startTime < to && e.startTime + e.duration > from)) overlapped++;
  }
  return `${overlapped} of ${slow}`;
}

/** PostgreSQL server settings that bear on writes, as the server reports them. */
const PG_SETTINGS = ['shared_buffers', 'max_wal_size', 'checkpoint_timeout', 'wal_compression', 'full_page_writes', 'synchronous_commit', 'server_version'];

/** The settings the figures of `db` ran under (see the module doc). */
async function settingsOf(db: BenchDatabase): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  if (db.backend === 'postgres') {
    for (const name of PG_SETTINGS) {
      const [rows] = await db.sequelize.query('SELECT current_setting(?) AS v', { replacements: [name] });
      out[name] = String((rows as { v: unknown }[])[0]?.v);
    }
  } else if (db.backend === 'sqlite') {
    for (const [name, sql] of [['page_size', 'PRAGMA page_size'], ['journal_mode', 'PRAGMA journal_mode'], ['sqlite_version', 'SELECT sqlite_version() AS v']] as const) {
      const [rows] = await db.sequelize.query(sql);
      out[name] = String(Object.values((rows as Record<string, unknown>[])[0] ?? {})[0]);
    }
  }
  return out;
}

/** P6 on the loaded database `db`. */
async function coldChecks(db: BenchDatabase, ds: ReferenceDataset, queries: number): Promise<Record<string, unknown>> {
  if (db.backend === 'postgres') {
    // Steady state, as in a running deployment: planner statistics for the new tables and the load's WAL checkpointed.
    await db.sequelize.query('ANALYZE');
    await db.sequelize.query('CHECKPOINT').catch(() => undefined);
  }
  const counted = counting(db.store);
  const cache = new CheckCache({ store: counted.store, maxEntries: 100_000, revisionPollMs: 1000 });
  const engine = new Engine({ store: cache.store, resolver: cache.resolver(new LevelChecker()) });
  const stepCache = new CheckCache({ store: db.store, maxEntries: 100_000, revisionPollMs: 1000 });
  const stepped = new Engine({ store: stepCache.store, resolver: stepCache.resolver(new LevelChecker({ chains: false })) });
  const seen = new Set<string>();
  const qs: CheckQuery[] = buildQueries(ds, 'deep5', queries * 2).filter((q) => {
    const k = `${q.object}#${q.user}`;
    if (seen.has(k)) return false;
    seen.add(k);
    return true;
  }).slice(0, queries);
  for (const q of qs) {
    for (const e of [engine, stepped]) {
      const got = (await e.check(q)).allowed;
      if (got !== q.expected) throw new Error(`${db.backend} deep5: wrong answer for ${q.object}#${q.relation}@${q.user}: expected ${q.expected}, got ${got}`);
    }
  }
  // Round trips of one pass with the cache emptied first.
  cache.invalidate();
  const s0 = db.store.levelStatements;
  const c0 = counted.calls();
  for (const q of qs) await engine.check(q);
  const statements = (db.store.levelStatements - s0) / qs.length;
  const others = (counted.calls() - c0) / qs.length;
  const roundTrips = Math.round(statements + others);
  stepCache.invalidate();
  const s1 = db.store.levelStatements;
  for (const q of qs) await stepped.check(q);
  const steppedStatements = (db.store.levelStatements - s1) / qs.length;

  let floor: pg.Client | undefined;
  if (db.backend === 'postgres') {
    const cfg = (db.sequelize as unknown as { config: { database: string; username: string; password?: string | null; host: string; port: number } }).config;
    floor = new pg.Client({ database: cfg.database, user: cfg.username, password: cfg.password ?? undefined, host: cfg.host, port: Number(cfg.port) });
    await floor.connect();
  }
  try {
    const passes: { check: Float64Array; stepped: Float64Array; floor: Float64Array; started: Float64Array }[] = [];
    // Garbage collections of this process during the passes: a check that spans one waits for it (the tail's first suspect).
    const collections: PerformanceEntry[] = [];
    const observer = new PerformanceObserver((list) => void collections.push(...list.getEntries()));
    observer.observe({ entryTypes: ['gc'] });
    const loadBefore = load();
    for (let p = 0; p < 3; p++) {
      cache.invalidate();
      stepCache.invalidate();
      const check = new Float64Array(qs.length);
      const step = new Float64Array(qs.length);
      const bare = new Float64Array(qs.length);
      const started = new Float64Array(qs.length);
      for (let i = 0; i < qs.length; i++) {
        let t0 = performance.now();
        started[i] = t0;
        await engine.check(qs[i]!);
        check[i] = (performance.now() - t0) * 1000;
        t0 = performance.now();
        await stepped.check(qs[i]!);
        step[i] = (performance.now() - t0) * 1000;
        if (floor !== undefined) {
          t0 = performance.now();
          for (let k = 0; k < roundTrips; k++) await floor.query({ name: 'bench_floor', text: 'SELECT 1' });
          bare[i] = (performance.now() - t0) * 1000;
        }
      }
      passes.push({ check, stepped: step, floor: bare, started });
    }
    const loadAfter = load();
    await new Promise((resolve) => setImmediate(resolve));
    observer.disconnect();
    const byPass = passes.map((p) => ({
      check: stats(p.check),
      level_by_level: stats(p.stepped),
      ...(floor === undefined ? {} : { bare_round_trips: stats(p.floor) }),
      slow_checks_during_gc: slowDuringGc(p.check, p.started, collections),
    }));
    const best = byPass.reduce((a, b) => (b.check.p50_us < a.check.p50_us ? b : a));
    return {
      api: 'engine.check (CheckCache emptied, LevelChecker), sequential',
      queries: qs.length,
      verified: 'every answer equal to the generator\'s before timing, with and without chains',
      round_trips_per_check: { level_statements: round(statements), other_store_calls: round(others), level_by_level_statements: round(steppedStatements) },
      best_pass: best,
      passes: byPass,
      gc_during_passes: {
        collections: collections.length,
        total_ms: round(collections.reduce((a, e) => a + e.duration, 0)),
        longest_ms: round(collections.reduce((a, e) => Math.max(a, e.duration), 0)),
      },
      loadavg_before: loadBefore,
      loadavg_after: loadAfter,
    };
  } finally {
    await floor?.end();
  }
}

export async function run(options: { quick: boolean; scale?: number; queries?: number; backends?: SqlBackend[] }): Promise<Record<string, unknown>> {
  const scale = options.scale ?? (options.quick ? 0.05 : 1);
  const queries = options.queries ?? (options.quick ? 100 : 500);
  const backends = options.backends ?? (['sqlite', ...(postgresUrl() ? ['postgres' as const] : [])] as SqlBackend[]);
  const ds = new ReferenceDataset(scale);
  const out: Record<string, unknown> = { scale, tuples: ds.tupleCount, node: process.version, loadavg_start: load() };
  const targets: Record<string, string> = {};
  for (const backend of backends) {
    log(`${backend}: writing ${ds.tupleCount} tuples through Engine.write and SqlStore.write`);
    const { figures, loaded } = await writesScenario(backend, ds, log);
    try {
      const settings = await settingsOf(loaded);
      const p6 = await coldChecks(loaded, ds, queries);
      log(`${backend} cold 5-hop: ${JSON.stringify(p6['best_pass'])}`);
      out[backend] = { settings, writes: figures, cold_5hop: p6 };
      const rate = (figures['engine_alone'] as { tuples_per_s: number }).tuples_per_s;
      const beside = (figures['engine'] as { tuples_per_s: number }).tuples_per_s;
      const need = backend === 'sqlite' ? 50_000 : 30_000;
      targets[`P9 ${backend}`] = `${rate} tuples/s through Engine.write alone, ${beside} beside SqlStore.write (target ${need}, judged alone): ${rate >= need ? 'met' : 'missed'}`;
      if (backend === 'postgres') {
        const c = (p6['best_pass'] as { check: { p50_us: number; p99_us: number } }).check;
        targets['P6 postgres'] = `p50 ${round(c.p50_us / 1000)} ms, p99 ${round(c.p99_us / 1000)} ms (target 1.5 / 5): ${c.p50_us <= 1500 && c.p99_us <= 5000 ? 'met' : 'missed'}`;
      }
    } finally {
      await loaded.close();
    }
  }
  out['targets'] = targets;
  out['loadavg_end'] = load();
  return out;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const args = process.argv.slice(2);
  const value = (name: string): string | undefined => {
    const i = args.indexOf(name);
    return i >= 0 ? args[i + 1] : undefined;
  };
  const scale = value('--scale');
  const queries = value('--queries');
  const backends = value('--backends');
  const figures = await run({
    quick: args.includes('--quick'),
    ...(scale === undefined ? {} : { scale: Number(scale) }),
    ...(queries === undefined ? {} : { queries: Number(queries) }),
    ...(backends === undefined ? {} : { backends: backends.split(',') as SqlBackend[] }),
  });
  process.stdout.write(`${JSON.stringify(figures, null, 2)}\n`);
  process.exit(0);
}
