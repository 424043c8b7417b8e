import test from 'ava';
import { QueryTypes } from 'sequelize';
import { sqlBackends } from '../helpers/databases.ts';
import { openSqlStore } from './sql_helpers.ts';
import { LatchkeyError } from '../../engine/index.ts';

const tuples = [
  { object: 'doc:1', relation: 'viewer', user: 'user:123' },
  { object: 'doc:2', relation: 'editor', user: 'user:123', condition: { name: 'in_office', context: { ip: '10.0.0.1' } } },
  { object: 'group:g', relation: 'member', user: 'user:123' },
  { object: 'doc:1', relation: 'viewer', user: 'user:1234' },
  { object: 'doc:1', relation: 'viewer', user: 'user:USER' },
  { object: 'doc:3', relation: 'viewer', user: 'user:user' },
  { object: 'doc:3', relation: 'viewer', user: 'group:g#member' },
];

for (const backend of sqlBackends()) {
  test(`sql ${backend}: deleteTuplesOfUsers commits with the caller's transaction`, async (t) => {
    const { store, sequelize, teardown } = await openSqlStore(backend);
    try {
      t.is(store.sequelize, sequelize);
      await store.write([], tuples);
      await sequelize.query('CREATE TABLE lk_probe (id INTEGER NOT NULL PRIMARY KEY)');
      const n = await sequelize.transaction(async (transaction) => {
        await sequelize.query('INSERT INTO lk_probe (id) VALUES (1)', { transaction });
        return store.deleteTuplesOfUsers(['user:123', 'user:user', 'user:nobody'], { transaction });
      });
      t.is(n, 4);
      t.is(await store.revision(), 2);
      // Exact matches only: user:1234, user:USER and the userset stay.
      const left = (await store.readPage({}, { pageSize: 100 })).items.map((x) => `${x.object}#${x.relation}@${x.user}`).sort();
      t.deepEqual(left, ['doc:1#viewer@user:1234', 'doc:1#viewer@user:USER', 'doc:3#viewer@group:g#member']);
      const changes = await store.readChanges({ afterRevision: 1, limit: 100 });
      t.true(changes.every((c) => c.revision === 2 && c.operation === 'delete'));
      t.deepEqual(
        changes.map((c) => `${c.tuple.object}#${c.tuple.relation}@${c.tuple.user}`).sort(),
        ['doc:1#viewer@user:123', 'doc:2#editor@user:123', 'doc:3#viewer@user:user', 'group:g#member@user:123'],
      );
      // The caller's own statement committed too.
      t.deepEqual(await sequelize.query('SELECT id FROM lk_probe', { type: QueryTypes.SELECT }), [{ id: 1 }]);
      // Nothing left to delete: no rows, one more revision.
      t.is(await sequelize.transaction((transaction) => store.deleteTuplesOfUsers(['user:123'], { transaction })), 0);
      t.is(await store.revision(), 3);
      t.is((await store.readChanges({ afterRevision: 2, limit: 100 })).length, 0);
      // A later write continues the sequence.
      t.is(await store.write([], [{ object: 'doc:9', relation: 'viewer', user: 'user:123' }]), 4);
    } finally {
      await teardown();
    }
  });

  test(`sql ${backend}: deleteTuplesOfUsers rolls back with the caller's transaction`, async (t) => {
    const { store, sequelize, teardown } = await openSqlStore(backend);
    try {
      await store.write([], tuples);
      await sequelize.query('CREATE TABLE lk_probe (id INTEGER NOT NULL PRIMARY KEY)');
      const err = await t.throwsAsync(
        sequelize.transaction(async (transaction) => {
          await sequelize.query('INSERT INTO lk_probe (id) VALUES (1)', { transaction });
          t.is(await store.deleteTuplesOfUsers(['user:123'], { transaction }), 3);
          throw new Error('the caller fails after the delete');
        }),
      );
      t.is(err?.message, 'the caller fails after the delete');
      t.deepEqual(await sequelize.query('SELECT id FROM lk_probe', { type: QueryTypes.SELECT }), []);
      t.is(await store.revision(), 1);
      t.is((await store.readPage({}, { pageSize: 100 })).items.length, tuples.length);
      t.is((await store.readChanges({ afterRevision: 1, limit: 100 })).length, 0);
      t.is(await store.write([], [{ object: 'doc:9', relation: 'viewer', user: 'user:9' }]), 2);
    } finally {
      await teardown();
    }
  });

  test(`sql ${backend}: deleteTuplesOfUsers refuses a transaction of another connection`, async (t) => {
    const a = await openSqlStore(backend);
    const b = await openSqlStore(backend);
    try {
      await a.store.write([], tuples);
      const err = await t.throwsAsync(b.sequelize.transaction((transaction) => a.store.deleteTuplesOfUsers(['user:123'], { transaction })));
      t.true(err instanceof LatchkeyError);
      t.is((err as LatchkeyError).code, 'failed_precondition');
      t.is((err as LatchkeyError).reason, 'foreign_transaction');
      const missing = await t.throwsAsync(a.store.deleteTuplesOfUsers(['user:123'], undefined as never));
      t.is((missing as LatchkeyError).code, 'failed_precondition');
      t.is((await a.store.readPage({}, { pageSize: 100 })).items.length, tuples.length);
      t.is(await a.store.revision(), 1);
    } finally {
      await a.teardown();
      await b.teardown();
    }
  });
}
