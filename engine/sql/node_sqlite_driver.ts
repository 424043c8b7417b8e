/**
 * A sequelize `dialectModule` for SQLite backed by Node's built-in
 * `node:sqlite` (`DatabaseSync`): the part of the `sqlite3` package's API
 * that sequelize v6's sqlite dialect and the SQL store use (`Database` with
 * mode and callback, `serialize`, `run`/`all`/`get`/`exec` with callbacks and
 * `this.lastID`/`this.changes`, `configure('busyTimeout')`, `close`, the
 * `OPEN_*` constants).
 *
 * Why: with every SQLite connection of the process in one library, the file
 * locks of all connections are coherent (two copies of SQLite in one process
 * do not see each other's POSIX locks), and a statement runs in microseconds
 * on the calling thread instead of a trip through a native addon's thread
 * pool. See docs/storage.md ("SQLite driver").
 *
 * Statements run synchronously when called, in call order; callbacks are
 * called from the event loop (`setImmediate`), as the `sqlite3` package's
 * are, so that I/O and timers run between the statements of a loop of
 * queries (with microtasks, such a loop kept sockets waiting: a webhook
 * delivery test saw its HTTP calls time out).
 *
 * The store's reads use {@link Database.allNow} (level reads
 * {@link Database.arraysNow}): the rows at once, without a trip through the
 * event loop. {@link Database.changeMarkNow} tells a reader whether anything
 * may have changed what this connection reads since it last asked (the user
 * store's row cache, auth/user_store.ts).
 *
 * Lock waits never block the event loop: SQLite's own busy timeout is 0, and
 * a statement that meets SQLITE_BUSY is retried from a timer (backing off up
 * to 20 ms) until the connection's busy timeout (5 s unless set with
 * `configure('busyTimeout', ms)` or `PRAGMA busy_timeout = ms`) has passed;
 * later statements on the connection wait behind it. In WAL mode (readers
 * never block a writer, so the lock's holder never waits for us) every busy
 * statement waits, except SQLITE_BUSY_SNAPSHOT (the transaction read before
 * another's commit: it can never write, and fails at once). With a rollback
 * journal only statements that start outside a transaction (or a COMMIT)
 * wait: inside a transaction a busy statement may be one side of a deadlock,
 * and fails at once so that its transaction rolls back and releases its
 * locks, as SQLite intends.
 *
 * Files are switched to WAL mode with `synchronous = NORMAL` when opened
 * (see {@link walNormal}): with an fsync per commit, each write would stall
 * the event loop.
 *
 * Values: booleans bind as 1/0, `undefined` as NULL, dates as milliseconds
 * (as `sqlite3` does); BLOBs read back as `Buffer`s; integers beyond 2^53
 * read back as (rounded) numbers, as with `sqlite3`. Errors carry `sqlite3`'s
 * `code` (`SQLITE_CONSTRAINT`, …), `errno` and `CODE: message` text.
 */
import { existsSync } from 'node:fs';
import { EventEmitter } from 'node:events';
import { DatabaseSync, type StatementSync, type SQLInputValue } from 'node:sqlite';
import { WalIndexWatch } from './wal_index.ts';

/** `sqlite3`'s open flags (the same values as SQLite's). */
export const OPEN_READONLY = 0x1;
export const OPEN_READWRITE = 0x2;
export const OPEN_CREATE = 0x4;
export const OPEN_URI = 0x40;
export const OPEN_SHAREDCACHE = 0x20000;
export const OPEN_PRIVATECACHE = 0x40000;
export const OPEN_FULLMUTEX = 0x10000;

/** SQLite's primary result codes by number, for `sqlite3`-style error codes. */
const CODES: Record<number, string> = {
  1: 'SQLITE_ERROR', 2: 'SQLITE_INTERNAL', 3: 'SQLITE_PERM', 4: 'SQLITE_ABORT', 5: 'SQLITE_BUSY', 6: 'SQLITE_LOCKED',
  7: 'SQLITE_NOMEM', 8: 'SQLITE_READONLY', 9: 'SQLITE_INTERRUPT', 10: 'SQLITE_IOERR', 11: 'SQLITE_CORRUPT',
  12: 'SQLITE_NOTFOUND', 13: 'SQLITE_FULL', 14: 'SQLITE_CANTOPEN', 15: 'SQLITE_PROTOCOL', 16: 'SQLITE_EMPTY',
  17: 'SQLITE_SCHEMA', 18: 'SQLITE_TOOBIG', 19: 'SQLITE_CONSTRAINT', 20: 'SQLITE_MISMATCH', 21: 'SQLITE_MISUSE',
  22: 'SQLITE_NOLFS', 23: 'SQLITE_AUTH', 24: 'SQLITE_FORMAT', 25: 'SQLITE_RANGE', 26: 'SQLITE_NOTADB',
};

/** Statements kept prepared per connection (most recently used kept). */
const STATEMENT_CACHE = 256;
const DEFAULT_BUSY_TIMEOUT_MS = 5000;

/** A statement that only reads (its text opens with SELECT): it leaves a connection's change mark as it is. */
const READ_ONLY = /^\s*select\b/i;

/**
 * The last change mark handed out ({@link Database.changeMarkNow}), for the
 * whole process: a connection's new mark is one no connection had before,
 * so a mark taken from a connection since closed never matches a new one's.
 */
let marks = 0;

export type Params = readonly unknown[] | Record<string, unknown> | undefined;
type Callback<T> = ((this: RunResult, err: Error | null, result?: T) => void) | undefined;

/** What `run`'s callback sees as `this` (named like `sqlite3`'s, which sequelize checks). */
export class Statement {
  readonly sql: string;
  readonly lastID: number;
  readonly changes: number;
  constructor(sql: string, lastID: number, changes: number) {
    this.sql = sql;
    this.lastID = lastID;
    this.changes = changes;
  }
}
type RunResult = Statement;

/** A `sqlite3`-style error (`code` `SQLITE_…`, `errno`) from a `node:sqlite` one. */
export function sqliteError(err: unknown): Error {
  const e = err as { errcode?: number; message?: string; code?: string } | null;
  if (e === null || typeof e !== 'object' || typeof e.errcode !== 'number') {
    if (e !== null && typeof e === 'object' && e.code === 'ERR_SQLITE_ERROR') return Object.assign(new Error(`SQLITE_ERROR: ${e.message ?? ''}`), { code: 'SQLITE_ERROR', errno: 1 });
    return err instanceof Error ? err : new Error(String(err));
  }
  const errno = e.errcode & 0xff;
  const code = CODES[errno] ?? 'SQLITE_ERROR';
  return Object.assign(new Error(`${code}: ${e.message ?? ''}`), { code, errno, extendedCode: e.errcode, cause: err });
}

/** SQLITE_BUSY or SQLITE_LOCKED, except SQLITE_BUSY_SNAPSHOT (a WAL read snapshot older than the last commit: waiting cannot help). */
function isBusyError(err: unknown): boolean {
  const n = (err as { errcode?: number } | null)?.errcode;
  return typeof n === 'number' && n !== 517 && ((n & 0xff) === 5 || (n & 0xff) === 6);
}

function bindValue(v: unknown): SQLInputValue {
  if (v === undefined || v === null) return null;
  if (typeof v === 'boolean') return v ? 1 : 0;
  if (v instanceof Date) return v.getTime();
  if (typeof v === 'string' || typeof v === 'number' || typeof v === 'bigint' || ArrayBuffer.isView(v)) return v as SQLInputValue;
  return String(v);
}

/** Rows as `sqlite3` gives them: plain objects, BLOBs as `Buffer`s. */
function plainRow(row: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const k in row) {
    const v = row[k];
    out[k] = v instanceof Uint8Array && !Buffer.isBuffer(v) ? Buffer.from(v.buffer, v.byteOffset, v.byteLength) : typeof v === 'bigint' ? Number(v) : v;
  }
  return out;
}

const BUSY_PRAGMA = /^\s*PRAGMA\s+busy_timeout\s*=\s*(\d+)\s*;?\s*$/iu;
const COMMIT = /^\s*(COMMIT|END)\b/iu;

interface Pending {
  /** Runs the operation; false when it met a lock and should be tried again later. */
  attempt: () => boolean;
}

export class Database extends EventEmitter {
  readonly filename: string;
  readonly mode: number;
  #db: DatabaseSync | undefined;
  readonly #statements = new Map<string, StatementSync>();
  /** Statements that return rows as arrays ({@link Database.arraysNow}), by SQL text. */
  readonly #arrayStatements = new Map<string, StatementSync>();
  readonly #queue: Pending[] = [];
  #timer: NodeJS.Timeout | undefined;
  #retries = 0;
  #busyTimeoutMs = DEFAULT_BUSY_TIMEOUT_MS;
  /** True when the file is in WAL mode (where a busy statement inside a transaction can wait: readers never block a writer). */
  #wal = false;
  #closed = false;
  readonly #beforeClose: (() => Promise<void>)[] = [];
  /** This connection's change mark ({@link Database.changeMarkNow}). */
  #mark = ++marks;
  /** `PRAGMA data_version`, prepared on first use, and the value it gave last. */
  #dataVersion: StatementSync | undefined;
  #seenDataVersion: unknown;
  /** The file's wal-index header, watched once `PRAGMA data_version` has run in WAL mode (engine/sql/wal_index.ts). */
  #walIndex: WalIndexWatch | undefined;
  #walIndexTried = false;

  constructor(filename: string, mode?: number | ((err: Error | null) => void), callback?: (err: Error | null) => void) {
    super();
    if (typeof mode === 'function') {
      callback = mode;
      mode = undefined;
    }
    this.filename = filename;
    this.mode = mode ?? OPEN_READWRITE | OPEN_CREATE;
    let error: Error | null = null;
    try {
      const memory = filename === ':memory:' || filename === '';
      if (!memory && (this.mode & OPEN_CREATE) === 0 && !existsSync(filename))
        throw Object.assign(new Error('SQLITE_CANTOPEN: unable to open database file'), { code: 'SQLITE_CANTOPEN', errno: 14 });
      this.#db = new DatabaseSync(memory ? ':memory:' : filename, {
        readOnly: (this.mode & OPEN_READWRITE) === 0,
        // As the sqlite3 package's build: foreign keys off until PRAGMA foreign_keys = ON, "…" accepted as a string.
        enableForeignKeyConstraints: false,
        enableDoubleQuotedStringLiterals: true,
        timeout: 0,
      });
      if (!memory && (this.mode & OPEN_READWRITE) !== 0) this.#wal = walNormal(this.#db);
    } catch (err) {
      error = sqliteError(err);
      this.#closed = true;
    }
    setImmediate(() => {
      if (callback !== undefined) callback.call(this as unknown as RunResult, error);
      else if (error !== null) this.#emitError(error);
      else this.emit('open');
    });
  }

  /** Runs `fn` now: statements already run in call order. */
  serialize(fn?: () => void): void {
    fn?.();
  }

  parallelize(fn?: () => void): void {
    fn?.();
  }

  configure(option: string, value: number): void {
    if (option === 'busyTimeout') this.#busyTimeoutMs = Math.max(0, Number(value) || 0);
  }

  run(sql: string, params?: Params | Callback<never>, callback?: Callback<never>): this {
    return this.#statement(sql, params, callback, undefined, (st, p) => {
      const r = p === undefined ? st.run() : Array.isArray(p) ? st.run(...p) : st.run(p as Record<string, SQLInputValue>);
      return { meta: new Statement(sql, Number(r.lastInsertRowid), Number(r.changes)), result: undefined };
    });
  }

  all(sql: string, params?: Params | Callback<unknown[]>, callback?: Callback<unknown[]>): this {
    return this.#statement(sql, params, callback, [], (st, p) => ({ meta: new Statement(sql, 0, 0), result: this.#rows(st, p).map(plainRow) }));
  }

  get(sql: string, params?: Params | Callback<unknown>, callback?: Callback<unknown>): this {
    return this.#statement(sql, params, callback, undefined, (st, p) => {
      const row = this.#rows(st, p)[0];
      return { meta: new Statement(sql, 0, 0), result: row === undefined ? undefined : plainRow(row) };
    });
  }

  exec(sql: string, callback?: (err: Error | null) => void): this {
    const deadline = Date.now() + this.#busyTimeoutMs;
    const retryable = this.#db !== undefined && (!this.#db.isTransaction || this.#wal);
    this.#submit(() => {
      try {
        const db = this.#open();
        this.#beforeStatement(undefined);
        db.exec(sql);
      } catch (err) {
        if (retryable && isBusyError(err) && Date.now() < deadline) return false;
        this.#done(callback, sqliteError(err), undefined, undefined);
        return true;
      }
      this.#done(callback, null, undefined, undefined);
      return true;
    });
    return this;
  }

  /**
   * Runs `task` when the connection is asked to close, before it closes (and
   * before the close's callback): a helper holding the same file open (the
   * store's checkpoint thread) stops with it, so that whoever closed the
   * connection may remove the file at once.
   */
  beforeClose(task: () => Promise<void>): void {
    this.#beforeClose.push(task);
  }

  /** Closes the connection once the statements queued on it (and the {@link Database.beforeClose} tasks) have run. */
  close(callback?: (err: Error | null) => void): void {
    const tasks = this.#beforeClose.splice(0);
    if (tasks.length === 0) return this.#close(callback);
    void Promise.all(tasks.map((task) => task().catch(() => undefined))).then(() => this.#close(callback));
  }

  #close(callback?: (err: Error | null) => void): void {
    this.#submit(() => {
      let error: Error | null = null;
      if (this.#closed) error = Object.assign(new Error('SQLITE_MISUSE: Database is closed'), { code: 'SQLITE_MISUSE', errno: 21 });
      else {
        this.#closed = true;
        this.#statements.clear();
        this.#arrayStatements.clear();
        this.#dataVersion = undefined;
        try {
          this.#db?.close();
        } catch (err) {
          error = sqliteError(err);
        }
        this.#walIndex?.release();
        this.#walIndex = undefined;
        this.#db = undefined;
      }
      setImmediate(() => {
        if (callback !== undefined) callback(error);
        else if (error !== null) this.#emitError(error);
        else this.emit('close');
      });
      return true;
    });
  }

  /** True once closed (or failed to open). */
  get closed(): boolean {
    return this.#closed;
  }

  /**
   * Runs a SELECT now and returns its rows as `node:sqlite` gives them (no
   * copies; BLOBs as `Uint8Array`s), or `undefined` when statements are
   * waiting for a lock on this connection (the caller then uses {@link all}).
   * Throws a `sqlite3`-style error (SQLITE_BUSY when the file is locked).
   */
  allNow(sql: string, params: readonly unknown[]): Record<string, unknown>[] | undefined {
    if (this.#queue.length > 0) return undefined;
    try {
      const st = this.#prepare(sql);
      this.#beforeStatement(sql);
      return this.#rows(st, bind(params));
    } catch (err) {
      throw sqliteError(err);
    }
  }

  /**
   * {@link Database.allNow} with each row an array of its column values in
   * the order selected. `node:sqlite` builds row objects in dictionary mode,
   * so reading their columns by name cost a hash lookup each.
   */
  arraysNow(sql: string, params: readonly unknown[]): unknown[][] | undefined {
    if (this.#queue.length > 0) return undefined;
    try {
      let st = this.#arrayStatements.get(sql);
      if (st === undefined) {
        st = this.#open().prepare(sql);
        st.setReturnArrays(true);
        if (this.#arrayStatements.size >= STATEMENT_CACHE) this.#arrayStatements.delete(this.#arrayStatements.keys().next().value!);
        this.#arrayStatements.set(sql, st);
      }
      this.#beforeStatement(sql);
      return this.#rows(st, bind(params)) as unknown as unknown[][];
    } catch (err) {
      throw sqliteError(err);
    }
  }

  /**
   * A number that stays the same for as long as nothing can have changed
   * what a SELECT on this connection reads: it changes when a statement
   * other than a SELECT runs on this connection (before it runs, so a row
   * read during an open transaction is not kept past its rollback) and when
   * another connection, of this process or another, has committed since the
   * last call. In WAL mode that is the file's wal-index header, read with
   * one system call (engine/sql/wal_index.ts); otherwise, or when the header
   * cannot be read whole, SQLite's `PRAGMA data_version`, a statement of
   * about 2 µs. Undefined when the connection cannot answer at once
   * (statements wait for a lock on it, or it is closed): a reader then reads
   * the rows again.
   *
   * A reader that keeps rows read at once with the mark taken just before
   * may answer from them while the mark is unchanged: the rows are what the
   * SELECT would read again.
   */
  changeMarkNow(): number | undefined {
    if (this.#queue.length > 0 || this.#closed || this.#db === undefined) return undefined;
    const watch = this.#walIndex;
    if (watch !== undefined) {
      const changed = watch.changed();
      if (changed === false) return this.#mark;
      if (changed === true) return (this.#mark = ++marks);
      // The header could not be read whole: SQLite tells (its count moved if anything was committed since it last told).
    }
    try {
      let st = this.#dataVersion;
      if (st === undefined) {
        st = this.#db.prepare('PRAGMA data_version');
        st.setReturnArrays(true);
        this.#dataVersion = st;
      }
      const version = (st.get() as unknown as unknown[] | undefined)?.[0];
      if (version !== this.#seenDataVersion) {
        this.#seenDataVersion = version;
        this.#mark = ++marks;
      }
      if (!this.#walIndexTried && this.#wal) {
        // The statement has read from the file, so its wal-index exists. A commit may land between the statement and
        // the watch's first reading: the mark moves once more, and the watch answers from then on.
        this.#walIndexTried = true;
        this.#walIndex = WalIndexWatch.open(this.#db.location() ?? '');
        if (this.#walIndex !== undefined) {
          this.#walIndex.changed();
          this.#mark = ++marks;
        }
      }
      return this.#mark;
    } catch {
      return undefined;
    }
  }

  /** Moves the change mark before a statement runs unless its text is a SELECT (`undefined`: a script, which may write). */
  #beforeStatement(sql: string | undefined): void {
    if (sql === undefined || !READ_ONLY.test(sql)) this.#mark = ++marks;
  }

  #rows(st: StatementSync, p: Params): Record<string, unknown>[] {
    const run = (): Record<string, unknown>[] =>
      (p === undefined ? st.all() : Array.isArray(p) ? st.all(...(p as SQLInputValue[])) : st.all(p as Record<string, SQLInputValue>)) as Record<string, unknown>[];
    try {
      return run();
    } catch (err) {
      if ((err as { code?: string }).code !== 'ERR_OUT_OF_RANGE') throw err;
      // An integer beyond 2^53: read as BigInt and rounded to a number, as sqlite3 gives it.
      st.setReadBigInts(true);
      try {
        return run();
      } finally {
        st.setReadBigInts(false);
      }
    }
  }

  #statement<T>(
    sql: string,
    params: Params | Callback<T>,
    callback: Callback<T>,
    empty: T | undefined,
    exec: (st: StatementSync, p: Params) => { meta: Statement; result: T | undefined },
  ): this {
    if (typeof params === 'function') {
      callback = params;
      params = undefined;
    }
    const p = bind(params as Params);
    const deadline = Date.now() + this.#busyTimeoutMs;
    this.#submit(() => {
      const pragma = BUSY_PRAGMA.exec(sql);
      if (pragma !== null && !this.#closed) {
        // Lock waits are timed here, never inside SQLite (see the module doc).
        this.#busyTimeoutMs = Number(pragma[1]);
        this.#done(callback, null, new Statement(sql, 0, 0), undefined);
        return true;
      }
      let retryable = false;
      try {
        const db = this.#open();
        retryable = !db.isTransaction || this.#wal || COMMIT.test(sql);
        const st = this.#prepare(sql);
        this.#beforeStatement(sql);
        const { meta, result } = exec(st, p);
        this.#done(callback, null, meta, result);
      } catch (err) {
        if (retryable && isBusyError(err) && Date.now() < deadline) return false;
        if ((err as { message?: string }).message === 'The SQL query contains no statements.') {
          // As sqlite3: an empty statement (only comments or blanks) does nothing.
          this.#done(callback, null, new Statement(sql, 0, 0), empty);
          return true;
        }
        this.#done(callback, sqliteError(err), new Statement(sql, 0, 0), undefined);
      }
      return true;
    });
    return this;
  }

  #open(): DatabaseSync {
    if (this.#db === undefined || this.#closed) throw Object.assign(new Error('SQLITE_MISUSE: Database is closed'), { code: 'SQLITE_MISUSE', errno: 21 });
    return this.#db;
  }

  #prepare(sql: string): StatementSync {
    let st = this.#statements.get(sql);
    if (st !== undefined) {
      this.#statements.delete(sql);
      this.#statements.set(sql, st);
      return st;
    }
    st = this.#open().prepare(sql);
    // sequelize passes every bind value it has, used or not.
    (st as { setAllowUnknownNamedParameters?: (on: boolean) => void }).setAllowUnknownNamedParameters?.(true);
    if (this.#statements.size >= STATEMENT_CACHE) this.#statements.delete(this.#statements.keys().next().value!);
    this.#statements.set(sql, st);
    return st;
  }

  #done<T>(callback: Callback<T>, err: Error | null, meta: Statement | undefined, result: T | undefined): void {
    if (callback === undefined) {
      if (err !== null) setImmediate(() => this.#emitError(err));
      return;
    }
    setImmediate(() => callback.call(meta ?? new Statement('', 0, 0), err, result));
  }

  #emitError(err: Error): void {
    // sqlite3 emits 'error' (fatal when nobody listens); here an unobserved error of a statement without a callback is dropped.
    if (this.listenerCount('error') > 0) this.emit('error', err);
  }

  /** Runs `attempt` now if nothing waits for a lock on this connection, else after what waits. */
  #submit(attempt: () => boolean): void {
    if (this.#queue.length === 0 && attempt()) return;
    this.#queue.push({ attempt });
    if (this.#queue.length === 1) this.#schedule();
  }

  #schedule(): void {
    if (this.#timer !== undefined) return;
    const delay = Math.min(20, 1 + this.#retries * 2);
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      while (this.#queue.length > 0) {
        if (!this.#queue[0]!.attempt()) {
          this.#retries++;
          this.#schedule();
          return;
        }
        this.#queue.shift();
        this.#retries = 0;
      }
    }, delay);
  }
}

/**
 * Files are kept in WAL mode with `synchronous = NORMAL`: a commit appends to
 * the WAL without an fsync (microseconds; the WAL is synced at checkpoints).
 * With SQLite's defaults (rollback journal, FULL) every commit waited for
 * several fsyncs, about 12 ms here, on the thread that runs JavaScript.
 * Failing to switch (the file is locked, or read-only media) leaves the file
 * as it is.
 */
function walNormal(db: DatabaseSync): boolean {
  let mode = '';
  try {
    mode = String((db.prepare('PRAGMA journal_mode = WAL').get() as { journal_mode?: unknown } | undefined)?.journal_mode ?? '');
  } catch {
    // Another connection holds a lock; the file keeps its journal mode.
  }
  try {
    db.exec('PRAGMA synchronous = NORMAL');
  } catch {
    // Not expected; SQLite's default (FULL) stays.
  }
  return mode.toLowerCase() === 'wal';
}

function bind(params: Params): Params {
  if (params === undefined || params === null) return undefined;
  if (Array.isArray(params)) return params.map(bindValue);
  if (typeof params !== 'object') return [bindValue(params)];
  const out: Record<string, SQLInputValue> = {};
  for (const k of Object.keys(params)) out[k] = bindValue((params as Record<string, unknown>)[k]);
  return out;
}

/** The module handed to sequelize as `dialectModule` (it reads `Database` and the `OPEN_*` flags). */
export const nodeSqliteDriver = {
  Database,
  Statement,
  OPEN_READONLY,
  OPEN_READWRITE,
  OPEN_CREATE,
  OPEN_URI,
  OPEN_SHAREDCACHE,
  OPEN_PRIVATECACHE,
  OPEN_FULLMUTEX,
  verbose() {
    return nodeSqliteDriver;
  },
};

/** True when `connection` is a connection of {@link nodeSqliteDriver}. */
export function isNodeSqliteConnection(connection: unknown): connection is Database {
  return connection instanceof Database;
}
