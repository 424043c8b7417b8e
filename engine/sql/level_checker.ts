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
 * It defers to the inner resolver (exact semantics) for everything else, and
 * whenever the fast path could differ from it: a node at or beyond the depth
 * limit, the dispatch budget exhausted, or a condition that fails to evaluate
 * with no positive answer found. Answers carry `height = maxDepth - 1`, so a
 * cache above serves them to top-level requests only.
 */
import { LocalChecker, type CheckResolver, type ResolutionContext, type ResolveCheckRequest, type ResolveCheckResult } from '../check.ts';
import type { Userset } from '../model.ts';
import type { ReadTuple } from '../reader.ts';
import type { ParsedUser } from '../tuple.ts';
import type { TypeSystem } from '../typesystem.ts';

const NONE: ReadonlySet<string> = new Set();

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
}

export class LevelChecker implements CheckResolver {
  readonly #inner: CheckResolver;
  readonly stats: LevelCheckerStats = { fast: 0, deferred: 0, levels: 0 };

  readonly #usersetKind: 'all' | 'usersets';

  /**
   * @param options.inner the exact evaluator (default: a new {@link LocalChecker}).
   * @param options.combineReads read usersets together with the other forward
   *   lookups (`'all'`, filtered here): two store calls per level instead of
   *   three. `SqlStore` answers all the calls of one level with one statement
   *   anyway, so there it only adds rows (every plain user on the path); on
   *   the memory store it costs more than it saves. Default false.
   */
  constructor(options: { inner?: CheckResolver; combineReads?: boolean } = {}) {
    this.#inner = options.inner ?? new LocalChecker();
    this.#usersetKind = options.combineReads === true ? 'all' : 'usersets';
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

    let level: Node[] = [{ type: req.objectType, id: req.objectId, relation: req.relation, depth: 0 }];
    visited.add(`${req.objectType}:${req.objectId}#${req.relation}`);
    while (level.length > 0) {
      this.stats.levels++;
      const points: Promise<ReadTuple | undefined>[] = [];
      const usersets: { node: Node; read: Promise<ReadTuple[]> }[] = [];
      const ttus: { node: Node; computed: string; read: Promise<ReadTuple[]> }[] = [];
      const next: Node[] = [];
      const enqueue = (n: Node, into: Node[]): boolean => {
        const key = `${n.type}:${n.id}#${n.relation}`;
        if (visited.has(key)) return true;
        if (n.depth >= ctx.maxDepth || ++dispatches > ctx.maxDispatches) return false;
        visited.add(key);
        into.push(n);
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
          } else {
            ttus.push({ node, computed: step.computed, read: reader.objectRelation(node.type, node.id, step.tupleset, 'all') });
          }
        }
      }
      const [found, sets, tus] = await Promise.all([Promise.all(points), Promise.all(usersets.map((u) => u.read)), Promise.all(ttus.map((t) => t.read))]);
      for (const t of found) if (t !== undefined && passes(t)) return true;
      for (let i = 0; i < sets.length; i++) {
        const node = usersets[i]!.node;
        for (const t of sets[i]!) {
          if (t.user.kind !== 'userset' || !passes(t)) continue;
          if (!enqueue({ type: t.user.type, id: t.user.id, relation: t.user.relation, depth: node.depth + 1 }, next)) return undefined;
        }
      }
      for (let i = 0; i < tus.length; i++) {
        const { node, computed } = ttus[i]!;
        for (const t of tus[i]!) {
          if (t.user.kind !== 'object' || ts.rewrite(t.user.type, computed) === undefined || !passes(t)) continue;
          if (!enqueue({ type: t.user.type, id: t.user.id, relation: computed, depth: node.depth + 1 }, next)) return undefined;
        }
      }
      level = next;
    }
    return failedCondition ? undefined : false;
  }
}
