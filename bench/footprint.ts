/**
 * The server's footprint as `npm start` runs it on SQLite, with no Redis, no
 * SMTP and the default flags (docs/performance.md, "Server footprint").
 *
 *   npm run bench -- footprint [--quick] [--starts=N] [--load-seconds=S] [--after-seconds=S]
 *
 * Start: each round spawns the command of `npm start` (package.json's `start`
 * script, without npm's own process) on a new SQLite file twice with one
 * empty compile-cache directory: the first start fills the cache (what a fresh
 * install sees once), the second uses it (every start after). It reports the
 * time from spawning to the first verified `GET /healthz` 200, the CPU time
 * the process had used by then (user + system, from /proc: unlike the wall
 * time it does not grow with the load other work puts on the machine), the
 * time to the first `GET /readyz` 200 (every listener bound: gRPC opens after
 * HTTP), and the VmRSS once idle (read 10 s after the answer, when the start-up's
 * garbage has been collected). Medians and extremes over the rounds.
 *
 * Load: one more cached start, with the rate limit raised. After seeding (a
 * model, users, tuples) and verifying each flow's answer, LOOPS loops each
 * repeat sign-in, validate_session, profile, check_permissions and
 * list_permissions (the sign-in's cookie is the loop's session from then on;
 * each answer is checked) for `--load-seconds` (300; 30 with `--quick`), then
 * the server idles for `--after-seconds` (60). VmRSS is sampled every
 * SAMPLE_MS; the report gives the RSS at the load's start, its peak, at the
 * load's end and after the idle minute, the slope of a least-squares line
 * over the load's second half (MiB per minute: what a longer load would add),
 * the V8 heap in use at those points, and the requests served.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { stopChild as stop } from '../test/helpers/instances.ts';

const ROOT = resolve(import.meta.dirname, '..');
const ADMIN_SECRET = 'bench-admin-secret-0123456789';
const PASSWORD = 'Footprint-Password-1';
const LOOPS = 16;
const DOCS = 200;
const SAMPLE_MS = 5000;
const IDLE_MS = 10_000;

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

/** User + system CPU time of a process, in milliseconds (fields 14 and 15 of /proc/PID/stat, in clock ticks of 10 ms). */
async function cpuMs(pid: number): Promise<number> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

/** The `npm start` command line: package.json's start script, with `node` as this Node binary. */
async function startCommand(): Promise<string[]> {
  const pkg = JSON.parse(await readFile(join(ROOT, 'package.json'), 'utf8')) as { scripts: { start: string } };
  const words = pkg.scripts.start.split(/\s+/).filter((w) => w !== '');
  if (words[0] !== 'node') throw new Error(`the start script does not run node: ${pkg.scripts.start}`);
  return words.slice(1).map((w) => (w.endsWith('.js') || w.endsWith('.ts') ? join(ROOT, w) : w));
}

interface Server {
  child: ChildProcess;
  url: string;
  metricsUrl: string;
  ready_ms: number;
  ready_cpu_ms: number;
  /** Spawn to the first `/readyz` 200. */
  readyz_ms: number;
}

async function spawnServer(dir: string, cacheDir: string, label: string, extra: readonly string[] = []): Promise<Server> {
  const [http, grpc, metrics] = [await freePort(), await freePort(), await freePort()];
  const args = [
    ...(await startCommand()),
    '--host', '127.0.0.1', '--http-port', String(http), '--grpc-port', String(grpc), '--metrics-port', String(metrics),
    '--database-type', 'sqlite', '--database-url', join(dir, `${label}.sqlite`),
    '--client-id', 'bench-client', '--client-secret', 'bench-client-secret-0123456789',
    '--jwt-type', 'HS256', '--jwt-secret', 'bench-jwt-secret-0123456789abcdef0123456789',
    '--admin-secret', ADMIN_SECRET, '--log-level', 'silent', ...extra,
  ];
  const t0 = performance.now();
  const child = spawn(process.execPath, args, { env: { ...process.env, NODE_COMPILE_CACHE: cacheDir }, stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr?.on('data', (b: Buffer) => (stderr += b.toString()));
  try {
    for (;;) {
      if (child.exitCode !== null) throw new Error(`the server exited (${child.exitCode}): ${stderr.slice(0, 500)}`);
      if (performance.now() - t0 > 60_000) throw new Error('the server did not answer /healthz within 60 s');
      const res = await fetch(`http://127.0.0.1:${http}/healthz`).catch(() => undefined);
      if (res !== undefined) {
        const cpu = await cpuMs(child.pid as number);
        const readyMs = performance.now() - t0;
        const body = await res.text();
        if (res.status === 200) {
          if ((JSON.parse(body) as { status?: string }).status !== 'ok') throw new Error(`unexpected /healthz answer: ${body}`);
          for (;;) {
            if (performance.now() - t0 > 60_000) throw new Error('the server did not answer /readyz within 60 s');
            if ((await fetch(`http://127.0.0.1:${http}/readyz`).then((r) => r.status, () => 0)) === 200) break;
            await new Promise((r) => setTimeout(r, 10));
          }
          const readyzMs = performance.now() - t0;
          return { child, url: `http://127.0.0.1:${http}`, metricsUrl: `http://127.0.0.1:${metrics}`, ready_ms: readyMs, ready_cpu_ms: cpu, readyz_ms: readyzMs };
        }
      }
      await new Promise((r) => setTimeout(r, 10));
    }
  } catch (err) {
    await stop(child);
    throw err;
  }
}

/** One start: time and CPU to a verified /healthz 200, and the idle RSS. */
interface StartFigures {
  ready_ms: number;
  ready_cpu_ms: number;
  readyz_ms: number;
  idle_rss_mib: number;
}

async function start(dir: string, cacheDir: string, label: string): Promise<StartFigures> {
  const server = await spawnServer(dir, cacheDir, label);
  try {
    await new Promise((r) => setTimeout(r, IDLE_MS));
    return { ready_ms: server.ready_ms, ready_cpu_ms: server.ready_cpu_ms, readyz_ms: server.readyz_ms, idle_rss_mib: await rssMib(server.child.pid as number) };
  } finally {
    await stop(server.child);
  }
}

function summary(values: number[]): { median: number; min: number; max: number } {
  const s = [...values].sort((a, b) => a - b);
  const mid = s.length >> 1;
  const median = s.length % 2 ? (s[mid] as number) : ((s[mid - 1] as number) + (s[mid] as number)) / 2;
  return { median: r1(median), min: r1(s[0] as number), max: r1(s[s.length - 1] as number) };
}

const r1 = (v: number): number => Math.round(v * 10) / 10;
const r3 = (v: number): number => Math.round(v * 1000) / 1000;

/** Least-squares slope of (seconds, MiB) points, in MiB per minute. */
function slopePerMinute(points: readonly { t: number; rss: number }[]): number {
  if (points.length < 2) return 0;
  const n = points.length;
  const mt = points.reduce((a, p) => a + p.t, 0) / n;
  const mr = points.reduce((a, p) => a + p.rss, 0) / n;
  const num = points.reduce((a, p) => a + (p.t - mt) * (p.rss - mr), 0);
  const den = points.reduce((a, p) => a + (p.t - mt) ** 2, 0);
  return den === 0 ? 0 : (num / den) * 60;
}

/** The V8 heap in use, from the server's metrics (prom-client's `latchkey_nodejs_heap_size_used_bytes`), in MiB. */
async function heapUsedMib(metricsUrl: string): Promise<number | undefined> {
  const text = await fetch(`${metricsUrl}/metrics`).then((r) => r.text(), () => '');
  const m = /^(?:latchkey_)?nodejs_heap_size_used_bytes(?:\{[^}]*\})? (\S+)/m.exec(text);
  return m ? r1(Number(m[1]) / 2 ** 20) : undefined;
}

interface Answer {
  status: number;
  json: Record<string, unknown>;
  cookie: string;
}

async function call(url: string, method: 'GET' | 'POST', body?: unknown, headers: Record<string, string> = {}): Promise<Answer> {
  const res = await fetch(url, {
    method,
    headers: { origin: new URL(url).origin, ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  const cookie = res.headers.getSetCookie().map((c) => c.split(';')[0] as string).filter((c) => !c.endsWith('=')).join('; ');
  return { status: res.status, json: text === '' ? {} : (JSON.parse(text) as Record<string, unknown>), cookie };
}

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

type Flow = 'sign_in' | 'validate_session' | 'profile' | 'check_permissions' | 'list_permissions';
const FLOWS: readonly Flow[] = ['sign_in', 'validate_session', 'profile', 'check_permissions', 'list_permissions'];

interface LoopState {
  email: string;
  id: string;
  cookie: string;
}

/** Seeds the model, LOOPS users (members of g0..g4) and DOCS documents (viewable by the members of g(i mod 10)). */
async function seed(url: string): Promise<LoopState[]> {
  const admin = { 'x-service-admin-secret': ADMIN_SECRET };
  const ok = (a: Answer, what: string): Answer => {
    if (a.status !== 200) throw new Error(`${what}: ${a.status} ${JSON.stringify(a.json).slice(0, 300)}`);
    return a;
  };
  ok(await call(`${url}/v1/admin/fga/model`, 'POST', { dsl: DSL }, admin), 'model');
  const loops: LoopState[] = [];
  for (let k = 0; k < LOOPS; k++) {
    const email = `footprint${k}@example.com`;
    ok(await call(`${url}/v1/signup`, 'POST', { email, password: PASSWORD, confirm_password: PASSWORD }), 'signup');
    const login = ok(await call(`${url}/v1/login`, 'POST', { email, password: PASSWORD }), 'login');
    const id = (login.json['user'] as { id?: unknown } | undefined)?.id;
    if (typeof id !== 'string' || login.cookie === '') throw new Error(`login answered no user or no cookie: ${JSON.stringify(login.json).slice(0, 300)}`);
    loops.push({ email, id, cookie: login.cookie });
  }
  const tuples = [
    ...loops.flatMap((s) => [0, 1, 2, 3, 4].map((g) => ({ user: `user:${s.id}`, relation: 'member', object: `group:g${g}` }))),
    ...Array.from({ length: DOCS }, (_, i) => ({ user: `group:g${i % 10}#member`, relation: 'viewer', object: `doc:${i}` })),
  ];
  for (let i = 0; i < tuples.length; i += 100) ok(await call(`${url}/v1/admin/fga/tuples`, 'POST', { tuples: tuples.slice(i, i + 100) }, admin), 'tuples');
  return loops;
}

const VIEWABLE = JSON.stringify(Array.from({ length: DOCS }, (_, i) => i).filter((i) => i % 10 < 5).map((i) => `doc:${i}`).sort());

/** Makes one request of `flow` for a loop; true when its answer is right (a sign-in's cookie becomes the loop's session). */
async function runFlow(url: string, flow: Flow, s: LoopState, i: number): Promise<boolean> {
  const session = { cookie: s.cookie };
  switch (flow) {
    case 'sign_in': {
      const a = await call(`${url}/v1/login`, 'POST', { email: s.email, password: PASSWORD });
      if (a.status !== 200 || (a.json['user'] as { id?: unknown } | undefined)?.id !== s.id || a.cookie === '') return false;
      s.cookie = a.cookie;
      return true;
    }
    case 'validate_session': {
      const a = await call(`${url}/v1/validate_session`, 'POST', {}, session);
      return a.status === 200 && (a.json['user'] as { id?: unknown } | undefined)?.id === s.id;
    }
    case 'profile': {
      const a = await call(`${url}/v1/profile`, 'GET', undefined, session);
      return a.status === 200 && a.json['id'] === s.id;
    }
    case 'check_permissions': {
      const doc = (i * 37) % DOCS;
      const a = await call(`${url}/v1/check_permissions`, 'POST', { checks: [{ relation: 'viewer', object: `doc:${doc}` }] }, session);
      return a.status === 200 && (a.json['results'] as { allowed?: unknown }[] | undefined)?.[0]?.allowed === doc % 10 < 5;
    }
    case 'list_permissions': {
      const a = await call(`${url}/v1/list_permissions`, 'POST', { relation: 'viewer', object_type: 'doc' }, session);
      const objects = ((a.json['objects'] ?? []) as unknown[]).map((o) => (typeof o === 'string' ? o : String((o as { object?: unknown }).object))).sort();
      return a.status === 200 && JSON.stringify(objects) === VIEWABLE;
    }
  }
}

function argValue(name: string, fallback: number): number {
  const arg = process.argv.find((a) => a.startsWith(`--${name}=`));
  if (arg === undefined) return fallback;
  const v = Number(arg.slice(name.length + 3));
  if (!Number.isFinite(v) || v < 0) throw new Error(`--${name} takes a number of seconds or rounds`);
  return v;
}

async function underLoad(dir: string, cacheDir: string, loadSeconds: number, afterSeconds: number): Promise<Record<string, unknown>> {
  const server = await spawnServer(dir, cacheDir, 'load', ['--rate-limit-rps', '1000000', '--rate-limit-burst', '1000000']);
  const pid = server.child.pid as number;
  try {
    const loops = await seed(server.url);
    for (const s of loops.slice(0, 2)) {
      for (const [i, flow] of FLOWS.entries()) if (!(await runFlow(server.url, flow, s, i))) throw new Error(`${flow} answered wrongly before timing`);
    }
    const wrongAfterSignOut = await call(`${server.url}/v1/validate_session`, 'POST', {}, { cookie: 'latchkey_session=not-a-session' });
    if (wrongAfterSignOut.status === 200) throw new Error('validate_session accepted a made-up cookie');

    const samples: { t: number; rss: number; phase: 'load' | 'after' }[] = [];
    const t0 = performance.now();
    const seconds = (): number => (performance.now() - t0) / 1000;
    let phase: 'load' | 'after' = 'load';
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        samples.push({ t: r1(seconds()), rss: r1(await rssMib(pid)), phase });
        await new Promise((r) => setTimeout(r, SAMPLE_MS));
      }
    })();
    const heapAtStart = await heapUsedMib(server.metricsUrl);
    const counts = Object.fromEntries(FLOWS.map((f) => [f, 0])) as Record<Flow, number>;
    let wrong = 0;
    let failed = 0;
    const cpuBefore = await cpuMs(pid);
    const end = performance.now() + loadSeconds * 1000;
    await Promise.all(
      loops.map(async (s, k) => {
        for (let i = k; performance.now() < end; i++) {
          const flow = FLOWS[i % FLOWS.length] as Flow;
          try {
            if (await runFlow(server.url, flow, s, i)) counts[flow]++;
            else wrong++;
          } catch {
            failed++;
          }
        }
      }),
    );
    const loadElapsed = seconds();
    const cpuLoad = (await cpuMs(pid)) - cpuBefore;
    const rssAtLoadEnd = await rssMib(pid);
    const heapAtLoadEnd = await heapUsedMib(server.metricsUrl);
    phase = 'after';
    await new Promise((r) => setTimeout(r, afterSeconds * 1000));
    const rssAfter = await rssMib(pid);
    const heapAfter = await heapUsedMib(server.metricsUrl);
    sampling = false;
    await sampler;

    const load = samples.filter((p) => p.phase === 'load');
    const secondHalf = load.filter((p) => p.t >= loadElapsed / 2);
    const total = Object.values(counts).reduce((a, b) => a + b, 0);
    return {
      load_seconds: r1(loadElapsed),
      after_seconds: afterSeconds,
      loops: LOOPS,
      requests: total,
      requests_per_second: Math.round(total / loadElapsed),
      by_flow: counts,
      wrong_answers: wrong,
      failed,
      server_cpu_ms_per_request: r3(cpuLoad / Math.max(1, total)),
      rss_mib: {
        at_load_start: load[0]?.rss,
        peak: r1(Math.max(...samples.map((p) => p.rss), rssAtLoadEnd)),
        at_load_end: r1(rssAtLoadEnd),
        after_idle: r1(rssAfter),
        slope_second_half_mib_per_minute: r1(slopePerMinute(secondHalf)),
        slope_whole_load_mib_per_minute: r1(slopePerMinute(load)),
      },
      heap_used_mib: { at_load_start: heapAtStart, at_load_end: heapAtLoadEnd, after_idle: heapAfter },
      samples: samples.map((p) => [p.t, p.rss]),
    };
  } finally {
    await stop(server.child);
  }
}

export async function run(options: { quick: boolean }): Promise<unknown> {
  const rounds = argValue('starts', options.quick ? 3 : 7);
  const loadSeconds = argValue('load-seconds', options.quick ? 30 : 300);
  const afterSeconds = argValue('after-seconds', 60);
  const loadBefore = loadavg().map(r1);
  const first: StartFigures[] = [];
  const cached: StartFigures[] = [];
  const dir = await mkdtemp(join(tmpdir(), 'latchkey-footprint-'));
  try {
    for (let i = 0; i < rounds; i++) {
      const cacheDir = join(dir, `compile-cache-${i}`);
      first.push(await start(dir, cacheDir, `first${i}`));
      cached.push(await start(dir, cacheDir, `cached${i}`));
    }
    const pick = (rows: typeof first) => ({
      ready_ms: summary(rows.map((r) => r.ready_ms)),
      ready_cpu_ms: summary(rows.map((r) => r.ready_cpu_ms)),
      readyz_ms: summary(rows.map((r) => r.readyz_ms)),
      idle_rss_mib: summary(rows.map((r) => r.idle_rss_mib)),
    });
    const figures: Record<string, unknown> = {
      command: `node ${(await startCommand()).map((w) => w.replace(`${ROOT}/`, '')).join(' ')}`,
      rounds,
      first_start: pick(first),
      cached_start: pick(cached),
    };
    if (loadSeconds > 0) figures['under_load'] = await underLoad(dir, join(dir, 'compile-cache-0'), loadSeconds, afterSeconds);
    figures['load_average'] = { before: loadBefore, after: loadavg().map(r1), note: 'other work ran on the machine at the same time' };
    return figures;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
