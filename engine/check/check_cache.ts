/**
 * The shared check cache: a bounded LRU (lru-cache) of sub-problem answers
 * that wraps the evaluator behind the evaluator's own interface
 * ({@link CheckResolver}), as OpenFGA's cached resolver wraps its local
 * checker. See docs/caching.md for the contract in prose.
 *
 * ```ts
 * const cache = new CheckCache({ store: sqlStore, maxEntries: 100_000, revisionPollMs: 1000 });
 * const engine = new Engine({ store: cache.store, resolver: cache.resolver() });
 * ```
 *
 * Correct before fast (conventions §0):
 * - **Key.** `model id | condition context | object#relation@user`. Requests
 *   with contextual tuples bypass the cache entirely (their answers hold for
 *   that request only), so every input of an answer is in its key or the
 *   answer is not cached (OpenFGA advisories GHSA-32q6-rr98-cjqv,
 *   GHSA-h6c8-cww8-35hf).
 * - **What is cached.** Only answers that do not depend on the resolution
 *   path (no cycle cut them short), with the depth they needed, so a cached
 *   answer is served only where recomputing it would not hit the depth limit.
 *   Errors are never cached.
 * - **Writes in this process.** Every write goes through {@link CheckCache.store};
 *   when the store's `write` resolves, the cache generation has already moved
 *   on, so no answer computed before the write is visible to any later check
 *   (no stale allow after a revoke). An answer whose computation overlapped a
 *   write is stored under the generation it started in and so is never served.
 * - **Writes in other processes.** An answer is served only if a revision
 *   read of the store started at most `revisionPollMs` ago and found the
 *   revision the answer was computed at; otherwise the lookup first re-reads
 *   the revision (one shared read, whatever the concurrency). So a write
 *   committed by another process is observed within `revisionPollMs`.
 * - **Full consistency.** A resolution whose context asks for
 *   `higher_consistency` bypasses the cache (reads and fills).
 * - **Bounded.** At most `maxEntries` answers (LRU eviction); `0` disables
 *   the cache, as does `revisionPollMs: 0`.
 *
 * Invalidation by a write in this process is by dependency: each model
 * version's relations are numbered, and a tuple of `type#relation` can only
 * change the answers of the relations whose resolution reads such tuples
 * (found from the model: direct parts, tuple-to-userset tuplesets, and every
 * relation they dispatch to through usersets, computed relations and
 * tuple-to-userset targets). The write moves on the generation of exactly
 * those relations, in every model version the cache holds answers for, before
 * it returns. A change the cache cannot attribute (another process's write,
 * a revision that skipped, a reset) empties the whole cache, as before.
 *
 * Expiring tuples (`expires_at`): every answer the cache holds ends, absolutely
 * and never slid, at the *horizon*: the earliest expiry of any tuple an
 * answer may have read. It is lowered by every expiring tuple an
 * asynchronous read returns through {@link CheckCache.store}, by every one a
 * synchronous store holds or is given ({@link ExpiryFloor}), and by every
 * expiring tuple written through the cache. At the horizon (wall clock,
 * option `clock`) the cache is emptied before any lookup, and the horizon
 * moves to the next expiry. With no expiring tuple the horizon is infinite
 * and a lookup pays one comparison. A synchronous store's floor is raised
 * by the cache that empties at it: give such a store one cache (as
 * `buildEngine` does); caches over the same SQL store learn expiries from
 * their own reads and are unaffected.
 *
 * The options and their validation are in engine/check/cache_options.ts.
 */
import { LRUCache } from 'lru-cache';
import type { CheckResolver, Consistency, ResolutionContext, ResolveCheckRequest, ResolveCheckResult } from './check_resolver.ts';
import { LocalChecker } from './local_checker.ts';
import { onPath } from './rules.ts';
import type { StoredAuthorizationModel } from '../model.ts';
import { forwardStoreExtras, type TupleKey, type TupleStore } from '../store.ts';
import type { TypeSystem } from '../typesystem.ts';
import { ModelDeps } from './check_dependencies.ts';
import { formatUser } from '../tuple.ts';
import type { FreshnessHint, LatestModelHint, TopLevelHits, TopLevelKey } from './check_path.ts';
import { type SyncTupleSource, syncSource } from '../reader.ts';
import { cacheSettings, type CheckCacheOptions, type ExpiryFloor } from './cache_options.ts';

/** Counters of a {@link CheckCache}. */
export interface CheckCacheStats {
  hits: number;
  misses: number;
  /** Resolutions that bypassed the cache (contextual tuples, full consistency). */
  bypasses: number;
  /** Revision reads made to bound cross-process staleness. */
  revisionReads: number;
  /** Times the cache was emptied because the store changed. */
  invalidations: number;
  size: number;
}

const NONE: ReadonlySet<string> = new Set();
/** Heights are below 128 (the depth limit is at most 100): value = generation * 256 + height * 2 + allowed. */
const HEIGHT_SLOTS = 128;
/** Shared, frozen answers served on hits: index allowed * HEIGHT_SLOTS + height. */
const RESULTS: readonly ResolveCheckResult[] = Array.from({ length: 2 * HEIGHT_SLOTS }, (_, i) =>
  Object.freeze({ allowed: i >= HEIGHT_SLOTS, cycle: false, height: i % HEIGHT_SLOTS, hits: NONE }),
);

/**
 * The key of a top-level check as the engine keeps it (TopLevelHits), with
 * the LRU value it last found and the cache generation it was found in: the
 * next lookup of the same check takes the value from here while its stamp is
 * the relation's current one and the generation has not moved, without the
 * LRU's hashing, comparing and reordering.
 */
class HitKey implements TopLevelKey {
  readonly text: string;
  value = -1;
  generation = 0;

  constructor(text: string) {
    this.text = text;
  }
}

const MAX_MODELS = 64;
/** Options of every LRU lookup, shared (lru-cache otherwise allocates an empty object per get). */
const GET_OPTIONS: LRUCache.GetOptions<string, number, unknown> = {};

/** A bounded, write-invalidated cache of Check answers; see the module doc. */
export class CheckCache {
  readonly #inner: TupleStore;
  /** Entries the LRU holds at most; 0 when the cache is disabled. */
  readonly #maxEntries: number;
  /**
   * Built on the first lookup, not with the cache: lru-cache allocates its index for `max` entries at once (3 MiB
   * and 20 ms for the default 100,000), which a server that has not been asked a question yet need not hold.
   */
  #lru: LRUCache<string, number> | undefined;
  readonly #pollMs: number;
  readonly #now: () => number;
  readonly #store: TupleStore;
  /** Bumped whenever the store may have changed; answers of older generations are never served. */
  #generation = 1;
  /** Per model version (by id) whose answers are cached: relation numbers, generations and dependencies. */
  readonly #deps = new Map<string, ModelDeps>();
  #lastDeps: { ts: TypeSystem; deps: ModelDeps } | undefined;
  /** Local writes started: a revision read that overlapped one does not confirm freshness. */
  #writes = 0;
  /** Store revision last read or written, and when the read that confirmed it started. */
  #revision = -1;
  #confirmedAt = -Infinity;
  /** Highest revision a notification announced; no revision read below it confirms freshness. */
  #notified = -1;
  #refresh: Promise<void> | undefined;
  #latestModelId: { value: string | undefined; generation: number; at: number } | undefined;
  readonly #stats = { hits: 0, misses: 0, bypasses: 0, revisionReads: 0, invalidations: 0 };
  /** Wall clock deciding expiry. */
  readonly #clock: () => number;
  /** Absolute end (wall ms) of every answer held: the earliest expiry of a tuple an answer may depend on. */
  #horizon = Infinity;
  /** The inner store's expiry floor, when it has synchronous reads. */
  readonly #floor: ExpiryFloor | undefined;
  /** Its cell, read on every lookup. */
  readonly #floorCell: { readonly value: number } | undefined;

  constructor(options: CheckCacheOptions) {
    const o = cacheSettings(options);
    this.#pollMs = o.pollMs;
    this.#now = o.now;
    this.#clock = o.clock;
    this.#floor = o.floor;
    this.#floorCell = o.floor?.expiryFloorCell;
    this.#inner = o.store;
    this.#maxEntries = o.maxEntries;
    this.#store = this.#wrapStore(o.store);
  }

  /** True when answers are cached (maxEntries and revisionPollMs both above 0). */
  get enabled(): boolean {
    return this.#maxEntries > 0;
  }

  /**
   * The store to give the engine: the wrapped store, whose `write` and
   * `writeModel` move the cache generation on before they resolve, and whose
   * `latestModelId` is answered from memory while the revision is confirmed
   * fresh (a model written by another process is seen within `revisionPollMs`).
   */
  get store(): TupleStore {
    return this.#store;
  }

  /** A resolver that answers from the cache and otherwise asks `inner` (default: a new {@link LocalChecker}). */
  resolver(inner: CheckResolver = new LocalChecker()): CheckResolver {
    const chain: CheckResolver & TopLevelHits = {
      resolveCheck: (req, ctx) => this.#resolve(inner, req, ctx),
      resolveCheckSync: (req, ctx) => this.#resolveSync(inner, req, ctx),
      latestModelIdSeen: () => this.#latestModelId?.value,
      // The same key as the resolvers build for a request without condition context.
      topLevelKey: (ts, object, relation, user) => new HitKey(`${ts.id}\n${object}#${relation}@${user}`),
      topLevelHit: (ts, latest, objectType, relation, key, consistency, maxDepth) => this.#topLevelHit(ts, latest, objectType, relation, key, consistency, maxDepth),
    };
    return chain;
  }

  /**
   * The hit `#resolveSync` would serve to a top-level request without
   * contextual tuples (depth 0, no path, a new scope), found before the
   * engine builds the request and its context; `undefined` in every other
   * case (a miss, a revision to re-read, a latest model id to re-read, full
   * consistency), and the engine then takes the usual path. One clock
   * reading decides both freshness conditions, before the lookup, as
   * `knownLatestModelId` and `#fresh` would each decide them.
   */
  #topLevelHit(ts: TypeSystem, latest: boolean, objectType: string, relation: string, key: TopLevelKey, consistency: Consistency | undefined, maxDepth: number): ResolveCheckResult | undefined {
    const lru = this.#enabledLru();
    if (lru === undefined || consistency === 'higher_consistency') return undefined;
    this.#expiryGate();
    const now = this.#now();
    if (now - this.#confirmedAt > this.#pollMs) return undefined;
    if (latest) {
      const known = this.#latestModelId;
      if (known === undefined || known.value !== ts.id || known.generation !== this.#generation || now - known.at > this.#pollMs) return undefined;
    }
    const deps = this.#depsOf(ts);
    const ci = deps.classOf.get(objectType)?.get(relation);
    if (ci === undefined) return undefined;
    const stamp = deps.gens[ci]!;
    if (!(key instanceof HitKey)) return this.#lookup(lru, key.text, stamp, 0, maxDepth);
    // The answer this key last found, while no write has moved its relation on and the cache was not emptied: the
    // same value the LRU would give (a newer value there has a newer stamp, and emptying moves the generation on).
    let v = key.generation === this.#generation ? key.value : -1;
    if (v < 0 || Math.floor(v / 256) !== stamp) {
      v = lru.get(key.text, GET_OPTIONS) ?? -1;
      if (v < 0) return undefined;
      key.value = v;
      key.generation = this.#generation;
    }
    return this.#answer(v, stamp, 0, maxDepth);
  }

  /** A hit, or a miss the inner resolver answers synchronously (then stored); `undefined` otherwise. */
  #resolveSync(inner: CheckResolver, req: ResolveCheckRequest, ctx: ResolutionContext): ResolveCheckResult | undefined {
    const lru = this.#enabledLru();
    if (lru === undefined || ctx.reader.hasContextualTuples || ctx.consistency === 'higher_consistency' || req.scope.isCancelled()) {
      const r = inner.resolveCheckSync?.(req, ctx);
      if (r !== undefined && lru !== undefined) this.#stats.bypasses++;
      return r;
    }
    if (this.#fresh() !== undefined) return undefined; // the revision must be re-read first: the asynchronous path does that
    const object = req.object ?? `${req.objectType}:${req.objectId}`;
    const user = req.userText ?? formatUser(req.user);
    if (req.path !== undefined && onPath(req.path, `${object}#${req.relation}@${user}`)) return inner.resolveCheckSync?.(req, ctx);
    const deps = this.#depsOf(ctx.ts);
    const ci = this.#classOf(deps, req);
    if (ci === undefined) return inner.resolveCheckSync?.(req, ctx);
    // The same key as the asynchronous path builds, in one template.
    const key = ctx.context === undefined
      ? `${ctx.ts.id}\n${object}#${req.relation}@${user}`
      : `${ctx.ts.id}\n${JSON.stringify(ctx.context)}\n${object}#${req.relation}@${user}`;
    const hit = this.#lookup(lru, key, deps.gens[ci]!, req.depth, ctx.maxDepth);
    if (hit !== undefined) return hit;
    if (inner.resolveCheckSync === undefined) return undefined;
    const generation = this.#generation;
    const stamp = deps.gens[ci]!;
    const r = inner.resolveCheckSync(req, ctx);
    if (r === undefined) return undefined;
    this.#stats.misses++;
    if (r.hits !== null && r.hits.size === 0 && !r.cycle && r.height < HEIGHT_SLOTS && generation === this.#generation) {
      lru.set(key, stamp * 256 + r.height * 2 + (r.allowed ? 1 : 0));
    }
    return r;
  }

  /** The LRU, built on first use; undefined when the cache is disabled. */
  #enabledLru(): LRUCache<string, number> | undefined {
    return this.#lru ?? (this.#maxEntries > 0 ? (this.#lru = new LRUCache<string, number>({ max: this.#maxEntries })) : undefined);
  }

  /** Empties the cache and moves the generation on. */
  invalidate(): void {
    this.#generation++;
    this.#stats.invalidations++;
    this.#latestModelId = undefined;
    this.#lru?.clear();
  }

  /** The dependencies of `ts`, registered before any of its answers is computed (so every later write reaches them). */
  #depsOf(ts: TypeSystem): ModelDeps {
    const last = this.#lastDeps;
    if (last !== undefined && last.ts === ts) return last.deps;
    let deps = this.#deps.get(ts.id);
    if (deps === undefined) {
      if (this.#deps.size >= MAX_MODELS) {
        this.#deps.clear();
        this.invalidate();
      }
      this.#deps.set(ts.id, (deps = new ModelDeps(ts)));
    }
    this.#lastDeps = { ts, deps };
    return deps;
  }

  /** Moves on the generation of every relation, in every model held, whose answers these tuples can change. */
  #invalidateTuples(tuples: readonly TupleKey[]): void {
    const classes = new Set<string>();
    for (const t of tuples) classes.add(`${t.object.slice(0, t.object.indexOf(':'))}#${t.relation}`);
    for (const deps of this.#deps.values()) {
      for (const c of classes) for (const i of deps.affected.get(c) ?? []) deps.gens[i]!++;
    }
    this.#stats.invalidations++;
  }

  /** The number of `type#relation` in `deps`, or `undefined` (then nothing is cached for it). */
  #classOf(deps: ModelDeps, req: ResolveCheckRequest): number | undefined {
    return deps.classOf.get(req.objectType)?.get(req.relation);
  }

  stats(): CheckCacheStats {
    return { ...this.#stats, size: this.#lru?.size ?? 0 };
  }

  /**
   * Tells the cache that the store reached `revision` (a PostgreSQL
   * notification of a committed write, engine/sql/revision_listener.ts), or,
   * with no argument, that notifications may have been lost. Unless the cache
   * already knows that revision, it stops answering from memory until a
   * revision read started after this call confirms it, and starts that read
   * now: a write committed by another process is observed as soon as its
   * notification arrives, and `revisionPollMs` remains the bound when one is
   * lost (docs/caching.md).
   */
  observeRevision(revision?: number): void {
    if (revision !== undefined) {
      if (revision <= this.#revision) return;
      this.#notified = Math.max(this.#notified, revision);
    }
    this.#confirmedAt = -Infinity;
    // A read already in flight may have started before the commit: it must not confirm.
    this.#refresh = undefined;
    this.#fresh()?.catch(() => undefined);
  }

  /**
   * Tells the cache that a model of the store was written elsewhere (a
   * PostgreSQL notification, engine/sql/revision_listener.ts): the latest
   * model id is read again on the next request instead of within
   * `revisionPollMs`. Answers stay cached: they are keyed by model version,
   * and versions are immutable.
   */
  observeModel(): void {
    this.#latestModelId = undefined;
  }

  /**
   * True when the cache has caught up with store revision `revision` (a
   * consistency token), and so has every layer below it that answers from
   * memory: then an answer it serves is at least as fresh as that revision.
   * When it has not, a catch-up starts and the caller should read the store.
   */
  caughtUp(revision: number): boolean {
    if (this.#maxEntries > 0 && this.#revision < revision) {
      this.observeRevision(revision);
      return false;
    }
    const below = (this.#inner as { caughtUp?: (r: number) => boolean }).caughtUp;
    return below === undefined || below.call(this.#inner, revision);
  }

  /**
   * Empties the cache when the wall clock has reached the horizon (the
   * earliest expiry an answer held may depend on), then moves the horizon to
   * the next expiry. Runs before every lookup.
   */
  #expiryGate(): void {
    const cell = this.#floorCell;
    if (cell !== undefined && cell.value < this.#horizon) this.#horizon = cell.value;
    if (this.#horizon === Infinity) return;
    const floor = this.#floor;
    const now = this.#clock();
    if (now < this.#horizon) return;
    this.invalidate();
    this.#horizon = floor === undefined ? Infinity : floor.refreshExpiryFloor(now);
  }

  /** Lowers the horizon to the earliest expiry among `tuples` (those an answer may have read or a write added). */
  #seeExpiries(tuples: readonly (TupleKey | undefined)[]): void {
    for (const t of tuples) {
      if (t?.expires_at === undefined) continue;
      const e = Date.parse(t.expires_at);
      if (e < this.#horizon) this.#horizon = e;
    }
  }

  /** Resolves once the cache's view of the store revision is at most `revisionPollMs` old. */
  #fresh(): Promise<void> | undefined {
    this.#expiryGate();
    if (this.#now() - this.#confirmedAt <= this.#pollMs) return undefined;
    if (this.#refresh !== undefined) return this.#refresh;
    const p: Promise<void> = (async () => {
      // A notification that arrives during a read is caught by the next one; the third is a guard, not expected.
      for (let attempt = 0; attempt < 3; attempt++) {
        const started = this.#now();
        const generation = this.#generation;
        const writes = this.#writes;
        this.#stats.revisionReads++;
        const revision = await this.#inner.revision();
        // A revision this cache did not write (another process's, or one it has not attributed yet): empty everything.
        if (revision > this.#revision) {
          this.#revision = revision;
          this.invalidate();
        }
        if (revision < this.#notified) continue;
        // Confirm only if nothing changed while reading (no local write started, nothing emptied the cache).
        if ((generation === this.#generation && writes === this.#writes) || revision === this.#revision) this.#confirmedAt = Math.max(this.#confirmedAt, started);
        return;
      }
    })().finally(() => {
      if (this.#refresh === p) this.#refresh = undefined;
    });
    this.#refresh = p;
    return p;
  }

  /** Hits answer without an async frame: the lookup is synchronous whenever the revision is fresh. */
  #resolve(inner: CheckResolver, req: ResolveCheckRequest, ctx: ResolutionContext): Promise<ResolveCheckResult> {
    const lru = this.#enabledLru();
    if (
      lru === undefined ||
      ctx.reader.hasContextualTuples ||
      ctx.consistency === 'higher_consistency' ||
      req.scope.isCancelled()
    ) {
      if (lru !== undefined) this.#stats.bypasses++;
      return inner.resolveCheck(req, ctx);
    }
    const pk = `${req.object ?? `${req.objectType}:${req.objectId}`}#${req.relation}@${req.userText ?? formatUser(req.user)}`;
    // A sub-problem on its own path is a cycle: the evaluator decides that, never the cache.
    if (req.path !== undefined && onPath(req.path, pk)) return inner.resolveCheck(req, ctx);
    // The model id is a ULID and the context is JSON: neither contains a newline, so the parts cannot run together.
    const deps = this.#depsOf(ctx.ts);
    const ci = this.#classOf(deps, req);
    if (ci === undefined) return inner.resolveCheck(req, ctx);
    const key = ctx.context === undefined ? `${ctx.ts.id}\n${pk}` : `${ctx.ts.id}\n${JSON.stringify(ctx.context)}\n${pk}`;
    const wait = this.#fresh();
    if (wait === undefined) {
      const hit = this.#lookup(lru, key, deps.gens[ci]!, req.depth, ctx.maxDepth);
      if (hit !== undefined) return Promise.resolve(hit);
      return this.#fill(lru, key, inner, req, ctx, deps, ci);
    }
    return wait.then(() => this.#lookup(lru, key, deps.gens[ci]!, req.depth, ctx.maxDepth) ?? this.#fill(lru, key, inner, req, ctx, deps, ci));
  }

  /** An entry stored at the relation's current generation (a stored entry was filled in the current cache generation). */
  #lookup(lru: LRUCache<string, number>, key: string, stamp: number, depth: number, maxDepth: number): ResolveCheckResult | undefined {
    const v = lru.get(key, GET_OPTIONS);
    return v === undefined ? undefined : this.#answer(v, stamp, depth, maxDepth);
  }

  /** The answer an LRU value holds, if it is of the relation's current stamp and within the depth limit. */
  #answer(v: number, stamp: number, depth: number, maxDepth: number): ResolveCheckResult | undefined {
    if (Math.floor(v / 256) !== stamp) return undefined;
    const height = (v % 256) >> 1;
    if (depth + height >= maxDepth) return undefined;
    this.#stats.hits++;
    return RESULTS[(v & 1) * HEIGHT_SLOTS + height];
  }

  async #fill(lru: LRUCache<string, number>, key: string, inner: CheckResolver, req: ResolveCheckRequest, ctx: ResolutionContext, deps: ModelDeps, ci: number): Promise<ResolveCheckResult> {
    this.#stats.misses++;
    const generation = this.#generation;
    // The relation's generation before computing: a write while computing moves it on, so this answer is never served.
    const stamp = deps.gens[ci]!;
    const r = await inner.resolveCheck(req, ctx);
    if (r.hits !== null && r.hits.size === 0 && !r.cycle && r.height < HEIGHT_SLOTS && generation === this.#generation) {
      lru.set(key, stamp * 256 + r.height * 2 + (r.allowed ? 1 : 0));
    }
    return r;
  }

  #wrapStore(store: TupleStore): TupleStore {
    const cache = this;
    const wrapped: TupleStore & LatestModelHint & FreshnessHint = {
      // The latest model id while it is as fresh as latestModelId would answer it (the check path's warm path).
      knownLatestModelId: () => {
        if (cache.#maxEntries === 0) return (store as Partial<LatestModelHint>).knownLatestModelId?.();
        // Model writes do not move the revision: the id's own age bounds its staleness, as in latestModelId.
        const known = cache.#latestModelId;
        if (known === undefined || known.generation !== cache.#generation || cache.#now() - known.at > cache.#pollMs) return undefined;
        return known.value;
      },
      writeModel: async (model: StoredAuthorizationModel) => {
        try {
          await store.writeModel(model);
        } finally {
          cache.#latestModelId = undefined;
        }
      },
      readModel: (id) => store.readModel(id),
      readLatestModel: () => store.readLatestModel(),
      latestModelId: async () => {
        if (cache.#maxEntries === 0) return store.latestModelId();
        const wait = cache.#fresh();
        if (wait !== undefined) await wait;
        // Model writes do not move the revision, so the id is re-read at least every revisionPollMs.
        const known = cache.#latestModelId;
        if (known !== undefined && known.generation === cache.#generation && cache.#now() - known.at <= cache.#pollMs) return known.value;
        const generation = cache.#generation;
        const at = cache.#now();
        const value = await store.latestModelId();
        if (generation === cache.#generation) cache.#latestModelId = { value, generation, at };
        return value;
      },
      listModels: (options) => store.listModels(options),
      write: async (deletes: readonly TupleKey[], writes: readonly TupleKey[]) => {
        cache.#writes++;
        const before = cache.#revision;
        try {
          cache.#seeExpiries(writes);
          const revision = await store.write(deletes, writes);
          // The revision after the one this cache knew: the write is the only change, attributed to its tuples.
          // Anything else (another process wrote in between) empties the cache.
          if (revision !== before + 1 || cache.#revision !== before) cache.invalidate();
          cache.#revision = Math.max(cache.#revision, revision);
          return revision;
        } finally {
          // Before the caller sees the write complete (or fail: it may have committed), no answer these tuples can change is served.
          cache.#invalidateTuples(deletes);
          cache.#invalidateTuples(writes);
        }
      },
      // Every expiring tuple an answer may read lowers the horizon before the answer can be stored.
      readUserTuples: async (keys) => {
        const rows = await store.readUserTuples(keys);
        cache.#seeExpiries(rows);
        return rows;
      },
      readObjectRelations: async (keys, kind) => {
        const rows = await store.readObjectRelations(keys, kind);
        for (const r of rows) cache.#seeExpiries(r);
        return rows;
      },
      readStartingWithUsers: async (query) => {
        const rows = await store.readStartingWithUsers(query);
        cache.#seeExpiries(rows);
        return rows;
      },
      readPage: (filter, options) => store.readPage(filter, options),
      readChanges: (options) => store.readChanges(options),
      caughtUp: (revision: number) => cache.caughtUp(revision),
      revision: () => store.revision(),
      hasTuples: () => store.hasTuples(),
      reset: async () => {
        try {
          await store.reset();
        } finally {
          cache.invalidate();
        }
      },
      close: () => store.close(),
    };
    forwardStoreExtras(store, wrapped);
    if (store.readTuplesetChains !== undefined) {
      const chains = store.readTuplesetChains.bind(store);
      wrapped.readTuplesetChains = async (keys, maxDepth) => {
        const found = await chains(keys, maxDepth);
        if (found !== undefined) for (const r of found.values()) cache.#seeExpiries(r);
        return found;
      };
    }
    if (store.deleteExpired !== undefined) {
      const collect = store.deleteExpired.bind(store);
      wrapped.deleteExpired = async (now, limit) => {
        cache.#writes++;
        try {
          return await collect(now, limit);
        } finally {
          // Expired tuples already granted nothing; emptying keeps the revision bookkeeping simple.
          cache.invalidate();
        }
      };
    }
    if (this.#floor !== undefined) {
      const floor = this.#floor;
      const w = wrapped as unknown as ExpiryFloor;
      (w as { expiryFloorCell: { readonly value: number } }).expiryFloorCell = floor.expiryFloorCell;
      w.refreshExpiryFloor = (now) => floor.refreshExpiryFloor(now);
    }
    // Synchronous reads pass through like the others, so the evaluator behind the cache keeps its synchronous path.
    const sync = syncSource(store);
    if (sync !== undefined) {
      const w = wrapped as unknown as SyncTupleSource;
      w.readUserTupleSync = (...a) => sync.readUserTupleSync(...a);
      w.readObjectRelationSync = (...a) => sync.readObjectRelationSync(...a);
      if (sync.reachSync !== undefined) {
        const reach = sync.reachSync.bind(sync);
        w.reachSync = (...a) => reach(...a);
      }
      if (sync.readStartingWithUsersSync !== undefined) {
        const reverse = sync.readStartingWithUsersSync.bind(sync);
        w.readStartingWithUsersSync = (...a) => reverse(...a);
      }
    }
    return wrapped;
  }
}
