/**
 * The mail queue: requests hand a mail over and go on; a background loop
 * sends it and retries with backoff while the SMTP server is down or
 * refusing, so a mail never blocks or fails the request that caused it
 * (security matrix D5).
 *
 * Each queued mail is sent until the first success and then forgotten, so a
 * mail that got through is never sent again; what the mail carries (a link,
 * a code) is fixed at enqueue time and is not regenerated per retry.
 *
 * {@link MailQueue} lives in memory: a process restart drops mails still
 * waiting. {@link OutboxMailQueue} keeps them in a persisted outbox instead
 * (the composition root uses it whenever a database is available).
 */
import { randomUUID } from 'node:crypto';
import type { Mailer, MailMessage } from './mailer.ts';

export interface MailQueueOptions {
  mailer: Mailer;
  /** Delays in ms before each retry; its length is the number of retries (default 1 s, 5 s, 30 s, 2 min, 10 min, 30 min). */
  retrySchedule?: readonly number[];
  /** Most mails waiting at once; beyond it new mails are dropped and reported (default 10 000). */
  maxQueued?: number;
  /** Mails sent in parallel (default 2). */
  concurrency?: number;
  /** Told about every failed attempt and every dropped mail (default: ignored). */
  onError?: (err: unknown, info: { id: string; attempt: number; final: boolean }) => void;
  /** Told about every mail that went out. */
  onSent?: (info: { id: string; attempts: number }) => void;
  /**
   * Keep mails in this persisted outbox instead of in memory: the queue then
   * works as an {@link OutboxMailQueue} (call `start()` to poll it).
   */
  store?: MailOutboxStore | undefined;
  /** Outbox mode: poll period (default 1 s). */
  pollIntervalMs?: number;
  /** Outbox mode: how long a claimed mail stays claimed (default 2 min). */
  leaseMs?: number;
  /** Outbox mode: unix ms clock (default `Date.now`). */
  clock?: () => number;
}

interface Job {
  id: string;
  message: MailMessage;
  attempts: number;
  timer?: NodeJS.Timeout;
}

const DEFAULT_SCHEDULE = [1_000, 5_000, 30_000, 120_000, 600_000, 1_800_000];

/** A retrying, in-process outbox for mail. */
export class MailQueue {
  readonly #mailer: Mailer;
  readonly #schedule: readonly number[];
  readonly #max: number;
  readonly #concurrency: number;
  readonly #onError: NonNullable<MailQueueOptions['onError']>;
  readonly #onSent: NonNullable<MailQueueOptions['onSent']>;
  readonly #ready: Job[] = [];
  readonly #waiting = new Set<Job>();
  #active = 0;
  #closed = false;
  #idle: Array<() => void> = [];
  readonly #outbox: OutboxMailQueue | undefined;

  constructor(options: MailQueueOptions) {
    this.#outbox = options.store ? new OutboxMailQueue({ ...options, store: options.store }) : undefined;
    this.#mailer = options.mailer;
    this.#schedule = options.retrySchedule ?? DEFAULT_SCHEDULE;
    this.#max = options.maxQueued ?? 10_000;
    this.#concurrency = options.concurrency ?? 2;
    this.#onError = options.onError ?? (() => {});
    this.#onSent = options.onSent ?? (() => {});
  }

  /**
   * Queues a mail and returns its id at once. Never throws and never waits
   * for SMTP: a full or closed queue drops the mail and reports it to
   * `onError`.
   */
  enqueue(message: MailMessage): string {
    if (this.#outbox) return this.#outbox.enqueue(message);
    const id = randomUUID();
    if (this.#closed || this.pending() >= this.#max) {
      this.#onError(new Error(this.#closed ? 'mail queue closed' : 'mail queue full'), { id, attempt: 0, final: true });
      return id;
    }
    this.#ready.push({ id, message, attempts: 0 });
    queueMicrotask(() => this.#pump());
    return id;
  }

  /**
   * Queues a mail as part of the caller's database transaction: in outbox
   * mode its outbox row is written inside `transaction`, so the mail exists
   * exactly when the rest of that transaction commits (sign-up: the user, its
   * verification request and this mail; security matrix E3). In memory mode
   * the mail is queued once the transaction has committed. Throws what the
   * outbox write throws (the transaction then rolls back).
   */
  async enqueueIn(message: MailMessage, transaction: MailTransaction): Promise<string> {
    if (this.#outbox) return this.#outbox.enqueueIn(message, transaction);
    const id = randomUUID();
    transaction.afterCommit(() => {
      if (this.#closed || this.pending() >= this.#max) {
        this.#onError(new Error(this.#closed ? 'mail queue closed' : 'mail queue full'), { id, attempt: 0, final: true });
        return;
      }
      this.#ready.push({ id, message, attempts: 0 });
      queueMicrotask(() => this.#pump());
    });
    return id;
  }

  /** Mails not yet sent (ready, in flight or waiting for a retry). */
  pending(): number {
    return this.#ready.length + this.#waiting.size + this.#active;
  }

  /** Outbox mode: starts polling the outbox (a no-op in memory mode, which sends at once). */
  start(): void {
    this.#outbox?.start();
  }

  /**
   * Outbox mode: claims no more mails from now on (the process is shutting
   * down); the ones being sent finish, the rest wait in the outbox for the
   * next process. `close()` then waits for them.
   */
  stop(): void {
    this.#outbox?.stop();
  }

  /** Mails not yet sent, in either mode (outbox mode: rows waiting in the outbox). */
  async pendingCount(): Promise<number> {
    return this.#outbox ? this.#outbox.pending() : this.pending();
  }

  /** Outbox mode: sends what is due now and returns the attempts made (0 in memory mode). */
  async runOnce(): Promise<number> {
    return this.#outbox ? this.#outbox.runOnce() : 0;
  }

  /** Resolves when nothing is left to send (tests, graceful shutdown). */
  whenIdle(): Promise<void> {
    if (this.pending() === 0) return Promise.resolve();
    return new Promise((resolve) => this.#idle.push(resolve));
  }

  /** Stops retrying, drops waiting mails, and waits for sends in flight. */
  async close(): Promise<void> {
    if (this.#outbox) return this.#outbox.close();
    this.#closed = true;
    for (const job of this.#waiting) clearTimeout(job.timer);
    this.#waiting.clear();
    this.#ready.length = 0;
    await this.whenIdle();
  }

  #pump(): void {
    while (this.#active < this.#concurrency && this.#ready.length > 0) {
      const job = this.#ready.shift()!;
      this.#active++;
      void this.#send(job);
    }
    if (this.pending() === 0) {
      const idle = this.#idle;
      this.#idle = [];
      for (const resolve of idle) resolve();
    }
  }

  async #send(job: Job): Promise<void> {
    job.attempts++;
    try {
      await this.#mailer.send({ ...job.message, id: job.id });
      this.#onSent({ id: job.id, attempts: job.attempts });
    } catch (err) {
      const delay = this.#schedule[job.attempts - 1];
      const final = delay === undefined || this.#closed;
      this.#onError(err, { id: job.id, attempt: job.attempts, final });
      if (!final) {
        this.#waiting.add(job);
        job.timer = setTimeout(() => {
          this.#waiting.delete(job);
          this.#ready.push(job);
          this.#pump();
        }, delay);
        job.timer.unref();
      }
    } finally {
      this.#active--;
      this.#pump();
    }
  }
}

/**
 * The caller's database transaction, as the mail queue sees it: an outbox
 * store writes its row inside it (the store knows the concrete type), and
 * the queue looks at the outbox again once it has committed.
 */
export interface MailTransaction {
  afterCommit(fn: () => void): void;
}

/** One mail waiting in a persisted outbox. */
export interface OutboxMail {
  id: string;
  message: MailMessage;
  /** Attempts made before this one. */
  attempts: number;
  /** When it was queued (unix ms), when the store knows. */
  createdAt?: number | undefined;
}

/**
 * Where a persisted mail queue keeps its mails (implemented over SQL by the
 * admin store). `claim` must hand each mail to one caller only (a lease),
 * and a claimed mail whose lease ran out must become claimable again.
 */
export interface MailOutboxStore {
  /** Stores a mail, inside `transaction` when one is given (it commits or rolls back with the caller's other writes). */
  add(id: string, message: MailMessage, now: number, transaction?: MailTransaction): Promise<void>;
  /** Stores a mail already claimed by the caller for `leaseMs` (it is sent at once by the caller; taken over by a claim once the lease runs out). */
  addClaimed(id: string, message: MailMessage, now: number, leaseMs: number): Promise<void>;
  /** Claims up to `limit` mails due at `now` for `leaseMs`. */
  claim(now: number, limit: number, leaseMs: number): Promise<OutboxMail[]>;
  /** Removes a sent mail (its content is not kept). */
  sent(id: string): Promise<void>;
  /** Schedules the next attempt. */
  retry(id: string, attempts: number, nextAttemptAt: number): Promise<void>;
  /** Marks a mail given up (kept without its body for inspection). */
  failed(id: string, attempts: number): Promise<void>;
  /** Mails not yet sent or given up. */
  pending(): Promise<number>;
}

export interface OutboxMailQueueOptions extends Omit<MailQueueOptions, 'maxQueued'> {
  store: MailOutboxStore;
  /** How often the outbox is polled for due mails (default 1 s). */
  pollIntervalMs?: number;
  /** How long a claimed mail stays claimed (default 2 min). */
  leaseMs?: number;
  /** Unix ms clock (default `Date.now`). */
  clock?: () => number;
  /**
   * A message queued longer ago than this is given up instead of sent (what
   * it carries has expired: a texted code is good for a minute). Default:
   * no limit.
   */
  maxAgeMs?: number;
}

/**
 * The persisted variant of {@link MailQueue}: mails go into an outbox table
 * first, so a restart or a crash loses none (security matrix D5, E3); any
 * process polling the same outbox sends them, each once it gets through.
 */
export class OutboxMailQueue {
  readonly #o: OutboxMailQueueOptions;
  readonly #schedule: readonly number[];
  readonly #clock: () => number;
  readonly #onError: NonNullable<MailQueueOptions['onError']>;
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<void> | undefined;
  #again = false;
  #closed = false;
  #writes = new Set<Promise<void>>();

  constructor(options: OutboxMailQueueOptions) {
    this.#o = options;
    this.#schedule = options.retrySchedule ?? DEFAULT_SCHEDULE;
    this.#clock = options.clock ?? Date.now;
    this.#onError = options.onError ?? (() => {});
  }

  /** Starts polling the outbox. */
  start(): void {
    if (this.#timer) return;
    this.#timer = setInterval(() => this.#kick(), this.#o.pollIntervalMs ?? 1000);
    this.#timer.unref();
    this.#kick();
  }

  /**
   * Queues a mail and returns its id at once; the outbox write happens in the
   * background and a failed write is reported to `onError`, never thrown.
   */
  enqueue(message: MailMessage): string {
    const id = randomUUID();
    const write = this.#o.store
      .add(id, message, this.#clock())
      .then(() => this.#kick())
      .catch((err: unknown) => this.#onError(err, { id, attempt: 0, final: true }))
      .finally(() => this.#writes.delete(write));
    this.#writes.add(write);
    return id;
  }

  /**
   * Writes the mail's outbox row inside the caller's `transaction` and polls
   * the outbox once it has committed. Throws what the write throws.
   */
  async enqueueIn(message: MailMessage, transaction: MailTransaction): Promise<string> {
    const id = randomUUID();
    await this.#o.store.add(id, message, this.#clock(), transaction);
    transaction.afterCommit(() => this.#kick());
    return id;
  }

  /**
   * Sends a message now, within the caller's request, with the outbox as its
   * safety net: the row is written first, claimed by this process for the
   * lease, then sent. Sent: the row is deleted and `true` returned. Refused
   * or unreachable: the row is scheduled for a retry as any other and
   * `false` returned. The process dies mid-send: another process polling the
   * outbox sends it once the lease has run out, with the same id (the
   * receiver's idempotency key). Throws only what the outbox write throws
   * (nothing was queued then).
   */
  async sendNow(message: MailMessage): Promise<{ id: string; sent: boolean }> {
    const id = randomUUID();
    const now = this.#clock();
    await this.#o.store.addClaimed(id, message, now, this.#o.leaseMs ?? 120_000);
    const sent = await this.#send({ id, message, attempts: 0, createdAt: now });
    return { id, sent };
  }

  #kick(): void {
    if (this.#closed) return;
    if (this.#running) {
      this.#again = true;
      return;
    }
    this.#running = this.runOnce()
      .catch((err: unknown) => this.#onError(err, { id: '', attempt: 0, final: false }))
      .then(() => undefined)
      .finally(() => {
        this.#running = undefined;
        if (this.#again) {
          this.#again = false;
          this.#kick();
        }
      });
  }

  /** Sends every mail due now (until closed) and returns how many attempts were made. */
  async runOnce(): Promise<number> {
    let made = 0;
    for (;;) {
      // Closed: the mails being sent finish, no more are claimed (security matrix F5); the rest wait in the outbox.
      if (this.#closed) return made;
      const batch = await this.#o.store.claim(this.#clock(), this.#o.concurrency ?? 2, this.#o.leaseMs ?? 120_000);
      if (batch.length === 0) return made;
      made += batch.length;
      await Promise.all(batch.map((m) => this.#send(m)));
    }
  }

  /** One attempt; true when the message went out. */
  async #send(mail: OutboxMail): Promise<boolean> {
    const attempt = mail.attempts + 1;
    const maxAge = this.#o.maxAgeMs;
    if (maxAge !== undefined && mail.createdAt !== undefined && this.#clock() - mail.createdAt > maxAge) {
      this.#onError(new Error('expired before it could be sent'), { id: mail.id, attempt, final: true });
      await this.#o.store.failed(mail.id, mail.attempts);
      return false;
    }
    try {
      await this.#o.mailer.send({ ...mail.message, id: mail.id });
      await this.#o.store.sent(mail.id);
      this.#o.onSent?.({ id: mail.id, attempts: attempt });
      return true;
    } catch (err) {
      const delay = this.#schedule[attempt - 1];
      this.#onError(err, { id: mail.id, attempt, final: delay === undefined });
      if (delay === undefined) await this.#o.store.failed(mail.id, attempt);
      else await this.#o.store.retry(mail.id, attempt, this.#clock() + delay);
      return false;
    }
  }

  /** Mails not yet sent or given up. */
  pending(): Promise<number> {
    return this.#o.store.pending();
  }

  /** Stops polling and claiming at once; the sends in flight go on (see `close`). */
  stop(): void {
    this.#closed = true;
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = undefined;
  }

  /**
   * Stops polling and claiming, and waits for outbox writes and for the
   * sends in flight; mails not yet claimed stay in the outbox for the next
   * process.
   */
  async close(): Promise<void> {
    this.stop();
    this.#timer = undefined;
    await Promise.all([...this.#writes]);
    for (let p = this.#running; p; p = this.#running) await p;
  }
}
