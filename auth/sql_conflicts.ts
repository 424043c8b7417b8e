/**
 * Recognising SQL errors that mean "a concurrent transaction won; run yours
 * again": deadlocks and serialization failures (MySQL 1213, PostgreSQL
 * 40P01/40001) roll the whole transaction back, so a retry is safe.
 */
import { isUniqueConstraintError } from '../engine/sql/sql_database.ts';

/** True for a unique-constraint violation reported through sequelize or the SQLite main database. */
export const isUniqueViolation: (err: unknown) => boolean = isUniqueConstraintError;

/** True for a deadlock or serialization failure reported through sequelize. */
export function isDeadlock(err: unknown): boolean {
  const e = err as { parent?: { code?: unknown; errno?: unknown }; original?: { code?: unknown; errno?: unknown } } | null;
  const code = String(e?.parent?.code ?? e?.original?.code ?? '');
  const errno = Number(e?.parent?.errno ?? e?.original?.errno ?? 0);
  return code === '40P01' || code === '40001' || code === 'ER_LOCK_DEADLOCK' || errno === 1213;
}

/**
 * Runs `transaction` (a whole transaction) again, up to `attempts` times in
 * all, when it lost to a concurrent one: a deadlock or serialization failure,
 * or a unique violation that `conflict` says a retry resolves (the retry
 * replaces the winner's row, as delete-then-insert does).
 */
export async function retryConflicts<T>(transaction: () => Promise<T>, conflict: (err: unknown) => boolean, attempts = 10): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await transaction();
    } catch (err) {
      if (attempt >= attempts || !(isDeadlock(err) || conflict(err))) throw err;
      await new Promise((r) => setTimeout(r, 5 + Math.random() * 20));
    }
  }
}
