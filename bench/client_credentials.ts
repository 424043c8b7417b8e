/**
 * Machine identity benchmark: client_credentials grants per second and per
 * CPU second of the server, for a service account authenticating with a
 * secret (`client_secret_basic`) and with a signed assertion
 * (`private_key_jwt`, ES256, a fresh `jti` per request).
 *
 * The real bin runs in its own process (SQLite main database, in-process
 * session store, rate limit raised, HS256 access tokens); autocannon sends
 * `POST /oauth/token` over loopback with 16 connections. The server's CPU
 * time is read from /proc before and after each phase, so the figure per CPU
 * second does not depend on how many cores the machine lends it. Before
 * timing, one grant of each kind is checked: status 200, a token whose
 * subject is the service account, and a wrong secret refused (401).
 * The assertions are signed before their phase (the load generator shares
 * the machine), each used once, as the server refuses a replayed `jti`.
 *
 * Target (issue #30): ≥ 300 grants per second per core.
 * Standalone: `node bench/client_credentials.ts [--quick]`.
 */
import { readFile, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SignJWT, decodeJwt, exportJWK, generateKeyPair } from 'jose';
import autocannon, { type Result } from 'autocannon';
import { startServerProcess } from './transport.ts';

const ADMIN = 'bench-admin-secret';
const CONNECTIONS = 16;


/** CPU seconds (user + system) the process has used, from /proc (Linux). */
async function cpuSeconds(pid: number): Promise<number> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // Fields 14 and 15 of stat (utime, stime), counted from after the command name: indexes 11 and 12.
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

async function adminCall(http: string, path: string, body: unknown): Promise<Record<string, unknown>> {
  const res = await fetch(`${http}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-service-admin-secret': ADMIN, origin: http }, body: JSON.stringify(body) });
  const json = (await res.json()) as Record<string, unknown>;
  if (res.status !== 200) throw new Error(`${path}: ${res.status} ${JSON.stringify(json)}`);
  return json;
}

async function grant(http: string, body: string, headers: Record<string, string> = {}): Promise<{ status: number; json: Record<string, unknown> }> {
  const res = await fetch(`${http}/oauth/token`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers }, body });
  return { status: res.status, json: (await res.json()) as Record<string, unknown> };
}

function basic(id: string, secret: string): string {
  return `Basic ${Buffer.from(`${id}:${secret}`).toString('base64')}`;
}

async function phase(pid: number, options: Parameters<typeof autocannon>[0]): Promise<Record<string, number>> {
  const before = await cpuSeconds(pid);
  const r: Result = await autocannon(options);
  const cpu = (await cpuSeconds(pid)) - before;
  const total = r['2xx'];
  if (r.non2xx > 0 || r.errors + r.timeouts > 0) throw new Error(`${r.non2xx} non-2xx answers, ${r.errors + r.timeouts} errors`);
  return {
    grants_per_second: Math.round(total / (r.duration || 1)),
    grants_per_cpu_second: Math.round(total / Math.max(cpu, 0.01)),
    server_cpu_seconds: Math.round(cpu * 100) / 100,
    p50_ms: r.latency.p50,
    p99_ms: r.latency.p99,
  };
}

export async function run(options: { quick?: boolean } = {}): Promise<Record<string, unknown>> {
  const seconds = options.quick ? 3 : 10;
  const dir = await mkdtemp(join(tmpdir(), 'lk-bench-cc-'));
  const { child, http } = await startServerProcess(dir);
  const pid = child.pid as number;
  try {
    // A service account with a secret, one with a key.
    const withSecret = await adminCall(http, '/v1/admin/add_client', { client_id: 'bench-secret-bot', kind: 'service_account' });
    const secret = withSecret['client_secret'] as string;
    const { publicKey, privateKey } = await generateKeyPair('ES256');
    const jwk = { ...(await exportJWK(publicKey)), kid: 'bench', alg: 'ES256' };
    await adminCall(http, '/v1/admin/add_client', { client_id: 'bench-key-bot', kind: 'service_account', token_endpoint_auth_method: 'private_key_jwt', jwks: { keys: [jwk] } });
    // The assertion's audience is the issuer (RFC 7523 §3), as discovery names it.
    const audience = String(((await (await fetch(`${http}/.well-known/openid-configuration`)).json()) as Record<string, unknown>)['issuer']);
    const assertion = (i: number): Promise<string> =>
      new SignJWT({ jti: `bench-${i}-${Math.random().toString(36).slice(2)}` })
        .setProtectedHeader({ alg: 'ES256', kid: 'bench' })
        .setIssuer('bench-key-bot')
        .setSubject('bench-key-bot')
        .setAudience(audience)
        .setIssuedAt()
        .setExpirationTime('5m')
        .sign(privateKey);
    const assertionBody = (a: string): string =>
      new URLSearchParams({ grant_type: 'client_credentials', client_assertion_type: 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer', client_assertion: a }).toString();

    // Verify the answers before timing.
    const ok = await grant(http, 'grant_type=client_credentials', { authorization: basic('bench-secret-bot', secret) });
    if (ok.status !== 200 || decodeJwt(String(ok.json['access_token'])).sub !== 'bench-secret-bot') throw new Error(`secret grant: ${ok.status} ${JSON.stringify(ok.json)}`);
    const wrong = await grant(http, 'grant_type=client_credentials', { authorization: basic('bench-secret-bot', 'wrong') });
    if (wrong.status !== 401) throw new Error(`a wrong secret answered ${wrong.status}`);
    const keyed = await grant(http, assertionBody(await assertion(-1)));
    if (keyed.status !== 200 || decodeJwt(String(keyed.json['access_token'])).sub !== 'bench-key-bot') throw new Error(`key grant: ${keyed.status} ${JSON.stringify(keyed.json)}`);

    const out: Record<string, unknown> = { seconds_per_phase: seconds, connections: CONNECTIONS, access_token_alg: 'HS256', assertion_alg: 'ES256' };
    out['client_secret_basic'] = await phase(pid, {
      url: `${http}/oauth/token`,
      method: 'POST',
      connections: CONNECTIONS,
      duration: seconds,
      headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: basic('bench-secret-bot', secret) },
      body: 'grant_type=client_credentials',
    });

    // Single-use assertions for about as long a phase as the first, signed beforehand.
    const secretRate = (out['client_secret_basic'] as Record<string, number>)['grants_per_second'] ?? 500;
    const count = Math.min(30_000, Math.max(1000, Math.round(secretRate * seconds * 0.8)));
    const bodies: string[] = [];
    for (let i = 0; i < count; i++) bodies.push(assertionBody(await assertion(i)));
    let next = 0;
    out['private_key_jwt'] = await phase(pid, {
      url: `${http}/oauth/token`,
      method: 'POST',
      connections: CONNECTIONS,
      amount: count,
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      requests: [{ setupRequest: (req: Record<string, unknown>) => ({ ...req, body: bodies[next++ % count] }) }],
    } as unknown as Parameters<typeof autocannon>[0]);
    return out;
  } finally {
    child.removeAllListeners('exit');
    child.kill('SIGTERM');
    await new Promise((r) => child.once('exit', r));
    await rm(dir, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  run({ quick: process.argv.includes('--quick') }).then(
    (r) => process.stdout.write(`${JSON.stringify(r, null, 2)}\n`),
    (err: unknown) => {
      process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
      process.exit(1);
    },
  );
}
