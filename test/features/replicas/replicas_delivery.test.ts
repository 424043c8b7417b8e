/**
 * Three server processes on one PostgreSQL database and the shared Redis: a
 * replica that dies with SIGKILL in the middle of sending webhooks and mails
 * loses none of them. Sign-ups through one replica queue a `user.signup`
 * delivery and a verification mail each (in the outbox tables, in the
 * sign-up's transaction); a real webhook receiver and a real SMTP server on
 * loopback take the first attempt of each and hold it unanswered, so the
 * sender is caught mid-send. The test finds which process holds each attempt
 * (its socket, through `ss`), kills the one holding the most (often the
 * replica the sign-ups went through, whose worker looks at the outbox right
 * after the commit; but every replica's worker polls it each second), and
 * answers the others. Asserted: once the outbox lease (`--outbox-lease`,
 * 4 s here) of the dead replica runs out, a surviving replica sends what it
 * held, with the same idempotency key (the `webhook-id` header, the
 * `Message-ID` header); every delivery and every mail is accepted exactly
 * once; the outbox ends empty (mail) and delivered (webhooks).
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
import { freePort } from '../../helpers/instances.ts';
import { CLUSTER_ADMIN_SECRET, jsonRequest, startReplicas, stopReplicas, type Replica } from '../../helpers/cluster.ts';

const PASSWORD = 'correct horse battery staple';
const SIGNUPS = 3;
const LEASE_MS = 4000;

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

needs(test, 'postgres', 'redis', 'ss')('a replica killed mid-send: its webhooks and mails are taken over by a survivor and accepted exactly once, with the same idempotency key', async (t) => {
  t.timeout(90_000);
  t.truthy(postgres, 'LATCHKEY_TEST_POSTGRES_URL is required');
  t.truthy(redis, 'LATCHKEY_TEST_REDIS_URL is required');
  const db = await createTestDatabase('postgres', 'lk_replicas_delivery');
  t.teardown(() => db.drop());

  // The webhook receiver: holds the first attempt of each webhook-id, accepts every later one.
  const hooks: Attempt[] = [];
  const accepted = new Map<string, number>();
  const receiver = createServer((req, res: ServerResponse) => {
    req.resume();
    req.on('end', () => {
      const key = String(req.headers['webhook-id'] ?? '');
      const accept = () => {
        accepted.set(key, (accepted.get(key) ?? 0) + 1);
        res.writeHead(200).end('ok');
      };
      const first = !hooks.some((h) => h.key === key);
      const port = req.socket.remotePort ?? 0;
      hooks.push({ key, port, at: Date.now(), pid: socketOwners(receiverPort).get(port) ?? 0, accept: first ? accept : undefined });
      if (!first) accept();
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

  const run = randomBytes(4).toString('hex');
  const publicUrl = `http://127.0.0.1:${await freePort()}`;
  const replicas = await startReplicas({
    count: 3,
    databaseUrl: db.url,
    redisUrl: redis!,
    publicUrl,
    clientId: `delivery-${run}`,
    flags: [
      `--outbox-lease=${LEASE_MS}ms`,
      '--enable-email-verification=true', '--smtp-host=127.0.0.1', `--smtp-port=${smtpPort}`, '--smtp-sender-email=noreply@replicas.test',
      '--webhook-allow-private-networks=true',
    ],
  });
  t.teardown(() => stopReplicas(replicas));
  const headers = { origin: publicUrl };
  const hook = await jsonRequest(`${replicas[0]!.url}/v1/admin/add_webhook`, {
    body: { event_name: 'user.signup', endpoint: `http://127.0.0.1:${receiverPort}/hook` },
    headers: { ...headers, 'x-service-admin-secret': CLUSTER_ADMIN_SECRET },
  });
  t.is(hook.status, 200, JSON.stringify(hook.body));

  // Every sign-up through replica 1: it queues the deliveries and the mails.
  for (let i = 0; i < SIGNUPS; i++) {
    const r = await jsonRequest(`${replicas[0]!.url}/v1/signup`, { body: { email: `d${i}-${run}@replicas.test`, password: PASSWORD }, headers });
    t.is(r.status, 200, JSON.stringify(r.body));
  }
  const until = Date.now() + 20_000;
  while ((hooks.length < SIGNUPS || mails.length < SIGNUPS) && Date.now() < until) await new Promise((r) => setTimeout(r, 50));
  t.is(hooks.length, SIGNUPS, 'every delivery attempted once and held');
  t.is(mails.length, SIGNUPS, 'every mail attempted once and held');

  // Who holds what: the replica holding the most dies; the others' attempts are accepted.
  const byPid = new Map<number, Replica>(replicas.map((r) => [r.child.pid ?? 0, r]));
  const holder = (a: Attempt): Replica | undefined => byPid.get(a.pid);
  const held = [...hooks, ...mails].map(holder);
  t.true(held.every((r) => r !== undefined), 'each held attempt belongs to a replica');
  const counts = new Map<Replica, number>();
  for (const r of held) if (r) counts.set(r, (counts.get(r) ?? 0) + 1);
  const victim = [...counts.entries()].sort((a, b) => b[1] - a[1])[0]![0];
  const victimHooks = hooks.filter((h) => holder(h) === victim).map((h) => h.key);
  const victimMails = mails.filter((m) => holder(m) === victim).map((m) => m.key);
  t.log(`replica ${victim.index} held ${victimHooks.length} deliveries and ${victimMails.length} mails (the sign-ups went through replica 1; each worker claims what is due)`);
  victim.child.kill('SIGKILL');
  await victim.exited;
  const killedAt = Date.now();
  for (const a of [...hooks, ...mails]) {
    const mine = victimHooks.includes(a.key) || victimMails.includes(a.key);
    if (!mine && a.accept) a.accept();
  }

  // A survivor takes over each of the dead replica's deliveries once its lease has run out.
  const done = () => hooks.every((h) => accepted.get(h.key) === 1) && mails.every((m) => delivered.get(m.key) === 1);
  const deadline = Date.now() + LEASE_MS + 20_000;
  while (!done() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  const tookOver = Date.now() - killedAt;
  // Two more poll periods of every survivor: a second copy would show now.
  await new Promise((r) => setTimeout(r, 2500));
  const keys = [...new Set(hooks.map((h) => h.key))];
  const mailKeys = [...new Set(mails.map((m) => m.key))];
  t.is(keys.length, SIGNUPS, 'one webhook-id per sign-up');
  t.is(mailKeys.length, SIGNUPS, 'one Message-ID per mail');
  t.true(mailKeys.every((k) => /^<[0-9a-f-]{36}@replicas\.test>$/u.test(k)), `Message-IDs name the outbox row: ${mailKeys.join(' ')}`);
  for (const k of keys) t.is(accepted.get(k), 1, `delivery ${k} accepted exactly once`);
  for (const k of mailKeys) t.is(delivered.get(k), 1, `mail ${k} accepted exactly once`);
  // The dead replica's deliveries came again, with the same key, from a survivor.
  const again = [...hooks.filter((h) => victimHooks.includes(h.key) && h.accept === undefined), ...mails.filter((m) => victimMails.includes(m.key) && m.accept === undefined)];
  t.true(again.length >= victimHooks.length + victimMails.length, 'each of the dead replica\'s attempts was made again');
  t.true(again.every((a) => a.pid !== victim.child.pid && byPid.has(a.pid)), 'by a surviving replica');
  // Taken over once the lease of the held attempt had run out, not before, and soon after (polls every second).
  const gaps = again.map((a) => a.at - [...hooks, ...mails].find((f) => f.key === a.key)!.at);
  // (The lease starts at the claim, a little before the attempt reaches the sink: the DNS check and the connection.)
  t.true(gaps.every((g) => g >= LEASE_MS - 1000), `made again only after the lease: ${gaps.join(', ')} ms`);
  t.true(gaps.every((g) => g <= LEASE_MS + 15_000), `made again within the lease and a few polls: ${gaps.join(', ')} ms`);

  const sequelize = openSequelize(db.url, { logging: false });
  t.teardown(() => sequelize.close());
  const count = async (sql: string): Promise<number> => Number((await sequelize.query<{ n: number | string }>(sql, { type: QueryTypes.SELECT }))[0]?.n ?? 0);
  t.is(await count("SELECT COUNT(*) AS n FROM webhook_deliveries WHERE status = 'delivered'"), SIGNUPS, 'every delivery marked delivered');
  t.is(await count('SELECT COUNT(*) AS n FROM mail_outbox'), 0, 'the mail outbox is empty');
  t.log(`all accepted ${tookOver} ms after the kill; the dead replica's attempts made again ${gaps.join(', ')} ms after the first (lease ${LEASE_MS} ms); ${hooks.length} webhook attempts and ${mails.length} SMTP attempts for ${SIGNUPS} sign-ups`);
});
