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
 * errors pass through, everything else becomes `internal` with a generic
 * message (the original stays reachable as `cause` for logging).
 */
export function toPublicError(err: unknown): LatchkeyError {
  if (err instanceof LatchkeyError) return err;
  return new LatchkeyError('internal', INTERNAL_MESSAGE, { cause: err });
}

/** True when `err` is a {@link LatchkeyError} with the given code. */
export function isErrorCode(err: unknown, code: ErrorCode): err is LatchkeyError {
  return err instanceof LatchkeyError && err.code === code;
}
