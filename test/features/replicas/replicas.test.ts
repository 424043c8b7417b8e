/**
 * Three server processes on one PostgreSQL database and the shared Redis, as
 * replicas behind a load balancer would run (docs/scaling.md): a user logged
 * in through one is recognised by the others; a revoke_access through one
 * ends the user's sessions on all of them; a tuple delete through one is
 * denied by the others at once (the revision notification: the revision poll
 * is set to 30 s), and how long that takes is measured (p50/p99 in the log,
 * docs/scaling.md); the consistency token of a write makes a check on another
 * replica at least as fresh as the write; and the login lockout counts
 * wrong passwords across replicas. Rate limits and the mail and webhook
 * workers: replicas_workers.test.ts; a replica killed behind haproxy:
 * replicas_kill_under_load.test.ts.
 */
import test from 'ava';
import { randomBytes } from 'node:crypto';
import { createTestDatabase, redisUrl } from '../../helpers/databases.ts';
import { needs } from '../../helpers/needs.ts';
import { freePort } from '../../helpers/instances.ts';
import { CLUSTER_ADMIN_SECRET, startReplicas, stopReplicas, type Replica } from '../../helpers/cluster.ts';

const PASSWORD = 'correct horse battery staple';
const DSL = 'model\n  schema 1.1\ntype user\ntype doc\n  relations\n    define viewer: [user]\n';
/** Revoke rounds measured (write call start → every other replica denies). */
const ROUNDS = 30;

async function call(
  url: string,
  path: string,
  body: unknown,
  o: { admin?: boolean; cookie?: string; bearer?: string; method?: string } = {},
): Promise<{ status: number; body: Record<string, unknown>; cookies: string[] }> {
  const headers: Record<string, string> = { 'content-type': 'application/json', origin: publicUrl };
  if (o.admin === true) headers['x-service-admin-secret'] = CLUSTER_ADMIN_SECRET;
  if (o.cookie !== undefined) headers['cookie'] = o.cookie;
  if (o.bearer !== undefined) headers['authorization'] = `Bearer ${o.bearer}`;
  const method = o.method ?? 'POST';
  const res = await fetch(`${url}${path}`, { method, headers, ...(method === 'GET' ? {} : { body: JSON.stringify(body) }) });
  const text = await res.text();
  return { status: res.status, body: text ? (JSON.parse(text) as Record<string, unknown>) : {}, cookies: res.headers.getSetCookie() };
}

/** The one public URL of the deployment (the load balancer's): every replica issues and accepts tokens for it. */
let publicUrl = '';

const postgres = process.env['LATCHKEY_TEST_POSTGRES_URL'];
const redis = redisUrl();

needs(test, 'postgres', 'redis')('three replicas on one PostgreSQL and Redis: sessions, revoke_access, tuple deletes, consistency tokens and the login lockout are shared', async (t) => {
  t.timeout(90_000);
  t.truthy(postgres, 'LATCHKEY_TEST_POSTGRES_URL is required');
  t.truthy(redis, 'LATCHKEY_TEST_REDIS_URL is required');
  const db = await createTestDatabase('postgres', 'lk_replicas');
  t.teardown(() => db.drop());
  // Keys of this run: the client id namespaces the rate limiter and admin-secret counters; users are this run's own.
  const run = randomBytes(4).toString('hex');
  publicUrl = `http://127.0.0.1:${await freePort()}`;
  // The revision poll at 30 s: a replica that denies a revoked tuple sooner learned of it from the notification.
  const replicas = await startReplicas({
    count: 3, databaseUrl: db.url, redisUrl: redis!, publicUrl, clientId: `replicas-${run}`, flags: ['--fga-cache-revision-poll=30s'],
  });
  t.teardown(() => stopReplicas(replicas));
  const [r1, r2, r3] = replicas as [Replica, Replica, Replica];

  // A user signed up and logged in through replica 1 is recognised by 2 and 3 (cookie and bearer token).
  const email = `ann-${run}@replicas.test`;
  t.is((await call(r1.url, '/v1/signup', { email, password: PASSWORD })).status, 200);
  const login = await call(r1.url, '/v1/login', { email, password: PASSWORD });
  t.is(login.status, 200);
  const cookie = login.cookies.map((c) => c.split(';')[0]).join('; ');
  const bearer = login.body['access_token'] as string;
  const userId = ((login.body['user'] as Record<string, unknown> | undefined)?.['id'] ?? '') as string;
  t.truthy(userId);
  for (const r of replicas) {
    t.is((await call(r.url, '/v1/profile', undefined, { method: 'GET', cookie })).status, 200, `cookie recognised by ${r.url}`);
    t.is((await call(r.url, '/v1/profile', undefined, { method: 'GET', bearer })).status, 200, `token recognised by ${r.url}`);
  }

  // A tuple written and deleted through replica 2 is followed by 1 and 3 at once (30 s poll: only the notification explains it).
  t.is((await call(r2.url, '/v1/admin/fga/model', { dsl: DSL }, { admin: true })).status, 200);
  const tuple = { user: `user:${userId}`, relation: 'viewer', object: 'doc:plan' };
  const check = async (r: Replica, token?: string) => {
    const res = await call(r.url, '/v1/check_permissions', { checks: [{ relation: 'viewer', object: 'doc:plan' }], ...(token === undefined ? {} : { consistency_token: token }) }, { cookie });
    t.is(res.status, 200, JSON.stringify(res.body));
    return (res.body['results'] as { allowed: boolean }[])[0]!.allowed;
  };
  const written = await call(r2.url, '/v1/admin/fga/tuples', { tuples: [tuple] }, { admin: true });
  t.is(written.status, 200);
  const writeToken = written.body['consistency_token'] as string;
  t.regex(writeToken, /^\d+$/u);
  t.true(await check(r1, writeToken), 'with the token, the write is seen on replica 1');
  t.true(await check(r3, writeToken), 'with the token, the write is seen on replica 3');
  t.true(await check(r1));
  t.true(await check(r3)); // cached now
  const deleted = await call(r2.url, '/v1/admin/fga/tuples/delete', { tuples: [tuple] }, { admin: true });
  t.is(deleted.status, 200);
  const deletedAt = performance.now();
  t.false(await check(r1, deleted.body['consistency_token'] as string), 'with the token, the delete is seen');
  for (const r of [r1, r3]) {
    while (await check(r)) t.true(performance.now() - deletedAt < 2000, `replica ${r.url} still allows 2 s after the delete (poll is 30 s)`);
  }

  // Revoke propagation, measured: a grant then a delete through one replica (in turn), from the start of the
  // delete call until each of the other two has answered "denied" (each asked in a loop, cache warm before).
  const delays: number[] = [];
  const returns: number[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    const writer = replicas[i % 3]!;
    const others = replicas.filter((r) => r !== writer);
    t.is((await call(writer.url, '/v1/admin/fga/tuples', { tuples: [tuple] }, { admin: true })).status, 200);
    for (const r of others) {
      const until = performance.now() + 2000;
      while (!(await check(r))) t.true(performance.now() < until, `grant ${i} reached ${r.url}`);
      t.true(await check(r)); // now cached
    }
    const started = performance.now();
    t.is((await call(writer.url, '/v1/admin/fga/tuples/delete', { tuples: [tuple] }, { admin: true })).status, 200);
    returns.push(performance.now() - started);
    const denied = await Promise.all(others.map(async (r) => {
      while (await check(r)) {
        if (performance.now() - started > 2000) break;
      }
      return performance.now() - started;
    }));
    const last = Math.max(...denied);
    t.true(last < 2000, `round ${i}: every replica denied within 2 s (poll is 30 s)`);
    delays.push(last);
  }
  const pct = (xs: number[], q: number) => [...xs].sort((x, y) => x - y)[Math.min(xs.length - 1, Math.floor(q * xs.length))]!;
  t.log(
    `revoke propagation over NOTIFY, 3 replicas, ${ROUNDS} rounds (delete call start → both other replicas deny, over HTTP): ` +
      `p50 ${pct(delays, 0.5).toFixed(1)} ms, p99 ${pct(delays, 0.99).toFixed(1)} ms, max ${Math.max(...delays).toFixed(1)} ms; ` +
      `the delete call itself: p50 ${pct(returns, 0.5).toFixed(1)} ms, p99 ${pct(returns, 0.99).toFixed(1)} ms`,
  );

  // revoke_access through replica 3 ends the user's sessions everywhere.
  t.is((await call(r3.url, '/v1/admin/revoke_access', { user_id: userId }, { admin: true })).status, 200);
  for (const r of replicas) {
    t.is((await call(r.url, '/v1/profile', undefined, { method: 'GET', cookie })).status, 401, `session ended on ${r.url}`);
    t.not((await call(r.url, '/v1/profile', undefined, { method: 'GET', bearer })).status, 200, `token refused on ${r.url}`);
    t.not((await call(r.url, '/v1/login', { email, password: PASSWORD })).status, 200, `no new login on ${r.url}`);
  }

  // The login lockout counts wrong passwords across replicas: 5 allowed in the window, spread over the three.
  const bob = `bob-${run}@replicas.test`;
  t.is((await call(r1.url, '/v1/signup', { email: bob, password: PASSWORD })).status, 200);
  for (let i = 0; i < 5; i++) t.is((await call(replicas[i % 3]!.url, '/v1/login', { email: bob, password: 'wrong password!' })).status, 401, `wrong password ${i + 1}`);
  const locked = await call(r3.url, '/v1/login', { email: bob, password: PASSWORD });
  t.is(locked.status, 429, 'the sixth attempt, even with the right password, is refused on another replica');
  t.is(locked.body['reason'], 'too_many_attempts');
});
