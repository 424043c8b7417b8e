/**
 * Check over OpenFGA's HTTP API (`POST /stores/{id}/check` with a preshared
 * key) and over our REST `check_permissions` (a user's access token), side by
 * side with a bare `node:http` server answering a fixed JSON, in the same run,
 * on loopback with 50 connections (autocannon). The server runs in its own
 * process (the real bin, SQLite, the check cache and graph mirror on, every
 * guard on, the rate limit raised by flag); the bare server in another.
 *
 * Both checks ask the same question of the default store (a user who is a
 * viewer through a group), and the answers are verified before timing,
 * with questions that must be denied as well; a target counts as met only
 * when no timed request failed or answered other than 2xx. After
 * a warm-up, 3 rounds of 5 s interleave the three targets; each reports its
 * best round and every round's rate. Then each check path and the bare
 * server, sent that path's own request, alternate in one-second slices
 * (transport.ts `paired`): the ratio the target is judged on, as this
 * machine's speed drifts within a minute. Targets (issue #14): each check
 * path at least 50% of the bare server's requests per second, p99 at most
 * 15 ms.
 * Standalone: `node bench/openfga_check.ts [--quick]`; `--verify` starts the
 * servers and checks the answers without timing anything.
 */
import { spawn } from 'node:child_process';
import { createServer } from 'node:http';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import autocannon, { type Options, type Result } from 'autocannon';
import { paired, startServerProcess } from './transport.ts';

const CONNECTIONS = 50;
const KEY = 'bench-openfga-key-0123456789';
const ADMIN_SECRET = 'bench-admin-secret';
const DEFAULT_STORE = '00000000000000000000000000';
const MODEL = 'model\n  schema 1.1\ntype user\ntype group\n  relations\n    define member: [user]\ntype doc\n  relations\n    define viewer: [user, group#member]\n';

interface Figures {
  requests_per_second: number;
  /** CPU time (user + system) the serving process spent per answered request, in microseconds (Linux /proc; 0 elsewhere). */
  server_cpu_us_per_request: number;
  p50_ms: number;
  p99_ms: number;
  max_ms: number;
  errors: number;
  non_2xx: number;
  /** Requests answered. */
  total: number;
}


/** The bare reference: node:http answering a fixed JSON to every request. */
function serveBare(): void {
  const body = JSON.stringify({ allowed: true, resolution: '' });
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.setHeader('content-type', 'application/json');
      res.end(body);
    });
  });
  server.listen(0, '127.0.0.1', () => process.stdout.write(`${JSON.stringify({ http: `http://127.0.0.1:${(server.address() as { port: number }).port}` })}\n`));
}

async function startBare(): Promise<{ http: string; pid: number | undefined; stop(): void }> {
  const child = spawn(process.execPath, [new URL(import.meta.url).pathname, '--bare-server'], { stdio: ['ignore', 'pipe', 'inherit'] });
  const { http } = await new Promise<{ http: string }>((r) => child.stdout?.once('data', (d: Buffer) => r(JSON.parse(d.toString()) as { http: string })));
  return { http, pid: child.pid, stop: () => child.kill() };
}

async function json(url: string, init: RequestInit): Promise<Record<string, unknown>> {
  const res = await fetch(url, init);
  const body = (await res.json()) as Record<string, unknown>;
  if (!res.ok) throw new Error(`${url}: ${res.status} ${JSON.stringify(body)}`);
  return body;
}

/** Model, a user, and the tuples that make the user a viewer of doc:bench through a group. */
async function seed(base: string): Promise<{ userToken: string; user: string }> {
  const admin = { 'content-type': 'application/json', origin: base, 'x-service-admin-secret': ADMIN_SECRET };
  await json(`${base}/v1/admin/fga/model`, { method: 'POST', headers: admin, body: JSON.stringify({ dsl: MODEL }) });
  const signup = await json(`${base}/v1/signup`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', origin: base },
    body: JSON.stringify({ email: 'bench@example.com', password: 'a long bench passphrase', confirm_password: 'a long bench passphrase' }),
  });
  const user = `user:${(signup['user'] as { id: string }).id}`;
  const tuples = [{ user, relation: 'member', object: 'group:g' }, { user: 'group:g#member', relation: 'viewer', object: 'doc:bench' }];
  for (let i = 0; i < 500; i++) tuples.push({ user: `user:other-${i}`, relation: 'member', object: 'group:g' });
  for (let i = 0; i < tuples.length; i += 100) {
    await json(`${base}/stores/${DEFAULT_STORE}/write`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${KEY}` },
      body: JSON.stringify({ writes: { tuple_keys: tuples.slice(i, i + 100) } }),
    });
  }
  return { userToken: signup['access_token'] as string, user };
}

function figures(r: Result): Omit<Figures, 'server_cpu_us_per_request'> {
  return {
    requests_per_second: Math.round(r.requests.average),
    p50_ms: r.latency.p50,
    p99_ms: r.latency.p99,
    max_ms: r.latency.max,
    errors: r.errors + r.timeouts,
    non_2xx: r.non2xx,
    total: r.requests.total,
  };
}

/** The CPU time a process has used, in microseconds (user + system, from /proc; 0 where there is none). */
function cpuMicros(pid: number | undefined): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // utime and stime are fields 14 and 15 of the line, in clock ticks (100 per second on Linux).
    return (Number(fields[11]) + Number(fields[12])) * 10_000;
  } catch {
    return 0;
  }
}

async function load(options: Options, seconds: number, pid?: number): Promise<Figures> {
  const before = cpuMicros(pid);
  const result = await autocannon({ ...options, connections: CONNECTIONS, duration: seconds });
  const used = cpuMicros(pid) - before;
  const answered = result.requests.total;
  return { ...figures(result), server_cpu_us_per_request: answered > 0 ? Math.round(used / answered) : 0 };
}

function best(rounds: Figures[]): Figures & { rounds_rps: number[] } {
  const top = rounds.reduce((a, b) => (b.requests_per_second > a.requests_per_second ? b : a));
  return { ...top, rounds_rps: rounds.map((r) => r.requests_per_second) };
}

export async function run(options: { quick?: boolean; verifyOnly?: boolean } = {}): Promise<Record<string, unknown>> {
  const seconds = options.quick ? 3 : 5;
  const rounds = options.quick ? 1 : 3;
  const warmup = options.quick ? 1 : 2;
  const dir = await mkdtemp(join(tmpdir(), 'latchkey-bench-openfga-'));
  const { child, http: base } = await startServerProcess(dir, [`--openfga-preshared-keys=${KEY}`]);
  const bare = await startBare();
  try {
    const { userToken, user } = await seed(base);
    const openfgaBody = JSON.stringify({ tuple_key: { user, relation: 'viewer', object: 'doc:bench' } });
    const restBody = JSON.stringify({ checks: [{ relation: 'viewer', object: 'doc:bench' }] });
    const openfga: Options = { url: `${base}/stores/${DEFAULT_STORE}/check`, method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${KEY}` }, body: openfgaBody };
    const rest: Options = { url: `${base}/v1/check_permissions`, method: 'POST', headers: { 'content-type': 'application/json', origin: base, authorization: `Bearer ${userToken}` }, body: restBody };
    const reference: Options = { url: `${bare.http}/check`, method: 'POST', headers: { 'content-type': 'application/json' }, body: openfgaBody };

    // Verify the answers before timing: the timed question is allowed, and a
    // question that must be denied is denied on both paths (so a path that
    // answered `true` to everything would not pass).
    const openfgaAnswer = async (body: string): Promise<unknown> => (await json(openfga.url as string, { method: 'POST', headers: openfga.headers as Record<string, string>, body }))['allowed'];
    const restAnswer = async (body: string): Promise<unknown> =>
      ((await json(rest.url as string, { method: 'POST', headers: rest.headers as Record<string, string>, body }))['results'] as { allowed: boolean }[] | undefined)?.[0]?.allowed;
    const verified: [string, unknown, boolean][] = [
      ['OpenFGA check (viewer through the group)', await openfgaAnswer(openfgaBody), true],
      ['OpenFGA check (a user outside the group)', await openfgaAnswer(JSON.stringify({ tuple_key: { user: 'user:nobody', relation: 'viewer', object: 'doc:bench' } })), false],
      ['OpenFGA check (another document)', await openfgaAnswer(JSON.stringify({ tuple_key: { user, relation: 'viewer', object: 'doc:other' } })), false],
      ['check_permissions (viewer through the group)', await restAnswer(restBody), true],
      ['check_permissions (another document)', await restAnswer(JSON.stringify({ checks: [{ relation: 'viewer', object: 'doc:other' }] })), false],
    ];
    for (const [what, got, want] of verified) if (got !== want) throw new Error(`${what}: answered ${JSON.stringify(got)}, expected ${want}`);
    if (options.verifyOnly) return { verified: verified.map(([what, got]) => ({ what, allowed: got })) };

    const results: Record<'openfga_check' | 'rest_check_permissions' | 'bare_node_http', Figures[]> = { openfga_check: [], rest_check_permissions: [], bare_node_http: [] };
    await load(openfga, warmup);
    await load(rest, warmup);
    await load(reference, warmup);
    for (let round = 0; round < rounds; round++) {
      results.openfga_check.push(await load(openfga, seconds, child.pid));
      results.rest_check_permissions.push(await load(rest, seconds, child.pid));
      results.bare_node_http.push(await load(reference, seconds, bare.pid));
    }
    const o = best(results.openfga_check);
    const r = best(results.rest_check_permissions);
    const n = best(results.bare_node_http);
    const ratio = (x: Figures): number => Math.round((x.requests_per_second / n.requests_per_second) * 100) / 100;
    // The ratios the targets are judged on: each row and the bare server, sent the row's own request, in
    // alternating one-second slices (transport.ts `paired`), as this machine's speed drifts within a minute.
    const bareWith = (o: Options): Options => ({ ...o, url: `${bare.http}/check` });
    const groups = options.quick ? 2 : 4;
    const pairedOpenfga = await paired((s) => load(openfga, s), (s) => load(bareWith(openfga), s), groups);
    const pairedRest = await paired((s) => load(rest, s), (s) => load(bareWith(rest), s), groups);
    return {
      connections: CONNECTIONS,
      seconds_per_round: seconds,
      rounds,
      openfga_check: o,
      rest_check_permissions: r,
      bare_node_http: n,
      ratio_to_bare: { openfga_check: ratio(o), rest_check_permissions: ratio(r) },
      paired_with_bare: { openfga_check: pairedOpenfga, rest_check_permissions: pairedRest },
      targets: { ratio_to_bare_min: 0.5, p99_ms_max: 15 },
      // A round with errors or non-2xx answers timed something other than the verified answer.
      met: {
        openfga_check: pairedOpenfga.ratio >= 0.5 && o.p99_ms <= 15 && results.openfga_check.every((x) => x.errors === 0 && x.non_2xx === 0),
        rest_check_permissions: pairedRest.ratio >= 0.5 && r.p99_ms <= 15 && results.rest_check_permissions.every((x) => x.errors === 0 && x.non_2xx === 0),
      },
    };
  } finally {
    bare.stop();
    const exited = new Promise((done) => child.once('exit', done));
    child.kill('SIGTERM');
    await exited;
    await rm(dir, { recursive: true, force: true });
  }
}

if (import.meta.main && process.argv.includes('--bare-server')) {
  serveBare();
} else if (import.meta.main) {
  const out = await run({ quick: process.argv.includes('--quick'), verifyOnly: process.argv.includes('--verify') });
  process.stdout.write(`${JSON.stringify(out, null, 2)}\n`);
}
