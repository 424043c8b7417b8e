/**
 * OpenFGA's HTTP API (v1) over the engine: the paths, bodies, status codes
 * and error codes of `openfga-v1.swagger.json`, so that OpenFGA's SDKs, the
 * `fga` CLI and the Playground can use this server (docs/openfga.md).
 *
 * - **Authentication.** OpenFGA's preshared keys: `Authorization: Bearer
 *   <key>` with one of the `--openfga-preshared-keys`, compared in constant
 *   time; none configured means the API is not mounted at all. Refused
 *   requests count against the per-IP rate limit; authenticated ones do not.
 * - **Stores.** `/stores/{store_id}/…` is served by an engine for that store
 *   ({@link Engine.forStore}); the default store (the one the identity
 *   server's own permission checks use) is served by the server's engine,
 *   with its check cache and graph mirror, so writes made here are seen by
 *   those checks at once. Other stores are answered without a cache, so no
 *   cached answer can cross stores.
 * - **AuthZEN.** `/stores/{id}/access/v1/…` and
 *   `/.well-known/authzen-configuration/…` are the AuthZEN API's
 *   (transports/authzen), mounted before this router; what reaches this
 *   router under those prefixes answers 404 `undefined_endpoint`, as OpenFGA
 *   does for a path it does not have.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import express, { type NextFunction, type Request, type Response, type Router } from 'express';
import { DEFAULT_STORE_ID, type Engine, LatchkeyError, STORE_ID_PATTERN } from '../../engine/index.ts';
import { bearerToken } from '../../server/index.ts';
import { parseJsonBody } from '../http/rest_fast.ts';
import { collectBody } from '../http/body_capture.ts';
import { headersNow, sendJson, type HttpLocals } from '../http/guards.ts';
import { invalidRequest, toOpenfga } from './openfga_errors.ts';
import type { Json } from './openfga_wire.ts';
import { type ApiRequest, type Handler, STREAMED, mountOpenfgaRoutes } from './openfga_routes.ts';

/** Options of {@link openfgaRouter}. */
export interface OpenfgaApiOptions {
  /** The server's engine (the default store); `undefined` while FGA is off, when every path answers 404. */
  engine: () => Engine | undefined;
  /** Bearer tokens accepted (OpenFGA preshared keys); at least one. */
  presharedKeys: readonly string[];
  /** Largest request body in bytes. */
  bodyLimit: number;
  /** Checks per BatchCheck (OpenFGA's `maxChecksPerBatchCheck`, default 50). */
  maxChecksPerBatchCheck?: number;
  /** Logs an unexpected error with the request's id. */
  logError: (message: string, fields: Record<string, unknown>) => void;
  /** Counts a request (operation name, error code or `ok`, seconds). */
  observe?: (op: string, code: string, seconds: number) => void;
  /**
   * Called for a request without a valid key; resolves to the seconds to
   * wait when the caller's failures are over their limit (429), else
   * `undefined`. Key guessing is thus held to the per-IP rate limit, while
   * authenticated calls are never limited.
   */
  limitFailure?: (req: Request, res: Response) => Promise<number | undefined>;
}


/** The API: the express router, and the fast path for its POST endpoints under a store. */
export interface OpenfgaApi {
  router: Router;
  /**
   * Serves `POST /stores/{store_id}/{action}` without express when the answer
   * could not differ from the router's (see {@link openfgaApi}); returns false,
   * touching nothing, otherwise. `begin` runs the guards the express stack runs
   * before the router (request id, security and CORS headers).
   */
  fast(req: IncomingMessage, res: ServerResponse, begin: (req: IncomingMessage, res: ServerResponse) => void): boolean;
  /** Counts kept as plain integers: `fastServed`, the requests `fast` took (returned true for) since the API was made. */
  readonly stats: { readonly fastServed: number };
}


const digest = (s: string): Buffer => createHash('sha256').update(s, 'utf8').digest();


/**
 * The OpenFGA API as an express router, to mount at the root. Paths other
 * than `/stores…` fall through to the next handler.
 */
export function openfgaRouter(options: OpenfgaApiOptions): Router {
  return openfgaApi(options).router;
}

/** Media types the fast path parses as body-parser's JSON parser would (UTF-8, or no charset). */
const FAST_MEDIA_TYPE = /^application\/json(?:\s*;\s*charset="?utf-8"?)?\s*$/i;
/** `/stores/{store_id}/{action}`, as the router matches it (case-sensitive; a trailing slash is the router's). */
const STORE_ACTION = /^\/stores\/([^/?#]+)\/([a-z-]+)$/;

/**
 * The OpenFGA API: an express router to mount at the root (paths other than
 * `/stores…` fall through to the next handler), and a fast path that serves
 * the POST endpoints under a store — check, batch check, expand, list objects
 * and users, read, write — straight from node's request and response, the
 * hot path of every SDK. express's router, `express.json` and their request
 * wrappers cost as much CPU per request as a cached check itself.
 *
 * A request takes the fast path only when the router would answer it the same
 * way: an exact path, `POST`, a valid preshared key (a refusal is the
 * router's, with its failure limit), a `Content-Length` body within the limit
 * with no `Content-Encoding`, and no media type or JSON in UTF-8. The handler,
 * the metrics and the answers are the router's own (one `serve` function).
 */
/** The HTTP adapter's locals of a response (express's `res.locals`; set by the fast path too). */
const localsOf = (res: ServerResponse): HttpLocals | undefined => (res as ServerResponse & { locals?: HttpLocals }).locals;
/** Writes the headers the fast path deferred, before an answer that is not `sendJson`'s. */
const headersNowOf = (res: ServerResponse): void => {
  const l = localsOf(res);
  if (l !== undefined) headersNow(res, l);
};

export function openfgaApi(options: OpenfgaApiOptions): OpenfgaApi {
  if (options.presharedKeys.length === 0) throw new Error('the OpenFGA API needs at least one preshared key');
  const keys = options.presharedKeys.map(digest);
  const maxChecks = options.maxChecksPerBatchCheck ?? 50;
  const router = express.Router({ caseSensitive: true, strict: false });
  /** Stores known to exist, and until when (ms); a store deleted in this process leaves at once. */
  const known = new Map<string, number>();
  const KNOWN_MS = 5_000;

  const send = (res: ServerResponse, status: number, body: unknown): void => {
    if (res.headersSent) return;
    const l = localsOf(res);
    // The fast path defers the request id, security and CORS headers to the answer (http/guards.ts).
    if (status === 200 && l?.deferred === true) return sendJson(res, l, JSON.stringify(body));
    headersNowOf(res);
    res.statusCode = status;
    res.setHeader('content-type', 'application/json; charset=utf-8');
    res.end(JSON.stringify(body));
  };

  /** The bearer token of an `Authorization` header (the parse every transport uses), or undefined. */
  const bearer = (header: string | undefined): string | undefined => (typeof header === 'string' ? bearerToken(header) : undefined);
  /**
   * The `Authorization` header last accepted on each connection. An SDK sends
   * the same header on every call of a keep-alive connection; comparing it
   * with the one this connection already proved tells the caller nothing of
   * the keys, and saves hashing it again.
   */
  const accepted = new WeakMap<object, string>();
  /** Whether a bearer token is one of the keys: every key compared, each in constant time. */
  const validKey = (token: string, header: string, connection: object): boolean => {
    if (accepted.get(connection) === header) return true;
    const given = digest(token);
    let ok = false;
    for (const k of keys) ok = timingSafeEqual(k, given) || ok;
    if (ok) accepted.set(connection, header);
    return ok;
  };

  // Authentication before anything, body parsing included.
  router.use('/stores', (req, res, next) => {
    const header = req.headers.authorization;
    const token = bearer(header);
    const ok = token !== undefined && validKey(token, header as string, req.socket);
    if (ok) return next();
    const refuse = (): void =>
      token === undefined ? send(res, 401, { code: 'bearer_token_missing', message: 'missing bearer token' }) : send(res, 401, { code: 'unauthenticated', message: 'unauthenticated' });
    if (options.limitFailure === undefined) return refuse();
    options.limitFailure(req, res).then(
      (wait) => {
        if (wait === undefined) return refuse();
        res.setHeader('retry-after', String(wait));
        send(res, 429, { code: 'resource_exhausted', message: 'too many requests' });
      },
      () => refuse(),
    );
  });
  router.use('/stores', express.json({ limit: options.bodyLimit, strict: true, type: () => true }));

  /**
   * The engine of a store: at once for the default store and for a store
   * known to exist, else a promise after reading it (`not_found` when it is
   * not there). Throws `validation_error` for an id that is not a ULID.
   */
  const storeEngine = (root: Engine, id: string): Engine | Promise<Engine> => {
    if (!STORE_ID_PATTERN.test(id)) throw invalidRequest(`invalid store id '${id}': a store id is a ULID`);
    if (id !== DEFAULT_STORE_ID) {
      const until = known.get(id);
      if (until === undefined || until < Date.now()) {
        return root.readStore(id).then((store) => {
          if (store === undefined) {
            known.delete(id);
            throw new LatchkeyError('not_found', `store '${id}' not found`, { reason: 'store_not_found' });
          }
          if (known.size >= 10_000) known.clear();
          known.set(id, Date.now() + KNOWN_MS);
          return root.forStore(id);
        });
      }
    }
    return root.forStore(id);
  };

  /** POST endpoints under a store, by action (the last path segment), for the fast path. */
  const storeActions = new Map<string, (req: ApiRequest, res: ServerResponse) => void>();

  const route = (method: 'get' | 'post' | 'put' | 'delete', path: string, op: string, status: number, handler: Handler, perStore = true): void => {
    const serve = (req: ApiRequest, res: ServerResponse): Promise<void> => {
      const started = performance.now();
      const done = (code: string): void => options.observe?.(`openfga_${op}`, code, (performance.now() - started) / 1000);
      const root = options.engine();
      if (root === undefined) {
        done('undefined_endpoint');
        send(res, 404, { code: 'undefined_endpoint', message: 'fga is not enabled on this server' });
        return Promise.resolve();
      }
      const storeId = req.params['store_id'];
      let answer: Promise<Json | undefined | typeof STREAMED>;
      try {
        const engine = perStore && storeId !== undefined ? storeEngine(root, storeId) : root;
        answer = engine instanceof Promise ? engine.then((e) => handler(e, req, res)) : handler(engine, req, res);
      } catch (err) {
        answer = Promise.reject(err);
      }
      return answer
        .then(
          (body) => {
            done('ok');
            if (body === STREAMED) return;
            if (status === 204) {
              headersNowOf(res);
              res.statusCode = 204;
              res.end();
              return;
            }
            send(res, status, body ?? {});
          },
          (err: unknown) => {
            const out = toOpenfga(err);
            if (out.status >= 500) options.logError('openfga api error', { op, err });
            done(out.body.code);
            send(res, out.status, out.body);
          },
        );
    };
    router[method](path, (req: Request, res: Response, next: NextFunction) => {
      serve(req as ApiRequest, res).catch(next);
    });
    const action = /^\/stores\/:store_id\/([a-z-]+)$/.exec(path)?.[1];
    if (method === 'post' && action !== undefined) {
      storeActions.set(action, (req, res) => {
        serve(req, res).catch((err: unknown) => {
          options.logError('openfga api error', { op, err });
          send(res, 500, { code: 'internal_error', message: 'Internal Server Error' });
        });
      });
    }
  };

  mountOpenfgaRoutes(route, {
    maxChecks,
    forget: (id) => known.delete(id),
    headersNow: headersNowOf,
    logError: options.logError,
  });

  // Anything else under /stores: OpenFGA's answer for an unknown path.
  router.use('/stores', (_req, res) => send(res, 404, { code: 'undefined_endpoint', message: 'Endpoint not enabled' }));
  router.use('/.well-known/authzen-configuration', (_req, res) => send(res, 404, { code: 'undefined_endpoint', message: 'Endpoint not enabled' }));
  // Body parse errors (and anything thrown synchronously) in OpenFGA's shape.
  router.use('/stores', (err: unknown, _req: Request, res: Response, _next: NextFunction) => {
    void _next;
    const e = err as { type?: string; status?: number };
    if (e?.type === 'entity.too.large') return send(res, 413, { code: 'validation_error', message: 'request body too large' });
    if (e?.type === 'entity.parse.failed' || e?.status === 400) return send(res, 400, { code: 'validation_error', message: 'invalid JSON body' });
    options.logError('openfga api error', { err });
    send(res, 500, { code: 'internal_error', message: 'Internal Server Error' });
  });

  const stats = { fastServed: 0 };
  const fast = (req: IncomingMessage, res: ServerResponse, begin: (req: IncomingMessage, res: ServerResponse) => void): boolean => {
    if (req.method !== 'POST') return false;
    const m = STORE_ACTION.exec(req.url ?? '');
    if (m === null) return false;
    const serve = storeActions.get(m[2]!);
    if (serve === undefined) return false;
    const h = req.headers;
    const length = h['content-length'];
    if (length === undefined || h['transfer-encoding'] !== undefined || h['content-encoding'] !== undefined) return false;
    const type = h['content-type'];
    if (type !== undefined && !FAST_MEDIA_TYPE.test(type)) return false;
    const n = Number(length);
    if (!Number.isSafeInteger(n) || n < 0 || n > options.bodyLimit) return false;
    const header = h.authorization;
    // The header this connection already proved needs no parsing either.
    if (typeof header !== 'string' || accepted.get(req.socket) !== header) {
      const key = bearer(header);
      if (key === undefined || !validKey(key, header as string, req.socket)) return false;
    }
    let storeId: string;
    try {
      storeId = decodeURIComponent(m[1]!);
    } catch {
      return false;
    }

    stats.fastServed++;
    begin(req, res);
    // A client that goes away mid-body gets no answer (it could not read one).
    collectBody(req).whenComplete((bytes) => {
      let body: unknown;
      try {
        body = parseJsonBody(bytes.toString('utf8'));
      } catch {
        return send(res, 400, { code: 'validation_error', message: 'invalid JSON body' });
      }
      serve({ body, params: { store_id: storeId }, query: {} }, res);
    });
    return true;
  };
  return { router, fast, stats };
}
