/**
 * The admin stores on a DynamoDB main database (docs/storage.md, "DynamoDB
 * main database"): one table per entity, every item keyed `pk`/`sk`.
 *
 * | table | pk | sk | holds |
 * |---|---|---|---|
 * | `audit_logs` | `chain` | position, 16 digits | the hash-chained rows; the position is claimed by a conditional put |
 * | `admin_sessions` | SHA-256 of the session id | `-` | expiry (unix ms) and IP |
 * | `email_templates` | `event` | event name, `#language` for a template of one language | one template per event and language: the key is the uniqueness |
 * | `mail_outbox` | mail id | `-` | mails to send; index `due` as for webhook deliveries |
 * | `webhooks` | webhook id | `-` | the registry |
 * | `webhook_deliveries` | delivery id | `-` | the outbox; index `due` (`due_pk`, `due_at`) holds only deliveries still to send |
 * | `webhook_logs` | `log` | created, attempt, id | the attempts, newest last |
 */
import type { DynamoCondition, DynamoDatabase, DynamoItem } from '../auth/index.ts';
import type { AuditLogStore, AuditMatch, AuditRowContent } from './audit_log.ts';
import type { AdminSessionStore } from './admin_sessions.ts';
import type { Row } from './sql.ts';
import type { EmailTemplateStore } from './email_templates.ts';
import type { OutboxChannel, OutboxMessage } from './mail_outbox.ts';
import type { DeliveryOutcome, DeliveryRow, WebhookStore } from './webhook_store.ts';

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

const pad13 = (n: number): string => String(Math.max(0, Math.floor(n))).padStart(16, '0');
const strip = (item: DynamoItem): Row => {
  const { pk: _pk, sk: _sk, due_pk: _d, due_at: _a, ...rest } = item;
  return rest;
};

/**
 * Webhooks on DynamoDB. The registry is small and read whole (a scan). A
 * delivery still to send carries `due_pk = 'due'` and `due_at` (when it is
 * next due: its attempt time, or its lease's end while claimed), so the
 * worker finds due work with one query of the `due` index; a finished
 * delivery drops both attributes and leaves the index. The index is read
 * eventually consistently: the claim, a conditional update on the delivery
 * itself, is what decides who sends an attempt.
 */
export class DynamoWebhookStore implements WebhookStore {
  readonly #db: DynamoDatabase;

  constructor(db: DynamoDatabase) {
    this.#db = db;
  }

  /** Creates the tables when missing. */
  async init(): Promise<void> {
    await Promise.all([
      this.#db.ensureTable({ name: 'webhooks' }),
      this.#db.ensureTable({ name: 'webhook_deliveries', indexes: [{ name: 'due', pk: 'due_pk', sk: 'due_at', sortNumeric: true }] }),
      this.#db.ensureTable({ name: 'webhook_logs' }),
    ]);
  }

  async insert(row: Row): Promise<void> {
    await this.#db.put('webhooks', { pk: String(row['id']), sk: '-', ...row }, { expression: 'attribute_not_exists(pk)' });
  }

  async update(id: string, fields: Row): Promise<void> {
    await this.#db.update('webhooks', id, '-', { set: fields }, { expression: 'attribute_exists(pk)' });
  }

  async deleteWithDeliveries(id: string): Promise<void> {
    // The webhook goes first: from then on a delivery of it is cancelled when claimed, so a crash
    // before the rest is removed sends nothing more.
    await this.#db.delete('webhooks', id, '-');
    const f = new FilterBuilder().test('webhook_id', '=', id).build();
    for (const d of await this.#db.scan('webhook_deliveries', f)) await this.#db.delete('webhook_deliveries', String(d['pk']), '-');
    for (const l of await this.#db.query('webhook_logs', { pk: ['pk', 'log'], filter: f })) await this.#db.delete('webhook_logs', 'log', String(l['sk']));
  }

  async get(id: string): Promise<Row | undefined> {
    const item = await this.#db.get('webhooks', id, '-');
    return item ? strip(item) : undefined;
  }

  async #all(): Promise<Row[]> {
    const rows = (await this.#db.scan('webhooks')).map(strip);
    return rows.sort((a, b) => Number(a['created_at']) - Number(b['created_at']) || String(a['id']).localeCompare(String(b['id'])));
  }

  async list(limit: number, offset: number): Promise<{ rows: Row[]; total: number }> {
    const all = await this.#all();
    return { rows: all.slice(offset, offset + limit), total: all.length };
  }

  async logs(webhookId: string | undefined, limit: number, offset: number): Promise<{ rows: Row[]; total: number }> {
    const filter = webhookId ? new FilterBuilder().test('webhook_id', '=', webhookId).build() : undefined;
    const all = (await this.#db.query('webhook_logs', { pk: ['pk', 'log'], descending: true, filter })).map(strip);
    return { rows: all.slice(offset, offset + limit), total: all.length };
  }

  async enabledFor(event: string): Promise<Row[]> {
    return (await this.#all()).filter((r) => r['event_name'] === event && Number(r['enabled']) === 1);
  }

  async enqueue(d: DeliveryRow): Promise<void> {
    await this.#db.put('webhook_deliveries', {
      pk: d.id,
      sk: '-',
      ...d,
      status: 'pending',
      attempts: 0,
      next_attempt_at: d.created_at,
      lease_until: 0,
      last_http_status: 0,
      updated_at: d.created_at,
      due_pk: 'due',
      due_at: d.created_at,
    });
  }

  async stats(): Promise<Record<string, number>> {
    const out: Record<string, number> = {};
    for (const d of await this.#db.scan('webhook_deliveries')) out[String(d['status'])] = (out[String(d['status'])] ?? 0) + 1;
    return out;
  }

  async due(now: number, limit: number): Promise<string[]> {
    const items = await this.#db.query('webhook_deliveries', { index: 'due', pk: ['due_pk', 'due'], sk: ['due_at', '<=', now], limit });
    return items.map((i) => String(i['pk']));
  }

  async claim(id: string, now: number, leaseUntil: number): Promise<Row | undefined> {
    const item = await this.#db.update(
      'webhook_deliveries',
      id,
      '-',
      { set: { status: 'delivering', lease_until: leaseUntil, updated_at: now, due_at: leaseUntil }, add: { attempts: 1 } },
      {
        expression: 'attribute_exists(pk) AND ((#s = :pending AND #n <= :now) OR (#s = :delivering AND #l < :now))',
        names: { '#s': 'status', '#n': 'next_attempt_at', '#l': 'lease_until' },
        values: { ':pending': 'pending', ':delivering': 'delivering', ':now': now },
      },
    );
    return item ? strip(item) : undefined;
  }

  async finish(id: string, o: DeliveryOutcome): Promise<void> {
    // Only the attempt that holds the delivery records its end (a taken-over attempt changes nothing).
    const held = {
      expression: 'attribute_exists(pk) AND #s = :delivering AND #a = :attempt',
      names: { '#s': 'status', '#a': 'attempts' },
      values: { ':delivering': 'delivering', ':attempt': o.attempt },
    };
    if (o.status === 'pending') {
      const next = o.next_attempt_at ?? o.updated_at;
      await this.#db.update('webhook_deliveries', id, '-', { set: { status: 'pending', next_attempt_at: next, lease_until: 0, last_http_status: o.last_http_status, updated_at: o.updated_at, due_at: next } }, held);
      return;
    }
    const set: Row = { status: o.status, updated_at: o.updated_at };
    if (o.status !== 'cancelled') set['last_http_status'] = o.last_http_status;
    await this.#db.update('webhook_deliveries', id, '-', { set, remove: ['due_pk', 'due_at'] }, held);
  }

  async insertLog(row: Row): Promise<void> {
    const sk = `${pad13(Number(row['created_at']))}#${pad13(Number(row['attempt']))}#${String(row['id'])}`;
    await this.#db.put('webhook_logs', { pk: 'log', sk, ...row });
  }
}

/** The sort key of a template: its event, with `#language` for a template of one language (the key of a template for every language is the event alone, as before languages). */
const templateKey = (event: string, language: string): string => (language === '' ? event : `${event}#${language}`);

/**
 * Email templates on DynamoDB, keyed by their event and language, so that
 * "one template per event and language" is the key itself: a put
 * conditional on the key being free. There are a few per mail event (one
 * per language), so reads by id scan them.
 */
export class DynamoEmailTemplateStore implements EmailTemplateStore {
  readonly #db: DynamoDatabase;

  constructor(db: DynamoDatabase) {
    this.#db = db;
  }

  /** Creates the table when missing. */
  init(): Promise<void> {
    return this.#db.ensureTable({ name: 'email_templates' });
  }

  async #all(): Promise<Row[]> {
    return (await this.#db.query('email_templates', { pk: ['pk', 'event'] })).map(strip);
  }

  async byId(id: string): Promise<Row | undefined> {
    return (await this.#all()).find((r) => r['id'] === id);
  }

  async byEvent(event: string, language: string): Promise<Row | undefined> {
    const item = await this.#db.get('email_templates', 'event', templateKey(event, language));
    return item ? strip(item) : undefined;
  }

  insert(row: Row): Promise<boolean> {
    return this.#db.put('email_templates', { pk: 'event', sk: templateKey(String(row['event_name']), String(row['language'] ?? '')), ...row }, { expression: 'attribute_not_exists(pk)' });
  }

  async update(row: Row, previous: { event: string; language: string }): Promise<boolean> {
    const event = templateKey(String(row['event_name']), String(row['language'] ?? ''));
    const previousEvent = templateKey(previous.event, previous.language);
    if (event === previousEvent) {
      return (await this.#db.update('email_templates', 'event', event, { set: row }, { expression: '#i = :id', names: { '#i': 'id' }, values: { ':id': row['id'] } })) !== undefined;
    }
    // Moving to another event or language: the conditional put on the new key decides; then the old key goes.
    const old = await this.#db.get('email_templates', 'event', previousEvent);
    if (!old || old['id'] !== row['id']) return true;
    if (!(await this.#db.put('email_templates', { ...old, ...row, pk: 'event', sk: event }, { expression: 'attribute_not_exists(pk)' }))) return false;
    await this.#db.delete('email_templates', 'event', previousEvent, { expression: '#i = :id', names: { '#i': 'id' }, values: { ':id': row['id'] } });
    return true;
  }

  async delete(row: Row): Promise<void> {
    await this.#db.delete('email_templates', 'event', templateKey(String(row['event_name']), String(row['language'] ?? '')), { expression: '#i = :id', names: { '#i': 'id' }, values: { ':id': row['id'] } });
  }

  async list(limit: number, offset: number): Promise<{ rows: Row[]; total: number }> {
    const all = (await this.#all()).sort((a, b) => Number(a['created_at']) - Number(b['created_at']) || String(a['id']).localeCompare(String(b['id'])));
    return { rows: all.slice(offset, offset + limit), total: all.length };
  }
}

/**
 * The mail outbox on DynamoDB (the mail queue's outbox store). As for webhook
 * deliveries, a mail still to send is in the sparse `due` index and each
 * claim is a conditional update on the mail itself, so one attempt goes to
 * one sender across processes. A sent mail is deleted; a mail given up keeps
 * its item without the body. Text messages share the table, in a `due`
 * partition of their own (`due_sms`).
 */
export class DynamoMailOutbox {
  readonly #db: DynamoDatabase;
  readonly #due: string;
  readonly #channel: OutboxChannel;

  constructor(db: DynamoDatabase, channel: OutboxChannel = 'mail') {
    this.#db = db;
    this.#channel = channel;
    this.#due = channel === 'mail' ? 'due' : `due_${channel}`;
  }

  /** Creates the table when missing. */
  init(): Promise<void> {
    return this.#db.ensureTable({ name: 'mail_outbox', indexes: [{ name: 'due', pk: 'due_pk', sk: 'due_at', sortNumeric: true }] });
  }

  /** Stores a mail. A transaction needs nothing here: the put is the write, and the queue polls after the caller's commit. */
  async add(id: string, message: OutboxMessage, now: number): Promise<void> {
    await this.#put(id, message, now, 0);
  }

  /** Stores a message already claimed by the caller for `leaseMs`. */
  async addClaimed(id: string, message: OutboxMessage, now: number, leaseMs: number): Promise<void> {
    await this.#put(id, message, now, now + leaseMs);
  }

  async #put(id: string, message: OutboxMessage, now: number, leaseUntil: number): Promise<void> {
    await this.#db.put('mail_outbox', {
      pk: id,
      sk: '-',
      channel: this.#channel,
      recipient: message.to,
      subject: message.subject,
      html: message.html,
      text_body: message.text ?? '',
      status: leaseUntil > 0 ? 'sending' : 'pending',
      attempts: 0,
      next_attempt_at: now,
      lease_until: leaseUntil,
      created_at: now,
      updated_at: now,
      due_pk: this.#due,
      due_at: leaseUntil > 0 ? leaseUntil : now,
    });
  }

  async claim(now: number, limit: number, leaseMs: number): Promise<Array<{ id: string; message: OutboxMessage; attempts: number; createdAt: number }>> {
    const due = await this.#db.query('mail_outbox', { index: 'due', pk: ['due_pk', this.#due], sk: ['due_at', '<=', now], limit });
    const out: Array<{ id: string; message: OutboxMessage; attempts: number; createdAt: number }> = [];
    for (const d of due) {
      const id = String(d['pk']);
      const item = await this.#db.update(
        'mail_outbox',
        id,
        '-',
        { set: { status: 'sending', lease_until: now + leaseMs, updated_at: now, due_at: now + leaseMs } },
        {
          expression: 'attribute_exists(pk) AND ((#s = :pending AND #n <= :now) OR (#s = :sending AND #l < :now))',
          names: { '#s': 'status', '#n': 'next_attempt_at', '#l': 'lease_until' },
          values: { ':pending': 'pending', ':sending': 'sending', ':now': now },
        },
      );
      if (!item) continue;
      const text = String(item['text_body'] ?? '');
      out.push({
        id,
        attempts: Number(item['attempts']),
        createdAt: Number(item['created_at']),
        message: { to: String(item['recipient']), subject: String(item['subject']), html: String(item['html']), ...(text ? { text } : {}) },
      });
    }
    return out;
  }

  async sent(id: string): Promise<void> {
    await this.#db.delete('mail_outbox', id, '-');
  }

  async retry(id: string, attempts: number, nextAttemptAt: number): Promise<void> {
    await this.#db.update(
      'mail_outbox',
      id,
      '-',
      { set: { status: 'pending', attempts, next_attempt_at: nextAttemptAt, lease_until: 0, updated_at: nextAttemptAt, due_at: nextAttemptAt } },
      { expression: 'attribute_exists(pk)' },
    );
  }

  async failed(id: string, attempts: number): Promise<void> {
    await this.#db.update('mail_outbox', id, '-', { set: { status: 'failed', attempts, html: '', text_body: '' }, remove: ['due_pk', 'due_at'] }, { expression: 'attribute_exists(pk)' });
  }

  async pending(): Promise<number> {
    return (await this.#db.query('mail_outbox', { index: 'due', pk: ['due_pk', this.#due] })).length;
  }
}
