/**
 * HTTP guards: security headers, CORS, CSRF origin checks, per-IP rate
 * limiting. Each is a small express middleware built once from the config.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { NextFunction, Request, Response } from 'express';
import { ERROR_STATUS, LatchkeyError } from '../../engine/errors.ts';
import type { RateLimiter } from '../../server/index.ts';
import { rateLimitKey } from '../../server/index.ts';
import { endInBatch } from './end_batch.ts';

/** Per-request state the HTTP adapter keeps on `res.locals`. */
export interface HttpLocals {
  requestId: string;
  clientIp: string;
  /** `performance.now()` when the request arrived. */
  started: number;
  /**
   * True while the request id, security, CORS and rate-limit headers are not
   * on the response yet (the REST fast path): `sendJson` writes them with the
   * answer in one `writeHead`, and `headersNow` before any other answer.
   */
  deferred?: boolean;
  /** With `deferred`: the CORS answer ({@link CorsAnswer}). */
  cors?: CorsAnswer;
  /** With `deferred`: the `RateLimit-Policy` field of a counted request ({@link rateLimitHeaders}). */
  limitPolicy?: string | undefined;
  /** With `deferred`: its `RateLimit` field, as it stood when the request was counted. */
  limitStatus?: string | undefined;
}

/** Answers a request with an error (the adapter also counts it in the metrics). */
export type Reject = (req: Request, res: Response, err: LatchkeyError) => void;

const plainReject: Reject = (_req, res, err) => sendError(res, err);

export function locals(res: Response): HttpLocals {
  return res.locals as HttpLocals;
}

/** Sends an error as `{code, message}` (plus `reason` when known) with the table's status. */
export function sendError(res: ServerResponse, err: LatchkeyError): void {
  if (res.headersSent) return;
  const body = JSON.stringify(err.toJSON());
  res.statusCode = ERROR_STATUS[err.code].http;
  const wait = err.details?.['retry_after_seconds'];
  if ((err.code === 'resource_exhausted' || err.code === 'unavailable') && typeof wait === 'number') res.setHeader('retry-after', String(wait));
  res.setHeader('content-type', 'application/json; charset=utf-8');
  res.end(body);
}

/**
 * Sends an error as a GraphQL-over-HTTP response, `{"errors": [{"message",
 * "extensions": {"code", "reason"}}]}`, with the table's status: how
 * `/graphql` refuses a request before any operation runs (CSRF, rate limit,
 * body, envelope), so that a GraphQL client reads the refusal as an error
 * rather than as an empty success.
 */
export function sendGraphqlError(res: Response, err: LatchkeyError): void {
  if (res.headersSent) return;
  const extensions: Record<string, unknown> = { code: err.code };
  if (err.reason !== undefined) extensions.reason = err.reason;
  if (err.details !== undefined) extensions.details = err.details;
  res.statusCode = ERROR_STATUS[err.code].http;
  const wait = err.details?.['retry_after_seconds'];
  if (typeof wait === 'number') res.setHeader('retry-after', String(wait));
  res.setHeader('content-type', 'application/json; charset=utf-8');
  res.end(JSON.stringify({ errors: [{ message: err.message, extensions }] }));
}

/** Matches an origin against the allow-list; entries may use `*` for one DNS label, e.g. `https://*.example.com`. */
export function originMatcher(allowed: readonly string[]): (origin: string) => boolean {
  const exact = new Set<string>();
  const patterns: RegExp[] = [];
  for (const a of allowed) {
    const norm = a.replace(/\/+$/, '');
    if (norm.includes('*')) {
      const re = norm.split('*').map((p) => p.replace(/[.+?^${}()|[\]\\]/g, '\\$&')).join('[^./:]+');
      patterns.push(new RegExp(`^${re}$`, 'i'));
    } else exact.add(norm.toLowerCase());
  }
  // The entries are in lower case: an origin already in lower case (as browsers send it) is looked up as it is.
  return (origin) => exact.has(origin) || exact.has(origin.toLowerCase()) || patterns.some((p) => p.test(origin));
}

const NOSNIFF = 'nosniff';
const FRAMES = 'DENY';
const REFERRER = 'strict-origin-when-cross-origin';
const NO_STORE = 'no-store';
const JSON_UTF8 = 'application/json; charset=utf-8';

export const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'x-content-type-options': NOSNIFF,
  'x-frame-options': FRAMES,
  'referrer-policy': REFERRER,
  'cache-control': NO_STORE,
};

/** Response fields a cross-origin front end may read besides the safelisted ones: the rate limits and the request id. */
const EXPOSE_HEADERS = 'ratelimit, ratelimit-policy, retry-after, x-request-id';

/**
 * The fields a request's locals hold deferred (the request id, the security
 * headers, the CORS headers and the rate-limit fields), as names and values
 * in turn: the one list of them, for `headersNow` and for a JSON answer's
 * head. A flat list rather than an object: node walks an object given to
 * `writeHead` key by key with an own-property test, and a list of eleven
 * fields cost it about 0.4 µs less (docs/performance.md, "Thirteenth round").
 */
function deferredHead(l: HttpLocals): (string | number)[] {
  const head: (string | number)[] = ['x-request-id', l.requestId, 'x-content-type-options', NOSNIFF, 'x-frame-options', FRAMES, 'referrer-policy', REFERRER, 'cache-control', NO_STORE];
  const cors = l.cors;
  if (cors === '*') head.push('access-control-allow-origin', '*', 'access-control-expose-headers', EXPOSE_HEADERS);
  else if (cors !== undefined) {
    head.push('access-control-allow-origin', cors, 'access-control-allow-credentials', 'true', 'access-control-expose-headers', EXPOSE_HEADERS, 'vary', 'Origin');
  }
  if (l.limitPolicy !== undefined) {
    head.push('ratelimit-policy', l.limitPolicy);
    if (l.limitStatus !== undefined) head.push('ratelimit', l.limitStatus);
  }
  return head;
}

/** Writes the headers a request's locals hold deferred (see {@link HttpLocals.deferred}); nothing when none are. */
export function headersNow(res: ServerResponse, l: HttpLocals): void {
  if (l.deferred !== true) return;
  l.deferred = false;
  const head = deferredHead(l);
  for (let i = 0; i < head.length; i += 2) res.setHeader(head[i] as string, head[i + 1] as string);
}

/**
 * Answers 200 with the JSON text `body`, with the request's deferred headers when it has them; the
 * answer is written with the others of this turn of the event loop (end_batch.ts).
 */
export function sendJson(res: ServerResponse, l: HttpLocals, body: string): void {
  if (l.deferred === true && !res.headersSent) {
    l.deferred = false;
    // The body's type and length join the deferred fields: one `writeHead`. Setting the fields one at a time cost
    // node twice as much, and a single field set before (`setHeader`, a cookie) makes node remove and append each
    // field of the list in turn.
    const head = deferredHead(l);
    head.push('content-type', JSON_UTF8, 'content-length', Buffer.byteLength(body));
    res.writeHead(200, head);
  } else {
    res.statusCode = 200;
    res.setHeader('content-type', JSON_UTF8);
  }
  endInBatch(res, body);
}

/**
 * Request headers a cross-origin page may send: ours, plus those Authorizer's
 * JS SDK sends on every call (`x-authorizer-url`, `x-authorizer-client-id`,
 * read from its source) and its admin header, and those of OpenFGA's JS SDK.
 */
const ALLOW_HEADERS =
  'content-type, authorization, x-api-key, x-service-admin-secret, x-requested-with, x-request-id, x-authorizer-url, x-authorizer-client-id, x-authorizer-admin-secret, x-openfga-client-method, x-openfga-client-bulk-request-id';

const OPENFGA_PATH = /^\/stores(\/|$)/;

/**
 * CORS. With `*`: `Access-Control-Allow-Origin: *` and no credentials (a
 * browser refuses credentials with a wildcard, so a page on another origin
 * that fetches with `credentials: 'include'`, as Authorizer's SDK does, fails
 * with a CORS error until its origin is listed in `--allowed-origins`). With
 * a list: an allowed `Origin` is echoed with
 * `Access-Control-Allow-Credentials: true`, so cookie flows work across
 * origins; another origin gets no CORS headers and the browser refuses the
 * response. Preflights are answered here (204).
 */
export function cors(allowedOrigins: readonly string[]) {
  const headers = corsHeaders(allowedOrigins);
  return (req: Request, res: Response, next: NextFunction): void => {
    headers(req, res);
    if (req.method === 'OPTIONS') {
      // OpenFGA's API (transports/openfga) also writes assertions with PUT and deletes stores with DELETE.
      res.setHeader('access-control-allow-methods', OPENFGA_PATH.test(req.path) ? 'GET, POST, PUT, DELETE, OPTIONS' : 'GET, POST, OPTIONS');
      res.setHeader('access-control-allow-headers', ALLOW_HEADERS);
      res.setHeader('access-control-max-age', '600');
      res.statusCode = 204;
      res.end();
      return;
    }
    next();
  };
}

/**
 * The CORS response headers of a request that is not a preflight (see
 * {@link cors}); shared by the express middleware and the REST fast path.
 */
export function corsHeaders(allowedOrigins: readonly string[]): (req: IncomingMessage, res: ServerResponse) => void {
  const answer = corsAnswer(allowedOrigins);
  return (req, res) => setCorsHeaders(res, answer(req));
}

/** What CORS answers a request that is not a preflight: `*`, the request's allowed origin (with credentials), or nothing. */
export type CorsAnswer = '*' | string | undefined;

/** The CORS answer to a request (see {@link cors}). */
export function corsAnswer(allowedOrigins: readonly string[]): (req: IncomingMessage) => CorsAnswer {
  const wildcard = allowedOrigins.includes('*');
  const allowed = originMatcher(allowedOrigins.filter((o) => o !== '*'));
  return (req) => {
    const origin = req.headers.origin;
    if (origin === undefined) return undefined;
    if (wildcard) return '*';
    return allowed(origin) ? origin : undefined;
  };
}

function setCorsHeaders(res: ServerResponse, answer: CorsAnswer): void {
  if (answer === undefined) return;
  res.setHeader('access-control-expose-headers', EXPOSE_HEADERS);
  if (answer === '*') {
    res.setHeader('access-control-allow-origin', '*');
    return;
  }
  res.setHeader('access-control-allow-origin', answer);
  res.setHeader('access-control-allow-credentials', 'true');
  res.setHeader('vary', 'Origin');
}

const STATE_CHANGING = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);
/**
 * OAuth endpoints authenticate the client (or, at /userinfo, the bearer token) themselves, never by cookie, and are called by servers without an Origin;
 * `/authorize` is a top-level navigation from the client's site (a POST there is a GET's equal).
 */
const CSRF_EXEMPT = /^\/(?:oauth\/(?:token|revoke|introspect|par|device_authorization|register)$|userinfo$|oauth_callback\/|authorize$)/;

function refererOrigin(referer: string | undefined): string | undefined {
  if (!referer) return undefined;
  try {
    return new URL(referer).origin;
  } catch {
    return undefined;
  }
}

/**
 * CSRF (spec, Authentication/CSRF): a state-changing request must carry
 * `Origin` (or a `Referer` to derive it from), else 403. With a wildcard
 * `--allowed-origins` the origin's host must be the request's `Host`
 * (same-origin); with a list the origin must be on it.
 */
export function csrf(allowedOrigins: readonly string[], reject: Reject = plainReject) {
  const refusal = csrfRefusal(allowedOrigins);
  return (req: Request, res: Response, next: NextFunction): void => {
    const err = refusal(req, req.path);
    if (err === undefined) return next();
    reject(req, res, err);
  };
}

/**
 * The CSRF decision of {@link csrf} for a request whose path (without the
 * query) is `path`: the refusal (`permission_denied`, reason `csrf_origin`),
 * or undefined when the request may proceed. Shared by the express middleware
 * and the REST fast path.
 */
export function csrfRefusal(allowedOrigins: readonly string[]): (req: IncomingMessage, path: string) => LatchkeyError | undefined {
  const wildcard = allowedOrigins.includes('*');
  const allowed = originMatcher(allowedOrigins.filter((o) => o !== '*'));
  const refuse = (message: string): LatchkeyError => new LatchkeyError('permission_denied', message, { reason: 'csrf_origin' });
  // The host of each Origin seen, in lower case (null: not a URL). Parsing a URL cost about as much as the rest
  // of the check; browsers of a deployment send few distinct origins. Bounded, oldest dropped first.
  const hosts = new Map<string, string | null>();
  const hostOf = (origin: string): string | null => {
    let host = hosts.get(origin);
    if (host === undefined) {
      try {
        host = new URL(origin).host.toLowerCase();
      } catch {
        host = null;
      }
      if (hosts.size >= 1000) hosts.delete(hosts.keys().next().value as string);
      hosts.set(origin, host);
    }
    return host;
  };
  return (req, path) => {
    if (!STATE_CHANGING.has(req.method ?? '') || CSRF_EXEMPT.test(path)) return undefined;
    const origin = req.headers.origin ?? refererOrigin(req.headers.referer);
    if (!origin || origin === 'null') return refuse('missing Origin or Referer header');
    if (wildcard) {
      const host = hostOf(origin);
      if (host === null) return refuse('malformed Origin header');
      const own = req.headers.host ?? '';
      if (host !== own && host !== own.toLowerCase() && !allowed(origin)) return refuse('cross-origin request refused');
    } else if (!allowed(origin)) {
      return refuse('origin not allowed');
    }
    return undefined;
  };
}

/** Paths never rate limited: health and discovery. */
const RATE_EXEMPT = new Set(['/', '/healthz', '/readyz', '/health', '/.well-known/openid-configuration', '/.well-known/jwks.json', '/.well-known/oauth-protected-resource']);

/**
 * Sets the `RateLimit-Policy` and `RateLimit` fields (IETF httpapi draft,
 * see server/rate_limit.ts) of a response whose request was counted under
 * `key`; on a request whose headers are deferred (`l`), keeps them for the
 * answer's head (the status as it stands now).
 */
export function rateLimitHeaders(limiter: RateLimiter, res: ServerResponse, key: string, l?: HttpLocals): void {
  if (limiter.policy === undefined) return;
  const status = limiter.status?.(key);
  if (l?.deferred === true) {
    l.limitPolicy = limiter.policy;
    l.limitStatus = status;
    return;
  }
  res.setHeader('ratelimit-policy', limiter.policy);
  if (status !== undefined) res.setHeader('ratelimit', status);
}

/** Per-client-IP rate limit: 429 `resource_exhausted` with `Retry-After`; every counted response carries `RateLimit-Policy` and `RateLimit`. */
export function rateLimit(limiter: RateLimiter, reject: Reject = plainReject) {
  return (req: Request, res: Response, next: NextFunction): void => {
    if (RATE_EXEMPT.has(req.path)) return next();
    const key = rateLimitKey(locals(res).clientIp);
    limiter.take(key).then(
      (wait) => {
        rateLimitHeaders(limiter, res, key);
        if (wait === undefined) return next();
        reject(req, res, rateLimited(res, wait));
      },
      () => next(),
    );
  };
}

/** The refusal of a rate-limited request; sets its `Retry-After` header. */
export function rateLimited(res: ServerResponse, waitSeconds: number): LatchkeyError {
  res.setHeader('retry-after', String(waitSeconds));
  return new LatchkeyError('resource_exhausted', 'too many requests', { reason: 'rate_limited' });
}
