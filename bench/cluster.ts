/**
 * Cluster benchmark: Latchkey replicas (the real bin, one process each) on
 * one PostgreSQL database and Redis, behind haproxy (test/helpers/cluster.ts,
 * configured as deploy/cluster.sh), with 1, 2 and 3 replicas in the rotation:
 *
 * - `check_permissions` (a user's bearer token, 20 checks in turn, half
 *   allowed through a group, answered from the replicas' caches and mirrors
 *   once warm): autocannon through haproxy, 32 connections; `login` (bcrypt
 *   at the server's cost, a session in Redis, an audit row in SQL): 16
 *   closed loops through haproxy, each logging its own user in (a user's
 *   attempts are reserved a few at a time); requests per second, p50, p99;
 * - the write path: tuple writes (one new tuple each, one commit each) from
 *   8 closed loops through haproxy;
 * - where the time goes, per run: CPU seconds of the replicas, haproxy,
 *   this database's PostgreSQL backends (from /proc) and the load generator,
 *   against the machine's cores; and the database's share of the request
 *   time, from `pg_stat_activity` sampled every 10 ms (the mean number of
 *   this database's backends executing a statement, over the requests in
 *   flight). Why sampling: pg_stat_statements is not preloaded on the shared
 *   server here (it needs a restart), and PostgreSQL 15's per-database
 *   `active_time` is flushed by an idle backend up to 10 s late, which would
 *   smear each run's figure into the next;
 * - revoke propagation with 3 replicas: a delete through one replica (in
 *   turn), from the start of the call until both others deny, over HTTP;
 * - the projection's inputs: PostgreSQL's commit ceiling for small autocommit
 *   inserts on this machine (16 connections) and its CPU per commit, the
 *   connections each replica holds, and `max_connections`.
 *
 * The replicas not in the rotation keep running (idle; they follow the
 * writes' notifications). Answers are verified through haproxy and on every
 * replica before timing. The load average is sampled before and after: the
 * machine is shared, and other work running at the time shows there.
 * Standalone: `node bench/cluster.ts [--quick]`; needs PostgreSQL and Redis
 * (LATCHKEY_TEST_POSTGRES_URL, LATCHKEY_TEST_REDIS_URL; defaults on
 * 127.0.0.1) and haproxy.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import autocannon, { type Options, type Result } from 'autocannon';
import pg from 'pg';
import { createTestDatabase } from '../test/helpers/databases.ts';
import { freePort } from '../test/helpers/instances.ts';
import {
  CLUSTER_ADMIN_SECRET,
  haproxyInstalled,
  jsonRequest,
  startHaproxy,
  startReplicas,
  stopReplicas,
  type Balancer,
  type Replica,
} from '../test/helpers/cluster.ts';

const PASSWORD = 'correct horse battery staple';
const DSL = `model
  schema 1.1
type user
type group
  relations
    define member: [user]
type doc
  relations
    define viewer: [user, group#member]
`;
const DOCS = 1000;
const CHECK_CONNECTIONS = 32;
const LOGIN_CONNECTIONS = 16;
/**
 * Closed loops of tuple writes. They carry the admin secret, which the server
 * reserves per client IP before comparing (10 in flight at most): 8 stay
 * under that.
 */
const WRITE_LOOPS = 8;
/** Connections of the PostgreSQL commit-ceiling run. */
const COMMIT_CONNECTIONS = 16;
const CLK_TCK = 100;

interface Sample {
  wall: number;
  /** Busy and total CPU time of the whole machine (/proc/stat), in ticks. */
  machine: { busy: number; total: number };
  replicas: number;
  /** CPU seconds of each replica, in order (the first n are in rotation; the others follow the notifications). */
  each: number[];
  haproxy: number;
  postgres: Map<number, number>;
  self: NodeJS.CpuUsage;
}

/** CPU seconds (user + system) of a process, from /proc; 0 when it is gone. */
function cpuSeconds(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(f[11]) + Number(f[12])) / CLK_TCK;
  } catch {
    return 0;
  }
}

/** The machine's busy and total CPU ticks since boot (first line of /proc/stat). */
function machineTicks(): { busy: number; total: number } {
  const f = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/u).slice(1).map(Number);
  const total = f.slice(0, 8).reduce((a, b) => a + b, 0);
  return { busy: total - (f[3] ?? 0) - (f[4] ?? 0), total };
}

function pct(sorted: number[], q: number): number {
  return sorted.length === 0 ? 0 : sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
}

const r1 = (x: number): number => Math.round(x * 10) / 10;
const r3 = (x: number): number => Math.round(x * 1000) / 1000;

export async function run(options: { quick?: boolean } = {}): Promise<Record<string, unknown>> {
  process.env['LATCHKEY_TEST_POSTGRES_URL'] ||= 'postgres://postgres@127.0.0.1:5432/test';
  process.env['LATCHKEY_TEST_REDIS_URL'] ||= 'redis://127.0.0.1:6379';
  if (!haproxyInstalled()) throw new Error('haproxy is not installed (apt-get install -y haproxy)');
  const seconds = options.quick ? 3 : 8;
  const warmup = options.quick ? 1 : 2;
  const rounds = options.quick ? 20 : 60;
  const cores = cpus().length;
  const loadBefore = loadavg().map(r1);

  const db = await createTestDatabase('postgres', 'lk_bench_cluster');
  const dbName = new URL(db.url).pathname.slice(1);
  // The benchmark's own statistics queries; a pool replaces a connection that the server ended (it is shared).
  const pool = new pg.Pool({ connectionString: db.url, max: 2 });
  pool.on('error', () => undefined);
  const client = {
    async query<R extends pg.QueryResultRow>(sql: string, params: unknown[] = []): Promise<pg.QueryResult<R>> {
      try {
        return await pool.query<R>(sql, params);
      } catch {
        return pool.query<R>(sql, params);
      }
    },
  };
  const port = await freePort();
  const publicUrl = `http://127.0.0.1:${port}`;
  let replicas: Replica[] = [];
  let lb: Balancer | undefined;
  const samplers: (() => void)[] = [];
  try {
    replicas = await startReplicas({ count: 3, databaseUrl: db.url, redisUrl: process.env['LATCHKEY_TEST_REDIS_URL']!, publicUrl, clientId: `bench-cluster-${randomBytes(4).toString('hex')}` });
    const admin = { origin: publicUrl, 'x-service-admin-secret': CLUSTER_ADMIN_SECRET };
    const first = replicas[0]!.url;
    const ok = async (p: Promise<{ status: number; body: Record<string, unknown> }>, what: string) => {
      const r = await p;
      if (r.status !== 200) throw new Error(`${what}: ${r.status} ${JSON.stringify(r.body)}`);
      return r.body;
    };

    // Seed: the model, a user in groups g0..g4, documents whose viewers are the members of g(i mod 10).
    await ok(jsonRequest(`${first}/v1/admin/fga/model`, { body: { dsl: DSL }, headers: admin }), 'model');
    const email = 'bench@cluster.test';
    // One user per login loop: a user's login attempts are reserved before the password is compared, a handful at a time.
    const loginEmails = Array.from({ length: LOGIN_CONNECTIONS }, (_, i) => `login${i}@cluster.test`);
    for (const e of [email, ...loginEmails]) await ok(jsonRequest(`${first}/v1/signup`, { body: { email: e, password: PASSWORD }, headers: { origin: publicUrl } }), 'signup');
    const login = await ok(jsonRequest(`${first}/v1/login`, { body: { email, password: PASSWORD }, headers: { origin: publicUrl } }), 'login');
    const token = String(login['access_token']);
    const userId = String((login['user'] as { id: string }).id);
    const tuples = [
      ...[0, 1, 2, 3, 4].map((g) => ({ user: `user:${userId}`, relation: 'member', object: `group:g${g}` })),
      ...Array.from({ length: DOCS }, (_, i) => ({ user: `group:g${i % 10}#member`, relation: 'viewer', object: `doc:${i}` })),
    ];
    for (let i = 0; i < tuples.length; i += 100) await ok(jsonRequest(`${first}/v1/admin/fga/tuples`, { body: { tuples: tuples.slice(i, i + 100) }, headers: admin }), 'tuples');

    const checkBodies = Array.from({ length: 20 }, (_, i) => JSON.stringify({ checks: [{ relation: 'viewer', object: `doc:${i * 37}` }] }));
    const expected = Array.from({ length: 20 }, (_, i) => (i * 37) % 10 < 5);
    const bearer = { origin: publicUrl, authorization: `Bearer ${token}`, 'content-type': 'application/json' };
    const checkAt = async (url: string, i: number): Promise<boolean> => {
      const body = await ok(jsonRequest(`${url}/v1/check_permissions`, { body: JSON.parse(checkBodies[i]!), headers: bearer }), 'check');
      return (body['results'] as { allowed: boolean }[])[0]!.allowed;
    };

    // Verify the answers before timing: on every replica, and through haproxy (3 in rotation).
    lb = await startHaproxy({ port, replicas });
    for (const url of [...replicas.map((r) => r.url), lb.url]) {
      for (let i = 0; i < 20; i++) if ((await checkAt(url, i)) !== expected[i]) throw new Error(`check ${i} answered wrongly at ${url}`);
    }
    for (const e of loginEmails) {
      const viaLb = await ok(jsonRequest(`${lb.url}/v1/login`, { body: { email: e, password: PASSWORD }, headers: { origin: publicUrl } }), 'login via haproxy');
      if (typeof viaLb['access_token'] !== 'string') throw new Error('login through haproxy returned no token');
    }
    const w = await ok(jsonRequest(`${lb.url}/v1/admin/fga/tuples`, { body: { tuples: [{ user: `user:${userId}`, relation: 'viewer', object: 'doc:written' }] }, headers: admin }), 'write');
    for (const r of replicas) {
      const c = await ok(jsonRequest(`${r.url}/v1/check_permissions`, { body: { checks: [{ relation: 'viewer', object: 'doc:written' }], consistency_token: w['consistency_token'] }, headers: bearer }), 'check');
      if ((c['results'] as { allowed: boolean }[])[0]?.allowed !== true) throw new Error(`a write through haproxy is not seen by ${r.url}`);
    }
    await lb.close();
    lb = undefined;

    // ------------------------------------------------------------------ measurement plumbing
    const pgPids = async (): Promise<number[]> =>
      (await client.query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()', [dbName])).rows.map((r) => r.pid);
    const sample = async (balancer: Balancer): Promise<Sample> => ({
      wall: performance.now(),
      machine: machineTicks(),
      replicas: replicas.reduce((s, r) => s + cpuSeconds(r.child.pid ?? 0), 0),
      each: replicas.map((r) => cpuSeconds(r.child.pid ?? 0)),
      haproxy: cpuSeconds(balancer.pid),
      postgres: new Map((await pgPids()).map((p) => [p, cpuSeconds(p)])),
      self: process.cpuUsage(),
    });
    /** Samples this database's backends every 10 ms until stopped (or the run ends): mean executing, most connected. */
    const activity = (): { stop(): Promise<{ mean_active: number; max_connections: number; samples: number }> } => {
      let running = true;
      samplers.push(() => void (running = false));
      let n = 0;
      let active = 0;
      let most = 0;
      const loop = (async () => {
        while (running) {
          const r = await client.query<{ active: string; total: string }>(
            "SELECT count(*) FILTER (WHERE state = 'active') AS active, count(*) AS total FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()",
            [dbName],
          ).catch(() => undefined);
          if (r !== undefined) {
            n++;
            active += Number(r.rows[0]!.active);
            most = Math.max(most, Number(r.rows[0]!.total));
          }
          await new Promise((res) => setTimeout(res, 10));
        }
      })();
      return {
        async stop() {
          running = false;
          await loop;
          return { mean_active: n === 0 ? 0 : active / n, max_connections: most, samples: n };
        },
      };
    };
    const account = async (before: Sample, balancer: Balancer, requests: number, inFlight: number, act: { mean_active: number; max_connections: number }) => {
      const after = await sample(balancer);
      const wall = (after.wall - before.wall) / 1000;
      let postgres = 0;
      for (const [pid, cpu] of new Map((await pgPids()).map((p) => [p, cpuSeconds(p)]))) postgres += cpu - (before.postgres.get(pid) ?? 0);
      const self = (after.self.user - before.self.user + after.self.system - before.self.system) / 1e6;
      const share = (s: number) => r3(s / (wall * cores));
      const replicasCpu = after.replicas - before.replicas;
      const haproxyCpu = after.haproxy - before.haproxy;
      const busy = (after.machine.busy - before.machine.busy) / (after.machine.total - before.machine.total);
      const perRequest = (cpu: number) => r3((cpu * 1000) / Math.max(1, requests));
      return {
        // Shares of the machine's CPU time during the run; other_work is every other process (the machine is shared).
        cpu_share_of_machine: {
          replicas: share(replicasCpu),
          haproxy: share(haproxyCpu),
          postgres: share(postgres),
          load_generator: share(self),
          other_work: r3(Math.max(0, busy - (replicasCpu + haproxyCpu + postgres + self) / (wall * cores))),
          idle: r3(1 - busy),
        },
        replica_cpu_ms_per_request: perRequest(replicasCpu),
        // Replica by replica: those out of the rotation only follow the writes' notifications.
        replica_cpu_ms_per_request_each: after.each.map((c, i) => perRequest(c - (before.each[i] ?? 0))),
        haproxy_cpu_ms_per_request: perRequest(haproxyCpu),
        postgres_cpu_ms_per_request: perRequest(postgres),
        db_share_of_request_time: r3(act.mean_active / inFlight),
        db_ms_per_request: r3((act.mean_active * wall * 1000) / Math.max(1, requests)),
        connections_to_database: act.max_connections,
      };
    };
    /** autocannon through haproxy after a warm-up. */
    const cannon = async (balancer: Balancer, o: Options) => {
      if (warmup > 0) await autocannon({ ...o, duration: warmup });
      const before = await sample(balancer);
      const act = activity();
      const r: Result = await autocannon({ ...o, duration: seconds });
      const a = await act.stop();
      return {
        requests_per_second: Math.round(r.requests.average),
        p50_ms: r.latency.p50,
        p99_ms: r.latency.p99,
        errors: r.errors + r.timeouts,
        non_2xx: r.non2xx,
        ...(await account(before, balancer, r.requests.total, o.connections ?? 10, a)),
      };
    };
    /**
     * `loops` closed loops through haproxy (keep-alive connections), loop k sending `request(k, i)` for its i-th
     * request: requests per second of 200 answers, their p50 and p99, and the others counted as failed.
     */
    const loops = async (balancer: Balancer, count: number, request: (k: number, i: number) => { path: string; body: unknown; headers: Record<string, string> }) => {
      const latencies: number[] = [];
      let failed = 0;
      const loop = async (k: number, end: number) => {
        for (let i = 0; performance.now() < end; i++) {
          const r = request(k, i);
          const t0 = performance.now();
          try {
            const res = await fetch(`${balancer.url}${r.path}`, { method: 'POST', headers: { ...r.headers, 'content-type': 'application/json' }, body: JSON.stringify(r.body) });
            await res.arrayBuffer();
            if (res.status === 200) latencies.push(performance.now() - t0);
            else failed++;
          } catch {
            failed++;
          }
        }
      };
      let offset = 0;
      const phase = (ms: number) => {
        const end = performance.now() + ms;
        const base = offset;
        offset += 1_000_000;
        return Promise.all(Array.from({ length: count }, (_, k) => loop(k + base, end)));
      };
      await phase(warmup * 1000);
      latencies.length = 0;
      failed = 0;
      const before = await sample(balancer);
      const act = activity();
      const started = performance.now();
      await phase(seconds * 1000);
      const elapsed = (performance.now() - started) / 1000;
      const a = await act.stop();
      latencies.sort((x, y) => x - y);
      return {
        requests_per_second: Math.round(latencies.length / elapsed),
        p50_ms: r1(pct(latencies, 0.5)),
        p99_ms: r1(pct(latencies, 0.99)),
        failed,
        ...(await account(before, balancer, latencies.length, count, a)),
      };
    };

    // ------------------------------------------------------------------ 1, 2 and 3 replicas behind haproxy
    const byReplicas: Record<string, unknown> = {};
    for (const n of [1, 2, 3]) {
      lb = await startHaproxy({ port, replicas: replicas.slice(0, n) });
      const check = await cannon(lb, {
        url: lb.url,
        connections: CHECK_CONNECTIONS,
        requests: checkBodies.map((body) => ({ method: 'POST', path: '/v1/check_permissions', body, headers: bearer })),
      });
      const loginFigures = await loops(lb, LOGIN_CONNECTIONS, (k) => ({
        path: '/v1/login',
        body: { email: loginEmails[k % LOGIN_CONNECTIONS], password: PASSWORD },
        headers: { origin: publicUrl },
      }));
      // Each loop writes new tuples (its own user ids), so every write commits one.
      const write = await loops(lb, WRITE_LOOPS, (k, i) => ({
        path: '/v1/admin/fga/tuples',
        body: { tuples: [{ user: `user:w${n}-${k}-${i}`, relation: 'viewer', object: 'doc:w' }] },
        headers: admin,
      }));
      byReplicas[`${n}`] = { check_permissions: check, login: loginFigures, tuple_write: write };
      await lb.close();
      lb = undefined;
    }

    // ------------------------------------------------------------------ revoke propagation, 3 replicas
    const grant = { tuples: [{ user: `user:${userId}`, relation: 'viewer', object: 'doc:revoked' }] };
    const doc = (url: string) => jsonRequest(`${url}/v1/check_permissions`, { body: { checks: [{ relation: 'viewer', object: 'doc:revoked' }] }, headers: bearer })
      .then((r) => (r.body['results'] as { allowed: boolean }[])[0]!.allowed);
    const delays: number[] = [];
    const calls: number[] = [];
    for (let i = 0; i < rounds; i++) {
      const writer = replicas[i % 3]!;
      const others = replicas.filter((r) => r !== writer);
      await ok(jsonRequest(`${writer.url}/v1/admin/fga/tuples`, { body: grant, headers: admin }), 'grant');
      for (const r of others) {
        const until = performance.now() + 5000;
        while (!(await doc(r.url))) if (performance.now() > until) throw new Error('a grant did not reach a replica');
      }
      const started = performance.now();
      await ok(jsonRequest(`${writer.url}/v1/admin/fga/tuples/delete`, { body: grant, headers: admin }), 'revoke');
      calls.push(performance.now() - started);
      const seen = await Promise.all(others.map(async (r) => {
        while (await doc(r.url)) if (performance.now() - started > 5000) throw new Error('a revoke did not reach a replica');
        return performance.now() - started;
      }));
      delays.push(Math.max(...seen));
    }
    delays.sort((x, y) => x - y);
    calls.sort((x, y) => x - y);
    const propagation = {
      // The replicas run with the default revision poll, as a deployment would: a delay past it could be the poll's.
      revision_poll: '1s (default)',
      rounds,
      p50_ms: r1(pct(delays, 0.5)),
      p90_ms: r1(pct(delays, 0.9)),
      p99_ms: r1(pct(delays, 0.99)),
      max_ms: r1(delays.at(-1) ?? 0),
      delete_call_p50_ms: r1(pct(calls, 0.5)),
      delete_call_p99_ms: r1(pct(calls, 0.99)),
    };

    // ------------------------------------------------------------------ PostgreSQL alone: commit ceiling, connections
    const idle = (await client.query<{ n: string }>('SELECT count(*) AS n FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()', [dbName])).rows[0]!.n;
    await client.query('CREATE TABLE bench_commit (id bigint PRIMARY KEY, v text NOT NULL)');
    const writers = new pg.Pool({ connectionString: db.url, max: COMMIT_CONNECTIONS });
    let commits = 0;
    let id = 0;
    const commitLoop = async (end: number) => {
      while (performance.now() < end) {
        await writers.query('INSERT INTO bench_commit (id, v) VALUES ($1, $2)', [id++, 'x']);
        commits++;
      }
    };
    await Promise.all(Array.from({ length: COMMIT_CONNECTIONS }, () => commitLoop(performance.now() + 500)));
    const pgBefore = new Map((await pgPids()).map((p) => [p, cpuSeconds(p)]));
    commits = 0;
    const cStart = performance.now();
    await Promise.all(Array.from({ length: COMMIT_CONNECTIONS }, () => commitLoop(cStart + seconds * 1000)));
    const cElapsed = (performance.now() - cStart) / 1000;
    let pgCpu = 0;
    for (const [pid, cpu] of new Map((await pgPids()).map((p) => [p, cpuSeconds(p)]))) pgCpu += cpu - (pgBefore.get(pid) ?? 0);
    await writers.end();
    const settings = Object.fromEntries(
      (await client.query<{ name: string; setting: string }>("SELECT name, setting FROM pg_settings WHERE name IN ('max_connections', 'synchronous_commit', 'fsync', 'shared_buffers')")).rows.map((r) => [r.name, r.setting]),
    );
    const loadAfter = loadavg().map(r1);
    return {
      machine: { cores, load_average_before: loadBefore, load_average_after: loadAfter, note: 'other work ran on the machine at the same time (see the load averages)' },
      seconds_per_run: seconds,
      connections: { check_permissions: CHECK_CONNECTIONS, login: LOGIN_CONNECTIONS, tuple_write_loops: WRITE_LOOPS, commit_ceiling: COMMIT_CONNECTIONS },
      by_replicas: byReplicas,
      revoke_propagation_3_replicas: propagation,
      postgres: {
        commit_ceiling_per_second: Math.round(commits / cElapsed),
        cpu_ms_per_commit: r3((pgCpu * 1000) / Math.max(1, commits)),
        connections_held_by_3_idle_replicas: Number(idle),
        settings,
      },
    };
  } finally {
    for (const stop of samplers) stop();
    await lb?.close();
    await stopReplicas(replicas);
    await pool.end();
    await db.drop();
  }
}

if (import.meta.main) {
  const figures = await run({ quick: process.argv.includes('--quick') });
  process.stdout.write(`${JSON.stringify(figures, null, 2)}\n`);
}
