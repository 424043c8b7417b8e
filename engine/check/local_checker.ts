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
 * cyclic graphs cannot overflow the stack; a per-check dispatch budget bounds
 * the time of dense cyclic graphs.
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
import type { TupleReader } from '../reader.ts';
import type { ParsedUser } from '../tuple.ts';
import { fgaError, formatUser } from '../tuple.ts';
import type { TypeSystem } from '../typesystem.ts';
import type { Userset } from '../model.ts';
import { FGA_CODES } from '../validation.ts';
import { resolveSync } from './resolve_sync.ts';

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
  /** `objectType:objectId` as the caller had it, when it did (saves building it again). */
  object?: string;
  /** `formatUser(user)`, when the caller had it (saves building it again). */
  userText?: string;
}

/** The answer to a sub-problem. */
export interface ResolveCheckResult {
  allowed: boolean;
  /**
   * True when a cycle was detected below: OpenFGA's `CycleDetected`, which
   * makes intersections and exclusions answer false.
   */
  cycle: boolean;
  /** The deepest dispatch depth used below this sub-problem (0 for a leaf). */
  height: number;
  /**
   * The sub-problems *above* this one on the path whose reappearance cut a
   * branch short (empty: the answer does not depend on the path, so it may be
   * memoised and cached; `null`: unknown, because a branch was cancelled, so
   * it must not be).
   */
  hits: ReadonlySet<string> | null;
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
  /** Results of sub-problems already resolved that do not depend on the path, by {@link problemKey}. */
  memo: Map<string, ResolveCheckResult>;
  /**
   * False answers that depend on the path: valid wherever all of `hits` are
   * on the path again (cycles only ever turn answers to false, so more
   * ancestors cannot turn them true).
   */
  pathMemo: Map<string, { hits: readonly string[]; height: number }[]>;
  /** Dispatches allowed per top-level resolution before giving up (bounded time on adversarial graphs). */
  maxDispatches: number;
  /**
   * Set for a top-level resolution of a monotone relation (see
   * `TypeSystem.isMonotone`): sub-problems already started, with the depth
   * they started at. A sub-problem is then resolved once per top-level
   * check (again only from a shallower depth), which keeps dense cyclic
   * union graphs linear.
   */
  visited?: Map<string, number> | undefined;
  /** Set with `visited` (true) or without it (false) by the engine: whether the top-level relation is monotone, known without touching `visited`. */
  monotone?: boolean;
  /**
   * Set when the model has cycles through intersection or exclusion operands
   * (`TypeSystem.hasCyclesThroughAndOrButNot`): answers then depend on the
   * path in ways the memo cannot describe, so nothing is memoised and every
   * result is reported with `hits: null` (never cached).
   */
  noReuse?: boolean;
  /** The head of the resolver chain: nested sub-problems are dispatched here. */
  resolver: CheckResolver;
  /** Counts dispatches of the current top-level resolution. */
  stats: { dispatches: number };
  /** The request's consistency preference: `higher_consistency` makes cache layers step aside (OpenFGA `HIGHER_CONSISTENCY`). */
  consistency?: Consistency;
}

/** OpenFGA's consistency preference; unset behaves as `minimize_latency`. */
export type Consistency = 'minimize_latency' | 'higher_consistency';

/**
 * Resolves one sub-problem. Implementations: {@link LocalChecker}; a cache
 * layer wraps another resolver behind this same interface.
 */
export interface CheckResolver {
  resolveCheck(req: ResolveCheckRequest, ctx: ResolutionContext): Promise<ResolveCheckResult>;
  /**
   * Optional: the same answer without a promise when this resolver can give
   * it synchronously (a cache hit, an in-memory store), else `undefined` (the
   * caller then uses {@link CheckResolver.resolveCheck}). Throws what
   * `resolveCheck` would reject with.
   */
  resolveCheckSync?(req: ResolveCheckRequest, ctx: ResolutionContext): ResolveCheckResult | undefined;
}

/** The key of a sub-problem: `type:id#relation@user`. */
export function problemKey(objectType: string, objectId: string, relation: string, user: ParsedUser): string {
  return `${objectType}:${objectId}#${relation}@${formatUser(user)}`;
}

const NONE: ReadonlySet<string> = new Set();
const FALSE: ResolveCheckResult = { allowed: false, cycle: false, height: 0, hits: NONE };
const TRUE: ResolveCheckResult = { allowed: true, cycle: false, height: 0, hits: NONE };
const CANCELLED: ResolveCheckResult = { allowed: false, cycle: true, height: 0, hits: null };
const TRUE_UNREUSABLE: ResolveCheckResult = { allowed: true, cycle: false, height: 0, hits: null };
/** A revisit in monotone mode: false here, and not memoisable (the answer is found elsewhere). */
const REVISIT: ResolveCheckResult = { allowed: false, cycle: true, height: 0, hits: null };

function mergeHits(a: ReadonlySet<string> | null, b: ReadonlySet<string> | null): ReadonlySet<string> | null {
  if (a === null || b === null) return null;
  if (a.size === 0) return b;
  if (b.size === 0) return a;
  return new Set([...a, ...b]);
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

type Handler = () => Promise<ResolveCheckResult>;

/**
 * OpenFGA's union: true wins; otherwise an error wins over false. At most
 * `limit` handlers run at once; the next starts when one settles, and none
 * start once the answer is known.
 */
export function union(scope: Scope, handlers: Handler[], limit = Infinity): Promise<ResolveCheckResult> {
  if (handlers.length === 0) return Promise.resolve(FALSE);
  if (handlers.length === 1) return handlers[0]!();
  return new Promise((resolve, reject) => {
    let pending = handlers.length;
    let next = 0;
    let error: unknown;
    let cycle = false;
    let height = 0;
    let hits: ReadonlySet<string> | null = NONE;
    let done = false;
    const settle = (): void => {
      if (done) return;
      if (--pending > 0) {
        launch();
        return;
      }
      done = true;
      if (error !== undefined) reject(error);
      else resolve({ allowed: false, cycle, height, hits });
    };
    const launch = (): void => {
      if (done || next >= handlers.length) return;
      const h = handlers[next++]!;
      h().then(
        (r) => {
          if (done) return;
          if (r.allowed) {
            done = true;
            scope.cancelled = true;
            resolve(r);
            return;
          }
          cycle ||= r.cycle;
          height = Math.max(height, r.height);
          hits = mergeHits(hits, r.hits);
          settle();
        },
        (err: unknown) => {
          error ??= err;
          settle();
        },
      );
    };
    for (let i = 0; i < Math.min(limit, handlers.length); i++) launch();
  });
}

/** OpenFGA's intersection: false or a cycle wins; otherwise an error wins over true. */
export function intersection(scope: Scope, handlers: Handler[]): Promise<ResolveCheckResult> {
  return new Promise((resolve, reject) => {
    let pending = handlers.length;
    let error: unknown;
    let height = 0;
    let hits: ReadonlySet<string> | null = NONE;
    let done = false;
    for (const h of handlers) {
      if (done) break;
      h().then(
        (r) => {
          if (done) return;
          if (!r.allowed || r.cycle) {
            done = true;
            scope.cancelled = true;
            resolve({ allowed: false, cycle: r.cycle, height: r.height, hits: r.hits });
            return;
          }
          height = Math.max(height, r.height);
          hits = mergeHits(hits, r.hits);
          if (--pending === 0) {
            done = true;
            if (error !== undefined) reject(error);
            else resolve({ allowed: true, cycle: false, height, hits });
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
    let hits: ReadonlySet<string> | null = NONE;
    let done = false;
    const finish = (): void => {
      if (--pending > 0 || done) return;
      done = true;
      if (baseError !== undefined) reject(baseError);
      else if (subError !== undefined) reject(subError);
      else resolve({ allowed: true, cycle: false, height, hits });
    };
    const decide = (r: ResolveCheckResult): void => {
      done = true;
      scope.cancelled = true;
      resolve({ allowed: false, cycle: r.cycle, height: r.height, hits: r.hits });
    };
    base().then(
      (r) => {
        if (done) return;
        if (r.cycle || !r.allowed) return decide(r);
        height = Math.max(height, r.height);
        hits = mergeHits(hits, r.hits);
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
        hits = mergeHits(hits, r.hits);
        finish();
      },
      (err: unknown) => {
        subError = err;
        finish();
      },
    );
  });
}

/**
 * Sub-problems dispatched at once from one userset or tuple-to-userset
 * fan-out. One at a time, with short-circuiting, lets each sibling reuse what
 * the previous ones memoised; running them all at once made dense cyclic
 * graphs explode (every path explored before any result was memoised).
 * Operands of union, intersection and exclusion still run concurrently, and
 * their reads are coalesced by the reader.
 */
const FAN_OUT = 1;

function onPath(path: PathNode | undefined, key: string): boolean {
  for (let p = path; p !== undefined; p = p.parent) if (p.key === key) return true;
  return false;
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
    return this.#resolveAsync(req, ctx);
  }

  resolveCheckSync(req: ResolveCheckRequest, ctx: ResolutionContext): ResolveCheckResult | undefined {
    // Models with cycles through `and` / `but not` answer per resolution path, and there the operand that
    // decides first (a cycle needs no read) sets the answer, as in OpenFGA: they keep the concurrent evaluator.
    if (this.#sync && ctx.reader.sync !== undefined && ctx.noReuse !== true) return resolveSync(req, ctx);
    return undefined;
  }

  async #resolveAsync(req: ResolveCheckRequest, ctx: ResolutionContext): Promise<ResolveCheckResult> {
    if (req.scope.isCancelled()) return CANCELLED;
    if (req.depth >= ctx.maxDepth) throw depthExceeded();
    const key = problemKey(req.objectType, req.objectId, req.relation, req.user);
    if (onPath(req.path, key)) return { allowed: false, cycle: true, height: 0, hits: new Set([key]) };
    if (ctx.noReuse === true) {
      if (++ctx.stats.dispatches > ctx.maxDispatches) throw budgetExceeded();
      const u = req.user;
      if (u.kind === 'userset' && u.type === req.objectType && u.id === req.objectId && u.relation === req.relation) return TRUE_UNREUSABLE;
      const rw = ctx.ts.rewrite(req.objectType, req.relation);
      if (rw === undefined) {
        throw fgaError(`relation '${req.objectType}#${req.relation}' not found`, { reason: 'relation_not_found', code: FGA_CODES.validation_error });
      }
      const r = await this.#rewrite(rw, req, { key, parent: req.path }, req.scope, ctx);
      return { allowed: r.allowed, cycle: r.cycle, height: r.height, hits: null };
    }
    const memo = ctx.memo.get(key);
    if (memo !== undefined && req.depth + memo.height < ctx.maxDepth) return memo;
    for (const m of ctx.pathMemo.get(key) ?? []) {
      if (req.depth + m.height < ctx.maxDepth && m.hits.every((h) => onPath(req.path, h))) {
        return { allowed: false, cycle: true, height: m.height, hits: new Set(m.hits) };
      }
    }
    if (ctx.visited !== undefined) {
      const d = ctx.visited.get(key);
      // Already being resolved (or resolved) from as shallow a depth: any
      // answer it has comes through that resolution.
      if (d !== undefined && d <= req.depth) return REVISIT;
      ctx.visited.set(key, req.depth);
    }
    if (++ctx.stats.dispatches > ctx.maxDispatches) throw budgetExceeded();

    const u = req.user;
    // A userset always contains itself (OpenFGA's self-defining shortcut).
    if (u.kind === 'userset' && u.type === req.objectType && u.id === req.objectId && u.relation === req.relation) return TRUE;

    const rewrite = ctx.ts.rewrite(req.objectType, req.relation);
    if (rewrite === undefined) {
      throw fgaError(`relation '${req.objectType}#${req.relation}' not found`, { reason: 'relation_not_found', code: FGA_CODES.validation_error });
    }
    const path: PathNode = { key, parent: req.path };
    const r = await this.#rewrite(rewrite, req, path, req.scope, ctx);
    return memoise(ctx, key, r);
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
    return ctx.resolver
      .resolveCheck({ objectType, objectId, relation, user: parent.user, depth: parent.depth + 1, path, scope }, ctx)
      .then((r) => ({ allowed: r.allowed, cycle: r.cycle, height: r.height + 1, hits: r.hits }));
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
          FAN_OUT,
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
      FAN_OUT,
    );
  }
}

/**
 * Records the result of sub-problem `key` for the rest of the resolution
 * (both evaluators): hits on `key` itself are dropped (they recur on every
 * path); a result that depends on no ancestor goes to the memo, a false one
 * that does to the path memo (the last 16 per sub-problem) with the ancestors
 * it met. Returns the result as recorded.
 */
export function memoise(ctx: ResolutionContext, key: string, r: ResolveCheckResult): ResolveCheckResult {
  if (r.hits === null) return r;
  let hits = r.hits;
  if (hits.has(key)) {
    const rest = new Set(hits);
    rest.delete(key);
    hits = rest;
  }
  const result: ResolveCheckResult = hits === r.hits ? r : { allowed: r.allowed, cycle: r.cycle, height: r.height, hits };
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
