/**
 * The AuthZEN Authorization API 1.0 (OpenID, final specification) over the
 * FGA engine, for policy enforcement points (API gateways, framework
 * middleware) that ask any compliant decision point the same way
 * (docs/authzen.md):
 *
 * | path | answers with |
 * |---|---|
 * | `POST /access/v1/evaluation` | Check |
 * | `POST /access/v1/evaluations` | Check per item (batched, or in order for the short-circuit semantics) |
 * | `POST /access/v1/search/subject` | ListUsers, paged |
 * | `POST /access/v1/search/resource` | ListObjects, paged |
 * | `POST /access/v1/search/action` | ListRelations, paged |
 * | `GET /.well-known/authzen-configuration` | the decision point's metadata |
 *
 * The paths above serve the identity server's own store (the default
 * store); with the OpenFGA API on, `/stores/{store_id}/access/v1/…` serve
 * any of its stores, whose metadata is at
 * `/.well-known/authzen-configuration/stores/{store_id}` (and, as OpenFGA
 * publishes it, `/.well-known/authzen-configuration/{store_id}`).
 *
 * - **Authentication.** Callers are gateways and services sending a bearer
 *   credential and no `Origin`; the browser CSRF rule is not applied here.
 *   Accepted: one of the OpenFGA API's preshared keys (every path), and,
 *   for the identity server's store, an access token of this server's OAuth
 *   client (`client_credentials`) or the admin-secret header. A valid user
 *   token is refused with 403 (a user may ask only about itself, through
 *   `check_permissions`); none, or an invalid one, with 401. Refusals count
 *   against the per-IP rate limit. The metadata documents are public.
 * - **Errors** (section 12.1.11): 400 for a malformed request, 401/403, 404
 *   for an unknown store, 500 for a failure of ours; the body is the
 *   server's `{code, message, reason}`. A denial is never an error: 200 with
 *   `decision: false`. In `evaluations`, an item that cannot be decided is
 *   `decision: false` with `context.error` (`status`, `message`), the batch
 *   itself succeeding.
 * - **`X-Request-ID`** is echoed (the HTTP adapter's request id).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import express, { type NextFunction, type Request, type Response, type Router } from 'express';
import { DEFAULT_STORE_ID, ERROR_STATUS, Engine, LISTING_DEADLINE_MS, LatchkeyError, STORE_ID_PATTERN, toPublicError, type CheckRequest } from '../../engine/index.ts';
import {
  action,
  badRequest,
  decodePosition,
  encodePosition,
  entity,
  entityOf,
  fgaContext,
  fgaRef,
  isObject,
  pageRequest,
  queryDigest,
  requestContext,
  type Action,
  type Entity,
  type Json,
  type PageRequest,
} from './authzen_wire.ts';

/** Who a request's credentials prove the caller to be, as far as this API cares. */
export type AuthzenCaller = 'allowed' | 'forbidden' | 'unauthenticated';

/** Options of {@link authzenApi}. */
export interface AuthzenApiOptions {
  /** The server's engine (the default store); `undefined` while FGA is off, when the API answers 404. */
  engine: () => Engine | undefined;
  /** The decision point's identifier (the server's public URL, no trailing slash). */
  issuer: string;
  /** Whether `/stores/{store_id}/access/v1/…` are served (the OpenFGA API is on). */
  stores: boolean;
  /**
   * Decides a request's credentials: `store` is `undefined` for the
   * identity server's paths, else the store id of the path.
   */
  authenticate: (req: IncomingMessage, store: string | undefined) => Promise<AuthzenCaller>;
  /** Largest request body in bytes. */
  bodyLimit: number;
  /** Logs an unexpected error with the request's id. */
  logError: (message: string, fields: Record<string, unknown>) => void;
  /** Counts a request (operation name, error code or `ok`, seconds). */
  observe?: (op: string, code: string, seconds: number) => void;
  /** Called for a refused request; resolves to the seconds to wait when the caller's failures are over their limit (429). */
  limitFailure?: (req: Request, res: Response) => Promise<number | undefined>;
}

/** One evaluation after defaults were merged: the engine's question, and what the reason text names. */
interface Evaluation {
  check: CheckRequest;
}

/** A decision on the wire. */
interface Decision {
  decision: boolean;
  context?: Json;
}

const EVALUATIONS_SEMANTICS = ['execute_all', 'deny_on_first_deny', 'permit_on_first_permit'] as const;
type Semantic = (typeof EVALUATIONS_SEMANTICS)[number];

const ENDPOINTS = {
  evaluation: '/access/v1/evaluation',
  evaluations: '/access/v1/evaluations',
  search_subject: '/access/v1/search/subject',
  search_resource: '/access/v1/search/resource',
  search_action: '/access/v1/search/action',
} as const;
type EndpointName = keyof typeof ENDPOINTS;

/**
 * The decision point's metadata (section 9): its identifier and every
 * endpoint, as absolute URLs under `base` (the issuer, or the issuer and
 * `/stores/{id}`). `capabilities` is left out: no capability is registered
 * yet, and a parameter with zero values is omitted.
 */
export function authzenMetadata(base: string): Json {
  return {
    policy_decision_point: base,
    access_evaluation_endpoint: `${base}${ENDPOINTS.evaluation}`,
    access_evaluations_endpoint: `${base}${ENDPOINTS.evaluations}`,
    search_subject_endpoint: `${base}${ENDPOINTS.search_subject}`,
    search_resource_endpoint: `${base}${ENDPOINTS.search_resource}`,
    search_action_endpoint: `${base}${ENDPOINTS.search_action}`,
  };
}

/** The AuthZEN API as an express router to mount at the root, before the OpenFGA API (which answers the same paths with 404 otherwise). */
export function authzenRouter(options: AuthzenApiOptions): Router {
  const router = express.Router({ caseSensitive: true, strict: false });
  const send = (res: ServerResponse, status: number, body: unknown): void => {
    if (res.headersSent) return;
    res.statusCode = status;
    res.setHeader('content-type', 'application/json; charset=utf-8');
    res.end(JSON.stringify(body));
  };
  const sendErr = (res: ServerResponse, err: LatchkeyError): void => send(res, ERROR_STATUS[err.code].http, err.toJSON());

  // ------------------------------------------------------------ metadata (public)

  const metadata = (store: string | undefined) => (_req: Request, res: Response): void => {
    if (options.engine() === undefined) return sendErr(res, new LatchkeyError('not_found', 'fga is not enabled on this server', { reason: 'fga_disabled' }));
    if (store !== undefined && !STORE_ID_PATTERN.test(store)) return sendErr(res, new LatchkeyError('not_found', 'no such store', { reason: 'store_not_found' }));
    res.setHeader('cache-control', 'public, max-age=300');
    send(res, 200, authzenMetadata(store === undefined ? options.issuer : `${options.issuer}/stores/${store}`));
  };
  router.get('/.well-known/authzen-configuration', metadata(undefined));
  if (options.stores) {
    router.get('/.well-known/authzen-configuration/stores/:store_id', (req, res) => metadata(req.params['store_id'] as string)(req, res));
    router.get('/.well-known/authzen-configuration/:store_id', (req, res) => metadata(req.params['store_id'] as string)(req, res));
  }

  // ------------------------------------------------------------ the access endpoints

  const parseBody = express.json({ limit: options.bodyLimit, strict: true, type: () => true });

  const mount = (prefix: string, name: EndpointName, handler: (engine: Engine, body: Json) => Promise<Json>): void => {
    const path = `${prefix}${ENDPOINTS[name]}`;
    router.post(path, (req: Request, res: Response, next: NextFunction) => {
      const started = performance.now();
      const done = (code: string): void => options.observe?.(`authzen_${name}`, code, (performance.now() - started) / 1000);
      const store = req.params['store_id'] as string | undefined;
      const fail = (err: unknown): void => {
        const e = toPublicError(err);
        if (e.code === 'internal' || e.code === 'unknown' || e.code === 'data_loss') options.logError('authzen api error', { op: name, err });
        done(e.code);
        sendErr(res, e);
      };
      options.authenticate(req, store).then((caller) => {
        if (caller !== 'allowed') {
          const err = caller === 'forbidden'
            ? new LatchkeyError('permission_denied', 'this credential may not query the decision point', { reason: 'not_a_decision_client' })
            : new LatchkeyError('unauthenticated', 'unauthorized', { reason: 'unauthenticated' });
          if (options.limitFailure === undefined) return fail(err);
          return options.limitFailure(req, res).then(
            (wait) => {
              if (wait === undefined) return fail(err);
              res.setHeader('retry-after', String(wait));
              fail(new LatchkeyError('resource_exhausted', 'too many requests', { reason: 'rate_limited' }));
            },
            () => fail(err),
          );
        }
        parseBody(req, res, (parseErr?: unknown) => {
          if (parseErr !== undefined) {
            const e = parseErr as { type?: string };
            return fail(e?.type === 'entity.too.large'
              ? new LatchkeyError('payload_too_large', 'request body too large', { reason: 'body_too_large' })
              : badRequest('the request body must be a JSON object', 'malformed_json'));
          }
          const body = req.body as unknown;
          if (!isObject(body)) return fail(badRequest('the request body must be a JSON object', 'malformed_json'));
          let engine: Engine | Promise<Engine>;
          try {
            engine = engineFor(store);
          } catch (err) {
            return fail(err);
          }
          Promise.resolve(engine)
            .then((e) => handler(e, body))
            .then((out) => {
              done('ok');
              send(res, 200, out);
            }, fail)
            .catch(next);
        });
      }, fail);
    });
  };

  /** The engine of a path: the server's for the identity server's paths and the default store, else the named store's (404 when absent). */
  const engineFor = (store: string | undefined): Engine | Promise<Engine> => {
    const root = options.engine();
    if (root === undefined) throw new LatchkeyError('not_found', 'fga is not enabled on this server', { reason: 'fga_disabled' });
    if (store === undefined || store === DEFAULT_STORE_ID) return root;
    if (!STORE_ID_PATTERN.test(store)) throw new LatchkeyError('not_found', `store '${store.slice(0, 64)}' not found`, { reason: 'store_not_found' });
    return root.readStore(store).then((record) => {
      if (record === undefined) throw new LatchkeyError('not_found', `store '${store}' not found`, { reason: 'store_not_found' });
      return root.forStore(store);
    });
  };

  for (const prefix of options.stores ? ['', '/stores/:store_id'] : ['']) {
    mount(prefix, 'evaluation', evaluationEndpoint);
    mount(prefix, 'evaluations', evaluationsEndpoint);
    mount(prefix, 'search_subject', subjectSearch);
    mount(prefix, 'search_resource', resourceSearch);
    mount(prefix, 'search_action', actionSearch);
  }
  return router;
}

// ---------------------------------------------------------------- evaluation

/** Whether the caller asked for the decision's reason (`options.include_reason: true`). */
function wantsReason(options: unknown): boolean {
  if (options === undefined || options === null) return false;
  if (!isObject(options)) throw badRequest('options must be a JSON object');
  const v = options['include_reason'];
  if (v !== undefined && typeof v !== 'boolean') throw badRequest('options.include_reason must be a boolean');
  return v === true;
}

/** One evaluation's question: subject, action and resource with ids, and the merged context. */
function evaluationOf(parts: { subject: unknown; action: unknown; resource: unknown; context: unknown }): Evaluation {
  const subject = entity(parts.subject, 'subject', true);
  const act = action(parts.action);
  const resource = entity(parts.resource, 'resource', true);
  const context = fgaContext({ subject, resource, action: act, context: requestContext(parts.context) });
  const check: CheckRequest = { user: fgaRef(subject), relation: act.name, object: fgaRef(resource) };
  if (context !== undefined) check.context = context;
  return { check };
}

/** A decision, with its reason in `context` when asked. */
function decisionOf(e: Evaluation, allowed: boolean, reason: boolean): Decision {
  if (!reason) return { decision: allowed };
  const { user, relation, object } = e.check;
  return { decision: allowed, context: { reason_admin: { en: allowed ? `${user} holds ${relation} on ${object}` : `${user} does not hold ${relation} on ${object}` } } };
}

/** An item that could not be decided: denied, with the error (section 7.2.1). */
function errorDecision(err: unknown): Decision {
  const e = toPublicError(err);
  const error: Json = { status: ERROR_STATUS[e.code].http, message: e.message, code: e.code };
  if (e.reason !== undefined) error['reason'] = e.reason;
  return { decision: false, context: { error } };
}

/** `POST …/evaluation` (section 6): one Check. A malformed request, or one the model cannot answer (unknown type or relation), is 400. */
async function evaluationEndpoint(engine: Engine, body: Json): Promise<Json> {
  const reason = wantsReason(body['options']);
  const e = evaluationOf({ subject: body['subject'], action: body['action'], resource: body['resource'], context: body['context'] });
  const r = await engine.check(e.check);
  return { ...decisionOf(e, r.allowed, reason) };
}

/**
 * `POST …/evaluations` (section 7): the top-level `subject`, `action`,
 * `resource` and `context` are defaults, each replaced whole by an item's
 * own; without items (absent or empty) the request is one evaluation and
 * answered as such. `options.evaluations_semantic`:
 * - `execute_all` (default): every item, as one batch; each answer in order;
 * - `deny_on_first_deny`: in order, stopping after the first denial (an
 *   item that cannot be decided is a denial);
 * - `permit_on_first_permit`: in order, stopping after the first permit.
 * At most the engine's batch size (`maxChecksPerBatch`, 100 by default)
 * items, else 400 (reason `too_many_evaluations`).
 */
async function evaluationsEndpoint(engine: Engine, body: Json): Promise<Json> {
  const options = body['options'];
  const reason = wantsReason(options);
  let semantic: Semantic = 'execute_all';
  if (isObject(options) && options['evaluations_semantic'] !== undefined && options['evaluations_semantic'] !== null) {
    const s = options['evaluations_semantic'];
    if (typeof s !== 'string' || !(EVALUATIONS_SEMANTICS as readonly string[]).includes(s)) {
      throw badRequest(`options.evaluations_semantic must be one of ${EVALUATIONS_SEMANTICS.join(', ')}`, 'invalid_evaluations_semantic');
    }
    semantic = s as Semantic;
  }
  const items = body['evaluations'];
  if (items === undefined || items === null || (Array.isArray(items) && items.length === 0)) return evaluationEndpoint(engine, body);
  if (!Array.isArray(items)) throw badRequest('evaluations must be a list');
  const max = engine.limits.maxChecksPerBatch;
  if (items.length > max) throw badRequest(`at most ${max} evaluations per request`, 'too_many_evaluations');
  // Each item with the defaults merged; a malformed item is that item's error, not the batch's.
  const questions: Array<Evaluation | LatchkeyError> = items.map((item: unknown, i) => {
    if (!isObject(item)) return badRequest(`evaluations[${i}] must be a JSON object`);
    const pick = (k: string): unknown => (item[k] !== undefined ? item[k] : body[k]);
    try {
      return evaluationOf({ subject: pick('subject'), action: pick('action'), resource: pick('resource'), context: pick('context') });
    } catch (err) {
      return err instanceof LatchkeyError ? err : badRequest(`evaluations[${i}] is malformed`);
    }
  });
  const out: Decision[] = [];
  if (semantic === 'execute_all') {
    const asked: Evaluation[] = [];
    for (const q of questions) if (!(q instanceof LatchkeyError)) asked.push(q);
    const answers = asked.length === 0 ? [] : await engine.batchCheck(asked.map((q) => q.check));
    let j = 0;
    for (const q of questions) {
      if (q instanceof LatchkeyError) {
        out.push(errorDecision(q));
        continue;
      }
      const a = answers[j++]!;
      out.push(a.error !== undefined ? errorDecision(a.error) : decisionOf(q, a.allowed, reason));
    }
    return { evaluations: out };
  }
  for (const q of questions) {
    let d: Decision;
    if (q instanceof LatchkeyError) d = errorDecision(q);
    else {
      try {
        d = decisionOf(q, (await engine.check(q.check)).allowed, reason);
      } catch (err) {
        d = errorDecision(err);
      }
    }
    out.push(d);
    if (semantic === 'deny_on_first_deny' && !d.decision) break;
    if (semantic === 'permit_on_first_permit' && d.decision) break;
  }
  return { evaluations: out };
}

// ---------------------------------------------------------------- search

/**
 * How long a subject or resource search page may take (the listing deadline
 * of every listing surface); past it the page answers what it found in time
 * (a scanned resource search: the resources confirmed so far; a walk still
 * computing: none), `page.properties.deadline_exceeded` and the token that
 * continues (a walk goes on computing for the next call).
 */
const SEARCH_DEADLINE_MS = LISTING_DEADLINE_MS;

/** Code-unit order, the engine's order of listings. */
const byCodeUnits = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/**
 * One page of a complete, sorted answer (the action search's, a few
 * relations): the results after the token's position, at most
 * `page.limit`, with `next_token` (empty on the last page), `count` and
 * `total`.
 */
function pageOf<T>(all: readonly string[], page: PageRequest, digest: string, wire: (s: string) => T): Json {
  let start = 0;
  if (page.token !== undefined) {
    const after = decodePosition(page.token, digest).a;
    if (after === undefined) throw badRequest('page.token is not a token of this search', 'invalid_page_token');
    // The first result greater than the last one returned (binary search over the sorted answer).
    let lo = 0;
    let hi = all.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (byCodeUnits(all[mid]!, after) <= 0) lo = mid + 1;
      else hi = mid;
    }
    start = lo;
  }
  const slice = all.slice(start, start + page.limit);
  const more = start + slice.length < all.length;
  return {
    results: slice.map(wire),
    page: { next_token: more ? encodePosition({ q: digest, a: slice[slice.length - 1]! }) : '', count: slice.length, total: all.length },
  };
}

/**
 * One page of an engine listing as a search page: the engine's continuation
 * token (which pins the walk's revision, so the pages of one walk answer at
 * one revision with no result twice and none missed) inside the search's
 * own token, bound to the search.
 */
function enginePage(res: { items: readonly string[]; next: string; total?: number | undefined; deadlineExceeded?: true | undefined }, digest: string): Json {
  const page: Json = { next_token: res.next === '' ? '' : encodePosition({ q: digest, c: res.next }), count: res.items.length };
  if (res.total !== undefined) page['total'] = res.total;
  // Stopped for the deadline: what was found in time, and the token that continues.
  if (res.deadlineExceeded === true) page['properties'] = { deadline_exceeded: true };
  return { results: res.items.map(entityOf), page };
}

/** The engine token inside a search's page token (none for the first page). */
function engineToken(page: PageRequest, digest: string): string {
  if (page.token === undefined) return '';
  const c = decodePosition(page.token, digest).c;
  if (c === undefined) throw badRequest('page.token is not a token of this search', 'invalid_page_token');
  return c;
}

/** The parts of a search that identify it, for the page token's digest. */
function searchKey(kind: string, parts: { subject?: Entity; resource?: Entity; action?: Action; context?: Json | undefined }): string {
  return queryDigest([kind, parts.subject?.type, parts.subject?.id, parts.resource?.type, parts.resource?.id, parts.action?.name, parts.context ?? null]);
}

/** `POST …/search/subject` (section 8.4): ListUsers of `subject.type` (its id ignored) holding `action` on `resource`, in the engine's pages. */
async function subjectSearch(engine: Engine, body: Json): Promise<Json> {
  const subject = entity(body['subject'], 'subject', false);
  const act = action(body['action']);
  const resource = entity(body['resource'], 'resource', true);
  const page = pageRequest(body['page']);
  const context = fgaContext({ subject, resource, action: act, context: requestContext(body['context']) });
  const digest = searchKey('subject', { subject: { type: subject.type }, resource, action: act, context });
  const res = await engine.listUsersPage(
    { object: fgaRef(resource), relation: act.name, userFilters: [{ type: subject.type }], ...(context === undefined ? {} : { context }) },
    { pageSize: page.limit, continuationToken: engineToken(page, digest), deadlineMs: SEARCH_DEADLINE_MS },
  );
  return enginePage({ items: res.users, next: res.continuationToken, total: res.total, deadlineExceeded: res.deadlineExceeded }, digest);
}

/** `POST …/search/resource` (section 8.5): ListObjects of `resource.type` (its id ignored) on which `subject` holds `action`, in the engine's pages. */
async function resourceSearch(engine: Engine, body: Json): Promise<Json> {
  const subject = entity(body['subject'], 'subject', true);
  const act = action(body['action']);
  const resource = entity(body['resource'], 'resource', false);
  const page = pageRequest(body['page']);
  const context = fgaContext({ subject, resource, action: act, context: requestContext(body['context']) });
  const digest = searchKey('resource', { subject, resource: { type: resource.type }, action: act, context });
  const res = await engine.listObjectsPage(
    { user: fgaRef(subject), relation: act.name, type: resource.type, ...(context === undefined ? {} : { context }) },
    { pageSize: page.limit, continuationToken: engineToken(page, digest), deadlineMs: SEARCH_DEADLINE_MS },
  );
  return enginePage({ items: res.objects, next: res.continuationToken, total: res.total, deadlineExceeded: res.deadlineExceeded }, digest);
}

/**
 * `POST …/search/action` (section 8.6): every relation of the resource's
 * type that the subject holds on it (ListRelations), by name. A relation
 * behind a condition whose parameters the context lacks is not listed.
 */
async function actionSearch(engine: Engine, body: Json): Promise<Json> {
  const subject = entity(body['subject'], 'subject', true);
  const resource = entity(body['resource'], 'resource', true);
  const page = pageRequest(body['page']);
  const context = fgaContext({ subject, resource, context: requestContext(body['context']) });
  const res = await engine.listRelations({ user: fgaRef(subject), object: fgaRef(resource), ...(context === undefined ? {} : { context }) });
  const all = [...res.relations].sort(byCodeUnits);
  return pageOf(all, page, searchKey('action', { subject, resource, context }), (name) => ({ name }));
}
