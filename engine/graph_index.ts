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
 * - **Reverse.** `user * REL_SLOTS + relation` → the objects holding that
 *   tuple, for ListObjects' reverse reads.
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
  readonly #usRelation: number[] = [];
  readonly #rels = new Map<string, number>();
  readonly #relNames: string[] = [];
  readonly nodes = new Map<number, GraphNode>();
  readonly #reverse: Map<number, Set<number>> | undefined;
  readonly #plans = new WeakMap<TypeSystem, Map<string, Map<number, Plan | null>>>();
  readonly #admitted = new WeakMap<TypeSystem, Map<string, boolean>>();
  /** Number of tuples. */
  size = 0;

  constructor(options: { reverse?: boolean } = {}) {
    this.#reverse = options.reverse === false ? undefined : new Map();
  }

  // ---------------------------------------------------------------- strings

  /** The number of `s`, interning it. */
  intern(s: string): number {
    let id = this.#ids.get(s);
    if (id !== undefined) return id;
    id = this.#strings.length;
    this.#ids.set(s, id);
    this.#strings.push(s);
    const hash = s.indexOf('#');
    if (hash >= 0) {
      const obj = this.intern(s.slice(0, hash));
      this.#type[id] = this.#type[obj]!;
      this.#kind[id] = USERSET;
      this.#usObject[id] = obj;
      this.#usRelation[id] = this.rel(s.slice(hash + 1));
    } else {
      this.#type[id] = s.slice(0, s.indexOf(':'));
      this.#kind[id] = s.endsWith(':*') ? WILDCARD : OBJECT;
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
    if (this.#reverse !== undefined) {
      const rk = u * REL_SLOTS + r;
      let objs = this.#reverse.get(rk);
      if (objs === undefined) this.#reverse.set(rk, (objs = new Set()));
      objs.add(o);
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
    if (this.#reverse !== undefined) {
      const rk = u * REL_SLOTS + r;
      const objs = this.#reverse.get(rk);
      if (objs !== undefined) {
        objs.delete(o);
        if (objs.size === 0) this.#reverse.delete(rk);
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

  /** Objects holding `relation` for `user` (reverse index), as numbers. */
  objectsOf(user: string, relation: string): ReadonlySet<number> | undefined {
    const u = this.#ids.get(user);
    const r = this.#rels.get(relation);
    if (u === undefined || r === undefined || this.#reverse === undefined) return undefined;
    return this.#reverse.get(u * REL_SLOTS + r);
  }

  // ---------------------------------------------------------------- reach

  #plan(ts: TypeSystem, type: string, relation: number): Plan | null {
    let byType = this.#plans.get(ts);
    if (byType === undefined) this.#plans.set(ts, (byType = new Map()));
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
  #admits(ts: TypeSystem, type: string, relation: string, u: number, condition: string | undefined): boolean {
    let m = this.#admitted.get(ts);
    if (m === undefined) this.#admitted.set(ts, (m = new Map()));
    const kind = this.#kind[u]!;
    const utype = this.#type[u]!;
    const usRel = kind === USERSET ? this.#relNames[this.#usRelation[u]!]! : '';
    const k = `${type}#${relation}@${utype}|${kind}|${usRel}|${condition ?? ''}`;
    let v = m.get(k);
    if (v === undefined) {
      const user: ParsedUser = kind === OBJECT ? { kind: 'object', type: utype, id: 'x' } : kind === WILDCARD ? { kind: 'wildcard', type: utype } : { kind: 'userset', type: utype, id: 'x', relation: usRel };
      v = tupleReadable(ts, type, relation, user, condition);
      m.set(k, v);
    }
    return v;
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
  reach(ts: TypeSystem, objectType: string, objectId: string, relation: string, userType: string, userId: string, limits: ReachLimits): boolean | undefined {
    const start = this.#ids.get(`${objectType}:${objectId}`);
    const startRel = this.rel(relation);
    const uid = this.#ids.get(`${userType}:${userId}`);
    const wid = this.#ids.get(`${userType}:*`);
    const maxDepth = limits.maxDepth;
    let dispatches = 1;
    if (dispatches > limits.maxDispatches) throw budgetExceeded();
    let error: unknown;
    const visited = new Map<number, number>();
    const stackObj: number[] = [];
    const stackRel: number[] = [];
    const stackDepth: number[] = [];
    // No tuple names the object: the evaluator answers that at once.
    if (start === undefined) return undefined;
    visited.set(start * REL_SLOTS + startRel, 0);
    stackObj.push(start);
    stackRel.push(startRel);
    stackDepth.push(0);
    const conditionHolds = (c: TupleCondition | undefined): boolean => {
      if (c === undefined || c.name === '') return true;
      const compiled = ts.condition(c.name);
      if (compiled === undefined) return false;
      try {
        return compiled.evaluate(c.context, limits.context);
      } catch (err) {
        error ??= err;
        return false;
      }
    };
    // Each push is one dispatch of the evaluator: depth limit first, then the visited set, then the budget.
    const push = (o: number, r: number, depth: number): void => {
      if (depth >= maxDepth) {
        error ??= depthExceeded();
        return;
      }
      const key = o * REL_SLOTS + r;
      const seen = visited.get(key);
      if (seen !== undefined && seen <= depth) return;
      visited.set(key, depth);
      if (++dispatches > limits.maxDispatches) {
        error ??= budgetExceeded();
        return;
      }
      stackObj.push(o);
      stackRel.push(r);
      stackDepth.push(depth);
    };
    while (stackObj.length > 0) {
      const obj = stackObj.pop()!;
      const rel = stackRel.pop()!;
      const depth = stackDepth.pop()!;
      const type = this.#type[obj]!;
      const plan = this.#plan(ts, type, rel);
      if (plan === null) return undefined;
      const relName = this.#relNames[rel]!;
      if (plan.direct) {
        const n = this.nodes.get(obj * REL_SLOTS + rel);
        if (n !== undefined) {
          if (n.users !== undefined) {
            if (uid !== undefined && n.users.has(uid) && this.#admits(ts, type, relName, uid, n.conds?.get(uid)?.name) && conditionHolds(n.conds?.get(uid))) return true;
            if (wid !== undefined && n.users.has(wid) && this.#admits(ts, type, relName, wid, n.conds?.get(wid)?.name) && conditionHolds(n.conds?.get(wid))) return true;
          }
          if (n.usersets !== undefined && plan.usersets) {
            for (const us of n.usersets.keys()) {
              const c = n.conds?.get(us);
              if (!this.#admits(ts, type, relName, us, c?.name) || !conditionHolds(c)) continue;
              push(this.#usObject[us]!, this.#usRelation[us]!, depth + 1);
            }
          }
        }
      }
      for (const c of plan.computed) push(obj, c, depth + 1);
      for (const { tupleset, computed, name } of plan.ttu) {
        const n = this.nodes.get(obj * REL_SLOTS + tupleset);
        if (n === undefined || n.users === undefined) continue;
        const tsName = this.#relNames[tupleset]!;
        for (const p of n.users.keys()) {
          if (this.#kind[p] !== OBJECT) continue;
          const c = n.conds?.get(p);
          if (!this.#admits(ts, type, tsName, p, c?.name)) continue;
          if (ts.rewrite(this.#type[p]!, name) === undefined) continue;
          if (!conditionHolds(c)) continue;
          push(p, computed, depth + 1);
        }
      }
    }
    if (error !== undefined) throw error;
    return false;
  }
}
