/**
 * The walk of `GraphIndex.reach` (engine/graph/graph_index.ts): a top-level
 * check of a monotone relation answered as reachability over the index's
 * numbers, depth first, with a visited set per relation number, the
 * evaluator's depth limit and dispatch budget, and conditions evaluated on
 * the way.
 *
 * Apart from the index because it is a sub-object with state of its own:
 * the scratch state of one walk (stack, visited sets, dispatch count, first
 * error), kept between walks so that a walk allocates nothing once warm.
 * It reads the index's own arrays, handed over once as `ReachPlans` takes
 * them, so a step costs what it cost inside the index.
 */
import { budgetExceeded, depthExceeded } from '../check/rules.ts';
import type { TupleCondition } from '../store.ts';
import type { TypeSystem } from '../typesystem.ts';
import { OBJECT, type Admitted, type Plan, type ReachPlans } from './reach_plans.ts';
import { runHas } from './staged_tuples.ts';

/** What a walk needs from the resolution context. */
export interface ReachLimits {
  maxDepth: number;
  maxDispatches: number;
  context: Record<string, unknown> | undefined;
}

/** The fields of a graph node that a walk reads (`GraphNode`, engine/graph/graph_index.ts). */
interface WalkNode {
  readonly users: ReadonlyMap<number, number> | undefined;
  readonly usersets: ReadonlyMap<number, number> | undefined;
  readonly conds: ReadonlyMap<number, TupleCondition> | undefined;
  readonly from: number;
  readonly mid: number;
  readonly to: number;
}

/** Whether plain or wildcard user `u` is on node `n`, whose runs are in `bulk`. */
export function hasUser(n: WalkNode, bulk: Int32Array, u: number): boolean {
  return n.users?.has(u) === true || (n.mid > n.from && runHas(bulk, n.from, n.mid, u));
}

export class ReachWalk {
  readonly #nodes: readonly (ReadonlyMap<number, WalkNode> | undefined)[];
  readonly #type: readonly string[];
  readonly #kind: readonly number[];
  readonly #usObject: readonly number[];
  readonly #usRelation: readonly number[];
  readonly #plans: ReachPlans;
  #walking = false;
  /** Per relation number: object number → shallowest depth visited in the current walk. */
  #visited: (Map<number, number> | undefined)[] = [];
  /** Relation numbers whose `#visited` map the current walk wrote. */
  readonly #visitedRels: number[] = [];
  #stack: number[] = [];
  #dispatches = 0;
  #error: unknown = undefined;

  /** The index's own arrays (read as they grow) and its walk plans. */
  constructor(nodes: readonly (ReadonlyMap<number, WalkNode> | undefined)[], type: readonly string[], kind: readonly number[], usObject: readonly number[], usRelation: readonly number[], plans: ReachPlans) {
    this.#nodes = nodes;
    this.#type = type;
    this.#kind = kind;
    this.#usObject = usObject;
    this.#usRelation = usRelation;
    this.#plans = plans;
  }

  /** True while {@link run} is on the stack: a walk started then needs scratch state of its own ({@link nested}). */
  get walking(): boolean {
    return this.#walking;
  }

  /** A walk over the same index with scratch state of its own. */
  nested(): ReachWalk {
    return new ReachWalk(this.#nodes, this.#type, this.#kind, this.#usObject, this.#usRelation, this.#plans);
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

  /** Marks `o#r` visited at `depth`; false when it was visited before at most as deep. */
  #visit(o: number, r: number, depth: number): boolean {
    let m = this.#visited[r];
    if (m === undefined) {
      this.#visited[r] = m = new Map();
      this.#visitedRels.push(r);
    } else if (m.size === 0) this.#visitedRels.push(r);
    const seen = m.get(o);
    if (seen !== undefined && seen <= depth) return false;
    m.set(o, depth);
    return true;
  }

  /** One dispatch of the evaluator: the depth limit first, then the visited set, then the budget. */
  #push(o: number, r: number, depth: number, limits: ReachLimits): void {
    if (depth >= limits.maxDepth) {
      this.#error ??= depthExceeded();
      return;
    }
    if (!this.#visit(o, r, depth)) return;
    if (++this.#dispatches > limits.maxDispatches) {
      this.#error ??= budgetExceeded();
      return;
    }
    this.#stack.push(o, r, depth);
  }

  /** A walk step through userset user `us` of node `type#rel`. */
  #viaUserset(ts: TypeSystem, type: string, rel: number, admitted: Admitted, us: number, conds: ReadonlyMap<number, TupleCondition> | undefined, depth: number, limits: ReachLimits): void {
    const c = conds?.get(us);
    if (!this.#plans.admitsIn(admitted, ts, type, rel, us, c?.name) || !this.#conditionHolds(ts, c, limits.context)) return;
    this.#push(this.#usObject[us]!, this.#usRelation[us]!, depth + 1, limits);
  }

  /** A walk step through tupleset user `p` of `t` (tuple-to-userset). */
  #viaParent(ts: TypeSystem, type: string, t: Plan['ttu'][number], p: number, conds: ReadonlyMap<number, TupleCondition> | undefined, depth: number, limits: ReachLimits): void {
    if (this.#kind[p] !== OBJECT) return;
    const c = conds?.get(p);
    if (!this.#plans.admitsIn(t.admitted, ts, type, t.tupleset, p, c?.name)) return;
    if (ts.rewrite(this.#type[p]!, t.name) === undefined) return;
    if (!this.#conditionHolds(ts, c, limits.context)) return;
    this.#push(p, t.computed, depth + 1, limits);
  }

  /**
   * The walk from `start#startRel` (object number -1: an object no tuple
   * names) to user `uid` or wildcard `wid`, with this walk's scratch state
   * (reused between walks); `bulk` is the index's array of node runs. See
   * `GraphIndex.reach` for the answer.
   */
  run(ts: TypeSystem, objectType: string, start: number, startRel: number, uid: number | undefined, wid: number | undefined, limits: ReachLimits, bulk: Int32Array): boolean | undefined {
    this.#walking = true;
    this.#error = undefined;
    this.#dispatches = 1;
    const stack = this.#stack;
    stack.length = 0;
    try {
      if (this.#dispatches > limits.maxDispatches) throw budgetExceeded();
      this.#visit(start, startRel, 0);
      stack.push(start, startRel, 0);
      const nodes = this.#nodes;
      while (stack.length > 0) {
        const depth = stack.pop()!;
        const rel = stack.pop()!;
        const obj = stack.pop()!;
        const type = obj === -1 ? objectType : this.#type[obj]!;
        const plan = this.#plans.plan(ts, type, rel);
        if (plan === null) return undefined;
        if (plan.direct) {
          const n = nodes[rel]?.get(obj);
          if (n !== undefined) {
            const conds = n.conds;
            const admitted = plan.admitted;
            if (uid !== undefined && hasUser(n, bulk, uid) && this.#plans.admitsIn(admitted, ts, type, rel, uid, conds?.get(uid)?.name) && this.#conditionHolds(ts, conds?.get(uid), limits.context)) return true;
            if (wid !== undefined && hasUser(n, bulk, wid) && this.#plans.admitsIn(admitted, ts, type, rel, wid, conds?.get(wid)?.name) && this.#conditionHolds(ts, conds?.get(wid), limits.context)) return true;
            if (plan.usersets) {
              for (let i = n.mid; i < n.to; i++) this.#viaUserset(ts, type, rel, admitted, bulk[i]!, conds, depth, limits);
              if (n.usersets !== undefined) for (const us of n.usersets.keys()) this.#viaUserset(ts, type, rel, admitted, us, conds, depth, limits);
            }
          }
        }
        for (const c of plan.computed) this.#push(obj, c, depth + 1, limits);
        for (const t of plan.ttu) {
          const n = nodes[t.tupleset]?.get(obj);
          if (n === undefined) continue;
          for (let i = n.from; i < n.mid; i++) this.#viaParent(ts, type, t, bulk[i]!, n.conds, depth, limits);
          if (n.users !== undefined) for (const p of n.users.keys()) this.#viaParent(ts, type, t, p, n.conds, depth, limits);
        }
      }
      if (this.#error !== undefined) throw this.#error;
      return false;
    } finally {
      this.#walking = false;
      this.#error = undefined;
      const visited = this.#visited;
      for (const r of this.#visitedRels) {
        // A map grown large by one walk is dropped rather than kept at its peak size.
        if (visited[r]!.size > 4096) visited[r] = undefined;
        else visited[r]!.clear();
      }
      this.#visitedRels.length = 0;
      if (stack.length > 4096) this.#stack = [];
    }
  }
}
