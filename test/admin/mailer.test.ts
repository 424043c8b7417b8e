// Tests auth/mailer.ts and auth/mail_queue.ts directly (internal modules until auth/index.ts re-exports them).
import test from 'ava';
import { startSmtp } from './smtp.ts';
import { createSmtpMailer } from '../../auth/mailer.ts';
import { MailQueue, OutboxMailQueue } from '../../auth/mail_queue.ts';
import { openAdminStores } from '../../admin/index.ts';
import { mainBackends, openTestMain } from '../helpers/main_databases.ts';
import type { LatchkeyError } from '../../engine/errors.ts';

const message = { to: 'ann@example.com', subject: 'Reset your password', html: '<p>link: https://app.example.com/r?t=abc</p>' };

test('internal mailer: sends through SMTP with the configured sender', async (t) => {
  const smtp = await startSmtp();
  const mailer = createSmtpMailer({ host: '127.0.0.1', port: smtp.port, senderEmail: 'noreply@example.com', senderName: 'Latchkey', timeoutMs: 2000 });
  try {
    await mailer.send(message);
    t.is(smtp.mails.length, 1);
    t.regex(smtp.mails[0]!, /From: Latchkey <noreply@example.com>/);
    t.regex(smtp.mails[0]!, /Subject: Reset your password/);
    t.regex(smtp.mails[0]!, /To: ann@example.com/);
    smtp.refuse = 554;
    const err = await t.throwsAsync(mailer.send(message));
    t.is((err as LatchkeyError).code, 'unavailable');
    t.is((err as LatchkeyError).reason, 'smtp_unavailable');
    t.deepEqual((err as LatchkeyError).details, { smtp_code: 554 });
  } finally {
    mailer.close();
    await smtp.close();
  }
});

test('internal mail queue (D5): SMTP answers 421, then is down, then accepts: enqueue never waits, the mail arrives once', async (t) => {
  const smtp = await startSmtp();
  const port = smtp.port;
  smtp.refuse = 421;
  const mailer = createSmtpMailer({ host: '127.0.0.1', port, senderEmail: 'noreply@example.com', timeoutMs: 1000 });
  const failures: number[] = [];
  let sentAttempts = 0;
  const queue = new MailQueue({
    mailer,
    retrySchedule: [100, 150, 200, 250, 300],
    onError: (_e, info) => failures.push(info.attempt),
    onSent: (info) => (sentAttempts = info.attempts),
  });
  try {
    const started = performance.now();
    const id = queue.enqueue(message);
    t.true(performance.now() - started < 20, 'enqueue returns at once');
    t.is(typeof id, 'string');
    t.is(queue.pending(), 1);
    // Let the first attempt be refused, then take the server down entirely.
    while (failures.length < 1) await new Promise((r) => setTimeout(r, 20));
    await smtp.close();
    while (failures.length < 2) await new Promise((r) => setTimeout(r, 20));
    const back = await startSmtp(port);
    try {
      await queue.whenIdle();
      t.is(back.mails.length, 1);
      t.is(smtp.mails.length, 0);
      t.true(back.mails[0]!.includes('https://app.example.com/r?t=abc'));
      t.is(sentAttempts, failures.length + 1);
      t.is(queue.pending(), 0);
    } finally {
      await back.close();
    }
  } finally {
    await queue.close();
    mailer.close();
  }
});

test('internal mail queue: gives up after the schedule and reports the final failure; a full queue drops without throwing', async (t) => {
  const smtp = await startSmtp();
  smtp.refuse = 550;
  const mailer = createSmtpMailer({ host: '127.0.0.1', port: smtp.port, senderEmail: 'noreply@example.com', timeoutMs: 1000 });
  const finals: string[] = [];
  const queue = new MailQueue({
    mailer,
    retrySchedule: [20, 20],
    maxQueued: 1,
    onError: (_e, info) => {
      if (info.final) finals.push(`${info.attempt}`);
    },
  });
  try {
    queue.enqueue(message);
    t.notThrows(() => queue.enqueue(message)); // over the cap: dropped and reported
    await queue.whenIdle();
    t.deepEqual(finals.sort(), ['0', '3']);
    t.is(smtp.mails.length, 0);
  } finally {
    await queue.close();
    mailer.close();
    await smtp.close();
  }
});

for (const backend of mainBackends()) {
  test(`internal outbox mail queue (D5): SMTP down across a restart, the mail waits in the outbox and arrives once; two senders never double-send (${backend})`, async (t) => {
    const m = await openTestMain(backend);
    const probe = await startSmtp();
    const port = probe.port;
    await probe.close();
    const mailer = createSmtpMailer({ host: '127.0.0.1', port, senderEmail: 'noreply@example.com', timeoutMs: 1000 });
    try {
      const { outbox: store } = await openAdminStores(m.database);
      let now = 1_700_000_000_000;
      const make = () => new OutboxMailQueue({ mailer, store, clock: () => now, retrySchedule: [1000, 1000], concurrency: 3 });
      const first = make();
      const id = first.enqueue(message);
      t.is(typeof id, 'string');
      await first.close(); // waits for the outbox write and the first attempt it triggered
      t.is(await first.pending(), 1, 'refused while the server is down: still in the outbox');
      t.is(await first.runOnce(), 0, 'not due before the backoff');

      const smtp = await startSmtp(port);
      try {
        const a = make();
        const b = make();
        for (let i = 0; i < 4; i++) await store.add(`m${i}`, { ...message, subject: `mail ${i}` }, now);
        now += 1000;
        const [na, nb] = await Promise.all([a.runOnce(), b.runOnce()]);
        t.is(na + nb, 5);
        t.is(smtp.mails.length, 5);
        t.is(smtp.mails.filter((m) => m.includes('Subject: Reset your password')).length, 1);
        t.is(await a.pending(), 0);
        const left = m.sequelize
          ? Number(((await m.sequelize.query('SELECT COUNT(*) AS n FROM mail_outbox'))[0] as Array<{ n: number | string }>)[0]!.n)
          : (await m.dynamo!.scan('mail_outbox')).length;
        t.is(left, 0, 'sent mails leave no row behind');
      } finally {
        await smtp.close();
      }
    } finally {
      mailer.close();
      await m.close();
    }
  });
}
