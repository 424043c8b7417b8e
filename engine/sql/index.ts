/**
 * The engine's SQL storage, as its own entry point (`latchkey/engine/sql`), so
 * that `latchkey/engine` alone never loads sequelize or a database driver.
 *
 * - {@link SqlStore}: the tuple store on SQLite, PostgreSQL and MySQL/MariaDB
 *   (docs/storage.md).
 * - {@link runMigrations}: the versioned, locked migrations runner every
 *   SQL-backed component uses.
 */
export { SqlStore, type SqlStoreOptions } from './sql_store.ts';
export { runMigrations, type Migration, type MigrationContext, type SqlDialect } from './migrate.ts';
