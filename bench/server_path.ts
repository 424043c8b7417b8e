/**
 * The server path (issue #20, targets T2 and T3): `check_permissions` with one
 * check and `validate_jwt_token`, over REST and over gRPC, each beside a bare
 * reference measured in the same run: a bare `node:http` server answering a
 * fixed JSON (for REST) and a bare grpc-js server answering a fixed message of
 * the same service (for gRPC).
 *
 * The server is the real bin in its own process (SQLite, the in-process
 * session store, the check cache and graph mirror on, every guard on: CORS,
 * CSRF, per-IP rate limit with its limit raised by flag, body limit, metrics).
 * The references run in a second process; the load generator is this process,
 * on the same two cores. 50 connections for HTTP (autocannon); 50 streams in
 * flight on 5 HTTP/2 connections for gRPC (raw gRPC frames from node:http2,
 * see bench/transport.ts).
 *
 * Seeding: a model (`doc.viewer: [user, group#member]`), a user signed up over
 * REST (its real access token is the credential of every timed request), and
 * tuples that make the user a viewer of `doc:bench` through `group:g` beside
 * 500 other members. Before timing, every path's answer is verified: the
 * timed check is allowed, a check that must be denied is denied on REST and
 * gRPC, `validate_jwt_token` returns the user's claims, and a tampered token
 * is refused on both protocols.
 *
 * Rounds: after a warm-up, `rounds` rounds of `seconds` each interleave the
 * six rows, so that a burst of outside load does not fall on one row only.
 * Each row reports its best round (req/s, p50, p90, p99) and every round's
 * rate, with its ratio to its reference between best rounds and round by
 * round. The ratio the target is judged on is then measured apart: the row
 * and its reference in alternating one-second slices (transport.ts `paired`),
 * as this machine's speed drifts within a minute by more than the gap being
 * measured. The load average is printed before and after.
 *
 * Standalone: `node bench/server_path.ts [--quick] [--seconds=N] [--rounds=N]
 * [--rows=a,b] [--profile=DIR] [--redis=URL]`; `--redis` gives the server
 * `--redis-url` (sessions and rate-limit counters in Redis); `--profile` starts the server and the
 * references under `--cpu-prof` and writes their profiles to DIR when they stop.
 */
import { readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { createServer } from 'node:http';
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { Options } from 'autocannon';
import * as grpc from '@grpc/grpc-js';
import type { PackageDefinition } from '@grpc/proto-loader';
import { OPERATIONS, generateProto, loadPackageDefinition } from '../cmd/index.ts';
import { best, grpcLoad, http, paired, startServerProcess, type Figures, type GrpcCall } from './transport.ts';

const ADMIN_SECRET = 'bench-admin-secret';
const MODEL = 'model\n  schema 1.1\ntype user\ntype group\n  relations\n    define member: [user]\ntype doc\n  relations\n    define viewer: [user, group#member]\n';
const SERVICE = 'latchkey.v1.Latchkey';

const ROWS = ['rest_check_permissions', 'rest_validate_jwt_token', 'grpc_check_permissions', 'grpc_validate_jwt_token', 'bare_node_http', 'bare_grpc_js'] as const;
type Row = (typeof ROWS)[number];
/** Each measured row's reference. */
const REFERENCE: Partial<Record<Row, Row>> = {
  rest_check_permissions: 'bare_node_http',
  rest_validate_jwt_token: 'bare_node_http',
  grpc_check_permissions: 'bare_grpc_js',
  grpc_validate_jwt_token: 'bare_grpc_js',
};

interface MethodCodec {
  requestSerialize(value: unknown): Buffer;
  responseDeserialize(bytes: Buffer): unknown;
}

function methodOf(pkg: PackageDefinition, method: string): MethodCodec {
  const service = pkg[SERVICE] as unknown as Record<string, MethodCodec> | undefined;
  const m = service?.[method];
  if (!m) throw new Error(`${SERVICE}/${method} missing from the generated proto`);
  return m;
}

async function json(url: string, init: RequestInit): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(url, init);
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

async function ok(url: string, init: RequestInit): Promise<Record<string, unknown>> {
  const { status, body } = await json(url, init);
  if (status !== 200) throw new Error(`${url}: ${status} ${JSON.stringify(body)}`);
  return body;
}

/** The model, a signed-up user, and the tuples that make the user a viewer of doc:bench through group:g. */
async function seed(base: string): Promise<{ token: string; userId: string }> {
  const admin = { 'content-type': 'application/json', origin: base, 'x-service-admin-secret': ADMIN_SECRET };
  await ok(`${base}/v1/admin/fga/model`, { method: 'POST', headers: admin, body: JSON.stringify({ dsl: MODEL }) });
  const signup = await ok(`${base}/v1/signup`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', origin: base },
    body: JSON.stringify({ email: 'bench@example.com', password: 'a long bench passphrase', confirm_password: 'a long bench passphrase' }),
  });
  const userId = (signup['user'] as { id: string }).id;
  const tuples = [
    { user: `user:${userId}`, relation: 'member', object: 'group:g' },
    { user: 'group:g#member', relation: 'viewer', object: 'doc:bench' },
  ];
  for (let i = 0; i < 500; i++) tuples.push({ user: `user:other-${i}`, relation: 'member', object: 'group:g' });
  for (let i = 0; i < tuples.length; i += 100) {
    await ok(`${base}/v1/admin/fga/tuples`, { method: 'POST', headers: admin, body: JSON.stringify({ tuples: tuples.slice(i, i + 100) }) });
  }
  return { token: signup['access_token'] as string, userId };
}

/** One grpc-js call with a real client, for the checks before timing. */
function grpcUnary(address: string, method: string, request: unknown, token?: string): Promise<{ ok: true; value: Record<string, unknown> } | { ok: false; code: number }> {
  const pkg = grpc.loadPackageDefinition(loadPackageDefinition(generateProto(OPERATIONS))) as unknown as {
    latchkey: { v1: { Latchkey: new (a: string, c: grpc.ChannelCredentials) => grpc.Client } };
  };
  const client = new pkg.latchkey.v1.Latchkey(address, grpc.credentials.createInsecure()) as unknown as Record<
    string,
    (req: unknown, md: grpc.Metadata, cb: (e: grpc.ServiceError | null, r: Record<string, unknown>) => void) => void
  > & { close(): void };
  const md = new grpc.Metadata();
  if (token !== undefined) md.set('authorization', `Bearer ${token}`);
  return new Promise((done) =>
    client[method]?.call(client, request, md, (e, r) => {
      client.close();
      done(e ? { ok: false, code: e.code } : { ok: true, value: r });
    }),
  );
}

/** The references, in their own process: node:http answering a fixed JSON, grpc-js answering fixed messages. */
async function serveReferences(): Promise<void> {
  const pkgDef = loadPackageDefinition(generateProto(OPERATIONS));
  const pkg = grpc.loadPackageDefinition(pkgDef) as unknown as { latchkey: { v1: { Latchkey: { service: grpc.ServiceDefinition } } } };
  const checkAnswer = { results: [{ relation: 'viewer', object: 'doc:bench', allowed: true }] };
  const validateAnswer = { is_valid: true };
  const server = new grpc.Server();
  server.addService(pkg.latchkey.v1.Latchkey.service, {
    CheckPermissions: (_call: unknown, cb: (e: null, r: unknown) => void) => cb(null, checkAnswer),
    ValidateJwtToken: (_call: unknown, cb: (e: null, r: unknown) => void) => cb(null, validateAnswer),
  });
  const grpcPort = await new Promise<number>((r, j) => server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (e, p) => (e ? j(e) : r(p))));
  const body = JSON.stringify(checkAnswer);
  const bare = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.setHeader('content-type', 'application/json; charset=utf-8');
      res.end(body);
    });
  });
  bare.listen(0, '127.0.0.1', () => {
    process.stdout.write(`${JSON.stringify({ grpc: `127.0.0.1:${grpcPort}`, http: `http://127.0.0.1:${(bare.address() as { port: number }).port}` })}\n`);
  });
}

/** Starts the reference servers (this module's `--reference-servers` process); `stop()` ends it. */
export async function startReferences(nodeArgs: readonly string[] = []): Promise<{ grpc: string; http: string; pid: number | undefined; stop(): void }> {
  const child = spawn(process.execPath, [...nodeArgs, new URL(import.meta.url).pathname, '--reference-servers'], { stdio: ['ignore', 'pipe', 'inherit'] });
  const addresses = await new Promise<{ grpc: string; http: string }>((r) => child.stdout?.once('data', (d: Buffer) => r(JSON.parse(d.toString()) as { grpc: string; http: string })));
  return { ...addresses, pid: child.pid, stop: () => child.kill('SIGINT') };
}

/** CPU seconds a process has used in user and in system (kernel) mode, from /proc (Linux); NaN elsewhere. */
function cpuSeconds(pid: number | undefined): { user: number; system: number } {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return { user: Number(f[11]) / 100, system: Number(f[12]) / 100 };
  } catch {
    return { user: Number.NaN, system: Number.NaN };
  }
}

const load1 = (): number => Math.round((loadavg()[0] ?? 0) * 100) / 100;

export interface ServerPathOptions {
  quick?: boolean;
  seconds?: number;
  rounds?: number;
  /** Only these rows (default: all six). */
  rows?: readonly string[];
  /** Starts the server with `--cpu-prof` writing into this directory. */
  profileDir?: string;
  /** `--redis-url` for the server: sessions and rate-limit counters in Redis, as several replicas run. */
  redisUrl?: string;
}

export async function run(options: ServerPathOptions = {}): Promise<Record<string, unknown>> {
  const seconds = options.seconds ?? (options.quick ? 3 : 5);
  const rounds = options.rounds ?? (options.quick ? 1 : 3);
  const warmup = options.quick ? 1 : 2;
  const rows = ROWS.filter((r) => options.rows === undefined || options.rows.includes(r));
  const loadBefore = loadavg().map((x) => Math.round(x * 100) / 100);
  const dir = await mkdtemp(join(tmpdir(), 'latchkey-bench-server-path-'));
  const nodeArgs = options.profileDir ? ['--cpu-prof', `--cpu-prof-dir=${resolve(options.profileDir)}`] : [];
  const server = await startServerProcess(dir, options.redisUrl ? [`--redis-url=${options.redisUrl}`] : [], nodeArgs);
  const refs = await startReferences(nodeArgs);
  try {
    const base = server.http;
    const { token, userId } = await seed(base);
    const pkgDef = loadPackageDefinition(generateProto(OPERATIONS));
    const checkRequest = { checks: [{ relation: 'viewer', object: 'doc:bench' }] };
    const deniedRequest = { checks: [{ relation: 'viewer', object: 'doc:other' }] };
    const validateRequest = { token_type: 'access_token', token };
    const tampered = `${token.slice(0, -2)}${token.endsWith('AA') ? 'BB' : 'AA'}`;
    const restHeaders = { 'content-type': 'application/json', origin: base };
    const restAuth = { ...restHeaders, authorization: `Bearer ${token}` };

    // Verify every answer before timing.
    const restCheck = async (body: unknown): Promise<unknown> =>
      ((await ok(`${base}/v1/check_permissions`, { method: 'POST', headers: restAuth, body: JSON.stringify(body) }))['results'] as { allowed: boolean }[] | undefined)?.[0]?.allowed;
    const grpcCheck = async (body: unknown): Promise<unknown> => {
      const r = await grpcUnary(server.grpc, 'CheckPermissions', body, token);
      return r.ok ? (r.value['results'] as { allowed: boolean }[] | undefined)?.[0]?.allowed : `error ${r.code}`;
    };
    const restValidate = await ok(`${base}/v1/validate_jwt_token`, { method: 'POST', headers: restHeaders, body: JSON.stringify(validateRequest) });
    const grpcValidate = await grpcUnary(server.grpc, 'ValidateJwtToken', validateRequest);
    const restTampered = await json(`${base}/v1/validate_jwt_token`, { method: 'POST', headers: restHeaders, body: JSON.stringify({ ...validateRequest, token: tampered }) });
    const grpcTampered = await grpcUnary(server.grpc, 'ValidateJwtToken', { ...validateRequest, token: tampered });
    const verified: [string, unknown, unknown][] = [
      ['REST check_permissions (viewer through the group)', await restCheck(checkRequest), true],
      ['REST check_permissions (another document)', await restCheck(deniedRequest), false],
      ['gRPC check_permissions (viewer through the group)', await grpcCheck(checkRequest), true],
      ['gRPC check_permissions (another document)', await grpcCheck(deniedRequest), false],
      ['REST validate_jwt_token (the user\'s token)', restValidate['is_valid'] === true && (restValidate['claims'] as { sub?: string }).sub === userId, true],
      ['gRPC validate_jwt_token (the user\'s token)', grpcValidate.ok && grpcValidate.value['is_valid'] === true, true],
      ['REST validate_jwt_token (a tampered token)', restTampered.status, 401],
      ['gRPC validate_jwt_token (a tampered token)', grpcTampered.ok ? 'ok' : grpcTampered.code, grpc.status.UNAUTHENTICATED],
      ['bare grpc-js answers CheckPermissions', (await grpcUnary(refs.grpc, 'CheckPermissions', checkRequest)).ok, true],
    ];
    for (const [what, got, want] of verified) if (got !== want) throw new Error(`${what}: answered ${JSON.stringify(got)}, expected ${JSON.stringify(want)}`);

    const grpcAuth = { authorization: `Bearer ${token}` };
    const checkCodec = methodOf(pkgDef, 'CheckPermissions');
    const validateCodec = methodOf(pkgDef, 'ValidateJwtToken');
    const grpcCheckCall: GrpcCall = { path: `/${SERVICE}/CheckPermissions`, message: checkCodec.requestSerialize(checkRequest), headers: grpcAuth };
    const grpcValidateCall: GrpcCall = { path: `/${SERVICE}/ValidateJwtToken`, message: validateCodec.requestSerialize(validateRequest) };
    const restCheckOptions: Options = { url: `${base}/v1/check_permissions`, method: 'POST', headers: restAuth, body: JSON.stringify(checkRequest) };
    const restValidateOptions: Options = { url: `${base}/v1/validate_jwt_token`, method: 'POST', headers: restHeaders, body: JSON.stringify(validateRequest) };
    const bareOptions: Options = { url: `${refs.http}/v1/check_permissions`, method: 'POST', headers: restAuth, body: JSON.stringify(checkRequest) };
    const measure: Record<Row, (s: number) => Promise<Figures>> = {
      rest_check_permissions: (s) => http(restCheckOptions, s, 0),
      rest_validate_jwt_token: (s) => http(restValidateOptions, s, 0),
      grpc_check_permissions: (s) => grpcLoad(server.grpc, s, 0, grpcCheckCall),
      grpc_validate_jwt_token: (s) => grpcLoad(server.grpc, s, 0, grpcValidateCall),
      bare_node_http: (s) => http(bareOptions, s, 0),
      // The same request message as grpc_check_permissions (decoded by grpc-js), a fixed answer.
      bare_grpc_js: (s) => grpcLoad(refs.grpc, s, 0, grpcCheckCall),
    };

    // The serving process's CPU time over the round: what one request costs it, and how busy it was
    // (1 = one core; the server and the references are single-threaded).
    const timed = async (row: Row): Promise<Figures> => {
      const pid = row.startsWith('bare_') ? refs.pid : server.child.pid;
      const c0 = cpuSeconds(pid);
      const t0 = performance.now();
      const f = await measure[row](seconds);
      const c1 = cpuSeconds(pid);
      const cpu = c1.user + c1.system - c0.user - c0.system;
      const perRequest = (x: number): number => Math.round((x * 1e6) / Math.max(1, f.total));
      return {
        ...f,
        server_cpu_us_per_request: perRequest(cpu),
        server_cpu_system_us_per_request: perRequest(c1.system - c0.system),
        server_cpu_busy: Math.round((cpu / ((performance.now() - t0) / 1000)) * 100) / 100,
      };
    };
    for (const row of rows) await measure[row](warmup);
    const results = Object.fromEntries(rows.map((r) => [r, [] as Figures[]])) as Record<Row, Figures[]>;
    const loadDuring: number[] = [];
    for (let round = 0; round < rounds; round++) {
      for (const row of rows) results[row].push(await timed(row));
      loadDuring.push(load1());
    }

    const out: Record<string, unknown> = {
      sessions: options.redisUrl ? 'redis' : 'in process',
      connections: 50,
      seconds_per_round: seconds,
      rounds,
      load_average_before: loadBefore,
      load_average_1m_after_each_round: loadDuring,
      load_average_after: loadavg().map((x) => Math.round(x * 100) / 100),
      verified: verified.length,
    };
    const ratios: Record<string, unknown> = {};
    const met: Record<string, boolean> = {};
    for (const row of rows) {
      const b = best(results[row]);
      out[row] = b;
      const ref = REFERENCE[row];
      if (ref === undefined || !rows.includes(ref)) continue;
      const r = best(results[ref]);
      const byRound = results[row].map((x, i) => Math.round((x.requests_per_second / (results[ref][i]?.requests_per_second ?? NaN)) * 100) / 100);
      const ratio = Math.round((b.requests_per_second / r.requests_per_second) * 100) / 100;
      // The target is judged on the paired ratio: the row and its reference in alternating one-second slices.
      const pair = await paired(measure[row], measure[ref], options.quick ? 2 : 4);
      ratios[row] = { paired: pair, best_over_best: ratio, by_round: byRound };
      const clean = results[row].every((x) => x.errors === 0 && x.non_2xx === 0);
      // Issue #35's targets: REST at least 0.6 of bare node:http with p99 at most 10 ms, gRPC at least 0.7 of bare grpc-js.
      met[row] = pair.ratio >= (row.startsWith('grpc_') ? 0.7 : 0.6) && clean && (row.startsWith('grpc_') || b.p99_ms <= 10);
    }
    out['ratio_to_reference'] = ratios;
    out['targets'] = { rest_ratio_min: 0.6, grpc_ratio_min: 0.7, rest_p99_ms_max: 10 };
    out['met'] = met;
    return out;
  } finally {
    refs.stop();
    const exited = new Promise((done) => server.child.once('exit', done));
    server.child.kill('SIGTERM');
    await exited;
    await rm(dir, { recursive: true, force: true });
  }
}

if (import.meta.main && process.argv.includes('--reference-servers')) {
  // Exit normally on SIGINT, so that a `--cpu-prof` profile is written.
  process.once('SIGINT', () => process.exit(0));
  await serveReferences();
} else if (import.meta.main) {
  const arg = (name: string): string | undefined => process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
  const num = (name: string): number | undefined => (arg(name) === undefined ? undefined : Number(arg(name)));
  const out = await run({
    quick: process.argv.includes('--quick'),
    ...(num('seconds') !== undefined ? { seconds: num('seconds') as number } : {}),
    ...(num('rounds') !== undefined ? { rounds: num('rounds') as number } : {}),
    ...(arg('rows') !== undefined ? { rows: (arg('rows') as string).split(',') } : {}),
    ...(arg('profile') !== undefined ? { profileDir: arg('profile') as string } : {}),
    ...(arg('redis') !== undefined ? { redisUrl: arg('redis') as string } : {}),
  });
  process.stdout.write(`${JSON.stringify(out, null, 2)}\n`);
}
