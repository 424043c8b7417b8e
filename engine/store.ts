/**
 * The tuple-store interface every storage backend implements (memory, SQLite,
 * PostgreSQL, MySQL). The engine never touches storage any other way.
 *
 * The shape follows the reads the evaluator needs, so that a SQL backend can
 * serve each of them from one index and in one round trip per graph level:
 *
 * | method | serves | index an SQL backend needs |
 * |---|---|---|
 * | {@link TupleStore.readUserTuples} | Check: "is this exact tuple there?" (batched) | primary key `(object_type, object_id, relation, user)` |
 * | {@link TupleStore.readObjectRelations} | Check (usersets, tuple-to-userset), Expand, ListUsers | primary-key prefix `(object_type, object_id, relation)` |
 * | {@link TupleStore.readStartingWithUsers} | ListObjects reverse expansion | reverse index `(object_type, relation, user_type, user_id, user_relation, object_id)` |
 * | {@link TupleStore.readPage} | the Read API | primary key order |
 * | {@link TupleStore.readChanges} | cache invalidation, change feeds | changelog `(revision)` |
 * | {@link TupleStore.scanTuples} (optional) | loading an in-memory mirror | primary key order, large batches |
 *
 * Invariants every implementation keeps (the store-conformance suite in
 * `test/conformance/store_suite.ts` checks each of them):
 *
 * - **Identity.** A tuple is identified by `(object, relation, user)`; the
 *   condition is payload, not identity. Strings compare byte-wise and
 *   case-sensitively (`user:Alice` and `user:alice` are different users), so
 *   SQL backends use binary / `"C"` collations on every identifier column.
 * - **Atomic writes.** {@link TupleStore.write} applies all of its deletes and
 *   writes or none of them, and checks preconditions (a written tuple must not
 *   exist, a deleted one must) inside the same transaction.
 * - **Revision.** A store has a revision: an integer that starts at 0 and is
 *   increased by exactly one by every successful `write` call (never by a
 *   failed one, never by model writes). Every change row carries the revision
 *   of the write that made it. Caches key answers by revision.
 * - **Changelog.** Every tuple write and delete appends one change row in the
 *   same transaction, readable in revision order with {@link TupleStore.readChanges}.
 * - **Models.** Model versions are append-only and immutable. Ids are ULIDs
 *   made by the engine; the latest version is the one with the greatest id.
 * - **Ordering.** Results documented as ordered are ordered by plain byte-wise
 *   string comparison (JavaScript `<` on strings of ASCII identifiers).
 * - **No validation.** Stores do not validate tuples against models; the
 *   engine does that before calling `write`. Stores only reject what breaks
 *   their own invariants.
 * - **Stores.** A backend may hold many stores (OpenFGA's stores): each
 *   store's models, tuples, changelog, revision and assertions are its own,
 *   and nothing read through one store ever comes from another. A
 *   `TupleStore` object is a view of one of them ({@link TupleStore.storeId});
 *   the one a backend opens with is the default store,
 *   {@link DEFAULT_STORE_ID}. {@link StoreCatalog} creates, lists and deletes
 *   stores and hands out views of the others.
 * - **Errors.** Stores throw only `LatchkeyError` (see `engine/errors.ts`):
 *   `already_exists` (reason `tuple_exists`) and `not_found` (reason
 *   `tuple_not_found`) from `write`, `invalid_argument` (reason
 *   `invalid_continuation_token`) for a token they did not make,
 *   `failed_precondition` (reason `tuples_exist`) from `reset`, and
 *   `unavailable` / `internal` for backend failures.
 *
 * @module
 */
import type { StoredAuthorizationModel } from './model.ts';

/**
 * Id of the default store: the one a backend opens with, where a
 * single-store deployment's data lives (data written before stores existed
 * was moved there by the migration). A well-formed ULID, so OpenFGA clients
 * accept it.
 */
export const DEFAULT_STORE_ID = '00000000000000000000000000';

/** Store ids are ULIDs (OpenFGA's format): 26 characters of Crockford's base32, upper case. */
export const STORE_ID_PATTERN = /^[0-7][0-9A-HJKMNP-TV-Z]{25}$/u;

/** A store of a {@link StoreCatalog}. Times are milliseconds since the epoch. */
export interface StoreRecord {
  id: string;
  name: string;
  createdAt: number;
  updatedAt: number;
}

/**
 * An assertion of a model version (OpenFGA's `Assertion`): a check and its
 * expected answer, stored as given and never evaluated by the store.
 */
export interface Assertion {
  tupleKey: { object: string; relation: string; user: string };
  expectation: boolean;
  contextualTuples?: TupleKey[];
  context?: Record<string, unknown>;
}

/**
 * The stores of a backend. Store ids are made by the caller (the engine
 * makes ULIDs, see {@link STORE_ID_PATTERN}).
 *
 * Invariants: the default store ({@link DEFAULT_STORE_ID}) always exists and
 * cannot be deleted (`failed_precondition`, reason `default_store`);
 * `deleteStore` removes the store's models, tuples, changelog, revision and
 * assertions in one transaction; a view of a deleted store fails every call
 * afterwards (`not_found`, reason `store_not_found`) or reads nothing.
 */
export interface StoreCatalog {
  /** Adds a store (its revision 0); `already_exists` (reason `store_exists`) when the id is taken. */
  createStore(record: StoreRecord): Promise<void>;
  /** The store with this id, or `undefined`. */
  readStore(id: string): Promise<StoreRecord | undefined>;
  /**
   * Stores in id order (creation order for ULIDs), optionally only those
   * named exactly `name`. `pageSize` 1..100; a token this catalog did not
   * make is `invalid_argument` (reason `invalid_continuation_token`).
   */
  listStores(options: { pageSize: number; continuationToken?: string | undefined; name?: string | undefined }): Promise<Page<StoreRecord>>;
  /** Deletes the store and all its data; `not_found` (reason `store_not_found`) when absent. */
  deleteStore(id: string): Promise<void>;
  /** A {@link TupleStore} view of store `id` (which need not exist yet: calls on it fail until it does). */
  store(id: string): TupleStore;
}

/** A condition attached to a tuple: its name and the stored part of its context. */
export interface TupleCondition {
  name: string;
  /** JSON-safe parameter values stored with the tuple; they win over request context on key clashes. */
  context?: Record<string, unknown>;
}

/**
 * A relationship tuple in OpenFGA's string syntax.
 * - `object`: `type:id`
 * - `relation`: a relation name
 * - `user`: `type:id`, `type:*` (every object of the type) or `type:id#relation` (a userset)
 */
export interface TupleKey {
  object: string;
  relation: string;
  user: string;
  condition?: TupleCondition;
  /**
   * When the tuple stops granting: an RFC 3339 timestamp, stored in its
   * canonical UTC form (`2030-01-02T03:04:05.000Z`, engine/expiry.ts). Like
   * the condition it is payload, not identity. From that instant every read
   * of every store leaves the tuple out; collection deletes it later
   * ({@link TupleStore.deleteExpired}). Absent: the tuple never expires.
   */
  expires_at?: string;
}

/** A tuple as stored, with the revision of the write that created it. */
export interface StoredTuple extends TupleKey {
  /** Store revision of the write that created this tuple. */
  revision: number;
  /**
   * Milliseconds since the epoch at which that write was committed, where
   * the read provides it ({@link TupleStore.readPage} of the memory and SQL
   * stores); absent elsewhere.
   */
  writtenAt?: number;
}

/** `(object type, object id, relation)`: the forward lookup key. */
export interface ObjectRelationKey {
  objectType: string;
  objectId: string;
  relation: string;
}

/** `(object type, object id, relation, user)`: a point lookup. */
export interface UserTupleKey extends ObjectRelationKey {
  /** The full user string (`user:1`, `user:*`, `group:a#member`). */
  user: string;
}

/** Which users a forward read returns. */
export type UserKind = 'all' | 'usersets';

/** Filter of {@link TupleStore.readPage}; every field optional, all given fields must match. */
export interface ReadFilter {
  /** Exact object type. */
  objectType?: string;
  /** Exact object id (only meaningful with `objectType`). */
  objectId?: string;
  /** Exact relation. */
  relation?: string;
  /** Exact user string (`user:1`, `user:*`, `group:a#member`). */
  user?: string;
}

/** One page of a paginated read. */
export interface Page<T> {
  items: T[];
  /** Opaque token for the next page; `undefined` when this page is the last. */
  continuationToken: string | undefined;
}

/** One row of the changelog. */
export interface TupleChange {
  /** Revision of the write call that made the change. */
  revision: number;
  /**
   * The change's place within its revision, from 0 (a write call's deletes,
   * then its writes). `(revision, seq)` orders the whole changelog and names
   * one change exactly, whatever filter the read had.
   */
  seq: number;
  operation: 'write' | 'delete';
  tuple: TupleKey;
  /** Milliseconds since the epoch at which the change was committed. */
  timestamp: number;
}

/** The arguments of {@link TupleStore.readChanges}. */
export interface ChangesQuery {
  afterRevision: number;
  /** Resume inside revision `afterRevision`, after its change `afterSeq` (0 or more). */
  afterSeq?: number;
  limit: number;
  objectType?: string;
}

/** The interface of a tuple and model store. All methods are async. */
export interface TupleStore {
  /**
   * Appends a model version. `model.id` is a new ULID made by the engine and
   * greater than every id already stored. Never modifies an existing version.
   */
  writeModel(model: StoredAuthorizationModel): Promise<void>;

  /** The model version with this id, or `undefined`. */
  readModel(id: string): Promise<StoredAuthorizationModel | undefined>;

  /** The model version with the greatest id, or `undefined` when none exists. */
  readLatestModel(): Promise<StoredAuthorizationModel | undefined>;

  /**
   * The greatest model id, or `undefined` when none exists. Cheap: the engine
   * calls it on every request that names no model version, and keeps parsed
   * versions by id.
   */
  latestModelId(): Promise<string | undefined>;

  /**
   * Model versions, newest first. `pageSize` is 1..100; the token is one this
   * store returned for the same call, else `invalid_argument`.
   */
  listModels(options: { pageSize: number; continuationToken?: string | undefined }): Promise<Page<StoredAuthorizationModel>>;

  /**
   * Applies `deletes` then `writes` atomically and bumps the revision by one.
   * Returns the new revision.
   *
   * Preconditions, checked in the same transaction: each deleted tuple exists
   * (else `not_found`, reason `tuple_not_found`, nothing applied) and each
   * written tuple does not exist after the deletes (else `already_exists`,
   * reason `tuple_exists`, nothing applied). A call with nothing to do still
   * bumps the revision. The engine never passes the same key twice in one
   * call. A deleted tuple's condition is ignored (identity is the key).
   */
  write(deletes: readonly TupleKey[], writes: readonly TupleKey[]): Promise<number>;

  /**
   * Point lookups, batched: for each key, the stored tuple with exactly that
   * object, relation and user, or `undefined`. The result has one entry per
   * key, in key order.
   */
  readUserTuples(keys: readonly UserTupleKey[]): Promise<(StoredTuple | undefined)[]>;

  /**
   * Forward lookups, batched: for each key, every tuple on that object and
   * relation (`kind: 'usersets'`: only those whose user is a userset
   * `type:id#relation`). One array per key, in key order; each array ordered
   * by user.
   */
  readObjectRelations(keys: readonly ObjectRelationKey[], kind: UserKind): Promise<StoredTuple[][]>;

  /**
   * Optional, for stores where each read is a round trip: forward lookups that
   * follow a tupleset (`viewer from parent`) all the way up at once. For each
   * key `type:id#R`: every tuple on it, then, for every user of those tuples
   * that is a plain object `T:i`, every tuple on `T:i#R`, and so on, at most
   * `maxDepth` hops from the key (cycles stop there). Resolves to the tuples
   * of every object relation reached, keyed `type\0id\0R`, each list ordered
   * by user, an object relation with no tuple as an empty list; or to
   * `undefined` when the store cannot (or would read too much), and the
   * caller reads level by level with {@link TupleStore.readObjectRelations}.
   */
  readTuplesetChains?(keys: readonly ObjectRelationKey[], maxDepth: number): Promise<Map<string, StoredTuple[]> | undefined>;

  /**
   * Reverse lookup: tuples on objects of `objectType` with `relation` whose
   * user is one of `users` (full user strings; exact matches only, a wildcard
   * is matched only when `type:*` itself is listed). When `objectIds` is
   * given, only those objects. Ordered by object id, then user.
   */
  readStartingWithUsers(query: {
    objectType: string;
    relation: string;
    users: readonly string[];
    objectIds?: readonly string[];
  }): Promise<StoredTuple[]>;

  /**
   * A page of tuples matching `filter`, ordered by (object, relation, user).
   * The continuation token names the last tuple returned, so pages stay
   * stable when tuples are written or deleted between calls: a tuple present
   * for the whole read appears exactly once.
   */
  readPage(filter: ReadFilter, options: { pageSize: number; continuationToken?: string | undefined }): Promise<Page<StoredTuple>>;

  /**
   * Changes with a revision greater than `afterRevision`, oldest first, at most
   * `limit` (1..1000) of them, optionally only those on objects of `objectType`.
   * With `afterSeq`, changes after `(afterRevision, afterSeq)` in
   * `(revision, seq)` order instead: the rest of revision `afterRevision`
   * first (a cursor that resumes inside a revision).
   *
   * Commit order: revision `R` is visible to a read only once every revision
   * below it is (each write holds its store's revision lock until it commits),
   * so a reader that has seen `(R, s)` never later finds a change before it.
   */
  readChanges(options: ChangesQuery): Promise<TupleChange[]>;

  /**
   * Optional bulk read: every stored tuple, in large batches (`batchSize`
   * tuples each, the last one smaller), as cheaply as the backend allows —
   * for loading an in-memory copy. A tuple present for the whole scan
   * appears exactly once; one written or deleted during the scan may or may
   * not. To keep a copy current, read {@link TupleStore.revision} before the
   * scan and replay {@link TupleStore.readChanges} after that revision,
   * tolerating changes already seen. Tuples with an `expires_at` come with
   * it, and may include ones that expired but were not collected yet: the
   * copy decides expiry itself.
   */
  scanTuples?(options?: { batchSize?: number }): AsyncIterable<StoredTuple[]>;

  /**
   * Optional (memory and SQL stores have it): the ids of objects of
   * `objectType` that have at least one stored tuple, after `after` (an id;
   * none: from the first), in ascending order, at most `limit` (1..10,000).
   * It may also return ids whose tuples were since deleted or have expired (a
   * superset, never fewer): paged ListObjects checks each id it reads, so an
   * extra id costs a check and changes no answer, and a missing one would
   * lose a result. The memory store orders by code units; SQL stores by
   * bytes of UTF-8 (the same order for ids without characters from U+D800).
   */
  readObjectIds?(query: { objectType: string; after?: string | undefined; limit: number }): Promise<string[]>;

  /** The current revision (0 for a store that was never written). */
  revision(): Promise<number>;

  /** True when at least one tuple is stored. */
  hasTuples(): Promise<boolean>;

  /**
   * Deletes every model version and the changelog, atomically, but only when
   * no tuple exists; otherwise throws `failed_precondition` (reason
   * `tuples_exist`) and changes nothing. The revision is kept.
   */
  reset(): Promise<void>;

  /** Releases resources (connections, timers). The store is unusable afterwards. */
  close(): Promise<void>;

  /**
   * Optional (memory and SQL stores have it): deletes up to `limit` tuples
   * whose `expires_at` is at or before `now` (ms), as one write: the revision
   * moves by one and each deleted tuple gets a `delete` change. Returns how
   * many were deleted; with none, nothing is written and the revision stays.
   * Safe to run from several processes at once.
   */
  deleteExpired?(now: number, limit: number): Promise<number>;

  /**
   * Optional: the earliest `expires_at` (ms) of a stored tuple that expires
   * after `now`, or `undefined` when none does. Answer caches use it as the
   * absolute end of every answer they hold.
   */
  nextExpiry?(now: number): Promise<number | undefined>;

  /** The id of the store this object is a view of ({@link DEFAULT_STORE_ID} when omitted). */
  readonly storeId?: string;

  /**
   * The backend's stores, when it holds several (memory and SQL stores do).
   * Optional so that single-store implementations keep compiling.
   */
  catalog?(): StoreCatalog;

  /** Replaces the assertions of model version `modelId` (optional, see {@link Assertion}). */
  writeAssertions?(modelId: string, assertions: readonly Assertion[]): Promise<void>;

  /** The assertions of model version `modelId`, `[]` when none were written. */
  readAssertions?(modelId: string): Promise<Assertion[]>;
}

/**
 * Copies the optional members of `inner` (store id, catalog, assertions,
 * tupleset chains, object ids) onto a wrapper of it, for the layers that wrap a store (the
 * check cache, the graph mirror): they pass through them untouched.
 */
export function forwardStoreExtras(inner: TupleStore, wrapper: TupleStore): void {
  const w = wrapper as { -readonly [K in keyof TupleStore]: TupleStore[K] };
  if (inner.storeId !== undefined) w.storeId = inner.storeId;
  if (inner.catalog !== undefined) w.catalog = inner.catalog.bind(inner);
  if (inner.writeAssertions !== undefined) w.writeAssertions = inner.writeAssertions.bind(inner);
  if (inner.readAssertions !== undefined) w.readAssertions = inner.readAssertions.bind(inner);
  if (inner.readTuplesetChains !== undefined) w.readTuplesetChains = inner.readTuplesetChains.bind(inner);
  if (inner.nextExpiry !== undefined) w.nextExpiry = inner.nextExpiry.bind(inner);
  if (inner.deleteExpired !== undefined) w.deleteExpired = inner.deleteExpired.bind(inner);
  if (inner.readObjectIds !== undefined) w.readObjectIds = inner.readObjectIds.bind(inner);
}
