/**
 * Paged ListObjects and ListUsers, fixed cases (the property test
 * list_pages.property.test.ts explores the rest): between two pages a tuple
 * is written (not listed: it came after the walk's revision), a tuple is
 * deleted (still listed: it was there), and a conditional tuple whose
 * condition is false is deleted (still not listed: rebuilt with its
 * condition, never as an unconditional grant); the page after the token
 * comes from another engine on the same store, as from another server
 * process. Tokens of another question, forged tokens, bad page sizes and
 * expired revisions are refused with their codes. On the memory store and
 * SQLite; the deadline on PostgreSQL (the candidate scan answers what it
 * confirmed in time; the whole walk, nothing yet).
 */
import test from 'ava';
import { Engine, MemoryStore, type TupleStore } from '../../engine/index.ts';
import { disposableSqlStore } from './sql_helpers.ts';
import { needs } from '../helpers/needs.ts';

const MODEL = `model
  schema 1.1
type user
type doc
  relations
    define viewer: [user, user with c]
condition c(x: int, y: int) {
  x < y
}
`;
const CONTEXT = { x: 1 };

for (const [backend, open] of [['memory', async () => new MemoryStore()], ['sqlite', () => disposableSqlStore('sqlite')]] as const) {
  test(`${backend}: a walk answers at its first page's revision, whatever is written, deleted or conditional between pages`, async (t) => {
    const store: TupleStore = await open();
    try {
      const a = new Engine({ store });
      await a.writeModel({ dsl: MODEL });
      await a.write({
        writes: [
          { user: 'user:anne', relation: 'viewer', object: 'doc:1' },
          { user: 'user:anne', relation: 'viewer', object: 'doc:2' },
          { user: 'user:anne', relation: 'viewer', object: 'doc:3', condition: { name: 'c', context: { y: 0 } } },
          { user: 'user:anne', relation: 'viewer', object: 'doc:4', condition: { name: 'c', context: { y: 5 } } },
          { user: 'user:anne', relation: 'viewer', object: 'doc:6' },
        ],
      });
      const q = { user: 'user:anne', relation: 'viewer', type: 'doc', context: CONTEXT };
      const first = await a.listObjectsPage(q, { pageSize: 1 });
      t.deepEqual(first.objects, ['doc:1']);
      t.not(first.continuationToken, '');
      // Between pages: doc:5 granted, doc:2 and doc:4 revoked, the false-conditioned doc:3 deleted and re-granted unconditionally.
      await a.write({ writes: [{ user: 'user:anne', relation: 'viewer', object: 'doc:5' }] });
      await a.write({ deletes: [{ user: 'user:anne', relation: 'viewer', object: 'doc:2' }, { user: 'user:anne', relation: 'viewer', object: 'doc:4' }] });
      await a.write({ deletes: [{ user: 'user:anne', relation: 'viewer', object: 'doc:3' }] });
      await a.write({ writes: [{ user: 'user:anne', relation: 'viewer', object: 'doc:3' }] });
      // Another engine (no walk cache): the revision is rebuilt from the changelog.
      const b = new Engine({ store });
      const rest: string[] = [];
      let token = first.continuationToken;
      while (token !== '') {
        const p = await b.listObjectsPage(q, { pageSize: 1, continuationToken: token });
        t.is(p.revision, first.revision);
        rest.push(...p.objects);
        token = p.continuationToken;
      }
      t.deepEqual(rest, ['doc:2', 'doc:4', 'doc:6']);
      // A new walk sees the current data.
      t.deepEqual((await b.listObjectsPage(q, { pageSize: 10 })).objects, ['doc:1', 'doc:3', 'doc:5', 'doc:6']);

      // ListUsers alike.
      const lu = { object: 'doc:1', relation: 'viewer', userFilters: [{ type: 'user' }], context: CONTEXT };
      await a.write({ writes: [{ user: 'user:bob', relation: 'viewer', object: 'doc:1' }, { user: 'user:carl', relation: 'viewer', object: 'doc:1' }] });
      const u1 = await a.listUsersPage(lu, { pageSize: 2 });
      t.deepEqual(u1.users, ['user:anne', 'user:bob']);
      await a.write({ deletes: [{ user: 'user:carl', relation: 'viewer', object: 'doc:1' }], writes: [{ user: 'user:dave', relation: 'viewer', object: 'doc:1' }] });
      const u2 = await new Engine({ store }).listUsersPage(lu, { pageSize: 2, continuationToken: u1.continuationToken });
      t.deepEqual(u2, { users: ['user:carl'], continuationToken: '', revision: u1.revision, total: 3 });

      // Refusals: another question's token, a forged one, bad sizes.
      const other = await t.throwsAsync(a.listObjectsPage({ ...q, user: 'user:bob' }, { continuationToken: first.continuationToken }));
      t.is((other as { reason?: string }).reason, 'invalid_continuation_token');
      const forged = await t.throwsAsync(a.listObjectsPage(q, { continuationToken: 'bm9wZQ' }));
      t.is((forged as { reason?: string }).reason, 'invalid_continuation_token');
      for (const pageSize of [-1, 1.5, 1001]) {
        const bad = await t.throwsAsync(a.listObjectsPage(q, { pageSize }));
        t.is((bad as { reason?: string }).reason, 'invalid_page_size');
      }
      // A revision ahead of the store (as after a reset of another store's data): expired, never a guess.
      const ahead = await t.throwsAsync(a.listObjectsPage(q, { atRevision: first.revision + 1000 }));
      t.is((ahead as { reason?: string }).reason, 'continuation_token_expired');
    } finally {
      await store.close();
    }
  });
}

// On PostgreSQL, whose reads wait on the network: SQLite's driver answers within the same turn of the event loop, before any timer.
needs(test, 'postgres')('postgres: a page that stops for its deadline says so, answers what it has, and its token resumes right after', async (t) => {
  const store = await disposableSqlStore('postgres');
  try {
    const e = new Engine({ store });
    await e.writeModel({ dsl: MODEL });
    for (let i = 0; i < 3000; i += 100) {
      await e.write({ writes: Array.from({ length: 100 }, (_, j) => ({ user: 'user:anne', relation: 'viewer', object: `doc:${String(i + j).padStart(4, '0')}` })) });
    }
    const all = Array.from({ length: 3000 }, (_, i) => `doc:${String(i).padStart(4, '0')}`);
    // The candidate scan: the objects confirmed before the deadline, in order, and the token after the last one examined.
    const q = { user: 'user:anne', relation: 'viewer', type: 'doc', context: CONTEXT };
    const first = await e.listObjectsPage(q, { pageSize: 1000, deadlineMs: 1 });
    t.true(first.deadlineExceeded);
    t.true(first.objects.length < 1000);
    t.deepEqual(first.objects, all.slice(0, first.objects.length));
    t.not(first.continuationToken, '');
    const got: string[] = [...first.objects];
    let token = first.continuationToken;
    while (token !== '') {
      const p = await e.listObjectsPage(q, { pageSize: 1000, continuationToken: token });
      t.is(p.revision, first.revision);
      t.is(p.deadlineExceeded, undefined);
      got.push(...p.objects);
      token = p.continuationToken;
    }
    t.deepEqual(got, all);
    // The whole walk (here: a listing that reports undecided objects): nothing yet, and a token that resumes at the same place.
    const u = { ...q, reportUndecided: true };
    const stopped = await e.listObjectsPage(u, { pageSize: 1000, deadlineMs: 1 });
    t.true(stopped.deadlineExceeded);
    t.deepEqual(stopped.objects, []);
    t.is(stopped.total, undefined);
    t.not(stopped.continuationToken, '');
    const rest: string[] = [];
    token = stopped.continuationToken;
    while (token !== '') {
      const p = await e.listObjectsPage(u, { pageSize: 1000, continuationToken: token });
      t.is(p.revision, stopped.revision);
      t.is(p.total, 3000);
      rest.push(...p.objects);
      token = p.continuationToken;
    }
    t.deepEqual(rest, all);
    const bad = await t.throwsAsync(e.listObjectsPage(q, { deadlineMs: 0 }));
    t.is((bad as { reason?: string }).reason, 'invalid_option');
  } finally {
    await store.close();
  }
});

test('memory: a tuple that expired and was collected between pages grants nothing on the later pages', async (t) => {
  let now = Date.parse('2026-01-01T00:00:00Z');
  const clock = (): number => now;
  const store = new MemoryStore({ now: clock });
  const a = new Engine({ store, now: clock });
  await a.writeModel({ dsl: MODEL });
  await a.write({
    writes: [
      { user: 'user:anne', relation: 'viewer', object: 'doc:1' },
      { user: 'user:anne', relation: 'viewer', object: 'doc:2', expires_at: '2026-01-01T00:01:00Z' },
      { user: 'user:anne', relation: 'viewer', object: 'doc:3' },
    ],
  });
  const q = { user: 'user:anne', relation: 'viewer', type: 'doc', context: CONTEXT };
  const first = await a.listObjectsPage(q, { pageSize: 1 });
  t.deepEqual(first.objects, ['doc:1']);
  // doc:2 expires, and is collected: its delete is in the changelog after the walk's revision.
  now += 120_000;
  t.true((await a.collectExpired()) > 0);
  const b = new Engine({ store, now: clock });
  const rest: string[] = [];
  let token = first.continuationToken;
  while (token !== '') {
    const p = await b.listObjectsPage(q, { pageSize: 1, continuationToken: token });
    rest.push(...p.objects);
    token = p.continuationToken;
  }
  t.deepEqual(rest, ['doc:3'], 'the expired grant is not put back by the snapshot');
});
