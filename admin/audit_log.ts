/**
 * The audit log: append-only rows for every admin operation and every
 * security-relevant user event.
 *
 * - No method updates or deletes a row; there is no operation that could.
 * - Rows are hash-chained: each row stores the SHA-256 of the previous row's
 *   hash plus its own canonical content (`prev_hash`, `hash`), so editing or
 *   removing a row directly in the database is detected by
 *   {@link AuditLog.verifyChain}, which names the first broken row
 *   (security matrix G2).
 * - Metadata keys that can carry credentials (password, token, secret, otp,
 *   code, cookie, authorization, key) are dropped before anything is stored
 *   (security matrix G1).
 * - The chain position (`seq`) is unique (a unique index on SQL, a
 *   conditional put on DynamoDB): two writers racing for the same position
 *   make one of them fail and retry on the new head, so the chain stays
 *   linear across processes.
 * - A row may be appended inside the SQL transaction of the change it
 *   records (sign-up: the user and its audit row commit together or not at
 *   all, security matrix E3). Such an append locks the chain head until the
 *   transaction ends, so concurrent transactions take their positions in
 *   turn rather than by retrying, and a position lost to an append outside
 *   any transaction is undone alone (a savepoint) and taken again.
 */
import { createHash, randomUUID } from 'node:crypto';
import type { Transaction } from 'sequelize';
import type { SqlDatabase } from '../engine/sql/sql_database.ts';
import { SqliteStatements, type StoreTransaction } from '../auth/index.ts';
import { LatchkeyError } from '../engine/errors.ts';
import { normalizePagination, type Pagination, type PaginationInput } from './pagination.ts';
import { countOf, exec, num, select, str, type Row } from './sql.ts';

/** Who performed an audited action. */
export type ActorType = 'user' | 'admin' | 'system' | 'anonymous';

/** What a caller records. */
export interface AuditEntry {
  actor_id?: string | undefined;
  actor_type: ActorType;
  actor_email?: string | undefined;
  /** A constant such as `user.login_success` or `admin.access_revoked`. */
  action: string;
  resource_type?: string | undefined;
  resource_id?: string | undefined;
  ip_address?: string | undefined;
  user_agent?: string | undefined;
  /** Extra facts (never credentials: such keys are dropped). */
  metadata?: Record<string, unknown> | undefined;
}

/** A stored audit row. `created_at` is unix seconds. */
export interface AuditLogRecord {
  id: string;
  actor_id: string;
  actor_type: string;
  actor_email: string;
  action: string;
  resource_type: string;
  resource_id: string;
  ip_address: string;
  user_agent: string;
  /** JSON text. */
  metadata: string;
  created_at: number;
}

export interface AuditLogFilter {
  pagination?: PaginationInput | null | undefined;
  actor_id?: string | undefined;
  action?: string | undefined;
  /** `type` or `type:id`. */
  resource?: string | undefined;
  resource_type?: string | undefined;
  resource_id?: string | undefined;
  /** Unix seconds, inclusive. */
  from_timestamp?: number | undefined;
  /** Unix seconds, inclusive. */
  to_timestamp?: number | undefined;
}

export interface AuditLogOptions {
  /** The SQL connection (the store is then {@link SqlAuditLogStore}); ignored when `store` is given. */
  sequelize?: SqlDatabase | undefined;
  /** Where rows live (e.g. the DynamoDB store). */
  store?: AuditLogStore | undefined;
  /** Current time in unix milliseconds (default `Date.now`). */
  clock?: () => number;
}

const SECRET_KEY = /pass(word)?|secret|token|otp|code|cookie|authori[sz]ation|key|credential/i;
const GENESIS = '0'.repeat(64);

function scrub(value: unknown, depth = 0): unknown {
  if (depth > 5) return '[truncated]';
  if (Array.isArray(value)) return value.slice(0, 100).map((v) => scrub(v, depth + 1));
  if (value && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
      if (SECRET_KEY.test(k)) continue;
      out[k] = scrub(v, depth + 1);
    }
    return out;
  }
  if (typeof value === 'string') return value.slice(0, 1024);
  return value;
}

const clip = (v: string | undefined, n: number): string => (v ?? '').slice(0, n);

/** The fields covered by the chain hash, in a fixed order. */
function canonical(r: Row): string {
  return JSON.stringify([
    str(r['id']),
    num(r['seq']),
    str(r['actor_id']),
    str(r['actor_type']),
    str(r['actor_email']),
    str(r['action']),
    str(r['resource_type']),
    str(r['resource_id']),
    str(r['ip_address']),
    str(r['user_agent']),
    str(r['metadata']),
    num(r['created_at']),
  ]);
}

function chainHash(prev: string, r: Row): string {
  return createHash('sha256').update(prev).update('\n').update(canonical(r)).digest('hex');
}

function toRecord(r: Row): AuditLogRecord {
  return {
    id: str(r['id']),
    actor_id: str(r['actor_id']),
    actor_type: str(r['actor_type']),
    actor_email: str(r['actor_email']),
    action: str(r['action']),
    resource_type: str(r['resource_type']),
    resource_id: str(r['resource_id']),
    ip_address: str(r['ip_address']),
    user_agent: str(r['user_agent']),
    metadata: str(r['metadata']),
    created_at: Math.floor(num(r['created_at']) / 1000),
  };
}

/** Append-only, hash-chained audit log. */
export class AuditLog {
  readonly #store: AuditLogStore;
  readonly #clock: () => number;
  #tail: Promise<unknown> = Promise.resolve();

  constructor(options: AuditLogOptions) {
    this.#store = options.store ?? new SqlAuditLogStore(options.sequelize as SqlDatabase);
    this.#clock = options.clock ?? Date.now;
  }

  /**
   * Appends one row and returns it. With `transaction` (the SQL transaction
   * of the change the row records) the row commits with that change or not at
   * all, and any failure is thrown so that the change rolls back too. The
   * chain head stays locked until that transaction ends, so make the append
   * its last statement. Throws `invalid_argument` (`invalid_audit_entry`)
   * without an action, `aborted` (`audit_contention`) when 20 attempts lost
   * their position.
   */
  record(entry: AuditEntry, transaction?: StoreTransaction): Promise<AuditLogRecord> {
    // Not queued behind this process's other appends: a transaction holding SQLite's write lock
    // would wait for a queued append that waits for that lock. The store's head lock orders it.
    if (transaction !== undefined) return this.#append(entry, transaction);
    // Appends of this process are serialised; other processes are handled by
    // the store's position check (unique `seq`) and the retry below.
    const next = this.#tail.then(() => this.#append(entry));
    this.#tail = next.catch(() => undefined);
    return next;
  }

  async #append(entry: AuditEntry, transaction?: StoreTransaction): Promise<AuditLogRecord> {
    if (!entry.action) throw new LatchkeyError('invalid_argument', 'audit action is required', { reason: 'invalid_audit_entry' });
    const metadata = JSON.stringify(scrub(entry.metadata ?? {}));
    for (let tries = 0; ; tries++) {
      const head = await this.#store.head(transaction);
      const row: Row = {
        id: randomUUID(),
        seq: head ? head.seq + 1 : 1,
        actor_id: clip(entry.actor_id, 64),
        actor_type: clip(entry.actor_type, 30),
        actor_email: clip(entry.actor_email, 256),
        action: clip(entry.action, 100),
        resource_type: clip(entry.resource_type, 50),
        resource_id: clip(entry.resource_id, 256),
        ip_address: clip(entry.ip_address, 45),
        user_agent: clip(entry.user_agent, 512),
        metadata,
        created_at: this.#clock(),
      };
      const prev = head ? head.hash : GENESIS;
      const hash = chainHash(prev, row);
      if (await this.#store.append({ ...(row as unknown as AuditRowContent), prev_hash: prev, hash }, transaction)) return toRecord(row);
      if (tries >= 20) throw new LatchkeyError('aborted', 'the audit log is busy, try again', { reason: 'audit_contention' });
    }
  }

  /** Rows matching the filter, newest first. Throws `invalid_argument` for bad pagination. */
  async list(filter: AuditLogFilter = {}): Promise<{ audit_logs: AuditLogRecord[]; pagination: Pagination }> {
    const p = normalizePagination(filter.pagination);
    const match: AuditMatch = {};
    if (filter.actor_id) match.actor_id = filter.actor_id;
    if (filter.action) match.action = filter.action;
    const types: string[] = [];
    const ids: string[] = [];
    if (filter.resource) {
      const i = filter.resource.indexOf(':');
      if (i < 0) types.push(filter.resource);
      else {
        types.push(filter.resource.slice(0, i));
        ids.push(filter.resource.slice(i + 1));
      }
    }
    if (filter.resource_type) types.push(filter.resource_type);
    if (filter.resource_id) ids.push(filter.resource_id);
    if (types.length) match.resource_type = types;
    if (ids.length) match.resource_id = ids;
    if (filter.from_timestamp !== undefined) match.from_ms = filter.from_timestamp * 1000;
    if (filter.to_timestamp !== undefined) match.to_ms = filter.to_timestamp * 1000 + 999;
    const { rows, total } = await this.#store.list(match, p.limit, p.offset);
    return { audit_logs: rows.map(toRecord), pagination: { ...p, total } };
  }

  /**
   * Recomputes the hash chain. Returns `{ok: true, rows}` or the first row
   * (by position) whose content, link or position does not match.
   */
  async verifyChain(): Promise<{ ok: true; rows: number } | { ok: false; rows: number; broken_id: string; seq: number }> {
    let prev = GENESIS;
    let expectedSeq = 1;
    let count = 0;
    const batch = 500;
    for (let after = 0; ; ) {
      const rows = await this.#store.after(after, batch);
      for (const r of rows) {
        count++;
        const seq = num(r['seq']);
        if (seq !== expectedSeq || str(r['prev_hash']) !== prev || chainHash(prev, r) !== str(r['hash'])) {
          return { ok: false, rows: count, broken_id: str(r['id']), seq };
        }
        prev = str(r['hash']);
        expectedSeq++;
        after = seq;
      }
      if (rows.length < batch) return { ok: true, rows: count };
    }
  }
}

/** The stored columns of one audit row (`created_at` in unix milliseconds). */
export interface AuditRowContent {
  id: string;
  seq: number;
  actor_id: string;
  actor_type: string;
  actor_email: string;
  action: string;
  resource_type: string;
  resource_id: string;
  ip_address: string;
  user_agent: string;
  metadata: string;
  created_at: number;
  prev_hash: string;
  hash: string;
}

/** What {@link AuditLogStore.list} filters on: every given field must match (each value of a list). */
export interface AuditMatch {
  actor_id?: string;
  action?: string;
  resource_type?: string[];
  resource_id?: string[];
  /** Inclusive bounds on `created_at`, unix milliseconds. */
  from_ms?: number;
  to_ms?: number;
}

/**
 * Where the audit rows live. Implementers keep the chain linear: `append`
 * stores a row only while no row holds its position (`seq`), atomically,
 * across processes.
 *
 * With a transaction (SQL stores; DynamoDB has none and ignores it), `head`
 * reads the last committed head and locks the chain until the transaction
 * ends, so that appends in other transactions wait for this one instead of
 * reading a head it is about to replace; `append` leaves the transaction
 * usable when it loses its position (PostgreSQL would otherwise abort it).
 */
export interface AuditLogStore {
  /** The last row's position and hash, or undefined when the log is empty (a strongly consistent read). */
  head(transaction?: StoreTransaction): Promise<{ seq: number; hash: string } | undefined>;
  /** Stores the row unless its position is taken (then false: another writer won). */
  append(row: AuditRowContent, transaction?: StoreTransaction): Promise<boolean>;
  /** Rows matching, newest (highest position) first: `limit` of them after skipping `offset`, and the count of all matching. */
  list(match: AuditMatch, limit: number, offset: number): Promise<{ rows: Row[]; total: number }>;
  /** Up to `limit` rows with positions above `seq`, in position order. */
  after(seq: number, limit: number): Promise<Row[]>;
}

const HEAD = 'SELECT seq, hash FROM audit_logs ORDER BY seq DESC LIMIT 1';
const INSERT = `INSERT INTO audit_logs (id, seq, actor_id, actor_type, actor_email, action, resource_type, resource_id, ip_address, user_agent, metadata, created_at, prev_hash, hash)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`;

/**
 * The audit log in the `audit_logs` table (unique index on `seq`). On SQLite
 * the head read and the insert of an append outside any transaction (every
 * user event but sign-up's) are statements prepared once
 * (auth/sqlite_statements.ts), on the connection sequelize would use.
 */
export class SqlAuditLogStore implements AuditLogStore {
  readonly #db: SqlDatabase;
  readonly #statements: SqliteStatements | undefined;

  constructor(sequelize: SqlDatabase) {
    this.#db = sequelize;
    this.#statements = SqliteStatements.of(sequelize);
  }

  async head(transaction?: StoreTransaction): Promise<{ seq: number; hash: string } | undefined> {
    const t = transaction as Transaction | undefined;
    const rows = t === undefined ? await this.#statements?.select(HEAD, []) : undefined;
    const head = rows !== undefined ? rows[0] : await this.#headOf(t);
    return head ? { seq: num(head['seq']), hash: str(head['hash']) } : undefined;
  }

  async #headOf(t: Transaction | undefined): Promise<Row | undefined> {
    let sql = HEAD;
    // SQLite: a transaction already holds the database's only write lock.
    if (t !== undefined && this.#db.getDialect() !== 'sqlite') {
      await this.#lockChain(t);
      // MySQL/MariaDB (repeatable read): a plain read would see the transaction's snapshot, taken at
      // its first read; a locking read sees the last committed head. PostgreSQL (read committed):
      // the SELECT after the lock takes a new snapshot, which holds every append committed before.
      if (this.#mysql) sql += ' FOR UPDATE';
    }
    return (await select(this.#db, sql, [], t))[0];
  }

  /** Takes the chain's lock row (migration `0004_audit_chain_lock`) until `t` ends: appends in other transactions queue there. */
  async #lockChain(t: Transaction): Promise<void> {
    await exec(this.#db, 'SELECT id FROM audit_chain_lock WHERE id = 1 FOR UPDATE', [], t);
  }

  get #mysql(): boolean {
    const dialect = this.#db.getDialect();
    return dialect === 'mysql' || dialect === 'mariadb';
  }

  async append(r: AuditRowContent, transaction?: StoreTransaction): Promise<boolean> {
    const t = transaction as Transaction | undefined;
    if (t === undefined && this.#mysql) {
      // The locking read of the head in a transaction also locks the gap above the head, and a plain
      // insert into that gap could deadlock with that transaction's own insert: on MySQL/MariaDB an
      // append outside any transaction takes the chain's lock row first, in a short one of its own.
      return this.#db.transaction(async (own) => {
        await this.#lockChain(own);
        return this.append(r, own);
      });
    }
    // In a transaction, a lost position is undone alone: PostgreSQL aborts the whole transaction on
    // a failed statement unless it is rolled back to a savepoint.
    if (t !== undefined) await exec(this.#db, 'SAVEPOINT audit_append', [], t);
    try {
      const values = [r.id, r.seq, r.actor_id, r.actor_type, r.actor_email, r.action, r.resource_type, r.resource_id, r.ip_address, r.user_agent, r.metadata, r.created_at, r.prev_hash, r.hash];
      if (t !== undefined || (await this.#statements?.run(INSERT, values)) === undefined) await exec(this.#db, INSERT, values, t);
      if (t !== undefined) await exec(this.#db, 'RELEASE SAVEPOINT audit_append', [], t);
      return true;
    } catch (err) {
      if ((err as { name?: string }).name !== 'SequelizeUniqueConstraintError') throw err;
      if (t !== undefined) await exec(this.#db, 'ROLLBACK TO SAVEPOINT audit_append', [], t);
      return false;
    }
  }

  async list(match: AuditMatch, limit: number, offset: number): Promise<{ rows: Row[]; total: number }> {
    const where: string[] = [];
    const args: unknown[] = [];
    const add = (sql: string, v: unknown): void => {
      where.push(sql);
      args.push(v);
    };
    if (match.actor_id !== undefined) add('actor_id = ?', match.actor_id);
    if (match.action !== undefined) add('action = ?', match.action);
    for (const v of match.resource_type ?? []) add('resource_type = ?', v);
    for (const v of match.resource_id ?? []) add('resource_id = ?', v);
    if (match.from_ms !== undefined) add('created_at >= ?', match.from_ms);
    if (match.to_ms !== undefined) add('created_at <= ?', match.to_ms);
    const w = where.length ? `WHERE ${where.join(' AND ')}` : '';
    const total = countOf(await select(this.#db, `SELECT COUNT(*) AS n FROM audit_logs ${w}`, args));
    const rows = await select(this.#db, `SELECT * FROM audit_logs ${w} ORDER BY seq DESC LIMIT ? OFFSET ?`, [...args, limit, offset]);
    return { rows, total };
  }

  after(seq: number, limit: number): Promise<Row[]> {
    return select(this.#db, 'SELECT * FROM audit_logs WHERE seq > ? ORDER BY seq LIMIT ?', [seq, limit]);
  }
}
