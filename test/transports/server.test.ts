/**
 * The three transports end to end: the real server on free ports, real clients
 * (fetch, GraphQL over HTTP, grpc-js). Rows of the table plus a few test-only
 * rows that exercise the plumbing (validation, cookies, auth levels, internal
 * errors, client IP).
 */
import test from 'ava';
import { LatchkeyError } from '../../engine/errors.ts';
import { DEPRECATED_MESSAGES, EMPTY, MESSAGE, defineServedOperation, metaFromConfig, s, type ServedOperation } from '../../cmd/index.ts';
import { PROTOCOLS, TEST_ADMIN_SECRET, startTestServer, type TestServer } from '../helpers/server.ts';

const ECHO_INPUT = s.object('EchoRequest', {
  name: s.string({ minLength: 1 }),
  count: s.optional(s.int({ min: 0, max: 10 })),
  tags: s.optional(s.list(s.string(), { maxItems: 3 })),
  labels: s.optional(s.map()),
  context: s.optional(s.json()),
  items: s.optional(s.list(s.object('EchoItem', { key: s.string(), on: s.bool() }))),
});
const ECHO_OUTPUT = s.object('EchoResponse', {
  name: s.string(),
  count: s.optional(s.int()),
  tags: s.list(s.string()),
  labels: s.optional(s.map()),
  context: s.optional(s.json()),
  items: s.list(s.object('EchoItem', { key: s.string(), on: s.bool() })),
  client_ip: s.string(),
  principal: s.string(),
});

const ALL = ['graphql', 'rest', 'grpc'] as const;

/** A GraphQL-over-HTTP error response: how /graphql refuses a request. */
type GraphqlErrorBody = { errors: { message: string; extensions: { code: string; reason?: string } }[] };

const TEST_OPS: ServedOperation[] = [
  defineServedOperation({
    name: 'test_echo',
    kind: 'mutation',
    auth: 'public',
    admin: false,
    input: ECHO_INPUT,
    output: ECHO_OUTPUT,
    rest: { method: 'POST', path: '/v1/test/echo' },
    grpc: { method: 'TestEcho' },
    protocols: ALL,
    doc: 'Test: echoes its input.',
    handler: async (ctx, input) => ({
      name: input.name,
      count: input.count,
      tags: input.tags ?? [],
      labels: input.labels,
      context: input.context,
      items: input.items ?? [],
      client_ip: ctx.clientIp,
      principal: ctx.principal.kind,
      secret_field_never_sent: 'leak',
    }),
  }),
  defineServedOperation({
    name: 'test_cookie',
    kind: 'mutation',
    auth: 'public',
    admin: false,
    input: EMPTY,
    output: MESSAGE,
    rest: { method: 'POST', path: '/v1/test/cookie' },
    grpc: { method: 'TestCookie' },
    protocols: ALL,
    doc: 'Test: sets a cookie.',
    handler: async (ctx) => {
      ctx.cookies.set('test_session', 'abc123', { maxAgeSeconds: 60, sameSite: 'Lax', secure: true });
      return { message: 'cookie set' };
    },
  }),
  defineServedOperation({
    name: 'test_cookie_fail',
    kind: 'mutation',
    auth: 'public',
    admin: false,
    input: EMPTY,
    output: MESSAGE,
    rest: { method: 'POST', path: '/v1/test/cookie_fail' },
    grpc: { method: 'TestCookieFail' },
    protocols: ALL,
    doc: 'Test: clears a cookie, then fails.',
    handler: async (ctx) => {
      ctx.cookies.clear('test_session');
      throw new LatchkeyError('unauthenticated', 'unauthorized');
    },
  }),
  defineServedOperation({
    name: 'test_admin_only',
    kind: 'query',
    auth: 'super_admin',
    admin: true,
    input: EMPTY,
    output: MESSAGE,
    rest: { method: 'GET', path: '/v1/admin/test_admin_only' },
    grpc: { method: 'TestAdminOnly' },
    protocols: ALL,
    doc: 'Test: super-admin only.',
    handler: async (ctx) => ({ message: `hello ${ctx.principal.kind}` }),
  }),
  defineServedOperation({
    name: 'test_user_only',
    kind: 'query',
    auth: 'user',
    admin: false,
    input: EMPTY,
    output: MESSAGE,
    rest: { method: 'GET', path: '/v1/test/user_only' },
    grpc: { method: 'TestUserOnly' },
    protocols: ALL,
    doc: 'Test: user only.',
    handler: async () => ({ message: 'hello user' }),
  }),
  defineServedOperation({
    name: 'test_crash',
    kind: 'query',
    auth: 'public',
    admin: false,
    input: EMPTY,
    output: MESSAGE,
    rest: { method: 'GET', path: '/v1/test/crash' },
    grpc: { method: 'TestCrash' },
    protocols: ALL,
    doc: 'Test: throws a non-project error.',
    handler: async () => {
      throw new TypeError('secret internal detail at /srv/app.ts:42');
    },
  }),
  defineServedOperation({
    name: 'test_not_found',
    kind: 'query',
    auth: 'public',
    admin: false,
    input: EMPTY,
    output: MESSAGE,
    rest: { method: 'GET', path: '/v1/test/not_found' },
    grpc: { method: 'TestNotFound' },
    protocols: ALL,
    doc: 'Test: throws not_found.',
    handler: async () => {
      throw new LatchkeyError('not_found', 'no such thing', { reason: 'thing_not_found' });
    },
  }),
];

const aborted = new Set<string>();
TEST_OPS.push(
  defineServedOperation({
    name: 'test_wait_abort',
    kind: 'query',
    auth: 'public',
    admin: false,
    input: s.object('WaitAbortRequest', { tag: s.string() }),
    output: MESSAGE,
    rest: { method: 'POST', path: '/v1/test/wait_abort' },
    grpc: { method: 'TestWaitAbort' },
    protocols: ALL,
    doc: 'Test: waits until the request is abandoned (or 5 s).',
    handler: async (ctx, input) => {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, 8000);
        ctx.signal.addEventListener('abort', () => {
          aborted.add(input.tag);
          clearTimeout(timer);
          resolve();
        });
      });
      return { message: 'waited' };
    },
  }),
);

const logs: string[] = [];
let server: TestServer;

test.before(async () => {
  server = await startTestServer({ 'log-level': 'error' }, { extraOperations: TEST_OPS, logSink: (l) => logs.push(l) });
});
test.after.always(async () => {
  await server?.close();
});

const origin = (): Record<string, string> => ({ origin: server.httpUrl, 'content-type': 'application/json' });

test('GET /healthz answers 200 ok and /readyz 200 ready', async (t) => {
  const h = await fetch(`${server.httpUrl}/healthz`);
  t.is(h.status, 200);
  t.deepEqual(await h.json(), { status: 'ok' });
  const r = await fetch(`${server.httpUrl}/readyz`);
  t.is(r.status, 200);
  t.deepEqual(await r.json(), { status: 'ready', checks: { database: true } });
});

test('meta is identical over GraphQL, REST and gRPC and reflects the configuration', async (t) => {
  const results = await Promise.all(PROTOCOLS.map((protocol) => server.call('meta', {}, { protocol })));
  for (const r of results) t.is(r.error, undefined);
  const expected = metaFromConfig(server.server.services.config);
  for (const r of results) t.deepEqual(r.body, expected);
  t.is(expected.client_id, 'test-client-id');
  t.true(expected.is_sign_up_enabled);
  t.false(expected.is_google_login_enabled);
});

test('meta reports provider and feature flags from the configuration', async (t) => {
  const other = await startTestServer({ 'google-client-id': 'g', 'google-client-secret': 'gs', 'enable-signup': false, 'smtp-host': 'smtp.example.com', 'smtp-sender-email': 'noreply@example.com' });
  try {
    for (const protocol of PROTOCOLS) {
      const r = await other.call('meta', {}, { protocol });
      t.is(r.body?.is_google_login_enabled, true, protocol);
      t.is(r.body?.is_sign_up_enabled, false, protocol);
      t.is(r.body?.is_email_verification_enabled, true, protocol);
      t.is(r.body?.is_github_login_enabled, false, protocol);
    }
  } finally {
    await other.close();
  }
});

test('the removed v1 GraphQL operations fail with the spec messages', async (t) => {
  for (const [name, message] of Object.entries(DEPRECATED_MESSAGES)) {
    const r = await server.call(name, {}, { protocol: 'graphql' });
    t.is(r.error?.message, message);
    t.is(r.error?.code, 'failed_precondition');
  }
});

test('the removed v1 operations are GraphQL fields prefixed with _', async (t) => {
  const res = await fetch(`${server.httpUrl}/graphql`, {
    method: 'POST',
    headers: origin(),
    body: JSON.stringify({ query: 'mutation { _admin_signup(params: {admin_secret: "x"}) { message } }' }),
  });
  const json = (await res.json()) as { errors: { message: string; extensions: { code: string } }[] };
  t.is(json.errors[0]?.message, DEPRECATED_MESSAGES.admin_signup);
  t.is(json.errors[0]?.extensions.code, 'failed_precondition');
});

test('an echo round trip is identical on the three protocols, and undeclared output fields are dropped', async (t) => {
  const input = {
    name: 'n',
    count: 3,
    tags: ['a', 'b'],
    labels: { k: 'v' },
    context: { ip: '10.0.0.1', n: 2, nested: [true, null, 'x'] },
    items: [{ key: 'x', on: true }, { key: 'y', on: false }],
  };
  const bodies = [];
  for (const protocol of PROTOCOLS) {
    const r = await server.call('test_echo', input, { protocol });
    t.is(r.error, undefined, protocol);
    bodies.push(r.body);
  }
  t.deepEqual(bodies[0], { ...input, client_ip: '127.0.0.1', principal: 'anonymous' });
  t.deepEqual(bodies[1], bodies[0]);
  t.deepEqual(bodies[2], bodies[0]);
  t.false(Object.hasOwn(bodies[0] ?? {}, 'secret_field_never_sent'));
});

test('absent optional fields come back as null on every protocol', async (t) => {
  for (const protocol of PROTOCOLS) {
    const r = await server.call('test_echo', { name: 'only' }, { protocol });
    t.deepEqual(r.body, { name: 'only', count: null, tags: [], labels: null, context: null, items: [], client_ip: '127.0.0.1', principal: 'anonymous' }, protocol);
  }
});

test('invalid input gives the same invalid_argument naming the field on every protocol', async (t) => {
  // A missing required field: GraphQL types it non-null, so GraphQL's own variable check refuses it (reason invalid_graphql).
  const cases: [Record<string, unknown>, string, boolean][] = [
    [{}, 'name', true],
    [{ name: '' }, 'name', false],
    [{ name: 'x', count: 11 }, 'count', false],
    [{ name: 'x', tags: ['1', '2', '3', '4'] }, 'tags', false],
    [{ name: 'x', items: [{ key: 'k' }] }, 'items[0].on', true],
  ];
  for (const [input, field, missing] of cases) {
    for (const protocol of PROTOCOLS) {
      const r = await server.call('test_echo', input, { protocol });
      t.is(r.error?.code, 'invalid_argument', `${protocol} ${JSON.stringify(input)}`);
      if (protocol === 'graphql' && missing) {
        t.is(r.error?.reason, 'invalid_graphql', protocol);
        t.true(r.error?.message.includes(`Field "${field.split('.').pop()}"`), `${protocol}: ${r.error?.message}`);
        continue;
      }
      t.is(r.error?.reason, 'invalid_field', protocol);
      t.true(r.error?.message.startsWith(`${field}:`), `${protocol}: ${r.error?.message}`);
    }
  }
  const rest = await server.call('test_echo', { name: 'x', bogus: 1 }, { protocol: 'rest' });
  t.is(rest.status, 400);
  t.is(rest.error?.code, 'invalid_argument');
});

test('handler errors keep their code on every protocol; REST uses the table status', async (t) => {
  const statuses: Record<string, number> = { rest: 404, graphql: 200, grpc: 5 };
  for (const protocol of PROTOCOLS) {
    const r = await server.call('test_not_found', {}, { protocol });
    t.is(r.error?.code, 'not_found', protocol);
    t.is(r.error?.reason, 'thing_not_found', protocol);
    t.is(r.status, statuses[protocol] ?? -1, protocol);
  }
});

test('unexpected errors become internal with a generic message, logged with the request id', async (t) => {
  for (const protocol of PROTOCOLS) {
    const r = await server.call('test_crash', {}, { protocol });
    t.is(r.error?.code, 'internal', protocol);
    t.is(r.error?.message, 'internal server error', protocol);
    t.false(JSON.stringify(r).includes('/srv/app.ts'), protocol);
  }
  const lines = logs.map((l) => JSON.parse(l) as { msg: string; request_id?: string; op?: string });
  const crashes = lines.filter((l) => l.msg === 'unexpected error' && l.op === 'test_crash');
  t.is(crashes.length, 3);
  for (const c of crashes) t.truthy(c.request_id);
});

test('cookies set by a handler become Set-Cookie headers (REST, GraphQL) and set-cookie metadata (gRPC)', async (t) => {
  for (const protocol of PROTOCOLS) {
    const r = await server.call('test_cookie', {}, { protocol });
    t.is(r.body?.message, 'cookie set', protocol);
    t.is(r.setCookies.length, 1, protocol);
    t.regex(r.setCookies[0] ?? '', /^test_session=abc123; Max-Age=60; Path=\/; HttpOnly; Secure; SameSite=Lax$/, protocol);
    if (protocol !== 'grpc') {
      // The cookie is set before the answer's head is written; the head keeps every other field beside it.
      t.regex(String(r.headers['x-request-id']), /^[0-9a-f-]{36}$/, protocol);
      t.is(r.headers['x-content-type-options'], 'nosniff', protocol);
      t.is(r.headers['cache-control'], 'no-store', protocol);
      t.regex(String(r.headers['content-type']), /^application\/json/, protocol);
    }
  }
});

test('cookies cleared before a failure still reach the client on every protocol', async (t) => {
  for (const protocol of PROTOCOLS) {
    const r = await server.call('test_cookie_fail', {}, { protocol });
    t.is(r.error?.code, 'unauthenticated', protocol);
    t.is(r.setCookies.length, 1, protocol);
    t.regex(r.setCookies[0] ?? '', /^test_session=; Max-Age=0; Expires=Thu, 01 Jan 1970 00:00:00 GMT; Path=\/; HttpOnly$/, protocol);
  }
});

test('super_admin rows refuse callers without the admin secret with 401 unauthenticated', async (t) => {
  const statuses: Record<string, number> = { rest: 401, graphql: 200, grpc: 16 };
  for (const protocol of PROTOCOLS) {
    const none = await server.call('test_admin_only', {}, { protocol });
    t.is(none.error?.code, 'unauthenticated', protocol);
    t.is(none.status, statuses[protocol] ?? -1, protocol);
    const wrong = await server.call('test_admin_only', {}, { protocol, headers: { 'x-service-admin-secret': 'nope' } });
    t.is(wrong.error?.code, 'unauthenticated', protocol);
    t.is(wrong.error?.message, none.error?.message, protocol);
    const ok = await server.call('test_admin_only', {}, { protocol, headers: { 'x-service-admin-secret': TEST_ADMIN_SECRET } });
    t.deepEqual(ok.body, { message: 'hello super_admin' }, protocol);
  }
});

test('admin rows are _-prefixed GraphQL fields on the LatchkeyAdmin gRPC service', async (t) => {
  const res = await fetch(`${server.httpUrl}/graphql`, { method: 'POST', headers: origin(), body: JSON.stringify({ query: '{ _test_admin_only { message } }' }) });
  const json = (await res.json()) as { errors?: { extensions: { code: string } }[] };
  t.is(json.errors?.[0]?.extensions.code, 'unauthenticated');
});

test('user rows answer 401 while no identity service is plugged in; a super-admin may call them', async (t) => {
  for (const protocol of PROTOCOLS) {
    const r = await server.call('test_user_only', {}, { protocol, headers: { authorization: 'Bearer some.token.here' } });
    t.is(r.error?.code, 'unauthenticated', protocol);
    const admin = await server.call('test_user_only', {}, { protocol, headers: { 'x-service-admin-secret': TEST_ADMIN_SECRET } });
    t.deepEqual(admin.body, { message: 'hello user' }, protocol);
  }
});

test('public rows ignore a wrong admin secret and run anonymously', async (t) => {
  const r = await server.call('test_echo', { name: 'x' }, { protocol: 'rest', headers: { 'x-service-admin-secret': 'wrong' } });
  t.is(r.body?.principal, 'anonymous');
});

test('REST: wrong method gives 405 method_not_allowed with Allow', async (t) => {
  const res = await fetch(`${server.httpUrl}/v1/meta`, { method: 'POST', headers: origin(), body: '{}' });
  t.is(res.status, 405);
  t.is(res.headers.get('allow'), 'GET');
  t.like(await res.json(), { code: 'method_not_allowed' });
  const get = await fetch(`${server.httpUrl}/v1/test/echo`);
  t.is(get.status, 405);
  const gql = await fetch(`${server.httpUrl}/graphql?query={meta{version}}`);
  t.is(gql.status, 405);
  t.is(((await gql.json()) as GraphqlErrorBody).errors[0]?.extensions.code, 'method_not_allowed', 'a GraphQL error response on /graphql');
});

test('REST: unknown path gives 404 not_found', async (t) => {
  for (const path of ['/v1/nope', '/nope', '/v1']) {
    const res = await fetch(`${server.httpUrl}${path}`);
    t.is(res.status, 404, path);
    t.like(await res.json(), { code: 'not_found' }, path);
  }
});

test('REST: malformed JSON gives 400 invalid_argument; a non-JSON body is refused', async (t) => {
  const res = await fetch(`${server.httpUrl}/v1/test/echo`, { method: 'POST', headers: origin(), body: '{"name": ' });
  t.is(res.status, 400);
  t.like(await res.json(), { code: 'invalid_argument' });
  const form = await fetch(`${server.httpUrl}/v1/test/echo`, {
    method: 'POST',
    headers: { origin: server.httpUrl, 'content-type': 'application/x-www-form-urlencoded' },
    body: 'name=x',
  });
  t.is(form.status, 400);
  t.like(await form.json(), { code: 'invalid_argument' });
  const list = await fetch(`${server.httpUrl}/v1/test/echo`, { method: 'POST', headers: origin(), body: '[1]' });
  t.is(list.status, 400);
});

test('a body over 1 MiB gives 413 payload_too_large on REST and GraphQL', async (t) => {
  const big = JSON.stringify({ name: 'x'.repeat(1024 * 1024 + 10) });
  const res = await fetch(`${server.httpUrl}/v1/test/echo`, { method: 'POST', headers: origin(), body: big });
  t.is(res.status, 413);
  t.like(await res.json(), { code: 'payload_too_large' });
  const gql = await fetch(`${server.httpUrl}/graphql`, { method: 'POST', headers: origin(), body: JSON.stringify({ query: `{ meta { version } } #${'x'.repeat(1024 * 1024)}` }) });
  t.is(gql.status, 413);
});

test('CSRF: a state-changing POST without Origin or Referer is refused with 403', async (t) => {
  for (const path of ['/v1/test/echo', '/graphql']) {
    const res = await fetch(`${server.httpUrl}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"name":"x"}' });
    t.is(res.status, 403, path);
    const body = (await res.json()) as GraphqlErrorBody & { code?: string };
    t.is(path === '/graphql' ? body.errors[0]?.extensions.code : body.code, 'permission_denied', path);
  }
  const referer = await fetch(`${server.httpUrl}/v1/test/echo`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', referer: `${server.httpUrl}/page` },
    body: '{"name":"x"}',
  });
  t.is(referer.status, 200);
  const cross = await fetch(`${server.httpUrl}/v1/test/echo`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', origin: 'https://evil.example' },
    body: '{"name":"x"}',
  });
  t.is(cross.status, 403, 'with a wildcard allow-list the origin must be the server itself');
  const getOk = await fetch(`${server.httpUrl}/v1/meta`);
  t.is(getOk.status, 200, 'GET needs no Origin');
});

test('CORS with the wildcard default: Access-Control-Allow-Origin * without credentials', async (t) => {
  const res = await fetch(`${server.httpUrl}/v1/meta`, { headers: { origin: 'https://app.example' } });
  t.is(res.headers.get('access-control-allow-origin'), '*');
  t.is(res.headers.get('access-control-allow-credentials'), null);
  const pre = await fetch(`${server.httpUrl}/v1/test/echo`, {
    method: 'OPTIONS',
    headers: { origin: 'https://app.example', 'access-control-request-method': 'POST' },
  });
  t.is(pre.status, 204);
  t.regex(pre.headers.get('access-control-allow-methods') ?? '', /POST/);
});

test('GraphQL: a query deeper than the limit is refused, not executed', async (t) => {
  let q = 'name';
  for (let i = 0; i < 20; i++) q = `ofType { ${q} }`;
  const res = await fetch(`${server.httpUrl}/graphql`, {
    method: 'POST',
    headers: { ...origin(), accept: 'application/json' },
    body: JSON.stringify({ query: `{ __schema { types { fields { type { ${q} } } } } }` }),
  });
  const json = (await res.json()) as { data?: unknown; errors?: { extensions?: { code?: string; reason?: string } }[] };
  t.is(json.data, undefined);
  t.is(json.errors?.[0]?.extensions?.reason, 'query_too_complex');
  t.is(json.errors?.[0]?.extensions?.code, 'invalid_argument');
});

test('GraphQL: too many aliases are refused', async (t) => {
  const fields = Array.from({ length: 31 }, (_, i) => `a${i}: meta { version }`).join(' ');
  const res = await fetch(`${server.httpUrl}/graphql`, { method: 'POST', headers: origin(), body: JSON.stringify({ query: `{ ${fields} }` }) });
  const json = (await res.json()) as { data?: unknown; errors?: { extensions?: { reason?: string } }[] };
  t.is(json.errors?.[0]?.extensions?.reason, 'query_too_complex');
});

test('GraphQL: a document with too many tokens is refused before parsing completes', async (t) => {
  const query = `{ meta { ${'version '.repeat(20_000)}} }`;
  const res = await fetch(`${server.httpUrl}/graphql`, { method: 'POST', headers: origin(), body: JSON.stringify({ query }) });
  const json = (await res.json()) as { data?: unknown; errors?: { message: string; extensions?: { code?: string } }[] };
  t.is(json.data, undefined);
  t.is(json.errors?.[0]?.extensions?.code, 'invalid_argument');
  t.regex(json.errors?.[0]?.message ?? '', /token/i);
});

test('GraphQL introspection is on by default', async (t) => {
  const res = await fetch(`${server.httpUrl}/graphql`, { method: 'POST', headers: origin(), body: JSON.stringify({ query: '{ __schema { queryType { name } } }' }) });
  t.deepEqual(await res.json(), { data: { __schema: { queryType: { name: 'Query' } } } });
});

test('/metrics is served only on the metrics listener, with per-operation counters and latency histograms', async (t) => {
  await server.call('meta', {}, { protocol: 'rest' });
  await server.call('meta', {}, { protocol: 'grpc' });
  const res = await fetch(`${server.metricsUrl}/metrics`);
  t.is(res.status, 200);
  const text = await res.text();
  t.regex(text, /latchkey_transport_requests_total\{op="meta",transport="rest",code="ok"\} \d+/);
  t.regex(text, /latchkey_transport_requests_total\{op="meta",transport="grpc",code="ok"\} \d+/);
  t.regex(text, /latchkey_transport_request_duration_seconds_bucket\{le="0.005",op="meta",transport="rest",code="ok"\}/);
  t.regex(text, /latchkey_process_cpu_user_seconds_total/);
  const onHttp = await fetch(`${server.httpUrl}/metrics`);
  t.is(onHttp.status, 404);
  t.not(new URL(server.metricsUrl).port, new URL(server.httpUrl).port);
});

test('responses carry a request id and security headers', async (t) => {
  const res = await fetch(`${server.httpUrl}/v1/meta`);
  t.regex(res.headers.get('x-request-id') ?? '', /^[0-9a-f-]{36}$/);
  t.is(res.headers.get('x-content-type-options'), 'nosniff');
  t.is(res.headers.get('x-frame-options'), 'DENY');
  const echoed = await fetch(`${server.httpUrl}/v1/meta`, { headers: { 'x-request-id': 'abc-123' } });
  t.is(echoed.headers.get('x-request-id'), 'abc-123');
});

test('every protocol echoes a well-formed x-request-id and replaces a malformed or missing one with a UUID', async (t) => {
  const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
  for (const protocol of ['rest', 'grpc'] as const) {
    const own = await server.call('meta', {}, { protocol, headers: { 'x-request-id': 'trace.42_A-b' } });
    t.is(own.headers['x-request-id'], 'trace.42_A-b', `${protocol}: a well-formed id is echoed`);
    for (const bad of ['has space', 'x'.repeat(65), 'semi;colon']) {
      const replaced = await server.call('meta', {}, { protocol, headers: { 'x-request-id': bad } });
      t.regex(replaced.headers['x-request-id'] ?? '', UUID, `${protocol}: ${JSON.stringify(bad)} is replaced`);
    }
    const none = await server.call('meta', {}, { protocol });
    t.regex(none.headers['x-request-id'] ?? '', UUID, `${protocol}: one is made when none is sent`);
  }
});

test('client IP comes from the socket; X-Forwarded-For is ignored without trusted proxies', async (t) => {
  const r = await server.call('test_echo', { name: 'x' }, { protocol: 'rest', headers: { 'x-forwarded-for': '203.0.113.9' } });
  t.is(r.body?.client_ip, '127.0.0.1');
});

test('gRPC serves the standard health service', async (t) => {
  const grpc = await import('@grpc/grpc-js');
  const health = await import('grpc-health-check');
  const loader = await import('@grpc/proto-loader');
  const def = grpc.loadPackageDefinition(loader.loadSync(health.protoPath, { enums: String })) as unknown as {
    grpc: { health: { v1: { Health: new (a: string, c: unknown) => { check(req: unknown, cb: (e: unknown, r: { status: string }) => void): void; close(): void } } } };
  };
  const client = new def.grpc.health.v1.Health(server.grpcAddress, grpc.credentials.createInsecure());
  const status = await new Promise<string>((resolve, reject) => client.check({ service: 'latchkey.v1.Latchkey' }, (e, r) => (e ? reject(e) : resolve(r.status))));
  client.close();
  t.is(status, 'SERVING');
});

test('GET /playground serves the GraphQL playground page', async (t) => {
  const res = await fetch(`${server.httpUrl}/playground`);
  t.is(res.status, 200);
  t.regex(res.headers.get('content-type') ?? '', /text\/html/);
  t.regex(await res.text(), /<script src="\/playground\/graphiql\.js"><\/script>/);
  const script = await fetch(`${server.httpUrl}/playground/graphiql.js`);
  t.is(script.status, 200);
  t.regex(script.headers.get('content-type') ?? '', /javascript/);
  t.is((await fetch(`${server.httpUrl}/playground/not-a-file.js`)).status, 404);
});

test('gRPC serves server reflection listing both Latchkey services', async (t) => {
  const grpc = await import('@grpc/grpc-js');
  const loader = await import('@grpc/proto-loader');
  const { createRequire } = await import('node:module');
  const { dirname, join } = await import('node:path');
  const root = dirname(createRequire(import.meta.url).resolve('@grpc/reflection/package.json'));
  const def = grpc.loadPackageDefinition(loader.loadSync(join(root, 'build/proto/grpc/reflection/v1/reflection.proto'), { keepCase: true })) as unknown as {
    grpc: { reflection: { v1: { ServerReflection: new (a: string, c: unknown) => { ServerReflectionInfo(): import('@grpc/grpc-js').ClientDuplexStream<unknown, { list_services_response?: { service: { name: string }[] } }>; close(): void } } } };
  };
  const client = new def.grpc.reflection.v1.ServerReflection(server.grpcAddress, grpc.credentials.createInsecure());
  const names = await new Promise<string[]>((resolve, reject) => {
    const stream = client.ServerReflectionInfo();
    stream.on('data', (msg) => {
      resolve((msg.list_services_response?.service ?? []).map((s: { name: string }) => s.name));
      stream.end();
    });
    stream.on('error', reject);
    stream.write({ list_services: '' });
  });
  client.close();
  t.true(names.includes('latchkey.v1.Latchkey'), names.join(','));
  t.true(names.includes('latchkey.v1.LatchkeyAdmin'), names.join(','));
});

test('ctx.signal aborts when the client goes away (REST) or the deadline passes (gRPC)', async (t) => {
  await t.throwsAsync(
    fetch(`${server.httpUrl}/v1/test/wait_abort`, { method: 'POST', headers: origin(), body: '{"tag":"rest"}', signal: AbortSignal.timeout(1000) }),
  );
  const grpc = await import('@grpc/grpc-js');
  const { generateProto, loadPackageDefinition, OPERATIONS } = await import('../../cmd/index.ts');
  const ops = [...OPERATIONS, ...TEST_OPS];
  const pkg = grpc.loadPackageDefinition(loadPackageDefinition(generateProto(ops))) as unknown as {
    latchkey: { v1: { Latchkey: new (a: string, c: unknown) => { TestWaitAbort(r: object, m: unknown, o: object, cb: (e: { code: number } | null) => void): void; close(): void } } };
  };
  const client = new pkg.latchkey.v1.Latchkey(server.grpcAddress, grpc.credentials.createInsecure());
  const code = await new Promise<number | undefined>((resolve) =>
    client.TestWaitAbort({ tag: 'grpc' }, new grpc.Metadata(), { deadline: Date.now() + 1000 }, (e) => resolve(e?.code)),
  );
  client.close();
  t.is(code, grpc.status.DEADLINE_EXCEEDED);
  for (let i = 0; i < 100 && aborted.size < 2; i++) await new Promise((r) => setTimeout(r, 50));
  t.true(aborted.has('rest'), 'REST handler saw the abort');
  t.true(aborted.has('grpc'), 'gRPC handler saw the abort');
});
