/**
 * The HTTP adapter (express 5): guards, health probes, GraphQL at
 * `POST /graphql` (graphql-http), and REST under `/v1` with routes precomputed
 * from the operations table. Every error leaves as `{code, message}` with the
 * status from the error table.
 */
import { scimRouter, ssoRouter, webRoutes } from '../web/routes.ts';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import express, { type NextFunction, type Request, type Response } from 'express';
import { dependencyError, LatchkeyError } from '../../engine/errors.ts';
import { BearerMemo, CookieSink, extractCredentials, requestIdFrom, type Credentials } from '../../server/index.ts';
import type { ClientIpResolver } from '../../server/index.ts';
import type { Config } from '../../server/index.ts';
import { SECURITY_EVENT_CODES, type Metrics } from '../../server/index.ts';
import type { CallInfo, Pipeline } from '../../server/index.ts';
import type { RateLimiter } from '../../server/index.ts';
import type { AnyOperation } from '../../api/index.ts';
import { issuerOf, localizeError, pingMainDatabase } from '../../server/index.ts';
import type { Services } from '../../server/index.ts';
import type { GraphqlHandler } from '../graphql/handler.ts';
import { PLAYGROUND_HEADERS, PLAYGROUND_HTML, playgroundAssets } from './playground.ts';
import { openfgaApi, type OpenfgaApi } from '../openfga/index.ts';
import { authzenAuthenticator, authzenRouter } from '../authzen/index.ts';
import { rateLimitKey } from '../../server/index.ts';
import { cors, corsAnswer, csrf, csrfRefusal, headersNow, locals, rateLimit, SECURITY_HEADERS, sendError, sendGraphqlError, sendJson, type HttpLocals, type Reject } from './guards.ts';
import { restFastPath } from './rest_fast.ts';
import { serveStream } from './sse.ts';

/** The flags the HTTP adapter reads (the rest of the configuration is the services'). */
export type HttpAppConfig = Pick<
  Config,
  | 'allowedOrigins'
  | 'enableGraphqlIntrospection'
  | 'enableGrpc'
  | 'enablePlayground'
  | 'graphqlMaxAliases'
  | 'graphqlMaxComplexity'
  | 'graphqlMaxDepth'
  | 'httpBodyLimit'
  | 'openfgaPresharedKeys'
  // The AuthZEN metadata's absolute URLs.
  | 'url'
  | 'host'
  | 'httpPort'
>;

export interface HttpAppOptions {
  config: HttpAppConfig;
  services: Services;
  operations: readonly AnyOperation[];
  pipeline: Pipeline;
  rateLimiter: RateLimiter;
  clientIp: ClientIpResolver;
  metrics: Metrics;
  /** True while the process is draining (readiness fails). */
  draining: () => boolean;
  /** True until every listener of the process is bound (readiness fails; liveness answers). Default: never. */
  starting?: () => boolean;
  /** Dependencies besides the database that readiness requires (e.g. Redis); `ping` never throws. */
  dependencies?: readonly { readonly name: string; ping(): Promise<boolean> }[];
}

/** Each connection's BearerMemo (context.ts), on its socket. */
const BEARER_MEMO = Symbol('latchkey.bearerMemo');
const JSON_TYPE = /^application\/(?:[\w.+-]+\+)?json\b/i;

/**
 * What the pipeline learns of an HTTP request. A class rather than an object
 * literal with a getter: V8 builds such literals on a slow path, which showed
 * in the server path's profile (docs/performance.md, Server path).
 */
class HttpCallInfo implements CallInfo {
  readonly protocol: 'rest' | 'graphql';
  readonly requestId: string;
  readonly clientIp: string;
  readonly userAgent: string;
  readonly acceptLanguage: string | undefined;
  readonly credentials: Credentials;
  readonly cookies: CookieSink;
  readonly #res: ServerResponse;
  #controller: AbortController | undefined;

  constructor(req: IncomingMessage, res: ServerResponse, l: HttpLocals, protocol: 'rest' | 'graphql', cookies: CookieSink) {
    const h = req.headers;
    this.protocol = protocol;
    this.cookies = cookies;
    // Authorizer's header name is an alias (same rules, --disable-admin-header-auth included); ours wins when both are sent.
    const admin = h['x-service-admin-secret'] ?? h['x-authorizer-admin-secret'];
    this.requestId = l.requestId;
    this.clientIp = l.clientIp;
    this.userAgent = h['user-agent'] ?? '';
    this.acceptLanguage = h['accept-language'];
    const socket = req.socket as Socket & { [BEARER_MEMO]?: BearerMemo };
    const memo = (socket[BEARER_MEMO] ??= new BearerMemo());
    const apiKey = h['x-api-key'];
    const dpop = () => ({ proof: typeof h['dpop'] === 'string' ? h['dpop'] : undefined, method: req.method ?? 'GET', path: (req.url ?? '/').split('?')[0] ?? '/' });
    this.credentials = extractCredentials({ authorization: h.authorization, cookie: h.cookie, adminSecret: Array.isArray(admin) ? admin[0] : admin, apiKey: Array.isArray(apiKey) ? apiKey[0] : apiKey, dpop }, memo);
    this.#res = res;
  }

  /** Aborted when the client goes away before the answer is written; built on first use (most handlers never look). */
  get signal(): AbortSignal {
    if (!this.#controller) {
      const c = (this.#controller = new AbortController());
      const res = this.#res;
      if (res.destroyed && !res.writableFinished) c.abort();
      else
        res.once('close', () => {
          if (!res.writableFinished) c.abort();
        });
    }
    return this.#controller.signal;
  }
}

function flush(res: ServerResponse, cookies: CookieSink): void {
  const set = cookies.headers();
  if (set.length === 0 || res.headersSent) return;
  const prior = res.getHeader('set-cookie');
  const list = prior === undefined ? [] : Array.isArray(prior) ? prior : [String(prior)];
  res.setHeader('set-cookie', [...list, ...set.filter((c) => !list.includes(c))]);
}

/** Our error for a body-parser failure, or undefined for any other error. */
function bodyParseError(err: unknown, limit: string | number): LatchkeyError | undefined {
  const type = (err as { type?: unknown } | null)?.type;
  if (type === 'entity.too.large') return new LatchkeyError('payload_too_large', `request body exceeds ${limit} bytes`, { reason: 'body_too_large' });
  if (type === 'entity.parse.failed') return new LatchkeyError('invalid_argument', 'malformed JSON body', { reason: 'malformed_json' });
  if (type === 'encoding.unsupported' || type === 'charset.unsupported') return new LatchkeyError('invalid_argument', 'unsupported body encoding', { reason: 'unsupported_encoding' });
  return undefined;
}

const isObject = (v: unknown): boolean => v !== null && typeof v === 'object' && !Array.isArray(v);

/**
 * What is wrong with a GraphQL-over-HTTP request body, or undefined: one
 * request object (no batches) with a non-empty `query` string and, when
 * present, an object of `variables`, a string `operationName` and an object
 * of `extensions`. Checked here so that a malformed envelope is the client's
 * `invalid_argument`, never an error inside the GraphQL handler.
 */
function graphqlEnvelopeError(body: unknown): string | undefined {
  if (Array.isArray(body)) return 'batched GraphQL requests are not supported: send one request object';
  if (!isObject(body)) return 'the body must be a GraphQL request object';
  const b = body as Record<string, unknown>;
  if (typeof b.query !== 'string' || b.query.trim() === '') return 'query must be a non-empty string';
  if (b.variables != null && !isObject(b.variables)) return 'variables must be an object';
  if (b.operationName != null && typeof b.operationName !== 'string') return 'operationName must be a string';
  if (b.extensions != null && !isObject(b.extensions)) return 'extensions must be an object';
  return undefined;
}

export function createHttpApp(o: HttpAppOptions): express.Express {
  const { config, pipeline, metrics } = o;
  // Requests refused before reaching an operation (guards, routing, body) are
  // counted too, under op "http" and the error code. On /graphql the refusal is
  // a GraphQL error response, which GraphQL clients read; elsewhere the REST body.
  const count = (transport: 'rest' | 'graphql', l: HttpLocals, err: LatchkeyError): void => {
    if (SECURITY_EVENT_CODES.has(err.code)) metrics.securityEvent(err.reason ?? err.code);
    metrics.observe('http', transport, err.code, (performance.now() - l.started) / 1000);
  };
  // A refusal of a user-facing operation's REST request (rate limit, CSRF, body) is worded in the caller's
  // language, as that operation's own errors are (server/error_messages.ts); super-admin operations, /graphql
  // (whose operation is not known yet) and the other paths answer in English.
  const userFacingPaths = new Set(o.operations.flatMap((op) => (!op.admin && op.rest !== undefined && op.protocols.includes('rest') ? [op.rest.path] : [])));
  const inLanguage = (req: IncomingMessage, err: LatchkeyError): LatchkeyError => {
    const url = (req as IncomingMessage & { originalUrl?: string }).originalUrl ?? req.url ?? '';
    const path = (url.split('?')[0] ?? '').replace(/\/+$/, '');
    return userFacingPaths.has(path) ? localizeError(err, req.headers['accept-language']) : err;
  };
  const reject: Reject = (req, res, err) => {
    const graphql = req.path === '/graphql';
    if (graphql) sendGraphqlError(res, err);
    else sendError(res, inLanguage(req, err));
    count(graphql ? 'graphql' : 'rest', locals(res), err);
  };
  const app = express();
  app.disable('x-powered-by');
  app.disable('etag');
  app.set('trust proxy', false);

  // Request id, client IP, security headers.
  const begin = (req: IncomingMessage, res: ServerResponse, l: HttpLocals): HttpLocals => {
    const incoming = req.headers['x-request-id'];
    const requestId = requestIdFrom(typeof incoming === 'string' ? incoming : undefined);
    const xff = req.headers['x-forwarded-for'];
    l.started = performance.now();
    l.requestId = requestId;
    l.clientIp = o.clientIp(req.socket.remoteAddress, Array.isArray(xff) ? xff.join(',') : xff);
    if (l.deferred === true) return l;
    res.setHeader('x-request-id', requestId);
    for (const k in SECURITY_HEADERS) res.setHeader(k, SECURITY_HEADERS[k] as string);
    return l;
  };
  app.use((req, res, next) => {
    begin(req, res, res.locals as HttpLocals);
    next();
  });

  // Probes: exempt from CORS, CSRF and rate limits.
  app.get('/healthz', (_req, res) => {
    res.json({ status: 'ok' });
  });
  // Ready when started (every listener bound), not draining, and every dependency the server cannot work without
  // answers: the database, and Redis when configured (sessions, codes and limits live there).
  app.get('/readyz', async (_req, res) => {
    const [database, ...others] = await Promise.all([pingMainDatabase(o.services.database), ...(o.dependencies ?? []).map((d) => d.ping())]);
    const checks: Record<string, boolean> = { database: database === true };
    (o.dependencies ?? []).forEach((d, i) => (checks[d.name] = others[i] === true));
    const starting = o.starting?.() === true;
    const ok = !starting && !o.draining() && Object.values(checks).every(Boolean);
    res.status(ok ? 200 : 503).json(ok ? { status: 'ready', checks } : { status: 'not ready', checks, ...(starting ? { starting: true } : {}), ...(o.draining() ? { draining: true } : {}) });
  });

  app.use(cors(config.allowedOrigins));
  // The AuthZEN API (transports/authzen): before the OpenFGA API, whose router answers its per-store paths with 404
  // otherwise. Its callers are gateways and services with a bearer credential and no Origin, so the CSRF check does
  // not concern it; refused requests count against the per-IP limit, as the OpenFGA API's do.
  app.use(
    authzenRouter({
      engine: () => o.services.engine,
      issuer: issuerOf(config),
      stores: config.openfgaPresharedKeys.length > 0,
      authenticate: authzenAuthenticator(o.services, config.openfgaPresharedKeys),
      bodyLimit: config.httpBodyLimit,
      logError: (message, fields) => o.services.logger.error(message, fields),
      observe: (op, code, seconds) => metrics.observe(op, 'authzen', code, seconds),
      limitFailure: (_req, res) => o.rateLimiter.take(rateLimitKey(locals(res).clientIp)),
    }),
  );
  // OpenFGA's HTTP API (transports/openfga), when preshared keys are configured. Its callers authenticate with a
  // bearer key, never a cookie, so the CSRF check does not concern it; like OpenFGA it has no per-IP limit.
  let openfga: OpenfgaApi | undefined;
  if (config.openfgaPresharedKeys.length > 0) {
    openfga = openfgaApi({
        engine: () => (o.services.engine),
        presharedKeys: config.openfgaPresharedKeys,
        bodyLimit: config.httpBodyLimit,
        logError: (message, fields) => o.services.logger.error(message, fields),
        observe: (op, code, seconds) => metrics.observe(op, 'openfga', code, seconds),
      limitFailure: (_req, res) => o.rateLimiter.take(rateLimitKey(locals(res).clientIp)),
    });
    app.use(openfga.router);
  }
  // SCIM 2.0 (transports/web/scim.ts): directories send an organization's bearer token, never a cookie, so the
  // CSRF check does not concern it; it is limited per token (and a wrong token per address) instead of per IP.
  const scim = scimRouter({ services: o.services, config: o.services.config, rateLimiter: o.rateLimiter });
  if (scim !== undefined) app.use(scim);
  app.use(rateLimit(o.rateLimiter, reject));
  // Enterprise sign-in (transports/web/sso.ts): the IdP's form POST to the ACS comes from the IdP's site, so the
  // CSRF check cannot apply there; the signed, single-use assertion bound to the browser's state is its protection.
  const sso = ssoRouter(o.services);
  if (sso !== undefined) app.use(sso);
  app.use(csrf(config.allowedOrigins, reject));
  // Endpoints below /v1 other than the rows' would be served by express before the rows; the fast path (below) is off then.
  // Every endpoint outside the operations table, mounted here and nowhere else (transports/web/routes.ts).
  const httpRoutes = webRoutes(o.services);
  const routesUnderV1 = httpRoutes.some((r) => r.path.toLowerCase().startsWith('/v1') || /[:*(]/.test(r.path));
  // Discovery and JWKS documents, the OAuth endpoints, social login, the login page and the dashboard.
  // Their POST bodies are forms (RFC 6749 §4.1.3) or JSON; a body in another media type is refused.
  const formParser = express.urlencoded({ extended: false, limit: config.httpBodyLimit, parameterLimit: 100 });
  const jsonParser = express.json({ limit: config.httpBodyLimit, strict: true, type: (req) => JSON_TYPE.test(req.headers['content-type'] ?? '') });
  const routeBody = (req: Request, res: Response, done: (err?: unknown) => void): void =>
    formParser(req, res, (err?: unknown) => {
      if (err !== undefined) return done(err);
      jsonParser(req, res, (err2?: unknown) => {
        if (err2 !== undefined) return done(err2);
        const len = req.headers['content-length'];
        if (req.body === undefined && ((len !== undefined && len !== '0') || req.headers['transfer-encoding']))
          return done(new LatchkeyError('invalid_argument', 'request body must be application/x-www-form-urlencoded or application/json', { reason: 'unsupported_media_type' }));
        done();
      });
    });
  for (const route of httpRoutes) {
    const serve = (req: Request, res: Response, next: NextFunction, bodyError?: LatchkeyError): void => {
      const body = bodyError === undefined && req.body !== null && typeof req.body === 'object' ? (req.body as Record<string, unknown>) : {};
      const cookies = extractCredentials({ cookie: req.headers.cookie }).cookies;
      const l = locals(res);
      const request = {
        method: req.method,
        query: req.query as Record<string, unknown>,
        body,
        bodyError,
        authorization: req.headers.authorization,
        dpop: typeof req.headers['dpop'] === 'string' ? req.headers['dpop'] : undefined,
        cookies,
        requestId: l.requestId,
        clientIp: l.clientIp,
        userAgent: req.headers['user-agent'] ?? '',
        acceptLanguage: req.headers['accept-language'],
      };
      route.handler(request).then((out) => {
        res.statusCode = out.status ?? 200;
        for (const [k, v] of Object.entries(out.headers ?? {})) res.setHeader(k, v);
        for (const c of out.cookies ?? []) res.append('set-cookie', c);
        if (out.html !== undefined) {
          res.setHeader('content-type', 'text/html; charset=utf-8');
          res.end(out.html);
        } else if (out.body !== undefined) res.json(out.body);
        else res.end();
      }, next);
    };
    for (const method of route.methods ?? ['GET']) {
      if (method === 'GET') app.get(route.path, (req, res, next) => serve(req, res, next));
      else if (method === 'DELETE') app.delete(route.path, (req, res, next) => serve(req, res, next));
      else
        app[method === 'PUT' ? 'put' : 'post'](route.path, (req, res, next) =>
          routeBody(req, res, (err?: unknown) => serve(req, res, next, err === undefined ? undefined : (err instanceof LatchkeyError ? err : (bodyParseError(err, config.httpBodyLimit) ?? new LatchkeyError('invalid_argument', 'unreadable request body', { reason: 'malformed_json' }))))),
        );
    }
  }
  app.use(express.json({ limit: config.httpBodyLimit, strict: true, type: (req) => JSON_TYPE.test(req.headers['content-type'] ?? '') }));
  // A body in another media type is refused rather than ignored.
  app.use((req, _res, next) => {
    const len = req.headers['content-length'];
    if ((req.method === 'POST' || req.method === 'PUT' || req.method === 'PATCH') && req.body === undefined && ((len !== undefined && len !== '0') || req.headers['transfer-encoding'])) {
      return next(new LatchkeyError('invalid_argument', 'request body must be application/json', { reason: 'unsupported_media_type' }));
    }
    next();
  });

  /** Runs a row for a REST request and answers it. */
  const serveOperation = (op: AnyOperation, req: IncomingMessage, res: ServerResponse, l: HttpLocals, input: unknown): void => {
    const cookies = new CookieSink();
    const info = new HttpCallInfo(req, res, l, 'rest', cookies);
    if (op.stream === true) return serveStream(pipeline, op, info, req, res, l);
    const out = pipeline.runNow(op, info, input);
    if (!(out instanceof Promise)) return answer(res, l, cookies, out);
    out.then(
      (value) => answer(res, l, cookies, value),
      (err: LatchkeyError) => {
        headersNow(res, l);
        flush(res, cookies);
        sendError(res, err);
      },
    );
  };
  const answer = (res: ServerResponse, l: HttpLocals, cookies: CookieSink, out: unknown): void => {
    flush(res, cookies);
    sendJson(res, l, JSON.stringify(out));
  };

  /** Requests served without express (each returns false, touching nothing, for any other request). */
  const fastPaths: ((req: IncomingMessage, res: ServerResponse) => boolean)[] = [];
  const corsAnswerOf = corsAnswer(config.allowedOrigins);
  // The fast paths write the request id, security and CORS headers with the answer (guards.ts sendJson, headersNow).
  const beginDeferred = (req: IncomingMessage, res: ServerResponse): HttpLocals => {
    const l = begin(req, res, ((res as ServerResponse & { locals?: HttpLocals }).locals = { deferred: true } as HttpLocals));
    l.cors = corsAnswerOf(req);
    return l;
  };
  if (openfga !== undefined) {
    const api = openfga;
    // OpenFGA's POST endpoints under a store (openfga_api.ts): the guards express runs before the router, then the router's own handler.
    const beginOpenfga = (req: IncomingMessage, res: ServerResponse): void => void beginDeferred(req, res);
    fastPaths.push((req, res) => api.fast(req, res, beginOpenfga));
    metrics.countOf('latchkey_openfga_fast_path_requests_total', 'OpenFGA API requests served by its fast path, without express', () => api.stats.fastServed);
  }

  // REST first (the hot path): one precomputed map, path → method → row. Mounted only while gRPC is enabled (spec).
  if (config.enableGrpc) {
    const routes = new Map<string, Map<string, AnyOperation>>();
    for (const op of o.operations) {
      if (!op.rest || !op.protocols.includes('rest')) continue;
      let byMethod = routes.get(op.rest.path);
      if (!byMethod) routes.set(op.rest.path, (byMethod = new Map()));
      byMethod.set(op.rest.method, op);
    }
    app.use('/v1', (req, res, next) => {
      const path = `/v1${req.path}`.replace(/\/+$/, '');
      const byMethod = routes.get(path);
      if (!byMethod) return next(new LatchkeyError('not_found', `no endpoint ${path}`, { reason: 'route_not_found' }));
      const op = byMethod.get(req.method);
      if (!op) {
        res.setHeader('allow', [...byMethod.keys()].join(', '));
        return next(new LatchkeyError('method_not_allowed', `${req.method} is not allowed on ${path}`, { reason: 'method_not_allowed' }));
      }
      serveOperation(op, req, res, locals(res), op.rest?.method === 'GET' ? {} : ((req.body as unknown) ?? {}));
    });
    // The rows' requests that need nothing express adds skip it (rest_fast.ts): same guards, same order, same answers.
    if (!routesUnderV1) {
      fastPaths.push(restFastPath({
        routes,
        bodyLimit: config.httpBodyLimit,
        begin: beginDeferred,
        csrf: csrfRefusal(config.allowedOrigins),
        rateLimiter: o.rateLimiter,
        reject: (res, l, err) => {
          headersNow(res, l);
          sendError(res, inLanguage(res.req, err));
          count('rest', l, err);
        },
        serve: serveOperation,
      }));
    }
  }
  if (fastPaths.length > 0) {
    // express calls `app.handle` for every request (an own property of the app function); the fast paths go first.
    const target = app as unknown as { handle(req: IncomingMessage, res: ServerResponse, next?: unknown): void };
    const slow = target.handle;
    const [first, second] = fastPaths as [(req: IncomingMessage, res: ServerResponse) => boolean, ((req: IncomingMessage, res: ServerResponse) => boolean)?];
    target.handle = function handle(req, res, next) {
      if (!first(req, res) && (second === undefined || !second(req, res))) slow.call(this, req, res, next);
    };
  }

  if (config.enablePlayground) {
    const asset = playgroundAssets();
    app.get('/playground', (_req, res) => {
      for (const [k, v] of Object.entries(PLAYGROUND_HEADERS)) res.setHeader(k, v);
      res.setHeader('content-type', 'text/html; charset=utf-8');
      res.end(PLAYGROUND_HTML);
    });
    app.get('/playground/:file', (req, res, next) => {
      const file = asset(req.params.file);
      if (file === undefined) return next();
      res.setHeader('content-type', `${file.type}; charset=utf-8`);
      res.setHeader('cache-control', 'public, max-age=3600');
      res.end(file.body);
    });
  }

  // GraphQL: graphql-js, graphql-http and the schema are loaded and built by the first request to /graphql
  // (graphql/handler.ts); a server no client asks through GraphQL never holds them.
  let graphqlHandler: Promise<GraphqlHandler> | undefined;
  const loadGraphql = (): Promise<GraphqlHandler> => {
    graphqlHandler ??= import('../graphql/handler.ts').then(({ createGraphqlHandler }) =>
      createGraphqlHandler({
        operations: o.operations,
        pipeline,
        config,
        logger: o.services.logger,
        callInfo: (req, res, cookies) => new HttpCallInfo(req, res, locals(res), 'graphql', cookies),
        flush,
      }),
    );
    // A failed load is tried again by the next request rather than remembered.
    graphqlHandler.catch(() => (graphqlHandler = undefined));
    return graphqlHandler;
  };
  app.post('/graphql', (req, res, next) => {
    const malformed = graphqlEnvelopeError(req.body);
    if (malformed !== undefined) return next(new LatchkeyError('invalid_argument', malformed, { reason: 'malformed_graphql_request' }));
    loadGraphql().then((handle) => handle(req, res, next)).catch(next);
  });
  app.all('/graphql', (_req, _res, next) => {
    next(new LatchkeyError('method_not_allowed', 'use POST for /graphql', { reason: 'method_not_allowed' }));
  });

  app.use((req, _res, next) => {
    next(new LatchkeyError('not_found', `no endpoint ${req.path}`, { reason: 'route_not_found' }));
  });

  // The one error exit: our errors as they are, body-parser errors mapped, everything else `internal`.
  app.use((err: unknown, req: Request, res: Response, _next: NextFunction) => {
    void _next;
    if (err instanceof LatchkeyError) return reject(req, res, err);
    const parseError = bodyParseError(err, config.httpBodyLimit);
    if (parseError !== undefined) return reject(req, res, parseError);
    const outage = dependencyError(err);
    if (outage !== undefined) {
      o.services.logger.warn('dependency unavailable', { request_id: locals(res).requestId, reason: outage.reason });
      return reject(req, res, outage);
    }
    o.services.logger.error('unexpected error', { request_id: locals(res).requestId, err });
    reject(req, res, new LatchkeyError('internal', 'internal server error'));
  });
  return app;
}
