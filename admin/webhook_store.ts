/**
 * The contract between the webhook service (admin/webhooks.ts) and where
 * its rows live: the SQL tables (admin/webhook_store_sql.ts) or DynamoDB
 * (admin/dynamo_admin_stores.ts).
 */
import type { StoreTransaction } from '../auth/index.ts';
import type { Row } from './sql.ts';

/** A delivery's columns as queued by `emit` (times unix ms). */
export interface DeliveryRow {
  id: string;
  webhook_id: string;
  event_name: string;
  payload: string;
  created_at: number;
}

/** How an attempt ended: `delivered`, `failed` for good, or `pending` again at `next_attempt_at`. */
export interface DeliveryOutcome {
  status: 'delivered' | 'failed' | 'pending' | 'cancelled';
  last_http_status: number;
  next_attempt_at?: number | undefined;
  updated_at: number;
  /**
   * The attempt this outcome ends (the claimed row's `attempts`): the outcome
   * is recorded only while the delivery is still `delivering` at that
   * attempt. An attempt that outlived its lease, and was taken over by
   * another worker, then changes nothing.
   */
  attempt: number;
}

/**
 * Where webhooks, their delivery outbox and their logs live. Rows use the
 * column names of the SQL tables (times unix ms, `enabled` 0/1, `headers`
 * JSON text). Implementers must make {@link claim} atomic: of any number of
 * concurrent claims of one due delivery, across processes, exactly one wins.
 */
export interface WebhookStore {
  insert(row: Row): Promise<void>;
  update(id: string, fields: Row): Promise<void>;
  /** Removes the webhook, its pending deliveries and its logs. */
  deleteWithDeliveries(id: string): Promise<void>;
  get(id: string): Promise<Row | undefined>;
  /** Webhooks oldest first (`created_at`, then `id`), a page and the total. */
  list(limit: number, offset: number): Promise<{ rows: Row[]; total: number }>;
  /** Logs newest first (`created_at`, `attempt`, `id` descending), optionally of one webhook. */
  logs(webhookId: string | undefined, limit: number, offset: number): Promise<{ rows: Row[]; total: number }>;
  /** The enabled webhooks of an event (read inside `tx` when given). */
  enabledFor(event: string, tx?: StoreTransaction): Promise<Row[]>;
  /** Queues a pending delivery due at `created_at` (inside `tx` when given). */
  enqueue(delivery: DeliveryRow, tx?: StoreTransaction): Promise<void>;
  /** Counts of deliveries by status. */
  stats(): Promise<Record<string, number>>;
  /** Up to `limit` ids of deliveries due at `now`: pending and due, or delivering with an expired lease. */
  due(now: number, limit: number): Promise<string[]>;
  /** Claims a due delivery until `leaseUntil` (one more attempt); the claimed row, or undefined when it was not due (someone else has it). */
  claim(id: string, now: number, leaseUntil: number): Promise<Row | undefined>;
  /** Records the end of an attempt (ignored when the attempt no longer holds the delivery: see {@link DeliveryOutcome.attempt}). */
  finish(id: string, outcome: DeliveryOutcome): Promise<void>;
  insertLog(row: Row): Promise<void>;
}
