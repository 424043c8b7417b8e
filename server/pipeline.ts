/**
 * The one call path every transport uses: authenticate, authorise, validate,
 * run the handler, encode the result, record metrics. Transports only decode
 * the request into {@link CallInfo} + raw input and encode what comes back.
 */
import { withRequestLanguage } from './request_language.ts';
import { localizeError } from './error_messages.ts';
import { LatchkeyError, OUTAGE_RETRY_AFTER_SECONDS, toPublicError } from '../engine/errors.ts';
import { pingMainDatabase } from './compose/database.ts';
import { hasCredentials, resolvePrincipal } from './authenticate.ts';
import { refuseOutOfScope } from './api_key_scopes.ts';
import { ANONYMOUS } from './context.ts';
import type { Clock, CookieSink, Credentials, Principal, Protocol, RequestContext } from './context.ts';
import { outageSummary, type Logger } from './logger.ts';
import { SECURITY_EVENT_CODES, type Metrics } from './metrics.ts';
import type { RateLimiter } from './rate_limit.ts';
import { encodeOutput, validate, type AnyOperation } from '../api/index.ts';
import type { Services } from './context.ts';
import { handlerOf, type AnyHandler, type Handlers } from './handlers/types.ts';

/**
 * What a delegated token (RFC 8693, an `act` claim: an agent acting for the
 * user) may call. Its authority is the intersection of the user's and every
 * actor's, and only these operations compute that intersection (each party
 * is checked in the engine) or merely read the user's profile; everything
 * else that acts as the user (changing the profile, email, password or second
 * factor, ending sessions, deleting the account, organization changes) is
 * refused with `permission_denied`, reason `delegated_token_refused`.
 */
// explain_permission is not among them: one explanation shows one party's authority, not the intersection (engine.md, "Explain").
const DELEGATED_OPERATIONS: ReadonlySet<string> = new Set(['check_permissions', 'list_permissions', 'list_relations', 'profile']);

function refuseAccountLimited(wait: number | undefined): void {
  if (wait !== undefined) {
    throw new LatchkeyError('resource_exhausted', 'too many requests for this account', { reason: 'rate_limited', details: { retry_after_seconds: wait } });
  }
}

function refuseDelegated(op: AnyOperation, principal: Principal): void {
  if (principal.kind !== 'user' || principal.claims?.['act'] === undefined || DELEGATED_OPERATIONS.has(op.name)) return;
  throw new LatchkeyError('permission_denied', `a delegated token may not call ${op.name}`, { reason: 'delegated_token_refused' });
}

/** What a transport knows about a request. */
export interface CallInfo {
  readonly protocol: Protocol;
  readonly requestId: string;
  readonly clientIp: string;
  readonly userAgent: string;
  /** The `Accept-Language` header (gRPC: metadata), for the language of mails queued by the call. */
  readonly acceptLanguage?: string | undefined;
  readonly credentials: Credentials;
  readonly signal: AbortSignal;
  readonly cookies: CookieSink;
}

export interface Pipeline {
  /**
   * Runs `op` with the raw (decoded, not yet validated) input. Resolves to the
   * normalised output; rejects only with a client-safe {@link LatchkeyError}
   * (anything else is logged with the request id and becomes `internal`).
   */
  run(op: AnyOperation, info: CallInfo, rawInput: unknown): Promise<unknown>;
  /**
   * {@link Pipeline.run}, answering with the output itself when every step
   * answered at hand (the principal, the handler), and otherwise with the
   * promise `run` returns. A failure is always a rejected promise, never a
   * throw. Transports on the hot path use it to skip the promise hops of a
   * call that waited for nothing (docs/performance.md, Server path).
   */
  runNow(op: AnyOperation, info: CallInfo, rawInput: unknown): unknown;
  /**
   * Opens a streamed row (`stream`): authenticates, authorises and validates
   * as {@link Pipeline.run} does, and resolves once the handler has accepted
   * the call to its messages, each normalised; rejects as `run` does. A
   * failure while streaming is thrown by the iterator as a client-safe
   * {@link LatchkeyError} (logged like `run`'s). The handler stops when
   * `info.signal` aborts, or the pipeline's `streamsEnd` (server shutdown).
   */
  stream(op: AnyOperation, info: CallInfo, rawInput: unknown): Promise<AsyncIterable<unknown>>;
}

function outage(err: unknown): LatchkeyError {
  return new LatchkeyError('unavailable', 'the database is unavailable; retry later', {
    reason: 'storage_unavailable',
    details: { retry_after_seconds: OUTAGE_RETRY_AFTER_SECONDS },
    cause: err,
  });
}

/**
 * The request context of one call. A class rather than an object literal
 * with getters: V8 builds such literals on a slow path, which showed in the
 * server path's profile (docs/performance.md, Server path).
 */
class CallContext implements RequestContext {
  readonly requestId: string;
  readonly principal: Principal;
  readonly credentials: Credentials;
  readonly clientIp: string;
  readonly userAgent: string;
  readonly acceptLanguage: string | undefined;
  readonly protocol: Protocol;
  readonly clock: Clock;
  readonly cookies: CookieSink;
  readonly services: Services;
  readonly #info: CallInfo;
  readonly #op: string;
  #logger: Logger | undefined;

  constructor(info: CallInfo, principal: Principal, services: Services, op: string) {
    this.requestId = info.requestId;
    this.principal = principal;
    this.credentials = info.credentials;
    this.clientIp = info.clientIp;
    this.userAgent = info.userAgent;
    this.acceptLanguage = info.acceptLanguage;
    this.protocol = info.protocol;
    this.clock = services.clock;
    this.cookies = info.cookies;
    this.services = services;
    this.#info = info;
    this.#op = op;
  }

  get signal(): AbortSignal {
    return this.#info.signal;
  }

  /** Built on first use: most requests never log. */
  get logger(): Logger {
    this.#logger ??= this.services.logger.child({ request_id: this.requestId, op: this.#op });
    return this.#logger;
  }
}

/**
 * The pipeline over `handlers` (the record of every row's handler, bound by
 * the row's name). A row without a handler answers `unimplemented`; the
 * handlers' type makes that a type error, so it cannot happen in the server.
 */
export function createPipeline(
  services: Services,
  metrics: Metrics,
  handlers: Handlers,
  extra?: ReadonlyMap<string, AnyHandler>,
  accountLimiter?: RateLimiter,
  streamsEnd?: AbortSignal,
): Pipeline {
  const { logger } = services;
  const debug = logger.enabled('debug');
  const bound = new Map<string, AnyHandler>();
  const handlerFor = (op: AnyOperation): AnyHandler => {
    let handler = bound.get(op.name);
    if (handler === undefined) {
      handler = handlerOf(handlers, op.name) ?? extra?.get(op.name);
      if (handler === undefined) throw new LatchkeyError('unimplemented', `operation ${op.name} has no handler`);
      bound.set(op.name, handler);
    }
    return handler;
  };
  /** A failure as the client sees it (before its messages are localized), counted and logged. */
  const publicError = async (op: AnyOperation, info: CallInfo, err: unknown): Promise<LatchkeyError> => {
    let pub = toPublicError(err);
    // A failure no driver code explains ("connection terminated", "client is not
    // queryable") while the database does not answer is the outage, not a bug.
    if (pub.code === 'internal' && services.database !== undefined && !(await pingMainDatabase(services.database, 1000))) pub = outage(err);
    if (SECURITY_EVENT_CODES.has(pub.code)) metrics.securityEvent(pub.reason ?? pub.code);
    if (pub.code === 'unavailable') {
      // An expected outage: one line naming the dependency's error, no stack (the
      // request is answered 503 with a retry hint; readiness reports it too).
      if (pub !== err) logger.warn('dependency unavailable', { request_id: info.requestId, op: op.name, transport: info.protocol, reason: pub.reason, cause: outageSummary(err) });
    } else if (!(err instanceof LatchkeyError)) {
      logger.error('unexpected error', { request_id: info.requestId, op: op.name, transport: info.protocol, err });
    }
    return pub;
  };
  /**
   * Who calls, and whether they may make this call at all, the same for a
   * unary call and a stream: the credentials turned into a principal, a
   * delegated token kept to what it may do, the per-account rate limit and an
   * API key's scopes.
   */
  const admit = (op: AnyOperation, info: CallInfo): Principal | Promise<Principal> => {
    const principal =
      op.auth === 'public' && !hasCredentials(info.credentials)
        ? ANONYMOUS
        : resolvePrincipal(services.authenticators, op.auth, info.credentials, info);
    return principal instanceof Promise ? principal.then((p) => admitted(op, p)) : admitted(op, principal);
  };
  /** The rest of {@link admit} once the principal is known: at hand unless the account limit must be asked. */
  const admitted = (op: AnyOperation, principal: Principal): Principal | Promise<Principal> => {
    refuseDelegated(op, principal);
    if (accountLimiter !== undefined && (principal.kind === 'user' || principal.kind === 'service_account')) {
      // Per account, whatever the client IPs (`--rate-limit-account-rps`); shared through Redis, and like the
      // per-IP limit it fails open to a per-process count while Redis is away (docs/scaling.md).
      const key = principal.kind === 'user' ? `user:${principal.userId}` : `service_account:${principal.clientId}`;
      if (accountLimiter.takeNow === undefined) {
        return accountLimiter.take(key).then((wait) => {
          refuseAccountLimited(wait);
          refuseOutOfScope(op, principal);
          return principal;
        });
      }
      refuseAccountLimited(accountLimiter.takeNow(key));
    }
    refuseOutOfScope(op, principal);
    return principal;
  };
  /** Validates the input and runs the handler (in the call's language); its answer, at hand or promised. */
  const handle = (op: AnyOperation, info: CallInfo, principal: Principal, rawInput: unknown): unknown => {
    const input = validate(op.input, rawInput ?? {});
    // The call's language goes with it to what it sends without its context (one-time codes).
    return withRequestLanguage(info.acceptLanguage, () => handlerFor(op)(new CallContext(info, principal, services, op.name), input));
  };
  /** Times and counts a finished call (and logs it at debug level). */
  const finish = (op: AnyOperation, info: CallInfo, started: number, code: string): void => {
    const seconds = (performance.now() - started) / 1000;
    metrics.observe(op.name, info.protocol, code, seconds);
    if (debug) {
      logger.debug('request', {
        request_id: info.requestId,
        op: op.name,
        transport: info.protocol,
        code,
        ms: Math.round(seconds * 1e6) / 1e3,
        client_ip: info.clientIp,
      });
    }
  };
  /** A user-facing row's failure in the caller's language (codes and reasons unchanged); a super-admin row's stays in English. */
  const localized = (op: AnyOperation, info: CallInfo, pub: LatchkeyError): LatchkeyError => (op.admin ? pub : localizeError(pub, info.acceptLanguage));
  /** The rest of a call that waits for something: its output encoded, or its failure as the client sees it. */
  const settle = async (op: AnyOperation, info: CallInfo, started: number, pending: Promise<unknown>): Promise<unknown> => {
    let code = 'ok';
    try {
      return encodeOutput(op.output, await pending);
    } catch (err) {
      const pub = localized(op, info, await publicError(op, info, err));
      code = pub.code;
      throw pub;
    } finally {
      finish(op, info, started, code);
    }
  };
  const runNow = (op: AnyOperation, info: CallInfo, rawInput: unknown): unknown => {
    const started = performance.now();
    let pending: Promise<unknown>;
    try {
      const principal = admit(op, info);
      const output = principal instanceof Promise ? principal.then((p) => handle(op, info, p, rawInput)) : handle(op, info, principal, rawInput);
      if (!(output instanceof Promise)) {
        const encoded = encodeOutput(op.output, output);
        finish(op, info, started, 'ok');
        return encoded;
      }
      pending = output;
    } catch (err) {
      pending = Promise.reject(err);
    }
    return settle(op, info, started, pending);
  };
  return {
    async stream(op, info, rawInput) {
      const started = performance.now();
      let code = 'ok';
      try {
        const principal = await admit(op, info);
        const input = validate(op.input, rawInput ?? {});
        // A stream also ends when the server begins to shut down: its client resumes elsewhere (or after the restart) from its last token.
        const streamInfo: CallInfo = streamsEnd === undefined ? info : {
          protocol: info.protocol, requestId: info.requestId, clientIp: info.clientIp, userAgent: info.userAgent, acceptLanguage: info.acceptLanguage, credentials: info.credentials, cookies: info.cookies,
          signal: AbortSignal.any([info.signal, streamsEnd]),
        };
        const messages = (await withRequestLanguage(info.acceptLanguage, () => handlerFor(op)(new CallContext(streamInfo, principal, services, op.name), input))) as AsyncIterable<unknown>;
        return (async function* encoded(): AsyncGenerator<unknown> {
          try {
            for await (const m of messages) yield encodeOutput(op.output, m);
          } catch (err) {
            throw localized(op, info, await publicError(op, info, err));
          }
        })();
      } catch (err) {
        const pub = localized(op, info, await publicError(op, info, err));
        code = pub.code;
        throw pub;
      } finally {
        // The opening of the stream is what is timed and counted (a stream lasts as long as its client).
        metrics.observe(op.name, info.protocol, code, (performance.now() - started) / 1000);
      }
    },
    run(op, info, rawInput) {
      const out = runNow(op, info, rawInput);
      return out instanceof Promise ? out : Promise.resolve(out);
    },
    runNow,
  };
}
