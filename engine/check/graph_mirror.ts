/**
 * A compact in-memory mirror of a store's tuple graph whose store answers
 * reads synchronously while the mirror is fresh, behind the evaluator's own
 * interface.
 *
 * ```ts
 * const mirror = await GraphMirror.load({ store: sqlStore, revisionPollMs: 1000 });
 * const cache = new CheckCache({ store: mirror.store });
 * const engine = new Engine({ store: cache.store, resolver: cache.resolver(mirror.resolver()) });
 * ```
 *
 * - **Compact.** The tuples live in the memory store's graph index
 *   (engine/graph/graph_index.ts, with its reverse index): interned strings,
 *   numeric node keys `object#relation`, plain and userset users apart (the
 *   split index of performance-anchors §2.3).
 * - **Synchronous reads.** {@link GraphMirror.store} offers the memory
 *   store's synchronous reads (`SyncTupleSource`, engine/reader.ts), answered
 *   from the index: the synchronous evaluator answers every check (a
 *   top-level check of a monotone relation as the index's walk,
 *   `GraphIndex.reach`) and ListObjects takes its synchronous reverse reads.
 *   Its asynchronous reads always go to the store.
 * - **Current.** Writes through {@link GraphMirror.store} are applied to the
 *   mirror before the write call returns. Writes by other processes are read
 *   from the changelog: the mirror answers only when it has caught up with a
 *   changelog read started at most `revisionPollMs` ago. A stale mirror
 *   refuses synchronous reads ({@link SyncReadRefused}; ListObjects then reads
 *   the store) and starts catching up; a check finding it stale waits for
 *   the catch-up. Once a synchronous run (one check, one ListObjects level)
 *   has started reading a fresh mirror, it finishes on it.
 * - **Full consistency.** A resolution asking for `higher_consistency` goes
 *   to the `direct` resolver, whose reads go to the store.
 */
import type { CheckResolver } from './check_resolver.ts';
import { LocalChecker } from './local_checker.ts';
import { GraphIndex, type GraphNode } from '../graph/graph_index.ts';
import type { ReachLimits } from '../graph/reach_walk.ts';
import { LatchkeyError } from '../errors.ts';
import { type SyncTupleSource, SyncReadRefused } from '../reader.ts';
import { forwardStoreExtras, type TupleCondition, type TupleKey, type TupleStore } from '../store.ts';
import type { TypeSystem } from '../typesystem.ts';
import type { FreshnessHint, LatestModelHint } from './check_path.ts';

/** Options of {@link GraphMirror.load}; unknown keys are rejected. */
export interface GraphMirrorOptions {
  store: TupleStore;
  /** Longest delay before another process's write is seen through the mirror (ms). Default 1,000; 0 reads the changelog before every check. */
  revisionPollMs?: number;
  /** Tuples per page when loading. Default 2,000: each page's rows are alive while it is indexed, and larger pages grew the heap's young generation (RSS) for no gain in speed. */
  pageSize?: number;
  /** Clock (ms), for tests. */
  now?: () => number;
  /** Wall clock (ms since the epoch) deciding tuple expiry, the store's own. Default `Date.now`. */
  clock?: () => number;
}

/** Size and state of a {@link GraphMirror}. */
export interface GraphMirrorStats {
  tuples: number;
  nodes: number;
  strings: number;
  revision: number;
  loadMs: number;
  /** Resolutions answered from the mirror. */
  fast: number;
  /** Resolutions sent to the `direct` resolver (full consistency). */
  deferred: number;
  /** Synchronous reads refused because the mirror was stale. */
  refused: number;
}

/** How long past the delay a synchronous run that started on a fresh mirror may keep reading it (ms). */
const RUN_GRACE_MS = 100;

export class GraphMirror {
  readonly #inner: TupleStore;
  readonly #pollMs: number;
  readonly #now: () => number;
  /** The tuples, in the memory store's compact index. */
  #index: GraphIndex;
  readonly #clock: () => number;
  /** The expiry floor shared by every index this mirror builds (`ExpiryFloor`, engine/check/cache_options.ts). */
  readonly #floor = { value: Infinity };
  #revision = 0;
  #confirmedAt = -Infinity;
  #sync: Promise<void> = Promise.resolve();
  #loadMs = 0;
  #latestModel: { id: string | undefined; at: number } | undefined;
  #refreshing: Promise<void> | undefined;
  /** Highest revision a notification announced; no catch-up below it confirms freshness. */
  #notified = -1;
  /** A changelog replay is under way: the revision may be ahead of what is applied (a page ended inside a write). */
  #applying = false;
  #fast = 0;
  #deferred = 0;
  #refused = 0;
  /** Checks reading the mirror synchronously right now (it caught up for them). */
  #pinDepth = 0;
  /** True until the end of the current synchronous run once it has read the fresh mirror (see {@link GraphMirror.#usable}). */
  #pinned = false;
  readonly #unpin = (): void => {
    this.#pinned = false;
  };
  readonly #store: TupleStore;

  private constructor(store: TupleStore, pollMs: number, now: () => number, pageSize: number, clock: () => number) {
    this.#clock = clock;
    this.#index = new GraphIndex({ now: clock, floor: this.#floor });
    this.#inner = store;
    this.#pollMs = pollMs;
    this.#now = now;
    this.#pageSize = pageSize;
    this.#store = this.#wrap(store);
  }

  /** Loads every tuple of `options.store` into a new mirror. */
  static async load(options: GraphMirrorOptions): Promise<GraphMirror> {
    for (const key of Object.keys(options)) {
      if (!['store', 'revisionPollMs', 'pageSize', 'now', 'clock'].includes(key)) {
        throw new LatchkeyError('invalid_argument', `unknown graph mirror option '${key}'`, { reason: 'invalid_option', details: { option: key } });
      }
    }
    const poll = options.revisionPollMs ?? 1000;
    const pageSize = options.pageSize ?? 2_000;
    if (!Number.isInteger(poll) || poll < 0 || poll > 3_600_000) {
      throw new LatchkeyError('invalid_argument', 'graph mirror option revisionPollMs must be an integer from 0 to 3600000', { reason: 'invalid_option', details: { option: 'revisionPollMs' } });
    }
    if (!Number.isInteger(pageSize) || pageSize < 1 || pageSize > 100_000) {
      throw new LatchkeyError('invalid_argument', 'graph mirror option pageSize must be an integer from 1 to 100000', { reason: 'invalid_option', details: { option: 'pageSize' } });
    }
    const now = options.now ?? (() => performance.now());
    if (options.clock !== undefined && typeof options.clock !== 'function') {
      throw new LatchkeyError('invalid_argument', 'graph mirror option clock must be a function', { reason: 'invalid_option', details: { option: 'clock' } });
    }
    const m = new GraphMirror(options.store, poll, now, pageSize, options.clock ?? Date.now);
    const t0 = performance.now();
    await m.#reload();
    m.#loadMs = performance.now() - t0;
    return m;
  }

  readonly #pageSize: number;

  /** Replaces the index by a fresh scan of the store (serialised with catch-ups and local writes). */
  #reload(): Promise<void> {
    const run = async (): Promise<void> => {
      const store = this.#inner;
      const started = this.#now();
      // Staged as numbers and built once the scan is done, compactly (see GraphIndex.finishBulk).
      const index = new GraphIndex({ bulk: true, now: this.#clock, floor: this.#floor });
      // Changes after this revision are replayed after the scan, in order; replaying one the scan already saw is harmless.
      const revision = await store.revision();
      if (typeof store.scanTuples === 'function') {
        for await (const batch of store.scanTuples({ batchSize: this.#pageSize })) for (const t of batch) index.add(t, 0);
      } else {
        let token: string | undefined;
        do {
          const page = await store.readPage({}, { pageSize: this.#pageSize, continuationToken: token });
          for (const t of page.items) index.add(t, 0);
          token = page.continuationToken;
        } while (token !== undefined);
      }
      index.finishBulk();
      this.#index = index;
      this.#revision = revision;
      await this.#applyChanges();
      this.#confirmedAt = started;
    };
    const p = this.#sync.then(run, run);
    this.#sync = p.catch(() => undefined);
    return p;
  }

  /** The store to give the engine (and a cache): writes through it update the mirror before they return. */
  get store(): TupleStore {
    return this.#store;
  }

  stats(): GraphMirrorStats {
    const index = this.#index;
    return { tuples: index.size, nodes: index.nodeCount, strings: index.strings, revision: this.#revision, loadMs: Math.round(this.#loadMs), fast: this.#fast, deferred: this.#deferred, refused: this.#refused };
  }

  /**
   * Reads the changelog now: when it resolves, every write committed to the
   * store before the call (by any process) is in the mirror, and the mirror
   * counts as freshly confirmed. For callers that wrote to the database
   * outside the mirror and need the next check to see it.
   */
  async sync(): Promise<void> {
    const started = this.#now();
    await this.#catchUp();
    this.#confirmedAt = Math.max(this.#confirmedAt, started);
  }

  /**
   * A resolver answering from the mirror: `inner` (default: a new
   * {@link LocalChecker}, the synchronous evaluator over the mirror's
   * synchronous reads) while the mirror is fresh, after a catch-up when it is
   * stale; `direct` (default: the asynchronous evaluator, reading the store)
   * for full consistency.
   */
  resolver(inner: CheckResolver = new LocalChecker(), direct: CheckResolver = new LocalChecker({ sync: false })): CheckResolver {
    const run = <T>(f: () => T): T => {
      // The check reads the mirror synchronously from here to the end of this call.
      this.#pinDepth++;
      try {
        return f();
      } finally {
        this.#pinDepth--;
      }
    };
    return {
      resolveCheck: async (req, ctx) => {
        if (ctx.consistency === 'higher_consistency') {
          this.#deferred++;
          return direct.resolveCheck(req, ctx);
        }
        if (!this.#fresh()) await this.#refresh();
        this.#fast++;
        return run(() => inner.resolveCheck(req, ctx));
      },
      // Synchronous only while the mirror is fresh; a stale mirror catches up on the asynchronous path.
      resolveCheckSync: (req, ctx) => {
        if (ctx.consistency === 'higher_consistency' || !this.#fresh()) return undefined;
        if (inner.resolveCheckSync === undefined) return undefined;
        const r = run(() => inner.resolveCheckSync!(req, ctx));
        if (r !== undefined) this.#fast++;
        return r;
      },
    };
  }

  /** The mirror has caught up with a changelog read started at most `revisionPollMs` ago. */
  #fresh(): boolean {
    return this.#now() - this.#confirmedAt <= this.#pollMs;
  }

  /** Lets the current synchronous run read the mirror to its end. */
  #pin(): void {
    if (this.#pinned) return;
    this.#pinned = true;
    queueMicrotask(this.#unpin);
  }

  /**
   * Guards a synchronous read: throws {@link SyncReadRefused} (and starts a
   * catch-up) when the mirror may miss a committed write. A read inside a
   * check of {@link GraphMirror.resolver} is answered (the check caught up
   * first); another read needs a fresh mirror, or a synchronous run (one
   * ListObjects level) that started on a fresh mirror at most
   * {@link RUN_GRACE_MS} beyond the delay.
   */
  #usable(): GraphIndex {
    if (this.#pinDepth > 0) return this.#index;
    const age = this.#now() - this.#confirmedAt;
    if (age <= this.#pollMs) this.#pin();
    else if (!this.#pinned || age > this.#pollMs + RUN_GRACE_MS) {
      this.#refused++;
      this.#refresh().catch(() => undefined);
      throw new SyncReadRefused('the graph mirror is catching up with the database');
    }
    return this.#index;
  }

  #lookup(index: GraphIndex, objectType: string, objectId: string, relation: string): { o: number; r: number; n: GraphNode } | undefined {
    return index.lookup(`${objectType}:${objectId}`, relation);
  }

  #syncSource(): SyncTupleSource {
    return {
      readUserTupleSync: (objectType, objectId, relation, user) => {
        const index = this.#usable();
        const at = this.#lookup(index, objectType, objectId, relation);
        if (at === undefined) return undefined;
        const u = index.id(user);
        if (u === undefined) return undefined;
        const rev = index.revisionIn(at.n, u);
        if (rev === undefined || (index.expiring > 0 && index.expired(at.o, at.r, u, index.now()))) return undefined;
        return index.tuple(at.o, at.r, at.n, u, rev);
      },
      readObjectRelationSync: (objectType, objectId, relation, kind) => {
        const index = this.#usable();
        const at = this.#lookup(index, objectType, objectId, relation);
        if (at === undefined) return [];
        const out: (TupleKey & { revision: number })[] = [];
        index.nodeTuples(at.o, at.r, at.n, kind, out);
        return out;
      },
      reachSync: (ts: TypeSystem, objectType: string, objectId: string, relation: string, userType: string, userId: string, limits: ReachLimits, object?: string, user?: string) =>
        this.#usable().reach(ts, objectType, objectId, relation, userType, userId, limits, object, user),
      readStartingWithUsersSync: (objectType: string, relation: string, users: readonly string[], emit: (user: number, objectId: string, condition: TupleCondition | undefined) => void) => {
        const index = this.#usable();
        if (users.length > 0) index.reverseRead(objectType, relation, users, emit);
      },
    };
  }

  // ---------------------------------------------------------------- index

  #add(t: TupleKey): void {
    // A write may replace a tuple that expired but was not collected (its payload, expiry included, changes).
    if (this.#index.expiring > 0 || t.expires_at !== undefined) this.#index.delete(t);
    this.#index.add(t, 0);
  }

  #delete(t: TupleKey): void {
    this.#index.delete(t);
  }

  // ---------------------------------------------------------------- freshness

  /** Applies the changelog after the mirror's revision (serialised with local writes). */
  #catchUp(): Promise<void> {
    const run = (): Promise<void> => this.#applyChanges();
    const p = this.#sync.then(run, run);
    this.#sync = p.catch(() => undefined);
    return p;
  }

  async #applyChanges(): Promise<void> {
    this.#applying = true;
    try {
      for (;;) {
        const changes = await this.#inner.readChanges({ afterRevision: this.#revision, limit: 1000 });
        for (const c of changes) {
          if (c.operation === 'delete') this.#delete(c.tuple);
          else this.#add(c.tuple);
          this.#revision = Math.max(this.#revision, c.revision);
        }
        if (changes.length < 1000) break;
      }
      const rev = await this.#inner.revision();
      // Revisions with no change rows (empty writes) move the revision only.
      if (rev > this.#revision) {
        const more = await this.#inner.readChanges({ afterRevision: this.#revision, limit: 1 });
        if (more.length === 0) this.#revision = rev;
      }
    } finally {
      this.#applying = false;
    }
  }

  /** One catch-up shared by every check that finds the mirror stale (64 checks in flight must not queue 64 changelog reads). */
  #refresh(): Promise<void> {
    if (this.#refreshing !== undefined) return this.#refreshing;
    const p: Promise<void> = (async () => {
      // A notification that arrives during a catch-up is caught by the next one; the third is a guard, not expected.
      for (let attempt = 0; attempt < 3; attempt++) {
        const started = this.#now();
        await this.#catchUp();
        if (this.#revision < this.#notified) continue;
        this.#confirmedAt = Math.max(this.#confirmedAt, started);
        return;
      }
    })().finally(() => {
      if (this.#refreshing === p) this.#refreshing = undefined;
    });
    this.#refreshing = p;
    return p;
  }

  /**
   * Tells the mirror that the store reached `revision` (a PostgreSQL
   * notification of a committed write, engine/sql/revision_listener.ts), or,
   * with no argument, that notifications may have been lost. Unless the
   * mirror already holds that revision, it stops answering until it has
   * applied the changelog up to it (incrementally, as a poll would), and
   * starts that catch-up now (docs/caching.md).
   */
  observeRevision(revision?: number): void {
    if (revision !== undefined) {
      if (revision <= this.#revision) return;
      this.#notified = Math.max(this.#notified, revision);
    }
    this.#confirmedAt = -Infinity;
    // A catch-up already in flight may have read the changelog before the commit: it must not confirm.
    this.#refreshing = undefined;
    this.#refresh().catch(() => undefined);
  }

  /**
   * Tells the mirror that a model of the store was written elsewhere (a
   * PostgreSQL notification, engine/sql/revision_listener.ts): the latest
   * model id is read again on the next request instead of within
   * `revisionPollMs`.
   */
  observeModel(): void {
    this.#latestModel = undefined;
  }

  /**
   * True when the mirror holds every change up to store revision `revision`
   * (a consistency token); otherwise a catch-up starts and the caller should
   * read the store.
   */
  caughtUp(revision: number): boolean {
    if (this.#revision >= revision && !this.#applying) return true;
    this.observeRevision(revision);
    return false;
  }

  #wrap(store: TupleStore): TupleStore {
    const mirror = this;
    const wrapped: TupleStore & LatestModelHint & FreshnessHint = {
      knownLatestModelId: () => {
        const known = mirror.#latestModel;
        return known !== undefined && mirror.#now() - known.at <= mirror.#pollMs ? known.id : undefined;
      },
      writeModel: async (model) => {
        try {
          await store.writeModel(model);
        } finally {
          mirror.#latestModel = undefined;
        }
      },
      readModel: (id) => store.readModel(id),
      readLatestModel: () => store.readLatestModel(),
      // The engine asks for the latest model id on every request; like the tuples, it may lag another process by at most revisionPollMs.
      latestModelId: async () => {
        const known = mirror.#latestModel;
        if (known !== undefined && mirror.#now() - known.at <= mirror.#pollMs) return known.id;
        const at = mirror.#now();
        const id = await store.latestModelId();
        mirror.#latestModel = { id, at };
        return id;
      },
      listModels: (options) => store.listModels(options),
      write: async (deletes, writes) => {
        const revision = await store.write(deletes, writes);
        const apply = async (): Promise<void> => {
          if (revision <= mirror.#revision) return;
          if (revision !== mirror.#revision + 1) return; // another process wrote in between: catch up below
          for (const t of deletes) mirror.#delete(t);
          for (const t of writes) mirror.#add(t);
          mirror.#revision = revision;
        };
        const p = mirror.#sync.then(apply, apply);
        mirror.#sync = p.catch(() => undefined);
        await p;
        if (mirror.#revision < revision) await mirror.#catchUp();
        return revision;
      },
      readUserTuples: (keys) => store.readUserTuples(keys),
      readObjectRelations: (keys, kind) => store.readObjectRelations(keys, kind),
      readStartingWithUsers: (query) => store.readStartingWithUsers(query),
      ...mirror.#syncSource(),
      readPage: (filter, options) => store.readPage(filter, options),
      readChanges: (options) => store.readChanges(options),
      caughtUp: (revision: number) => mirror.caughtUp(revision),
      // A layer above (the answer cache) that sees a newer revision must find the mirror caught up to it,
      // or it would store answers from an older mirror under the new revision.
      revision: async () => {
        const started = mirror.#now();
        const revision = await store.revision();
        if (revision > mirror.#revision) await mirror.#catchUp();
        if (revision <= mirror.#revision) mirror.#confirmedAt = Math.max(mirror.#confirmedAt, started);
        return revision;
      },
      hasTuples: () => store.hasTuples(),
      reset: async () => {
        try {
          await store.reset();
        } finally {
          mirror.#latestModel = undefined;
        }
      },
      close: () => store.close(),
    };
    forwardStoreExtras(store, wrapped);
    // What the answer cache above needs of expiring tuples (`ExpiryFloor`, engine/check/cache_options.ts).
    const floor = wrapped as unknown as { expiryFloorCell: { readonly value: number }; refreshExpiryFloor(now: number): number };
    floor.expiryFloorCell = mirror.#floor;
    floor.refreshExpiryFloor = (now) => mirror.#index.refreshExpiryFloor(now);
    return wrapped;
  }
}
