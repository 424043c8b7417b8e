/**
 * One unary gRPC call as the pipeline sees it ({@link CallInfo}) and as it is
 * answered, whichever path took it: grpc-js's call object (server.ts) or the
 * HTTP/2 stream itself (unary_fast.ts). The base class holds what both share
 * (the request's credentials, the per-IP limit, the answer's encoding, the
 * error's status); a subclass says how the headers, the message and the
 * status go out and when the client has gone away.
 */
import { ERROR_STATUS, LatchkeyError } from '../../engine/errors.ts';
import { CookieSink, extractCredentials, rateLimitKey, requestIdFrom, type Credentials } from '../../server/index.ts';
import type { CallInfo, Metrics, Pipeline, RateLimiter } from '../../server/index.ts';
import { fromWire, type AnyOperation } from '../../api/index.ts';

/** The request metadata a unary call reads: the first value of each key, undefined when absent. */
export interface RequestMetadata {
  requestId: string | undefined;
  userAgent: string | undefined;
  acceptLanguage: string | undefined;
  authorization: string | undefined;
  /** Every `cookie` value, joined with `; `. */
  cookie: string | undefined;
  adminSecret: string | undefined;
  apiKey: string | undefined;
}

/** A call's final status: the gRPC code, its details, and trailing metadata (ASCII values). */
export interface CallStatus {
  code: number;
  details: string;
  metadata: Record<string, string>;
}

/** The status of an error: its code's gRPC status, its message, and `x-error-code` / `x-error-reason` (and `retry-after`). */
export function statusOf(err: unknown): CallStatus {
  const pub = err instanceof LatchkeyError ? err : new LatchkeyError('internal', 'internal server error');
  const metadata: Record<string, string> = { 'x-error-code': pub.code };
  if (pub.reason !== undefined) metadata['x-error-reason'] = pub.reason;
  if ((pub.code === 'resource_exhausted' || pub.code === 'unavailable') && pub.details?.retry_after_seconds !== undefined)
    metadata['retry-after'] = String(pub.details.retry_after_seconds);
  return { code: ERROR_STATUS[pub.code].grpc, details: pub.message, metadata };
}

/** Marks a request message that could not be decoded (see {@link decodeSafely}). */
export const UNDECODABLE = Symbol('undecodable');

/**
 * A request decoder that never throws: grpc-js answers a message its
 * deserializer throws on with 13 INTERNAL, though the fault is the client's.
 * An undecodable message becomes a marker that {@link serveUnary} refuses
 * with 3 INVALID_ARGUMENT (reason `undecodable_message`).
 */
export function decodeSafely<T>(decode: (bytes: Buffer) => T): (bytes: Buffer) => T | { [UNDECODABLE]: unknown } {
  return (bytes) => {
    try {
      return decode(bytes);
    } catch (err) {
      return { [UNDECODABLE]: err };
    }
  };
}

/**
 * One unary call. One object per call, its methods on the prototype: a call
 * that waits for nothing allocates no closure.
 */
export abstract class UnaryCall implements CallInfo {
  readonly protocol = 'grpc' as const;
  readonly requestId: string;
  readonly userAgent: string;
  readonly acceptLanguage: string | undefined;
  readonly credentials: Credentials;
  readonly cookies = new CookieSink();
  readonly started = performance.now();
  /** Built on first use: most handlers never look at the signal (nor is a listener added for it). */
  #controller: AbortController | undefined = undefined;
  #done = false;

  readonly op: AnyOperation;
  readonly clientIp: string;
  readonly metrics: Metrics;

  /** The row's answer as the message its encoder takes (grpc_codec.ts `toWire`, or `toWireEncoded` for a row encoded with its JSON fields as bytes). */
  readonly toMessage: (out: unknown) => unknown;

  constructor(op: AnyOperation, toMessage: (out: unknown) => unknown, clientIp: string, metrics: Metrics, md: RequestMetadata) {
    this.op = op;
    this.toMessage = toMessage;
    this.clientIp = clientIp;
    this.metrics = metrics;
    this.requestId = requestIdFrom(md.requestId);
    this.userAgent = md.userAgent ?? '';
    this.acceptLanguage = md.acceptLanguage;
    this.credentials = extractCredentials({ authorization: md.authorization, cookie: md.cookie, adminSecret: md.adminSecret, apiKey: md.apiKey });
  }

  /** True once the client has gone away (or the call's deadline has passed). */
  protected abstract get cancelled(): boolean;
  /** Calls `then` once when the client goes away (or the deadline passes). */
  protected abstract onCancel(then: () => void): void;
  /** Sends the headers, the encoded message ({@link toMessage}'s output) and an OK status. */
  protected abstract sendMessage(message: unknown): void;
  /** Sends the status (with the headers first when {@link withHeaders}). */
  protected abstract sendStatus(status: CallStatus): void;

  get signal(): AbortSignal {
    if (this.#controller === undefined) {
      const c = (this.#controller = new AbortController());
      if (this.cancelled) {
        if (!this.#done) c.abort();
      } else {
        this.onCancel(() => {
          if (!this.#done) c.abort();
        });
      }
    }
    return this.#controller.signal;
  }

  /** Whether a status carries the answer's headers too: when the handler set cookies (a cleared session still reaches the client). */
  protected get withHeaders(): boolean {
    return this.cookies.headers().length > 0;
  }

  /** After the per-IP limit: true to go on; false when refused (the refusal is then answered). */
  admitted(wait: number | undefined): boolean {
    if (wait === undefined) return true;
    this.metrics.observe('grpc', 'grpc', 'resource_exhausted', (performance.now() - this.started) / 1000);
    this.fail(new LatchkeyError('resource_exhausted', 'too many requests', { reason: 'rate_limited', details: { retry_after_seconds: wait } }));
    return false;
  }

  /** Answers with the output (nothing when the call was already answered: a refusal). */
  respond(out: unknown): void {
    if (this.#done) return;
    // An answer that cannot be encoded is an internal error, answered at once (never a call left to its deadline).
    let message: unknown;
    try {
      message = this.toMessage(out);
    } catch {
      this.fail(new LatchkeyError('internal', 'internal server error'));
      return;
    }
    this.#done = true;
    this.sendMessage(message);
  }

  /** Answers with the error's status (anything but a {@link LatchkeyError} is `internal`). */
  fail(err: unknown): void {
    if (this.#done) return;
    this.#done = true;
    this.sendStatus(statusOf(err));
  }
}

/** What {@link serveUnary} runs a call with. */
export interface UnaryServing {
  pipeline: Pipeline;
  rateLimiter: RateLimiter;
  metrics: Metrics;
}

/** Runs a decoded request through the per-IP limit and the pipeline, and answers the call. */
export function serveUnary(c: UnaryCall, request: unknown, s: UnaryServing): void {
  const op = c.op;
  let out: unknown;
  try {
    const undecodable = (request as { [UNDECODABLE]?: unknown } | null)?.[UNDECODABLE];
    if (undecodable !== undefined) {
      s.metrics.observe(op.name, 'grpc', 'invalid_argument', (performance.now() - c.started) / 1000);
      throw new LatchkeyError('invalid_argument', 'the request message could not be decoded', { reason: 'undecodable_message', cause: undecodable });
    }
    const key = rateLimitKey(c.clientIp);
    // Counts kept in this process are decided at once, without a promise.
    if (s.rateLimiter.takeNow !== undefined) out = c.admitted(s.rateLimiter.takeNow(key)) ? s.pipeline.runNow(op, c, fromWire(op.input, request, false)) : undefined;
    else out = s.rateLimiter.take(key).then((wait) => (c.admitted(wait) ? s.pipeline.runNow(op, c, fromWire(op.input, request, false)) : undefined));
  } catch (err) {
    c.fail(err);
    return;
  }
  if (out instanceof Promise) out.then((o: unknown) => c.respond(o), (err: unknown) => c.fail(err));
  else c.respond(out);
}
