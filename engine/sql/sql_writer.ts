/**
 * The statements of a tuple write, run inside a transaction the caller
 * opened, on a driver connection with bound parameters (engine/sql/raw.ts):
 *
 * 1. bump the revision (`UPDATE … RETURNING`; MySQL: `UPDATE … SET revision
 *    = LAST_INSERT_ID(revision + 1)`, read from the OK packet): the row lock
 *    also serialises writers across processes;
 * 2. delete the deleted tuples, one multi-key statement per chunk; fewer
 *    rows than keys means one did not exist;
 * 3. insert the written tuples, one multi-row statement per chunk; a unique
 *    violation means one already existed;
 * 4. append the changelog rows, one multi-row statement per chunk
 *    (PostgreSQL: in the same statement as step 3, as a data-modifying CTE).
 *
 * A write of up to 250 changes is thus four statements (PostgreSQL: three)
 * plus the transaction's begin and commit.
 */
import type { TupleKey } from '../store.ts';
import type { SqlDialect } from './migrate.ts';
import { isUniqueViolation, type RawConnection } from './raw.ts';

/** A precondition that failed; the caller rolls back and words the error. */
export class WriteViolation extends Error {
  readonly kind: 'missing' | 'exists';
  constructor(kind: 'missing' | 'exists') {
    super(kind === 'missing' ? 'a deleted tuple does not exist' : 'a written tuple already exists');
    this.kind = kind;
  }
}

const PK = ['object_type', 'object_id', 'relation', '_user'] as const;
const TUPLE_INSERT = 'INSERT INTO fga_tuple (object_type, object_id, relation, _user, user_kind, condition_name, condition_context, revision, inserted_at) VALUES ';
const CHANGE_INSERT = 'INSERT INTO fga_changelog (revision, seq, operation, object_type, object_id, relation, _user, condition_name, condition_context, inserted_at) VALUES ';
const TUPLE_ROW = '(?, ?, ?, ?, ?, ?, ?, ?, ?)';
const CHANGE_ROW = '(?, ?, ?, ?, ?, ?, ?, ?, ?, ?)';

/** PostgreSQL: tuples and their changelog rows from column arrays, in one statement. */
const PG_INSERT = `WITH v AS (
  SELECT * FROM unnest(?::text[], ?::text[], ?::text[], ?::text[], ?::text[], ?::text[], ?::text[]) WITH ORDINALITY
    AS v(object_type, object_id, relation, _user, user_kind, condition_name, condition_context, ord)
), ins AS (
  INSERT INTO fga_tuple (object_type, object_id, relation, _user, user_kind, condition_name, condition_context, revision, inserted_at)
  SELECT object_type, object_id, relation, _user, user_kind, condition_name, condition_context, ?::bigint, ?::bigint FROM v
)
INSERT INTO fga_changelog (revision, seq, operation, object_type, object_id, relation, _user, condition_name, condition_context, inserted_at)
SELECT ?::bigint, ?::bigint + ord - 1, 'w', object_type, object_id, relation, _user, condition_name, condition_context, ?::bigint FROM v`;

/**
 * PostgreSQL, a write with no deletes: the revision bump, the tuples and their
 * changelog rows in one autocommitted statement (one round trip). The inserts
 * read the bumped revision, so the revision row is locked before any tuple is
 * inserted: the same lock order as the transaction.
 */
const PG_INSERT_ONLY = `WITH rev AS (
  UPDATE fga_revision SET revision = revision + 1 WHERE id = 1 RETURNING revision
), v AS (
  SELECT * FROM unnest(?::text[], ?::text[], ?::text[], ?::text[], ?::text[], ?::text[], ?::text[]) WITH ORDINALITY
    AS v(object_type, object_id, relation, _user, user_kind, condition_name, condition_context, ord)
), ins AS (
  INSERT INTO fga_tuple (object_type, object_id, relation, _user, user_kind, condition_name, condition_context, revision, inserted_at)
  SELECT v.object_type, v.object_id, v.relation, v._user, v.user_kind, v.condition_name, v.condition_context, rev.revision, ?::bigint FROM v CROSS JOIN rev
), chg AS (
  INSERT INTO fga_changelog (revision, seq, operation, object_type, object_id, relation, _user, condition_name, condition_context, inserted_at)
  SELECT rev.revision, v.ord - 1, 'w', v.object_type, v.object_id, v.relation, v._user, v.condition_name, v.condition_context, ?::bigint FROM v CROSS JOIN rev
)
SELECT revision FROM rev`;

/** True when {@link applyInsertOnlyPostgres} can do the write: no deletes, one chunk of writes. */
export function insertOnlyPostgres(dialect: SqlDialect, batch: number, deletes: readonly TupleKey[], writes: readonly TupleKey[]): boolean {
  return dialect === 'postgres' && deletes.length === 0 && writes.length > 0 && writes.length <= Math.max(1, Math.floor(batch / 2));
}

/**
 * PostgreSQL: applies a write with no deletes as one statement outside any
 * transaction (atomic by itself) and returns the new revision. Throws
 * {@link WriteViolation} `exists` on a unique violation (nothing applied).
 */
export async function applyInsertOnlyPostgres(conn: RawConnection, now: number, writes: readonly TupleKey[]): Promise<number> {
  const cols: (string | null)[][] = [[], [], [], [], [], [], []];
  for (const t of writes) {
    const [type, id] = splitObject(t.object);
    cols[0]!.push(type);
    cols[1]!.push(id);
    cols[2]!.push(t.relation);
    cols[3]!.push(t.user);
    cols[4]!.push(userKind(t.user));
    cols[5]!.push(t.condition?.name ?? null);
    cols[6]!.push(t.condition?.context === undefined ? null : JSON.stringify(t.condition.context));
  }
  try {
    const r = await conn.run<{ revision: number | string }>(PG_INSERT_ONLY, [...cols, now, now], true);
    return Number(r.rows[0]?.revision);
  } catch (err) {
    if (isUniqueViolation(err)) throw new WriteViolation('exists');
    throw err;
  }
}

function splitObject(object: string): [string, string] {
  const i = object.indexOf(':');
  return [object.slice(0, i), object.slice(i + 1)];
}

function userKind(user: string): 'o' | 'w' | 's' {
  if (user.includes('#')) return 's';
  if (user.endsWith(':*')) return 'w';
  return 'o';
}

function chunks<T>(items: readonly T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

function rows(n: number, row: string): string {
  return new Array<string>(n).fill(row).join(', ');
}

/** Increments the store revision (taking the writers' lock) and returns the new value. */
export async function bumpRevision(conn: RawConnection, dialect: SqlDialect): Promise<number> {
  if (dialect === 'mysql' || dialect === 'mariadb') {
    // LAST_INSERT_ID(expr) hands the new value back in the UPDATE's own OK packet: no SELECT round trip.
    const r = await conn.run('UPDATE fga_revision SET revision = LAST_INSERT_ID(revision + 1) WHERE id = 1', []);
    if (r.insertId !== undefined && r.insertId > 0) return r.insertId;
    const s = await conn.run<{ revision: number | string }>('SELECT revision FROM fga_revision WHERE id = 1', [], true);
    return Number(s.rows[0]?.revision);
  }
  const r = await conn.run<{ revision: number | string }>('UPDATE fga_revision SET revision = revision + 1 WHERE id = 1 RETURNING revision', [], true);
  return Number(r.rows[0]?.revision);
}

/** `DELETE` of exact primary keys, in the form each backend plans as index lookups. */
function deleteSql(dialect: SqlDialect, n: number): string {
  const row = '(?, ?, ?, ?)';
  if (dialect === 'postgres') {
    return `DELETE FROM fga_tuple t USING (VALUES ${rows(n, row)}) AS k(${PK.join(', ')}) WHERE ${PK.map((c) => `t.${c} = k.${c}`).join(' AND ')}`;
  }
  if (dialect === 'mysql' || dialect === 'mariadb') return `DELETE FROM fga_tuple WHERE (${PK.join(', ')}) IN (${rows(n, row)})`;
  return `DELETE FROM fga_tuple WHERE (${PK.join(', ')}) IN (VALUES ${rows(n, row)})`;
}

/**
 * Applies `deletes` then `writes` with the new revision and returns it.
 * Throws {@link WriteViolation} when a precondition fails (the caller must
 * roll back), or the driver's error.
 */
export async function applyWrite(
  conn: RawConnection,
  dialect: SqlDialect,
  batch: number,
  now: number,
  deletes: readonly TupleKey[],
  writes: readonly TupleKey[],
): Promise<number> {
  const revision = await bumpRevision(conn, dialect);
  let removed = 0;
  for (const part of chunks(deletes, batch)) {
    const params: string[] = [];
    for (const t of part) {
      const [type, id] = splitObject(t.object);
      params.push(type, id, t.relation, t.user);
    }
    removed += (await conn.run(deleteSql(dialect, part.length), params)).changes;
  }
  if (removed !== deletes.length) throw new WriteViolation('missing');

  // Changelog rows: the deletes, then the writes, numbered in that order.
  const changeParams = (op: 'd' | 'w', t: TupleKey, seq: number, out: unknown[]): void => {
    const [type, id] = splitObject(t.object);
    const c = op === 'w' ? t.condition : undefined;
    out.push(revision, seq, op, type, id, t.relation, t.user, c?.name ?? null, c?.context === undefined ? null : JSON.stringify(c.context), now);
  };
  const tupleParams = (t: TupleKey, out: unknown[]): void => {
    const [type, id] = splitObject(t.object);
    out.push(type, id, t.relation, t.user, userKind(t.user), t.condition?.name ?? null,
      t.condition?.context === undefined ? null : JSON.stringify(t.condition.context), revision, now);
  };
  // 9 or 10 parameters per row (19 for PostgreSQL's combined statement): stay under every backend's limit.
  const rowBatch = Math.max(1, Math.floor(batch / 2));
  let seq = 0;
  for (const part of chunks(deletes, rowBatch)) {
    const params: unknown[] = [];
    for (const t of part) changeParams('d', t, seq++, params);
    await conn.run(CHANGE_INSERT + rows(part.length, CHANGE_ROW), params);
  }
  for (const part of chunks(writes, rowBatch)) {
    const tp: unknown[] = [];
    const cp: unknown[] = [];
    for (const t of part) {
      tupleParams(t, tp);
      changeParams('w', t, seq++, cp);
    }
    try {
      if (dialect === 'postgres') {
        // Column arrays through unnest: 12 parameters whatever the row count, so PostgreSQL parses and plans a
        // small statement (a 100-row VALUES list has 1,900 parameters to type and bind).
        const cols: (string | null)[][] = [[], [], [], [], [], [], []];
        for (let i = 0; i < tp.length; i += 9) for (let c = 0; c < 7; c++) cols[c]!.push(tp[i + c] as string | null);
        await conn.run(PG_INSERT, [...cols, revision, now, revision, seq - part.length, now]);
      } else {
        await conn.run(TUPLE_INSERT + rows(part.length, TUPLE_ROW), tp);
        await conn.run(CHANGE_INSERT + rows(part.length, CHANGE_ROW), cp);
      }
    } catch (err) {
      if (isUniqueViolation(err)) throw new WriteViolation('exists');
      throw err;
    }
  }
  return revision;
}

/**
 * Deletes every tuple whose user is one of `users` with one revision bump
 * and one changelog row per deleted tuple; returns how many were deleted.
 */
export async function deleteUsersTuples(conn: RawConnection, dialect: SqlDialect, batch: number, now: number, users: readonly string[]): Promise<number> {
  const revision = await bumpRevision(conn, dialect);
  let removed = 0;
  for (const part of chunks([...new Set(users)], batch)) {
    const inList = part.map(() => '?').join(', ');
    // The changelog rows straight from the rows about to go (one statement), then the delete.
    await conn.run(
      `INSERT INTO fga_changelog (revision, seq, operation, object_type, object_id, relation, _user, condition_name, condition_context, inserted_at)
       SELECT ?, ? + ROW_NUMBER() OVER (ORDER BY object_type, object_id, relation, _user) - 1, 'd', object_type, object_id, relation, _user, NULL, NULL, ?
       FROM fga_tuple WHERE _user IN (${inList})`,
      [revision, removed, now, ...part],
    );
    removed += (await conn.run(`DELETE FROM fga_tuple WHERE _user IN (${inList})`, part)).changes;
  }
  return removed;
}
