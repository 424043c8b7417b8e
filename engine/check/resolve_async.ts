/**
 * The asynchronous evaluator: resolves a sub-problem with promises, for
 * stores that answer reads only through promises (SQL), and for models with
 * cycles through `and` / `but not` operands (where the operand that decides
 * first sets the answer, as in OpenFGA).
 *
 * The rules are the table's (rules.ts), shared with the synchronous
 * evaluator (resolve_sync.ts); what is this evaluator's own is the order:
 * operands of union, intersection and exclusion start together and the
 * first that decides cancels the rest (their reads are coalesced by the
 * reader), and every nested sub-problem is dispatched back to the head of
 * the resolver chain (`ctx.resolver`), so a cache wrapping the evaluator
 * sees each of them.
 *
 * Recursion is bounded: dispatch depth by the depth limit, and each
 * relation's rewrite nesting by the typesystem's nesting limit, so deep or
 * cyclic graphs cannot overflow the stack; a per-check dispatch budget bounds
 * the time of dense cyclic graphs.
 */
import { formatUser } from '../tuple.ts';
import type { Userset } from '../model.ts';
import { type PathNode, type ResolutionContext, type ResolveCheckRequest, type ResolveCheckResult, Scope, problemKey } from './check_resolver.ts';
import {
  CANCELLED,
  Combination,
  FALSE,
  RULES,
  THIS_USERSETS,
  THIS_WILDCARD,
  TRUE,
  type OperatorRule,
  conditionHolds,
  dispatched,
  enter,
  leave,
  rewriteOf,
  thisOperands,
  ttuParent,
  unknownRewrite,
} from './rules.ts';

type R = ResolveCheckResult;
type Handler = () => Promise<R>;

/**
 * Sub-problems dispatched at once from one userset or tuple-to-userset
 * fan-out. One at a time, with short-circuiting, lets each sibling reuse what
 * the previous ones memoised; running them all at once made dense cyclic
 * graphs explode (every path explored before any result was memoised).
 * Operands of union, intersection and exclusion still run concurrently, and
 * their reads are coalesced by the reader.
 */
const FAN_OUT = 1;

/**
 * Runs an operator's operands (at most `limit` at once; the next starts when
 * one settles, and none start once the answer is known) and combines their
 * answers by `rule`. The operand that decides cancels `scope`.
 */
function combine(rule: OperatorRule, scope: Scope, handlers: readonly Handler[], limit = Infinity): Promise<R> {
  return new Promise((resolve, reject) => {
    const combination = new Combination(rule);
    let pending = handlers.length;
    let next = 0;
    let done = false;
    const settle = (): void => {
      if (done) return;
      if (--pending > 0) {
        launch();
        return;
      }
      done = true;
      let r: R;
      try {
        r = combination.result();
      } catch (err) {
        reject(err);
        return;
      }
      resolve(r);
    };
    const launch = (): void => {
      if (done || next >= handlers.length) return;
      const operand = next++;
      handlers[operand]!().then(
        (r) => {
          if (done) return;
          const decided = combination.add(operand, r);
          if (decided !== undefined) {
            done = true;
            scope.cancelled = true;
            resolve(decided);
            return;
          }
          settle();
        },
        (err: unknown) => {
          if (done) return;
          combination.fail(operand, err);
          settle();
        },
      );
    };
    for (let i = 0; i < Math.min(limit, handlers.length); i++) launch();
  });
}

/** A union (rules.ts); no operand is false, one is itself. */
function union(scope: Scope, handlers: Handler[], limit = Infinity): Promise<R> {
  if (handlers.length === 0) return Promise.resolve(FALSE);
  if (handlers.length === 1) return handlers[0]!();
  return combine(RULES.union, scope, handlers, limit);
}

/** Resolves `req` with promises. Rejects with `resolution_too_complex`, `relation_not_found` or a condition's error. */
export async function resolveAsync(req: ResolveCheckRequest, ctx: ResolutionContext): Promise<R> {
  if (req.scope.isCancelled()) return CANCELLED;
  const key = problemKey(req.objectType, req.objectId, req.relation, req.user);
  const early = enter(ctx, key, req.objectType, req.objectId, req.relation, req.user, req.depth, req.path);
  if (early !== undefined) return early;
  const r = await rewrite(rewriteOf(ctx, req.objectType, req.relation), req, { key, parent: req.path }, req.scope, ctx);
  return leave(ctx, key, r);
}

/** Dispatches a nested sub-problem to the head of the resolver chain. */
function dispatch(ctx: ResolutionContext, parent: ResolveCheckRequest, path: PathNode, scope: Scope, objectType: string, objectId: string, relation: string): Promise<R> {
  return ctx.resolver.resolveCheck({ objectType, objectId, relation, user: parent.user, depth: parent.depth + 1, path, scope }, ctx).then(dispatched);
}

function rewrite(rw: Userset, req: ResolveCheckRequest, path: PathNode, scope: Scope, ctx: ResolutionContext): Promise<R> {
  if ('this' in rw) return direct(req, path, scope, ctx);
  if ('computedUserset' in rw) return dispatch(ctx, req, path, scope, req.objectType, req.objectId, rw.computedUserset.relation ?? '');
  if ('tupleToUserset' in rw) return ttu(rw.tupleToUserset.tupleset.relation ?? '', rw.tupleToUserset.computedUserset.relation ?? '', req, path, scope, ctx);
  if ('union' in rw) {
    const s = new Scope(scope);
    return union(s, rw.union.child.map((c) => () => rewrite(c, req, path, s, ctx)));
  }
  if ('intersection' in rw) {
    const s = new Scope(scope);
    return combine(RULES.intersection, s, rw.intersection.child.map((c) => () => rewrite(c, req, path, s, ctx)));
  }
  if ('difference' in rw) {
    const s = new Scope(scope);
    const d = rw.difference;
    return combine(RULES.exclusion, s, [() => rewrite(d.base, req, path, s, ctx), () => rewrite(d.subtract, req, path, s, ctx)]);
  }
  return Promise.reject(unknownRewrite());
}

function direct(req: ResolveCheckRequest, path: PathNode, scope: Scope, ctx: ResolutionContext): Promise<R> {
  const { objectType, objectId, relation, user } = req;
  const operands = thisOperands(ctx.ts.restrictions(objectType, relation), user);
  const handlers: Handler[] = [];
  // 1. The exact tuple.
  handlers.push(async () => {
    const t = await ctx.reader.userTuple(objectType, objectId, relation, formatUser(user));
    return t !== undefined && conditionHolds(ctx, t.tuple) ? TRUE : FALSE;
  });
  // 2. A public wildcard `type:*`, when the model admits it for the user's type.
  if ((operands & THIS_WILDCARD) !== 0) {
    handlers.push(async () => {
      const t = await ctx.reader.userTuple(objectType, objectId, relation, `${user.type}:*`);
      return t !== undefined && conditionHolds(ctx, t.tuple) ? TRUE : FALSE;
    });
  }
  // 3. Usersets `type:id#rel`: the user holds the relation when it is in one of them.
  if ((operands & THIS_USERSETS) !== 0) {
    handlers.push(async () => {
      const tuples = await ctx.reader.objectRelation(objectType, objectId, relation, 'usersets');
      if (tuples.length === 0) return FALSE;
      const s = new Scope(scope);
      return union(
        s,
        tuples.map((t) => async () => {
          if (t.user.kind !== 'userset') return FALSE;
          if (!conditionHolds(ctx, t.tuple)) return FALSE;
          return dispatch(ctx, req, path, s, t.user.type, t.user.id, t.user.relation);
        }),
        FAN_OUT,
      );
    });
  }
  return union(new Scope(scope), handlers);
}

async function ttu(tupleset: string, target: string, req: ResolveCheckRequest, path: PathNode, scope: Scope, ctx: ResolutionContext): Promise<R> {
  const tuples = await ctx.reader.objectRelation(req.objectType, req.objectId, tupleset, 'all');
  if (tuples.length === 0) return FALSE;
  const s = new Scope(scope);
  return union(
    s,
    tuples.map((t) => async () => {
      if (!ttuParent(ctx, t.user, target)) return FALSE;
      if (!conditionHolds(ctx, t.tuple)) return FALSE;
      return dispatch(ctx, req, path, s, t.user.type, t.user.id, target);
    }),
    FAN_OUT,
  );
}
