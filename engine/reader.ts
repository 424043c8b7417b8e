/**
 * The tuple reader one request uses: the store plus the request's contextual
 * tuples, seen through the current model.
 *
 * - Contextual tuples are merged into every read and win over a stored tuple
 *   with the same key; they are never written.
 * - Stored tuples the current model no longer admits (type restrictions or
 *   conditions changed since they were written) are dropped, as OpenFGA's
 *   `FilterInvalidTuples` does.
 * - Point and forward reads issued in the same tick are coalesced into one
 *   batched store call, so a SQL store answers one graph level per query.
 */
import type { ObjectRelationKey, TupleCondition, TupleKey, TupleStore, UserTupleKey } from './store.ts';
import { type ParsedUser, tryParseUser } from './tuple.ts';
import type { TypeSystem } from './typesystem.ts';
import { tupleReadable } from './validation.ts';
import { LatchkeyError } from './errors.ts';

/**
 * Thrown by a synchronous read that a source refuses to answer now (the
 * graph mirror when it may miss a committed write); the caller then reads
 * asynchronously. Escaping to a client, it is an `unavailable` error.
 */
export class SyncReadRefused extends LatchkeyError {
  constructor(message: string) {
    super('unavailable', message, { reason: 'sync_read_refused' });
  }
}

const NO_USERS: readonly string[] = [];
const NO_EMIT = (): void => undefined;

/** A tuple as the evaluator sees it. */
export interface ReadTuple {
  tuple: TupleKey;
  objectId: string;
  user: ParsedUser;
}

/**
 * Synchronous reads a store may offer (the memory store does): with them the
 * evaluator resolves a whole check without a promise per node (docs/check.md).
 * Tuples come back in no particular order.
 */
export interface SyncTupleSource {
  /** The stored tuple `type:id#relation@user`, or `undefined`. */
  readUserTupleSync(objectType: string, objectId: string, relation: string, user: string): TupleKey | undefined;
  /** Tuples on `type:id#relation` (only userset users when `kind` is `usersets`). */
  readObjectRelationSync(objectType: string, objectId: string, relation: string, kind: 'all' | 'usersets'): Iterable<TupleKey>;
  /**
   * Optional: a top-level check of a monotone relation by a plain object user,
   * answered as reachability (see `GraphIndex.reach`); throws the evaluator's
   * errors; `undefined` when it cannot answer (the evaluator then resolves it).
   */
  reachSync?(
    ts: TypeSystem,
    objectType: string,
    objectId: string,
    relation: string,
    userType: string,
    userId: string,
    limits: { maxDepth: number; maxDispatches: number; context: Record<string, unknown> | undefined },
    object?: string,
    user?: string,
  ): boolean | undefined;
  /**
   * Optional: the reverse read of ListObjects in no particular order and
   * without tuple objects. For each `users[i]`, every stored tuple on an
   * object of `objectType` with `relation` whose user is `users[i]`, as
   * `emit(i, objectId, condition)` (the tuple's condition or `undefined`).
   * A source whose synchronous reads are not always usable (the graph
   * mirror) throws {@link SyncReadRefused} when it cannot answer now, also
   * for a read with no users, which callers use as a probe; a successful
   * read lets the rest of the current synchronous run read too.
   */
  readStartingWithUsersSync?(objectType: string, relation: string, users: readonly string[], emit: (user: number, objectId: string, condition: TupleCondition | undefined) => void): void;
}

/** The store's synchronous reads, when it offers them. */
export function syncSource(store: TupleStore): SyncTupleSource | undefined {
  const s = store as Partial<SyncTupleSource>;
  return typeof s.readUserTupleSync === 'function' && typeof s.readObjectRelationSync === 'function' ? (store as unknown as SyncTupleSource) : undefined;
}

interface Pending<K, V> {
  key: K;
  resolve: (v: V) => void;
  reject: (e: unknown) => void;
}

function orKey(type: string, id: string, relation: string): string {
  return `${type}:${id}#${relation}`;
}

/** Reads tuples for one request (or one batch of checks sharing the same contextual tuples). */
export class TupleReader {
  readonly #store: TupleStore;
  readonly #ts: TypeSystem;
  readonly #ctxForward = new Map<string, Map<string, TupleKey>>();
  readonly #ctxReverse = new Map<string, Map<string, TupleKey>>();
  readonly #parsed = new Map<string, ParsedUser | null>();
  /** The store's synchronous reads, when it offers them (see {@link TupleReader.userTupleSync}). */
  readonly sync: SyncTupleSource | undefined;
  #points: Pending<UserTupleKey, TupleKey | undefined>[] = [];
  #forwards: Pending<ObjectRelationKey & { kind: 'all' | 'usersets' }, TupleKey[]>[] = [];
  #chains: Pending<ObjectRelationKey & { depth: number }, Map<string, TupleKey[]> | undefined>[] = [];
  #scheduled = false;
  /** Number of store round trips made (for tests and metrics). */
  storeCalls = 0;

  readonly #contextual: readonly TupleKey[];
  #direct: TupleReader | undefined;

  /**
   * `contextual` must already be validated against `ts`. `options.sync`
   * false: never use the store's synchronous reads (see {@link TupleReader.direct}).
   */
  constructor(store: TupleStore, ts: TypeSystem, contextual: readonly TupleKey[] = [], options: { sync?: boolean } = {}) {
    this.#store = store;
    this.#ts = ts;
    this.#contextual = contextual;
    this.sync = options.sync === false ? undefined : syncSource(store);
    for (const t of contextual) {
      const i = t.object.indexOf(':');
      const type = t.object.slice(0, i);
      const id = t.object.slice(i + 1);
      const fk = orKey(type, id, t.relation);
      let f = this.#ctxForward.get(fk);
      if (f === undefined) this.#ctxForward.set(fk, (f = new Map()));
      f.set(t.user, t);
      const rk = `${type}#${t.relation}@${t.user}`;
      let r = this.#ctxReverse.get(rk);
      if (r === undefined) this.#ctxReverse.set(rk, (r = new Map()));
      r.set(id, t);
    }
  }

  /** True when {@link TupleReader.objectRelationChain} can read from the store: it offers chains and the request carries no contextual tuples. */
  get chains(): boolean {
    return this.#store.readTuplesetChains !== undefined && this.#ctxForward.size === 0;
  }

  /** True when the request carries contextual tuples (such answers must not be cached across requests). */
  get hasContextualTuples(): boolean {
    return this.#ctxForward.size > 0;
  }

  #parseUser(user: string): ParsedUser | undefined {
    let p = this.#parsed.get(user);
    if (p === undefined) {
      p = tryParseUser(user) ?? null;
      if (this.#parsed.size > 100_000) this.#parsed.clear();
      this.#parsed.set(user, p);
    }
    return p ?? undefined;
  }

  #admit(type: string, objectId: string, relation: string, t: TupleKey): ReadTuple | undefined {
    const user = this.#parseUser(t.user);
    if (user === undefined) return undefined;
    if (!tupleReadable(this.#ts, type, relation, user, t.condition?.name)) return undefined;
    return { tuple: t, objectId, user };
  }

  #schedule(): void {
    if (this.#scheduled) return;
    this.#scheduled = true;
    queueMicrotask(() => {
      this.#scheduled = false;
      this.#flush();
    });
  }

  #flush(): void {
    const points = this.#points;
    this.#points = [];
    if (points.length > 0) {
      this.storeCalls++;
      this.#store.readUserTuples(points.map((p) => p.key)).then(
        (rows) => points.forEach((p, i) => p.resolve(rows[i])),
        (err: unknown) => points.forEach((p) => p.reject(err)),
      );
    }
    const chains = this.#chains;
    this.#chains = [];
    if (chains.length > 0) {
      this.storeCalls++;
      this.#store.readTuplesetChains!(chains.map((c) => ({ objectType: c.key.objectType, objectId: c.key.objectId, relation: c.key.relation })), Math.max(...chains.map((c) => c.key.depth))).then(
        (found) => chains.forEach((c) => c.resolve(found)),
        (err: unknown) => chains.forEach((c) => c.reject(err)),
      );
    }
    const forwards = this.#forwards;
    this.#forwards = [];
    for (const kind of ['all', 'usersets'] as const) {
      const group = forwards.filter((f) => f.key.kind === kind);
      if (group.length === 0) continue;
      this.storeCalls++;
      this.#store.readObjectRelations(group.map((g) => ({ objectType: g.key.objectType, objectId: g.key.objectId, relation: g.key.relation })), kind).then(
        (rows) => group.forEach((g, i) => g.resolve(rows[i] ?? [])),
        (err: unknown) => group.forEach((g) => g.reject(err)),
      );
    }
  }

  /** The tuple `type:id#relation@user`, or `undefined` (also when the model no longer admits it). */
  async userTuple(type: string, id: string, relation: string, user: string): Promise<ReadTuple | undefined> {
    const ctx = this.#ctxForward.get(orKey(type, id, relation))?.get(user);
    if (ctx !== undefined) return this.#admit(type, id, relation, ctx);
    const stored = await new Promise<TupleKey | undefined>((resolve, reject) => {
      this.#points.push({ key: { objectType: type, objectId: id, relation, user }, resolve, reject });
      this.#schedule();
    });
    return stored === undefined ? undefined : this.#admit(type, id, relation, stored);
  }

  /** Tuples on `type:id#relation` (only userset users when `kind` is `usersets`), admitted by the model, ordered by user. */
  async objectRelation(type: string, id: string, relation: string, kind: 'all' | 'usersets'): Promise<ReadTuple[]> {
    const stored = await new Promise<TupleKey[]>((resolve, reject) => {
      this.#forwards.push({ key: { objectType: type, objectId: id, relation, kind }, resolve, reject });
      this.#schedule();
    });
    const ctx = this.#ctxForward.get(orKey(type, id, relation));
    const out: ReadTuple[] = [];
    if (ctx !== undefined) {
      for (const t of ctx.values()) {
        if (kind === 'usersets' && !t.user.includes('#')) continue;
        const r = this.#admit(type, id, relation, t);
        if (r !== undefined) out.push(r);
      }
    }
    for (const t of stored) {
      if (ctx?.has(t.user) === true) continue;
      const r = this.#admit(type, id, relation, t);
      if (r !== undefined) out.push(r);
    }
    if (ctx !== undefined) out.sort((a, b) => (a.tuple.user < b.tuple.user ? -1 : a.tuple.user > b.tuple.user ? 1 : 0));
    return out;
  }

  /**
   * Tuples on `type:id#relation` and on every object relation reached from it
   * through plain-object users and the same relation, at most `maxDepth` hops
   * ({@link TupleStore.readTuplesetChains}), each admitted by the model, keyed
   * `type:id#relation`. Only where {@link TupleReader.chains} (the store
   * does not see contextual tuples); `undefined` when the store declined this
   * chain: the caller then reads level by level.
   */
  async objectRelationChain(type: string, id: string, relation: string, maxDepth: number): Promise<Map<string, ReadTuple[]> | undefined> {
    if (!this.chains) return undefined;
    const stored = await new Promise<Map<string, TupleKey[]> | undefined>((resolve, reject) => {
      this.#chains.push({ key: { objectType: type, objectId: id, relation, depth: maxDepth }, resolve, reject });
      this.#schedule();
    });
    if (stored === undefined) return undefined;
    const out = new Map<string, ReadTuple[]>();
    for (const [k, tuples] of stored) {
      const [t, i, r] = k.split('\u0000') as [string, string, string];
      const admitted: ReadTuple[] = [];
      for (const tuple of tuples) {
        const a = this.#admit(t, i, r, tuple);
        if (a !== undefined) admitted.push(a);
      }
      out.set(orKey(t, i, r), admitted);
    }
    return out;
  }

  /** {@link TupleReader.userTuple} without a promise; only when {@link TupleReader.sync} is set. */
  userTupleSync(type: string, id: string, relation: string, user: string): ReadTuple | undefined {
    if (this.#ctxForward.size > 0) {
      const ctx = this.#ctxForward.get(orKey(type, id, relation))?.get(user);
      if (ctx !== undefined) return this.#admit(type, id, relation, ctx);
    }
    const stored = this.sync!.readUserTupleSync(type, id, relation, user);
    return stored === undefined ? undefined : this.#admit(type, id, relation, stored);
  }

  /** {@link TupleReader.objectRelation} without a promise, in no particular order; only when {@link TupleReader.sync} is set. */
  objectRelationSync(type: string, id: string, relation: string, kind: 'all' | 'usersets'): ReadTuple[] {
    const out: ReadTuple[] = [];
    const ctx = this.#ctxForward.size > 0 ? this.#ctxForward.get(orKey(type, id, relation)) : undefined;
    if (ctx !== undefined) {
      for (const t of ctx.values()) {
        if (kind === 'usersets' && !t.user.includes('#')) continue;
        const r = this.#admit(type, id, relation, t);
        if (r !== undefined) out.push(r);
      }
    }
    for (const t of this.sync!.readObjectRelationSync(type, id, relation, kind)) {
      if (ctx?.has(t.user) === true) continue;
      const r = this.#admit(type, id, relation, t);
      if (r !== undefined) out.push(r);
    }
    return out;
  }

  /**
   * The same reader without synchronous reads: every read goes to the store's
   * asynchronous methods (a full-consistency request behind the graph mirror,
   * whose synchronous reads answer from memory).
   */
  direct(): TupleReader {
    if (this.sync === undefined) return this;
    return (this.#direct ??= new TupleReader(this.#store, this.#ts, this.#contextual, { sync: false }));
  }

  /**
   * True when {@link TupleReader.startingWithUsersSync} can be used now: the
   * store offers a synchronous reverse read and does not refuse it (an empty
   * probe read; see {@link SyncReadRefused}).
   */
  get reverseSync(): boolean {
    const source = this.sync;
    if (source?.readStartingWithUsersSync === undefined) return false;
    try {
      source.readStartingWithUsersSync('', '', NO_USERS, NO_EMIT);
      return true;
    } catch (err) {
      if (err instanceof SyncReadRefused) return false;
      throw err;
    }
  }

  /**
   * {@link TupleReader.startingWithUsers} without a promise and without tuple
   * objects, in no particular order: `visit(i, objectId, condition)` for each
   * tuple on an object of `objectType` with `relation` whose user is
   * `users[i]`, contextual tuples included (winning over a stored tuple with
   * the same key), only those the model admits. Only when
   * {@link TupleReader.reverseSync}.
   */
  startingWithUsersSync(objectType: string, relation: string, users: readonly string[], visit: (user: number, objectId: string, condition: TupleCondition | undefined) => void): void {
    this.storeCalls++;
    const ts = this.#ts;
    const n = users.length;
    // Whether the model admits a tuple depends only on its user and condition name here: decided once per pair.
    const parsed: (ParsedUser | undefined)[] = new Array<ParsedUser | undefined>(n);
    const plain: (boolean | undefined)[] = new Array<boolean | undefined>(n);
    let named: Map<string, boolean>[] | undefined;
    // For a plain object user without a condition, only the user's type matters.
    const byType = new Map<string, boolean>();
    const admits = (i: number, condition: TupleCondition | undefined): boolean => {
      if (condition === undefined) {
        let v = plain[i];
        if (v === undefined) {
          const u = (parsed[i] ??= this.#parseUser(users[i]!));
          if (u === undefined) v = false;
          else if (u.kind !== 'object') v = tupleReadable(ts, objectType, relation, u, undefined);
          else {
            v = byType.get(u.type);
            if (v === undefined) byType.set(u.type, (v = tupleReadable(ts, objectType, relation, u, undefined)));
          }
          plain[i] = v;
        }
        return v;
      }
      const m = ((named ??= [])[i] ??= new Map());
      let v = m.get(condition.name);
      if (v === undefined) {
        const u = (parsed[i] ??= this.#parseUser(users[i]!));
        v = u !== undefined && tupleReadable(ts, objectType, relation, u, condition.name);
        m.set(condition.name, v);
      }
      return v;
    };
    let ctx: (Map<string, TupleKey> | undefined)[] | undefined;
    if (this.#ctxReverse.size > 0) {
      ctx = new Array<Map<string, TupleKey> | undefined>(n);
      for (let i = 0; i < n; i++) {
        const m = this.#ctxReverse.get(`${objectType}#${relation}@${users[i]!}`);
        if (m === undefined) continue;
        ctx[i] = m;
        for (const [id, t] of m) if (admits(i, t.condition)) visit(i, id, t.condition);
      }
    }
    this.sync!.readStartingWithUsersSync!(objectType, relation, users, (i, id, condition) => {
      if (ctx !== undefined && ctx[i]?.has(id) === true) return;
      if (admits(i, condition)) visit(i, id, condition);
    });
  }

  /** Reverse read: tuples on objects of `objectType` with `relation` whose user is one of `users`. */
  async startingWithUsers(objectType: string, relation: string, users: readonly string[]): Promise<ReadTuple[]> {
    this.storeCalls++;
    const stored = await this.#store.readStartingWithUsers({ objectType, relation, users });
    const out: ReadTuple[] = [];
    let seen: Set<string> | undefined;
    if (this.#ctxReverse.size > 0) {
      seen = new Set<string>();
      for (const user of users) {
        const m = this.#ctxReverse.get(`${objectType}#${relation}@${user}`);
        if (m === undefined) continue;
        for (const [id, t] of m) {
          seen.add(`${id}@${user}`);
          const r = this.#admit(objectType, id, relation, t);
          if (r !== undefined) out.push(r);
        }
      }
    }
    // Whether the model admits a tuple depends only on its user and condition
    // name here (type and relation are fixed): decided once per pair.
    const admitted = new Map<string, ParsedUser | null>();
    for (const t of stored) {
      const id = t.object.slice(t.object.indexOf(':') + 1);
      if (seen !== undefined && seen.has(`${id}@${t.user}`)) continue;
      const key = t.condition === undefined ? t.user : `${t.user}\u0000${t.condition.name}`;
      let user = admitted.get(key);
      if (user === undefined) {
        user = this.#admit(objectType, id, relation, t)?.user ?? null;
        admitted.set(key, user);
      }
      if (user !== null) out.push({ tuple: t, objectId: id, user });
    }
    return out;
  }
}
