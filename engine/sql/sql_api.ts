/**
 * Everything `engine/sql/index.ts` exposes, loaded by it only once sequelize is
 * known to be installed.
 *
 * - {@link SqlStore}: the tuple store on SQLite, PostgreSQL and MySQL/MariaDB
 *   (docs/storage.md).
 * - {@link runMigrations}: the versioned, locked migrations runner every
 *   SQL-backed component uses.
 * - {@link nodeSqliteDriver}, {@link sqliteSequelize}, {@link openSequelize}:
 *   sequelize on SQLite through Node's built-in `node:sqlite`, so the process
 *   has one SQLite library.
 */
export { SqlStore, type SqlStoreOptions } from './sql_store.ts';
export * from './migrate.ts';
export { nodeSqliteDriver, isNodeSqliteConnection } from './node_sqlite_driver.ts';
export { sqliteSequelize, openSequelize } from './sqlite_sequelize.ts';
export { RevisionListener, type RevisionListenerOptions } from './revision_listener.ts';
