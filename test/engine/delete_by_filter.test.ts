/**
 * `Engine.deleteTuplesByFilter` (the engine side of
 * `fga_delete_tuples_by_filter`): bounded batches, one revision each, a
 * `delete` change per tuple; the filters; and 100,000 tuples of one user
 * removed while checks keep being answered, none left afterwards.
 */
import test from 'ava';
import { buildEngine, Engine, LatchkeyError, MemoryStore, type TupleKey, type TupleStore } from '../../engine/index.ts';
import { sqlBackends } from '../helpers/databases.ts';
import { openSqlStore } from './sql_helpers.ts';

const MODEL = `model
  schema 1.1
type user
type group
  relations
    define member: [user]
type doc
  relations
    define viewer: [user, group#member]
    define editor: [user]
`;

async function openStore(backend: string): Promise<{ store: TupleStore; close(): Promise<void> }> {
  if (backend === 'memory') {
    const store = new MemoryStore();
    return { store, close: () => store.close() };
  }
  const opened = await openSqlStore(backend as 'sqlite');
  return { store: opened.store, close: () => opened.teardown() };
}

const key = (t: TupleKey): string => `${t.object}#${t.relation}@${t.user}`;

for (const backend of ['memory', ...sqlBackends()]) {
  test(`${backend}: the filters, the batches and the changes`, async (t) => {
    const { store, close } = await openStore(backend);
    try {
      const engine = new Engine({ store });
      await engine.writeModel({ dsl: MODEL });
      const tuples: TupleKey[] = [];
      for (let i = 0; i < 25; i++) tuples.push({ object: `doc:${i}`, relation: 'viewer', user: 'user:ann' });
      tuples.push({ object: 'doc:1', relation: 'editor', user: 'user:ann' }, { object: 'doc:1', relation: 'viewer', user: 'user:bob' }, { object: 'doc:1', relation: 'viewer', user: 'group:g#member' });
      tuples.push({ object: 'group:g', relation: 'member', user: 'user:ann' }, { object: 'doc:2', relation: 'editor', user: 'user:bob' });
      await engine.write({ writes: tuples });
      const all = async (): Promise<string[]> => (await store.readPage({}, { pageSize: 1000 })).items.map(key).sort();

      for (const [filter, reason] of [[{}, 'invalid_filter'], [{ relation: 'viewer' }, 'invalid_filter'], [{ user: 'nope' }, 'invalid_user'], [{ object: 'doc' }, 'invalid_object'], [{ object: 'doc:1', objectType: 'group' }, 'invalid_filter'], [{ user: '' }, 'invalid_filter']] as const) {
        const err = await t.throwsAsync(engine.deleteTuplesByFilter(filter), { instanceOf: LatchkeyError }, JSON.stringify(filter));
        t.is(err?.reason, reason, JSON.stringify(filter));
      }
      t.is((await all()).length, tuples.length, 'a refused filter deletes nothing');

      // One object: every relation and user on it.
      const before = await store.revision();
      const progress: number[] = [];
      const byObject = await engine.deleteTuplesByFilter({ object: 'doc:1' }, { batch: 2, onProgress: (p) => progress.push(p.deleted) });
      t.deepEqual({ deleted: byObject.deleted, batches: byObject.batches }, { deleted: 4, batches: 2 });
      t.deepEqual(progress, [2, 4]);
      t.is(byObject.revision, before + 2, 'one revision per batch');
      const changes = await store.readChanges({ afterRevision: before, limit: 100 });
      t.deepEqual(changes.map((c) => c.operation), ['delete', 'delete', 'delete', 'delete']);
      t.deepEqual(changes.map((c) => key(c.tuple)).sort(), ['doc:1#editor@user:ann', 'doc:1#viewer@group:g#member', 'doc:1#viewer@user:ann', 'doc:1#viewer@user:bob']);

      // A relation on a type.
      t.is((await engine.deleteTuplesByFilter({ objectType: 'doc', relation: 'editor' })).deleted, 1);
      t.false((await all()).some((k) => k.includes('#editor@')));
      // A user everywhere (exact matches only: the userset and other users stay).
      const byUser = await engine.deleteTuplesByFilter({ user: 'user:ann' }, { batch: 10 });
      t.deepEqual({ deleted: byUser.deleted, batches: byUser.batches }, { deleted: 25, batches: 3 });
      t.deepEqual(await all(), []);
      // Nothing matched: no write.
      const rev = await store.revision();
      t.deepEqual(await engine.deleteTuplesByFilter({ user: 'user:ann' }), { deleted: 0, batches: 0, revision: 0 });
      t.is(await store.revision(), rev);
    } finally {
      await close();
    }
  });
}

for (const backend of ['memory', ...sqlBackends().filter((b) => b !== 'mysql')]) {
  test(`${backend}: 100,000 tuples of one user removed while checks keep being answered, none left`, async (t) => {
    t.timeout(600_000);
    const { store, close } = await openStore(backend);
    try {
      const { engine } = await buildEngine({ store, revisionPollMs: 1000 });
      await engine.writeModel({ dsl: MODEL });
      const N = 100_000;
      const writes: TupleKey[] = [];
      for (let i = 0; i < N; i++) writes.push({ object: `doc:${i}`, relation: i % 2 === 0 ? 'viewer' : 'editor', user: 'user:gone' });
      for (let i = 0; i < N; i += 5000) await store.write([], writes.slice(i, i + 5000));
      await engine.write({ writes: [{ object: 'doc:0', relation: 'viewer', user: 'user:stays' }] });

      let done = false;
      let answered = 0;
      let revoked = false;
      const checker = (async () => {
        while (!done) {
          // Another user's grant is answered all along; the deleted user's never comes back once gone.
          const [stays, gone] = await Promise.all([
            engine.check({ user: 'user:stays', relation: 'viewer', object: 'doc:0' }),
            engine.check({ user: 'user:gone', relation: 'viewer', object: `doc:${2 * Math.floor(Math.random() * (N / 2))}`, consistency: 'higher_consistency' }),
          ]);
          if (!stays.allowed) throw new Error('an unrelated grant was denied during the deletion');
          if (!gone.allowed) revoked = true;
          answered++;
          await new Promise((r) => setImmediate(r));
        }
      })();
      const batches: number[] = [];
      const r = await engine.deleteTuplesByFilter({ user: 'user:gone' }, { onProgress: () => batches.push(answered) });
      done = true;
      await checker;
      t.is(r.deleted, N);
      t.is(r.batches, N / 1000);
      t.true(answered >= 10, `checks were answered during the deletion (${answered})`);
      t.true(batches.at(-1)! > batches[0]!, 'checks were answered between batches');
      t.true(revoked);
      t.deepEqual((await engine.read({ user: 'user:gone' })).tuples, [], 'none left');
      t.is((await store.readPage({}, { pageSize: 10 })).items.length, 1);
      for (const i of [0, 1, N - 1]) t.false((await engine.check({ user: 'user:gone', relation: i % 2 === 0 ? 'viewer' : 'editor', object: `doc:${i}` })).allowed);
      t.true((await engine.check({ user: 'user:stays', relation: 'viewer', object: 'doc:0' })).allowed);
    } finally {
      await close();
    }
  });
}
