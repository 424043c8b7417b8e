/**
 * The text-message queue: SMS codes wait in the same persisted outbox as
 * mails (`mail_outbox`, channel `sms`), claimed with the same lease
 * (`--outbox-lease`). The request that asks for a code writes the row and
 * sends it at once (so it answers as it did when it sent the message
 * itself); a refused or failed attempt is retried by any replica's worker,
 * and a replica that dies mid-send has its messages sent by another once the
 * lease runs out, each with the row's id as its `Idempotency-Key`.
 */
import { DynamoMailOutbox, SqlMailOutbox } from '../../admin/index.ts';
import { OTP_TTL_SECONDS, OutboxMailQueue, createSmsSender, smsOutboxSender } from '../../auth/index.ts';
import { epochMsOf, type Services } from '../context.ts';

/**
 * Delays before each retry of a text message. A code is good for a minute
 * (`OTP_TTL_SECONDS`), so retries stop well within it, and a message still
 * unsent when its code has expired is given up rather than sent.
 */
export const SMS_RETRY_SCHEDULE: readonly number[] = [2_000, 5_000, 10_000, 20_000];

/** True when the `--sms-*` flags configure the vendor. */
export function smsConfigured(services: Services): boolean {
  const c = services.config;
  return Boolean(c.smsAccountSid && c.smsApiKey && c.smsApiSecret && c.smsSender);
}

/**
 * Builds and starts the SMS queue into `services.smsQueue` when the vendor is
 * configured; its worker polls the outbox each second. Call once the admin
 * store's tables exist (the outbox is one of them). Registers its close.
 */
export function plugSmsQueue(services: Services): void {
  if (!smsConfigured(services)) return;
  const c = services.config;
  const sender = createSmsSender({ baseUrl: c.smsApiUrl, accountSid: c.smsAccountSid ?? '', apiKey: c.smsApiKey ?? '', apiSecret: c.smsApiSecret ?? '', sender: c.smsSender ?? '' });
  const queue = new OutboxMailQueue({
    mailer: smsOutboxSender(sender),
    store: services.database.kind === 'sql' ? new SqlMailOutbox(services.database.sequelize, 'sms') : new DynamoMailOutbox(services.database.dynamo, 'sms'),
    clock: epochMsOf(services.clock),
    leaseMs: c.outboxLease,
    retrySchedule: SMS_RETRY_SCHEDULE,
    maxAgeMs: OTP_TTL_SECONDS * 1000,
    onError: (err, info) => services.logger.warn('text message not sent', { sms_id: info.id, attempt: info.attempt, final: info.final, err }),
  });
  services.smsQueue = queue;
  queue.start();
  services.closers.push(() => queue.close());
}
