/**
 * Paged ListObjects at one million tuples (issue 31): the first page of 100
 * and the full walk of 100,000 visible objects, against the capped
 * ListObjects (1,000 results) it replaces, on the memory store.
 *
 * The data: 250,000 documents; user `star` may view 100,000 of them (every
 * document whose number is 0 or 2 modulo 5: directly, as owner, or through
 * a group), the rest are viewed by 20,000 other users; every document has a
 * parent folder (viewed by other users), so Check walks `viewer from
 * parent` too; about 1.0 M tuples in all. The first page and the full walk
 * are verified against the generator before anything is timed.
 *
 * Figures: the first page (p50, p95, p99 over repeated first pages from a
 * warm engine, each pinned to the current revision); the full walk in pages
 * of 100 and of 1,000 (time per object); the capped ListObjects (time per
 * object returned); the whole-walk first page of before (the walk computed
 * whole, then cut) for reference. The load average is reported with them
 * (the machine is shared).
 *
 * Standalone: `node bench/list_pages.ts [--quick]`; `run({ quick })` is the
 * `npm run bench list_pages` entry point. `--quick` is a tenth of the data.
 */
import { loadavg } from 'node:os';
import { Engine, MemoryStore, type TupleKey } from '../engine/index.ts';

const MODEL = `model
  schema 1.1
type user
type group
  relations
    define member: [user]
type folder
  relations
    define viewer: [user, group#member]
type doc
  relations
    define parent: [folder]
    define owner: [user]
    define viewer: [user, group#member] or owner or viewer from parent
`;

const round = (x: number, d = 2): number => Math.round(x * 10 ** d) / 10 ** d;
const log = (msg: string): void => {
  process.stderr.write(`[list_pages bench ${new Date().toISOString().slice(11, 19)}] ${msg}\n`);
};
function percentile(xs: readonly number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? 0;
}
const median = (xs: readonly number[]): number => percentile(xs, 50);

/** A small deterministic generator (mulberry32), so every run builds the same data. */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

interface Data {
  tuples: TupleKey[];
  visible: string[];
}

function generate(scale: number): Data {
  const docs = Math.round(250_000 * scale);
  const others = Math.round(20_000 * scale);
  const folders = Math.max(1, Math.round(1000 * scale));
  const random = rng(31);
  const tuples: TupleKey[] = [{ user: 'user:star', relation: 'member', object: 'group:g0' }];
  const visible: string[] = [];
  const other = (): string => `user:o${Math.floor(random() * others)}`;
  for (let f = 0; f < folders; f++) tuples.push({ user: other(), relation: 'viewer', object: `folder:f${f}` }, { user: other(), relation: 'viewer', object: `folder:f${f}` });
  for (let i = 0; i < docs; i++) {
    const object = `doc:${String(i).padStart(6, '0')}`;
    tuples.push({ user: `folder:f${i % folders}`, relation: 'parent', object });
    if (i % 5 === 0) tuples.push({ user: 'user:star', relation: 'viewer', object });
    else if (i % 10 === 2) tuples.push({ user: 'user:star', relation: 'owner', object });
    else if (i % 10 === 7) tuples.push({ user: 'group:g0#member', relation: 'viewer', object });
    if (i % 5 === 0 || i % 5 === 2) visible.push(object);
    // Other viewers: 2 or 3 per document.
    const n = 2 + (random() < 0.6 ? 1 : 0);
    const seen = new Set<string>();
    for (let k = 0; k < n; k++) {
      const u = other();
      if (seen.has(u)) continue;
      seen.add(u);
      tuples.push({ user: u, relation: 'viewer', object });
    }
  }
  return { tuples, visible };
}

async function walkAll(engine: Engine, pageSize: number): Promise<{ objects: string[]; pages: number }> {
  const objects: string[] = [];
  let token = '';
  let pages = 0;
  do {
    const p = await engine.listObjectsPage({ user: 'user:star', relation: 'viewer', type: 'doc' }, { pageSize, continuationToken: token });
    for (const o of p.objects) objects.push(o);
    token = p.continuationToken;
    pages++;
  } while (token !== '');
  return { objects, pages };
}

function same(got: readonly string[], want: readonly string[], what: string): void {
  if (got.length !== want.length) throw new Error(`${what}: ${got.length} results, expected ${want.length}`);
  for (let i = 0; i < got.length; i++) if (got[i] !== want[i]) throw new Error(`${what}: result ${i} is ${got[i]}, expected ${want[i]}`);
}

export async function run(options: { quick: boolean }): Promise<object> {
  const scale = options.quick ? 0.1 : 1;
  const data = generate(scale);
  log(`${data.tuples.length} tuples, ${data.visible.length} visible; load average ${loadavg().map((x) => x.toFixed(2)).join(' ')}`);
  const store = new MemoryStore();
  const engine = new Engine({ store });
  await engine.writeModel({ dsl: MODEL });
  for (let i = 0; i < data.tuples.length; i += 10_000) await store.write([], data.tuples.slice(i, i + 10_000));
  const q = { user: 'user:star', relation: 'viewer', type: 'doc' };

  // Verify before timing: the first page, the capped list, the full walk.
  let t0 = performance.now();
  const first = await engine.listObjectsPage(q, { pageSize: 100 });
  const firstEver = performance.now() - t0;
  same(first.objects, data.visible.slice(0, 100), 'first page');
  const capped = await engine.listObjects(q);
  same(capped.objects, data.visible.slice(0, 1000), 'capped list');
  if (!capped.truncated) throw new Error('the capped list should be truncated');
  same((await walkAll(engine, 100)).objects, data.visible, 'full walk (pages of 100)');
  log(`verified; the first page ever (the store's id index built) took ${firstEver.toFixed(1)} ms`);

  const loadBefore = loadavg().map((x) => round(x));
  const rounds = options.quick ? 50 : 200;
  const firstPage: number[] = [];
  for (let i = 0; i < rounds; i++) {
    t0 = performance.now();
    await engine.listObjectsPage(q, { pageSize: 100 });
    firstPage.push(performance.now() - t0);
  }
  const cappedMs: number[] = [];
  for (let i = 0; i < (options.quick ? 5 : 15); i++) {
    t0 = performance.now();
    await engine.listObjects(q);
    cappedMs.push(performance.now() - t0);
  }
  const walk100: number[] = [];
  const walk1000: number[] = [];
  for (let i = 0; i < 3; i++) {
    t0 = performance.now();
    await walkAll(engine, 100);
    walk100.push(performance.now() - t0);
    t0 = performance.now();
    await walkAll(engine, 1000);
    walk1000.push(performance.now() - t0);
  }
  // Before: a first page that computes the whole walk (as every first page did), here forced by reporting undecided objects.
  // A write between rounds moves the revision, so the walk cache never answers.
  const wholeFirst: number[] = [];
  for (let i = 0; i < (options.quick ? 3 : 5); i++) {
    await store.write([], [{ user: `user:w${i}`, relation: 'viewer', object: 'folder:unused' }]);
    t0 = performance.now();
    const p = await engine.listObjectsPage({ ...q, reportUndecided: true }, { pageSize: 100 });
    wholeFirst.push(performance.now() - t0);
    same(p.objects, data.visible.slice(0, 100), 'whole-walk first page');
  }
  const n = data.visible.length;
  const figures = {
    tuples: data.tuples.length,
    visible: n,
    first_page_100_ms: { p50: round(percentile(firstPage, 50)), p95: round(percentile(firstPage, 95)), p99: round(percentile(firstPage, 99)), n: firstPage.length },
    first_page_ever_ms: round(firstEver),
    full_walk_pages_of_100: { ms: round(median(walk100)), us_per_object: round((median(walk100) * 1000) / n) },
    full_walk_pages_of_1000: { ms: round(median(walk1000)), us_per_object: round((median(walk1000) * 1000) / n) },
    capped_list_1000: { ms_p50: round(median(cappedMs)), us_per_object: round((median(cappedMs) * 1000) / 1000) },
    whole_walk_first_page_ms_p50: round(median(wholeFirst)),
    loadavg_before: loadBefore,
    loadavg_after: loadavg().map((x) => round(x)),
    node: process.version,
  };
  await store.close();
  return figures;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  process.stdout.write(`${JSON.stringify(await run({ quick: process.argv.includes('--quick') }))}\n`);
}
