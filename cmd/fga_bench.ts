/**
 * `latchkey fga bench FILE.fga.yaml`: the engine's speed on the file's own
 * model, with its tuples scaled up (`--scale N`: N renamed copies) or with
 * generated ones (`--generate N`), on the memory store or on SQLite /
 * PostgreSQL / MySQL (`--store URL`). Before timing anything, a sample of
 * Check answers is compared with the naive evaluation
 * (`@latchkey/engine/testing`'s `NaiveEvaluator`); a difference fails the
 * run. Then: Check cold (no answer cache) and warm (the server's chain with
 * its cache, second pass), BatchCheck, ListObjects and ListUsers, each with
 * its throughput and p50/p95/p99, and the heap the loaded store takes.
 * `--against OTHER` runs the same workload on a second model side by side;
 * `--json FILE` writes the figures for CI trend lines.
 *
 * Imports only engine/ index files (the SQL store is loaded only for a URL)
 * and node builtins.
 */
import { writeFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { buildEngine, Engine, MemoryStore, type AuthorizationModel, type TupleKey, type TupleStore } from '../engine/index.ts';
import { buildUniverse, NaiveEvaluator, sampleContexts } from '../engine/testing/index.ts';
import { DEFAULT_TIMING, timeOperation, type Timing, type TimingPolicy } from './fga_bench_timing.ts';

/** What to benchmark. */
export interface BenchOptions {
  /** Copies of the file's tuples (ids renamed per copy). Default 1. */
  scale?: number;
  /** Generate this many tuples instead of using the file's. */
  generate?: number;
  /** Ids per type of generated tuples. Default: enough for the tuple count. */
  idsPerType?: number;
  /** Check queries (BatchCheck uses them too; ListObjects and ListUsers a tenth, at most 100). Default 1000. */
  queries?: number;
  /** `sqlite:PATH`, `postgres://…`, `mysql://…`; default the memory store. */
  store?: string;
  seed?: number;
  /** Write the figures as JSON here. */
  json?: string;
  /**
   * The check queries, instead of generated ones (ListObjects and ListUsers
   * take a tenth of them): a given `expected` answer is verified before
   * timing, the others against the naive evaluation.
   */
  checks?: readonly BenchQuery[];
  /** Figures of an earlier run (`json`), of another engine version or commit, printed beside these. */
  baseline?: BenchFigures;
  /** With `baseline`: fail (status 1) when an operation's throughput is below the baseline's divided by this. */
  maxSlowdown?: number;
  /** Warm-up and timing lengths (cmd/fga_bench_timing.ts); default `DEFAULT_TIMING`. */
  timing?: Partial<TimingPolicy>;
}

/** One check query of the workload. */
export interface BenchQuery {
  user: string;
  relation: string;
  object: string;
  /** The request context (default: one sampled for the model's conditions). */
  context?: Record<string, unknown>;
  /** The answer it must get. */
  expected?: boolean;
}

/** What `json` holds. */
export interface BenchFigures {
  seed: number;
  tuples: number;
  queries: number;
  node: string;
  runs: RunFigures[];
}

// The heap figure is the growth of the V8 heap over loading the store: exact under `node --expose-gc`
// (a collection before each reading), an estimate otherwise.

export interface BenchModel {
  name: string;
  model: AuthorizationModel;
}

interface RunFigures {
  model: string;
  store: string;
  tuples: number;
  load_s: number;
  heap_mb: number;
  verified: { sampled: number; compared: number; undecided: number };
  operations: Record<string, Timing>;
}

/** A small, seeded generator (mulberry32): the same seed, the same workload. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const round = (x: number, d = 3): number => Math.round(x * 10 ** d) / 10 ** d;

/** `id` of copy `k` (copy 0 keeps the file's ids). */
function renamed(ref: string, k: number): string {
  if (k === 0 || ref.endsWith(':*')) return ref;
  const hash = ref.indexOf('#');
  const base = hash < 0 ? ref : ref.slice(0, hash);
  return `${base}_${k}${hash < 0 ? '' : ref.slice(hash)}`;
}

function scaled(tuples: readonly TupleKey[], scale: number): TupleKey[] {
  const out: TupleKey[] = [];
  for (let k = 0; k < scale; k++) for (const t of tuples) out.push({ ...t, object: renamed(t.object, k), user: renamed(t.user, k) });
  return out;
}

/**
 * `n` distinct tuples the model admits over `ids` ids per type: each draws a
 * type restriction, an object and a user at random, except that links
 * between objects of one type stay within blocks of 8 ids (half of them from
 * id i to i+1), so the graph is deep and cyclic without passing the
 * resolution depth.
 */
function generated(model: AuthorizationModel, n: number, ids: number, random: () => number): TupleKey[] {
  const templates: { type: string; relation: string; userType: string; userRelation?: string; wildcard: boolean; condition?: string }[] = [];
  for (const td of model.type_definitions ?? []) {
    for (const relation of Object.keys(td.relations ?? {})) {
      for (const r of td.metadata?.relations?.[relation]?.directly_related_user_types ?? []) {
        templates.push({ type: td.type, relation, userType: r.type, wildcard: r.wildcard !== undefined, ...(r.relation === undefined ? {} : { userRelation: r.relation }), ...(r.condition === undefined ? {} : { condition: r.condition }) });
      }
    }
  }
  if (templates.length === 0) return [];
  const contexts = new Map<string, Record<string, unknown>[]>();
  for (const [name, c] of Object.entries(model.conditions ?? {})) contexts.set(name, sampleContexts(c.parameters ?? {}, 64, Math.floor(random() * 2 ** 31)));
  const seen = new Set<string>();
  const out: TupleKey[] = [];
  const pick = (k: number): number => Math.floor(random() * k);
  for (let attempts = 0; out.length < n && attempts < n * 20; attempts++) {
    const t = templates[pick(templates.length)]!;
    const o = pick(ids);
    let u = pick(ids);
    // Links between objects of one type stay within blocks of 8 ids, half of them along the chain i → i+1:
    // deep graphs whose reach from any object stays bounded (a random graph of a million links would
    // make every check walk most of it, which no real store does).
    if (t.userType === t.type && !t.wildcard) u = random() < 0.5 && o % 8 !== 7 ? o + 1 : o - (o % 8) + pick(8);
    if (u >= ids) u = pick(ids);
    const object = `${t.type}:${o}`;
    const user = t.wildcard ? `${t.userType}:*` : `${t.userType}:${u}${t.userRelation === undefined ? '' : `#${t.userRelation}`}`;
    const key = `${object}#${t.relation}@${user}`;
    if (seen.has(key)) continue;
    seen.add(key);
    const tuple: TupleKey = { object, relation: t.relation, user };
    if (t.condition !== undefined) {
      const pool = contexts.get(t.condition) ?? [{}];
      tuple.condition = { name: t.condition, context: pool[pick(pool.length)]! };
    }
    out.push(tuple);
  }
  return out;
}

type Query = BenchQuery;

/** Check queries: half about the objects and users of random tuples (many allowed), half at random among the ids seen. */
function queriesFor(model: AuthorizationModel, tuples: readonly TupleKey[], count: number, random: () => number): Query[] {
  const userTypes = new Set(buildUniverse(model, { idsPerType: 1 }).users.map((u) => u.slice(0, u.indexOf(':'))));
  const objectsByType = new Map<string, string[]>();
  const users: string[] = [];
  for (const t of tuples) {
    const type = t.object.slice(0, t.object.indexOf(':'));
    const list = objectsByType.get(type) ?? [];
    list.push(t.object);
    objectsByType.set(type, list);
    if (!t.user.includes('#') && !t.user.endsWith(':*') && userTypes.has(t.user.slice(0, t.user.indexOf(':')))) users.push(t.user);
  }
  const relations = (model.type_definitions ?? []).filter((td) => objectsByType.has(td.type)).flatMap((td) => Object.keys(td.relations ?? {}).map((r) => ({ type: td.type, relation: r })));
  if (relations.length === 0 || users.length === 0) return [];
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)]!;
  const out: Query[] = [];
  for (let i = 0; i < count; i++) {
    if (i % 2 === 0) {
      const t = pick(tuples);
      const type = t.object.slice(0, t.object.indexOf(':'));
      const rels = relations.filter((r) => r.type === type);
      if (rels.length > 0) {
        out.push({ user: pick(users), relation: pick(rels).relation, object: t.object });
        continue;
      }
    }
    const r = pick(relations);
    out.push({ user: pick(users), relation: r.relation, object: pick(objectsByType.get(r.type)!) });
  }
  return out;
}

interface OpenedStore {
  store: TupleStore;
  kind: string;
  close(): Promise<void>;
}

async function openStore(url: string | undefined, label: string): Promise<OpenedStore> {
  if (url === undefined) return { store: new MemoryStore(), kind: 'memory', close: async () => undefined };
  const { SqlStore, openSequelize } = await import('../engine/sql/index.ts');
  const sequelize = openSequelize(url, { logging: false });
  const base = await SqlStore.open({ sequelize });
  // A store of its own, so a database with data in it is left as it was.
  const record = await new Engine({ store: base }).createStore({ name: `fga bench ${label} ${Date.now()}` });
  const store = base.catalog().store(record.id);
  return {
    store,
    kind: url.slice(0, url.indexOf(':')),
    close: async () => {
      await base.catalog().deleteStore(record.id);
      await sequelize.close();
    },
  };
}

async function benchOne(m: BenchModel, tuples: readonly TupleKey[], queries: readonly Query[], context: Record<string, unknown>, options: BenchOptions, out: (s: string) => void): Promise<RunFigures> {
  const opened = await openStore(options.store, m.name);
  try {
    // With `node --expose-gc`, a collection before each reading makes the heap figure the store's alone.
    const gc = (globalThis as { gc?: () => void }).gc;
    gc?.();
    const heapBefore = process.memoryUsage().heapUsed;
    const loadStart = performance.now();
    const loader = new Engine({ store: opened.store, maxTuplesPerWrite: 10_000 });
    await loader.writeModel(m.model);
    const admitted: TupleKey[] = [];
    for (let i = 0; i < tuples.length; i += 10_000) {
      const batch = tuples.slice(i, i + 10_000);
      try {
        await loader.write({ writes: batch });
        admitted.push(...batch);
      } catch {
        // A tuple this model does not admit (the other model's, with --against): written one by one, the refused left out.
        for (const t of batch) await loader.write({ writes: [t] }).then(() => admitted.push(t), () => undefined);
      }
    }
    const loadS = (performance.now() - loadStart) / 1000;
    gc?.();
    const heapMb = round((process.memoryUsage().heapUsed - heapBefore) / 2 ** 20, 1);
    const withContext = Object.keys(context).length > 0 ? { context } : {};
    const request = (q: Query) => ({ user: q.user, relation: q.relation, object: q.object, ...(q.context === undefined ? withContext : { context: q.context }) });

    const cold = (await buildEngine({ store: opened.store, cacheSize: 0, mirror: false, listObjectsMaxResults: 100_000, listUsersMaxResults: 100_000, maxChecksPerBatch: 1000 })).engine;
    // Verify before timing: a sample of answers against the naive evaluation of the same tuples.
    const naive = new NaiveEvaluator(m.model, admitted);
    const sample = queries.slice(0, Math.min(200, queries.length));
    let compared = 0;
    for (const q of sample) {
      const expected = q.expected ?? (q.context === undefined ? naive.check(q.user, q.relation, q.object) : undefined);
      if (expected === undefined) continue;
      const { allowed } = await cold.check(request(q));
      if (allowed !== expected) throw new Error(`model ${m.name}: check ${q.user} ${q.relation} ${q.object} is ${allowed}, ${q.expected === undefined ? 'the naive evaluation says' : 'expected'} ${expected}; nothing was timed`);
      compared++;
    }
    const by = sample.some((q) => q.expected !== undefined) ? 'against their expected answers or the naive evaluation' : 'against the naive evaluation';
    out(`${m.name}: ${opened.kind} store, ${admitted.length} tuples loaded in ${round(loadS, 2)} s (heap +${heapMb} MB); ${compared} of ${sample.length} sampled answers verified ${by} (${sample.length - compared} it cannot decide: conditions or cycles under an exclusion)\n`);

    const operations: Record<string, Timing> = {};
    const errors = { count: 0 };
    const policy = { ...DEFAULT_TIMING, ...options.timing };
    const time = (n: number, op: (i: number) => Promise<unknown>): Promise<Timing> => timeOperation(n, op, errors, policy);
    const check = (engine: Engine) => (i: number) => engine.check(request(queries[i]!));
    // Cold: the engine keeps no answers, so the warm-up warms only the compiled code. Warm: its first pass fills the cache.
    operations['check_cold'] = await time(queries.length, check(cold));
    const warmBuilt = await buildEngine({ store: opened.store, listObjectsMaxResults: 100_000, listUsersMaxResults: 100_000 });
    operations['check_warm'] = await time(queries.length, check(warmBuilt.engine));
    const batches = Math.max(1, Math.floor(queries.length / 50));
    const batch = await time(batches, (b) => cold.batchCheck(queries.slice(b * 50, b * 50 + 50).map(request)));
    operations['batch_check_50'] = { ...batch, ops_per_s: round(batch.ops_per_s * 50, 1) };
    const lists = queries.slice(0, Math.min(100, Math.max(1, Math.floor(queries.length / 10))));
    operations['list_objects'] = await time(lists.length, (i) => {
      const q = lists[i]!;
      return cold.listObjects({ user: q.user, relation: q.relation, type: q.object.slice(0, q.object.indexOf(':')), ...(q.context === undefined ? withContext : { context: q.context }) });
    });
    operations['list_users'] = await time(lists.length, (i) => {
      const q = lists[i]!;
      return cold.listUsers({ object: q.object, relation: q.relation, userFilters: [{ type: q.user.slice(0, q.user.indexOf(':')) }], ...(q.context === undefined ? withContext : { context: q.context }) });
    });
    if (errors.count > 0) out(`${m.name}: ${errors.count} queries failed with an error (timed all the same)\n`);
    return { model: m.name, store: opened.kind, tuples: admitted.length, load_s: round(loadS, 2), heap_mb: heapMb, verified: { sampled: sample.length, compared, undecided: sample.length - compared }, operations };
  } finally {
    await opened.close();
  }
}

function table(runs: readonly RunFigures[]): string {
  const ops = Object.keys(runs[0]?.operations ?? {});
  const head = ['operation', ...runs.flatMap((r) => [`${r.model} ops/s`, 'p50 ms', 'p95 ms', 'p99 ms'])];
  const rows = ops.map((op) => [op, ...runs.flatMap((r) => {
    const t = r.operations[op]!;
    return [String(t.ops_per_s), String(t.p50_ms), String(t.p95_ms), String(t.p99_ms)];
  })]);
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]): string => cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
  return `${[line(head), ...rows.map(line)].join('\n')}\n`;
}

/**
 * Runs the benchmark of `main` (and `against`, on the same tuples and
 * queries); resolves to the exit status: 0, or 1 when an answer differs
 * from the naive evaluation or the run fails.
 */
export async function runBench(main: BenchModel, fileTuples: readonly TupleKey[], against: BenchModel | undefined, options: BenchOptions, out: (s: string) => void, err: (s: string) => void): Promise<number> {
  const seed = options.seed ?? 1;
  const random = prng(seed);
  let tuples: TupleKey[];
  if (options.generate !== undefined) {
    const relations = (main.model.type_definitions ?? []).reduce((n, td) => n + Object.keys(td.relations ?? {}).length, 0);
    const ids = options.idsPerType ?? Math.max(3, Math.ceil(options.generate / Math.max(1, relations) / 3));
    tuples = generated(main.model, options.generate, ids, random);
  } else {
    tuples = scaled(fileTuples, options.scale ?? 1);
  }
  if (tuples.length === 0) {
    err('latchkey fga bench: no tuples to benchmark on (the file has none: give --generate N)\n');
    return 1;
  }
  const queries = options.checks !== undefined ? [...options.checks] : queriesFor(main.model, tuples, options.queries ?? 1000, random);
  if (queries.length === 0) {
    err('latchkey fga bench: the tuples name no user to ask about\n');
    return 1;
  }
  const context = sampleContexts(buildUniverse(main.model, { idsPerType: 1 }).requestParameters, 1, seed)[0] ?? {};
  out(`${tuples.length} tuples (${options.generate === undefined ? `the file's × ${options.scale ?? 1}` : `generated, seed ${seed}`}), ${queries.length} check queries\n`);
  const runs: RunFigures[] = [];
  try {
    runs.push(await benchOne(main, tuples, queries, context, options, out));
    if (against !== undefined) runs.push(await benchOne(against, tuples, queries, context, options, out));
  } catch (e) {
    err(`latchkey fga bench: ${e instanceof Error ? e.message : String(e)}\n`);
    return 1;
  }
  const figures: BenchFigures = { seed, tuples: tuples.length, queries: queries.length, node: process.version, runs };
  if (options.json !== undefined) writeFileSync(options.json, `${JSON.stringify(figures, null, 2)}\n`);
  if (options.baseline === undefined) {
    out(table(runs));
    return 0;
  }
  return compareWithBaseline(figures, options.baseline, options.maxSlowdown, out, err);
}

/**
 * Prints each run beside the baseline's run of the same model and store,
 * with the throughput ratio; resolves to 1 when the workloads differ (the
 * figures would not be comparable) or, with `maxSlowdown`, when an operation
 * is slower than the baseline by more than that factor.
 */
function compareWithBaseline(now: BenchFigures, base: BenchFigures, maxSlowdown: number | undefined, out: (s: string) => void, err: (s: string) => void): number {
  const differs = (['seed', 'tuples', 'queries'] as const).filter((k) => now[k] !== base[k]);
  if (differs.length > 0) {
    err(`latchkey fga bench: the baseline ran another workload (${differs.map((k) => `${k} ${base[k]}, now ${now[k]}`).join('; ')}): run both with the same file and options\n`);
    return 1;
  }
  let status = 0;
  for (const run of now.runs) {
    const before = base.runs.find((r) => r.model === run.model && r.store === run.store);
    if (before === undefined) {
      err(`latchkey fga bench: the baseline has no run of ${run.model} on the ${run.store} store\n`);
      return 1;
    }
    const head = ['operation', 'baseline ops/s', 'p50 ms', 'p99 ms', 'now ops/s', 'p50 ms', 'p99 ms', 'ratio'];
    const rows = Object.keys(run.operations).map((op) => {
      const a = before.operations[op];
      const b = run.operations[op]!;
      const ratio = a === undefined ? undefined : b.ops_per_s / Math.max(a.ops_per_s, 1e-9);
      if (ratio !== undefined && maxSlowdown !== undefined && ratio < 1 / maxSlowdown) {
        err(`latchkey fga bench: ${run.model} ${op} is ${round(1 / ratio, 2)}× slower than the baseline (at most ${maxSlowdown}× allowed)\n`);
        status = 1;
      }
      return [op, a === undefined ? '-' : String(a.ops_per_s), a === undefined ? '-' : String(a.p50_ms), a === undefined ? '-' : String(a.p99_ms), String(b.ops_per_s), String(b.p50_ms), String(b.p99_ms), ratio === undefined ? '-' : `${round(ratio, 2)}×`];
    });
    const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
    const line = (cells: string[]): string => cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
    out(`${run.model} on the ${run.store} store: baseline (Node.js ${base.node}) and now (Node.js ${now.node})\n${[line(head), ...rows.map(line)].join('\n')}\n`);
  }
  return status;
}
