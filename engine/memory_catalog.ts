/**
 * The stores of one memory backend (engine/memory_store.ts): their records,
 * the view of each, created, listed and deleted here; and the view of a
 * store that does not exist, which fails every call with `not_found`.
 */
import { LatchkeyError } from './errors.ts';
import { DEFAULT_STORE_ID } from './store.ts';
import type { Page, StoreCatalog, StoreRecord, TupleStore } from './store.ts';
import { decodeToken, encodeToken } from './memory_tokens.ts';

/** The stores of one memory backend, shared by its views. */
export class MemoryCatalog<S extends TupleStore> implements StoreCatalog {
  readonly records = new Map<string, StoreRecord>();
  readonly stores = new Map<string, S>();
  readonly #make: (id: string) => S;

  constructor(root: S, now: () => number, make: (id: string) => S) {
    const t = now();
    this.records.set(DEFAULT_STORE_ID, { id: DEFAULT_STORE_ID, name: 'default', createdAt: t, updatedAt: t });
    this.stores.set(DEFAULT_STORE_ID, root);
    this.#make = make;
  }

  async createStore(record: StoreRecord): Promise<void> {
    if (this.records.has(record.id)) throw new LatchkeyError('already_exists', `store '${record.id}' already exists`, { reason: 'store_exists' });
    this.records.set(record.id, { ...record });
    this.stores.set(record.id, this.#make(record.id));
  }

  async readStore(id: string): Promise<StoreRecord | undefined> {
    const r = this.records.get(id);
    return r === undefined ? undefined : { ...r };
  }

  async listStores(options: { pageSize: number; continuationToken?: string | undefined; name?: string | undefined }): Promise<Page<StoreRecord>> {
    const after = options.continuationToken === undefined ? undefined : decodeToken(options.continuationToken);
    const all = [...this.records.values()]
      .filter((r) => (after === undefined || r.id > after) && (options.name === undefined || r.name === options.name))
      .sort((a, b) => (a.id < b.id ? -1 : 1));
    const items = all.slice(0, options.pageSize).map((r) => ({ ...r }));
    return { items, continuationToken: all.length > options.pageSize ? encodeToken(items.at(-1)!.id) : undefined };
  }

  async deleteStore(id: string): Promise<void> {
    if (id === DEFAULT_STORE_ID) throw new LatchkeyError('failed_precondition', 'the default store cannot be deleted', { reason: 'default_store' });
    const store = this.stores.get(id);
    if (store === undefined) throw new LatchkeyError('not_found', `store '${id}' not found`, { reason: 'store_not_found' });
    this.records.delete(id);
    this.stores.delete(id);
    await store.close();
  }

  store(id: string): TupleStore {
    return this.stores.get(id) ?? (new MissingStore(id) as unknown as TupleStore);
  }
}

/** The view of a store that does not exist: every call fails with `not_found`. */
class MissingStore {
  readonly storeId: string;
  constructor(id: string) {
    this.storeId = id;
    const fail = async (): Promise<never> => {
      throw new LatchkeyError('not_found', `store '${id}' not found`, { reason: 'store_not_found' });
    };
    for (const m of ['writeModel', 'readModel', 'readLatestModel', 'latestModelId', 'listModels', 'write', 'readUserTuples', 'readObjectRelations',
      'readStartingWithUsers', 'readPage', 'readChanges', 'revision', 'hasTuples', 'reset', 'writeAssertions', 'readAssertions', 'readObjectIds']) {
      (this as unknown as Record<string, unknown>)[m] = fail;
    }
    (this as unknown as Record<string, unknown>)['close'] = async (): Promise<void> => undefined;
  }
}
