/**
 * ListObjects and ListUsers benchmark (issue 5, target P5) over the reference
 * dataset of performance-anchors §2.3 on the memory store.
 *
 * - ListObjects `document#viewer` for users with 10–15 k visible documents
 *   (the cap raised above the result count), p50 / p99 over repeated runs;
 * - ListObjects for users with no tuples at all;
 * - cost per result at two scales (proportional to the results, never to
 *   the number of documents);
 * - ListUsers `document#viewer` for random documents.
 *
 * Every answer is verified against the generator's own expectation before
 * anything is timed; a wrong answer fails the run. The load average is
 * reported with the figures (the machine is shared).
 *
 * Standalone: `node --expose-gc bench/list_objects.ts [--quick] [--scales 1,0.3]`.
 * `run({ quick })` is the `npm run bench` entry point.
 */
import { loadavg } from 'node:os';
import { ReferenceDataset, REFERENCE_MODEL_DSL, writeDataset } from './baseline/dataset.ts';
import { Engine, MemoryStore } from '../engine/index.ts';

type Figures = Record<string, unknown>;

const round = (x: number, d = 2): number => Math.round(x * 10 ** d) / 10 ** d;
const log = (msg: string): void => {
  process.stderr.write(`[list bench ${new Date().toISOString().slice(11, 19)}] ${msg}\n`);
};

function percentile(xs: readonly number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? 0;
}

async function load(ds: ReferenceDataset): Promise<Engine> {
  const store = new MemoryStore();
  const engine = new Engine({ store, listObjectsMaxResults: 100_000, listUsersMaxResults: 100_000 });
  await engine.writeModel({ dsl: REFERENCE_MODEL_DSL });
  await writeDataset(store, ds, 10_000);
  return engine;
}

/** The documents user `u` may view, from the generator's structures. */
function expectedDocuments(ds: ReferenceDataset, u: number): Set<string> {
  const groups = ds.groupsOf(u);
  const out = new Set<string>();
  for (let d = 0; d < ds.documents; d++) if (ds.expectedViewer(u, d, groups)) out.add(ds.documentId(d));
  return out;
}

function sameSorted(got: readonly string[], expected: Set<string>): boolean {
  if (got.length !== expected.size) return false;
  for (let i = 0; i < got.length; i++) {
    if (!expected.has(got[i]!)) return false;
    if (i > 0 && got[i - 1]! >= got[i]!) return false;
  }
  return true;
}

/**
 * The yardstick of performance-anchors §2.3: a plain reverse expansion over
 * `Map<"relation@subject", object[]>` written for this one model (user →
 * groups → folders → descendant folders → documents), sorted output.
 */
export class NaiveReverse {
  readonly #rev = new Map<string, string[]>();
  constructor(ds: ReferenceDataset) {
    ds.forEachTuple((object, relation, user) => {
      const k = `${relation}@${user}`;
      const l = this.#rev.get(k);
      if (l === undefined) this.#rev.set(k, [object]);
      else l.push(object);
    });
  }
  #get(k: string): readonly string[] {
    return this.#rev.get(k) ?? [];
  }
  documents(user: string): string[] {
    const groups = new Set<string>();
    const queue = [...this.#get(`member@${user}`)];
    while (queue.length > 0) {
      const g = queue.pop()!;
      if (groups.has(g)) continue;
      groups.add(g);
      queue.push(...this.#get(`member@${g}#member`));
    }
    const folders = new Set<string>();
    const fq = [...this.#get(`viewer@${user}`).filter((o) => o.startsWith('folder:'))];
    for (const g of groups) fq.push(...this.#get(`viewer@${g}#member`));
    while (fq.length > 0) {
      const f = fq.pop()!;
      if (folders.has(f)) continue;
      folders.add(f);
      for (const o of this.#get(`parent@${f}`)) if (o.startsWith('folder:')) fq.push(o);
    }
    const docs = new Set<string>();
    for (const o of this.#get(`viewer@${user}`)) if (o.startsWith('document:')) docs.add(o);
    for (const f of folders) for (const o of this.#get(`parent@${f}`)) if (o.startsWith('document:')) docs.add(o);
    return [...docs].sort();
  }
}

async function scaleBench(scale: number, quick: boolean): Promise<Figures> {
  const ds = new ReferenceDataset(scale);
  log(`scale ${scale}: ${ds.tupleCount} tuples, loading`);
  const engine = await load(ds);
  // Users whose answer has 10–15 k documents at scale 1 (proportionally fewer at other scales).
  const lo = 10_000 * scale;
  const hi = 15_000 * scale;
  const picked: { user: string; expected: Set<string> }[] = [];
  const wanted = quick ? 4 : 12;
  for (let i = 0; picked.length < wanted && i < 400; i++) {
    const u = (i * 7919 + 13) % ds.users;
    const expected = expectedDocuments(ds, u);
    if (expected.size >= lo && expected.size <= hi) picked.push({ user: ds.userId(u), expected });
  }
  if (picked.length === 0) throw new Error(`no user with ${lo}-${hi} documents at scale ${scale}`);
  // Verify every answer before timing.
  for (const p of picked) {
    const r = await engine.listObjects({ user: p.user, relation: 'viewer', type: 'document' });
    if (r.truncated || !sameSorted(r.objects, p.expected)) {
      throw new Error(`list objects: wrong answer for ${p.user}: ${r.objects.length} results, ${p.expected.size} expected`);
    }
  }
  const naive = new NaiveReverse(ds);
  for (const p of picked) if (!sameSorted(naive.documents(p.user), p.expected)) throw new Error(`naive reverse expansion: wrong answer for ${p.user}`);
  const reps = quick ? 3 : 8;
  const times: number[] = [];
  const naiveTimes: number[] = [];
  let results = 0;
  const load0 = loadavg()[0]!;
  // Engine and yardstick alternate, user by user, so both see the same load.
  for (let rep = 0; rep < reps; rep++) {
    for (const p of picked) {
      let t0 = performance.now();
      const r = await engine.listObjects({ user: p.user, relation: 'viewer', type: 'document' });
      times.push(performance.now() - t0);
      results += r.objects.length;
      t0 = performance.now();
      naive.documents(p.user);
      naiveTimes.push(performance.now() - t0);
    }
  }
  const none: number[] = [];
  for (let i = 0; i < (quick ? 50 : 500); i++) {
    const t0 = performance.now();
    const r = await engine.listObjects({ user: `user:nobody${i}`, relation: 'viewer', type: 'document' });
    none.push(performance.now() - t0);
    if (r.objects.length !== 0) throw new Error('list objects: a user with no tuples sees documents');
  }
  // ListUsers: every returned user must be a viewer by the generator.
  const lu: number[] = [];
  let luResults = 0;
  for (let i = 0; i < (quick ? 5 : 40); i++) {
    const d = (i * 104_729) % ds.documents;
    const t0 = performance.now();
    const r = await engine.listUsers({ object: ds.documentId(d), relation: 'viewer', userFilters: [{ type: 'user' }] });
    lu.push(performance.now() - t0);
    luResults += r.users.length;
    for (const x of r.users) {
      const m = /^user:u(\d+)$/u.exec(x);
      const ok = m !== null ? ds.expectedViewer(Number(m[1]), d) : x.startsWith('user:deep');
      if (!ok) throw new Error(`list users: ${x} cannot view ${ds.documentId(d)}`);
    }
  }
  const total = times.reduce((a, b) => a + b, 0);
  return {
    tuples: ds.tupleCount,
    documents: ds.documents,
    list_objects: {
      users: picked.length,
      runs: times.length,
      results_min: Math.min(...picked.map((p) => p.expected.size)),
      results_max: Math.max(...picked.map((p) => p.expected.size)),
      p50_ms: round(percentile(times, 50)),
      p99_ms: round(percentile(times, 99)),
      max_ms: round(Math.max(...times)),
      us_per_result: round((total * 1000) / results, 3),
      naive_reverse_p50_ms: round(percentile(naiveTimes, 50)),
      naive_reverse_p99_ms: round(percentile(naiveTimes, 99)),
      p50_vs_naive: round(percentile(times, 50) / percentile(naiveTimes, 50)),
    },
    list_objects_no_tuples: { runs: none.length, p50_ms: round(percentile(none, 50), 4), p99_ms: round(percentile(none, 99), 4) },
    list_users: { runs: lu.length, mean_results: round(luResults / lu.length, 1), p50_ms: round(percentile(lu, 50), 3), p99_ms: round(percentile(lu, 99), 3) },
    load_average_1m: [round(load0), round(loadavg()[0]!)],
  };
}

/** Runs the benchmark at each scale (default 1 and 0.3). */
export async function run(options: { quick: boolean; scales?: number[] }): Promise<Figures> {
  const out: Figures = { node: process.version };
  for (const scale of options.scales ?? [1, 0.3]) {
    out[`scale_${scale}`] = await scaleBench(scale, options.quick);
    (globalThis as { gc?: () => void }).gc?.();
  }
  return out;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const args = process.argv.slice(2);
  const i = args.indexOf('--scales');
  const scales = i >= 0 ? args[i + 1]!.split(',').map(Number) : undefined;
  const figures = await run(scales === undefined ? { quick: args.includes('--quick') } : { quick: args.includes('--quick'), scales });
  process.stdout.write(`${JSON.stringify(figures, null, 2)}\n`);
}
