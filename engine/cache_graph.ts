/**
 * A compact in-memory mirror of a store's tuple graph, with a synchronous
 * Check fast path over it, behind the evaluator's own interface.
 *
 * ```ts
 * const mirror = await GraphMirror.load({ store: sqlStore, revisionPollMs: 1000 });
 * const cache = new CheckCache({ store: mirror.store });
 * const engine = new Engine({ store: cache.store, resolver: cache.resolver(mirror.resolver()) });
 * ```
 *
 * - **Compact.** The tuples live in the memory store's graph index
 *   (engine/graph_index.ts, without the reverse index): interned strings,
 *   numeric node keys `object#relation`, plain and userset users apart (the
 *   split index of performance-anchors §2.3).
 * - **Fast path.** A top-level check of a monotone relation (see
 *   `TypeSystem.isMonotone`) by a plain object user is reachability; it is
 *   answered by the index's synchronous walk (`GraphIndex.reach`): type
 *   restrictions and conditions applied as the tuple reader applies them,
 *   the depth limit and dispatch budget as the evaluator counts them, errors
 *   as the evaluator reports them. Contextual tuples, full consistency and
 *   every other check go to the inner resolver, which reads the store.
 * - **Current.** Writes through {@link GraphMirror.store} are applied to the
 *   mirror before the write call returns. Writes by other processes are read
 *   from the changelog: a fast-path answer is given only when the mirror has
 *   caught up with a changelog read started at most `revisionPollMs` ago.
 *
 * Answers carry `height = maxDepth - 1`, so a cache above serves them to
 * top-level requests only.
 */
import { LocalChecker, type CheckResolver, type ResolutionContext, type ResolveCheckRequest, type ResolveCheckResult } from './check.ts';
import type { ParsedUser } from './tuple.ts';
import { GraphIndex } from './graph_index.ts';
import { topAnswer } from './check_sync.ts';
import { LatchkeyError } from './errors.ts';
import type { TupleKey, TupleStore } from './store.ts';
import type { LatestModelHint } from './engine_check.ts';

/** Options of {@link GraphMirror.load}; unknown keys are rejected. */
export interface GraphMirrorOptions {
  store: TupleStore;
  /** Longest delay before another process's write is used by the fast path (ms). Default 1,000; 0 reads the changelog before every fast-path check. */
  revisionPollMs?: number;
  /** Tuples per page when loading. Default 10,000. */
  pageSize?: number;
  /** Clock (ms), for tests. */
  now?: () => number;
}

/** Size and state of a {@link GraphMirror}. */
export interface GraphMirrorStats {
  tuples: number;
  nodes: number;
  strings: number;
  revision: number;
  loadMs: number;
  fast: number;
  deferred: number;
}


export class GraphMirror {
  readonly #inner: TupleStore;
  readonly #pollMs: number;
  readonly #now: () => number;
  /** The tuples, in the memory store's compact index (without its reverse index). */
  readonly #index = new GraphIndex({ reverse: false });
  #revision = 0;
  #confirmedAt = -Infinity;
  #sync: Promise<void> = Promise.resolve();
  #loadMs = 0;
  #latestModel: { id: string | undefined; at: number } | undefined;
  #refreshing: Promise<void> | undefined;
  #fast = 0;
  #deferred = 0;
  readonly #store: TupleStore;

  private constructor(store: TupleStore, pollMs: number, now: () => number) {
    this.#inner = store;
    this.#pollMs = pollMs;
    this.#now = now;
    this.#store = this.#wrap(store);
  }

  /** Loads every tuple of `options.store` into a new mirror. */
  static async load(options: GraphMirrorOptions): Promise<GraphMirror> {
    for (const key of Object.keys(options)) {
      if (!['store', 'revisionPollMs', 'pageSize', 'now'].includes(key)) {
        throw new LatchkeyError('invalid_argument', `unknown graph mirror option '${key}'`, { reason: 'invalid_option', details: { option: key } });
      }
    }
    const poll = options.revisionPollMs ?? 1000;
    const pageSize = options.pageSize ?? 10_000;
    if (!Number.isInteger(poll) || poll < 0 || poll > 3_600_000) {
      throw new LatchkeyError('invalid_argument', 'graph mirror option revisionPollMs must be an integer from 0 to 3600000', { reason: 'invalid_option', details: { option: 'revisionPollMs' } });
    }
    if (!Number.isInteger(pageSize) || pageSize < 1 || pageSize > 100_000) {
      throw new LatchkeyError('invalid_argument', 'graph mirror option pageSize must be an integer from 1 to 100000', { reason: 'invalid_option', details: { option: 'pageSize' } });
    }
    const now = options.now ?? (() => performance.now());
    const m = new GraphMirror(options.store, poll, now);
    const t0 = performance.now();
    const started = now();
    // Changes after this revision are replayed after the scan, in order; replaying one the scan already saw is harmless.
    m.#revision = await options.store.revision();
    if (typeof options.store.scanTuples === 'function') {
      for await (const batch of options.store.scanTuples({ batchSize: pageSize })) for (const t of batch) m.#add(t);
    } else {
      let token: string | undefined;
      do {
        const page = await options.store.readPage({}, { pageSize, continuationToken: token });
        for (const t of page.items) m.#add(t);
        token = page.continuationToken;
      } while (token !== undefined);
    }
    await m.#catchUp();
    m.#confirmedAt = started;
    m.#loadMs = performance.now() - t0;
    return m;
  }

  /** The store to give the engine (and a cache): writes through it update the mirror before they return. */
  get store(): TupleStore {
    return this.#store;
  }

  stats(): GraphMirrorStats {
    const index = this.#index;
    return { tuples: index.size, nodes: index.nodes.size, strings: index.strings, revision: this.#revision, loadMs: Math.round(this.#loadMs), fast: this.#fast, deferred: this.#deferred };
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

  /** A resolver answering eligible checks from the mirror and the rest from `inner` (default: a new {@link LocalChecker}). */
  resolver(inner: CheckResolver = new LocalChecker()): CheckResolver {
    const eligible = (req: ResolveCheckRequest, ctx: ResolutionContext): boolean =>
      req.depth === 0 &&
      req.path === undefined &&
      req.user.kind === 'object' &&
      ctx.consistency !== 'higher_consistency' &&
      !ctx.reader.hasContextualTuples &&
      ctx.ts.isMonotone(req.objectType, req.relation);
    const walk = (req: ResolveCheckRequest, ctx: ResolutionContext): ResolveCheckResult | undefined => {
      const user = req.user as Extract<ParsedUser, { kind: 'object' }>;
      const answer = this.#index.reach(ctx.ts, req.objectType, req.objectId, req.relation, user.type, user.id, ctx, req.object);
      if (answer === undefined) return undefined;
      this.#fast++;
      return topAnswer(answer, ctx.maxDepth);
    };
    return {
      resolveCheck: async (req, ctx) => {
        if (eligible(req, ctx)) {
          if (this.#now() - this.#confirmedAt > this.#pollMs) await this.#refresh();
          const r = walk(req, ctx);
          if (r !== undefined) return r;
          this.#deferred++;
        }
        return inner.resolveCheck(req, ctx);
      },
      // Synchronous only while the mirror is fresh; a stale mirror catches up on the asynchronous path.
      resolveCheckSync: (req, ctx) => {
        if (!eligible(req, ctx)) return inner.resolveCheckSync?.(req, ctx);
        if (this.#now() - this.#confirmedAt > this.#pollMs) return undefined;
        return walk(req, ctx);
      },
    };
  }


  // ---------------------------------------------------------------- index

  #add(t: TupleKey): void {
    this.#index.add(t, 0);
  }

  #delete(t: TupleKey): void {
    this.#index.delete(t);
  }

  // ---------------------------------------------------------------- freshness

  /** Applies the changelog after the mirror's revision (serialised with local writes). */
  #catchUp(): Promise<void> {
    const run = async (): Promise<void> => {
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
    };
    const p = this.#sync.then(run, run);
    this.#sync = p.catch(() => undefined);
    return p;
  }

  /** One catch-up shared by every check that finds the mirror stale (64 checks in flight must not queue 64 changelog reads). */
  #refresh(): Promise<void> {
    if (this.#refreshing !== undefined) return this.#refreshing;
    const started = this.#now();
    const p = this.#catchUp().then(
      () => {
        this.#confirmedAt = Math.max(this.#confirmedAt, started);
        this.#refreshing = undefined;
      },
      (err: unknown) => {
        this.#refreshing = undefined;
        throw err;
      },
    );
    this.#refreshing = p;
    return p;
  }

  #wrap(store: TupleStore): TupleStore {
    const mirror = this;
    const wrapped: TupleStore & LatestModelHint = {
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
      readPage: (filter, options) => store.readPage(filter, options),
      readChanges: (options) => store.readChanges(options),
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
      reset: () => store.reset(),
      close: () => store.close(),
    };
    return wrapped;
  }
}
