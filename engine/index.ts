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
import { LatchkeyError } from './errors.ts';
import type { StoredAuthorizationModel } from './model.ts';
import { MemoryStore } from './memory_store.ts';
import { DEFAULT_STORE_ID, STORE_ID_PATTERN, type Assertion, type StoreCatalog, type StoreRecord, type TupleStore, type TupleChange } from './store.ts';
import { TypeSystem } from './typesystem.ts';
import type { CheckResolver } from './check/check_resolver.ts';
import { LocalChecker } from './check/local_checker.ts';
import { CheckPath, type FreshnessHint, invalid, plainTuple } from './check/check_path.ts';
import type { BatchCheckResult, CheckRequest, CheckResult, EngineOptions, ExpandRequest, ExpandResult, Limits, ListObjectsRequest, ListObjectsResult, ListObjectsPage, ListPageOptions, ListUsersPage, ListRelationsRequest, ListRelationsResult, ListUsersRequest, ListUsersResult, ModelInput, QueryOptions, ReadRequest, ReadResult, WriteRequest } from './engine_types.ts';
import { storeReadsOf } from './snapshot_store.ts';
import { ListPager } from './list_paging.ts';
import type { ExplainResult } from './explain.ts';
import { type BuildEngineOptions, type RevisionObserver, buildChain, chainControls } from './check/build_chain.ts';
import type { CheckCache } from './check/check_cache.ts';
import type { GraphMirror } from './check/graph_mirror.ts';
import { ChangeSignal, startWatch, type Watch, type WatchOptions } from './watch.ts';
import { engineSettings } from './engine_options.ts';
import { modelOf, newModelId } from './model_input.ts';
import { assertStoreId, changesQuery, cleanAssertions, cleanChanges, emptyToUndefined, newStoreRecord, pageSizeOf, readFilterOf, writeChanges } from './request_input.ts';
import { collectExpiredTuples, deleteByFilter } from './tuple_deletion.ts';
import { answerExpand, answerExplain, answerListObjects, answerListObjectsPage, answerListRelations, answerListUsers, answerListUsersPage, checkOutcome, listObjectsInput } from './queries.ts';

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
    const { limits, store, resolver, now } = engineSettings(options);
    this.#now = now;
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
    const record = newStoreRecord(input);
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
    const pageSize = pageSizeOf(options.pageSize, this.#limits.defaultPageSize);
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
    assertStoreId(id);
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
    assertStoreId(id);
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
    const clean = cleanAssertions(ts, assertions);
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
    const copy = await modelOf(input);
    const id = await newModelId(this.#store);
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
    const pageSize = pageSizeOf(options.pageSize, this.#limits.defaultPageSize);
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
    const { writes, deletes } = writeChanges(req, this.#limits.maxTuplesPerWrite);
    const ts = writes.length > 0 ? await this.#typesystem(req.modelId) : undefined;
    const clean = cleanChanges(ts, writes, deletes, this.#now());
    const revision = await this.#store.write(clean.deletes, clean.writes);
    this.#changes.notify();
    return { revision };
  }

  /**
   * Reads stored tuples matching the filter, ordered by object, relation and
   * user. Page size 1..100 (default 50); the continuation token is opaque and
   * stable under concurrent writes.
   */
  async read(filter: ReadRequest = {}, options: { pageSize?: number; continuationToken?: string; writtenAt?: boolean } = {}): Promise<ReadResult> {
    const f = readFilterOf(filter, options);
    const page = await this.#store.readPage(f, { pageSize: pageSizeOf(options.pageSize, this.#limits.defaultPageSize), continuationToken: emptyToUndefined(options.continuationToken) });
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
    return deleteByFilter(this.#store, filter, options, this.#changes);
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
    return collectExpiredTuples(this.#store, () => this.#now(), options, this.#changes);
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
    return this.#store.readChanges(changesQuery(options));
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

  // ---------------------------------------------------------------- queries

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
    return answerListObjects(this.#check, this.#resolver, this.#limits, this.#fresher(req));
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
    return answerListObjectsPage(this.#pager, this.#limits.maxChecksPerBatch, (view, r) => listObjectsInput(view.#check, r), req, page);
  }

  /** ListUsers in pages, as {@link listObjectsPage} pages ListObjects (`listUsersMaxResults` aside). */
  async listUsersPage(req: ListUsersRequest, page: ListPageOptions = {}): Promise<ListUsersPage> {
    return answerListUsersPage(this.#pager, req, page);
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
    return answerListRelations(this.#check, this, this.#limits.maxChecksPerBatch, req);
  }

  /**
   * ListUsers: users matching the one user filter that hold `relation` on
   * `object`, sorted (wildcards as `type:*`, usersets as `type:id#relation`).
   * Errors as ListObjects; unknown filter types/relations are 2021/2022.
   */
  async listUsers(req: ListUsersRequest): Promise<ListUsersResult> {
    return answerListUsers(this.#check, this.#resolver, this.#limits, this.#fresher(req));
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
    const outcome = await checkOutcome(this, req);
    return answerExplain(this.#check, this.#limits, this.#fresher(req), outcome);
  }

  /** Expand: one level of the userset tree of `relation` on `object`, in OpenFGA's shape. */
  async expand(req: ExpandRequest): Promise<ExpandResult> {
    return answerExpand(this.#check, req);
  }
}

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
  const engine = new Engine({ ...chain.engineOptions, store: chain.store, resolver: chain.resolver });
  return { engine, store: chain.store, cache: chain.cache, mirror: chain.mirror, observers: chain.observers, ...chainControls(chain, engine) };
}
