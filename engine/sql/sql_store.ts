/**
 * A {@link TupleStore} on SQLite, PostgreSQL or MySQL/MariaDB through
 * sequelize. It uses the sequelize instance it is given (the process's) and
 * never closes it; on a SQLite file it keeps two connections of its own in
 * that instance's connection manager (a writer and a reader), released by
 * {@link SqlStore.close}.
 *
 * The point and forward reads issued in the same tick (the reads of one graph
 * level, which the evaluator's reader issues together) are answered by one
 * statement (engine/sql/level_reads.ts): one round trip per level. Hot
 * statements run on driver connections with bound parameters
 * (engine/sql/raw.ts).
 *
 * Writes run in one transaction that first increments the single-row
 * revision (which also serialises concurrent writers, in this process and in
 * others), checks the preconditions, applies deletes and inserts, and appends
 * the changelog rows with the new revision (engine/sql/sql_store_writes.ts).
 * The stores of a database and their views: engine/sql/sql_catalog.ts.
 * Schema and collations: see fga_migrations.ts and docs/storage.md.
 */
import type { Transaction } from 'sequelize';
import { QueryTypes, type SqlDatabase } from './sql_database.ts';
import { LatchkeyError } from '../errors.ts';
import type { StoredAuthorizationModel } from '../model.ts';
import { DEFAULT_STORE_ID } from '../store.ts';
import type {
  Assertion,
  ObjectRelationKey,
  Page,
  ReadFilter,
  StoreCatalog,
  StoredTuple,
  TupleChange,
  ChangesQuery,
  TupleKey,
  TupleStore,
  UserKind,
  UserTupleKey,
} from '../store.ts';
import { runMigrations, type SqlDialect } from './migrate.ts';
import { FGA_MIGRATIONS } from './fga_migrations.ts';
import { backendError, SqlConnections } from './connections.ts';
import { chunks, condition, expiryText, live, toStored, TUPLE_COLUMNS, type TupleRow } from './sql_rows.ts';
import { scanTuples } from './sql_scan.ts';
import { changeNotifySql } from './sql_writer.ts';
import { decodeToken, encodeToken } from './sql_tokens.ts';
import { sqlCatalog, storeNotFound, type Shared, type StoreStatements } from './sql_catalog.ts';
import { SqlStoreWrites } from './sql_store_writes.ts';
import { answerLevel, LEVEL_COLUMNS, type Branch, type LevelRead } from './level_reads.ts';

/** Options of {@link SqlStore.open}. */
export interface SqlStoreOptions {
  /** The process's connection; the store never closes it. */
  sequelize: SqlDatabase;
  /** Apply pending migrations when opening (default true). */
  migrate?: boolean;
  /** Keys per statement in batched reads and writes (default 500, 1..5000). */
  batchSize?: number;
  /** Clock for changelog timestamps and tuple expiry (default `Date.now`). */
  now?: () => number;
}

interface ChangeRow extends Omit<TupleRow, 'revision'> {
  revision: number | string;
  seq: number | string;
  operation: string;
  inserted_at: number | string;
}

/**
 * A {@link TupleStore} on a SQL database. Create with {@link SqlStore.open}:
 * the object it returns is the default store; {@link SqlStore.catalog} holds
 * the others, which share its connections.
 */
export class SqlStore implements TupleStore {
  readonly #shared: Shared;
  readonly #sequelize: SqlDatabase;
  readonly #dialect: SqlDialect;
  readonly #batch: number;
  readonly #now: () => number;
  /** Point and forward reads queued in this tick (see {@link SqlStore.#levelRead}). */
  #pendingReads: LevelRead[] = [];
  #levelStatements = 0;
  readonly #connections: SqlConnections;
  /** The writes of this view (engine/sql/sql_store_writes.ts). */
  readonly #writes: SqlStoreWrites;
  /** The id of the store this object reads and writes. */
  readonly storeId: string;

  /** This view's statements, lent to the catalog and to its writes. */
  readonly #statements: StoreStatements = {
    open: () => this.#open(),
    select: <T>(sql: string, replacements: unknown[], transaction?: Transaction) => this.#select<T>(sql, replacements, transaction),
    exec: (sql: string, replacements: unknown[], transaction: Transaction) => this.#exec(sql, replacements, transaction),
    transaction: <T>(fn: (tx: Transaction) => Promise<T>) => this.#transaction(fn),
  };

  private constructor(shared: Shared, storeId: string) {
    this.#shared = shared;
    this.#sequelize = shared.sequelize;
    this.#dialect = shared.dialect;
    this.#batch = shared.batch;
    this.#now = shared.now;
    this.#connections = shared.connections;
    this.storeId = storeId;
    this.#writes = new SqlStoreWrites(shared, storeId, this.#statements);
    if (this.#dialect === 'postgres' || this.#dialect === 'sqlite') {
      this.readTuplesetChains = async (keys, maxDepth) => (keys.length === 0 ? new Map() : this.#levelRead({ kind: 'chain', keys, depth: Math.max(0, Math.floor(maxDepth)) }));
    }
  }

  /**
   * Opens the store on `options.sequelize`, applying the `fga` migrations
   * first unless `migrate: false`. Unknown option keys are `invalid_argument`
   * (reason `invalid_option`).
   */
  static async open(options: SqlStoreOptions): Promise<SqlStore> {
    for (const key of Object.keys(options)) {
      if (!['sequelize', 'migrate', 'batchSize', 'now'].includes(key)) {
        throw new LatchkeyError('invalid_argument', `unknown SQL store option '${key}'`, { reason: 'invalid_option', details: { option: key } });
      }
    }
    const d = options.sequelize?.getDialect?.();
    if (d !== 'sqlite' && d !== 'postgres' && d !== 'mysql' && d !== 'mariadb') {
      throw new LatchkeyError('invalid_argument', `unsupported SQL dialect '${String(d)}'`, { reason: 'invalid_option', details: { option: 'sequelize' } });
    }
    const batch = options.batchSize ?? 500;
    if (!Number.isInteger(batch) || batch < 1 || batch > 5000) {
      throw new LatchkeyError('invalid_argument', 'SQL store option batchSize must be an integer from 1 to 5000', { reason: 'invalid_option', details: { option: 'batchSize' } });
    }
    try {
      if (options.migrate !== false) await runMigrations(options.sequelize, 'fga', FGA_MIGRATIONS);
    } catch (err) {
      throw backendError(err);
    }
    const shared: Shared = {
      sequelize: options.sequelize,
      dialect: d,
      batch,
      now: options.now ?? Date.now,
      connections: new SqlConnections(options.sequelize, d),
      closed: false,
      views: new Map(),
    };
    const root = new SqlStore(shared, DEFAULT_STORE_ID);
    shared.views.set(DEFAULT_STORE_ID, root);
    return root;
  }

  /** The stores of this database; their views share this object's connections. */
  catalog(): StoreCatalog {
    return sqlCatalog(this.#shared, this.#statements, (id) => new SqlStore(this.#shared, id));
  }

  async writeAssertions(modelId: string, assertions: readonly Assertion[]): Promise<void> {
    await this.#transaction(async (tx) => {
      await this.#exec('DELETE FROM fga_assertion WHERE store = ? AND model_id = ?', [this.storeId, modelId], tx);
      await this.#exec('INSERT INTO fga_assertion (store, model_id, assertions) VALUES (?, ?, ?)', [this.storeId, modelId, JSON.stringify(assertions)], tx);
    });
  }

  async readAssertions(modelId: string): Promise<Assertion[]> {
    const [row] = await this.#select<{ assertions: string }>('SELECT assertions FROM fga_assertion WHERE store = ? AND model_id = ?', [this.storeId, modelId]);
    return row === undefined ? [] : (JSON.parse(row.assertions) as Assertion[]);
  }

  /** The dialect of the underlying database. */
  get dialect(): SqlDialect {
    return this.#dialect;
  }

  /**
   * The connection the store runs on, so that a caller can tell whether its
   * own transactions can include the store's changes (see
   * {@link SqlStore.deleteTuplesOfUsers}).
   */
  get sequelize(): SqlDatabase {
    return this.#sequelize;
  }

  #open(): void {
    if (this.#shared.closed) throw new LatchkeyError('unavailable', 'store is closed', { reason: 'store_closed' });
  }

  async #select<T>(sql: string, replacements: unknown[], transaction?: Transaction): Promise<T[]> {
    this.#open();
    if (transaction === undefined && (this.#dialect !== 'sqlite' || this.#connections.sqliteFile)) return this.#connections.read<T>(sql, replacements);
    try {
      const opts: Parameters<SqlDatabase['query']>[1] & { type: typeof QueryTypes.SELECT } = { replacements, type: QueryTypes.SELECT, raw: true };
      if (transaction !== undefined) opts.transaction = transaction;
      return (await this.#sequelize.query(sql, opts)) as T[];
    } catch (err) {
      throw backendError(err);
    }
  }

  async #exec(sql: string, replacements: unknown[], transaction: Transaction): Promise<void> {
    await this.#sequelize.query(sql, { replacements, transaction, raw: true });
  }

  /** Runs `fn` in a sequelize transaction, one at a time per store instance. */
  #transaction<T>(fn: (tx: Transaction) => Promise<T>): Promise<T> {
    this.#open();
    return this.#connections.sequelizeTransaction(fn).catch((err: unknown) => {
      throw backendError(err);
    });
  }

  // ---------------------------------------------------------------- models

  async writeModel(model: StoredAuthorizationModel): Promise<void> {
    await this.#transaction(async (tx) => {
      const [row] = await this.#select<{ id: string | null }>('SELECT MAX(id) AS id FROM fga_model WHERE store = ?', [this.storeId], tx);
      if (row?.id != null && row.id >= model.id) {
        throw new LatchkeyError('internal', 'model ids must increase', { reason: 'model_id_not_increasing' });
      }
      await this.#requireStore(tx);
      await this.#exec('INSERT INTO fga_model (store, id, model, created_at) VALUES (?, ?, ?, ?)', [this.storeId, model.id, JSON.stringify(model), this.#now()], tx);
      const notify = changeNotifySql(this.#dialect, 'model');
      if (notify !== undefined) await this.#exec(notify, [this.storeId], tx);
    });
  }

  async readModel(id: string): Promise<StoredAuthorizationModel | undefined> {
    const [row] = await this.#select<{ model: string }>('SELECT model FROM fga_model WHERE store = ? AND id = ?', [this.storeId, id]);
    return row === undefined ? undefined : (JSON.parse(row.model) as StoredAuthorizationModel);
  }

  async readLatestModel(): Promise<StoredAuthorizationModel | undefined> {
    const [row] = await this.#select<{ model: string }>('SELECT model FROM fga_model WHERE store = ? ORDER BY id DESC LIMIT 1', [this.storeId]);
    return row === undefined ? undefined : (JSON.parse(row.model) as StoredAuthorizationModel);
  }

  async latestModelId(): Promise<string | undefined> {
    const [row] = await this.#select<{ id: string }>('SELECT id FROM fga_model WHERE store = ? ORDER BY id DESC LIMIT 1', [this.storeId]);
    return row?.id;
  }

  async listModels(options: { pageSize: number; continuationToken?: string | undefined }): Promise<Page<StoredAuthorizationModel>> {
    const before = options.continuationToken === undefined ? undefined : decodeToken(options.continuationToken, 1)[0];
    const size = options.pageSize;
    const rows = before === undefined
      ? await this.#select<{ model: string }>('SELECT model FROM fga_model WHERE store = ? ORDER BY id DESC LIMIT ?', [this.storeId, size + 1])
      : await this.#select<{ model: string }>('SELECT model FROM fga_model WHERE store = ? AND id < ? ORDER BY id DESC LIMIT ?', [this.storeId, before, size + 1]);
    const items = rows.slice(0, size).map((r) => JSON.parse(r.model) as StoredAuthorizationModel);
    return { items, continuationToken: rows.length > size ? encodeToken([items.at(-1)!.id]) : undefined };
  }

  // ---------------------------------------------------------------- writes

  write(deletes: readonly TupleKey[], writes: readonly TupleKey[]): Promise<number> {
    return this.#writes.write(deletes, writes);
  }

  deleteExpired(now: number, limit: number): Promise<number> {
    return this.#writes.deleteExpired(now, limit);
  }

  async nextExpiry(now: number): Promise<number | undefined> {
    const rows = await this.#select<{ e: number | string | null }>('SELECT MIN(expires_at) AS e FROM fga_tuple WHERE store = ? AND expires_at > ?', [this.storeId, now]);
    const e = rows[0]?.e;
    return e === null || e === undefined ? undefined : Number(e);
  }

  /**
   * Deletes every tuple whose user is exactly one of `users` (full user
   * strings such as `user:123`, compared byte-exact), inside the caller's
   * transaction: one revision bump, one changelog row per deleted tuple, all
   * committed or rolled back with the caller's other changes. The transaction
   * must belong to this store's connection ({@link SqlStore.sequelize}), else
   * `failed_precondition` (reason `foreign_transaction`). Returns the number
   * of tuples deleted; the revision is bumped even when it is 0.
   */
  deleteTuplesOfUsers(users: readonly string[], options: { transaction: Transaction }): Promise<number> {
    return this.#writes.deleteTuplesOfUsers(users, options);
  }

  /**
   * Makes `deletes` absent and `writes` present inside the caller's
   * transaction (same rules as {@link SqlStore.deleteTuplesOfUsers}): a
   * delete of an absent tuple and a write of a present one are skipped, so
   * the call states the wanted end state rather than a change; a wanted
   * tuple that is present with an expiry is rewritten without one. One revision
   * bump and one changelog row per tuple actually changed; nothing is
   * written when nothing changes. A concurrent writer of the same tuple
   * fails the call with `aborted` (reason `tuple_conflict`), and the caller's
   * transaction must roll back. Returns the number of tuples changed.
   */
  ensureTuplesInTransaction(deletes: readonly TupleKey[], writes: readonly TupleKey[], options: { transaction: Transaction }): Promise<number> {
    return this.#writes.ensureTuplesInTransaction(deletes, writes, options);
  }

  /**
   * Deletes, inside the caller's transaction, every tuple about one of
   * `objects` (`type:id`) and every tuple whose user is one of them or one of
   * their usersets (`type:id#relation`): what deleting the object leaves
   * behind. Same transaction rules and revision bookkeeping as
   * {@link SqlStore.deleteTuplesOfUsers}. Returns the number deleted.
   */
  deleteTuplesOfObjects(objects: readonly string[], options: { transaction: Transaction }): Promise<number> {
    return this.#writes.deleteTuplesOfObjects(objects, options);
  }

  // ---------------------------------------------------------------- reads

  async readUserTuples(keys: readonly UserTupleKey[]): Promise<(StoredTuple | undefined)[]> {
    if (keys.length === 0) return [];
    const found = (await this.#levelRead({ kind: 'point', keys }))!;
    return keys.map((k) => found.get(`${k.objectType}\u0000${k.objectId}\u0000${k.relation}\u0000${k.user}`)?.[0]);
  }

  async readObjectRelations(keys: readonly ObjectRelationKey[], kind: UserKind): Promise<StoredTuple[][]> {
    if (keys.length === 0) return [];
    const found = (await this.#levelRead({ kind, keys }))!;
    return keys.map((k) => found.get(`${k.objectType}\u0000${k.objectId}\u0000${k.relation}`) ?? []);
  }

  /**
   * See {@link TupleStore.readTuplesetChains}. PostgreSQL and SQLite only (set
   * by the constructor; absent on MySQL/MariaDB, where the caller reads level
   * by level): a recursive branch of the statement that answers the other
   * reads of the same tick (engine/sql/level_reads.ts); `undefined` when the
   * chain passes 1,000 rows.
   */
  readonly readTuplesetChains?: (keys: readonly ObjectRelationKey[], maxDepth: number) => Promise<Map<string, StoredTuple[]> | undefined>;

  /** Number of statements that answered point and forward reads (for tests and benchmarks). */
  get levelStatements(): number {
    return this.#levelStatements;
  }

  /**
   * Queues a point, forward or chain read; the reads queued in the same tick
   * are answered together by one statement (engine/sql/level_reads.ts).
   * Resolves to the matching tuples by key (`type\0id\0relation[\0user]`),
   * each group ordered by user (a chain: `undefined` when cut short).
   */
  #levelRead(branch: Branch): Promise<Map<string, StoredTuple[]> | undefined> {
    this.#open();
    return new Promise((resolve, reject) => {
      this.#pendingReads.push({ branch, resolve, reject });
      if (this.#pendingReads.length === 1) queueMicrotask(() => void this.#flushReads());
    });
  }

  async #flushReads(): Promise<void> {
    const pending = this.#pendingReads;
    this.#pendingReads = [];
    const direct = this.#dialect !== 'sqlite' || this.#connections.sqliteFile;
    this.#levelStatements += await answerLevel(this.#dialect, this.#batch, this.storeId, pending, (sql, params) =>
      direct
        ? this.#connections.readArrays(sql, params, LEVEL_COLUMNS)
        : this.#select<Record<string, unknown>>(sql, params).then((rows) => rows.map((r) => LEVEL_COLUMNS.map((c) => r[c]))),
      this.#now,
    );
  }

  async readStartingWithUsers(query: { objectType: string; relation: string; users: readonly string[]; objectIds?: readonly string[] }): Promise<StoredTuple[]> {
    const users = [...new Set(query.users)];
    if (users.length === 0) return [];
    if (query.objectIds !== undefined && query.objectIds.length === 0) return [];
    const out: StoredTuple[] = [];
    for (const part of chunks(users, this.#batch)) {
      const params: unknown[] = [this.storeId, query.objectType, query.relation, ...part];
      let sql = `SELECT ${TUPLE_COLUMNS} FROM fga_tuple WHERE store = ? AND object_type = ? AND relation = ? AND _user IN (${part.map(() => '?').join(', ')})`;
      if (query.objectIds !== undefined) {
        sql += ` AND object_id IN (${query.objectIds.map(() => '?').join(', ')})`;
        params.push(...query.objectIds);
      }
      const rows = await this.#select<TupleRow>(`${sql} ORDER BY object_id, _user`, params);
      let now: number | undefined;
      for (const r of rows) if (r.expires_at === null || live(r.expires_at, (now ??= this.#now()))) out.push(toStored(r));
    }
    if (users.length > this.#batch) {
      out.sort((a, b) => (a.object < b.object ? -1 : a.object > b.object ? 1 : a.user < b.user ? -1 : a.user > b.user ? 1 : 0));
    }
    return out;
  }

  /**
   * Object ids of `objectType` after `after`, in byte order of the binary
   * collation: one range read of the primary key (see
   * {@link TupleStore.readObjectIds}). Expired tuples' objects may be listed.
   */
  async readObjectIds(query: { objectType: string; after?: string | undefined; limit: number }): Promise<string[]> {
    const params: unknown[] = [this.storeId, query.objectType];
    let sql = 'SELECT DISTINCT object_id FROM fga_tuple WHERE store = ? AND object_type = ?';
    if (query.after !== undefined) {
      sql += ' AND object_id > ?';
      params.push(query.after);
    }
    params.push(query.limit);
    const rows = await this.#select<{ object_id: string }>(`${sql} ORDER BY object_id LIMIT ?`, params);
    return rows.map((r) => r.object_id);
  }

  async readPage(filter: ReadFilter, options: { pageSize: number; continuationToken?: string | undefined }): Promise<Page<StoredTuple>> {
    const after = options.continuationToken === undefined ? undefined : decodeToken(options.continuationToken, 4);
    const where: string[] = ['store = ?'];
    const params: unknown[] = [this.storeId];
    if (filter.objectType !== undefined) {
      where.push('object_type = ?');
      params.push(filter.objectType);
      if (filter.objectId !== undefined) {
        where.push('object_id = ?');
        params.push(filter.objectId);
      }
    }
    if (filter.relation !== undefined) {
      where.push('relation = ?');
      params.push(filter.relation);
    }
    if (filter.user !== undefined) {
      where.push('_user = ?');
      params.push(filter.user);
    }
    if (after !== undefined) {
      where.push('(object_type, object_id, relation, _user) > (?, ?, ?, ?)');
      params.push(...after);
    }
    where.push('(expires_at IS NULL OR expires_at > ?)');
    params.push(this.#now());
    params.push(options.pageSize + 1);
    const rows = await this.#select<TupleRow & { inserted_at: number | string }>(
      `SELECT ${TUPLE_COLUMNS}, inserted_at FROM fga_tuple WHERE ${where.join(' AND ')} ORDER BY store, object_type, object_id, relation, _user LIMIT ?`,
      params,
    );
    const page = rows.slice(0, options.pageSize);
    const last = page.at(-1);
    return {
      items: page.map((r) => ({ ...toStored(r), writtenAt: Number(r.inserted_at) })),
      continuationToken: rows.length > options.pageSize && last !== undefined
        ? encodeToken([last.object_type, last.object_id, last.relation, last._user])
        : undefined,
    };
  }

  /**
   * Every tuple, in batches of `batchSize` (default 10,000, 1..100,000), in
   * no promised order. PostgreSQL: a cursor in one repeatable-read
   * transaction (one snapshot). SQLite, MySQL: keyset pages of the primary
   * key, one statement each (no `OFFSET`, so each page costs the same): a
   * tuple present for the whole scan is returned exactly once, one written
   * or deleted meanwhile may or may not be. A caller that keeps a copy current
   * reads {@link SqlStore.revision} before the scan and replays the changelog
   * after that revision.
   */
  async *scanTuples(options: { batchSize?: number } = {}): AsyncGenerator<StoredTuple[]> {
    this.#open();
    const size = options.batchSize ?? 10_000;
    if (!Number.isInteger(size) || size < 1 || size > 100_000) {
      throw new LatchkeyError('invalid_argument', 'scan batchSize must be an integer from 1 to 100000', { reason: 'invalid_option', details: { option: 'batchSize' } });
    }
    yield* scanTuples(this.#dialect, this.#connections, this.storeId, size, () => this.#open());
  }

  async readChanges(options: ChangesQuery): Promise<TupleChange[]> {
    const params: unknown[] = [this.storeId, options.afterRevision];
    let sql = 'SELECT revision, seq, operation, object_type, object_id, relation, _user, condition_name, condition_context, inserted_at, expires_at FROM fga_changelog WHERE store = ? AND revision > ?';
    if (options.afterSeq !== undefined) {
      // (revision, seq) > (r, s), spelled so that every backend seeks the (store, revision, seq) key.
      sql = sql.replace('revision > ?', 'revision >= ? AND (revision > ? OR seq > ?)');
      params.push(options.afterRevision, options.afterSeq);
    }
    if (options.objectType !== undefined) {
      sql += ' AND object_type = ?';
      params.push(options.objectType);
    }
    params.push(options.limit);
    const rows = await this.#select<ChangeRow>(`${sql} ORDER BY revision, seq LIMIT ?`, params);
    return rows.map((r) => {
      const tuple: TupleKey = { object: `${r.object_type}:${r.object_id}`, relation: r.relation, user: r._user };
      const c = condition(r.condition_name, r.condition_context);
      if (c !== undefined) tuple.condition = c;
      const e = expiryText(r.expires_at);
      if (e !== undefined) tuple.expires_at = e;
      return { revision: Number(r.revision), seq: Number(r.seq), operation: r.operation === 'd' ? 'delete' : 'write', tuple, timestamp: Number(r.inserted_at) };
    });
  }

  async revision(): Promise<number> {
    const [row] = await this.#select<{ revision: number | string }>('SELECT revision FROM fga_store WHERE id = ?', [this.storeId]);
    if (row === undefined) throw storeNotFound(this.storeId);
    return Number(row.revision);
  }

  async hasTuples(): Promise<boolean> {
    const rows = await this.#select<{ one: number }>('SELECT 1 AS one FROM fga_tuple WHERE store = ? LIMIT 1', [this.storeId]);
    return rows.length > 0;
  }

  async reset(): Promise<void> {
    await this.#transaction(async (tx) => {
      await this.#requireStore(tx);
      await this.#exec('UPDATE fga_store SET revision = revision WHERE id = ?', [this.storeId], tx);
      const rows = await this.#select<{ one: number }>('SELECT 1 AS one FROM fga_tuple WHERE store = ? LIMIT 1', [this.storeId], tx);
      if (rows.length > 0) {
        throw new LatchkeyError('failed_precondition', 'remove all relationship tuples before resetting the authorization model', { reason: 'tuples_exist' });
      }
      await this.#exec('DELETE FROM fga_model WHERE store = ?', [this.storeId], tx);
      await this.#exec('DELETE FROM fga_changelog WHERE store = ?', [this.storeId], tx);
      await this.#exec('DELETE FROM fga_assertion WHERE store = ?', [this.storeId], tx);
      const notify = changeNotifySql(this.#dialect, 'model');
      if (notify !== undefined) await this.#exec(notify, [this.storeId], tx);
    });
  }

  /**
   * Waits for queued writes, marks the store closed and releases its own
   * connections; the sequelize instance stays open (it belongs to the process).
   */
  async close(): Promise<void> {
    if (this.storeId !== DEFAULT_STORE_ID) return;
    await this.#connections.drain();
    this.#shared.closed = true;
    await this.#connections.close();
  }

  /** `not_found` (reason `store_not_found`) unless this object's store exists. */
  async #requireStore(tx: Transaction): Promise<void> {
    const [row] = await this.#select<{ id: string }>('SELECT id FROM fga_store WHERE id = ?', [this.storeId], tx);
    if (row === undefined) throw storeNotFound(this.storeId);
  }
}
