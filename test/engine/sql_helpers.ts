/**
 * Test helper for the SQL tuple store tests: opens a {@link SqlStore} on a
 * fresh database of a backend, and tears the database down when the store is
 * closed (the store-conformance suite closes every store it makes).
 */
import { Sequelize } from 'sequelize';
import { openSequelize } from '../../engine/sql/sqlite_sequelize.ts';
import type { TupleStore } from '../../engine/index.ts';
import { SqlStore } from '../../engine/sql/sql_store.ts';
import { createTestDatabase, type SqlBackend, type TestDatabase } from '../helpers/databases.ts';

export interface OpenedSqlStore {
  store: SqlStore;
  sequelize: Sequelize;
  db: TestDatabase;
  /** Closes the store and the connection, and drops the database. */
  teardown(): Promise<void>;
}

/** A new Sequelize connection to `db` (SQLite in WAL mode with a busy timeout). */
export async function connect(db: TestDatabase): Promise<Sequelize> {
  const sequelize = openSequelize(db.url, { logging: false, ...(db.backend === 'sqlite' ? { pool: { max: 1, min: 0 } } : {}) });
  if (db.backend === 'sqlite') {
    await sequelize.query('PRAGMA journal_mode = WAL');
    await sequelize.query('PRAGMA busy_timeout = 5000');
  }
  return sequelize;
}

export async function openSqlStore(backend: SqlBackend): Promise<OpenedSqlStore> {
  const db = await createTestDatabase(backend, 'lk_fga');
  const sequelize = await connect(db);
  const store = await SqlStore.open({ sequelize });
  return {
    store,
    sequelize,
    db,
    async teardown() {
      await store.close();
      await sequelize.close();
      await db.drop();
    },
  };
}

/** The store as a {@link TupleStore} whose `close()` also drops its database. */
export async function disposableSqlStore(backend: SqlBackend): Promise<TupleStore> {
  const opened = await openSqlStore(backend);
  return new Proxy(opened.store, {
    get(target, prop) {
      if (prop === 'close') return () => opened.teardown();
      const v = Reflect.get(target, prop, target) as unknown;
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
}
