/**
 * The synchronous evaluator: the same resolution as {@link LocalChecker}'s
 * asynchronous one (engine/check/local_checker.ts), for stores that answer reads
 * synchronously (the memory store, see `SyncTupleSource` in engine/reader.ts).
 *
 * One check is one synchronous call: no promise and no microtask per
 * sub-problem, which is where the asynchronous evaluator spends most of its
 * time on in-memory data (docs/check.md, "Measured").
 *
 * The rules are exactly the asynchronous evaluator's (OpenFGA's): depth limit,
 * cycle on the path, memo and path memo, monotone reachability, dispatch
 * budget, the self-defining userset, and how errors meet answers in union,
 * intersection and exclusion. The one difference is order: operands run one
 * after another, left to right, and stop as soon as the operator has decided,
 * where the asynchronous evaluator starts them together and cancels the rest.
 * A decided operator's answer does not depend on which operand decided it
 * (pinned by the property "the synchronous and asynchronous evaluators answer
 * alike" in test/engine/engine.property.test.ts).
 *
 * A top-level check of a monotone relation by a plain user, without
 * contextual tuples, is handed to the store's `reachSync` when it has one (the
 * memory store walks its graph index over numbers, see engine/graph/graph_index.ts).
 *
 * Nested sub-problems are resolved here, not dispatched back to the head of
 * the resolver chain: a cache wrapping the evaluator sees top-level requests
 * only, which is where its hits come from.
 */
import { LatchkeyError } from '../errors.ts';
import { budgetExceeded, depthExceeded, memoise, problemKey, type PathNode, type ResolutionContext, type ResolveCheckRequest, type ResolveCheckResult } from './local_checker.ts';
import type { Userset } from '../model.ts';
import type { TupleKey } from '../store.ts';
import { type ParsedUser, fgaError } from '../tuple.ts';
import { FGA_CODES } from '../validation.ts';

type R = ResolveCheckResult;
type Hits = ReadonlySet<string> | null;

const NONE: ReadonlySet<string> = new Set();
const FALSE: R = { allowed: false, cycle: false, height: 0, hits: NONE };
const TRUE: R = { allowed: true, cycle: false, height: 0, hits: NONE };
const CANCELLED: R = { allowed: false, cycle: true, height: 0, hits: null };
const TRUE_UNREUSABLE: R = { allowed: true, cycle: false, height: 0, hits: null };
const REVISIT: R = { allowed: false, cycle: true, height: 0, hits: null };

/**
 * Answers of a whole top-level check, by depth limit: height is the most a
 * resolution may use, so a cache above serves them to top-level requests only.
 */
const TOP: R[][] = [];

export function topAnswer(allowed: boolean, maxDepth: number): R {
  let pair = TOP[maxDepth];
  if (pair === undefined) {
    const height = Math.max(0, maxDepth - 1);
    pair = TOP[maxDepth] = [Object.freeze({ allowed: false, cycle: false, height, hits: NONE }), Object.freeze({ allowed: true, cycle: false, height, hits: NONE })];
  }
  return pair[allowed ? 1 : 0]!;
}

function mergeHits(a: Hits, b: Hits): Hits {
  if (a === null || b === null) return null;
  if (a.size === 0) return b;
  if (b.size === 0) return a;
  return new Set([...a, ...b]);
}

function onPath(path: PathNode | undefined, key: string): boolean {
  for (let p = path; p !== undefined; p = p.parent) if (p.key === key) return true;
  return false;
}

/** Resolves `req` synchronously; `ctx.reader.sync` must be set. Throws what the asynchronous evaluator rejects with. */
export function resolveSync(req: ResolveCheckRequest, ctx: ResolutionContext): R {
  if (req.scope.isCancelled()) return CANCELLED;
  // A top-level check of a monotone relation by a plain user is reachability: the store may walk its index directly.
  const user = req.user;
  const monotone = ctx.monotone ?? ctx.visited !== undefined;
  if (monotone && req.depth === 0 && req.path === undefined && user.kind === 'object' && !ctx.reader.hasContextualTuples) {
    const source = ctx.reader.sync!;
    if (source.reachSync !== undefined) {
      const allowed = source.reachSync(ctx.ts, req.objectType, req.objectId, req.relation, user.type, user.id, ctx, req.object, req.userText);
      if (allowed !== undefined) return topAnswer(allowed, ctx.maxDepth);
    }
  }
  return resolve(req.objectType, req.objectId, req.relation, req.user, req.depth, req.path, ctx);
}

function resolve(objectType: string, objectId: string, relation: string, user: ParsedUser, depth: number, parent: PathNode | undefined, ctx: ResolutionContext): R {
  if (depth >= ctx.maxDepth) throw depthExceeded();
  const key = problemKey(objectType, objectId, relation, user);
  if (parent !== undefined && onPath(parent, key)) return { allowed: false, cycle: true, height: 0, hits: new Set([key]) };
  if (ctx.noReuse === true) {
    if (++ctx.stats.dispatches > ctx.maxDispatches) throw budgetExceeded();
    if (user.kind === 'userset' && user.type === objectType && user.id === objectId && user.relation === relation) return TRUE_UNREUSABLE;
    const r = rewrite(rewriteOf(ctx, objectType, relation), objectType, objectId, relation, user, depth, { key, parent }, ctx);
    return { allowed: r.allowed, cycle: r.cycle, height: r.height, hits: null };
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
    if (d !== undefined && d <= depth) return REVISIT;
    ctx.visited.set(key, depth);
  }
  if (++ctx.stats.dispatches > ctx.maxDispatches) throw budgetExceeded();
  // A userset always contains itself (OpenFGA's self-defining shortcut).
  if (user.kind === 'userset' && user.type === objectType && user.id === objectId && user.relation === relation) return TRUE;
  const r = rewrite(rewriteOf(ctx, objectType, relation), objectType, objectId, relation, user, depth, { key, parent }, ctx);
  return memoise(ctx, key, r);
}

function rewriteOf(ctx: ResolutionContext, objectType: string, relation: string): Userset {
  const rw = ctx.ts.rewrite(objectType, relation);
  if (rw === undefined) throw fgaError(`relation '${objectType}#${relation}' not found`, { reason: 'relation_not_found', code: FGA_CODES.validation_error });
  return rw;
}

function dispatch(objectType: string, objectId: string, relation: string, user: ParsedUser, depth: number, path: PathNode, ctx: ResolutionContext): R {
  const r = resolve(objectType, objectId, relation, user, depth + 1, path, ctx);
  return { allowed: r.allowed, cycle: r.cycle, height: r.height + 1, hits: r.hits };
}

function condition(ctx: ResolutionContext, t: TupleKey): boolean {
  const c = t.condition;
  if (c === undefined || c.name === '') return true;
  const compiled = ctx.ts.condition(c.name);
  if (compiled === undefined) return false;
  return compiled.evaluate(c.context, ctx.context);
}

/**
 * Accumulates a union (OpenFGA's: true wins; otherwise an error wins over
 * false). `add` returns true once the union is decided by a true operand.
 */
class Union {
  cycle = false;
  height = 0;
  hits: Hits = NONE;
  error: unknown = undefined;
  found: R | undefined = undefined;

  add(r: R): boolean {
    if (r.allowed) {
      this.found = r;
      return true;
    }
    if (r.cycle) this.cycle = true;
    if (r.height > this.height) this.height = r.height;
    this.hits = mergeHits(this.hits, r.hits);
    return false;
  }

  result(): R {
    if (this.found !== undefined) return this.found;
    if (this.error !== undefined) throw this.error;
    if (!this.cycle && this.height === 0 && this.hits === NONE) return FALSE;
    return { allowed: false, cycle: this.cycle, height: this.height, hits: this.hits };
  }
}

function rewrite(rw: Userset, objectType: string, objectId: string, relation: string, user: ParsedUser, depth: number, path: PathNode, ctx: ResolutionContext): R {
  if ('this' in rw) return direct(objectType, objectId, relation, user, depth, path, ctx);
  if ('computedUserset' in rw) return dispatch(objectType, objectId, rw.computedUserset.relation ?? '', user, depth, path, ctx);
  if ('tupleToUserset' in rw) {
    return ttu(rw.tupleToUserset.tupleset.relation ?? '', rw.tupleToUserset.computedUserset.relation ?? '', objectType, objectId, user, depth, path, ctx);
  }
  if ('union' in rw) {
    const children = rw.union.child;
    if (children.length === 1) return rewrite(children[0]!, objectType, objectId, relation, user, depth, path, ctx);
    const u = new Union();
    for (const c of children) {
      try {
        if (u.add(rewrite(c, objectType, objectId, relation, user, depth, path, ctx))) break;
      } catch (err) {
        u.error ??= err;
      }
    }
    return u.result();
  }
  if ('intersection' in rw) {
    // False or a cycle wins; otherwise an error wins over true.
    let error: unknown;
    let height = 0;
    let hits: Hits = NONE;
    for (const c of rw.intersection.child) {
      let r: R;
      try {
        r = rewrite(c, objectType, objectId, relation, user, depth, path, ctx);
      } catch (err) {
        error ??= err;
        continue;
      }
      if (!r.allowed || r.cycle) return { allowed: false, cycle: r.cycle, height: r.height, hits: r.hits };
      if (r.height > height) height = r.height;
      hits = mergeHits(hits, r.hits);
    }
    if (error !== undefined) throw error;
    return { allowed: true, cycle: false, height, hits };
  }
  if ('difference' in rw) {
    // Base false / cycle or subtract true / cycle decide; then a base error, then a subtract error.
    const d = rw.difference;
    let baseError: unknown;
    let height = 0;
    let hits: Hits = NONE;
    try {
      const r = rewrite(d.base, objectType, objectId, relation, user, depth, path, ctx);
      if (r.cycle || !r.allowed) return { allowed: false, cycle: r.cycle, height: r.height, hits: r.hits };
      height = r.height;
      hits = r.hits;
    } catch (err) {
      baseError = err;
    }
    let subError: unknown;
    try {
      const r = rewrite(d.subtract, objectType, objectId, relation, user, depth, path, ctx);
      if (r.cycle || r.allowed) return { allowed: false, cycle: r.cycle, height: r.height, hits: r.hits };
      if (r.height > height) height = r.height;
      hits = mergeHits(hits, r.hits);
    } catch (err) {
      subError = err;
    }
    if (baseError !== undefined) throw baseError;
    if (subError !== undefined) throw subError;
    return { allowed: true, cycle: false, height, hits };
  }
  throw new LatchkeyError('internal', 'unknown rewrite', { reason: 'unknown_rewrite' });
}

function direct(objectType: string, objectId: string, relation: string, user: ParsedUser, depth: number, path: PathNode, ctx: ResolutionContext): R {
  const reader = ctx.reader;
  const refs = ctx.ts.restrictions(objectType, relation);
  const u = new Union();
  // 1. The exact tuple.
  try {
    const t = reader.userTupleSync(objectType, objectId, relation, userString(user));
    if (t !== undefined && condition(ctx, t.tuple)) return TRUE;
  } catch (err) {
    u.error = err;
  }
  let wildcard = false;
  let usersets = false;
  for (const r of refs) {
    if (r.relation !== undefined) usersets = true;
    else if (r.wildcard !== undefined && user.kind === 'object' && r.type === user.type) wildcard = true;
  }
  // 2. A public wildcard `type:*`, when the model admits it for the user's type.
  if (wildcard) {
    try {
      const t = reader.userTupleSync(objectType, objectId, relation, `${user.type}:*`);
      if (t !== undefined && condition(ctx, t.tuple)) return TRUE;
    } catch (err) {
      u.error ??= err;
    }
  }
  // 3. Usersets `type:id#rel`: the user holds the relation when it is in one of them.
  if (usersets) {
    try {
      const tuples = reader.objectRelationSync(objectType, objectId, relation, 'usersets');
      const inner = new Union();
      for (const t of tuples) {
        const us = t.user;
        if (us.kind !== 'userset') continue;
        try {
          if (!condition(ctx, t.tuple)) continue;
          if (inner.add(dispatch(us.type, us.id, us.relation, user, depth, path, ctx))) break;
        } catch (err) {
          inner.error ??= err;
        }
      }
      if (u.add(inner.result())) return u.result();
    } catch (err) {
      u.error ??= err;
    }
  }
  return u.result();
}

function ttu(tupleset: string, target: string, objectType: string, objectId: string, user: ParsedUser, depth: number, path: PathNode, ctx: ResolutionContext): R {
  const tuples = ctx.reader.objectRelationSync(objectType, objectId, tupleset, 'all');
  if (tuples.length === 0) return FALSE;
  const u = new Union();
  for (const t of tuples) {
    const p = t.user;
    if (p.kind !== 'object' || ctx.ts.rewrite(p.type, target) === undefined) continue;
    try {
      if (!condition(ctx, t.tuple)) continue;
      if (u.add(dispatch(p.type, p.id, target, user, depth, path, ctx))) break;
    } catch (err) {
      u.error ??= err;
    }
  }
  return u.result();
}

function userString(u: ParsedUser): string {
  return u.kind === 'object' ? `${u.type}:${u.id}` : u.kind === 'wildcard' ? `${u.type}:*` : `${u.type}:${u.id}#${u.relation}`;
}
