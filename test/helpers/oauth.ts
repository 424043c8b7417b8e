/**
 * Test helper for the OAuth endpoints: a server with an injected clock and
 * `--url` as the relying party's origin, a signed-in user, PKCE pairs, and
 * `/authorize`, `/oauth/token` and `/oauth/revoke` calls over real HTTP.
 */
import type { ExecutionContext } from 'ava';
import { createHash, randomBytes } from 'node:crypto';
import { parseFlags, startServer, type Clock } from '../../cmd/index.ts';
import type { SqlBackend } from './databases.ts';
import { TEST_ADMIN_SECRET, TEST_CLIENT_ID, TEST_CLIENT_SECRET, TEST_JWT_SECRET, startTestServer, type TestServer } from './server.ts';

/** The relying party's callback: the server's public URL (`--url`) is its origin, so the redirect rule admits it. */
export const ISSUER = 'http://127.0.0.1';
export const CALLBACK = `${ISSUER}/callback`;
const PASSWORD = 'Correct-Horse-7-Battery';

/** A clock the test moves forward (`offsetMs`) instead of sleeping. */
export class TestClock implements Clock {
  offsetMs = 0;
  now(): Date {
    return new Date(Date.now() + this.offsetMs);
  }
}

/** A test server and its clock. */
export interface Setup {
  server: TestServer;
  clock: TestClock;
}

/** A random RFC 7636 code verifier and its S256 challenge. */
export const pkce = (): { verifier: string; challenge: string } => {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
};

/** A test server on `backend` whose `--url` is {@link ISSUER}; `extra` adds or overrides flags. */
export async function start(backend: SqlBackend, extra: Record<string, string | boolean | number> = {}): Promise<Setup> {
  const clock = new TestClock();
  const server = await startTestServer({ url: ISSUER, 'enable-email-verification': false, ...extra }, { backend, clock });
  return { server, clock };
}

/** Signs up a fresh user; returns its id and session cookie value. */
export async function signIn(s: Setup): Promise<{ userId: string; cookie: string }> {
  const email = `u${randomBytes(6).toString('hex')}@example.com`;
  const r = await s.server.call('signup', { email, password: PASSWORD }, { protocol: 'rest' });
  if (!r.body) throw new Error(`signup failed: ${JSON.stringify(r.error)}`);
  const set = r.setCookies.find((c) => c.startsWith('cookie_session='));
  if (!set) throw new Error('no session cookie');
  return { userId: String((r.body.user as { id: string }).id), cookie: set.slice('cookie_session='.length, set.indexOf(';')) };
}

/** `/authorize` with `params` (GET query or POST form), the session cookie if given; redirects are not followed. */
export async function authorize(s: Setup, params: Record<string, string>, cookie?: string, method: 'GET' | 'POST' = 'GET'): Promise<Response> {
  const query = new URLSearchParams(params).toString();
  const headers: Record<string, string> = cookie ? { cookie: `cookie_session=${cookie}` } : {};
  if (method === 'GET') return fetch(`${s.server.httpUrl}/authorize?${query}`, { headers, redirect: 'manual' });
  return fetch(`${s.server.httpUrl}/authorize`, { method: 'POST', headers: { ...headers, 'content-type': 'application/x-www-form-urlencoded' }, body: query, redirect: 'manual' });
}

/** `/authorize` for a code with PKCE S256; returns the code and the verifier. */
export async function codeFor(s: Setup, cookie: string, extra: Record<string, string> = {}): Promise<{ code: string; verifier: string }> {
  const { verifier, challenge } = pkce();
  const res = await authorize(s, {
    response_type: 'code',
    client_id: TEST_CLIENT_ID,
    redirect_uri: CALLBACK,
    state: 'st-1',
    scope: 'openid email profile offline_access',
    nonce: 'n-1',
    code_challenge: challenge,
    code_challenge_method: 'S256',
    ...extra,
  }, cookie);
  if (res.status !== 302) throw new Error(`authorize answered ${res.status}: ${await res.text()}`);
  const code = new URL(res.headers.get('location') ?? '').searchParams.get('code');
  if (!code) throw new Error(`no code in ${res.headers.get('location')}`);
  return { code, verifier };
}

/** POSTs a form to `path`; answers the status, the parsed JSON body and the headers. */
export async function postForm(s: Setup, path: string, fields: Record<string, string>, headers: Record<string, string> = {}): Promise<{ status: number; body: Record<string, unknown>; headers: Headers }> {
  const res = await fetch(`${s.server.httpUrl}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
    body: new URLSearchParams(fields).toString(),
  });
  const text = await res.text();
  return { status: res.status, body: text ? (JSON.parse(text) as Record<string, unknown>) : {}, headers: res.headers };
}

/** `/oauth/token` for a code (client_id, redirect_uri {@link CALLBACK} and the verifier; `extra` overrides). */
export const exchange = (s: Setup, code: string, verifier: string, extra: Record<string, string> = {}) =>
  postForm(s, '/oauth/token', { grant_type: 'authorization_code', code, redirect_uri: CALLBACK, client_id: TEST_CLIENT_ID, code_verifier: verifier, ...extra });

/** True when validate_jwt_token accepts the token. */
export async function tokenValid(s: Setup, token: string, type = 'access_token'): Promise<boolean> {
  const r = await s.server.call('validate_jwt_token', { token_type: type, token }, { protocol: 'rest' });
  return r.body?.is_valid === true;
}

/** Asserts an RFC 6749 error answer: the status, the `error` code and a description. */
export function expectOAuthError(t: ExecutionContext, r: { status: number; body: Record<string, unknown> }, status: number, error: string): void {
  t.is(r.status, status, JSON.stringify(r.body));
  t.is(r.body.error, error);
  t.is(typeof r.body.error_description, 'string');
}


/**
 * A second server process on `a`'s database and the Redis at `redis` (as a
 * second instance of one deployment), with `extra` flags; returns a Setup that
 * reaches it over HTTP (sharing `a`'s clock) and its closer.
 */
export async function startSecond(a: Setup, redis: string, extra: Record<string, string | boolean> = {}): Promise<{ b: Setup; close: () => Promise<void> }> {
  const flags: Record<string, string | number | boolean> = {
    'database-type': a.server.database.backend,
    'database-url': a.server.database.url,
    'admin-secret': TEST_ADMIN_SECRET,
    'client-id': TEST_CLIENT_ID,
    'client-secret': TEST_CLIENT_SECRET,
    'jwt-type': 'HS256',
    'jwt-secret': TEST_JWT_SECRET,
    'redis-url': redis,
    url: ISSUER,
    host: '127.0.0.1',
    'http-port': 0,
    'grpc-port': 0,
    'metrics-port': 0,
    'log-level': 'silent',
    'shutdown-timeout': '2s',
    ...extra,
  };
  const parsed = parseFlags(Object.entries(flags).map(([k, v]) => `--${k}=${v}`));
  if (!parsed.ok) throw new Error(parsed.problems.join('\n'));
  const other = await startServer(parsed.config);
  return { b: { server: { ...a.server, httpUrl: other.httpUrl }, clock: a.clock }, close: () => other.close() };
}
