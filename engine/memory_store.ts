/**
 * An in-memory {@link TupleStore}: the default store of the engine, of tests
 * and of the `memory` FGA store setting. Data lives in the process and is lost
 * when it exits.
 *
 * Every read is an index lookup, never a scan. The tuples live in a compact
 * graph index (engine/graph/graph_index.ts): interned strings, numeric node keys
 * `object#relation` with plain and userset users apart, and a reverse index
 * user → objects. The changelog is kept in typed arrays
 * (engine/change_log.ts). Check reads it synchronously (`SyncTupleSource`,
 * engine/reader.ts), and a top-level check of a monotone relation is a walk
 * over numbers (`GraphIndex.reach`). The stores of one backend and their
 * views: engine/memory_catalog.ts.
 */
import { LatchkeyError } from './errors.ts';
import type { StoredAuthorizationModel } from './model.ts';
import { GraphIndex, REL_SLOTS, type GraphNode } from './graph/graph_index.ts';
import type { ReachLimits } from './graph/reach_walk.ts';
import type { TypeSystem } from './typesystem.ts';
import { DEFAULT_STORE_ID } from './store.ts';
import { byCodeUnits, indexAfter } from './list_pages.ts';
import { decodeToken, encodeToken } from './memory_tokens.ts';
import { ChangeLog, DELETE, WRITE } from './change_log.ts';
import { MemoryCatalog } from './memory_catalog.ts';
import type {
  Assertion,
  ObjectRelationKey,
  Page,
  ReadFilter,
  StoreCatalog,
  StoredTuple,
  TupleChange,
  ChangesQuery,
  TupleCondition,
  TupleKey,
  TupleStore,
  UserKind,
  UserTupleKey,
} from './store.ts';

const SEP = '\u0000';
function tupleId(t: TupleKey): string {
  return `${t.object}${SEP}${t.relation}${SEP}${t.user}`;
}

function copyCondition(c: TupleCondition | undefined): TupleCondition | undefined {
  if (c === undefined) return undefined;
  return c.context === undefined ? { name: c.name } : { name: c.name, context: structuredClone(c.context) };
}

function byUser(a: StoredTuple, b: StoredTuple): number {
  return a.user < b.user ? -1 : a.user > b.user ? 1 : 0;
}

/** Constructor option (module-private) of the views of stores other than the default. */
const SHARED = Symbol('memory store catalog');

/** Users held in the index's per-node maps before a write compacts them into runs (see `GraphIndex.compact`). */
const COMPACT_MIN = 4096;

/** Where a {@link MemoryStore}'s tuples sit in its index; `mapHeld + runHeld === tuples`. */
export interface MemoryStoreStats {
  tuples: number;
  /** Written since the last compaction, held in per-node maps. */
  mapHeld: number;
  /** In sorted runs (compacted). */
  runHeld: number;
}

/**
 * A {@link TupleStore} kept in process memory. The object made with `new`
 * is the default store; {@link MemoryStore.catalog} holds the others.
 */
export class MemoryStore implements TupleStore {
  #models: StoredAuthorizationModel[] = [];
  readonly #assertions = new Map<string, Assertion[]>();
  readonly #catalog: MemoryCatalog<MemoryStore>;
  readonly storeId: string;
  readonly #index: GraphIndex;
  readonly #log = new ChangeLog();
  #revision = 0;
  /** Node keys in (object, relation) order, for paginated reads; rebuilt after a write. */
  #sorted: { revision: number; nodes: number[] } | undefined;
  /** Object ids by type, sorted, for {@link readObjectIds}: built on its first call for a type, then kept up by writes. */
  readonly #objectIds = new Map<string, ObjectIds>();
  #closed = false;
  #now: () => number;

  /** @param options.now clock for changelog timestamps and tuple expiry (defaults to `Date.now`). */
  constructor(options: { now?: () => number } = {}) {
    this.#now = options.now ?? Date.now;
    this.#index = new GraphIndex({ now: this.#now });
    const shared = (options as { [SHARED]?: { catalog: MemoryCatalog<MemoryStore>; storeId: string } })[SHARED];
    this.storeId = shared?.storeId ?? DEFAULT_STORE_ID;
    this.#catalog = shared?.catalog ?? new MemoryCatalog(this, this.#now, (id) => new MemoryStore({ now: this.#now, [SHARED]: { catalog: this.#catalog, storeId: id } } as { now: () => number }));
  }

  /** The stores of this backend (this object is the default store). */
  catalog(): StoreCatalog {
    return this.#catalog;
  }

  async writeAssertions(modelId: string, assertions: readonly Assertion[]): Promise<void> {
    this.#open();
    this.#assertions.set(modelId, structuredClone([...assertions]));
  }

  async readAssertions(modelId: string): Promise<Assertion[]> {
    this.#open();
    return structuredClone(this.#assertions.get(modelId) ?? []);
  }

  #open(): void {
    if (this.#closed) {
      if (this.storeId !== DEFAULT_STORE_ID && !this.#catalog.stores.has(this.storeId)) {
        throw new LatchkeyError('not_found', `store '${this.storeId}' not found`, { reason: 'store_not_found' });
      }
      throw new LatchkeyError('unavailable', 'store is closed', { reason: 'store_closed' });
    }
  }

  async writeModel(model: StoredAuthorizationModel): Promise<void> {
    this.#open();
    const last = this.#models.at(-1);
    if (last !== undefined && last.id >= model.id) {
      throw new LatchkeyError('internal', 'model ids must increase', { reason: 'model_id_not_increasing' });
    }
    this.#models.push(structuredClone(model));
  }

  async readModel(id: string): Promise<StoredAuthorizationModel | undefined> {
    this.#open();
    const found = this.#models.find((m) => m.id === id);
    return found === undefined ? undefined : structuredClone(found);
  }

  async readLatestModel(): Promise<StoredAuthorizationModel | undefined> {
    this.#open();
    const last = this.#models.at(-1);
    return last === undefined ? undefined : structuredClone(last);
  }

  /** The latest model id, synchronously (`LatestModelHint` in engine/check/check_path.ts). */
  knownLatestModelId(): string | undefined {
    return this.#closed ? undefined : this.#models.at(-1)?.id;
  }

  async latestModelId(): Promise<string | undefined> {
    this.#open();
    return this.#models.at(-1)?.id;
  }

  async listModels(options: { pageSize: number; continuationToken?: string | undefined }): Promise<Page<StoredAuthorizationModel>> {
    this.#open();
    const before = options.continuationToken === undefined ? undefined : decodeToken(options.continuationToken);
    const newestFirst = [...this.#models].reverse().filter((m) => before === undefined || m.id < before);
    const items = newestFirst.slice(0, options.pageSize).map((m) => structuredClone(m));
    const more = newestFirst.length > options.pageSize;
    return { items, continuationToken: more ? encodeToken(items.at(-1)!.id) : undefined };
  }

  async write(deletes: readonly TupleKey[], writes: readonly TupleKey[]): Promise<number> {
    this.#open();
    // Check every precondition before touching anything: all or nothing.
    const deleted = new Set<string>();
    for (const t of deletes) {
      const id = tupleId(t);
      if (this.#index.revisionOf(t.object, t.relation, t.user) === undefined || deleted.has(id)) {
        throw new LatchkeyError('not_found', `cannot delete a tuple which does not exist: ${t.object}#${t.relation}@${t.user}`, {
          reason: 'tuple_not_found',
          details: { tuple: keyOnly(t) },
        });
      }
      deleted.add(id);
    }
    const written = new Set<string>();
    // A written tuple may replace one that has expired but was not collected yet: that one is deleted first.
    const replaced: TupleKey[] = [];
    const now = this.#index.expiring > 0 ? this.#now() : 0;
    for (const t of writes) {
      const id = tupleId(t);
      if (this.#index.expiring > 0 && !deleted.has(id) && this.#expiredNow(t, now)) replaced.push(t);
      else if ((this.#index.revisionOf(t.object, t.relation, t.user) !== undefined && !deleted.has(id)) || written.has(id)) {
        throw new LatchkeyError('already_exists', `cannot write a tuple which already exists: ${t.object}#${t.relation}@${t.user}`, {
          reason: 'tuple_exists',
          details: { tuple: keyOnly(t) },
        });
      }
      written.add(id);
    }
    const revision = this.#revision + 1;
    this.#log.times[revision] = this.#now();
    const index = this.#index;
    for (const t of [...deletes, ...replaced]) {
      index.delete(t);
      this.#log.push(revision, index.id(t.object)!, index.relId(t.relation)!, index.id(t.user)!, DELETE, undefined);
    }
    for (const t of writes) {
      const stored: TupleKey = { object: t.object, relation: t.relation, user: t.user };
      const c = copyCondition(t.condition);
      if (c !== undefined) stored.condition = c;
      if (t.expires_at !== undefined) stored.expires_at = t.expires_at;
      index.add(stored, revision);
      if (this.#objectIds.size > 0) this.#noteObject(t.object);
      this.#log.push(revision, index.id(t.object)!, index.relId(t.relation)!, index.id(t.user)!, WRITE, c);
      if (t.expires_at !== undefined) this.#log.expiry.set(this.#log.length - 1, t.expires_at);
    }
    // Written users wait in per-node maps; once there are as many as in the sorted runs, they join the runs
    // (one pass over the tuples each time the map-held count doubles: amortised constant per tuple written).
    if (index.mapHeld >= COMPACT_MIN && index.mapHeld * 2 >= index.size) index.compact();
    this.#revision = revision;
    return revision;
  }

  /** True when tuple `t` is held and has expired at `now`. */
  #expiredNow(t: TupleKey, now: number): boolean {
    const index = this.#index;
    const at = index.lookup(t.object, t.relation);
    const u = index.id(t.user);
    return at !== undefined && u !== undefined && index.revisionIn(at.n, u) !== undefined && index.expired(at.o, at.r, u, now);
  }

  async deleteExpired(now: number, limit: number): Promise<number> {
    this.#open();
    if (this.#index.expiring === 0) return 0;
    const keys = this.#index.expiredKeys(now, limit);
    if (keys.length === 0) return 0;
    const revision = this.#revision + 1;
    this.#log.times[revision] = this.#now();
    const index = this.#index;
    for (const t of keys) {
      this.#log.push(revision, index.id(t.object)!, index.relId(t.relation)!, index.id(t.user)!, DELETE, undefined);
      index.delete(t);
    }
    this.#revision = revision;
    return keys.length;
  }

  /** See `ExpiryFloor` (engine/check/cache_options.ts). */
  get expiryFloorCell(): { readonly value: number } {
    return this.#index.floor;
  }

  refreshExpiryFloor(now: number): number {
    return this.#index.refreshExpiryFloor(now);
  }

  async nextExpiry(now: number): Promise<number | undefined> {
    this.#open();
    return this.#index.expiring === 0 ? undefined : this.#index.nextExpiry(now);
  }

  /** The tuples of a node, materialised (only userset users when `kind` is `usersets`). */
  #nodeTuples(object: number, relation: number, n: GraphNode, kind: UserKind): StoredTuple[] {
    const out: StoredTuple[] = [];
    this.#index.nodeTuples(object, relation, n, kind, out);
    return out;
  }

  #lookup(objectType: string, objectId: string, relation: string): { o: number; r: number; n: GraphNode } | undefined {
    return this.#index.lookup(`${objectType}:${objectId}`, relation);
  }

  /** Synchronous point read (the evaluator's fast path, see `SyncTupleSource` in engine/reader.ts). */
  readUserTupleSync(objectType: string, objectId: string, relation: string, user: string): StoredTuple | undefined {
    this.#open();
    const at = this.#lookup(objectType, objectId, relation);
    if (at === undefined) return undefined;
    const u = this.#index.id(user);
    if (u === undefined) return undefined;
    const rev = this.#index.revisionIn(at.n, u);
    if (rev === undefined || (this.#index.expiring > 0 && this.#index.expired(at.o, at.r, u, this.#now()))) return undefined;
    return this.#index.tuple(at.o, at.r, at.n, u, rev);
  }

  /** Synchronous forward read, unordered. */
  readObjectRelationSync(objectType: string, objectId: string, relation: string, kind: UserKind): Iterable<StoredTuple> {
    this.#open();
    const at = this.#lookup(objectType, objectId, relation);
    return at === undefined ? [] : this.#nodeTuples(at.o, at.r, at.n, kind);
  }

  /** A top-level check of a monotone relation as a walk over the index (see `GraphIndex.reach`). */
  reachSync(ts: TypeSystem, objectType: string, objectId: string, relation: string, userType: string, userId: string, limits: ReachLimits, object?: string, user?: string): boolean | undefined {
    this.#open();
    return this.#index.reach(ts, objectType, objectId, relation, userType, userId, limits, object, user);
  }

  /**
   * Synchronous reverse read for ListObjects, unordered and without tuple
   * objects (see `SyncTupleSource.readStartingWithUsersSync` in engine/reader.ts).
   */
  readStartingWithUsersSync(objectType: string, relation: string, users: readonly string[], emit: (user: number, objectId: string, condition: TupleCondition | undefined) => void): void {
    this.#open();
    this.#index.reverseRead(objectType, relation, users, emit);
  }

  async readUserTuples(keys: readonly UserTupleKey[]): Promise<(StoredTuple | undefined)[]> {
    this.#open();
    return keys.map((k) => this.readUserTupleSync(k.objectType, k.objectId, k.relation, k.user));
  }

  async readObjectRelations(keys: readonly ObjectRelationKey[], kind: UserKind): Promise<StoredTuple[][]> {
    this.#open();
    return keys.map((k) => {
      const at = this.#lookup(k.objectType, k.objectId, k.relation);
      return at === undefined ? [] : this.#nodeTuples(at.o, at.r, at.n, kind).sort(byUser);
    });
  }

  async readStartingWithUsers(query: {
    objectType: string;
    relation: string;
    users: readonly string[];
    objectIds?: readonly string[];
  }): Promise<StoredTuple[]> {
    this.#open();
    const index = this.#index;
    const out: StoredTuple[] = [];
    const r = index.relId(query.relation);
    if (r === undefined) return out;
    const prefix = query.objectType.length + 1;
    const only = query.objectIds === undefined ? undefined : new Set(query.objectIds);
    let u = 0;
    const expiring = index.expiring > 0;
    const now = expiring ? this.#now() : 0;
    const emit = (o: number): void => {
      if (expiring && index.expired(o, r, u, now)) return;
      const n = index.nodeAt(o, r)!;
      out.push(index.tuple(o, r, n, u, index.revisionIn(n, u)!));
    };
    for (const user of new Set(query.users)) {
      const objs = index.objectsOf(user, query.relation);
      if (objs === undefined) continue;
      u = index.id(user)!;
      if (only !== undefined && only.size < objs.size) {
        for (const id of only) {
          const o = index.id(`${query.objectType}:${id}`);
          if (o !== undefined && objs.has(o)) emit(o);
        }
      } else {
        for (const o of objs) {
          if (index.typeOf(o) !== query.objectType) continue;
          if (only !== undefined && !only.has(index.str(o).slice(prefix))) continue;
          emit(o);
        }
      }
    }
    return out.sort((a, b) => (a.object < b.object ? -1 : a.object > b.object ? 1 : byUser(a, b)));
  }

  #sortedNodes(): number[] {
    if (this.#sorted === undefined || this.#sorted.revision !== this.#revision) {
      const index = this.#index;
      const nodes: number[] = [];
      for (const [o, r] of index.nodeEntries()) nodes.push(o * REL_SLOTS + r);
      const obj = (k: number): string => index.str(Math.floor(k / REL_SLOTS));
      const rel = (k: number): string => index.relName(k % REL_SLOTS);
      nodes.sort((a, b) => {
        const oa = obj(a);
        const ob = obj(b);
        if (oa !== ob) return oa < ob ? -1 : 1;
        const ra = rel(a);
        const rb = rel(b);
        return ra < rb ? -1 : ra > rb ? 1 : 0;
      });
      this.#sorted = { revision: this.#revision, nodes };
    }
    return this.#sorted.nodes;
  }

  async readPage(filter: ReadFilter, options: { pageSize: number; continuationToken?: string | undefined }): Promise<Page<StoredTuple>> {
    this.#open();
    const after = options.continuationToken === undefined ? undefined : decodeToken(options.continuationToken);
    const index = this.#index;
    const matches = (t: StoredTuple): boolean => {
      if (filter.relation !== undefined && t.relation !== filter.relation) return false;
      if (filter.user !== undefined && t.user !== filter.user) return false;
      if (filter.objectType !== undefined) {
        const i = t.object.indexOf(':');
        if (t.object.slice(0, i) !== filter.objectType) return false;
        if (filter.objectId !== undefined && t.object.slice(i + 1) !== filter.objectId) return false;
      }
      return true;
    };
    const nodeSorted = (k: number): StoredTuple[] => {
      const o = Math.floor(k / REL_SLOTS);
      const r = k % REL_SLOTS;
      return this.#nodeTuples(o, r, index.nodeAt(o, r)!, 'all').sort(byUser);
    };
    let candidates: Iterable<StoredTuple>;
    if (filter.objectType !== undefined && filter.objectId !== undefined && filter.relation !== undefined) {
      const at = this.#lookup(filter.objectType, filter.objectId, filter.relation);
      candidates = at === undefined ? [] : nodeSorted(at.o * REL_SLOTS + at.r);
    } else {
      const nodes = this.#sortedNodes();
      let lo = 0;
      if (after !== undefined) {
        // First node whose `object\0relation` is not before the token's.
        const parts = after.split(SEP);
        const tokObj = parts[0] ?? '';
        const tokRel = parts[1] ?? '';
        let hi = nodes.length;
        while (lo < hi) {
          const mid = (lo + hi) >>> 1;
          const k = nodes[mid]!;
          const o = index.str(Math.floor(k / REL_SLOTS));
          const r = index.relName(k % REL_SLOTS);
          if (o < tokObj || (o === tokObj && r < tokRel)) lo = mid + 1;
          else hi = mid;
        }
      }
      candidates = (function* () {
        for (let i = lo; i < nodes.length; i++) yield* nodeSorted(nodes[i]!);
      })();
    }
    const items: StoredTuple[] = [];
    let more = false;
    for (const t of candidates) {
      if (after !== undefined && tupleId(t) <= after) continue;
      if (!matches(t)) continue;
      if (items.length === options.pageSize) {
        more = true;
        break;
      }
      items.push(t);
    }
    const times = this.#log.times;
    return {
      items: items.map((t) => {
        const out = copyStored(t);
        const at = times[t.revision];
        if (at !== undefined) out.writtenAt = at;
        return out;
      }),
      continuationToken: more ? encodeToken(tupleId(items.at(-1)!)) : undefined,
    };
  }

  /** Every tuple, in batches of `batchSize` (default 10,000), in no particular order. */
  async *scanTuples(options: { batchSize?: number } = {}): AsyncGenerator<StoredTuple[]> {
    this.#open();
    const size = options.batchSize ?? 10_000;
    if (!Number.isInteger(size) || size < 1 || size > 1_000_000) {
      throw new LatchkeyError('invalid_argument', 'batchSize must be an integer from 1 to 1000000', { reason: 'invalid_batch_size' });
    }
    let batch: StoredTuple[] = [];
    for (const [o, r, n] of this.#index.nodeEntries()) {
      for (const t of this.#nodeTuples(o, r, n, 'all')) {
        batch.push(copyStored(t));
        if (batch.length === size) {
          yield batch;
          this.#open();
          batch = [];
        }
      }
    }
    if (batch.length > 0) yield batch;
  }

  async readChanges(options: ChangesQuery): Promise<TupleChange[]> {
    this.#open();
    const log = this.#log;
    const index = this.#index;
    const out: TupleChange[] = [];
    let start = log.firstAfter(options.afterRevision);
    if (options.afterSeq !== undefined) start = Math.min(start, log.firstAfter(options.afterRevision - 1) + options.afterSeq + 1);
    // The first change of the revision being read, for each change's seq.
    let revStart = -1;
    let revOf = -1;
    for (let i = start; i < log.length && out.length < options.limit; i++) {
      const o = log.obj[i]!;
      if (options.objectType !== undefined && index.typeOf(o) !== options.objectType) continue;
      const tuple: TupleKey = { object: index.str(o), relation: index.relName(log.rel[i]!), user: index.str(log.user[i]!) };
      const c = log.conds.get(i);
      if (c !== undefined) tuple.condition = copyCondition(c)!;
      const e = log.expiry.get(i);
      if (e !== undefined) tuple.expires_at = e;
      const revision = log.rev[i]!;
      if (revision !== revOf) {
        revOf = revision;
        revStart = log.firstAfter(revision - 1);
      }
      out.push({ revision, seq: i - revStart, operation: log.op[i] === DELETE ? 'delete' : 'write', tuple, timestamp: log.times[revision]! });
    }
    return out;
  }

  async revision(): Promise<number> {
    this.#open();
    return this.#revision;
  }

  /**
   * Where the tuples sit in the index. A write compacts the map-held ones
   * into runs once there are at least 4096 of them and at least as many as
   * in runs (test/engine/memory_store.test.ts). Read-only; answers never
   * depend on it.
   */
  stats(): MemoryStoreStats {
    const { size, mapHeld } = this.#index;
    return { tuples: size, mapHeld, runHeld: size - mapHeld };
  }

  async hasTuples(): Promise<boolean> {
    this.#open();
    return this.#index.size > 0;
  }

  #noteObject(object: string): void {
    const colon = object.indexOf(':');
    const ids = this.#objectIds.get(object.slice(0, colon));
    if (ids === undefined) return;
    const id = object.slice(colon + 1);
    if (ids.known.has(id)) return;
    ids.known.add(id);
    ids.pending.push(id);
  }

  /**
   * Object ids of `objectType` after `after`, sorted by code units (see
   * {@link TupleStore.readObjectIds}). Ids stay listed after their last
   * tuple is deleted (a superset, as the interface allows).
   */
  async readObjectIds(query: { objectType: string; after?: string | undefined; limit: number }): Promise<string[]> {
    this.#open();
    let ids = this.#objectIds.get(query.objectType);
    if (ids === undefined) {
      const index = this.#index;
      const known = new Set<string>();
      const cut = query.objectType.length + 1;
      for (const [o] of index.nodeEntries()) if (index.typeOf(o) === query.objectType) known.add(index.str(o).slice(cut));
      ids = { known, sorted: [...known].sort(byCodeUnits), pending: [] };
      this.#objectIds.set(query.objectType, ids);
    }
    if (ids.pending.length > 0) {
      const add = ids.pending.sort(byCodeUnits);
      const merged: string[] = new Array<string>(ids.sorted.length + add.length);
      let i = 0;
      let j = 0;
      let k = 0;
      while (i < ids.sorted.length && j < add.length) merged[k++] = ids.sorted[i]! < add[j]! ? ids.sorted[i++]! : add[j++]!;
      while (i < ids.sorted.length) merged[k++] = ids.sorted[i++]!;
      while (j < add.length) merged[k++] = add[j++]!;
      ids.sorted = merged;
      ids.pending = [];
    }
    const start = query.after === undefined ? 0 : indexAfter(ids.sorted, query.after);
    return ids.sorted.slice(start, start + query.limit);
  }

  async reset(): Promise<void> {
    this.#open();
    if (this.#index.size > 0) {
      throw new LatchkeyError('failed_precondition', 'remove all relationship tuples before resetting the authorization model', {
        reason: 'tuples_exist',
      });
    }
    this.#models = [];
    this.#log.clear();
    this.#assertions.clear();
  }

  async close(): Promise<void> {
    this.#closed = true;
    if (this.storeId === DEFAULT_STORE_ID) for (const s of this.#catalog.stores.values()) if (s !== this) await s.close();
  }
}

/** The object ids of one type a {@link MemoryStore} has listed: all of them, in code-unit order, and those written since the last read. */
interface ObjectIds {
  known: Set<string>;
  sorted: string[];
  pending: string[];
}

function keyOnly(t: TupleKey): TupleKey {
  const out: TupleKey = { object: t.object, relation: t.relation, user: t.user };
  if (t.condition !== undefined) out.condition = t.condition;
  if (t.expires_at !== undefined) out.expires_at = t.expires_at;
  return out;
}

function copyStored(t: StoredTuple): StoredTuple {
  const out: StoredTuple = { object: t.object, relation: t.relation, user: t.user, revision: t.revision };
  const c = copyCondition(t.condition);
  if (c !== undefined) out.condition = c;
  if (t.expires_at !== undefined) out.expires_at = t.expires_at;
  return out;
}
