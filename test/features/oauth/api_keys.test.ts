/**
 * API keys on every main SQL database: created for oneself and, by the
 * super-admin, for any user or service account; shown once, stored as a
 * digest under a public prefix; used as `Authorization: Bearer <key>` and as
 * `x-api-key: <key>` on REST, GraphQL and gRPC; last use recorded; revoked
 * and refused on the next call; expired keys refused; a deleted service
 * account's keys refused; a key's scopes (operation names, `read`, `*`)
 * restrict what it may call, and a key made with a key reaches no further.
 * On DynamoDB the registry is not available and says so.
 */
import test from 'ava';
import { sqlBackends } from '../../helpers/databases.ts';
import { TEST_ADMIN_SECRET, startTestServer, type TestServer } from '../../helpers/server.ts';

const ADMIN = { 'x-service-admin-secret': TEST_ADMIN_SECRET };
const PASSWORD = 'Correct-Horse-7-Battery';
const PROTOCOLS = ['rest', 'graphql', 'grpc'] as const;
const DSL = 'model\n  schema 1.1\ntype user\ntype service_account\ntype doc\n  relations\n    define viewer: [user, service_account]\n';

async function ok(server: TestServer, op: string, input: Record<string, unknown>, protocol: (typeof PROTOCOLS)[number], headers: Record<string, string>): Promise<Record<string, unknown>> {
  const r = await server.call(op, input, { protocol, headers });
  if (r.error !== undefined || r.body === undefined) throw new Error(`${op} over ${protocol}: ${JSON.stringify(r.error)}`);
  return r.body;
}

/** A clock the test moves. */
function movableClock(): { now(): Date; advance(seconds: number): void } {
  let offset = 0;
  return { now: () => new Date(Date.now() + offset), advance: (s) => void (offset += s * 1000) };
}

for (const backend of sqlBackends()) {
  test.serial(`${backend}: API keys created, used as Bearer and x-api-key on REST, GraphQL and gRPC, listed with their last use, revoked and refused on the next call`, async (t) => {
    const clock = movableClock();
    const server = await startTestServer({ 'enable-email-verification': false }, { backend, clock });
    t.teardown(() => server.close());
    const email = `keys-${backend}@example.com`;
    const login = await ok(server, 'signup', { email, password: PASSWORD }, 'rest', {});
    const bearer = { authorization: `Bearer ${login['access_token'] as string}` };

    const created: Record<string, string> = {};
    for (const protocol of PROTOCOLS) {
      const out = await ok(server, 'create_api_key', { name: `cli ${protocol}`, scopes: ['read'] }, protocol, bearer);
      const key = out['api_key'] as string;
      t.regex(key, /^lk_[A-Za-z0-9]{16}_[A-Za-z0-9_-]{43}$/, protocol);
      const meta = out['key'] as Record<string, unknown>;
      t.true(key.startsWith(meta['prefix'] as string), 'the public prefix names the key');
      t.is(meta['principal'], `user:${(login['user'] as { id: string }).id}`);
      created[protocol] = key;
    }
    // Each key works on each protocol, in both headers.
    for (const protocol of PROTOCOLS) {
      for (const key of Object.values(created)) {
        const viaBearer = await ok(server, 'profile', {}, protocol, { authorization: `Bearer ${key}` });
        t.is(viaBearer['email'], email);
        const viaHeader = await ok(server, 'profile', {}, protocol, { 'x-api-key': key });
        t.is(viaHeader['email'], email);
      }
    }
    const listed = (await ok(server, 'api_keys', {}, 'grpc', { 'x-api-key': created['rest'] as string }))['api_keys'] as Array<Record<string, unknown>>;
    t.is(listed.length, 3);
    t.true(listed.every((k) => typeof k['last_used_at'] === 'number'), 'last use recorded');
    t.false(JSON.stringify(listed).includes((created['rest'] as string).slice(20)), 'the secret part is never listed');

    // A wrong secret under a real prefix, and a made-up key, are refused with the one message.
    const real = created['rest'] as string;
    const wrong = `${real.slice(0, 20)}${'A'.repeat(43)}`;
    for (const protocol of PROTOCOLS) {
      const r = await server.call('profile', {}, { protocol, headers: { 'x-api-key': wrong } });
      t.is(r.error?.code, 'unauthenticated', protocol);
      t.is(r.error?.message, 'unauthorized');
    }

    // Revoked over GraphQL: refused on the next call, on every protocol, in both headers.
    const id = (listed.find((k) => real.startsWith(k['prefix'] as string)) as Record<string, unknown>)['id'] as string;
    await ok(server, 'revoke_api_key', { id }, 'graphql', bearer);
    for (const protocol of PROTOCOLS) {
      t.is((await server.call('profile', {}, { protocol, headers: { 'x-api-key': real } })).error?.code, 'unauthenticated', protocol);
      t.is((await server.call('profile', {}, { protocol, headers: { authorization: `Bearer ${real}` } })).error?.code, 'unauthenticated', protocol);
    }
    t.is((await server.call('revoke_api_key', { id }, { protocol: 'rest', headers: bearer })).error?.reason, 'api_key_not_found', 'already revoked');
    t.truthy(await ok(server, 'profile', {}, 'rest', { 'x-api-key': created['grpc'] as string }), 'the other keys still work');

    // Someone else's key cannot be revoked by id.
    const other = await ok(server, 'signup', { email: `other-${backend}@example.com`, password: PASSWORD }, 'rest', {});
    const otherKey = await ok(server, 'create_api_key', { name: 'x' }, 'rest', { authorization: `Bearer ${other['access_token'] as string}` });
    const stolen = await server.call('revoke_api_key', { id: (otherKey['key'] as { id: string }).id }, { protocol: 'rest', headers: bearer });
    t.is(stolen.error?.reason, 'api_key_not_found');

    // Expiry: a key past its expires_at is refused.
    const userId = (login['user'] as { id: string }).id;
    const soon = await ok(server, 'admin_create_api_key', { principal: `user:${userId}`, name: 'short', expires_at: Math.floor(clock.now().getTime() / 1000) + 60 }, 'rest', ADMIN);
    t.truthy(await ok(server, 'profile', {}, 'rest', { 'x-api-key': soon['api_key'] as string }));
    clock.advance(120);
    t.is((await server.call('profile', {}, { protocol: 'rest', headers: { 'x-api-key': soon['api_key'] as string } })).error?.code, 'unauthenticated', 'expired');
    const past = await server.call('create_api_key', { name: 'past', expires_at: 1 }, { protocol: 'rest', headers: bearer });
    t.is(past.error?.code, 'invalid_argument');
    t.is((await server.call('create_api_key', { name: 'admin' }, { protocol: 'rest', headers: ADMIN })).error?.reason, 'no_own_api_keys');
  });

  test.serial(`${backend}: a service account's API key checks permissions as the service account; deleting the account refuses its keys; the admin lists and revokes any key`, async (t) => {
    const server = await startTestServer({}, { backend });
    t.teardown(() => server.close());
    await ok(server, 'add_client', { client_id: 'report-bot', kind: 'service_account' }, 'rest', ADMIN);
    await ok(server, 'fga_write_model', { dsl: DSL }, 'rest', ADMIN);
    await ok(server, 'fga_write_tuples', { tuples: [{ user: 'service_account:report-bot', relation: 'viewer', object: 'doc:q3' }] }, 'rest', ADMIN);
    const out = await ok(server, 'admin_create_api_key', { principal: 'service_account:report-bot', name: 'ci', organization_id: 'org-1' }, 'graphql', ADMIN);
    const key = out['api_key'] as string;
    for (const protocol of PROTOCOLS) {
      const check = await ok(server, 'check_permissions', { checks: [{ relation: 'viewer', object: 'doc:q3' }, { relation: 'viewer', object: 'doc:q4' }] }, protocol, { 'x-api-key': key });
      t.deepEqual((check['results'] as Array<{ allowed: boolean }>).map((r) => r.allowed), [true, false], protocol);
    }
    const own = await ok(server, 'api_keys', {}, 'rest', { authorization: `Bearer ${key}` });
    t.is((own['api_keys'] as unknown[]).length, 1, 'a service account lists its own keys');
    const second = await ok(server, 'create_api_key', { name: 'rotated' }, 'grpc', { 'x-api-key': key });
    const listed = await ok(server, 'admin_api_keys', { principal: 'service_account:report-bot' }, 'grpc', ADMIN);
    t.is((listed['api_keys'] as unknown[]).length, 2);
    t.is((await server.call('admin_api_keys', { principal: 'service_account:nobody' }, { protocol: 'rest', headers: ADMIN })).error?.reason, 'principal_not_found');
    t.is((await server.call('admin_api_keys', { principal: 'group:x' }, { protocol: 'rest', headers: ADMIN })).error?.reason, 'invalid_principal');
    await ok(server, 'admin_revoke_api_key', { id: (second['key'] as { id: string }).id }, 'rest', ADMIN);
    t.is((await server.call('check_permissions', { checks: [{ relation: 'viewer', object: 'doc:q3' }] }, { protocol: 'rest', headers: { 'x-api-key': second['api_key'] as string } })).error?.code, 'unauthenticated');
    await ok(server, 'delete_client', { client_id: 'report-bot' }, 'rest', ADMIN);
    for (const protocol of PROTOCOLS) {
      const r = await server.call('check_permissions', { checks: [{ relation: 'viewer', object: 'doc:q3' }] }, { protocol, headers: { 'x-api-key': key } });
      t.is(r.error?.code, 'unauthenticated', `${protocol}: a deleted service account's key is refused`);
    }
  });
}

test('scopes: a key calls only the operations its scopes name (an operation, read for every query, * for all), refused with permission_denied on every protocol; a key made with a key reaches no further', async (t) => {
  const server = await startTestServer({ 'enable-email-verification': false });
  t.teardown(() => server.close());
  await ok(server, 'fga_write_model', { dsl: DSL }, 'rest', ADMIN);
  const login = await ok(server, 'signup', { email: 'scoped@example.com', password: PASSWORD }, 'rest', {});
  const bearer = { authorization: `Bearer ${login['access_token'] as string}` };
  const keyWith = async (scopes: string[] | undefined, headers: Record<string, string> = bearer): Promise<string> =>
    (await ok(server, 'create_api_key', { name: `k-${(scopes ?? []).join('-')}`, ...(scopes === undefined ? {} : { scopes }) }, 'rest', headers))['api_key'] as string;
  const refused = async (op: string, input: Record<string, unknown>, key: string, needs: string): Promise<void> => {
    for (const protocol of PROTOCOLS) {
      const r = await server.call(op, input, { protocol, headers: { 'x-api-key': key } });
      t.is(r.error?.code, 'permission_denied', `${op} over ${protocol}`);
      t.is(r.error?.reason, 'insufficient_scope', `${op} over ${protocol}`);
      t.true((r.error?.message ?? '').includes(`do not allow ${op}; it needs the scope ${needs}`), `${op} over ${protocol}: ${r.error?.message}`);
    }
  };
  const checks = { checks: [{ relation: 'viewer', object: 'doc:1' }] };

  // One operation named: that operation, nothing else.
  const checkOnly = await keyWith(['check_permissions']);
  for (const protocol of PROTOCOLS) t.truthy((await ok(server, 'check_permissions', checks, protocol, { 'x-api-key': checkOnly }))['results'], protocol);
  await refused('profile', {}, checkOnly, 'profile, read or *');
  await refused('list_permissions', { relation: 'viewer', object_type: 'doc' }, checkOnly, 'list_permissions, read or *');
  await refused('update_profile', { given_name: 'Eve' }, checkOnly, 'update_profile or *');

  // read: every query, no mutation.
  const reader = await keyWith(['read']);
  for (const protocol of PROTOCOLS) {
    t.is((await ok(server, 'profile', {}, protocol, { authorization: `Bearer ${reader}` }))['email'], 'scoped@example.com', protocol);
    t.truthy((await ok(server, 'api_keys', {}, protocol, { 'x-api-key': reader }))['api_keys'], protocol);
  }
  await refused('update_profile', { given_name: 'Eve' }, reader, 'update_profile or *');
  await refused('revoke_api_key', { id: 'x' }, reader, 'revoke_api_key or *');

  // * and no scopes: every operation the user may call.
  for (const key of [await keyWith(['*']), await keyWith(undefined)]) {
    for (const protocol of PROTOCOLS) {
      await ok(server, 'update_profile', { given_name: `Ada-${protocol}` }, protocol, { 'x-api-key': key });
      t.is((await ok(server, 'profile', {}, protocol, { 'x-api-key': key }))['given_name'], `Ada-${protocol}`, protocol);
    }
  }

  // The vocabulary is checked when the key is made.
  for (const protocol of PROTOCOLS) {
    const bad = await server.call('create_api_key', { name: 'bad', scopes: ['invoices:read'] }, { protocol, headers: bearer });
    t.is(bad.error?.code, 'invalid_argument', protocol);
    t.is(bad.error?.reason, 'invalid_api_key', protocol);
  }
  t.is((await server.call('admin_create_api_key', { principal: `user:${(login['user'] as { id: string }).id}`, name: 'bad', scopes: ['everything'] }, { protocol: 'graphql', headers: ADMIN })).error?.reason, 'invalid_api_key');

  // A key made with a key: within the calling key's scopes; none asked means the caller's.
  const maker = await keyWith(['create_api_key', 'profile']);
  const inherited = await ok(server, 'create_api_key', { name: 'child' }, 'grpc', { 'x-api-key': maker });
  t.deepEqual((inherited['key'] as { scopes: string[] }).scopes, ['create_api_key', 'profile']);
  t.deepEqual(((await ok(server, 'create_api_key', { name: 'narrow', scopes: ['profile'] }, 'graphql', { 'x-api-key': maker }))['key'] as { scopes: string[] }).scopes, ['profile']);
  for (const wider of [['*'], ['read'], ['update_profile']]) {
    const r = await server.call('create_api_key', { name: 'wide', scopes: wider }, { protocol: 'rest', headers: { 'x-api-key': maker } });
    t.is(r.error?.code, 'permission_denied', wider.join());
    t.is(r.error?.reason, 'insufficient_scope', wider.join());
  }

  // A service account's scoped key: its checks, nothing more.
  await ok(server, 'add_client', { client_id: 'scoped-bot', kind: 'service_account' }, 'rest', ADMIN);
  await ok(server, 'fga_write_tuples', { tuples: [{ user: 'service_account:scoped-bot', relation: 'viewer', object: 'doc:1' }] }, 'rest', ADMIN);
  const botKey = (await ok(server, 'admin_create_api_key', { principal: 'service_account:scoped-bot', name: 'ci', scopes: ['check_permissions'] }, 'rest', ADMIN))['api_key'] as string;
  for (const protocol of PROTOCOLS) {
    const r = await ok(server, 'check_permissions', checks, protocol, { 'x-api-key': botKey });
    t.deepEqual((r['results'] as Array<{ allowed: boolean }>).map((x) => x.allowed), [true], protocol);
  }
  await refused('api_keys', {}, botKey, 'api_keys, read or *');
});

test('dynamodb: the registry and API keys answer failed_precondition (they need a SQL main database); the --client-id client still works', async (t) => {
  const server = await startTestServer({}, { backend: 'dynamodb' });
  t.teardown(() => server.close());
  const r = await server.call('add_client', { client_id: 'bot-1', kind: 'service_account' }, { protocol: 'rest', headers: ADMIN });
  t.is(r.error?.reason, 'client_registry_unavailable');
  const listed = await ok(server, 'clients', {}, 'rest', ADMIN);
  t.is((listed['clients'] as unknown[]).length, 1);
});
