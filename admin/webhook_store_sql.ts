/**
 * The webhook store on the main SQL database (SQLite, PostgreSQL,
 * MySQL/MariaDB): the `webhooks` registry, the `webhook_deliveries` outbox
 * and the `webhook_logs` attempts (tables of admin/migrations.ts). A
 * delivery is claimed by a conditional UPDATE, so of concurrent claims
 * exactly one changes the row.
 */
import type { Transaction } from 'sequelize';
import type { SqlDatabase } from '../engine/sql/sql_database.ts';
import type { StoreTransaction } from '../auth/index.ts';
import { countOf, exec, num, select, str, update, type Row } from './sql.ts';
import type { DeliveryOutcome, DeliveryRow, WebhookStore } from './webhook_store.ts';

/** Webhooks in the `webhooks`, `webhook_deliveries` and `webhook_logs` tables. */
export class SqlWebhookStore implements WebhookStore {
  readonly #db: SqlDatabase;

  constructor(sequelize: SqlDatabase) {
    this.#db = sequelize;
  }

  async insert(r: Row): Promise<void> {
    await exec(
      this.#db,
      'INSERT INTO webhooks (id, event_name, event_description, endpoint, headers, enabled, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
      [r['id'], r['event_name'], r['event_description'], r['endpoint'], r['headers'], r['enabled'], r['created_at'], r['updated_at']],
    );
  }

  async update(id: string, r: Row): Promise<void> {
    await exec(
      this.#db,
      'UPDATE webhooks SET event_name = ?, event_description = ?, endpoint = ?, headers = ?, enabled = ?, updated_at = ? WHERE id = ?',
      [r['event_name'], r['event_description'], r['endpoint'], r['headers'], r['enabled'], r['updated_at'], id],
    );
  }

  async deleteWithDeliveries(id: string): Promise<void> {
    await this.#db.transaction(async (transaction) => {
      await exec(this.#db, 'DELETE FROM webhook_deliveries WHERE webhook_id = ?', [id], transaction);
      await exec(this.#db, 'DELETE FROM webhook_logs WHERE webhook_id = ?', [id], transaction);
      await exec(this.#db, 'DELETE FROM webhooks WHERE id = ?', [id], transaction);
    });
  }

  async get(id: string): Promise<Row | undefined> {
    return (await select(this.#db, 'SELECT * FROM webhooks WHERE id = ?', [id]))[0];
  }

  async list(limit: number, offset: number): Promise<{ rows: Row[]; total: number }> {
    const total = countOf(await select(this.#db, 'SELECT COUNT(*) AS n FROM webhooks'));
    const rows = await select(this.#db, 'SELECT * FROM webhooks ORDER BY created_at, id LIMIT ? OFFSET ?', [limit, offset]);
    return { rows, total };
  }

  async logs(webhookId: string | undefined, limit: number, offset: number): Promise<{ rows: Row[]; total: number }> {
    const where = webhookId ? 'WHERE webhook_id = ?' : '';
    const args = webhookId ? [webhookId] : [];
    const total = countOf(await select(this.#db, `SELECT COUNT(*) AS n FROM webhook_logs ${where}`, args));
    const rows = await select(this.#db, `SELECT * FROM webhook_logs ${where} ORDER BY created_at DESC, attempt DESC, id DESC LIMIT ? OFFSET ?`, [
      ...args,
      limit,
      offset,
    ]);
    return { rows, total };
  }

  enabledFor(event: string, tx?: StoreTransaction): Promise<Row[]> {
    return select(this.#db, 'SELECT * FROM webhooks WHERE event_name = ? AND enabled = 1', [event], tx as Transaction | undefined);
  }

  async enqueue(d: DeliveryRow, tx?: StoreTransaction): Promise<void> {
    await exec(
      this.#db,
      `INSERT INTO webhook_deliveries (id, webhook_id, event_name, payload, status, attempts, next_attempt_at, lease_until, last_http_status, created_at, updated_at)
       VALUES (?, ?, ?, ?, 'pending', 0, ?, 0, 0, ?, ?)`,
      [d.id, d.webhook_id, d.event_name, d.payload, d.created_at, d.created_at, d.created_at],
      tx as Transaction | undefined,
    );
  }

  async stats(): Promise<Record<string, number>> {
    const rows = await select(this.#db, 'SELECT status, COUNT(*) AS n FROM webhook_deliveries GROUP BY status');
    return Object.fromEntries(rows.map((r) => [str(r['status']), num(r['n'])]));
  }

  async due(now: number, limit: number): Promise<string[]> {
    const rows = await select(
      this.#db,
      `SELECT id FROM webhook_deliveries
       WHERE (status = 'pending' AND next_attempt_at <= ?) OR (status = 'delivering' AND lease_until < ?)
       ORDER BY next_attempt_at, id LIMIT ?`,
      [now, now, limit],
    );
    return rows.map((r) => str(r['id']));
  }

  async claim(id: string, now: number, leaseUntil: number): Promise<Row | undefined> {
    const claimed = await update(
      this.#db,
      `UPDATE webhook_deliveries SET status = 'delivering', lease_until = ?, attempts = attempts + 1, updated_at = ?
       WHERE id = ? AND ((status = 'pending' AND next_attempt_at <= ?) OR (status = 'delivering' AND lease_until < ?))`,
      [leaseUntil, now, id, now, now],
    );
    if (claimed !== 1) return undefined;
    return (await select(this.#db, 'SELECT * FROM webhook_deliveries WHERE id = ?', [id]))[0];
  }

  async finish(id: string, o: DeliveryOutcome): Promise<void> {
    // Only the attempt that holds the delivery records its end (a taken-over attempt changes nothing).
    const held = `WHERE id = ? AND status = 'delivering' AND attempts = ?`;
    if (o.status === 'cancelled') {
      await update(this.#db, `UPDATE webhook_deliveries SET status = 'cancelled', updated_at = ? ${held}`, [o.updated_at, id, o.attempt]);
    } else if (o.status === 'pending') {
      await update(
        this.#db,
        `UPDATE webhook_deliveries SET status = 'pending', next_attempt_at = ?, lease_until = 0, last_http_status = ?, updated_at = ? ${held}`,
        [o.next_attempt_at ?? o.updated_at, o.last_http_status, o.updated_at, id, o.attempt],
      );
    } else {
      await update(this.#db, `UPDATE webhook_deliveries SET status = ?, last_http_status = ?, updated_at = ? ${held}`, [o.status, o.last_http_status, o.updated_at, id, o.attempt]);
    }
  }

  async insertLog(r: Row): Promise<void> {
    await exec(
      this.#db,
      `INSERT INTO webhook_logs (id, webhook_id, delivery_id, event_name, attempt, http_status, duration_ms, outcome, error, request, response, created_at, updated_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      [r['id'], r['webhook_id'], r['delivery_id'], r['event_name'], r['attempt'], r['http_status'], r['duration_ms'], r['outcome'], r['error'], r['request'], r['response'], r['created_at'], r['updated_at']],
    );
  }
}
