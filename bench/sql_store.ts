/**
 * SQL tuple-store benchmark (issue 5, targets P6, P8, P9) on the reference
 * dataset of performance-anchors §2.3, on the store alone (issue #20's
 * targets, through the engine: `npm run bench -- sql`, bench/sql_targets.ts):
 *
 * - P6: cold checks (no cache, no mirror) through the level checker, with
 *   the store calls per check counted; answers verified before timing.
 * - P8: `SqlStore.scanTuples` over every tuple (the scan alone; the mirror
 *   build is measured by bench/check_start.ts).
 * - P9: writes in 100-tuple batches.
 *
 *   node bench/sql_store.ts [--backend sqlite|postgres|mysql] [--scale 1]
 *     [--sqlite-file /tmp/lk_bench_1m.sqlite] [--queries 200] [--batches 200]
 *
 * With `--sqlite-file`, the loaded SQLite file is kept and reused by later
 * runs (loading 1 M tuples takes a while); PostgreSQL and MySQL use a
 * throw-away database (LATCHKEY_TEST_POSTGRES_URL / LATCHKEY_TEST_MYSQL_URL).
 * Prints JSON; the load average is included because the machine is shared.
 */
import { existsSync } from 'node:fs';
import { loadavg } from 'node:os';
import { Sequelize } from 'sequelize';
import { openSequelize } from '../engine/sql/sqlite_sequelize.ts';
import { ReferenceDataset, REFERENCE_MODEL_DSL, writeDataset } from './baseline/dataset.ts';
import { buildQueries, type CheckQuery, type QuerySetName } from './baseline/queries.ts';
import { timeAsync } from './check_timing.ts';
import { Engine, LevelChecker, type TupleKey, type TupleStore } from '../engine/index.ts';
import { SqlStore } from '../engine/sql/sql_store.ts';
import { createTestDatabase, type SqlBackend } from '../test/helpers/databases.ts';

const args = process.argv.slice(2);
const value = (name: string, dflt: string): string => {
  const i = args.indexOf(name);
  return i >= 0 && args[i + 1] !== undefined ? args[i + 1]! : dflt;
};
const backend = value('--backend', 'sqlite') as SqlBackend;
const scale = Number(value('--scale', '1'));
const sqliteFile = value('--sqlite-file', '');
const queries = Number(value('--queries', '200'));
const batches = Number(value('--batches', '200'));
const log = (m: string): void => void process.stderr.write(`[sql bench ${new Date().toISOString().slice(11, 19)}] ${m}\n`);
const round = (x: number, d = 2): number => Math.round(x * 10 ** d) / 10 ** d;
const load = (): number[] => loadavg().map((x) => round(x));

async function open(): Promise<{ sequelize: Sequelize; store: SqlStore; drop: () => Promise<void> }> {
  let url: string;
  let drop = async (): Promise<void> => undefined;
  if (backend === 'sqlite' && sqliteFile !== '') {
    url = `sqlite:${sqliteFile}`;
  } else {
    const db = await createTestDatabase(backend, 'lk_sqlbench');
    url = db.url;
    drop = () => db.drop();
  }
  const sequelize = openSequelize(url, { logging: false, ...(backend === 'sqlite' ? { pool: { max: 1, min: 0 } } : { pool: { max: 8, min: 1 } }) });
  if (backend === 'sqlite') {
    // As server/compose/database.ts sets the process connection.
    await sequelize.query('PRAGMA journal_mode = WAL');
    await sequelize.query('PRAGMA busy_timeout = 5000');
  }
  const store = await SqlStore.open({ sequelize, batchSize: 1000 });
  return { sequelize, store, drop: async () => { await store.close(); await sequelize.close(); await drop(); } };
}

function counting(store: TupleStore): { store: TupleStore; calls: () => number } {
  let n = 0;
  const counted = ['readUserTuples', 'readObjectRelations', 'readStartingWithUsers'];
  const proxy = new Proxy(store, {
    get(target, prop) {
      const v = Reflect.get(target, prop, target) as unknown;
      if (typeof v !== 'function') return v;
      return (...a: unknown[]) => {
        if (counted.includes(String(prop))) n++;
        return (v as (...x: unknown[]) => unknown).apply(target, a);
      };
    },
  });
  return { store: proxy, calls: () => n };
}

const ds = new ReferenceDataset(scale);
const out: Record<string, unknown> = { backend, scale, tuples: ds.tupleCount, node: process.version, loadavg_start: load() };
const { sequelize, store, drop } = await open();
try {
  // Load (or reuse) the dataset.
  const have = await store.hasTuples();
  if (!have) {
    const seconds = await writeDataset(store, ds, 5000);
    out['load_s'] = round(seconds);
    out['load_tuples_per_s'] = Math.round(ds.tupleCount / seconds);
    log(`loaded ${ds.tupleCount} tuples in ${String(out['load_s'])} s`);
    // Steady state before timing, as in a running deployment: planner statistics for the new table
    // (autovacuum would gather them within a minute) and the load's WAL checkpointed, so the timed
    // reads do not share the disk with the checkpoint the load started.
    if (backend === 'postgres') {
      await sequelize.query('ANALYZE fga_tuple');
      await sequelize.query('CHECKPOINT').catch(() => undefined);
    }
  } else {
    log(`reusing ${sqliteFile}`);
  }

  // P8: the scan alone.
  {
    const t0 = performance.now();
    let n = 0;
    for await (const batch of store.scanTuples({ batchSize: 50_000 })) n += batch.length;
    const s = (performance.now() - t0) / 1000;
    if (n < ds.tupleCount) throw new Error(`scan returned ${n} tuples, expected at least ${ds.tupleCount}`);
    out['scan'] = { tuples: n, seconds: round(s), tuples_per_s: Math.round(n / s), loadavg: load() };
    log(`scan: ${n} tuples in ${round(s)} s`);
  }

  // P6: cold checks through the level checker.
  const counted = counting(store);
  const combineReads = !args.includes('--usersets-only');
  out['combine_reads'] = combineReads;
  const engine = new Engine({ store: counted.store, resolver: new LevelChecker({ combineReads }) });
  if ((await store.latestModelId()) === undefined) await engine.writeModel({ dsl: REFERENCE_MODEL_DSL });
  const checks: Record<string, unknown> = {};
  for (const set of ['direct', 'deep5', 'negative', 'nested_groups'] as QuerySetName[]) {
    const qs: CheckQuery[] = buildQueries(ds, set, queries);
    const c0 = counted.calls();
    const s0 = store.levelStatements;
    for (const q of qs) {
      const got = (await engine.check(q)).allowed;
      if (got !== q.expected) throw new Error(`${set}: wrong answer for ${q.object}#${q.relation}@${q.user}: expected ${q.expected}, got ${got}`);
    }
    const calls = (counted.calls() - c0) / qs.length;
    const statements = (store.levelStatements - s0) / qs.length;
    const timing = await timeAsync(qs, (q) => engine.check(q), { passes: 3 });
    checks[set] = { store_calls_per_check: round(calls), statements_per_check: round(statements), ...timing };
    log(`${set}: ${JSON.stringify(checks[set])}`);
  }
  out['cold_checks'] = { ...checks, loadavg: load() };

  // P9: writes in 100-tuple batches (then deleted again, so a reused file stays as loaded).
  {
    const rev0 = await store.revision();
    const written: TupleKey[][] = [];
    const t0 = performance.now();
    for (let b = 0; b < batches; b++) {
      const writes: TupleKey[] = [];
      for (let i = 0; i < 100; i++) writes.push({ object: `document:w${b}_${i}`, relation: 'viewer', user: `user:${(b * 100 + i) % ds.users}` });
      await store.write([], writes);
      written.push(writes);
    }
    const s = (performance.now() - t0) / 1000;
    if ((await store.revision()) !== rev0 + batches) throw new Error('writes: revision did not advance once per batch');
    const t1 = performance.now();
    for (const w of written) await store.write(w, []);
    const sd = (performance.now() - t1) / 1000;
    if ((await store.readUserTuples([{ objectType: 'document', objectId: 'w0_0', relation: 'viewer', user: 'user:0' }]))[0] !== undefined) throw new Error('writes: delete left a tuple');
    out['writes_100'] = { batches, tuples_per_s: Math.round((batches * 100) / s), ms_per_batch: round((s * 1000) / batches), deletes_tuples_per_s: Math.round((batches * 100) / sd), loadavg: load() };
    log(`writes: ${JSON.stringify(out['writes_100'])}`);
  }
} finally {
  if (!(backend === 'sqlite' && sqliteFile !== '' && existsSync(sqliteFile))) await drop();
  else await store.close();
}
process.stdout.write(`${JSON.stringify(out, null, 2)}\n`);
process.exit(0);
