/**
 * Opens the process's main database from the configuration and proves it
 * reachable: one Sequelize connection for the SQL types, one DynamoDB client
 * for `dynamodb`. Every identity and admin store receives it.
 */
import { existsSync, readFileSync } from 'node:fs';
import type { Options, Sequelize } from 'sequelize';
import { LatchkeyError, isDependencyFailure } from '../../engine/errors.ts';
import { outageSummary, type Logger } from '../logger.ts';
import { openSequelize, SqliteDatabase, type SqlDatabase } from '../../engine/sql/index.ts';
import type { Config } from '../flags.ts';
import { DynamoDatabase, dynamoDatabase, sqlDatabase, type MainDatabase } from '../../auth/index.ts';

const DEFAULT_PORTS: Record<string, number> = { postgres: 5432, mysql: 3306, mariadb: 3306 };

function pem(value: string | undefined): string | undefined {
  if (value === undefined || value === '') return undefined;
  if (value.includes('-----BEGIN')) return value;
  if (existsSync(value)) return readFileSync(value, 'utf8');
  throw new LatchkeyError('invalid_argument', `certificate file not found: ${value}`, { reason: 'database_cert_not_found' });
}

/** Where the database is, for messages (never includes a password). */
export function describeDatabase(config: Config): string {
  const type = config.databaseType ?? 'unknown';
  if (config.databaseUrl) {
    if (type === 'sqlite') return `sqlite file ${sqliteFile(config.databaseUrl)}`;
    try {
      const u = new URL(config.databaseUrl);
      return `${type} database at ${u.hostname}:${u.port || DEFAULT_PORTS[type] || ''}${u.pathname}`;
    } catch {
      return `${type} database (malformed --database-url)`;
    }
  }
  if (type === 'sqlite') return `sqlite file ${config.databaseName ?? ''}`;
  return `${type} database at ${config.databaseHost ?? ''}:${config.databasePort ?? DEFAULT_PORTS[type] ?? ''}/${config.databaseName ?? ''}`;
}

/**
 * The main database: `openDatabase` for the SQL types; for `dynamodb` a
 * client on `--cloud-region` (and `--database-url` as the endpoint) whose
 * first request must succeed, else `unavailable` (reason
 * `database_unreachable`).
 */
export async function openMainDatabase(config: Config): Promise<MainDatabase> {
  if (config.databaseType !== 'dynamodb') return sqlDatabase(await openDatabase(config));
  const dynamo = DynamoDatabase.open({
    region: config.cloudRegion ?? '',
    endpoint: config.databaseUrl,
    accessKeyId: config.cloudAccessKeyId,
    secretAccessKey: config.cloudSecretAccessKey,
    tablePrefix: config.cloudTablePrefix,
  });
  if (!(await dynamo.ping(10_000))) {
    dynamo.close();
    const where = config.databaseUrl ? `at ${new URL(config.databaseUrl).host}` : `in ${config.cloudRegion ?? ''}`;
    throw new LatchkeyError('unavailable', `cannot connect to the dynamodb database ${where}`, { reason: 'database_unreachable' });
  }
  return dynamoDatabase(dynamo);
}

/** Closes the main database's connections. */
export async function closeMainDatabase(database: MainDatabase): Promise<void> {
  if (database.kind === 'sql') await database.sequelize.close();
  else database.dynamo.close();
}

/** True when the main database answers a trivial request within `timeoutMs`. */
export function pingMainDatabase(database: MainDatabase, timeoutMs = 2000): Promise<boolean> {
  return database.kind === 'sql' ? pingDatabase(database.sequelize, timeoutMs) : database.dynamo.ping(timeoutMs);
}

/**
 * Logs a failure that may be the main database's outage. During an outage (the
 * failure is a dependency's, or the database does not answer a 1 s ping: a
 * query cut off by the outage can fail with a driver error no code names) it
 * is an expected consequence: a warning, `<msg>: dependency unavailable`,
 * naming the outage without a stack. Anything else is an error.
 */
export function logUnlessOutage(logger: Logger, database: MainDatabase | undefined, msg: string, err: unknown, fields: Record<string, unknown> = {}): void {
  const warn = (): void => logger.warn(`${msg}: dependency unavailable`, { ...fields, cause: outageSummary(err) });
  if (isDependencyFailure(err)) return warn();
  if (database === undefined) return logger.error(msg, { ...fields, err });
  void pingMainDatabase(database, 1000).then(
    (up) => (up ? logger.error(msg, { ...fields, err }) : warn()),
    () => warn(),
  );
}

function sqliteFile(url: string): string {
  if (url === 'sqlite::memory:' || url === ':memory:') return ':memory:';
  return url.replace(/^sqlite:(\/\/)?/, '');
}

/**
 * Creates the connection and checks it with a round trip. Throws
 * `unavailable` (reason `database_unreachable`) with a clear message when the
 * database cannot be reached, and `invalid_argument` for an unusable
 * configuration.
 */
export async function openDatabase(config: Config): Promise<SqlDatabase> {
  const type = config.databaseType;
  if (type !== 'sqlite' && type !== 'postgres' && type !== 'mysql' && type !== 'mariadb')
    throw new LatchkeyError('invalid_argument', `unsupported --database-type ${String(type)}`, { reason: 'unsupported_database' });
  const common: Options = { logging: false, pool: { max: 10, min: 0, idle: 10_000, acquire: 10_000 } };
  let sequelize: SqlDatabase;
  if (type === 'sqlite') {
    const storage = config.databaseUrl ? sqliteFile(config.databaseUrl) : (config.databaseName ?? '');
    // node:sqlite through the project's driver, without sequelize (engine/sql/sqlite_database.ts): every SQLite
    // connection of the process in one library. The driver waits for a lock held by another process, from a
    // timer, up to the busy timeout (5 s); past it the write fails (503 unavailable, docs/security.md).
    sequelize = new SqliteDatabase(storage);
  } else {
    // MariaDB speaks the MySQL protocol; mysql2 serves both.
    const dialect = type === 'postgres' ? 'postgres' : 'mysql';
    const ca = pem(config.databaseCaCert);
    const cert = pem(config.databaseCert);
    const key = pem(config.databaseCertKey);
    const ssl = ca || cert ? { rejectUnauthorized: Boolean(ca), ...(ca ? { ca } : {}), ...(cert ? { cert } : {}), ...(key ? { key } : {}) } : undefined;
    const dialectOptions: Record<string, unknown> =
      dialect === 'postgres' ? { connectionTimeoutMillis: 5000, ...(ssl ? { ssl } : {}) } : { connectTimeout: 5000, ...(ssl ? { ssl } : {}) };
    const options: Options = { ...common, dialect, dialectOptions };
    let instance: Sequelize;
    if (config.databaseUrl) {
      // The URL's scheme picks the dialect; a mariadb:// URL opens on mysql2 (openSequelize).
      instance = openSequelize(config.databaseUrl, options);
    } else {
      const { Sequelize } = await import('sequelize');
      instance = new Sequelize({
        ...options,
        host: config.databaseHost ?? 'localhost',
        port: config.databasePort ?? DEFAULT_PORTS[type] ?? 0,
        ...(config.databaseName !== undefined ? { database: config.databaseName } : {}),
        ...(config.databaseUsername !== undefined ? { username: config.databaseUsername } : {}),
        ...(config.databasePassword !== undefined ? { password: config.databasePassword } : {}),
      });
    }
    guardDriverConnections(instance, dialect);
    sequelize = instance;
  }
  try {
    await sequelize.authenticate();
    if (type === 'sqlite') {
      // WAL lets readers proceed during a write; busy_timeout waits instead of failing on a lock.
      await sequelize.query('PRAGMA journal_mode = WAL');
      await sequelize.query('PRAGMA busy_timeout = 5000');
      await sequelize.query('PRAGMA foreign_keys = ON');
    }
  } catch (err) {
    await sequelize.close().catch(() => undefined);
    const detail = err instanceof Error ? (err.cause instanceof Error ? err.cause.message : err.message) : String(err);
    throw new LatchkeyError('unavailable', `cannot connect to the ${describeDatabase(config)}: ${detail}`, {
      reason: 'database_unreachable',
      cause: err,
    });
  }
  return sequelize;
}

/**
 * Gives every driver connection an `error` listener from the moment it is
 * made. sequelize attaches its own one step after the handshake completes; an
 * error read in the same packet as the handshake's end (the server shutting
 * down just as the connection opens: PostgreSQL 57P01) is then emitted with
 * no listener, which would crash the process (seen in
 * test/features/resilience/outage.test.ts). The listener marks the connection invalid,
 * so that the pool discards it (sequelize's `validate`); the failure itself
 * reaches the statement that uses it.
 */
function guardDriverConnections(sequelize: Sequelize, dialect: 'postgres' | 'mysql'): void {
  type Listening = { on(event: 'error', listener: () => void): unknown; _invalid?: boolean };
  const cm = (sequelize as unknown as { connectionManager: { lib: Record<string, unknown> } }).connectionManager;
  const lib = cm.lib;
  if (dialect === 'postgres') {
    const Base = lib['Client'] as new (...args: unknown[]) => Listening;
    class GuardedClient extends Base {
      constructor(...args: unknown[]) {
        super(...args);
        this.on('error', () => {
          this._invalid = true;
        });
      }
    }
    cm.lib = Object.create(lib, { Client: { value: GuardedClient } }) as Record<string, unknown>;
  } else {
    const create = lib['createConnection'] as (...args: unknown[]) => Listening;
    cm.lib = Object.create(lib, {
      createConnection: {
        value: (...args: unknown[]): Listening => {
          const connection = create.apply(lib, args);
          // mysql2 marks a failed connection fatal itself; sequelize's `validate` reads that.
          connection.on('error', () => undefined);
          return connection;
        },
      },
    }) as Record<string, unknown>;
  }
}

/** True when the database answers a trivial query within `timeoutMs`. */
export async function pingDatabase(sequelize: SqlDatabase, timeoutMs = 2000): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      sequelize.query('SELECT 1').then(() => true),
      new Promise<boolean>((resolve) => {
        timer = setTimeout(() => resolve(false), timeoutMs);
      }),
    ]);
  } catch {
    return false;
  } finally {
    if (timer) clearTimeout(timer);
  }
}
