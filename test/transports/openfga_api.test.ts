/**
 * OpenFGA's HTTP API on the real server, driven by OpenFGA's own JS SDK
 * (`@openfga/sdk`) and, for the refusals, by plain fetch: every endpoint's
 * answers, status codes and OpenFGA error codes for bad input (unknown store,
 * unknown model, invalid tuple, too many tuples, bad continuation token,
 * missing or wrong key), on SQLite, PostgreSQL and MySQL. The identity server's own
 * permission checks keep answering from the default store.
 */
import test, { type ExecutionContext } from 'ava';
import { CredentialsMethod, FgaApiAuthenticationError, FgaApiNotFoundError, FgaApiValidationError, OpenFgaClient } from '@openfga/sdk';
import { DEFAULT_STORE_ID } from '../../engine/index.ts';
import { transformDslToModel } from '../../dsl/index.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import type { SqlBackend } from '../helpers/databases.ts';

const KEY = 'openfga-test-key-0123456789';

const MODEL_DSL = `model
  schema 1.1
type user
type group
  relations
    define member: [user, user:*, group#member]
type folder
  relations
    define owner: [user]
    define viewer: [user, group#member] or owner
type doc
  relations
    define parent: [folder]
    define editor: [user with in_hours]
    define viewer: [user, user:*, group#member] or editor or viewer from parent
condition in_hours(hour: int, start: int) {
  hour >= start && hour < 18
}
`;

function backends(): SqlBackend[] {
  const out: SqlBackend[] = ['sqlite'];
  if (process.env['LATCHKEY_TEST_POSTGRES_URL']) out.push('postgres');
  if (process.env['LATCHKEY_TEST_MYSQL_URL']) out.push('mysql');
  return out;
}

function client(server: TestServer, storeId?: string, key = KEY): OpenFgaClient {
  return new OpenFgaClient({
    apiUrl: server.httpUrl,
    ...(storeId === undefined ? {} : { storeId }),
    credentials: { method: CredentialsMethod.ApiToken, config: { token: key } },
    retryParams: { maxRetry: 0 },
  });
}

async function raw(server: TestServer, method: string, path: string, body?: unknown, key: string | null = KEY): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`${server.httpUrl}${path}`, {
    method,
    headers: { 'content-type': 'application/json', ...(key === null ? {} : { authorization: `Bearer ${key}` }) },
    ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
  });
  const text = await res.text();
  return { status: res.status, body: text === '' ? {} : (JSON.parse(text) as Record<string, unknown>) };
}

async function refusal(t: ExecutionContext, p: Promise<{ status: number; body: Record<string, unknown> }>, status: number, code: string): Promise<void> {
  const r = await p;
  t.is(r.status, status, JSON.stringify(r.body));
  t.is(r.body['code'], code, JSON.stringify(r.body));
  t.is(typeof r.body['message'], 'string');
}

for (const backend of backends()) {
  test(`openfga api (${backend}): stores, models, writes, reads, changes and every query through @openfga/sdk`, async (t) => {
    const server = await startTestServer({ 'openfga-preshared-keys': KEY }, { backend });
    t.teardown(() => server.close());
    const admin = client(server);

    // Stores: create, get, list with pages and a name filter, delete.
    const a = await admin.createStore({ name: 'tenant-a' });
    t.regex(a.id, /^[0-7][0-9A-HJKMNP-TV-Z]{25}$/);
    t.is(a.name, 'tenant-a');
    t.truthy(Date.parse(a.created_at));
    const b = await admin.createStore({ name: 'tenant-b' });
    await admin.createStore({ name: 'tenant-a' });
    t.is((await client(server, b.id).getStore()).name, 'tenant-b');
    const ids: string[] = [];
    let token: string | undefined;
    do {
      const page = await admin.listStores({ pageSize: 2, ...(token ? { continuationToken: token } : {}) });
      ids.push(...page.stores.map((s) => s.id));
      token = page.continuation_token || undefined;
    } while (token !== undefined);
    t.is(ids.length, 4);
    t.is(ids[0], DEFAULT_STORE_ID);
    t.deepEqual((await admin.listStores({ name: 'tenant-a' })).stores.map((s) => s.name), ['tenant-a', 'tenant-a']);

    // Models: write (JSON), read by id, list newest first.
    const fga = client(server, a.id);
    const model = transformDslToModel(MODEL_DSL);
    const first = await fga.writeAuthorizationModel(model as never);
    const second = await fga.writeAuthorizationModel(model as never);
    t.deepEqual((await fga.readAuthorizationModels()).authorization_models.map((m) => m.id), [second.authorization_model_id, first.authorization_model_id]);
    const read = await fga.readAuthorizationModel({ authorizationModelId: first.authorization_model_id });
    t.is(read.authorization_model?.id, first.authorization_model_id);
    t.deepEqual(read.authorization_model?.conditions?.['in_hours']?.parameters?.['hour'], { type_name: 'TYPE_NAME_INT' } as never);
    t.is((await fga.readLatestAuthorizationModel()).authorization_model?.id, second.authorization_model_id);

    // Writes with a condition, atomic with deletes.
    const writeStarted = Date.now();
    await fga.write({
      writes: [
        { user: 'user:anne', relation: 'viewer', object: 'doc:1' },
        { user: 'user:bob', relation: 'editor', object: 'doc:2', condition: { name: 'in_hours', context: { start: 9 } } },
        { user: 'group:eng#member', relation: 'viewer', object: 'doc:3' },
        { user: 'user:carl', relation: 'member', object: 'group:eng' },
        { user: 'folder:f', relation: 'parent', object: 'doc:4' },
        { user: 'user:dana', relation: 'owner', object: 'folder:f' },
        { user: 'user:gone', relation: 'viewer', object: 'doc:9' },
      ],
    });
    await fga.write({ writes: [{ user: 'user:erin', relation: 'viewer', object: 'doc:5' }], deletes: [{ user: 'user:gone', relation: 'viewer', object: 'doc:9' }] });
    // A failing tuple leaves the whole call unapplied.
    const failed = await t.throwsAsync(fga.write({ writes: [{ user: 'user:frank', relation: 'viewer', object: 'doc:6' }, { user: 'user:anne', relation: 'viewer', object: 'doc:1' }] }));
    t.true(failed instanceof FgaApiValidationError);
    t.is((failed as FgaApiValidationError).apiErrorCode, 'write_failed_due_to_invalid_input' as never);
    t.false((await fga.check({ user: 'user:frank', relation: 'viewer', object: 'doc:6' })).allowed);
    // The duplicate and missing-tuple options.
    await fga.write(
      { writes: [{ user: 'user:anne', relation: 'viewer', object: 'doc:1' }], deletes: [{ user: 'user:nobody', relation: 'viewer', object: 'doc:1' }] },
      { conflict: { onDuplicateWrites: 'ignore' as never, onMissingDeletes: 'ignore' as never } },
    );

    // Read: filters, page size, continuation.
    const tuples: string[] = [];
    let readToken: string | undefined;
    do {
      const page = await fga.read({}, { pageSize: 2, ...(readToken ? { continuationToken: readToken } : {}) });
      t.true(page.tuples.length <= 2);
      tuples.push(...page.tuples.map((x) => `${x.key.object}#${x.key.relation}@${x.key.user}`));
      readToken = page.continuation_token || undefined;
    } while (readToken !== undefined);
    t.is(tuples.length, 7);
    const conditionedTuple = (await fga.read({ object: 'doc:2', relation: 'editor', user: 'user:bob' })).tuples[0];
    const conditioned = conditionedTuple?.key;
    t.deepEqual(conditioned?.condition, { name: 'in_hours', context: { start: 9 } });
    // The timestamp is when the tuple was written (whole seconds may be cut by the database's clock reading).
    const writtenAt = Date.parse(conditionedTuple?.timestamp as unknown as string);
    t.true(writtenAt >= writeStarted - 1000 && writtenAt <= Date.now(), String(conditionedTuple?.timestamp));
    t.deepEqual((await fga.read({ object: 'doc:', user: 'user:anne' })).tuples.map((x) => x.key.object), ['doc:1']);

    // Read changes: type filter, pages, continuation.
    const changes: string[] = [];
    let changeToken: string | undefined;
    for (let i = 0; i < 10; i++) {
      const page = await fga.readChanges({ type: 'doc' }, { pageSize: 3, ...(changeToken ? { continuationToken: changeToken } : {}) });
      if (page.changes.length === 0) break;
      changes.push(...page.changes.map((c) => `${c.operation === 'TUPLE_OPERATION_WRITE' ? '+' : '-'}${c.tuple_key.object}@${c.tuple_key.user}`));
      changeToken = page.continuation_token;
    }
    t.deepEqual(changes, ['+doc:1@user:anne', '+doc:2@user:bob', '+doc:3@group:eng#member', '+doc:4@folder:f', '+doc:9@user:gone', '+doc:9@user:gone'.replace('+', '-'), '+doc:5@user:erin']);
    const later = await fga.readChanges({ startTime: new Date(Date.now() + 60_000).toISOString() } as never);
    t.deepEqual(later.changes, []);

    // Check: direct, userset, computed, tuple-to-userset, wildcard-free, conditions with context, contextual tuples, consistency.
    t.true((await fga.check({ user: 'user:anne', relation: 'viewer', object: 'doc:1' })).allowed);
    t.true((await fga.check({ user: 'user:carl', relation: 'viewer', object: 'doc:3' })).allowed);
    t.true((await fga.check({ user: 'user:dana', relation: 'viewer', object: 'doc:4' })).allowed);
    t.true((await fga.check({ user: 'user:bob', relation: 'viewer', object: 'doc:2', context: { hour: 10 } })).allowed);
    t.false((await fga.check({ user: 'user:bob', relation: 'viewer', object: 'doc:2', context: { hour: 19 } })).allowed);
    const missing = await t.throwsAsync(fga.check({ user: 'user:bob', relation: 'viewer', object: 'doc:2' }));
    t.true(missing instanceof FgaApiValidationError, String(missing));
    t.true((await fga.check({ user: 'user:zed', relation: 'viewer', object: 'doc:7', contextualTuples: [{ user: 'user:zed', relation: 'viewer', object: 'doc:7' }] })).allowed);
    t.false((await fga.check({ user: 'user:zed', relation: 'viewer', object: 'doc:7' })).allowed);
    t.true((await fga.check({ user: 'user:anne', relation: 'viewer', object: 'doc:1' }, { consistency: 'HIGHER_CONSISTENCY' as never })).allowed);
    t.true((await fga.check({ user: 'user:anne', relation: 'viewer', object: 'doc:1' }, { authorizationModelId: first.authorization_model_id })).allowed);

    // Batch check: correlation ids, per-check errors.
    const batch = await fga.batchCheck({
      checks: [
        { user: 'user:anne', relation: 'viewer', object: 'doc:1', correlationId: 'c1' },
        { user: 'user:anne', relation: 'viewer', object: 'doc:2', correlationId: 'c2' },
        { user: 'user:anne', relation: 'nope', object: 'doc:2', correlationId: 'c3' },
      ],
    });
    const byId = new Map(batch.result.map((r) => [r.correlationId, r]));
    t.true(byId.get('c1')?.allowed);
    t.false(byId.get('c2')?.allowed);
    t.truthy(byId.get('c3')?.error);

    // Expand: the tree as an object.
    const expanded = await fga.expand({ relation: 'member', object: 'group:eng' });
    t.deepEqual(expanded.tree?.root?.leaf?.users?.users, ['user:carl']);
    t.is(expanded.tree?.root?.name, 'group:eng#member');

    // List objects, streamed list objects, list users.
    t.deepEqual((await fga.listObjects({ user: 'user:dana', relation: 'viewer', type: 'doc' })).objects, ['doc:4']);
    t.deepEqual((await fga.listObjects({ user: 'user:bob', relation: 'viewer', type: 'doc', context: { hour: 10 } })).objects, ['doc:2']);
    const streamed: string[] = [];
    for await (const r of fga.streamedListObjects({ user: 'user:carl', relation: 'viewer', type: 'doc' })) streamed.push(r.object);
    t.deepEqual(streamed, ['doc:3']);
    const users = await fga.listUsers({ object: { type: 'doc', id: '3' }, relation: 'viewer', user_filters: [{ type: 'user' }] });
    t.deepEqual(users.users, [{ object: { type: 'user', id: 'carl' } }]);
    const usersets = await fga.listUsers({ object: { type: 'doc', id: '3' }, relation: 'viewer', user_filters: [{ type: 'group', relation: 'member' }] });
    t.deepEqual(usersets.users, [{ userset: { type: 'group', id: 'eng', relation: 'member' } }]);

    // Assertions: write and read per model.
    await fga.writeAssertions([
      { user: 'user:anne', relation: 'viewer', object: 'doc:1', expectation: true },
      { user: 'user:bob', relation: 'viewer', object: 'doc:2', expectation: true, context: { hour: 10 }, contextualTuples: [{ user: 'user:x', relation: 'viewer', object: 'doc:1' }] } as never,
    ], { authorizationModelId: second.authorization_model_id });
    const assertions = await fga.readAssertions({ authorizationModelId: second.authorization_model_id });
    t.is(assertions.authorization_model_id, second.authorization_model_id);
    t.deepEqual(assertions.assertions?.map((x) => [x.tuple_key.user, x.expectation]), [['user:anne', true], ['user:bob', true]]);
    t.deepEqual((await fga.readAssertions({ authorizationModelId: first.authorization_model_id })).assertions, []);

    // Stores are apart: store b has none of it; the default store (the identity server's) neither.
    const other = client(server, b.id);
    await other.writeAuthorizationModel(model as never);
    t.false((await other.check({ user: 'user:anne', relation: 'viewer', object: 'doc:1' })).allowed);
    t.deepEqual((await other.read()).tuples, []);
    t.deepEqual((await client(server, DEFAULT_STORE_ID).read()).tuples, []);

    // Deleting a store deletes its data: the id is gone for every call.
    await admin.deleteStore({ storeId: a.id });
    const gone = await t.throwsAsync(fga.check({ user: 'user:anne', relation: 'viewer', object: 'doc:1' }));
    t.true(gone instanceof FgaApiNotFoundError, String(gone));
    t.is((gone as FgaApiNotFoundError).apiErrorCode, 'store_id_not_found' as never);
    t.deepEqual((await admin.listStores({ name: 'tenant-a' })).stores.length, 1);
  });

  test(`openfga api (${backend}): status and error codes of bad input match OpenFGA's`, async (t) => {
    const server = await startTestServer({ 'openfga-preshared-keys': `${KEY},second-key-abcdefgh` }, { backend });
    t.teardown(() => server.close());
    const store = (await raw(server, 'POST', '/stores', { name: 'errors' })).body['id'] as string;
    const unknownStore = '01ARZ3NDEKTSV4RRFFQ69G5FAV';
    const unknownModel = '01ARZ3NDEKTSV4RRFFQ69G5FAW';
    const s = `/stores/${store}`;

    // Authentication: missing, wrong, and the second key accepted.
    await refusal(t, raw(server, 'GET', '/stores', undefined, null), 401, 'bearer_token_missing');
    await refusal(t, raw(server, 'GET', '/stores', undefined, 'wrong-key-0000000'), 401, 'unauthenticated');
    t.is((await raw(server, 'GET', '/stores', undefined, 'second-key-abcdefgh')).status, 200);
    const sdkAuth = await t.throwsAsync(client(server, store, 'wrong-key-0000000').check({ user: 'user:a', relation: 'viewer', object: 'doc:1' }));
    t.true(sdkAuth instanceof FgaApiAuthenticationError, String(sdkAuth));

    // Stores.
    await refusal(t, raw(server, 'POST', '/stores', { name: 'ab' }), 400, 'validation_error');
    await refusal(t, raw(server, 'POST', '/stores', {}), 400, 'validation_error');
    await refusal(t, raw(server, 'GET', `/stores/${unknownStore}`), 404, 'store_id_not_found');
    await refusal(t, raw(server, 'GET', '/stores/not-a-ulid'), 400, 'validation_error');
    await refusal(t, raw(server, 'DELETE', `/stores/${unknownStore}`), 404, 'store_id_not_found');
    await refusal(t, raw(server, 'DELETE', `/stores/${DEFAULT_STORE_ID}`), 400, 'validation_error');
    await refusal(t, raw(server, 'GET', '/stores?page_size=0'), 400, 'page_size_invalid');
    await refusal(t, raw(server, 'GET', '/stores?page_size=101'), 400, 'page_size_invalid');
    await refusal(t, raw(server, 'GET', '/stores?continuation_token=bad'), 400, 'invalid_continuation_token');
    t.is((await raw(server, 'GET', `/stores/${store}`)).status, 200);

    // Unknown store on every per-store endpoint.
    for (const [method, path, body] of [
      ['POST', 'authorization-models', { schema_version: '1.1', type_definitions: [{ type: 'user' }] }],
      ['GET', 'authorization-models', undefined],
      ['GET', `authorization-models/${unknownModel}`, undefined],
      ['POST', 'write', { writes: { tuple_keys: [{ user: 'user:a', relation: 'viewer', object: 'doc:1' }] } }],
      ['POST', 'read', {}],
      ['GET', 'changes', undefined],
      ['POST', 'check', { tuple_key: { user: 'user:a', relation: 'viewer', object: 'doc:1' } }],
      ['POST', 'batch-check', { checks: [{ tuple_key: { user: 'user:a', relation: 'viewer', object: 'doc:1' }, correlation_id: 'x' }] }],
      ['POST', 'expand', { tuple_key: { relation: 'viewer', object: 'doc:1' } }],
      ['POST', 'list-objects', { type: 'doc', relation: 'viewer', user: 'user:a' }],
      ['POST', 'streamed-list-objects', { type: 'doc', relation: 'viewer', user: 'user:a' }],
      ['POST', 'list-users', { object: { type: 'doc', id: '1' }, relation: 'viewer', user_filters: [{ type: 'user' }] }],
      ['GET', `assertions/${unknownModel}`, undefined],
      ['PUT', `assertions/${unknownModel}`, { assertions: [] }],
    ] as const) {
      await refusal(t, raw(server, method, `/stores/${unknownStore}/${path}`, body), 404, 'store_id_not_found');
    }

    // No model yet.
    await refusal(t, raw(server, 'POST', `${s}/check`, { tuple_key: { user: 'user:a', relation: 'viewer', object: 'doc:1' } }), 400, 'latest_authorization_model_not_found');
    // Models.
    await refusal(t, raw(server, 'POST', `${s}/authorization-models`, { schema_version: '1.1', type_definitions: [] }), 400, 'type_definitions_too_few_items');
    await refusal(t, raw(server, 'POST', `${s}/authorization-models`, { schema_version: '1.1', type_definitions: [{ type: 'doc', relations: { viewer: { computedUserset: { relation: 'nope' } } } }] }), 400, 'invalid_authorization_model');
    const model = transformDslToModel(MODEL_DSL);
    const created = await raw(server, 'POST', `${s}/authorization-models`, model);
    t.is(created.status, 201);
    const modelId = created.body['authorization_model_id'] as string;
    await refusal(t, raw(server, 'GET', `${s}/authorization-models/${unknownModel}`), 400, 'authorization_model_not_found');
    await refusal(t, raw(server, 'GET', `${s}/authorization-models?continuation_token=bad`), 400, 'invalid_continuation_token');

    // Write: invalid tuple, unknown type and relation, duplicate, exists, missing, too many, empty, unknown model, bad body.
    const write = (body: unknown) => raw(server, 'POST', `${s}/write`, body);
    await refusal(t, write({ writes: { tuple_keys: [{ user: 'user:a', relation: 'viewer', object: 'doc' }] } }), 400, 'validation_error');
    await refusal(t, write({ writes: { tuple_keys: [{ user: 'user:a', relation: 'viewer', object: 'nope:1' }] } }), 400, 'validation_error');
    await refusal(t, write({ writes: { tuple_keys: [{ user: 'user:a', relation: 'viewer' }] } }), 400, 'validation_error');
    await refusal(t, write({ writes: { tuple_keys: [{ user: 'user:a', relation: 'viewer', object: 'doc:1' }, { user: 'user:a', relation: 'viewer', object: 'doc:1' }] } }), 400, 'cannot_allow_duplicate_tuples_in_one_request');
    t.is((await write({ writes: { tuple_keys: [{ user: 'user:a', relation: 'viewer', object: 'doc:1' }] } })).status, 200);
    await refusal(t, write({ writes: { tuple_keys: [{ user: 'user:a', relation: 'viewer', object: 'doc:1' }] } }), 400, 'write_failed_due_to_invalid_input');
    await refusal(t, write({ deletes: { tuple_keys: [{ user: 'user:b', relation: 'viewer', object: 'doc:1' }] } }), 400, 'write_failed_due_to_invalid_input');
    const many = Array.from({ length: 101 }, (_, i) => ({ user: `user:${i}`, relation: 'viewer', object: 'doc:many' }));
    await refusal(t, write({ writes: { tuple_keys: many } }), 400, 'exceeded_entity_limit');
    await refusal(t, write({}), 400, 'invalid_write_input');
    await refusal(t, write({ writes: { tuple_keys: [{ user: 'user:c', relation: 'viewer', object: 'doc:1' }] }, authorization_model_id: unknownModel }), 400, 'authorization_model_not_found');
    await refusal(t, write({ writes: { tuple_keys: [{ user: 'user:c', relation: 'editor', object: 'doc:1', condition: { name: 'nope' } }] } }), 400, 'validation_error');
    await refusal(t, raw(server, 'POST', `${s}/write`, '{not json'), 400, 'validation_error');

    // Read and changes.
    await refusal(t, raw(server, 'POST', `${s}/read`, { continuation_token: 'bad' }), 400, 'invalid_continuation_token');
    await refusal(t, raw(server, 'POST', `${s}/read`, { page_size: 500 }), 400, 'page_size_invalid');
    await refusal(t, raw(server, 'GET', `${s}/changes?continuation_token=bad`), 400, 'invalid_continuation_token');
    await refusal(t, raw(server, 'GET', `${s}/changes?start_time=yesterday`), 400, 'invalid_start_time');
    const firstChanges = await raw(server, 'GET', `${s}/changes?page_size=1&type=doc`);
    await refusal(t, raw(server, 'GET', `${s}/changes?type=folder&continuation_token=${firstChanges.body['continuation_token'] as string}`), 400, 'query_string_type_continuation_token_mismatch');

    // Queries.
    const check = (body: unknown) => raw(server, 'POST', `${s}/check`, body);
    await refusal(t, check({ tuple_key: { user: 'user:a', relation: 'viewer' } }), 400, 'validation_error');
    await refusal(t, check({ tuple_key: { user: 'user:a', relation: 'viewer', object: 'nope:1' } }), 400, 'validation_error');
    await refusal(t, check({ tuple_key: { user: 'user:a', relation: 'nope', object: 'doc:1' } }), 400, 'validation_error');
    await refusal(t, check({ tuple_key: { user: 'user:a', relation: 'viewer', object: 'doc:1' }, authorization_model_id: unknownModel }), 400, 'authorization_model_not_found');
    await refusal(t, check({ tuple_key: { user: 'user:a', relation: 'viewer', object: 'doc:1' }, contextual_tuples: { tuple_keys: [{ user: 'user:a', relation: 'viewer', object: 'nope:1' }] } }), 400, 'invalid_tuple');
    await refusal(t, check({ tuple_key: { user: 'user:a', relation: 'viewer', object: 'doc:1' }, consistency: 'SOMETIMES' }), 400, 'validation_error');
    t.deepEqual((await check({ tuple_key: { user: 'user:a', relation: 'viewer', object: 'doc:1' } })).body, { allowed: true, resolution: '' });
    const batch = (checks: unknown) => raw(server, 'POST', `${s}/batch-check`, { checks });
    await refusal(t, batch([]), 400, 'validation_error');
    await refusal(t, batch([{ tuple_key: { user: 'user:a', relation: 'viewer', object: 'doc:1' }, correlation_id: 'x' }, { tuple_key: { user: 'user:a', relation: 'viewer', object: 'doc:2' }, correlation_id: 'x' }]), 400, 'validation_error');
    await refusal(t, batch(Array.from({ length: 51 }, (_, i) => ({ tuple_key: { user: 'user:a', relation: 'viewer', object: 'doc:1' }, correlation_id: `c${i}` }))), 400, 'validation_error');
    const partial = await batch([{ tuple_key: { user: 'user:a', relation: 'viewer', object: 'doc:1' }, correlation_id: 'ok' }, { tuple_key: { user: 'user:a', relation: 'viewer', object: 'nope:1' }, correlation_id: 'bad' }]);
    t.is(partial.status, 200);
    t.deepEqual((partial.body['result'] as Record<string, unknown>)['ok'], { allowed: true });
    t.is(((partial.body['result'] as Record<string, { error?: { input_error?: string } }>)['bad']?.error?.input_error), 'validation_error');
    await refusal(t, raw(server, 'POST', `${s}/expand`, { tuple_key: { object: 'doc:1' } }), 400, 'validation_error');
    await refusal(t, raw(server, 'POST', `${s}/expand`, { tuple_key: { relation: 'nope', object: 'doc:1' } }), 400, 'relation_not_found');
    await refusal(t, raw(server, 'POST', `${s}/list-objects`, { type: 'nope', relation: 'viewer', user: 'user:a' }), 400, 'type_not_found');
    await refusal(t, raw(server, 'POST', `${s}/list-objects`, { type: 'doc', relation: 'nope', user: 'user:a' }), 400, 'relation_not_found');
    await refusal(t, raw(server, 'POST', `${s}/streamed-list-objects`, { type: 'doc', relation: 'nope', user: 'user:a' }), 400, 'relation_not_found');
    await refusal(t, raw(server, 'POST', `${s}/list-users`, { object: { type: 'doc', id: '1' }, relation: 'viewer', user_filters: [] }), 400, 'validation_error');
    await refusal(t, raw(server, 'POST', `${s}/list-users`, { object: { type: 'doc', id: '1' }, relation: 'viewer', user_filters: [{ type: 'nope' }] }), 400, 'type_not_found');

    // Assertions.
    await refusal(t, raw(server, 'PUT', `${s}/assertions/${unknownModel}`, { assertions: [] }), 400, 'authorization_model_not_found');
    await refusal(t, raw(server, 'PUT', `${s}/assertions/${modelId}`, { assertions: [{ tuple_key: { user: 'user:a', relation: 'nope', object: 'doc:1' }, expectation: true }] }), 400, 'validation_error');
    const put = await raw(server, 'PUT', `${s}/assertions/${modelId}`, { assertions: [{ tuple_key: { user: 'user:a', relation: 'viewer', object: 'doc:1' }, expectation: true }] });
    t.is(put.status, 204);
    t.is(((await raw(server, 'GET', `${s}/assertions/${modelId}`)).body['assertions'] as unknown[]).length, 1);

    // Paths OpenFGA does not have; the AuthZEN endpoints under a store are served (test/transports/authzen.test.ts), so an empty body is malformed.
    await refusal(t, raw(server, 'POST', `${s}/nope`, {}), 404, 'undefined_endpoint');
    await refusal(t, raw(server, 'POST', `${s}/access/v1/evaluation`, {}), 400, 'invalid_argument');
  });
}

test('openfga api: not mounted without preshared keys, and the identity server keeps its default store', async (t) => {
  const off = await startTestServer();
  t.teardown(() => off.close());
  const res = await fetch(`${off.httpUrl}/stores`, { headers: { authorization: `Bearer ${KEY}` } });
  t.is(res.status, 404);
  t.is(((await res.json()) as { code: string }).code, 'not_found');

  const on = await startTestServer({ 'openfga-preshared-keys': KEY });
  t.teardown(() => on.close());
  const admin = { 'x-service-admin-secret': 'test-admin-secret' };
  t.is((await on.call('fga_write_model', { dsl: 'model\n  schema 1.1\ntype user\ntype doc\n  relations\n    define viewer: [user]\n' }, { protocol: 'rest', headers: admin })).status, 200);
  t.is((await on.call('fga_write_tuples', { tuples: [{ user: 'user:anne', relation: 'viewer', object: 'doc:1' }] }, { protocol: 'rest', headers: admin })).status, 200);
  // The admin operations write the default store, which the OpenFGA API serves under its id, through the same engine.
  const fga = client(on, DEFAULT_STORE_ID);
  t.deepEqual((await fga.read()).tuples.map((x) => x.key.user), ['user:anne']);
  await fga.write({ writes: [{ user: 'user:bob', relation: 'viewer', object: 'doc:1' }] });
  const tuples = await on.call('fga_read_tuples', { object: 'doc:1' }, { protocol: 'rest', headers: admin });
  t.deepEqual(((tuples.body?.['tuples'] as { user: string }[]) ?? []).map((x) => x.user), ['user:anne', 'user:bob']);
  // A store made over the OpenFGA API is not the identity server's.
  const other = await client(on).createStore({ name: 'tenant' });
  await client(on, other.id).writeAuthorizationModel(transformDslToModel('model\n  schema 1.1\ntype user\ntype doc\n  relations\n    define viewer: [user]\n') as never);
  await client(on, other.id).write({ writes: [{ user: 'user:carl', relation: 'viewer', object: 'doc:1' }] });
  const after = await on.call('fga_read_tuples', { object: 'doc:1' }, { protocol: 'rest', headers: admin });
  t.deepEqual(((after.body?.['tuples'] as { user: string }[]) ?? []).map((x) => x.user), ['user:anne', 'user:bob']);
});

test('openfga api: refused keys count against the per-IP rate limit, authenticated calls do not', async (t) => {
  const server = await startTestServer({ 'openfga-preshared-keys': KEY, 'rate-limit-rps': 1, 'rate-limit-burst': 2 });
  t.teardown(() => server.close());
  // Far more authenticated calls than the limit allows: none is refused.
  for (let i = 0; i < 10; i++) t.is((await raw(server, 'GET', '/stores')).status, 200);
  const statuses: number[] = [];
  for (let i = 0; i < 6; i++) statuses.push((await raw(server, 'GET', '/stores', undefined, 'guessed-key-000')).status);
  t.is(statuses[0], 401);
  t.true(statuses.includes(429), JSON.stringify(statuses));
  const limited = await raw(server, 'GET', '/stores', undefined, 'guessed-key-000');
  t.is(limited.status, 429);
  t.is(limited.body['code'], 'resource_exhausted');
  // The right key still gets through.
  t.is((await raw(server, 'GET', '/stores')).status, 200);
});

test('openfga api: a browser on another origin (the Playground) may PUT and DELETE: the preflight allows them and the SDK headers', async (t) => {
  const origin = 'http://playground.example:3000';
  const server = await startTestServer({ 'openfga-preshared-keys': KEY, 'allowed-origins': origin });
  t.teardown(() => server.close());
  const store = await client(server).createStore({ name: 'browser' });
  const headers = 'authorization,content-type,x-openfga-client-method,x-openfga-client-bulk-request-id';
  for (const [path, method] of [[`/stores/${store.id}`, 'DELETE'], [`/stores/${store.id}/assertions/01HZZZZZZZZZZZZZZZZZZZZZZZ`, 'PUT']] as const) {
    const preflight = await fetch(`${server.httpUrl}${path}`, {
      method: 'OPTIONS',
      headers: { origin, 'access-control-request-method': method, 'access-control-request-headers': headers },
    });
    t.is(preflight.status, 204);
    t.is(preflight.headers.get('access-control-allow-origin'), origin);
    t.true((preflight.headers.get('access-control-allow-methods') ?? '').split(',').map((m) => m.trim()).includes(method), method);
    const allowed = (preflight.headers.get('access-control-allow-headers') ?? '').split(',').map((h) => h.trim());
    for (const h of headers.split(',')) t.true(allowed.includes(h), h);
  }
  // The identity API's paths keep GET and POST only.
  const v1 = await fetch(`${server.httpUrl}/v1/login`, { method: 'OPTIONS', headers: { origin, 'access-control-request-method': 'DELETE' } });
  t.false((v1.headers.get('access-control-allow-methods') ?? '').includes('DELETE'));
  // The actual cross-origin DELETE answers with the CORS headers the browser needs.
  const del = await fetch(`${server.httpUrl}/stores/${store.id}`, { method: 'DELETE', headers: { origin, authorization: `Bearer ${KEY}` } });
  t.is(del.status, 204);
  t.is(del.headers.get('access-control-allow-origin'), origin);
});

test('openfga api: a write returns a consistency_token that Check and ListObjects accept (at least as fresh as the write)', async (t) => {
  const server = await startTestServer({ 'openfga-preshared-keys': KEY });
  t.teardown(() => server.close());
  const store = (await raw(server, 'POST', '/stores', { name: 'tokens' })).body['id'] as string;
  const model = transformDslToModel('model\n  schema 1.1\ntype user\ntype doc\n  relations\n    define viewer: [user]\n');
  t.is((await raw(server, 'POST', `/stores/${store}/authorization-models`, model)).status, 201);
  const tuple = { user: 'user:anne', relation: 'viewer', object: 'doc:1' };
  const w = await raw(server, 'POST', `/stores/${store}/write`, { writes: { tuple_keys: [tuple] } });
  t.is(w.status, 200);
  const token = w.body['consistency_token'];
  t.regex(String(token), /^\d+$/u);
  const c = await raw(server, 'POST', `/stores/${store}/check`, { tuple_key: tuple, consistency_token: token });
  t.is(c.body['allowed'], true);
  const d = await raw(server, 'POST', `/stores/${store}/write`, { deletes: { tuple_keys: [tuple] } });
  t.true(Number(d.body['consistency_token']) > Number(token), 'each write commits a newer revision');
  const l = await raw(server, 'POST', `/stores/${store}/list-objects`, { type: 'doc', relation: 'viewer', user: 'user:anne', consistency_token: d.body['consistency_token'] });
  t.deepEqual(l.body['objects'], []);
  await refusal(t, raw(server, 'POST', `/stores/${store}/check`, { tuple_key: tuple, consistency_token: 'yesterday' }), 400, 'validation_error');
});
