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
 * - **Compact.** Strings (objects, users) are interned once; a node
 *   `object#relation` is a number key, and holds the ids of its plain and
 *   wildcard users in one set and its userset users in another (the split
 *   index of performance-anchors §2.3).
 * - **Fast path.** A top-level check of a monotone relation (see
 *   `TypeSystem.isMonotone`) by a plain object user is reachability; it is
 *   answered by a synchronous depth-first walk with a visited set, applying
 *   the model's type restrictions as the tuple reader does. Everything else,
 *   and any walk that meets a tuple with a condition, the depth limit, the
 *   dispatch budget, contextual tuples or a full-consistency request, goes to
 *   the inner resolver, which reads the store.
 * - **Current.** Writes through {@link GraphMirror.store} are applied to the
 *   mirror before the write call returns. Writes by other processes are read
 *   from the changelog: a fast-path answer is given only when the mirror has
 *   caught up with a changelog read started at most `revisionPollMs` ago.
 *
 * Answers carry `height = maxDepth - 1`, so a cache above serves them to
 * top-level requests only.
 */
import { LocalChecker, type CheckResolver, type ResolutionContext, type ResolveCheckRequest, type ResolveCheckResult } from './check.ts';
import { LatchkeyError } from './errors.ts';
import type { Userset } from './model.ts';
import type { TupleKey, TupleStore } from './store.ts';
import type { LatestModelHint } from './engine_check.ts';
import type { ParsedUser } from './tuple.ts';
import type { TypeSystem } from './typesystem.ts';
import { tupleReadable } from './validation.ts';

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

interface GNode {
  /** Plain and wildcard users (string ids). */
  users: Set<number> | undefined;
  /** Userset users (string ids). */
  usersets: Set<number> | undefined;
  /** Users of tuples with a condition: the fast path defers when it meets any. */
  conditional: Set<number> | undefined;
}

interface Plan {
  /** Relations reached by computed usersets. */
  computed: string[];
  /** `X from tupleset` parts. */
  ttu: { tupleset: string; computed: string }[];
  /** Whether the relation has a direct part. */
  direct: boolean;
}

const NONE: ReadonlySet<string> = new Set();
const REL_SLOTS = 4096;

export class GraphMirror {
  readonly #inner: TupleStore;
  readonly #pollMs: number;
  readonly #now: () => number;
  readonly #ids = new Map<string, number>();
  readonly #strings: string[] = [];
  /** Per string id: type (string), kind 0 object / 1 wildcard / 2 userset, object id of a userset, relation of a userset. */
  readonly #type: string[] = [];
  readonly #kind: number[] = [];
  readonly #usObject: number[] = [];
  readonly #usRelation: string[] = [];
  readonly #rels = new Map<string, number>();
  readonly #nodes = new Map<number, GNode>();
  readonly #plans = new WeakMap<TypeSystem, Map<string, Plan>>();
  readonly #admitted = new WeakMap<TypeSystem, Map<string, boolean>>();
  #tuples = 0;
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
    return { tuples: this.#tuples, nodes: this.#nodes.size, strings: this.#strings.length, revision: this.#revision, loadMs: Math.round(this.#loadMs), fast: this.#fast, deferred: this.#deferred };
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
    return {
      resolveCheck: async (req, ctx) => {
        if (
          req.depth === 0 &&
          req.path === undefined &&
          req.user.kind === 'object' &&
          ctx.consistency !== 'higher_consistency' &&
          !ctx.reader.hasContextualTuples &&
          ctx.ts.isMonotone(req.objectType, req.relation)
        ) {
          if (this.#now() - this.#confirmedAt > this.#pollMs) await this.#refresh();
          const answer = this.#reach(req, ctx);
          if (answer !== undefined) {
            this.#fast++;
            const r: ResolveCheckResult = { allowed: answer, cycle: false, height: Math.max(0, ctx.maxDepth - 1), hits: NONE };
            return r;
          }
          this.#deferred++;
        }
        return inner.resolveCheck(req, ctx);
      },
    };
  }

  // ---------------------------------------------------------------- index

  #intern(s: string): number {
    let id = this.#ids.get(s);
    if (id !== undefined) return id;
    id = this.#strings.length;
    this.#ids.set(s, id);
    this.#strings.push(s);
    const hash = s.indexOf('#');
    if (hash >= 0) {
      const obj = s.slice(0, hash);
      const objId = this.#intern(obj);
      this.#type[id] = this.#type[objId] as string;
      this.#kind[id] = 2;
      this.#usObject[id] = objId;
      this.#usRelation[id] = s.slice(hash + 1);
    } else {
      const colon = s.indexOf(':');
      this.#type[id] = s.slice(0, colon);
      this.#kind[id] = s.endsWith(':*') ? 1 : 0;
      this.#usObject[id] = -1;
      this.#usRelation[id] = '';
    }
    return id;
  }

  #rel(r: string): number {
    let id = this.#rels.get(r);
    if (id === undefined) {
      id = this.#rels.size;
      if (id >= REL_SLOTS) throw new LatchkeyError('resource_exhausted', 'too many distinct relation names for the graph mirror', { reason: 'mirror_relations_exhausted' });
      this.#rels.set(r, id);
    }
    return id;
  }

  #add(t: TupleKey): void {
    const key = this.#intern(t.object) * REL_SLOTS + this.#rel(t.relation);
    const u = this.#intern(t.user);
    let n = this.#nodes.get(key);
    if (n === undefined) this.#nodes.set(key, (n = { users: undefined, usersets: undefined, conditional: undefined }));
    if (t.condition !== undefined && t.condition.name !== '') {
      if (!(n.conditional ??= new Set()).has(u)) {
        n.conditional.add(u);
        this.#tuples++;
      }
      return;
    }
    const set = this.#kind[u] === 2 ? (n.usersets ??= new Set()) : (n.users ??= new Set());
    if (!set.has(u)) {
      set.add(u);
      this.#tuples++;
    }
  }

  #delete(t: TupleKey): void {
    const o = this.#ids.get(t.object);
    const u = this.#ids.get(t.user);
    const r = this.#rels.get(t.relation);
    if (o === undefined || u === undefined || r === undefined) return;
    const key = o * REL_SLOTS + r;
    const n = this.#nodes.get(key);
    if (n === undefined) return;
    for (const set of [n.users, n.usersets, n.conditional]) if (set?.delete(u) === true) this.#tuples--;
    if ((n.users?.size ?? 0) + (n.usersets?.size ?? 0) + (n.conditional?.size ?? 0) === 0) this.#nodes.delete(key);
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

  // ---------------------------------------------------------------- fast path

  #plan(ts: TypeSystem, type: string, relation: string): Plan | undefined {
    let plans = this.#plans.get(ts);
    if (plans === undefined) this.#plans.set(ts, (plans = new Map()));
    const k = `${type}#${relation}`;
    let p = plans.get(k);
    if (p !== undefined) return p;
    const rw = ts.rewrite(type, relation);
    if (rw === undefined) return undefined;
    p = { computed: [], ttu: [], direct: false };
    const stack: Userset[] = [rw];
    while (stack.length > 0) {
      const n = stack.pop()!;
      if ('this' in n) p.direct = true;
      else if ('computedUserset' in n) p.computed.push(n.computedUserset.relation ?? '');
      else if ('tupleToUserset' in n) p.ttu.push({ tupleset: n.tupleToUserset.tupleset.relation ?? '', computed: n.tupleToUserset.computedUserset.relation ?? '' });
      else if ('union' in n) stack.push(...n.union.child);
      else return undefined;
    }
    plans.set(k, p);
    return p;
  }

  /** Whether the model admits an unconditioned tuple `type#relation@<user id>` (as the tuple reader filters). */
  #admits(ts: TypeSystem, type: string, relation: string, u: number): boolean {
    let m = this.#admitted.get(ts);
    if (m === undefined) this.#admitted.set(ts, (m = new Map()));
    const kind = this.#kind[u] as number;
    const utype = this.#type[u] as string;
    const k = `${type}#${relation}@${utype}|${kind}|${this.#usRelation[u] as string}`;
    let v = m.get(k);
    if (v === undefined) {
      const user: ParsedUser = kind === 0 ? { kind: 'object', type: utype, id: 'x' } : kind === 1 ? { kind: 'wildcard', type: utype } : { kind: 'userset', type: utype, id: 'x', relation: this.#usRelation[u] as string };
      v = tupleReadable(ts, type, relation, user, undefined);
      m.set(k, v);
    }
    return v;
  }

  #reach(req: ResolveCheckRequest, ctx: ResolutionContext): boolean | undefined {
    const user = req.user as Extract<ParsedUser, { kind: 'object' }>;
    const ts = ctx.ts;
    const uid = this.#ids.get(`${user.type}:${user.id}`);
    const wid = this.#ids.get(`${user.type}:*`);
    const start = this.#ids.get(`${req.objectType}:${req.objectId}`);
    if (start === undefined) {
      // No tuple on the object: only computed relations could still matter, and they read the same object.
      return false;
    }
    const visited = new Set<number>();
    const stackObj: number[] = [start];
    const stackRel: string[] = [req.relation];
    const stackDepth: number[] = [0];
    let dispatches = 0;
    while (stackObj.length > 0) {
      const obj = stackObj.pop()!;
      const rel = stackRel.pop()!;
      const depth = stackDepth.pop()!;
      const relId = this.#rels.get(rel);
      const type = this.#type[obj] as string;
      const plan = this.#plan(ts, type, rel);
      if (plan === undefined) return undefined;
      const push = (o: number, r: string): boolean => {
        const rid = this.#rel(r);
        const key = o * REL_SLOTS + rid;
        if (visited.has(key)) return true;
        if (depth + 1 >= ctx.maxDepth || ++dispatches > ctx.maxDispatches) return false;
        visited.add(key);
        stackObj.push(o);
        stackRel.push(r);
        stackDepth.push(depth + 1);
        return true;
      };
      if (depth === 0) visited.add(obj * REL_SLOTS + this.#rel(rel));
      if (plan.direct && relId !== undefined) {
        const n = this.#nodes.get(obj * REL_SLOTS + relId);
        if (n !== undefined) {
          if (n.conditional !== undefined && n.conditional.size > 0) return undefined;
          if (n.users !== undefined) {
            if (uid !== undefined && n.users.has(uid) && this.#admits(ts, type, rel, uid)) return true;
            if (wid !== undefined && n.users.has(wid) && this.#admits(ts, type, rel, wid)) return true;
          }
          if (n.usersets !== undefined) {
            for (const us of n.usersets) {
              if (!this.#admits(ts, type, rel, us)) continue;
              if (!push(this.#usObject[us] as number, this.#usRelation[us] as string)) return undefined;
            }
          }
        }
      }
      for (const c of plan.computed) if (!push(obj, c)) return undefined;
      for (const { tupleset, computed } of plan.ttu) {
        const tsId = this.#rels.get(tupleset);
        if (tsId === undefined) continue;
        const n = this.#nodes.get(obj * REL_SLOTS + tsId);
        if (n === undefined) continue;
        if (n.conditional !== undefined && n.conditional.size > 0) return undefined;
        if (n.users === undefined) continue;
        for (const p of n.users) {
          if (this.#kind[p] !== 0 || !this.#admits(ts, type, tupleset, p)) continue;
          if (ts.rewrite(this.#type[p] as string, computed) === undefined) continue;
          if (!push(p, computed)) return undefined;
        }
      }
    }
    return false;
  }
}
