/**
 * Secrets stored as SHA-256 digests (client secrets, registration tokens, API
 * keys): the digest, a comparison in constant time, and the scope-token shape
 * of RFC 6749 §3.3 that clients and API keys share.
 */
import { createHash, timingSafeEqual } from 'node:crypto';

/** A scope token (RFC 6749 §3.3: printable ASCII but space, `"` and `\\`), at most 128 characters. */
export const SCOPE_TOKEN = /^[\x21\x23-\x5B\x5D-\x7E]{1,128}$/;

/** The hex SHA-256 digest of a secret. */
export const digestOf = (secret: string): string => createHash('sha256').update(secret, 'utf8').digest('hex');

/** True when `secret`'s digest is `digest`, compared in constant time; false for no digest. */
export function digestEqual(secret: string, digest: string | null): boolean {
  if (digest === null) return false;
  const a = Buffer.from(digestOf(secret), 'hex');
  const b = Buffer.from(digest, 'hex');
  return a.length === b.length && timingSafeEqual(a, b);
}
