/**
 * Security matrix E3: the server process is killed with SIGKILL in the middle
 * of a stream of sign-ups (with email verification, SMTP refusing so that
 * mails wait in the outbox) and FGA batch writes, then started again on the
 * same database. Asserted after the restart:
 *
 * - no partial rows: every email claim has its user and every user its claim,
 *   no email has two users, every two-tuple batch is there whole or not at all;
 * - nothing acknowledged is lost: every acknowledged sign-up and tuple batch;
 * - every user there has its verification request and its queued mail (the
 *   user, its claim, its `basic_auth_signup` request and its outbox row are
 *   one transaction);
 * - every user has its `user.signup` audit row and its `user.signup` webhook
 *   delivery, and there is neither without its user (they are part of the
 *   sign-up's transaction); the audit chain is whole;
 * - deliveries resume: every verification mail recorded before the kill is
 *   delivered once after the restart, without a new token (a mail the killed
 *   process had claimed once its lease has run out), and every webhook
 *   delivery queued before the kill (the receiver was down) reaches the
 *   receiver after the restart, under the id it was queued with.
 *
 * And the row's fault point, on every SQL backend: the process is killed
 * while its sign-up transaction is held right after the user insert (a
 * trigger stalls the next insert, of the verification request), right after
 * the verification request (stalling the outbox insert), right after the
 * user's rows (stalling the webhook delivery) and right after the webhook
 * delivery (stalling the audit row): nothing of that sign-up is left, its
 * retry stores all of it, and a second retry answers `already_exists`
 * (docs/security.md, "Retrying after an outage or a crash"); the webhook
 * deliveries, pending while the receiver was down across the kills, arrive
 * once it is up.
 */
import test from 'ava';
import { QueryTypes } from 'sequelize';
import { openSequelize } from '../../../engine/sql/sqlite_sequelize.ts';
import { createTestDatabase, sqlBackends, type SqlBackend } from '../../helpers/databases.ts';
import { startSmtp } from '../../admin/smtp.ts';
import { startReceiver } from '../../admin/receiver.ts';
import { AuditLog } from '../../../admin/index.ts';
import {
  DSL,
  PASSWORD,
  addSignupWebhook,
  count,
  deliveredAsStored,
  deliveriesDue,
  deliveriesResume,
  exited,
  post,
  serverFlags,
  stallOf,
  startCrashServer,
  storedDeliveries,
} from '../../helpers/crash.ts';

async function scenario(t: import('ava').ExecutionContext, backend: SqlBackend): Promise<void> {
  const db = await createTestDatabase(backend);
  t.teardown(() => db.drop());
  const smtp = await startSmtp();
  t.teardown(() => smtp.close());
  smtp.refuse = 421;
  // The webhook receiver is down (connections reset): every delivery waits in the outbox.
  const receiver = await startReceiver();
  t.teardown(() => receiver.close());
  receiver.down = true;
  const server = await startCrashServer((port) => serverFlags(backend, db.url, port, smtp.port));
  t.teardown(() => void server.child.kill('SIGKILL'));
  t.is((await post(server.url, '/v1/admin/fga/model', { dsl: DSL }, true)).status, 200);
  await addSignupWebhook(server.url, receiver);

  const signedUp: string[] = [];
  const batches: number[] = [];
  let n = 0;
  let killed = false;
  const worker = async (): Promise<void> => {
    while (!killed) {
      const i = n++;
      try {
        const s = await post(server.url, '/v1/signup', { email: `k${i}@crash.test`, password: PASSWORD });
        if (s.status === 200) signedUp.push(`k${i}@crash.test`);
        const tuples = [0, 1].map((j) => ({ user: `user:k${i}`, relation: 'viewer', object: `doc:b${i}-${j}` }));
        const w = await post(server.url, '/v1/admin/fga/tuples', { tuples }, true);
        if (w.status === 200) batches.push(i);
      } catch {
        // The connection died with the process: the outcome of this request is unknown.
      }
    }
  };
  const workers = [0, 1, 2, 3].map(() => worker());
  const until = Date.now() + 20_000;
  while (signedUp.length < 8 && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
  server.child.kill('SIGKILL');
  killed = true;
  await Promise.all(workers);
  await exited(server.child);
  t.true(signedUp.length >= 8, `acknowledged sign-ups before the kill: ${signedUp.length}`);

  // What the killed process left in the outbox (read before a new process sends and deletes it).
  const sequelize = openSequelize(db.url, { logging: false });
  t.teardown(() => sequelize.close());
  const queued = new Set((await sequelize.query<{ recipient: string }>('SELECT recipient FROM mail_outbox', { type: QueryTypes.SELECT })).map((r) => r.recipient));
  // Mails the killed process had claimed stay claimed until their lease (2 min) runs out, so that
  // two live senders never send one mail twice. The lease running out is simulated, not waited for.
  const claimed = await sequelize.query<{ lease_until: number | string; updated_at: number | string }>("SELECT lease_until, updated_at FROM mail_outbox WHERE status = 'sending'", { type: QueryTypes.SELECT });
  for (const c of claimed) t.true(Number(c.lease_until) - Number(c.updated_at) <= 120_000, 'a claim lasts at most the lease');
  await sequelize.query("UPDATE mail_outbox SET lease_until = ? WHERE status = 'sending'", { replacements: [Date.now() - 1] });
  // Likewise the backoff of mails SMTP refused (1 s, 5 s, 30 s, ...): due now, as after a long enough outage.
  await sequelize.query("UPDATE mail_outbox SET next_attempt_at = ? WHERE status = 'pending'", { replacements: [Date.now() - 1] });

  // Every user has its audit row and its webhook delivery, and neither exists without its user.
  const everyone = await sequelize.query<{ id: string; email: string }>('SELECT id, email FROM users', { type: QueryTypes.SELECT });
  const audited = await sequelize.query<{ resource_id: string }>("SELECT resource_id FROM audit_logs WHERE action = 'user.signup'", { type: QueryTypes.SELECT });
  t.deepEqual(audited.map((r) => r.resource_id).sort(), everyone.map((u) => u.id).sort(), 'one user.signup audit row per user, none without its user');
  const pending = await storedDeliveries(sequelize);
  t.deepEqual([...pending.keys()].sort(), everyone.map((u) => u.email).sort(), 'a user.signup delivery per user, none without its user');
  for (const [email, ids] of pending) t.is(ids.length, 1, `one delivery for ${email}`);
  t.like(await new AuditLog({ sequelize }).verifyChain(), { ok: true }, 'the audit chain is whole');
  receiver.down = false;
  await deliveriesDue(sequelize);

  smtp.refuse = undefined;
  await server.restart();

  // No partial rows.
  t.is(await count(sequelize, 'SELECT COUNT(*) AS n FROM user_identifiers c LEFT JOIN users u ON u.id = c.user_id WHERE u.id IS NULL'), 0, 'claims without a user');
  t.is(await count(sequelize, "SELECT COUNT(*) AS n FROM users u LEFT JOIN user_identifiers c ON c.user_id = u.id AND c.kind = 'email' WHERE u.email IS NOT NULL AND c.user_id IS NULL"), 0, 'users without their claim');
  t.is(await count(sequelize, 'SELECT COUNT(*) AS n FROM (SELECT email FROM users GROUP BY email HAVING COUNT(*) > 1) d'), 0, 'duplicate users');
  for (const email of signedUp) t.is(await count(sequelize, 'SELECT COUNT(*) AS n FROM users WHERE email = ?', [email]), 1, `acknowledged ${email}`);
  for (let i = 0; i < n; i++) {
    const r = await post(server.url, '/v1/admin/fga/tuples/read', { user: `user:k${i}`, page_size: 10 }, true);
    const found = (r.body['tuples'] as unknown[] | undefined)?.length ?? 0;
    if (batches.includes(i)) t.is(found, 2, `acknowledged batch ${i}`);
    else t.true(found === 0 || found === 2, `batch ${i} is whole or absent (${found})`);
  }

  // Every user has its verification request and its mail: a sign-up is one transaction.
  const users = await sequelize.query<{ email: string }>('SELECT email FROM users WHERE email_verified_at IS NULL', { type: QueryTypes.SELECT });
  t.true(users.length >= signedUp.length);
  for (const { email } of users) {
    t.true(queued.has(email), `the mail of ${email} was in the outbox at the kill`);
    t.is(await count(sequelize, "SELECT COUNT(*) AS n FROM verification_requests WHERE identifier = 'basic_auth_signup' AND email = ?", [email]), 1, `verification request of ${email}`);
  }
  t.is(queued.size, users.length, 'no mail without its user');
  // Deliveries resume: every mail the killed process had queued arrives, once (SMTP refused all before).
  const mailsTo = (email: string): number => smtp.mails.filter((m) => m.includes(`To: ${email}`)).length;
  const deadline = Date.now() + 25_000;
  while ([...queued].some((e) => mailsTo(e) === 0) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
  for (const email of queued) t.is(mailsTo(email), 1, `verification mail of ${email}`);
  t.is(await count(sequelize, "SELECT COUNT(*) AS n FROM mail_outbox WHERE status = 'pending'"), 0, 'outbox drained');
  // Webhook deliveries resume: each queued before the kill arrives, under the id it was queued with.
  await deliveredAsStored(t, receiver, pending, pending.keys());
  t.log(`${backend}: ${signedUp.length} sign-ups and ${batches.length} batches acknowledged of ${n} tried; ${queued.size} mails and ${pending.size} webhook deliveries resumed (${claimed.length} mails claimed at the kill)`);
  server.child.kill('SIGTERM');
  await exited(server.child);
}

async function faultPoint(t: import('ava').ExecutionContext, backend: SqlBackend): Promise<void> {
  const db = await createTestDatabase(backend);
  t.teardown(() => db.drop());
  const smtp = await startSmtp();
  t.teardown(() => smtp.close());
  // Down until the end: the sign-ups' webhook deliveries stay pending across the kills and restarts.
  const receiver = await startReceiver();
  t.teardown(() => receiver.close());
  receiver.down = true;
  const server = await startCrashServer((port) => serverFlags(backend, db.url, port, smtp.port));
  t.teardown(() => void server.child.kill('SIGKILL'));
  await addSignupWebhook(server.url, receiver);
  // The tables exist once a first sign-up has gone through.
  t.is((await post(server.url, '/v1/signup', { email: 'first@crash.test', password: PASSWORD })).status, 200);
  const sequelize = openSequelize(db.url, { logging: false });
  t.teardown(() => sequelize.close());
  const stall = stallOf(backend, sequelize, db.url);
  const rowsOf = async (email: string) => ({
    users: await count(sequelize, 'SELECT COUNT(*) AS n FROM users WHERE email = ?', [email]),
    claims: await count(sequelize, "SELECT COUNT(*) AS n FROM user_identifiers WHERE kind = 'email' AND value = ?", [email]),
    requests: await count(sequelize, 'SELECT COUNT(*) AS n FROM verification_requests WHERE email = ?', [email]),
    mails: await count(sequelize, 'SELECT COUNT(*) AS n FROM mail_outbox WHERE recipient = ?', [email]),
    audits: await count(sequelize, "SELECT COUNT(*) AS n FROM audit_logs WHERE action = 'user.signup' AND actor_email = ?", [email]),
    deliveries: (await storedDeliveries(sequelize)).get(email)?.length ?? 0,
  });
  const nothing = { users: 0, claims: 0, requests: 0, mails: 0, audits: 0, deliveries: 0 };
  const mailsTo = (email: string): number => smtp.mails.filter((m) => m.includes(`To: ${email}`)).length;

  // The first sign-up's mail is sent before the first kill: a mail claimed by the worker when the server
  // is killed waits out its lease (2 minutes) before another process sends it, past the end of this test.
  const firstSent = Date.now() + 15_000;
  while (mailsTo('first@crash.test') === 0 && Date.now() < firstSent) await new Promise((r) => setTimeout(r, 100));
  const signedUp = ['first@crash.test'];
  for (const table of ['verification_requests', 'mail_outbox', 'webhook_deliveries', 'audit_logs']) {
    const email = `cut-${table.replace('_', '-')}@crash.test`;
    await stall.install(table);
    const answer = post(server.url, '/v1/signup', { email, password: PASSWORD }).then(
      (r) => r.status,
      () => 'connection lost',
    );
    await stall.stalled(table);
    server.child.kill('SIGKILL');
    await exited(server.child);
    t.is(await answer, 'connection lost', `the sign-up cut before ${table} got no answer`);
    await stall.endOrphan();
    const until = Date.now() + 10_000;
    while (JSON.stringify(await rowsOf(email)) !== JSON.stringify(nothing) && Date.now() < until) await new Promise((r) => setTimeout(r, 100));
    t.deepEqual(await rowsOf(email), nothing, `a sign-up killed before its ${table} row left nothing`);
    await stall.remove(table);

    await server.restart();
    // The client did not learn the outcome and retries: the first attempt left nothing, so this one signs up.
    const retry = await post(server.url, '/v1/signup', { email, password: PASSWORD });
    t.is(retry.status, 200, JSON.stringify(retry.body));
    const stored = await rowsOf(email);
    t.deepEqual([stored.users, stored.claims, stored.requests, stored.audits, stored.deliveries], [1, 1, 1, 1, 1], `the retried sign-up of ${email} is stored whole`);
    signedUp.push(email);
    // A retry of a sign-up that did commit: already_exists, and nothing more is stored or sent.
    const again = await post(server.url, '/v1/signup', { email, password: PASSWORD });
    t.is(again.status, 409);
    t.is(again.body['code'], 'already_exists');
    t.like(await rowsOf(email), { users: 1, audits: 1, deliveries: 1 });
    const deadline = Date.now() + 15_000;
    while (mailsTo(email) === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    t.is(mailsTo(email), 1, `one verification mail to ${email}`);
    t.is((await rowsOf(email)).requests, 1);
  }
  t.is(mailsTo('first@crash.test'), 1);
  t.like(await new AuditLog({ sequelize }).verifyChain(), { ok: true }, 'the audit chain is whole');
  // The receiver is back: every sign-up's delivery, pending across the kills and restarts, arrives once.
  await deliveriesResume(t, sequelize, receiver, signedUp);
  server.child.kill('SIGTERM');
  await exited(server.child);
}

for (const backend of sqlBackends().filter((b) => b !== 'mysql')) {
  test(`E3 SIGKILL in the middle of sign-ups and FGA writes, then a restart: no partial rows, nothing acknowledged lost, deliveries resumed (${backend})`, async (t) => {
    await scenario(t, backend);
  });
}

for (const backend of sqlBackends()) {
  test(`E3 SIGKILL right after the user insert, the verification request, the user's rows and the webhook delivery: nothing left, the retry signs up, a second retry answers already_exists, the webhook deliveries arrive (${backend})`, async (t) => {
    await faultPoint(t, backend);
  });
}
