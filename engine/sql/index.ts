/**
 * The engine's SQL storage, as its own entry point (`@latchkey/engine/sql`),
 * so that the engine alone never loads sequelize or a database driver.
 *
 * - {@link SqlStore}: the tuple store on SQLite, PostgreSQL and MySQL/MariaDB
 *   (docs/storage.md).
 * - {@link RevisionListener}: PostgreSQL LISTEN on the revision every committed
 *   write notifies, for caches that must catch up at once (docs/caching.md).
 * - {@link runMigrations}: the versioned, locked migrations runner every
 *   SQL-backed component uses.
 * - {@link nodeSqliteDriver}, {@link sqliteSequelize}, {@link openSequelize}:
 *   sequelize on SQLite through Node's built-in `node:sqlite`, so the process
 *   has one SQLite library.
 * - {@link SqliteDatabase}: a SQLite database with the part of sequelize's
 *   API the stores use, without loading sequelize (what the server opens on
 *   SQLite).
 *
 * sequelize is an optional peer dependency of the engine package (and pg or
 * mysql2 the driver for PostgreSQL or MySQL, which sequelize loads itself).
 * Without it, importing this entry point throws `failed_precondition`
 * (reason `missing_dependency`) naming the package to install, instead of a
 * module-resolution error pointing into the package's files.
 */
import { LatchkeyError } from '../errors.ts';
import type * as Api from './sql_api.ts';

function missingPeer(err: unknown): LatchkeyError | undefined {
  const e = err as { code?: unknown; message?: unknown };
  if (e.code !== 'ERR_MODULE_NOT_FOUND' || !String(e.message).includes("'sequelize'")) return undefined;
  return new LatchkeyError(
    'failed_precondition',
    'the SQL tuple store needs sequelize, an optional peer dependency of the engine: npm install sequelize (plus pg for PostgreSQL or mysql2 for MySQL/MariaDB; SQLite uses node:sqlite)',
    { reason: 'missing_dependency', details: { package: 'sequelize' }, cause: err },
  );
}

// Resolved, not loaded: sequelize itself loads when a Sequelize instance is first built
// (engine/sql/sqlite_sequelize.ts), never for a SqliteDatabase.
try {
  import.meta.resolve('sequelize');
} catch (err) {
  throw missingPeer(err) ?? err;
}
const api: typeof Api = await import('./sql_api.ts');

export const SqlStore: typeof Api.SqlStore = api.SqlStore;
export type SqlStore = Api.SqlStore;
export const runMigrations: typeof Api.runMigrations = api.runMigrations;
export const nodeSqliteDriver: typeof Api.nodeSqliteDriver = api.nodeSqliteDriver;
export const isNodeSqliteConnection: typeof Api.isNodeSqliteConnection = api.isNodeSqliteConnection;
export const sqliteSequelize: typeof Api.sqliteSequelize = api.sqliteSequelize;
export const openSequelize: typeof Api.openSequelize = api.openSequelize;
export const RevisionListener: typeof Api.RevisionListener = api.RevisionListener;
export type RevisionListener = Api.RevisionListener;
export type { RevisionListenerOptions, SqlStoreOptions, Migration, MigrationContext, SqlDialect } from './sql_api.ts';
// Neither loads sequelize: exported as they are.
export * from './sql_database.ts';
export { SqliteDatabase, SqliteTransaction } from './sqlite_database.ts';
