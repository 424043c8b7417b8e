/**
 * The REST fast path: an operation request (`/v1/<row>` with its method) that
 * needs nothing express adds is served straight from node's request and
 * response, with the same guards in the same order as the express stack of
 * `app.ts`: request id, client IP and security headers, CORS headers, the
 * per-IP rate limit, the CSRF origin check, the JSON body (limit, media type,
 * strict parse), then the pipeline. Each guard is the very function the
 * express middleware calls (guards.ts), so the two paths cannot drift. The
 * request id, security, CORS and rate-limit headers are written with the
 * answer in one `writeHead` (guards.ts `sendJson`, `headersNow`).
 *
 * Why: express 5 alone (its router, the request/response prototype swap,
 * body-parser and raw-body) costs about as much CPU per request as the whole
 * operation; a bare express app with `express.json()` answered 7-11 k req/s
 * where bare `node:http` answered 17 k on the same machine (docs/performance.md,
 * Server path).
 *
 * A request takes this path only when its answer could not differ from the
 * express stack's; everything else falls through to express unchanged:
 * - the path (before `?`) is exactly a row's REST path and the method is that
 *   row's (a preflight, HEAD, a wrong method, a trailing slash, another case
 *   are express's);
 * - it has no body, or a body with `Content-Length` within the limit, no
 *   `Content-Encoding` and a media type of exactly `application/json`,
 *   optionally `; charset=utf-8` (a chunked, compressed, oversized or
 *   otherwise typed body is express's, whose parser and errors apply; so is
 *   an empty one declared with `Content-Length: 0` and another media type or
 *   charset, which express's parser checks before reading);
 * - a GET carries no body at all.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { LatchkeyError } from '../../engine/errors.ts';
import { rateLimitKey } from '../../server/index.ts';
import type { RateLimiter } from '../../server/index.ts';
import type { AnyOperation } from '../../api/index.ts';
import { rateLimitHeaders, rateLimited, type HttpLocals } from './guards.ts';
import { collectBody } from './body_capture.ts';

export interface RestFastPathOptions {
  /** REST path → method → row (the same map the express `/v1` handler uses). */
  routes: ReadonlyMap<string, ReadonlyMap<string, AnyOperation>>;
  /** `--http-body-limit`, bytes. */
  bodyLimit: number;
  /**
   * Request id, client IP, start time, and the security and CORS headers (the
   * first express middlewares), which may be deferred to the answer
   * (guards.ts `HttpLocals.deferred`).
   */
  begin(req: IncomingMessage, res: ServerResponse): HttpLocals;
  /** The CSRF refusal or undefined (guards.ts `csrfRefusal`). */
  csrf(req: IncomingMessage, path: string): LatchkeyError | undefined;
  rateLimiter: RateLimiter;
  /** Answers a refusal before any operation ran (and counts it, as the express error exit does). */
  reject(res: ServerResponse, locals: HttpLocals, err: LatchkeyError): void;
  /** Runs the row with its raw input and answers (the express `/v1` handler's second half). */
  serve(op: AnyOperation, req: IncomingMessage, res: ServerResponse, locals: HttpLocals, input: unknown): void;
}

/** Media types the fast path parses itself: JSON in UTF-8, the default charset of body-parser. */
const PLAIN_JSON = /^application\/json(?:\s*;\s*charset="?utf-8"?)?\s*$/i;

/** Whitespace JSON allows before a value (RFC 8259 §2). */
const isJsonSpace = (c: number): boolean => c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d;

/**
 * Parses a body as express.json({ strict: true }) does: empty is `{}`, a
 * leading UTF-8 byte order mark is dropped (iconv-lite drops it), the first
 * non-space character must open an object or an array. Throws
 * `invalid_argument` (reason `malformed_json`) otherwise.
 */
export function parseJsonBody(text: string): unknown {
  const body = text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
  if (body.length === 0) return {};
  let i = 0;
  while (i < body.length && isJsonSpace(body.charCodeAt(i))) i++;
  const first = body[i];
  const malformed = (cause?: unknown): LatchkeyError => new LatchkeyError('invalid_argument', 'malformed JSON body', { reason: 'malformed_json', cause });
  if (first !== '{' && first !== '[') throw malformed();
  try {
    return JSON.parse(body) as unknown;
  } catch (err) {
    throw malformed(err);
  }
}

/**
 * Builds the fast path. The returned function answers the request and
 * returns true, or returns false without touching the request or response
 * (express then serves it).
 */
export function restFastPath(o: RestFastPathOptions): (req: IncomingMessage, res: ServerResponse) => boolean {
  return (req, res) => {
    const url = req.url ?? '';
    const q = url.indexOf('?');
    const path = q < 0 ? url : url.slice(0, q);
    const op = o.routes.get(path)?.get(req.method ?? '');
    if (op === undefined) return false;
    const h = req.headers;
    const length = h['content-length'];
    const hasBody = h['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
    if (hasBody) {
      if (req.method !== 'POST' || h['transfer-encoding'] !== undefined || h['content-encoding'] !== undefined) return false;
      if (!PLAIN_JSON.test(h['content-type'] ?? '')) return false;
      const n = Number(length);
      if (!Number.isSafeInteger(n) || n < 0 || n > o.bodyLimit) return false;
    } else if (length !== undefined && h['content-type'] !== undefined && !PLAIN_JSON.test(h['content-type'])) {
      // `Content-Length: 0` is a body to express's parser, which checks its media type and charset first.
      return false;
    }

    const locals = o.begin(req, res);
    // Taken while the request event runs, before the parser has pushed any of it (body_capture.ts).
    const body = hasBody ? collectBody(req) : undefined;
    const limiter = o.rateLimiter;
    const key = rateLimitKey(locals.clientIp);
    if (limiter.takeNow !== undefined) {
      // Counts kept in this process: decided at once, without a promise.
      const wait = limiter.takeNow(key);
      rateLimitHeaders(limiter, res, key, locals);
      if (wait === undefined) afterLimit();
      else o.reject(res, locals, rateLimited(res, wait));
    } else {
      limiter.take(key).then(
        (wait) => {
          rateLimitHeaders(limiter, res, key, locals);
          return wait === undefined ? afterLimit() : o.reject(res, locals, rateLimited(res, wait));
        },
        // As the express guard: a limiter failure lets the request through.
        () => afterLimit(),
      );
    }

    function afterLimit(): void {
      const refused = o.csrf(req, path);
      if (refused !== undefined) return o.reject(res, locals, refused);
      if (body === undefined) return o.serve(op as AnyOperation, req, res, locals, {});
      // A client that goes away mid-body gets no answer (it could not read one).
      body.whenComplete((bytes) => {
        let input: unknown;
        try {
          input = parseJsonBody(bytes.toString('utf8'));
        } catch (err) {
          return o.reject(res, locals, err as LatchkeyError);
        }
        o.serve(op as AnyOperation, req, res, locals, input);
      });
    }
    return true;
  };
}
