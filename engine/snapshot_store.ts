/**
 * A read-only view of a tuple store as it was at an earlier revision `R`,
 * rebuilt from the store's current tuples and its changelog: what paged
 * listings read so that every page of one walk answers the same question on
 * the same data (docs/list-objects.md, "Pages").
 *
 * - A tuple read now whose `revision` (the write that created it) is above
 *   `R` did not exist at `R`: it is left out.
 * - A tuple deleted after `R` that existed at `R` is put back: the first
 *   change after `R` of its key is a delete. A delete's changelog row holds
 *   no condition, so the tuple as it was at `R` (its condition included) is
 *   the last write of its key at or before `R` in the changelog, read for
 *   the deleted tuples' object types only (a condition is never guessed: a
 *   conditional tuple taken for an unconditional one would grant access).
 * - The changes after `R` are read once, at most {@link SNAPSHOT_HORIZON} of
 *   them; beyond that (or when the store's revision is below `R`, after a
 *   reset) the view cannot be built: `failed_precondition`, reason
 *   `continuation_token_expired`. Deletes committed while the view is read
 *   are found by {@link SnapshotStore.settled}, so that a caller can read
 *   again rather than answer without them.
 *
 * - Expiry is decided now, not at `R`: a tuple put back whose `expires_at`
 *   has passed grants nothing (the store filters its own current tuples the
 *   same way), so a tuple collected after it expired never comes back.
 *
 * Writes, model writes and resets are refused: the view is for reads.
 */
import { LatchkeyError } from './errors.ts';
import type { StoredAuthorizationModel } from './model.ts';
import type { ChangesQuery, ObjectRelationKey, Page, ReadFilter, StoredTuple, TupleChange, TupleKey, TupleStore, UserKind, UserTupleKey } from './store.ts';

/** The most changes after a page token's revision that a later page replays; beyond it the token has expired. */
export const SNAPSHOT_HORIZON = 10_000;
/** The most changelog rows read to find the conditions of tuples deleted after the revision. */
const CONDITION_SCAN_LIMIT = 100_000;

const keyOf = (t: { object: string; relation: string; user: string }): string => `${t.object}\u0000${t.relation}\u0000${t.user}`;

export const tokenExpired = (message = 'the continuation token has expired: the store changed too much since its first page; start the listing again'): LatchkeyError =>
  new LatchkeyError('failed_precondition', message, { reason: 'continuation_token_expired' });

const readOnly = (): LatchkeyError => new LatchkeyError('failed_precondition', 'a snapshot of a tuple store is read-only', { reason: 'snapshot_read_only' });

/** The view of `inner` at `revision` (see the module's doc); build it with {@link SnapshotStore.at}. */
export class SnapshotStore implements TupleStore {
  readonly #inner: TupleStore;
  readonly #revision: number;
  /** The highest revision whose changes are folded in. */
  #seen: number;
  /** Tuples that existed at the revision and were deleted since, by key. */
  readonly #restored = new Map<string, StoredTuple>();
  readonly #now: () => number;
  readonly storeId?: string;

  private constructor(inner: TupleStore, revision: number, now: () => number) {
    this.#inner = inner;
    this.#revision = revision;
    this.#now = now;
    this.#seen = revision;
    if (inner.storeId !== undefined) this.storeId = inner.storeId;
  }

  /**
   * The view of `inner` at `revision`. `failed_precondition` (reason
   * `continuation_token_expired`) when it cannot be built.
   */
  static async at(inner: TupleStore, revision: number, now: () => number = Date.now): Promise<SnapshotStore> {
    const current = await inner.revision();
    if (current < revision) throw tokenExpired('the continuation token is from a revision this store no longer has (it was reset); start the listing again');
    const s = new SnapshotStore(inner, revision, now);
    await s.#fold();
    return s;
  }

  /** Reads the changes after what was folded in; false when a delete came (the view must be rebuilt), true otherwise. */
  async settled(): Promise<boolean> {
    for await (const batch of changesAfter(this.#inner, this.#seen)) if (batch.some((c) => c.operation === 'delete')) return false;
    return true;
  }

  async #fold(): Promise<void> {
    const first = new Map<string, TupleChange>();
    let read = 0;
    for await (const batch of changesAfter(this.#inner, this.#revision)) {
      read += batch.length;
      if (read > SNAPSHOT_HORIZON) throw tokenExpired();
      for (const c of batch) {
        const k = keyOf(c.tuple);
        if (!first.has(k)) first.set(k, c);
      }
      this.#seen = batch[batch.length - 1]!.revision;
    }
    // Deleted since: present at the revision, as their last write at or before it made them.
    const unknown = new Map<string, TupleChange>();
    for (const [k, c] of first) if (c.operation === 'delete') unknown.set(k, c);
    if (unknown.size === 0) return;
    const lastWrite = new Map<string, TupleChange>();
    const types = new Set([...unknown.values()].map((c) => c.tuple.object.slice(0, c.tuple.object.indexOf(':'))));
    let scanned = 0;
    for (const objectType of types) {
      scan: for await (const batch of changesAfter(this.#inner, 0, objectType)) {
        scanned += batch.length;
        if (scanned > CONDITION_SCAN_LIMIT) throw tokenExpired();
        for (const c of batch) {
          if (c.revision > this.#revision) break scan;
          if (c.operation === 'write' && unknown.has(keyOf(c.tuple))) lastWrite.set(keyOf(c.tuple), c);
        }
      }
    }
    for (const k of unknown.keys()) {
      const w = lastWrite.get(k);
      // The changelog must hold the write that made a tuple existing at the revision; without it the view would guess.
      if (w === undefined) throw tokenExpired('the changelog no longer holds a tuple this listing needs; start the listing again');
      // The write's tuple whole (its condition, and whatever else a write records), as the store held it.
      this.#restored.set(k, { ...w.tuple, revision: w.revision });
    }
  }

  #keep(t: StoredTuple | undefined): t is StoredTuple {
    return t !== undefined && t.revision <= this.#revision;
  }

  /** A tuple put back, unless its expiry has passed. */
  #alive(t: StoredTuple | undefined): StoredTuple | undefined {
    if (t === undefined || t.expires_at === undefined || t.expires_at === null) return t;
    return Date.parse(t.expires_at) > this.#now() ? t : undefined;
  }

  // ------------------------------------------------------------ reads

  async readUserTuples(keys: readonly UserTupleKey[]): Promise<(StoredTuple | undefined)[]> {
    const now = await this.#inner.readUserTuples(keys);
    return keys.map((k, i) => {
      const t = now[i];
      if (this.#keep(t)) return t;
      return this.#alive(this.#restored.get(`${k.objectType}:${k.objectId}\u0000${k.relation}\u0000${k.user}`));
    });
  }

  async readObjectRelations(keys: readonly ObjectRelationKey[], kind: UserKind): Promise<StoredTuple[][]> {
    const now = await this.#inner.readObjectRelations(keys, kind);
    return keys.map((k, i) => {
      const list = (now[i] ?? []).filter((t) => this.#keep(t));
      if (this.#restored.size === 0) return list;
      const object = `${k.objectType}:${k.objectId}`;
      let added = false;
      for (const t of this.#restored.values()) {
        if (t.object === object && t.relation === k.relation && (kind === 'all' || t.user.includes('#')) && this.#alive(t) !== undefined) {
          list.push(t);
          added = true;
        }
      }
      if (added) list.sort((a, b) => (a.user < b.user ? -1 : a.user > b.user ? 1 : 0));
      return list;
    });
  }

  async readStartingWithUsers(query: { objectType: string; relation: string; users: readonly string[]; objectIds?: readonly string[] }): Promise<StoredTuple[]> {
    const list = (await this.#inner.readStartingWithUsers(query)).filter((t) => this.#keep(t));
    if (this.#restored.size === 0) return list;
    const users = new Set(query.users);
    const ids = query.objectIds === undefined ? undefined : new Set(query.objectIds);
    const prefix = `${query.objectType}:`;
    let added = false;
    for (const t of this.#restored.values()) {
      if (t.relation !== query.relation || !t.object.startsWith(prefix) || !users.has(t.user)) continue;
      if (ids !== undefined && !ids.has(t.object.slice(prefix.length))) continue;
      if (this.#alive(t) === undefined) continue;
      list.push(t);
      added = true;
    }
    if (added) list.sort((a, b) => (a.object < b.object ? -1 : a.object > b.object ? 1 : a.user < b.user ? -1 : a.user > b.user ? 1 : 0));
    return list;
  }

  /**
   * Object ids of the type at the revision: the inner store's (a superset of
   * those with a tuple now) merged with the objects of the tuples put back,
   * in code-unit order. Only for an inner store that has the read.
   */
  async readObjectIds(query: { objectType: string; after?: string | undefined; limit: number }): Promise<string[]> {
    if (this.#inner.readObjectIds === undefined) throw new LatchkeyError('unimplemented', 'this store cannot list object ids', { reason: 'object_ids_unsupported' });
    const now = await this.#inner.readObjectIds(query);
    if (this.#restored.size === 0) return now;
    const prefix = `${query.objectType}:`;
    const full = now.length >= query.limit;
    const last = now[now.length - 1];
    const ids = new Set(now);
    for (const t of this.#restored.values()) {
      if (!t.object.startsWith(prefix)) continue;
      const id = t.object.slice(prefix.length);
      if (query.after !== undefined && id <= query.after) continue;
      // Past the inner page's last id, an id belongs to a later call (which meets it again).
      if (full && last !== undefined && id > last) continue;
      ids.add(id);
    }
    if (ids.size === now.length) return now;
    return [...ids].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  }

  async readPage(filter: ReadFilter, options: { pageSize: number; continuationToken?: string | undefined }): Promise<Page<StoredTuple>> {
    void filter;
    void options;
    throw readOnly();
  }

  readChanges(options: ChangesQuery): Promise<TupleChange[]> {
    if (options.afterRevision >= this.#revision) return Promise.resolve([]);
    return this.#inner.readChanges(options).then((l) => l.filter((c) => c.revision <= this.#revision));
  }

  async revision(): Promise<number> {
    return this.#revision;
  }

  async hasTuples(): Promise<boolean> {
    return this.#restored.size > 0 || (await this.#inner.hasTuples());
  }

  // ------------------------------------------------------------ models (read through) and refused writes

  readModel(id: string): Promise<StoredAuthorizationModel | undefined> {
    return this.#inner.readModel(id);
  }

  readLatestModel(): Promise<StoredAuthorizationModel | undefined> {
    return this.#inner.readLatestModel();
  }

  latestModelId(): Promise<string | undefined> {
    return this.#inner.latestModelId();
  }

  listModels(options: { pageSize: number; continuationToken?: string | undefined }): Promise<Page<StoredAuthorizationModel>> {
    return this.#inner.listModels(options);
  }

  async writeModel(model: StoredAuthorizationModel): Promise<void> {
    void model;
    throw readOnly();
  }

  async write(deletes: readonly TupleKey[], writes: readonly TupleKey[]): Promise<number> {
    void deletes;
    void writes;
    throw readOnly();
  }

  async reset(): Promise<void> {
    throw readOnly();
  }

  async close(): Promise<void> {}
}

/**
 * `inner` with its asynchronous reads only: none of the synchronous reads or
 * model hints a cache or graph mirror wrapper adds (they may answer from a
 * copy behind the store), so that an engine over it reads the store itself.
 * For reads: writes are refused.
 */
export function storeReadsOf(inner: TupleStore): TupleStore {
  const view: TupleStore = {
    readUserTuples: (keys) => inner.readUserTuples(keys),
    readObjectRelations: (keys, kind) => inner.readObjectRelations(keys, kind),
    readStartingWithUsers: (query) => inner.readStartingWithUsers(query),
    readPage: (filter, options) => inner.readPage(filter, options),
    readChanges: (options) => inner.readChanges(options),
    revision: () => inner.revision(),
    hasTuples: () => inner.hasTuples(),
    readModel: (id) => inner.readModel(id),
    readLatestModel: () => inner.readLatestModel(),
    latestModelId: () => inner.latestModelId(),
    listModels: (options) => inner.listModels(options),
    writeModel: () => Promise.reject(readOnly()),
    write: () => Promise.reject(readOnly()),
    reset: () => Promise.reject(readOnly()),
    close: async () => undefined,
  };
  const w = view as { -readonly [K in keyof TupleStore]: TupleStore[K] };
  if (inner.storeId !== undefined) w.storeId = inner.storeId;
  if (inner.readObjectIds !== undefined) w.readObjectIds = inner.readObjectIds.bind(inner);
  if (inner.readTuplesetChains !== undefined) w.readTuplesetChains = inner.readTuplesetChains.bind(inner);
  return view;
}

/**
 * The changelog after `after`, oldest first, in batches that each end on a
 * whole revision (one write's changes share a revision, and a read cut
 * inside one would lose the rest of it). A single revision of more than a
 * batch cannot be read whole: the token has expired.
 */
async function* changesAfter(inner: TupleStore, after: number, objectType?: string): AsyncGenerator<TupleChange[]> {
  const LIMIT = 1000;
  for (;;) {
    const batch = await inner.readChanges({ afterRevision: after, limit: LIMIT, ...(objectType === undefined ? {} : { objectType }) });
    if (batch.length === 0) return;
    if (batch.length < LIMIT) {
      yield batch;
      return;
    }
    const last = batch[batch.length - 1]!.revision;
    if (batch[0]!.revision === last) throw tokenExpired('one write changed more tuples than a listing can replay; start the listing again');
    const whole = batch.filter((c) => c.revision < last);
    yield whole;
    after = whole[whole.length - 1]!.revision;
  }
}
