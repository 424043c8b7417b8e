/**
 * The synchronous evaluator: the same resolution as the asynchronous one
 * (resolve_async.ts), by the same rules (rules.ts), for stores that answer reads
 * synchronously (the memory store, see `SyncTupleSource` in engine/reader.ts).
 *
 * One check is one synchronous call: no promise and no microtask per
 * sub-problem, which is where the asynchronous evaluator spends most of its
 * time on in-memory data (docs/check.md, "Measured").
 *
 * The rules are the table's (rules.ts), shared with the asynchronous
 * evaluator (resolve_async.ts): depth limit, cycle on the path, memo and path
 * memo, monotone reachability, dispatch budget, the self-defining userset,
 * and how errors meet answers in union, intersection and exclusion. What is
 * this evaluator's own is the order: operands run one after another, left to
 * right, and stop as soon as the operator has decided, where the asynchronous
 * evaluator starts them together and cancels the rest. A decided operator's
 * answer does not depend on which operand decided it (pinned by the property
 * "the synchronous and asynchronous evaluators answer alike" in
 * test/engine/engine.property.test.ts).
 *
 * Nested sub-problems are resolved here, not dispatched back to the head of
 * the resolver chain: a cache wrapping the evaluator sees top-level requests
 * only, which is where its hits come from.
 */
import type { Userset } from '../model.ts';
import type { ParsedUser } from '../tuple.ts';
import { type PathNode, type ResolutionContext, type ResolveCheckRequest, type ResolveCheckResult, problemKey } from './check_resolver.ts';
import {
  Combination,
  FALSE,
  RULES,
  THIS_USERSETS,
  THIS_WILDCARD,
  TRUE,
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
/** Resolves `req` synchronously; `ctx.reader.sync` must be set. Throws what the asynchronous evaluator rejects with. */
export function resolveSync(req: ResolveCheckRequest, ctx: ResolutionContext): R {
  return resolve(req.objectType, req.objectId, req.relation, req.user, req.depth, req.path, ctx);
}

function resolve(objectType: string, objectId: string, relation: string, user: ParsedUser, depth: number, parent: PathNode | undefined, ctx: ResolutionContext): R {
  const key = problemKey(objectType, objectId, relation, user);
  const early = enter(ctx, key, objectType, objectId, relation, user, depth, parent);
  if (early !== undefined) return early;
  return leave(ctx, key, rewrite(rewriteOf(ctx, objectType, relation), objectType, objectId, relation, user, depth, { key, parent }, ctx));
}

function dispatch(objectType: string, objectId: string, relation: string, user: ParsedUser, depth: number, path: PathNode, ctx: ResolutionContext): R {
  return dispatched(resolve(objectType, objectId, relation, user, depth + 1, path, ctx));
}

function rewrite(rw: Userset, objectType: string, objectId: string, relation: string, user: ParsedUser, depth: number, path: PathNode, ctx: ResolutionContext): R {
  if ('this' in rw) return direct(objectType, objectId, relation, user, depth, path, ctx);
  if ('computedUserset' in rw) return dispatch(objectType, objectId, rw.computedUserset.relation ?? '', user, depth, path, ctx);
  if ('tupleToUserset' in rw) {
    return ttu(rw.tupleToUserset.tupleset.relation ?? '', rw.tupleToUserset.computedUserset.relation ?? '', objectType, objectId, user, depth, path, ctx);
  }
  let operands: readonly Userset[];
  let combination: Combination;
  if ('union' in rw) {
    operands = rw.union.child;
    if (operands.length === 1) return rewrite(operands[0]!, objectType, objectId, relation, user, depth, path, ctx);
    combination = new Combination(RULES.union);
  } else if ('intersection' in rw) {
    operands = rw.intersection.child;
    combination = new Combination(RULES.intersection);
  } else if ('difference' in rw) {
    operands = [rw.difference.base, rw.difference.subtract];
    combination = new Combination(RULES.exclusion);
  } else {
    throw unknownRewrite();
  }
  for (let i = 0; i < operands.length; i++) {
    let r: R;
    try {
      r = rewrite(operands[i]!, objectType, objectId, relation, user, depth, path, ctx);
    } catch (err) {
      combination.fail(i, err);
      continue;
    }
    const decided = combination.add(i, r);
    if (decided !== undefined) return decided;
  }
  return combination.result();
}

function direct(objectType: string, objectId: string, relation: string, user: ParsedUser, depth: number, path: PathNode, ctx: ResolutionContext): R {
  const reader = ctx.reader;
  const operands = thisOperands(ctx.ts.restrictions(objectType, relation), user);
  // The union of `this` (rules.ts): the exact tuple, the wildcard, the usersets' members.
  const u = new Combination(RULES.union);
  // 1. The exact tuple.
  try {
    const t = reader.userTupleSync(objectType, objectId, relation, userString(user));
    if (t !== undefined && conditionHolds(ctx, t.tuple)) return TRUE;
  } catch (err) {
    u.fail(0, err);
  }
  // 2. A public wildcard `type:*`, when the model admits it for the user's type.
  if ((operands & THIS_WILDCARD) !== 0) {
    try {
      const t = reader.userTupleSync(objectType, objectId, relation, `${user.type}:*`);
      if (t !== undefined && conditionHolds(ctx, t.tuple)) return TRUE;
    } catch (err) {
      u.fail(1, err);
    }
  }
  // 3. Usersets `type:id#rel`: the user holds the relation when it is in one of them.
  if ((operands & THIS_USERSETS) !== 0) {
    try {
      const tuples = reader.objectRelationSync(objectType, objectId, relation, 'usersets');
      const members = new Combination(RULES.union);
      for (let i = 0; i < tuples.length; i++) {
        const t = tuples[i]!;
        const us = t.user;
        if (us.kind !== 'userset') continue;
        try {
          if (!conditionHolds(ctx, t.tuple)) continue;
          const decided = members.add(i, dispatch(us.type, us.id, us.relation, user, depth, path, ctx));
          if (decided !== undefined) return decided;
        } catch (err) {
          members.fail(i, err);
        }
      }
      const decided = u.add(2, members.result());
      if (decided !== undefined) return decided;
    } catch (err) {
      u.fail(2, err);
    }
  }
  return u.result();
}

function ttu(tupleset: string, target: string, objectType: string, objectId: string, user: ParsedUser, depth: number, path: PathNode, ctx: ResolutionContext): R {
  const tuples = ctx.reader.objectRelationSync(objectType, objectId, tupleset, 'all');
  if (tuples.length === 0) return FALSE;
  // The union of a tuple-to-userset (rules.ts): one dispatch per parent.
  const u = new Combination(RULES.union);
  for (let i = 0; i < tuples.length; i++) {
    const t = tuples[i]!;
    const p = t.user;
    if (!ttuParent(ctx, p, target)) continue;
    try {
      if (!conditionHolds(ctx, t.tuple)) continue;
      const decided = u.add(i, dispatch(p.type, p.id, target, user, depth, path, ctx));
      if (decided !== undefined) return decided;
    } catch (err) {
      u.fail(i, err);
    }
  }
  return u.result();
}

function userString(u: ParsedUser): string {
  return u.kind === 'object' ? `${u.type}:${u.id}` : u.kind === 'wildcard' ? `${u.type}:*` : `${u.type}:${u.id}#${u.relation}`;
}
