/**
 * The engine's SQL storage, as its own entry point (`latchkey/engine/sql`), so
 * that `latchkey/engine` alone never loads sequelize or a database driver.
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
export { runMigrations, type Migration, type MigrationContext, type SqlDialect } from './migrate.ts';
export { nodeSqliteDriver, isNodeSqliteConnection } from './node_sqlite_driver.ts';
export { sqliteSequelize, openSequelize } from './sqlite_sequelize.ts';
