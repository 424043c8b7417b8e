/**
 * Test helper: the main-database backends of the identity and admin suites.
 * The SQL ones of `databases.ts` (SQLite always, PostgreSQL and MySQL when
 * configured, required in CI) plus DynamoDB on dynalite (`dynamodb.ts`),
 * which needs no service and so always runs.
 *
 * `openTestMain(backend)` makes a fresh, empty database and returns the
 * store handle, the raw connection for assertions that look under the
 * stores, and the server flags that select it.
 */
import type { Options } from 'sequelize';
import { openSequelize } from '../../engine/sql/sqlite_sequelize.ts';
import { SqliteDatabase } from '../../engine/sql/sqlite_database.ts';
import type { SqlDatabase } from '../../engine/sql/sql_database.ts';
import { dynamoDatabase, sqlDatabase, type DynamoDatabase, type MainDatabase } from '../../auth/index.ts';
import { createTestDatabase, sqlBackends, type SqlBackend } from './databases.ts';
import { createTestDynamo } from './dynamodb.ts';

export type MainBackend = SqlBackend | 'dynamodb';

/** The backends to run an identity or admin suite against. */
export function mainBackends(): MainBackend[] {
  return [...sqlBackends(), 'dynamodb'];
}

export interface TestMain {
  backend: MainBackend;
  database: MainDatabase;
  /**
   * The SQL connection (SQL backends only): on SQLite the server's own
   * (engine/sql/sqlite_database.ts, which has no pool; sequelize when `sequelizeOptions` set more than the pool), on
   * the others sequelize.
   */
  sequelize: SqlDatabase | undefined;
  /** The DynamoDB client (DynamoDB only). */
  dynamo: DynamoDatabase | undefined;
  /** `--database-type` and the flags that reach this database. */
  flags: string[];
  /** Closes the connection and drops the database. Safe to call twice. */
  close(): Promise<void>;
}

/** A fresh, empty main database on `backend`. */
export async function openTestMain(backend: MainBackend, sequelizeOptions: Options = {}): Promise<TestMain> {
  if (backend === 'dynamodb') {
    const d = await createTestDynamo();
    return { backend, database: dynamoDatabase(d.db), sequelize: undefined, dynamo: d.db, flags: d.flags, close: () => d.drop() };
  }
  const db = await createTestDatabase(backend);
  const sequelize: SqlDatabase =
    backend === 'sqlite' && Object.keys(sequelizeOptions).every((k) => k === 'pool')
      ? new SqliteDatabase(db.url.replace(/^sqlite:(\/\/)?/u, ''))
      : openSequelize(db.url, { logging: false, ...sequelizeOptions });
  let closed = false;
  return {
    backend,
    database: sqlDatabase(sequelize),
    sequelize,
    dynamo: undefined,
    flags: [`--database-type=${backend}`, `--database-url=${db.url}`],
    async close() {
      if (closed) return;
      closed = true;
      await sequelize.close();
      await db.drop();
    },
  };
}
