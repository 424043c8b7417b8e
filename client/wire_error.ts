/**
 * Turns what the service sends back on failure into the project's one error
 * class, {@link LatchkeyError}, with the same `code`, `message` and `reason`
 * whichever protocol carried it: the REST body `{code, message, reason?}`,
 * GraphQL `errors[0].extensions`, or the gRPC `x-error-code` /
 * `x-error-reason` trailers. Answers that are not the service's own (a proxy's
 * HTML page, a dropped connection) get the code of their HTTP or gRPC status.
 */
import { ERROR_STATUS, LatchkeyError, type ErrorCode, type ErrorDetails } from '../engine/errors.ts';

function isCode(code: unknown): code is ErrorCode {
  return typeof code === 'string' && Object.hasOwn(ERROR_STATUS, code);
}

/** The first error code the table maps to an HTTP status (e.g. 401 → unauthenticated). */
export function codeOfHttpStatus(status: number): ErrorCode {
  for (const [code, st] of Object.entries(ERROR_STATUS)) if (st.http === status) return code as ErrorCode;
  return 'unknown';
}

/** The first error code the table maps to a gRPC status number. */
export function codeOfGrpcStatus(status: number): ErrorCode {
  for (const [code, st] of Object.entries(ERROR_STATUS)) if (st.grpc === status) return code as ErrorCode;
  return 'unknown';
}

/** An error from its wire fields; an unknown code becomes `unknown`. */
export function wireError(code: unknown, message: unknown, reason?: unknown, details?: unknown, fallback: ErrorCode = 'unknown'): LatchkeyError {
  const opts: { reason?: string; details?: ErrorDetails } = {};
  if (typeof reason === 'string' && reason !== '') opts.reason = reason;
  if (details !== null && typeof details === 'object' && !Array.isArray(details)) opts.details = details as ErrorDetails;
  const text = typeof message === 'string' && message !== '' ? message : `request failed (${isCode(code) ? code : fallback})`;
  return new LatchkeyError(isCode(code) ? code : fallback, text, opts);
}

/** A failure to reach the service at all. */
export function transportError(target: string, err: unknown): LatchkeyError {
  const e = err as { name?: string; message?: string; cause?: { message?: string } } | undefined;
  if (e?.name === 'TimeoutError') return new LatchkeyError('deadline_exceeded', `no answer from ${target} in time`, { cause: err });
  const why = e?.cause?.message ?? e?.message ?? String(err);
  return new LatchkeyError('unavailable', `cannot reach ${target}: ${why}`, { cause: err });
}
