/**
 * Every admin operation on the real server, over every protocol that serves
 * it (GraphQL, REST, gRPC with real clients), and the refusals: missing or
 * wrong credentials, and protocols that do not serve an operation, each
 * refused before anything runs.
 */
import test from 'ava';
import * as grpc from '@grpc/grpc-js';
import { PROTOCOLS, TEST_ADMIN_SECRET, TEST_CLIENT_SECRET, TEST_JWT_SECRET, startTestServer, type TestServer } from '../helpers/server.ts';
import { OPERATIONS, type AnyOperation, type Protocol } from '../../cmd/index.ts';
import { AdminService, verifyWebhook } from '../../admin/index.ts';
import { Engine, MemoryStore } from '../../engine/index.ts';
import { startReceiver } from './receiver.ts';
import { startSmtp } from './smtp.ts';

const ADMIN = { 'x-service-admin-secret': TEST_ADMIN_SECRET };
const adminOps = OPERATIONS.filter((op) => op.admin && op.auth === 'super_admin');
const MODEL = 'model\n  schema 1.1\ntype user\ntype doc\n  relations\n    define viewer: [user]\n';

function adminService(server: TestServer): AdminService {
  return server.server.services.admin as AdminService;
}

async function auditCount(server: TestServer, action: string): Promise<number> {
  return (await adminService(server).audit.list({ action })).pagination.total;
}

test('the admin rows follow the spec client table: five methods on REST and gRPC only, _env on GraphQL only, the rest on all three', (t) => {
  const byName = new Map<string, AnyOperation>(OPERATIONS.map((op) => [op.name, op]));
  const all = ['admin_login', 'users', 'user', 'update_user', 'delete_user', 'verification_requests', 'revoke_access', 'enable_access', 'admin_list_sessions', 'admin_revoke_session', 'invite_members', 'add_webhook', 'update_webhook', 'delete_webhook', 'get_webhook', 'webhooks', 'webhook_logs', 'test_endpoint', 'add_email_template', 'update_email_template', 'delete_email_template', 'email_templates', 'audit_logs', 'fga_write_model', 'fga_write_tuples', 'fga_delete_tuples', 'fga_read_tuples', 'fga_list_users', 'fga_expand', 'fga_explain'];
  for (const name of all) t.deepEqual([...(byName.get(name)?.protocols ?? [])].sort(), ['graphql', 'grpc', 'rest'], name);
  for (const name of ['admin_logout', 'admin_session', 'admin_meta', 'fga_get_model', 'fga_reset']) t.deepEqual([...(byName.get(name)?.protocols ?? [])].sort(), ['grpc', 'rest'], name);
  t.deepEqual(byName.get('env')?.protocols, ['graphql']);
  // The change feed is streamed: gRPC server streaming and Server-Sent Events, nothing GraphQL could carry.
  t.deepEqual([...(byName.get('watch_fga')?.protocols ?? [])].sort(), ['grpc', 'rest']);
  t.true(byName.get('watch_fga')?.stream);
  for (const name of [...all, 'watch_fga', 'admin_logout', 'admin_session', 'admin_meta', 'fga_get_model', 'fga_reset', 'env']) t.true(byName.get(name)?.admin, name);
});

test('every admin operation refuses missing and wrong credentials on every protocol, before doing anything', async (t) => {
  const server = await startTestServer({ 'webhook-allow-private-networks': true });
  try {
    const admin = adminService(server);
    const hook = await admin.webhooks.add({ event_name: 'user.login', endpoint: 'http://127.0.0.1:9/x' });
    const before = (await admin.audit.list()).pagination.total;
    const tuple = { user: 'user:a', relation: 'viewer', object: 'doc:1' };
    const inputs: Record<string, Record<string, unknown>> = {
      user: { id: 'x' },
      update_user: { id: 'x', given_name: 'y' },
      delete_user: { email: 'a@example.com' },
      revoke_access: { user_id: 'x' },
      enable_access: { user_id: 'x' },
      admin_list_sessions: { user_id: 'x' },
      admin_revoke_session: { id: 'x' },
      invite_members: { emails: ['a@example.com'] },
      add_webhook: { event_name: 'user.login', endpoint: 'http://127.0.0.1:9/y' },
      update_webhook: { id: hook.id, enabled: false },
      delete_webhook: { id: hook.id },
      get_webhook: { id: hook.id },
      test_endpoint: { event_name: 'user.login', endpoint: 'http://127.0.0.1:9/y' },
      add_email_template: { event_name: 'verify_otp', subject: 's', template: '{{ otp }}' },
      update_email_template: { id: 'x', subject: 's' },
      delete_email_template: { id: 'x' },
      fga_write_model: { dsl: 'model\n  schema 1.1\ntype user\n' },
      fga_validate_model: { dsl: 'model\n  schema 1.1\ntype user\n' },
      fga_write_tuples: { tuples: [tuple] },
      fga_delete_tuples: { tuples: [tuple] },
      fga_list_users: { object: 'doc:1', relation: 'viewer', user_type: 'user' },
      fga_expand: { object: 'doc:1', relation: 'viewer' },
      fga_explain: { user: 'user:a', object: 'doc:1', relation: 'viewer' },
      watch_fga: { start_token: '0' },
      admin_create_organization: { name: 'Acme' },
      admin_organization: { organization_id: 'x' },
      admin_update_organization: { organization_id: 'x', name: 'y' },
      admin_delete_organization: { organization_id: 'x' },
      admin_organization_members: { organization_id: 'x' },
      admin_add_organization_member: { organization_id: 'x', user_id: 'x' },
      admin_update_organization_member: { organization_id: 'x', user_id: 'x', role: 'admin' },
      admin_remove_organization_member: { organization_id: 'x', user_id: 'x' },
      admin_create_team: { organization_id: 'x', name: 'y' },
      admin_teams: { organization_id: 'x' },
      admin_delete_team: { team_id: 'x' },
      admin_add_team_member: { team_id: 'x', user_id: 'x' },
      admin_remove_team_member: { team_id: 'x', user_id: 'x' },
      admin_invite_organization_members: { organization_id: 'x', emails: ['a@example.com'] },
      admin_organization_invitations: { organization_id: 'x' },
      add_client: { client_id: 'bot-x', kind: 'service_account' },
      admin_revoke_organization_invitation: { invitation_id: 'x' },
      admin_add_organization_domain: { organization_id: 'x', domain: 'example.com' },
      admin_verify_organization_domain: { organization_id: 'x', domain: 'example.com' },
      user_passkeys: { user_id: 'x' },
      revoke_user_passkey: { user_id: 'x', id: 'y' },
      client: { client_id: 'x' },
      update_client: { client_id: 'x' },
      delete_client: { client_id: 'x' },
      rotate_client_secret: { client_id: 'x' },
      admin_create_api_key: { principal: 'user:x', name: 'k' },
      admin_api_keys: { principal: 'user:x' },
      admin_revoke_api_key: { id: 'x' },
      admin_create_scim_token: { organization_id: 'x' },
      admin_scim_tokens: { organization_id: 'x' },
      admin_revoke_scim_token: { token_id: 'x' },
      admin_add_sso_connection: { organization_id: 'x', type: 'saml' },
      admin_sso_connections: { organization_id: 'x' },
      admin_sso_connection: { connection_id: 'x' },
      admin_update_sso_connection: { connection_id: 'x' },
      admin_delete_sso_connection: { connection_id: 'x' },
    };
    for (const op of adminOps) {
      for (const protocol of op.protocols) {
        // A wrong secret once per protocol (more would trip the per-IP limit), none and a bogus session cookie for all.
        const variants: Array<{ headers?: Record<string, string>; cookies?: Record<string, string> }> = [{}, { cookies: { 'service-admin': 'bogus' } }];
        if (op.name === 'webhooks' || op.name === 'admin_meta') variants.push({ headers: { 'x-service-admin-secret': 'wrong' } });
        for (const v of variants) {
          const r = await server.call(op.name, inputs[op.name] ?? {}, { protocol, ...v });
          t.is(r.error?.code, 'unauthenticated', `${op.name} ${protocol}`);
          t.is(r.error?.message, 'unauthorized', `${op.name} ${protocol}`);
        }
      }
    }
    // Nothing ran: the webhook is still there and no operation was audited.
    t.is((await admin.webhooks.get(hook.id)).id, hook.id);
    t.is((await admin.audit.list()).pagination.total, before);
  } finally {
    await server.close();
  }
});

test('a protocol that does not serve an operation refuses it before anything runs', async (t) => {
  const server = await startTestServer();
  try {
    const admin = adminService(server);
    // GraphQL: the five REST/gRPC-only methods are not in the schema.
    for (const field of ['_admin_logout', '_admin_session', '_admin_meta', '_fga_get_model', '_fga_reset']) {
      const res = await fetch(`${server.httpUrl}/graphql`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', origin: server.httpUrl, ...ADMIN },
        body: JSON.stringify({ query: `mutation { ${field} { __typename } }` }),
      });
      const body = (await res.json()) as { errors?: unknown[]; data?: unknown };
      t.true(Array.isArray(body.errors) && body.errors.length > 0, field);
      t.falsy(body.data, field);
    }
    // REST and gRPC: `_env` is GraphQL-only.
    const rest = await fetch(`${server.httpUrl}/v1/admin/env`, { method: 'POST', headers: { 'content-type': 'application/json', origin: server.httpUrl, ...ADMIN }, body: '{}' });
    t.is(rest.status, 404);
    const client = new grpc.Client(server.grpcAddress, grpc.credentials.createInsecure());
    try {
      const code = await new Promise<number>((resolve) => {
        const md = new grpc.Metadata();
        md.add('x-service-admin-secret', TEST_ADMIN_SECRET);
        client.makeUnaryRequest('/latchkey.v1.LatchkeyAdmin/Env', (b: Buffer) => b, (b: Buffer) => b, Buffer.alloc(0), md, (err) => resolve(err?.code ?? 0));
      });
      t.is(code, grpc.status.UNIMPLEMENTED);
    } finally {
      client.close();
    }
    t.is((await admin.audit.list()).pagination.total, 0);
  } finally {
    await server.close();
  }
});

for (const protocol of PROTOCOLS) {
  test(`webhooks, deliveries, email templates and audit logs over ${protocol}`, async (t) => {
    const server = await startTestServer({ 'webhook-allow-private-networks': true });
    const receiver = await startReceiver();
    const call = (op: string, input: Record<string, unknown> = {}) => server.call(op, input, { protocol, headers: ADMIN });
    try {
      t.deepEqual((await call('add_webhook', { event_name: 'user.access_revoked', endpoint: receiver.url, headers: { 'x-app': 'a' } })).body, { message: 'webhook added successfully' });
      const listed = (await call('webhooks', { pagination: { page: 1, limit: 5 } })).body as { webhooks: Array<{ id: string; headers: Record<string, string>; enabled: boolean }>; pagination: unknown };
      t.is(listed.webhooks.length, 1);
      t.deepEqual(listed.pagination, { page: 1, limit: 5, offset: 0, total: 1 });
      const id = listed.webhooks[0]!.id;
      t.deepEqual(listed.webhooks[0]!.headers, { 'x-app': 'a' });
      t.like((await call('get_webhook', { id })).body, { id, event_name: 'user.access_revoked', enabled: true, endpoint: receiver.url });
      t.is((await call('update_webhook', { id, enabled: false })).body?.['message'], 'webhook updated successfully');
      t.like((await call('get_webhook', { id })).body, { enabled: false });
      await call('update_webhook', { id, enabled: true });
      const tested = await call('test_endpoint', { event_name: 'user.login', endpoint: receiver.url });
      t.deepEqual(tested.body, { http_status: 200, response: 'ok' });
      verifyWebhook(TEST_CLIENT_SECRET, receiver.received[0]!.headers as Record<string, string>, receiver.received[0]!.body);
      // A delivery through the outbox shows up in webhook_logs.
      await adminService(server).webhooks.emit('user.access_revoked', { user: { id: 'u1' } });
      await adminService(server).webhooks.flush();
      const logs = (await call('webhook_logs', { webhook_id: id })).body as { webhook_logs: Array<{ outcome: string; http_status: number }>; pagination: { total: number } };
      t.is(logs.pagination.total, 1);
      t.like(logs.webhook_logs[0], { outcome: 'delivered', http_status: 200 });
      const bad = await call('add_webhook', { event_name: 'user.nope', endpoint: receiver.url });
      t.is(bad.error?.code, 'invalid_argument');
      t.is(bad.error?.reason, 'invalid_event_name');
      const tooBig = await call('webhooks', { pagination: { limit: 1000 } });
      t.is(tooBig.error?.code, 'invalid_argument');
      t.is((await call('delete_webhook', { id })).body?.['message'], 'webhook deleted successfully');
      t.is((await call('get_webhook', { id })).error?.code, 'not_found');

      t.is((await call('add_email_template', { event_name: 'forgot_password', subject: 'Reset', template: '<a href="{{ verification_url }}">x</a>' })).body?.['message'], 'email template added successfully');
      const broken = await call('add_email_template', { event_name: 'verify_otp', subject: 'x', template: '{{ nope }}' });
      t.is(broken.error?.reason, 'invalid_template');
      const templates = (await call('email_templates')).body as { email_templates: Array<{ id: string; event_name: string }> };
      t.is(templates.email_templates.length, 1);
      const tid = templates.email_templates[0]!.id;
      t.is((await call('update_email_template', { id: tid, subject: 'Reset now' })).body?.['message'], 'email template updated successfully');
      t.is((await call('delete_email_template', { id: tid })).body?.['message'], 'email template deleted successfully');

      const audit = (await call('audit_logs', { action: 'admin.webhook_created' })).body as { audit_logs: Array<Record<string, unknown>>; pagination: { total: number } };
      t.is(audit.pagination.total, 2);
      const row = audit.audit_logs.find((r) => !String(r['metadata']).includes('outcome'))!;
      t.like(row, { actor_type: 'admin', ip_address: '127.0.0.1', resource_type: 'webhook' });
      t.is(JSON.parse(String(row['metadata'])).protocol, protocol);
      const byResource = (await call('audit_logs', { resource: `webhook:${id}` })).body as { pagination: { total: number } };
      t.true(byResource.pagination.total >= 4);
      t.false(JSON.stringify((await call('audit_logs', { pagination: { limit: 100 } })).body).includes(TEST_ADMIN_SECRET));
    } finally {
      await receiver.close();
      await server.close();
    }
  });
}

test('D1 over the wire: private endpoints are refused at registration and by test_endpoint on every protocol', async (t) => {
  const server = await startTestServer();
  const listener = await startReceiver();
  try {
    for (const protocol of PROTOCOLS) {
      for (const endpoint of [listener.url, `http://[::1]:${listener.port}/`, 'http://169.254.169.254/', 'file:///etc/passwd']) {
        const r = await server.call('add_webhook', { event_name: 'user.login', endpoint }, { protocol, headers: ADMIN });
        t.is(r.error?.code, 'invalid_argument', `${protocol} ${endpoint}`);
        t.is(r.error?.reason, 'invalid_endpoint', `${protocol} ${endpoint}`);
        const e = await server.call('test_endpoint', { event_name: 'user.login', endpoint }, { protocol, headers: ADMIN });
        t.is(e.error?.reason, 'invalid_endpoint');
      }
    }
    t.is(listener.received.length, 0);
  } finally {
    await listener.close();
    await server.close();
  }
});

test('admin login sets a Strict HttpOnly cookie; the session works, slides and ends; header auth can be disabled', async (t) => {
  const server = await startTestServer({ 'disable-admin-header-auth': true, 'admin-cookie-secure': false });
  try {
    for (const protocol of PROTOCOLS) {
      const login = await server.call('admin_login', { admin_secret: TEST_ADMIN_SECRET }, { protocol });
      t.is(login.body?.['message'], 'admin logged in successfully', protocol);
      const cookie = login.setCookies.find((c) => c.startsWith('service-admin='))!;
      t.regex(cookie, /HttpOnly/);
      t.regex(cookie, /SameSite=Strict/);
      t.notRegex(cookie, /Secure/);
      const value = cookie.slice('service-admin='.length, cookie.indexOf(';'));
      const cookies = { 'service-admin': value };
      // Header auth is off: the right secret in the header is not enough.
      t.is((await server.call('webhooks', {}, { protocol, headers: ADMIN })).error?.code, 'unauthenticated');
      t.deepEqual((await server.call('webhooks', {}, { protocol, cookies })).body?.['pagination'], { page: 1, limit: 10, offset: 0, total: 0 });
      if (protocol !== 'graphql') {
        const session = await server.call('admin_session', {}, { protocol, cookies });
        t.is(session.body?.['message'], 'admin session is valid');
        t.true(session.setCookies.some((c) => c.startsWith(`service-admin=${value}`)));
        const meta = await server.call('admin_meta', {}, { protocol, cookies });
        t.like(meta.body, { server_version: '2.3.0', is_admin_header_auth_enabled: false, roles: ['user'] });
        const out = await server.call('admin_logout', {}, { protocol, cookies });
        t.is(out.body?.['message'], 'admin logged out successfully');
        t.true(out.setCookies.some((c) => /^service-admin=;/.test(c) && /Max-Age=0/.test(c)));
        t.is((await server.call('webhooks', {}, { protocol, cookies })).error?.code, 'unauthenticated');
      }
    }
    const wrong = await server.call('admin_login', { admin_secret: 'nope' }, { protocol: 'rest' });
    t.is(wrong.error?.code, 'unauthenticated');
    t.is(wrong.error?.message, 'unauthorized');
    t.is(await auditCount(server, 'admin.login_failed'), 1);
    t.is(await auditCount(server, 'admin.login_success'), 3);
  } finally {
    await server.close();
  }
});

test('repeated wrong admin secrets from one IP are rate limited, also for the right secret afterwards', async (t) => {
  const server = await startTestServer();
  try {
    for (let i = 0; i < 10; i++) {
      const r = await server.call('webhooks', {}, { protocol: 'rest', headers: { 'x-service-admin-secret': `wrong-${i}` } });
      t.is(r.error?.code, 'unauthenticated');
    }
    for (const protocol of PROTOCOLS) {
      const limited = await server.call('webhooks', {}, { protocol, headers: ADMIN });
      t.is(limited.error?.code, 'resource_exhausted', protocol);
    }
    const login = await server.call('admin_login', { admin_secret: TEST_ADMIN_SECRET }, { protocol: 'rest' });
    t.is(login.status, 429);
  } finally {
    await server.close();
  }
});

test('_env returns the effective configuration with every secret redacted; admin_meta adds admin fields', async (t) => {
  const server = await startTestServer();
  try {
    const env = await server.call('env', {}, { protocol: 'graphql', headers: ADMIN });
    const text = JSON.stringify(env.body);
    for (const secret of [TEST_ADMIN_SECRET, TEST_CLIENT_SECRET, TEST_JWT_SECRET]) t.false(text.includes(secret));
    const values = (env.body as { env: Record<string, unknown> }).env;
    t.is(values['admin-secret'], '[redacted]');
    t.is(values['client-secret'], '[redacted]');
    t.is(values['jwt-secret'], '[redacted]');
    t.is(values['client-id'], 'test-client-id');
    for (const protocol of ['rest', 'grpc'] as Protocol[]) {
      const meta = await server.call('admin_meta', {}, { protocol, headers: ADMIN });
      t.like(meta.body, { version: '2.3.0', server_version: '2.3.0', client_id: 'test-client-id', default_roles: ['user'] });
      t.true((meta.body?.['webhook_events'] as string[]).includes('user.access_revoked'));
    }
  } finally {
    await server.close();
  }
});

for (const protocol of PROTOCOLS) {
  test(`user and FGA administration over ${protocol} (as far as the identity service and the engine are plugged in)`, async (t) => {
    const server = await startTestServer({ 'allowed-origins': 'https://app.example.com', 'smtp-host': '127.0.0.1', 'smtp-port': 9, 'smtp-sender-email': 'noreply@example.com' });
    const call = (op: string, input: Record<string, unknown> = {}) =>
      server.call(op, input, { protocol, headers: { ...ADMIN, origin: 'https://app.example.com' } });
    try {
      const services = server.server.services;
      const auth = services.auth as { users?: { create(f: Record<string, unknown>): Promise<{ id: string }> } } | undefined;
      if (!auth?.users) {
        for (const [op, input] of [['users', {}], ['user', { id: 'x' }], ['revoke_access', { user_id: 'x' }], ['delete_user', { email: 'a@example.com' }]] as const) {
          const r = await call(op, input);
          t.is(r.error?.code, 'unavailable', op);
          t.is(r.error?.reason, 'identity_unavailable', op);
        }
      } else {
        const user = await auth.users.create({ email: 'ann@example.com', roles: ['user'] });
        const list = (await call('users', { pagination: { limit: 10 } })).body as { users: Array<{ id: string; email: string }>; pagination: { total: number } };
        t.true(list.users.some((u) => u.email === 'ann@example.com'));
        t.like((await call('user', { email: 'ann@example.com' })).body, { id: user.id, email: 'ann@example.com', email_verified: false });
        t.like((await call('update_user', { id: user.id, given_name: 'Ann', roles: ['user'] })).body, { given_name: 'Ann' });
        t.is((await call('update_user', { id: user.id, roles: ['root'] })).error?.reason, 'invalid_roles');
        t.is((await call('revoke_access', { user_id: user.id })).body?.['message'], 'user access revoked successfully');
        t.truthy((await call('user', { id: user.id })).body?.['revoked_timestamp']);
        t.is((await call('revoke_access', { user_id: user.id })).error?.reason, 'access_already_revoked');
        t.is((await call('enable_access', { user_id: user.id })).body?.['message'], 'user access enabled successfully');
        t.like((await call('verification_requests')).body?.['pagination'], { page: 1, limit: 10, offset: 0 });
        const invited = await call('invite_members', { emails: ['new@example.com', 'ann@example.com'], redirect_uri: 'https://app.example.com/join' });
        t.like(invited.body, { existing: ['ann@example.com'] });
        t.is((await call('invite_members', { emails: ['x@example.com'], redirect_uri: 'https://evil.example.net/' })).error?.reason, 'invalid_redirect_uri');
        t.is((await call('delete_user', { email: 'ann@example.com' })).body?.['message'], 'user deleted successfully');
        t.is((await call('user', { id: user.id })).error?.code, 'not_found');
      }

      if (services.engine === undefined) {
        const r = await call('fga_write_model', { dsl: MODEL });
        t.is(r.error?.code, 'failed_precondition');
        t.is(r.error?.message, 'fga is not enabled on this server');
        // The engine may be plugged in late; the admin service sees it at once.
        services.engine = new Engine({ store: new MemoryStore() });
      }
      {
        const written = (await call('fga_write_model', { dsl: MODEL })).body as { id: string; dsl: string };
        t.regex(written.id, /^[0-9A-Z]{26}$/);
        const bad = await call('fga_write_model', { dsl: 'model\n  schema 1.1\ntype doc\n  relations\n    define viewer: [nobody]\n' });
        t.is(bad.error?.code, 'invalid_argument');
        t.regex(bad.error?.message ?? '', /line 5, column \d+/);
        t.is((await call('fga_write_tuples', { tuples: [{ user: 'user:a', relation: 'viewer', object: 'doc:1' }, { user: 'user:b', relation: 'viewer', object: 'doc:1' }] })).body?.['message'], 'tuples written successfully');
        const page = (await call('fga_read_tuples', { object: 'doc:1', page_size: 1 })).body as { tuples: unknown[]; continuation_token: string };
        t.is(page.tuples.length, 1);
        t.not(page.continuation_token, '');
        const listed = (await call('fga_list_users', { object: 'doc:1', relation: 'viewer', user_type: 'user' })).body;
        t.deepEqual(listed?.['users'], ['user:a', 'user:b']);
        t.is(listed?.['continuation_token'] ?? '', '');
        // In pages: one user at a time, the token continuing the walk.
        const p1 = (await call('fga_list_users', { object: 'doc:1', relation: 'viewer', user_type: 'user', page_size: 1 })).body;
        t.deepEqual(p1?.['users'], ['user:a']);
        const p2 = (await call('fga_list_users', { object: 'doc:1', relation: 'viewer', user_type: 'user', page_size: 1, continuation_token: p1?.['continuation_token'] })).body;
        t.deepEqual(p2?.['users'], ['user:b']);
        t.is(p2?.['continuation_token'] ?? '', '');
        t.is(typeof (await call('fga_expand', { object: 'doc:1', relation: 'viewer' })).body?.['tree'], 'string');
        const explained = (await call('fga_explain', { user: 'user:a', object: 'doc:1', relation: 'viewer' })).body as { allowed: boolean; tree: { kind: string; outcome: string } };
        t.true(explained.allowed);
        t.is(explained.tree.kind, 'relation');
        t.is(explained.tree.outcome, 'allowed');
        if (protocol !== 'graphql') {
          t.is((await call('fga_get_model')).body?.['id'], written.id);
          t.is((await call('fga_reset')).error?.code, 'failed_precondition');
        }
        t.is((await call('fga_delete_tuples', { tuples: [{ user: 'user:a', relation: 'viewer', object: 'doc:1' }, { user: 'user:b', relation: 'viewer', object: 'doc:1' }] })).body?.['message'], 'tuples deleted successfully');
        if (protocol !== 'graphql') {
          t.is((await call('fga_reset')).body?.['message'], 'authorization model reset successfully');
          t.deepEqual((await call('fga_get_model')).body, { id: '', dsl: '' });
        }
      }
    } finally {
      await server.close();
    }
  });
}

for (const protocol of PROTOCOLS) {
  test(`revoke_access over ${protocol} cuts a live token and session cookie on the very next request; the audit log names the admin call`, async (t) => {
    const server = await startTestServer({ 'webhook-allow-private-networks': true, 'app-cookie-secure': false });
    const receiver = await startReceiver();
    try {
      if (!OPERATIONS.some((op) => op.name === 'signup') || !OPERATIONS.some((op) => op.name === 'profile')) {
        t.is(adminService(server) instanceof AdminService, true);
        return;
      }
      await server.call('add_webhook', { event_name: 'user.access_revoked', endpoint: receiver.url }, { protocol, headers: ADMIN });
      const signup = await server.call('signup', { email: 'eve@example.com', password: 'a long enough passphrase' }, { protocol: 'rest' });
      const token = String(signup.body?.['access_token']);
      const userId = String((signup.body?.['user'] as { id: string }).id);
      const cookie = signup.setCookies.find((c) => c.startsWith('cookie_session='));
      const cookieValue = cookie ? cookie.slice('cookie_session='.length, cookie.indexOf(';')) : undefined;
      const bearer = { authorization: `Bearer ${token}` };
      t.is((await server.call('profile', {}, { protocol, headers: bearer })).body?.['id'], userId);
      const revoked = await server.call('revoke_access', { user_id: userId }, { protocol, headers: { ...ADMIN, 'user-agent': 'ops-console/1' } });
      t.is(revoked.body?.['message'], 'user access revoked successfully');
      const after = await server.call('profile', {}, { protocol, headers: bearer });
      t.is(after.error?.code, 'unauthenticated');
      if (cookieValue) {
        const viaCookie = await server.call('profile', {}, { protocol, cookies: { cookie_session: cookieValue } });
        t.is(viaCookie.error?.code, 'unauthenticated');
      }
      const login = await server.call('login', { email: 'eve@example.com', password: 'a long enough passphrase' }, { protocol: 'rest' });
      t.truthy(login.error, 'a revoked user cannot log in again');
      const audit = await server.call('audit_logs', { action: 'admin.access_revoked', resource: `user:${userId}` }, { protocol, headers: ADMIN });
      const rows = (audit.body as { audit_logs: Array<Record<string, unknown>> }).audit_logs;
      t.is(rows.length, 1);
      t.like(rows[0], { actor_type: 'admin', actor_id: 'super_admin', ip_address: '127.0.0.1', resource_id: userId });
      if (protocol !== 'grpc') t.is(rows[0]!['user_agent'], 'ops-console/1');
      t.is(JSON.parse(String(rows[0]!['metadata'])).via, 'admin_secret_header');
      await adminService(server).webhooks.flush();
      t.is(receiver.received.length, 1);
      const event = JSON.parse(receiver.received[0]!.body) as { event_name: string; user: { id: string } };
      t.deepEqual([event.event_name, event.user.id], ['user.access_revoked', userId]);
    } finally {
      await receiver.close();
      await server.close();
    }
  });
}

test('invite_members over the wire, with sign-up disabled: the invitation mail reaches a real SMTP server', async (t) => {
  const smtp = await startSmtp();
  const server = await startTestServer({
    'enable-signup': false,
    'allowed-origins': 'https://app.example.com',
    'smtp-host': '127.0.0.1',
    'smtp-port': smtp.port,
    'smtp-sender-email': 'noreply@example.com',
    'organization-name': 'Acme',
  });
  try {
    const r = await server.call('invite_members', { emails: ['guest@example.com'], redirect_uri: 'https://app.example.com/join' }, { protocol: 'grpc', headers: ADMIN });
    if (r.error?.reason === 'identity_unavailable') {
      t.pass('identity service not plugged in');
      return;
    }
    t.like(r.body, { existing: [] });
    for (let i = 0; i < 100 && smtp.mails.length === 0; i++) await new Promise((resolve) => setTimeout(resolve, 20));
    t.is(smtp.mails.length, 1);
    t.regex(smtp.mails[0]!, /To: guest@example.com/);
    t.regex(smtp.mails[0]!, /Subject: You are invited/);
    t.true(smtp.mails[0]!.replace(/=\r?\n/g, '').includes('Acme'));
  } finally {
    await server.close();
    await smtp.close();
  }
});
