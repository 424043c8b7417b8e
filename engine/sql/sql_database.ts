/**
 * The main SQL database as the stores see it, without loading sequelize:
 *
 * - {@link SqlDatabase}: the part of a `Sequelize` instance the stores use
 *   (raw statements with replacements, managed transactions, the dialect's
 *   name). A `Sequelize` instance is one (PostgreSQL, MySQL/MariaDB, and any
 *   SQLite instance built with sequelize); so is a {@link SqliteDatabase}
 *   (engine/sql/sqlite_database.ts), which the server opens for its SQLite
 *   main database so that sequelize and its dependencies (about 300 modules
 *   and 15 MiB of memory) are never loaded on SQLite.
 * - {@link QueryTypes} and {@link TransactionTypes}: sequelize's constants,
 *   with the same values, for statements and transactions on either.
 * - The error classes the SQLite database gives for a failed statement, with
 *   the names, `parent` and `original` sequelize gives the same failures, so
 *   that every check of a store (by name or by the driver's code) holds on
 *   both.
 *
 * sequelize is only named in types here (erased when the module loads).
 */
import type { QueryInterface, QueryTypes as SequelizeQueryTypes, Sequelize, Transaction } from 'sequelize';

/** The part of a `Sequelize` instance the stores use (see the module doc). */
export interface SqlDatabase {
  getDialect(): string;
  query: Sequelize['query'];
  transaction: Sequelize['transaction'];
  getQueryInterface(): Pick<QueryInterface, 'describeTable'>;
  authenticate(): Promise<void>;
  close(): Promise<void>;
}

/** sequelize's `QueryTypes` (the same strings), for {@link SqlDatabase.query}'s `type`. */
export const QueryTypes = {
  SELECT: 'SELECT',
  INSERT: 'INSERT',
  UPDATE: 'UPDATE',
  BULKUPDATE: 'BULKUPDATE',
  BULKDELETE: 'BULKDELETE',
  DELETE: 'DELETE',
  UPSERT: 'UPSERT',
  VERSION: 'VERSION',
  SHOWTABLES: 'SHOWTABLES',
  SHOWINDEXES: 'SHOWINDEXES',
  DESCRIBE: 'DESCRIBE',
  RAW: 'RAW',
  FOREIGNKEYS: 'FOREIGNKEYS',
  SHOWCONSTRAINTS: 'SHOWCONSTRAINTS',
} as unknown as typeof SequelizeQueryTypes;

/** sequelize's `Transaction.TYPES` (SQLite's `BEGIN DEFERRED|IMMEDIATE|EXCLUSIVE`). */
export const TransactionTypes = {
  DEFERRED: 'DEFERRED',
  IMMEDIATE: 'IMMEDIATE',
  EXCLUSIVE: 'EXCLUSIVE',
} as unknown as typeof Transaction.TYPES;

/** A driver error with the statement that met it. */
type DriverError = Error & { code?: string; errno?: number; sql?: string; parameters?: unknown };

/** A statement failed in the database (sequelize's `DatabaseError`). */
export class SqlDatabaseError extends Error {
  readonly parent: DriverError;
  readonly original: DriverError;
  readonly sql: string | undefined;
  readonly parameters: unknown;
  constructor(parent: DriverError, message: string = parent.message) {
    super(message, { cause: parent });
    this.name = 'SequelizeDatabaseError';
    this.parent = parent;
    this.original = parent;
    this.sql = parent.sql;
    this.parameters = parent.parameters;
  }
}

/** The file stayed locked past the busy timeout (sequelize's `TimeoutError`). */
export class SqlTimeoutError extends SqlDatabaseError {
  constructor(parent: DriverError) {
    super(parent);
    this.name = 'SequelizeTimeoutError';
  }
}

/** A foreign key did not hold (sequelize's `ForeignKeyConstraintError`). */
export class SqlForeignKeyError extends SqlDatabaseError {
  constructor(parent: DriverError) {
    super(parent);
    this.name = 'SequelizeForeignKeyConstraintError';
  }
}

/**
 * Any other SQLite constraint failed: a unique or primary key, and, as
 * sequelize reports them on SQLite, NOT NULL and CHECK too (sequelize's
 * `UniqueConstraintError`; `fields` are the unique columns when SQLite names
 * them).
 */
export class SqlUniqueConstraintError extends SqlDatabaseError {
  readonly fields: string[];
  readonly errors: { message: string; type: string; path: string }[];
  constructor(parent: DriverError) {
    super(parent, 'Validation error');
    this.name = 'SequelizeUniqueConstraintError';
    const named = /UNIQUE constraint failed: (.*)/u.exec(parent.message);
    this.fields = named === null ? [] : named[1]!.split(', ').map((c) => c.split('.')[1] ?? c);
    this.errors = this.fields.map((f) => ({ message: `${f} must be unique`, type: 'unique violation', path: f }));
  }
}

/** The database file could not be opened (sequelize's `ConnectionError`). */
export class SqlConnectionError extends Error {
  readonly parent: DriverError;
  readonly original: DriverError;
  constructor(parent: DriverError) {
    super(parent.message, { cause: parent });
    this.name = 'SequelizeConnectionError';
    this.parent = parent;
    this.original = parent;
  }
}

/** The error a failed SQLite statement is reported as, by its driver code (sequelize's SQLite `formatError`). */
export function sqliteStatementError(err: unknown, sql: string, parameters?: unknown): Error {
  if (!(err instanceof Error)) return new Error(String(err));
  const parent = Object.assign(err as DriverError, { sql, ...(parameters !== undefined ? { parameters } : {}) });
  const code = String(parent.code ?? '');
  if (code.startsWith('SQLITE_CONSTRAINT')) {
    return parent.message.includes('FOREIGN KEY constraint failed') ? new SqlForeignKeyError(parent) : new SqlUniqueConstraintError(parent);
  }
  if (code === 'SQLITE_BUSY') return new SqlTimeoutError(parent);
  return new SqlDatabaseError(parent);
}

/** True for a unique-constraint violation, reported through sequelize or a {@link SqliteDatabase}. */
export function isUniqueConstraintError(err: unknown): boolean {
  return (err as { name?: unknown } | null)?.name === 'SequelizeUniqueConstraintError';
}
