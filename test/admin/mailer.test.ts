// Tests auth/mailer.ts and auth/mail_queue.ts directly (internal modules until auth/index.ts re-exports them).
import test from 'ava';
import { SMTPServer, type SMTPServerDataStream, type SMTPServerSession } from 'smtp-server';
import type { AddressInfo } from 'node:net';
import { createSmtpMailer } from '../../auth/mailer.ts';
import { MailQueue } from '../../auth/mail_queue.ts';
import type { LatchkeyError } from '../../engine/errors.ts';

interface Smtp {
  port: number;
  mails: string[];
  /** Answer for the next DATA commands: undefined accepts. */
  refuse: number | undefined;
  close(): Promise<void>;
}

async function startSmtp(port = 0): Promise<Smtp> {
  const state: Smtp = { port: 0, mails: [], refuse: undefined, close: async () => {} };
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS', 'AUTH'],
    logger: false,
    onData(stream: SMTPServerDataStream, _session: SMTPServerSession, callback: (err?: Error | null) => void) {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => {
        if (state.refuse !== undefined) {
          const err = Object.assign(new Error('try later'), { responseCode: state.refuse });
          callback(err);
          return;
        }
        state.mails.push(Buffer.concat(chunks).toString('utf8'));
        callback();
      });
    },
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve());
  });
  state.port = (server.server.address() as AddressInfo).port;
  state.close = () => new Promise<void>((resolve) => server.close(() => resolve()));
  return state;
}

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
