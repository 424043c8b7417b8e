/**
 * Webhooks: the registry (one or more endpoints per event), the persisted
 * delivery outbox with retries and backoff, and the per-attempt delivery log.
 *
 * Delivery guarantees:
 * - `emit` writes one outbox row per enabled webhook of the event (in the
 *   caller's transaction when one is given) and returns at once; it never
 *   waits for a receiver.
 * - A worker claims due rows with a conditional UPDATE (a lease), so two
 *   workers or two processes never send the same attempt, and a row whose
 *   worker died is taken over once its lease expires. A restart therefore
 *   loses nothing.
 * - Only a 2xx answer counts as delivered; anything else (3xx included,
 *   redirects are never followed), a timeout or a refused address is retried
 *   on the backoff schedule until it runs out (`failed`).
 * - Every attempt of a delivery carries the same `webhook-id`, so a receiver
 *   that dedupes on it sees each event exactly once even in the one window
 *   where at-least-once delivery can repeat (a crash after the receiver
 *   answered but before the row was marked delivered).
 *
 * The rows live behind {@link WebhookStore} (admin/webhook_store.ts): the
 * SQL tables (admin/webhook_store_sql.ts) or DynamoDB.
 */
import { randomUUID } from 'node:crypto';
import type { SqlDatabase } from '../engine/sql/sql_database.ts';
import type { StoreTransaction } from '../auth/index.ts';
import { LatchkeyError } from '../engine/errors.ts';
import { normalizePagination, type Pagination, type PaginationInput } from './pagination.ts';
import { num, str, type Row } from './sql.ts';
import type { WebhookStore } from './webhook_store.ts';
import { SqlWebhookStore } from './webhook_store_sql.ts';
import { validateEndpoint, type SsrfPolicy } from './ssrf.ts';
import { postPinned } from './http_post.ts';
import { signWebhook } from './webhook_signature.ts';

/** Events a webhook can subscribe to. */
export const WEBHOOK_EVENTS = [
  'user.signup',
  'user.login',
  'user.created',
  'user.deleted',
  'user.deactivated',
  'user.access_revoked',
  'user.access_enabled',
  'organization.created',
  'member.added',
  'member.removed',
  'member.role_changed',
  'invitation.accepted',
  'sso_connection.changed',
  'user.passkey_registered',
  'user.passkey_revoked',
] as const;
export type WebhookEvent = (typeof WEBHOOK_EVENTS)[number];

/** A registered webhook. Times are unix seconds. */
export interface Webhook {
  id: string;
  event_name: string;
  event_description: string;
  endpoint: string;
  headers: Record<string, string>;
  enabled: boolean;
  created_at: number;
  updated_at: number;
}

/** One delivery attempt. Times are unix seconds. */
export interface WebhookLog {
  id: string;
  webhook_id: string;
  /** The delivery (= `webhook-id` header) this attempt belongs to. */
  delivery_id: string;
  event_name: string;
  attempt: number;
  /** HTTP status, 0 when no response arrived or the address was refused. */
  http_status: number;
  duration_ms: number;
  /** `delivered`, `failed` (non-2xx, timeout, network error) or `refused` (SSRF guard). */
  outcome: 'delivered' | 'failed' | 'refused';
  error: string;
  /** The request body that was sent. */
  request: string;
  /** The response text, capped. */
  response: string;
  created_at: number;
  updated_at: number;
}

export interface AddWebhookInput {
  event_name: string;
  event_description?: string | undefined;
  endpoint: string;
  enabled?: boolean | undefined;
  headers?: Record<string, string> | undefined;
}

export interface UpdateWebhookInput {
  id: string;
  event_name?: string | undefined;
  event_description?: string | undefined;
  endpoint?: string | undefined;
  enabled?: boolean | undefined;
  headers?: Record<string, string> | undefined;
}

export interface TestEndpointInput {
  event_name: string;
  endpoint: string;
  headers?: Record<string, string> | undefined;
}

export interface WebhookServiceOptions {
  /** The SQL connection (the store is then {@link SqlWebhookStore}); ignored when `store` is given. */
  sequelize?: SqlDatabase | undefined;
  /** Where webhooks, deliveries and logs live (e.g. the DynamoDB store). */
  store?: WebhookStore | undefined;
  /** HMAC key of the delivery signatures (the composition root passes the client secret). */
  signingSecret: string;
  ssrf: SsrfPolicy;
  /** Current time in unix milliseconds (default `Date.now`). */
  clock?: () => number;
  /**
   * Delays in ms before each retry; its length is the number of retries.
   * Default after Svix: 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h.
   */
  retrySchedule?: readonly number[];
  /** Random spread applied to each delay, as a fraction (default 0.1). */
  jitter?: number;
  /** Deadline of one attempt, headers and body together (default 15 s). */
  timeoutMs?: number;
  /** Response bytes read at most (default 1 MiB). */
  maxResponseBytes?: number;
  /** Characters of the response kept in the log (default 4096). */
  logResponseChars?: number;
  /** How long a claimed delivery stays claimed (default: timeout + 30 s). */
  leaseMs?: number;
  /** Outbox poll period of the background worker (default 1 s). */
  pollIntervalMs?: number;
  /** Deliveries sent in parallel per pass (default 4). */
  concurrency?: number;
  /** Called with errors of the background worker (default: ignored). */
  onError?: (err: unknown) => void;
}

const DEFAULT_SCHEDULE = [5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000];
const FORBIDDEN_HEADERS = new Set([
  'host',
  'content-length',
  'content-type',
  'connection',
  'transfer-encoding',
  'webhook-id',
  'webhook-timestamp',
  'webhook-signature',
]);

function invalid(message: string, reason: string): LatchkeyError {
  return new LatchkeyError('invalid_argument', message, { reason });
}

function checkEvent(name: string): WebhookEvent {
  if (!(WEBHOOK_EVENTS as readonly string[]).includes(name)) {
    throw invalid(`unknown event name; expected one of ${WEBHOOK_EVENTS.join(', ')}`, 'invalid_event_name');
  }
  return name as WebhookEvent;
}

function checkHeaders(headers: Record<string, string> | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  if (headers === undefined || headers === null) return out;
  if (typeof headers !== 'object' || Array.isArray(headers)) throw invalid('headers must be a map', 'invalid_headers');
  for (const [k, v] of Object.entries(headers)) {
    if (!/^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,128}$/.test(k) || FORBIDDEN_HEADERS.has(k.toLowerCase())) {
      throw invalid(`header ${JSON.stringify(k)} is not allowed`, 'invalid_headers');
    }
    const value = String(v);
    if (/[\r\n\0]/.test(value) || value.length > 4096) throw invalid(`header ${k} has an invalid value`, 'invalid_headers');
    out[k] = value;
  }
  return out;
}

function toWebhook(r: Row): Webhook {
  return {
    id: str(r['id']),
    event_name: str(r['event_name']),
    event_description: str(r['event_description']),
    endpoint: str(r['endpoint']),
    headers: JSON.parse(str(r['headers']) || '{}') as Record<string, string>,
    enabled: num(r['enabled']) === 1,
    created_at: Math.floor(num(r['created_at']) / 1000),
    updated_at: Math.floor(num(r['updated_at']) / 1000),
  };
}

function toLog(r: Row): WebhookLog {
  return {
    id: str(r['id']),
    webhook_id: str(r['webhook_id']),
    delivery_id: str(r['delivery_id']),
    event_name: str(r['event_name']),
    attempt: num(r['attempt']),
    http_status: num(r['http_status']),
    duration_ms: num(r['duration_ms']),
    outcome: str(r['outcome']) as WebhookLog['outcome'],
    error: str(r['error']),
    request: str(r['request']),
    response: str(r['response']),
    created_at: Math.floor(num(r['created_at']) / 1000),
    updated_at: Math.floor(num(r['updated_at']) / 1000),
  };
}

/** The sample user sent by `test_endpoint`. */
const SAMPLE_USER = {
  id: '00000000-0000-4000-8000-000000000000',
  email: 'test_endpoint@example.com',
  email_verified: true,
  given_name: 'Test',
  family_name: 'Endpoint',
  roles: ['user'],
  signup_methods: 'basic_auth',
};

/** Webhook registry, outbox and delivery worker. */
export class WebhookService {
  readonly #db: WebhookStore;
  readonly #secret: string;
  readonly #ssrf: SsrfPolicy;
  readonly #clock: () => number;
  readonly #schedule: readonly number[];
  readonly #jitter: number;
  readonly #timeoutMs: number;
  readonly #maxResponseBytes: number;
  readonly #logChars: number;
  readonly #leaseMs: number;
  readonly #pollMs: number;
  readonly #concurrency: number;
  readonly #onError: (err: unknown) => void;
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<number> | undefined;
  #again = false;
  #stopped = true;

  constructor(options: WebhookServiceOptions) {
    if (!options.signingSecret) throw new Error('webhook signing secret must not be empty');
    this.#db = options.store ?? new SqlWebhookStore(options.sequelize as SqlDatabase);
    this.#secret = options.signingSecret;
    this.#ssrf = options.ssrf;
    this.#clock = options.clock ?? Date.now;
    this.#schedule = options.retrySchedule ?? DEFAULT_SCHEDULE;
    this.#jitter = options.jitter ?? 0.1;
    this.#timeoutMs = options.timeoutMs ?? 15_000;
    this.#maxResponseBytes = options.maxResponseBytes ?? 1024 * 1024;
    this.#logChars = options.logResponseChars ?? 4096;
    this.#leaseMs = options.leaseMs ?? this.#timeoutMs + 30_000;
    this.#pollMs = options.pollIntervalMs ?? 1000;
    this.#concurrency = options.concurrency ?? 4;
    this.#onError = options.onError ?? (() => {});
  }

  // ----------------------------------------------------------------- registry

  /**
   * Registers a webhook. Throws `invalid_argument` with reason
   * `invalid_event_name`, `invalid_headers` or `invalid_endpoint` (the SSRF
   * guard; no connection is made).
   */
  async add(input: AddWebhookInput): Promise<Webhook> {
    const event = checkEvent(input.event_name);
    const headers = checkHeaders(input.headers);
    await validateEndpoint(input.endpoint, this.#ssrf);
    const now = this.#clock();
    const id = randomUUID();
    const description = input.event_description?.trim() || event.replaceAll('.', ' ');
    await this.#db.insert({
      id,
      event_name: event,
      event_description: description.slice(0, 256),
      endpoint: input.endpoint,
      headers: JSON.stringify(headers),
      enabled: input.enabled === false ? 0 : 1,
      created_at: now,
      updated_at: now,
    });
    return this.get(id);
  }

  /** Changes the given fields of a webhook. Throws `not_found` and the errors of {@link add}. */
  async update(input: UpdateWebhookInput): Promise<Webhook> {
    const current = await this.get(input.id);
    const event = input.event_name === undefined ? current.event_name : checkEvent(input.event_name);
    const headers = input.headers === undefined ? current.headers : checkHeaders(input.headers);
    const endpoint = input.endpoint ?? current.endpoint;
    if (input.endpoint !== undefined) await validateEndpoint(endpoint, this.#ssrf);
    const description = input.event_description?.trim() || (input.event_name !== undefined ? event.replaceAll('.', ' ') : current.event_description);
    const enabled = input.enabled ?? current.enabled;
    await this.#db.update(input.id, {
      event_name: event,
      event_description: description.slice(0, 256),
      endpoint,
      headers: JSON.stringify(headers),
      enabled: enabled ? 1 : 0,
      updated_at: this.#clock(),
    });
    return this.get(input.id);
  }

  /** Deletes a webhook with its pending deliveries and its logs. Throws `not_found`. */
  async delete(id: string): Promise<Webhook> {
    const current = await this.get(id);
    await this.#db.deleteWithDeliveries(id);
    return current;
  }

  /** One webhook by id. Throws `not_found` (reason `webhook_not_found`). */
  async get(id: string): Promise<Webhook> {
    const row = await this.#db.get(String(id));
    if (!row) throw new LatchkeyError('not_found', 'webhook not found', { reason: 'webhook_not_found' });
    return toWebhook(row);
  }

  /** Webhooks, oldest first. Throws `invalid_argument` for bad pagination. */
  async list(pagination?: PaginationInput | null): Promise<{ webhooks: Webhook[]; pagination: Pagination }> {
    const p = normalizePagination(pagination);
    const { rows, total } = await this.#db.list(p.limit, p.offset);
    return { webhooks: rows.map(toWebhook), pagination: { ...p, total } };
  }

  /** Delivery attempts, newest first, optionally of one webhook. */
  async logs(input: { pagination?: PaginationInput | null | undefined; webhook_id?: string | undefined } = {}): Promise<{
    webhook_logs: WebhookLog[];
    pagination: Pagination;
  }> {
    const p = normalizePagination(input.pagination);
    const { rows, total } = await this.#db.logs(input.webhook_id || undefined, p.limit, p.offset);
    return { webhook_logs: rows.map(toLog), pagination: { ...p, total } };
  }

  // ----------------------------------------------------------------- emission

  /**
   * Queues `event` for every enabled webhook registered for it and returns how
   * many deliveries were queued. `data` is merged into the payload (e.g.
   * `{user}`); it must not contain secrets. Pass the transaction of the change
   * that caused the event so both commit or neither does.
   */
  async emit(event: WebhookEvent, data: Record<string, unknown>, transaction?: StoreTransaction): Promise<number> {
    checkEvent(event);
    const hooks = await this.#db.enabledFor(event, transaction);
    const now = this.#clock();
    for (const row of hooks) {
      const hook = toWebhook(row);
      const id = randomUUID();
      const payload = JSON.stringify({
        ...data,
        id,
        webhook_id: hook.id,
        event_name: event,
        event_description: hook.event_description,
        created_at: Math.floor(now / 1000),
      });
      await this.#db.enqueue({ id, webhook_id: hook.id, event_name: event, payload, created_at: now }, transaction);
    }
    // Inside a transaction the rows are seen once it commits: the worker is woken then.
    if (hooks.length > 0) {
      if (transaction === undefined) this.#kick();
      else transaction.afterCommit(() => this.#kick());
    }
    return hooks.length;
  }

  /** Counts of outbox rows by status (for health and tests). */
  async outboxStats(): Promise<Record<string, number>> {
    return this.#db.stats();
  }

  // ----------------------------------------------------------------- delivery

  /** Starts the background worker (idempotent). */
  start(): void {
    if (!this.#stopped) return;
    this.#stopped = false;
    this.#timer = setInterval(() => this.#kick(), this.#pollMs);
    this.#timer.unref();
    this.#kick();
  }

  /** Stops the worker and waits for the attempts in flight to finish. */
  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = undefined;
    await this.#idle();
  }

  /**
   * Sends everything due now and waits until the background pass in flight
   * (if any) has finished too (graceful shutdown, tests).
   */
  async flush(): Promise<void> {
    await this.#idle();
    await this.runOnce();
    await this.#idle();
  }

  async #idle(): Promise<void> {
    for (let p = this.#running; p; p = this.#running) await p.catch(() => 0);
  }

  #kick(): void {
    if (this.#stopped) return;
    if (this.#running) {
      this.#again = true;
      return;
    }
    this.#running = this.runOnce()
      .catch((err: unknown) => {
        this.#onError(err);
        return 0;
      })
      .finally(() => {
        this.#running = undefined;
        if (this.#again && !this.#stopped) {
          this.#again = false;
          this.#kick();
        }
      });
  }

  /**
   * Sends every delivery that is due now (claimed under a lease) and returns
   * how many attempts were made. The worker calls this; tests call it
   * directly with an injected clock.
   */
  async runOnce(): Promise<number> {
    let made = 0;
    for (;;) {
      const now = this.#clock();
      const due = await this.#db.due(now, this.#concurrency);
      if (due.length === 0) return made;
      const results = await Promise.all(due.map((id) => this.#attempt(id)));
      const n = results.filter(Boolean).length;
      made += n;
      if (n === 0) return made;
    }
  }

  async #attempt(id: string): Promise<boolean> {
    const now = this.#clock();
    const row = await this.#db.claim(id, now, now + this.#leaseMs);
    if (!row) return false;
    const webhookId = str(row['webhook_id']);
    const attempt = num(row['attempts']);
    const body = str(row['payload']);
    const hookRow = await this.#db.get(webhookId);
    if (!hookRow || num(hookRow['enabled']) !== 1) {
      await this.#db.finish(id, { status: 'cancelled', last_http_status: num(row['last_http_status']), updated_at: this.#clock(), attempt });
      return true;
    }
    const hook = toWebhook(hookRow);
    let outcome: WebhookLog['outcome'];
    let status = 0;
    let response = '';
    let error = '';
    let durationMs = 0;
    try {
      // Checked again on every attempt: DNS may have changed since registration.
      const target = await validateEndpoint(hook.endpoint, this.#ssrf);
      const timestamp = Math.floor(this.#clock() / 1000);
      const result = await postPinned(target, body, {
        timeoutMs: this.#timeoutMs,
        maxResponseBytes: this.#maxResponseBytes,
        headers: { 'user-agent': 'latchkey-webhooks/1', ...hook.headers, ...signWebhook(this.#secret, id, timestamp, body) },
      });
      status = result.status;
      response = result.body;
      error = result.error || (result.truncated ? 'response_truncated' : '');
      durationMs = result.durationMs;
      outcome = result.error === '' && status >= 200 && status < 300 ? 'delivered' : 'failed';
      if (outcome === 'failed' && error === '') error = status >= 300 && status < 400 ? 'redirect_not_followed' : 'non_2xx_status';
    } catch (err) {
      outcome = 'refused';
      error = err instanceof LatchkeyError ? (err.reason ?? err.code) : 'endpoint_check_failed';
    }
    const done = this.#clock();
    await this.#db.insertLog({
      id: randomUUID(),
      webhook_id: webhookId,
      delivery_id: id,
      event_name: str(row['event_name']),
      attempt,
      http_status: status,
      duration_ms: durationMs,
      outcome,
      error: error.slice(0, 256),
      request: body,
      response: response.slice(0, this.#logChars),
      created_at: done,
      updated_at: done,
    });
    if (outcome === 'delivered') {
      await this.#db.finish(id, { status: 'delivered', last_http_status: status, updated_at: done, attempt });
    } else {
      const delay = this.#schedule[attempt - 1];
      if (delay === undefined) {
        await this.#db.finish(id, { status: 'failed', last_http_status: status, updated_at: done, attempt });
      } else {
        const spread = delay * this.#jitter * (Math.random() * 2 - 1);
        await this.#db.finish(id, { status: 'pending', next_attempt_at: Math.round(done + delay + spread), last_http_status: status, updated_at: done, attempt });
      }
    }
    return true;
  }

  /**
   * Posts a signed sample `event_name` event to `endpoint` now (no outbox, no
   * retry) and returns the receiver's answer. Throws `invalid_argument` for an
   * unknown event, bad headers or a refused endpoint (reason
   * `invalid_endpoint`, no connection made); `unavailable` (reason
   * `endpoint_unreachable`) when no response arrives.
   */
  async testEndpoint(input: TestEndpointInput): Promise<{ http_status: number; response: string }> {
    const event = checkEvent(input.event_name);
    const headers = checkHeaders(input.headers);
    const target = await validateEndpoint(input.endpoint, this.#ssrf);
    const id = randomUUID();
    const now = this.#clock();
    const body = JSON.stringify({
      id,
      webhook_id: '',
      event_name: event,
      event_description: event.replaceAll('.', ' '),
      created_at: Math.floor(now / 1000),
      user: SAMPLE_USER,
      test: true,
    });
    const result = await postPinned(target, body, {
      timeoutMs: this.#timeoutMs,
      maxResponseBytes: this.#maxResponseBytes,
      headers: { 'user-agent': 'latchkey-webhooks/1', ...headers, ...signWebhook(this.#secret, id, Math.floor(now / 1000), body) },
    });
    if (result.status === 0) {
      throw new LatchkeyError('unavailable', 'endpoint did not answer', {
        reason: 'endpoint_unreachable',
        details: { error: result.error },
      });
    }
    return { http_status: result.status, response: result.body.slice(0, this.#logChars) };
  }
}
