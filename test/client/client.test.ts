/**
 * The asynchronous clients against the real server over GraphQL, REST and
 * gRPC: the same scenario (meta, sign-up/login/profile/logout, a permission
 * check, admin calls on users, webhooks and FGA, errors) gives the same
 * results on every protocol; methods a protocol does not serve are refused
 * before any byte is sent.
 */
import test from 'ava';
import { LatchkeyAdminClient, LatchkeyClient, LatchkeyError, PROTOCOL_SUPPORT, type ClientProtocol } from '../../client/index.ts';
import { PROTOCOLS, TEST_ADMIN_SECRET, TEST_CLIENT_ID, startTestServer, type TestServer } from '../helpers/server.ts';
import { PROTOCOL_DEPENDENT, runScenario } from './scenario.ts';
import { closedPort, countingProxy } from './proxy.ts';

let server: TestServer;

test.before(async () => {
  server = await startTestServer({ 'webhook-allow-private-networks': true, 'enable-explain-permission': true });
});

test.after.always(async () => {
  await server?.close();
});

function userClient(protocol: ClientProtocol, url = server.httpUrl, grpc = server.grpcAddress): LatchkeyClient {
  return new LatchkeyClient({ client_id: TEST_CLIENT_ID, service_url: url, protocol, grpc_endpoint: grpc });
}

function adminClient(protocol: ClientProtocol, url = server.httpUrl, grpc = server.grpcAddress): LatchkeyAdminClient {
  return new LatchkeyAdminClient({ service_url: url, admin_secret: TEST_ADMIN_SECRET, protocol, grpc_endpoint: grpc });
}

async function scenarioOver(protocol: ClientProtocol): Promise<Record<string, unknown>> {
  const user = userClient(protocol);
  const bearer = userClient(protocol);
  const admin = adminClient(protocol);
  try {
    return await runScenario(user as never, bearer as never, admin as never, `c-${protocol}-${Date.now()}`);
  } finally {
    await Promise.all([user.close(), bearer.close(), admin.close()]);
  }
}

test.serial('the same scenario gives the same results over GraphQL, REST and gRPC', async (t) => {
  const results: Record<string, Record<string, unknown>> = {};
  for (const protocol of PROTOCOLS) results[protocol] = await scenarioOver(protocol);
  const rest = results.rest as Record<string, unknown>;

  // What the scenario shows, checked once (on REST); the other protocols must match it.
  t.like(rest.meta, { version: (rest.meta as { version: string }).version, client_id: TEST_CLIENT_ID });
  t.like(rest.profileBeforeLogin, { error: { name: 'LatchkeyError', code: 'unauthenticated' } });
  t.deepEqual(rest.cookiesAfterSignup, ['cookie_session', 'cookie_session_domain']);
  t.like(rest.profile, { email: '<tag>@example.com', given_name: 'Ada' });
  t.like(rest.profileAfterUpdate, { family_name: 'Lovelace' });
  t.like(rest.bearerProfile, { email: '<tag>@example.com' });
  t.like(rest.badLogin, { error: { code: 'unauthenticated' } });
  t.deepEqual(rest.check, {
    results: [
      { relation: 'viewer', object: 'doc:<tag>', allowed: true },
      { relation: 'owner', object: 'doc:<tag>-other', allowed: false },
      { relation: 'viewer', object: 'doc:<tag>-ctx', allowed: true },
    ],
  });
  t.like(rest.listPermissions, { objects: ['doc:<tag>'], truncated: false });
  t.like(rest.otherSubject, { error: { code: 'permission_denied' } });
  t.like(rest.explain, { relation: 'viewer', object: 'doc:<tag>', allowed: true, tree: { kind: 'relation', outcome: 'allowed', object: 'doc:<tag>', relation: 'viewer', user: 'user:<user-id>' } });
  t.like(rest.explainOther, { error: { code: 'permission_denied' } });
  t.like(rest.adminExplain, { allowed: false, tree: { kind: 'relation', outcome: 'denied', because: 'no_branch_allowed' } });
  t.like(rest.badModel, { error: { code: 'invalid_argument' } });
  t.like(rest.tooManyChecks, { error: { code: 'invalid_argument' } });
  t.like(rest.unknownField, { error: { code: 'invalid_argument' } });
  t.deepEqual(rest.readTuples, { tuples: [{ user: 'user:<user-id>', relation: 'owner', object: 'doc:<tag>', condition: null, expires_at: null }], continuation_token: '<string>' });
  t.deepEqual(rest.listUsers, { users: ['user:<user-id>'], continuation_token: '<string>', deadline_exceeded: false });
  t.deepEqual(rest.checkAfterDelete, { results: [{ relation: 'viewer', object: 'doc:<tag>', allowed: false }] });
  t.like(rest.adminUser, { email: '<tag>@example.com' });
  t.like(rest.updateUser, { given_name: 'Augusta' });
  t.like(rest.missingUser, { error: { code: 'not_found' } });
  t.true(rest.webhookListed);
  t.like(rest.getWebhook, { event_name: 'user.login', enabled: true, endpoint: 'http://127.0.0.1:9/<tag>' });
  t.like(rest.getWebhookAfterUpdate, { enabled: false });
  t.like(rest.getDeletedWebhook, { error: { code: 'not_found' } });
  t.deepEqual(rest.cookiesAfterLogout, []);
  t.like(rest.profileAfterLogout, { error: { code: 'unauthenticated' } });
  t.like(rest.profileAfterDelete, { error: { code: 'unauthenticated' } });

  // Identical across protocols, except the methods a protocol does not serve.
  const comparable = (r: Record<string, unknown>): Record<string, unknown> =>
    Object.fromEntries(Object.entries(r).filter(([k]) => !(PROTOCOL_DEPENDENT as readonly string[]).includes(k)));
  t.deepEqual(comparable(results.graphql as Record<string, unknown>), comparable(rest));
  t.deepEqual(comparable(results.grpc as Record<string, unknown>), comparable(rest));

  // The protocol-dependent ones follow the table.
  for (const protocol of PROTOCOLS) {
    const r = results[protocol] as Record<string, { error?: { code: string; reason: string } }>;
    for (const key of PROTOCOL_DEPENDENT) {
      const served = (PROTOCOL_SUPPORT[key] as readonly string[]).includes(protocol);
      if (served) t.not(r[key]?.error?.reason, 'protocol_not_supported', `${key} over ${protocol}`);
      else t.like(r[key], { error: { code: 'unimplemented', reason: 'protocol_not_supported' } }, `${key} over ${protocol}`);
    }
  }
  t.like(results.graphql?.adminSignup, { error: { code: 'failed_precondition', message: 'deprecated. please configure admin secret via cli args' } });
  t.deepEqual(results.rest?.fgaGetModel, results.grpc?.fgaGetModel);
  t.like(results.rest?.fgaGetModel, { dsl: (results.rest?.writeModel as { dsl: string }).dsl });
  t.deepEqual(results.rest?.adminMeta, results.grpc?.adminMeta);
});

const UNSUPPORTED: readonly [ClientProtocol, string][] = Object.entries(PROTOCOL_SUPPORT).flatMap(([method, protocols]) =>
  PROTOCOLS.filter((p) => !protocols.includes(p)).map((p): [ClientProtocol, string] => [p, method]),
);

test('the spec table: five admin methods on two protocols, three on GraphQL only, the rest on all three', (t) => {
  const two = ['adminLogout', 'adminSession', 'adminMeta', 'fgaGetModel', 'fgaReset'];
  const graphqlOnly = ['adminSignup', 'updateEnv', 'generateJwtKeys'];
  for (const m of two) t.is(PROTOCOL_SUPPORT[m]?.length, 2, m);
  for (const m of graphqlOnly) t.deepEqual(PROTOCOL_SUPPORT[m], ['graphql'], m);
  const admin = new LatchkeyAdminClient({ service_url: 'http://127.0.0.1:1', admin_secret: 's' }) as unknown as Record<string, unknown>;
  const user = new LatchkeyClient({ client_id: 'c', service_url: 'http://127.0.0.1:1' }) as unknown as Record<string, unknown>;
  for (const m of ['users', 'user', 'updateUser', 'deleteUser', 'fgaWriteModel', 'fgaExpand', 'fgaExplain', 'getWebhook', 'testEndpoint', 'auditLogs', ...two, ...graphqlOnly]) {
    t.is(typeof admin[m], 'function', m);
    t.is(user[m], undefined, m);
  }
  for (const m of ['meta', 'signup', 'login', 'profile', 'logout', 'session', 'checkPermissions', 'explainPermission', 'listPermissions', 'validateJwtToken']) {
    t.is(typeof user[m], 'function', m);
    t.deepEqual(PROTOCOL_SUPPORT[m], ['graphql', 'rest', 'grpc'], m);
  }
  t.true(UNSUPPORTED.length >= two.length + graphqlOnly.length * 2);
});

test.serial('a method its protocol does not serve is refused before any request', async (t) => {
  const proxy = await countingProxy(new URL(server.httpUrl).port, server.grpcAddress.split(':').pop() as string);
  try {
    for (const [protocol, method] of UNSUPPORTED) {
      const admin = adminClient(protocol, proxy.httpUrl, proxy.grpcAddress) as unknown as Record<string, (i?: unknown) => Promise<unknown>>;
      const err = await t.throwsAsync(() => (admin[method] as (i?: unknown) => Promise<unknown>).call(admin, {}), { instanceOf: LatchkeyError });
      t.is(err?.code, 'unimplemented', `${method} over ${protocol}`);
      t.is(err?.reason, 'protocol_not_supported');
      t.regex(err?.message ?? '', new RegExp(`^${method} is not available over ${protocol}`));
      await (admin as unknown as LatchkeyAdminClient).close();
    }
    t.is(proxy.connections(), 0, 'no connection was opened');
    // The proxy does carry calls a protocol serves.
    for (const protocol of PROTOCOLS) {
      const admin = adminClient(protocol, proxy.httpUrl, proxy.grpcAddress);
      t.like(await admin.users(), { pagination: { page: 1 } });
      await admin.close();
    }
    t.true(proxy.connections() >= 3);
  } finally {
    await proxy.close();
  }
});

test('errors carry the same code, message and reason on every protocol', async (t) => {
  const seen: unknown[] = [];
  for (const protocol of PROTOCOLS) {
    const wrong = new LatchkeyAdminClient({ service_url: server.httpUrl, admin_secret: 'not-the-secret', protocol, grpc_endpoint: server.grpcAddress });
    const denied = await t.throwsAsync(() => wrong.users(), { instanceOf: LatchkeyError });
    const user = userClient(protocol);
    const email = `errors-${protocol}-${Date.now()}@example.com`;
    const anonymous = userClient(protocol);
    const unauth = await t.throwsAsync(() => anonymous.checkPermissions({ checks: [{ relation: 'viewer', object: 'doc:1' }] }), { instanceOf: LatchkeyError });
    await user.signup({ email, password: 'Correct-Horse-9', confirm_password: 'Correct-Horse-9' });
    const invalid = await t.throwsAsync(() => user.checkPermissions({ checks: [{ relation: '', object: 'doc:1' }] }), { instanceOf: LatchkeyError });
    seen.push([denied, invalid, unauth].map((e) => ({ code: e?.code, message: e?.message, reason: e?.reason })));
    await Promise.all([wrong.close(), user.close(), anonymous.close()]);
  }
  t.like(seen[0], [{ code: 'unauthenticated' }, { code: 'invalid_argument', reason: 'invalid_field' }, { code: 'unauthenticated' }]);
  t.deepEqual(seen[1], seen[0]);
  t.deepEqual(seen[2], seen[0]);
});

test('an unreachable service is unavailable on every protocol', async (t) => {
  const port = await closedPort();
  const url = `http://127.0.0.1:${port}`;
  const grpc = `127.0.0.1:${port}`;
  for (const protocol of PROTOCOLS) {
    const c = userClient(protocol, url, grpc);
    const err = await t.throwsAsync(() => c.meta(), { instanceOf: LatchkeyError });
    t.is(err?.code, 'unavailable', protocol);
    await c.close();
  }
});

test('a closed client refuses calls', async (t) => {
  const c = userClient('rest');
  await c.close();
  const err = await t.throwsAsync(() => c.meta(), { instanceOf: LatchkeyError });
  t.is(err?.code, 'failed_precondition');
  t.is(err?.reason, 'client_closed');
});
