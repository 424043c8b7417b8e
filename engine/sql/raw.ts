/**
 * Statements on a driver connection that sequelize handed out (a `pg.Client`,
 * a mysql2 connection or a sqlite3 `Database`), with bound parameters.
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

/** The result of one statement: rows (SELECT, RETURNING) and the number of rows changed. */
export interface RawResult<T> {
  rows: T[];
  changes: number;
}

/** A driver connection that runs one statement at a time. */
export interface RawConnection {
  /** Runs `sql`; `returnsRows` tells SQLite whether to collect rows (SELECT, RETURNING). */
  run<T = Record<string, unknown>>(sql: string, params: readonly unknown[], returnsRows?: boolean): Promise<RawResult<T>>;
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
  query(config: { text: string; values: unknown[] }): Promise<{ rows: unknown[]; rowCount: number | null }>;
}
interface MysqlConnection {
  query(sql: string, values: unknown[], cb: (err: unknown, result: unknown) => void): void;
}
interface Sqlite3Database {
  all(sql: string, params: unknown[], cb: (err: unknown, rows: unknown[]) => void): void;
  run(sql: string, params: unknown[], cb: (this: { changes: number }, err: unknown) => void): void;
}

/** Wraps the driver connection of `dialect`. */
export function rawConnection(dialect: SqlDialect, connection: unknown): RawConnection {
  if (dialect === 'postgres') {
    const client = connection as PgClient;
    return {
      async run<T>(sql: string, params: readonly unknown[]) {
        const r = await client.query({ text: dollarParams(sql), values: [...params] });
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
            resolve({ rows: [], changes: Number((result as { affectedRows?: number }).affectedRows ?? 0) });
          });
        });
      },
    };
  }
  const db = connection as Sqlite3Database;
  return {
    run<T>(sql: string, params: readonly unknown[], returnsRows = false) {
      return new Promise<RawResult<T>>((resolve, reject) => {
        if (returnsRows) {
          db.all(sql, [...params], (err, rows) => (err ? reject(err) : resolve({ rows: rows as T[], changes: rows.length })));
        } else {
          db.run(sql, [...params], function (err) {
            if (err) reject(err);
            else resolve({ rows: [], changes: this.changes });
          });
        }
      });
    },
  };
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
