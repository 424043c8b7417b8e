/**
 * Start-up benchmark (targets P7, P8): a fresh process opens a SQLite file
 * holding the reference dataset, loads the graph mirror from it and answers
 * its first checks; it reports the time to serving and its memory, at that
 * moment, at its peak (the process's maximum RSS so far, the load's high
 * mark) and settled (after a full collection and a second idle).
 *
 *   node bench/check_start.ts [--scale 1]
 *
 * The parent builds the SQLite file once (in a temp directory), then runs the
 * child three times and reports the medians.
 */
import { execFileSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Sequelize } from 'sequelize';
import { sqliteSequelize } from '../engine/sql/sqlite_sequelize.ts';
import { ReferenceDataset, REFERENCE_MODEL_DSL, writeDataset } from './baseline/dataset.ts';
import { buildQueries } from './baseline/queries.ts';
import { Engine, GraphMirror } from '../engine/index.ts';
import { SqlStore } from '../engine/sql/index.ts';

const here = fileURLToPath(import.meta.url);

async function open(file: string): Promise<{ sequelize: Sequelize; store: SqlStore }> {
  const sequelize = sqliteSequelize(file, { logging: false, pool: { max: 1, min: 0 } });
  await sequelize.query('PRAGMA journal_mode = WAL');
  await sequelize.query('PRAGMA synchronous = NORMAL');
  return { sequelize, store: await SqlStore.open({ sequelize, batchSize: 1000 }) };
}

async function child(file: string, scale: number): Promise<void> {
  const t0 = performance.now();
  const { sequelize, store } = await open(file);
  const mirror = await GraphMirror.load({ store });
  const engine = new Engine({ store: mirror.store, resolver: mirror.resolver() });
  const ds = new ReferenceDataset(scale);
  const qs = buildQueries(ds, 'deep5', 100);
  for (const q of qs) if ((await engine.check(q)).allowed !== q.expected) throw new Error('wrong answer');
  const servingS = (performance.now() - t0) / 1000;
  const m = process.memoryUsage();
  // Steady state: the load's garbage collected (the child runs with --expose-gc) and a second idle.
  (globalThis as { gc?: () => void }).gc?.();
  await new Promise((r) => setTimeout(r, 1000));
  const settled = process.memoryUsage();
  const peakRss = process.resourceUsage().maxRSS * 1024;
  process.stdout.write(
    `${JSON.stringify({
      serving_s: servingS,
      mirror_load_s: mirror.stats().loadMs / 1000,
      rss_mib: m.rss / 2 ** 20,
      peak_rss_mib: peakRss / 2 ** 20,
      heap_mib: m.heapUsed / 2 ** 20,
      settled_rss_mib: settled.rss / 2 ** 20,
      settled_heap_mib: settled.heapUsed / 2 ** 20,
      settled_external_mib: settled.external / 2 ** 20,
      tuples: mirror.stats().tuples,
    })}\n`,
  );
  await sequelize.close();
}

/** Builds the SQLite file and measures three fresh processes; returns the medians. */
export async function run(options: { quick: boolean; scale?: number }): Promise<object> {
  const scale = options.scale ?? (options.quick ? 0.3 : 1);
  const dir = await mkdtemp(join(tmpdir(), 'lk-start-'));
  const file = join(dir, 'fga.sqlite');
  try {
    const ds = new ReferenceDataset(scale);
    const { sequelize, store } = await open(file);
    const engine = new Engine({ store });
    await engine.writeModel({ dsl: REFERENCE_MODEL_DSL });
    const loadS = await writeDataset(store, ds, 10_000);
    await sequelize.close();
    const runs: Array<Record<string, number>> = [];
    for (let i = 0; i < 3; i++) {
      const out = execFileSync(process.execPath, ['--expose-gc', here, '--child', file, String(scale)], { encoding: 'utf8', maxBuffer: 1 << 20 });
      runs.push(JSON.parse(out.trim().split('\n').at(-1) as string) as Record<string, number>);
    }
    const med = (k: string): number => {
      const xs = runs.map((r) => r[k] as number).sort((a, b) => a - b);
      return Math.round((xs[1] as number) * 100) / 100;
    };
    return { tuples: ds.tupleCount, sqlite_load_s: Math.round(loadS * 10) / 10, serving_s: med('serving_s'), mirror_load_s: med('mirror_load_s'), rss_mib: med('rss_mib'), peak_rss_mib: med('peak_rss_mib'), heap_mib: med('heap_mib'), settled_rss_mib: med('settled_rss_mib'), settled_heap_mib: med('settled_heap_mib'), settled_external_mib: med('settled_external_mib') };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

if (process.argv[1] === here) {
  const args = process.argv.slice(2);
  if (args[0] === '--child') {
    await child(args[1] as string, Number(args[2]));
  } else {
    const i = args.indexOf('--scale');
    const figures = await run({ quick: args.includes('--quick'), ...(i >= 0 ? { scale: Number(args[i + 1]) } : {}) });
    process.stdout.write(`${JSON.stringify(figures, null, 2)}\n`);
  }
}
