/**
 * Test helper: private database and Redis servers that a test may stop and
 * start (outage tests). Each instance lives in its own temporary directory on
 * a free loopback port, is started from the locally installed binaries
 * (PostgreSQL's `initdb`/`postgres` as the `postgres` user, `mariadb-install-db`/
 * `mariadbd`, `redis-server`), and is never one of the shared services: `stop()`
 * and `destroy()` signal only the process this helper started.
 *
 *   const pg = await startPostgresInstance();
 *   // pg.url → postgres://postgres@127.0.0.1:<port>/postgres
 *   await pg.stop(); await pg.start(); await pg.destroy();
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chownSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './loopback.ts';
import { onFreePort, started, watchStart, whyExited, type StartOutput } from './started.ts';

export interface Instance {
  /** Connection URL (database `postgres` / `mysql`; Redis db 0). */
  readonly url: string;
  readonly port: number;
  /** Stops the server (fast shutdown; `kill: true` for SIGKILL) and waits for its exit. */
  stop(options?: { kill?: boolean }): Promise<void>;
  /** Starts it again on the same port and data, resolving once it accepts connections. */
  start(): Promise<void>;
  /** Stops it and removes its directory. Safe to call twice. */
  destroy(): Promise<void>;
}

/** Pids this test process started; killed when it exits, even when a crash skipped the teardowns. */
const launched = new Set<number>();
process.once('exit', () => {
  for (const pid of launched) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
});

/** Kills `child` when this process exits, if it is still running then. */
/** Stops a child process with SIGTERM (SIGKILL after `graceMs`) and waits for its exit. */
export async function stopChild(child: ChildProcess, graceMs = 10_000): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
  await exited;
  clearTimeout(timer);
}

export function killOnExit(child: ChildProcess): void {
  const pid = child.pid;
  if (pid === undefined) return;
  launched.add(pid);
  child.once('exit', () => launched.delete(pid));
}

function canConnect(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const sock = connect({ host: '127.0.0.1', port });
    sock.once('connect', () => {
      sock.destroy();
      resolve(true);
    });
    sock.once('error', () => resolve(false));
  });
}

function exited(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => child.once('exit', () => resolve()));
}

function run(cmd: string, args: string[]): void {
  const r = spawnSync(cmd, args, { encoding: 'utf8', timeout: 60_000 });
  if (r.status !== 0) throw new Error(`${cmd} failed (${String(r.status)}): ${r.stderr || r.stdout}`);
}

/** The pid written by a server into its pid file (the postmaster or mariadbd, not a wrapper). */
function pidFrom(file: string): number | undefined {
  try {
    const pid = Number(readFileSync(file, 'utf8').split('\n')[0]);
    return Number.isSafeInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** How long a start may take to log its start line, and then to answer a query. */
const START_MS = 30_000;

/** A server that {@link managed} starts and stops. */
interface Server {
  name: string;
  /** Its temporary directory, removed by `destroy()`. */
  dir: string;
  url(port: number): string;
  launch(port: number): ChildProcess;
  /** The line it logs once it accepts connections, every listener bound. */
  isStartLine(line: string): boolean;
  /** True once the server on `port` answers (a query succeeds, where it takes one). */
  ready(port: number): Promise<boolean>;
  /** Where it writes its pid, when a wrapper such as `runuser` sits between. */
  pidFile?: string;
  stopSignal: NodeJS.Signals;
}

/**
 * One server process at a time, its real pid read from its pid file (when a
 * wrapper sits between), started on a port found free beforehand
 * ({@link freePort}). Another process may take that port before the server
 * binds it, and answer a connection in its place: a start is ready only once
 * the server has logged its start line and answers a query, and the first
 * start, when the server exits because the port is in use, is tried again on
 * a fresh port ({@link onFreePort}). A restart keeps the port, which the URL
 * names: it fails when another process took the port meanwhile.
 */
async function managed(s: Server): Promise<Instance> {
  let port = 0;
  let child: ChildProcess | undefined;
  let output: StartOutput | undefined;
  let destroyed = false;
  const stop = async (options: { kill?: boolean } = {}): Promise<void> => {
    const c = child;
    if (c === undefined) return;
    child = undefined;
    const pid = (s.pidFile !== undefined ? pidFrom(s.pidFile) : undefined) ?? c.pid;
    if (pid !== undefined && alive(pid)) process.kill(pid, options.kill ? 'SIGKILL' : s.stopSignal);
    await exited(c);
    if (pid !== undefined && pid !== c.pid) {
      const until = Date.now() + 20_000;
      while (alive(pid) && Date.now() < until) await new Promise((r) => setTimeout(r, 25));
    }
    // The port is free again once nothing accepts on it (when the server had bound it: otherwise another process holds it).
    const until = Date.now() + 10_000;
    while (output?.started === true && (await canConnect(port)) && Date.now() < until) await new Promise((r) => setTimeout(r, 25));
  };
  const start = async (): Promise<void> => {
    if (destroyed) throw new Error(`${s.name} instance was destroyed`);
    if (child !== undefined) return;
    const c = (child = s.launch(port));
    killOnExit(c);
    const out = (output = watchStart(c, s.isStartLine));
    try {
      // Until its start line, what answers on the port may be another process (and this one is about to exit).
      await started(c, START_MS);
      const until = Date.now() + START_MS;
      while (!(await s.ready(port).catch(() => false))) {
        if (c.exitCode !== null || c.signalCode !== null) throw await whyExited(c);
        if (Date.now() > until) throw new Error(`${s.name} did not answer within ${START_MS} ms: ${out.stderr || out.stdout}`);
        await new Promise((r) => setTimeout(r, 50));
      }
      // The server behind a wrapper (runuser): its pid, read once it is up, is killed on exit too.
      const server = s.pidFile !== undefined ? pidFrom(s.pidFile) : undefined;
      if (server !== undefined && server !== c.pid) {
        launched.add(server);
        c.once('exit', () => launched.delete(server));
      }
    } catch (err) {
      await stop({ kill: true });
      throw err;
    }
  };
  await onFreePort(async (p) => {
    port = p;
    await start();
  });
  return {
    url: s.url(port),
    port,
    stop,
    start,
    async destroy() {
      if (destroyed) return;
      await stop();
      destroyed = true;
      rmSync(s.dir, { recursive: true, force: true });
    },
  };
}

/** A private PostgreSQL cluster (trust auth, user `postgres`, fsync off). */
export async function startPostgresInstance(): Promise<Instance> {
  const dir = mkdtempSync(join(tmpdir(), 'latchkey-pg-'));
  const data = join(dir, 'data');
  const asPostgres = process.getuid?.() === 0;
  if (asPostgres) chownSync(dir, Number(spawnSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).stdout.trim()), Number(spawnSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).stdout.trim()));
  const wrap = (cmd: string, args: string[]): [string, string[]] => (asPostgres ? ['runuser', ['-u', 'postgres', '--', cmd, ...args]] : [cmd, args]);
  run(...wrap('initdb', ['-D', data, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--no-sync', '--no-instructions']));
  const url = (port: number): string => `postgres://postgres@127.0.0.1:${port}/postgres`;
  const { default: pg } = await import('pg');
  return managed({
    name: 'postgres',
    dir,
    url,
    launch(port) {
      const [cmd, args] = wrap('postgres', ['-D', data, '-p', String(port), '-k', dir, '-c', 'listen_addresses=127.0.0.1', '-c', 'fsync=off', '-c', 'max_connections=60']);
      return spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    },
    isStartLine: (line) => line.includes('database system is ready to accept connections'),
    async ready(port) {
      const c = new pg.Client({ connectionString: url(port), connectionTimeoutMillis: 1000 });
      try {
        await c.connect();
        await c.query('SELECT 1');
        return true;
      } finally {
        await c.end().catch(() => undefined);
      }
    },
    pidFile: join(data, 'postmaster.pid'),
    stopSignal: 'SIGINT',
  });
}

/** A private MariaDB server (root without a password on 127.0.0.1). */
export async function startMariadbInstance(): Promise<Instance> {
  const dir = mkdtempSync(join(tmpdir(), 'latchkey-maria-'));
  const data = join(dir, 'data');
  run('mariadb-install-db', ['--no-defaults', `--datadir=${data}`, '--user=root', '--auth-root-authentication-method=normal', '--skip-test-db', '--skip-name-resolve']);
  const url = (port: number): string => `mysql://root@127.0.0.1:${port}/mysql`;
  const { default: mysql } = await import('mysql2/promise');
  const pidFile = join(dir, 'mariadb.pid');
  return managed({
    name: 'mariadb',
    dir,
    url,
    launch: (port) =>
      spawn(
        'mariadbd',
        [
          '--no-defaults',
          `--datadir=${data}`,
          `--port=${port}`,
          '--bind-address=127.0.0.1',
          `--socket=${join(dir, 'mariadb.sock')}`,
          `--pid-file=${pidFile}`,
          '--user=root',
          '--skip-name-resolve',
          '--innodb-buffer-pool-size=16M',
          '--innodb-flush-log-at-trx-commit=2',
          '--skip-log-bin',
        ],
        { stdio: ['ignore', 'pipe', 'pipe'] },
      ),
    isStartLine: (line) => line.includes('ready for connections'),
    async ready(port) {
      const c = await mysql.createConnection({ uri: url(port), connectTimeout: 1000 });
      try {
        await c.query('SELECT 1');
        return true;
      } finally {
        await c.end().catch(() => undefined);
      }
    },
    pidFile,
    stopSignal: 'SIGTERM',
  });
}

/** A private Redis server without persistence. */
export async function startRedisInstance(): Promise<Instance> {
  const dir = mkdtempSync(join(tmpdir(), 'latchkey-redis-'));
  return managed({
    name: 'redis',
    dir,
    url: (port) => `redis://127.0.0.1:${port}`,
    launch: (port) => spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir], { stdio: ['ignore', 'pipe', 'pipe'] }),
    isStartLine: (line) => line.includes('Ready to accept connections'),
    ready: canConnect,
    stopSignal: 'SIGTERM',
  });
}

export { freePort };
