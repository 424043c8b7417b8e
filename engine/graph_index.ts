/**
 * A compact in-memory tuple graph: the memory store's index (engine/memory_store.ts).
 *
 * - **Interned.** Every object and user string is stored once and named by a
 *   number; a userset user `type:id#rel` also records its object's number and
 *   its relation's number. Relation names have their own small numbering.
 * - **Nodes.** `object#relation` is the number `object * REL_SLOTS + relation`;
 *   a node keeps its plain and wildcard users and its userset users apart
 *   (the split index of performance-anchors §2.3), each as user number →
 *   revision of the write that made the tuple, and the conditions of the
 *   tuples that have one.
 * - **Reverse.** Per relation number: user number → the objects holding that
 *   tuple, and apart the conditions of those tuples that have one, for
 *   ListObjects' reverse reads ({@link GraphIndex.reverseRead}). Keyed by
 *   relation first so every map key stays a small integer. A bulk load
 *   (`reverse: 'deferred'`, then {@link GraphIndex.buildReverse}) builds it
 *   once at the end as slices of one `Int32Array` (outside the JS heap, no
 *   object per tuple); a user's slice becomes a `Set` when a later write
 *   changes it.
 * - **Reach.** {@link GraphIndex.reach} answers a top-level check of a
 *   monotone relation (unions of direct grants, usersets, computed relations
 *   and tuple-to-userset only) by a plain object user as reachability: a
 *   synchronous walk with a visited set over numbers, no strings built.
 *
 * Interned strings are kept when their last tuple is deleted (a store with
 * heavy churn of distinct ids grows by one string per id ever seen).
 */
import { LatchkeyError } from './errors.ts';
import { budgetExceeded, depthExceeded } from './check.ts';
import type { Userset } from './model.ts';
import type { TupleCondition, TupleKey } from './store.ts';
import type { ParsedUser } from './tuple.ts';
import type { TypeSystem } from './typesystem.ts';
import { tupleReadable } from './validation.ts';

/** Relation numbers per object (node key = object * REL_SLOTS + relation). */
export const REL_SLOTS = 4096;

/** Kinds of an interned string used as a user. */
const OBJECT = 0;
const WILDCARD = 1;
const USERSET = 2;

export interface GraphNode {
  /** Plain and wildcard users → revision. */
  users: Map<number, number> | undefined;
  /** Userset users → revision. */
  usersets: Map<number, number> | undefined;
  /** Conditions of the tuples on this node that have one, by user. */
  conds: Map<number, TupleCondition> | undefined;
}

interface ModelState {
  plans: Map<string, Map<number, Plan | null>>;
  admitted: Map<string, Map<number, (boolean | undefined)[]>>;
}

interface Plan {
  direct: boolean;
  /** The direct part admits userset users. */
  usersets: boolean;
  computed: number[];
  /** `computed from tupleset`, as relation numbers, and the computed relation's name. */
  ttu: { tupleset: number; computed: number; name: string }[];
}

/** What a walk needs from the resolution context. */
export interface ReachLimits {
  maxDepth: number;
  maxDispatches: number;
  context: Record<string, unknown> | undefined;
}

export class GraphIndex {
  readonly #ids = new Map<string, number>();
  readonly #strings: string[] = [];
  /** Per string number: type name, kind, object number of a userset (else -1), relation number of a userset (else -1). */
  readonly #type: string[] = [];
  readonly #kind: number[] = [];
  readonly #usObject: number[] = [];
  readonly #typeNames = new Map<string, string>();
  readonly #usRelation: number[] = [];
  readonly #rels = new Map<string, number>();
  readonly #relNames: string[] = [];
  readonly nodes = new Map<number, GraphNode>();
  /** Per relation number: user → objects (undefined without a reverse index); a slice of a bulk build until a write changes it. */
  readonly #reverse: (Map<number, Set<number> | Int32Array> | undefined)[] | undefined;
  /** True from a `reverse: 'deferred'` construction until {@link GraphIndex.buildReverse}. */
  #reverseDeferred = false;
  /** Per relation number: user → object → condition, for the reverse tuples that have one. */
  readonly #reverseConds: (Map<number, Map<number, TupleCondition>> | undefined)[] = [];
  /** Per string number: the id part of an object `type:id`, computed on first use by a reverse read. */
  readonly #localIds: (string | undefined)[] = [];
  /** Per model version: plans by type and relation number, and type-restriction answers by type, relation number and user form. */
  readonly #perModel = new WeakMap<TypeSystem, ModelState>();
  #lastTs: TypeSystem | undefined;
  #lastState: ModelState | undefined;
  /** Per string number: its user form's number (see #shapeOf), computed on first use. */
  readonly #shape: number[] = [];
  readonly #shapes = new Map<string, number>();
  // Scratch state of a walk (reach is synchronous; a nested walk gets its own).
  #walking = false;
  /** Interned wildcard `type:*` by type. */
  readonly #wildcards = new Map<string, number>();
  #visited = new Map<number, number>();
  #stack: number[] = [];
  #dispatches = 0;
  #error: unknown = undefined;
  /** Number of tuples. */
  size = 0;

  /** Number of interned strings. */
  get strings(): number {
    return this.#strings.length;
  }

  /**
   * `reverse`: keep the reverse index (default true); `'deferred'` for a bulk
   * load: adds skip it until {@link GraphIndex.buildReverse} builds it from the
   * nodes at once, compactly.
   */
  constructor(options: { reverse?: boolean | 'deferred' } = {}) {
    this.#reverse = options.reverse === false ? undefined : [];
    this.#reverseDeferred = options.reverse === 'deferred';
  }

  // ---------------------------------------------------------------- strings

  /** The number of `s`, interning it. */
  intern(s: string): number {
    let id = this.#ids.get(s);
    if (id !== undefined) return id;
    id = this.#strings.length;
    this.#ids.set(s, id);
    this.#strings.push(s);
    // Kept as long as #strings (a lazy write far past the end would turn the array into a dictionary).
    this.#localIds.push(undefined);
    const hash = s.indexOf('#');
    if (hash >= 0) {
      const obj = this.intern(s.slice(0, hash));
      this.#type[id] = this.#type[obj]!;
      this.#kind[id] = USERSET;
      this.#usObject[id] = obj;
      this.#usRelation[id] = this.rel(s.slice(hash + 1));
    } else {
      // One string per type name, shared by all its objects (compared per row by reverse reads).
      const type = s.slice(0, s.indexOf(':'));
      let shared = this.#typeNames.get(type);
      if (shared === undefined) this.#typeNames.set(type, (shared = type));
      this.#type[id] = shared;
      this.#kind[id] = s.endsWith(':*') ? WILDCARD : OBJECT;
      if (this.#kind[id] === WILDCARD) this.#wildcards.set(this.#type[id]!, id);
      this.#usObject[id] = -1;
      this.#usRelation[id] = -1;
    }
    return id;
  }

  /** The number of `s` if interned. */
  id(s: string): number | undefined {
    return this.#ids.get(s);
  }

  str(id: number): string {
    return this.#strings[id]!;
  }

  typeOf(id: number): string {
    return this.#type[id]!;
  }

  /** The number of relation `r`, numbering it. */
  rel(r: string): number {
    let id = this.#rels.get(r);
    if (id === undefined) {
      id = this.#relNames.length;
      if (id >= REL_SLOTS) throw new LatchkeyError('resource_exhausted', 'too many distinct relation names for the in-memory index', { reason: 'index_relations_exhausted' });
      this.#rels.set(r, id);
      this.#relNames.push(r);
    }
    return id;
  }

  relId(r: string): number | undefined {
    return this.#rels.get(r);
  }

  relName(id: number): string {
    return this.#relNames[id]!;
  }

  /** The node `object#relation`, or `undefined`. */
  node(object: string, relation: string): GraphNode | undefined {
    const o = this.#ids.get(object);
    const r = this.#rels.get(relation);
    return o === undefined || r === undefined ? undefined : this.nodes.get(o * REL_SLOTS + r);
  }

  // ---------------------------------------------------------------- tuples

  /** The revision of tuple `object#relation@user`, or `undefined` when absent. */
  revisionOf(object: string, relation: string, user: string): number | undefined {
    const n = this.node(object, relation);
    const u = this.#ids.get(user);
    if (n === undefined || u === undefined) return undefined;
    return (this.#kind[u] === USERSET ? n.usersets : n.users)?.get(u);
  }

  /** Adds a tuple (its condition and context are kept as given: copy them first). Returns false when it was there. */
  add(t: TupleKey, revision: number): boolean {
    const o = this.intern(t.object);
    const r = this.rel(t.relation);
    const u = this.intern(t.user);
    const key = o * REL_SLOTS + r;
    let n = this.nodes.get(key);
    if (n === undefined) this.nodes.set(key, (n = { users: undefined, usersets: undefined, conds: undefined }));
    const m = this.#kind[u] === USERSET ? (n.usersets ??= new Map()) : (n.users ??= new Map());
    if (m.has(u)) return false;
    m.set(u, revision);
    if (t.condition !== undefined) (n.conds ??= new Map()).set(u, t.condition);
    if (this.#reverse !== undefined && !this.#reverseDeferred) {
      this.#reverseObjects(r, u, true)!.add(o);
      if (t.condition !== undefined) this.#addReverseCond(r, u, o, t.condition);
    }
    this.size++;
    return true;
  }

  /** Removes a tuple; false when it was not there. */
  delete(t: TupleKey): boolean {
    const o = this.#ids.get(t.object);
    const r = this.#rels.get(t.relation);
    const u = this.#ids.get(t.user);
    if (o === undefined || r === undefined || u === undefined) return false;
    const key = o * REL_SLOTS + r;
    const n = this.nodes.get(key);
    if (n === undefined) return false;
    const m = this.#kind[u] === USERSET ? n.usersets : n.users;
    if (m === undefined || !m.delete(u)) return false;
    if (m.size === 0) {
      if (m === n.users) n.users = undefined;
      else n.usersets = undefined;
    }
    if (n.conds !== undefined) {
      n.conds.delete(u);
      if (n.conds.size === 0) n.conds = undefined;
    }
    if (n.users === undefined && n.usersets === undefined) this.nodes.delete(key);
    if (this.#reverse !== undefined && !this.#reverseDeferred) {
      const objs = this.#reverseObjects(r, u, false);
      if (objs !== undefined) {
        objs.delete(o);
        if (objs.size === 0) this.#reverse[r]!.delete(u);
      }
      const conds = this.#reverseConds[r];
      const m = conds?.get(u);
      if (m !== undefined) {
        m.delete(o);
        if (m.size === 0) conds!.delete(u);
      }
    }
    this.size--;
    return true;
  }

  /** The tuple `object#relation@user` of node `n`, materialised. */
  tuple(object: number, relation: number, n: GraphNode, user: number, revision: number): TupleKey & { revision: number } {
    const out: TupleKey & { revision: number } = { object: this.#strings[object]!, relation: this.#relNames[relation]!, user: this.#strings[user]!, revision };
    const c = n.conds?.get(user);
    if (c !== undefined) out.condition = c;
    return out;
  }

  /** The reverse entry of user `u` for relation `r` as a `Set` (a bulk-built slice is copied into one); with `create`, made when missing. */
  #reverseObjects(r: number, u: number, create: boolean): Set<number> | undefined {
    const byUser = create ? (this.#reverse![r] ??= new Map()) : this.#reverse![r];
    const objs = byUser?.get(u);
    if (objs instanceof Set) return objs;
    if (objs === undefined && !create) return undefined;
    const set = new Set<number>(objs);
    byUser!.set(u, set);
    return set;
  }

  #addReverseCond(r: number, u: number, o: number, c: TupleCondition): void {
    const conds = (this.#reverseConds[r] ??= new Map());
    let m = conds.get(u);
    if (m === undefined) conds.set(u, (m = new Map()));
    m.set(o, c);
  }

  /**
   * Builds the reverse index of an index made with `reverse: 'deferred'`
   * from its nodes, then keeps it on every write. All objects go into one
   * `Int32Array`, grouped by relation and user (a counting sort); each user's
   * entry is a slice of it. The peak is that array, its twin and a few
   * numbers per (relation, user).
   */
  buildReverse(): void {
    if (!this.#reverseDeferred) return;
    const reverse = this.#reverse!;
    // Pass 1: a group number per (relation, user), and the size of each group.
    const groups = new Map<number, number>();
    let counts = new Int32Array(1024);
    let total = 0;
    const groupOf = (r: number, u: number): number => {
      const k = u * REL_SLOTS + r;
      let g = groups.get(k);
      if (g === undefined) {
        g = groups.size;
        groups.set(k, g);
        if (g === counts.length) {
          const grown = new Int32Array(g * 2);
          grown.set(counts);
          counts = grown;
        }
      }
      return g;
    };
    for (const [key, n] of this.nodes) {
      const r = key % REL_SLOTS;
      if (n.users !== undefined) for (const u of n.users.keys()) counts[groupOf(r, u)]!++;
      if (n.usersets !== undefined) for (const u of n.usersets.keys()) counts[groupOf(r, u)]!++;
    }
    // Pass 2: group starts, then each object at its group's next place.
    const next = new Int32Array(groups.size);
    for (let g = 0; g < groups.size; g++) {
      next[g] = total;
      total += counts[g]!;
    }
    const objects = new Int32Array(total);
    for (const [key, n] of this.nodes) {
      const r = key % REL_SLOTS;
      const o = (key - r) / REL_SLOTS;
      if (n.users !== undefined) for (const u of n.users.keys()) objects[next[groups.get(u * REL_SLOTS + r)!]!++] = o;
      if (n.usersets !== undefined) for (const u of n.usersets.keys()) objects[next[groups.get(u * REL_SLOTS + r)!]!++] = o;
      if (n.conds !== undefined) for (const [u, c] of n.conds) this.#addReverseCond(r, u, o, c);
    }
    for (const [k, g] of groups) {
      const r = k % REL_SLOTS;
      const u = (k - r) / REL_SLOTS;
      const end = next[g]!;
      (reverse[r] ??= new Map()).set(u, objects.subarray(end - counts[g]!, end));
    }
    this.#reverseDeferred = false;
  }

  /** Objects holding `relation` for `user` (reverse index), as numbers. */
  objectsOf(user: string, relation: string): ReadonlySet<number> | undefined {
    const u = this.#ids.get(user);
    const r = this.#rels.get(relation);
    if (u === undefined || r === undefined || this.#reverse === undefined) return undefined;
    this.#checkReverse();
    return this.#reverseObjects(r, u, false);
  }

  #checkReverse(): void {
    if (this.#reverseDeferred) throw new LatchkeyError('internal', 'the reverse index is not built yet', { reason: 'index_reverse_deferred' });
  }

  /**
   * Reverse read without tuple objects: for each `users[i]`, every object of
   * `objectType` holding `relation` for it, as `emit(i, objectId, condition)`
   * (the tuple's condition, or `undefined`). In no particular order; a user
   * listed twice is read twice. Cost: the rows found plus one lookup per user.
   */
  reverseRead(objectType: string, relation: string, users: readonly string[], emit: (user: number, objectId: string, condition: TupleCondition | undefined) => void): void {
    const r = this.#rels.get(relation);
    if (r === undefined || this.#reverse === undefined) return;
    this.#checkReverse();
    const byUser = this.#reverse[r];
    // The shared type-name string: the per-row comparison then meets the same string.
    const type = this.#typeNames.get(objectType);
    if (byUser === undefined || type === undefined) return;
    const conds = this.#reverseConds[r];
    const types = this.#type;
    const local = this.#localIds;
    for (let i = 0; i < users.length; i++) {
      const u = this.#ids.get(users[i]!);
      if (u === undefined) continue;
      const objs = byUser.get(u);
      if (objs === undefined) continue;
      const c = conds?.get(u);
      for (const o of objs) {
        if (types[o] !== type) continue;
        let id = local[o];
        if (id === undefined) {
          const s = this.#strings[o]!;
          id = local[o] = s.slice(s.indexOf(':') + 1);
        }
        emit(i, id, c?.get(o));
      }
    }
  }

  // ---------------------------------------------------------------- reach

  #state(ts: TypeSystem): ModelState {
    if (ts === this.#lastTs) return this.#lastState!;
    let st = this.#perModel.get(ts);
    if (st === undefined) this.#perModel.set(ts, (st = { plans: new Map(), admitted: new Map() }));
    this.#lastTs = ts;
    this.#lastState = st;
    return st;
  }

  #plan(ts: TypeSystem, type: string, relation: number): Plan | null {
    const byType = this.#state(ts).plans;
    let byRel = byType.get(type);
    if (byRel === undefined) byType.set(type, (byRel = new Map()));
    let p = byRel.get(relation);
    if (p !== undefined) return p;
    p = this.#makePlan(ts, type, this.#relNames[relation]!);
    byRel.set(relation, p);
    return p;
  }

  #makePlan(ts: TypeSystem, type: string, relation: string): Plan | null {
    const rw = ts.rewrite(type, relation);
    if (rw === undefined) return null;
    const p: Plan = { direct: false, usersets: ts.restrictions(type, relation).some((r) => r.relation !== undefined), computed: [], ttu: [] };
    const stack: Userset[] = [rw];
    while (stack.length > 0) {
      const n = stack.pop()!;
      if ('this' in n) p.direct = true;
      else if ('computedUserset' in n) p.computed.push(this.rel(n.computedUserset.relation ?? ''));
      else if ('tupleToUserset' in n) {
        const name = n.tupleToUserset.computedUserset.relation ?? '';
        p.ttu.push({ tupleset: this.rel(n.tupleToUserset.tupleset.relation ?? ''), computed: this.rel(name), name });
      } else if ('union' in n) stack.push(...n.union.child);
      else return null;
    }
    return p;
  }

  /** Whether the model admits tuple `type#relation@<user u>` with this condition (as the tuple reader filters). */
  #admits(ts: TypeSystem, type: string, relation: number, u: number, condition: string | undefined): boolean {
    if (condition !== undefined) return this.#admitsSlow(ts, type, relation, u, condition);
    // Unconditioned tuples, the common case: by type, relation number and user shape, no key string built.
    const byType = this.#state(ts).admitted;
    let byRel = byType.get(type);
    if (byRel === undefined) byType.set(type, (byRel = new Map()));
    let byShape = byRel.get(relation);
    if (byShape === undefined) byRel.set(relation, (byShape = []));
    const shape = this.#shapeOf(u);
    let v = byShape[shape];
    if (v === undefined) v = byShape[shape] = this.#admitsSlow(ts, type, relation, u, undefined);
    return v;
  }

  #admitsSlow(ts: TypeSystem, type: string, relation: number, u: number, condition: string | undefined): boolean {
    const kind = this.#kind[u]!;
    const utype = this.#type[u]!;
    const usRel = kind === USERSET ? this.#relNames[this.#usRelation[u]!]! : '';
    const user: ParsedUser = kind === OBJECT ? { kind: 'object', type: utype, id: 'x' } : kind === WILDCARD ? { kind: 'wildcard', type: utype } : { kind: 'userset', type: utype, id: 'x', relation: usRel };
    return tupleReadable(ts, type, this.#relNames[relation]!, user, condition);
  }

  /** A small number per user form (type, kind, userset relation): what type restrictions look at. */
  #shapeOf(u: number): number {
    let s = this.#shape[u];
    if (s === undefined) {
      const k = `${this.#type[u]!}|${this.#kind[u]!}|${this.#usRelation[u]!}`;
      s = this.#shapes.get(k);
      if (s === undefined) this.#shapes.set(k, (s = this.#shapes.size));
      this.#shape[u] = s;
    }
    return s;
  }

  #conditionHolds(ts: TypeSystem, c: TupleCondition | undefined, context: Record<string, unknown> | undefined): boolean {
    if (c === undefined || c.name === '') return true;
    const compiled = ts.condition(c.name);
    if (compiled === undefined) return false;
    try {
      return compiled.evaluate(c.context, context);
    } catch (err) {
      this.#error ??= err;
      return false;
    }
  }

  /** One dispatch of the evaluator: the depth limit first, then the visited set, then the budget. */
  #push(o: number, r: number, depth: number, limits: ReachLimits): void {
    if (depth >= limits.maxDepth) {
      this.#error ??= depthExceeded();
      return;
    }
    const key = o * REL_SLOTS + r;
    const seen = this.#visited.get(key);
    if (seen !== undefined && seen <= depth) return;
    this.#visited.set(key, depth);
    if (++this.#dispatches > limits.maxDispatches) {
      this.#error ??= budgetExceeded();
      return;
    }
    this.#stack.push(o, r, depth);
  }

  /**
   * Does `user` (a plain object `type:id`) hold `relation` on `type:id`,
   * with `relation` monotone? Answers as the evaluator does in its monotone
   * mode: true when some chain of admitted tuples (conditions met) within the
   * depth limit leads to the user; otherwise the first error met on the way
   * (depth limit, dispatch budget, a condition that cannot be evaluated) is
   * thrown; otherwise false. `undefined` when the rewrite is not a plain
   * union (the caller resolves it another way).
   */
  reach(ts: TypeSystem, objectType: string, objectId: string, relation: string, userType: string, userId: string, limits: ReachLimits, object?: string): boolean | undefined {
    // An object no tuple names is walked as number -1: its nodes are empty, its computed relations still count.
    const start = this.#ids.get(object ?? `${objectType}:${objectId}`) ?? -1;
    const startRel = this.#rels.get(relation) ?? this.rel(relation);
    const uid = this.#ids.get(`${userType}:${userId}`);
    const wid = this.#wildcards.get(userType);
    const plan0 = this.#plan(ts, objectType, startRel);
    if (plan0 === null) return undefined;
    // A direct grant on the object itself answers before anything is allocated.
    if (plan0.direct && uid !== undefined) {
      const n = this.nodes.get(start * REL_SLOTS + startRel);
      if (n?.users?.has(uid) === true && n.conds === undefined && this.#admits(ts, objectType, startRel, uid, undefined)) return true;
    }
    if (this.#walking) return new GraphIndex({ reverse: false }).#walkOf(this, ts, objectType, start, startRel, uid, wid, limits);
    return this.#walkOf(this, ts, objectType, start, startRel, uid, wid, limits);
  }

  /** The walk, with scratch state held on `this` (reused between walks; `index` holds the tuples). */
  #walkOf(index: GraphIndex, ts: TypeSystem, objectType: string, start: number, startRel: number, uid: number | undefined, wid: number | undefined, limits: ReachLimits): boolean | undefined {
    this.#walking = true;
    this.#error = undefined;
    this.#dispatches = 1;
    this.#visited.clear();
    const stack = this.#stack;
    stack.length = 0;
    try {
      if (this.#dispatches > limits.maxDispatches) throw budgetExceeded();
      this.#visited.set(start * REL_SLOTS + startRel, 0);
      stack.push(start, startRel, 0);
      const nodes = index.nodes;
      while (stack.length > 0) {
        const depth = stack.pop()!;
        const rel = stack.pop()!;
        const obj = stack.pop()!;
        const type = obj === -1 ? objectType : index.#type[obj]!;
        const plan = index.#plan(ts, type, rel);
        if (plan === null) return undefined;
        if (plan.direct) {
          const n = nodes.get(obj * REL_SLOTS + rel);
          if (n !== undefined) {
            const conds = n.conds;
            if (n.users !== undefined) {
              if (uid !== undefined && n.users.has(uid) && index.#admits(ts, type, rel, uid, conds?.get(uid)?.name) && this.#conditionHolds(ts, conds?.get(uid), limits.context)) return true;
              if (wid !== undefined && n.users.has(wid) && index.#admits(ts, type, rel, wid, conds?.get(wid)?.name) && this.#conditionHolds(ts, conds?.get(wid), limits.context)) return true;
            }
            if (n.usersets !== undefined && plan.usersets) {
              for (const us of n.usersets.keys()) {
                const c = conds?.get(us);
                if (!index.#admits(ts, type, rel, us, c?.name) || !this.#conditionHolds(ts, c, limits.context)) continue;
                this.#push(index.#usObject[us]!, index.#usRelation[us]!, depth + 1, limits);
              }
            }
          }
        }
        for (const c of plan.computed) this.#push(obj, c, depth + 1, limits);
        for (const t of plan.ttu) {
          const n = nodes.get(obj * REL_SLOTS + t.tupleset);
          if (n === undefined || n.users === undefined) continue;
          const conds = n.conds;
          for (const p of n.users.keys()) {
            if (index.#kind[p] !== OBJECT) continue;
            const c = conds?.get(p);
            if (!index.#admits(ts, type, t.tupleset, p, c?.name)) continue;
            if (ts.rewrite(index.#type[p]!, t.name) === undefined) continue;
            if (!this.#conditionHolds(ts, c, limits.context)) continue;
            this.#push(p, t.computed, depth + 1, limits);
          }
        }
      }
      if (this.#error !== undefined) throw this.#error;
      return false;
    } finally {
      this.#walking = false;
      this.#error = undefined;
      if (this.#visited.size > 4096) this.#visited = new Map();
      if (stack.length > 4096) this.#stack = [];
    }
  }
}
