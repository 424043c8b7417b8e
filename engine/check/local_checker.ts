/**
 * The evaluator at the end of the resolver chain: resolves a sub-problem
 * from the model's rewrite and the tuples, with the rules of rules.ts, by
 * one of the two evaluators that apply them.
 *
 * The choice is made here, once per sub-problem that reaches the evaluator
 * (docs/check.md, "Routes"): the synchronous evaluator (resolve_sync.ts)
 * when the store answers reads synchronously, the evaluator was not told
 * otherwise, and the model has no cycles through `and` / `but not`
 * operands; else the asynchronous one (resolve_async.ts).
 */
import type { CheckResolver, ResolutionContext, ResolveCheckRequest, ResolveCheckResult } from './check_resolver.ts';
import { resolveAsync } from './resolve_async.ts';
import { resolveSync } from './resolve_sync.ts';

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
    if (this.#sync && ctx.reader.sync !== undefined && ctx.noReuse !== true) return resolveSync(req, ctx);
    return undefined;
  }
}
