/**
 * The one error class of the project. Every layer throws {@link LatchkeyError}
 * with a precise code at the point of knowledge; transports only read
 * {@link ERROR_STATUS} to turn a code into an HTTP or gRPC status.
 *
 * Codes are the snake_case names of the gRPC canonical status codes. The
 * HTTP/gRPC pairs follow Google's canonical mapping.
 */

/** HTTP status and gRPC status number for each error code. */
export const ERROR_STATUS = {
  invalid_argument: { http: 400, grpc: 3 },
  not_found: { http: 404, grpc: 5 },
  already_exists: { http: 409, grpc: 6 },
  permission_denied: { http: 403, grpc: 7 },
  unauthenticated: { http: 401, grpc: 16 },
  failed_precondition: { http: 400, grpc: 9 },
  aborted: { http: 409, grpc: 10 },
  out_of_range: { http: 400, grpc: 11 },
  resource_exhausted: { http: 429, grpc: 8 },
  cancelled: { http: 499, grpc: 1 },
  deadline_exceeded: { http: 504, grpc: 4 },
  unimplemented: { http: 501, grpc: 12 },
  method_not_allowed: { http: 405, grpc: 12 },
  payload_too_large: { http: 413, grpc: 8 },
  unavailable: { http: 503, grpc: 14 },
  internal: { http: 500, grpc: 13 },
  unknown: { http: 500, grpc: 2 },
  data_loss: { http: 500, grpc: 15 },
} as const satisfies Record<string, { http: number; grpc: number }>;

/** A snake_case error code; adding one without a status mapping fails `tsc`. */
export type ErrorCode = keyof typeof ERROR_STATUS;

/** JSON-safe extra information that may be shown to a client. */
export type ErrorDetails = Readonly<Record<string, unknown>>;

export interface LatchkeyErrorOptions {
  /** A snake_case reason naming the precise case, e.g. `model_not_found`. */
  reason?: string;
  /** JSON-safe details shown to clients (e.g. DSL diagnostics). */
  details?: ErrorDetails;
  /** The underlying error; logged, never serialized. */
  cause?: unknown;
}

/**
 * An error whose `code`, `reason`, `message` and `details` are safe to show a
 * client. Its `cause` is for logs only and is never serialized.
 */
export class LatchkeyError extends Error {
  readonly code: ErrorCode;
  readonly reason: string | undefined;
  readonly details: ErrorDetails | undefined;

  constructor(code: ErrorCode, message: string, options: LatchkeyErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'LatchkeyError';
    this.code = code;
    this.reason = options.reason;
    this.details = options.details;
  }

  /** The client-facing JSON form: `{code, message}` plus `reason`/`details` when present. */
  toJSON(): { code: ErrorCode; message: string; reason?: string; details?: ErrorDetails } {
    const out: { code: ErrorCode; message: string; reason?: string; details?: ErrorDetails } = {
      code: this.code,
      message: this.message,
    };
    if (this.reason !== undefined) out.reason = this.reason;
    if (this.details !== undefined) out.details = this.details;
    return out;
  }
}

/** The generic message every unexpected error is replaced by at the service boundary. */
export const INTERNAL_MESSAGE = 'internal server error';

/**
 * Turns anything thrown into a client-safe {@link LatchkeyError}: our own
 * errors pass through (an `unavailable` one gains the retry hint), a
 * dependency outage becomes `unavailable` (reason `storage_unavailable`, see
 * {@link dependencyError}), everything else becomes `internal` with a generic
 * message (the original stays reachable as `cause` for logging).
 */
export function toPublicError(err: unknown): LatchkeyError {
  const outage = dependencyError(err);
  if (outage !== undefined) return outage;
  if (err instanceof LatchkeyError) return err;
  return new LatchkeyError('internal', INTERNAL_MESSAGE, { cause: err });
}

/** True when `err` is a {@link LatchkeyError} with the given code. */
export function isErrorCode(err: unknown, code: ErrorCode): err is LatchkeyError {
  return err instanceof LatchkeyError && err.code === code;
}

/**
 * Driver and socket error codes that mean a dependency (SQL database, Redis,
 * SMTP) cannot be reached, dropped the connection, is shutting down or is out
 * of connections, rather than that the request was wrong. Codes, never
 * messages: node's `E*` socket codes, mysql2's `PROTOCOL_*` and server
 * errors (1040 too many connections, 1053 shutdown, 1205 lock wait timeout,
 * 2006/2013 server gone), PostgreSQL SQLSTATE class 08 (connection
 * exception), 53300 (too many connections) and 57P01–57P03 (admin shutdown,
 * crash shutdown, cannot connect now), SQLite's busy/locked and its storage
 * failures (read-only file, I/O error, cannot open, disk full), nodemailer's
 * connection codes.
 */
const DEPENDENCY_CODES: ReadonlySet<string> = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EAI_AGAIN',
  'PROTOCOL_CONNECTION_LOST',
  'PROTOCOL_SEQUENCE_TIMEOUT',
  'PROTOCOL_ENQUEUE_AFTER_FATAL_ERROR',
  'PROTOCOL_ENQUEUE_AFTER_QUIT',
  'ER_CON_COUNT_ERROR',
  'ER_SERVER_SHUTDOWN',
  'ER_LOCK_WAIT_TIMEOUT',
  'CR_SERVER_GONE_ERROR',
  'CR_SERVER_LOST',
  '53300',
  '57P01',
  '57P02',
  '57P03',
  'SQLITE_BUSY',
  'SQLITE_LOCKED',
  'SQLITE_READONLY',
  'SQLITE_IOERR',
  'SQLITE_CANTOPEN',
  'SQLITE_FULL',
  'ECONNECTION',
  'ESOCKET',
]);

/**
 * Error class names that mean the same: sequelize's connection errors and its
 * pool's acquire timeout, ioredis's retry exhaustion.
 */
const DEPENDENCY_NAMES =
  /^(?:Sequelize(?:Connection\w*|HostNotReachable|HostNotFound|InvalidConnection|Timeout)Error|ConnectionAcquireTimeoutError|TimeoutError|MaxRetriesPerRequestError)$/u;

/** The error, its `parent`/`original` (sequelize) and its `cause` chain, at most a few links deep. */
function* errorChain(err: unknown): Generator<{ name?: unknown; code?: unknown; errno?: unknown }> {
  const seen = new Set<unknown>();
  const queue: unknown[] = [err];
  while (queue.length > 0 && seen.size < 8) {
    const e = queue.shift();
    if (e === null || typeof e !== 'object' || seen.has(e)) continue;
    seen.add(e);
    const o = e as { name?: unknown; code?: unknown; errno?: unknown; parent?: unknown; original?: unknown; cause?: unknown; errors?: unknown };
    yield o;
    queue.push(o.parent, o.original, o.cause);
    // AggregateError (e.g. ECONNREFUSED on both ::1 and 127.0.0.1).
    if (Array.isArray(o.errors)) queue.push(...o.errors.slice(0, 4));
  }
}

/**
 * True when `err` (or what it wraps) says a dependency could not be reached or
 * dropped the connection: an outage, not a bug and not the caller's fault.
 * Decided from error codes and class names only (never message text).
 */
export function isDependencyFailure(err: unknown): boolean {
  if (err instanceof LatchkeyError) return err.code === 'unavailable' || (err.code === 'internal' && err.cause !== undefined && err.cause !== err && isDependencyFailure(err.cause));
  for (const e of errorChain(err)) {
    if (typeof e.name === 'string' && DEPENDENCY_NAMES.test(e.name)) return true;
    if (typeof e.code === 'string' && (DEPENDENCY_CODES.has(e.code) || /^08[0-9A-Z]{3}$/u.test(e.code))) return true;
  }
  return false;
}

/** Seconds a client is told to wait before retrying after an outage (REST `Retry-After`, gRPC `retry-after` metadata). */
export const OUTAGE_RETRY_AFTER_SECONDS = 1;

/**
 * The one mapping of dependency failures: `unavailable` with `reason` (default
 * `storage_unavailable`) and `details.retry_after_seconds`, keeping the
 * original as `cause` for logs. Returns undefined when `err` is not a
 * dependency failure (see {@link isDependencyFailure}).
 */
export function dependencyError(err: unknown, reason = 'storage_unavailable', message = 'a service this server depends on is unavailable; retry later'): LatchkeyError | undefined {
  if (err instanceof LatchkeyError) {
    // An `internal` wrapping an outage (a store that did not recognise it) is the outage.
    if (err.code === 'internal' && err.cause !== undefined && isDependencyFailure(err.cause)) return dependencyError(err.cause, reason, message);
    if (err.code !== 'unavailable') return undefined;
    if (err.details?.['retry_after_seconds'] !== undefined) return err;
    return new LatchkeyError('unavailable', err.message, {
      ...(err.reason !== undefined ? { reason: err.reason } : {}),
      details: { ...err.details, retry_after_seconds: OUTAGE_RETRY_AFTER_SECONDS },
      cause: err.cause ?? err,
    });
  }
  if (!isDependencyFailure(err)) return undefined;
  return new LatchkeyError('unavailable', message, { reason, details: { retry_after_seconds: OUTAGE_RETRY_AFTER_SECONDS }, cause: err });
}
