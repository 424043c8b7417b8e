/**
 * Permission questions about the caller, answered by the FGA engine:
 * `check_permissions`, `list_permissions` and the `required_relations` of
 * `validate_jwt_token`/`validate_session` (spec, POST /v1/check_permissions).
 * Without an engine every call fails with 400 `failed_precondition`.
 */
import { createHash } from 'node:crypto';
import { LatchkeyError } from '../engine/errors.ts';
import { LISTING_DEADLINE_MS } from '../engine/index.ts';

const invalidArgument = (message: string, reason: string): LatchkeyError => new LatchkeyError('invalid_argument', message, { reason });

/** The message of `check_permissions`/`list_permissions` without an FGA store (spec, Errors). */
export const FGA_DISABLED_MESSAGE = 'fga is not enabled on this server';
/** Cap of `list_permissions` (spec, Limits). */
export const LIST_PERMISSIONS_CAP = 1000;

/** A tuple's condition on the wire: its name and the parameter values stored with it. */
export interface WireCondition {
  name: string;
  /** A JSON object (checked by {@link checkContext}). */
  context?: unknown;
}

/** A relationship tuple on the wire. */
export interface WireTuple {
  user: string;
  relation: string;
  object: string;
  condition?: WireCondition | undefined;
}

/** A request context of conditions: a JSON object, else `invalid_argument` (reason `invalid_context`). */
export function checkContext(context: unknown): Record<string, unknown> | undefined {
  if (context === undefined || context === null) return undefined;
  if (typeof context !== 'object' || Array.isArray(context)) throw invalidArgument('context must be a JSON object', 'invalid_context');
  return context as Record<string, unknown>;
}

/** What the identity service needs from the FGA engine (adapted by the composition root). */
/** One check of a {@link PermissionEngine} batch. */
export interface PermissionCheck {
  user: string;
  relation: string;
  object: string;
  contextualTuples?: readonly WireTuple[];
  context?: Record<string, unknown>;
  atLeastRevision?: number;
}

export interface PermissionEngine {
  /** One answer per request, in order. Contextual tuples are never persisted. */
  batchCheck(requests: ReadonlyArray<PermissionCheck>): Promise<boolean[]>;
  /** One check's answer: the answer itself when it is at hand, else a promise of it (errors alike: thrown or rejected). */
  check(request: PermissionCheck): boolean | Promise<boolean>;
  /**
   * Objects of `type` on which `user` holds `relation`, at most `limit`, with `truncated` when more exist;
   * `undecided`: the objects whose condition lacked parameters in `context` (never in `objects`).
   */
  listObjects(request: { user: string; relation: string; type: string; limit: number; context?: Record<string, unknown>; atLeastRevision?: number }): Promise<{
    objects: string[];
    truncated: boolean;
    undecided: ReadonlyArray<{ object: string; missingParameters: readonly string[] }>;
  }>;
  /**
   * One page of objects of `type` on which `user` holds `relation`, sorted,
   * pinned to the revision of the walk's first page (`atRevision` for a first
   * page, else the current one); `continuationToken` continues the walk
   * (empty on its last page). `undecided` on a walk's first page only.
   */
  listObjectsPage(request: {
    user: string;
    relation: string;
    type: string;
    pageSize: number;
    continuationToken: string;
    atRevision?: number;
    context?: Record<string, unknown>;
    /** Milliseconds the page may take; past them it answers what it has, `deadlineExceeded`, and the token that continues. */
    deadlineMs?: number;
  }): Promise<{ objects: string[]; continuationToken: string; revision: number; undecided: ReadonlyArray<{ object: string; missingParameters: readonly string[] }>; deadlineExceeded?: boolean }>;
  /** The relations `user` holds on `object`; `undecided`: those whose condition lacked parameters in `context` (never in `relations`). */
  listRelations(request: { user: string; object: string; context?: Record<string, unknown>; atLeastRevision?: number }): Promise<{
    relations: string[];
    undecided: ReadonlyArray<{ relation: string; missingParameters: readonly string[] }>;
  }>;
  /** Relations per object type of the current model (empty when no model is written). */
  relationsByType(): Promise<ReadonlyMap<string, readonly string[]>>;
  /**
   * Check's answer with its explanation (the engine's `explain`): a witness
   * tree when allowed, the failed branches when denied; a condition's error
   * (missing parameters) is returned in `error` rather than thrown. Absent:
   * `explain_permission` fails with `unimplemented`.
   */
  explain?(request: PermissionCheck): Promise<ExplainAnswer>;
}

/** An explained check as the engine gives it: `tree` is a JSON object (docs/engine.md, "Explain"). */
export interface ExplainAnswer {
  allowed: boolean;
  tree: unknown;
  error?: { code: string; reason?: string; message: string };
}

export interface RequiredRelation {
  relation: string;
  object: string;
}

/** `type:id`, or a bare id taken as `user:<id>` (spec, check_permissions). */
export function toSubject(user: string): string {
  return user.includes(':') ? user : `user:${user}`;
}

/** The caller as permission calls see it. */
export type CallerPrincipal =
  | { readonly kind: 'user' | 'service_account'; readonly subject: string; readonly claims?: Readonly<Record<string, unknown>> | undefined }
  | { readonly kind: 'super_admin' }
  | { readonly kind: 'anonymous' };

/** The most actors a delegation chain may name (RFC 8693 `act` nested). */
export const MAX_ACTORS = 5;

/**
 * The FGA subjects of the actors of a delegated token (RFC 8693 §4.1, the
 * `act` claim, the current actor first, prior ones nested): each actor's
 * `fga_subject`, else `user:<sub>`. Empty for a token without `act`.
 */
export function actorSubjects(claims: Readonly<Record<string, unknown>> | undefined): string[] {
  const out: string[] = [];
  let act = claims?.['act'];
  while (act !== undefined && act !== null) {
    if (typeof act !== 'object' || out.length >= MAX_ACTORS) throw new LatchkeyError('unauthenticated', 'unauthorized', { reason: 'unauthenticated' });
    const a = act as Record<string, unknown>;
    const subject = typeof a['fga_subject'] === 'string' ? a['fga_subject'] : typeof a['sub'] === 'string' ? toSubject(a['sub']) : undefined;
    if (subject === undefined) throw new LatchkeyError('unauthenticated', 'unauthorized', { reason: 'unauthenticated' });
    out.push(subject);
    act = a['act'];
  }
  return out;
}


/** What `check_permissions` answers: each check with its relation and object echoed. */
export interface CheckAnswer {
  results: Array<{ relation: string; object: string; allowed: boolean }>;
}

/** Permission checks for callers, over a {@link PermissionEngine} (or none, when FGA is off). */
export class Permissions {
  readonly #engine: PermissionEngine | undefined;
  readonly #listingDeadlineMs: number;

  /** `options.listingDeadlineMs`: how long a `list_permissions` page may take (default {@link LISTING_DEADLINE_MS}). */
  constructor(engine: PermissionEngine | undefined, options: { listingDeadlineMs?: number } = {}) {
    this.#engine = engine;
    this.#listingDeadlineMs = options.listingDeadlineMs ?? LISTING_DEADLINE_MS;
  }

  /** True when FGA is enabled (an engine was given). */
  get enabled(): boolean {
    return this.#engine !== undefined;
  }

  /** Fails with `permission_denied` unless the user holds every relation (AND; fail closed). */
  async requireRelations(userId: string, relations: readonly RequiredRelation[] | undefined, actors: readonly string[] = []): Promise<void> {
    if (relations === undefined || relations.length === 0) return;
    if (relations.length > 100) throw invalidArgument('at most 100 required relations', 'too_many_relations');
    const engine = this.#fga();
    // A delegated token (`act`) holds a relation only when the user and every actor of its chain hold it.
    const parties = [`user:${userId}`, ...actors];
    const answers = await engine.batchCheck(relations.flatMap((r) => parties.map((user) => ({ user, relation: r.relation, object: r.object }))));
    // Fail closed: every relation must be allowed (AND), for every party.
    if (answers.length !== relations.length * parties.length || answers.some((a) => a !== true)) {
      throw new LatchkeyError('permission_denied', 'required relation not satisfied', { reason: 'relation_denied' });
    }
  }

  #fga(): PermissionEngine {
    if (this.#engine === undefined) throw new LatchkeyError('failed_precondition', FGA_DISABLED_MESSAGE, { reason: 'fga_disabled' });
    return this.#engine;
  }

  /** The subject a permission call is about: the caller's, or `user` when trusted (spec rules 3–4). */
  #subjectFor(p: CallerPrincipal | undefined, user: string | undefined): string {
    if (p === undefined || p.kind === 'anonymous') throw new LatchkeyError('unauthenticated', 'unauthorized', { reason: 'unauthenticated' });
    if (p.kind === 'super_admin') {
      if (user === undefined || user === '') throw invalidArgument('user is required for a super-admin caller', 'missing_user');
      return toSubject(user);
    }
    if (user === undefined || user === '') return p.subject;
    const requested = toSubject(user);
    if (requested !== p.subject) throw new LatchkeyError('permission_denied', 'not permitted to check permissions for another user', { reason: 'subject_not_permitted' });
    return requested;
  }

  /**
   * `check_permissions`: 1 to 100 checks, answered in order with each
   * relation and object echoed; contextual tuples (with their conditions)
   * and the `context` of condition parameters apply to their one check, and
   * are never persisted. Errors: 401 without credentials, 400
   * `failed_precondition` without FGA, 400 `invalid_argument` for the count,
   * 403 `permission_denied` for a foreign `user`.
   */
  check(input: {
    checks: ReadonlyArray<{ relation: string; object: string; contextual_tuples?: readonly WireTuple[] | undefined; context?: unknown }>;
    user?: string | undefined;
    consistency_token?: string | undefined;
  }, principal: CallerPrincipal | undefined): CheckAnswer | Promise<CheckAnswer> {
    try {
      const subject = this.#subjectFor(principal, input.user);
      const engine = this.#fga();
      const checks = input.checks;
      if (!Array.isArray(checks) || checks.length < 1 || checks.length > 100) throw invalidArgument('checks must have between 1 and 100 entries', 'invalid_checks_count');
      const fresh = tokenOf(input.consistency_token);
      const actors = principal !== undefined && principal.kind !== 'super_admin' && principal.kind !== 'anonymous' ? actorSubjects(principal.claims) : [];
      if (actors.length > 0) return this.#delegatedCheck(engine, subject, actors, checks, fresh);
      const requests = checks.map((c) => ({
        user: subject,
        relation: c.relation,
        object: c.object,
        ...(c.contextual_tuples !== undefined && c.contextual_tuples.length > 0 ? { contextualTuples: c.contextual_tuples } : {}),
        ...contextOf(c.context),
        ...fresh,
      }));
      const results = (answers: readonly boolean[]): CheckAnswer => ({ results: checks.map((c, i) => ({ relation: c.relation, object: c.object, allowed: answers[i] === true })) });
      if (requests.length === 1) {
        // One check (the usual call): answered without a promise when the engine has its answer at hand.
        const one = engine.check(requests[0]!);
        return typeof one === 'boolean' ? results([one]) : one.then((a) => results([a]));
      }
      return engine.batchCheck(requests).then(results);
    } catch (err) {
      return Promise.reject(err);
    }
  }

  /**
   * `explain_permission`: why the subject (the caller's, or `user` under the
   * same trust rules as {@link check}) holds or lacks `relation` on `object`:
   * Check's answer, with a witness tree when allowed and the tree of failed
   * branches when denied. Errors as {@link check}'s, `permission_denied`
   * (reason `delegated_explain`) with a delegated token, and
   * `failed_precondition` (reason `resolution_too_complex`) past the
   * resolution limits.
   */
  async explain(input: {
    relation: string;
    object: string;
    contextual_tuples?: readonly WireTuple[] | undefined;
    context?: unknown;
    user?: string | undefined;
    consistency_token?: string | undefined;
  }, principal: CallerPrincipal | undefined): Promise<ExplainAnswer & { relation: string; object: string }> {
    const subject = this.#subjectFor(principal, input.user);
    // A delegated token's check intersects the user's authority with every actor's (#delegatedCheck); one
    // explanation of the user alone could show an allow that check_permissions denies, so none is given
    // (priority 1). The pipeline refuses delegated tokens here first (server/pipeline.ts); this holds without it.
    if (principal !== undefined && principal.kind !== 'super_admin' && principal.kind !== 'anonymous' && actorSubjects(principal.claims).length > 0) {
      throw new LatchkeyError('permission_denied', 'explain_permission is not available with a delegated token', { reason: 'delegated_explain' });
    }
    const engine = this.#fga();
    if (engine.explain === undefined) throw new LatchkeyError('unimplemented', 'explain is not available on this server', { reason: 'explain_unavailable' });
    const r = await engine.explain({
      user: subject,
      relation: input.relation,
      object: input.object,
      ...(input.contextual_tuples !== undefined && input.contextual_tuples.length > 0 ? { contextualTuples: input.contextual_tuples } : {}),
      ...contextOf(input.context),
      ...tokenOf(input.consistency_token),
    });
    return { relation: input.relation, object: input.object, ...r };
  }

  /**
   * `list_relations`: every relation of `object`'s type that the subject
   * holds on `object`, in the model's order. `user` follows
   * `check_permissions`' trust rules. A relation behind a condition whose
   * parameters `context` lacks is not listed (it is not proven); any other
   * engine error fails the call. Errors: 401 without credentials, 403 for a
   * foreign `user`, 400 `failed_precondition` without FGA, 400
   * `invalid_argument` for a malformed object or an unknown type.
   */
  async relations(input: { object: string; user?: string | undefined; context?: unknown; consistency_token?: string | undefined }, principal: CallerPrincipal | undefined): Promise<{ relations: string[] }> {
    const subject = this.#subjectFor(principal, input.user);
    const engine = this.#fga();
    const res = await engine.listRelations({ user: subject, object: input.object, ...contextOf(input.context), ...tokenOf(input.consistency_token) });
    return { relations: [...res.relations] };
  }

  /**
   * A check made with a delegated token (RFC 8693 `act`): allowed only when
   * the user and every actor of the chain are each allowed (priority 1: an
   * agent never has more authority than the user it acts for, nor than its
   * own). Contextual tuples are refused here: the caller would be vouching
   * for relationships of the very parties whose authority is intersected.
   */
  async #delegatedCheck(
    engine: PermissionEngine,
    subject: string,
    actors: readonly string[],
    checks: ReadonlyArray<{ relation: string; object: string; contextual_tuples?: readonly WireTuple[] | undefined; context?: unknown }>,
    fresh: { atLeastRevision?: number },
  ): Promise<CheckAnswer> {
    if (checks.some((c) => c.contextual_tuples !== undefined && c.contextual_tuples.length > 0)) {
      throw new LatchkeyError('permission_denied', 'contextual tuples are not accepted with a delegated token', { reason: 'delegated_contextual_tuples' });
    }
    const parties = [subject, ...actors];
    const requests = checks.flatMap((c) => parties.map((user) => ({ user, relation: c.relation, object: c.object, ...contextOf(c.context), ...fresh })));
    const answers: boolean[] = [];
    for (let i = 0; i < requests.length; i += 100) answers.push(...(await engine.batchCheck(requests.slice(i, i + 100))));
    return {
      results: checks.map((c, i) => ({ relation: c.relation, object: c.object, allowed: parties.every((_, j) => answers[i * parties.length + j] === true) })),
    };
  }

  /**
   * `list_permissions`: every (object, relation) the subject holds, narrowed
   * by `relation` and/or `object_type`, capped at 1000 with `truncated`.
   *
   * A grant behind a condition that lacks parameters in `context` (none
   * given, or not all) is neither listed nor an error: it goes to
   * `undecided_permissions` with the parameters it lacked, so that a subject
   * with one conditional tuple still gets its unconditional grants. A grant
   * is listed only when Check allows it (priority 1: a condition that was not
   * satisfied never lists its grant). Other condition errors (a context value
   * of the wrong type) fail the call with `invalid_argument`.
   */
  async list(input: {
    relation?: string | undefined;
    object_type?: string | undefined;
    user?: string | undefined;
    context?: unknown;
    consistency_token?: string | undefined;
    page_size?: number | undefined;
    continuation_token?: string | undefined;
  }, principal: CallerPrincipal | undefined): Promise<ListAnswer> {
    const answer = await this.#listOf(input, principal);
    const actors = principal !== undefined && principal.kind !== 'super_admin' && principal.kind !== 'anonymous' ? actorSubjects(principal.claims) : [];
    if (actors.length === 0 || answer.permissions.length === 0) return actors.length === 0 ? answer : { ...answer, undecided_permissions: [] };
    // A delegated token lists what the user and every actor all hold (and nothing undecided: it is not checked for the actors).
    const engine = this.#fga();
    const context = { ...contextOf(input.context), ...tokenOf(input.consistency_token) };
    const held: boolean[] = [];
    const requests = answer.permissions.flatMap((g) => actors.map((user) => ({ user, relation: g.relation, object: g.object, ...context })));
    for (let i = 0; i < requests.length; i += 100) held.push(...(await engine.batchCheck(requests.slice(i, i + 100))));
    const kept = answer.permissions.filter((_, i) => actors.every((_a, j) => held[i * actors.length + j] === true));
    return { ...answer, objects: [...new Set(kept.map((g) => g.object))], permissions: kept, undecided_permissions: [] };
  }

  async #listOf(input: Parameters<Permissions['list']>[0], principal: CallerPrincipal | undefined): Promise<ListAnswer> {
    const subject = this.#subjectFor(principal, input.user);
    const engine = this.#fga();
    const relation = input.relation === '' ? undefined : input.relation;
    const objectType = input.object_type === '' ? undefined : input.object_type;
    const relationsByType = await engine.relationsByType();
    const pairs: Array<[type: string, relation: string]> = [];
    for (const [type, relations] of relationsByType) {
      if (objectType !== undefined && type !== objectType) continue;
      for (const r of relations) if (relation === undefined || r === relation) pairs.push([type, r]);
    }
    if (objectType !== undefined && !relationsByType.has(objectType)) throw invalidArgument(`type ${objectType} not found`, 'type_not_found');
    const paged = (input.page_size !== undefined && input.page_size !== 0) || (input.continuation_token !== undefined && input.continuation_token !== '');
    if (paged) return this.#listPage(engine, subject, pairs, input);
    const capped = await this.#listCapped(engine, subject, pairs, input);
    if (!capped.truncated) return capped;
    // Capped: the same first page of a walk, with a token to continue it; a walk too large to take falls back to the capped answer.
    try {
      return await this.#listPage(engine, subject, pairs, { ...input, page_size: LIST_PERMISSIONS_CAP });
    } catch (err) {
      if (err instanceof LatchkeyError && err.reason === 'listing_too_large') return capped;
      throw err;
    }
  }

  /**
   * A page of `list_permissions`: the pairs (type, relation) in the model's
   * order, each pair's objects in the engine's revision-pinned pages, every
   * pair read at the revision of the walk's first page. The token holds the
   * pair, the engine's token within it, the revision and a digest of the
   * question (a model change that alters the pairs expires it).
   */
  async #listPage(
    engine: PermissionEngine,
    subject: string,
    pairs: ReadonlyArray<[type: string, relation: string]>,
    input: { context?: unknown; consistency_token?: string | undefined; page_size?: number | undefined; continuation_token?: string | undefined },
  ): Promise<ListAnswer> {
    const size = input.page_size === undefined || input.page_size === 0 ? LIST_PERMISSIONS_CAP : input.page_size;
    if (!Number.isInteger(size) || size < 1 || size > LIST_PERMISSIONS_CAP) throw invalidArgument(`page_size must be from 1 to ${LIST_PERMISSIONS_CAP}`, 'invalid_page_size');
    const context = contextOf(input.context);
    tokenOf(input.consistency_token);
    const digest = createHash('sha256').update(JSON.stringify([subject, pairs, context.context ?? null])).digest('base64url').slice(0, 16);
    let at = decodeListToken(input.continuation_token, digest);
    const permissions: Array<{ object: string; relation: string }> = [];
    const undecided: Array<{ object: string; relation: string; missing_parameters: string[] }> = [];
    const objects = new Set<string>();
    let { pair, inner, revision } = at ?? { pair: 0, inner: '', revision: undefined as number | undefined };
    let room = size;
    // One deadline for the whole page, across its pairs: past it the page answers what it has and the token that continues.
    const deadline = Date.now() + this.#listingDeadlineMs;
    let late = false;
    while (pair < pairs.length && room > 0) {
      const [type, r] = pairs[pair]!;
      const res = await engine.listObjectsPage({
        user: subject,
        relation: r,
        type,
        pageSize: room,
        continuationToken: inner,
        ...(inner === '' && revision !== undefined ? { atRevision: revision } : {}),
        deadlineMs: Math.max(1, deadline - Date.now()),
        ...context,
      });
      revision ??= res.revision;
      for (const object of res.objects) {
        permissions.push({ object, relation: r });
        objects.add(object);
      }
      for (const u of res.undecided) undecided.push({ object: u.object, relation: r, missing_parameters: [...u.missingParameters] });
      room -= res.objects.length;
      if (res.deadlineExceeded === true) late = true;
      if (res.continuationToken !== '') {
        inner = res.continuationToken;
        break;
      }
      pair++;
      inner = '';
    }
    at = pair < pairs.length && revision !== undefined ? { pair, inner, revision } : undefined;
    const token = at === undefined ? '' : encodeListToken(at, digest);
    return { objects: [...objects], permissions, undecided_permissions: undecided, truncated: token !== '', continuation_token: token, deadline_exceeded: late };
  }

  /** The capped `list_permissions` of old (no page asked for): at most {@link LIST_PERMISSIONS_CAP} entries, `truncated` when more exist. */
  async #listCapped(
    engine: PermissionEngine,
    subject: string,
    pairs: ReadonlyArray<[type: string, relation: string]>,
    input: { context?: unknown; consistency_token?: string | undefined },
  ): Promise<ListAnswer> {
    const context = { ...contextOf(input.context), ...tokenOf(input.consistency_token) };
    const permissions: Array<{ object: string; relation: string }> = [];
    const undecided: Array<{ object: string; relation: string; missing_parameters: string[] }> = [];
    const objects = new Set<string>();
    let truncated = false;
    for (const [type, r] of pairs) {
      const room = LIST_PERMISSIONS_CAP - permissions.length;
      if (room <= 0) {
        truncated = true;
        break;
      }
      const res = await engine.listObjects({ user: subject, relation: r, type, limit: room, ...context });
      for (const object of res.objects.slice(0, room)) {
        permissions.push({ object, relation: r });
        objects.add(object);
      }
      for (const u of res.undecided) {
        if (undecided.length >= LIST_PERMISSIONS_CAP) {
          truncated = true;
          break;
        }
        undecided.push({ object: u.object, relation: r, missing_parameters: [...u.missingParameters] });
      }
      if (res.truncated || res.objects.length > room) {
        truncated = true;
        break;
      }
    }
    return { objects: [...objects], permissions, undecided_permissions: undecided, truncated, continuation_token: '', deadline_exceeded: false };
  }
}

/** What `list_permissions` answers. */
export interface ListAnswer {
  objects: string[];
  permissions: Array<{ object: string; relation: string }>;
  undecided_permissions: Array<{ object: string; relation: string; missing_parameters: string[] }>;
  truncated: boolean;
  /** Continues the walk (empty when this page is its last). */
  continuation_token: string;
  /** True when the page stopped for the listing deadline: it holds what was found in time, and the token continues it. */
  deadline_exceeded: boolean;
}

interface ListToken {
  pair: number;
  inner: string;
  revision: number;
}

function encodeListToken(t: ListToken, digest: string): string {
  return Buffer.from(JSON.stringify([t.pair, t.inner, t.revision, digest]), 'utf8').toString('base64url');
}

/** The position a `list_permissions` token names; `invalid_argument` (reason `invalid_continuation_token`) for a token of another question. */
function decodeListToken(token: string | undefined, digest: string): ListToken | undefined {
  if (token === undefined || token === '') return undefined;
  const bad = (): LatchkeyError => invalidArgument('continuation_token must be the continuation_token of the page before, with the same request', 'invalid_continuation_token');
  let v: unknown;
  try {
    v = JSON.parse(Buffer.from(token, 'base64url').toString('utf8'));
  } catch {
    throw bad();
  }
  if (!Array.isArray(v) || v.length !== 4) throw bad();
  const [pair, inner, revision, d] = v as unknown[];
  if (typeof pair !== 'number' || !Number.isInteger(pair) || pair < 0 || typeof inner !== 'string' || typeof revision !== 'number' || !Number.isSafeInteger(revision) || d !== digest) throw bad();
  return { pair, inner, revision };
}

/**
 * A consistency token (the `consistency_token` an FGA write returned: its
 * store revision, in decimal) as the engine's "at least as fresh as" bound;
 * `invalid_argument` (reason `invalid_consistency_token`) when malformed.
 */
function tokenOf(token: string | undefined): { atLeastRevision?: number } {
  if (token === undefined || token === '') return {};
  if (!/^\d{1,15}$/u.test(token)) throw invalidArgument('consistency_token must be the token an FGA write returned', 'invalid_consistency_token');
  return { atLeastRevision: Number(token) };
}

function contextOf(context: unknown): { context?: Record<string, unknown> } {
  const c = checkContext(context);
  return c === undefined ? {} : { context: c };
}
