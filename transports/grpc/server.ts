/**
 * The gRPC adapter: one generic handler per row, generated from the table.
 * Credentials come from metadata (`authorization`, `cookie`,
 * `x-service-admin-secret`); cookies set by a handler go back as `set-cookie`
 * metadata; errors carry the gRPC status from the error table, the message as
 * details, and `x-error-code` / `x-error-reason` trailers with the exact code.
 * The standard health service and server reflection (built on its first call,
 * reflection.ts) are served too. The transports' entry point imports this
 * module only when a server starts gRPC (`loadGrpcAdapter`), after its HTTP
 * listener is open.
 */
import { isIP } from 'node:net';
import * as grpc from '@grpc/grpc-js';
import { HealthImplementation } from 'grpc-health-check';
import { LatchkeyError } from '../../engine/errors.ts';
import { CookieSink, extractCredentials, requestIdFrom } from '../../server/index.ts';
import { rateLimitKey, type ClientIpResolver } from '../../server/index.ts';
import type { Pipeline } from '../../server/index.ts';
import type { RateLimiter } from '../../server/index.ts';
import type { Metrics } from '../../server/index.ts';
import { grpcService, type AnyOperation } from '../../api/index.ts';
import { generateProto, PROTO_PACKAGE } from '../../api/index.ts';
import { carriesJson, fromWire, toWire, toWireEncoded } from '../../api/index.ts';
import { loadPackageDefinition } from './package_definition.ts';
import { addReflection } from './reflection.ts';
import { installUnaryFastPath, type FastRoute } from './unary_fast.ts';
import { decodeSafely, serveUnary, statusOf, UnaryCall, UNDECODABLE, type CallStatus, type RequestMetadata } from './unary_call.ts';

function first(md: grpc.Metadata, key: string): string | undefined {
  const v = md.get(key)[0];
  return v === undefined ? undefined : typeof v === 'string' ? v : v.toString('utf8');
}

/**
 * The address of a call's peer, without its port. grpc-js gives the socket's
 * `remoteAddress:remotePort`, unbracketed for IPv6 (`::1:5000`,
 * `::ffff:10.0.0.1:5000`); the bracketed and `ipv4:`/`ipv6:` forms of gRPC's
 * naming are read too. The port must go: the rate limit is keyed on this
 * address, and with it every connection would be a client of its own.
 */
export function peerAddress(peer: string): string {
  const p = peer.startsWith('ipv4:') || peer.startsWith('ipv6:') ? peer.slice(5) : peer;
  const bracketed = /^\[([^\]]+)\](?::\d+)?$/.exec(p);
  if (bracketed !== null) return bracketed[1] as string;
  const colon = p.lastIndexOf(':');
  if (colon > 0 && /^\d+$/.test(p.slice(colon + 1)) && isIP(p.slice(0, colon)) !== 0) return p.slice(0, colon);
  return p;
}

/**
 * {@link peerAddress} of the peers seen lately: a connection's calls share
 * one peer, and its parsing (a regular expression, an IP check) costs more than the lookup.
 * Bounded, emptied when full.
 */
const peers = new Map<string, string>();
function peerOf(peer: string): string {
  let address = peers.get(peer);
  if (address === undefined) {
    address = peerAddress(peer);
    if (peers.size >= 1024) peers.clear();
    peers.set(peer, address);
  }
  return address;
}

/** A status as grpc-js sends it: the trailing metadata as its `Metadata`. */
function grpcStatus(status: CallStatus): Partial<grpc.StatusObject> {
  const metadata = new grpc.Metadata();
  for (const k in status.metadata) metadata.set(k, status.metadata[k] as string);
  return { code: status.code, details: status.details, metadata };
}

/** The request metadata a unary call reads, from grpc-js's `Metadata`. */
function requestMetadata(md: grpc.Metadata): RequestMetadata {
  const cookieValues = md.get('cookie');
  return {
    requestId: first(md, 'x-request-id'),
    userAgent: first(md, 'user-agent'),
    acceptLanguage: first(md, 'accept-language'),
    authorization: first(md, 'authorization'),
    cookie: cookieValues.length > 0 ? cookieValues.map((v) => (typeof v === 'string' ? v : v.toString('utf8'))).join('; ') : undefined,
    adminSecret: first(md, 'x-service-admin-secret') ?? first(md, 'x-authorizer-admin-secret'),
    apiKey: first(md, 'x-api-key'),
  };
}

/** A unary call that grpc-js took (see unary_fast.ts for those served from the stream itself). */
class GrpcJsUnaryCall extends UnaryCall {
  readonly call: grpc.ServerUnaryCall<unknown, unknown>;
  readonly callback: grpc.sendUnaryData<unknown>;

  constructor(op: AnyOperation, toMessage: (out: unknown) => unknown, call: grpc.ServerUnaryCall<unknown, unknown>, callback: grpc.sendUnaryData<unknown>, clientIp: string, metrics: Metrics) {
    super(op, toMessage, clientIp, metrics, requestMetadata(call.metadata));
    this.call = call;
    this.callback = callback;
  }

  // grpc-js sets `cancelled` before it emits 'cancelled'.
  protected get cancelled(): boolean {
    return this.call.cancelled;
  }

  protected onCancel(then: () => void): void {
    this.call.once('cancelled', then);
  }

  /** The answer's headers: the request id, and the cookies the handler set. */
  #sendHeaders(): void {
    const headers = new grpc.Metadata();
    headers.set('x-request-id', this.requestId);
    for (const c of this.cookies.headers()) headers.add('set-cookie', c);
    this.call.sendMetadata(headers);
  }

  protected sendMessage(message: unknown): void {
    this.#sendHeaders();
    this.callback(null, message);
  }

  protected sendStatus(status: CallStatus): void {
    if (this.withHeaders) this.#sendHeaders();
    this.callback(grpcStatus(status));
  }
}

/** The largest answer sent, in bytes. */
const MAX_SEND_BYTES = 16 * 1024 * 1024;

export interface GrpcServerOptions {
  operations: readonly AnyOperation[];
  pipeline: Pipeline;
  clientIp: ClientIpResolver;
  rateLimiter: RateLimiter;
  metrics: Metrics;
  maxMessageBytes: number;
  /** Logs a failure the server keeps running through (the services' set-up on the first stream). */
  logError?: (message: string, fields: Record<string, unknown>) => void;
}

export interface GrpcServerHandle {
  server: grpc.Server;
  health: HealthImplementation;
}

export function createGrpcServer(options: GrpcServerOptions): GrpcServerHandle {
  const { pipeline, rateLimiter } = options;
  const rows = options.operations.filter((op) => op.protocols.includes('grpc'));

  const server = new grpc.Server({
    'grpc.max_receive_message_length': options.maxMessageBytes,
    'grpc.max_send_message_length': MAX_SEND_BYTES,
    // Channelz (grpc-js's call counters and timestamps, per server and per connection, read by a channelz
    // service) is off: this server registers no such service, and the counting costs every call a few
    // allocations and clock reads. Calls are counted in the metrics instead (server/metrics.ts).
    'grpc.enable_channelz': 0,
  });

  const serving = { pipeline, rateLimiter, metrics: options.metrics };
  const handlerFor =
    (op: AnyOperation, toMessage: (out: unknown) => unknown): grpc.handleUnaryCall<unknown, unknown> =>
    (call, callback) => {
      const c = new GrpcJsUnaryCall(op, toMessage, call, callback, options.clientIp(peerOf(call.getPeer()), first(call.metadata, 'x-forwarded-for')), options.metrics);
      serveUnary(c, call.request, serving);
    };
  // Unary rows whose answer holds JSON values are encoded with their JSON fields declared `bytes` (jsonFieldsAsBytes).
  const jsonRows = rows.filter((op) => op.stream !== true && carriesJson(op.output));
  const encodedJson = jsonFieldsAsBytes(jsonRows);

  /**
   * A streamed row (`stream`): a server-streaming method. Messages are
   * written as the handler yields them, with backpressure (a full send
   * buffer waits for `drain`); the call ends when the handler's messages end,
   * with the error's status when they fail, and a client that cancels aborts
   * the handler's signal.
   */
  const streamHandlerFor =
    (op: AnyOperation): grpc.handleServerStreamingCall<unknown, unknown> =>
    (call) => {
      const md = call.metadata;
      const controller = new AbortController();
      call.once('cancelled', () => controller.abort());
      const clientIp = options.clientIp(peerOf(call.getPeer()), first(md, 'x-forwarded-for'));
      const m = requestMetadata(md);
      const requestId = requestIdFrom(m.requestId);
      const info = {
        protocol: 'grpc' as const,
        requestId,
        clientIp,
        userAgent: m.userAgent ?? '',
        acceptLanguage: m.acceptLanguage,
        credentials: extractCredentials({ authorization: m.authorization, cookie: m.cookie, adminSecret: m.adminSecret, apiKey: m.apiKey }),
        signal: controller.signal,
        cookies: new CookieSink(),
      };
      const fail = (err: unknown): void => {
        controller.abort();
        if (!call.cancelled) call.emit('error', grpcStatus(statusOf(err)));
      };
      const open = async (): Promise<AsyncIterable<unknown>> => {
        const undecodable = (call.request as { [UNDECODABLE]?: unknown } | null)?.[UNDECODABLE];
        if (undecodable !== undefined) throw new LatchkeyError('invalid_argument', 'the request message could not be decoded', { reason: 'undecodable_message', cause: undecodable });
        const wait = await rateLimiter.take(rateLimitKey(clientIp));
        if (wait !== undefined) throw new LatchkeyError('resource_exhausted', 'too many requests', { reason: 'rate_limited', details: { retry_after_seconds: wait } });
        return pipeline.stream(op, info, fromWire(op.input, call.request, false));
      };
      open().then(async (messages) => {
        const headers = new grpc.Metadata();
        headers.set('x-request-id', requestId);
        call.sendMetadata(headers);
        try {
          for await (const m of messages) {
            if (call.cancelled) break;
            if (!call.write(toWire(op.output, m))) {
              await new Promise<void>((resolve) => {
                call.once('drain', () => resolve());
                controller.signal.addEventListener('abort', () => resolve(), { once: true });
              });
            }
          }
          controller.abort();
          if (!call.cancelled) call.end();
        } catch (err) {
          fail(err);
        }
      }, fail);
    };

  const fastRoutes = new Map<string, FastRoute>();
  /**
   * The table's services and reflection: the generated `.proto` read and each
   * row's handler added. Run when the first gRPC stream arrives (see below):
   * the reading holds about 5 MiB and takes 0.1 s, which a server that is
   * never called over gRPC (or not yet) does not spend.
   */
  const addServices = (): void => {
    const pkgDef = loadPackageDefinition(generateProto(options.operations));
    const pkg = grpc.loadPackageDefinition(pkgDef) as unknown as Record<string, Record<string, Record<string, { service: grpc.ServiceDefinition }>>>;
    const ns = pkg.latchkey?.v1;
    if (!ns) throw new Error(`package ${PROTO_PACKAGE} missing from the generated proto`);
    for (const serviceName of ['Latchkey', 'LatchkeyAdmin'] as const) {
      const def = ns[serviceName]?.service;
      const serviceRows = rows.filter((op) => grpcService(op) === serviceName);
      if (!def) {
        if (serviceRows.length > 0) throw new Error(`service ${serviceName} missing from the generated proto`);
        continue;
      }
      if (serviceRows.length === 0) continue;
      const impl: grpc.UntypedServiceImplementation = {};
      const safe = decodeServiceSafely(def) as Record<string, grpc.MethodDefinition<unknown, unknown>>;
      for (const op of serviceRows) {
        const name = op.grpc?.method as string;
        let method = safe[name];
        let toMessage = (out: unknown): unknown => toWire(op.output, out);
        if (method !== undefined && jsonRows.includes(op)) {
          method = safe[name] = { ...method, responseSerialize: encodedJson(serviceName, name) };
          toMessage = (out) => toWireEncoded(op.output, out);
        }
        impl[name] = op.stream === true ? streamHandlerFor(op) : handlerFor(op, toMessage);
        if (op.stream !== true && method !== undefined) fastRoutes.set(method.path, { op, path: method.path, decode: method.requestDeserialize, toMessage, encode: method.responseSerialize });
      }
      server.addService(safe as grpc.ServiceDefinition, impl);
    }
    addReflection(server, pkgDef);
  };
  const setUp = (): void => {
    try {
      addServices();
    } catch (err) {
      options.logError?.('the gRPC services could not be set up; every gRPC call is answered INTERNAL', { err });
      throw err;
    }
  };
  // Unary rows' calls served from the HTTP/2 stream, with grpc-js's answers (unary_fast.ts); the services are added
  // when its hook sees the first stream, before anything routes it. Without the hook (a grpc-js it does not know),
  // they are added now.
  const fastServed = installUnaryFastPath(server, { routes: fastRoutes, clientIp: options.clientIp, maxReceiveBytes: options.maxMessageBytes, maxSendBytes: MAX_SEND_BYTES, beforeFirstStream: setUp, ...serving });
  if (fastServed !== undefined) options.metrics.countOf('latchkey_grpc_fast_path_calls_total', 'Unary gRPC calls served by the fast path, without grpc-js\'s per-call machinery', fastServed);
  else addServices();

  const health = new HealthImplementation({
    '': 'SERVING',
    [`${PROTO_PACKAGE}.Latchkey`]: 'SERVING',
    [`${PROTO_PACKAGE}.LatchkeyAdmin`]: 'SERVING',
  });
  health.addToServer(server);
  return { server, health };
}

/**
 * The answers of rows that hold JSON values (`google.protobuf.Value`), encoded
 * through a second reading of their messages in which each such field is
 * declared `bytes` (`generateProto`'s `jsonAsBytes`), given the value's bytes
 * as grpc_codec.ts `encodeJsonValue` writes them. A bytes field and a message
 * field are the same on the wire, and those bytes are the ones protobuf.js
 * writes for the value, so clients read the very message the published
 * `.proto` declares. Why: protobuf.js built each value twice more (`fromObject`,
 * then a writer forked per nested message), most of a `validate_jwt_token`
 * call's encoding (docs/performance.md). The second reading holds only those
 * rows' messages and is loaded on the first such answer.
 */
function jsonFieldsAsBytes(jsonRows: readonly AnyOperation[]): (service: string, method: string) => grpc.serialize<unknown> {
  let services: Record<string, grpc.ServiceDefinition> | undefined;
  return (service, method) => {
    let serialize: grpc.serialize<unknown> | undefined;
    return (message) => {
      if (serialize === undefined) {
        services ??= loadPackageDefinition(generateProto(jsonRows, { jsonAsBytes: true })) as unknown as Record<string, grpc.ServiceDefinition>;
        const found = services[`${PROTO_PACKAGE}.${service}`]?.[method]?.responseSerialize;
        if (found === undefined) throw new Error(`${service}.${method} missing from the JSON-as-bytes proto`);
        serialize = found as grpc.serialize<unknown>;
      }
      return serialize(message);
    };
  };
}

/** The service definition with request decoding that never throws (unary_call.ts `decodeSafely`). */
function decodeServiceSafely(def: grpc.ServiceDefinition): grpc.ServiceDefinition {
  const out: Record<string, grpc.MethodDefinition<unknown, unknown>> = {};
  for (const [name, method] of Object.entries(def as Record<string, grpc.MethodDefinition<unknown, unknown>>)) {
    out[name] = { ...method, requestDeserialize: decodeSafely(method.requestDeserialize) };
  }
  return out as grpc.ServiceDefinition;
}

/** Binds and resolves the bound port. */
export function bindGrpc(server: grpc.Server, host: string, port: number): Promise<number> {
  const address = host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
  return new Promise((resolve, reject) => {
    server.bindAsync(address, grpc.ServerCredentials.createInsecure(), (err, bound) => (err ? reject(err) : resolve(bound)));
  });
}

/** Graceful shutdown: stop accepting, let in-flight calls finish, force after `timeoutMs`. */
export function shutdownGrpc(server: grpc.Server, timeoutMs: number): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      server.forceShutdown();
      resolve();
    }, timeoutMs);
    timer.unref();
    server.tryShutdown(() => {
      clearTimeout(timer);
      resolve();
    });
  });
}
