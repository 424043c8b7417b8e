/**
 * The connections a {@link SqlStore} runs its statements on, all taken from
 * the database it was given (the process's: a Sequelize instance, or on
 * SQLite a `SqliteDatabase`, which keeps sequelize's connection manager), and
 * the store's one-writer-at-a-time queue.
 *
 * - Reads outside a transaction: SQLite on the store's own reader connection
 *   (opened once in sequelize's connection manager, so in the process's one
 *   SQLite library; in WAL mode it sees every committed write and never waits
 *   for the writer), with prepared statements reused (on the `node:sqlite`
 *   driver, engine/sql/node_sqlite_driver.ts, run synchronously), pages read
 *   with `pread()` (not memory-mapped, see `#readerConnection`);
 *   PostgreSQL and MySQL on a connection taken from sequelize's pool per
 *   statement (PostgreSQL: named statements).
 * - Write transactions: SQLite on a file on the store's own writer connection,
 *   with `busy_timeout = 5000` and, in WAL mode, `synchronous = NORMAL`: a
 *   commit appends to the WAL without waiting for the disk; the WAL is synced
 *   at checkpoints. A committed write survives a crash of the process, and may
 *   be lost (never half-applied) if the machine loses power or the OS crashes.
 *   sequelize would open a connection per transaction, with `synchronous =
 *   FULL` (one fsync per commit). In WAL mode the checkpoints run on a thread
 *   of their own (engine/sql/sqlite_checkpointer.ts), not inside a commit on
 *   the event loop. `temp_store = MEMORY`: a multi-row statement keeps its
 *   statement journal (the pages it changed, to undo it alone) in memory;
 *   SQLite had created, written and deleted a temporary file for it, on every
 *   write. Other dialects and in-memory SQLite: a sequelize transaction, its
 *   statements on the transaction's connection.
 *
 * Every statement here uses bound parameters on the driver connection
 * (engine/sql/raw.ts).
 */
import type { Transaction } from 'sequelize';
import { TransactionTypes, type SqlDatabase } from './sql_database.ts';
import { isDependencyFailure, LatchkeyError, OUTAGE_RETRY_AFTER_SECONDS } from '../errors.ts';
import type { SqlDialect } from './migrate.ts';
import { isNodeSqliteConnection } from './node_sqlite_driver.ts';
import { isBusy, rawConnection, type RawConnection } from './raw.ts';
import { SqliteCheckpointer } from './sqlite_checkpointer.ts';

const rowsOf = <T>(r: { rows: T[] }): T[] => r.rows;
const rethrow = (err: unknown): never => {
  throw backendError(err);
};

/** Numbers the connection-manager keys, so that two stores on one sequelize instance never share a connection. */
let instances = 0;

/** The part of sequelize's connection manager used here. */
interface PoolManager {
  getConnection(options: { uuid?: string; type?: string }): Promise<{ uuid?: string }>;
  releaseConnection(connection: unknown): unknown;
}

interface Owned {
  conn: RawConnection;
  connection: { uuid?: string };
  /** The writer's checkpoint thread (SQLite file in WAL mode). */
  checkpointer?: SqliteCheckpointer | undefined;
}

/**
 * A store error for any failure below the store: `unavailable` (with the
 * retry hint) for connection trouble, as {@link isDependencyFailure} decides for
 * every store of the process, else `internal`.
 */
export function backendError(err: unknown): LatchkeyError {
  if (err instanceof LatchkeyError) return err;
  const e = err as { name?: string } | null;
  if (isDependencyFailure(err) || /AccessDenied/u.test(e?.name ?? '')) {
    return new LatchkeyError('unavailable', 'the FGA store is unavailable', { reason: 'store_unavailable', details: { retry_after_seconds: OUTAGE_RETRY_AFTER_SECONDS }, cause: err });
  }
  return new LatchkeyError('internal', 'FGA store error', { reason: 'store_error', cause: err });
}

export class SqlConnections {
  readonly #sequelize: SqlDatabase;
  readonly #dialect: SqlDialect;
  readonly #cm: PoolManager;
  #reader: Promise<Owned> | undefined;
  /** The reader once open, so that a read does not wait a turn for the promise above. */
  #readerOpen: Owned | undefined;
  #writer: Promise<Owned> | undefined;
  /** sequelize connection-manager keys of this store's SQLite reader and writer connections. */
  readonly #readerKey: string;
  readonly #writerKey: string;
  /** In-process writer queue: SQLite allows one writer, and queueing here avoids lock waits between our own writes. */
  #queue: Promise<unknown> = Promise.resolve();

  constructor(sequelize: SqlDatabase, dialect: SqlDialect) {
    this.#sequelize = sequelize;
    this.#dialect = dialect;
    this.#cm = (sequelize as unknown as { connectionManager: PoolManager }).connectionManager;
    const n = ++instances;
    this.#readerKey = `latchkey_fga_reader_${n}`;
    this.#writerKey = `latchkey_fga_writer_${n}`;
  }

  /** True for SQLite on a file (not in memory), where the store keeps connections of its own. */
  get sqliteFile(): boolean {
    return this.#sqliteStorage() !== undefined;
  }

  /** The SQLite file's path, or `undefined` (another dialect, or in memory). */
  #sqliteStorage(): string | undefined {
    if (this.#dialect !== 'sqlite') return undefined;
    const storage = (this.#sequelize as unknown as { options?: { storage?: string } }).options?.storage;
    return storage !== undefined && storage !== '' && storage !== ':memory:' ? storage : undefined;
  }

  /** A read outside any transaction (see the module doc); errors become {@link backendError}s. */
  read<T>(sql: string, params: readonly unknown[]): Promise<T[]> {
    const reader = this.#readerOpen;
    if (reader !== undefined) return reader.conn.run<T>(sql, params, true).then(rowsOf, rethrow);
    return this.#read(sql, params);
  }

  /**
   * {@link SqlConnections.read} with each row an array of its column values
   * in the order selected: natively on the `node:sqlite` reader, else copied
   * from the row objects by `columns` (the names selected, in order).
   */
  readArrays(sql: string, params: readonly unknown[], columns: readonly string[]): Promise<unknown[][]> {
    const arrays = this.#readerOpen?.conn.arrays;
    if (arrays !== undefined) return arrays(sql, params).catch(rethrow);
    return this.read<Record<string, unknown>>(sql, params).then((rows) => rows.map((r) => columns.map((c) => r[c])));
  }

  async #read<T>(sql: string, params: readonly unknown[]): Promise<T[]> {
    try {
      if (this.#dialect === 'sqlite') return (await (await this.#readerConnection()).conn.run<T>(sql, params, true)).rows;
      return await this.withPooled((conn) => conn.run<T>(sql, params, true).then(rowsOf), { read: true, prepared: true });
    } catch (err) {
      throw backendError(err);
    }
  }

  /**
   * Runs `fn` on a connection taken from sequelize's pool (PostgreSQL,
   * MySQL), outside any transaction; `read` may take a read replica's.
   */
  async withPooled<T>(fn: (conn: RawConnection) => Promise<T>, options: { read?: boolean; prepared?: boolean } = {}): Promise<T> {
    const connection = await this.#cm.getConnection(options.read === true ? { type: 'SELECT' } : {});
    try {
      return await fn(rawConnection(this.#dialect, connection, options.prepared === true));
    } finally {
      await Promise.resolve(this.#cm.releaseConnection(connection)).catch(() => undefined);
    }
  }

  /** A connection from sequelize's pool for a read that spans statements (a cursor); call `release` when done. */
  async acquireForRead(): Promise<{ conn: RawConnection; release: () => Promise<void> }> {
    const connection = await this.#cm.getConnection({ type: 'SELECT' });
    return {
      conn: rawConnection(this.#dialect, connection),
      release: async () => {
        await Promise.resolve(this.#cm.releaseConnection(connection)).catch(() => undefined);
      },
    };
  }

  /** Runs `fn` after the store's earlier writes (one writer at a time per store instance). */
  queued<T>(fn: () => Promise<T>): Promise<T> {
    const p = this.#queue.then(fn, fn);
    this.#queue = p.catch(() => undefined);
    return p;
  }

  /** Resolves once every queued write has finished. */
  async drain(): Promise<void> {
    await this.#queue;
  }

  /**
   * Runs `fn` in a write transaction on a driver connection, after the
   * store's earlier writes (see the module doc for which connection).
   * `ownRollback` tells `fn` that the transaction is this method's own BEGIN
   * and ROLLBACK (a SQLite file), whose ROLLBACK after any error may find the
   * transaction already ended by a statement; sequelize's transactions take
   * a failed ROLLBACK for a broken connection.
   */
  rawTransaction<T>(fn: (conn: RawConnection, ownRollback: boolean) => Promise<T>): Promise<T> {
    return this.queued(async () => {
      if (this.sqliteFile) {
        const writer = await this.#writerConnection();
        const conn = writer.conn;
        const checkpointer = writer.checkpointer;
        if (checkpointer !== undefined) {
          if (checkpointer.failed) {
            // The thread is gone: SQLite checkpoints inside commits again, as by default.
            writer.checkpointer = undefined;
            await conn.run('PRAGMA wal_autocheckpoint = 1000', [], true);
          } else if (checkpointer.beforeWrite()) {
            // A long log: copy its last frames here, so that this transaction starts it afresh.
            await conn.run('PRAGMA wal_checkpoint(PASSIVE)', [], true).catch(() => undefined);
          }
        }
        await conn.run('BEGIN IMMEDIATE', []);
        let result: T;
        try {
          result = await fn(conn, true);
          await conn.run('COMMIT', []);
        } catch (err) {
          await conn.run('ROLLBACK', []).catch(() => undefined);
          throw err;
        }
        writer.checkpointer?.wrote();
        return result;
      }
      // PostgreSQL: named statements, parsed and planned once per connection (Engine.write of 0.3 M tuples, insert-only
      // writes: 19.5 k tuples/s against 17.5 k unnamed, interleaved).
      const named = this.#dialect === 'postgres';
      return this.#retryBusy(() =>
        this.#sequelize.transaction(this.#txOptions(), (tx) => fn(rawConnection(this.#dialect, (tx as unknown as { connection: unknown }).connection, named), false)),
      );
    });
  }

  /** Runs `fn` in a sequelize transaction (model writes, reset), after the store's earlier writes. */
  sequelizeTransaction<T>(fn: (tx: Transaction) => Promise<T>): Promise<T> {
    return this.queued(() => this.#retryBusy(() => this.#sequelize.transaction(this.#txOptions(), fn)));
  }

  #txOptions(): { type?: Transaction.TYPES } {
    return this.#dialect === 'sqlite' ? { type: TransactionTypes.IMMEDIATE } : {};
  }

  /**
   * sequelize opens a fresh SQLite connection per transaction, with the
   * driver's default busy timeout (1 s): a writer in another process holding
   * the lock longer makes BEGIN IMMEDIATE fail with SQLITE_BUSY. Retried for
   * up to 5 s (nothing was done yet, so it is safe).
   */
  async #retryBusy<T>(fn: () => Promise<T>): Promise<T> {
    const deadline = Date.now() + 5000;
    for (let attempt = 0; ; attempt++) {
      try {
        return await fn();
      } catch (err) {
        if (isBusy(err) && Date.now() < deadline) {
          await new Promise((r) => setTimeout(r, Math.min(50, 2 + attempt * 5)));
          continue;
        }
        throw err;
      }
    }
  }

  #readerConnection(): Promise<Owned> {
    this.#reader ??= this.#cm.getConnection({ uuid: this.#readerKey }).then(
      async (connection) => {
        connection.uuid = this.#readerKey;
        const conn = rawConnection('sqlite', connection, true);
        // No memory map (`mmap_size`): in WAL mode a read that starts after another connection's commit unmaps the
        // whole file (sqlite3OsUnfetch in pagerBeginReadTransaction) and maps it again, page faults included. With a
        // 1 GiB map, a cold 5-hop check at 1 M tuples took 3.7 ms (p50) when a write came before each check against
        // 0.76 ms with pread(); with no writes at all, 374-394 µs against 340-355 µs (the two readers on one file,
        // interleaved). The latest-model read of each Engine.write took 0.59 ms against 0.11 ms.
        return (this.#readerOpen = { conn, connection });
      },
      (err: unknown) => {
        this.#reader = undefined;
        throw err;
      },
    );
    return this.#reader;
  }

  #writerConnection(): Promise<Owned> {
    this.#writer ??= (async () => {
      const connection = await this.#cm.getConnection({ uuid: this.#writerKey });
      connection.uuid = this.#writerKey;
      const conn = rawConnection('sqlite', connection);
      await conn.run('PRAGMA busy_timeout = 5000', []);
      await conn.run('PRAGMA temp_store = MEMORY', []);
      const [mode] = (await conn.run<{ journal_mode: string }>('PRAGMA journal_mode', [], true)).rows;
      const owned: Owned = { conn, connection };
      const file = this.#sqliteStorage();
      if (mode?.journal_mode.toLowerCase() === 'wal' && file !== undefined) {
        await conn.run('PRAGMA synchronous = NORMAL', []);
        let checkpointer: SqliteCheckpointer | undefined;
        try {
          checkpointer = new SqliteCheckpointer(file);
        } catch {
          // No thread (a runtime that forbids workers): SQLite checkpoints inside commits, as by default.
        }
        if (checkpointer !== undefined) {
          await conn.run('PRAGMA wal_autocheckpoint = 0', [], true);
          owned.checkpointer = checkpointer;
          // Closing the sequelize instance without close() here still stops the thread before its connections close.
          const thread = checkpointer;
          if (isNodeSqliteConnection(connection)) connection.beforeClose(() => thread.close());
        }
      }
      return owned;
    })().catch((err: unknown) => {
      this.#writer = undefined;
      throw err;
    });
    return this.#writer;
  }

  /** Waits for queued writes, then releases the store's own connections (the sequelize instance stays open). */
  async close(): Promise<void> {
    await this.drain();
    const own = [this.#writer, this.#reader];
    this.#writer = undefined;
    this.#reader = undefined;
    this.#readerOpen = undefined;
    for (const c of own) {
      if (c === undefined) continue;
      const opened = await c.catch(() => undefined);
      if (opened === undefined) continue;
      await opened.checkpointer?.close();
      await Promise.resolve(this.#cm.releaseConnection(opened.connection)).catch(() => undefined);
    }
  }
}
