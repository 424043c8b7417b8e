/**
 * The main database as the identity and admin stores see it: one SQL
 * connection (SQLite, PostgreSQL, MySQL/MariaDB through sequelize) or one
 * DynamoDB client. Each store has a small interface with one implementation
 * per kind; the services pick the implementation from this handle.
 *
 * A change that spans stores runs in a {@link StoreTransaction}: on SQL a
 * database transaction (all or nothing); on DynamoDB an ordered series of
 * single-item conditional writes whose first write decides the outcome
 * (docs/storage.md, "DynamoDB main database"). Either way `afterCommit`
 * callbacks run only once the change has been made.
 */
import type { Transaction } from 'sequelize';
import type { SqlDatabase } from '../engine/sql/sql_database.ts';
import type { DynamoDatabase } from './dynamodb.ts';

/** The main database of the process. */
export type MainDatabase = { readonly kind: 'sql'; readonly sequelize: SqlDatabase } | { readonly kind: 'dynamodb'; readonly dynamo: DynamoDatabase };

/**
 * A change in progress on the main database, handed to store methods that
 * must commit together. A sequelize `Transaction` is one.
 */
export interface StoreTransaction {
  /** Runs `fn` once the change has committed (never when it failed). */
  afterCommit(fn: () => void): void;
}

/** The {@link StoreTransaction} of the DynamoDB stores: writes are made as they come; callbacks wait for the end. */
export class DynamoTransaction implements StoreTransaction {
  readonly #callbacks: (() => void)[] = [];

  afterCommit(fn: () => void): void {
    this.#callbacks.push(fn);
  }

  /** Runs the callbacks (once the unit of work has finished without error). */
  committed(): void {
    for (const fn of this.#callbacks.splice(0)) fn();
  }
}

/** The main database of a sequelize connection. */
export function sqlDatabase(sequelize: SqlDatabase): MainDatabase {
  return { kind: 'sql', sequelize };
}

/** The main database of a DynamoDB client. */
export function dynamoDatabase(dynamo: DynamoDatabase): MainDatabase {
  return { kind: 'dynamodb', dynamo };
}

/** Runs `fn` as one unit of work on the main database and returns its result. */
export async function inTransaction<T>(db: MainDatabase, fn: (tx: StoreTransaction) => Promise<T>): Promise<T> {
  if (db.kind === 'sql') return db.sequelize.transaction((t) => fn(t));
  const tx = new DynamoTransaction();
  const out = await fn(tx);
  tx.committed();
  return out;
}

/** The sequelize transaction inside a {@link StoreTransaction} of a SQL store (undefined for none). */
export function sqlTransaction(tx: StoreTransaction | undefined): Transaction | undefined {
  return tx as Transaction | undefined;
}
