/**
 * The evaluator at the end of the resolver chain: resolves a sub-problem
 * from the model's rewrite and the tuples, with the rules of rules.ts.
 *
 * Which way it goes is chosen here, once per sub-problem that reaches the
 * evaluator (docs/check.md, "Routes"):
 * - the store's index walk (`reachSync`: the memory store and a fresh graph
 *   mirror walk their graph index over numbers, see
 *   engine/graph/graph_index.ts) for a top-level check of a monotone relation
 *   by a plain object user without contextual tuples, when the walk answers;
 * - else the synchronous evaluator (resolve_sync.ts) when the store answers
 *   reads synchronously, the evaluator was not told otherwise, and the model
 *   has no cycles through `and` / `but not` operands;
 * - else the asynchronous one (resolve_async.ts).
 */
import type { CheckResolver, ResolutionContext, ResolveCheckRequest, ResolveCheckResult } from './check_resolver.ts';
import { resolveAsync } from './resolve_async.ts';
import { resolveSync } from './resolve_sync.ts';
import { CANCELLED, NONE } from './rules.ts';

/**
 * Answers of a whole top-level check, by depth limit: height is the most a
 * resolution may use, so a cache above serves them to top-level requests only.
 */
const TOP: ResolveCheckResult[][] = [];

function topAnswer(allowed: boolean, maxDepth: number): ResolveCheckResult {
  let pair = TOP[maxDepth];
  if (pair === undefined) {
    const height = Math.max(0, maxDepth - 1);
    pair = TOP[maxDepth] = [Object.freeze({ allowed: false, cycle: false, height, hits: NONE }), Object.freeze({ allowed: true, cycle: false, height, hits: NONE })];
  }
  return pair[allowed ? 1 : 0]!;
}

/** The evaluator: resolves a sub-problem from the model's rewrite and the tuples. */
export class LocalChecker implements CheckResolver {
  readonly #sync: boolean;

  /**
   * @param options.sync resolve with the synchronous evaluator (engine/check/resolve_sync.ts)
   *   whenever the store offers synchronous reads (default true); false always
   *   takes the asynchronous path (for comparisons and tests).
   */
  constructor(options: { sync?: boolean } = {}) {
    this.#sync = options.sync ?? true;
  }

  /** Whether this evaluator resolves synchronously when the store offers synchronous reads. */
  get synchronous(): boolean {
    return this.#sync;
  }

  resolveCheck(req: ResolveCheckRequest, ctx: ResolutionContext): Promise<ResolveCheckResult> {
    try {
      const r = this.resolveCheckSync(req, ctx);
      if (r !== undefined) return Promise.resolve(r);
    } catch (err) {
      return Promise.reject(err);
    }
    return resolveAsync(req, ctx);
  }

  resolveCheckSync(req: ResolveCheckRequest, ctx: ResolutionContext): ResolveCheckResult | undefined {
    // Models with cycles through `and` / `but not` answer per resolution path, and there the operand that
    // decides first (a cycle needs no read) sets the answer, as in OpenFGA: they keep the concurrent evaluator.
    const source = ctx.reader.sync;
    if (!this.#sync || source === undefined || ctx.noReuse === true) return undefined;
    if (req.scope.isCancelled()) return CANCELLED;
    // A top-level check of a monotone relation by a plain user is reachability: the store may walk its index directly.
    const user = req.user;
    const monotone = ctx.monotone ?? ctx.visited !== undefined;
    if (monotone && req.depth === 0 && req.path === undefined && user.kind === 'object' && source.reachSync !== undefined && !ctx.reader.hasContextualTuples) {
      const allowed = source.reachSync(ctx.ts, req.objectType, req.objectId, req.relation, user.type, user.id, ctx, req.object, req.userText);
      if (allowed !== undefined) return topAnswer(allowed, ctx.maxDepth);
    }
    return resolveSync(req, ctx);
  }
}
