/**
 * The resolver chain's interface (OpenFGA's `CheckResolver`,
 * `internal/graph`): one sub-problem `object#relation@user`, its answer, and
 * what a resolution shares across its sub-problems. Every link of the chain
 * (the evaluator `LocalChecker`, the level checker, the graph mirror's and the
 * answer cache's resolvers) implements {@link CheckResolver}, and every nested
 * sub-problem is dispatched back to the head of the chain, so a layer can wrap
 * the evaluator without the evaluator knowing (docs/check.md).
 */
import type { TupleReader } from '../reader.ts';
import { type ParsedUser, formatUser } from '../tuple.ts';
import type { TypeSystem } from '../typesystem.ts';

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
 * Resolves one sub-problem. Implementations: the evaluator (`LocalChecker`), the
 * level checker; the graph mirror and the answer cache wrap another resolver
 * behind this same interface.
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

