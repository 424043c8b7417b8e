/**
 * Three server processes on one PostgreSQL database and the shared Redis,
 * behind haproxy: a replica that dies with SIGKILL in the middle of sending
 * webhooks, mails and text messages loses none of them. Sign-ups through one
 * replica queue a `user.signup` delivery and a verification mail each (in
 * the outbox tables, in the sign-up's transaction); sign-ups by phone number
 * through haproxy (SMS second factor), at the same time, each queue a text
 * message in the same outbox and send it at once from the replica that
 * served the request (their deliveries, queued once the text has gone out,
 * are not held). A
 * real webhook receiver, a real SMTP server and an SMS vendor on loopback
 * take the first attempt of each and hold it unanswered, so the sender is
 * caught mid-send. The test finds which process holds each attempt (its
 * socket, through `ss`), kills the one holding the most among those holding
 * a text message (so the replica that queued it dies before it could send
 * it), and answers the others. Asserted: once the outbox lease
 * (`--outbox-lease`, 12 s here) of the dead replica runs out, a surviving
 * replica sends what it held, with the same idempotency key (the
 * `webhook-id` header, the `Message-ID` header, the SMS `Idempotency-Key`
 * header); every delivery, mail and text message is accepted exactly once;
 * the sign-ups by phone served by the survivors answered as usual (the
 * challenge); the outbox ends empty (mails and texts) and delivered
 * (webhooks).
 */
import test from 'ava';
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { QueryTypes } from 'sequelize';
import { SMTPServer } from 'smtp-server';
import { openSequelize } from '../../../engine/sql/sqlite_sequelize.ts';
import { createTestDatabase, redisUrl } from '../../helpers/databases.ts';
import { needs } from '../../helpers/needs.ts';
import { CLUSTER_ADMIN_SECRET, jsonRequest, startBalancedReplicas, stopReplicas, type JsonResponse, type Replica } from '../../helpers/cluster.ts';

const PASSWORD = 'correct horse battery staple';
const SIGNUPS = 3;
/** Sign-ups by phone number through haproxy, each texted a code. */
const TEXTS = 3;
/** Every sign-up, by email or by phone, is one `user.signup` delivery. */
const HOOKS = SIGNUPS + TEXTS;
/**
 * Longer than the senders' own timeouts (SMTP and SMS 10 s), which bound how
 * long an attempt can be held before its sender gives up and retries: every
 * attempt must be held, and the victim killed, within them.
 */
const LEASE_MS = 12_000;

const postgres = process.env['LATCHKEY_TEST_POSTGRES_URL'];
const redis = redisUrl();

/** One attempt seen by a sink: its idempotency key and the client port it came from. */
interface Attempt {
  key: string;
  port: number;
  /** The process that made it (its socket's owner, looked up as it arrived). */
  pid: number;
  /** When it arrived (Date.now()). */
  at: number;
  /** Answers the attempt (accepts it); undefined once answered. */
  accept?: (() => void) | undefined;
}

/** The pid owning each local TCP port of an established loopback connection to `serverPort`. */
function socketOwners(serverPort: number): Map<number, number> {
  const out = spawnSync('ss', ['-tnpH', 'state', 'established', `dport = :${serverPort}`], { encoding: 'utf8' }).stdout;
  const owners = new Map<number, number>();
  for (const line of out.split('\n')) {
    const local = /\s127\.0\.0\.1:(\d+)\s/u.exec(line);
    const pid = /pid=(\d+)/u.exec(line);
    if (local && pid) owners.set(Number(local[1]), Number(pid[1]));
  }
  return owners;
}

needs(test, 'postgres', 'redis', 'ss', 'haproxy')('a replica killed mid-send: its webhooks, mails and text messages are taken over by a survivor and accepted exactly once, with the same idempotency key', async (t) => {
  t.timeout(180_000);
  t.truthy(postgres, 'LATCHKEY_TEST_POSTGRES_URL is required');
  t.truthy(redis, 'LATCHKEY_TEST_REDIS_URL is required');
  const db = await createTestDatabase('postgres', 'lk_replicas_delivery');
  t.teardown(() => db.drop());

  // The webhook receiver: holds the first attempt of each webhook-id, accepts every later one.
  const hooks: Attempt[] = [];
  const accepted = new Map<string, number>();
  // A phone sign-up's delivery is queued once its text has gone out (its request holds until then), so it is not held:
  // only the email sign-ups' deliveries are, those whose payload names an address.
  const receiver = createServer((req, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const key = String(req.headers['webhook-id'] ?? '');
      const accept = () => {
        accepted.set(key, (accepted.get(key) ?? 0) + 1);
        res.writeHead(200).end('ok');
      };
      const first = !hooks.some((h) => h.key === key);
      const hold = first && Buffer.concat(chunks).toString('utf8').includes('@replicas.test');
      const port = req.socket.remotePort ?? 0;
      hooks.push({ key, port, at: Date.now(), pid: socketOwners(receiverPort).get(port) ?? 0, accept: hold ? accept : undefined });
      if (!hold) accept();
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  const receiverPort = (receiver.address() as AddressInfo).port;
  t.teardown(() => new Promise<void>((resolve) => (receiver.closeAllConnections(), receiver.close(() => resolve()))));

  // The SMTP server: holds the first attempt of each Message-ID, accepts every later one.
  const mails: Attempt[] = [];
  const delivered = new Map<string, number>();
  const smtp = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS', 'AUTH'],
    logger: false,
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => {
        const key = /^Message-ID:\s*(<[^>]+>)/imu.exec(Buffer.concat(chunks).toString('utf8'))?.[1] ?? '';
        const accept = () => {
          delivered.set(key, (delivered.get(key) ?? 0) + 1);
          callback();
        };
        const first = !mails.some((m) => m.key === key);
        mails.push({ key, port: session.remotePort, at: Date.now(), pid: socketOwners(smtpPort).get(session.remotePort) ?? 0, accept: first ? accept : undefined });
        if (!first) accept();
      });
    },
  });
  smtp.on('error', () => undefined);
  await new Promise<void>((resolve) => smtp.listen(0, '127.0.0.1', () => resolve()));
  const smtpPort = (smtp.server.address() as AddressInfo).port;
  t.teardown(() => new Promise<void>((resolve) => smtp.close(() => resolve())));

  // The SMS vendor (Twilio's Messages resource): holds the first attempt of each Idempotency-Key, accepts every later one.
  const texts: Attempt[] = [];
  const texted = new Map<string, number>();
  const vendor = createServer((req, res: ServerResponse) => {
    req.resume();
    req.on('end', () => {
      const key = String(req.headers['idempotency-key'] ?? '');
      const accept = () => {
        // Counted only when the sender is still there to hear it (a sender that gave up retries with the same key).
        if (req.socket.destroyed) return;
        texted.set(key, (texted.get(key) ?? 0) + 1);
        res.writeHead(201, { 'content-type': 'application/json' }).end('{"sid":"SM1"}');
      };
      const first = !texts.some((m) => m.key === key);
      const port = req.socket.remotePort ?? 0;
      texts.push({ key, port, at: Date.now(), pid: socketOwners(vendorPort).get(port) ?? 0, accept: first ? accept : undefined });
      if (!first) accept();
    });
  });
  await new Promise<void>((resolve) => vendor.listen(0, '127.0.0.1', resolve));
  const vendorPort = (vendor.address() as AddressInfo).port;
  t.teardown(() => new Promise<void>((resolve) => (vendor.closeAllConnections(), vendor.close(() => resolve()))));

  const run = randomBytes(4).toString('hex');
  const { replicas, lb, options } = await startBalancedReplicas({
    count: 3,
    databaseUrl: db.url,
    redisUrl: redis!,
    clientId: `delivery-${run}`,
    flags: [
      `--outbox-lease=${LEASE_MS}ms`,
      '--enable-email-verification=true', '--smtp-host=127.0.0.1', `--smtp-port=${smtpPort}`, '--smtp-sender-email=noreply@replicas.test',
      '--webhook-allow-private-networks=true',
      '--enable-mfa=true', '--enforce-mfa=true', '--enable-sms-otp=true', '--enable-mobile-basic-authentication=true',
      `--sms-api-url=http://127.0.0.1:${vendorPort}`, '--sms-account-sid=AC123', '--sms-api-key=SK456', '--sms-api-secret=vendor-secret', '--sms-sender=+15550000000',
    ],
  }, { checkIntervalMs: 250 });
  t.teardown(() => stopReplicas(replicas));
  t.teardown(() => lb.close());
  const headers = { origin: options.publicUrl };
  const hook = await jsonRequest(`${replicas[0]!.url}/v1/admin/add_webhook`, {
    body: { event_name: 'user.signup', endpoint: `http://127.0.0.1:${receiverPort}/hook` },
    headers: { ...headers, 'x-service-admin-secret': CLUSTER_ADMIN_SECRET },
  });
  t.is(hook.status, 200, JSON.stringify(hook.body));

  // All at once, so that every attempt is held within the senders' timeouts: the email sign-ups through replica 1
  // (each queues a delivery and a mail), the sign-ups by phone through haproxy (each replica that serves one texts its
  // code at once, and queues a delivery).
  const phoneSignups: Promise<JsonResponse | Error>[] = Array.from({ length: TEXTS }, (_, i) =>
    jsonRequest(`${lb.url}/v1/signup`, { body: { phone_number: `+1555030${i}${run.slice(0, 4).replace(/\D/gu, '0')}`, password: PASSWORD }, headers, timeoutMs: 60_000 }).catch((e: Error) => e),
  );
  const signups = await Promise.all(
    Array.from({ length: SIGNUPS }, (_, i) => jsonRequest(`${replicas[0]!.url}/v1/signup`, { body: { email: `d${i}-${run}@replicas.test`, password: PASSWORD }, headers, timeoutMs: 60_000 })),
  );
  for (const r of signups) t.is(r.status, 200, JSON.stringify(r.body));
  const until = Date.now() + 25_000;
  const heldHooks = () => hooks.filter((h) => h.accept !== undefined);
  while ((heldHooks().length < SIGNUPS || mails.length < SIGNUPS || texts.length < TEXTS) && Date.now() < until) await new Promise((r) => setTimeout(r, 25));
  const seen = (list: Attempt[]) => list.map((a) => `${a.key.slice(0, 8)}@+${a.at - list[0]!.at}ms`).join(' ');
  t.is(heldHooks().length, SIGNUPS, `every email sign-up's delivery attempted once and held: ${seen(hooks)}`);
  t.is(mails.length, SIGNUPS, `every mail attempted once and held: ${seen(mails)}`);
  t.is(texts.length, TEXTS, `every text message attempted once and held: ${seen(texts)}`);

  // Who holds what: of the replicas holding a text message, the one holding the most dies; the others' attempts are accepted.
  const byPid = new Map<number, Replica>(replicas.map((r) => [r.child.pid ?? 0, r]));
  const holder = (a: Attempt): Replica | undefined => byPid.get(a.pid);
  const held = [...heldHooks(), ...mails, ...texts].map(holder);
  t.true(held.every((r) => r !== undefined), 'each held attempt belongs to a replica');
  const counts = new Map<Replica, number>();
  for (const r of held) if (r) counts.set(r, (counts.get(r) ?? 0) + 1);
  const texters = new Set(texts.map(holder));
  const victim = [...counts.entries()].filter(([r]) => texters.has(r)).sort((a, b) => b[1] - a[1])[0]![0];
  const victimHooks = heldHooks().filter((h) => holder(h) === victim).map((h) => h.key);
  const victimMails = mails.filter((m) => holder(m) === victim).map((m) => m.key);
  const victimTexts = texts.filter((m) => holder(m) === victim).map((m) => m.key);
  t.true(victimTexts.length >= 1, 'the replica killed queued a text message it had not sent');
  t.log(`replica ${victim.index} held ${victimHooks.length} deliveries, ${victimMails.length} mails and ${victimTexts.length} text messages (the email sign-ups went through replica 1, the phone sign-ups through haproxy; each worker claims what is due)`);
  victim.child.kill('SIGKILL');
  await victim.exited;
  const killedAt = Date.now();
  const victimKeys = [...victimHooks, ...victimMails, ...victimTexts];
  for (const a of [...hooks, ...mails, ...texts]) if (!victimKeys.includes(a.key) && a.accept) a.accept();

  // The phone sign-ups served by the survivors answer as usual once their text went out; the one in flight on the dead replica fails.
  const answers = await Promise.all(phoneSignups);
  const challenged = answers.filter((a) => !(a instanceof Error) && a.status === 200 && a.body['should_show_mobile_otp_screen'] === true).length;
  t.is(challenged, TEXTS - victimTexts.length, `each phone sign-up served by a survivor answered the challenge: ${answers.map((a) => (a instanceof Error ? a.message : a.status)).join(', ')}`);

  // A survivor takes over each of the dead replica's deliveries once its lease has run out.
  const done = () => new Set(hooks.map((h) => h.key)).size === HOOKS && hooks.every((h) => accepted.get(h.key) === 1) && mails.every((m) => delivered.get(m.key) === 1) && texts.every((m) => texted.get(m.key) === 1);
  const deadline = Date.now() + LEASE_MS + 20_000;
  while (!done() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  const tookOver = Date.now() - killedAt;
  // Two more poll periods of every survivor: a second copy would show now.
  await new Promise((r) => setTimeout(r, 2500));
  const keys = [...new Set(hooks.map((h) => h.key))];
  const mailKeys = [...new Set(mails.map((m) => m.key))];
  t.is(keys.length, HOOKS, 'one webhook-id per sign-up');
  t.is(mailKeys.length, SIGNUPS, 'one Message-ID per mail');
  t.true(mailKeys.every((k) => /^<[0-9a-f-]{36}@replicas\.test>$/u.test(k)), `Message-IDs name the outbox row: ${mailKeys.join(' ')}`);
  for (const k of keys) t.is(accepted.get(k), 1, `delivery ${k} accepted exactly once`);
  for (const k of mailKeys) t.is(delivered.get(k), 1, `mail ${k} accepted exactly once`);
  const textKeys = [...new Set(texts.map((m) => m.key))];
  t.is(textKeys.length, TEXTS, 'one Idempotency-Key per text message');
  t.true(textKeys.every((k) => /^[0-9a-f-]{36}$/u.test(k)), `Idempotency-Keys name the outbox row: ${textKeys.join(' ')}`);
  for (const k of textKeys) t.is(texted.get(k), 1, `text message ${k} accepted exactly once`);
  // The dead replica's deliveries came again, with the same key, from a survivor.
  const again = [...hooks, ...mails, ...texts].filter((a) => victimKeys.includes(a.key) && a.accept === undefined);
  t.true(again.length >= victimKeys.length, 'each of the dead replica\'s attempts was made again');
  t.true(again.every((a) => a.pid !== victim.child.pid && byPid.has(a.pid)), 'by a surviving replica');
  // Taken over once the lease of the held attempt had run out, not before, and soon after (polls every second).
  const gaps = again.map((a) => a.at - [...hooks, ...mails, ...texts].find((f) => f.key === a.key)!.at);
  // (The lease starts at the claim, before the attempt reaches the sink: the DNS check and the connection, which took
  // over a second on a machine running other suites beside this one. A takeover before the lease would come within a
  // poll or two of the kill, seconds earlier than this bound.)
  t.true(gaps.every((g) => g >= LEASE_MS - 3000), `made again only after the lease: ${gaps.join(', ')} ms`);
  t.true(gaps.every((g) => g <= LEASE_MS + 15_000), `made again within the lease and a few polls: ${gaps.join(', ')} ms`);

  const sequelize = openSequelize(db.url, { logging: false });
  t.teardown(() => sequelize.close());
  const count = async (sql: string): Promise<number> => Number((await sequelize.query<{ n: number | string }>(sql, { type: QueryTypes.SELECT }))[0]?.n ?? 0);
  t.is(await count("SELECT COUNT(*) AS n FROM webhook_deliveries WHERE status = 'delivered'"), HOOKS, 'every delivery marked delivered');
  t.is(await count("SELECT COUNT(*) AS n FROM mail_outbox WHERE channel = 'mail'"), 0, 'the mail outbox is empty');
  t.is(await count("SELECT COUNT(*) AS n FROM mail_outbox WHERE channel = 'sms'"), 0, 'no text message is left in the outbox');
  t.log(`all accepted ${tookOver} ms after the kill; the dead replica's attempts made again ${gaps.join(', ')} ms after the first (lease ${LEASE_MS} ms); ${hooks.length} webhook attempts and ${mails.length} SMTP attempts for ${HOOKS} sign-ups (${SIGNUPS} of them by email), ${texts.length} SMS attempts for ${TEXTS} phone sign-ups`);
});
