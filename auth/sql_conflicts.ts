/**
 * Recognising SQL errors that mean "a concurrent transaction won; run yours
 * again": deadlocks and serialization failures (MySQL 1213, PostgreSQL
 * 40P01/40001) roll the whole transaction back, so a retry is safe.
 */

/** True for a deadlock or serialization failure reported through sequelize. */
export function isDeadlock(err: unknown): boolean {
  const e = err as { parent?: { code?: unknown; errno?: unknown }; original?: { code?: unknown; errno?: unknown } } | null;
  const code = String(e?.parent?.code ?? e?.original?.code ?? '');
  const errno = Number(e?.parent?.errno ?? e?.original?.errno ?? 0);
  return code === '40P01' || code === '40001' || code === 'ER_LOCK_DEADLOCK' || errno === 1213;
}
