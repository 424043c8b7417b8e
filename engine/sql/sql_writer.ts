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
  readonly kind: 'missing' | 'exists' | 'no_store';
  constructor(kind: 'missing' | 'exists' | 'no_store') {
    super(kind === 'missing' ? 'a deleted tuple does not exist' : kind === 'exists' ? 'a written tuple already exists' : 'the store does not exist');
    this.kind = kind;
  }
}

/**
 * The PostgreSQL channel on which every committed change of a store is
 * notified (engine/sql/revision_listener.ts listens). Payloads:
 *
 * - `<revision> <store id>`: a tuple write committed that revision;
 * - `model <store id>`: a model was written (or the models were reset), so
 *   the store's latest model changed; the revision did not move;
 * - `<revision> <store id> deleted`: the store was deleted (its last
 *   revision bump).
 */
export const REVISION_CHANNEL = 'latchkey_fga_revision';

/**
 * PostgreSQL: the statement (one parameter, the store id) to run inside the
 * transaction of a model write or reset (`model`) or of a store deletion,
 * after its revision bump and before the store row goes (`store_deleted`),
 * so that other processes hear of it at commit; `undefined` on other
 * databases, where the revision poll is the only bound.
 */
export function changeNotifySql(dialect: SqlDialect, change: 'model' | 'store_deleted'): string | undefined {
  if (dialect !== 'postgres') return undefined;
  const payload = change === 'model' ? "'model ' || id" : "revision::text || ' ' || id || ' deleted'";
  return `SELECT pg_notify('${REVISION_CHANNEL}', ${payload}) FROM fga_store WHERE id = ?`;
}

const PK = ['object_type', 'object_id', 'relation', '_user'] as const;
const TUPLE_COLUMNS = 'fga_tuple (store, object_type, object_id, relation, _user, user_kind, condition_name, condition_context, revision, inserted_at, expires_at) VALUES ';
const CHANGE_COLUMNS = 'fga_changelog (store, revision, seq, operation, object_type, object_id, relation, _user, condition_name, condition_context, inserted_at, expires_at) VALUES ';
const TUPLE_INSERT = `INSERT INTO ${TUPLE_COLUMNS}`;
const CHANGE_INSERT = `INSERT INTO ${CHANGE_COLUMNS}`;
/**
 * SQLite, in a transaction of the store's own: a conflict rolls the whole
 * transaction back at once (`OR ROLLBACK`) instead of undoing the one
 * statement (`ABORT`, the default). Undoing one statement of many rows needs
 * a statement journal, a copy of every page the statement changes taken
 * before it changes it; a 100-tuple write changes some 170 pages, and
 * without the copies `Engine.write` wrote 1.11-1.12 times as many tuples a
 * second (docs/performance.md, "Fourteenth round"). The store's own
 * transaction is rolled back on any error anyway, so the outcome is the same:
 * nothing of the write is left.
 */
const SQLITE_TUPLE_INSERT = `INSERT OR ROLLBACK INTO ${TUPLE_COLUMNS}`;
const SQLITE_CHANGE_INSERT = `INSERT OR ROLLBACK INTO ${CHANGE_COLUMNS}`;
const TUPLE_ROW = '(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)';
const CHANGE_ROW = '(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)';

/** The `expires_at` column value of a tuple: ms since the epoch, or NULL. */
function expiryColumn(t: TupleKey): number | null {
  return t.expires_at === undefined ? null : Date.parse(t.expires_at);
}

/** True when some tuple expires (the PostgreSQL column-array statements leave `expires_at` NULL, so they do not apply). */
function anyExpiry(writes: readonly TupleKey[]): boolean {
  for (const t of writes) if (t.expires_at !== undefined) return true;
  return false;
}

/** PostgreSQL: tuples and their changelog rows from column arrays, in one statement. */
const PG_INSERT = `WITH v AS (
  SELECT * FROM unnest(?::text[], ?::text[], ?::text[], ?::text[], ?::text[], ?::text[], ?::text[]) WITH ORDINALITY
    AS v(object_type, object_id, relation, _user, user_kind, condition_name, condition_context, ord)
), ins AS (
  INSERT INTO fga_tuple (store, object_type, object_id, relation, _user, user_kind, condition_name, condition_context, revision, inserted_at)
  SELECT ?::text, object_type, object_id, relation, _user, user_kind, condition_name, condition_context, ?::bigint, ?::bigint FROM v
)
INSERT INTO fga_changelog (store, revision, seq, operation, object_type, object_id, relation, _user, condition_name, condition_context, inserted_at)
SELECT ?::text, ?::bigint, ?::bigint + ord - 1, 'w', object_type, object_id, relation, _user, condition_name, condition_context, ?::bigint FROM v`;

/**
 * PostgreSQL, a write with no deletes: the revision bump, the tuples and their
 * changelog rows in one autocommitted statement (one round trip). The inserts
 * read the bumped revision, so the revision row is locked before any tuple is
 * inserted: the same lock order as the transaction.
 */
const PG_INSERT_ONLY = `WITH rev AS (
  UPDATE fga_store SET revision = revision + 1 WHERE id = ?::text RETURNING id, revision
), v AS (
  SELECT * FROM unnest(?::text[], ?::text[], ?::text[], ?::text[], ?::text[], ?::text[], ?::text[]) WITH ORDINALITY
    AS v(object_type, object_id, relation, _user, user_kind, condition_name, condition_context, ord)
), ins AS (
  INSERT INTO fga_tuple (store, object_type, object_id, relation, _user, user_kind, condition_name, condition_context, revision, inserted_at)
  SELECT rev.id, v.object_type, v.object_id, v.relation, v._user, v.user_kind, v.condition_name, v.condition_context, rev.revision, ?::bigint FROM v CROSS JOIN rev
), chg AS (
  INSERT INTO fga_changelog (store, revision, seq, operation, object_type, object_id, relation, _user, condition_name, condition_context, inserted_at)
  SELECT rev.id, rev.revision, v.ord - 1, 'w', v.object_type, v.object_id, v.relation, v._user, v.condition_name, v.condition_context, ?::bigint FROM v CROSS JOIN rev
)
SELECT revision, pg_notify('${REVISION_CHANNEL}', revision::text || ' ' || id) FROM rev`;

/** True when {@link applyInsertOnlyPostgres} can do the write: no deletes, one chunk of writes. */
export function insertOnlyPostgres(dialect: SqlDialect, batch: number, deletes: readonly TupleKey[], writes: readonly TupleKey[]): boolean {
  return dialect === 'postgres' && deletes.length === 0 && writes.length > 0 && writes.length <= Math.max(1, Math.floor(batch / 2)) && !anyExpiry(writes);
}

/**
 * PostgreSQL: applies a write with no deletes as one statement outside any
 * transaction (atomic by itself) and returns the new revision. Throws
 * {@link WriteViolation} `exists` on a unique violation (nothing applied).
 */
export async function applyInsertOnlyPostgres(conn: RawConnection, store: string, now: number, writes: readonly TupleKey[]): Promise<number> {
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
    const r = await conn.run<{ revision: number | string }>(PG_INSERT_ONLY, [store, ...cols, now, now], true);
    if (r.rows[0] === undefined) throw new WriteViolation('no_store');
    return Number(r.rows[0].revision);
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

/**
 * Increments the revision of `store` (taking its writers' lock) and returns
 * the new value; {@link WriteViolation} `no_store` when the store does not exist.
 */
export async function bumpRevision(conn: RawConnection, dialect: SqlDialect, store: string): Promise<number> {
  if (dialect === 'mysql' || dialect === 'mariadb') {
    // LAST_INSERT_ID(expr) hands the new value back in the UPDATE's own OK packet: no SELECT round trip.
    const r = await conn.run('UPDATE fga_store SET revision = LAST_INSERT_ID(revision + 1) WHERE id = ?', [store]);
    if (r.insertId !== undefined && r.insertId > 0 && r.changes > 0) return r.insertId;
    const s = await conn.run<{ revision: number | string }>('SELECT revision FROM fga_store WHERE id = ?', [store], true);
    if (s.rows[0] === undefined) throw new WriteViolation('no_store');
    return Number(s.rows[0].revision);
  }
  // PostgreSQL: pg_notify inside the write's transaction is delivered on commit only, never for a rollback.
  const notify = dialect === 'postgres' ? `, pg_notify('${REVISION_CHANNEL}', revision::text || ' ' || id)` : '';
  const r = await conn.run<{ revision: number | string }>(`UPDATE fga_store SET revision = revision + 1 WHERE id = ? RETURNING revision${notify}`, [store], true);
  if (r.rows[0] === undefined) throw new WriteViolation('no_store');
  return Number(r.rows[0].revision);
}

/** `DELETE` of exact primary keys, in the form each backend plans as index lookups. */
function deleteSql(dialect: SqlDialect, n: number): string {
  const row = '(?, ?, ?, ?)';
  if (dialect === 'postgres') {
    return `DELETE FROM fga_tuple t USING (VALUES ${rows(n, row)}) AS k(${PK.join(', ')}) WHERE ${PK.map((c) => `t.${c} = k.${c}`).join(' AND ')} AND t.store = ?`;
  }
  if (dialect === 'mysql' || dialect === 'mariadb') return `DELETE FROM fga_tuple WHERE (${PK.join(', ')}) IN (${rows(n, row)}) AND store = ?`;
  return `DELETE FROM fga_tuple WHERE (${PK.join(', ')}) IN (VALUES ${rows(n, row)}) AND store = ?`;
}

/**
 * Applies `deletes` then `writes` with the new revision and returns it.
 * Throws {@link WriteViolation} when a precondition fails (the caller must
 * roll back), or the driver's error.
 *
 * `ownTransaction`: the transaction is the store's own, which its caller
 * rolls back on any error and whose ROLLBACK may find it already ended
 * (`SqlConnections.rawTransaction`'s `ownRollback`; not a transaction a caller
 * of the store opened and may go on with). On SQLite a conflict then ends it
 * at once (see {@link SQLITE_TUPLE_INSERT}).
 */
export async function applyWrite(
  conn: RawConnection,
  dialect: SqlDialect,
  batch: number,
  store: string,
  now: number,
  deletes: readonly TupleKey[],
  writes: readonly TupleKey[],
  ownTransaction = false,
): Promise<number> {
  const wholeRollback = ownTransaction && dialect === 'sqlite';
  const tupleInsert = wholeRollback ? SQLITE_TUPLE_INSERT : TUPLE_INSERT;
  const changeInsert = wholeRollback ? SQLITE_CHANGE_INSERT : CHANGE_INSERT;
  const revision = await bumpRevision(conn, dialect, store);
  let removed = 0;
  for (const part of chunks(deletes, batch)) {
    const params: string[] = [];
    for (const t of part) {
      const [type, id] = splitObject(t.object);
      params.push(type, id, t.relation, t.user);
    }
    params.push(store);
    removed += (await conn.run(deleteSql(dialect, part.length), params)).changes;
  }
  if (removed !== deletes.length) throw new WriteViolation('missing');

  // Changelog rows: the deletes, then the writes, numbered in that order.
  const changeParams = (op: 'd' | 'w', t: TupleKey, seq: number, out: unknown[]): void => {
    const [type, id] = splitObject(t.object);
    const c = op === 'w' ? t.condition : undefined;
    out.push(store, revision, seq, op, type, id, t.relation, t.user, c?.name ?? null, c?.context === undefined ? null : JSON.stringify(c.context), now, op === 'w' ? expiryColumn(t) : null);
  };
  const tupleParams = (t: TupleKey, out: unknown[]): void => {
    const [type, id] = splitObject(t.object);
    out.push(store, type, id, t.relation, t.user, userKind(t.user), t.condition?.name ?? null,
      t.condition?.context === undefined ? null : JSON.stringify(t.condition.context), revision, now, expiryColumn(t));
  };
  const columnArrays = dialect === 'postgres' && !anyExpiry(writes);
  // 11 or 12 parameters per row (23 for the two statements' rows together): stay under every backend's limit.
  const rowBatch = Math.max(1, Math.floor(batch / 2));
  let seq = 0;
  for (const part of chunks(deletes, rowBatch)) {
    const params: unknown[] = [];
    for (const t of part) changeParams('d', t, seq++, params);
    await conn.run(changeInsert + rows(part.length, CHANGE_ROW), params);
  }
  for (const part of chunks(writes, rowBatch)) {
    const tp: unknown[] = [];
    const cp: unknown[] = [];
    for (const t of part) {
      tupleParams(t, tp);
      changeParams('w', t, seq++, cp);
    }
    try {
      if (columnArrays) {
        // Column arrays through unnest: 12 parameters whatever the row count, so PostgreSQL parses and plans a
        // small statement (a 100-row VALUES list has 1,900 parameters to type and bind).
        const cols: (string | null)[][] = [[], [], [], [], [], [], []];
        for (let i = 0; i < tp.length; i += 11) for (let c = 0; c < 7; c++) cols[c]!.push(tp[i + 1 + c] as string | null);
        await conn.run(PG_INSERT, [...cols, store, revision, now, store, revision, seq - part.length, now]);
      } else {
        await conn.run(tupleInsert + rows(part.length, TUPLE_ROW), tp);
        await conn.run(changeInsert + rows(part.length, CHANGE_ROW), cp);
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
export async function deleteUsersTuples(conn: RawConnection, dialect: SqlDialect, batch: number, store: string, now: number, users: readonly string[]): Promise<number> {
  const revision = await bumpRevision(conn, dialect, store);
  let removed = 0;
  for (const part of chunks([...new Set(users)], batch)) {
    const inList = part.map(() => '?').join(', ');
    // The changelog rows straight from the rows about to go (one statement), then the delete.
    await conn.run(
      `INSERT INTO fga_changelog (store, revision, seq, operation, object_type, object_id, relation, _user, condition_name, condition_context, inserted_at)
       SELECT store, ?, ? + ROW_NUMBER() OVER (ORDER BY object_type, object_id, relation, _user) - 1, 'd', object_type, object_id, relation, _user, NULL, NULL, ?
       FROM fga_tuple WHERE store = ? AND _user IN (${inList})`,
      [revision, removed, now, store, ...part],
    );
    removed += (await conn.run(`DELETE FROM fga_tuple WHERE store = ? AND _user IN (${inList})`, [store, ...part])).changes;
  }
  return removed;
}

/**
 * Deletes up to `limit` tuples of `store` whose `expires_at` is at or before
 * `now`, with one revision bump and one `delete` changelog row each, inside
 * the caller's transaction; returns how many. When none is found nothing is
 * written and `0` is returned: the caller then rolls back the revision bump
 * by throwing {@link NothingExpired}.
 */
export async function deleteExpiredTuples(conn: RawConnection, dialect: SqlDialect, batch: number, store: string, now: number, limit: number, only?: readonly TupleKey[]): Promise<number> {
  const revision = await bumpRevision(conn, dialect, store);
  // The revision row is locked: another collector waits here, then finds what this one left.
  let sql = 'SELECT object_type, object_id, relation, _user FROM fga_tuple WHERE store = ? AND expires_at IS NOT NULL AND expires_at <= ?';
  const params: unknown[] = [store, now];
  if (only !== undefined) {
    const list = rows(only.length, '(?, ?, ?, ?)');
    sql += dialect === 'mysql' || dialect === 'mariadb' ? ` AND (${PK.join(', ')}) IN (${list})` : ` AND (${PK.join(', ')}) IN (VALUES ${list})`;
    for (const t of only) params.push(...splitObject(t.object), t.relation, t.user);
  }
  params.push(limit);
  const found = (await conn.run<{ object_type: string; object_id: string; relation: string; _user: string }>(`${sql} ORDER BY expires_at LIMIT ?`, params, true)).rows;
  if (found.length === 0) throw new NothingExpired();
  const keys: TupleKey[] = found.map((r) => ({ object: `${r.object_type}:${r.object_id}`, relation: r.relation, user: r._user }));
  let seq = 0;
  for (const part of chunks(keys, Math.max(1, Math.floor(batch / 2)))) {
    const cp: unknown[] = [];
    for (const t of part) {
      const [type, id] = splitObject(t.object);
      cp.push(store, revision, seq++, 'd', type, id, t.relation, t.user, null, null, now, null);
    }
    await conn.run(CHANGE_INSERT + rows(part.length, CHANGE_ROW), cp);
    const dp: string[] = [];
    for (const t of part) dp.push(...splitObject(t.object), t.relation, t.user);
    dp.push(store);
    await conn.run(deleteSql(dialect, part.length), dp);
  }
  return keys.length;
}

/** Thrown by {@link deleteExpiredTuples} when nothing has expired: the caller's transaction rolls back. */
export class NothingExpired extends Error {
  constructor() {
    super('no expired tuple');
  }
}

/** `s` with the LIKE wildcards and the escape character `!` escaped by `!` (for `LIKE ? ESCAPE '!'`). */
function likePrefix(s: string): string {
  return `${s.replace(/[!%_]/g, (c) => `!${c}`)}#%`;
}

/**
 * Deletes every tuple about one of `objects` (`type:id`), or whose user is
 * one of them or a userset of one of them (`type:id#relation`), with one
 * revision bump and one changelog row per deleted tuple; returns how many
 * were deleted.
 */
export async function deleteObjectsTuples(conn: RawConnection, dialect: SqlDialect, batch: number, store: string, now: number, objects: readonly string[]): Promise<number> {
  const revision = await bumpRevision(conn, dialect, store);
  let removed = 0;
  // Four parameters per object in the condition below.
  for (const part of chunks([...new Set(objects)], Math.max(1, Math.floor(batch / 4)))) {
    const params: string[] = [];
    const terms: string[] = [];
    for (const o of part) {
      const [type, id] = splitObject(o);
      terms.push("(object_type = ? AND object_id = ?) OR _user = ? OR _user LIKE ? ESCAPE '!'");
      params.push(type, id, o, likePrefix(o));
    }
    const where = `store = ? AND (${terms.join(' OR ')})`;
    await conn.run(
      `INSERT INTO fga_changelog (store, revision, seq, operation, object_type, object_id, relation, _user, condition_name, condition_context, inserted_at)
       SELECT store, ?, ? + ROW_NUMBER() OVER (ORDER BY object_type, object_id, relation, _user) - 1, 'd', object_type, object_id, relation, _user, NULL, NULL, ?
       FROM fga_tuple WHERE ${where}`,
      [revision, removed, now, store, ...params],
    );
    removed += (await conn.run(`DELETE FROM fga_tuple WHERE ${where}`, [store, ...params])).changes;
  }
  return removed;
}
