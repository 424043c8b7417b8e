import assert from 'node:assert/strict';
import { readdir } from 'node:fs/promises';
import { dirname } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import test from 'ava';
import fc from 'fast-check';
import { QueryTypes } from 'sequelize';
import { runStoreSuite } from '../conformance/store_suite.ts';
import { sqlBackends } from '../helpers/databases.ts';
import { disposableSqlStore, openSqlStore } from './sql_helpers.ts';
import { DEFAULT_STORE_ID, LatchkeyError } from '../../engine/index.ts';
import { SqlStore } from '../../engine/sql/sql_store.ts';
import { openSequelize } from '../../engine/sql/sqlite_sequelize.ts';
import { levelSql } from '../../engine/sql/level_reads.ts';

for (const backend of sqlBackends()) {
  runStoreSuite(test, `sql ${backend}`, () => disposableSqlStore(backend));

  test(`sql ${backend}: user:Alice and user:alice are different users in every index`, async (t) => {
    const { store, teardown } = await openSqlStore(backend);
    try {
      await store.write([], [{ object: 'doc:Readme', relation: 'viewer', user: 'user:Alice' }]);
      const k = (user: string, objectId = 'Readme') => ({ objectType: 'doc', objectId, relation: 'viewer', user });
      t.deepEqual((await store.readUserTuples([k('user:alice'), k('user:Alice'), k('user:Alice', 'readme')])).map((x) => x?.user), [undefined, 'user:Alice', undefined]);
      t.deepEqual(await store.readStartingWithUsers({ objectType: 'doc', relation: 'viewer', users: ['user:alice'] }), []);
      t.deepEqual((await store.readObjectRelations([{ objectType: 'doc', objectId: 'readme', relation: 'viewer' }], 'all'))[0], []);
      // Writing the other case is a new tuple, not a duplicate.
      await store.write([], [{ object: 'doc:Readme', relation: 'viewer', user: 'user:alice' }]);
      t.deepEqual((await store.readPage({ user: 'user:alice' }, { pageSize: 10 })).items.map((x) => x.user), ['user:alice']);
    } finally {
      await teardown();
    }
  });

  test(`sql ${backend}: scanTuples returns identifiers exactly, even ones the engine would reject`, async (t) => {
    const { store, teardown } = await openSqlStore(backend);
    try {
      const odd = [
        { object: 'doc:a\tb', relation: 'viewer', user: 'user:x' },
        { object: 'doc:c', relation: 'viewer', user: 'user:\ty' },
        { object: 'doc:d', relation: 'viewer', user: 'user:z' },
      ];
      await store.write([], odd);
      const seen: string[] = [];
      for await (const batch of store.scanTuples({ batchSize: 2 })) for (const x of batch) seen.push(`${x.object}|${x.relation}|${x.user}`);
      t.deepEqual(seen.sort(), odd.map((x) => `${x.object}|${x.relation}|${x.user}`).sort());
    } finally {
      await teardown();
    }
  });

  test(`sql ${backend}: a failed write leaves no revision, tuple or change behind`, async (t) => {
    const { store, teardown } = await openSqlStore(backend);
    try {
      await store.write([], [{ object: 'doc:1', relation: 'viewer', user: 'user:a' }]);
      const err = await t.throwsAsync(store.write([], [{ object: 'doc:2', relation: 'viewer', user: 'user:b' }, { object: 'doc:1', relation: 'viewer', user: 'user:a' }]));
      t.true(err instanceof LatchkeyError);
      t.is((err as LatchkeyError).code, 'already_exists');
      t.is(await store.revision(), 1);
      t.is((await store.readChanges({ afterRevision: 0, limit: 100 })).length, 1);
    } finally {
      await teardown();
    }
  });

  test(`sql ${backend}: a write whose clash comes after rows already inserted by it leaves none of them, and the store writes on`, async (t) => {
    const { store, teardown } = await openSqlStore(backend);
    try {
      await store.write([], [{ object: 'doc:old', relation: 'viewer', user: 'user:a' }]);
      // 1,200 rows are several statements: the clash is in the last one, after the others inserted their rows.
      const fresh = Array.from({ length: 1199 }, (_, i) => ({ object: `doc:${i}`, relation: 'viewer', user: `user:${i % 5}` }));
      const err = await t.throwsAsync(store.write([{ object: 'doc:old', relation: 'viewer', user: 'user:a' }], [...fresh, { object: 'doc:old', relation: 'viewer', user: 'user:b' }, { object: 'doc:0', relation: 'viewer', user: 'user:0' }]));
      t.is((err as LatchkeyError).code, 'already_exists');
      t.is((err as LatchkeyError).reason, 'tuple_exists');
      t.is(await store.revision(), 1);
      t.is((await store.readChanges({ afterRevision: 0, limit: 100 })).length, 1);
      const keys = fresh.map((w) => ({ objectType: 'doc', objectId: w.object.slice(4), relation: 'viewer', user: w.user }));
      t.is((await store.readUserTuples(keys)).filter((x) => x !== undefined).length, 0);
      t.deepEqual((await store.readPage({}, { pageSize: 10 })).items.map((x) => `${x.object}@${x.user}`), ['doc:old@user:a']);
      // The connection is usable: the same write without the clash commits whole.
      t.is(await store.write([{ object: 'doc:old', relation: 'viewer', user: 'user:a' }], [...fresh, { object: 'doc:old', relation: 'viewer', user: 'user:b' }]), 2);
      t.is((await store.readUserTuples(keys)).filter((x) => x !== undefined).length, 1199);
      t.is((await store.readChanges({ afterRevision: 1, limit: 2000 })).length, 1201);
    } finally {
      await teardown();
    }
  });

  test(`sql ${backend}: concurrent writes get distinct consecutive revisions`, async (t) => {
    const { store, teardown } = await openSqlStore(backend);
    try {
      const revs = await Promise.all(Array.from({ length: 8 }, (_, i) => store.write([], [{ object: `doc:${i}`, relation: 'viewer', user: 'user:a' }])));
      t.deepEqual([...revs].sort((a, b) => a - b), [1, 2, 3, 4, 5, 6, 7, 8]);
      const changes = await store.readChanges({ afterRevision: 0, limit: 100 });
      t.deepEqual(changes.map((c) => c.revision), [1, 2, 3, 4, 5, 6, 7, 8]);
    } finally {
      await teardown();
    }
  });

  test(`sql ${backend}: large batches are split under the parameter limits`, async (t) => {
    const { store, teardown } = await openSqlStore(backend);
    try {
      const writes = Array.from({ length: 1200 }, (_, i) => ({ object: `doc:${i}`, relation: 'viewer', user: `user:${i % 7}` }));
      t.is(await store.write([], writes), 1);
      const keys = writes.map((w) => ({ objectType: 'doc', objectId: w.object.slice(4), relation: 'viewer', user: w.user }));
      t.is((await store.readUserTuples(keys)).filter((x) => x !== undefined).length, 1200);
      t.is((await store.readStartingWithUsers({ objectType: 'doc', relation: 'viewer', users: ['user:3'] })).length, Math.ceil((1200 - 3) / 7));
      t.is(await store.write(writes, []), 2);
      t.false(await store.hasTuples());
    } finally {
      await teardown();
    }
  });
}

test('sql sqlite in memory: a write whose clash comes after rows already inserted by it leaves none of them, on a connection that stays whole', async (t) => {
  const sequelize = openSequelize('sqlite::memory:', { logging: false });
  const store = await SqlStore.open({ sequelize });
  const warnings: unknown[] = [];
  const warn = console.warn;
  console.warn = (...args: unknown[]) => warnings.push(args);
  try {
    await store.write([], [{ object: 'doc:old', relation: 'viewer', user: 'user:a' }]);
    const fresh = Array.from({ length: 1199 }, (_, i) => ({ object: `doc:${i}`, relation: 'viewer', user: `user:${i % 5}` }));
    const err = await t.throwsAsync(store.write([], [...fresh, { object: 'doc:old', relation: 'viewer', user: 'user:a' }]));
    t.is((err as LatchkeyError).reason, 'tuple_exists');
    t.is(await store.revision(), 1);
    t.is((await store.readChanges({ afterRevision: 0, limit: 2000 })).length, 1);
    // The database lives in its connection: had the rollback broken it, the first tuple would be gone too.
    t.is(await store.write([], fresh), 2);
    t.is((await store.readChanges({ afterRevision: 0, limit: 2000 })).length, 1200);
    t.deepEqual(warnings, []);
  } finally {
    console.warn = warn;
    await store.close();
    await sequelize.close();
  }
});

test('sql sqlite: the connection closes cleanly after reads and writes, whether or not the store was closed first', async (t) => {
  for (const closeStore of [true, false]) {
    const { store, sequelize, db } = await openSqlStore('sqlite');
    await store.write([], [{ object: 'doc:1', relation: 'viewer', user: 'user:a' }]);
    await store.readUserTuples([{ objectType: 'doc', objectId: '1', relation: 'viewer', user: 'user:a' }]);
    await store.readObjectRelations([{ objectType: 'doc', objectId: '1', relation: 'viewer' }], 'all');
    // Time for the checkpoint thread to open the file after the write's commit.
    await delay(100);
    if (closeStore) await store.close();
    await t.notThrowsAsync(sequelize.close());
    // Every connection to the file is closed, the checkpoint thread's included: SQLite removed its log and shared memory.
    t.deepEqual(await readdir(dirname(db.url.slice('sqlite:'.length))), ['db.sqlite'], closeStore ? 'store closed first' : 'store left open');
    await db.drop();
  }
});

test('sql sqlite: two stores on one sequelize instance keep connections of their own', async (t) => {
  const { store: a, sequelize, teardown } = await openSqlStore('sqlite');
  const b = await SqlStore.open({ sequelize, migrate: false });
  try {
    const writes = (s: SqlStore, prefix: string) => Array.from({ length: 6 }, (_, i) => s.write([], [{ object: `doc:${prefix}${i}`, relation: 'viewer', user: 'user:a' }]));
    const revs = await Promise.all([...writes(a, 'a'), ...writes(b, 'b')]);
    t.deepEqual([...revs].sort((x, y) => x - y), Array.from({ length: 12 }, (_, i) => i + 1));
    await b.close();
    // a keeps working after b released its connections.
    t.is(await a.write([], [{ object: 'doc:z', relation: 'viewer', user: 'user:a' }]), 13);
    t.is((await a.readPage({}, { pageSize: 100 })).items.length, 13);
  } finally {
    await teardown();
  }
});

test('sql store: unknown options are rejected', async (t) => {
  const err = await t.throwsAsync(SqlStore.open({ sequelize: undefined as never, bogus: 1 } as never));
  t.is((err as LatchkeyError).code, 'invalid_argument');
  t.is((err as LatchkeyError).reason, 'invalid_option');
});

test('sql sqlite: writers on two connections to one file (two processes) both succeed', async (t) => {
  const { store: a, db, teardown } = await openSqlStore('sqlite');
  const { connect } = await import('./sql_helpers.ts');
  const other = await connect(db);
  try {
    const b = await SqlStore.open({ sequelize: other });
    const writes = Array.from({ length: 20 }, (_, i) => (i % 2 === 0 ? a : b).write([], [{ object: `doc:${i}`, relation: 'viewer', user: 'user:a' }]));
    const revs = await Promise.all(writes);
    t.deepEqual([...revs].sort((x, y) => x - y), Array.from({ length: 20 }, (_, i) => i + 1));
  } finally {
    await other.close();
    await teardown();
  }
});

test('sql sqlite: forward reads of usersets take the keys from fga_tuple_usersets (internal plan) and return the same tuples without it', async (t) => {
  const { store, sequelize, teardown } = await openSqlStore('sqlite');
  const ids = ['a', 'b', 'c'];
  const relations = ['viewer', 'member'];
  const users = ['user:1', 'user:2', 'user:*', 'group:a#member', 'group:b#member', 'folder:x#viewer', 'group:c#owner'];
  const tupleArb = fc.record({ id: fc.constantFrom(...ids), relation: fc.constantFrom(...relations), user: fc.constantFrom(...users), conditioned: fc.boolean() });
  const keys = ids.flatMap((id) => relations.map((relation) => ({ objectType: 'group', objectId: id, relation })));
  const read = async (kind: 'all' | 'usersets') => (await store.readObjectRelations(keys, kind)).map((g) => g.map((x) => `${x.object}#${x.relation}@${x.user}${x.condition === undefined ? '' : `[${x.condition.name}]`}`));
  try {
    const { sql, params } = levelSql('sqlite', DEFAULT_STORE_ID, [{ kind: 'usersets', keys: keys.slice(0, 2) }]);
    const plan = (await sequelize.query(`EXPLAIN QUERY PLAN ${sql}`, { replacements: params, type: QueryTypes.SELECT })) as { detail: string }[];
    t.true(plan.some((p) => p.detail.includes('fga_tuple_usersets')), JSON.stringify(plan));
    await t.notThrowsAsync(fc.assert(
      fc.asyncProperty(fc.uniqueArray(tupleArb, { maxLength: 25, selector: (x) => `${x.id}#${x.relation}@${x.user}` }), async (drawn) => {
        const tuples = drawn.map((x) => ({ object: `group:${x.id}`, relation: x.relation, user: x.user, ...(x.conditioned ? { condition: { name: 'cond', context: { n: 1 } } } : {}) }));
        if (tuples.length > 0) await store.write([], tuples);
        try {
          const expected = (usersetsOnly: boolean) =>
            keys.map((k) =>
              tuples
                .filter((x) => x.object === `group:${k.objectId}` && x.relation === k.relation && (!usersetsOnly || x.user.includes('#')))
                .map((x) => `${x.object}#${x.relation}@${x.user}${x.condition === undefined ? '' : '[cond]'}`)
                .sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)),
            );
          assert.deepStrictEqual(await read('usersets'), expected(true));
          assert.deepStrictEqual(await read('all'), expected(false));
          // A key asked twice gets its tuples once each time.
          const twice = (await store.readObjectRelations([...keys, ...keys], 'usersets')).map((g) => g.map((x) => `${x.object}#${x.relation}@${x.user}${x.condition === undefined ? '' : `[${x.condition.name}]`}`));
          assert.deepStrictEqual(twice, [...expected(true), ...expected(true)]);
        } finally {
          if (tuples.length > 0) await store.write(tuples, []);
        }
      }),
      { numRuns: 15 },
    ));
    // The same reads through the primary key alone (a file whose migrations stopped before 0003).
    await store.write([], [{ object: 'group:a', relation: 'member', user: 'group:b#member' }, { object: 'group:a', relation: 'member', user: 'user:1' }]);
    const withIndex = await read('usersets');
    await sequelize.query('DROP INDEX fga_tuple_usersets');
    // Two keys per statement: a key asked twice lands in two statements, and still gets its tuples once.
    const other = await SqlStore.open({ sequelize, migrate: false, batchSize: 2 });
    try {
      t.deepEqual((await other.readObjectRelations(keys, 'usersets')).map((g) => g.map((x) => `${x.object}#${x.relation}@${x.user}`)), withIndex);
      t.deepEqual((await other.readObjectRelations([...keys, ...keys], 'usersets')).map((g) => g.map((x) => `${x.object}#${x.relation}@${x.user}`)), [...withIndex, ...withIndex]);
      t.deepEqual(withIndex.flat(), ['group:a#member@group:b#member']);
    } finally {
      await other.close();
    }
  } finally {
    await teardown();
  }
});
