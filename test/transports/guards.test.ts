/**
 * HTTP guards and configuration-dependent behaviour, each on its own server:
 * rate limiting, CORS/CSRF with an allow-list, trusted proxies, admin header
 * auth disabled, introspection off, gRPC (and so REST) disabled.
 */
import test from 'ava';
import { EMPTY, MESSAGE, defineServedOperation, s, type ServedOperation } from '../../cmd/index.ts';
import { PROTOCOLS, TEST_ADMIN_SECRET, startTestServer } from '../helpers/server.ts';
import { redisUrl } from '../helpers/databases.ts';
import { needs } from '../helpers/needs.ts';

const WHO: ServedOperation[] = [
  defineServedOperation({
    name: 'test_who',
    kind: 'query',
    auth: 'public',
    admin: false,
    input: EMPTY,
    output: s.object('Who', { client_ip: s.string(), principal: s.string() }),
    rest: { method: 'GET', path: '/v1/test/who' },
    grpc: { method: 'TestWho' },
    protocols: ['graphql', 'rest', 'grpc'],
    doc: 'Test: who is calling.',
    handler: async (ctx) => ({ client_ip: ctx.clientIp, principal: ctx.principal.kind }),
  }),
  defineServedOperation({
    name: 'test_admin_ping',
    kind: 'query',
    auth: 'super_admin',
    admin: true,
    input: EMPTY,
    output: MESSAGE,
    rest: { method: 'GET', path: '/v1/admin/test_ping' },
    grpc: { method: 'TestAdminPing' },
    protocols: ['graphql', 'rest', 'grpc'],
    doc: 'Test: super-admin ping.',
    handler: async () => ({ message: 'pong' }),
  }),
];

test('rate limit: over the allowance gives 429 resource_exhausted with Retry-After; probes are exempt', async (t) => {
  const server = await startTestServer({ 'rate-limit-rps': 2, 'rate-limit-burst': 1 });
  try {
    // Concurrent, so that a slow machine cannot spread them over several refill periods.
    const responses = await Promise.all(Array.from({ length: 10 }, () => fetch(`${server.httpUrl}/v1/meta`)));
    const statuses = responses.map((r) => r.status);
    const limited = responses.find((r) => r.status === 429);
    for (const r of responses) if (r !== limited) await r.arrayBuffer();
    t.true(statuses.includes(200), statuses.join(','));
    t.truthy(limited, statuses.join(','));
    t.regex(limited?.headers.get('retry-after') ?? '', /^\d+$/);
    t.like(await limited?.json(), { code: 'resource_exhausted' });
    const grpcCalls = await Promise.all(Array.from({ length: 10 }, () => server.call('meta', {}, { protocol: 'grpc' })));
    t.true(
      grpcCalls.some((r) => r.error?.code === 'resource_exhausted'),
      'gRPC is limited per IP too',
    );
    for (let i = 0; i < 5; i++) {
      t.is((await fetch(`${server.httpUrl}/healthz`)).status, 200);
      t.is((await fetch(`${server.httpUrl}/readyz`)).status, 200);
    }
    const metrics = await (await fetch(`${server.metricsUrl}/metrics`)).text();
    t.regex(metrics, /latchkey_transport_requests_total\{op="http",transport="rest",code="resource_exhausted"\} [1-9]/);
  } finally {
    await server.close();
  }
});

test('rate limit headers: RateLimit-Policy and RateLimit (IETF httpapi draft) on every HTTP surface, counting down; Retry-After on 429; exposed to allowed origins', async (t) => {
  const server = await startTestServer({ 'rate-limit-rps': 50, 'rate-limit-burst': 100, 'allowed-origins': 'https://app.example' });
  try {
    // The REST fast path, express's REST and GraphQL, the pages, the OAuth endpoints.
    const surfaces: Array<[string, RequestInit]> = [
      ['/v1/meta', {}],
      ['/v1/profile', {}],
      ['/graphql', { method: 'POST', headers: { 'content-type': 'application/json', origin: server.httpUrl }, body: '{"query":"{ meta { version } }"}' }],
      ['/app', {}],
      ['/dashboard', {}],
      ['/authorize?client_id=nope', {}],
    ];
    for (const [path, init] of surfaces) {
      const res = await fetch(`${server.httpUrl}${path}`, { redirect: 'manual', ...init });
      await res.arrayBuffer();
      t.is(res.headers.get('ratelimit-policy'), '"steady";q=50;w=1, "burst";q=100;w=2', path);
      t.regex(res.headers.get('ratelimit') ?? '', /^"steady";r=\d+;t=1, "burst";r=\d+;t=[12]$/, path);
    }
    // Within one second the steady allowance counts down by one a request.
    const remaining = async (): Promise<number> => {
      const res = await fetch(`${server.httpUrl}/v1/meta`);
      await res.arrayBuffer();
      return Number(/"steady";r=(\d+)/.exec(res.headers.get('ratelimit') ?? '')?.[1]);
    };
    const [a, b] = [await remaining(), await remaining()];
    t.true(b === a - 1 || b >= 48, `${a} then ${b} (a new second may have begun)`);
    const cross = await fetch(`${server.httpUrl}/v1/meta`, { headers: { origin: 'https://app.example' } });
    await cross.arrayBuffer();
    t.regex(cross.headers.get('access-control-expose-headers') ?? '', /ratelimit, ratelimit-policy, retry-after/);
    // Probes are not counted and carry no limits.
    const probe = await fetch(`${server.httpUrl}/healthz`);
    await probe.arrayBuffer();
    t.is(probe.headers.get('ratelimit'), null);
  } finally {
    await server.close();
  }
  const tight = await startTestServer({ 'rate-limit-rps': 1, 'rate-limit-burst': 0 });
  try {
    const responses = await Promise.all(Array.from({ length: 4 }, () => fetch(`${tight.httpUrl}/v1/meta`)));
    for (const r of responses) await r.arrayBuffer();
    const limited = responses.find((r) => r.status === 429);
    t.truthy(limited);
    t.is(limited?.headers.get('ratelimit-policy'), '"steady";q=1;w=1');
    t.regex(limited?.headers.get('ratelimit') ?? '', /^"steady";r=0;t=1$/);
    t.regex(limited?.headers.get('retry-after') ?? '', /^[1-9]\d*$/);
  } finally {
    await tight.close();
  }
});

needs(test, 'redis')('rate limit with --redis-url: counters live in Redis and still give 429', async (t) => {
  const url = redisUrl();
  if (!url) {
    t.pass('LATCHKEY_TEST_REDIS_URL not set');
    return;
  }
  const clientId = `rl-${Date.now().toString(36)}-${Math.random().toString(36).slice(2)}`;
  const server = await startTestServer({ 'redis-url': url, 'client-id': clientId, 'rate-limit-rps': 2, 'rate-limit-burst': 1 });
  try {
    const responses = await Promise.all(Array.from({ length: 10 }, () => fetch(`${server.httpUrl}/v1/meta`)));
    const statuses = responses.map((r) => r.status);
    for (const r of responses) await r.arrayBuffer();
    t.true(statuses.includes(200), statuses.join(','));
    t.true(statuses.includes(429), statuses.join(','));
    // The limits of the shared counters are advertised too.
    const limited = responses.find((r) => r.status === 429)!;
    t.is(limited.headers.get('ratelimit-policy'), '"steady";q=2;w=1, "burst";q=1;w=1');
    t.regex(limited.headers.get('ratelimit') ?? '', /^"steady";r=0;t=[01]$/);
    t.regex(limited.headers.get('retry-after') ?? '', /^[1-9]\d*$/);
  } finally {
    await server.close();
  }
});

test('an allow-list: CORS echoes allowed origins with credentials; CSRF accepts only listed origins', async (t) => {
  const server = await startTestServer({ 'allowed-origins': 'https://app.example,https://*.corp.example' }, { extraOperations: WHO });
  try {
    const ok = await fetch(`${server.httpUrl}/v1/meta`, { headers: { origin: 'https://app.example' } });
    t.is(ok.headers.get('access-control-allow-origin'), 'https://app.example');
    t.is(ok.headers.get('access-control-allow-credentials'), 'true');
    const wild = await fetch(`${server.httpUrl}/v1/meta`, { headers: { origin: 'https://x.corp.example' } });
    t.is(wild.headers.get('access-control-allow-origin'), 'https://x.corp.example');
    const no = await fetch(`${server.httpUrl}/v1/meta`, { headers: { origin: 'https://evil.example' } });
    t.is(no.headers.get('access-control-allow-origin'), null);

    const post = (origin: string): Promise<Response> =>
      fetch(`${server.httpUrl}/graphql`, { method: 'POST', headers: { origin, 'content-type': 'application/json' }, body: '{"query":"{ meta { version } }"}' });
    t.is((await post('https://app.example')).status, 200);
    const refused = await post('https://evil.example');
    t.is(refused.status, 403);
    t.like(((await refused.json()) as { errors: unknown[] }).errors[0], { extensions: { code: 'permission_denied', reason: 'csrf_origin' } });
    t.is((await post(server.httpUrl)).status, 403, 'with an allow-list even the server origin must be listed');
  } finally {
    await server.close();
  }
});

test('trusted proxies: X-Forwarded-For is honoured only from a listed peer', async (t) => {
  const trusted = await startTestServer({ 'trusted-proxies': '127.0.0.0/8' }, { extraOperations: WHO });
  try {
    const r = await trusted.call('test_who', {}, { protocol: 'rest', headers: { 'x-forwarded-for': '198.51.100.7, 203.0.113.9' } });
    t.is(r.body?.client_ip, '203.0.113.9');
    const g = await trusted.call('test_who', {}, { protocol: 'grpc', headers: { 'x-forwarded-for': '203.0.113.10' } });
    t.is(g.body?.client_ip, '203.0.113.10');
  } finally {
    await trusted.close();
  }
  const other = await startTestServer({ 'trusted-proxies': '10.0.0.0/8' }, { extraOperations: WHO });
  try {
    const r = await other.call('test_who', {}, { protocol: 'rest', headers: { 'x-forwarded-for': '203.0.113.9' } });
    t.is(r.body?.client_ip, '127.0.0.1');
  } finally {
    await other.close();
  }
});

test('--disable-admin-header-auth: the admin secret header is no longer accepted', async (t) => {
  const server = await startTestServer({ 'disable-admin-header-auth': true }, { extraOperations: WHO });
  try {
    for (const protocol of PROTOCOLS) {
      const r = await server.call('test_admin_ping', {}, { protocol, headers: { 'x-service-admin-secret': TEST_ADMIN_SECRET } });
      t.is(r.error?.code, 'unauthenticated', protocol);
    }
  } finally {
    await server.close();
  }
});

test('--enable-graphql-introspection=false refuses introspection; --enable-playground=false removes the playground', async (t) => {
  const server = await startTestServer({ 'enable-graphql-introspection': false, 'enable-playground': false });
  try {
    const res = await fetch(`${server.httpUrl}/graphql`, {
      method: 'POST',
      headers: { origin: server.httpUrl, 'content-type': 'application/json' },
      body: JSON.stringify({ query: '{ __schema { queryType { name } } }' }),
    });
    const json = (await res.json()) as { data?: unknown; errors?: unknown[] };
    t.is(json.data, undefined);
    t.truthy(json.errors?.length);
    t.is((await fetch(`${server.httpUrl}/playground`)).status, 404);
    const meta = await server.call('meta', {}, { protocol: 'graphql' });
    t.is(meta.error, undefined);
  } finally {
    await server.close();
  }
});

test('--enable-grpc=false: no gRPC listener and REST is not mounted; GraphQL still serves', async (t) => {
  const server = await startTestServer({ 'enable-grpc': false });
  try {
    t.is(server.grpcAddress, '');
    const res = await fetch(`${server.httpUrl}/v1/meta`);
    t.is(res.status, 404);
    const meta = await server.call('meta', {}, { protocol: 'graphql' });
    t.truthy(meta.body?.version);
  } finally {
    await server.close();
  }
});

test('close() lets in-flight requests finish on every protocol, then stops accepting', async (t) => {
  const slow: ServedOperation = defineServedOperation({
    name: 'test_slow',
    kind: 'query',
    auth: 'public',
    admin: false,
    input: EMPTY,
    output: MESSAGE,
    rest: { method: 'GET', path: '/v1/test/slow' },
    grpc: { method: 'TestSlow' },
    protocols: ['graphql', 'rest', 'grpc'],
    doc: 'Test: answers after 400 ms.',
    handler: async () => {
      started++;
      if (started === PROTOCOLS.length) allStarted();
      await new Promise((r) => setTimeout(r, 400));
      return { message: 'done' };
    },
  });
  let started = 0;
  let allStarted!: () => void;
  const running = new Promise<void>((r) => (allStarted = r));
  const server = await startTestServer({}, { extraOperations: [slow] });
  const inflight = PROTOCOLS.map((protocol) => server.call('test_slow', {}, { protocol }));
  await running;
  const closing = server.close();
  const results = await Promise.all(inflight);
  for (const r of results) t.deepEqual(r.body, { message: 'done' });
  await closing;
  await t.throwsAsync(fetch(`${server.httpUrl}/healthz`));
});

test('/readyz fails while the server drains', async (t) => {
  const server = await startTestServer();
  const closing = server.close();
  // After close() starts the listener stops accepting; the probe either fails to connect or reports not ready.
  const status = await fetch(`${server.httpUrl}/readyz`).then(
    (res) => res.status,
    () => 'refused' as const,
  );
  t.not(status, 200);
  await closing;
});
