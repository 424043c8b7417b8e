/**
 * Latchkey beside better-auth, in one run (issue #35): each in its own
 * process on a SQLite file, passwords hashed with bcrypt (`$2b$`) at the same
 * cost (10) on both sides (Latchkey through `@node-rs/bcrypt`, better-auth's
 * hooks through the `bcrypt` package), rate limits off, autocannon on loopback
 * at 50 connections, interleaved rounds (the order of the two swapped each
 * round), every answer checked before anything is timed:
 *
 * - `sign_up`: a new account per request (Latchkey `POST /v1/signup`,
 *   better-auth `POST /api/auth/sign-up/email`), each opening a session;
 * - `sign_in`: email and password of an existing account (`/v1/login`,
 *   `/api/auth/sign-in/email`);
 * - `session_check`: what a web app asks on every request, with the session
 *   cookie: better-auth's `GET /api/auth/get-session` against Latchkey's
 *   `POST /v1/validate_session` and `GET /v1/profile`;
 * - `sign_out`: ends a session opened beforehand, one per request
 *   (`/v1/logout`, `/api/auth/sign-out`).
 *
 * Figures per flow and side: requests per second, p50/p95/p99 latency and the
 * server's CPU time per request (from /proc), medians over the rounds, with
 * Latchkey's ratio to better-auth.
 *
 * The platform's limit is measured in the same run: a bare `node:http` server
 * answering a fixed JSON once it has read the request (bench/server_path.ts's
 * reference process), sent the profile check's request with its cookie, once
 * per round (`bare_node_http`); then each of Latchkey's session checks and the
 * bare server, sent that check's own request (method, path, cookie, body), in
 * alternating one-second slices (transport.ts `paired`), the ratio the target
 * is judged on (at least 0.6). better-auth and its own dependencies are
 * in bench/peers/package.json (installed here on first use, never part of
 * the project's install).
 *
 *   npm run bench -- peers [--quick]      or      node bench/peers.ts [--quick]
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Options } from 'autocannon';
import { autocannonRun, paired, startServerProcess } from './transport.ts';
import { startReferences } from './server_path.ts';
import { stopChild } from '../test/helpers/instances.ts';

const COST = 10;
const PASSWORD = 'correct horse battery staple';
const CONNECTIONS = 50;
/**
 * Accounts signed up before the timed flows (50 in a quick run): sign-in, the session checks and
 * sign-out go round them, so no account sees more than a request or two at
 * once (Latchkey reserves a per-account login attempt before comparing the
 * password, so fifty parallel logins of one account would meet its lockout
 * budget, which is not what a web app's traffic looks like).
 */
let ACCOUNTS = 200;
const PEERS_DIR = join(import.meta.dirname, 'peers');

const round = (x: number, d = 2): number => Math.round(x * 10 ** d) / 10 ** d;
const median = (xs: readonly number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;
const log = (msg: string): void => void process.stderr.write(`[peers bench ${new Date().toISOString().slice(11, 19)}] ${msg}\n`);

/** CPU seconds (user + system) a process has used, from /proc (Linux). */
function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(f[11]) + Number(f[12])) / 100;
}

function installPeers(): void {
  if (existsSync(join(PEERS_DIR, 'node_modules', 'better-auth'))) return;
  log('installing bench/peers (better-auth) from its lockfile');
  const r = spawnSync('npm', ['ci', '--no-audit', '--no-fund', '--loglevel=error'], { cwd: PEERS_DIR, stdio: 'inherit' });
  if (r.status !== 0) throw new Error('npm ci in bench/peers failed');
}

async function startBetterAuth(dir: string): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(process.execPath, [join(PEERS_DIR, 'better_auth_server.ts'), join(dir, 'better-auth.sqlite'), String(COST)], { stdio: ['ignore', 'pipe', 'inherit'] });
  return new Promise((ok, fail) => {
    let out = '';
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      fail(new Error('better-auth did not start'));
    }, 60_000);
    child.once('exit', (code) => fail(new Error(`better-auth exited with ${code}`)));
    child.stdout?.on('data', (d: Buffer) => {
      out += d.toString();
      const line = out.split('\n').find((l) => l.startsWith('{"ready"'));
      if (line === undefined) return;
      clearTimeout(timer);
      child.stdout?.removeAllListeners('data');
      child.stdout?.resume();
      ok({ child, url: (JSON.parse(line) as { url: string }).url });
    });
  });
}

interface Answer {
  status: number;
  json: Record<string, unknown>;
  cookie: string;
}

async function call(url: string, method: 'GET' | 'POST', body?: unknown, cookie?: string): Promise<Answer> {
  const res = await fetch(url, {
    method,
    headers: { origin: new URL(url).origin, ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...(cookie === undefined ? {} : { cookie }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  }).catch((err: unknown) => {
    // fetch says only "fetch failed"; the cause says which server and why.
    const cause = (err as { cause?: { code?: string; message?: string } }).cause;
    throw new Error(`${method} ${url}: ${cause?.code ?? cause?.message ?? String(err)}`);
  });
  const text = await res.text();
  const cookies = res.headers.getSetCookie().map((c) => c.split(';')[0]!).filter((c) => !c.endsWith('='));
  return { status: res.status, json: text === '' ? {} : ((JSON.parse(text) as Record<string, unknown> | null) ?? {}), cookie: cookies.join('; ') };
}

/** One side of the comparison: how to make each request, and the check that its answer is right. */
interface Side {
  name: 'latchkey' | 'better_auth';
  pid: number;
  url: string;
  signUp: (email: string) => { path: string; body: unknown };
  signIn: (email: string) => { path: string; body: unknown };
  sessionChecks: { name: string; method: 'GET' | 'POST'; path: string; body?: unknown; userOf: (a: Answer) => unknown }[];
  signOut: { path: string; body: unknown };
  /** The user id in a sign-up or sign-in answer. */
  userOf: (a: Answer) => unknown;
}

function latchkey(pid: number, url: string): Side {
  return {
    name: 'latchkey',
    pid,
    url,
    signUp: (email) => ({ path: '/v1/signup', body: { email, password: PASSWORD, confirm_password: PASSWORD } }),
    signIn: (email) => ({ path: '/v1/login', body: { email, password: PASSWORD } }),
    sessionChecks: [
      { name: 'session_check_validate_session', method: 'POST', path: '/v1/validate_session', body: {}, userOf: (a) => (a.json['user'] as Record<string, unknown> | undefined)?.['id'] },
      { name: 'session_check_profile', method: 'GET', path: '/v1/profile', userOf: (a) => a.json['id'] },
    ],
    signOut: { path: '/v1/logout', body: {} },
    userOf: (a) => (a.json['user'] as Record<string, unknown> | undefined)?.['id'],
  };
}

function betterAuthSide(pid: number, url: string): Side {
  return {
    name: 'better_auth',
    pid,
    url,
    signUp: (email) => ({ path: '/api/auth/sign-up/email', body: { email, password: PASSWORD, name: 'Bench' } }),
    signIn: (email) => ({ path: '/api/auth/sign-in/email', body: { email, password: PASSWORD } }),
    sessionChecks: [{ name: 'session_check', method: 'GET', path: '/api/auth/get-session', userOf: (a) => (a.json['user'] as Record<string, unknown> | undefined)?.['id'] }],
    signOut: { path: '/api/auth/sign-out', body: {} },
    userOf: (a) => (a.json['user'] as Record<string, unknown> | undefined)?.['id'],
  };
}

/** Checks every flow of a side once, answer by answer. */
async function verify(side: Side, tag: string): Promise<void> {
  const email = `verify-${tag}@example.com`;
  const up = side.signUp(email);
  const signedUp = await call(side.url + up.path, 'POST', up.body);
  const id = side.userOf(signedUp);
  if (signedUp.status !== 200 || typeof id !== 'string' || signedUp.cookie === '') throw new Error(`${side.name} sign-up: ${signedUp.status} ${JSON.stringify(signedUp.json)}`);
  const inn = side.signIn(email);
  const signedIn = await call(side.url + inn.path, 'POST', inn.body);
  if (signedIn.status !== 200 || side.userOf(signedIn) !== id || signedIn.cookie === '') throw new Error(`${side.name} sign-in: ${signedIn.status} ${JSON.stringify(signedIn.json)}`);
  const wrong = await call(side.url + inn.path, 'POST', { email, password: 'not the password' });
  if (wrong.status < 400) throw new Error(`${side.name} sign-in with a wrong password answered ${wrong.status}`);
  for (const c of side.sessionChecks) {
    const checked = await call(side.url + c.path, c.method, c.body, signedIn.cookie);
    if (checked.status !== 200 || c.userOf(checked) !== id) throw new Error(`${side.name} ${c.name}: ${checked.status} ${JSON.stringify(checked.json)}`);
  }
  const out = await call(side.url + side.signOut.path, 'POST', side.signOut.body, signedIn.cookie);
  if (out.status !== 200) throw new Error(`${side.name} sign-out: ${out.status} ${JSON.stringify(out.json)}`);
  for (const c of side.sessionChecks) {
    const after = await call(side.url + c.path, c.method, c.body, signedIn.cookie);
    if (after.status === 200 && c.userOf(after) === id) throw new Error(`${side.name} ${c.name} still answers for a signed-out session`);
  }
}

interface Figures {
  requests_per_second: number;
  p50_ms: number;
  p95_ms: number;
  p99_ms: number;
  server_cpu_us_per_request: number;
  non_2xx: number;
}

async function load(side: { pid: number }, options: Options): Promise<Figures> {
  const before = cpuSeconds(side.pid);
  const r = await autocannonRun({ connections: CONNECTIONS, ...options });
  const cpu = cpuSeconds(side.pid) - before;
  const answered = r.requests.total;
  return {
    // Answered requests over the time to the last answer (a run bounded by a number of requests lasts about a
    // second, where autocannon's per-second average and its `duration`, which ends at its next whole-second tick, are not
    // meaningful: sign-out read 990 and 498 requests/s, 1,000 over 1.01 s and over 2.01 s).
    requests_per_second: Math.round(answered / Math.max(r.answered_s, 1e-3)),
    p50_ms: r.latency.p50,
    p95_ms: r.p95_ms,
    p99_ms: r.latency.p99,
    server_cpu_us_per_request: answered > 0 ? Math.round((cpu / answered) * 1e6) : 0,
    non_2xx: r.non2xx + r.errors + r.timeouts,
  };
}

/** Runs `make(i)` for i < n, CONNECTIONS at a time; every answer must be a 200 with a session cookie. */
async function inParallel(n: number, make: (i: number) => Promise<Answer>): Promise<string[]> {
  const cookies: string[] = [];
  for (let i = 0; i < n; i += CONNECTIONS) {
    const batch = await Promise.all(Array.from({ length: Math.min(CONNECTIONS, n - i) }, (_, k) => make(i + k)));
    for (const a of batch) {
      if (a.status !== 200 || a.cookie === '') throw new Error(`setting up: ${a.status} ${JSON.stringify(a.json)}`);
      cookies.push(a.cookie);
    }
  }
  return cookies;
}

/**
 * Waits until the server is idle (under a tenth of a core over 300 ms, at
 * most 60 s): requests a load run left in flight must not be counted in the
 * next one.
 */
async function settle(pid: number): Promise<void> {
  const until = Date.now() + 60_000;
  for (let before = cpuSeconds(pid); Date.now() < until; ) {
    await new Promise((r) => setTimeout(r, 300));
    const now = cpuSeconds(pid);
    if (now - before < 0.03) return;
    before = now;
  }
}

/** The accounts of a side: signed up in parallel, each with the cookie of its session. */
async function signUpAccounts(side: Side): Promise<{ emails: string[]; cookies: string[] }> {
  const emails = Array.from({ length: ACCOUNTS }, (_, i) => `account-${i}-${side.name}@example.com`);
  const cookies = await inParallel(ACCOUNTS, (i) => {
    const up = side.signUp(emails[i]!);
    return call(side.url + up.path, 'POST', up.body);
  });
  return { emails, cookies };
}

/** The load of a session check: each request with the cookie of the next account. */
function sessionCheckLoad(url: string, c: Side['sessionChecks'][number], seconds: number, cookies: readonly string[], target = url): Options {
  let k = 0;
  const headers = c.body === undefined ? { origin: url } : { 'content-type': 'application/json', origin: url };
  return {
    url: target,
    duration: seconds,
    requests: [{ method: c.method, path: c.path, headers, ...(c.body === undefined ? {} : { body: JSON.stringify(c.body) }), setupRequest: (req) => ({ ...req, headers: { ...headers, cookie: cookies[k++ % cookies.length]! } }) }],
  };
}

async function flows(side: Side, round: number, seconds: number, accounts: { emails: string[]; cookies: string[] }): Promise<Record<string, Figures>> {
  const out: Record<string, Figures> = {};
  const json = { 'content-type': 'application/json', origin: side.url };
  let n = 0;
  await settle(side.pid);
  out['sign_up'] = await load(side, {
    url: side.url,
    duration: seconds,
    requests: [{ method: 'POST', path: side.signUp('').path, headers: json, setupRequest: (req) => ({ ...req, body: JSON.stringify(side.signUp(`load-${round}-${n++}-${side.name}@example.com`).body) }) }],
  });
  await settle(side.pid);
  let a = 0;
  out['sign_in'] = await load(side, {
    url: side.url,
    duration: seconds,
    requests: [{ method: 'POST', path: side.signIn('').path, headers: json, setupRequest: (req) => ({ ...req, body: JSON.stringify(side.signIn(accounts.emails[a++ % ACCOUNTS]!).body) }) }],
  });
  for (const c of side.sessionChecks) {
    await settle(side.pid);
    out[c.name] = await load(side, sessionCheckLoad(side.url, c, seconds, accounts.cookies));
  }
  // Sign-out ends one session per request: they are opened first (five per account), and the run stops when they are used up.
  const amount = ACCOUNTS * 5;
  const sessions = await inParallel(amount, (i) => {
    const inn = side.signIn(accounts.emails[i % ACCOUNTS]!);
    return call(side.url + inn.path, 'POST', inn.body);
  });
  await settle(side.pid);
  let k = 0;
  out['sign_out'] = await load(side, {
    url: side.url,
    amount,
    requests: [{ method: 'POST', path: side.signOut.path, headers: json, setupRequest: (req) => ({ ...req, body: JSON.stringify(side.signOut.body), headers: { ...json, cookie: sessions[k++]! } }) }],
  });
  return out;
}

export async function run(options: { quick: boolean }): Promise<Record<string, unknown>> {
  installPeers();
  // A quick run signs up a quarter as many (bcrypt at cost 10 for each, on both sides).
  ACCOUNTS = options.quick ? 50 : 200;
  const rounds = options.quick ? 1 : 3;
  const seconds = options.quick ? 3 : 10;
  const dir = await mkdtemp(join(tmpdir(), 'lk-peers-'));
  const ours = await startServerProcess(dir, [`--bcrypt-cost=${COST}`]);
  const theirs = await startBetterAuth(dir);
  const refs = await startReferences();
  try {
    const sides = [latchkey(ours.child.pid!, ours.http), betterAuthSide(theirs.child.pid!, theirs.url)];
    for (const side of sides) await verify(side, side.name);
    log('answers verified on both sides');
    const accounts = new Map<string, { emails: string[]; cookies: string[] }>();
    for (const side of sides) accounts.set(side.name, await signUpAccounts(side));
    const runs = new Map<string, Record<string, Figures>[]>([...sides.map((s) => [s.name, []] as [string, Record<string, Figures>[]]), ['bare_node_http', []]]);
    const ourSide = sides[0]!;
    const ourCookies = accounts.get('latchkey')!.cookies;
    const profile = ourSide.sessionChecks.find((c) => c.name === 'session_check_profile')!;
    // The bare server is sent a session check's own request (its method, path, cookie and body) and answers it a fixed
    // JSON: each check is paired with the platform's limit for that very request. The rounds' bare row takes the
    // profile check's request (GET, the cookie).
    const bare = (s: number, c = profile): Promise<Figures> => load({ pid: refs.pid ?? 0 }, sessionCheckLoad(ourSide.url, c, s, ourCookies, refs.http));
    for (const c of ourSide.sessionChecks) {
      if ((await call(`${refs.http}${c.path}`, c.method, c.body, ourCookies[0])).status !== 200) throw new Error(`the bare node:http server did not answer ${c.method} ${c.path} with 200`);
    }
    for (let r = 0; r < rounds; r++) {
      for (const side of r % 2 === 0 ? sides : [...sides].reverse()) {
        const f = await flows(side, r, seconds, accounts.get(side.name)!);
        runs.get(side.name)!.push(f);
        log(`round ${r + 1} ${side.name}: ${JSON.stringify(f)}`);
      }
      const b = await bare(seconds);
      runs.get('bare_node_http')!.push({ session_check: b });
      log(`round ${r + 1} bare node:http: ${JSON.stringify(b)}`);
    }
    // The target's ratio: each session check against the bare server in alternating one-second slices.
    const toBare: Record<string, unknown> = {};
    for (const c of ourSide.sessionChecks) {
      toBare[c.name] = await paired((s) => load(ourSide, sessionCheckLoad(ourSide.url, c, s, ourCookies)).then((f) => ({ total: f.requests_per_second * s })), (s) => bare(s, c).then((f) => ({ total: f.requests_per_second * s })), options.quick ? 2 : 4);
    }
    const medians = (name: string): Record<string, Figures> => {
      const list = runs.get(name)!;
      const out: Record<string, Figures> = {};
      for (const flow of Object.keys(list[0]!)) {
        const pick = (k: keyof Figures): number => median(list.map((x) => x[flow]![k]));
        out[flow] = { requests_per_second: pick('requests_per_second'), p50_ms: pick('p50_ms'), p95_ms: pick('p95_ms'), p99_ms: pick('p99_ms'), server_cpu_us_per_request: pick('server_cpu_us_per_request'), non_2xx: Math.max(...list.map((x) => x[flow]!.non_2xx)) };
      }
      return out;
    };
    const ourFigures = medians('latchkey');
    const theirFigures = medians('better_auth');
    const ratio = (flow: string, against = flow): number => round(ourFigures[flow]!.requests_per_second / Math.max(1, theirFigures[against]!.requests_per_second));
    return {
      load_average_1m: round(loadavg()[0] ?? 0),
      bcrypt_cost: COST,
      connections: CONNECTIONS,
      seconds_per_run: seconds,
      rounds,
      latchkey: ourFigures,
      better_auth: theirFigures,
      bare_node_http: medians('bare_node_http'),
      session_check_to_bare_node_http_paired: toBare,
      requests_per_second_ratio: {
        sign_up: ratio('sign_up'),
        sign_in: ratio('sign_in'),
        session_check_validate_session: ratio('session_check_validate_session', 'session_check'),
        session_check_profile: ratio('session_check_profile', 'session_check'),
        sign_out: ratio('sign_out'),
      },
    };
  } finally {
    refs.stop();
    await stopChild(ours.child);
    await stopChild(theirs.child);
    await rm(dir, { recursive: true, force: true });
  }
}

if (import.meta.main) {
  process.stdout.write(`${JSON.stringify(await run({ quick: process.argv.includes('--quick') }), null, 2)}\n`);
}
