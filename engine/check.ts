/**
 * Check resolution: does `user` hold `relation` on `object`?
 *
 * The design follows OpenFGA's resolver chain (`internal/graph`): a
 * {@link CheckResolver} resolves one sub-problem `object#relation@user` and
 * dispatches every nested sub-problem back to the head of the chain, so a
 * cache can wrap the evaluator without the evaluator knowing (see
 * docs/check.md).
 *
 * Semantics (OpenFGA `internal/graph/check.go`; docs/check.md pins each rule
 * to the conformance test that exercises it):
 * - each dispatch adds one to the depth; reaching the depth limit (25) is an
 *   error (OpenFGA 2002), never a wrong answer;
 * - a sub-problem already on the current path is a cycle: it answers false
 *   and marks the result, and the mark makes `but not`, `and` and `or`
 *   treat it as false;
 * - union: true wins over errors, then errors over false;
 *   intersection: false (or a cycle) wins over errors, then errors over true;
 *   exclusion: base false / cycle, or subtract true / cycle, win over errors;
 * - tuple conditions are evaluated as tuples are read; a failing condition is
 *   an error of that branch only.
 *
 * Recursion is bounded: dispatch depth by the depth limit, and each
 * relation's rewrite nesting by the typesystem's nesting limit, so deep or
 * cyclic graphs cannot overflow the stack. Every sub-problem result that did
 * not meet a cycle is memoised for the rest of the request (and shared by the
 * checks of a batch), together with the depth it needed, so a memoised answer
 * is reused only where recomputing it would not have hit the depth limit.
 */
import { LatchkeyError } from './errors.ts';
import type { TupleReader } from './reader.ts';
import type { ParsedUser } from './tuple.ts';
import { fgaError, formatUser } from './tuple.ts';
import type { TypeSystem } from './typesystem.ts';
import type { Userset } from './model.ts';
import { FGA_CODES } from './validation.ts';

/** One sub-problem: `objectType:objectId#relation@user`. */
export interface ResolveCheckRequest {
  objectType: string;
  objectId: string;
  relation: string;
  user: ParsedUser;
  /** Number of dispatches that led here (0 for the request itself). */
  depth: number;
  /** The sub-problems on the path from the request to here, for cycle detection. */
  path: PathNode | undefined;
  /** Cancellation scope: set once an enclosing operator has decided. */
  scope: Scope;
}

/** The answer to a sub-problem. */
export interface ResolveCheckResult {
  allowed: boolean;
  /**
   * True when a cycle (or a cancelled branch) took part in the answer. Such
   * results depend on the path they were computed on and are never memoised
   * or cached.
   */
  cycle: boolean;
  /** The deepest dispatch depth used below this sub-problem (0 for a leaf). */
  height: number;
}

/** A link of the resolution path. */
export interface PathNode {
  key: string;
  parent: PathNode | undefined;
}

/** Cancellation of branches whose result no longer matters. */
export class Scope {
  cancelled = false;
  readonly parent: Scope | undefined;
  constructor(parent?: Scope) {
    this.parent = parent;
  }
  /** True when this scope or an enclosing one was cancelled. */
  isCancelled(): boolean {
    for (let s: Scope | undefined = this; s !== undefined; s = s.parent) if (s.cancelled) return true;
    return false;
  }
}

/** Everything a resolution shares across its sub-problems. */
export interface ResolutionContext {
  ts: TypeSystem;
  reader: TupleReader;
  /** Request context for conditions. */
  context: Record<string, unknown> | undefined;
  /** The depth limit (OpenFGA's `ResolveNodeLimit`, default 25). */
  maxDepth: number;
  /** Results of sub-problems already resolved, by {@link problemKey}. */
  memo: Map<string, ResolveCheckResult>;
  /** The head of the resolver chain: nested sub-problems are dispatched here. */
  resolver: CheckResolver;
  /** Counts dispatches, for tests and metrics. */
  stats: { dispatches: number };
}

/**
 * Resolves one sub-problem. Implementations: {@link LocalChecker}; a cache
 * layer wraps another resolver behind this same interface.
 */
export interface CheckResolver {
  resolveCheck(req: ResolveCheckRequest, ctx: ResolutionContext): Promise<ResolveCheckResult>;
}

/** The key of a sub-problem: `type:id#relation@user`. */
export function problemKey(objectType: string, objectId: string, relation: string, user: ParsedUser): string {
  return `${objectType}:${objectId}#${relation}@${formatUser(user)}`;
}

const FALSE: ResolveCheckResult = { allowed: false, cycle: false, height: 0 };
const TRUE: ResolveCheckResult = { allowed: true, cycle: false, height: 0 };
const CANCELLED: ResolveCheckResult = { allowed: false, cycle: true, height: 0 };

/** The error for exceeding the depth limit (OpenFGA 2002). */
export function depthExceeded(): LatchkeyError {
  return new LatchkeyError('failed_precondition', 'resolution too complex: the authorization model required too many rewrite rules to be resolved', {
    reason: 'resolution_too_complex',
    details: { openfga_code: FGA_CODES.resolution_too_complex },
  });
}

type Handler = () => Promise<ResolveCheckResult>;

/** OpenFGA's union: true wins; otherwise an error wins over false. */
export function union(scope: Scope, handlers: Handler[]): Promise<ResolveCheckResult> {
  if (handlers.length === 0) return Promise.resolve(FALSE);
  if (handlers.length === 1) return handlers[0]!();
  return new Promise((resolve, reject) => {
    let pending = handlers.length;
    let error: unknown;
    let cycle = false;
    let height = 0;
    let done = false;
    const settle = (): void => {
      if (--pending > 0 || done) return;
      done = true;
      if (error !== undefined) reject(error);
      else resolve({ allowed: false, cycle, height });
    };
    for (const h of handlers) {
      if (done) break;
      h().then(
        (r) => {
          if (done) return;
          if (r.allowed) {
            done = true;
            scope.cancelled = true;
            resolve({ allowed: true, cycle: r.cycle, height: r.height });
            return;
          }
          cycle ||= r.cycle;
          height = Math.max(height, r.height);
          settle();
        },
        (err: unknown) => {
          error ??= err;
          settle();
        },
      );
    }
  });
}

/** OpenFGA's intersection: false or a cycle wins; otherwise an error wins over true. */
export function intersection(scope: Scope, handlers: Handler[]): Promise<ResolveCheckResult> {
  return new Promise((resolve, reject) => {
    let pending = handlers.length;
    let error: unknown;
    let height = 0;
    let cycle = false;
    let done = false;
    for (const h of handlers) {
      if (done) break;
      h().then(
        (r) => {
          if (done) return;
          height = Math.max(height, r.height);
          if (!r.allowed || r.cycle) {
            done = true;
            scope.cancelled = true;
            resolve({ allowed: false, cycle: r.cycle, height });
            return;
          }
          cycle ||= r.cycle;
          if (--pending === 0) {
            done = true;
            if (error !== undefined) reject(error);
            else resolve({ allowed: true, cycle, height });
          }
        },
        (err: unknown) => {
          if (done) return;
          error ??= err;
          if (--pending === 0) {
            done = true;
            reject(error);
          }
        },
      );
    }
  });
}

/** OpenFGA's exclusion: base false / cycle or subtract true / cycle decide; then base error, then subtract error. */
export function exclusion(scope: Scope, base: Handler, subtract: Handler): Promise<ResolveCheckResult> {
  return new Promise((resolve, reject) => {
    let pending = 2;
    let baseError: unknown;
    let subError: unknown;
    let height = 0;
    let done = false;
    const finish = (): void => {
      if (--pending > 0 || done) return;
      done = true;
      if (baseError !== undefined) reject(baseError);
      else if (subError !== undefined) reject(subError);
      else resolve({ allowed: true, cycle: false, height });
    };
    const decide = (r: ResolveCheckResult): void => {
      done = true;
      scope.cancelled = true;
      resolve({ allowed: false, cycle: r.cycle, height: Math.max(height, r.height) });
    };
    base().then(
      (r) => {
        if (done) return;
        if (r.cycle || !r.allowed) return decide(r);
        height = Math.max(height, r.height);
        finish();
      },
      (err: unknown) => {
        baseError = err;
        finish();
      },
    );
    if (done) return;
    subtract().then(
      (r) => {
        if (done) return;
        if (r.cycle || r.allowed) return decide(r);
        height = Math.max(height, r.height);
        finish();
      },
      (err: unknown) => {
        subError = err;
        finish();
      },
    );
  });
}

function onPath(path: PathNode | undefined, key: string): boolean {
  for (let p = path; p !== undefined; p = p.parent) if (p.key === key) return true;
  return false;
}

/** The evaluator: resolves a sub-problem from the model's rewrite and the tuples. */
export class LocalChecker implements CheckResolver {
  async resolveCheck(req: ResolveCheckRequest, ctx: ResolutionContext): Promise<ResolveCheckResult> {
    if (req.scope.isCancelled()) return CANCELLED;
    if (req.depth >= ctx.maxDepth) throw depthExceeded();
    const key = problemKey(req.objectType, req.objectId, req.relation, req.user);
    if (onPath(req.path, key)) return { allowed: false, cycle: true, height: 0 };
    const memo = ctx.memo.get(key);
    if (memo !== undefined && req.depth + memo.height < ctx.maxDepth) return memo;

    const u = req.user;
    // A userset always contains itself (OpenFGA's self-defining shortcut).
    if (u.kind === 'userset' && u.type === req.objectType && u.id === req.objectId && u.relation === req.relation) return TRUE;

    const rewrite = ctx.ts.rewrite(req.objectType, req.relation);
    if (rewrite === undefined) {
      throw fgaError(`relation '${req.objectType}#${req.relation}' not found`, 'relation_not_found', FGA_CODES.validation_error);
    }
    const path: PathNode = { key, parent: req.path };
    const result = await this.#rewrite(rewrite, req, path, req.scope, ctx);
    if (!result.cycle) ctx.memo.set(key, result);
    return result;
  }

  #dispatch(
    ctx: ResolutionContext,
    parent: ResolveCheckRequest,
    path: PathNode,
    scope: Scope,
    objectType: string,
    objectId: string,
    relation: string,
  ): Promise<ResolveCheckResult> {
    ctx.stats.dispatches++;
    return ctx.resolver
      .resolveCheck({ objectType, objectId, relation, user: parent.user, depth: parent.depth + 1, path, scope }, ctx)
      .then((r) => ({ allowed: r.allowed, cycle: r.cycle, height: r.height + 1 }));
  }

  #condition(ctx: ResolutionContext, t: { condition?: { name: string; context?: Record<string, unknown> } }): boolean {
    const c = t.condition;
    if (c === undefined || c.name === '') return true;
    const compiled = ctx.ts.condition(c.name);
    if (compiled === undefined) return false;
    return compiled.evaluate(c.context, ctx.context);
  }

  #rewrite(rw: Userset, req: ResolveCheckRequest, path: PathNode, scope: Scope, ctx: ResolutionContext): Promise<ResolveCheckResult> {
    if ('this' in rw) return this.#direct(req, path, scope, ctx);
    if ('computedUserset' in rw) {
      return this.#dispatch(ctx, req, path, scope, req.objectType, req.objectId, rw.computedUserset.relation ?? '');
    }
    if ('tupleToUserset' in rw) return this.#ttu(rw.tupleToUserset.tupleset.relation ?? '', rw.tupleToUserset.computedUserset.relation ?? '', req, path, scope, ctx);
    if ('union' in rw) {
      const s = new Scope(scope);
      return union(s, rw.union.child.map((c) => () => this.#rewrite(c, req, path, s, ctx)));
    }
    if ('intersection' in rw) {
      const s = new Scope(scope);
      return intersection(s, rw.intersection.child.map((c) => () => this.#rewrite(c, req, path, s, ctx)));
    }
    if ('difference' in rw) {
      const s = new Scope(scope);
      const d = rw.difference;
      return exclusion(s, () => this.#rewrite(d.base, req, path, s, ctx), () => this.#rewrite(d.subtract, req, path, s, ctx));
    }
    return Promise.reject(new LatchkeyError('internal', 'unknown rewrite', { reason: 'unknown_rewrite' }));
  }

  #direct(req: ResolveCheckRequest, path: PathNode, scope: Scope, ctx: ResolutionContext): Promise<ResolveCheckResult> {
    const { objectType, objectId, relation, user } = req;
    const refs = ctx.ts.restrictions(objectType, relation);
    const handlers: Handler[] = [];
    // 1. The exact tuple.
    handlers.push(async () => {
      const t = await ctx.reader.userTuple(objectType, objectId, relation, formatUser(user));
      return t !== undefined && this.#condition(ctx, t.tuple) ? TRUE : FALSE;
    });
    // 2. A public wildcard `type:*`, when the model admits it for the user's type.
    if (user.kind === 'object' && refs.some((r) => r.type === user.type && r.wildcard !== undefined)) {
      handlers.push(async () => {
        const t = await ctx.reader.userTuple(objectType, objectId, relation, `${user.type}:*`);
        return t !== undefined && this.#condition(ctx, t.tuple) ? TRUE : FALSE;
      });
    }
    // 3. Usersets `type:id#rel`: the user holds the relation when it is in one of them.
    if (refs.some((r) => r.relation !== undefined)) {
      handlers.push(async () => {
        const tuples = await ctx.reader.objectRelation(objectType, objectId, relation, 'usersets');
        if (tuples.length === 0) return FALSE;
        const s = new Scope(scope);
        return union(
          s,
          tuples.map((t) => async () => {
            if (t.user.kind !== 'userset') return FALSE;
            if (!this.#condition(ctx, t.tuple)) return FALSE;
            return this.#dispatch(ctx, req, path, s, t.user.type, t.user.id, t.user.relation);
          }),
        );
      });
    }
    return union(new Scope(scope), handlers);
  }

  async #ttu(
    tupleset: string,
    target: string,
    req: ResolveCheckRequest,
    path: PathNode,
    scope: Scope,
    ctx: ResolutionContext,
  ): Promise<ResolveCheckResult> {
    const tuples = await ctx.reader.objectRelation(req.objectType, req.objectId, tupleset, 'all');
    if (tuples.length === 0) return FALSE;
    const s = new Scope(scope);
    return union(
      s,
      tuples.map((t) => async () => {
        if (t.user.kind !== 'object' || ctx.ts.rewrite(t.user.type, target) === undefined) return FALSE;
        if (!this.#condition(ctx, t.tuple)) return FALSE;
        return this.#dispatch(ctx, req, path, s, t.user.type, t.user.id, target);
      }),
    );
  }
}
