/**
 * The gRPC fast path: a unary call to one of the rows is served straight from
 * its HTTP/2 stream, with the answers grpc-js would give, without grpc-js's
 * per-call machinery (its intercepting call, metadata object, stream decoder,
 * listener chain and writable call object).
 *
 * Why: grpc-js's per-call work is most of a cheap call's cost. A grpc-js
 * server answering a fixed message used 110–159 µs of CPU a call under load;
 * the same server answering the same calls from the stream, 71–106 µs
 * (docs/performance.md, "gRPC calls from the stream").
 *
 * How: grpc-js's server binds its `_streamHandler` to each HTTP/2 server it
 * listens on; {@link installUnaryFastPath} puts a function in front of it on
 * the server object before it binds. A stream takes the fast path only when
 * its answer could not differ from grpc-js's: the path is a unary row's, the
 * content type is gRPC's, the message is not compressed (no `grpc-encoding`
 * or `identity`) and a `grpc-timeout`, if any, is one grpc-js reads. Any other
 * stream (a streamed row, health, reflection, an unknown method, a compressed
 * message) goes to grpc-js as before. On the fast path, as in grpc-js: a
 * message longer than the receive limit is 8 RESOURCE_EXHAUSTED as soon as its
 * length is read; no message, or a second one, is 12 UNIMPLEMENTED; the
 * deadline answers 4 DEADLINE_EXCEEDED and cancels the handler's signal; an
 * answer that cannot be serialized is 13 INTERNAL; one over the send limit is
 * 8 RESOURCE_EXHAUSTED; response headers, trailers, and a trailers-only
 * response for a failure without headers, carry the same fields.
 *
 * The hook reads two members grpc-js keeps private (`_streamHandler`,
 * `onStreamOpened`); when they are missing, nothing is installed and grpc-js
 * serves every call. `latchkey_grpc_fast_path_calls_total` counts the calls
 * served here, and the tests check that it moves.
 */
import type { IncomingHttpHeaders, ServerHttp2Stream } from 'node:http2';
import type * as grpc from '@grpc/grpc-js';
import type { AnyOperation } from '../../api/index.ts';
import type { ClientIpResolver } from '../../server/index.ts';
import { serveUnary, UnaryCall, type CallStatus, type RequestMetadata, type UnaryServing } from './unary_call.ts';

/** A unary row as the fast path serves it. */
export interface FastRoute {
  op: AnyOperation;
  /** `/package.Service/Method`, as grpc-js names it in its messages. */
  path: string;
  /** The request decoder (one that never throws: unary_call.ts `decodeSafely`). */
  decode(bytes: Buffer): unknown;
  /** The row's answer as the message {@link encode} takes. */
  toMessage(out: unknown): unknown;
  /** The response encoder (grpc-js's `responseSerialize` of the method). */
  encode(message: unknown): Buffer;
}

export interface UnaryFastPathOptions extends UnaryServing {
  /** Path → route, unary rows only. */
  routes: ReadonlyMap<string, FastRoute>;
  clientIp: ClientIpResolver;
  /** `grpc.max_receive_message_length` (-1: no limit). */
  maxReceiveBytes: number;
  /** `grpc.max_send_message_length` (-1: no limit). */
  maxSendBytes: number;
  /**
   * Run once, when the first stream arrives and before it is routed: adds
   * the services (and fills `routes`). Should it throw, every stream is
   * answered `INTERNAL` from then on.
   */
  beforeFirstStream?: () => void;
}

/** The parts of grpc-js's server the hook reads. */
interface GrpcJsServerInternals {
  _streamHandler?: (this: GrpcJsServerInternals, extraInterceptors: unknown[], stream: ServerHttp2Stream, headers: IncomingHttpHeaders) => void;
  onStreamOpened?: (stream: ServerHttp2Stream) => void;
  interceptors?: unknown[];
}

/** grpc-js's reading of `grpc-timeout` (unanchored, as there) and its units in milliseconds. */
const DEADLINE = /(\d{1,8})\s*([HMSmun])/;
const UNIT_MS: Record<string, number> = { H: 3_600_000, M: 60_000, S: 1000, m: 1, u: 0.001, n: 0.000001 };

/** Metadata values grpc-js keeps (it drops others with a logged error). */
const LEGAL_VALUE = /^[ -~]*$/;

const RESPONSE_HEADERS = { ':status': 200, 'content-type': 'application/grpc+proto', 'grpc-accept-encoding': 'identity,deflate,gzip', 'grpc-encoding': 'identity' } as const;
const OK_TRAILERS = { 'grpc-status': '0', 'grpc-message': 'OK' } as const;
const WAIT_FOR_TRAILERS = { waitForTrailers: true } as const;
const END_STREAM = { endStream: true } as const;

/** The call a stream carries (the stream's listeners are shared functions that find it here). */
const CALL = Symbol('latchkey.grpcFastCall');
type CallStream = ServerHttp2Stream & { [CALL]?: StreamUnaryCall | undefined };

function text(value: string | string[] | undefined): string | undefined {
  const v = Array.isArray(value) ? value[0] : value;
  return v !== undefined && LEGAL_VALUE.test(v) ? v : undefined;
}

function metadataOf(h: IncomingHttpHeaders): RequestMetadata {
  const cookie = h.cookie;
  const cookies = cookie === undefined ? undefined : (Array.isArray(cookie) ? cookie : [cookie]).filter((v) => LEGAL_VALUE.test(v));
  return {
    requestId: text(h['x-request-id']),
    userAgent: text(h['user-agent']),
    acceptLanguage: text(h['accept-language']),
    authorization: text(h.authorization),
    cookie: cookies === undefined || cookies.length === 0 ? undefined : cookies.join('; '),
    adminSecret: text(h['x-service-admin-secret']) ?? text(h['x-authorizer-admin-secret']),
    apiKey: text(h['x-api-key']),
  };
}

function onData(this: CallStream, chunk: Buffer): void {
  this[CALL]?.data(chunk);
}
function onEnd(this: CallStream): void {
  this[CALL]?.end();
}
function onClose(this: CallStream): void {
  this[CALL]?.gone();
}
function sendOkTrailers(this: ServerHttp2Stream): void {
  this.sendTrailers(OK_TRAILERS);
}
function ignore(): void {}

/** A unary call served from its HTTP/2 stream. */
class StreamUnaryCall extends UnaryCall {
  readonly #stream: CallStream;
  readonly #route: FastRoute;
  readonly #o: UnaryFastPathOptions;
  /** Bytes received past the last whole message, as they came (joined once a message is whole: one copy each). */
  #chunks: Buffer[] = [];
  #have = 0;
  /** The length of the message being received, its 5-byte prefix included, once that prefix is in (-1 before). */
  #need = -1;
  /** The request message with its 5-byte prefix, once whole. */
  #message: Buffer | undefined = undefined;
  /** True once a status or an answer went out, or the client went away: nothing more is sent. */
  #closed = false;
  #cancelled = false;
  #onCancel: (() => void) | undefined = undefined;
  #deadline: NodeJS.Timeout | undefined = undefined;

  constructor(route: FastRoute, stream: CallStream, headers: IncomingHttpHeaders, timeoutMs: number | undefined, o: UnaryFastPathOptions) {
    super(route.op, route.toMessage, o.clientIp(stream.session?.socket?.remoteAddress ?? 'unknown', text(headers['x-forwarded-for'])), o.metrics, metadataOf(headers));
    this.#stream = stream;
    this.#route = route;
    this.#o = o;
    stream[CALL] = this;
    stream.on('data', onData);
    stream.once('end', onEnd);
    stream.once('close', onClose);
    if (timeoutMs !== undefined) this.#deadline = setTimeout(() => this.#expire(), timeoutMs);
  }

  protected get cancelled(): boolean {
    return this.#cancelled;
  }

  protected onCancel(then: () => void): void {
    this.#onCancel = then;
  }

  /** The client went away (or the deadline passed) before the answer: the handler's signal is aborted. */
  #cancel(): void {
    if (this.#cancelled) return;
    this.#cancelled = true;
    this.#closed = true;
    if (this.#deadline !== undefined) clearTimeout(this.#deadline);
    const then = this.#onCancel;
    this.#onCancel = undefined;
    then?.();
  }

  /** The stream closed: before the answer, the client went away (every answer already cleared the deadline). */
  gone(): void {
    this.#stream[CALL] = undefined;
    if (!this.#closed) this.#cancel();
  }

  #expire(): void {
    this.#deadline = undefined;
    if (this.#closed) return;
    this.#status({ code: 4, details: 'Deadline exceeded', metadata: {} }, false);
    this.#cancel();
  }

  /** Reads whole messages as they arrive, as grpc-js's decoder does (a length over the limit refused on its prefix alone). */
  data(chunk: Buffer): void {
    if (this.#closed) return;
    this.#chunks.push(chunk);
    this.#have += chunk.length;
    const max = this.#o.maxReceiveBytes;
    for (;;) {
      if (this.#need < 0) {
        if (this.#have < 5) return;
        if ((this.#chunks[0] as Buffer).length < 5) this.#chunks = [Buffer.concat(this.#chunks)];
        const length = (this.#chunks[0] as Buffer).readUInt32BE(1);
        if (max !== -1 && length > max) return this.#status({ code: 8, details: `Received message larger than max (${length} vs ${max})`, metadata: {} }, false);
        this.#need = 5 + length;
      }
      if (this.#have < this.#need) return;
      if (this.#message !== undefined) {
        return this.#status({ code: 12, details: `Received a second request message for server streaming method ${this.#route.path}`, metadata: {} }, false);
      }
      const all = this.#chunks.length === 1 ? (this.#chunks[0] as Buffer) : Buffer.concat(this.#chunks);
      this.#message = all.subarray(0, this.#need);
      const rest = all.subarray(this.#need);
      this.#chunks = rest.length === 0 ? [] : [rest];
      this.#have = rest.length;
      this.#need = -1;
    }
  }

  /** The client's half-close: the call runs on the message it sent (a partial one after it is ignored, as in grpc-js). */
  end(): void {
    if (this.#closed) return;
    const message = this.#message;
    if (message === undefined) {
      this.#status({ code: 12, details: `Received no request message for server streaming method ${this.#route.path}`, metadata: {} }, false);
      return;
    }
    this.#message = undefined;
    this.#chunks = [];
    // A set compression flag with no encoding is read as it is (grpc-js's `identity` decompression).
    serveUnary(this, this.#route.decode(message.subarray(5)), this.#o);
  }

  #headers(): Record<string, string | number | string[]> {
    const set = this.cookies.headers();
    return set.length === 0 ? { ...RESPONSE_HEADERS, 'x-request-id': this.requestId } : { ...RESPONSE_HEADERS, 'x-request-id': this.requestId, 'set-cookie': [...set] };
  }

  protected sendMessage(message: unknown): void {
    const stream = this.#stream;
    if (this.#closed || stream.destroyed || stream.closed) return;
    let bytes: Buffer;
    try {
      bytes = this.#route.encode(message);
    } catch {
      return this.#status({ code: 13, details: 'Error serializing response', metadata: {} }, false);
    }
    const max = this.#o.maxSendBytes;
    if (max !== -1 && bytes.length > max) return this.#status({ code: 8, details: `Sent message larger than max (${bytes.length + 5} vs. ${max})`, metadata: {} }, false);
    const frame = Buffer.allocUnsafe(bytes.length + 5);
    frame[0] = 0;
    frame.writeUInt32BE(bytes.length, 1);
    bytes.copy(frame, 5);
    this.#closed = true;
    if (this.#deadline !== undefined) clearTimeout(this.#deadline);
    stream.respond(this.#headers(), WAIT_FOR_TRAILERS);
    stream.once('wantTrailers', sendOkTrailers);
    stream.end(frame);
  }

  protected sendStatus(status: CallStatus): void {
    this.#status(status, this.withHeaders);
  }

  /** Ends the call with a status: after the answer's headers when asked for, else as a trailers-only response. */
  #status(status: CallStatus, withHeaders: boolean): void {
    const stream = this.#stream;
    if (this.#closed || stream.destroyed || stream.closed) return;
    this.#closed = true;
    if (this.#deadline !== undefined) clearTimeout(this.#deadline);
    const trailers = { 'grpc-status': String(status.code), 'grpc-message': encodeURI(status.details), ...status.metadata };
    if (withHeaders) {
      stream.respond(this.#headers(), WAIT_FOR_TRAILERS);
      stream.once('wantTrailers', () => stream.sendTrailers(trailers));
      stream.end();
    } else {
      stream.respond({ ...trailers, ':status': 200, 'content-type': RESPONSE_HEADERS['content-type'] }, END_STREAM);
    }
    // What the client still sends is read and dropped.
    stream.resume();
  }
}

/**
 * Puts the fast path in front of grpc-js's stream handler; call it before the
 * server binds. Returns the count of calls it served, or undefined when
 * grpc-js does not have the members it needs (then grpc-js serves every call).
 */
export function installUnaryFastPath(server: grpc.Server, o: UnaryFastPathOptions): (() => number) | undefined {
  const s = server as unknown as GrpcJsServerInternals;
  const original = s._streamHandler;
  if (typeof original !== 'function' || typeof s.onStreamOpened !== 'function' || (s.interceptors ?? []).length > 0) return undefined;
  let served = 0;
  let first = o.beforeFirstStream;
  let broken = false;
  s._streamHandler = function streamHandler(extraInterceptors, stream, headers) {
    if (first !== undefined) {
      const run = first;
      first = undefined;
      try {
        run();
      } catch {
        broken = true;
      }
    }
    if (broken) {
      stream.once('error', ignore);
      if (!stream.destroyed && !stream.closed) stream.respond({ ':status': 200, 'content-type': 'application/grpc+proto', 'grpc-status': '13', 'grpc-message': 'the gRPC services could not be set up' }, { endStream: true });
      return;
    }
    if (extraInterceptors.length === 0) {
      const route = o.routes.get(headers[':path'] as string);
      const type = headers['content-type'];
      const encoding = headers['grpc-encoding'];
      if (route !== undefined && typeof type === 'string' && type.startsWith('application/grpc') && (encoding === undefined || encoding === 'identity')) {
        // A timeout grpc-js would not read (no match, or a value its metadata drops) is left to it.
        const timeout = headers['grpc-timeout'];
        const match = timeout === undefined ? undefined : typeof timeout === 'string' && LEGAL_VALUE.test(timeout) ? DEADLINE.exec(timeout) : null;
        if (match !== null) {
          stream.once('error', ignore);
          this.onStreamOpened?.(stream);
          served++;
          new StreamUnaryCall(route, stream, headers, match === undefined ? undefined : (Number(match[1]) * (UNIT_MS[match[2] as string] as number)) | 0, o);
          return;
        }
      }
    }
    original.call(this, extraInterceptors, stream, headers);
  };
  return () => served;
}
