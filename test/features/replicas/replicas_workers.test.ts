/**
 * Three server processes on one PostgreSQL database and the shared Redis
 * (docs/scaling.md), each running its mail and webhook workers:
 *
 * - every verification mail (real SMTP on loopback) and every `user.signup`
 *   webhook (a real receiver on loopback) of sign-ups spread over the three
 *   is delivered exactly once. Both sinks refuse at first, so every mail and
 *   delivery is retried, and the three workers, which poll the same outbox
 *   every second, race for the same due rows when the sinks accept again;
 * - the HTTP rate limit counts one client's requests across replicas:
 *   requests spread over the three are refused at the same count as the same
 *   requests sent to one replica, not at three times that.
 */
import test from 'ava';
import { randomBytes } from 'node:crypto';
import { QueryTypes } from 'sequelize';
import { openSequelize } from '../../../engine/sql/sqlite_sequelize.ts';
import { createTestDatabase, redisUrl } from '../../helpers/databases.ts';
import { needs } from '../../helpers/needs.ts';
import { freePort } from '../../helpers/instances.ts';
import { CLUSTER_ADMIN_SECRET, jsonRequest, startReplicas, stopReplicas } from '../../helpers/cluster.ts';
import { startReceiver } from '../../admin/receiver.ts';
import { decodeMail, startSmtp } from '../../admin/smtp.ts';

const PASSWORD = 'correct horse battery staple';
const SIGNUPS = 24;
/** The limit under test: 2 requests per second and a burst of 10 (over 5 s) per client IP. */
const RPS = 2;
const BURST = 10;
const SPREAD = 45;

const postgres = process.env['LATCHKEY_TEST_POSTGRES_URL'];
const redis = redisUrl();

needs(test, 'postgres', 'redis')('three replicas: each webhook and each mail is delivered exactly once, and the HTTP rate limit counts across replicas', async (t) => {
  t.timeout(90_000);
  t.truthy(postgres, 'LATCHKEY_TEST_POSTGRES_URL is required');
  t.truthy(redis, 'LATCHKEY_TEST_REDIS_URL is required');
  const db = await createTestDatabase('postgres', 'lk_replicas_workers');
  t.teardown(() => db.drop());
  const smtp = await startSmtp();
  t.teardown(() => smtp.close());
  const receiver = await startReceiver();
  t.teardown(() => receiver.close());
  // Refuse every mail at first, and each delivery's first attempt: every mail and delivery then waits in
  // the outbox for its retry. (Refusing deliveries by id rather than until a moment: a delivery refused
  // twice would wait minutes for its third attempt, and under load the first refusals come more than
  // the 5 s retry apart from the last.)
  smtp.refuse = 421;
  const delivered: { id: string; body: string }[] = [];
  const refusedIds = new Set<string>();
  receiver.handler = (req, res) => {
    const id = String(req.headers['webhook-id']);
    if (!refusedIds.has(id)) {
      refusedIds.add(id);
      res.writeHead(503).end();
      return;
    }
    delivered.push({ id, body: req.body });
    res.writeHead(200).end('ok');
  };

  const run = randomBytes(4).toString('hex');
  const publicUrl = `http://127.0.0.1:${await freePort()}`;
  const replicas = await startReplicas({
    count: 3,
    databaseUrl: db.url,
    redisUrl: redis!,
    publicUrl,
    clientId: `workers-${run}`,
    flags: [
      `--rate-limit-rps=${RPS}`, `--rate-limit-burst=${BURST}`,
      '--enable-email-verification=true', '--smtp-host=127.0.0.1', `--smtp-port=${smtp.port}`, '--smtp-sender-email=noreply@replicas.test',
      '--webhook-allow-private-networks=true',
    ],
  });
  t.teardown(() => stopReplicas(replicas));
  const headers = { origin: publicUrl };

  const hook = await jsonRequest(`${replicas[0]!.url}/v1/admin/add_webhook`, {
    body: { event_name: 'user.signup', endpoint: receiver.url },
    headers: { ...headers, 'x-service-admin-secret': CLUSTER_ADMIN_SECRET },
  });
  t.is(hook.status, 200, JSON.stringify(hook.body));

  // Sign-ups spread over the three replicas, six at a time, each from its own client address (127.0.1.x), so the
  // low rate limit of this cluster does not refuse them.
  const emails = Array.from({ length: SIGNUPS }, (_, i) => `w${i}-${run}@replicas.test`);
  for (let i = 0; i < SIGNUPS; i += 6) {
    await Promise.all(emails.slice(i, i + 6).map(async (email, j) => {
      const r = await jsonRequest(`${replicas[(i + j) % 3]!.url}/v1/signup`, { body: { email, password: PASSWORD }, headers, localAddress: `127.0.1.${i + j + 1}` });
      t.is(r.status, 200, `${email}: ${JSON.stringify(r.body)}`);
    }));
  }
  const sequelize = openSequelize(db.url, { logging: false });
  t.teardown(() => sequelize.close());
  const count = async (sql: string): Promise<number> => Number((await sequelize.query<{ n: number | string }>(sql, { type: QueryTypes.SELECT }))[0]?.n ?? 0);
  // Every mail and every delivery has been tried and refused once before the sinks accept.
  const until = Date.now() + 20_000;
  while (Date.now() < until) {
    const tried = (await count('SELECT COUNT(*) AS n FROM mail_outbox WHERE attempts > 0')) === SIGNUPS && refusedIds.size === SIGNUPS;
    if (tried) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  t.is(await count('SELECT COUNT(*) AS n FROM mail_outbox WHERE attempts > 0'), SIGNUPS, 'every mail was refused once');
  t.is(refusedIds.size, SIGNUPS, 'every delivery was refused once');
  t.is(smtp.mails.length, 0);
  smtp.refuse = undefined;

  // Retries come due (mail after 1 s, webhooks after 5 s ± 10 %): all three workers find them.
  const toOf = (raw: string) => /^To: .*?([^\s<>]+@replicas\.test)/mu.exec(decodeMail(raw))?.[1];
  const deadline = Date.now() + 30_000;
  while ((smtp.mails.length < SIGNUPS || new Set(delivered.map((d) => d.id)).size < SIGNUPS) && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 100));
  }
  // Two more poll periods of every worker: a second delivery would show now.
  await new Promise((r) => setTimeout(r, 2500));
  for (const email of emails) t.is(smtp.mails.filter((m) => toOf(m) === email).length, 1, `one verification mail to ${email}`);
  t.is(smtp.mails.length, SIGNUPS, 'no other mail');
  const ids = delivered.map((d) => d.id);
  t.is(new Set(ids).size, SIGNUPS, 'one delivery per sign-up');
  t.is(ids.length, SIGNUPS, 'each delivery accepted once (no webhook-id twice)');
  t.true(ids.every((id) => refusedIds.has(id)), 'each delivery accepted on its retry');
  const payloadEmails = delivered.map((d) => ((JSON.parse(d.body) as { user?: { email?: string } }).user?.email ?? ''));
  t.deepEqual([...payloadEmails].sort(), [...emails].sort(), 'the deliveries name each signed-up user once');
  t.is(await count("SELECT COUNT(*) AS n FROM webhook_deliveries WHERE status = 'delivered'"), SIGNUPS, 'every delivery marked delivered');
  t.is(await count('SELECT COUNT(*) AS n FROM mail_outbox'), 0, 'the mail outbox is empty');
  t.is(await count("SELECT COUNT(*) AS n FROM webhook_logs WHERE outcome = 'delivered'"), SIGNUPS, 'one delivered attempt logged per delivery');

  // The rate limit: one client (127.0.0.2) sends 45 requests at once, 15 to each replica. Three separate limits would
  // allow 3 × (2 + 10) = 36; one shared limit allows what one replica alone allows the same client (127.0.0.3).
  const burst = async (address: string, targets: string[]): Promise<{ allowed: number; refused: number; seconds: number; retryAfter: boolean; codes: Set<string> }> => {
    const started = performance.now();
    const answers = await Promise.all(Array.from({ length: SPREAD }, (_, i) => jsonRequest(`${targets[i % targets.length]!}/v1/meta`, { localAddress: address })));
    const seconds = (performance.now() - started) / 1000;
    const refusedAnswers = answers.filter((a) => a.status === 429);
    return {
      allowed: answers.filter((a) => a.status === 200).length,
      refused: refusedAnswers.length,
      seconds,
      retryAfter: refusedAnswers.every((a) => Number(a.headers['retry-after']) >= 1),
      codes: new Set(refusedAnswers.map((a) => String(a.body['code']))),
    };
  };
  const spread = await burst('127.0.0.2', replicas.map((r) => r.url));
  const single = await burst('127.0.0.3', [replicas[1]!.url]);
  t.log(`rate limit ${RPS}/s + burst ${BURST}: ${SPREAD} requests spread over 3 replicas → ${spread.allowed} allowed (${spread.seconds.toFixed(2)} s); the same to one replica → ${single.allowed} allowed (${single.seconds.toFixed(2)} s)`);
  for (const [name, b] of [['spread', spread], ['single', single]] as const) {
    t.is(b.allowed + b.refused, SPREAD, `${name}: every request answered 200 or 429`);
    t.true(b.allowed >= RPS + BURST, `${name}: at least the steady rate and the burst are allowed (${b.allowed})`);
    // One more steady window for each second the burst took, and one for a window boundary crossed.
    t.true(b.allowed <= RPS * (Math.ceil(b.seconds) + 1) + BURST, `${name}: no more than one client's limit (${b.allowed})`);
    t.true(b.retryAfter, `${name}: every 429 says when to retry`);
    t.deepEqual([...b.codes], ['resource_exhausted']);
  }
  t.true(spread.allowed < 2 * (RPS + BURST), 'far fewer than three separate limits would allow');
  t.true(Math.abs(spread.allowed - single.allowed) <= RPS * (Math.ceil(Math.max(spread.seconds, single.seconds)) + 1), 'as many as on one replica');
});
