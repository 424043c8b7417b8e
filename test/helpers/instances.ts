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
const started = new Set<number>();
process.once('exit', () => {
  for (const pid of started) {
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
  started.add(pid);
  child.once('exit', () => started.delete(pid));
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

async function waitFor(what: string, probe: () => Promise<boolean>, timeoutMs = 30_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (Date.now() < until) {
    if (await probe().catch(() => false)) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`${what} did not come up within ${timeoutMs} ms`);
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

/**
 * One server process at a time, started by `launch()`, its real pid read from
 * `pidFile` (when a wrapper such as `runuser` sits between).
 */
function managed(
  name: string,
  port: number,
  url: string,
  dir: string,
  launch: () => ChildProcess,
  ready: () => Promise<boolean>,
  pidFile: string | undefined,
  stopSignal: NodeJS.Signals,
): Instance {
  let child: ChildProcess | undefined;
  let destroyed = false;
  const stop = async (options: { kill?: boolean } = {}): Promise<void> => {
    const c = child;
    if (c === undefined) return;
    child = undefined;
    const pid = (pidFile !== undefined ? pidFrom(pidFile) : undefined) ?? c.pid;
    if (pid !== undefined && alive(pid)) process.kill(pid, options.kill ? 'SIGKILL' : stopSignal);
    await exited(c);
    if (pid !== undefined && pid !== c.pid) {
      const until = Date.now() + 20_000;
      while (alive(pid) && Date.now() < until) await new Promise((r) => setTimeout(r, 25));
    }
    // The port is free again once nothing accepts on it.
    const until = Date.now() + 10_000;
    while ((await canConnect(port)) && Date.now() < until) await new Promise((r) => setTimeout(r, 25));
  };
  const start = async (): Promise<void> => {
    if (destroyed) throw new Error(`${name} instance was destroyed`);
    if (child !== undefined) return;
    const c = launch();
    killOnExit(c);
    let log = '';
    c.stdout?.on('data', (d: Buffer) => void (log = (log + d.toString()).slice(-4000)));
    c.stderr?.on('data', (d: Buffer) => void (log = (log + d.toString()).slice(-4000)));
    child = c;
    try {
      await waitFor(name, async () => {
        if (c.exitCode !== null) throw new Error(`${name} exited: ${log}`);
        return (await canConnect(port)) && (await ready());
      });
      // The server behind a wrapper (runuser): its pid, read once it is up, is killed on exit too.
      const server = pidFile !== undefined ? pidFrom(pidFile) : undefined;
      if (server !== undefined && server !== c.pid) {
        started.add(server);
        c.once('exit', () => started.delete(server));
      }
    } catch (err) {
      await stop({ kill: true });
      throw new Error(`${name} did not start: ${(err as Error).message}\n${log}`);
    }
  };
  return {
    url,
    port,
    stop,
    start,
    async destroy() {
      if (destroyed) return;
      await stop();
      destroyed = true;
      rmSync(dir, { recursive: true, force: true });
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
  const port = await freePort();
  const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
  const { default: pg } = await import('pg');
  const instance = managed(
    'postgres',
    port,
    url,
    dir,
    () => {
      const [cmd, args] = wrap('postgres', ['-D', data, '-p', String(port), '-k', dir, '-c', 'listen_addresses=127.0.0.1', '-c', 'fsync=off', '-c', 'max_connections=60']);
      return spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    },
    async () => {
      const c = new pg.Client({ connectionString: url, connectionTimeoutMillis: 1000 });
      try {
        await c.connect();
        await c.query('SELECT 1');
        return true;
      } finally {
        await c.end().catch(() => undefined);
      }
    },
    join(data, 'postmaster.pid'),
    'SIGINT',
  );
  await instance.start();
  return instance;
}

/** A private MariaDB server (root without a password on 127.0.0.1). */
export async function startMariadbInstance(): Promise<Instance> {
  const dir = mkdtempSync(join(tmpdir(), 'latchkey-maria-'));
  const data = join(dir, 'data');
  run('mariadb-install-db', ['--no-defaults', `--datadir=${data}`, '--user=root', '--auth-root-authentication-method=normal', '--skip-test-db', '--skip-name-resolve']);
  const port = await freePort();
  const url = `mysql://root@127.0.0.1:${port}/mysql`;
  const { default: mysql } = await import('mysql2/promise');
  const pidFile = join(dir, 'mariadb.pid');
  const instance = managed(
    'mariadb',
    port,
    url,
    dir,
    () =>
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
    async () => {
      const c = await mysql.createConnection({ uri: url, connectTimeout: 1000 });
      try {
        await c.query('SELECT 1');
        return true;
      } finally {
        await c.end().catch(() => undefined);
      }
    },
    pidFile,
    'SIGTERM',
  );
  await instance.start();
  return instance;
}

/** A private Redis server without persistence. */
export async function startRedisInstance(): Promise<Instance> {
  const dir = mkdtempSync(join(tmpdir(), 'latchkey-redis-'));
  const port = await freePort();
  const url = `redis://127.0.0.1:${port}`;
  const instance = managed(
    'redis',
    port,
    url,
    dir,
    () => spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir], { stdio: ['ignore', 'pipe', 'pipe'] }),
    async () => true,
    undefined,
    'SIGTERM',
  );
  await instance.start();
  return instance;
}

export { freePort };
