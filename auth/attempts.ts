/**
 * Per-user attempt budgets on the memory store (login passwords, OTP and
 * TOTP codes, OTP resends): a fixed window counter shared by every process
 * that shares the store (Redis with `--redis-url`, else in process).
 */
import { LatchkeyError } from '../engine/errors.ts';
import type { MemoryStore } from './memory_store.ts';

/**
 * Reserves one attempt under `key` before the secret is compared (security
 * matrix A2/A3), so that concurrent guesses cannot exceed the budget. Throws
 * `resource_exhausted` (reason `too_many_attempts`,
 * `details.retry_after_seconds`) once more than `max` attempts were made in
 * the window of `windowSeconds`.
 */
export async function reserveAttempt(
  store: MemoryStore,
  key: string,
  o: { max: number; windowSeconds: number; message: string; userId: string },
): Promise<void> {
  const attempts = await store.incr(key, o.windowSeconds);
  if (attempts <= o.max) return;
  const retryAfter = await store.ttl(key);
  throw new LatchkeyError('resource_exhausted', o.message, {
    reason: 'too_many_attempts',
    details: { retry_after_seconds: Math.max(1, retryAfter) },
    cause: { internal_reason: 'locked_out', user_id: o.userId },
  });
}
