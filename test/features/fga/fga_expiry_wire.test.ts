/**
 * Expiring tuples over our own operations (GraphQL, REST, gRPC) and the
 * OpenFGA API: `expires_at` is written by `fga_write_tuples` and returned by
 * `fga_read_tuples`; a check answers allow before the instant and deny after
 * it (the server's clock is the test's); an `expires_at` that is not in the
 * future, or not RFC 3339, is refused with `invalid_argument` and nothing is
 * written.
 */
import test from 'ava';
import { PROTOCOLS, TEST_ADMIN_SECRET, startTestServer, type TestServer } from '../../helpers/server.ts';
import { TestClock } from '../../helpers/oauth.ts';

const ADMIN = { 'x-service-admin-secret': TEST_ADMIN_SECRET };
const KEY = 'expiry-test-key-0123456789';
const MODEL = `model
  schema 1.1
type user
type doc
  relations
    define viewer: [user]
`;

let srv: TestServer;
const clock = new TestClock();
test.before(async () => {
  srv = await startTestServer({ 'openfga-preshared-keys': KEY }, { clock });
  const r = await srv.call('fga_write_model', { dsl: MODEL }, { protocol: 'rest', headers: ADMIN });
  if (r.status !== 200) throw new Error(JSON.stringify(r.error));
});
test.after.always(async () => {
  await srv?.close();
});

for (const protocol of PROTOCOLS) {
  test.serial(`${protocol}: a tuple with expires_at grants until that instant, then nothing`, async (t) => {
    const signup = await srv.call('signup', { email: `exp-${protocol}@example.com`, password: 'a long enough passphrase' }, { protocol });
    t.is(signup.error, undefined);
    const bearer = { authorization: `Bearer ${signup.body!['access_token'] as string}` };
    const subject = `user:${(signup.body!['user'] as { id: string }).id}`;
    const object = `doc:${protocol}`;
    const at = new Date(clock.now().getTime() + 60_000).toISOString();

    const past = await srv.call('fga_write_tuples', { tuples: [{ user: subject, relation: 'viewer', object, expires_at: new Date(clock.now().getTime() - 1000).toISOString() }] }, { protocol, headers: ADMIN });
    t.is(past.error?.code, 'invalid_argument');
    t.regex(past.error?.message ?? '', /not in the future/u);
    const garbled = await srv.call('fga_write_tuples', { tuples: [{ user: subject, relation: 'viewer', object, expires_at: 'next tuesday' }] }, { protocol, headers: ADMIN });
    t.is(garbled.error?.code, 'invalid_argument');
    t.regex(garbled.error?.message ?? '', /RFC 3339/u);
    t.deepEqual((await srv.call('fga_read_tuples', { object }, { protocol, headers: ADMIN })).body?.['tuples'], [], 'nothing was written');

    const written = await srv.call('fga_write_tuples', { tuples: [{ user: subject, relation: 'viewer', object, condition: null, expires_at: at }] }, { protocol, headers: ADMIN });
    t.is(written.error, undefined);
    t.deepEqual((await srv.call('fga_read_tuples', { object }, { protocol, headers: ADMIN })).body?.['tuples'], [{ user: subject, relation: 'viewer', object, condition: null, expires_at: at }]);
    const allowed = await srv.call('check_permissions', { checks: [{ relation: 'viewer', object }] }, { protocol, headers: bearer });
    t.deepEqual((allowed.body?.['results'] as { allowed: boolean }[]).map((r) => r.allowed), [true]);

    clock.offsetMs += 61_000;
    const denied = await srv.call('check_permissions', { checks: [{ relation: 'viewer', object }] }, { protocol, headers: bearer });
    t.deepEqual((denied.body?.['results'] as { allowed: boolean }[]).map((r) => r.allowed), [false]);
    t.deepEqual((await srv.call('fga_read_tuples', { object }, { protocol, headers: ADMIN })).body?.['tuples'], []);
  });
}

test.serial('openfga api: expires_at is an additional optional field of a written and a read tuple key', async (t) => {
  const call = async (method: string, path: string, body?: unknown): Promise<{ status: number; body: Record<string, unknown> }> => {
    const res = await fetch(`${srv.httpUrl}${path}`, {
      method,
      headers: { 'content-type': 'application/json', authorization: `Bearer ${KEY}` },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  };
  const store = (await call('POST', '/stores', { name: 'expiry' })).body['id'] as string;
  t.is((await call('POST', `/stores/${store}/authorization-models`, {
    schema_version: '1.1',
    type_definitions: [{ type: 'user' }, { type: 'doc', relations: { viewer: { this: {} } }, metadata: { relations: { viewer: { directly_related_user_types: [{ type: 'user' }] } } } }],
  })).status, 201);
  const at = new Date(clock.now().getTime() + 60_000).toISOString();
  const key = { user: 'user:1', relation: 'viewer', object: 'doc:1' };
  const bad = await call('POST', `/stores/${store}/write`, { writes: { tuple_keys: [{ ...key, expires_at: '2001-01-01T00:00:00Z' }] } });
  t.is(bad.status, 400);
  t.is(bad.body['code'], 'validation_error');
  t.is((await call('POST', `/stores/${store}/write`, { writes: { tuple_keys: [{ ...key, expires_at: at }] } })).status, 200);
  const read = await call('POST', `/stores/${store}/read`, {});
  t.deepEqual((read.body['tuples'] as { key: unknown }[]).map((x) => x.key), [{ ...key, expires_at: at }]);
  t.true((await call('POST', `/stores/${store}/check`, { tuple_key: key })).body['allowed'] as boolean);
  const changes = await call('GET', `/stores/${store}/changes`);
  t.deepEqual((changes.body['changes'] as { tuple_key: unknown }[]).map((c) => c.tuple_key), [{ ...key, expires_at: at }]);
  clock.offsetMs += 61_000;
  t.false((await call('POST', `/stores/${store}/check`, { tuple_key: key })).body['allowed'] as boolean);
  t.deepEqual((await call('POST', `/stores/${store}/read`, {})).body['tuples'], []);
});
