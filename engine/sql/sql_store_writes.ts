/**
 * The tuple writes of a `SqlStore` view: a write whose preconditions
 * the statements check themselves (the offending tuple is looked up only to
 * word the error, after the rollback), the collection of expired tuples, and
 * the writes made inside a transaction the caller opened on the store's
 * connection (deleteTuplesOfUsers, ensureTuplesInTransaction,
 * deleteTuplesOfObjects). The statements themselves are in
 * engine/sql/sql_writer.ts; the store's own methods document each call.
 */
import type { Transaction } from 'sequelize';
import type { SqlDatabase } from './sql_database.ts';
import { LatchkeyError } from '../errors.ts';
import type { TupleKey } from '../store.ts';
import type { SqlDialect } from './migrate.ts';
import { rawConnection } from './raw.ts';
import { backendError, type SqlConnections } from './connections.ts';
import { chunks, PK, type TupleRow } from './sql_rows.ts';
import { applyInsertOnlyPostgres, applyWrite, deleteExpiredTuples, deleteObjectsTuples, deleteUsersTuples, insertOnlyPostgres, NothingExpired, WriteViolation } from './sql_writer.ts';
import { storeNotFound, type Shared, type StoreStatements } from './sql_catalog.ts';

function pkOf(t: TupleKey): string[] {
  const i = t.object.indexOf(':');
  return [t.object.slice(0, i), t.object.slice(i + 1), t.relation, t.user];
}

/** The writes of one store's view, run through the view's statements. */
export class SqlStoreWrites {
  readonly #db: StoreStatements;
  readonly #sequelize: SqlDatabase;
  readonly #dialect: SqlDialect;
  readonly #batch: number;
  readonly #now: () => number;
  readonly #connections: SqlConnections;
  readonly storeId: string;

  constructor(shared: Shared, storeId: string, db: StoreStatements) {
    ({ sequelize: this.#sequelize, dialect: this.#dialect, batch: this.#batch, now: this.#now, connections: this.#connections } = shared);
    this.storeId = storeId;
    this.#db = db;
  }

  /**
   * Matches rows of `fga_tuple t` against a list of keys, in the form each
   * backend plans as index lookups: PostgreSQL joins a `VALUES` list (a
   * row-value `IN` list is planned as a sequential scan there), MySQL/MariaDB
   * and SQLite get a row-value `IN` list.
   */
  #match(columns: readonly string[], keys: readonly (readonly string[])[], p = 't.'): { join: string; where: string; params: string[] } {
    const params: string[] = [];
    for (const k of keys) params.push(...k);
    const tuple = `(${columns.map(() => '?').join(', ')})`;
    if (this.#dialect === 'postgres') {
      const on = columns.map((c) => `t.${c} = k.${c}`).join(' AND ');
      return { join: ` JOIN (VALUES ${keys.map(() => tuple).join(', ')}) AS k(${columns.join(', ')}) ON ${on}`, where: '', params };
    }
    if (this.#dialect === 'mysql' || this.#dialect === 'mariadb') {
      // MariaDB plans an OR of equalities over many keys as a scan (300 ms for 100 keys at 50 k rows); a row-value IN list as range lookups (7 ms).
      return { join: '', where: `(${columns.map((c) => `${p}${c}`).join(', ')}) IN (${keys.map(() => tuple).join(', ')})`, params };
    }
    if (keys.length === 1) return { join: '', where: columns.map((c) => `${p}${c} = ?`).join(' AND '), params };
    return { join: '', where: `(${columns.map((c) => `${p}${c}`).join(', ')}) IN (VALUES ${keys.map(() => tuple).join(', ')})`, params };
  }

  /** Existing keys among `keys`, as `type:id\0relation\0user`. */
  async #existing(keys: readonly TupleKey[], tx?: Transaction, expiring?: Set<string>): Promise<Set<string>> {
    const found = new Set<string>();
    for (const part of chunks(keys, this.#batch)) {
      const m = this.#match(PK, part.map(pkOf));
      const rows = await this.#db.select<TupleRow & { expires_at?: unknown }>(
        `SELECT t.object_type, t.object_id, t.relation, t._user, t.expires_at FROM fga_tuple t${m.join} WHERE ${m.where === '' ? '' : `${m.where} AND `}t.store = ?`,
        [...m.params, this.storeId],
        tx,
      );
      for (const r of rows) {
        const k = `${r.object_type}:${r.object_id}\u0000${r.relation}\u0000${r._user}`;
        found.add(k);
        if (r.expires_at !== null && r.expires_at !== undefined) expiring?.add(k);
      }
    }
    return found;
  }

  async write(deletes: readonly TupleKey[], writes: readonly TupleKey[]): Promise<number> {
    try {
      return await this.#write(deletes, writes);
    } catch (err) {
      // A written tuple may clash with one that expired but was not collected yet: collect those, then write.
      if (!(err instanceof LatchkeyError) || err.reason !== 'tuple_exists' || writes.length === 0) throw err;
      const deleted = new Set(deletes.map((t) => `${t.object}\u0000${t.relation}\u0000${t.user}`));
      const clashing = writes.filter((t) => !deleted.has(`${t.object}\u0000${t.relation}\u0000${t.user}`));
      if (clashing.length === 0 || (await this.#collect(this.#now(), clashing.length, clashing)) === 0) throw err;
      return await this.#write(deletes, writes);
    }
  }

  /**
   * Deletes up to `limit` tuples whose `expires_at` has passed at `now` (only
   * among `only`, when given), as one write; 0 (and no write) when none has.
   */
  async #collect(now: number, limit: number, only?: readonly TupleKey[]): Promise<number> {
    this.#db.open();
    if (only === undefined) {
      // A cheap probe first, so that an idle collector never bumps the revision.
      const probe = await this.#db.select<{ one: number }>('SELECT 1 AS one FROM fga_tuple WHERE store = ? AND expires_at IS NOT NULL AND expires_at <= ? LIMIT 1', [this.storeId, now]);
      if (probe.length === 0) return 0;
    }
    try {
      return await this.#connections.rawTransaction((conn) => deleteExpiredTuples(conn, this.#dialect, this.#batch, this.storeId, now, limit, only));
    } catch (err) {
      if (err instanceof NothingExpired) return 0;
      if (err instanceof WriteViolation && err.kind === 'no_store') throw storeNotFound(this.storeId);
      throw backendError(err);
    }
  }

  async deleteExpired(now: number, limit: number): Promise<number> {
    if (!Number.isInteger(limit) || limit < 1 || limit > 10_000) {
      throw new LatchkeyError('invalid_argument', 'limit must be an integer from 1 to 10000', { reason: 'invalid_batch_size' });
    }
    return this.#collect(now, limit);
  }

  async #write(deletes: readonly TupleKey[], writes: readonly TupleKey[]): Promise<number> {
    const key = (t: TupleKey): string => `${t.object}\u0000${t.relation}\u0000${t.user}`;
    // Preconditions are checked by the statements themselves (rows deleted, unique violations), which saves two
    // round trips per write; the offending tuple is looked up only to word the error, after the rollback.
    let violated: 'missing' | 'exists' | undefined;
    try {
      if (insertOnlyPostgres(this.#dialect, this.#batch, deletes, writes)) {
        this.#db.open();
        // A named statement: parsed and planned once per connection (see SqlConnections.rawTransaction).
        return await this.#connections.queued(() => this.#connections.withPooled((conn) => applyInsertOnlyPostgres(conn, this.storeId, this.#now(), writes), { prepared: true }));
      }
      this.#db.open();
      return await this.#connections.rawTransaction((conn, ownRollback) => applyWrite(conn, this.#dialect, this.#batch, this.storeId, this.#now(), deletes, writes, ownRollback));
    } catch (err) {
      if (err instanceof WriteViolation) {
        if (err.kind === 'no_store') throw storeNotFound(this.storeId);
        violated = err.kind;
      } else throw backendError(err);
    }
    if (violated === 'missing') {
      const present = await this.#existing(deletes);
      const missing = deletes.find((t) => !present.has(key(t)));
      throw new LatchkeyError('not_found', missing === undefined ? 'cannot delete a tuple which does not exist' : `cannot delete a tuple which does not exist: ${missing.object}#${missing.relation}@${missing.user}`, {
        reason: 'tuple_not_found',
        ...(missing === undefined ? {} : { details: { tuple: { object: missing.object, relation: missing.relation, user: missing.user } } }),
      });
    }
    const deleted = new Set(deletes.map(key));
    const present = await this.#existing(writes);
    const clash = writes.find((t) => present.has(key(t)) && !deleted.has(key(t)));
    throw new LatchkeyError('already_exists', clash === undefined ? 'cannot write a tuple which already exists' : `cannot write a tuple which already exists: ${clash.object}#${clash.relation}@${clash.user}`, {
      reason: 'tuple_exists',
      ...(clash === undefined ? {} : { details: { tuple: { object: clash.object, relation: clash.relation, user: clash.user } } }),
    });
  }

  async deleteTuplesOfUsers(users: readonly string[], options: { transaction: Transaction }): Promise<number> {
    this.#db.open();
    const tx = options?.transaction;
    if (!this.#ownTransaction(tx)) {
      throw new LatchkeyError('failed_precondition', 'the transaction does not belong to the FGA store\'s database connection', { reason: 'foreign_transaction' });
    }
    const connection = (tx as unknown as { connection?: unknown }).connection;
    if (connection === undefined) {
      throw new LatchkeyError('failed_precondition', 'the transaction has not started or has finished', { reason: 'foreign_transaction' });
    }
    try {
      return await deleteUsersTuples(rawConnection(this.#dialect, connection), this.#dialect, this.#batch, this.storeId, this.#now(), users);
    } catch (err) {
      throw backendError(err);
    }
  }

  /** True when `tx` is a transaction of this store's database (sequelize's, or the SQLite main database's). */
  #ownTransaction(tx: Transaction | undefined): boolean {
    return typeof tx === 'object' && tx !== null && (tx as unknown as { sequelize?: SqlDatabase }).sequelize === this.#sequelize;
  }

  /** The raw connection of a caller's transaction on this store's connection (else `failed_precondition`, reason `foreign_transaction`). */
  #callerConnection(tx: Transaction | undefined): ReturnType<typeof rawConnection> {
    this.#db.open();
    if (!this.#ownTransaction(tx)) {
      throw new LatchkeyError('failed_precondition', 'the transaction does not belong to the FGA store\'s database connection', { reason: 'foreign_transaction' });
    }
    const connection = (tx as unknown as { connection?: unknown }).connection;
    if (connection === undefined) {
      throw new LatchkeyError('failed_precondition', 'the transaction has not started or has finished', { reason: 'foreign_transaction' });
    }
    return rawConnection(this.#dialect, connection);
  }

  async ensureTuplesInTransaction(deletes: readonly TupleKey[], writes: readonly TupleKey[], options: { transaction: Transaction }): Promise<number> {
    const conn = this.#callerConnection(options?.transaction);
    const key = (t: TupleKey): string => `${t.object}\u0000${t.relation}\u0000${t.user}`;
    const expiring = new Set<string>();
    const present = await this.#existing([...deletes, ...writes], options.transaction, expiring);
    // A wanted tuple held with an expiry (expired but not collected yet, or about to expire) is
    // replaced by the lasting one the caller states.
    const renew = writes.filter((t) => expiring.has(key(t)));
    const d = [...deletes.filter((t) => present.has(key(t))), ...renew];
    const w = writes.filter((t) => !present.has(key(t)) || expiring.has(key(t)));
    if (d.length === 0 && w.length === 0) return 0;
    try {
      await applyWrite(conn, this.#dialect, this.#batch, this.storeId, this.#now(), d, w);
    } catch (err) {
      if (err instanceof WriteViolation) {
        if (err.kind === 'no_store') throw storeNotFound(this.storeId);
        throw new LatchkeyError('aborted', 'a concurrent write changed the same tuples; try again', { reason: 'tuple_conflict' });
      }
      throw backendError(err);
    }
    return d.length + w.length;
  }

  async deleteTuplesOfObjects(objects: readonly string[], options: { transaction: Transaction }): Promise<number> {
    const conn = this.#callerConnection(options?.transaction);
    try {
      return await deleteObjectsTuples(conn, this.#dialect, this.#batch, this.storeId, this.#now(), objects);
    } catch (err) {
      throw backendError(err);
    }
  }
}
