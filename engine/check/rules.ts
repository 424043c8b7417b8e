/**
 * The rules of Check, written once for both evaluators: the asynchronous one
 * (resolve_async.ts: promises, operands concurrent, nested sub-problems
 * dispatched back to the head of the resolver chain) and the synchronous one
 * (resolve_sync.ts: one call, operands left to right, nested sub-problems
 * resolved in place). Neither evaluator imports the other; both take from
 * here what a sub-problem is before its rewrite, what it is after, and how
 * each operator combines the answers and errors of its operands. The
 * evaluators only decide the order in which operands run.
 *
 * Semantics are OpenFGA's (`internal/graph/check.go`); docs/check.md pins each
 * rule to the conformance test that exercises it, and the properties "the
 * synchronous and asynchronous evaluators answer alike"
 * (test/engine/engine.property.test.ts) and "synchronous evaluator and index
 * walk equal the asynchronous evaluator, conditions included"
 * (test/engine/cache_graph.test.ts) compare the two evaluators on random
 * models.
 *
 * - Each dispatch adds one to the depth; reaching the depth limit (25) is an
 *   error (OpenFGA 2002), never a wrong answer.
 * - A sub-problem already on the current path is a cycle: it answers false
 *   and marks the result, and the mark makes `but not`, `and` and `or`
 *   treat it as false.
 * - Union: true wins over errors, then errors over false. Intersection: false
 *   (or a cycle) wins over errors, then errors over true. Exclusion: base
 *   false / cycle, or subtract true / cycle, win over errors; then the base's
 *   error, then the subtract's.
 * - `this` is the union of the exact tuple, the wildcard tuple (when the
 *   model admits one for the user's type) and the usersets on the object;
 *   a computed userset is one dispatch; a tuple-to-userset is the union of
 *   a dispatch per parent that defines the target relation.
 * - Tuple conditions are evaluated as tuples are read; a failing condition is
 *   an error of that branch only.
 *
 * Memoisation: every sub-problem result that does not depend on the path
 * (no sub-problem above it reappeared below it) is memoised for the rest of
 * the request (and shared by the checks of a batch), together with the depth
 * it needed, so a memoised answer is reused only where recomputing it would
 * not have hit the depth limit. A false answer that does depend on the path
 * is kept with the ancestors it met and reused wherever they are all on the
 * path again: cycles only turn answers to false, so that answer stands.
 */
import { LatchkeyError } from '../errors.ts';
import type { RelationReference, Userset } from '../model.ts';
import type { TupleKey } from '../store.ts';
import { type ParsedUser, fgaError } from '../tuple.ts';
import { FGA_CODES } from '../validation.ts';
import type { PathNode, ResolutionContext, ResolveCheckResult } from './check_resolver.ts';

type R = ResolveCheckResult;
/** Ancestors whose reappearance cut a branch short (`null`: unknown, never reuse). */
export type Hits = ReadonlySet<string> | null;

export const NONE: ReadonlySet<string> = new Set();
export const FALSE: R = { allowed: false, cycle: false, height: 0, hits: NONE };
export const TRUE: R = { allowed: true, cycle: false, height: 0, hits: NONE };
/** A branch an enclosing operator has already decided without it: discarded, never reused. */
export const CANCELLED: R = { allowed: false, cycle: true, height: 0, hits: null };
const TRUE_UNREUSABLE: R = { allowed: true, cycle: false, height: 0, hits: null };
/** A revisit in monotone mode: false here, and not memoisable (the answer is found elsewhere). */
const REVISIT: R = { allowed: false, cycle: true, height: 0, hits: null };

export function mergeHits(a: Hits, b: Hits): Hits {
  if (a === null || b === null) return null;
  if (a.size === 0) return b;
  if (b.size === 0) return a;
  return new Set([...a, ...b]);
}

/** Whether `key` is on the resolution path. */
export function onPath(path: PathNode | undefined, key: string): boolean {
  for (let p = path; p !== undefined; p = p.parent) if (p.key === key) return true;
  return false;
}

/** The error for a resolution that needed more dispatches than allowed. */
export function budgetExceeded(): LatchkeyError {
  return new LatchkeyError('failed_precondition', 'resolution too complex: the graph required too many sub-problems to be resolved', {
    reason: 'resolution_too_complex',
    details: { openfga_code: FGA_CODES.resolution_too_complex },
  });
}

/** The error for exceeding the depth limit (OpenFGA 2002). */
export function depthExceeded(): LatchkeyError {
  return new LatchkeyError('failed_precondition', 'resolution too complex: the authorization model required too many rewrite rules to be resolved', {
    reason: 'resolution_too_complex',
    details: { openfga_code: FGA_CODES.resolution_too_complex },
  });
}

/** The error for an operator the evaluators do not know (a broken invariant: the typesystem admits none). */
export function unknownRewrite(): LatchkeyError {
  return new LatchkeyError('internal', 'unknown rewrite', { reason: 'unknown_rewrite' });
}

/**
 * Steps 2 to 6 of docs/check.md ("The resolver chain") for sub-problem `key`
 * at `depth` below `parent`: the depth limit, a cycle on the path, the memo
 * and path memo, the monotone visited set, the dispatch budget and the
 * self-defining userset. Returns the answer when one of them gives it, and
 * `undefined` when the rewrite must be evaluated (then pass its answer to
 * {@link leave}). Throws `resolution_too_complex`.
 */
export function enter(ctx: ResolutionContext, key: string, objectType: string, objectId: string, relation: string, user: ParsedUser, depth: number, parent: PathNode | undefined): R | undefined {
  if (depth >= ctx.maxDepth) throw depthExceeded();
  if (parent !== undefined && onPath(parent, key)) return { allowed: false, cycle: true, height: 0, hits: new Set([key]) };
  if (ctx.noReuse === true) {
    // Models with cycles through `and` / `but not`: no reuse at all, and every answer unreusable.
    if (++ctx.stats.dispatches > ctx.maxDispatches) throw budgetExceeded();
    return selfDefining(objectType, objectId, relation, user) ? TRUE_UNREUSABLE : undefined;
  }
  const memo = ctx.memo.get(key);
  if (memo !== undefined && depth + memo.height < ctx.maxDepth) return memo;
  const pm = ctx.pathMemo.size > 0 ? ctx.pathMemo.get(key) : undefined;
  if (pm !== undefined) {
    for (const m of pm) {
      if (depth + m.height < ctx.maxDepth && m.hits.every((h) => onPath(parent, h))) {
        return { allowed: false, cycle: true, height: m.height, hits: new Set(m.hits) };
      }
    }
  }
  if (ctx.visited !== undefined) {
    const d = ctx.visited.get(key);
    // Already being resolved (or resolved) from as shallow a depth: any answer it has comes through that resolution.
    if (d !== undefined && d <= depth) return REVISIT;
    ctx.visited.set(key, depth);
  }
  if (++ctx.stats.dispatches > ctx.maxDispatches) throw budgetExceeded();
  return selfDefining(objectType, objectId, relation, user) ? TRUE : undefined;
}

/** The answer of sub-problem `key` once its rewrite has answered `r`: recorded for reuse, or marked unreusable. */
export function leave(ctx: ResolutionContext, key: string, r: R): R {
  if (ctx.noReuse === true) return { allowed: r.allowed, cycle: r.cycle, height: r.height, hits: null };
  return memoise(ctx, key, r);
}

/** A userset always contains itself (OpenFGA's self-defining shortcut): `group:x#member` holds `member` on `group:x`. */
function selfDefining(objectType: string, objectId: string, relation: string, user: ParsedUser): boolean {
  return user.kind === 'userset' && user.type === objectType && user.id === objectId && user.relation === relation;
}

/**
 * Records the result of sub-problem `key` for the rest of the resolution:
 * hits on `key` itself are dropped (they recur on every path); a result that
 * depends on no ancestor goes to the memo, a false one that does to the path
 * memo (the last 16 per sub-problem) with the ancestors it met. Returns the
 * result as recorded.
 */
export function memoise(ctx: ResolutionContext, key: string, r: R): R {
  if (r.hits === null) return r;
  let hits = r.hits;
  if (hits.has(key)) {
    const rest = new Set(hits);
    rest.delete(key);
    hits = rest;
  }
  const result: R = hits === r.hits ? r : { allowed: r.allowed, cycle: r.cycle, height: r.height, hits };
  if (hits.size === 0) {
    ctx.memo.set(key, result);
  } else if (!result.allowed) {
    let list = ctx.pathMemo.get(key);
    if (list === undefined) ctx.pathMemo.set(key, (list = []));
    if (list.length >= 16) list.shift();
    list.push({ hits: [...hits], height: result.height });
  }
  return result;
}

/** The rewrite of `objectType#relation`; `relation_not_found` (2000) when the model has none. */
export function rewriteOf(ctx: ResolutionContext, objectType: string, relation: string): Userset {
  const rw = ctx.ts.rewrite(objectType, relation);
  if (rw === undefined) throw fgaError(`relation '${objectType}#${relation}' not found`, { reason: 'relation_not_found', code: FGA_CODES.validation_error });
  return rw;
}

/** The answer of a dispatched sub-problem as its parent sees it: one level higher. */
export function dispatched(r: R): R {
  return { allowed: r.allowed, cycle: r.cycle, height: r.height + 1, hits: r.hits };
}

/**
 * Whether a tuple read for `this` or a tuple-to-userset counts: its condition
 * holds under the tuple's context merged over the request's (a condition the
 * model version no longer declares does not hold). Throws what the condition
 * throws (missing parameters, cost): an error of that branch only.
 */
export function conditionHolds(ctx: ResolutionContext, t: TupleKey): boolean {
  const c = t.condition;
  if (c === undefined || c.name === '') return true;
  const compiled = ctx.ts.condition(c.name);
  if (compiled === undefined) return false;
  return compiled.evaluate(c.context, ctx.context);
}

/** `this` reads the wildcard tuple `type:*` (the model admits one for the user's type). */
export const THIS_WILDCARD = 1;
/** `this` reads the userset tuples `type:id#rel` on the object (the model admits some). */
export const THIS_USERSETS = 2;

/**
 * Which operands `this` has besides the exact tuple, as {@link THIS_WILDCARD}
 * and {@link THIS_USERSETS} bits: the operands of its union, in this order,
 * are the exact tuple, the wildcard tuple and the usersets' members.
 */
export function thisOperands(refs: readonly RelationReference[], user: ParsedUser): number {
  let bits = 0;
  for (const r of refs) {
    if (r.relation !== undefined) bits |= THIS_USERSETS;
    else if (r.wildcard !== undefined && user.kind === 'object' && r.type === user.type) bits |= THIS_WILDCARD;
  }
  return bits;
}

/** Whether a tupleset tuple's user is a parent of a tuple-to-userset: an object whose type defines the target relation. */
export function ttuParent(ctx: ResolutionContext, parent: ParsedUser, target: string): parent is Extract<ParsedUser, { kind: 'object' }> {
  return parent.kind === 'object' && ctx.ts.rewrite(parent.type, target) !== undefined;
}

/**
 * What an operator does with its operands' answers. `decides` says whether an
 * operand's answer decides the operator (the rest need not run); the
 * operator's answer is then that operand's when `passThrough`, else false
 * with the operand's cycle flag, height and hits. `undecided` is the answer
 * when every operand answered without deciding and none failed. When some
 * failed, the error that wins is the first met (`errors: 'first'`) or the one
 * of the lowest operand (`errors: 'operand'`).
 */
export interface OperatorRule {
  readonly decides: (operand: number, r: R) => boolean;
  readonly passThrough: boolean;
  readonly undecided: boolean;
  readonly errors: 'first' | 'operand';
}

/** The operators, as OpenFGA combines them (docs/check.md, "Errors meeting answers"). */
export const RULES = {
  /** Any true wins; otherwise any error wins over false. */
  union: { decides: (_: number, r: R) => r.allowed, passThrough: true, undecided: false, errors: 'first' },
  /** A false or a cycle wins (answer false); otherwise any error wins over true. */
  intersection: { decides: (_: number, r: R) => !r.allowed || r.cycle, passThrough: false, undecided: true, errors: 'first' },
  /** Base (operand 0) false or cycle, or subtract (operand 1) true or cycle, win (answer false); then a base error, then a subtract error; otherwise true. */
  exclusion: { decides: (operand: number, r: R) => r.cycle || (operand === 0 ? !r.allowed : r.allowed), passThrough: false, undecided: true, errors: 'operand' },
} as const satisfies Record<string, OperatorRule>;

/**
 * One operator's answer being put together from its operands' (in whatever
 * order the evaluator runs them): {@link Combination.add} each answer, and
 * stop when it returns one (the operator is decided); {@link Combination.fail}
 * each error; {@link Combination.result} once every operand has answered.
 * The cycle flag, the height and the hits of undecided operands travel up.
 */
export class Combination {
  readonly #rule: OperatorRule;
  #cycle = false;
  #height = 0;
  #hits: Hits = NONE;
  #error: unknown = undefined;
  #errorAt = -1;

  constructor(rule: OperatorRule) {
    this.#rule = rule;
  }

  /** Folds in operand `operand`'s answer; returns the operator's answer when it decides it. */
  add(operand: number, r: R): R | undefined {
    const rule = this.#rule;
    if (rule.decides(operand, r)) return rule.passThrough ? r : { allowed: false, cycle: r.cycle, height: r.height, hits: r.hits };
    if (r.cycle) this.#cycle = true;
    if (r.height > this.#height) this.#height = r.height;
    this.#hits = mergeHits(this.#hits, r.hits);
    return undefined;
  }

  /** Records operand `operand`'s error. */
  fail(operand: number, err: unknown): void {
    if (this.#error === undefined || (this.#rule.errors === 'operand' && operand < this.#errorAt)) {
      this.#error = err;
      this.#errorAt = operand;
    }
  }

  /** The operator's answer when no operand decided it; throws the error that wins, if any. */
  result(): R {
    if (this.#error !== undefined) throw this.#error;
    const allowed = this.#rule.undecided;
    if (!allowed && !this.#cycle && this.#height === 0 && this.#hits === NONE) return FALSE;
    return { allowed, cycle: this.#cycle, height: this.#height, hits: this.#hits };
  }
}
