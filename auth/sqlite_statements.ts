/**
 * The hottest statements of the SQL stores on SQLite, run on the `node:sqlite`
 * connection the database itself uses outside transactions (sequelize's, or
 * the server's `SqliteDatabase`: engine/sql/sqlite_database.ts), with bound
 * parameters.
 *
 * Why: sequelize formats `replacements` into the SQL text, so each call is a
 * new text that the driver prepares again, and it builds an `Error` stack for
 * every query; for the user read of `profile` and `validate_session` and the
 * audit row of a sign-out that was about a quarter of the request's CPU time.
 * (`SqliteDatabase` binds them, but finds them in the text on every call and
 * answers from the event loop.) Here a text is prepared once per connection
 * and a SELECT answers at once (the driver's `allNow`), or, while statements
 * wait for a lock on the connection, from the event loop behind them.
 *
 * Same rows as through sequelize (plain objects, the driver's values), same
 * connection, so the same snapshot and the same lock waits. Failures are the
 * errors sequelize's SQLite dialect gives for the same driver codes, by name
 * (engine/sql/sql_database.ts: a lock held past the busy timeout is a
 * `SequelizeTimeoutError`, a constraint a `SequelizeUniqueConstraintError`,
 * anything else a `SequelizeDatabaseError`), so that callers and
 * {@link isDependencyFailure} see what they saw before. Statements inside a
 * transaction, and every other dialect, stay on the database's `query`.
 */
import { sqliteStatementError, type SqlDatabase } from '../engine/sql/sql_database.ts';
import { isNodeSqliteConnection } from '../engine/sql/index.ts';

/** The part of the driver's `Database` used here. */
interface NodeSqliteConnection {
  readonly closed: boolean;
  allNow(sql: string, params: readonly unknown[]): Record<string, unknown>[] | undefined;
  arraysNow(sql: string, params: readonly unknown[]): unknown[][] | undefined;
  changeMarkNow(): number | undefined;
  all(sql: string, params: readonly unknown[], callback: (err: Error | null, rows?: unknown[]) => void): unknown;
  run(sql: string, params: readonly unknown[], callback: (this: { changes: number }, err: Error | null) => void): unknown;
}

interface ConnectionManager {
  getConnection(options: Record<string, unknown>): Promise<unknown>;
}

/** Bound statements on the SQLite connection sequelize uses outside transactions. */
export class SqliteStatements {
  readonly #sequelize: SqlDatabase;
  #connection: NodeSqliteConnection | undefined;
  /** Set once the connection was found not to be the `node:sqlite` driver's: sequelize runs everything. */
  #foreign = false;

  private constructor(sequelize: SqlDatabase) {
    this.#sequelize = sequelize;
  }

  /** The statements of `sequelize` when it is on SQLite, else undefined (use sequelize). */
  static of(sequelize: SqlDatabase): SqliteStatements | undefined {
    return sequelize.getDialect() === 'sqlite' ? new SqliteStatements(sequelize) : undefined;
  }

  /**
   * The connection, or undefined when it is not the `node:sqlite` driver's
   * (then the caller uses sequelize). The database makes it on first use and
   * makes a new one after it was closed.
   */
  #open(): NodeSqliteConnection | undefined | Promise<NodeSqliteConnection | undefined> {
    const c = this.#connection;
    if (c !== undefined && !c.closed) return c;
    if (this.#foreign) return undefined;
    const manager = (this.#sequelize as unknown as { connectionManager: ConnectionManager }).connectionManager;
    // A file that cannot be opened rejects with the database's own connection error, passed on as it is.
    return manager.getConnection({}).then((conn) => {
      if (!isNodeSqliteConnection(conn)) {
        this.#foreign = true;
        return undefined;
      }
      this.#connection = conn as unknown as NodeSqliteConnection;
      return this.#connection;
    });
  }

  /** The rows of a SELECT (`?` placeholders), or undefined when sequelize must run it. */
  select(sql: string, params: readonly unknown[]): Promise<Record<string, unknown>[] | undefined> {
    const c = this.#open();
    if (c instanceof Promise) return c.then((conn) => (conn === undefined ? undefined : rows(conn, sql, params)));
    return c === undefined ? Promise.resolve(undefined) : rows(c, sql, params);
  }

  /**
   * {@link select} with each row an array of its column values in the order
   * selected (`node:sqlite` builds a row object in dictionary mode, its
   * column names made into keys again for every row).
   */
  values(sql: string, params: readonly unknown[]): Promise<unknown[][] | undefined> {
    const c = this.#open();
    if (c instanceof Promise) return c.then((conn) => (conn === undefined ? undefined : values(conn, sql, params)));
    return c === undefined ? Promise.resolve(undefined) : values(c, sql, params);
  }

  /**
   * {@link values} at once, without a promise: the rows, or undefined when
   * they are not at hand (the connection is not open yet or not the
   * `node:sqlite` driver's, statements wait for a lock on it, or the statement
   * failed); the caller then asks {@link values}, which answers or fails as
   * it always does.
   */
  valuesNow(sql: string, params: readonly unknown[]): unknown[][] | undefined {
    const c = this.#connection;
    if (c === undefined || c.closed) return undefined;
    try {
      return c.arraysNow(sql, params);
    } catch {
      return undefined;
    }
  }

  /**
   * The connection's change mark (engine/sql/node_sqlite_driver.ts
   * `changeMarkNow`): unchanged for as long as {@link valuesNow} would read
   * the same rows again; undefined when it cannot tell at once.
   */
  changeMarkNow(): number | undefined {
    const c = this.#connection;
    return c === undefined || c.closed ? undefined : c.changeMarkNow();
  }

  /** Runs a statement that returns no rows; resolves to the number of rows changed, or undefined when sequelize must run it. */
  async run(sql: string, params: readonly unknown[]): Promise<number | undefined> {
    const c = await this.#open();
    if (c === undefined) return undefined;
    return new Promise<number>((resolve, reject) => {
      c.run(sql, params, function (err) {
        if (err !== null) reject(sqliteStatementError(err, sql));
        else resolve(this.changes);
      });
    });
  }
}

function rows(c: NodeSqliteConnection, sql: string, params: readonly unknown[]): Promise<Record<string, unknown>[]> {
  let now: Record<string, unknown>[] | undefined;
  try {
    now = c.allNow(sql, params);
  } catch (err) {
    if (!isLockError(err)) return Promise.reject(sqliteStatementError(err, sql));
  }
  if (now !== undefined) return Promise.resolve(now);
  // Statements wait for a lock on the connection: behind them, from the event loop (the driver waits for the lock).
  return new Promise((resolve, reject) => {
    c.all(sql, params, (err, found) => (err !== null ? reject(sqliteStatementError(err, sql)) : resolve(found as Record<string, unknown>[])));
  });
}

function values(c: NodeSqliteConnection, sql: string, params: readonly unknown[]): Promise<unknown[][]> {
  let now: unknown[][] | undefined;
  try {
    now = c.arraysNow(sql, params);
  } catch (err) {
    if (!isLockError(err)) return Promise.reject(sqliteStatementError(err, sql));
  }
  if (now !== undefined) return Promise.resolve(now);
  // As `rows`: behind the statements that wait for a lock, each row's values in the order selected.
  return new Promise((resolve, reject) => {
    c.all(sql, params, (err, found) => (err !== null ? reject(sqliteStatementError(err, sql)) : resolve((found as Record<string, unknown>[]).map((r) => Object.values(r)))));
  });
}

function isLockError(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return code === 'SQLITE_BUSY' || code === 'SQLITE_LOCKED';
}

/**
 * What a SELECT finds, by a key standing for its parameters, read at once
 * ({@link SqliteStatements.valuesNow}) and kept while the connection's change
 * mark ({@link SqliteStatements.changeMarkNow}) is the one it was read under:
 * any write of this process on the connection, and any commit of another
 * connection or process since, empties it. A SELECT that finds nothing is
 * not kept. Bounded; the oldest entry is dropped first.
 */
export class KeptUnderMark<T> {
  readonly #statements: SqliteStatements;
  readonly #sql: string;
  readonly #of: (row: readonly unknown[]) => T;
  readonly #size: number;
  readonly #kept = new Map<string, T>();
  #mark: number | undefined;

  /** `of` makes what is kept from the first row's values, in the order selected. */
  constructor(statements: SqliteStatements, sql: string, of: (row: readonly unknown[]) => T, size = 4096) {
    this.#statements = statements;
    this.#sql = sql;
    this.#of = of;
    this.#size = size;
  }

  /**
   * What the first row found for `key` makes; null when the SELECT finds
   * none; undefined when it cannot be read at once. `params` are the
   * SELECT's (the key alone unless given): the same key must always stand
   * for the same parameters.
   */
  valueNow(key: string, params: readonly unknown[] = [key]): T | null | undefined {
    const mark = this.#statements.changeMarkNow();
    if (mark === undefined) return undefined;
    const kept = this.#kept;
    if (mark !== this.#mark) {
      kept.clear();
      this.#mark = mark;
    }
    let value = kept.get(key);
    if (value === undefined) {
      const rows = this.#statements.valuesNow(this.#sql, params);
      if (rows === undefined) return undefined;
      if (rows[0] === undefined) return null;
      value = this.#of(rows[0]);
      if (kept.size >= this.#size) kept.delete(kept.keys().next().value!);
      kept.set(key, value);
    }
    return value;
  }
}
