/**
 * `SqlStore.scanTuples`: every tuple in large batches, for loading in-memory
 * copies (docs/storage.md, "Bulk scan").
 *
 * The identifiers come back as one column, `type:id<TAB>relation<TAB>user`
 * (types, relations and ids never contain whitespace), which about halves the
 * driver's per-row work; a batch with a row that does not split into three is
 * read again column by column.
 *
 * - SQLite, MySQL: keyset pages of the primary key, one statement each (no
 *   `OFFSET`, so each page costs the same). Not one snapshot: a tuple present
 *   for the whole scan is returned once, one written or deleted meanwhile may
 *   or may not be. SQLite reads them on a pooled connection rather than the
 *   store's reader, whose statements run synchronously on the calling thread.
 * - PostgreSQL: keyset pages of 50 k rows were planned as a sequential scan
 *   and a sort per page (43 s for 1 M tuples), so the scan is a cursor in one
 *   read-only repeatable-read transaction (one snapshot) on a pooled
 *   connection, released when the scan ends or its consumer stops early.
 */
import type { StoredTuple } from '../store.ts';
import type { SqlDialect } from './migrate.ts';
import { backendError, type SqlConnections } from './connections.ts';
import { after, condition, expiryText, PK, toStored, TUPLE_COLUMNS, type TupleRow } from './sql_rows.ts';

interface KeyRow {
  k: string;
  condition_name: string | null;
  condition_context: string | null;
  revision: number | string;
  expires_at: number | string | null;
}

/** Rows with the concatenated key to tuples, or `undefined` when one does not split. */
function fromKeyRows(rows: readonly KeyRow[]): StoredTuple[] | undefined {
  const out = new Array<StoredTuple>(rows.length);
  for (let i = 0; i < rows.length; i++) {
    const r = rows[i]!;
    // Cut at the two tabs (no array per row); any other tab, or no ':' in the object, fails the batch.
    const k = r.k;
    const a = k.indexOf('\t');
    const b = a < 0 ? -1 : k.indexOf('\t', a + 1);
    if (b < 0 || k.indexOf('\t', b + 1) >= 0 || k.lastIndexOf(':', a) < 0) return undefined;
    const t: StoredTuple = { object: k.slice(0, a), relation: k.slice(a + 1, b), user: k.slice(b + 1), revision: Number(r.revision) };
    if (r.condition_name !== null && r.condition_name !== '') t.condition = condition(r.condition_name, r.condition_context)!;
    if (r.expires_at !== null && r.expires_at !== undefined) t.expires_at = expiryText(r.expires_at)!;
    out[i] = t;
  }
  return out;
}


function keyColumn(dialect: SqlDialect): string {
  const tab = dialect === 'postgres' ? 'chr(9)' : 'char(9)';
  return dialect === 'mysql' || dialect === 'mariadb'
    ? `CONCAT(object_type, ':', object_id, ${tab}, relation, ${tab}, _user)`
    : `object_type || ':' || object_id || ${tab} || relation || ${tab} || _user`;
}

/** Every tuple, `size` at a time (see the module doc). `checkOpen` throws once the store is closed. */
export async function* scanTuples(dialect: SqlDialect, connections: SqlConnections, store: string, size: number, checkOpen: () => void): AsyncGenerator<StoredTuple[]> {
  if (dialect === 'postgres') {
    yield* scanPostgres(connections, store, size, checkOpen);
    return;
  }
  // SQLite: the pages are read on a pooled connection through the driver's callback API, so that other work runs
  // between them; the store's reader runs its statements synchronously on the calling thread.
  let pooled: Awaited<ReturnType<SqlConnections['acquireForRead']>> | undefined;
  if (dialect === 'sqlite') {
    try {
      pooled = await connections.acquireForRead();
    } catch (err) {
      throw backendError(err);
    }
  }
  const read = async <T>(sql: string, params: readonly unknown[]): Promise<T[]> => {
    if (pooled === undefined) return connections.read<T>(sql, params);
    try {
      return (await pooled.conn.run<T>(sql, params, true)).rows;
    } catch (err) {
      throw backendError(err);
    }
  };
  const key = keyColumn(dialect);
  const order = 'ORDER BY store, object_type, object_id, relation, _user';
  let last: string[] | undefined;
  try {
    for (;;) {
      checkOpen();
      const cond = last === undefined ? undefined : after(dialect, PK, last);
      const where = cond === undefined ? ' WHERE store = ?' : ` WHERE store = ? AND ${cond.sql}`;
      const params = [store, ...(cond?.params ?? []), size];
      const rows = await read<KeyRow>(`SELECT ${key} AS k, condition_name, condition_context, revision, expires_at FROM fga_tuple${where} ${order} LIMIT ?`, params);
      if (rows.length === 0) return;
      const out = fromKeyRows(rows) ?? (await read<TupleRow>(`SELECT ${TUPLE_COLUMNS} FROM fga_tuple${where} ${order} LIMIT ?`, params)).map(toStored);
      yield out;
      if (rows.length < size) return;
      const t = out[out.length - 1]!;
      const colon = t.object.indexOf(':');
      last = [t.object.slice(0, colon), t.object.slice(colon + 1), t.relation, t.user];
    }
  } finally {
    await pooled?.release();
  }
}

async function* scanPostgres(connections: SqlConnections, store: string, size: number, checkOpen: () => void): AsyncGenerator<StoredTuple[]> {
  let acquired: Awaited<ReturnType<SqlConnections['acquireForRead']>>;
  try {
    acquired = await connections.acquireForRead();
  } catch (err) {
    throw backendError(err);
  }
  const { conn, release } = acquired;
  let open = false;
  try {
    await conn.run('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY', []);
    open = true;
    // A utility statement takes no bound parameters: the store id goes in as a literal, which its format (a
    // ULID, checked by the engine, and here again) keeps free of quotes.
    if (!/^[0-9A-Za-z_-]+$/u.test(store)) throw new Error('invalid store id');
    await conn.run(`DECLARE latchkey_fga_scan NO SCROLL CURSOR FOR SELECT ${keyColumn('postgres')} AS k, ${TUPLE_COLUMNS} FROM fga_tuple WHERE store = '${store}'`, []);
    for (;;) {
      checkOpen();
      const rows = (await conn.run<KeyRow & TupleRow>(`FETCH FORWARD ${size} FROM latchkey_fga_scan`, [])).rows;
      if (rows.length === 0) return;
      yield fromKeyRows(rows) ?? rows.map(toStored);
      if (rows.length < size) return;
    }
  } catch (err) {
    throw backendError(err);
  } finally {
    if (open) await conn.run('COMMIT', []).catch(() => undefined);
    await release();
  }
}
