/**
 * The server's footprint as `npm start` runs it on SQLite, with no Redis, no
 * SMTP and the default flags: the time from spawning the process to its first
 * `GET /healthz` 200, and its resident memory once idle.
 *
 *   npm run bench -- footprint [--quick]
 *
 * Each round spawns `node bin/latchkey.js serve` on a new SQLite file twice
 * with one empty compile-cache directory: the first start fills the cache
 * (what a fresh install sees once), the second uses it (every start after).
 * The answer is verified (`{"status":"ok"}`) before it counts. Memory is the
 * process's VmRSS after five idle seconds (the steady state of an unused
 * server), read from /proc. Medians and extremes over the rounds.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { stopChild as stop } from '../test/helpers/instances.ts';

const ROOT = resolve(import.meta.dirname, '..');

async function freePort(): Promise<number> {
  return new Promise((ok, fail) => {
    const s = createServer();
    s.once('error', fail);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => ok(port));
    });
  });
}

async function rssMib(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  const kb = Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1]);
  if (!Number.isFinite(kb)) throw new Error('no VmRSS for the server process');
  return kb / 1024;
}


/** One start: milliseconds to a verified /healthz 200 and the idle RSS. */
async function start(dir: string, cacheDir: string, label: string): Promise<{ ready_ms: number; idle_rss_mib: number }> {
  const [http, grpc, metrics] = [await freePort(), await freePort(), await freePort()];
  const args = [
    join(ROOT, 'bin', 'latchkey.js'), 'serve',
    '--host', '127.0.0.1', '--http-port', String(http), '--grpc-port', String(grpc), '--metrics-port', String(metrics),
    '--database-type', 'sqlite', '--database-url', join(dir, `${label}.sqlite`),
    '--client-id', 'bench-client', '--client-secret', 'bench-client-secret-0123456789',
    '--jwt-type', 'HS256', '--jwt-secret', 'bench-jwt-secret-0123456789abcdef0123456789',
    '--admin-secret', 'bench-admin-secret-0123456789', '--log-level', 'silent',
  ];
  const t0 = performance.now();
  const child = spawn(process.execPath, args, { env: { ...process.env, NODE_COMPILE_CACHE: cacheDir }, stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr?.on('data', (b: Buffer) => (stderr += b.toString()));
  try {
    let readyMs = -1;
    while (readyMs < 0) {
      if (child.exitCode !== null) throw new Error(`the server exited (${child.exitCode}): ${stderr.slice(0, 500)}`);
      if (performance.now() - t0 > 60_000) throw new Error('the server did not answer /healthz within 60 s');
      try {
        const res = await fetch(`http://127.0.0.1:${http}/healthz`);
        const body = await res.text();
        if (res.status === 200) {
          if (JSON.parse(body).status !== 'ok') throw new Error(`unexpected /healthz answer: ${body}`);
          readyMs = performance.now() - t0;
        }
      } catch (e) {
        if (e instanceof Error && e.message.startsWith('unexpected')) throw e;
        await new Promise((r) => setTimeout(r, 10));
      }
    }
    await new Promise((r) => setTimeout(r, 5000));
    return { ready_ms: readyMs, idle_rss_mib: await rssMib(child.pid as number) };
  } finally {
    await stop(child);
  }
}

function summary(values: number[]): { median: number; min: number; max: number } {
  const s = [...values].sort((a, b) => a - b);
  const mid = s.length >> 1;
  const median = s.length % 2 ? (s[mid] as number) : ((s[mid - 1] as number) + (s[mid] as number)) / 2;
  const round = (v: number): number => Math.round(v * 10) / 10;
  return { median: round(median), min: round(s[0] as number), max: round(s[s.length - 1] as number) };
}

export async function run(options: { quick: boolean }): Promise<unknown> {
  const rounds = options.quick ? 3 : 7;
  const first: Array<{ ready_ms: number; idle_rss_mib: number }> = [];
  const cached: Array<{ ready_ms: number; idle_rss_mib: number }> = [];
  for (let i = 0; i < rounds; i++) {
    const dir = await mkdtemp(join(tmpdir(), 'latchkey-footprint-'));
    try {
      const cacheDir = join(dir, 'compile-cache');
      first.push(await start(dir, cacheDir, `first${i}`));
      cached.push(await start(dir, cacheDir, `cached${i}`));
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }
  return {
    rounds,
    first_start: { ready_ms: summary(first.map((r) => r.ready_ms)), idle_rss_mib: summary(first.map((r) => r.idle_rss_mib)) },
    cached_start: { ready_ms: summary(cached.map((r) => r.ready_ms)), idle_rss_mib: summary(cached.map((r) => r.idle_rss_mib)) },
  };
}
