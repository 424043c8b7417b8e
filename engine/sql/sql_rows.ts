/**
 * Rows of `fga_tuple` and their conversion to {@link StoredTuple}s, shared by
 * the SQL store's reads, level reads and scans.
 */
import type { StoredTuple, TupleKey } from '../store.ts';

/** A row of `fga_tuple` as the drivers return it. */
export interface TupleRow {
  object_type: string;
  object_id: string;
  relation: string;
  _user: string;
  condition_name: string | null;
  condition_context: string | null;
  revision: number | string;
  expires_at: number | string | null;
}

export const TUPLE_COLUMNS = 'object_type, object_id, relation, _user, condition_name, condition_context, revision, expires_at';

/** True when a row's `expires_at` (ms, or NULL) has not passed at `now`: the row is read. */
export function live(expiresAt: number | string | null | undefined, now: number): boolean {
  return expiresAt === null || expiresAt === undefined || Number(expiresAt) > now;
}

/** The canonical `expires_at` of a row's value, or `undefined` for NULL. */
export function expiryText(expiresAt: number | string | null | undefined): string | undefined {
  return expiresAt === null || expiresAt === undefined ? undefined : new Date(Number(expiresAt)).toISOString();
}
export const PK = ['object_type', 'object_id', 'relation', '_user'] as const;

/** The stored condition of a row, or `undefined`. */
export function condition(name: string | null, context: string | null): TupleKey['condition'] {
  if (name === null || name === '') return undefined;
  return context === null ? { name } : { name, context: JSON.parse(context) as Record<string, unknown> };
}

export function toStored(r: TupleRow): StoredTuple {
  const t: StoredTuple = { object: `${r.object_type}:${r.object_id}`, relation: r.relation, user: r._user, revision: Number(r.revision) };
  const c = condition(r.condition_name, r.condition_context);
  if (c !== undefined) t.condition = c;
  if (r.expires_at !== null && r.expires_at !== undefined) t.expires_at = expiryText(r.expires_at)!;
  return t;
}

export function byUser(a: StoredTuple, b: StoredTuple): number {
  return a.user < b.user ? -1 : a.user > b.user ? 1 : 0;
}

export function chunks<T>(items: readonly T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

/**
 * `columns > values` in lexicographic order, in a form each backend turns
 * into an index range: a row-value comparison on PostgreSQL and SQLite,
 * nested `OR`s on MySQL/MariaDB (whose range optimizer handles that form on
 * every version). Returns the condition and its parameters.
 */
export function after(dialect: string, columns: readonly string[], values: readonly string[]): { sql: string; params: string[] } {
  if (dialect !== 'mysql' && dialect !== 'mariadb') return { sql: `(${columns.join(', ')}) > (${columns.map(() => '?').join(', ')})`, params: [...values] };
  const nest = (i: number): string => (i === columns.length - 1 ? `${columns[i]} > ?` : `${columns[i]} > ? OR (${columns[i]} = ? AND (${nest(i + 1)}))`);
  const params: string[] = [];
  for (let i = 0; i < values.length; i++) params.push(...(i === values.length - 1 ? [values[i]!] : [values[i]!, values[i]!]));
  return { sql: `(${nest(0)})`, params };
}
