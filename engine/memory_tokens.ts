/**
 * The continuation tokens of the memory store's pages (stores, models,
 * tuples): the key of the last item returned, as base64url JSON. A token
 * that is not one of these is `invalid_argument` (reason
 * `invalid_continuation_token`).
 */
import { LatchkeyError } from './errors.ts';

/** Encodes a continuation token naming the last key returned. */
export function encodeToken(value: string): string {
  return Buffer.from(JSON.stringify({ k: value }), 'utf8').toString('base64url');
}

/** Decodes a token made by {@link encodeToken}; `invalid_argument` for anything else. */
export function decodeToken(token: string): string {
  try {
    const parsed: unknown = JSON.parse(Buffer.from(token, 'base64url').toString('utf8'));
    if (parsed !== null && typeof parsed === 'object' && typeof (parsed as { k?: unknown }).k === 'string') {
      return (parsed as { k: string }).k;
    }
  } catch {
    // fall through to the error below
  }
  throw new LatchkeyError('invalid_argument', 'invalid continuation token', { reason: 'invalid_continuation_token' });
}
