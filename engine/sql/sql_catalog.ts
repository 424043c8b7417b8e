/**
 * The stores of one SQL database (the rows of `fga_store`): creating,
 * reading, listing and deleting them, and the view of each store, which
 * shares the connections of the default store that `SqlStore.open`
 * returned (engine/sql/sql_store.ts).
 */
import type { Transaction } from 'sequelize';
import type { SqlDatabase } from './sql_database.ts';
import { LatchkeyError } from '../errors.ts';
import { DEFAULT_STORE_ID } from '../store.ts';
import type { Page, StoreCatalog, StoreRecord, TupleStore } from '../store.ts';
import type { SqlDialect } from './migrate.ts';
import type { SqlConnections } from './connections.ts';
import { changeNotifySql } from './sql_writer.ts';
import { decodeToken, encodeToken } from './sql_tokens.ts';

interface StoreRow {
  id: string;
  name: string;
  created_at: number | string;
  updated_at: number | string;
}

function storeRecord(r: StoreRow): StoreRecord {
  return { id: r.id, name: r.name, createdAt: Number(r.created_at), updatedAt: Number(r.updated_at) };
}


/** What the views of the stores of one database share: the connections and whether they are closed. */
export interface Shared {
  sequelize: SqlDatabase;
  dialect: SqlDialect;
  batch: number;
  now: () => number;
  connections: SqlConnections;
  closed: boolean;
  views: Map<string, TupleStore>;
}

/** The store with this id does not exist (any more). */
export function storeNotFound(id: string): LatchkeyError {
  return new LatchkeyError('not_found', `store '${id}' not found`, { reason: 'store_not_found' });
}

/** The statements of a store's view, lent to the catalog and to the view's writes (engine/sql/sql_store_writes.ts). */
export interface StoreStatements {
  /** Throws `unavailable` (reason `store_closed`) once the store is closed. */
  open(): void;
  select<T>(sql: string, replacements: unknown[], transaction?: Transaction): Promise<T[]>;
  exec(sql: string, replacements: unknown[], transaction: Transaction): Promise<void>;
  /** Runs `fn` in a sequelize transaction, one at a time per store instance. */
  transaction<T>(fn: (tx: Transaction) => Promise<T>): Promise<T>;
}

/**
 * The stores of the database `shared` belongs to, run through the statements
 * of one of its views; `makeView` makes the view of a store not yet held.
 */
export function sqlCatalog(shared: Shared, db: StoreStatements, makeView: (id: string) => TupleStore): StoreCatalog {
  return {
    async createStore(record: StoreRecord): Promise<void> {
      await db.transaction(async (tx) => {
        const found = await db.select<{ id: string }>('SELECT id FROM fga_store WHERE id = ?', [record.id], tx);
        if (found.length > 0) throw new LatchkeyError('already_exists', `store '${record.id}' already exists`, { reason: 'store_exists' });
        await db.exec('INSERT INTO fga_store (id, name, revision, created_at, updated_at) VALUES (?, ?, 0, ?, ?)', [record.id, record.name, record.createdAt, record.updatedAt], tx);
      });
    },
    async readStore(id: string): Promise<StoreRecord | undefined> {
      const [row] = await db.select<StoreRow>('SELECT id, name, created_at, updated_at FROM fga_store WHERE id = ?', [id]);
      return row === undefined ? undefined : storeRecord(row);
    },
    async listStores(options): Promise<Page<StoreRecord>> {
      const after = options.continuationToken === undefined ? undefined : decodeToken(options.continuationToken, 1)[0];
      const where: string[] = [];
      const params: unknown[] = [];
      if (after !== undefined) {
        where.push('id > ?');
        params.push(after);
      }
      if (options.name !== undefined) {
        where.push('name = ?');
        params.push(options.name);
      }
      params.push(options.pageSize + 1);
      const rows = await db.select<StoreRow>(
        `SELECT id, name, created_at, updated_at FROM fga_store${where.length > 0 ? ` WHERE ${where.join(' AND ')}` : ''} ORDER BY id LIMIT ?`,
        params,
      );
      const items = rows.slice(0, options.pageSize).map(storeRecord);
      return { items, continuationToken: rows.length > options.pageSize ? encodeToken([items.at(-1)!.id]) : undefined };
    },
    async deleteStore(id: string): Promise<void> {
      if (id === DEFAULT_STORE_ID) throw new LatchkeyError('failed_precondition', 'the default store cannot be deleted', { reason: 'default_store' });
      await db.transaction(async (tx) => {
        // The store row first: it is the lock every writer of the store takes, so no write interleaves.
        const [found] = await db.select<{ id: string }>('SELECT id FROM fga_store WHERE id = ?', [id], tx);
        if (found === undefined) throw storeNotFound(id);
        await db.exec('UPDATE fga_store SET revision = revision + 1 WHERE id = ?', [id], tx);
        const notify = changeNotifySql(shared.dialect, 'store_deleted');
        if (notify !== undefined) await db.exec(notify, [id], tx);
        for (const table of ['fga_tuple', 'fga_changelog', 'fga_model', 'fga_assertion']) await db.exec(`DELETE FROM ${table} WHERE store = ?`, [id], tx);
        await db.exec('DELETE FROM fga_store WHERE id = ?', [id], tx);
      });
      shared.views.delete(id);
    },
    store(id: string): TupleStore {
      let view = shared.views.get(id);
      if (view === undefined) {
        view = makeView(id);
        if (shared.views.size < 10_000) shared.views.set(id, view);
      }
      return view;
    },
  };
}
