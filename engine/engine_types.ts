/**
 * The options, requests and results of the {@link Engine} API (re-exported by
 * index.ts, whose class documents each call).
 */
import type { CheckResolver, Consistency } from './check/check_resolver.ts';
import type { LatchkeyError } from './errors.ts';
import { DEFAULT_CONDITION_COST_LIMIT } from './conditions/compiled_condition.ts';
import type { ExpandNode } from './expand.ts';
import type { UserFilter } from './list_users.ts';
import type { AuthorizationModel } from './model.ts';
import type { TupleKey, TupleStore } from './store.ts';
/** Settings of an {@link Engine}; every key is optional. Unknown keys are rejected. */
export interface EngineOptions {
  /** Where models and tuples live. Default: a new {@link MemoryStore}. */
  store?: TupleStore;
  /**
   * Wall clock in milliseconds (default `Date.now`) that decides whether an
   * `expires_at` is in the future at write time and which tuples
   * {@link Engine.collectExpired} deletes. Stores and caches take their own
   * `now` option; tests give them all the same clock.
   */
  now?: () => number;
  /** Dispatch depth limit of Check (OpenFGA `ResolveNodeLimit`). Default 25, 1..100. */
  maxResolutionDepth?: number;
  /** Writes plus deletes per {@link Engine.write} call. Default 100, 1..10000. */
  maxTuplesPerWrite?: number;
  /** Checks per {@link Engine.batchCheck} call. Default 100, 1..1000. */
  maxChecksPerBatch?: number;
  /** Contextual tuples per request. Default 100, 0..1000. */
  maxContextualTuples?: number;
  /** Results of {@link Engine.listObjects}. Default 1000, 1..100000. */
  listObjectsMaxResults?: number;
  /** Results of {@link Engine.listUsers}. Default 1000, 1..100000. */
  listUsersMaxResults?: number;
  /** Checks resolved at once inside batchCheck, listObjects and listUsers. Default 50, 1..1000. */
  maxConcurrentChecks?: number;
  /** Default page size of {@link Engine.read}. Default 50, 1..100. */
  defaultPageSize?: number;
  /**
   * Sub-problems one Check may resolve before failing with
   * `resolution_too_complex`: bounds the time of adversarial graphs (dense
   * cycles) that the depth limit alone does not. Default 10000, 100..10000000.
   */
  maxDispatchesPerCheck?: number;
  /**
   * The evaluation cost (cel-go's runtime cost, as OpenFGA counts it) above
   * which a condition's evaluation stops with `invalid_argument`, reason
   * `condition_cost_exceeded` (OpenFGA 2000), never an answer. OpenFGA's
   * `maxConditionEvaluationCost`. Default 100, 1..10000000.
   */
  conditionCostLimit?: number;
  /**
   * Head of the resolver chain (for example a cache wrapping a
   * {@link LocalChecker}). Default: a plain {@link LocalChecker}.
   */
  resolver?: CheckResolver;
}

/** Each option's minimum, maximum and default. */
export const OPTION_RANGES = {
  maxResolutionDepth: [1, 100, 25],
  maxTuplesPerWrite: [1, 10_000, 100],
  maxChecksPerBatch: [1, 1000, 100],
  maxContextualTuples: [0, 1000, 100],
  listObjectsMaxResults: [1, 100_000, 1000],
  listUsersMaxResults: [1, 100_000, 1000],
  maxConcurrentChecks: [1, 1000, 50],
  defaultPageSize: [1, 100, 50],
  maxDispatchesPerCheck: [100, 10_000_000, 10_000],
  conditionCostLimit: [1, 10_000_000, DEFAULT_CONDITION_COST_LIMIT],
} as const;

export type Limits = { -readonly [K in keyof typeof OPTION_RANGES]: number };

/** Fields shared by the query requests. */
export interface QueryOptions {
  /** Tuples considered for this request only, never written. Validated like writes (OpenFGA 2027). */
  contextualTuples?: TupleKey[];
  /** Request context for conditions; a tuple's own context wins on key clashes. */
  context?: Record<string, unknown>;
  /** Model version id; the latest version when omitted. */
  modelId?: string;
  /** `higher_consistency` bypasses every answer cache (OpenFGA's consistency preference); default `minimize_latency`. */
  consistency?: Consistency;
  /**
   * A consistency token: the store revision a write returned
   * ({@link Engine.write}). The answer reflects at least that revision: it
   * comes from a cache or the graph mirror only when they have caught up to
   * it, otherwise from the store (as `higher_consistency`), like SpiceDB's
   * `at_least_as_fresh` ZedToken. `invalid_argument` (reason
   * `invalid_consistency_token`) unless a non-negative integer.
   */
  atLeastRevision?: number;
}

/** Does `user` hold `relation` on `object`? */
export interface CheckRequest extends QueryOptions {
  user: string;
  relation: string;
  object: string;
}

/** The answer of a Check: frozen, and the same object for every answer alike (compare `allowed`, do not add to it). */
export interface CheckResult {
  readonly allowed: boolean;
}

/** One answer of a BatchCheck, echoing its request. `error` is set (and `allowed` false) when that check failed. */
export interface BatchCheckResult {
  user: string;
  relation: string;
  object: string;
  allowed: boolean;
  error?: LatchkeyError;
}

/** Which objects of `type` does `user` hold `relation` on? */
export interface ListObjectsRequest extends QueryOptions {
  user: string;
  relation: string;
  type: string;
  /**
   * When true, an object whose Check fails only because a condition lacks parameters in `context`
   * (reason `missing_condition_parameters`) is reported in {@link ListObjectsResult.undecided} instead
   * of failing the whole call; it is never in `objects`. Off (OpenFGA's behaviour), that error fails
   * the call when fewer than the cap were found.
   */
  reportUndecided?: boolean;
}

/** An object ListObjects could not decide: a condition on the way lacked these parameters. */
export interface UndecidedObject {
  /** `type:id`. */
  object: string;
  /** The parameters the deciding condition lacked (those of the first such condition Check met). */
  missingParameters: string[];
}

/** Objects as `type:id`, sorted; `truncated` when more than the cap exist. */
export interface ListObjectsResult {
  objects: string[];
  truncated: boolean;
  /** With `reportUndecided`: the objects whose conditions lacked parameters, sorted by object. */
  undecided?: UndecidedObject[];
}

/** Where a paged listing starts: the page size, and the token of the page before (none for the first page). */
export interface ListPageOptions {
  /** 1 to 1000 results (default 100). */
  pageSize?: number;
  /** The `continuationToken` of the page before; empty or omitted for the first page. */
  continuationToken?: string;
  /** For a first page: the store revision to read at (default: the current one); ignored with a token, which pins its own. */
  atRevision?: number;
  /**
   * Milliseconds the page may take (1 to 600,000; none: no limit). A walk not
   * computed by then is answered with no results, `deadlineExceeded`, and a
   * token that resumes at the same place; the walk goes on computing, so the
   * next page from this engine finds it ready.
   */
  deadlineMs?: number;
}

/**
 * One page of a paged listing. Every page of a walk answers at the revision
 * the first page read (`revision`), with the model version it used; the
 * pages of a walk, joined, are exactly the answer at that revision, sorted,
 * each result once. `continuationToken` is empty on the last page.
 */
export interface ListObjectsPage {
  objects: string[];
  continuationToken: string;
  revision: number;
  /** How many results the whole walk has (unknown when the page stopped for its deadline). */
  total?: number;
  /** True when the page stopped for its deadline before the walk was computed: no results, and the token to resume. */
  deadlineExceeded?: true;
  /** With `reportUndecided`, on the first page only: the objects whose conditions lacked parameters. */
  undecided?: UndecidedObject[];
}

/** One page of ListUsers (see {@link ListObjectsPage}). */
export interface ListUsersPage {
  users: string[];
  continuationToken: string;
  revision: number;
  /** How many results the whole walk has (unknown when the page stopped for its deadline). */
  total?: number;
  /** True when the page stopped for its deadline before the walk was computed: no results, and the token to resume. */
  deadlineExceeded?: true;
}

/** Which relations of `object`'s type does `user` hold on `object`? */
export interface ListRelationsRequest extends QueryOptions {
  user: string;
  /** `type:id`. */
  object: string;
  /** Only these relations of the type (each must exist); every relation of the type when omitted. */
  relations?: string[];
}

/** The relations held, in the model's order; `undecided`: those whose condition lacked parameters in `context` (never in `relations`). */
export interface ListRelationsResult {
  relations: string[];
  undecided: Array<{ relation: string; missingParameters: string[] }>;
}

/** Which users matching the filter hold `relation` on `object`? */
export interface ListUsersRequest extends QueryOptions {
  object: string;
  relation: string;
  /** Exactly one filter: `{ type: 'user' }` or `{ type: 'group', relation: 'member' }`. */
  userFilters: UserFilter[];
}

/** Users as `type:id`, `type:*` or `type:id#relation`, sorted. */
export interface ListUsersResult {
  users: string[];
  truncated: boolean;
}

/** Expand `relation` on `object` one level. */
export interface ExpandRequest {
  object: string;
  relation: string;
  contextualTuples?: TupleKey[];
  modelId?: string;
}

/** OpenFGA's `UsersetTree`. */
export interface ExpandResult {
  tree: { root: ExpandNode };
}

/** Input of {@link Engine.writeModel}: OpenFGA JSON, or DSL text. */
export type ModelInput = AuthorizationModel | { dsl: string };

/** Input of {@link Engine.write}. */
export interface WriteRequest {
  writes?: TupleKey[];
  deletes?: TupleKey[];
  /** Model version the writes are validated against; the latest when omitted. */
  modelId?: string;
}

/** Filter of {@link Engine.read}: `object` is `type:id` or `type:` (every object of the type). */
export interface ReadRequest {
  user?: string;
  relation?: string;
  object?: string;
}

/** One page of tuples; `continuationToken` is `''` on the last page. */
export interface ReadResult {
  tuples: TupleKey[];
  continuationToken: string;
  /**
   * With `writtenAt: true` only: for each tuple, the time its write was
   * committed (milliseconds since the epoch; 0 when the store does not say).
   */
  writtenAt?: number[];
}
