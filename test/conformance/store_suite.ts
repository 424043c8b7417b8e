/**
 * The store-conformance suite: every {@link TupleStore} implementation must
 * pass it. Call `runStoreSuite(test, 'memory', () => new MemoryStore())`
 * from a test file; each case gets a fresh store from the factory and closes
 * it afterwards.
 *
 * It pins the invariants documented on the interface in engine/store.ts:
 * atomic writes with their preconditions, the revision and changelog,
 * byte-wise case-sensitive identity, the ordering of every read, batched
 * reads answering in key order, stable pagination under concurrent writes,
 * append-only models with the latest being the greatest id, and reset.
 */
import type { ExecutionContext, TestFn } from 'ava';
import { monotonicFactory } from 'ulid';
import { DEFAULT_STORE_ID, LatchkeyError, type StoredTuple, type TupleKey, type TupleStore } from '../../engine/index.ts';

const ulid = monotonicFactory();

/** Makes a fresh, empty store (it may be async, e.g. to create a database). */
export type StoreFactory = () => TupleStore | Promise<TupleStore>;

function keys(ts: readonly (TupleKey | undefined)[]): (string | undefined)[] {
  return ts.map((t) => (t === undefined ? undefined : `${t.object}#${t.relation}@${t.user}`));
}

function code(err: unknown): string {
  return err instanceof LatchkeyError ? `${err.code}/${err.reason ?? ''}` : `not a LatchkeyError: ${String(err)}`;
}

/** Registers the suite's cases on `test`, titled `store <name>: …`. */
export function runStoreSuite(test: TestFn, name: string, makeStore: StoreFactory): void {
  const it = (title: string, fn: (t: ExecutionContext, store: TupleStore) => Promise<void>): void => {
    test(`store ${name}: ${title}`, async (t) => {
      const store = await makeStore();
      try {
        await fn(t, store);
      } finally {
        await store.close();
      }
    });
  };

  const T = (object: string, relation: string, user: string, condition?: TupleKey['condition']): TupleKey =>
    condition === undefined ? { object, relation, user } : { object, relation, user, condition };

  it('starts empty at revision 0 with no model', async (t, s) => {
    t.is(await s.revision(), 0);
    t.false(await s.hasTuples());
    t.is(await s.readLatestModel(), undefined);
    t.is(await s.latestModelId(), undefined);
    t.deepEqual((await s.readPage({}, { pageSize: 10 })).items, []);
  });

  // Optional in the interface (a store without it has paged ListObjects computed from the whole walk); the stores run here offer it.
  it('readObjectIds: the ids of a type with a tuple, ascending, after a cursor, at most the limit, never fewer than exist', async (t, s) => {
    if (s.readObjectIds === undefined) {
      t.fail('readObjectIds is not offered');
      return;
    }
    await s.write([], [T('doc:b', 'viewer', 'user:a'), T('doc:a', 'owner', 'user:a'), T('doc:a', 'viewer', 'user:b'), T('doc:C', 'viewer', 'user:a'), T('folder:x', 'viewer', 'user:a'), T('doc:d', 'viewer', 'user:*')]);
    await s.write([], [T('doc:c', 'viewer', 'group:g#member')]);
    t.deepEqual(await s.readObjectIds({ objectType: 'doc', limit: 100 }), ['C', 'a', 'b', 'c', 'd']);
    t.deepEqual(await s.readObjectIds({ objectType: 'doc', limit: 2 }), ['C', 'a']);
    t.deepEqual(await s.readObjectIds({ objectType: 'doc', after: 'a', limit: 2 }), ['b', 'c']);
    t.deepEqual(await s.readObjectIds({ objectType: 'doc', after: 'bb', limit: 10 }), ['c', 'd']);
    t.deepEqual(await s.readObjectIds({ objectType: 'folder', limit: 10 }), ['x']);
    t.deepEqual(await s.readObjectIds({ objectType: 'nothing', limit: 10 }), []);
    // After deletes: every id that still has a tuple (ids without one may stay listed).
    await s.write([T('doc:b', 'viewer', 'user:a')], [T('doc:e', 'viewer', 'user:a')]);
    const now = await s.readObjectIds({ objectType: 'doc', limit: 100 });
    for (const id of ['C', 'a', 'c', 'd', 'e']) t.true(now.includes(id), id);
    t.deepEqual(now, [...now].sort());
  });

  it('models are append-only and the latest is the greatest id', async (t, s) => {
    const a = { id: ulid(), schema_version: '1.1', type_definitions: [{ type: 'user' }] };
    const b = { id: ulid(), schema_version: '1.1', type_definitions: [{ type: 'user' }, { type: 'doc' }] };
    await s.writeModel(a);
    await s.writeModel(b);
    t.is(await s.latestModelId(), b.id);
    t.deepEqual(await s.readLatestModel(), b);
    t.deepEqual(await s.readModel(a.id), a);
    t.is(await s.readModel(ulid()), undefined);
    const p1 = await s.listModels({ pageSize: 1 });
    t.deepEqual(p1.items.map((m) => m.id), [b.id]);
    t.truthy(p1.continuationToken);
    const p2 = await s.listModels({ pageSize: 1, continuationToken: p1.continuationToken });
    t.deepEqual(p2.items.map((m) => m.id), [a.id]);
    t.is(p2.continuationToken, undefined);
  });

  it('write bumps the revision by one and records changes', async (t, s) => {
    const r1 = await s.write([], [T('doc:1', 'viewer', 'user:a'), T('doc:1', 'viewer', 'user:b')]);
    t.is(r1, 1);
    const r2 = await s.write([T('doc:1', 'viewer', 'user:a')], []);
    t.is(r2, 2);
    t.is(await s.revision(), 2);
    const changes = await s.readChanges({ afterRevision: 0, limit: 100 });
    t.deepEqual(
      changes.map((c) => [c.revision, c.operation, c.tuple.user]),
      [
        [1, 'write', 'user:a'],
        [1, 'write', 'user:b'],
        [2, 'delete', 'user:a'],
      ],
    );
    t.deepEqual((await s.readChanges({ afterRevision: 1, limit: 100 })).map((c) => c.revision), [2]);
    // (revision, seq) orders the changelog; afterSeq resumes inside a revision (the watch's cursor).
    t.deepEqual(changes.map((c) => [c.revision, c.seq]), [[1, 0], [1, 1], [2, 0]]);
    t.deepEqual((await s.readChanges({ afterRevision: 1, afterSeq: 0, limit: 100 })).map((c) => [c.revision, c.seq, c.tuple.user]), [[1, 1, 'user:b'], [2, 0, 'user:a']]);
    t.deepEqual((await s.readChanges({ afterRevision: 1, afterSeq: 1, limit: 100 })).map((c) => [c.revision, c.seq]), [[2, 0]]);
    t.deepEqual((await s.readChanges({ afterRevision: 0, afterSeq: 5, limit: 100 })).map((c) => [c.revision, c.seq]), [[1, 0], [1, 1], [2, 0]]);
    t.deepEqual((await s.readChanges({ afterRevision: 1, afterSeq: 0, limit: 1, objectType: 'doc' })).map((c) => [c.revision, c.seq]), [[1, 1]]);
    t.is((await s.readChanges({ afterRevision: 0, limit: 1 })).length, 1);
    t.deepEqual(await s.readChanges({ afterRevision: 0, limit: 100, objectType: 'folder' }), []);
  });

  it('writing an existing tuple fails and changes nothing', async (t, s) => {
    await s.write([], [T('doc:1', 'viewer', 'user:a')]);
    const err = await t.throwsAsync(s.write([], [T('doc:2', 'viewer', 'user:a'), T('doc:1', 'viewer', 'user:a')]));
    t.is(code(err), 'already_exists/tuple_exists');
    t.is(await s.revision(), 1);
    t.deepEqual(keys(await s.readUserTuples([{ objectType: 'doc', objectId: '2', relation: 'viewer', user: 'user:a' }])), [undefined]);
  });

  it('deleting a missing tuple fails and changes nothing', async (t, s) => {
    await s.write([], [T('doc:1', 'viewer', 'user:a')]);
    const err = await t.throwsAsync(s.write([T('doc:1', 'viewer', 'user:a'), T('doc:9', 'viewer', 'user:a')], [T('doc:3', 'viewer', 'user:c')]));
    t.is(code(err), 'not_found/tuple_not_found');
    t.is(await s.revision(), 1);
    t.true(await s.hasTuples());
    t.deepEqual(keys(await s.readUserTuples([{ objectType: 'doc', objectId: '1', relation: 'viewer', user: 'user:a' }])), ['doc:1#viewer@user:a']);
  });

  it('delete then re-write the same key in one call replaces the tuple', async (t, s) => {
    await s.write([], [T('doc:1', 'viewer', 'user:a')]);
    await s.write([T('doc:1', 'viewer', 'user:a')], [T('doc:1', 'viewer', 'user:a', { name: 'c', context: { x: 1 } })]);
    const [got] = await s.readUserTuples([{ objectType: 'doc', objectId: '1', relation: 'viewer', user: 'user:a' }]);
    t.deepEqual(got?.condition, { name: 'c', context: { x: 1 } });
    t.is(got?.revision, 2);
  });

  it('identity is case-sensitive and byte-wise', async (t, s) => {
    await s.write([], [T('doc:1', 'viewer', 'user:Alice'), T('doc:1', 'viewer', 'user:alice')]);
    const got = await s.readObjectRelations([{ objectType: 'doc', objectId: '1', relation: 'viewer' }], 'all');
    t.deepEqual(got[0]!.map((x) => x.user), ['user:Alice', 'user:alice']);
  });

  it('stores conditions and their context', async (t, s) => {
    await s.write([], [T('doc:1', 'viewer', 'user:a', { name: 'in_range', context: { n: 3, l: ['a'], m: { k: true } } })]);
    const [got] = await s.readUserTuples([{ objectType: 'doc', objectId: '1', relation: 'viewer', user: 'user:a' }]);
    t.deepEqual(got?.condition, { name: 'in_range', context: { n: 3, l: ['a'], m: { k: true } } });
  });

  it('batched point reads answer in key order', async (t, s) => {
    await s.write([], [T('doc:1', 'viewer', 'user:a'), T('doc:2', 'viewer', 'user:*'), T('doc:2', 'viewer', 'group:g#member')]);
    const got = await s.readUserTuples([
      { objectType: 'doc', objectId: '2', relation: 'viewer', user: 'group:g#member' },
      { objectType: 'doc', objectId: '1', relation: 'viewer', user: 'user:b' },
      { objectType: 'doc', objectId: '2', relation: 'viewer', user: 'user:*' },
      { objectType: 'doc', objectId: '1', relation: 'viewer', user: 'user:a' },
    ]);
    t.deepEqual(keys(got), ['doc:2#viewer@group:g#member', undefined, 'doc:2#viewer@user:*', 'doc:1#viewer@user:a']);
  });

  it('forward reads return every tuple or only usersets, ordered by user, per key', async (t, s) => {
    await s.write([], [
      T('doc:1', 'viewer', 'user:b'),
      T('doc:1', 'viewer', 'group:g#member'),
      T('doc:1', 'viewer', 'user:a'),
      T('doc:1', 'viewer', 'user:*'),
      T('doc:1', 'editor', 'user:z'),
      T('doc:2', 'viewer', 'team:t#member'),
    ]);
    const k = [
      { objectType: 'doc', objectId: '2', relation: 'viewer' },
      { objectType: 'doc', objectId: '1', relation: 'viewer' },
      { objectType: 'doc', objectId: '3', relation: 'viewer' },
    ];
    const all = await s.readObjectRelations(k, 'all');
    t.deepEqual(all.map((l) => l.map((x) => x.user)), [['team:t#member'], ['group:g#member', 'user:*', 'user:a', 'user:b'], []]);
    const usersets = await s.readObjectRelations(k, 'usersets');
    t.deepEqual(usersets.map((l) => l.map((x) => x.user)), [['team:t#member'], ['group:g#member'], []]);
  });

  it('reverse reads match exact users and order by object id', async (t, s) => {
    await s.write([], [
      T('doc:b', 'viewer', 'user:a'),
      T('doc:a', 'viewer', 'user:a'),
      T('doc:c', 'viewer', 'user:*'),
      T('doc:d', 'viewer', 'group:g#member'),
      T('doc:e', 'editor', 'user:a'),
      T('folder:x', 'viewer', 'user:a'),
    ]);
    const q = (users: string[], objectIds?: string[]): Promise<StoredTuple[]> =>
      s.readStartingWithUsers(objectIds === undefined ? { objectType: 'doc', relation: 'viewer', users } : { objectType: 'doc', relation: 'viewer', users, objectIds });
    t.deepEqual(keys(await q(['user:a'])), ['doc:a#viewer@user:a', 'doc:b#viewer@user:a']);
    t.deepEqual(keys(await q(['user:*', 'user:a'])), ['doc:a#viewer@user:a', 'doc:b#viewer@user:a', 'doc:c#viewer@user:*']);
    t.deepEqual(keys(await q(['group:g#member'])), ['doc:d#viewer@group:g#member']);
    t.deepEqual(keys(await q(['user:a'], ['b', 'z'])), ['doc:b#viewer@user:a']);
    t.deepEqual(await q(['user:nobody']), []);
  });

  it('read pages are ordered, filtered, and concatenate to the full read', async (t, s) => {
    const all: TupleKey[] = [];
    for (let i = 0; i < 23; i++) all.push(T(`doc:${String(i).padStart(2, '0')}`, i % 2 === 0 ? 'viewer' : 'editor', `user:${i % 5}`));
    await s.write([], all);
    const read = async (filter: Parameters<TupleStore['readPage']>[0], pageSize: number): Promise<string[]> => {
      const out: string[] = [];
      let token: string | undefined;
      do {
        const p = await s.readPage(filter, { pageSize, continuationToken: token });
        t.true(p.items.length <= pageSize);
        out.push(...keys(p.items).map(String));
        token = p.continuationToken;
      } while (token !== undefined);
      return out;
    };
    const full = await read({}, 100);
    t.is(full.length, 23);
    t.deepEqual(full, [...full].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)));
    t.deepEqual(await read({}, 4), full);
    t.deepEqual(await read({ relation: 'viewer' }, 3), full.filter((k) => k.includes('#viewer@')));
    t.deepEqual(await read({ user: 'user:1' }, 2), full.filter((k) => k.endsWith('@user:1')));
    t.deepEqual(await read({ objectType: 'doc', objectId: '04' }, 2), ['doc:04#viewer@user:4']);
    t.deepEqual(await read({ objectType: 'folder' }, 2), []);
  });

  it('pagination is stable while other writes happen', async (t, s) => {
    const base: TupleKey[] = [];
    for (let i = 0; i < 10; i++) base.push(T(`doc:${i}`, 'viewer', 'user:a'));
    await s.write([], base);
    const p1 = await s.readPage({}, { pageSize: 4 });
    // Insert before and after the cursor, delete one not yet read.
    await s.write([T('doc:7', 'viewer', 'user:a')], [T('doc:0', 'viewer', 'user:b'), T('doc:9', 'viewer', 'user:b')]);
    const rest: string[] = [];
    let token = p1.continuationToken;
    while (token !== undefined) {
      const p = await s.readPage({}, { pageSize: 4, continuationToken: token });
      rest.push(...keys(p.items).map(String));
      token = p.continuationToken;
    }
    const seen = [...keys(p1.items).map(String), ...rest];
    t.is(new Set(seen).size, seen.length, 'no tuple twice');
    for (const k of ['doc:1', 'doc:2', 'doc:3', 'doc:4', 'doc:5', 'doc:6', 'doc:8', 'doc:9']) t.true(seen.includes(`${k}#viewer@user:a`), k);
    t.false(seen.includes('doc:7#viewer@user:a'));
    t.true(seen.includes('doc:9#viewer@user:b'));
  });

  it('rejects a continuation token it did not make', async (t, s) => {
    const err = await t.throwsAsync(s.readPage({}, { pageSize: 5, continuationToken: 'not-a-token!' }));
    t.is(code(err), 'invalid_argument/invalid_continuation_token');
  });

  it('reset is refused while tuples exist and clears models otherwise', async (t, s) => {
    await s.writeModel({ id: ulid(), schema_version: '1.1', type_definitions: [{ type: 'user' }] });
    await s.write([], [T('doc:1', 'viewer', 'user:a')]);
    const err = await t.throwsAsync(s.reset());
    t.is(code(err), 'failed_precondition/tuples_exist');
    t.truthy(await s.readLatestModel());
    await s.write([T('doc:1', 'viewer', 'user:a')], []);
    await s.reset();
    t.is(await s.readLatestModel(), undefined);
    t.false(await s.hasTuples());
    t.is(await s.revision(), 2);
  });

  it('a write-then-delete sequence leaves reads unchanged', async (t, s) => {
    await s.write([], [T('doc:1', 'viewer', 'user:a')]);
    const before = keys((await s.readPage({}, { pageSize: 100 })).items);
    const extra = [T('doc:2', 'viewer', 'user:b'), T('doc:1', 'viewer', 'group:g#member'), T('doc:1', 'viewer', 'user:*')];
    await s.write([], extra);
    await s.write(extra, []);
    t.deepEqual(keys((await s.readPage({}, { pageSize: 100 })).items), before);
    t.deepEqual(await s.readStartingWithUsers({ objectType: 'doc', relation: 'viewer', users: ['user:b', 'user:*', 'group:g#member'] }), []);
    t.deepEqual((await s.readObjectRelations([{ objectType: 'doc', objectId: '1', relation: 'viewer' }], 'usersets'))[0], []);
  });

  it('scanTuples (when offered) returns every tuple once, in batches of the asked size', async (t, s) => {
    if (s.scanTuples === undefined) {
      t.pass('this store offers no bulk scan');
      return;
    }
    const written: TupleKey[] = [];
    for (let i = 0; i < 23; i++) written.push(T(`doc:${i % 5}`, i % 2 === 0 ? 'viewer' : 'editor', `user:U${i}`));
    written.push(T('doc:c', 'viewer', 'user:*'), T('doc:c', 'viewer', 'group:g#member', { name: 'cond', context: { x: [1, 'a'] } }));
    await s.write([], written);
    await s.write([written[0]!], []);
    const batches: StoredTuple[][] = [];
    for await (const batch of s.scanTuples({ batchSize: 7 })) batches.push(batch);
    t.deepEqual(batches.map((b) => b.length), [7, 7, 7, 3]);
    const scanned = batches.flat();
    const page = (await s.readPage({}, { pageSize: 100 })).items;
    t.deepEqual(scanned.map((x) => `${x.object}#${x.relation}@${x.user}`).sort(), page.map((x) => `${x.object}#${x.relation}@${x.user}`).sort());
    t.deepEqual(scanned.find((x) => x.user === 'group:g#member')?.condition, { name: 'cond', context: { x: [1, 'a'] } });
    t.true(scanned.every((x) => x.revision === 1));
    let whole = 0;
    for await (const batch of s.scanTuples()) whole += batch.length;
    t.is(whole, written.length - 1);
    await t.throwsAsync(async () => {
      for await (const _ of s.scanTuples!({ batchSize: 0 })) t.fail();
    });
  });

  it('readPage tells when each tuple was written (where the store records it)', async (t, s) => {
    const started = Date.now();
    await s.write([], [T('doc:1', 'viewer', 'user:anne')]);
    const [item] = (await s.readPage({}, { pageSize: 10 })).items;
    if (item?.writtenAt === undefined) {
      t.pass('this store does not record write times');
      return;
    }
    t.true(item.writtenAt >= started - 1000 && item.writtenAt <= Date.now() + 1000, String(item.writtenAt));
  });

  // ---------------------------------------------------------------- many stores (backends with a catalog)

  const storeIds = monotonicFactory();
  const record = (name: string) => ({ id: storeIds(), name, createdAt: 1_700_000_000_000, updatedAt: 1_700_000_000_000 });

  it('stores: each store has its own models, tuples, changes, revision and assertions', async (t, s) => {
    if (s.catalog === undefined) {
      t.pass('this store holds a single store');
      return;
    }
    const catalog = s.catalog();
    t.is(s.storeId, DEFAULT_STORE_ID);
    const a = record('a');
    await catalog.createStore(a);
    const other = catalog.store(a.id);
    t.is(other.storeId, a.id);
    const m = { id: ulid(), schema_version: '1.1', type_definitions: [{ type: 'user' }] };
    await s.writeModel(m);
    await s.write([], [T('doc:1', 'viewer', 'user:anne')]);
    await s.writeAssertions?.(m.id, [{ tupleKey: { object: 'doc:1', relation: 'viewer', user: 'user:anne' }, expectation: true }]);
    t.is(await other.latestModelId(), undefined);
    t.is(await other.revision(), 0);
    t.false(await other.hasTuples());
    t.deepEqual(await other.readChanges({ afterRevision: 0, limit: 10 }), []);
    t.deepEqual((await other.readUserTuples([{ objectType: 'doc', objectId: '1', relation: 'viewer', user: 'user:anne' }]))[0], undefined);
    t.deepEqual(await other.readAssertions?.(m.id), []);
    // The same tuple in another store is another tuple.
    t.is(await other.write([], [T('doc:1', 'viewer', 'user:anne'), T('doc:2', 'viewer', 'user:bob')]), 1);
    t.is(await s.revision(), 1);
    t.deepEqual((await other.readPage({}, { pageSize: 10 })).items.map((x) => x.object), ['doc:1', 'doc:2']);
    t.deepEqual((await s.readPage({}, { pageSize: 10 })).items.map((x) => x.object), ['doc:1']);
    t.deepEqual((await other.readObjectRelations([{ objectType: 'doc', objectId: '2', relation: 'viewer' }], 'all'))[0]!.map((x) => x.user), ['user:bob']);
    t.deepEqual((await s.readObjectRelations([{ objectType: 'doc', objectId: '2', relation: 'viewer' }], 'all'))[0], []);
    t.deepEqual((await other.readStartingWithUsers({ objectType: 'doc', relation: 'viewer', users: ['user:bob'] })).map((x) => x.object), ['doc:2']);
    t.deepEqual(await s.readStartingWithUsers({ objectType: 'doc', relation: 'viewer', users: ['user:bob'] }), []);
    t.deepEqual((await other.readChanges({ afterRevision: 0, limit: 10 })).map((c) => c.tuple.object), ['doc:1', 'doc:2']);
    await other.write([T('doc:1', 'viewer', 'user:anne')], []);
    t.truthy((await s.readUserTuples([{ objectType: 'doc', objectId: '1', relation: 'viewer', user: 'user:anne' }]))[0]);
    if (other.scanTuples !== undefined) {
      const scanned: string[] = [];
      for await (const batch of other.scanTuples()) for (const x of batch) scanned.push(x.object);
      t.deepEqual(scanned, ['doc:2']);
    }
  });

  it('stores: create, read, list with pages and a name filter', async (t, s) => {
    if (s.catalog === undefined) {
      t.pass('this store holds a single store');
      return;
    }
    const catalog = s.catalog();
    t.is((await catalog.readStore(DEFAULT_STORE_ID))?.id, DEFAULT_STORE_ID);
    const made = [record('x'), record('y'), record('x'), record('z')];
    for (const r of made) await catalog.createStore(r);
    t.deepEqual(await catalog.readStore(made[1]!.id), made[1]);
    t.is(await catalog.readStore(storeIds()), undefined);
    t.is(code(await t.throwsAsync(catalog.createStore(made[0]!))), 'already_exists/store_exists');
    const ids: string[] = [];
    let token: string | undefined;
    do {
      const page = await catalog.listStores({ pageSize: 2, continuationToken: token });
      t.true(page.items.length <= 2);
      ids.push(...page.items.map((r) => r.id));
      token = page.continuationToken;
    } while (token !== undefined);
    t.deepEqual(ids, [DEFAULT_STORE_ID, ...made.map((r) => r.id)]);
    const named = await catalog.listStores({ pageSize: 1, name: 'x' });
    t.deepEqual(named.items.map((r) => r.id), [made[0]!.id]);
    t.deepEqual((await catalog.listStores({ pageSize: 1, name: 'x', continuationToken: named.continuationToken })).items.map((r) => r.id), [made[2]!.id]);
    t.is(code(await t.throwsAsync(catalog.listStores({ pageSize: 1, continuationToken: 'nonsense' }))), 'invalid_argument/invalid_continuation_token');
  });

  it('stores: deleting a store deletes its data, and the default store cannot be deleted', async (t, s) => {
    if (s.catalog === undefined) {
      t.pass('this store holds a single store');
      return;
    }
    const catalog = s.catalog();
    const a = record('a');
    const b = record('b');
    await catalog.createStore(a);
    await catalog.createStore(b);
    const va = catalog.store(a.id);
    const m = { id: ulid(), schema_version: '1.1', type_definitions: [{ type: 'user' }] };
    await va.writeModel(m);
    await va.write([], [T('doc:1', 'viewer', 'user:anne')]);
    await va.writeAssertions?.(m.id, [{ tupleKey: { object: 'doc:1', relation: 'viewer', user: 'user:anne' }, expectation: true }]);
    await catalog.store(b.id).write([], [T('doc:1', 'viewer', 'user:anne')]);
    await catalog.deleteStore(a.id);
    t.is(await catalog.readStore(a.id), undefined);
    t.is(code(await t.throwsAsync(catalog.deleteStore(a.id))), 'not_found/store_not_found');
    t.is(code(await t.throwsAsync(catalog.deleteStore(DEFAULT_STORE_ID))), 'failed_precondition/default_store');
    // The deleted store's view reads nothing or fails; its revision and writes fail.
    const again = catalog.store(a.id);
    t.is(code(await t.throwsAsync(again.revision())), 'not_found/store_not_found');
    t.is(code(await t.throwsAsync(again.write([], [T('doc:9', 'viewer', 'user:anne')]))), 'not_found/store_not_found');
    // A store made again with the same id starts empty.
    await catalog.createStore(a);
    const fresh = catalog.store(a.id);
    t.is(await fresh.latestModelId(), undefined);
    t.false(await fresh.hasTuples());
    t.deepEqual(await fresh.readChanges({ afterRevision: 0, limit: 10 }), []);
    t.deepEqual(await fresh.readAssertions?.(m.id), []);
    t.true(await catalog.store(b.id).hasTuples());
  });
}
