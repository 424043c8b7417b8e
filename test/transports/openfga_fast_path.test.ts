/**
 * The OpenFGA API's fast path (transports/openfga/openfga_api.ts) answers
 * exactly as the express router does. The router also matches a path with a
 * trailing slash, which the fast path leaves to it, so every request here is
 * sent twice — `/stores/{id}/{action}` (fast) and `/stores/{id}/{action}/`
 * (router) — and the two answers must agree in status, body and headers
 * (the request id aside): allowed and denied checks, every POST endpoint,
 * malformed and non-object JSON, an empty body, a byte order mark, unknown
 * and invalid stores, invalid tuples, a cross-origin caller, and refusals of
 * a missing or wrong key. The server's `latchkey_openfga_fast_path_requests_total`
 * (read from /metrics around each request) shows which path answered: the
 * fast path every request without the trailing slash except the refusals of
 * a key (the router's, with its failure limit), the router every request
 * with it; so the comparison cannot pass with a fast path that always
 * declines.
 */
import test from 'ava';
import { startTestServer, type TestServer } from '../helpers/server.ts';

const KEY = 'openfga-fast-path-key-0123456789';
const ORIGIN = 'https://app.example.test';
const MODEL = {
  schema_version: '1.1',
  type_definitions: [
    { type: 'user' },
    { type: 'group', relations: { member: { this: {} } }, metadata: { relations: { member: { directly_related_user_types: [{ type: 'user' }] } } } },
    {
      type: 'doc',
      relations: { viewer: { this: {} } },
      metadata: { relations: { viewer: { directly_related_user_types: [{ type: 'user' }, { type: 'group', relation: 'member' }] } } },
    },
  ],
};

interface Answer {
  status: number;
  body: string;
  headers: Record<string, string | null>;
}

const COMPARED_HEADERS = ['content-type', 'x-content-type-options', 'x-frame-options', 'referrer-policy', 'cache-control', 'access-control-allow-origin', 'access-control-allow-credentials', 'vary', 'retry-after'];

/** The requests the OpenFGA fast path has served, from the server's /metrics. */
async function fastServed(server: TestServer): Promise<number> {
  const text = await (await fetch(`${server.metricsUrl}/metrics`)).text();
  const m = /^latchkey_openfga_fast_path_requests_total (\d+)$/m.exec(text);
  if (m === null) throw new Error('latchkey_openfga_fast_path_requests_total is not in /metrics');
  return Number(m[1]);
}

async function send(server: TestServer, path: string, body: string, headers: Record<string, string>): Promise<Answer> {
  const res = await fetch(`${server.httpUrl}${path}`, { method: 'POST', headers, body });
  const out: Answer = { status: res.status, body: await res.text(), headers: {} };
  for (const h of COMPARED_HEADERS) out.headers[h] = res.headers.get(h);
  out.headers['x-request-id'] = res.headers.get('x-request-id') === null ? null : 'present';
  return out;
}

test('openfga fast path: every POST endpoint answers as the express router does, for good and bad input', async (t) => {
  const server = await startTestServer({ 'openfga-preshared-keys': KEY, 'allowed-origins': ORIGIN });
  t.teardown(() => server.close());
  const auth = { 'content-type': 'application/json', authorization: `Bearer ${KEY}` };
  const created = JSON.parse((await send(server, '/stores', JSON.stringify({ name: 'fast-path' }), auth)).body) as { id: string };
  const store = created.id;
  const model = await send(server, `/stores/${store}/authorization-models`, JSON.stringify(MODEL), auth);
  t.is(model.status, 201, model.body);
  const wrote = await send(
    server,
    `/stores/${store}/write`,
    JSON.stringify({ writes: { tuple_keys: [{ user: 'user:ann', relation: 'member', object: 'group:eng' }, { user: 'group:eng#member', relation: 'viewer', object: 'doc:plan' }] } }),
    auth,
  );
  t.is(wrote.status, 200, wrote.body);

  const check = (user: string, object = 'doc:plan'): string => JSON.stringify({ tuple_key: { user, relation: 'viewer', object } });
  const unknownStore = '01HZZZZZZZZZZZZZZZZZZZZZZZ';
  // `router`: a request the fast path leaves to the router even without the trailing slash.
  const cases: { name: string; action: string; body: string; headers?: Record<string, string>; store?: string; status: number; router?: true }[] = [
    { name: 'check allowed through a group', action: 'check', body: check('user:ann'), status: 200 },
    { name: 'check denied', action: 'check', body: check('user:bob'), status: 200 },
    { name: 'check with a contextual tuple', action: 'check', body: JSON.stringify({ tuple_key: { user: 'user:bob', relation: 'viewer', object: 'doc:plan' }, contextual_tuples: { tuple_keys: [{ user: 'user:bob', relation: 'member', object: 'group:eng' }] } }), status: 200 },
    { name: 'check from another origin', action: 'check', body: check('user:ann'), headers: { origin: ORIGIN }, status: 200 },
    { name: 'check with a byte order mark', action: 'check', body: `\ufeff${check('user:ann')}`, status: 200 },
    { name: 'check with spaces before the object', action: 'check', body: `  \n${check('user:ann')}`, status: 200 },
    { name: 'check with charset=utf-8', action: 'check', body: check('user:ann'), headers: { 'content-type': 'application/json; charset=utf-8' }, status: 200 },
    { name: 'malformed JSON', action: 'check', body: '{"tuple_key":', status: 400 },
    { name: 'a JSON string, not an object', action: 'check', body: '"user:ann"', status: 400 },
    { name: 'a JSON array', action: 'check', body: '[]', status: 400 },
    { name: 'an empty body', action: 'check', body: '', status: 400 },
    { name: 'a tuple without a user', action: 'check', body: JSON.stringify({ tuple_key: { relation: 'viewer', object: 'doc:plan' } }), status: 400 },
    { name: 'an unknown relation', action: 'check', body: JSON.stringify({ tuple_key: { user: 'user:ann', relation: 'owner', object: 'doc:plan' } }), status: 400 },
    { name: 'an unknown store', action: 'check', body: check('user:ann'), store: unknownStore, status: 404 },
    { name: 'an invalid store id', action: 'check', body: check('user:ann'), store: 'not-a-store', status: 400 },
    { name: 'a missing key', action: 'check', body: check('user:ann'), headers: { authorization: '' }, status: 401, router: true },
    { name: 'a wrong key', action: 'check', body: check('user:ann'), headers: { authorization: 'Bearer wrong-key-0123456789' }, status: 401, router: true },
    { name: 'batch check', action: 'batch-check', body: JSON.stringify({ checks: [{ tuple_key: { user: 'user:ann', relation: 'viewer', object: 'doc:plan' }, correlation_id: 'a' }, { tuple_key: { user: 'user:bob', relation: 'viewer', object: 'doc:plan' }, correlation_id: 'b' }] }), status: 200 },
    { name: 'batch check with a duplicate correlation id', action: 'batch-check', body: JSON.stringify({ checks: [{ tuple_key: { user: 'user:ann', relation: 'viewer', object: 'doc:plan' }, correlation_id: 'a' }, { tuple_key: { user: 'user:ann', relation: 'viewer', object: 'doc:plan' }, correlation_id: 'a' }] }), status: 400 },
    { name: 'expand', action: 'expand', body: JSON.stringify({ tuple_key: { relation: 'viewer', object: 'doc:plan' } }), status: 200 },
    { name: 'list objects', action: 'list-objects', body: JSON.stringify({ type: 'doc', relation: 'viewer', user: 'user:ann' }), status: 200 },
    { name: 'streamed list objects', action: 'streamed-list-objects', body: JSON.stringify({ type: 'doc', relation: 'viewer', user: 'user:ann' }), status: 200 },
    { name: 'list users', action: 'list-users', body: JSON.stringify({ object: { type: 'doc', id: 'plan' }, relation: 'viewer', user_filters: [{ type: 'user' }] }), status: 200 },
    { name: 'read', action: 'read', body: JSON.stringify({ tuple_key: { object: 'doc:plan' } }), status: 200 },
    { name: 'read with a bad continuation token', action: 'read', body: JSON.stringify({ continuation_token: 'not-a-token' }), status: 400 },
    { name: 'a write of a tuple that exists', action: 'write', body: JSON.stringify({ writes: { tuple_keys: [{ user: 'user:ann', relation: 'member', object: 'group:eng' }] } }), status: 400 },
    { name: 'a write of an invalid tuple', action: 'write', body: JSON.stringify({ writes: { tuple_keys: [{ user: 'ann', relation: 'member', object: 'group:eng' }] } }), status: 400 },
    { name: 'an invalid model', action: 'authorization-models', body: JSON.stringify({ schema_version: '1.1', type_definitions: [{ type: 'doc', relations: { viewer: { computedUserset: { relation: 'nope' } } } }] }), status: 400 },
  ];
  for (const c of cases) {
    const path = `/stores/${c.store ?? store}/${c.action}`;
    const headers: Record<string, string> = { ...auth, ...c.headers };
    if (headers['authorization'] === '') delete headers['authorization'];
    const before = await fastServed(server);
    const fast = await send(server, path, c.body, headers);
    const between = await fastServed(server);
    const routed = await send(server, `${path}/`, c.body, headers);
    const after = await fastServed(server);
    t.is(fast.status, c.status, `${c.name}: ${fast.body}`);
    t.deepEqual(fast, routed, c.name);
    t.is(between - before, c.router === true ? 0 : 1, `${c.name}: ${path} ${c.router === true ? 'is the router\'s' : 'was served by the fast path'}`);
    t.is(after - between, 0, `${c.name}: ${path}/ was served by the router`);
  }
  // The answers the comparison covered are the right ones, not merely equal.
  t.is(JSON.parse((await send(server, `/stores/${store}/check`, check('user:ann'), auth)).body).allowed, true);
  t.is(JSON.parse((await send(server, `/stores/${store}/check`, check('user:bob'), auth)).body).allowed, false);
  const cross = await send(server, `/stores/${store}/check`, check('user:ann'), { ...auth, origin: ORIGIN });
  t.is(cross.headers['access-control-allow-origin'], ORIGIN);
  t.is(cross.headers['x-request-id'], 'present');
});

test('openfga fast path: a write through it is atomic and seen by the next check, as through the router', async (t) => {
  const server = await startTestServer({ 'openfga-preshared-keys': KEY });
  t.teardown(() => server.close());
  const auth = { 'content-type': 'application/json', authorization: `Bearer ${KEY}` };
  const store = (JSON.parse((await send(server, '/stores', JSON.stringify({ name: 'fast-write' }), auth)).body) as { id: string }).id;
  t.is((await send(server, `/stores/${store}/authorization-models`, JSON.stringify(MODEL), auth)).status, 201);
  const before = await fastServed(server);
  // One good tuple and one invalid: nothing is written.
  const bad = await send(server, `/stores/${store}/write`, JSON.stringify({ writes: { tuple_keys: [{ user: 'user:ann', relation: 'viewer', object: 'doc:a' }, { user: 'user:ann', relation: 'nope', object: 'doc:a' }] } }), auth);
  t.is(bad.status, 400, bad.body);
  const read = JSON.parse((await send(server, `/stores/${store}/read`, JSON.stringify({ tuple_key: { object: 'doc:a' } }), auth)).body) as { tuples: unknown[] };
  t.deepEqual(read.tuples, []);
  const ok = await send(server, `/stores/${store}/write`, JSON.stringify({ writes: { tuple_keys: [{ user: 'user:ann', relation: 'viewer', object: 'doc:a' }] } }), auth);
  t.is(ok.status, 200, ok.body);
  const allowed = JSON.parse((await send(server, `/stores/${store}/check`, JSON.stringify({ tuple_key: { user: 'user:ann', relation: 'viewer', object: 'doc:a' } }), auth)).body) as { allowed: boolean };
  t.true(allowed.allowed);
  // All four went through the fast path.
  t.is(await fastServed(server) - before, 4);
});
