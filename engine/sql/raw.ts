/**
 * Statements on a driver connection that sequelize handed out (a `pg.Client`,
 * a mysql2 connection or a `Database` of engine/sql/node_sqlite_driver.ts),
 * with bound parameters.
 *
 * Why: sequelize formats `replacements` into the SQL text in JavaScript; for
 * a 100-row multi-row INSERT (900 values) that cost 3–6 ms per statement on
 * every backend, more than the database's own work. Bound parameters go to
 * the driver as they are. Only the store's hot statements use this; schema
 * and migrations stay on sequelize.
 *
 * SQL is written with `?` placeholders (never inside literals); PostgreSQL's
 * `$n` numbering is applied here.
 */
import type { SqlDialect } from './migrate.ts';
import { isNodeSqliteConnection, type Database as NodeSqliteDatabase } from './node_sqlite_driver.ts';

/** The result of one statement: rows (SELECT, RETURNING) and the number of rows changed. */
export interface RawResult<T> {
  rows: T[];
  changes: number;
  /** MySQL: the OK packet's insert id (also what `LAST_INSERT_ID(expr)` set). */
  insertId?: number;
}

/** A driver connection that runs one statement at a time. */
export interface RawConnection {
  /** Runs `sql`; `returnsRows` tells SQLite whether to collect rows (SELECT, RETURNING). */
  run<T = Record<string, unknown>>(sql: string, params: readonly unknown[], returnsRows?: boolean): Promise<RawResult<T>>;
  /**
   * Only on a `node:sqlite` connection wrapped with `prepared`: a SELECT's
   * rows as arrays of column values in the order selected (column names must
   * not look like array indices: a row met while the connection waits for a
   * lock comes as an object first).
   */
  arrays?(sql: string, params: readonly unknown[]): Promise<unknown[][]>;
}

const dollarCache = new Map<string, string>();

/** `?` → `$1`, `$2`, … (cached per SQL text). */
export function dollarParams(sql: string): string {
  let out = dollarCache.get(sql);
  if (out === undefined) {
    let n = 0;
    out = sql.replace(/\?/gu, () => `$${++n}`);
    if (dollarCache.size > 500) dollarCache.clear();
    dollarCache.set(sql, out);
  }
  return out;
}

interface PgClient {
  query(config: { text: string; values: unknown[]; name?: string }): Promise<{ rows: unknown[]; rowCount: number | null }>;
}

/** PostgreSQL statement names by SQL text, the same on every connection (a name always means one text). */
const pgNames = new Map<string, string>();
const PG_NAMED_MAX = 2000;

function pgName(text: string): string | undefined {
  let name = pgNames.get(text);
  if (name === undefined && pgNames.size < PG_NAMED_MAX) pgNames.set(text, (name = `latchkey_fga_${pgNames.size}`));
  return name;
}
interface MysqlConnection {
  query(sql: string, values: unknown[], cb: (err: unknown, result: unknown) => void): void;
}
/**
 * Wraps the driver connection of `dialect`. With `prepared`: PostgreSQL named
 * statements (at most 2,000 texts per process); on SQLite (only for
 * connections the caller owns) SELECTs run at once on the calling thread (see
 * below). SQLite connections must come from the `node:sqlite` driver
 * (engine/sql/sqlite_sequelize.ts); any other is a programming error.
 */
export function rawConnection(dialect: SqlDialect, connection: unknown, prepared = false): RawConnection {
  if (dialect === 'postgres') {
    const client = connection as PgClient;
    return {
      async run<T>(sql: string, params: readonly unknown[]) {
        const text = dollarParams(sql);
        // Named statements are parsed once per connection and, after a few runs, planned once (about 0.2-0.4 ms
        // of planning per level statement otherwise).
        const name = prepared ? pgName(text) : undefined;
        const r = await client.query(name === undefined ? { text, values: [...params] } : { name, text, values: [...params] });
        return { rows: r.rows as T[], changes: r.rowCount ?? 0 };
      },
    };
  }
  if (dialect === 'mysql' || dialect === 'mariadb') {
    const conn = connection as MysqlConnection;
    return {
      run<T>(sql: string, params: readonly unknown[]) {
        return new Promise<RawResult<T>>((resolve, reject) => {
          conn.query(sql, [...params], (err, result) => {
            if (err) return reject(err);
            if (Array.isArray(result)) return resolve({ rows: result as T[], changes: 0 });
            const ok = result as { affectedRows?: number; insertId?: number };
            resolve({ rows: [], changes: Number(ok.affectedRows ?? 0), insertId: Number(ok.insertId ?? 0) });
          });
        });
      },
    };
  }
  if (isNodeSqliteConnection(connection)) return nodeSqlite(connection, prepared);
  throw new Error('a SQLite connection not made by the node:sqlite driver: build SQLite Sequelize instances with sqliteSequelize() or openSequelize()');
}

/**
 * A connection of the `node:sqlite` driver (statements prepared once per SQL
 * text by the driver). With `now` (the store's reader), a SELECT runs at once
 * on the calling thread and its promise is already settled (microseconds, no
 * trip through the event loop), its rows as `node:sqlite` returns them. Else,
 * and when the file is locked, the driver's callback API, which answers from
 * the event loop and waits for locks from timers
 * (engine/sql/node_sqlite_driver.ts): scans and writes let other work run
 * between their statements.
 */
function nodeSqlite(db: NodeSqliteDatabase, now: boolean): RawConnection {
  const viaCallback = <T>(sql: string, params: readonly unknown[], returnsRows: boolean): Promise<RawResult<T>> =>
    new Promise<RawResult<T>>((resolve, reject) => {
      if (returnsRows) {
        db.all(sql, params, (err, rows) => (err ? reject(err) : resolve({ rows: rows as T[], changes: rows!.length })));
      } else {
        db.run(sql, params, function (err) {
          if (err) reject(err);
          else resolve({ rows: [], changes: this.changes });
        });
      }
    });
  const conn: RawConnection = {
    run<T>(sql: string, params: readonly unknown[], returnsRows = false) {
      if (!returnsRows || !now) return viaCallback<T>(sql, params, returnsRows);
      let rows: Record<string, unknown>[] | undefined;
      try {
        rows = db.allNow(sql, params);
      } catch (err) {
        if (!isBusy(err)) return Promise.reject(err);
      }
      if (rows === undefined) return viaCallback<T>(sql, params, true);
      return Promise.resolve({ rows: rows as T[], changes: rows.length });
    },
  };
  if (now) {
    conn.arrays = (sql, params) => {
      let rows: unknown[][] | undefined;
      try {
        rows = db.arraysNow(sql, params);
      } catch (err) {
        if (!isBusy(err)) return Promise.reject(err);
      }
      // Locked: the callback API (rows as objects), then as arrays in the order selected.
      if (rows === undefined) return viaCallback<Record<string, unknown>>(sql, params, true).then((r) => r.rows.map((row) => Object.values(row)));
      return Promise.resolve(rows);
    };
  }
  return conn;
}

/** True when `err` is a unique/primary-key violation of the driver. */
export function isUniqueViolation(err: unknown): boolean {
  const e = err as { code?: string; errno?: number; message?: string; name?: string } | null;
  if (e === null || typeof e !== 'object') return false;
  if (e.name === 'SequelizeUniqueConstraintError') return true;
  if (e.code === '23505') return true; // PostgreSQL unique_violation
  if (e.code === 'ER_DUP_ENTRY' || e.errno === 1062) return true; // MySQL/MariaDB
  return e.code === 'SQLITE_CONSTRAINT' && /UNIQUE|PRIMARY KEY/u.test(e.message ?? '');
}

/** True when `err` says SQLite's write lock was taken (SQLITE_BUSY / SQLITE_LOCKED). */
export function isBusy(err: unknown): boolean {
  const code = (err as { code?: string; parent?: { code?: string } } | null)?.code ?? (err as { parent?: { code?: string } } | null)?.parent?.code;
  return code === 'SQLITE_BUSY' || code === 'SQLITE_LOCKED';
}
