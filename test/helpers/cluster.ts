/**
 * Test and benchmark helper: Latchkey replicas as separate server processes
 * (the real bin) on one database and one Redis, as a deployment runs them
 * (docs/scaling.md), and haproxy (Debian's package) in front of them with
 * `/readyz` health checks, as `deploy/cluster.sh` configures it.
 *
 *   const { replicas, lb, options } = await startBalancedReplicas({ count: 3, databaseUrl, redisUrl, clientId });
 *   await lb.states(); // { replica1: 'UP', … }
 *   replicas[0].child.kill('SIGKILL');
 *   await lb.close(); await stopReplicas(replicas);
 *
 * Every process started here is killed when the calling process exits, even
 * when a failure skipped the teardown.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import type { ExecutionContext } from 'ava';
import { createTestDatabase } from './databases.ts';
import { freePort, killOnExit } from './instances.ts';
import { onFreePort, PortTaken, ready, started, watchStart, whyExited } from './started.ts';

/** The secrets every replica of one cluster shares (docs/scaling.md, "What every replica must share"). */
export const CLUSTER_ADMIN_SECRET = 'cluster-admin-secret';
export const CLUSTER_CLIENT_SECRET = 'cluster-client-secret';
export const CLUSTER_JWT_SECRET = 'cluster-jwt-secret-0123456789abcdef0123456789';

const BIN = join(import.meta.dirname, '..', '..', 'bin', 'latchkey.js');

export interface Replica {
  /** 1-based, as haproxy names it (`replica<n>`). */
  readonly index: number;
  readonly url: string;
  readonly port: number;
  readonly child: ChildProcess;
  /** The last 4,000 characters the process wrote to stderr (for failure messages). */
  log(): string;
  /** Resolves when the process has exited. */
  readonly exited: Promise<void>;
}

export interface ReplicaOptions {
  count: number;
  /** A PostgreSQL (or MySQL) URL: every replica's `--database-url`. */
  databaseUrl: string;
  redisUrl: string;
  /** The deployment's public URL (`--url`, `--allowed-origins`): the load balancer's. */
  publicUrl: string;
  /** `--client-id`: namespaces the shared Redis counters; one per test run keeps runs apart. */
  clientId: string;
  /** More flags (`--name=value`), after the defaults, so they override them. */
  flags?: readonly string[];
}

/**
 * A replica's wait for readiness ({@link ready}): the first start migrates the database, the
 * others wait on its lock.
 */
const READY_MS = 60_000;

/**
 * Starts `count` replicas on free loopback ports and resolves once all are
 * ready (the first migrates the database, the others wait on its lock).
 * Defaults: the cluster's shared secrets, HS256, gRPC and metrics on port 0,
 * logs at `info` (the start line tells that the replica listens; `debug` may
 * be passed, a level above `info` is not taken), the rate limit effectively
 * off, the revision poll at its default (pass `--fga-cache-revision-poll` to
 * change it).
 *
 * A replica's port is found free by {@link freePort} before it binds it;
 * another process may take it meanwhile. Nothing else names that port before
 * the replica is ready (its `--url` is the deployment's public URL, and
 * haproxy is configured from the ready replicas), so a replica that exits
 * because its port is in use is started again on a fresh one.
 */
export async function startReplicas(o: ReplicaOptions): Promise<Replica[]> {
  // Every process launched, so that a failed start stops them all.
  const launched: Replica[] = [];
  const startOne = (index: number): Promise<Replica> =>
    onFreePort(async (port) => {
      const r = spawnReplica(o, index, port);
      launched.push(r);
      await ready(r.url, r.child, READY_MS);
      return r;
    });
  const results = await Promise.allSettled(Array.from({ length: o.count }, (_, k) => startOne(k + 1)));
  const failed = results.find((r) => r.status === 'rejected');
  if (failed !== undefined) {
    await stopReplicas(launched);
    throw failed.reason;
  }
  return results.map((r) => (r as PromiseFulfilledResult<Replica>).value);
}

/**
 * Starts a replica again after its process exited: the same index, port and
 * flags, as an orchestrator restarting it would (haproxy names the port, so
 * it is not moved: a start that finds it taken fails). Resolves once it is
 * ready.
 */
export async function restartReplica(o: ReplicaOptions, old: Replica): Promise<Replica> {
  await old.exited;
  const r = spawnReplica(o, old.index, old.port);
  try {
    await ready(r.url, r.child, READY_MS);
  } catch (err) {
    await stopReplicas([r]);
    throw err;
  }
  return r;
}

function spawnReplica(o: ReplicaOptions, index: number, port: number): Replica {
  const url = `http://127.0.0.1:${port}`;
  const flags = new Map<string, string>();
  // A flag may be given once: those of `o.flags` replace the defaults of the same name.
  for (const f of [
    '--database-type=postgres', `--database-url=${o.databaseUrl}`, `--redis-url=${o.redisUrl}`,
    `--admin-secret=${CLUSTER_ADMIN_SECRET}`, `--client-id=${o.clientId}`, `--client-secret=${CLUSTER_CLIENT_SECRET}`,
    '--jwt-type=HS256', `--jwt-secret=${CLUSTER_JWT_SECRET}`,
    '--host=127.0.0.1', `--http-port=${port}`, '--grpc-port=0', '--metrics-port=0', '--log-level=info',
    '--rate-limit-rps=1000000', '--rate-limit-burst=1000000', `--url=${o.publicUrl}`, `--allowed-origins=${o.publicUrl}`,
    '--shutdown-timeout=2s',
    ...(o.flags ?? []),
  ]) {
    flags.set(f.split('=')[0]!, f);
  }
  // The start line (level info) tells ready() that this replica is the one listening on the port.
  if (flags.get('--log-level') !== '--log-level=debug') flags.set('--log-level', '--log-level=info');
  const child = spawn(process.execPath, [BIN, 'serve', ...flags.values()], { stdio: ['ignore', 'pipe', 'pipe'] });
  killOnExit(child);
  const output = watchStart(child);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return { index, url, port, child, log: () => output.stderr, exited };
}

/** SIGTERM to every replica still running, and waits for them all to exit. */
export async function stopReplicas(replicas: readonly Replica[]): Promise<void> {
  for (const r of replicas) if (r.child.exitCode === null && r.child.signalCode === null) r.child.kill('SIGTERM');
  await Promise.all(replicas.map((r) => r.exited));
}

/** True when Debian's haproxy is on the PATH. */
export function haproxyInstalled(): boolean {
  return spawnSync('haproxy', ['-v'], { encoding: 'utf8' }).status === 0;
}

export interface Balancer {
  /** haproxy's frontend: the deployment's public URL. */
  readonly url: string;
  /** The haproxy process id (for CPU accounting). */
  readonly pid: number;
  /** Each backend server's state (`UP`, `DOWN`, `MAINT`, `UP 1/2`, …) from haproxy's stats socket, by server name. */
  states(): Promise<Record<string, string>>;
  close(): Promise<void>;
}

export interface HaproxyOptions {
  /** The frontend's port (the port of the replicas' `--url`). */
  port: number;
  replicas: readonly Pick<Replica, 'index' | 'port'>[];
  /** Health check period (default 1,000 ms, as deploy/cluster.sh). */
  checkIntervalMs?: number;
  /** Failed checks before a server leaves the rotation, and passed ones before it is back (default 2 and 2). */
  fall?: number;
  rise?: number;
}

/**
 * Starts haproxy in front of `replicas`: round robin, `GET /readyz` checks,
 * a refused connection retried on another replica (nothing was sent, so
 * nothing is applied twice), and an `x-served-by` response header naming
 * the server that answered. Resolves once every replica is UP.
 *
 * The frontend's port is found free before haproxy binds it; another process
 * may take it meanwhile. haproxy binds every listener before it serves any
 * and exits when one fails, so its stats socket (in a directory of its own,
 * where no other process answers) answering tells that the frontend is its
 * own; when it exits because the port is in use, this throws
 * {@link PortTaken}. The replicas' `--url` names that port, so the caller
 * starts them again with the fresh one ({@link startBalancedReplicas}).
 */
export async function startHaproxy(o: HaproxyOptions): Promise<Balancer> {
  const dir = mkdtempSync(join(tmpdir(), 'latchkey-haproxy-'));
  const socket = join(dir, 'stats.sock');
  const inter = o.checkIntervalMs ?? 1000;
  const servers = o.replicas
    .map((r) => `    server replica${r.index} 127.0.0.1:${r.port} check inter ${inter}ms fall ${o.fall ?? 2} rise ${o.rise ?? 2}`)
    .join('\n');
  writeFileSync(
    join(dir, 'haproxy.cfg'),
    `global
    maxconn 4096
    # Without SO_REUSEPORT: a bind shared with another process that set it would pass as haproxy's own.
    noreuseport
    stats socket ${socket} level admin
defaults
    mode http
    timeout connect 2s
    timeout client 60s
    timeout server 60s
    option forwardfor
    retries 2
    retry-on conn-failure
    option redispatch
frontend latchkey
    bind 127.0.0.1:${o.port}
    default_backend replicas
backend replicas
    balance roundrobin
    option httpchk GET /readyz
    http-check expect status 200
    http-response set-header x-served-by %s
${servers}
`,
  );
  const child = spawn('haproxy', ['-f', join(dir, 'haproxy.cfg'), '-db'], { stdio: ['ignore', 'pipe', 'pipe'] });
  killOnExit(child);
  // haproxy logs no start line (its stats socket tells that it runs): its output tells why it exited.
  const output = watchStart(child, () => false);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const balancer: Balancer = {
    url: `http://127.0.0.1:${o.port}`,
    pid: child.pid ?? 0,
    states: () => haproxyStates(socket),
    async close() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      await exited;
      rmSync(dir, { recursive: true, force: true });
    },
  };
  const until = Date.now() + 30_000;
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) {
      rmSync(dir, { recursive: true, force: true });
      throw await whyExited(child);
    }
    const states = await haproxyStates(socket).catch(() => ({}) as Record<string, string>);
    if (o.replicas.every((r) => states[`replica${r.index}`] === 'UP')) return balancer;
    if (Date.now() > until) {
      await balancer.close();
      throw new Error(`haproxy did not see every replica up: ${JSON.stringify(states)} ${output.stderr}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Replicas behind haproxy, made by {@link startBalancedReplicas}. */
export interface BalancedReplicas {
  replicas: Replica[];
  lb: Balancer;
  /** The replicas' options; their `publicUrl` is haproxy's frontend (and {@link restartReplica} takes them). */
  options: ReplicaOptions;
}

/**
 * Starts replicas ({@link startReplicas}) whose public URL is haproxy's
 * frontend, then haproxy in front of them ({@link startHaproxy}, with
 * `haproxy`'s options). The frontend's port must be known before the
 * replicas start (their `--url` names it), and haproxy binds it only once
 * they are ready: when another process took it meanwhile, the replicas are
 * stopped and both are started again on a fresh port.
 */
export function startBalancedReplicas(o: Omit<ReplicaOptions, 'publicUrl'>, haproxy: Omit<HaproxyOptions, 'port' | 'replicas'> = {}): Promise<BalancedReplicas> {
  return onFreePort(async (port) => {
    const options: ReplicaOptions = { ...o, publicUrl: `http://127.0.0.1:${port}` };
    const replicas = await startReplicas(options);
    try {
      return { replicas, lb: await startHaproxy({ ...haproxy, port, replicas }), options };
    } catch (err) {
      await stopReplicas(replicas);
      throw err;
    }
  });
}

/** `show stat` on haproxy's stats socket: the status column of each server of the `replicas` backend. */
function haproxyStates(socket: string): Promise<Record<string, string>> {
  return new Promise((resolve, reject) => {
    const c = connect(socket);
    let out = '';
    c.on('data', (d: Buffer) => void (out += d.toString()));
    c.on('error', reject);
    c.on('end', () => {
      const lines = out.split('\n');
      const header = (lines[0] ?? '').replace(/^# /u, '').split(',');
      const [px, sv, st] = ['pxname', 'svname', 'status'].map((h) => header.indexOf(h));
      const states: Record<string, string> = {};
      for (const line of lines.slice(1)) {
        const f = line.split(',');
        if (f[px!] === 'replicas' && f[sv!] !== 'BACKEND' && f[sv!] !== undefined) states[f[sv!]!] = f[st!] ?? '';
      }
      resolve(states);
    });
    c.write('show stat\n');
  });
}

export interface JsonResponse {
  status: number;
  body: Record<string, unknown>;
  headers: Record<string, string>;
  cookies: string[];
}

/**
 * One HTTP request with a JSON body (node:http, so that the source address can
 * be chosen: `localAddress` 127.0.0.2 is another client IP to the server's
 * rate limiter than 127.0.0.1), on a connection of its own.
 */
export function jsonRequest(
  url: string,
  o: { method?: string; body?: unknown; headers?: Record<string, string>; localAddress?: string; timeoutMs?: number } = {},
): Promise<JsonResponse> {
  return new Promise((resolve, reject) => {
    const body = o.body === undefined ? undefined : JSON.stringify(o.body);
    const req = request(
      url,
      {
        method: o.method ?? (body === undefined ? 'GET' : 'POST'),
        headers: { ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...o.headers },
        ...(o.localAddress === undefined ? {} : { localAddress: o.localAddress }),
        timeout: o.timeoutMs ?? 15_000,
        agent: false,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('error', reject);
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let parsed: Record<string, unknown> = {};
          try {
            parsed = text ? (JSON.parse(text) as Record<string, unknown>) : {};
          } catch {
            parsed = { text };
          }
          const headers: Record<string, string> = {};
          for (const [k, v] of Object.entries(res.headers)) if (typeof v === 'string') headers[k] = v;
          const setCookie = res.headers['set-cookie'] ?? [];
          resolve({ status: res.statusCode ?? 0, body: parsed, headers, cookies: setCookie });
        });
      },
    );
    req.on('timeout', () => req.destroy(new Error('request timed out')));
    req.on('error', reject);
    req.end(body);
  });
}

/**
 * A redis-server of this test's own on `port` (no persistence); resolves once it has logged that
 * it accepts connections and answers on the port. Throws {@link PortTaken} when it exits because
 * another process holds the port.
 */
export async function startRedis(port: number): Promise<{ stop(): Promise<void> }> {
  const child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: ['ignore', 'pipe', 'pipe'] });
  killOnExit(child);
  // Until this line, what answers on the port may be another process (and this one is about to exit).
  watchStart(child, (line) => line.includes('Ready to accept connections'));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = async (): Promise<void> => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    await exited;
  };
  try {
    await started(child, 10_000);
  } catch (err) {
    await stop();
    throw err;
  }
  const until = Date.now() + 10_000;
  for (;;) {
    const up = await new Promise<boolean>((resolve) => {
      const s = connect(port, '127.0.0.1');
      s.once('connect', () => (s.end(), resolve(true)));
      s.once('error', () => resolve(false));
    });
    if (up) break;
    if (Date.now() > until) {
      await stop();
      throw new Error('redis-server did not start');
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return { stop };
}

/** Replicas on a PostgreSQL database and a redis-server of their own, made by {@link replicaBed}. */
export interface ReplicaBed {
  replicas: Replica[];
  /** The deployment's public URL (nothing listens there: requests send it as their origin). */
  publicUrl: string;
  /** Eight hex digits, different on every run: for names that must not meet another run's. */
  run: string;
  /**
   * Stops the redis-server (an outage); {@link ReplicaBed.startRedis} brings it back on the same
   * port (the replicas' `--redis-url` names it), empty.
   */
  stopRedis(): Promise<void>;
  startRedis(): Promise<void>;
}

/**
 * `count` replicas on a new PostgreSQL database (`prefix` names it) with a
 * redis-server of the test's own on a free port, so that the test may stop
 * it; `--client-id` is `<prefix>-<run>`. Everything is stopped and dropped
 * when the test ends. The redis-server starts before the replicas, which are
 * given its URL: when another process took its port first, it is started
 * again on a fresh one. The public URL is only a name (nothing listens there).
 */
export async function replicaBed(t: ExecutionContext, o: { prefix: string; count?: number; flags?: readonly string[] }): Promise<ReplicaBed> {
  const db = await createTestDatabase('postgres', `lk_${o.prefix}`);
  t.teardown(() => db.drop());
  let redisPort = 0;
  let redis = await onFreePort(async (port) => {
    const server = await startRedis(port);
    redisPort = port;
    return server;
  });
  t.teardown(() => redis.stop());
  const run = randomBytes(4).toString('hex');
  const publicUrl = `http://127.0.0.1:${await freePort()}`;
  const replicas = await startReplicas({
    count: o.count ?? 3,
    databaseUrl: db.url,
    redisUrl: `redis://127.0.0.1:${redisPort}`,
    publicUrl,
    clientId: `${o.prefix}-${run}`,
    flags: o.flags ?? [],
  });
  t.teardown(() => stopReplicas(replicas));
  return {
    replicas,
    publicUrl,
    run,
    stopRedis: () => redis.stop(),
    async startRedis() {
      redis = await startRedis(redisPort);
    },
  };
}
