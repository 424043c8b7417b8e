/**
 * /graphql as a GraphQL client meets it: every refusal (CSRF, rate limit, body
 * too large, malformed JSON, a malformed request envelope, a wrong media type
 * or method, missing credentials) is a GraphQL-over-HTTP error response
 * `{"errors": [{"message", "extensions": {"code", "reason"}}]}` with the
 * status of its code, never a REST body and never `internal`, and none of
 * them logs at error level. Also the parts of HTTP that Authorizer's SDK
 * needs: the CORS preflight allows its headers, a listed origin gets
 * credentialed CORS while the wildcard default gets none, and Authorizer's
 * admin header `x-authorizer-admin-secret` is an alias of ours, under the same
 * `--disable-admin-header-auth` rule.
 */
import test from 'ava';
import { TEST_ADMIN_SECRET, startTestServer } from '../helpers/server.ts';

type GraphqlErrorBody = { errors?: { message: string; extensions?: { code?: string; reason?: string } }[]; code?: string; data?: unknown };

async function graphqlError(res: Response): Promise<{ status: number; code?: string | undefined; reason?: string | undefined; rest: boolean }> {
  const body = (await res.json()) as GraphqlErrorBody;
  const first = body.errors?.[0];
  return { status: res.status, code: first?.extensions?.code, reason: first?.extensions?.reason, rest: body.code !== undefined };
}

test('every refusal on /graphql is a GraphQL error response with the status of its code, and no client mistake logs an error', async (t) => {
  const lines: string[] = [];
  const server = await startTestServer({ 'log-level': 'info', 'http-body-limit': 2048 }, { logSink: (l) => lines.push(l) });
  t.teardown(() => server.close());
  const url = `${server.httpUrl}/graphql`;
  const json = { origin: server.httpUrl, 'content-type': 'application/json' };
  const cases: [string, RequestInit, number, string, string][] = [
    ['no Origin', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"query":"{ meta { version } }"}' }, 403, 'permission_denied', 'csrf_origin'],
    ['another origin', { method: 'POST', headers: { ...json, origin: 'https://evil.example' }, body: '{"query":"{ meta { version } }"}' }, 403, 'permission_denied', 'csrf_origin'],
    ['malformed JSON', { method: 'POST', headers: json, body: '{"query":' }, 400, 'invalid_argument', 'malformed_json'],
    ['body too large', { method: 'POST', headers: json, body: JSON.stringify({ query: `{ meta { version } } #${'x'.repeat(4096)}` }) }, 413, 'payload_too_large', 'body_too_large'],
    ['query not a string', { method: 'POST', headers: json, body: '{"query":5}' }, 400, 'invalid_argument', 'malformed_graphql_request'],
    ['no query', { method: 'POST', headers: json, body: '{}' }, 400, 'invalid_argument', 'malformed_graphql_request'],
    ['variables not an object', { method: 'POST', headers: json, body: '{"query":"{ meta { version } }","variables":"x"}' }, 400, 'invalid_argument', 'malformed_graphql_request'],
    ['variables a list', { method: 'POST', headers: json, body: '{"query":"{ meta { version } }","variables":[1]}' }, 400, 'invalid_argument', 'malformed_graphql_request'],
    ['operationName not a string', { method: 'POST', headers: json, body: '{"query":"{ meta { version } }","operationName":5}' }, 400, 'invalid_argument', 'malformed_graphql_request'],
    ['extensions not an object', { method: 'POST', headers: json, body: '{"query":"{ meta { version } }","extensions":"x"}' }, 400, 'invalid_argument', 'malformed_graphql_request'],
    ['a batch', { method: 'POST', headers: json, body: '[{"query":"{ meta { version } }"}]' }, 400, 'invalid_argument', 'malformed_graphql_request'],
    ['JSON null', { method: 'POST', headers: json, body: 'null' }, 400, 'invalid_argument', 'malformed_json'],
    ['text/plain', { method: 'POST', headers: { origin: server.httpUrl, 'content-type': 'text/plain' }, body: '{"query":"{ meta { version } }"}' }, 400, 'invalid_argument', 'unsupported_media_type'],
    ['GET', { method: 'GET' }, 405, 'method_not_allowed', 'method_not_allowed'],
  ];
  for (const [name, init, status, code, reason] of cases) {
    const r = await graphqlError(await fetch(url, init));
    t.deepEqual(r, { status, code, reason, rest: false }, name);
  }
  // Errors of the document and of the operation are GraphQL errors of an executed request: 200, with the code.
  const syntax = await graphqlError(await fetch(url, { method: 'POST', headers: json, body: '{"query":"{ meta { "}' }));
  t.deepEqual(syntax, { status: 200, code: 'invalid_argument', reason: 'invalid_graphql', rest: false });
  const missing = await graphqlError(
    await fetch(url, { method: 'POST', headers: json, body: JSON.stringify({ query: 'mutation($p: LoginRequest!) { login(params: $p) { message } }', variables: { p: {} } }) }),
  );
  t.deepEqual(missing, { status: 200, code: 'invalid_argument', reason: 'invalid_graphql', rest: false });
  const anonymous = await graphqlError(await fetch(url, { method: 'POST', headers: json, body: '{"query":"{ profile { id } }"}' }));
  t.deepEqual(anonymous, { status: 200, code: 'unauthenticated', reason: 'unauthenticated', rest: false });
  const errors = lines.filter((l) => /"level":"error"/.test(l));
  t.deepEqual(errors, [], 'no error-level log line');
});

test('a rate-limited /graphql request is a GraphQL error response: 429 resource_exhausted with Retry-After', async (t) => {
  const server = await startTestServer({ 'rate-limit-rps': 1, 'rate-limit-burst': 1 });
  t.teardown(() => server.close());
  const post = () => fetch(`${server.httpUrl}/graphql`, { method: 'POST', headers: { origin: server.httpUrl, 'content-type': 'application/json' }, body: '{"query":"{ meta { version } }"}' });
  let res = await post();
  for (let i = 0; i < 5 && res.status !== 429; i++) res = await post();
  t.is(res.status, 429);
  t.truthy(res.headers.get('retry-after'));
  t.deepEqual(await graphqlError(res), { status: 429, code: 'resource_exhausted', reason: 'rate_limited', rest: false });
});

test("CORS: the preflight allows the headers Authorizer's SDK sends; a listed origin gets credentials, the wildcard default none", async (t) => {
  const listed = 'http://app.example:3000';
  const server = await startTestServer({ 'allowed-origins': listed });
  t.teardown(() => server.close());
  const sdkHeaders = 'content-type,x-authorizer-url,x-authorizer-client-id,authorization';
  const preflight = await fetch(`${server.httpUrl}/graphql`, {
    method: 'OPTIONS',
    headers: { origin: listed, 'access-control-request-method': 'POST', 'access-control-request-headers': sdkHeaders },
  });
  t.is(preflight.status, 204);
  t.is(preflight.headers.get('access-control-allow-origin'), listed);
  t.is(preflight.headers.get('access-control-allow-credentials'), 'true');
  const allowed = (preflight.headers.get('access-control-allow-headers') ?? '').split(',').map((h) => h.trim());
  for (const h of [...sdkHeaders.split(','), 'x-authorizer-admin-secret']) t.true(allowed.includes(h), h);
  const other = await fetch(`${server.httpUrl}/graphql`, {
    method: 'OPTIONS',
    headers: { origin: 'http://other.example:3000', 'access-control-request-method': 'POST', 'access-control-request-headers': sdkHeaders },
  });
  t.is(other.headers.get('access-control-allow-origin'), null, 'an unlisted origin gets no CORS headers');

  const wildcard = await startTestServer();
  t.teardown(() => wildcard.close());
  const w = await fetch(`${wildcard.httpUrl}/graphql`, {
    method: 'OPTIONS',
    headers: { origin: listed, 'access-control-request-method': 'POST', 'access-control-request-headers': sdkHeaders },
  });
  t.is(w.headers.get('access-control-allow-origin'), '*');
  t.is(w.headers.get('access-control-allow-credentials'), null, 'no credentials under the wildcard');
});

test("x-authorizer-admin-secret is an alias of x-service-admin-secret on GraphQL, REST and gRPC, refused like it under --disable-admin-header-auth", async (t) => {
  const server = await startTestServer();
  t.teardown(() => server.close());
  for (const protocol of ['graphql', 'rest', 'grpc'] as const) {
    const ok = await server.call('users', {}, { protocol, headers: { 'x-authorizer-admin-secret': TEST_ADMIN_SECRET } });
    t.is(ok.error, undefined, protocol);
    t.true(Array.isArray(ok.body?.['users']), protocol);
    const wrong = await server.call('users', {}, { protocol, headers: { 'x-authorizer-admin-secret': 'not-the-secret' } });
    t.is(wrong.error?.code, 'unauthenticated', protocol);
  }
  const disabled = await startTestServer({ 'disable-admin-header-auth': true });
  t.teardown(() => disabled.close());
  for (const header of ['x-authorizer-admin-secret', 'x-service-admin-secret']) {
    for (const protocol of ['graphql', 'rest', 'grpc'] as const) {
      const r = await disabled.call('users', {}, { protocol, headers: { [header]: TEST_ADMIN_SECRET } });
      t.is(r.error?.code, 'unauthenticated', `${header} ${protocol}`);
    }
  }
});
