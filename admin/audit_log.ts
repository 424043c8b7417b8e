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
 * - The chain position (`seq`) has a unique index: two writers racing for the
 *   same position make one of them fail and retry on the new head, so the
 *   chain stays linear across processes.
 */
import { createHash, randomUUID } from 'node:crypto';
import type { Sequelize } from 'sequelize';
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
  sequelize: Sequelize;
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
  readonly #db: Sequelize;
  readonly #clock: () => number;
  #tail: Promise<unknown> = Promise.resolve();

  constructor(options: AuditLogOptions) {
    this.#db = options.sequelize;
    this.#clock = options.clock ?? Date.now;
  }

  /** Appends one row and returns it. */
  record(entry: AuditEntry): Promise<AuditLogRecord> {
    // Appends of this process are serialised; other processes are handled by
    // the unique `seq` index and the retry below.
    const next = this.#tail.then(() => this.#append(entry));
    this.#tail = next.catch(() => undefined);
    return next;
  }

  async #append(entry: AuditEntry): Promise<AuditLogRecord> {
    if (!entry.action) throw new LatchkeyError('invalid_argument', 'audit action is required', { reason: 'invalid_audit_entry' });
    const metadata = JSON.stringify(scrub(entry.metadata ?? {}));
    for (let tries = 0; ; tries++) {
      const head = (await select(this.#db, 'SELECT seq, hash FROM audit_logs ORDER BY seq DESC LIMIT 1'))[0];
      const row: Row = {
        id: randomUUID(),
        seq: head ? num(head['seq']) + 1 : 1,
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
      const prev = head ? str(head['hash']) : GENESIS;
      const hash = chainHash(prev, row);
      try {
        await exec(
          this.#db,
          `INSERT INTO audit_logs (id, seq, actor_id, actor_type, actor_email, action, resource_type, resource_id, ip_address, user_agent, metadata, created_at, prev_hash, hash)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
          [row['id'], row['seq'], row['actor_id'], row['actor_type'], row['actor_email'], row['action'], row['resource_type'], row['resource_id'], row['ip_address'], row['user_agent'], metadata, row['created_at'], prev, hash],
        );
        return toRecord(row);
      } catch (err) {
        if (tries >= 20 || (err as { name?: string }).name !== 'SequelizeUniqueConstraintError') throw err;
      }
    }
  }

  /** Rows matching the filter, newest first. Throws `invalid_argument` for bad pagination. */
  async list(filter: AuditLogFilter = {}): Promise<{ audit_logs: AuditLogRecord[]; pagination: Pagination }> {
    const p = normalizePagination(filter.pagination);
    const where: string[] = [];
    const args: unknown[] = [];
    const add = (sql: string, v: unknown): void => {
      where.push(sql);
      args.push(v);
    };
    if (filter.actor_id) add('actor_id = ?', filter.actor_id);
    if (filter.action) add('action = ?', filter.action);
    if (filter.resource) {
      const i = filter.resource.indexOf(':');
      if (i < 0) add('resource_type = ?', filter.resource);
      else {
        add('resource_type = ?', filter.resource.slice(0, i));
        add('resource_id = ?', filter.resource.slice(i + 1));
      }
    }
    if (filter.resource_type) add('resource_type = ?', filter.resource_type);
    if (filter.resource_id) add('resource_id = ?', filter.resource_id);
    if (filter.from_timestamp !== undefined) add('created_at >= ?', filter.from_timestamp * 1000);
    if (filter.to_timestamp !== undefined) add('created_at <= ?', filter.to_timestamp * 1000 + 999);
    const w = where.length ? `WHERE ${where.join(' AND ')}` : '';
    const total = countOf(await select(this.#db, `SELECT COUNT(*) AS n FROM audit_logs ${w}`, args));
    const rows = await select(this.#db, `SELECT * FROM audit_logs ${w} ORDER BY seq DESC LIMIT ? OFFSET ?`, [...args, p.limit, p.offset]);
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
      const rows = await select(this.#db, 'SELECT * FROM audit_logs WHERE seq > ? ORDER BY seq LIMIT ?', [after, batch]);
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
