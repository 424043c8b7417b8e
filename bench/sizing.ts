/**
 * Sizing benchmark (`npm run bench -- sizing [-- --quick]`): what one request
 * of each user-facing flow costs, with 1, 2 and 3 replicas (the real bin, one
 * process each) behind haproxy on one PostgreSQL database and a Redis of its
 * own (a redis-server on a free port, so that its command counter counts this
 * benchmark's commands only). The flows, each from 8 closed loops through
 * haproxy on keep-alive connections:
 *
 * - `login`: email and password (bcrypt at the server's cost), one user per
 *   loop;
 * - `refresh`: `POST /v1/session` with the loop's refresh token and access
 *   token, both rotated on every call (each loop carries the tokens it was
 *   last given);
 * - `validate`: `POST /v1/validate_jwt_token` of an access token (the
 *   signature, and the live session in Redis);
 * - `check`: `check_permissions` with a bearer token, 20 documents in turn,
 *   half allowed through a group;
 * - `list`: `list_permissions` of the user's viewable documents (100 of 200).
 *
 * Answers are verified through haproxy and on every replica before timing.
 * For each flow and replica count: requests per second, p50 and p99, and per
 * request the CPU time of the replicas (all three: those out of the rotation
 * only follow notifications), haproxy and this database's PostgreSQL
 * backends (from /proc), the Redis commands processed (`INFO stats`), and
 * the most connections this database had open during the run
 * (`pg_stat_activity`). The load average is reported before and after: the
 * machine may be shared, and the CPU figures per request hold better than
 * the rates then.
 *
 * The database writes of each flow, per request: this database's commits
 * and rows inserted, updated and deleted (`pg_stat_database`), and the WAL
 * written and flushed (`pg_stat_wal`: bytes, records, `wal_sync` calls, i.e.
 * the write IOPS the log costs). Backends report these counters up to 10 s
 * late when idle (PostgreSQL 15's `PGSTAT_IDLE_INTERVAL`), so each flow is
 * sampled before its warm-up and again 11 s after its last request, over
 * every request answered in between; what the replicas do on their own in
 * that time (the pollers' reads, each a commit) is measured once before the
 * runs, with no request, and subtracted at its rate. `pg_stat_wal` counts
 * the whole server: on a server shared with other work its figures carry
 * that work's WAL too (the baseline takes out only its average).
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { connect } from 'node:net';
import { cpus, loadavg } from 'node:os';
import pg from 'pg';
import { createTestDatabase } from '../test/helpers/databases.ts';
import { freePort, killOnExit } from '../test/helpers/instances.ts';
import { CLUSTER_ADMIN_SECRET, haproxyInstalled, jsonRequest, startHaproxy, startReplicas, stopReplicas, type Balancer, type Replica } from '../test/helpers/cluster.ts';

const PASSWORD = 'correct horse battery staple';
const DSL = 'model\n  schema 1.1\ntype user\ntype group\n  relations\n    define member: [user]\ntype doc\n  relations\n    define viewer: [user, group#member]\n';
const DOCS = 200;
const LOOPS = 8;
const CLK_TCK = 100;
const FLOWS = ['login', 'refresh', 'validate', 'check', 'list'] as const;
type Flow = (typeof FLOWS)[number];

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

/** One inline command to the Redis on `port`; its reply text. */
function redisCommand(port: number, command: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = connect(port, '127.0.0.1');
    let out = '';
    s.on('data', (d: Buffer) => {
      out += d.toString();
      // A bulk reply: `$<length>\r\n<payload>\r\n`.
      const m = /^\$(\d+)\r\n/u.exec(out);
      if (m && Buffer.byteLength(out) >= m[0].length + Number(m[1]) + 2) s.end();
      else if (/^[+-:]/u.test(out) && out.endsWith('\r\n')) s.end();
    });
    s.on('end', () => resolve(out));
    s.on('error', reject);
    s.write(`${command}\r\n`);
  });
}

/** This database's commit and row counters and the server's WAL counters. */
interface DbCounters {
  commits: number;
  inserted: number;
  updated: number;
  deleted: number;
  wal_bytes: number;
  wal_records: number;
  wal_syncs: number;
  /** When sampled (performance.now(), ms). */
  at: number;
}
const COUNTERS = ['commits', 'inserted', 'updated', 'deleted', 'wal_bytes', 'wal_records', 'wal_syncs'] as const;

async function dbCounters(pool: pg.Pool, dbName: string): Promise<DbCounters> {
  const d = (
    await pool.query<Record<string, string>>(
      'SELECT xact_commit AS commits, tup_inserted AS inserted, tup_updated AS updated, tup_deleted AS deleted FROM pg_stat_database WHERE datname = $1',
      [dbName],
    )
  ).rows[0]!;
  // pg_stat_wal exists from PostgreSQL 14; before it the WAL figures stay 0.
  const w = (await pool.query<Record<string, string>>('SELECT wal_bytes, wal_records, wal_sync AS wal_syncs FROM pg_stat_wal').catch(() => ({ rows: [] }))).rows[0] ?? {};
  const at = performance.now();
  return {
    commits: Number(d['commits']), inserted: Number(d['inserted']), updated: Number(d['updated']), deleted: Number(d['deleted']),
    wal_bytes: Number(w['wal_bytes'] ?? 0), wal_records: Number(w['wal_records'] ?? 0), wal_syncs: Number(w['wal_syncs'] ?? 0), at,
  };
}

/** Counters' growth per second between two samples. */
function ratesOf(a: DbCounters, b: DbCounters): Record<(typeof COUNTERS)[number], number> {
  const s = Math.max(0.001, (b.at - a.at) / 1000);
  return Object.fromEntries(COUNTERS.map((k) => [k, (b[k] - a[k]) / s])) as Record<(typeof COUNTERS)[number], number>;
}

/** PostgreSQL 15 flushes an idle backend's statistics up to 10 s late. */
const STATS_SETTLE_MS = 11_000;

async function redisCommands(port: number): Promise<number> {
  return Number(/total_commands_processed:(\d+)/u.exec(await redisCommand(port, 'INFO stats'))?.[1] ?? 0);
}

const pct = (sorted: number[], q: number): number => (sorted.length === 0 ? 0 : sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!);
const r1 = (x: number): number => Math.round(x * 10) / 10;
const r3 = (x: number): number => Math.round(x * 1000) / 1000;

export async function run(options: { quick?: boolean } = {}): Promise<Record<string, unknown>> {
  process.env['LATCHKEY_TEST_POSTGRES_URL'] ||= 'postgres://postgres@127.0.0.1:5432/test';
  if (!haproxyInstalled()) throw new Error('haproxy is not installed (apt-get install -y haproxy)');
  const seconds = options.quick ? 2 : 6;
  const warmup = options.quick ? 0.5 : 1.5;
  const loadBefore = loadavg().map(r1);
  const redisPort = await freePort();
  const redis = spawn('redis-server', ['--port', String(redisPort), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
  killOnExit(redis);
  for (let i = 0; ; i++) {
    if ((await redisCommand(redisPort, 'PING').catch(() => '')).startsWith('+PONG')) break;
    if (i > 200) throw new Error('redis-server did not start');
    await new Promise((r) => setTimeout(r, 50));
  }
  const db = await createTestDatabase('postgres', 'lk_bench_sizing');
  const dbName = new URL(db.url).pathname.slice(1);
  const pool = new pg.Pool({ connectionString: db.url, max: 2 });
  pool.on('error', () => undefined);
  const port = await freePort();
  const publicUrl = `http://127.0.0.1:${port}`;
  let replicas: Replica[] = [];
  let lb: Balancer | undefined;
  try {
    replicas = await startReplicas({ count: 3, databaseUrl: db.url, redisUrl: `redis://127.0.0.1:${redisPort}`, publicUrl, clientId: `bench-sizing-${randomBytes(4).toString('hex')}` });
    const admin = { origin: publicUrl, 'x-service-admin-secret': CLUSTER_ADMIN_SECRET };
    const first = replicas[0]!.url;
    const ok = async (p: Promise<{ status: number; body: Record<string, unknown> }>, what: string): Promise<Record<string, unknown>> => {
      const r = await p;
      if (r.status !== 200) throw new Error(`${what}: ${r.status} ${JSON.stringify(r.body)}`);
      return r.body;
    };

    // Seed: one user per loop, each a member of g0..g4; documents viewable by the members of g(i mod 10).
    await ok(jsonRequest(`${first}/v1/admin/fga/model`, { body: { dsl: DSL }, headers: admin }), 'model');
    const emails = Array.from({ length: LOOPS }, (_, i) => `sizing${i}@cluster.test`);
    const sessions: { token: string; refresh: string; id: string }[] = [];
    for (const email of emails) {
      await ok(jsonRequest(`${first}/v1/signup`, { body: { email, password: PASSWORD }, headers: { origin: publicUrl } }), 'signup');
      const login = await ok(jsonRequest(`${first}/v1/login`, { body: { email, password: PASSWORD }, headers: { origin: publicUrl } }), 'login');
      sessions.push({ token: String(login['access_token']), refresh: String(login['refresh_token']), id: String((login['user'] as { id: string }).id) });
    }
    const tuples = [
      ...sessions.flatMap((s) => [0, 1, 2, 3, 4].map((g) => ({ user: `user:${s.id}`, relation: 'member', object: `group:g${g}` }))),
      ...Array.from({ length: DOCS }, (_, i) => ({ user: `group:g${i % 10}#member`, relation: 'viewer', object: `doc:${i}` })),
    ];
    for (let i = 0; i < tuples.length; i += 100) await ok(jsonRequest(`${first}/v1/admin/fga/tuples`, { body: { tuples: tuples.slice(i, i + 100) }, headers: admin }), 'tuples');
    const viewable = Array.from({ length: DOCS }, (_, i) => i).filter((i) => i % 10 < 5).map((i) => `doc:${i}`).sort();

    /** The request of `flow` for loop `k` (its i-th), and what its 200 answer must say. */
    const requestOf = (flow: Flow, k: number, i: number): { path: string; body: unknown; headers: Record<string, string>; verify: (b: Record<string, unknown>) => boolean } => {
      const s = sessions[k % LOOPS]!;
      const bearer = { origin: publicUrl, authorization: `Bearer ${s.token}` };
      switch (flow) {
        case 'login':
          return { path: '/v1/login', body: { email: emails[k % LOOPS], password: PASSWORD }, headers: { origin: publicUrl }, verify: (b) => typeof b['access_token'] === 'string' };
        case 'refresh':
          return {
            path: '/v1/session', body: { refresh_token: s.refresh }, headers: bearer,
            verify: (b) => {
              if (typeof b['refresh_token'] !== 'string' || b['refresh_token'] === s.refresh || typeof b['access_token'] !== 'string') return false;
              s.refresh = b['refresh_token'];
              s.token = b['access_token'];
              return true;
            },
          };
        case 'validate':
          return { path: '/v1/validate_jwt_token', body: { token_type: 'access_token', token: s.token }, headers: { origin: publicUrl }, verify: (b) => b['is_valid'] === true };
        case 'check': {
          const doc = (i * 37) % DOCS;
          return { path: '/v1/check_permissions', body: { checks: [{ relation: 'viewer', object: `doc:${doc}` }] }, headers: bearer, verify: (b) => (b['results'] as { allowed: boolean }[])[0]?.allowed === doc % 10 < 5 };
        }
        case 'list':
          return {
            path: '/v1/list_permissions', body: { relation: 'viewer', object_type: 'doc' }, headers: bearer,
            verify: (b) => JSON.stringify(((b['objects'] ?? b['permissions'] ?? []) as unknown[]).map((o) => (typeof o === 'string' ? o : String((o as { object?: string }).object))).sort()) === JSON.stringify(viewable),
          };
      }
    };

    // Verify every flow's answer on every replica and through haproxy (three in rotation).
    lb = await startHaproxy({ port, replicas });
    for (const url of [...replicas.map((r) => r.url), lb.url]) {
      for (const flow of FLOWS) {
        for (let k = 0; k < 2; k++) {
          const r = requestOf(flow, k, k);
          const body = await ok(jsonRequest(`${url}${r.path}`, { body: r.body, headers: r.headers }), `${flow} at ${url}`);
          if (!r.verify(body)) throw new Error(`${flow} answered wrongly at ${url}: ${JSON.stringify(body).slice(0, 300)}`);
        }
      }
    }
    await lb.close();
    lb = undefined;

    const pgPids = async (): Promise<number[]> =>
      (await pool.query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()', [dbName])).rows.map((r) => r.pid);
    const measure = async (balancer: Balancer, flow: Flow) => {
      const latencies: number[] = [];
      let failed = 0;
      let wrong = 0;
      const loop = async (k: number, end: number) => {
        for (let i = 0; performance.now() < end; i++) {
          const r = requestOf(flow, k, i);
          const t0 = performance.now();
          try {
            const res = await fetch(`${balancer.url}${r.path}`, { method: 'POST', headers: { ...r.headers, 'content-type': 'application/json' }, body: JSON.stringify(r.body) });
            const body = (await res.json()) as Record<string, unknown>;
            if (res.status !== 200) failed++;
            else if (!r.verify(body)) wrong++;
            else latencies.push(performance.now() - t0);
          } catch {
            failed++;
          }
        }
      };
      const phase = (ms: number) => Promise.all(Array.from({ length: LOOPS }, (_, k) => loop(k, performance.now() + ms)));
      // The write counters cover the warm-up too (they are read once settled, before it and after the run).
      const dbBefore = await dbCounters(pool, dbName);
      await phase(warmup * 1000);
      const warmed = latencies.length;
      latencies.length = 0;
      failed = 0;
      wrong = 0;
      let connections = 0;
      let sampling = true;
      const sampler = (async () => {
        while (sampling) {
          connections = Math.max(connections, (await pgPids().catch(() => [])).length);
          await new Promise((res) => setTimeout(res, 100));
        }
      })();
      const pgBefore = new Map((await pgPids()).map((p) => [p, cpuSeconds(p)]));
      const replicaBefore = replicas.map((r) => cpuSeconds(r.child.pid ?? 0));
      const haproxyBefore = cpuSeconds(balancer.pid);
      const redisBefore = await redisCommands(redisPort);
      const started = performance.now();
      await phase(seconds * 1000);
      const elapsed = (performance.now() - started) / 1000;
      const redisAfter = await redisCommands(redisPort);
      sampling = false;
      await sampler;
      let pgCpu = 0;
      for (const pid of await pgPids()) pgCpu += cpuSeconds(pid) - (pgBefore.get(pid) ?? cpuSeconds(pid));
      const replicaCpu = replicas.reduce((sum, r, i) => sum + cpuSeconds(r.child.pid ?? 0) - replicaBefore[i]!, 0);
      const n = Math.max(1, latencies.length);
      const answered = latencies.length;
      await new Promise((res) => setTimeout(res, STATS_SETTLE_MS));
      const dbAfter = await dbCounters(pool, dbName);
      const perRequest = (k: (typeof COUNTERS)[number], digits: (x: number) => number) =>
        digits(Math.max(0, dbAfter[k] - dbBefore[k] - background[k] * ((dbAfter.at - dbBefore.at) / 1000)) / Math.max(1, warmed + answered));
      latencies.sort((x, y) => x - y);
      return {
        requests_per_second: Math.round(latencies.length / elapsed),
        p50_ms: r1(pct(latencies, 0.5)),
        p99_ms: r1(pct(latencies, 0.99)),
        failed,
        wrong_answers: wrong,
        replica_cpu_ms_per_request: r3((replicaCpu * 1000) / n),
        haproxy_cpu_ms_per_request: r3(((cpuSeconds(balancer.pid) - haproxyBefore) * 1000) / n),
        postgres_cpu_ms_per_request: r3((pgCpu * 1000) / n),
        // The INFO command itself is one of them.
        redis_commands_per_request: r3((redisAfter - redisBefore - 1) / n),
        database_connections_max: connections,
        database_writes_per_request: {
          commits: perRequest('commits', r3),
          rows_inserted: perRequest('inserted', r3),
          rows_updated: perRequest('updated', r3),
          rows_deleted: perRequest('deleted', r3),
          wal_bytes: perRequest('wal_bytes', Math.round),
          wal_records: perRequest('wal_records', r1),
          wal_syncs: perRequest('wal_syncs', r3),
        },
      };
    };

    // What the database does with no request (the replicas' pollers, other work on a shared server), per second.
    await new Promise((res) => setTimeout(res, STATS_SETTLE_MS));
    const idleFrom = await dbCounters(pool, dbName);
    await new Promise((res) => setTimeout(res, STATS_SETTLE_MS + 4000));
    const background = ratesOf(idleFrom, await dbCounters(pool, dbName));

    const byReplicas: Record<string, Record<string, unknown>> = {};
    for (const n of [1, 2, 3]) {
      lb = await startHaproxy({ port, replicas: replicas.slice(0, n) });
      const flows: Record<string, unknown> = {};
      for (const flow of FLOWS) flows[flow] = await measure(lb, flow);
      byReplicas[String(n)] = flows;
      await lb.close();
      lb = undefined;
    }
    const maxConnections = (await pool.query<{ setting: string }>("SELECT setting FROM pg_settings WHERE name = 'max_connections'")).rows[0]!.setting;
    return {
      machine: { cores: cpus().length, load_average_before: loadBefore, load_average_after: loadavg().map(r1), note: 'the load averages show other work running on the machine at the same time' },
      seconds_per_run: seconds,
      loops: LOOPS,
      postgres_max_connections: Number(maxConnections),
      database_background_per_second: Object.fromEntries(COUNTERS.map((k) => [k, r1(background[k])])),
      by_replicas: byReplicas,
    };
  } finally {
    await lb?.close();
    await stopReplicas(replicas);
    await pool.end();
    await db.drop();
    redis.kill('SIGTERM');
  }
}

if (import.meta.main) {
  const figures = await run({ quick: process.argv.includes('--quick') });
  process.stdout.write(`${JSON.stringify(figures, null, 2)}\n`);
}
