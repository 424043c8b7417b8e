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
 * The queue lives in memory: a process restart drops mails still waiting.
 * The flows that send mail keep their tokens valid for a resend, which is the
 * recovery path for that case.
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

  constructor(options: MailQueueOptions) {
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
    const id = randomUUID();
    if (this.#closed || this.pending() >= this.#max) {
      this.#onError(new Error(this.#closed ? 'mail queue closed' : 'mail queue full'), { id, attempt: 0, final: true });
      return id;
    }
    this.#ready.push({ id, message, attempts: 0 });
    queueMicrotask(() => this.#pump());
    return id;
  }

  /** Mails not yet sent (ready, in flight or waiting for a retry). */
  pending(): number {
    return this.#ready.length + this.#waiting.size + this.#active;
  }

  /** Resolves when nothing is left to send (tests, graceful shutdown). */
  whenIdle(): Promise<void> {
    if (this.pending() === 0) return Promise.resolve();
    return new Promise((resolve) => this.#idle.push(resolve));
  }

  /** Stops retrying, drops waiting mails, and waits for sends in flight. */
  async close(): Promise<void> {
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
      await this.#mailer.send(job.message);
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
