/**
 * Migration 0004 (many stores) on every SQL backend: a database migrated
 * before stores existed, holding a model, tuples, changes and a revision,
 * keeps all of it as the default store after the upgrade, and other stores
 * start empty beside it. Uses the internal migration list to stop before
 * 0004, as an older release left the schema.
 */
import test from 'ava';
import { DEFAULT_STORE_ID, Engine } from '../../engine/index.ts';
import { runMigrations } from '../../engine/sql/migrate.ts';
import { FGA_MIGRATIONS } from '../../engine/sql/fga_migrations.ts';
import { SqlStore } from '../../engine/sql/sql_store.ts';
import { createTestDatabase, sqlBackends } from '../helpers/databases.ts';
import { connect } from './sql_helpers.ts';

const MODEL = { schema_version: '1.1', type_definitions: [{ type: 'user' }, { type: 'doc', relations: { viewer: { this: {} } }, metadata: { relations: { viewer: { directly_related_user_types: [{ type: 'user' }] } } } }] };

for (const backend of sqlBackends()) {
  test(`sql ${backend}: data written before stores existed becomes the default store (internal migrations)`, async (t) => {
    const db = await createTestDatabase(backend, 'lk_fga_mig');
    const sequelize = await connect(db);
    try {
      const before = FGA_MIGRATIONS.filter((m) => m.id < '0004');
      await runMigrations(sequelize, 'fga', before);
      const modelId = '01J00000000000000000000001';
      await sequelize.query('INSERT INTO fga_model (id, model, created_at) VALUES (?, ?, ?)', { replacements: [modelId, JSON.stringify({ id: modelId, ...MODEL }), 1] });
      await sequelize.query(
        "INSERT INTO fga_tuple (object_type, object_id, relation, _user, user_kind, condition_name, condition_context, revision, inserted_at) VALUES ('doc', '1', 'viewer', 'user:anne', 'o', NULL, NULL, 2, 5), ('doc', '2', 'viewer', 'user:bob', 'o', 'c', '{\"x\":1}', 2, 5)",
      );
      await sequelize.query(
        "INSERT INTO fga_changelog (revision, seq, operation, object_type, object_id, relation, _user, condition_name, condition_context, inserted_at) VALUES (1, 0, 'w', 'doc', '9', 'viewer', 'user:anne', NULL, NULL, 4), (2, 0, 'd', 'doc', '9', 'viewer', 'user:anne', NULL, NULL, 5), (2, 1, 'w', 'doc', '1', 'viewer', 'user:anne', NULL, NULL, 5)",
      );
      await sequelize.query('UPDATE fga_revision SET revision = 2 WHERE id = 1');

      const store = await SqlStore.open({ sequelize });
      try {
        t.is(store.storeId, DEFAULT_STORE_ID);
        t.is(await store.revision(), 2);
        t.is(await store.latestModelId(), modelId);
        t.deepEqual((await store.readPage({}, { pageSize: 10 })).items.map((x) => `${x.object}@${x.user}${x.condition === undefined ? '' : `[${x.condition.name}]`}`), ['doc:1@user:anne', 'doc:2@user:bob[c]']);
        t.deepEqual((await store.readChanges({ afterRevision: 0, limit: 10 })).map((c) => `${c.revision}${c.operation}${c.tuple.object}`), ['1writedoc:9', '2deletedoc:9', '2writedoc:1']);
        const engine = new Engine({ store });
        t.true((await engine.check({ user: 'user:anne', relation: 'viewer', object: 'doc:1' })).allowed);
        t.deepEqual((await engine.listStores()).stores.map((s) => [s.id, s.name]), [[DEFAULT_STORE_ID, 'default']]);
        // The next write continues the default store's revision; a new store starts from nothing.
        t.deepEqual(await engine.write({ writes: [{ user: 'user:carl', relation: 'viewer', object: 'doc:3' }] }), { revision: 3 });
        const made = await engine.createStore({ name: 'tenant' });
        const other = engine.forStore(made.id);
        t.is(await other.readModel(), undefined);
        await other.writeModel(MODEL);
        t.false((await other.check({ user: 'user:anne', relation: 'viewer', object: 'doc:1' })).allowed);
        t.deepEqual(await other.write({ writes: [{ user: 'user:anne', relation: 'viewer', object: 'doc:1' }] }), { revision: 1 });
        // Running the migrations again changes nothing.
        t.deepEqual(await runMigrations(sequelize, 'fga', FGA_MIGRATIONS), []);
      } finally {
        await store.close();
      }
    } finally {
      await sequelize.close();
      await db.drop();
    }
  });
}
