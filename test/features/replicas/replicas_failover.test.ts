/**
 * Three server processes behind haproxy (Debian's package, configured as
 * deploy/cluster.sh does: round robin, `GET /readyz` checks, a refused
 * connection retried on another replica) on one PostgreSQL and Redis. Under
 * a bounded load of tuple writes and sign-ups through haproxy, one replica is
 * killed with SIGKILL. Asserted:
 *
 * - no acknowledged write is lost: every tuple write and sign-up answered 200
 *   is in the database;
 * - haproxy stops routing to the dead replica: its health checks mark it
 *   DOWN within the configured bound, and requests fail only while they were
 *   in flight on the killed process (at most one per client connection);
 *   every later request is answered, by the two others.
 */
import test from 'ava';
import { randomBytes } from 'node:crypto';
import { QueryTypes } from 'sequelize';
import { openSequelize } from '../../../engine/sql/sqlite_sequelize.ts';
import { createTestDatabase, redisUrl } from '../../helpers/databases.ts';
import { needs } from '../../helpers/needs.ts';
import { freePort } from '../../helpers/instances.ts';
import { CLUSTER_ADMIN_SECRET, haproxyInstalled, jsonRequest, startHaproxy, startReplicas, stopReplicas } from '../../helpers/cluster.ts';

const PASSWORD = 'correct horse battery staple';
const DSL = 'model\n  schema 1.1\ntype user\ntype doc\n  relations\n    define viewer: [user]\n';
/** The load: 4 clients, one request at a time each, for 8 s; the kill 2.5 s in. */
const CLIENTS = 4;
const LOAD_MS = 8000;
const KILL_AT_MS = 2500;
/** Health checks every 250 ms, out after 2 failures. */
const CHECK_MS = 250;
const FALL = 2;

const postgres = process.env['LATCHKEY_TEST_POSTGRES_URL'];
const redis = redisUrl();

interface Outcome {
  at: number;
  kind: 'tuple' | 'signup';
  key: string;
  status: number;
  servedBy: string;
}

needs(test, 'postgres', 'redis', 'haproxy')('a replica killed under load behind haproxy: no acknowledged write is lost, and haproxy stops routing to it', async (t) => {
  t.timeout(90_000);
  t.truthy(postgres, 'LATCHKEY_TEST_POSTGRES_URL is required');
  t.truthy(redis, 'LATCHKEY_TEST_REDIS_URL is required');
  t.true(haproxyInstalled(), 'haproxy is required (.ci/run installs it)');
  const db = await createTestDatabase('postgres', 'lk_replicas_failover');
  t.teardown(() => db.drop());
  const run = randomBytes(4).toString('hex');
  const port = await freePort();
  const publicUrl = `http://127.0.0.1:${port}`;
  const replicas = await startReplicas({ count: 3, databaseUrl: db.url, redisUrl: redis!, publicUrl, clientId: `failover-${run}` });
  t.teardown(() => stopReplicas(replicas));
  const lb = await startHaproxy({ port, replicas, checkIntervalMs: CHECK_MS, fall: FALL });
  t.teardown(() => lb.close());
  const admin = { origin: publicUrl, 'x-service-admin-secret': CLUSTER_ADMIN_SECRET };
  t.is((await jsonRequest(`${lb.url}/v1/admin/fga/model`, { body: { dsl: DSL }, headers: admin })).status, 200);

  const outcomes: Outcome[] = [];
  const started = performance.now();
  let n = 0;
  const client = async (c: number): Promise<void> => {
    while (performance.now() - started < LOAD_MS) {
      const i = n++;
      // One sign-up for every three tuple writes (a sign-up costs a password hash).
      const kind = i % 4 === c % 4 ? 'signup' : 'tuple';
      const key = kind === 'signup' ? `f${i}-${run}@replicas.test` : `doc:f${i}`;
      const at = performance.now() - started;
      try {
        const r = kind === 'signup'
          ? await jsonRequest(`${lb.url}/v1/signup`, { body: { email: key, password: PASSWORD }, headers: { origin: publicUrl } })
          : await jsonRequest(`${lb.url}/v1/admin/fga/tuples`, { body: { tuples: [{ user: `user:f${i}`, relation: 'viewer', object: key }] }, headers: admin });
        outcomes.push({ at, kind, key, status: r.status, servedBy: r.headers['x-served-by'] ?? '' });
      } catch {
        // No answer: the outcome of this request is unknown (not acknowledged).
        outcomes.push({ at, kind, key, status: 0, servedBy: '' });
      }
    }
  };
  const victim = replicas[1]!;
  /** When this process saw the killed one exit: until then it may still accept connections it will never answer. */
  let exitedAt = Infinity;
  const killer = (async () => {
    await new Promise((r) => setTimeout(r, KILL_AT_MS));
    const killedAt = performance.now() - started;
    victim.child.kill('SIGKILL');
    void victim.exited.then(() => (exitedAt = performance.now() - started));
    let downAt = Infinity;
    while (performance.now() - started < LOAD_MS) {
      const state = (await lb.states())[`replica${victim.index}`] ?? '';
      if (state.startsWith('DOWN')) {
        downAt = performance.now() - started;
        break;
      }
      await new Promise((r) => setTimeout(r, 20));
    }
    return { killedAt, downAt };
  })();
  await Promise.all(Array.from({ length: CLIENTS }, (_, c) => client(c)));
  const { killedAt, downAt } = await killer;
  await victim.exited;

  const states = await lb.states();
  t.deepEqual(states, { replica1: 'UP', replica2: 'DOWN', replica3: 'UP' }, 'the killed replica is out of the rotation');
  // Nominally FALL checks (0.5-0.75 s); the slack is for a busy machine delaying haproxy's timers.
  t.true(downAt - killedAt <= CHECK_MS * (FALL + 4), `marked down ${Math.round(downAt - killedAt)} ms after the kill (checks every ${CHECK_MS} ms, ${FALL} to fail)`);

  const failed = outcomes.filter((o) => o.status !== 200);
  const before = outcomes.filter((o) => o.at < killedAt);
  const after = outcomes.filter((o) => o.at > downAt);
  t.deepEqual([...new Set(before.filter((o) => o.status === 200).map((o) => o.servedBy))].sort(), ['replica1', 'replica2', 'replica3'], 'before the kill all three replicas served');
  t.true(after.length > 20, `requests went on after the replica was marked down (${after.length})`);
  t.true(after.every((o) => o.status === 200 && o.servedBy !== `replica${victim.index}`), 'after it was marked down every request was answered by the others');
  // Only a request in flight on the killed process can fail (a refused connection is retried elsewhere).
  t.true(failed.length <= CLIENTS, `failed requests: ${failed.length}`);
  for (const f of failed) t.true(f.at <= exitedAt, `a request started at ${Math.round(f.at)} ms, after the killed process had exited (${Math.round(exitedAt)} ms; killed at ${Math.round(killedAt)} ms), failed: ${JSON.stringify(f)}`);

  // No acknowledged write lost.
  const sequelize = openSequelize(db.url, { logging: false });
  t.teardown(() => sequelize.close());
  const objects = new Set((await sequelize.query<{ o: string }>("SELECT object_type || ':' || object_id AS o FROM fga_tuple", { type: QueryTypes.SELECT })).map((r) => r.o));
  const users = new Set((await sequelize.query<{ email: string }>('SELECT email FROM users', { type: QueryTypes.SELECT })).map((r) => r.email));
  const acked = outcomes.filter((o) => o.status === 200);
  for (const o of acked) t.true(o.kind === 'tuple' ? objects.has(o.key) : users.has(o.key), `acknowledged ${o.kind} ${o.key}`);
  t.log(
    `${outcomes.length} requests through haproxy (${acked.filter((o) => o.kind === 'tuple').length} tuple writes and ${acked.filter((o) => o.kind === 'signup').length} sign-ups acknowledged), ` +
      `replica killed at ${Math.round(killedAt)} ms (exited ${Math.round(exitedAt - killedAt)} ms later), marked DOWN ${Math.round(downAt - killedAt)} ms later, ${failed.length} request(s) failed (in flight at the kill), ` +
      `${after.length} answered after, by ${[...new Set(after.map((o) => o.servedBy))].sort().join(' and ')}`,
  );
});
