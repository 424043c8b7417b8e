/**
 * Errors of the OpenFGA HTTP API in OpenFGA's own shape: `{code, message}`
 * with OpenFGA's string codes and statuses (openfga-v1.swagger.json:
 * `ErrorCode` → 400, `NotFoundErrorCode` → 404, `AuthErrorCode` → 401/403,
 * `InternalErrorCode` → 500; openfga/openfga `pkg/server/errors`). An engine
 * error carries OpenFGA's numeric code in `details.openfga_code` where OpenFGA
 * defines one; the rest map by our code and reason, decided where the error
 * was thrown (never from its message).
 */
import { ERROR_STATUS, LatchkeyError } from '../../engine/errors.ts';

/** OpenFGA's `ErrorCode` names by number (openfga/api `openfga/v1/errors.proto`). */
export const OPENFGA_ERROR_NAMES: Readonly<Record<number, string>> = {
  2000: 'validation_error',
  2001: 'authorization_model_not_found',
  2002: 'authorization_model_resolution_too_complex',
  2003: 'invalid_write_input',
  2004: 'cannot_allow_duplicate_tuples_in_one_request',
  2005: 'cannot_allow_duplicate_types_in_one_request',
  2006: 'cannot_allow_multiple_references_to_one_relation',
  2007: 'invalid_continuation_token',
  2008: 'invalid_tuple_set',
  2009: 'invalid_check_input',
  2010: 'invalid_expand_input',
  2011: 'unsupported_user_set',
  2012: 'invalid_object_format',
  2017: 'write_failed_due_to_invalid_input',
  2018: 'authorization_model_assertions_not_found',
  2020: 'latest_authorization_model_not_found',
  2021: 'type_not_found',
  2022: 'relation_not_found',
  2023: 'empty_relation_definition',
  2025: 'invalid_user',
  2027: 'invalid_tuple',
  2028: 'unknown_relation',
  2030: 'store_id_invalid_length',
  2033: 'assertions_too_many_items',
  2034: 'id_too_long',
  2036: 'authorization_model_id_too_long',
  2037: 'tuple_key_value_not_specified',
  2038: 'tuple_keys_too_many_or_too_few_items',
  2039: 'page_size_invalid',
  2040: 'param_missing_value',
  2041: 'difference_base_missing_value',
  2042: 'subtract_base_missing_value',
  2043: 'object_too_long',
  2044: 'relation_too_long',
  2045: 'type_definitions_too_few_items',
  2046: 'type_invalid_length',
  2047: 'type_invalid_pattern',
  2048: 'relations_too_few_items',
  2049: 'relations_too_long',
  2050: 'relations_invalid_pattern',
  2051: 'object_invalid_pattern',
  2052: 'query_string_type_continuation_token_mismatch',
  2053: 'exceeded_entity_limit',
  2054: 'invalid_contextual_tuple',
  2055: 'duplicate_contextual_tuple',
  2056: 'invalid_authorization_model',
  2057: 'unsupported_schema_version',
  2058: 'cancelled',
  2059: 'invalid_start_time',
};

/** An OpenFGA error response: the HTTP status and the body. */
export interface OpenfgaError {
  status: number;
  body: { code: string; message: string };
}

/** Our reasons that OpenFGA names otherwise (or has no numeric code for). */
const BY_REASON: Readonly<Record<string, { status: number; code: string }>> = {
  store_not_found: { status: 404, code: 'store_id_not_found' },
  tuple_exists: { status: 400, code: 'write_failed_due_to_invalid_input' },
  tuple_not_found: { status: 400, code: 'write_failed_due_to_invalid_input' },
  too_many_tuples: { status: 400, code: 'exceeded_entity_limit' },
  invalid_continuation_token: { status: 400, code: 'invalid_continuation_token' },
  invalid_write_input: { status: 400, code: 'invalid_write_input' },
  too_many_contextual_tuples: { status: 400, code: 'exceeded_entity_limit' },
  too_many_assertions: { status: 400, code: 'assertions_too_many_items' },
  invalid_page_size: { status: 400, code: 'page_size_invalid' },
};

/** OpenFGA's code for a status of another family (`InternalErrorCode`, auth and throttling). */
function generic(err: LatchkeyError): { status: number; code: string } {
  switch (err.code) {
    case 'invalid_argument':
    case 'failed_precondition':
    case 'out_of_range':
      return { status: 400, code: 'validation_error' };
    case 'not_found':
      return { status: 404, code: 'undefined_endpoint' };
    case 'unauthenticated':
      return { status: 401, code: 'unauthenticated' };
    case 'permission_denied':
      return { status: 403, code: 'forbidden' };
    case 'already_exists':
      return { status: 409, code: 'already_exists' };
    case 'resource_exhausted':
      return { status: 429, code: 'resource_exhausted' };
    case 'deadline_exceeded':
      return { status: ERROR_STATUS.deadline_exceeded.http, code: 'deadline_exceeded' };
    case 'cancelled':
      return { status: 400, code: 'cancelled' };
    case 'unavailable':
      return { status: ERROR_STATUS.unavailable.http, code: 'unavailable' };
    case 'aborted':
      return { status: 409, code: 'aborted' };
    case 'unimplemented':
      return { status: 404, code: 'unimplemented' };
    default:
      return { status: 500, code: 'internal_error' };
  }
}

/**
 * The OpenFGA response for an error. Anything that is not a
 * {@link LatchkeyError} is `internal_error` with a generic message (the caller
 * logs the original).
 */
export function openfgaError(err: unknown): OpenfgaError {
  if (!(err instanceof LatchkeyError)) return { status: 500, body: { code: 'internal_error', message: 'Internal Server Error' } };
  const byReason = err.reason === undefined ? undefined : BY_REASON[err.reason];
  const numeric = err.details?.['openfga_code'];
  const named = typeof numeric === 'number' ? OPENFGA_ERROR_NAMES[numeric] : undefined;
  const mapped = byReason ?? (named !== undefined ? { status: 400, code: named } : generic(err));
  const message = mapped.status >= 500 && err.code === 'internal' ? 'Internal Server Error' : err.message;
  return { status: mapped.status, body: { code: mapped.code, message } };
}

/** A request OpenFGA's validation refuses: 400 `validation_error` (or the named code). */
export function invalidRequest(message: string, code = 'validation_error'): LatchkeyError {
  return new LatchkeyError('invalid_argument', message, { reason: 'openfga_invalid_request', details: { openfga_error: code } });
}

/** The OpenFGA response of an error made by {@link invalidRequest}, or of any other. */
export function toOpenfga(err: unknown): OpenfgaError {
  if (err instanceof LatchkeyError && err.reason === 'openfga_invalid_request') {
    const code = err.details?.['openfga_error'];
    return { status: 400, body: { code: typeof code === 'string' ? code : 'validation_error', message: err.message } };
  }
  return openfgaError(err);
}
