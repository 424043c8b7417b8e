/**
 * Test helper: real databases for tests, one fresh database per call.
 *
 * - SQLite is always available (a file in a fresh temp directory).
 * - PostgreSQL and MySQL/MariaDB are used when `LATCHKEY_TEST_POSTGRES_URL` /
 *   `LATCHKEY_TEST_MYSQL_URL` are set. With `CI` set, a missing URL is a
 *   failure, never a skip (`requiredBackends()` throws).
 * - Redis: `LATCHKEY_TEST_REDIS_URL`, same rule.
 *
 * Each `createTestDatabase()` makes a uniquely named database and returns a
 * `drop()` that removes it, so test files run in parallel and leave nothing.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import mysql from 'mysql2/promise';

export type SqlBackend = 'sqlite' | 'postgres' | 'mysql';

export interface TestDatabase {
  backend: SqlBackend;
  /** Connection URL for `--database-url` / store options. */
  url: string;
  /** Drops the database (or removes the SQLite file). Safe to call twice. */
  drop(): Promise<void>;
}

const inCi = (): boolean => Boolean(process.env.CI);

function envUrl(name: string): string | undefined {
  const v = process.env[name];
  return v && v.length > 0 ? v : undefined;
}

/** PostgreSQL admin URL, or undefined when not configured (throws in CI). */
export function postgresUrl(): string | undefined {
  const url = envUrl('LATCHKEY_TEST_POSTGRES_URL');
  if (!url && inCi()) throw new Error('LATCHKEY_TEST_POSTGRES_URL is required in CI');
  return url;
}

/** MySQL/MariaDB admin URL, or undefined when not configured (throws in CI). */
export function mysqlUrl(): string | undefined {
  const url = envUrl('LATCHKEY_TEST_MYSQL_URL');
  if (!url && inCi()) throw new Error('LATCHKEY_TEST_MYSQL_URL is required in CI');
  return url;
}

/** Redis URL, or undefined when not configured (throws in CI). */
export function redisUrl(): string | undefined {
  const url = envUrl('LATCHKEY_TEST_REDIS_URL');
  if (!url && inCi()) throw new Error('LATCHKEY_TEST_REDIS_URL is required in CI');
  return url;
}

/** The SQL backends to run a suite against: SQLite always, the others when configured. */
export function sqlBackends(): SqlBackend[] {
  const out: SqlBackend[] = ['sqlite'];
  if (postgresUrl()) out.push('postgres');
  if (mysqlUrl()) out.push('mysql');
  return out;
}

function uniqueName(prefix: string): string {
  return `${prefix}_${Date.now().toString(36)}_${randomBytes(4).toString('hex')}`;
}

function withDatabase(url: string, name: string): string {
  const u = new URL(url);
  u.pathname = `/${name}`;
  return u.toString();
}

/** Creates a fresh, empty database on the given backend. */
export async function createTestDatabase(backend: SqlBackend, prefix = 'lk_test'): Promise<TestDatabase> {
  if (backend === 'sqlite') {
    const dir = await mkdtemp(join(tmpdir(), `${prefix}-`));
    const file = join(dir, 'db.sqlite');
    return {
      backend,
      url: `sqlite:${file}`,
      drop: () => rm(dir, { recursive: true, force: true }),
    };
  }
  const name = uniqueName(prefix);
  if (backend === 'postgres') {
    const admin = postgresUrl();
    if (!admin) throw new Error('PostgreSQL is not configured (LATCHKEY_TEST_POSTGRES_URL)');
    const client = new pg.Client({ connectionString: admin });
    await client.connect();
    try {
      await client.query(`CREATE DATABASE "${name}"`);
    } finally {
      await client.end();
    }
    let dropped = false;
    return {
      backend,
      url: withDatabase(admin, name),
      async drop() {
        if (dropped) return;
        dropped = true;
        const c = new pg.Client({ connectionString: admin });
        await c.connect();
        try {
          await c.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
        } finally {
          await c.end();
        }
      },
    };
  }
  const admin = mysqlUrl();
  if (!admin) throw new Error('MySQL is not configured (LATCHKEY_TEST_MYSQL_URL)');
  const conn = await connectMysql(admin);
  try {
    await conn.query(`CREATE DATABASE \`${name}\` CHARACTER SET utf8mb4 COLLATE utf8mb4_bin`);
  } finally {
    await conn.end();
  }
  let dropped = false;
  return {
    backend,
    url: withDatabase(admin, name),
    async drop() {
      if (dropped) return;
      dropped = true;
      const c = await connectMysql(admin);
      try {
        await c.query(`DROP DATABASE IF EXISTS \`${name}\``);
      } finally {
        await c.end();
      }
    },
  };
}

/**
 * An administrative MySQL connection. On a loaded two-core machine MariaDB
 * sometimes accepts a loopback connection only after mysql2's 10 s connect
 * timeout; a slow handshake is retried (with a longer timeout), anything else
 * fails at once.
 */
async function connectMysql(url: string): Promise<mysql.Connection> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await mysql.createConnection({ uri: url, connectTimeout: 30_000 });
    } catch (err) {
      const code = (err as { code?: unknown }).code;
      if (attempt >= 3 || (code !== 'ETIMEDOUT' && code !== 'ECONNRESET')) throw err;
    }
  }
}
