/**
 * A SQLite main database without sequelize: the {@link SqlDatabase} the
 * server opens on SQLite. It keeps the behaviour of a `Sequelize` instance on
 * SQLite, statement for statement, for everything the stores ask of it:
 *
 * - Connections of the `node:sqlite` driver (engine/sql/node_sqlite_driver.ts),
 *   kept by key as sequelize's SQLite connection manager keeps them: one
 *   shared connection for statements outside transactions, a fresh one per
 *   transaction (closed when it ends), the ones a caller asks for by `uuid`
 *   (the tuple store's reader and writer), and a single connection for
 *   everything on an in-memory database. Each opens with `PRAGMA
 *   FOREIGN_KEYS=ON`.
 * - `query`: replacements (`?` and `:name`, found where sequelize finds them:
 *   outside quotes and comments, at the start of a token) become bound
 *   parameters with the values sequelize would have written into the text
 *   (booleans 1/0, integral numbers as integers, dates as sequelize formats
 *   them, arrays as lists). The result has sequelize's shape for the query
 *   type: rows for `SELECT` (the first or null with `plain`), the number of
 *   rows changed for `BULKDELETE`/`BULKUPDATE`, `[undefined, changes]` for
 *   `UPDATE`, `[lastID, changes]` for `INSERT`, `[rows, statement]` for a
 *   raw statement.
 * - `transaction`: managed transactions (`BEGIN DEFERRED|IMMEDIATE
 *   TRANSACTION`, `COMMIT`, `ROLLBACK` on a failure), `afterCommit` hooks run
 *   once committed.
 * - Errors: the classes of engine/sql/sql_database.ts, named as sequelize
 *   names them.
 *
 * What the stores never ask (models, nested transactions, CLS, unmanaged
 * transactions, `bind`) throws.
 */
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { Database, OPEN_CREATE, OPEN_READWRITE, type Statement } from './node_sqlite_driver.ts';
import { SqlConnectionError, sqliteStatementError, type SqlDatabase } from './sql_database.ts';

type Connection = Database & { uuid?: string | undefined };
type Row = Record<string, unknown>;

/** A column as `describeTable` describes it. */
interface Column {
  type: string;
  allowNull: boolean;
  defaultValue: unknown;
  primaryKey: boolean;
  unique: boolean;
  references?: { model: string; key: string };
}

interface QueryOptions {
  type?: string;
  replacements?: readonly unknown[] | Record<string, unknown>;
  transaction?: SqliteTransaction | null;
  plain?: boolean;
  raw?: boolean;
  logging?: unknown;
  nest?: boolean;
  model?: unknown;
  bind?: unknown;
  completesTransaction?: boolean;
}

/** A managed transaction on its own connection (sequelize's `Transaction`, the part the stores use). */
export class SqliteTransaction {
  readonly id: string;
  readonly options: { type: string };
  /** The database it runs on (as sequelize's `transaction.sequelize`). */
  readonly sequelize: SqliteDatabase;
  connection!: Connection;
  /** Set once committed or rolled back. */
  finished: 'commit' | 'rollback' | undefined;
  readonly #afterCommit: ((t: SqliteTransaction) => unknown)[] = [];

  constructor(sequelize: SqliteDatabase, id: string, type: string) {
    this.sequelize = sequelize;
    this.id = id;
    this.options = { type };
  }

  /** Runs `fn` once the transaction has committed (never when it failed). */
  afterCommit(fn: (t: SqliteTransaction) => unknown): void {
    if (typeof fn !== 'function') throw new Error('"fn" must be a function');
    this.#afterCommit.push(fn);
  }

  /** @internal The hooks, in the order added. */
  hooks(): readonly ((t: SqliteTransaction) => unknown)[] {
    return this.#afterCommit;
  }
}

let transactions = 0;

export class SqliteDatabase implements SqlDatabase {
  /** What sequelize exposes as `options`: the file (`:memory:` for an in-memory database). */
  readonly options: { readonly dialect: 'sqlite'; readonly storage: string };
  readonly #connections = new Map<string, Promise<Connection>>();
  /** sequelize's SQLite connection manager, as the stores reach it (`getConnection`, `releaseConnection`). */
  readonly connectionManager: {
    getConnection(options?: { uuid?: string; type?: string }): Promise<Connection>;
    releaseConnection(connection: Connection, force?: boolean): void;
  };

  constructor(storage: string) {
    this.options = { dialect: 'sqlite', storage: storage === '' ? ':memory:' : storage };
    this.connectionManager = {
      getConnection: (options = {}) => this.#connection(options.uuid ?? 'default'),
      releaseConnection: (connection, force) => this.#release(connection, force === true),
    };
  }

  getDialect(): string {
    return 'sqlite';
  }

  get #memory(): boolean {
    return this.options.storage === ':memory:';
  }

  #connection(uuid: string): Promise<Connection> {
    const key = this.#memory ? 'memory' : uuid;
    let open = this.#connections.get(key);
    if (open !== undefined) return open;
    const storage = this.options.storage;
    open = new Promise<Connection>((resolve, reject) => {
      try {
        if (!this.#memory) mkdirSync(dirname(storage), { recursive: true });
      } catch (err) {
        reject(new SqlConnectionError(err as Error));
        return;
      }
      const db: Connection = new Database(storage, OPEN_READWRITE | OPEN_CREATE, (err) => {
        if (err !== null) {
          this.#connections.delete(key);
          reject(new SqlConnectionError(err));
          return;
        }
        db.run('PRAGMA FOREIGN_KEYS=ON');
        resolve(db);
      });
    });
    this.#connections.set(key, open);
    return open;
  }

  #release(connection: Connection, force: boolean): void {
    if (connection.filename === ':memory:' && !force) return;
    const uuid = connection.uuid;
    if (uuid === undefined) return;
    connection.close();
    this.#connections.delete(uuid);
  }

  /** Runs one statement the way sequelize's SQLite dialect runs it (see the module doc). */
  query = ((sql: string, options: QueryOptions = {}): Promise<unknown> => this.#query(sql, options)) as SqlDatabase['query'];

  async #query(sqlText: string, options: QueryOptions): Promise<unknown> {
    if (options.model !== undefined || options.bind !== undefined || options.nest === true) throw new Error('SqliteDatabase.query: models, bind parameters and nest are not supported');
    const type = options.type ?? (options.plain === true ? 'SELECT' : 'RAW');
    const [sql, params] = bindReplacements(sqlText.trim(), options.replacements);
    const tx = options.transaction ?? undefined;
    if (tx !== undefined && tx.finished !== undefined && options.completesTransaction !== true) {
      throw Object.assign(new Error(`${tx.finished} has been called on this transaction(${tx.id}), you can no longer use it. (The rejected query is attached as the 'sql' property of this error)`), { sql });
    }
    const connection = tx !== undefined ? tx.connection : await this.#connection('default');
    if (sql.startsWith('-- ')) return undefined;
    const lower = sql.toLowerCase();
    const insert = type === 'INSERT' || lower.startsWith('insert into');
    const run = insert || type === 'UPDATE' || type === 'UPSERT' || type === 'BULKUPDATE' || type === 'BULKDELETE' || lower.includes('create temporary table');
    const { meta, rows } = await execute(connection, sql, params, run);
    // The driver's rows are plain objects of their own (sequelize copies them; nothing else holds these).
    if (type === 'SELECT') return options.plain === true ? (rows![0] ?? null) : rows;
    if (type === 'BULKUPDATE' || type === 'BULKDELETE') return meta.changes;
    if (type === 'RAW') return [rows, meta];
    if (type === 'UPSERT') return [meta.lastID, null];
    if (type === 'UPDATE') return [insert ? meta.lastID : undefined, meta.changes];
    if (insert) return [meta.lastID, meta.changes];
    return undefined;
  }

  /** Runs `fn` in a transaction on a connection of its own: committed when it resolves, rolled back when it throws. */
  transaction = (async (options: unknown, fn?: unknown): Promise<unknown> => {
    if (typeof options === 'function') {
      fn = options;
      options = {};
    }
    if (typeof fn !== 'function') throw new Error('SqliteDatabase.transaction: only managed transactions (with a callback) are supported');
    const opts = (options ?? {}) as { type?: string; transaction?: unknown };
    if (opts.transaction !== undefined && opts.transaction !== null) throw new Error('SqliteDatabase.transaction: nested transactions are not supported');
    const tx = new SqliteTransaction(this, `latchkey_tx_${++transactions}`, opts.type ?? 'DEFERRED');
    const connection = await this.#connection(tx.id);
    tx.connection = connection;
    if (!this.#memory) connection.uuid = tx.id;
    try {
      await this.#query(`BEGIN ${tx.options.type} TRANSACTION;`, { transaction: tx });
      const result = await (fn as (t: SqliteTransaction) => Promise<unknown>)(tx);
      try {
        await this.#query('COMMIT;', { transaction: tx, completesTransaction: true });
      } finally {
        tx.finished = 'commit';
        this.#cleanup(tx);
      }
      for (const hook of tx.hooks()) await hook(tx);
      return result;
    } catch (err) {
      if (tx.finished === undefined) {
        try {
          await this.#query('ROLLBACK;', { transaction: tx, completesTransaction: true });
        } catch {
          // The connection closes below; SQLite rolls back what it held.
        }
        tx.finished = 'rollback';
      }
      this.#cleanup(tx);
      throw err;
    }
  }) as SqlDatabase['transaction'];

  #cleanup(tx: SqliteTransaction): void {
    const c = tx.connection;
    if (c.uuid === undefined) return;
    this.#release(c, false);
    c.uuid = undefined;
  }

  /** The query interface's `describeTable` (the only part the migrations use), as sequelize describes a SQLite table. */
  getQueryInterface(): ReturnType<SqlDatabase['getQueryInterface']> {
    const describeTable = (table: unknown, options?: unknown) => this.#describe(String(table), (options as { transaction?: SqliteTransaction } | undefined)?.transaction);
    return { describeTable } as unknown as ReturnType<SqlDatabase['getQueryInterface']>;
  }

  async #describe(table: string, transaction: SqliteTransaction | undefined): Promise<Record<string, Column>> {
    const select = (sql: string): Promise<Row[]> => this.#query(sql, { type: 'SELECT', ...(transaction !== undefined ? { transaction } : {}) }) as Promise<Row[]>;
    const quoted = `\`${table.replace(/`/gu, '``')}\``;
    const rows = await select(`PRAGMA TABLE_INFO(${quoted});`);
    if (rows.length === 0) throw new Error(`No description found for "${table}" table. Check the table name and schema; remember, they _are_ case sensitive.`);
    const out: Record<string, Column> = {};
    for (const r of rows) {
      const dflt = r['dflt_value'];
      out[String(r['name'])] = {
        type: String(r['type']),
        allowNull: r['notnull'] === 0,
        defaultValue: dflt === null ? undefined : dflt === 'NULL' ? null : String(dflt).replace(/'/gu, ''),
        primaryKey: r['pk'] !== 0,
        unique: false,
      };
    }
    // As sequelize: each index's columns take its uniqueness, the indexes read last first.
    for (const index of (await select(`PRAGMA INDEX_LIST(${quoted});`)).reverse()) {
      for (const field of await select(`PRAGMA INDEX_INFO(\`${String(index['name']).replace(/`/gu, '``')}\`);`)) {
        const column = out[String(field['name'])];
        if (column !== undefined && index['unique'] !== undefined) column.unique = Boolean(index['unique']);
      }
    }
    for (const fk of await select(`PRAGMA foreign_key_list(${quoted});`)) {
      const column = out[String(fk['from'])];
      if (column !== undefined) column.references = { model: String(fk['table']), key: String(fk['to']) };
    }
    return out;
  }

  async authenticate(): Promise<void> {
    await this.#query('SELECT 1+1 AS result', { type: 'SELECT', plain: true });
  }

  /** Closes every connection (each after the statements queued on it). */
  async close(): Promise<void> {
    const open = [...this.#connections.values()];
    this.#connections.clear();
    await Promise.all(
      open.map(async (p) => {
        const c = await p.catch(() => undefined);
        if (c === undefined || c.closed) return;
        await new Promise<void>((resolve) => c.close(() => resolve()));
      }),
    );
  }
}

/** One statement on `connection`: `run` (no rows) or `all`; driver errors become the store error classes. */
function execute(connection: Connection, sql: string, params: unknown[], run: boolean): Promise<{ meta: Statement; rows: Row[] | undefined }> {
  return new Promise((resolve, reject) => {
    const done = function (this: Statement, err: Error | null, rows?: unknown[]): void {
      if (err !== null) reject(sqliteStatementError(err, sql, params.length > 0 ? params : undefined));
      else resolve({ meta: this, rows: rows as Row[] | undefined });
    };
    if (run) connection.run(sql, params, done);
    else connection.all(sql, params, done);
  });
}

/**
 * `sql` with its replacements as numbered parameters (`?1`, `?2`, …) and the
 * values to bind, found and converted as sequelize's `injectReplacements`
 * would write them into the text on SQLite.
 */
function bindReplacements(sql: string, replacements: QueryOptions['replacements']): [string, unknown[]] {
  if (replacements === undefined || replacements === null) return [sql, []];
  const named = !Array.isArray(replacements);
  if (named && Object.getPrototypeOf(replacements) !== Object.prototype && Object.getPrototypeOf(replacements) !== null) {
    throw new TypeError(`"replacements" must be an array or a plain object, but received ${JSON.stringify(replacements)} instead.`);
  }
  const params: unknown[] = [];
  let out = '';
  let from = 0;
  let positional = 0;
  const placeholder = (value: unknown): string => {
    if (Array.isArray(value)) return listOf(value, params);
    params.push(bindable(value));
    return `?${params.length}`;
  };
  for (let i = 0; i < sql.length; i++) {
    const ch = sql[i]!;
    if (ch === '`') {
      const end = sql.indexOf('`', i + 1);
      i = end < 0 ? sql.length : end;
      continue;
    }
    if (ch === "'") {
      const end = sql.indexOf("'", i + 1);
      if (end < 0) throw new Error(`The following SQL query includes an unterminated string literal:\n${sql}`);
      i = end;
      continue;
    }
    if (ch === '-' && sql.startsWith('-- ', i)) {
      const end = sql.indexOf('\n', i);
      i = end < 0 ? sql.length : end;
      continue;
    }
    if (ch === '/' && sql[i + 1] === '*') {
      const end = sql.indexOf('*/', i + 2);
      i = end < 0 ? sql.length : end + 1;
      continue;
    }
    const prev = sql[i - 1];
    const startsToken = prev === undefined || /[\s(>,=[]/u.test(prev);
    if (named && ch === ':' && startsToken) {
      const m = /^:([a-z_][0-9a-z_]*)(?:\)|,|$|\s|::|;|\])/iu.exec(sql.slice(i));
      if (m === null) continue;
      const name = m[1]!;
      const value = (replacements as Record<string, unknown>)[name];
      if (!Object.prototype.hasOwnProperty.call(replacements, name) || value === undefined) throw new Error(`Named replacement ":${name}" has no entry in the replacement map.`);
      out += sql.slice(from, i) + placeholder(value);
      from = i + name.length + 1;
      continue;
    }
    if (!named && ch === '?' && startsToken && sql[i + 1] !== '|' && sql[i + 1] !== '&') {
      const index = positional++;
      const value = (replacements as readonly unknown[])[index];
      if (value === undefined) throw new Error(`Positional replacement (?) ${index} has no entry in the replacement map (replacements[${index}] is undefined).`);
      out += sql.slice(from, i) + placeholder(value);
      from = i + 1;
    }
  }
  return [out + sql.slice(from), params];
}

/** An array replacement as a list (`?1, ?2`; an inner array as a parenthesised group), as sequelize writes one. */
function listOf(values: readonly unknown[], params: unknown[]): string {
  return values
    .map((v) => {
      if (Array.isArray(v)) return `(${listOf(v, params)})`;
      params.push(bindable(v));
      return `?${params.length}`;
    })
    .join(', ');
}

/** A replacement value as the driver binds it, to the value sequelize would have written into the SQL text. */
function bindable(v: unknown): unknown {
  if (v === undefined || v === null) return null;
  switch (typeof v) {
    case 'boolean':
      return v ? 1n : 0n;
    case 'number':
      // sequelize writes `String(n)`: an integer literal for an integral number (bound as a double, it would be a REAL).
      return Number.isInteger(v) && Math.abs(v) < 2 ** 63 ? BigInt(v) : v;
    case 'bigint':
    case 'string':
      return v;
  }
  if (v instanceof Date) return sequelizeDate(v);
  if (ArrayBuffer.isView(v)) return v;
  throw new Error(`Invalid value ${String(v)}`);
}

/** A date as sequelize writes it on SQLite: local time, `YYYY-MM-DD HH:mm:ss.SSS +hh:mm`. */
function sequelizeDate(d: Date): string {
  const p = (n: number, w = 2): string => String(Math.abs(n)).padStart(w, '0');
  const offset = -d.getTimezoneOffset();
  return `${p(d.getFullYear(), 4)}-${p(d.getMonth() + 1)}-${p(d.getDate())} ${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}.${p(d.getMilliseconds(), 3)} ${offset < 0 ? '-' : '+'}${p(Math.trunc(offset / 60))}:${p(offset % 60)}`;
}
