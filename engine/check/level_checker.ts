/**
 * A level-batched fast path for Check, in front of the evaluator behind the
 * evaluator's own interface ({@link CheckResolver}).
 *
 * For a top-level check of a *monotone* relation (unions of direct grants,
 * usersets, computed relations and tuple-to-userset; see
 * `TypeSystem.isMonotone`) by a plain object user, the answer is
 * reachability in the tuple graph. This resolver computes it breadth-first:
 * all the reads of one graph level are issued together, so the request
 * reader (engine/reader.ts) coalesces them into at most three store calls
 * per level (point lookups, userset lookups, other forward lookups; two with
 * `combineReads`), which `SqlStore` answers with one statement — one SQL
 * round trip per level instead of one per node — and a node is expanded once
 * (visited set).
 *
 * From the second level on, a tuple-to-userset step whose targets read the
 * same tupleset again (`viewer from parent` on folders inside folders) is read
 * as a chain (`TupleStore.readTuplesetChains`, in the same statement as the
 * level's other reads): the tupleset's tuples of every object up the chain,
 * and every object on it joins the next level at its own depth. A node may
 * then be expanded in another level than breadth-first order would give it;
 * reachability does not depend on that order, and a node first reached by a
 * longer path can only bring the depth or dispatch limit (a deferral to the
 * exact evaluator) sooner, never another answer.
 *
 * It defers to the inner resolver (exact semantics) for everything else, and
 * whenever the fast path could differ from it: a node at or beyond the depth
 * limit, the dispatch budget exhausted, or a condition that fails to evaluate
 * with no positive answer found. Answers carry `height = maxDepth - 1`, so a
 * cache above serves them to top-level requests only.
 */
import type { CheckResolver, ResolutionContext, ResolveCheckRequest, ResolveCheckResult } from './check_resolver.ts';
import { LocalChecker } from './local_checker.ts';
import type { Userset } from '../model.ts';
import type { ReadTuple } from '../reader.ts';
import type { ParsedUser } from '../tuple.ts';
import type { TypeSystem } from '../typesystem.ts';

const NONE: ReadonlySet<string> = new Set();

/**
 * The first level (0-based) whose tuple-to-userset reads may be chains (see
 * {@link LevelChecker} `chains`). From the first level, a direct hit on
 * PostgreSQL at 1 M tuples took 1.47× as long (its statement carried a chain
 * it did not need); from the second, direct hits were unchanged and 5-hop
 * checks took 0.53× as long (three statements instead of six), negatives 0.83×.
 */
const CHAIN_FROM_LEVEL = 1;

/**
 * What expanding a node of `type#relation` for a user of one type does, in
 * the order the rewrite's union lists it: direct reads (`this`), a computed
 * relation expanded within the level, or a tuple-to-userset read.
 */
type Step =
  | { kind: 'this'; point: boolean; wildcard: boolean; usersets: boolean }
  | { kind: 'computed'; relation: string }
  | { kind: 'ttu'; tupleset: string; computed: string };

/**
 * Steps by `type#relation@userType` for each model version, or null where the
 * fast path does not apply (no such relation, an intersection or exclusion).
 * Walking the rewrite and its type restrictions for every node was about a
 * third of this resolver's own time.
 */
const plans = new WeakMap<TypeSystem, Map<string, readonly Step[] | null>>();

function plan(ts: TypeSystem, type: string, relation: string, userType: string): readonly Step[] | null {
  let byKey = plans.get(ts);
  if (byKey === undefined) plans.set(ts, (byKey = new Map()));
  const key = `${type}#${relation}@${userType}`;
  let steps = byKey.get(key);
  if (steps !== undefined) return steps;
  const rw = ts.rewrite(type, relation);
  const out: Step[] = [];
  const stack: Userset[] = rw === undefined ? [] : [rw];
  let supported = rw !== undefined;
  while (supported && stack.length > 0) {
    const n = stack.pop()!;
    if ('this' in n) {
      const refs = ts.restrictions(type, relation);
      out.push({
        kind: 'this',
        point: refs.some((r) => r.type === userType && r.wildcard === undefined && r.relation === undefined),
        wildcard: refs.some((r) => r.type === userType && r.wildcard !== undefined),
        usersets: refs.some((r) => r.relation !== undefined),
      });
    } else if ('computedUserset' in n) {
      out.push({ kind: 'computed', relation: n.computedUserset.relation ?? '' });
    } else if ('tupleToUserset' in n) {
      out.push({ kind: 'ttu', tupleset: n.tupleToUserset.tupleset.relation ?? '', computed: n.tupleToUserset.computedUserset.relation ?? '' });
    } else if ('union' in n) {
      stack.push(...n.union.child);
    } else {
      supported = false;
    }
  }
  steps = supported ? out : null;
  byKey.set(key, steps);
  return steps;
}

/**
 * True when a tuple-to-userset step `tupleset → computed` on `type` leads to
 * a relation that again reads `tupleset` (`viewer from parent` on folders
 * whose parents are folders): then the whole chain is read at once
 * ({@link TupleReader.objectRelationChain}) instead of one level per hop.
 */
const chainables = new WeakMap<TypeSystem, Map<string, boolean>>();

function chainable(ts: TypeSystem, type: string, tupleset: string, computed: string, userType: string): boolean {
  let byKey = chainables.get(ts);
  if (byKey === undefined) chainables.set(ts, (byKey = new Map()));
  const key = `${type}#${tupleset}>${computed}@${userType}`;
  let yes = byKey.get(key);
  if (yes === undefined) {
    yes = ts.restrictions(type, tupleset).some(
      (r) => r.relation === undefined && r.wildcard === undefined && plan(ts, r.type, computed, userType)?.some((s) => s.kind === 'ttu' && s.tupleset === tupleset) === true,
    );
    byKey.set(key, yes);
  }
  return yes;
}

interface Node {
  type: string;
  id: string;
  relation: string;
  depth: number;
}

/** Counters, for tests and benchmarks. */
export interface LevelCheckerStats {
  fast: number;
  deferred: number;
  levels: number;
  /** Tupleset chains read at once. */
  chains: number;
}

export class LevelChecker implements CheckResolver {
  readonly #inner: CheckResolver;
  readonly stats: LevelCheckerStats = { fast: 0, deferred: 0, levels: 0, chains: 0 };

  readonly #usersetKind: 'all' | 'usersets';
  readonly #chains: boolean;

  /**
   * @param options.inner the exact evaluator (default: a new {@link LocalChecker}).
   * @param options.combineReads read usersets together with the other forward
   *   lookups (`'all'`, filtered here): two store calls per level instead of
   *   three. `SqlStore` answers all the calls of one level with one statement
   *   anyway, so there it only adds rows (every plain user on the path); on
   *   the memory store it costs more than it saves. Default false.
   * @param options.chains read a tuple-to-userset chain that repeats its
   *   tupleset (`viewer from parent` up a folder tree) at once where the store
   *   offers it ({@link TupleStore.readTuplesetChains}), and expand every
   *   object on it in the next level: a 5-hop check is three levels instead of
   *   six. Default true.
   */
  constructor(options: { inner?: CheckResolver; combineReads?: boolean; chains?: boolean } = {}) {
    this.#inner = options.inner ?? new LocalChecker();
    this.#usersetKind = options.combineReads === true ? 'all' : 'usersets';
    this.#chains = options.chains !== false;
  }

  async resolveCheck(req: ResolveCheckRequest, ctx: ResolutionContext): Promise<ResolveCheckResult> {
    if (req.depth !== 0 || req.path !== undefined || req.user.kind !== 'object' || !ctx.ts.isMonotone(req.objectType, req.relation)) {
      return this.#inner.resolveCheck(req, ctx);
    }
    const answer = await this.#reach(req, ctx);
    if (answer === undefined) {
      this.stats.deferred++;
      return this.#inner.resolveCheck(req, ctx);
    }
    this.stats.fast++;
    return { allowed: answer, cycle: false, height: Math.max(0, ctx.maxDepth - 1), hits: NONE };
  }

  /** True / false, or `undefined` when the exact evaluator must decide. */
  async #reach(req: ResolveCheckRequest, ctx: ResolutionContext): Promise<boolean | undefined> {
    const user = req.user as Extract<ParsedUser, { kind: 'object' }>;
    const userString = `${user.type}:${user.id}`;
    const wildcard = `${user.type}:*`;
    const { ts, reader } = ctx;
    const visited = new Set<string>();
    let failedCondition = false;
    let dispatches = 0;
    const passes = (t: ReadTuple): boolean => {
      const c = t.tuple.condition;
      if (c === undefined || c.name === '') return true;
      const compiled = ts.condition(c.name);
      if (compiled === undefined) return false;
      try {
        return compiled.evaluate(c.context, ctx.context);
      } catch {
        failedCondition = true;
        return false;
      }
    };

    /** Complete tuple lists of object relations read with a chain, by `type:id#relation`. */
    const known = new Map<string, ReadTuple[]>();
    let level: Node[] = [{ type: req.objectType, id: req.objectId, relation: req.relation, depth: 0 }];
    visited.add(`${req.objectType}:${req.objectId}#${req.relation}`);
    // Chains from the second level on: a chain costs more than one level's tupleset read (a recursive statement), and
    // a check answered by the first level (a direct grant) would pay it for nothing.
    let levelIndex = -1;
    while (level.length > 0) {
      this.stats.levels++;
      levelIndex++;
      const points: Promise<ReadTuple | undefined>[] = [];
      const usersets: { node: Node; read: Promise<ReadTuple[]> }[] = [];
      const ttus: { node: Node; tupleset: string; computed: string; read: Promise<ReadTuple[]> }[] = [];
      const chains: { node: Node; tupleset: string; computed: string; read: Promise<Map<string, ReadTuple[]> | undefined> }[] = [];
      const next: Node[] = [];
      const enqueue = (n: Node, into: Node[]): boolean => {
        const key = `${n.type}:${n.id}#${n.relation}`;
        if (visited.has(key)) return true;
        if (n.depth >= ctx.maxDepth || ++dispatches > ctx.maxDispatches) return false;
        visited.add(key);
        into.push(n);
        return true;
      };
      /**
       * Enqueues the targets of `node`'s tuple-to-userset tuples; a target whose
       * own tupleset was read with a chain has its targets enqueued too, at their
       * own depth, so a whole chain joins the next level. False: defer.
       */
      const follow = (node: Node, computed: string, tuples: readonly ReadTuple[]): boolean => {
        for (const t of tuples) {
          if (t.user.kind !== 'object' || ts.rewrite(t.user.type, computed) === undefined || !passes(t)) continue;
          const target: Node = { type: t.user.type, id: t.user.id, relation: computed, depth: node.depth + 1 };
          if (visited.has(`${target.type}:${target.id}#${target.relation}`)) continue;
          if (!enqueue(target, next)) return false;
          for (const step of plan(ts, target.type, target.relation, user.type) ?? []) {
            if (step.kind !== 'ttu') continue;
            const have = known.get(`${target.type}:${target.id}#${step.tupleset}`);
            if (have !== undefined && !follow(target, step.computed, have)) return false;
          }
        }
        return true;
      };
      // Expand computed relations within the level; collect this level's reads.
      for (let i = 0; i < level.length; i++) {
        const node = level[i]!;
        const steps = plan(ts, node.type, node.relation, user.type);
        if (steps === null) return undefined;
        for (const step of steps) {
          if (step.kind === 'this') {
            if (step.point) points.push(reader.userTuple(node.type, node.id, node.relation, userString));
            if (step.wildcard) points.push(reader.userTuple(node.type, node.id, node.relation, wildcard));
            if (step.usersets) usersets.push({ node, read: reader.objectRelation(node.type, node.id, node.relation, this.#usersetKind) });
          } else if (step.kind === 'computed') {
            if (!enqueue({ type: node.type, id: node.id, relation: step.relation, depth: node.depth + 1 }, level)) return undefined;
          } else if (known.has(`${node.type}:${node.id}#${step.tupleset}`)) {
            ttus.push({ node, tupleset: step.tupleset, computed: step.computed, read: Promise.resolve(known.get(`${node.type}:${node.id}#${step.tupleset}`)!) });
          } else if (this.#chains && levelIndex >= CHAIN_FROM_LEVEL && reader.chains && chainable(ts, node.type, step.tupleset, step.computed, user.type)) {
            this.stats.chains++;
            chains.push({ node, tupleset: step.tupleset, computed: step.computed, read: reader.objectRelationChain(node.type, node.id, step.tupleset, ctx.maxDepth - node.depth) });
          } else {
            ttus.push({ node, tupleset: step.tupleset, computed: step.computed, read: reader.objectRelation(node.type, node.id, step.tupleset, 'all') });
          }
        }
      }
      const [found, sets, tus, chained] = await Promise.all([
        Promise.all(points),
        Promise.all(usersets.map((u) => u.read)),
        Promise.all(ttus.map((t) => t.read)),
        Promise.all(chains.map((c) => c.read)),
      ]);
      for (const t of found) if (t !== undefined && passes(t)) return true;
      // Chains: every object relation they reached is known from now on; one the store declined is read as usual.
      const declined: typeof ttus = [];
      for (let i = 0; i < chains.length; i++) {
        const { node, tupleset, computed } = chains[i]!;
        const map = chained[i];
        if (map !== undefined) for (const [k, v] of map) known.set(k, v);
        const own = known.get(`${node.type}:${node.id}#${tupleset}`);
        if (own !== undefined) {
          ttus.push({ node, tupleset, computed, read: Promise.resolve(own) });
          tus.push(own);
        } else {
          declined.push({ node, tupleset, computed, read: reader.objectRelation(node.type, node.id, tupleset, 'all') });
        }
      }
      if (declined.length > 0) {
        const more = await Promise.all(declined.map((d) => d.read));
        ttus.push(...declined);
        tus.push(...more);
      }
      for (let i = 0; i < sets.length; i++) {
        const node = usersets[i]!.node;
        for (const t of sets[i]!) {
          if (t.user.kind !== 'userset' || !passes(t)) continue;
          if (!enqueue({ type: t.user.type, id: t.user.id, relation: t.user.relation, depth: node.depth + 1 }, next)) return undefined;
        }
      }
      for (let i = 0; i < tus.length; i++) {
        const { node, computed } = ttus[i]!;
        if (!follow(node, computed, tus[i]!)) return undefined;
      }
      level = next;
    }
    return failedCondition ? undefined : false;
  }
}
