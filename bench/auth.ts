/**
 * Identity benchmark: login throughput against the raw bcrypt bound at the
 * same cost, and token validation (raw jose, in-process service, and
 * `validate_jwt_token` over REST), all measured in the same run.
 *
 * - Raw bounds, in this process: bcrypt compares at cost 10 with 4 in flight
 *   (the libuv pool size, as in the server); jose HS256 sign and verify with a
 *   pre-imported key, 16 in flight.
 * - In-process: `AuthService.validateJwtToken` (signature, claims, live session).
 * - Over REST: the real bin in its own process (SQLite, in-process session
 *   store, rate limit raised), autocannon on loopback with every guard on
 *   (Origin header set for CSRF): login with 16 connections, validate_jwt_token
 *   with 50. Answers are checked before timing.
 *
 * Targets (issue #6): login ≥ 85% of the raw bcrypt bound; validate_jwt_token
 * ≥ 5,000 req/s. Standalone: `node bench/auth.ts [--quick]`.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { webcrypto } from 'node:crypto';
import { hash as bcryptHash, verify as bcryptVerify } from '@node-rs/bcrypt';
import { SignJWT, jwtVerify } from 'jose';
import autocannon, { type Result } from 'autocannon';
import { openSequelize } from '../engine/sql/sqlite_sequelize.ts';
import { AuthService, InProcessMemoryStore } from '../auth/index.ts';
import { startServerProcess } from './transport.ts';

const COST = 10;
const PASSWORD = 'correct horse battery staple';

interface RunOptions {
  quick?: boolean;
}

/** Runs `op` with `inFlight` concurrent loops for `seconds`; returns completed ops per second. */
async function throughput(seconds: number, inFlight: number, op: () => Promise<unknown>): Promise<number> {
  const end = performance.now() + seconds * 1000;
  let done = 0;
  const loop = async (): Promise<void> => {
    while (performance.now() < end) {
      await op();
      done++;
    }
  };
  const start = performance.now();
  await Promise.all(Array.from({ length: inFlight }, loop));
  return Math.round((done / (performance.now() - start)) * 1000);
}


function load(url: string, body: unknown, connections: number, seconds: number): Promise<Result> {
  return autocannon({
    url,
    method: 'POST',
    connections,
    duration: seconds,
    headers: { 'content-type': 'application/json', origin: new URL(url).origin },
    body: JSON.stringify(body),
  });
}

function figures(r: Result): Record<string, number> {
  return {
    requests_per_second: Math.round(r.requests.average),
    p50_ms: r.latency.p50,
    p99_ms: r.latency.p99,
    non_2xx: r.non2xx,
    errors: r.errors + r.timeouts,
  };
}

async function post(url: string, body: unknown): Promise<Record<string, unknown>> {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', origin: new URL(url).origin }, body: JSON.stringify(body) });
  const json = (await res.json()) as Record<string, unknown>;
  if (res.status !== 200) throw new Error(`${url}: ${res.status} ${JSON.stringify(json)}`);
  return json;
}

export async function run(options: RunOptions = {}): Promise<Record<string, unknown>> {
  const seconds = options.quick ? 3 : 8;
  const out: Record<string, unknown> = { bcrypt_cost: COST, seconds_per_phase: seconds };

  // Raw bounds.
  const hash = await bcryptHash(PASSWORD, { cost: COST });
  if (!(await bcryptVerify(PASSWORD, hash))) throw new Error('bcrypt self-check failed');
  const rawBcrypt = await throughput(seconds, 4, () => bcryptVerify(PASSWORD, hash));
  out['raw_bcrypt_compares_per_second'] = rawBcrypt;
  const key = await webcrypto.subtle.importKey('raw', Buffer.from('bench-raw-secret-0123456789abcdef'), { name: 'HMAC', hash: 'SHA-256' }, false, ['sign', 'verify']);
  const token = await new SignJWT({ sub: 'u', token_type: 'access_token' }).setProtectedHeader({ alg: 'HS256' }).setIssuedAt().setExpirationTime('1h').sign(key);
  await jwtVerify(token, key, { algorithms: ['HS256'] });
  out['raw_jose_hs256_verify_per_second'] = await throughput(seconds / 2, 16, () => jwtVerify(token, key, { algorithms: ['HS256'] }));
  out['raw_jose_hs256_sign_per_second'] = await throughput(seconds / 2, 16, () =>
    new SignJWT({ sub: 'u', token_type: 'access_token' }).setProtectedHeader({ alg: 'HS256' }).setIssuedAt().setExpirationTime('1h').sign(key),
  );

  // In-process service: validate_jwt_token without any transport.
  const dir = await mkdtemp(join(tmpdir(), 'lk-bench-auth-'));
  const sequelize = openSequelize(`sqlite:${join(dir, 'inproc.sqlite')}`, { logging: false });
  const store = new InProcessMemoryStore();
  try {
    const auth = await AuthService.create(
      { clientId: 'bench', issuer: 'http://bench', jwt: { type: 'HS256', secret: 'bench-jwt-secret-0123456789abcdef0123' }, bcryptCost: COST },
      { sequelize, memoryStore: store },
    );
    const s = await auth.signup({ email: 'inproc@example.com', password: PASSWORD });
    const access = s.response.access_token!;
    if (!(await auth.validateJwtToken({ token_type: 'access_token', token: access })).is_valid) throw new Error('in-process validation self-check failed');
    out['service_validate_jwt_token_per_second'] = await throughput(seconds / 2, 16, async () => auth.validateJwtToken({ token_type: 'access_token', token: access }));
  } finally {
    await sequelize.close();
    await store.close();
  }

  // Over REST, against the real server process.
  const server = await startServerProcess(dir, [`--bcrypt-cost=${COST}`]);
  try {
    const signup = await post(`${server.http}/v1/signup`, { email: 'bench@example.com', password: PASSWORD });
    const access = signup['access_token'];
    const login = await post(`${server.http}/v1/login`, { email: 'bench@example.com', password: PASSWORD });
    if (typeof login['access_token'] !== 'string') throw new Error('login self-check failed');
    const valid = await post(`${server.http}/v1/validate_jwt_token`, { token_type: 'access_token', token: access });
    if (valid['is_valid'] !== true) throw new Error('validate_jwt_token self-check failed');

    // 16 logins in flight keep bcrypt jobs queued while others wait for their database steps
    // (the SQLite driver shares the libuv pool with bcrypt), so the pool never idles.
    await load(`${server.http}/v1/login`, { email: 'bench@example.com', password: PASSWORD }, 16, 1);
    const loginRun = await load(`${server.http}/v1/login`, { email: 'bench@example.com', password: PASSWORD }, 16, seconds);
    out['rest_login'] = figures(loginRun);
    // The bound is measured again right after, and the two bounds averaged, so that a neighbour's
    // load that changes during the run weighs on both sides of the ratio alike.
    const rawAfter = await throughput(seconds, 4, () => bcryptVerify(PASSWORD, hash));
    out['raw_bcrypt_compares_per_second_after'] = rawAfter;
    out['login_vs_raw_bcrypt'] = Math.round((loginRun.requests.average / ((rawBcrypt + rawAfter) / 2)) * 1000) / 1000;

    await load(`${server.http}/v1/validate_jwt_token`, { token_type: 'access_token', token: access }, 50, 1);
    out['rest_validate_jwt_token'] = figures(await load(`${server.http}/v1/validate_jwt_token`, { token_type: 'access_token', token: access }, 50, seconds));
  } finally {
    server.child.kill('SIGTERM');
    await new Promise((r) => server.child.once('exit', r));
    await rm(dir, { recursive: true, force: true });
  }
  return out;
}

if (import.meta.main) {
  const figures = await run({ quick: process.argv.includes('--quick') });
  process.stdout.write(`${JSON.stringify(figures, null, 2)}\n`);
}
