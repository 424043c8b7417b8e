/**
 * `@latchkey/engine`: an embeddable, OpenFGA-compatible fine-grained
 * authorization engine. It needs nothing but a {@link TupleStore} (the
 * {@link MemoryStore} by default) and a model:
 *
 * ```ts
 * import { Engine } from '@latchkey/engine';
 * const engine = new Engine();
 * await engine.writeModel({ dsl: 'model\n  schema 1.1\ntype user\ntype doc\n  relations\n    define viewer: [user]\n' });
 * await engine.write({ writes: [{ user: 'user:anne', relation: 'viewer', object: 'doc:1' }] });
 * (await engine.check({ user: 'user:anne', relation: 'viewer', object: 'doc:1' })).allowed; // true
 * ```
 *
 * Every error is a {@link LatchkeyError}. Where OpenFGA defines a numeric
 * error code for the failure, it is in `error.details.openfga_code` (2000
 * validation, 2002 resolution too complex, 2021 type not found, 2022 relation
 * not found, 2027 invalid contextual tuple, 2056 invalid model).
 *
 * @module
 */
import { decodeTime, monotonicFactory } from 'ulid';
import { LatchkeyError } from './errors.ts';
import type { AuthorizationModel, StoredAuthorizationModel } from './model.ts';
import { MemoryStore } from './memory_store.ts';
import { DEFAULT_STORE_ID, STORE_ID_PATTERN, type Assertion, type ReadFilter, type StoreCatalog, type StoreRecord, type TupleKey, type TupleStore, type TupleChange } from './store.ts';
import { TypeSystem } from './typesystem.ts';
import type { TupleReader } from './reader.ts';
import { type CheckResolver, type Consistency, type ResolutionContext, type ResolveCheckResult, Scope } from './check/check_resolver.ts';
import { LocalChecker } from './check/local_checker.ts';
import { type ParsedUser, parseObject, show, tryParseObject, tryParseUser } from './tuple.ts';
import { FGA_CODES, validateTupleForWrite } from './validation.ts';
import { validateExpiry } from './expiry.ts';
import { CheckPath, type FreshnessHint, type Prepared, invalid, plainTuple } from './check/check_path.ts';
import { OPTION_RANGES, type BatchCheckResult, type CheckRequest, type CheckResult, type EngineOptions, type ExpandRequest, type ExpandResult, type Limits, type ListObjectsRequest, type ListObjectsResult, type ListObjectsPage, type ListPageOptions, type ListUsersPage, type ListRelationsRequest, type ListRelationsResult, type ListUsersRequest, type UndecidedObject, type ListUsersResult, type ModelInput, type QueryOptions, type ReadRequest, type ReadResult, type WriteRequest } from './engine_types.ts';
import { listObjectIds } from './list_objects.ts';
import { storeReadsOf } from './snapshot_store.ts';
import { byCodeUnits } from './list_pages.ts';
import { scanObjectsPage } from './list_scan.ts';
import { ListPager, type PageScan, scanBudget } from './list_paging.ts';

import { type UserFilter, listUsers } from './list_users.ts';
import { expandRewrite } from './expand.ts';
import { type CheckOutcome, type ExplainResult, explainCheck } from './explain.ts';
import { type BuildEngineOptions, type RevisionObserver, buildChain } from './check/build_chain.ts';
import type { CheckCache } from './check/check_cache.ts';
import type { GraphMirror } from './check/graph_mirror.ts';
import { ChangeSignal, startWatch, type Watch, type WatchOptions } from './watch.ts';

// The whole error vocabulary (the class, codes, their HTTP/gRPC statuses, the public/internal split).
export * from './errors.ts';
export type * from './model.ts';
export type * from './store.ts';
export { DEFAULT_STORE_ID, STORE_ID_PATTERN } from './store.ts';
export { MemoryStore, type MemoryStoreStats } from './memory_store.ts';
export { TypeSystem } from './typesystem.ts';
export type { CheckResolver, Consistency, ResolveCheckRequest, ResolveCheckResult, ResolutionContext } from './check/check_resolver.ts';
export { problemKey } from './check/check_resolver.ts';
export { LocalChecker } from './check/local_checker.ts';
export type { ExpandNode, ExpandLeaf } from './expand.ts';
export type { ExplainCondition, ExplainNode, ExplainOutcome, ExplainReason, ExplainResult } from './explain.ts';
export type { UserFilter } from './list_users.ts';
export { FGA_CODES } from './validation.ts';
export { formatExpiry, parseRfc3339 } from './expiry.ts';
export type * from './engine_types.ts';
export { LISTING_DEADLINE_MS } from './list_pages.ts';
export { CheckCache, type CheckCacheStats } from './check/check_cache.ts';
export type { CheckCacheOptions } from './check/cache_options.ts';
export { GraphMirror, type GraphMirrorOptions, type GraphMirrorStats } from './check/graph_mirror.ts';
export { LevelChecker, type LevelCheckerStats } from './check/level_checker.ts';
export type { BuildEngineOptions, RevisionObserver } from './check/build_chain.ts';
export { parseWatchToken, watchToken, type Watch, type WatchEvent, type WatchOptions } from './watch.ts';

/**
 * The FGA engine. One instance serves one store (the default store of its
 * backend unless made by {@link Engine.forStore}); {@link Engine.createStore}
 * and its siblings manage the backend's other stores. All methods are async
 * and safe to call concurrently.
 */
export class Engine {
  readonly #store: TupleStore;
  readonly #limits: Limits;
  readonly #resolver: CheckResolver;
  readonly #check: CheckPath;
  /** Wall clock (ms) deciding expiry at write time and for collection. */
  readonly #now: () => number;
  /** Engines of other stores made by {@link Engine.forStore} without a resolver, by store id. */
  readonly #views = new Map<string, Engine>();
  /** See {@link #liveView}. */
  #live: Engine | undefined;
  /** The paged listings' walks and scans (engine/list_paging.ts). */
  readonly #pager = new ListPager<Engine>({
    store: () => this.#store,
    storeId: () => this.storeId,
    modelId: async (modelId) => (await this.#typesystem(modelId)).id,
    viewOver: (store, limits) => new Engine({ ...this.#limits, ...limits, store, resolver: new LocalChecker(), now: this.#now }),
    liveView: () => this.#liveView(),
    now: () => this.#now(),
  });
  /** Fired after each committed change this engine makes, and by {@link Engine.notifyChanges}: wakes watchers. */
  readonly #changes = new ChangeSignal();

  /**
   * Validates `options` (unknown keys and out-of-range values are
   * `invalid_argument` with reason `invalid_option`, naming the key).
   */
  constructor(options: EngineOptions = {}) {
    if (options === null || typeof options !== 'object') {
      throw new LatchkeyError('invalid_argument', 'engine options must be an object', { reason: 'invalid_option' });
    }
    const limits = {} as Limits;
    for (const key of Object.keys(options)) {
      if (key !== 'store' && key !== 'resolver' && key !== 'now' && !(key in OPTION_RANGES)) {
        throw new LatchkeyError('invalid_argument', `unknown engine option '${key}'`, { reason: 'invalid_option', details: { option: key } });
      }
    }
    for (const [key, [min, max, def]] of Object.entries(OPTION_RANGES) as [keyof Limits, readonly [number, number, number]][]) {
      const v = (options as Record<string, unknown>)[key];
      if (v === undefined) {
        limits[key] = def;
      } else if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max) {
        throw new LatchkeyError('invalid_argument', `engine option '${key}' must be an integer from ${min} to ${max}`, {
          reason: 'invalid_option',
          details: { option: key },
        });
      } else {
        limits[key] = v;
      }
    }
    const store = options.store ?? new MemoryStore();
    if (typeof store !== 'object' || typeof (store as TupleStore).readUserTuples !== 'function') {
      throw new LatchkeyError('invalid_argument', "engine option 'store' must implement TupleStore", { reason: 'invalid_option', details: { option: 'store' } });
    }
    const resolver = options.resolver ?? new LocalChecker();
    if (typeof resolver !== 'object' || typeof (resolver as CheckResolver).resolveCheck !== 'function') {
      throw new LatchkeyError('invalid_argument', "engine option 'resolver' must implement CheckResolver", { reason: 'invalid_option', details: { option: 'resolver' } });
    }
    if (options.now !== undefined && typeof options.now !== 'function') {
      throw new LatchkeyError('invalid_argument', "engine option 'now' must be a function returning milliseconds", { reason: 'invalid_option', details: { option: 'now' } });
    }
    this.#now = options.now ?? Date.now;
    this.#store = store;
    this.#limits = limits;
    this.#resolver = resolver;
    this.#check = new CheckPath(store, limits, resolver);
  }

  /** The store this engine uses. */
  get store(): TupleStore {
    return this.#store;
  }

  /** The effective limits. */
  get limits(): Readonly<Limits> {
    return this.#limits;
  }

  // ---------------------------------------------------------------- stores

  /** The id of the store this engine serves. */
  get storeId(): string {
    return this.#store.storeId ?? DEFAULT_STORE_ID;
  }

  #catalog(): StoreCatalog {
    const catalog = this.#store.catalog?.();
    if (catalog === undefined) throw new LatchkeyError('unimplemented', 'this tuple store holds a single store', { reason: 'stores_unsupported' });
    return catalog;
  }

  /**
   * Creates a store named `name` (1 to 256 characters, no control
   * characters) with a new ULID id and returns it. `invalid_argument`
   * (reason `invalid_store_name`) for a bad name; `unimplemented` (reason
   * `stores_unsupported`) when the tuple store holds a single store.
   */
  async createStore(input: { name: string }): Promise<StoreRecord> {
    if (input === null || typeof input !== 'object' || typeof input.name !== 'string' || !/^[^\u0000-\u001f\u007f]{1,256}$/u.test(input.name)) {
      throw invalid('a store name is 1 to 256 characters without control characters', { reason: 'invalid_store_name' });
    }
    const now = Date.now();
    const record: StoreRecord = { id: nextStoreId(), name: input.name, createdAt: now, updatedAt: now };
    await this.#catalog().createStore(record);
    return record;
  }

  /** The store with this id, or `undefined` (also for an id that is not a ULID). */
  async readStore(id: string): Promise<StoreRecord | undefined> {
    if (typeof id !== 'string' || !STORE_ID_PATTERN.test(id)) return undefined;
    return this.#catalog().readStore(id);
  }

  /** Stores in creation order, optionally only those named `name`; page size 1..100 (default 50). */
  async listStores(options: { pageSize?: number; continuationToken?: string; name?: string } = {}): Promise<{ stores: StoreRecord[]; continuationToken: string }> {
    const pageSize = this.#pageSize(options.pageSize);
    if (options.name !== undefined && typeof options.name !== 'string') throw invalid('the store name filter must be a string', { reason: 'invalid_store_name' });
    const page = await this.#catalog().listStores({
      pageSize,
      continuationToken: emptyToUndefined(options.continuationToken),
      name: options.name === '' ? undefined : options.name,
    });
    return { stores: page.items, continuationToken: page.continuationToken ?? '' };
  }

  /**
   * Deletes a store with its models, tuples, changelog and assertions.
   * `not_found` (reason `store_not_found`) when absent; the default store
   * cannot be deleted (`failed_precondition`, reason `default_store`).
   */
  async deleteStore(id: string): Promise<void> {
    if (typeof id !== 'string' || !STORE_ID_PATTERN.test(id)) throw new LatchkeyError('not_found', `store '${show(id)}' not found`, { reason: 'store_not_found' });
    await this.#catalog().deleteStore(id);
    this.#views.delete(id);
  }

  /**
   * An engine for store `id` of the same backend, with this engine's limits:
   * the default store's id gives this engine; others get a plain
   * {@link LocalChecker} unless `options.resolver` is given (a cache or
   * mirror composed over `options.store`, a view from
   * `store.catalog().store(id)`). Calls on a store that does not exist fail
   * with `not_found` (reason `store_not_found`).
   */
  forStore(id: string, options: { store?: TupleStore; resolver?: CheckResolver } = {}): Engine {
    if (typeof id !== 'string' || !STORE_ID_PATTERN.test(id)) throw new LatchkeyError('not_found', `store '${show(id)}' not found`, { reason: 'store_not_found' });
    if (id === this.storeId && options.store === undefined && options.resolver === undefined) return this;
    const plain = options.store === undefined && options.resolver === undefined;
    if (plain) {
      const known = this.#views.get(id);
      if (known !== undefined) return known;
    }
    const store = options.store ?? this.#catalog().store(id);
    const engine = new Engine({ ...this.#limits, store, resolver: options.resolver ?? new LocalChecker(), now: this.#now });
    if (plain) {
      if (this.#views.size >= 1000) this.#views.clear();
      this.#views.set(id, engine);
    }
    return engine;
  }

  // ---------------------------------------------------------------- assertions

  /**
   * Replaces the assertions of model version `modelId` (OpenFGA's
   * WriteAssertions): the model must exist (`not_found`, reason
   * `model_not_found`), each assertion's tuple must be valid for it
   * (`invalid_argument`, as a written tuple's would be, conditions aside) and
   * its contextual tuples too; at most 100 assertions
   * (`invalid_argument`, reason `too_many_assertions`).
   */
  async writeAssertions(modelId: string, assertions: readonly Assertion[]): Promise<void> {
    const write = this.#store.writeAssertions;
    if (write === undefined) throw new LatchkeyError('unimplemented', 'this tuple store does not keep assertions', { reason: 'assertions_unsupported' });
    if (!Array.isArray(assertions)) throw invalid('assertions must be a list', { reason: 'invalid_assertion' });
    if (assertions.length > 100) throw invalid('at most 100 assertions per model', { reason: 'too_many_assertions' });
    const ts = await this.#typesystemById(modelId);
    const clean = assertions.map((a: Assertion) => {
      if (a === null || typeof a !== 'object' || typeof a.expectation !== 'boolean' || a.tupleKey === null || typeof a.tupleKey !== 'object') {
        throw invalid('an assertion has a tuple key and a boolean expectation', { reason: 'invalid_assertion' });
      }
      const key = { object: a.tupleKey.object, relation: a.tupleKey.relation, user: a.tupleKey.user };
      validateTupleForWrite(ts, key, FGA_CODES.validation_error);
      const out: Assertion = { tupleKey: key, expectation: a.expectation };
      if (a.contextualTuples !== undefined && a.contextualTuples.length > 0) {
        out.contextualTuples = a.contextualTuples.map((t: TupleKey) => {
          validateTupleForWrite(ts, t, FGA_CODES.validation_error);
          return plainTuple(t);
        });
      }
      if (a.context !== undefined && a.context !== null && Object.keys(a.context).length > 0) out.context = structuredClone(a.context);
      return out;
    });
    await write.call(this.#store, ts.id, clean);
  }

  /** The assertions of model version `modelId` (`not_found`, reason `model_not_found`, for an unknown model). */
  async readAssertions(modelId: string): Promise<Assertion[]> {
    const read = this.#store.readAssertions;
    if (read === undefined) throw new LatchkeyError('unimplemented', 'this tuple store does not keep assertions', { reason: 'assertions_unsupported' });
    const ts = await this.#typesystemById(modelId);
    return read.call(this.#store, ts.id);
  }

  #typesystemById(modelId: string): Promise<TypeSystem> {
    if (typeof modelId !== 'string' || modelId === '') throw invalid('a model id is required', { reason: 'invalid_model_id' });
    return this.#typesystem(modelId);
  }

  // ---------------------------------------------------------------- models

  /**
   * Validates and stores a new model version (OpenFGA JSON, or `{ dsl }`
   * text parsed by `@latchkey/engine/dsl`) and returns it with its new ULID id.
   * Invalid models: `invalid_argument` with reason `invalid_authorization_model`
   * (or `invalid_dsl` from the DSL parser).
   */
  async writeModel(input: ModelInput): Promise<StoredAuthorizationModel> {
    if (input === null || typeof input !== 'object') throw invalid('the model must be an object', { reason: 'invalid_authorization_model', code: 2056 });
    let model: AuthorizationModel;
    if ('dsl' in input && !('schema_version' in input)) {
      if (typeof input.dsl !== 'string') throw invalid('dsl must be a string', { reason: 'invalid_dsl' });
      model = await dslToModel(input.dsl);
    } else {
      model = input as AuthorizationModel;
    }
    const clean: AuthorizationModel = { schema_version: model.schema_version, type_definitions: model.type_definitions ?? [] };
    if (model.conditions !== undefined && Object.keys(model.conditions).length > 0) clean.conditions = model.conditions;
    const copy = structuredClone(clean);
    // Model ids must increase: monotonic within this process, and above the
    // latest stored id even if another writer's clock ran ahead.
    let id = nextModelId();
    const latest = await this.#store.latestModelId();
    if (latest !== undefined && id <= latest) id = nextModelId(decodeTime(latest) + 1);
    const ts = new TypeSystem(copy, id, { conditionCostLimit: this.#limits.conditionCostLimit });
    const stored: StoredAuthorizationModel = { id, ...copy };
    await this.#store.writeModel(stored);
    this.#check.typesystems.set(id, ts);
    return structuredClone(stored);
  }

  /** The model version `id`, or the latest when `id` is omitted; `undefined` when there is none (never an error for an empty store). */
  async readModel(id?: string): Promise<StoredAuthorizationModel | undefined> {
    if (id === undefined) return this.#store.readLatestModel();
    return this.#store.readModel(id);
  }

  /** Model versions, newest first, paginated (page size 1..100, default 50). */
  async listModels(options: { pageSize?: number; continuationToken?: string } = {}): Promise<{ models: StoredAuthorizationModel[]; continuationToken: string }> {
    const pageSize = this.#pageSize(options.pageSize);
    const page = await this.#store.listModels({ pageSize, continuationToken: emptyToUndefined(options.continuationToken) });
    return { models: page.items, continuationToken: page.continuationToken ?? '' };
  }

  #typesystem(modelId: string | undefined): Promise<TypeSystem> {
    return this.#check.typesystem(modelId);
  }

  // ---------------------------------------------------------------- tuples

  /**
   * Writes and deletes tuples atomically (all or nothing). At most
   * `maxTuplesPerWrite` changes; each write is validated against the model
   * (`invalid_argument`, reasons as in OpenFGA: `type_not_found`,
   * `relation_not_found`, `tuple_type_mismatch`, `invalid_condition`, ...);
   * the same tuple twice is `duplicate_tuple`; writing an existing tuple is
   * `already_exists` (`tuple_exists`); deleting a missing one `not_found`
   * (`tuple_not_found`). Returns the new store revision.
   */
  async write(req: WriteRequest): Promise<{ revision: number }> {
    if (req === null || typeof req !== 'object') throw invalid('write input must be an object', { reason: 'invalid_write_input' });
    const writes = req.writes ?? [];
    const deletes = req.deletes ?? [];
    if (!Array.isArray(writes) || !Array.isArray(deletes)) throw invalid('writes and deletes must be lists', { reason: 'invalid_write_input' });
    if (writes.length + deletes.length === 0) throw invalid('nothing to write or delete', { reason: 'invalid_write_input' });
    if (writes.length + deletes.length > this.#limits.maxTuplesPerWrite) {
      throw new LatchkeyError('invalid_argument', `at most ${this.#limits.maxTuplesPerWrite} tuples may be written or deleted in one call`, {
        reason: 'too_many_tuples',
        details: { openfga_code: 2003, limit: this.#limits.maxTuplesPerWrite },
      });
    }
    const ts = writes.length > 0 ? await this.#typesystem(req.modelId) : undefined;
    const seen = new Set<string>();
    const key = (t: TupleKey): string => `${t.object}\u0000${t.relation}\u0000${t.user}`;
    const now = this.#now();
    const cleanWrites = writes.map((t) => {
      validateTupleForWrite(ts!, t, FGA_CODES.validation_error);
      const k = key(t);
      if (seen.has(k)) throw invalid(`duplicate tuple '${t.object}#${t.relation}@${t.user}' in one write`, { reason: 'duplicate_tuple', code: 2004 });
      seen.add(k);
      const clean = plainTuple(t);
      if (t.expires_at !== undefined) clean.expires_at = validateExpiry(t.expires_at, now, `tuple '${t.object}#${t.relation}@${t.user}'`)!;
      return clean;
    });
    const cleanDeletes = deletes.map((t) => {
      if (t === null || typeof t !== 'object' || tryParseObject(t.object) === undefined || tryParseUser(t.user) === undefined || typeof t.relation !== 'string' || t.relation === '') {
        throw invalid(`invalid tuple to delete`, { reason: 'invalid_tuple' });
      }
      const k = key(t);
      if (seen.has(k)) throw invalid(`duplicate tuple '${t.object}#${t.relation}@${t.user}' in one write`, { reason: 'duplicate_tuple', code: 2004 });
      seen.add(k);
      return { object: t.object, relation: t.relation, user: t.user };
    });
    const revision = await this.#store.write(cleanDeletes, cleanWrites);
    this.#changes.notify();
    return { revision };
  }

  /**
   * Reads stored tuples matching the filter, ordered by object, relation and
   * user. Page size 1..100 (default 50); the continuation token is opaque and
   * stable under concurrent writes.
   */
  async read(filter: ReadRequest = {}, options: { pageSize?: number; continuationToken?: string; writtenAt?: boolean } = {}): Promise<ReadResult> {
    if (filter === null || typeof filter !== 'object') throw invalid('the read filter must be an object', { reason: 'invalid_read_input' });
    if (options === null || typeof options !== 'object') throw invalid('read options must be an object', { reason: 'invalid_read_input' });
    for (const key of ['user', 'relation', 'object'] as const) {
      if (filter[key] !== undefined && typeof filter[key] !== 'string') throw invalid(`read filter '${key}' must be a string`, { reason: 'invalid_read_input' });
    }
    const f: ReadFilter = {};
    if (filter.object !== undefined && filter.object !== '') {
      const i = filter.object.indexOf(':');
      if (i <= 0) throw invalid(`invalid object filter '${filter.object}': expected 'type:id' or 'type:'`, { reason: 'invalid_object' });
      f.objectType = filter.object.slice(0, i);
      const id = filter.object.slice(i + 1);
      if (id !== '') {
        if (tryParseObject(filter.object) === undefined) throw invalid(`invalid object filter '${filter.object}'`, { reason: 'invalid_object' });
        f.objectId = id;
      }
    }
    if (filter.relation !== undefined && filter.relation !== '') f.relation = filter.relation;
    if (filter.user !== undefined && filter.user !== '') {
      if (tryParseUser(filter.user) === undefined) throw invalid(`invalid user filter '${filter.user}'`, { reason: 'invalid_user' });
      f.user = filter.user;
    }
    const page = await this.#store.readPage(f, { pageSize: this.#pageSize(options.pageSize), continuationToken: emptyToUndefined(options.continuationToken) });
    const result: ReadResult = { tuples: page.items.map(plainTuple), continuationToken: page.continuationToken ?? '' };
    if (options.writtenAt === true) result.writtenAt = page.items.map((t) => t.writtenAt ?? 0);
    return result;
  }

  /**
   * Deletes every stored tuple matching `filter`, in bounded writes: each
   * batch of at most `batch` tuples (default 1,000, 1..10,000) is one write
   * (one revision, a `delete` change per tuple), so checks keep being
   * answered between batches and a failure leaves whole batches done. The
   * filter needs `user`, `object` (`type:id`) or `objectType`; `relation`
   * narrows any of them. `onProgress` hears the running total after each
   * batch. A batch that loses a race with another writer (a tuple already
   * gone) is read again. Returns the tuples deleted, the batches written and
   * the last revision (0 when nothing matched). Tuples written while it runs
   * that match are deleted too, up to `maxBatches` (default 1,000,000).
   * Expired tuples not yet collected are left to collection.
   */
  async deleteTuplesByFilter(
    filter: { user?: string; relation?: string; object?: string; objectType?: string },
    options: { batch?: number; maxBatches?: number; onProgress?: (progress: { deleted: number; batches: number; revision: number }) => void } = {},
  ): Promise<{ deleted: number; batches: number; revision: number }> {
    if (filter === null || typeof filter !== 'object') throw invalid('the filter must be an object', { reason: 'invalid_filter' });
    for (const key of ['user', 'relation', 'object', 'objectType'] as const) {
      if (filter[key] !== undefined && (typeof filter[key] !== 'string' || filter[key] === '')) throw invalid(`filter '${key}' must be a non-empty string`, { reason: 'invalid_filter' });
    }
    const batch = options.batch ?? 1000;
    const maxBatches = options.maxBatches ?? 1_000_000;
    if (!Number.isInteger(batch) || batch < 1 || batch > 10_000) throw invalid('batch must be an integer from 1 to 10000', { reason: 'invalid_batch_size' });
    if (!Number.isInteger(maxBatches) || maxBatches < 1) throw invalid('maxBatches must be a positive integer', { reason: 'invalid_batch_size' });
    const f: ReadFilter = {};
    if (filter.object !== undefined) {
      const o = tryParseObject(filter.object);
      if (o === undefined) throw invalid(`invalid object filter '${filter.object}': expected 'type:id'`, { reason: 'invalid_object' });
      if (filter.objectType !== undefined && filter.objectType !== o.type) throw invalid(`object '${filter.object}' is not of type '${filter.objectType}'`, { reason: 'invalid_filter' });
      f.objectType = o.type;
      f.objectId = o.id;
    } else if (filter.objectType !== undefined) {
      if (filter.objectType.includes(':')) throw invalid(`invalid object type '${filter.objectType}'`, { reason: 'invalid_filter' });
      f.objectType = filter.objectType;
    }
    if (filter.user !== undefined) {
      if (tryParseUser(filter.user) === undefined) throw invalid(`invalid user filter '${filter.user}'`, { reason: 'invalid_user' });
      f.user = filter.user;
    }
    if (filter.relation !== undefined) f.relation = filter.relation;
    if (f.user === undefined && f.objectType === undefined) {
      throw invalid('give a user, an object or an object type to delete by (a relation alone, or nothing, would reach across every type)', { reason: 'invalid_filter' });
    }
    let deleted = 0;
    let batches = 0;
    let revision = 0;
    let races = 0;
    while (batches < maxBatches) {
      const page = await this.#store.readPage(f, { pageSize: batch });
      if (page.items.length === 0) break;
      try {
        revision = await this.#store.write(page.items.map((t) => ({ object: t.object, relation: t.relation, user: t.user })), []);
      } catch (err) {
        // Another writer deleted one of them first: read the batch again (a bounded number of times in a row).
        if (err instanceof LatchkeyError && err.reason === 'tuple_not_found' && races++ < 100) continue;
        throw err;
      }
      races = 0;
      this.#changes.notify();
      deleted += page.items.length;
      batches++;
      options.onProgress?.({ deleted, batches, revision });
      // Other work (checks) runs between batches, also on a store whose calls never wait for I/O (memory).
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
    return { deleted, batches, revision };
  }

  /**
   * Deletes tuples whose `expires_at` has passed, in writes of at most
   * `batch` (default 1,000, 1..10,000) tuples each, until none is left or
   * `maxBatches` (default 100) writes were made. Each batch is one revision
   * whose changes are `delete`s. Expired tuples already grant nothing before
   * this runs; collection only frees their space and tells change feeds.
   * Returns how many were deleted; 0 on a store without expiry support.
   */
  async collectExpired(options: { batch?: number; maxBatches?: number } = {}): Promise<number> {
    const batch = options.batch ?? 1000;
    const maxBatches = options.maxBatches ?? 100;
    if (!Number.isInteger(batch) || batch < 1 || batch > 10_000) throw invalid('batch must be an integer from 1 to 10000', { reason: 'invalid_batch_size' });
    if (!Number.isInteger(maxBatches) || maxBatches < 1) throw invalid('maxBatches must be a positive integer', { reason: 'invalid_batch_size' });
    const store = this.#store;
    if (store.deleteExpired === undefined) return 0;
    let total = 0;
    for (let i = 0; i < maxBatches; i++) {
      const n = await store.deleteExpired(this.#now(), batch);
      if (n > 0) this.#changes.notify();
      total += n;
      if (n < batch) break;
    }
    return total;
  }

  /**
   * Watches the store's changes: every tuple write and delete committed after
   * `after` (a token of an earlier event, or omitted for "now"), in commit
   * order, optionally only on objects of `objectType`, as an endless async
   * iterator that ends when `signal` aborts (or the loop breaks). Each event's
   * `token` resumes right after it, on any process serving the store, with no
   * change missed or repeated (engine/watch.ts). Changes this engine writes
   * wake watchers at once; others' at {@link Engine.notifyChanges} or within
   * `pollMs`. A bad token is `invalid_argument` (reason `invalid_watch_token`).
   */
  watch(options: WatchOptions = {}): Promise<Watch> {
    return startWatch(this.#store, this.#changes, options);
  }

  /** Wakes this engine's watchers: another process (or a caller's own transaction) may have committed a change. */
  notifyChanges(): void {
    this.#changes.notify();
  }

  /** Changes after `afterRevision` (oldest first), for change feeds and cache invalidation. */
  async readChanges(options: { afterRevision?: number; limit?: number; objectType?: string } = {}): Promise<TupleChange[]> {
    const limit = options.limit ?? 100;
    if (!Number.isInteger(limit) || limit < 1 || limit > 1000) throw invalid('limit must be from 1 to 1000', { reason: 'invalid_page_size' });
    const q: { afterRevision: number; limit: number; objectType?: string } = { afterRevision: options.afterRevision ?? 0, limit };
    if (options.objectType !== undefined) q.objectType = options.objectType;
    return this.#store.readChanges(q);
  }

  /**
   * Deletes every model version and the changelog. Refused with
   * `failed_precondition` (reason `tuples_exist`) while any tuple exists.
   */
  async reset(): Promise<void> {
    if (await this.#store.hasTuples()) {
      throw new LatchkeyError('failed_precondition', 'remove all relationship tuples before resetting the authorization model', { reason: 'tuples_exist' });
    }
    await this.#store.reset();
    this.#check.typesystems.clear();
  }

  #pageSize(v: number | undefined): number {
    if (v === undefined || v === 0) return this.#limits.defaultPageSize;
    if (typeof v !== 'number') throw invalid('page size must be a number from 1 to 100', { reason: 'invalid_page_size' });
    if (!Number.isInteger(v) || v < 1 || v > 100) throw invalid('page size must be from 1 to 100', { reason: 'invalid_page_size' });
    return v;
  }

  // ---------------------------------------------------------------- queries

  #prepare(q: QueryOptions, contextualCode: number = FGA_CODES.invalid_tuple): Promise<Prepared> {
    return this.#check.prepare(q, contextualCode);
  }

  #context(ts: TypeSystem, reader: TupleReader, context: Record<string, unknown> | undefined, consistency?: Consistency, memo = new Map<string, ResolveCheckResult>()): ResolutionContext {
    return this.#check.context(ts, reader, context, consistency, memo);
  }

  /** The context of one top-level resolution: shares the memo, resets the budget, and picks the monotone mode. */
  #topLevel(ctx: ResolutionContext, ts: TypeSystem, type: string, relation: string): ResolutionContext {
    return this.#check.topLevel(ctx, ts, type, relation);
  }

  #parseCheckUser(ts: TypeSystem, user: unknown, code: number): ParsedUser {
    return this.#check.parseCheckUser(ts, user, code);
  }

  /**
   * Check: does `user` hold `relation` on `object`? Errors: `invalid_argument`
   * (OpenFGA 2000) for malformed input or unknown types/relations, 2027 for an
   * invalid contextual tuple, 2000 for a condition missing parameters when no
   * other branch decides; `failed_precondition` (reason
   * `resolution_too_complex`, OpenFGA 2002) beyond the depth limit.
   */
  check(req: CheckRequest): Promise<CheckResult> {
    let fresh: CheckRequest;
    try {
      fresh = this.#fresher(req);
    } catch (err) {
      return Promise.reject(err);
    }
    return this.#check.check(fresh);
  }

  /**
   * {@link check}, answered with the result itself instead of a promise when
   * it is at hand without a read (a cache hit, the memory store, a fresh
   * graph mirror); otherwise the promise `check` returns. The same answers
   * and errors as `check`, but an error found before any read is thrown
   * rather than rejected. For callers that want no promise hop for an answer
   * at hand and can still await one.
   */
  checkAtHand(req: CheckRequest): CheckResult | Promise<CheckResult> {
    return this.#check.checkAtHand(this.#fresher(req));
  }

  /**
   * `req` itself, or, when it carries a consistency token that a memory
   * layer (cache, mirror) has not caught up to, `req` with
   * `higher_consistency`, so that it reads the store (the layers start
   * catching up meanwhile).
   */
  #fresher<T extends QueryOptions>(req: T): T {
    if (req === null || typeof req !== 'object' || req.atLeastRevision === undefined || req.consistency === 'higher_consistency') return req;
    const token = req.atLeastRevision;
    if (!Number.isSafeInteger(token) || token < 0) throw invalid('the consistency token must be a store revision (a non-negative integer)', { reason: 'invalid_consistency_token' });
    const hint = (this.#store as Partial<FreshnessHint>).caughtUp;
    if (hint === undefined || hint.call(this.#store, token)) return req;
    return { ...req, consistency: 'higher_consistency' };
  }

  /**
   * Check without a promise: the same answer and errors as {@link check},
   * for callers in a synchronous loop, when the answer is at hand without
   * I/O (the memory store; a graph mirror that is fresh; a cache hit).
   * Throws `failed_precondition` with reason `sync_unavailable` when it is
   * not: the model version is not loaded in this engine yet (see
   * {@link loadModel}), or the check needs a database read (a SQL store
   * without a mirror, a mirror catching up, full consistency on a mirror).
   * A caller can then fall back to `check`.
   */
  checkSync(req: CheckRequest): CheckResult {
    return this.#check.checkSync(this.#fresher(req));
  }

  /**
   * Loads model version `id` (default: the latest) into this engine, so that
   * {@link checkSync} can use it; returns its id. Errors as {@link check}'s
   * for the model (`failed_precondition` when the store has none, `not_found`).
   */
  async loadModel(id?: string): Promise<string> {
    return (await this.#typesystem(id)).id;
  }

  /**
   * 1 to `maxChecksPerBatch` checks, resolved concurrently; checks that share
   * contextual tuples, context and model share sub-problem results. Results
   * come back in request order; a failing check carries its `error` instead
   * of failing the batch.
   */
  batchCheck(checks: CheckRequest[], options: { modelId?: string } = {}): Promise<BatchCheckResult[]> {
    let fresh: CheckRequest[];
    try {
      fresh = Array.isArray(checks) ? checks.map((c) => this.#fresher(c)) : checks;
    } catch (err) {
      return Promise.reject(err);
    }
    return this.#check.batchCheck(fresh, options);
  }

  /**
   * ListObjects: objects of `type` on which `user` holds `relation`, sorted,
   * at most `listObjectsMaxResults` (then `truncated`). Errors: unknown type
   * (reason `type_not_found`, OpenFGA 2021), unknown relation
   * (`relation_not_found`, 2022), invalid user (2000), invalid contextual
   * tuple (2027), condition errors when fewer than the cap were found (2000),
   * depth (2002). With `reportUndecided`, an object whose Check fails only for
   * a condition's missing parameters is returned in `undecided` instead.
   */
  async listObjects(req: ListObjectsRequest): Promise<ListObjectsResult> {
    if (req === null || typeof req !== 'object') throw invalid('list objects request must be an object', { reason: 'invalid_list_objects_input' });
    req = this.#fresher(req);
    const { ts, reader, user, ctx } = await this.#listObjectsInput(req);
    const undecided: UndecidedObject[] | undefined = req.reportUndecided === true ? [] : undefined;
    const { ids, truncated } = await listObjectIds(ts, reader, user, req.type, req.relation, {
      context: req.context,
      maxDepth: this.#limits.maxResolutionDepth,
      maxResults: this.#limits.listObjectsMaxResults,
      concurrency: this.#limits.maxConcurrentChecks,
      check: async (id) => {
        const r = await this.#resolver.resolveCheck(
          { objectType: req.type, objectId: id, relation: req.relation, user, depth: 0, path: undefined, scope: new Scope() },
          this.#topLevel(ctx, ts, req.type, req.relation),
        );
        return r.allowed && !r.cycle;
      },
      // Only a missing parameter leaves an object undecided; any other error (a bad context value, the depth) still fails.
      ...(undecided === undefined
        ? {}
        : {
            absorb: (id: string, err: unknown): boolean => {
              if (!(err instanceof LatchkeyError) || err.reason !== 'missing_condition_parameters') return false;
              const missing = (err.details as { missing?: unknown } | undefined)?.missing;
              undecided.push({ object: `${req.type}:${id}`, missingParameters: Array.isArray(missing) ? missing.map(String) : [] });
              return true;
            },
          }),
    });
    const objects = ids.map((id) => `${req.type}:${id}`);
    if (undecided === undefined) return { objects, truncated };
    undecided.sort((a, b) => (a.object < b.object ? -1 : a.object > b.object ? 1 : 0));
    return { objects, truncated, undecided };
  }

  /** What ListObjects reads before its walk, with its validation: the model, type, relation, user, context and contextual tuples. */
  async #listObjectsInput(req: ListObjectsRequest): Promise<{ ts: TypeSystem; reader: TupleReader; user: ParsedUser; ctx: ResolutionContext }> {
    const prepared = await this.#prepare(req);
    const ts = prepared.ts;
    // Full consistency reads the store itself, never a store's in-memory synchronous reads (the graph mirror).
    const reader = req.consistency === 'higher_consistency' ? prepared.reader.direct() : prepared.reader;
    if (typeof req.type !== 'string' || !ts.hasType(req.type)) throw invalid(`type '${show(req.type)}' not found`, { reason: 'type_not_found', code: FGA_CODES.type_not_found });
    if (typeof req.relation !== 'string' || ts.rewrite(req.type, req.relation) === undefined) {
      throw invalid(`relation '${req.type}#${show(req.relation)}' not found`, { reason: 'relation_not_found', code: FGA_CODES.relation_not_found });
    }
    const user = this.#parseCheckUser(ts, req.user, FGA_CODES.validation_error);
    const ctx = this.#context(ts, reader, req.context, req.consistency);
    return { ts, reader, user, ctx };
  }

  /**
   * ListObjects in pages: the answer of {@link listObjects} at one store
   * revision, cut into sorted pages. The first page pins the current revision
   * (or `atRevision`) and the model version; every later page, given the
   * token of the page before, continues right after the last object
   * returned, at that revision, whatever was written since: no object twice,
   * none missed. Not capped by `listObjectsMaxResults` (up to 100,000
   * results; beyond, `failed_precondition`, reason `listing_too_large`).
   * Errors: ListObjects', and `invalid_argument` (reason
   * `invalid_continuation_token`) for a token of another question;
   * `failed_precondition` (reason `continuation_token_expired`) when the
   * store changed too much since the first page to rebuild that revision.
   */
  async listObjectsPage(req: ListObjectsRequest, page: ListPageOptions = {}): Promise<ListObjectsPage> {
    if (req === null || typeof req !== 'object') throw invalid('list objects request must be an object', { reason: 'invalid_list_objects_input' });
    const question = ['objects', req.user, req.relation, req.type, req.context ?? null, req.contextualTuples ?? null, req.reportUndecided === true];
    // The candidate scan serves pages without undecided objects (those are reported on a walk's first page, whole).
    const scan: PageScan<Engine> | undefined =
      req.reportUndecided === true
        ? undefined
        : async (view, snapshot, modelId, after, size, deadlineAt) => {
            // The request's errors first, as ListObjects answers them (a type with no objects is still unknown).
            await view.#listObjectsInput({ ...req, modelId, consistency: 'higher_consistency' });
            const prefix = `${String(req.type)}:`;
            const extra = Array.isArray(req.contextualTuples)
              ? [...new Set(req.contextualTuples.map((t) => (typeof t?.object === 'string' && t.object.startsWith(prefix) ? t.object.slice(prefix.length) : '')).filter((id) => id !== ''))].sort(byCodeUnits)
              : [];
            return scanObjectsPage({
              store: snapshot,
              type: String(req.type),
              after,
              size,
              extra,
              budget: scanBudget(size),
              chunk: this.#limits.maxChecksPerBatch,
              deadlineAt,
              confirm: async (objects) => {
                const checks = objects.map((object) => {
                  const c: CheckRequest = { user: req.user, relation: req.relation, object, consistency: 'higher_consistency' };
                  if (req.context !== undefined) c.context = req.context;
                  if (req.contextualTuples !== undefined) c.contextualTuples = req.contextualTuples;
                  return c;
                });
                const rs = await view.batchCheck(checks, { modelId });
                return rs.map((r) => (r.error !== undefined ? 'error' : r.allowed));
              },
            });
          };
    const out = await this.#pager.page(
      question,
      req.modelId,
      page,
      (view, modelId) => view.listObjects({ ...req, modelId, consistency: 'higher_consistency' }).then((r) => ({ items: r.objects, truncated: r.truncated, undecided: r.undecided })),
      scan,
    );
    const result: ListObjectsPage = { objects: out.items, continuationToken: out.continuationToken, revision: out.revision };
    if (out.total !== undefined) result.total = out.total;
    if (out.deadlineExceeded) result.deadlineExceeded = true;
    if (req.reportUndecided === true) result.undecided = out.undecided ?? [];
    return result;
  }

  /** ListUsers in pages, as {@link listObjectsPage} pages ListObjects (`listUsersMaxResults` aside). */
  async listUsersPage(req: ListUsersRequest, page: ListPageOptions = {}): Promise<ListUsersPage> {
    if (req === null || typeof req !== 'object') throw invalid('list users request must be an object', { reason: 'invalid_list_users_input' });
    const question = ['users', req.object, req.relation, req.userFilters ?? null, req.context ?? null, req.contextualTuples ?? null];
    const out = await this.#pager.page(question, req.modelId, page, (view, modelId) =>
      view.listUsers({ ...req, modelId, consistency: 'higher_consistency' }).then((r) => ({ items: r.users, truncated: r.truncated, undecided: undefined })),
    );
    const result: ListUsersPage = { users: out.items, continuationToken: out.continuationToken, revision: out.revision };
    if (out.total !== undefined) result.total = out.total;
    if (out.deadlineExceeded) result.deadlineExceeded = true;
    return result;
  }

  /**
   * The engine that checks a scanned page at the store's current revision:
   * this one when it reads the store itself (the plain evaluator over a
   * memory or SQL store); else, once made, one with the plain evaluator over
   * the store's own reads, since an answer cache or graph mirror may answer
   * from a revision other than the store's.
   */
  #liveView(): Engine {
    if (this.#resolver instanceof LocalChecker && (this.#store instanceof MemoryStore || !('readUserTupleSync' in this.#store))) return this;
    this.#live ??= new Engine({ ...this.#limits, store: storeReadsOf(this.#store), resolver: new LocalChecker(), now: this.#now });
    return this.#live;
  }


  /**
   * ListRelations: the relations of `object`'s type that `user` holds on
   * `object`, in the model's order: one Check per relation, batched (so the
   * checks share sub-problem results). A relation whose Check fails only for
   * a condition's missing parameters is not held; it is reported in
   * `undecided`. Any other Check error fails the call (never a partial
   * answer). Errors: invalid object or user (2000), unknown type
   * (`type_not_found`, 2021), an unknown relation in `relations`
   * (`relation_not_found`, 2022), and Check's own.
   */
  async listRelations(req: ListRelationsRequest): Promise<ListRelationsResult> {
    if (req === null || typeof req !== 'object') throw invalid('list relations request must be an object', { reason: 'invalid_list_relations_input' });
    const ts = await this.#typesystem(req.modelId);
    const object = parseObject(req.object);
    if (!ts.hasType(object.type)) throw invalid(`type '${object.type}' not found`, { reason: 'type_not_found', code: FGA_CODES.type_not_found });
    const all = [...ts.relationsOf(object.type).keys()];
    let wanted = all;
    if (req.relations !== undefined) {
      if (!Array.isArray(req.relations)) throw invalid('relations must be a list', { reason: 'invalid_list_relations_input' });
      for (const r of req.relations) {
        if (typeof r !== 'string' || ts.rewrite(object.type, r) === undefined) {
          throw invalid(`relation '${object.type}#${show(r)}' not found`, { reason: 'relation_not_found', code: FGA_CODES.relation_not_found });
        }
      }
      const asked = new Set(req.relations);
      wanted = all.filter((r) => asked.has(r));
    }
    const base: QueryOptions = {};
    if (req.contextualTuples !== undefined) base.contextualTuples = req.contextualTuples;
    if (req.context !== undefined) base.context = req.context;
    if (req.consistency !== undefined) base.consistency = req.consistency;
    if (req.atLeastRevision !== undefined) base.atLeastRevision = req.atLeastRevision;
    const relations: string[] = [];
    const undecided: ListRelationsResult['undecided'] = [];
    const step = this.#limits.maxChecksPerBatch;
    for (let i = 0; i < wanted.length; i += step) {
      const chunk = wanted.slice(i, i + step);
      const results = await this.batchCheck(chunk.map((relation) => ({ ...base, user: req.user, relation, object: req.object })), { modelId: ts.id });
      for (const [j, r] of results.entries()) {
        const relation = chunk[j]!;
        if (r.error === undefined) {
          if (r.allowed) relations.push(relation);
        } else if (r.error.reason === 'missing_condition_parameters') {
          const missing = (r.error.details as { missing?: unknown } | undefined)?.missing;
          undecided.push({ relation, missingParameters: Array.isArray(missing) ? missing.map(String) : [] });
        } else {
          throw r.error;
        }
      }
    }
    return { relations, undecided };
  }

  /**
   * ListUsers: users matching the one user filter that hold `relation` on
   * `object`, sorted (wildcards as `type:*`, usersets as `type:id#relation`).
   * Errors as ListObjects; unknown filter types/relations are 2021/2022.
   */
  async listUsers(req: ListUsersRequest): Promise<ListUsersResult> {
    if (req === null || typeof req !== 'object') throw invalid('list users request must be an object', { reason: 'invalid_list_users_input' });
    req = this.#fresher(req);
    const { ts, reader } = await this.#prepare(req);
    const object = parseObject(req.object);
    if (!ts.hasType(object.type)) throw invalid(`type '${object.type}' not found`, { reason: 'type_not_found', code: FGA_CODES.type_not_found });
    if (typeof req.relation !== 'string' || ts.rewrite(object.type, req.relation) === undefined) {
      throw invalid(`relation '${object.type}#${show(req.relation)}' not found`, { reason: 'relation_not_found', code: FGA_CODES.relation_not_found });
    }
    if (!Array.isArray(req.userFilters) || req.userFilters.length !== 1) throw invalid('exactly one user filter is required', { reason: 'invalid_user_filter' });
    const filter = req.userFilters[0]!;
    if (filter === null || typeof filter !== 'object' || typeof filter.type !== 'string' || !ts.hasType(filter.type)) {
      throw invalid(`type '${show(filter?.type)}' not found`, { reason: 'type_not_found', code: FGA_CODES.type_not_found });
    }
    if (filter.relation !== undefined && filter.relation !== '' && ts.rewrite(filter.type, filter.relation) === undefined) {
      throw invalid(`relation '${filter.type}#${filter.relation}' not found`, { reason: 'relation_not_found', code: FGA_CODES.relation_not_found });
    }
    const f: UserFilter = filter.relation === undefined || filter.relation === '' ? { type: filter.type } : { type: filter.type, relation: filter.relation };
    const ctx = this.#context(ts, reader, req.context, req.consistency);
    return listUsers(ts, reader, object.type, object.id, req.relation, f, {
      context: req.context,
      maxDepth: this.#limits.maxResolutionDepth,
      maxResults: this.#limits.listUsersMaxResults,
      concurrency: this.#limits.maxConcurrentChecks,
      check: async (candidate) => {
        const r = await this.#resolver.resolveCheck(
          { objectType: object.type, objectId: object.id, relation: req.relation, user: tryParseUser(candidate)!, depth: 0, path: undefined, scope: new Scope() },
          this.#topLevel(ctx, ts, object.type, req.relation),
        );
        return r.allowed && !r.cycle;
      },
    });
  }

  /**
   * Explain a check: Check's answer for `req` with, when allowed, one witness
   * (the tuples and rewrite steps that allow it) and, when denied, the tree of
   * the branches tried and why each failed (engine/explain.ts). The answer is
   * always Check's: `allowed` equals `check(req).allowed`. When Check ends in
   * a condition's error (missing parameters, say), that error is returned in
   * `error` with the tree that shows where, instead of being thrown. Errors:
   * Check's (invalid input, `resolution_too_complex`), and
   * `resolution_too_complex` when the explanation itself needs more
   * sub-problems than a check may resolve.
   */
  async explain(req: CheckRequest): Promise<ExplainResult> {
    let check: CheckOutcome;
    try {
      check = { allowed: (await this.check(req)).allowed };
    } catch (err) {
      // Only a condition's error is explained; invalid input and the resolution limits are the caller's answer.
      if (!(err instanceof LatchkeyError) || !CONDITION_REASONS.has(err.reason ?? '')) throw err;
      check = { allowed: false, error: err };
    }
    req = this.#fresher(req);
    const { ts, reader } = await this.#prepare(req);
    const object = parseObject(req.object);
    const user = this.#parseCheckUser(ts, req.user, FGA_CODES.validation_error);
    const ctx = {
      ts,
      // Full consistency reads the store itself, as Check does (never a memory layer's copy).
      reader: req.consistency === 'higher_consistency' ? reader.direct() : reader,
      context: req.context,
      maxDepth: this.#limits.maxResolutionDepth,
      maxDispatches: this.#limits.maxDispatchesPerCheck,
    };
    return explainCheck(ctx, object.type, object.id, req.relation, user, check);
  }

  /** Expand: one level of the userset tree of `relation` on `object`, in OpenFGA's shape. */
  async expand(req: ExpandRequest): Promise<ExpandResult> {
    if (req === null || typeof req !== 'object' || typeof req.object !== 'string' || req.object === '' || typeof req.relation !== 'string' || req.relation === '') {
      throw invalid('expand needs an object and a relation', { reason: 'invalid_expand_input', code: 2010 });
    }
    const { ts, reader } = await this.#prepare(req);
    const object = parseObject(req.object);
    if (!ts.hasType(object.type)) throw invalid(`type '${object.type}' not found`, { reason: 'type_not_found', code: FGA_CODES.type_not_found });
    const rw = ts.rewrite(object.type, req.relation);
    if (rw === undefined) throw invalid(`relation '${object.type}#${req.relation}' not found`, { reason: 'relation_not_found', code: FGA_CODES.relation_not_found });
    return { tree: { root: await expandRewrite(reader, object.type, object.id, req.relation, rw) } };
  }
}

/** The reasons of a condition's errors (compiled_condition.ts), which Explain shows rather than throws. */
const CONDITION_REASONS: ReadonlySet<string> = new Set(['missing_condition_parameters', 'condition_evaluation_failed', 'condition_cost_exceeded', 'invalid_condition_context']);

/** An engine as {@link buildEngine} assembled it, with the layers a caller may need to reach. */
export interface BuiltEngine {
  engine: Engine;
  /** The outermost store (the engine's): every write must go through it, so that the cache and the mirror see it. */
  store: TupleStore;
  /** The answer cache, unless left out (`cacheSize` or `revisionPollMs` 0). */
  cache: CheckCache | undefined;
  /** The graph mirror, when loaded (a store without synchronous reads and `mirror` not false). */
  mirror: GraphMirror | undefined;
  /** The layers that must hear of other processes' writes (mirror, then cache); empty when there is neither. */
  observers: readonly RevisionObserver[];
  /** Tells every observer, and the engine's watchers, of a committed revision (undefined: writes may have been missed). For `RevisionListener`'s `onRevision`. */
  observeRevision(revision?: number): void;
  /** Tells every observer that another process wrote a model. For `RevisionListener`'s `onModel`. */
  observeModel(): void;
  /**
   * For a caller that changed the tables outside the engine (in its own
   * transaction): brings the mirror up to the store's revision (reading the
   * outer store's revision makes the mirror replay the changelog) and empties
   * the answer cache, so no answer older than the call is served afterwards.
   */
  refresh(): Promise<void>;
}

/**
 * Builds an engine with the resolver chain the Latchkey server runs: on a
 * store without synchronous reads (`SqlStore`), the level-at-a-time checker
 * and, with `mirror` (default true), the graph mirror, whose synchronous
 * evaluator answers while it is fresh (full-consistency checks go to the
 * level checker); on a store with synchronous reads (`MemoryStore`), the
 * synchronous evaluator; and the answer cache in front (`cacheSize`,
 * default 100,000, and `revisionPollMs`, default 1,000; either at 0 leaves
 * it out). The engine's own limits (`conditionCostLimit`, …) pass through.
 *
 * Options are validated before anything is loaded: unknown keys and bad
 * values are `invalid_argument` with reason `invalid_option`, naming the key
 * (`details.option`). Loading the mirror reads every tuple of the store, and
 * fails as the store's reads fail.
 */
export async function buildEngine(options: BuildEngineOptions = {}): Promise<BuiltEngine> {
  const chain = await buildChain(options);
  const { store, cache, observers } = chain;
  const engine = new Engine({ ...chain.engineOptions, store, resolver: chain.resolver });
  return {
    engine,
    store,
    cache,
    mirror: chain.mirror,
    observers,
    observeRevision(revision?: number): void {
      for (const o of observers) o.observeRevision(revision);
      engine.notifyChanges();
    },
    observeModel(): void {
      for (const o of observers) o.observeModel();
    },
    async refresh(): Promise<void> {
      try {
        await store.revision();
      } finally {
        cache?.invalidate();
        engine.notifyChanges();
      }
    },
  };
}

const nextModelId = monotonicFactory();
const nextStoreId = monotonicFactory();

function emptyToUndefined(s: string | undefined): string | undefined {
  if (s !== undefined && typeof s !== 'string') throw invalid('invalid continuation token', { reason: 'invalid_continuation_token' });
  return s === undefined || s === '' ? undefined : s;
}

/** DSL text → model through `@latchkey/engine/dsl` (loaded on first use, so JSON-only users never load the parser). */
async function dslToModel(text: string): Promise<AuthorizationModel> {
  const { transformDslToModel } = await import('../dsl/index.ts');
  return transformDslToModel(text);
}
