/**
 * Conditions may use only what OpenFGA's CEL environment declares, on the
 * server's model writes: the OpenFGA HTTP API answers a model whose condition
 * calls a function outside it (one of each family) 400
 * `invalid_authorization_model` with cel-go's "undeclared reference" message,
 * as OpenFGA does; the admin operation `fga_write_model` refuses it over
 * every protocol with `invalid_argument`/`invalid_authorization_model`, and
 * `fga_validate_model` reports that same reason and message (at the
 * condition) instead of calling the model valid; a model using declared
 * functions validates, is accepted and answers; and a model
 * version stored before the refusal (written straight into the server's
 * database) keeps answering writes and checks through the API.
 */
import test from 'ava';
import { ulid } from 'ulid';
import type { AuthorizationModel } from '../../../engine/index.ts';
import { SqlStore } from '../../../engine/sql/sql_store.ts';
import { transformDslToModel } from '../../../dsl/index.ts';
import { connect } from '../../engine/sql_helpers.ts';
import { PROTOCOLS, TEST_ADMIN_SECRET, startTestServer, type TestServer } from '../../helpers/server.ts';

const KEY = 'openfga-test-key-0123456789';
const admin = { 'x-service-admin-secret': TEST_ADMIN_SECRET };

function dslWith(expression: string): string {
  return `model\n  schema 1.1\ntype user\ntype doc\n  relations\n    define viewer: [user with c]\ncondition c(s: string, l: list<int>) {\n  ${expression}\n}\n`;
}

/** One expression per refused family, and the function the refusal names. */
const REFUSED: readonly (readonly [string, string])[] = [
  ['s.substring(1) == "ello"', 'substring'],
  ['s.lowerAscii() == s', 'lowerAscii'],
  ['b"ab".hex() == "6162"', 'hex'],
  ['cel.bind(x, s, x == "a")', 'cel.bind'],
  ['math.greatest(1, 2) == 2', 'math.greatest'],
  ['strings.quote(s) == s', 'strings.quote'],
  ['optional.of(s).hasValue()', 'optional.of'],
  ['sets.contains(l, [1])', 'sets.contains'],
];

const ALLOWED = dslWith('s.startsWith("he") && matches(s, "l+") && size(s) == 5 && l.exists(x, x == 2) && string(l[0]) == "1"');
const STORED = dslWith('s.lowerAscii().startsWith("adm") && l.size() > 0');

async function api(server: TestServer, method: string, path: string, body?: unknown): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`${server.httpUrl}${path}`, {
    method,
    headers: { 'content-type': 'application/json', authorization: `Bearer ${KEY}` },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  return { status: res.status, body: text === '' ? {} : (JSON.parse(text) as Record<string, unknown>) };
}

let server: TestServer;
test.before(async () => {
  server = await startTestServer({ 'openfga-preshared-keys': KEY });
});
test.after.always(async () => {
  await server?.close();
});

test('openfga api: a model whose condition calls a function outside OpenFGA\'s CEL environment is 400 invalid_authorization_model, one of each family', async (t) => {
  const store = (await api(server, 'POST', '/stores', { name: 'refusals' })).body['id'] as string;
  for (const [expression, reference] of REFUSED) {
    const r = await api(server, 'POST', `/stores/${store}/authorization-models`, transformDslToModel(dslWith(expression)));
    t.is(r.status, 400, `${expression}: ${JSON.stringify(r.body)}`);
    t.is(r.body['code'], 'invalid_authorization_model', expression);
    t.true(String(r.body['message']).includes(`undeclared reference to '${reference}'`), String(r.body['message']));
  }
  t.deepEqual((await api(server, 'GET', `/stores/${store}/authorization-models`)).body['authorization_models'], []);
});

test('openfga api: a model using declared functions is accepted and its condition answers checks', async (t) => {
  const store = (await api(server, 'POST', '/stores', { name: 'allowed' })).body['id'] as string;
  const written = await api(server, 'POST', `/stores/${store}/authorization-models`, transformDslToModel(ALLOWED));
  t.is(written.status, 201, JSON.stringify(written.body));
  t.is((await api(server, 'POST', `/stores/${store}/write`, { writes: { tuple_keys: [{ user: 'user:a', relation: 'viewer', object: 'doc:1', condition: { name: 'c' } }] } })).status, 200);
  const check = async (s: string): Promise<unknown> => (await api(server, 'POST', `/stores/${store}/check`, { tuple_key: { user: 'user:a', relation: 'viewer', object: 'doc:1' }, context: { s, l: [1, 2] } })).body['allowed'];
  t.is(await check('hello'), true);
  t.is(await check('jello'), false);
});

test('fga_write_model refuses a condition outside the environment on every protocol', async (t) => {
  for (const protocol of PROTOCOLS) {
    for (const [expression] of REFUSED.slice(0, 3)) {
      const r = await server.call('fga_write_model', { dsl: dslWith(expression) }, { protocol, headers: admin });
      t.is(r.error?.code, 'invalid_argument', `${protocol} ${expression}`);
      t.is(r.error?.reason, 'invalid_authorization_model', `${protocol} ${expression}`);
    }
  }
});

test('fga_validate_model reports what fga_write_model refuses, with its reason and message at the condition, on every protocol; an allowed condition validates', async (t) => {
  for (const protocol of PROTOCOLS) {
    for (const [expression, reference] of [['"ab".substring(1) == "b"', 'substring'] as const, ...REFUSED.slice(3, 5)]) {
      const write = await server.call('fga_write_model', { dsl: dslWith(expression) }, { protocol, headers: admin });
      t.is(write.error?.reason, 'invalid_authorization_model', `${protocol} ${expression}`);
      t.true(write.error?.message.includes(`undeclared reference to '${reference}'`), write.error?.message);
      const r = await server.call('fga_validate_model', { dsl: dslWith(expression) }, { protocol, headers: admin });
      t.is(r.error, undefined, `${protocol} ${expression}`);
      // Line 7, column 11: the name of condition `c`.
      t.deepEqual(r.body, { valid: false, errors: [{ line: 7, column: 11, kind: write.error?.reason, message: write.error?.message }] }, `${protocol} ${expression}`);
    }
    const allowed = await server.call('fga_validate_model', { dsl: ALLOWED }, { protocol, headers: admin });
    t.deepEqual(allowed.body, { valid: true, errors: [] }, protocol);
  }
});

test('openfga api: a model version stored before the refusal keeps answering writes and checks', async (t) => {
  const store = (await api(server, 'POST', '/stores', { name: 'stored' })).body['id'] as string;
  // Written straight into the server's database, as a release without the refusal stored it.
  const sequelize = await connect({ backend: 'sqlite', url: server.database.url, drop: async () => {} });
  const modelId = ulid();
  const model: AuthorizationModel = transformDslToModel(STORED);
  try {
    const sql = await SqlStore.open({ sequelize });
    await sql.catalog().store(store).writeModel({ id: modelId, ...model });
    await sql.close();
  } finally {
    await sequelize.close();
  }
  const write = await api(server, 'POST', `/stores/${store}/write`, { writes: { tuple_keys: [{ user: 'user:a', relation: 'viewer', object: 'doc:1', condition: { name: 'c' } }] }, authorization_model_id: modelId });
  t.is(write.status, 200, JSON.stringify(write.body));
  const check = async (s: string): Promise<unknown> => (await api(server, 'POST', `/stores/${store}/check`, { tuple_key: { user: 'user:a', relation: 'viewer', object: 'doc:1' }, context: { s, l: [1] }, authorization_model_id: modelId })).body['allowed'];
  t.is(await check('ADMIN'), true);
  t.is(await check('guest'), false);
  // The same model written again through the API is refused.
  const again = await api(server, 'POST', `/stores/${store}/authorization-models`, model);
  t.is(again.status, 400);
  t.is(again.body['code'], 'invalid_authorization_model');
});
