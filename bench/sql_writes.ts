/**
 * P9 (issue #20): tuple writes through `Engine.write` in 100-tuple batches
 * into a growing table, beside the same batches written to the store
 * directly (`SqlStore.write`, the reference: what the engine adds on top).
 *
 * Both sides start from an empty database of the same backend and receive
 * the reference dataset's tuples (bench/baseline/dataset.ts) in the
 * dataset's order, batch by batch in alternation (the order of the two
 * swapped every batch), so that the machine's load falls on both alike and
 * both tables grow at the same pace. Reported per side: tuples per second
 * over the whole run and per tenth of it, batch latency percentiles; then
 * every tuple is read back from both databases (a full scan compared with
 * the dataset) before the figures count.
 *
 * Then `Engine.write` alone (`engine_alone`): the same batches into a third
 * empty database while no other is written (the store's is closed, the
 * engine's idle), as a server writes its one database, and read back the
 * same way. In the alternating run the process
 * keeps two databases, and on SQLite two checkpoint threads copy both logs
 * back while either side writes; on two cores that third thread takes CPU
 * time from the writer. The alternating run gives the engine's cost beside
 * the store's; the run alone gives the rate the target is judged on.
 */
import { loadavg } from 'node:os';
import type { Sequelize } from 'sequelize';
import { openSequelize } from '../engine/sql/sqlite_sequelize.ts';
import { SqlStore } from '../engine/sql/sql_store.ts';
import { Engine, type TupleKey } from '../engine/index.ts';
import { REFERENCE_MODEL_DSL, type ReferenceDataset } from './baseline/dataset.ts';
import { createTestDatabase, type SqlBackend } from '../test/helpers/databases.ts';

export const round = (x: number, d = 2): number => Math.round(x * 10 ** d) / 10 ** d;
export const load = (): number[] => loadavg().map((x) => round(x));

/** A SqlStore on a fresh database, opened as the server opens its connection (server/compose/database.ts). */
export interface BenchDatabase {
  backend: SqlBackend;
  sequelize: Sequelize;
  store: SqlStore;
  close(): Promise<void>;
}

export async function openBenchDatabase(backend: SqlBackend, prefix: string): Promise<BenchDatabase> {
  const db = await createTestDatabase(backend, prefix);
  const sequelize = openSequelize(db.url, { logging: false, ...(backend === 'sqlite' ? { pool: { max: 1, min: 0 } } : { pool: { max: 8, min: 1 } }) });
  if (backend === 'sqlite') {
    await sequelize.query('PRAGMA journal_mode = WAL');
    await sequelize.query('PRAGMA busy_timeout = 5000');
  }
  const store = await SqlStore.open({ sequelize });
  return {
    backend,
    sequelize,
    store,
    close: async () => {
      await store.close();
      await sequelize.close();
      await db.drop();
    },
  };
}

export interface WriteFigures {
  api: string;
  tuples: number;
  seconds: number;
  tuples_per_s: number;
  /** Tuples per second in each tenth of the run (the table grows from empty to `tuples`). */
  tenths: number[];
  batch_ms: { p50: number; p99: number; max: number };
}

interface Side {
  api: string;
  write: (batch: TupleKey[]) => Promise<unknown>;
  ms: Float64Array;
}

function percentile(sorted: Float64Array, p: number): number {
  return sorted.length === 0 ? 0 : (sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] as number);
}

function batchesOf(ds: ReferenceDataset, size: number): TupleKey[][] {
  const out: TupleKey[][] = [];
  let pending: TupleKey[] = [];
  ds.forEachTuple((object, relation, user) => {
    pending.push({ object, relation, user });
    if (pending.length === size) {
      out.push(pending);
      pending = [];
    }
  });
  if (pending.length > 0) out.push(pending);
  return out;
}

/**
 * Writes every tuple of `ds` to both sides in `size`-tuple batches, in
 * alternation; returns each side's figures.
 */
async function writeAlternating(ds: ReferenceDataset, sides: Side[], size: number): Promise<WriteFigures[]> {
  const batches = batchesOf(ds, size);
  for (const s of sides) s.ms = new Float64Array(batches.length);
  for (let i = 0; i < batches.length; i++) {
    const order = i % 2 === 0 ? sides : [...sides].reverse();
    for (const s of order) {
      const t0 = performance.now();
      await s.write(batches[i]!);
      s.ms[i] = performance.now() - t0;
    }
  }
  const tenth = Math.ceil(batches.length / 10);
  return sides.map((s) => {
    const tenths: number[] = [];
    for (let from = 0; from < batches.length; from += tenth) {
      let ms = 0;
      let tuples = 0;
      for (let i = from; i < Math.min(batches.length, from + tenth); i++) {
        ms += s.ms[i]!;
        tuples += batches[i]!.length;
      }
      tenths.push(Math.round(tuples / (ms / 1000)));
    }
    const total = s.ms.reduce((a, b) => a + b, 0) / 1000;
    const sorted = Float64Array.from(s.ms).sort();
    return {
      api: s.api,
      tuples: ds.tupleCount,
      seconds: round(total),
      tuples_per_s: Math.round(ds.tupleCount / total),
      tenths,
      batch_ms: { p50: round(percentile(sorted, 50)), p99: round(percentile(sorted, 99)), max: round(sorted.at(-1) ?? 0) },
    };
  });
}

/**
 * `Engine.write` of every tuple of `ds` into an empty database of its own
 * while no other is written (the engine's database of the alternating run
 * stays open for the cold checks, idle: its checkpoint thread has nothing
 * left to copy once its log is back in the file). Read back before the
 * figures count.
 */
async function engineAlone(backend: SqlBackend, ds: ReferenceDataset): Promise<WriteFigures & { loadavg_before: number[]; loadavg_after: number[] }> {
  const db = await openBenchDatabase(backend, 'lk_p9_alone');
  try {
    const engine = new Engine({ store: db.store });
    await engine.writeModel({ dsl: REFERENCE_MODEL_DSL });
    const loadBefore = load();
    const [figures] = await writeAlternating(ds, [{ api: 'Engine.write, alone', write: (writes) => engine.write({ writes }), ms: new Float64Array() }], 100);
    const loadAfter = load();
    await verifyTuples(db.store, ds, `${backend} Engine.write alone`);
    return { ...figures!, loadavg_before: loadBefore, loadavg_after: loadAfter };
  } finally {
    await db.close();
  }
}

/** Throws unless `store` holds exactly the tuples of `ds` (a full scan). */
export async function verifyTuples(store: SqlStore, ds: ReferenceDataset, label: string): Promise<void> {
  const expected = new Set<string>();
  ds.forEachTuple((object, relation, user) => expected.add(`${object}\u0000${relation}\u0000${user}`));
  let n = 0;
  for await (const batch of store.scanTuples({ batchSize: 50_000 })) {
    for (const t of batch) {
      if (!expected.has(`${t.object}\u0000${t.relation}\u0000${t.user}`)) throw new Error(`${label}: unexpected tuple ${t.object}#${t.relation}@${t.user}`);
      n++;
    }
  }
  if (n !== expected.size) throw new Error(`${label}: ${n} tuples read back, ${expected.size} written`);
}

/**
 * P9 on one backend. Returns the figures and the database written through
 * the engine (loaded with the whole dataset, for the cold checks that
 * follow); the caller closes it.
 */
export async function writesScenario(backend: SqlBackend, ds: ReferenceDataset, log: (m: string) => void): Promise<{ figures: Record<string, unknown>; loaded: BenchDatabase }> {
  const viaEngine = await openBenchDatabase(backend, 'lk_p9_engine');
  const viaStore = await openBenchDatabase(backend, 'lk_p9_store');
  try {
    const engine = new Engine({ store: viaEngine.store });
    await engine.writeModel({ dsl: REFERENCE_MODEL_DSL });
    const loadBefore = load();
    const [e, s] = await writeAlternating(ds, [
      { api: 'Engine.write', write: (writes) => engine.write({ writes }), ms: new Float64Array() },
      { api: 'SqlStore.write (reference)', write: (writes) => viaStore.store.write([], writes), ms: new Float64Array() },
    ], 100);
    const loadAfter = load();
    await verifyTuples(viaEngine.store, ds, `${backend} Engine.write`);
    await verifyTuples(viaStore.store, ds, `${backend} SqlStore.write`);
    log(`${backend} writes: engine ${e!.tuples_per_s}/s, store ${s!.tuples_per_s}/s, every tuple read back`);
    await viaStore.close();
    const alone = await engineAlone(backend, ds);
    log(`${backend} writes: engine alone ${alone.tuples_per_s}/s, every tuple read back`);
    return {
      figures: {
        batch: 100,
        engine: e,
        store: s,
        engine_to_store: round(e!.tuples_per_s / s!.tuples_per_s),
        verified: 'every tuple read back from all three databases',
        loadavg_before: loadBefore,
        loadavg_after: loadAfter,
        engine_alone: alone,
      },
      loaded: viaEngine,
    };
  } catch (err) {
    await viaStore.close().catch(() => undefined);
    await viaEngine.close().catch(() => undefined);
    throw err;
  }
}
