/**
 * Checks of an exclusion and an intersection, and ListObjects, on the
 * server's FGA stack over SQLite: before (the level-at-a-time checker and
 * ListObjects reading the SQL store, as the server ran them behind the
 * mirror until the mirror offered synchronous reads) against after (the
 * synchronous evaluator and reverse reads over the mirror). Answers are
 * compared first; timings are sequential requests in the same process and
 * run, so the ratio is what to read on a shared machine.
 *
 *   node bench/mirror_sync.ts [groups=200] [checks=2000] [lists=100]
 */
import { loadavg } from 'node:os';
import { Sequelize } from 'sequelize';
import { openSequelize } from '../engine/sql/sqlite_sequelize.ts';
import { Engine, GraphMirror, LevelChecker, LocalChecker, type TupleKey } from '../engine/index.ts';
import { SqlStore } from '../engine/sql/sql_store.ts';
import { createTestDatabase } from '../test/helpers/databases.ts';

const MODEL = `model
  schema 1.1
type user
type group
  relations
    define member: [user, group#member]
type folder
  relations
    define parent: [folder]
    define viewer: [user, group#member] or viewer from parent
type doc
  relations
    define parent: [folder]
    define blocked: [user, group#member]
    define editor: [user, group#member]
    define viewer: [user, group#member] or editor or viewer from parent
    define can_read: viewer but not blocked
    define can_edit: editor and viewer
`;

const GROUPS = Number(process.argv[2] ?? 200);
const CHECKS = Number(process.argv[3] ?? 2000);
const LISTS = Number(process.argv[4] ?? 100);
const USERS = GROUPS * 10;
const FOLDERS = GROUPS * 5;
const DOCS = GROUPS * 25;

let seed = 42;
const rand = (n: number): number => {
  seed = (seed * 1103515245 + 12345) & 0x7fffffff;
  return seed % n;
};

function tuples(): TupleKey[] {
  const out: TupleKey[] = [];
  for (let u = 0; u < USERS; u++) for (let k = 0; k < 1 + rand(2); k++) out.push({ object: `group:g${rand(GROUPS)}`, relation: 'member', user: `user:u${u}` });
  for (let g = 1; g < GROUPS; g++) if (rand(20) === 0) out.push({ object: `group:g${rand(g)}`, relation: 'member', user: `group:g${g}#member` });
  for (let f = 0; f < FOLDERS; f++) {
    if (f > 0 && rand(4) === 0) out.push({ object: `folder:f${f}`, relation: 'parent', user: `folder:f${rand(f)}` });
    if (rand(2) === 0) out.push({ object: `folder:f${f}`, relation: 'viewer', user: `group:g${rand(GROUPS)}#member` });
  }
  for (let d = 0; d < DOCS; d++) {
    out.push({ object: `doc:d${d}`, relation: 'parent', user: `folder:f${rand(FOLDERS)}` });
    if (rand(3) === 0) out.push({ object: `doc:d${d}`, relation: 'editor', user: `group:g${rand(GROUPS)}#member` });
    if (rand(5) === 0) out.push({ object: `doc:d${d}`, relation: 'blocked', user: `group:g${rand(GROUPS)}#member` });
    if (rand(5) === 0) out.push({ object: `doc:d${d}`, relation: 'blocked', user: `user:u${rand(USERS)}` });
  }
  const seen = new Set<string>();
  return out.filter((t) => {
    const k = `${t.object}#${t.relation}@${t.user}`;
    if (seen.has(k)) return false;
    seen.add(k);
    return true;
  });
}

async function time(n: number, f: (i: number) => Promise<unknown>): Promise<number> {
  const t0 = performance.now();
  for (let i = 0; i < n; i++) await f(i);
  return (performance.now() - t0) / n;
}

const db = await createTestDatabase('sqlite', 'lk_bench_mirror');
const sequelize: Sequelize = openSequelize(db.url, { logging: false, pool: { max: 1, min: 0 } });
await sequelize.query('PRAGMA journal_mode = WAL');
await sequelize.query('PRAGMA busy_timeout = 5000');
try {
  const store = await SqlStore.open({ sequelize });
  const all = tuples();
  const loader = new Engine({ store });
  await loader.writeModel({ dsl: MODEL });
  for (let i = 0; i < all.length; i += 100) await loader.write({ writes: all.slice(i, i + 100) });
  // Before: no answer cache in either stack, so every request is evaluated.
  const before = new Engine({ store, resolver: new LevelChecker() });
  const mirror = await GraphMirror.load({ store });
  const after = new Engine({ store: mirror.store, resolver: mirror.resolver(new LocalChecker(), new LevelChecker({ inner: new LocalChecker({ sync: false }) })) });

  const checks = Array.from({ length: CHECKS }, () => ({ user: `user:u${rand(USERS)}`, relation: rand(2) === 0 ? 'can_read' : 'can_edit', object: `doc:d${rand(DOCS)}` }));
  const lists = Array.from({ length: LISTS }, () => ({ user: `user:u${rand(USERS)}`, relation: 'can_read', type: 'doc' }));
  let allowed = 0;
  let listed = 0;
  let truncated = 0;
  for (const q of checks) {
    const [a, b] = [(await before.check(q)).allowed, (await after.check(q)).allowed];
    if (a !== b) throw new Error(`check ${JSON.stringify(q)}: before ${a}, after ${b}`);
    if (a) allowed++;
  }
  for (const q of lists) {
    const [ra, rb] = [await before.listObjects(q), await after.listObjects(q)];
    const [a, b] = [ra.objects, rb.objects];
    // A truncated answer is some of the objects (which ones depends on the order candidates are confirmed): each must be allowed.
    if (ra.truncated && rb.truncated) {
      for (const object of [...a, ...b]) if (!(await before.check({ user: q.user, relation: q.relation, object })).allowed) throw new Error(`listObjects ${JSON.stringify(q)}: ${object} not allowed`);
    } else if (JSON.stringify(a) !== JSON.stringify(b)) {
      const sa = new Set(a);
      const sb = new Set(b);
      throw new Error(`listObjects ${JSON.stringify(q)}: before ${a.length} (truncated ${ra.truncated}), after ${b.length} (truncated ${rb.truncated}); only before ${a.filter((x) => !sb.has(x)).slice(0, 5).join(' ')}; only after ${b.filter((x) => !sa.has(x)).slice(0, 5).join(' ')}`);
    }
    listed += a.length;
    if (ra.truncated) truncated++;
  }
  console.log(`tuples ${all.length}; ${CHECKS} checks (${allowed} allowed) and ${LISTS} ListObjects (${listed} objects, ${truncated} truncated) answer alike; load average ${loadavg().map((x) => x.toFixed(2)).join(' ')}`);
  for (let round = 0; round < 2; round++) {
    const cb = await time(CHECKS, (i) => before.check(checks[i]!));
    const ca = await time(CHECKS, (i) => after.check(checks[i]!));
    const lb = await time(LISTS, (i) => before.listObjects(lists[i]!));
    const la = await time(LISTS, (i) => after.listObjects(lists[i]!));
    console.log(
      `round ${round}: check (can_read exclusion / can_edit intersection) before ${(cb * 1000).toFixed(0)} µs, after ${(ca * 1000).toFixed(0)} µs (x${(cb / ca).toFixed(1)}); ` +
        `ListObjects can_read before ${lb.toFixed(2)} ms, after ${la.toFixed(2)} ms (x${(lb / la).toFixed(1)}); load average ${loadavg()[0]!.toFixed(2)}`,
    );
  }
  console.log(`mirror ${JSON.stringify(mirror.stats())}`);
  await store.close();
} finally {
  await sequelize.close();
  await db.drop();
}
