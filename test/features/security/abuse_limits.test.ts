/**
 * Security matrix F3 (oversized and malformed requests) and G1 (audit and
 * observability under noise), the parts their other tests leave out:
 *
 * - a 10,000-element array answers 400 `invalid_argument` on every protocol
 *   and is never executed; a GraphQL selection of 301 fields answers
 *   `query_too_complex`; 200 such requests leave the server's memory flat;
 * - 1,000 random 404 paths and 1,000 GraphQL operations with random names
 *   leave the metric series bounded (no path or operation name in a label);
 * - sign-up, login and a failed login write no password, token or secret to
 *   the log stream (at debug level) or the audit rows.
 */
import test from 'ava';
import { randomBytes } from 'node:crypto';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { PROTOCOLS, TEST_ADMIN_SECRET, TEST_CLIENT_SECRET, TEST_JWT_SECRET, startTestServer, type TestServer } from '../../helpers/server.ts';

const admin = { 'x-service-admin-secret': TEST_ADMIN_SECRET };
const PASSWORD = 'a very secret passphrase 7';
const lines: string[] = [];
let server: TestServer;

test.before(async () => {
  server = await startTestServer({ 'log-level': 'debug' }, { logSink: (line) => lines.push(line) });
  const r = await server.call('fga_write_model', { dsl: 'model\n  schema 1.1\ntype user\ntype doc\n  relations\n    define viewer: [user]\n' }, { protocol: 'rest', headers: admin });
  if (r.error) throw new Error(r.error.code);
});
test.after.always(async () => {
  await server?.close();
});

async function graphql(query: string, operationName?: string): Promise<{ status: number; body: { errors?: { extensions?: { code?: string; reason?: string } }[] } }> {
  const r = await fetch(`${server.httpUrl}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', origin: server.httpUrl },
    body: JSON.stringify(operationName === undefined ? { query } : { query, operationName }),
  });
  return { status: r.status, body: (await r.json()) as never };
}

test.serial('F3: a 10,000-element array is refused with invalid_argument on every protocol; 301 GraphQL fields are query_too_complex; memory stays flat', async (t) => {
  const checks = Array.from({ length: 10_000 }, (_, i) => ({ relation: 'viewer', object: `doc:d${i}` }));
  const tuples = Array.from({ length: 10_000 }, (_, i) => ({ user: `user:u${i}`, relation: 'viewer', object: `doc:d${i}` }));
  for (const protocol of PROTOCOLS) {
    const c = await server.call('check_permissions', { user: 'user:u1', checks }, { protocol, headers: admin });
    t.is(c.error?.code, 'invalid_argument', protocol);
    const w = await server.call('fga_write_tuples', { tuples }, { protocol, headers: admin });
    t.is(w.error?.code, 'invalid_argument', protocol);
  }
  const read = await server.call('fga_read_tuples', { page_size: 10 }, { protocol: 'rest', headers: admin });
  t.deepEqual(read.body?.['tuples'], [], 'nothing of the refused batch was written');

  const fields = Array.from({ length: 301 }, (_, i) => `f${i}: version`).join(' ');
  const complex = await graphql(`{ meta { ${fields} } }`);
  t.true(complex.body.errors?.some((e) => e.extensions?.reason === 'query_too_complex' || e.extensions?.code === 'invalid_argument'));

  // The server runs in this process: its heap after a full collection, before and after 100 more rounds.
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as () => void;
  const heap = (): number => {
    gc();
    return process.memoryUsage().heapUsed;
  };
  const round = async (): Promise<void> => {
    await server.call('check_permissions', { user: 'user:u1', checks }, { protocol: 'rest', headers: admin });
    await graphql(`{ meta { ${fields} } }`);
  };
  for (let i = 0; i < 20; i++) await round();
  const before = heap();
  for (let i = 0; i < 100; i++) await round();
  const grown = (heap() - before) / 2 ** 20;
  t.true(grown < 16, `heap grew ${grown.toFixed(1)} MiB over 200 refused large requests`);
});

test.serial('G1: 1,000 random 404 paths and 1,000 random GraphQL operation names leave the metric series bounded', async (t) => {
  const seriesCount = async (): Promise<{ count: number; text: string }> => {
    const text = await (await fetch(`${server.metricsUrl}/metrics`)).text();
    return { count: text.split('\n').filter((l) => l.startsWith('latchkey_transport_requests_total{')).length, text };
  };
  await server.call('meta', {}, { protocol: 'rest' });
  const before = await seriesCount();
  const tags: string[] = [];
  for (let i = 0; i < 1000; i += 50) {
    await Promise.all(
      Array.from({ length: 50 }, async (_, j) => {
        const tag = `x${randomBytes(6).toString('hex')}`;
        if (j % 10 === 0) tags.push(tag);
        const r = await fetch(`${server.httpUrl}/${tag}/${i + j}`);
        await r.arrayBuffer();
        t.is(r.status, 404);
        const g = await graphql(`query ${tag} { meta { version } }`, tag);
        t.is(g.status, 200);
      }),
    );
  }
  const after = await seriesCount();
  // A few new label sets at most (op "http" with code not_found, GraphQL meta), never one per path or name.
  t.true(after.count - before.count <= 4, `${after.count - before.count} new label sets`);
  for (const tag of tags) t.false(after.text.includes(tag), `${tag} appears in /metrics`);
});

test.serial('G1: sign-up, login and a failed login write no password, token or secret to the logs (debug level) or the audit rows', async (t) => {
  const email = 'observed@abuse.test';
  const s = await server.call('signup', { email, password: PASSWORD }, { protocol: 'rest' });
  t.is(s.error, undefined);
  const l = await server.call('login', { email, password: PASSWORD }, { protocol: 'grpc' });
  t.is(l.error, undefined);
  t.is((await server.call('login', { email, password: `${PASSWORD}x` }, { protocol: 'graphql' })).error?.code, 'unauthenticated');
  const secrets = [PASSWORD, `${PASSWORD}x`, String(s.body?.['access_token']), String(l.body?.['refresh_token']), TEST_ADMIN_SECRET, TEST_CLIENT_SECRET, TEST_JWT_SECRET];
  const audit = await server.call('audit_logs', { pagination: { page: 1, limit: 100 } }, { protocol: 'rest', headers: admin });
  const rows = JSON.stringify(audit.body?.['audit_logs']);
  t.true(rows.includes('user.login'), 'logins are audited');
  t.true(lines.length > 0, 'debug lines were written');
  for (const secret of secrets) {
    t.false(lines.some((line) => line.includes(secret)), 'a secret in the log stream');
    t.false(rows.includes(secret), 'a secret in the audit rows');
  }
});

test.serial('B1: forged and misused tokens are refused and counted in latchkey_security_events_total by reason', async (t) => {
  const count = async (): Promise<number> => {
    const text = await (await fetch(`${server.metricsUrl}/metrics`)).text();
    return [...text.matchAll(/^latchkey_security_events_total\{reason="([a-z_]+)"\} (\d+)/gm)].reduce((n, m) => n + Number(m[2]), 0);
  };
  const b64 = (o: unknown): string => Buffer.from(JSON.stringify(o)).toString('base64url');
  const now = Math.floor(Date.now() / 1000);
  const none = `${b64({ alg: 'none', typ: 'JWT' })}.${b64({ sub: 'x', exp: now + 600, iat: now })}.`;
  const kid = `${b64({ alg: 'HS256', typ: 'JWT', kid: '../../etc/passwd' })}.${b64({ sub: 'x', exp: now + 600 })}.c2ln`;
  const before = await count();
  let refused = 0;
  for (const token of [none, kid, 'not.a.jwt']) {
    for (const protocol of PROTOCOLS) {
      const r = await server.call('profile', {}, { protocol, headers: { authorization: `Bearer ${token}` } });
      t.is(r.error?.code, 'unauthenticated', protocol);
      refused++;
    }
    const v = await server.call('validate_jwt_token', { token_type: 'access_token', token }, { protocol: 'rest' });
    t.truthy(v.error, 'validate_jwt_token refuses it');
    refused++;
  }
  t.true((await count()) - before >= refused, `security events counted: ${(await count()) - before} of ${refused}`);
  const text = await (await fetch(`${server.metricsUrl}/metrics`)).text();
  for (const m of text.matchAll(/^latchkey_security_events_total\{reason="([^"]*)"\}/gm)) t.regex(m[1]!, /^[a-z_]+$/, 'reasons are fixed snake_case labels');
});
