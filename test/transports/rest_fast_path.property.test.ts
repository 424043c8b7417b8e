/**
 * The REST fast path (transports/http/rest_fast.ts) against the express stack
 * it bypasses: the same request sent to a row's exact path (the fast path
 * takes it when it can) and to the same path with a trailing slash (which
 * express alone serves, and routes to the same row) gets the same status,
 * body and headers, for random bodies, media types, origins, referers,
 * credentials and methods. Plus the cases the fast path must leave to
 * express, each answered as express answers them.
 */
import { request } from 'node:http';
import test, { type ExecutionContext } from 'ava';
import fc from 'fast-check';
import { defineServedOperation, s, type ServedOperation } from '../../cmd/index.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

const ECHO: ServedOperation[] = [
  defineServedOperation({
    name: 'test_fast_echo',
    kind: 'mutation',
    auth: 'public',
    admin: false,
    input: s.object('TestFastEchoInput', { text: s.string({ maxLength: 64 }), n: s.optional(s.int({ min: 0, max: 1000 })), tags: s.optional(s.list(s.string({ maxLength: 16 }), { maxItems: 4 })) }),
    output: s.object('TestFastEcho', { text: s.string(), n: s.optional(s.int()), tags: s.optional(s.list(s.string())), principal: s.string() }),
    rest: { method: 'POST', path: '/v1/test/fast_echo' },
    grpc: { method: 'TestFastEcho' },
    protocols: ['graphql', 'rest', 'grpc'],
    doc: 'Test: echoes its input.',
    handler: async (ctx, input) => ({ ...input, principal: ctx.principal.kind }),
  }),
];

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** One raw HTTP/1.1 request (node:http, so every header is exactly what the test says). */
function send(base: string, method: string, path: string, headers: Record<string, string>, body: Buffer | undefined): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request(`${base}${path}`, { method, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** What must agree: everything but the per-request id, the date and the framing. */
function comparable(a: Answer): Record<string, unknown> {
  const headers = { ...a.headers };
  for (const h of ['date', 'x-request-id', 'connection', 'keep-alive', 'content-length', 'transfer-encoding']) delete headers[h];
  // What is left of the rate limit moves with every request; its shape must be the same on both paths.
  if (typeof headers['ratelimit'] === 'string') headers['ratelimit'] = headers['ratelimit'].replace(/;r=\d+/g, ';r=N');
  return { status: a.status, headers, body: a.body };
}

let server: TestServer;
/** A server with a list of allowed origins: an allowed origin is echoed with credentials and `Vary: Origin`. */
let listed: TestServer;
const LISTED_ORIGINS = ['http://app.example', 'https://*.example.org'];
test.before(async () => {
  server = await startTestServer({}, { extraOperations: ECHO });
  listed = await startTestServer({ 'allowed-origins': LISTED_ORIGINS.join(',') }, { extraOperations: ECHO });
});
test.after.always(async () => {
  await server?.close();
  await listed?.close();
});

const BOM = '\uFEFF';

/** Random requests to the fast path and to express: the same status, body and headers, and a request id on each. */
async function sameAnswers(t: ExecutionContext, base: string, origins: readonly (string | undefined)[]): Promise<void> {
  const payload = fc.oneof(
    fc.record({ text: fc.string({ maxLength: 80 }), n: fc.option(fc.integer({ min: -5, max: 2000 }), { nil: undefined }), tags: fc.option(fc.array(fc.string({ maxLength: 20 }), { maxLength: 6 }), { nil: undefined }) }).map((v) => JSON.stringify(v)),
    fc.json(),
    fc.string({ maxLength: 40 }),
    fc.constantFrom('', ' ', '{', '1', 'true', ' "text"', '[]', 'null', '"x"', '{"text":"a"}garbage', '\t\n {"text":"spaced"}', `${BOM}{"text":"bom"}`, `${BOM}`, '{"token_type":"access_token","token":"a.b.c"}'),
  );
  const arbitrary = fc.record({
    target: fc.constantFrom(
      { method: 'POST', path: '/v1/test/fast_echo' },
      { method: 'POST', path: '/v1/validate_jwt_token' },
      { method: 'POST', path: '/v1/check_permissions' },
      { method: 'GET', path: '/v1/meta' },
      { method: 'POST', path: '/v1/meta' },
      { method: 'GET', path: '/v1/test/fast_echo' },
    ),
    body: fc.option(payload, { nil: undefined, freq: 8 }),
    // Weighted towards requests that pass the guards, so that most runs reach the body and the row.
    contentType: fc.oneof(
      { weight: 6, arbitrary: fc.constantFrom('application/json', 'application/json; charset=utf-8', 'Application/JSON; charset="UTF-8"') },
      { weight: 1, arbitrary: fc.constantFrom(undefined, 'application/json;charset=latin1', 'text/plain', 'application/x-www-form-urlencoded') },
    ),
    origin: fc.oneof({ weight: 5, arbitrary: fc.constant(base) }, { weight: 3, arbitrary: fc.constantFrom(...origins) }),
    referer: fc.option(fc.constantFrom(`${base}/app`, 'http://evil.example/x', '::'), { nil: undefined }),
    authorization: fc.option(fc.constantFrom('Bearer not.a.token', 'Basic abc', 'Bearer '), { nil: undefined }),
    query: fc.constantFrom('', '?a=1', '?'),
  });
  await fc.assert(
    fc.asyncProperty(arbitrary, async (r) => {
      const headers: Record<string, string> = {};
      if (r.contentType !== undefined) headers['content-type'] = r.contentType;
      if (r.origin !== undefined) headers.origin = r.origin;
      if (r.referer !== undefined) headers.referer = r.referer;
      if (r.authorization !== undefined) headers.authorization = r.authorization;
      const body = r.body === undefined ? undefined : Buffer.from(r.body, 'utf8');
      if (body !== undefined) headers['content-length'] = String(body.length);
      const fast = await send(base, r.target.method, `${r.target.path}${r.query}`, headers, body);
      const slow = await send(base, r.target.method, `${r.target.path}/${r.query}`, headers, body);
      t.deepEqual(comparable(fast), comparable(slow), JSON.stringify(r));
      t.true(fast.status < 500, `${fast.status} ${fast.body}`);
      t.regex(String(fast.headers['x-request-id']), /^[0-9a-f-]{36}$/);
      t.is(Number(fast.headers['content-length']), Buffer.byteLength(fast.body));
    }),
    { numRuns: process.env['CI'] !== undefined ? 300 : 100 },
  );
}

const ODD_ORIGINS = [undefined, 'null', 'http://evil.example', 'not a url', 'HTTP://127.0.0.1:1'];

test('the fast path answers every request as the express stack does (same status, body and headers)', async (t) => {
  await sameAnswers(t, server.httpUrl, ODD_ORIGINS);
});

test('with a list of allowed origins too: an allowed origin echoed with credentials and Vary, another refused, alike on both paths', async (t) => {
  await sameAnswers(t, listed.httpUrl, [...ODD_ORIGINS, 'http://app.example', 'https://a.example.org', 'https://a.b.example.org']);
  const body = Buffer.from('{"text":"hi"}');
  const ok = await send(listed.httpUrl, 'POST', '/v1/test/fast_echo', { 'content-type': 'application/json', origin: 'http://app.example', 'content-length': String(body.length) }, body);
  t.is(ok.status, 200, ok.body);
  t.is(ok.headers['access-control-allow-origin'], 'http://app.example');
  t.is(ok.headers['access-control-allow-credentials'], 'true');
  t.is(ok.headers['vary'], 'Origin');
  t.is(ok.headers['x-frame-options'], 'DENY');
});

test('a row served by the fast path keeps its guards: CSRF, media type, malformed JSON, and a well-formed call succeeds', async (t) => {
  const base = server.httpUrl;
  const json = { 'content-type': 'application/json' };
  const body = Buffer.from('{"text":"hi","n":3}');
  const ok = await send(base, 'POST', '/v1/test/fast_echo', { ...json, origin: base, 'content-length': String(body.length), 'x-request-id': 'fast-1' }, body);
  t.is(ok.status, 200);
  t.deepEqual(JSON.parse(ok.body), { text: 'hi', n: 3, tags: null, principal: 'anonymous' });
  t.is(ok.headers['x-request-id'], 'fast-1');
  t.is(ok.headers['x-content-type-options'], 'nosniff');
  t.is(ok.headers['cache-control'], 'no-store');
  t.is(ok.headers['access-control-allow-origin'], '*');

  const noOrigin = await send(base, 'POST', '/v1/test/fast_echo', { ...json, 'content-length': String(body.length) }, body);
  t.is(noOrigin.status, 403);
  t.like(JSON.parse(noOrigin.body), { code: 'permission_denied', reason: 'csrf_origin' });

  const crossSite = await send(base, 'POST', '/v1/test/fast_echo', { ...json, origin: 'http://evil.example', 'content-length': String(body.length) }, body);
  t.is(crossSite.status, 403);

  const malformed = Buffer.from('{"text":');
  const bad = await send(base, 'POST', '/v1/test/fast_echo', { ...json, origin: base, 'content-length': String(malformed.length) }, malformed);
  t.is(bad.status, 400);
  t.like(JSON.parse(bad.body), { code: 'invalid_argument', reason: 'malformed_json' });

  const strict = Buffer.from('"text"');
  const scalar = await send(base, 'POST', '/v1/test/fast_echo', { ...json, origin: base, 'content-length': String(strict.length) }, strict);
  t.like(JSON.parse(scalar.body), { code: 'invalid_argument', reason: 'malformed_json' });

  // An empty body declared with another charset: refused for its charset, as express's parser refuses it, before any field is read.
  const latin1 = await send(base, 'POST', '/v1/test/fast_echo', { 'content-type': 'application/json;charset=latin1', origin: base, 'content-length': '0' }, Buffer.alloc(0));
  t.is(latin1.status, 400);
  t.like(JSON.parse(latin1.body), { code: 'invalid_argument', reason: 'unsupported_encoding' });

  const text = await send(base, 'POST', '/v1/test/fast_echo', { 'content-type': 'text/plain', origin: base, 'content-length': String(body.length) }, body);
  t.is(text.status, 400);
  t.like(JSON.parse(text.body), { code: 'invalid_argument', reason: 'unsupported_media_type' });
});

test('requests the fast path leaves to express are answered by it: chunked and compressed bodies, an oversized body, a preflight, a wrong method', async (t) => {
  const base = server.httpUrl;
  const chunked = await new Promise<Answer>((resolve, reject) => {
    const req = request(`${base}/v1/test/fast_echo`, { method: 'POST', headers: { 'content-type': 'application/json', origin: base, 'transfer-encoding': 'chunked' } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }));
    });
    req.on('error', reject);
    req.write('{"text":');
    req.end('"chunked"}');
  });
  t.is(chunked.status, 200);
  t.like(JSON.parse(chunked.body), { text: 'chunked' });

  const { gzipSync } = await import('node:zlib');
  const zipped = gzipSync(Buffer.from('{"text":"zipped"}'));
  const gz = await send(base, 'POST', '/v1/test/fast_echo', { 'content-type': 'application/json', 'content-encoding': 'gzip', origin: base, 'content-length': String(zipped.length) }, zipped);
  t.is(gz.status, 200);
  t.like(JSON.parse(gz.body), { text: 'zipped' });

  const big = Buffer.alloc(1_048_577, 0x20);
  const large = await send(base, 'POST', '/v1/test/fast_echo', { 'content-type': 'application/json', origin: base, 'content-length': String(big.length) }, big);
  t.is(large.status, 413);
  t.like(JSON.parse(large.body), { code: 'payload_too_large' });

  const preflight = await send(base, 'OPTIONS', '/v1/test/fast_echo', { origin: 'http://app.example', 'access-control-request-method': 'POST' }, undefined);
  t.is(preflight.status, 204);
  t.truthy(preflight.headers['access-control-allow-methods']);

  const wrong = await send(base, 'PUT', '/v1/test/fast_echo', { origin: base }, undefined);
  t.is(wrong.status, 405);
  t.is(wrong.headers.allow, 'POST');
});
