/**
 * The candidate scan of paged ListObjects (engine/list_scan.ts): a first
 * page reads a bounded number of candidate objects however many the answer
 * has (counted by a store wrapper, not timed); pages come in ascending
 * order and reassemble the unpaged answer; a sparse answer gives way to the
 * whole walk; a page that stops for its deadline answers what it confirmed
 * and a token that resumes right after; and, as a property on the memory
 * store and SQLite (PostgreSQL and MySQL when configured), pages of any size equal the
 * unpaged answer with wildcards, conditions with context, contextual tuples
 * and expiring tuples.
 *
 * Replay a property failure with FC_SEED=<seed> (and FC_PATH=<path>).
 */
import test from 'ava';
import fc from 'fast-check';
import { Engine, MemoryStore, buildEngine, type ListObjectsRequest, type TupleKey, type TupleStore } from '../../engine/index.ts';
import { disposableSqlStore } from './sql_helpers.ts';

const MODEL = `model
  schema 1.1
type user
type group
  relations
    define member: [user]
type doc
  relations
    define owner: [user]
    define viewer: [user, user:*, group#member, user with c] or owner
    define blocked: [user]
    define reader: viewer but not blocked
condition c(x: int, y: int) {
  x < y
}
`;

/** Counts of the object-id reads through {@link counted} stores. */
interface Counter {
  ids: number;
  reads: number;
}

/** A store whose object-id reads are counted (and, with `delayMs`, slowed): what a page examined, not how long it took. */
function counted(inner: TupleStore, counter: Counter = { ids: 0, reads: 0 }, delayMs = 0): { store: TupleStore; ids: () => number; reads: () => number } {
  const store = new Proxy(inner, {
    get(target, prop) {
      if (prop === 'readObjectIds') {
        return async (q: { objectType: string; after?: string; limit: number }) => {
          counter.reads++;
          if (delayMs > 0) await new Promise((r) => setTimeout(r, delayMs));
          const out = await target.readObjectIds!(q);
          counter.ids += out.length;
          return out;
        };
      }
      const v = Reflect.get(target, prop, target) as unknown;
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
  return { store, ids: () => counter.ids, reads: () => counter.reads };
}

const pad = (i: number): string => String(i).padStart(5, '0');

async function walk(e: Engine, q: ListObjectsRequest, pageSize: number, from = ''): Promise<string[][]> {
  const pages: string[][] = [];
  let token = from;
  do {
    const p = await e.listObjectsPage(q, { pageSize, continuationToken: token });
    pages.push(p.objects);
    token = p.continuationToken;
  } while (token !== '');
  return pages;
}

for (const [backend, open] of [['memory', async (): Promise<TupleStore> => new MemoryStore()], ['sqlite', () => disposableSqlStore('sqlite')]] as const) {
  test(`${backend}: a first page reads a bounded number of candidates, and the pages come in order`, async (t) => {
    const inner = await open();
    try {
      const { store, ids, reads } = counted(inner);
      const e = new Engine({ store });
      await e.writeModel({ dsl: MODEL });
      // 4,000 documents: anne sees every other one (directly, as owner, through a group), bob the rest.
      const writes: TupleKey[] = [{ user: 'user:anne', relation: 'member', object: 'group:g' }];
      for (let i = 0; i < 4000; i++) {
        const object = `doc:${pad(i)}`;
        if (i % 2 === 1) writes.push({ user: 'user:bob', relation: 'viewer', object });
        else if (i % 6 === 0) writes.push({ user: 'user:anne', relation: 'viewer', object });
        else if (i % 6 === 2) writes.push({ user: 'user:anne', relation: 'owner', object });
        else writes.push({ user: 'group:g#member', relation: 'viewer', object });
      }
      for (let i = 0; i < writes.length; i += 100) await e.write({ writes: writes.slice(i, i + 100) });
      const q = { user: 'user:anne', relation: 'viewer', type: 'doc' };
      const first = await e.listObjectsPage(q, { pageSize: 10 });
      t.deepEqual(first.objects, Array.from({ length: 10 }, (_, i) => `doc:${pad(2 * i)}`));
      t.not(first.continuationToken, '');
      // Eleven results (the page and the one that says more exist) among the first 21 objects, read in one batch of 11 and one of 22.
      t.true(ids() <= 33, `read ${ids()} candidate ids`);
      t.true(reads() <= 2);
      // The whole walk, pages of 100: ascending across pages, no result twice, equal to the unpaged answer.
      const pages = await walk(e, q, 100);
      const flat = pages.flat();
      t.deepEqual(flat, Array.from({ length: 2000 }, (_, i) => `doc:${pad(2 * i)}`));
      for (let i = 1; i < flat.length; i++) t.true(flat[i - 1]! < flat[i]!);
      t.deepEqual(flat, (await new Engine({ store: inner, listObjectsMaxResults: 100_000 }).listObjects(q)).objects);
      t.true(pages.slice(0, -1).every((p) => p.length === 100));
    } finally {
      await inner.close();
    }
  });
}

test('memory: a sparse answer gives way to the whole walk, whose token then stays on it', async (t) => {
  const inner = new MemoryStore();
  const { store, ids } = counted(inner);
  const e = new Engine({ store });
  await e.writeModel({ dsl: MODEL });
  const writes: TupleKey[] = [];
  for (let i = 0; i < 5000; i++) writes.push({ user: i % 2000 === 7 ? 'user:anne' : 'user:bob', relation: 'viewer', object: `doc:${pad(i)}` });
  for (let i = 0; i < writes.length; i += 100) await e.write({ writes: writes.slice(i, i + 100) });
  const q = { user: 'user:anne', relation: 'viewer', type: 'doc' };
  const first = await e.listObjectsPage(q, { pageSize: 2 });
  t.deepEqual(first.objects, ['doc:00007', 'doc:02007']);
  // The scan stopped at its budget (1,000 candidates for a page of 2, read in growing batches), far short of the 5,000 objects.
  t.true(ids() <= 1600, `read ${ids()} candidate ids`);
  t.is(first.total, 3);
  const before = ids();
  const rest = await walk(e, q, 2, first.continuationToken);
  t.is(ids(), before, 'later pages come from the walk');
  t.deepEqual([...first.objects, ...rest.flat()], ['doc:00007', 'doc:02007', 'doc:04007']);
});

test('memory: a scanned page that stops for its deadline answers what it confirmed, and its token resumes right after', async (t) => {
  const inner = new MemoryStore();
  // Each read of candidate ids waits 20 ms, so the deadline of 5 ms passes during the first.
  const { store } = counted(inner, undefined, 20);
  const e = new Engine({ store });
  await e.writeModel({ dsl: MODEL });
  const all: string[] = [];
  for (let i = 0; i < 1500; i += 100) {
    const batch = Array.from({ length: 100 }, (_, j) => ({ user: 'user:anne', relation: 'viewer', object: `doc:${pad(i + j)}` }));
    all.push(...batch.map((w) => w.object));
    await e.write({ writes: batch });
  }
  const q = { user: 'user:anne', relation: 'viewer', type: 'doc' };
  const first = await e.listObjectsPage(q, { pageSize: 1000, deadlineMs: 5 });
  t.true(first.deadlineExceeded);
  // One confirming batch (100 checks) ran before the deadline was looked at.
  t.deepEqual(first.objects, all.slice(0, 100));
  t.not(first.continuationToken, '');
  const rest = await walk(e, q, 1000, first.continuationToken);
  t.deepEqual([...first.objects, ...rest.flat()], all);
});

// ---------------------------------------------------------------- property

const RUNS = process.env['CI'] ? 60 : 25;
const USERS = ['user:u0', 'user:u1', 'user:u2'];
const DOCS = Array.from({ length: 12 }, (_, i) => `doc:d${String(i).padStart(2, '0')}`);
const T0 = Date.parse('2030-01-01T00:00:00Z');

const tupleArb: fc.Arbitrary<TupleKey> = fc.oneof(
  fc.record({ user: fc.constantFrom(...USERS, 'user:*', 'group:g0#member', 'group:g1#member'), relation: fc.constant('viewer'), object: fc.constantFrom(...DOCS) }),
  fc.record({ user: fc.constantFrom(...USERS), relation: fc.constantFrom('owner', 'blocked'), object: fc.constantFrom(...DOCS) }),
  fc.record({ user: fc.constantFrom(...USERS), relation: fc.constant('member'), object: fc.constantFrom('group:g0', 'group:g1') }),
  fc.record({ user: fc.constantFrom(...USERS), relation: fc.constant('viewer'), object: fc.constantFrom(...DOCS), y: fc.constantFrom(0, 5) }).map(({ y, ...t }) => ({ ...t, condition: { name: 'c', context: { y } } })),
);
const scenarioArb = fc.record({
  tuples: fc.uniqueArray(fc.record({ t: tupleArb, expiresIn: fc.constantFrom(undefined, undefined, 10_000, 60_000) }), { selector: (x) => `${x.t.object}#${x.t.relation}@${x.t.user}`, maxLength: 40 }),
  contextual: fc.uniqueArray(tupleArb.filter((t) => t.condition === undefined && !t.user.startsWith('group:')), { selector: (t) => `${t.object}#${t.relation}@${t.user}`, maxLength: 3 }),
  user: fc.constantFrom(...USERS, 'user:*', 'group:g0#member'),
  relation: fc.constantFrom('viewer', 'reader', 'owner'),
  x: fc.constantFrom(1, 7),
  pageSize: fc.integer({ min: 1, max: 4 }),
});

function property(backend: string, open: (clock: () => number) => Promise<TupleStore>): void {
  test(`pages of the candidate scan equal the unpaged answer: wildcards, conditions with context, contextual and expiring tuples (${backend})`, async (t) => {
    let now = T0;
    const clock = (): number => now;
    const inner = await open(clock);
    const counter: Counter = { ids: 0, reads: 0 };
    const ids = (): number => counter.ids;
    const root = new Engine({ store: inner, now: clock });
    let n = 0;
    let scanned = 0;
    try {
      await fc.assert(
        fc.asyncProperty(scenarioArb, async (s) => {
          now = T0;
          const { id } = await root.createStore({ name: `scan-${n++}` });
          const engine = root.forStore(id, { store: counted(inner.catalog!().store(id), counter).store });
          await engine.writeModel({ dsl: MODEL });
          for (const { t: tuple, expiresIn } of s.tuples) {
            const w: TupleKey = expiresIn === undefined ? tuple : { ...tuple, expires_at: new Date(T0 + expiresIn).toISOString() };
            await engine.write({ writes: [w] });
          }
          // Some tuples have expired by now (those of 10 s), uncollected.
          now = T0 + 30_000;
          const q: ListObjectsRequest = { user: s.user, relation: s.relation, type: 'doc', context: { x: s.x } };
          if (s.contextual.length > 0) q.contextualTuples = s.contextual;
          let want: string[];
          try {
            want = (await engine.listObjects(q)).objects;
          } catch (err) {
            const e = await t.throwsAsync(engine.listObjectsPage(q, { pageSize: s.pageSize }));
            t.is((e as { reason?: string }).reason, (err as { reason?: string }).reason);
            return;
          }
          const before = ids();
          const got: string[] = [];
          let token = '';
          do {
            const p = await engine.listObjectsPage(q, { pageSize: s.pageSize, continuationToken: token });
            t.true(p.objects.length <= s.pageSize);
            got.push(...p.objects);
            token = p.continuationToken;
          } while (token !== '');
          if (ids() > before) scanned++;
          t.deepEqual(got, want, JSON.stringify(s));
          await root.deleteStore(id);
        }),
        { numRuns: RUNS, ...(process.env['FC_SEED'] === undefined ? {} : { seed: Number(process.env['FC_SEED']) }), ...(process.env['FC_PATH'] === undefined ? {} : { path: process.env['FC_PATH'] }) },
      );
      // The runs went through the scan (not only through the whole walk).
      t.true(scanned > RUNS / 2, `${scanned} of ${RUNS} runs scanned`);
    } finally {
      await inner.close();
    }
  });
}

property('memory', async (clock) => new MemoryStore({ now: clock }));
property('sqlite', () => disposableSqlStore('sqlite'));
if (process.env['LATCHKEY_TEST_POSTGRES_URL'] || process.env['CI']) property('postgres', () => disposableSqlStore('postgres'));
if (process.env['LATCHKEY_TEST_MYSQL_URL'] || process.env['CI']) property('mysql', () => disposableSqlStore('mysql'));

test('sqlite: behind an answer cache and a graph mirror, a scanned page answers at the current revision after another process wrote', async (t) => {
  const store = await disposableSqlStore('sqlite');
  try {
    // A server's chain that trusts its copy for a minute, and a second engine on the same tables, as another process.
    const { engine: server } = await buildEngine({ store, revisionPollMs: 60_000 });
    const other = new Engine({ store });
    await server.writeModel({ dsl: MODEL });
    await server.write({ writes: [{ user: 'user:anne', relation: 'viewer', object: 'doc:a' }] });
    const q = { user: 'user:anne', relation: 'viewer', type: 'doc' };
    // The chain answers doc:b denied, and keeps the answer.
    t.false((await server.check({ user: 'user:anne', relation: 'viewer', object: 'doc:b' })).allowed);
    t.false((await server.check({ user: 'user:anne', relation: 'viewer', object: 'doc:b' })).allowed);
    await other.write({ writes: [{ user: 'user:anne', relation: 'viewer', object: 'doc:b' }] });
    const page = await server.listObjectsPage(q, { pageSize: 10 });
    t.deepEqual(page.objects, ['doc:a', 'doc:b']);
    t.is(page.revision, await store.revision());
  } finally {
    await store.close();
  }
});

test('memory: a first page refuses what ListObjects refuses, even where the type has no objects to scan', async (t) => {
  const e = new Engine({ store: new MemoryStore() });
  await e.writeModel({ dsl: MODEL });
  await e.write({ writes: [{ user: 'user:anne', relation: 'member', object: 'group:g' }] });
  const cases: Array<[ListObjectsRequest, string]> = [
    [{ user: 'user:anne', relation: 'viewer', type: 'nothing' }, 'type_not_found'],
    [{ user: 'user:anne', relation: 'nothing', type: 'doc' }, 'relation_not_found'],
    [{ user: 'not a user', relation: 'viewer', type: 'doc' }, ''],
    [{ user: 'user:anne', relation: 'viewer', type: 'doc', contextualTuples: [{ user: 'user:anne', relation: 'nothing', object: 'doc:1' }] }, ''],
  ];
  for (const [q, reason] of cases) {
    const unpaged = await t.throwsAsync(e.listObjects(q));
    const paged = await t.throwsAsync(e.listObjectsPage(q, { pageSize: 5 }));
    t.is((paged as { code?: string }).code, (unpaged as { code?: string }).code, JSON.stringify(q));
    t.is((paged as { reason?: string }).reason, (unpaged as { reason?: string }).reason, JSON.stringify(q));
    if (reason !== '') t.is((paged as { reason?: string }).reason, reason);
  }
});
