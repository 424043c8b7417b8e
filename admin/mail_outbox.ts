/**
 * The persisted mail outbox over SQL: the store behind the identity
 * service's outbox mail queue (`MailOutboxStore` in auth/mail_queue.ts).
 * Mails are claimed with a conditional UPDATE (a lease), so several
 * processes never send one attempt twice and a mail whose sender died is
 * taken over when its lease runs out. A sent mail's row is deleted, so links
 * and codes do not linger; a mail given up keeps its row without the body.
 * Text messages wait in the same table (`channel = 'sms'`: the phone number
 * as recipient, the text as body); each channel has its own store over it.
 */
import type { Transaction } from 'sequelize';
import type { SqlDatabase } from '../engine/sql/sql_database.ts';
import { countOf, exec, num, select, str, update } from './sql.ts';

/** A mail as the outbox stores it. */
export interface OutboxMessage {
  to: string;
  subject: string;
  html: string;
  text?: string | undefined;
}

/** Which sender takes an outbox row: the SMTP one or the SMS vendor's. */
export type OutboxChannel = 'mail' | 'sms';

/** SQL implementation of the mail queue's outbox store, for one channel. */
export class SqlMailOutbox {
  readonly #db: SqlDatabase;
  readonly #channel: OutboxChannel;

  constructor(sequelize: SqlDatabase, channel: OutboxChannel = 'mail') {
    this.#db = sequelize;
    this.#channel = channel;
  }

  /** Stores a mail; inside `transaction` (a sequelize transaction on this connection) when one is given. */
  async add(id: string, message: OutboxMessage, now: number, transaction?: unknown): Promise<void> {
    await this.#insert(id, message, now, 0, transaction as Transaction | undefined);
  }

  /** Stores a message already claimed by the caller for `leaseMs` (it sends it at once; another process takes it over if the lease runs out). */
  async addClaimed(id: string, message: OutboxMessage, now: number, leaseMs: number): Promise<void> {
    await this.#insert(id, message, now, now + leaseMs);
  }

  async #insert(id: string, message: OutboxMessage, now: number, leaseUntil: number, transaction?: Transaction): Promise<void> {
    await exec(
      this.#db,
      `INSERT INTO mail_outbox (id, channel, recipient, subject, html, text_body, status, attempts, next_attempt_at, lease_until, created_at, updated_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, 0, ?, ?, ?, ?)`,
      [id, this.#channel, message.to, message.subject, message.html, message.text ?? '', leaseUntil > 0 ? 'sending' : 'pending', now, leaseUntil, now, now],
      transaction,
    );
  }

  async claim(now: number, limit: number, leaseMs: number): Promise<Array<{ id: string; message: OutboxMessage; attempts: number; createdAt: number }>> {
    const rows = await select(
      this.#db,
      `SELECT id FROM mail_outbox WHERE channel = ? AND ((status = 'pending' AND next_attempt_at <= ?) OR (status = 'sending' AND lease_until < ?))
       ORDER BY next_attempt_at, id LIMIT ?`,
      [this.#channel, now, now, limit],
    );
    const out: Array<{ id: string; message: OutboxMessage; attempts: number; createdAt: number }> = [];
    for (const r of rows) {
      const id = str(r['id']);
      const n = await update(
        this.#db,
        `UPDATE mail_outbox SET status = 'sending', lease_until = ?, updated_at = ?
         WHERE id = ? AND ((status = 'pending' AND next_attempt_at <= ?) OR (status = 'sending' AND lease_until < ?))`,
        [now + leaseMs, now, id, now, now],
      );
      if (n !== 1) continue;
      const row = (await select(this.#db, 'SELECT * FROM mail_outbox WHERE id = ?', [id]))[0];
      if (!row) continue;
      const text = str(row['text_body']);
      out.push({
        id,
        attempts: num(row['attempts']),
        createdAt: num(row['created_at']),
        message: { to: str(row['recipient']), subject: str(row['subject']), html: str(row['html']), ...(text ? { text } : {}) },
      });
    }
    return out;
  }

  async sent(id: string): Promise<void> {
    await exec(this.#db, 'DELETE FROM mail_outbox WHERE id = ?', [id]);
  }

  async retry(id: string, attempts: number, nextAttemptAt: number): Promise<void> {
    await update(
      this.#db,
      `UPDATE mail_outbox SET status = 'pending', attempts = ?, next_attempt_at = ?, lease_until = 0, updated_at = ? WHERE id = ?`,
      [attempts, nextAttemptAt, nextAttemptAt, id],
    );
  }

  async failed(id: string, attempts: number): Promise<void> {
    await update(this.#db, `UPDATE mail_outbox SET status = 'failed', attempts = ?, html = '', text_body = '' WHERE id = ?`, [attempts, id]);
  }

  async pending(): Promise<number> {
    return countOf(await select(this.#db, "SELECT COUNT(*) AS n FROM mail_outbox WHERE channel = ? AND status IN ('pending', 'sending')", [this.#channel]));
  }
}
