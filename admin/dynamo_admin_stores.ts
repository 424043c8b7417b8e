/**
 * The admin stores on a DynamoDB main database (docs/storage.md, "DynamoDB
 * main database"): one table per entity, every item keyed `pk`/`sk`.
 *
 * | table | pk | sk | holds |
 * |---|---|---|---|
 * | `audit_logs` | `chain` | position, 16 digits | the hash-chained rows; the position is claimed by a conditional put |
 * | `admin_sessions` | SHA-256 of the session id | `-` | expiry (unix ms) and IP |
 */
import type { DynamoCondition, DynamoDatabase, DynamoItem } from '../auth/index.ts';
import type { AuditLogStore, AuditMatch, AuditRowContent } from './audit_log.ts';
import type { AdminSessionStore } from './admin_sessions.ts';
import type { Row } from './sql.ts';

const pad = (n: number): string => String(n).padStart(16, '0');

/** Builds an AND of equality (and range) tests on attributes, with placeholders. */
export class FilterBuilder {
  readonly #parts: string[] = [];
  readonly #names: Record<string, string> = {};
  readonly #values: DynamoItem = {};
  #n = 0;

  /** `attribute op value`. */
  test(attribute: string, op: '=' | '<' | '<=' | '>' | '>=' | '<>', value: unknown): this {
    const i = this.#n++;
    this.#names[`#f${i}`] = attribute;
    this.#values[`:f${i}`] = value;
    this.#parts.push(`#f${i} ${op} :f${i}`);
    return this;
  }

  /** The condition, or undefined when nothing was added. */
  build(): DynamoCondition | undefined {
    if (this.#parts.length === 0) return undefined;
    return { expression: this.#parts.join(' AND '), names: this.#names, values: this.#values };
  }
}

/**
 * The audit log on DynamoDB. All rows share one partition, sorted by
 * position, so the head is one query of one item and a listing reads the
 * partition newest first. `append` is a put conditional on the position
 * being free: of two writers on the same head exactly one succeeds, the other
 * re-reads the head (the same rule as SQL's unique `seq`).
 */
export class DynamoAuditLogStore implements AuditLogStore {
  readonly #db: DynamoDatabase;

  constructor(db: DynamoDatabase) {
    this.#db = db;
  }

  /** Creates the table when missing. */
  init(): Promise<void> {
    return this.#db.ensureTable({ name: 'audit_logs' });
  }

  async head(): Promise<{ seq: number; hash: string } | undefined> {
    const last = (await this.#db.query('audit_logs', { pk: ['pk', 'chain'], descending: true, limit: 1 }))[0];
    return last ? { seq: Number(last['seq']), hash: String(last['hash']) } : undefined;
  }

  append(row: AuditRowContent): Promise<boolean> {
    return this.#db.put('audit_logs', { pk: 'chain', sk: pad(row.seq), ...row }, { expression: 'attribute_not_exists(pk)' });
  }

  async list(match: AuditMatch, limit: number, offset: number): Promise<{ rows: Row[]; total: number }> {
    const f = new FilterBuilder();
    if (match.actor_id !== undefined) f.test('actor_id', '=', match.actor_id);
    if (match.action !== undefined) f.test('action', '=', match.action);
    for (const v of match.resource_type ?? []) f.test('resource_type', '=', v);
    for (const v of match.resource_id ?? []) f.test('resource_id', '=', v);
    if (match.from_ms !== undefined) f.test('created_at', '>=', match.from_ms);
    if (match.to_ms !== undefined) f.test('created_at', '<=', match.to_ms);
    const all = await this.#db.query('audit_logs', { pk: ['pk', 'chain'], descending: true, filter: f.build() });
    return { rows: all.slice(offset, offset + limit), total: all.length };
  }

  after(seq: number, limit: number): Promise<Row[]> {
    return this.#db.query('audit_logs', { pk: ['pk', 'chain'], sk: ['sk', '>', pad(seq)], limit });
  }
}

/** Admin sessions on DynamoDB: one item per session, read and slid with conditional writes. */
export class DynamoAdminSessionStore implements AdminSessionStore {
  readonly #db: DynamoDatabase;

  constructor(db: DynamoDatabase) {
    this.#db = db;
  }

  /** Creates the table when missing. */
  init(): Promise<void> {
    return this.#db.ensureTable({ name: 'admin_sessions' });
  }

  async insert(idHash: string, ip: string, createdAt: number, expiresAt: number): Promise<void> {
    await this.#db.put('admin_sessions', { pk: idHash, sk: '-', ip_address: ip, created_at: createdAt, expires_at: expiresAt });
  }

  async deleteExpired(now: number): Promise<void> {
    // A scan reads the whole table: only done when a session is opened (an admin login), which is rare.
    const expired = await this.#db.scan('admin_sessions', new FilterBuilder().test('expires_at', '<', now).build());
    for (const item of expired) {
      await this.#db.delete('admin_sessions', String(item['pk']), '-', { expression: '#e < :now', names: { '#e': 'expires_at' }, values: { ':now': now } });
    }
  }

  async expiresAt(idHash: string): Promise<number | undefined> {
    const item = await this.#db.get('admin_sessions', idHash, '-');
    return item ? Number(item['expires_at']) : undefined;
  }

  async slide(idHash: string, now: number, expiresAt: number): Promise<boolean> {
    const out = await this.#db.update(
      'admin_sessions',
      idHash,
      '-',
      { set: { expires_at: expiresAt } },
      { expression: 'attribute_exists(pk) AND #e > :now', names: { '#e': 'expires_at' }, values: { ':now': now } },
    );
    return out !== undefined;
  }

  async delete(idHash: string): Promise<void> {
    await this.#db.delete('admin_sessions', idHash, '-');
  }
}
