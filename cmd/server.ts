/**
 * `startServer(config)`: opens the database, builds the services, and starts
 * the HTTP, gRPC and metrics listeners. Returns their addresses and a graceful
 * `close()`. Signal handling belongs to the process entry (`cli.ts`), never here.
 */
import type { Server as HttpServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import { LatchkeyError } from '../engine/errors.ts';
import type { Redis } from 'ioredis';
import { openRedis, RedisMemoryStore } from '../auth/index.ts';
import type { Config } from '../server/index.ts';
import { redactedConfig } from '../server/index.ts';
import { createLogger, type LogSink, type Logger } from '../server/index.ts';
import type { Clock } from '../server/index.ts';
import { closeMainDatabase, openMainDatabase } from '../server/index.ts';
import { closeServices, createServices, type Services } from '../server/index.ts';
import { createMetrics, type Metrics } from '../server/index.ts';
import { HANDLERS, createPipeline, type AnyHandler, type ServedOperation } from '../server/index.ts';
import { createRateLimiter } from '../server/index.ts';
import { createClientIpResolver } from '../server/index.ts';
import { CapturingRequest, createHttpApp } from '../transports/index.ts';
import { loadGrpcAdapter, type GrpcServerHandle } from '../transports/index.ts';
import { OPERATIONS } from '../api/index.ts';
import { checkTable, type AnyOperation } from '../api/index.ts';

// `import … from 'node:http'` would build the module's ESM namespace, which reads its lazy `WebSocket`,
// `CloseEvent` and `MessageEvent` exports and so loads Node's bundled fetch/WebSocket client (undici): 2.3 MiB of
// heap in use and 4.5 MiB committed that the server never needs. The CommonJS module has no such namespace.
const { createServer } = process.getBuiltinModule('node:http');

export interface StartOptions {
  /** Where log lines go (default stdout). */
  logSink?: LogSink;
  clock?: Clock;
  /** Extra rows served besides the table (tests use this to exercise the plumbing). */
  extraOperations?: readonly ServedOperation[];
  /** DNS TXT lookups of domain verification (default: the system resolver; tests pass their own). */
  resolveTxt?: (name: string) => Promise<string[][]>;
}

export interface RunningServer {
  /** e.g. `http://127.0.0.1:8080` */
  readonly httpUrl: string;
  /** e.g. `127.0.0.1:9091`; undefined when gRPC is disabled. */
  readonly grpcAddress: string | undefined;
  /** e.g. `http://127.0.0.1:8081` (GET /metrics). */
  readonly metricsUrl: string;
  readonly services: Services;
  readonly metrics: Metrics;
  readonly logger: Logger;
  /**
   * Fails readiness (`/readyz` 503, gRPC health NOT_SERVING) and stops the
   * mail worker's claims at once, keeps serving for `drainMs` (default 0) so
   * that a load balancer's probe sees the process leave before its listener
   * closes, then stops accepting, finishes in-flight requests (up to
   * --shutdown-timeout) and closes the services (the mail worker after the
   * mails it is sending) and the database.
   */
  close(options?: { drainMs?: number }): Promise<void>;
}

/**
 * Gives the event loop a few turns (timer, poll, check) so that connections that arrived during a long synchronous
 * step are accepted, read and answered before the next one: a probe of `/healthz` made while gRPC loads is
 * answered between its steps instead of after them.
 */
async function letRequestsIn(): Promise<void> {
  for (let i = 0; i < 3; i++) await new Promise((r) => setTimeout(r, 0));
}

function urlHost(host: string): string {
  if (host === '0.0.0.0' || host === '') return '127.0.0.1';
  if (host === '::') return '[::1]';
  return host.includes(':') ? `[${host}]` : host;
}

function listen(server: HttpServer, host: string, port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve((server.address() as AddressInfo).port);
    });
  });
}

function closeHttp(server: HttpServer, timeoutMs: number): Promise<void> {
  return new Promise((resolve) => {
    if (!server.listening) return resolve();
    const timer = setTimeout(() => server.closeAllConnections(), timeoutMs);
    timer.unref();
    server.close(() => {
      clearTimeout(timer);
      resolve();
    });
    server.closeIdleConnections();
  });
}

/**
 * Refusals Node makes before a request reaches express (headers over the
 * limit, headers or body not received in time, unparseable HTTP) carry the
 * JSON error envelope like every other refusal, where the socket still takes
 * an answer: 431 (`payload_too_large`, reason `headers_too_large`), 408
 * (`deadline_exceeded`, reason `request_timeout`), else 400
 * (`invalid_argument`, reason `malformed_http`). The connection is closed.
 */
function refuseMalformed(err: NodeJS.ErrnoException, socket: Duplex, headersTimeoutMs: number): void {
  const inFlight = (socket as Duplex & { _httpMessage?: { headersSent?: boolean } })._httpMessage;
  if (err.code === 'ECONNRESET' || !socket.writable || inFlight?.headersSent === true) {
    socket.destroy();
    return;
  }
  let status: number;
  let error: LatchkeyError;
  if (err.code === 'HPE_HEADER_OVERFLOW') {
    status = 431;
    error = new LatchkeyError('payload_too_large', 'request headers are too large', { reason: 'headers_too_large' });
  } else if (err.code === 'ERR_HTTP_REQUEST_TIMEOUT') {
    status = 408;
    error = new LatchkeyError('deadline_exceeded', `request not received within ${headersTimeoutMs} ms`, { reason: 'request_timeout' });
  } else {
    status = 400;
    error = new LatchkeyError('invalid_argument', 'malformed HTTP request', { reason: 'malformed_http' });
  }
  const body = JSON.stringify(error.toJSON());
  const reason = status === 431 ? 'Request Header Fields Too Large' : status === 408 ? 'Request Timeout' : 'Bad Request';
  socket.end(`HTTP/1.1 ${status} ${reason}\r\ncontent-type: application/json; charset=utf-8\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`);
}

/**
 * The HTTP server of `startServer`, not yet listening: every request is a
 * {@link CapturingRequest}, so that the REST and OpenFGA fast paths take a
 * body straight from the parser (transports/http/body_capture.ts); with any
 * other request class they would fall back to reading it by events, right but
 * slower. The timeouts are the flags'; a malformed request is answered and
 * closed (see `refuseMalformed`).
 */
export function createHttpServer(
  config: Pick<Config, 'httpRequestTimeout' | 'httpHeadersTimeout' | 'httpKeepAliveTimeout'>,
  app: Parameters<typeof createServer>[1],
): HttpServer {
  const http = createServer(
    {
      IncomingMessage: CapturingRequest,
      requestTimeout: config.httpRequestTimeout,
      headersTimeout: config.httpHeadersTimeout,
      keepAliveTimeout: config.httpKeepAliveTimeout,
      // Node enforces both timeouts only when it sweeps its connections, every 30 s by
      // default: a socket stalling its headers under a 10 s timeout was closed after up
      // to 40 s (about 20 s measured). Sweeping at a tenth of the shorter timeout (at
      // most once a second) closes it within 10% of the configured value.
      connectionsCheckingInterval: Math.max(50, Math.min(1000, Math.floor(Math.min(config.httpHeadersTimeout, config.httpRequestTimeout || Infinity) / 10))),
    },
    app,
  );
  http.on('clientError', (err: NodeJS.ErrnoException, socket) => refuseMalformed(err, socket, config.httpHeadersTimeout));
  return http;
}

/**
 * True when Redis answers PING within `timeoutMs`. The client has no offline
 * queue, so while it is disconnected the command fails at once.
 */
async function pingRedis(redis: Redis, timeoutMs = 1000): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      redis.ping().then((r) => r === 'PONG'),
      new Promise<boolean>((resolve) => {
        timer = setTimeout(() => resolve(false), timeoutMs);
      }),
    ]);
  } catch {
    return false;
  } finally {
    if (timer) clearTimeout(timer);
  }
}

export async function startServer(config: Config, options: StartOptions = {}): Promise<RunningServer> {
  const logger = createLogger(config.logLevel, options.logSink);
  const operations: readonly AnyOperation[] = options.extraOperations ? checkTable<AnyOperation>([...OPERATIONS, ...options.extraOperations]) : OPERATIONS;
  const database = await openMainDatabase(config);
  const cleanups: (() => Promise<void>)[] = [() => closeMainDatabase(database)];
  const cleanup = async (): Promise<void> => {
    for (const c of cleanups.reverse()) await c().catch(() => undefined);
  };
  try {
    const services = await createServices({ config, database, logger, ...(options.clock ? { clock: options.clock } : {}), ...(options.resolveTxt ? { resolveTxt: options.resolveTxt } : {}) });
    cleanups.push(() => closeServices(services));
    let redis: Redis | undefined;
    if (config.redisUrl) {
      redis = openRedis(config.redisUrl, { enableOfflineQueue: false, maxRetriesPerRequest: 1, lazyConnect: false });
      redis.on('error', (err) => logger.warn('redis error', { err: err.message }));
      const r = redis;
      cleanups.push(async () => void r.disconnect());
    }
    const metrics = createMetrics();
    const extra = new Map<string, AnyHandler>((options.extraOperations ?? []).map((op) => [op.name, op.handler as AnyHandler]));
    // Per account (--rate-limit-account-rps): its own counters, apart from the per-IP ones.
    const accountLimiter = config.rateLimitAccountRps > 0
      ? createRateLimiter({ rps: config.rateLimitAccountRps, burst: config.rateLimitAccountBurst, namespace: `${config.clientId ?? ''}_account`, ...(redis ? { redis } : {}) })
      : undefined;
    // Aborted when shutdown begins: streamed calls (watch_fga) end then, rather than hold the drain to its timeout.
    const streamsEnd = new AbortController();
    const pipeline = createPipeline(services, metrics, HANDLERS, extra, accountLimiter, streamsEnd.signal);
    const rateLimiter = createRateLimiter({ rps: config.rateLimitRps, burst: config.rateLimitBurst, namespace: config.clientId ?? '', ...(redis ? { redis } : {}) });
    const clientIp = createClientIpResolver(config.trustedProxies);
    let draining = false;
    // Until every listener is bound (gRPC opens after HTTP), `/readyz` answers 503 while `/healthz` already answers.
    let starting = true;

    // Ready only once both Redis connections answer: the limiter's, and the session store's (which refuses at once while
    // it reconnects, so a replica would otherwise be routed requests it can only answer 503).
    const memory = services.memoryStore;
    const sessionStoreUp = (): Promise<boolean> => (memory instanceof RedisMemoryStore ? memory.ready().then(() => true, () => false) : Promise.resolve(true));
    const dependencies = redis ? [{ name: 'redis', ping: async () => (await pingRedis(redis)) && (await sessionStoreUp()) }] : [];
    const app = createHttpApp({ config, services, operations, pipeline, metrics, rateLimiter, clientIp, draining: () => draining, starting: () => starting, dependencies });
    const http = createHttpServer(config, app);
    const httpPort = await listen(http, config.host, config.httpPort);
    cleanups.push(() => closeHttp(http, 0));

    const metricsServer = createServer((req, res) => {
      if (req.method === 'GET' && (req.url === '/metrics' || req.url?.startsWith('/metrics?'))) {
        metrics.render().then(
          ({ contentType, body }) => {
            res.writeHead(200, { 'content-type': contentType });
            res.end(body);
          },
          () => {
            res.writeHead(500).end();
          },
        );
        return;
      }
      res.writeHead(404, { 'content-type': 'application/json' }).end('{"code":"not_found","message":"not found"}');
    });
    const metricsPort = await listen(metricsServer, config.metricsHost, config.metricsPort);
    cleanups.push(() => closeHttp(metricsServer, 0));

    // gRPC is loaded and its services built after the HTTP listener is open: liveness (`/healthz`) answers during
    // that time, readiness (`/readyz`) once it is bound.
    let grpcAddress: string | undefined;
    let grpcHandle: GrpcServerHandle | undefined;
    let shutdownGrpc: ((server: GrpcServerHandle['server'], timeoutMs: number) => Promise<void>) | undefined;
    if (config.enableGrpc) {
      await letRequestsIn();
      const adapter = await loadGrpcAdapter(letRequestsIn);
      await letRequestsIn();
      shutdownGrpc = adapter.shutdownGrpc;
      grpcHandle = adapter.createGrpcServer({ operations, pipeline, clientIp, rateLimiter, metrics, maxMessageBytes: config.httpBodyLimit, logError: (message, fields) => logger.error(message, fields) });
      const port = await adapter.bindGrpc(grpcHandle.server, config.host, config.grpcPort);
      grpcAddress = `${urlHost(config.host)}:${port}`;
      const g = grpcHandle.server;
      cleanups.push(async () => g.forceShutdown());
    }

    const httpUrl = `http://${urlHost(config.host)}:${httpPort}`;
    const metricsUrl = `http://${urlHost(config.metricsHost)}:${metricsPort}`;
    starting = false;
    logger.info('latchkey started', { version: services.version, http: httpUrl, grpc: grpcAddress ?? 'disabled', metrics: metricsUrl, config: redactedConfig(config) });

    let closing: Promise<void> | undefined;
    return {
      httpUrl,
      grpcAddress,
      metricsUrl,
      services,
      metrics,
      logger,
      close(options = {}) {
        closing ??= (async () => {
          draining = true;
          streamsEnd.abort();
          const timeout = config.shutdownTimeout;
          if (grpcHandle) {
            grpcHandle.health.setStatus('', 'NOT_SERVING');
          }
          // The mail and text-message workers finish what they are sending and claim no more (security matrix F5).
          services.admin?.mail?.stop?.();
          services.smsQueue?.stop();
          if (options.drainMs) await new Promise((r) => setTimeout(r, options.drainMs));
          await Promise.all([closeHttp(http, timeout), grpcHandle && shutdownGrpc ? shutdownGrpc(grpcHandle.server, timeout) : Promise.resolve()]);
          await closeHttp(metricsServer, 1000);
          await closeServices(services);
          if (redis) redis.disconnect();
          await closeMainDatabase(database);
          logger.info('latchkey stopped');
        })();
        return closing;
      },
    };
  } catch (err) {
    await cleanup();
    throw err;
  }
}
