/**
 * The SQL store's changes inside a caller's transaction that organizations
 * use (docs/organizations.md, "Storage"): `ensureTuplesInTransaction` states
 * an end state (absent deletes and present writes are skipped; nothing
 * changed, no revision), and `deleteTuplesOfObjects` removes every tuple
 * about an object or naming it (or one of its usersets) as user, with `%`,
 * `_` and `!` in ids taken literally. Both commit and roll back with the
 * caller's transaction and write their changelog rows.
 */
import test from 'ava';
import { sqlBackends } from '../helpers/databases.ts';
import { openSqlStore } from './sql_helpers.ts';
import { LatchkeyError } from '../../engine/index.ts';

const key = (x: { object: string; relation: string; user: string }): string => `${x.object}#${x.relation}@${x.user}`;

for (const backend of sqlBackends()) {
  test(`sql ${backend}: ensureTuplesInTransaction writes the end state, skips what already holds, rolls back with the caller`, async (t) => {
    const { store, sequelize, teardown } = await openSqlStore(backend);
    try {
      await store.write([], [{ object: 'organization:o1', relation: 'member', user: 'user:a' }]);
      const n = await sequelize.transaction((transaction) =>
        store.ensureTuplesInTransaction(
          [{ object: 'organization:o1', relation: 'member', user: 'user:a' }, { object: 'organization:o1', relation: 'admin', user: 'user:nobody' }],
          [{ object: 'organization:o1', relation: 'admin', user: 'user:a' }, { object: 'organization:o1', relation: 'owner', user: 'user:b' }],
          { transaction },
        ),
      );
      t.is(n, 3, 'one delete of a present tuple, two writes; the absent delete is skipped');
      t.is(await store.revision(), 2);
      const rows = (await store.readPage({}, { pageSize: 100 })).items.map(key).sort();
      t.deepEqual(rows, ['organization:o1#admin@user:a', 'organization:o1#owner@user:b']);
      const changes = await store.readChanges({ afterRevision: 1, limit: 100 });
      t.deepEqual(changes.map((c) => `${c.operation} ${key(c.tuple)}`).sort(), ['delete organization:o1#member@user:a', 'write organization:o1#admin@user:a', 'write organization:o1#owner@user:b']);
      // Already the end state: nothing written, no revision.
      t.is(await sequelize.transaction((transaction) => store.ensureTuplesInTransaction([], [{ object: 'organization:o1', relation: 'owner', user: 'user:b' }], { transaction })), 0);
      t.is(await store.revision(), 2);
      // A caller that fails after the write takes it back.
      await t.throwsAsync(
        sequelize.transaction(async (transaction) => {
          await store.ensureTuplesInTransaction([], [{ object: 'organization:o1', relation: 'member', user: 'user:c' }], { transaction });
          throw new Error('the caller fails');
        }),
        { message: 'the caller fails' },
      );
      t.deepEqual((await store.readPage({ objectType: 'organization', objectId: 'o1', relation: 'member' }, { pageSize: 100 })).items, []);
      t.is(await store.revision(), 2);
      // Not a transaction of the store's connection.
      const err = await t.throwsAsync(store.ensureTuplesInTransaction([], [], { transaction: undefined as never }));
      t.true(err instanceof LatchkeyError);
      t.is((err as LatchkeyError).reason, 'foreign_transaction');
    } finally {
      await teardown();
    }
  });

  test(`sql ${backend}: ensureTuplesInTransaction makes a wanted tuple held with an expiry lasting`, async (t) => {
    const { store, sequelize, teardown } = await openSqlStore(backend);
    try {
      const member = { object: 'organization:o1', relation: 'member', user: 'user:a' };
      const soon = new Date(Date.now() + 60_000).toISOString();
      await store.write([], [{ ...member, expires_at: soon }]);
      t.is((await store.readPage({ objectType: 'organization', objectId: 'o1' }, { pageSize: 10 })).items[0]?.expires_at !== undefined, true, 'held with an expiry');
      const n = await sequelize.transaction((transaction) => store.ensureTuplesInTransaction([], [member], { transaction }));
      t.is(n, 2, 'the expiring tuple deleted and the lasting one written');
      const items = (await store.readPage({ objectType: 'organization', objectId: 'o1' }, { pageSize: 10 })).items;
      t.deepEqual(items.map(key), [key(member)]);
      t.falsy(items[0]?.expires_at, 'no expiry left');
      // Stating it again changes nothing.
      t.is(await sequelize.transaction((transaction) => store.ensureTuplesInTransaction([], [member], { transaction })), 0);
    } finally {
      await teardown();
    }
  });

  test(`sql ${backend}: deleteTuplesOfObjects removes the tuples about an object and naming it, and nothing that only looks like it`, async (t) => {
    const { store, sequelize, teardown } = await openSqlStore(backend);
    try {
      const keep = [
        { object: 'organization:o_x', relation: 'member', user: 'user:a' },
        { object: 'document:2', relation: 'viewer', user: 'team:t_x#member' },
        { object: 'document:3', relation: 'viewer', user: 'team:t%' },
        { object: 'document:4', relation: 'viewer', user: 'team:t1x#member' },
        { object: 'document:5', relation: 'viewer', user: 'team:t1' + '!' },
      ];
      const gone = [
        { object: 'organization:o%', relation: 'owner', user: 'user:a' },
        { object: 'team:t1', relation: 'member', user: 'user:a' },
        { object: 'team:t1', relation: 'organization', user: 'organization:o%' },
        { object: 'document:1', relation: 'viewer', user: 'team:t1#member' },
        { object: 'document:1', relation: 'org', user: 'organization:o%' },
      ];
      await store.write([], [...keep, ...gone]);
      const n = await sequelize.transaction((transaction) => store.deleteTuplesOfObjects(['organization:o%', 'team:t1'], { transaction }));
      t.is(n, gone.length);
      t.deepEqual((await store.readPage({}, { pageSize: 100 })).items.map(key).sort(), keep.map(key).sort(), '% and _ in ids match only themselves');
      const changes = await store.readChanges({ afterRevision: 1, limit: 100 });
      t.deepEqual(changes.map((c) => key(c.tuple)).sort(), gone.map(key).sort());
      t.true(changes.every((c) => c.operation === 'delete'));
    } finally {
      await teardown();
    }
  });
}
