/**
 * Security matrix G3, the load smoke: the server in its own process on
 * loopback, driven by autocannon, each phase bounded in time: the matrix's
 * 60 s in `npm test` (its timed phase, `ava.load.config.mjs`, which runs this
 * file alone after the rest of the suite); 5 s when the file is run by itself
 * without `LATCHKEY_LOAD_PHASE_SECONDS`. The rates are what must hold:
 *
 * - login at 8 connections: no 5xx, p95 under 1 s (bcrypt bound);
 * - validate_jwt_token at 32 connections: no 5xx, ≥ 2,000/s, p95 under 20 ms;
 * - check_permissions on 1,000 tuples at 32 connections: no 5xx, ≥ 1,000/s,
 *   p95 under 20 ms;
 * - the server's event-loop lag p99 (its own `nodejs_eventloop_lag_p99_seconds`)
 *   under 100 ms.
 *
 * autocannon reports p97.5, not p95: the p97.5 is held to the p95 bound
 * (stricter). The thresholds are the matrix's for 2 dedicated vCPUs; when
 * the machine is busier (other test files run in parallel), they are scaled
 * by each phase's contention: the runnable tasks sampled during it, or the
 * 1-minute load average before the run, per CPU (of at most 2), never below 1.
 */
import test from 'ava';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import autocannon, { type Options as AutocannonOptions, type Result as AutocannonResult } from 'autocannon';
import { freePort, killOnExit } from '../../helpers/instances.ts';

const ADMIN = 'load-admin-secret';

/**
 * Samples the machine's runnable tasks (the 4th field of /proc/loadavg, which
 * counts this sampler too) every 50 ms until the returned function is called;
 * that answers their mean per CPU (of at most 2).
 */
function sampleRunnable(): () => number {
  const samples: number[] = [];
  const read = (): void => {
    const runnable = Number(/\s(\d+)\//.exec(readFileSync('/proc/loadavg', 'utf8'))?.[1]);
    if (Number.isFinite(runnable)) samples.push(Math.max(0, runnable - 1));
  };
  read();
  const timer = setInterval(read, 50);
  return () => {
    clearInterval(timer);
    read();
    return samples.reduce((a, b) => a + b, 0) / samples.length / Math.min(2, cpus().length);
  };
}
const PASSWORD = 'correct horse battery staple';
const BIN = join(import.meta.dirname, '..', '..', '..', 'bin', 'latchkey.js');
/** Seconds per phase: `LATCHKEY_LOAD_PHASE_SECONDS` (60, the matrix's, in npm test's timed phase), else 5. */
const PHASE_SECONDS = phaseSeconds(process.env['LATCHKEY_LOAD_PHASE_SECONDS']);

function phaseSeconds(raw: string | undefined): number {
  if (raw === undefined || raw === '') return 5;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1 || n > 60) throw new Error(`LATCHKEY_LOAD_PHASE_SECONDS must be an integer from 1 to 60, not ${raw}`);
  return n;
}

interface Phase {
  rps: number;
  p95Ms: number;
  non2xx: number;
  errors: number;
  total: number;
  statuses: Record<string, unknown>;
}

async function load(url: string, path: string, body: unknown | (() => unknown), connections: number, headers: Record<string, string> = {}): Promise<Phase> {
  const options = {
    url: `${url}${path}`,
    method: 'POST' as const,
    connections,
    duration: PHASE_SECONDS,
    headers: { 'content-type': 'application/json', origin: url, ...headers },
    ...(typeof body === 'function'
      ? { requests: [{ setupRequest: (req: Record<string, unknown>) => ({ ...req, body: JSON.stringify((body as () => unknown)()) }) }] }
      : { body: JSON.stringify(body) }),
  };
  const result = (await autocannon(options as AutocannonOptions)) as AutocannonResult & { latency: { p97_5: number }; statusCodeStats?: Record<string, unknown> };
  return {
    rps: result.requests.total / (result.duration || PHASE_SECONDS),
    p95Ms: result.latency.p97_5,
    non2xx: result.non2xx,
    errors: result.errors + result.timeouts,
    total: result.requests.total,
    statuses: result.statusCodeStats ?? {},
  };
}

async function lagP99(metricsUrl: string): Promise<number> {
  const text = await (await fetch(`${metricsUrl}/metrics`)).text();
  const m = /^latchkey_nodejs_eventloop_lag_p99_seconds\s+([0-9.e+-]+)/m.exec(text);
  return m ? Number(m[1]) * 1000 : Number.NaN;
}

test('G3 load smoke: login c=8, validate_jwt_token c=32, check_permissions on 1k tuples c=32 hold the matrix thresholds with no 5xx', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'latchkey-load-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const [port, metricsPort] = [await freePort(), await freePort()];
  const url = `http://127.0.0.1:${port}`;
  const metricsUrl = `http://127.0.0.1:${metricsPort}`;
  const child = spawn(
    process.execPath,
    [
      BIN,
      'serve',
      '--database-type=sqlite',
      `--database-url=${join(dir, 'load.sqlite')}`,
      `--admin-secret=${ADMIN}`,
      '--client-id=load-client',
      '--client-secret=load-client-secret',
      '--jwt-type=HS256',
      '--jwt-secret=load-jwt-secret-0123456789abcdef0123456789',
      '--host=127.0.0.1',
      `--http-port=${port}`,
      '--grpc-port=0',
      `--metrics-port=${metricsPort}`,
      '--log-level=silent',
      '--rate-limit-rps=1000000',
      '--rate-limit-burst=1000000',
    ],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  killOnExit(child);
  child.stderr?.resume();
  t.teardown(() => void child.kill('SIGTERM'));
  const until = Date.now() + 30_000;
  while (!(await fetch(`${url}/readyz`).then((r) => r.ok, () => false))) {
    if (Date.now() > until || child.exitCode !== null) return t.fail('server did not start');
    await new Promise((r) => setTimeout(r, 100));
  }
  const post = async (path: string, body: unknown, headers: Record<string, string> = {}): Promise<Record<string, unknown>> => {
    const r = await fetch(`${url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', origin: url, ...headers }, body: JSON.stringify(body) });
    const json = (await r.json()) as Record<string, unknown>;
    if (!r.ok) throw new Error(`${path}: ${r.status} ${JSON.stringify(json)}`);
    return json;
  };
  const admin = { 'x-service-admin-secret': ADMIN };
  // Logins rotate over 16 accounts: concurrent logins of one account beyond its attempt budget (5)
  // are refused by design (matrix A2/A3: the budget is reserved before the password is compared).
  const accounts = Array.from({ length: 16 }, (_, i) => `load${i}@load.test`);
  let token = '';
  for (const email of accounts) token = (await post('/v1/signup', { email, password: PASSWORD }))['access_token'] as string;
  let next = 0;
  const nextLogin = (): unknown => ({ email: accounts[next++ % accounts.length], password: PASSWORD });
  await post('/v1/admin/fga/model', { dsl: 'model\n  schema 1.1\ntype user\ntype group\n  relations\n    define member: [user]\ntype doc\n  relations\n    define viewer: [user, group#member]\n' }, admin);
  for (let b = 0; b < 10; b++) {
    const tuples = Array.from({ length: 100 }, (_, i) => {
      const k = b * 100 + i;
      return k % 2 === 0 ? { user: `user:u${k}`, relation: 'viewer', object: `doc:d${k % 250}` } : { user: `group:g${k}#member`, relation: 'viewer', object: `doc:d${k % 250}` };
    });
    await post('/v1/admin/fga/tuples', { tuples }, admin);
  }
  await post('/v1/admin/fga/tuples', { tuples: [{ user: 'user:u7', relation: 'member', object: 'group:g7' }] }, admin);
  await lagP99(metricsUrl); // resets the lag histogram: what follows is measured under load

  // The thresholds are the matrix's for 2 dedicated vCPUs; on a machine busier than that (other test
  // files, other jobs) they are scaled by the contention of each phase: the runnable tasks sampled while
  // it runs, per CPU (the server and the load generator alone make about one per CPU), or the 1-min load
  // per CPU measured before, whichever is higher, never below 1. The 1-min average alone lags behind the
  // bursts of the test files that run beside this one.
  const before = loadavg()[0]! / Math.min(2, cpus().length);
  const phase = async <T>(run: () => Promise<T>): Promise<{ result: T; contention: number }> => {
    const stop = sampleRunnable();
    const result = await run();
    return { result, contention: Math.max(1, before, stop()) };
  };
  const { result: login, contention: loginC } = await phase(() => load(url, '/v1/login', nextLogin, 8));
  const { result: validate, contention: validateC } = await phase(() => load(url, '/v1/validate_jwt_token', { token_type: 'access_token', token }, 32));
  const { result: check, contention: checkC } = await phase(() => load(url, '/v1/check_permissions', { user: 'user:u7', checks: [{ relation: 'viewer', object: 'doc:d7' }] }, 32, admin));
  const contention = Math.max(loginC, validateC, checkC);
  const lag = await lagP99(metricsUrl);
  t.log(
    `${PHASE_SECONDS} s phases; contention login ${loginC.toFixed(2)} validate ${validateC.toFixed(2)} check ${checkC.toFixed(2)}; login ${login.rps.toFixed(0)}/s p97.5 ${login.p95Ms} ms; validate ${validate.rps.toFixed(0)}/s p97.5 ${validate.p95Ms} ms; check ${check.rps.toFixed(0)}/s p97.5 ${check.p95Ms} ms; event-loop lag p99 ${lag.toFixed(1)} ms`,
  );
  for (const [name, p] of Object.entries({ login, validate, check })) {
    t.true(p.total > 0, `${name}: requests made`);
    t.is(p.non2xx, 0, `${name}: every answer 2xx (${JSON.stringify(p.statuses)})`);
    t.is(p.errors, 0, `${name}: no errors or timeouts`);
  }
  t.true(login.p95Ms < 1000 * loginC, `login p95 ${login.p95Ms} ms`);
  t.true(validate.rps >= 2000 / validateC, `validate ${validate.rps.toFixed(0)}/s`);
  t.true(validate.p95Ms < 20 * validateC, `validate p95 ${validate.p95Ms} ms`);
  t.true(check.rps >= 1000 / checkC, `check ${check.rps.toFixed(0)}/s`);
  t.true(check.p95Ms < 20 * checkC, `check p95 ${check.p95Ms} ms`);
  t.true(lag < 100 * contention, `event-loop lag p99 ${lag.toFixed(1)} ms`);
});
