/**
 * A condition over its cost limit on every route that evaluates one, over the
 * real server with the FGA store on SQLite, PostgreSQL and MySQL/MariaDB:
 * cost is checked at evaluation time only (a model with an expensive
 * condition is written, as OpenFGA writes it), and every evaluation that goes
 * over the limit answers `invalid_argument` with reason
 * `condition_cost_exceeded` on the native API (check_permissions,
 * list_permissions, fga_list_users; the context from the request, from the
 * tuple, or on a contextual tuple; a plain `in` and a macro), and OpenFGA's
 * own answer on its HTTP API (code 2000 `validation_error` with cel-go's
 * message "operation cancelled: actual cost limit exceeded"), never an allow
 * or a deny.
 */
import test from 'ava';
import { sqlBackends } from '../../helpers/databases.ts';
import { TEST_ADMIN_SECRET, startTestServer, type CallResult } from '../../helpers/server.ts';

const admin = { 'x-service-admin-secret': TEST_ADMIN_SECRET };
const KEY = 'openfga-cost-key-0123456789';
const DSL = `model
  schema 1.1
type user
type doc
  relations
    define viewer: [user with listed]
    define reader: [user with scanned]
condition listed(names: list<string>) {
  "admin" in names
}
condition scanned(names: list<string>) {
  names.exists(n, n == "admin")
}
`;
// `"admin" in names` costs 1 + the list's size; the macro more: both above 100 here.
const NAMES = [...Array.from({ length: 149 }, (_, i) => `u${i}`), 'admin'];
const COST = 'invalid_argument/condition_cost_exceeded';

const outcome = (r: CallResult): string => (r.error ? `${r.error.code}/${r.error.reason ?? ''}` : JSON.stringify(r.body));

for (const backend of sqlBackends()) {
  test(`${backend}: every route that evaluates a condition over its cost limit answers condition_cost_exceeded (OpenFGA API: validation_error)`, async (t) => {
    const srv = await startTestServer({ 'openfga-preshared-keys': KEY }, { backend });
    t.teardown(() => srv.close());
    // Written: cost is not estimated when a model is written.
    const m = await srv.call('fga_write_model', { dsl: DSL }, { protocol: 'rest', headers: admin });
    t.is(m.error, undefined);
    const s = await srv.call('signup', { email: `cost-${backend}@example.com`, password: 'correct horse battery' }, { protocol: 'rest' });
    const uid = (s.body!['user'] as { id: string }).id;
    const bearer = { authorization: `Bearer ${s.body!['access_token'] as string}` };
    const w = await srv.call(
      'fga_write_tuples',
      {
        tuples: [
          { user: `user:${uid}`, relation: 'viewer', object: 'doc:1', condition: { name: 'listed' } },
          { user: `user:${uid}`, relation: 'reader', object: 'doc:1', condition: { name: 'scanned' } },
          // The context on the tuple itself.
          { user: `user:${uid}`, relation: 'viewer', object: 'doc:2', condition: { name: 'listed', context: { names: NAMES } } },
        ],
      },
      { protocol: 'rest', headers: admin },
    );
    t.is(w.error, undefined);

    for (const protocol of ['rest', 'graphql', 'grpc'] as const) {
      for (const relation of ['viewer', 'reader']) {
        t.is(outcome(await srv.call('check_permissions', { checks: [{ relation, object: 'doc:1', context: { names: NAMES } }] }, { protocol, headers: bearer })), COST, `${protocol} check ${relation}`);
        t.is(outcome(await srv.call('list_permissions', { relation, object_type: 'doc', context: { names: NAMES } }, { protocol, headers: bearer })), COST, `${protocol} list ${relation}`);
      }
      t.is(outcome(await srv.call('check_permissions', { checks: [{ relation: 'viewer', object: 'doc:2' }] }, { protocol, headers: bearer })), COST, `${protocol} tuple context`);
      t.is(outcome(await srv.call('fga_list_users', { relation: 'viewer', object: 'doc:2', user_type: 'user' }, { protocol, headers: admin })), COST, `${protocol} list users`);
      const contextual = { user: `user:${uid}`, relation: 'reader', object: 'doc:9', condition: { name: 'scanned' } };
      t.is(
        outcome(await srv.call('check_permissions', { checks: [{ relation: 'reader', object: 'doc:9', context: { names: NAMES }, contextual_tuples: [contextual] }] }, { protocol, headers: bearer })),
        COST,
        `${protocol} contextual tuple`,
      );
    }

    // The OpenFGA HTTP API answers as OpenFGA does: 400 validation_error (2000), cel-go's message.
    const fga = async (path: string, body: unknown) => {
      const res = await fetch(`${srv.httpUrl}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${KEY}` }, body: JSON.stringify(body) });
      return { status: res.status, body: (await res.json()) as Record<string, unknown> };
    };
    const store = (await fga('/stores', { name: 'cost' })).body['id'] as string;
    const model = {
      schema_version: '1.1',
      type_definitions: [
        { type: 'user' },
        { type: 'doc', relations: { viewer: { this: {} } }, metadata: { relations: { viewer: { directly_related_user_types: [{ type: 'user', condition: 'listed' }] } } } },
      ],
      conditions: { listed: { name: 'listed', expression: '"admin" in names', parameters: { names: { type_name: 'TYPE_NAME_LIST', generic_types: [{ type_name: 'TYPE_NAME_STRING' }] } } } },
    };
    t.is((await fga(`/stores/${store}/authorization-models`, model)).status, 201);
    t.is((await fga(`/stores/${store}/write`, { writes: { tuple_keys: [{ user: 'user:a', relation: 'viewer', object: 'doc:1', condition: { name: 'listed' } }] } })).status, 200);
    const context = { names: NAMES };
    const cel = "failed to evaluate relationship condition 'listed': operation cancelled: actual cost limit exceeded";
    for (const [path, body] of [
      ['check', { tuple_key: { user: 'user:a', relation: 'viewer', object: 'doc:1' }, context }],
      ['list-objects', { user: 'user:a', relation: 'viewer', type: 'doc', context }],
      ['list-users', { object: { type: 'doc', id: '1' }, relation: 'viewer', user_filters: [{ type: 'user' }], context }],
    ] as const) {
      t.deepEqual(await fga(`/stores/${store}/${path}`, body), { status: 400, body: { code: 'validation_error', message: cel } }, path);
    }
    const batch = await fga(`/stores/${store}/batch-check`, { checks: [{ tuple_key: { user: 'user:a', relation: 'viewer', object: 'doc:1' }, context, correlation_id: 'c1' }] });
    t.deepEqual(batch.body, { result: { c1: { allowed: false, error: { input_error: 'validation_error', message: cel } } } });
  });
}
