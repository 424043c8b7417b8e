/**
 * Random values for identifiers and secrets (token ids, session ids, session
 * cookies), drawn from a pool of bytes of node's CSPRNG.
 *
 * Why a pool: each `randomBytes` call costs about 2.6 µs here whatever its
 * size (filling 4 KiB costs about 3 µs), and a refresh draws several values.
 * From the pool a value costs about 0.3 µs. node's `randomUUID` keeps such a
 * pool for the same reason. The pool is refilled whole once what is left of
 * it cannot give the next value; the bytes of each value are zeroed as they
 * are drawn, so none is handed out twice or kept after its use.
 */
import { randomBytes, randomFillSync } from 'node:crypto';

const POOL_BYTES = 4096;
const pool = Buffer.alloc(POOL_BYTES);
/** The next unused byte of the pool: at its end until the first draw fills it. */
let next = POOL_BYTES;

/** `bytes` random bytes in base64url (no padding). */
export function randomBase64url(bytes: number): string {
  if (!Number.isSafeInteger(bytes) || bytes <= 0) throw new RangeError(`a random value needs a positive whole number of bytes, got ${bytes}`);
  if (bytes > POOL_BYTES / 8) return randomBytes(bytes).toString('base64url');
  if (next + bytes > POOL_BYTES) {
    randomFillSync(pool);
    next = 0;
  }
  const end = next + bytes;
  const value = pool.toString('base64url', next, end);
  pool.fill(0, next, end);
  next = end;
  return value;
}
