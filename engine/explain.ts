/**
 * Explain: why a check answers what it answers. A separate evaluator beside
 * Check (engine/check/), written for the record it keeps rather than for
 * speed, so the check path is untouched: it follows the same rules
 * (engine/check/rules.ts, docs/check.md "Errors meeting answers"), through the
 * same typesystem and the same tuple reader (contextual tuples, expiry and
 * the consistency preference are the reader's), and records each step.
 *
 * - An allowed check yields one witness: the tree pruned to the branches that
 *   decide it (one operand of a union, one tuple of `this`, every operand of
 *   an intersection, an exclusion's base with its subtracted branch shown as
 *   denied).
 * - A denied check yields the tree of the branches tried and why each failed.
 *
 * Bounds are Check's: the depth limit is an error of the branch that reaches
 * it (as in Check, an operator may still decide without that branch), and the
 * dispatch budget ends the whole explanation with `resolution_too_complex`.
 * Nothing is memoised, so an explanation may exhaust the budget where Check,
 * which reuses sub-problem answers, does not: that is an error, never an
 * answer.
 *
 * The answer reported is always Check's (`Engine.explain` runs both). Where
 * this evaluator reaches another answer (possible only where a cycle was cut
 * or an order-dependent depth limit was met, docs/check.md "Two evaluators"),
 * the root is reported `undecided` rather than guessed; pinned by the
 * property "the explanation's answer equals Check's" in
 * test/engine/explain.property.test.ts.
 */
import { LatchkeyError } from './errors.ts';
import type { Userset } from './model.ts';
import type { ReadTuple, TupleReader } from './reader.ts';
import type { TupleKey } from './store.ts';
import { type ParsedUser, formatUser } from './tuple.ts';
import type { TypeSystem } from './typesystem.ts';
import { budgetExceeded, depthExceeded, thisOperands, THIS_USERSETS, THIS_WILDCARD, ttuParent } from './check/rules.ts';
import { problemKey, type PathNode, type ResolutionContext } from './check/check_resolver.ts';

/** What a node of an explanation concluded. */
export type ExplainOutcome = 'allowed' | 'denied' | 'error' | 'undecided';

/**
 * Why a node concluded what it did (its `because` field):
 * - `self`: a userset always holds itself (`group:x#member` is a member of `group:x`);
 * - `tuple`: the tuple exists and its condition (if any) holds;
 * - `no_tuple`: the tuple named is not stored (nor contextual, nor unexpired);
 * - `condition_false`: the tuple's condition evaluated to false;
 * - `missing_condition_parameters`: the condition lacks the parameters in `condition.missing_parameters`;
 * - `condition_error`: the condition failed otherwise (`error` says how);
 * - `condition_not_in_model`: the tuple names a condition the model version no longer declares;
 * - `no_branch_allowed`: every operand of a union (or every tuple of `this` or of a tuple-to-userset) failed;
 * - `operand_denied`: an intersection operand was denied;
 * - `base_denied`, `subtract_allowed`: an exclusion's base was denied, or its subtracted branch allowed;
 * - `cycle`: the sub-problem is already being resolved above (OpenFGA answers false there);
 * - `depth_limit`: the depth limit was reached (`resolution_too_complex`);
 * - `all_operands_allowed`, `base_allowed_subtract_denied`, `operand_allowed`: what allowed an operator;
 * - `evaluation_order`: this explanation reached another answer than Check (only where a cycle was cut or the depth limit met); Check's answer is reported.
 */
export type ExplainReason =
  | 'self'
  | 'tuple'
  | 'no_tuple'
  | 'condition_false'
  | 'missing_condition_parameters'
  | 'condition_error'
  | 'condition_not_in_model'
  | 'no_branch_allowed'
  | 'operand_denied'
  | 'base_denied'
  | 'subtract_allowed'
  | 'cycle'
  | 'depth_limit'
  | 'operand_allowed'
  | 'all_operands_allowed'
  | 'base_allowed_subtract_denied'
  | 'evaluation_order';

/** A tuple's condition as it was evaluated. */
export interface ExplainCondition {
  name: string;
  /** `true`/`false`: its value; `missing_parameters`, `error`, `not_in_model`: why it has none. */
  result: 'true' | 'false' | 'missing_parameters' | 'error' | 'not_in_model';
  /** The declared parameters present in the context it was evaluated with (the tuple's context over the request's). */
  context?: Record<string, unknown>;
  /** The declared parameters the context lacked. */
  missing_parameters?: string[];
}

/**
 * One node of an explanation (JSON as it stands; every field name is the wire name):
 * - `relation`: the sub-problem `object#relation@user`, with its rewrite as the one child;
 * - `direct` (`this`), `computed_userset` (`computed_relation`), `tuple_to_userset`
 *   (`tupleset`, `computed_relation`), `union`, `intersection`, `exclusion`: rewrite steps, with
 *   their operands as children (`operand`: the index in the model; `role`: `base` or `subtract`);
 * - `tuple`: a tuple read (or looked for), with its condition; a userset tuple of `this` and a
 *   tupleset tuple of a tuple-to-userset have the dispatched `relation` as their one child.
 */
export interface ExplainNode {
  kind: 'relation' | 'direct' | 'computed_userset' | 'tuple_to_userset' | 'union' | 'intersection' | 'exclusion' | 'tuple';
  outcome: ExplainOutcome;
  because?: ExplainReason;
  /** Set when a denial holds on this resolution path only: a cycle was cut below (OpenFGA's cycle flag). */
  cycle?: true;
  object?: string;
  relation?: string;
  user?: string;
  tupleset?: string;
  computed_relation?: string;
  operand?: number;
  role?: 'base' | 'subtract';
  tuple?: { object: string; relation: string; user: string };
  condition?: ExplainCondition;
  error?: { code: string; reason?: string; message: string };
  children?: ExplainNode[];
}

/** An explained check. */
export interface ExplainResult {
  /** Check's answer for the same request. */
  allowed: boolean;
  /** The witness (allowed) or the tree of failed branches (denied), rooted at the requested relation. */
  tree: ExplainNode;
  /** Set when Check ended in a condition's error (missing parameters, say) rather than an answer: that error; the tree shows where. */
  error?: { code: string; reason?: string; message: string };
}

/** What the explanation reads and its bounds (Check's). */
export interface ExplainContext {
  ts: TypeSystem;
  reader: TupleReader;
  context: Record<string, unknown> | undefined;
  maxDepth: number;
  maxDispatches: number;
}

interface Ev {
  node: ExplainNode;
  allowed: boolean;
  cycle: boolean;
  error?: unknown;
}

/**
 * Tuples an explanation may show per sub-problem it may resolve: the
 * dispatch budget bounds the sub-problems, this bounds the tuples read
 * without a dispatch below them (a wide fan-out of tuples whose conditions
 * fail), so that the tree's size stays bounded too (40,000 tuples with the
 * default budget of 10,000).
 */
const TUPLES_PER_DISPATCH = 4;

class Walk {
  readonly #c: ExplainContext;
  #dispatches = 0;
  #tuples = 0;
  constructor(c: ExplainContext) {
    this.#c = c;
  }

  async relation(objectType: string, objectId: string, relation: string, user: ParsedUser, depth: number, parent: PathNode | undefined): Promise<Ev> {
    const node: ExplainNode = { kind: 'relation', outcome: 'denied', object: `${objectType}:${objectId}`, relation, user: formatUser(user) };
    const key = problemKey(objectType, objectId, relation, user);
    if (depth >= this.#c.maxDepth) return failed(node, depthExceeded(), 'depth_limit');
    for (let p = parent; p !== undefined; p = p.parent) {
      if (p.key === key) return { node: { ...node, because: 'cycle', cycle: true }, allowed: false, cycle: true };
    }
    if (++this.#dispatches > this.#c.maxDispatches) throw budgetExceeded();
    if (user.kind === 'userset' && user.type === objectType && user.id === objectId && user.relation === relation) {
      return { node: { ...node, outcome: 'allowed', because: 'self' }, allowed: true, cycle: false };
    }
    const rw = this.#c.ts.rewrite(objectType, relation);
    if (rw === undefined) return failed(node, new LatchkeyError('invalid_argument', `relation '${objectType}#${relation}' not found`, { reason: 'relation_not_found' }));
    const r = await this.rewrite(rw, objectType, objectId, relation, user, depth, { key, parent });
    return lift(node, r);
  }

  async rewrite(rw: Userset, objectType: string, objectId: string, relation: string, user: ParsedUser, depth: number, path: PathNode): Promise<Ev> {
    if ('this' in rw) return this.direct(objectType, objectId, relation, user, depth, path);
    if ('computedUserset' in rw) {
      const target = rw.computedUserset.relation ?? '';
      return lift({ kind: 'computed_userset', outcome: 'denied', computed_relation: target }, await this.relation(objectType, objectId, target, user, depth + 1, path));
    }
    if ('tupleToUserset' in rw) {
      return this.ttu(rw.tupleToUserset.tupleset.relation ?? '', rw.tupleToUserset.computedUserset.relation ?? '', objectType, objectId, user, depth, path);
    }
    if ('union' in rw) {
      const ops = rw.union.child;
      if (ops.length === 1) return this.rewrite(ops[0]!, objectType, objectId, relation, user, depth, path);
      const evs: Ev[] = [];
      for (let i = 0; i < ops.length; i++) {
        const e = operand(await this.rewrite(ops[i]!, objectType, objectId, relation, user, depth, path), i);
        if (e.allowed) return { node: { kind: 'union', outcome: 'allowed', because: 'operand_allowed', children: [e.node] }, allowed: true, cycle: false };
        evs.push(e);
      }
      return anyOf({ kind: 'union', outcome: 'denied' }, evs);
    }
    if ('intersection' in rw) {
      const ops = rw.intersection.child;
      const evs: Ev[] = [];
      for (let i = 0; i < ops.length; i++) {
        const e = operand(await this.rewrite(ops[i]!, objectType, objectId, relation, user, depth, path), i);
        evs.push(e);
        // A false or a cycle decides the intersection, over any error.
        if (e.error === undefined && (!e.allowed || e.cycle)) {
          return { node: { kind: 'intersection', outcome: 'denied', because: 'operand_denied', ...cycleMark(e.cycle), children: evs.map((x) => x.node) }, allowed: false, cycle: e.cycle };
        }
      }
      const err = evs.find((x) => x.error !== undefined);
      if (err !== undefined) return carried({ kind: 'intersection', outcome: 'error', children: evs.map((x) => x.node) }, err.error);
      return { node: { kind: 'intersection', outcome: 'allowed', because: 'all_operands_allowed', children: evs.map((x) => x.node) }, allowed: true, cycle: false };
    }
    if ('difference' in rw) {
      const base = await this.rewrite(rw.difference.base, objectType, objectId, relation, user, depth, path);
      base.node = { ...base.node, role: 'base' };
      if (base.error === undefined && (!base.allowed || base.cycle)) {
        return { node: { kind: 'exclusion', outcome: 'denied', because: 'base_denied', ...cycleMark(base.cycle), children: [base.node] }, allowed: false, cycle: base.cycle };
      }
      const sub = await this.rewrite(rw.difference.subtract, objectType, objectId, relation, user, depth, path);
      sub.node = { ...sub.node, role: 'subtract' };
      const children = [base.node, sub.node];
      if (sub.error === undefined && (sub.allowed || sub.cycle)) {
        return { node: { kind: 'exclusion', outcome: 'denied', because: 'subtract_allowed', ...cycleMark(sub.cycle), children }, allowed: false, cycle: sub.cycle };
      }
      // Then the base's error, then the subtracted branch's (rules.ts: errors by operand).
      if (base.error !== undefined) return carried({ kind: 'exclusion', outcome: 'error', children }, base.error);
      if (sub.error !== undefined) return carried({ kind: 'exclusion', outcome: 'error', children }, sub.error);
      return { node: { kind: 'exclusion', outcome: 'allowed', because: 'base_allowed_subtract_denied', children }, allowed: true, cycle: false };
    }
    throw new LatchkeyError('internal', 'unknown rewrite', { reason: 'unknown_rewrite' });
  }

  async direct(objectType: string, objectId: string, relation: string, user: ParsedUser, depth: number, path: PathNode): Promise<Ev> {
    const bits = thisOperands(this.#c.ts.restrictions(objectType, relation), user);
    const object = `${objectType}:${objectId}`;
    const evs: Ev[] = [];
    const allowed = (e: Ev): Ev => ({ node: { kind: 'direct', outcome: 'allowed', because: 'tuple', children: [e.node] }, allowed: true, cycle: false });
    // 1. The exact tuple; 2. the wildcard `type:*` when the model admits it for the user's type.
    const wanted = [formatUser(user)];
    if ((bits & THIS_WILDCARD) !== 0) wanted.push(`${user.type}:*`);
    for (const u of wanted) {
      const t = await this.#c.reader.userTuple(objectType, objectId, relation, u);
      const e = t === undefined ? absent(object, relation, u) : this.tuple(t.tuple);
      if (e.allowed) return allowed(e);
      evs.push(e);
    }
    // 3. Usersets on the object: the user holds the relation when it is in one of them.
    if ((bits & THIS_USERSETS) !== 0) {
      const tuples = await this.#c.reader.objectRelation(objectType, objectId, relation, 'usersets');
      for (const t of tuples) {
        const us = t.user;
        if (us.kind !== 'userset') continue;
        const e = this.tuple(t.tuple);
        if (e.allowed) {
          const sub = await this.relation(us.type, us.id, us.relation, user, depth + 1, path);
          const r = lift(e.node, sub);
          if (r.allowed) return allowed(r);
          evs.push(r);
        } else {
          evs.push(e);
        }
      }
    }
    return anyOf({ kind: 'direct', outcome: 'denied' }, evs);
  }

  async ttu(tupleset: string, target: string, objectType: string, objectId: string, user: ParsedUser, depth: number, path: PathNode): Promise<Ev> {
    const node: ExplainNode = { kind: 'tuple_to_userset', outcome: 'denied', tupleset, computed_relation: target };
    const tuples: ReadTuple[] = await this.#c.reader.objectRelation(objectType, objectId, tupleset, 'all');
    const evs: Ev[] = [];
    for (const t of tuples) {
      const p = t.user;
      if (!ttuParent({ ts: this.#c.ts } as ResolutionContext, p, target)) continue;
      const e = this.tuple(t.tuple);
      if (!e.allowed) {
        evs.push(e);
        continue;
      }
      const r = lift(e.node, await this.relation(p.type, p.id, target, user, depth + 1, path));
      if (r.allowed) return { node: { ...node, outcome: 'allowed', because: 'operand_allowed', children: [r.node] }, allowed: true, cycle: false };
      evs.push(r);
    }
    if (evs.length === 0) return { node: { ...node, because: 'no_tuple' }, allowed: false, cycle: false };
    return anyOf(node, evs);
  }

  /** A tuple that was read: allowed when its condition holds (the dispatch below it, if any, is the caller's). */
  tuple(t: TupleKey): Ev {
    if (++this.#tuples > this.#c.maxDispatches * TUPLES_PER_DISPATCH) throw budgetExceeded();
    const node: ExplainNode = { kind: 'tuple', outcome: 'allowed', because: 'tuple', tuple: { object: t.object, relation: t.relation, user: t.user } };
    const c = t.condition;
    if (c === undefined || c.name === '') return { node, allowed: true, cycle: false };
    const compiled = this.#c.ts.condition(c.name);
    if (compiled === undefined) return { node: { ...node, outcome: 'denied', because: 'condition_not_in_model', condition: { name: c.name, result: 'not_in_model' } }, allowed: false, cycle: false };
    const merged: Record<string, unknown> = { ...(this.#c.context ?? {}), ...(c.context ?? {}) };
    const used: Record<string, unknown> = {};
    for (const p of Object.keys(compiled.parameters)) if (p in merged) used[p] = merged[p];
    const condition: ExplainCondition = { name: c.name, result: 'true', context: used };
    try {
      if (compiled.evaluate(c.context, this.#c.context)) return { node: { ...node, condition }, allowed: true, cycle: false };
      return { node: { ...node, outcome: 'denied', because: 'condition_false', condition: { ...condition, result: 'false' } }, allowed: false, cycle: false };
    } catch (err) {
      if (err instanceof LatchkeyError && err.reason === 'missing_condition_parameters') {
        const missing = (err.details as { missing?: unknown } | undefined)?.missing;
        const names = Array.isArray(missing) ? missing.map(String) : [];
        return failed({ ...node, condition: { ...condition, result: 'missing_parameters', missing_parameters: names } }, err, 'missing_condition_parameters');
      }
      return failed({ ...node, condition: { ...condition, result: 'error' } }, err, 'condition_error');
    }
  }
}

function absent(object: string, relation: string, user: string): Ev {
  return { node: { kind: 'tuple', outcome: 'denied', because: 'no_tuple', tuple: { object, relation, user } }, allowed: false, cycle: false };
}

function cycleMark(cycle: boolean): { cycle?: true } {
  return cycle ? { cycle: true } : {};
}

function operand(e: Ev, i: number): Ev {
  e.node = { ...e.node, operand: i };
  return e;
}

/** `node` concluding what its one child `r` concluded. */
function lift(node: ExplainNode, r: Ev): Ev {
  const out: ExplainNode = { ...node, outcome: r.node.outcome, children: [r.node] };
  if (r.error !== undefined) {
    // The error itself is shown once, on the node where it arose (and in the result's `error`).
    delete out.because;
    return { node: out, allowed: false, cycle: false, error: r.error };
  }
  if (node.kind === 'tuple') out.because = r.allowed ? 'tuple' : r.node.because === 'cycle' ? 'cycle' : 'no_branch_allowed';
  else if (r.node.because !== undefined) out.because = r.node.because;
  if (r.cycle) out.cycle = true;
  return { node: out, allowed: r.allowed, cycle: r.cycle };
}

/** A union of failed branches: the first error wins over denials (rules.ts, union). */
function anyOf(node: ExplainNode, evs: Ev[]): Ev {
  const children = evs.map((e) => e.node);
  const err = evs.find((e) => e.error !== undefined);
  if (err !== undefined) return carried({ ...node, children }, err.error);
  const cycle = evs.some((e) => e.cycle);
  return { node: { ...node, outcome: 'denied', because: evs.length === 0 ? 'no_tuple' : 'no_branch_allowed', ...cycleMark(cycle), children }, allowed: false, cycle };
}

function failed(node: ExplainNode, err: unknown, reason?: ExplainReason): Ev {
  const out: ExplainNode = { ...node, outcome: 'error', error: publicError(err) };
  if (reason !== undefined) out.because = reason;
  else if (err instanceof LatchkeyError && err.reason === 'resolution_too_complex') out.because = 'depth_limit';
  return { node: out, allowed: false, cycle: false, error: err };
}

/** An operator that fails with an operand's error: the error is shown on the operand's node where it arose. */
function carried(node: ExplainNode, err: unknown): Ev {
  return { node: { ...node, outcome: 'error' }, allowed: false, cycle: false, error: err };
}

function publicError(err: unknown): { code: string; reason?: string; message: string } {
  if (err instanceof LatchkeyError) return err.reason === undefined ? { code: err.code, message: err.message } : { code: err.code, reason: err.reason, message: err.message };
  return { code: 'internal', message: 'internal error' };
}

/** Check's answer to the request being explained: an answer, or the condition error it ended in. */
export type CheckOutcome = { allowed: boolean; error?: undefined } | { allowed: false; error: LatchkeyError };

/**
 * Explains `object#relation@user` (already validated by the caller, as
 * Check validates it) given Check's outcome for the same request. Throws
 * `resolution_too_complex` past the dispatch budget.
 */
export async function explainCheck(c: ExplainContext, objectType: string, objectId: string, relation: string, user: ParsedUser, check: CheckOutcome): Promise<ExplainResult> {
  const walk = new Walk(c);
  const r = await walk.relation(objectType, objectId, relation, user, 0, undefined);
  const out: ExplainResult = { allowed: check.allowed, tree: r.node };
  if (check.error !== undefined) out.error = publicError(check.error);
  const same =
    check.error !== undefined
      ? r.error instanceof LatchkeyError && r.error.code === check.error.code && r.error.reason === check.error.reason
      : r.error === undefined && (r.allowed && !r.cycle) === check.allowed;
  // Check and this walk differ (a cycle cut or the depth limit met in another order): Check's answer stands, the tree is undecided.
  if (!same) out.tree = { ...r.node, outcome: 'undecided', because: 'evaluation_order' };
  return out;
}
