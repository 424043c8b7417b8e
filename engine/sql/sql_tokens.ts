/**
 * The continuation tokens of the SQL store's pages (stores, models, tuples):
 * the key of the last item returned, as base64url JSON. A token that is not
 * one of these is `invalid_argument` (reason `invalid_continuation_token`).
 */
import { LatchkeyError } from '../errors.ts';

export function encodeToken(parts: readonly string[]): string {
  return Buffer.from(JSON.stringify(parts), 'utf8').toString('base64url');
}

export function decodeToken(token: string, length: number): string[] {
  try {
    const v: unknown = JSON.parse(Buffer.from(token, 'base64url').toString('utf8'));
    if (Array.isArray(v) && v.length === length && v.every((x) => typeof x === 'string')) return v as string[];
  } catch {
    // fall through
  }
  throw new LatchkeyError('invalid_argument', 'invalid continuation token', { reason: 'invalid_continuation_token' });
}
