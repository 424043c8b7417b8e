/**
 * Three server processes behind haproxy (`/readyz` checks every 250 ms, out
 * after 2 failures, back after 2 passes) on one PostgreSQL and Redis. Twice,
 * under a bounded mixed load through haproxy (four clients, each one request
 * at a time: tuple writes, sign-ups and webhook registrations), one replica
 * is stopped: first with SIGKILL, then another with SIGTERM (its graceful
 * shutdown, `--shutdown-timeout=2s`). After each:
 *
 * - no acknowledged write is lost: every tuple write, sign-up and webhook
 *   registration answered 200 is in the database;
 * - no request fails but those in flight on the stopped process (SIGKILL: at
 *   most one per client, started before the process had exited; SIGTERM:
 *   none, its in-flight requests are finished);
 * - no stale allow: a tuple revoked through haproxy after the stop is denied
 *   by every surviving replica at once with the delete's consistency token,
 *   and within 2 s without it (the poll is 30 s: only the notification
 *   explains that);
 * - before the stop all three replicas served; haproxy marks the stopped
 *   replica DOWN within a bound (measured and logged) while the two others
 *   stay UP, and the requests after it (at least ten) are all answered, by
 *   the two others;
 * - the replica, started again on its port, rejoins: haproxy marks it UP, it
 *   serves requests again, and it denies the revoked tuple.
 */
import test from 'ava';
import { randomBytes } from 'node:crypto';
import { QueryTypes } from 'sequelize';
import { openSequelize } from '../../../engine/sql/sqlite_sequelize.ts';
import { createTestDatabase, redisUrl } from '../../helpers/databases.ts';
import { needs } from '../../helpers/needs.ts';
import {
  CLUSTER_ADMIN_SECRET, haproxyInstalled, jsonRequest, restartReplica, startBalancedReplicas, stopReplicas,
  type Balancer, type Replica,
} from '../../helpers/cluster.ts';

const PASSWORD = 'correct horse battery staple';
const DSL = 'model\n  schema 1.1\ntype user\ntype doc\n  relations\n    define viewer: [user]\n';
const CLIENTS = 4;
const LOAD_MS = 6000;
const STOP_AT_MS = 2000;
const CHECK_MS = 250;
const FALL = 2;

const postgres = process.env['LATCHKEY_TEST_POSTGRES_URL'];
const redis = redisUrl();

interface Outcome {
  at: number;
  kind: 'tuple' | 'signup' | 'webhook';
  key: string;
  status: number;
  servedBy: string;
}

needs(test, 'postgres', 'redis', 'haproxy')('a replica killed (SIGKILL), then another stopped (SIGTERM), under a mixed load through haproxy: nothing acknowledged lost, no stale allow, out of rotation within a bound, and each rejoins', async (t) => {
  t.timeout(120_000);
  t.truthy(postgres, 'LATCHKEY_TEST_POSTGRES_URL is required');
  t.truthy(redis, 'LATCHKEY_TEST_REDIS_URL is required');
  t.true(haproxyInstalled(), 'haproxy is required (.ci/run installs it)');
  const db = await createTestDatabase('postgres', 'lk_replicas_kill_load');
  t.teardown(() => db.drop());
  const run = randomBytes(4).toString('hex');
  const { replicas, lb, options } = await startBalancedReplicas(
    {
      count: 3, databaseUrl: db.url, redisUrl: redis!, clientId: `killload-${run}`,
      flags: ['--fga-cache-revision-poll=30s', '--webhook-allow-private-networks=true'],
    },
    { checkIntervalMs: CHECK_MS, fall: FALL },
  );
  t.teardown(() => stopReplicas(replicas));
  t.teardown(() => lb.close());
  const { publicUrl } = options;
  const admin = { origin: publicUrl, 'x-service-admin-secret': CLUSTER_ADMIN_SECRET };
  t.is((await jsonRequest(`${lb.url}/v1/admin/fga/model`, { body: { dsl: DSL }, headers: admin })).status, 200);

  // The user whose access is revoked after each stop.
  const email = `ann-${run}@replicas.test`;
  t.is((await jsonRequest(`${lb.url}/v1/signup`, { body: { email, password: PASSWORD }, headers: { origin: publicUrl } })).status, 200);
  const login = await jsonRequest(`${lb.url}/v1/login`, { body: { email, password: PASSWORD }, headers: { origin: publicUrl } });
  t.is(login.status, 200);
  const cookie = login.cookies.map((c) => c.split(';')[0]).join('; ');
  const userId = String((login.body['user'] as Record<string, unknown>)['id']);
  const check = async (r: Replica, object: string, token?: string): Promise<boolean> => {
    const res = await jsonRequest(`${r.url}/v1/check_permissions`, {
      body: { checks: [{ relation: 'viewer', object }], ...(token === undefined ? {} : { consistency_token: token }) },
      headers: { origin: publicUrl, cookie },
    });
    t.is(res.status, 200, JSON.stringify(res.body));
    return (res.body['results'] as { allowed: boolean }[])[0]!.allowed;
  };

  const outcomes: Outcome[] = [];
  let n = 0;
  for (const [signal, i] of [['SIGKILL', 1], ['SIGTERM', 2]] as const) {
    const victim = replicas[i]!;
    const survivors = replicas.filter((r) => r !== victim);
    // A grant every replica has cached as allowed before the stop.
    const object = `doc:stale-${signal}`;
    t.is((await jsonRequest(`${lb.url}/v1/admin/fga/tuples`, { body: { tuples: [{ user: `user:${userId}`, relation: 'viewer', object }] }, headers: admin })).status, 200);
    for (const r of replicas) {
      const until = Date.now() + 2000;
      while (!(await check(r, object))) t.true(Date.now() < until, `the grant reached ${r.url}`);
    }

    const phase: Outcome[] = [];
    const started = performance.now();
    const client = async (c: number): Promise<void> => {
      while (performance.now() - started < LOAD_MS) {
        const k = n++;
        const kind = k % 6 === c % 6 ? 'signup' : k % 6 === (c + 3) % 6 ? 'webhook' : 'tuple';
        const key = kind === 'signup' ? `k${k}-${run}@replicas.test` : kind === 'webhook' ? `http://127.0.0.1:9/hook-${k}` : `doc:k${k}`;
        const at = performance.now() - started;
        try {
          const r = kind === 'signup'
            ? await jsonRequest(`${lb.url}/v1/signup`, { body: { email: key, password: PASSWORD }, headers: { origin: publicUrl } })
            : kind === 'webhook'
              ? await jsonRequest(`${lb.url}/v1/admin/add_webhook`, { body: { event_name: 'user.deleted', endpoint: key }, headers: admin })
              : await jsonRequest(`${lb.url}/v1/admin/fga/tuples`, { body: { tuples: [{ user: `user:k${k}`, relation: 'viewer', object: key }] }, headers: admin });
          phase.push({ at, kind, key, status: r.status, servedBy: r.headers['x-served-by'] ?? '' });
        } catch {
          phase.push({ at, kind, key, status: 0, servedBy: '' });
        }
      }
    };
    let exitedAt = Infinity;
    const stopper = (async () => {
      await new Promise((r) => setTimeout(r, STOP_AT_MS));
      const stoppedAt = performance.now() - started;
      victim.child.kill(signal);
      void victim.exited.then(() => (exitedAt = performance.now() - started));
      const downAt = await downWithin(lb, victim, started, LOAD_MS + 3000);
      // Revoked after the stop: denied on every survivor at once with the token, and within 2 s without it.
      const del = await jsonRequest(`${lb.url}/v1/admin/fga/tuples/delete`, { body: { tuples: [{ user: `user:${userId}`, relation: 'viewer', object }] }, headers: admin });
      t.is(del.status, 200, JSON.stringify(del.body));
      const revokedAt = performance.now();
      for (const r of survivors) t.false(await check(r, object, String(del.body['consistency_token'])), `${signal}: ${r.url} denies with the delete's token`);
      const denied: number[] = [];
      for (const r of survivors) {
        while (await check(r, object)) t.true(performance.now() - revokedAt < 2000, `${signal}: ${r.url} still allows 2 s after the revoke (poll 30 s)`);
        denied.push(performance.now() - revokedAt);
      }
      return { stoppedAt, downAt, denied };
    })();
    await Promise.all(Array.from({ length: CLIENTS }, (_, c) => client(c)));
    const { stoppedAt, downAt, denied } = await stopper;
    await victim.exited;
    outcomes.push(...phase);

    const states = await lb.states();
    t.is(states[`replica${victim.index}`]?.startsWith('DOWN'), true, `${signal}: out of the rotation`);
    for (const r of survivors) t.is(states[`replica${r.index}`], 'UP', `${signal}: replica ${r.index} stays in the rotation`);
    // SIGKILL: FALL failed checks; SIGTERM: the replica fails /readyz as soon as it drains. The slack is for a busy machine.
    t.true(downAt - stoppedAt <= CHECK_MS * (FALL + 4), `${signal}: marked down ${Math.round(downAt - stoppedAt)} ms after the stop`);
    const failed = phase.filter((o) => o.status !== 200);
    const after = phase.filter((o) => o.at > downAt);
    const before = phase.filter((o) => o.at < stoppedAt && o.status === 200);
    t.deepEqual([...new Set(before.map((o) => o.servedBy))].sort(), ['replica1', 'replica2', 'replica3'], `${signal}: before the stop all three replicas served`);
    t.true(after.length >= 10, `${signal}: requests went on after the replica was marked down (${after.length})`);
    t.true(after.every((o) => o.status === 200 && o.servedBy !== `replica${victim.index}`), `${signal}: after it was marked down every request was answered by the others`);
    if (signal === 'SIGTERM') t.deepEqual(failed, [], 'SIGTERM: the stopped replica finished what it had');
    else {
      t.true(failed.length <= CLIENTS, `SIGKILL: ${failed.length} failed`);
      for (const f of failed) t.true(f.at <= exitedAt, `SIGKILL: only requests in flight on the killed process fail: ${JSON.stringify(f)} (exited at ${Math.round(exitedAt)} ms)`);
    }
    t.true(phase.every((o) => o.status === 0 || o.status < 500 || o.at <= exitedAt), `${signal}: no 5xx but in flight on the stopped process`);

    // The replica rejoins on its port.
    const back = await restartReplica(options, victim);
    replicas[i] = back;
    const upUntil = Date.now() + 10_000;
    while ((await lb.states())[`replica${back.index}`] !== 'UP') {
      t.true(Date.now() < upUntil, `${signal}: replica ${back.index} back in the rotation`);
      await new Promise((r) => setTimeout(r, 50));
    }
    const served = new Set<string>();
    for (let k = 0; k < 9; k++) served.add((await jsonRequest(`${lb.url}/v1/meta`)).headers['x-served-by'] ?? '');
    t.true(served.has(`replica${back.index}`), `${signal}: the rejoined replica serves again (${[...served].join(', ')})`);
    t.false(await check(back, object), `${signal}: the rejoined replica denies the revoked tuple`);
    t.log(
      `${signal}: ${phase.length} requests (${phase.filter((o) => o.status === 200).length} acknowledged), stopped at ${Math.round(stoppedAt)} ms, ` +
        `exited ${Math.round(exitedAt - stoppedAt)} ms later, DOWN ${Math.round(downAt - stoppedAt)} ms after the stop, ${failed.length} failed; ` +
        `revoke denied by the survivors ${denied.map((d) => d.toFixed(0)).join(' and ')} ms after the delete; rejoined`,
    );
  }

  // No acknowledged write lost, over both phases.
  const sequelize = openSequelize(db.url, { logging: false });
  t.teardown(() => sequelize.close());
  const rows = async (sql: string, col: string) => new Set((await sequelize.query<Record<string, string>>(sql, { type: QueryTypes.SELECT })).map((r) => r[col]!));
  const objects = await rows("SELECT object_type || ':' || object_id AS o FROM fga_tuple", 'o');
  const users = await rows('SELECT email FROM users', 'email');
  const hooks = await rows('SELECT endpoint FROM webhooks', 'endpoint');
  const acked = outcomes.filter((o) => o.status === 200);
  for (const kind of ['tuple', 'signup', 'webhook'] as const) t.true(acked.some((o) => o.kind === kind), `some ${kind} acknowledged`);
  const missing = acked.filter((o) => !(o.kind === 'tuple' ? objects : o.kind === 'signup' ? users : hooks).has(o.key));
  t.deepEqual(missing, [], 'every acknowledged write is in the database');
});

/** When (ms since `started`) haproxy first reported `victim` DOWN; Infinity when not within `untilMs`. */
async function downWithin(lb: Balancer, victim: Replica, started: number, untilMs: number): Promise<number> {
  while (performance.now() - started < untilMs) {
    if (((await lb.states())[`replica${victim.index}`] ?? '').startsWith('DOWN')) return performance.now() - started;
    await new Promise((r) => setTimeout(r, 20));
  }
  return Infinity;
}

