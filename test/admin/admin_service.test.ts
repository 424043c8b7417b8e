// Drives AdminService with the real identity service (auth/auth_service.ts, imported as an internal module until
// auth/index.ts exports it), the real engine on its memory store, and a real database.
import test from 'ava';
import { mainBackends, openTestMain, type MainBackend } from '../helpers/main_databases.ts';
import { AdminService, verifyWebhook, type AdminCallContext } from '../../admin/index.ts';
import { AuthService } from '../../auth/auth_service.ts';
import { createMemoryStore } from '../../auth/memory_store.ts';
import { Engine, MemoryStore } from '../../engine/index.ts';
import type { LatchkeyError } from '../../engine/errors.ts';
import { startReceiver } from './receiver.ts';

const ctx: AdminCallContext = { ip: '203.0.113.7', userAgent: 'admin-test/1', via: 'admin_secret_header', protocol: 'rest' };
const MODEL = `model
  schema 1.1
type user
type group
  relations
    define member: [user]
type doc
  relations
    define owner: [user]
    define viewer: [user, group#member] or owner
`;

async function setup(backend: MainBackend, options: { fga?: boolean; mail?: boolean } = {}) {
  const m = await openTestMain(backend);
  const auth = await AuthService.create(
    { clientId: 'client', issuer: 'http://127.0.0.1', jwt: { type: 'HS256', secret: 'x'.repeat(32) }, bcryptCost: 4, roles: ['user', 'editor', 'admin'], enableStrongPassword: false },
    { database: m.database, memoryStore: createMemoryStore() },
  );
  const engine = options.fga === false ? undefined : new Engine({ store: new MemoryStore() });
  const mails: Array<{ to: string; subject: string; html: string }> = [];
  const admin = await AdminService.create({
    database: m.database,
    adminSecret: 'admin-secret',
    signingSecret: 'client-secret',
    allowPrivateWebhooks: true,
    identity: auth,
    engine,
    mail: options.mail === false ? undefined : { enqueue: (m) => (mails.push(m), String(mails.length)) },
    allowedRoles: ['user', 'editor', 'admin'],
    defaultRoles: ['user'],
    allowedOrigins: ['https://app.example.com'],
    organization: { name: 'Acme', logo: '' },
    webhooks: { retrySchedule: [1], jitter: 0, timeoutMs: 2000 },
  });
  return {
    auth,
    engine,
    admin,
    mails,
    async close() {
      await admin.close();
      await m.close();
    },
  };
}

for (const backend of mainBackends()) {
  test(`revoke_access ends the live session and token at once, fires the event, and is audited; enable_access restores (${backend})`, async (t) => {
    const env = await setup(backend);
    const receiver = await startReceiver();
    try {
      await env.admin.addWebhook(ctx, { event_name: 'user.access_revoked', endpoint: receiver.url });
      await env.admin.addWebhook(ctx, { event_name: 'user.access_enabled', endpoint: receiver.url });
      const signed = await env.auth.signup({ email: 'ann@example.com', password: 'correct horse battery' });
      const token = signed.response.access_token!;
      const userId = signed.response.user!.id;
      t.like(await env.auth.authenticate({ bearer: token }), { kind: 'user', userId });

      t.deepEqual(await env.admin.revokeAccess(ctx, userId), { message: 'user access revoked successfully' });
      const cut = await t.throwsAsync(env.auth.authenticate({ bearer: token }));
      t.is((cut as LatchkeyError).code, 'unauthenticated');
      t.truthy((await env.admin.user(ctx, { id: userId })).revoked_timestamp);
      const again = await t.throwsAsync(env.admin.revokeAccess(ctx, userId));
      t.is((again as LatchkeyError).reason, 'access_already_revoked');

      await env.admin.enableAccess(ctx, userId);
      t.is((await env.admin.user(ctx, { email: 'ann@example.com' })).revoked_timestamp, null);
      const twice = await t.throwsAsync(env.admin.enableAccess(ctx, userId));
      t.is((twice as LatchkeyError).reason, 'access_not_revoked');

      await env.admin.webhooks.runOnce();
      const events = receiver.received.map((r) => {
        verifyWebhook('client-secret', r.headers as Record<string, string>, r.body);
        const body = JSON.parse(r.body) as { event_name: string; user: { id: string; password?: string } };
        t.is(body.user.id, userId);
        t.false('password' in body.user);
        return body.event_name;
      });
      t.deepEqual(events.sort(), ['user.access_enabled', 'user.access_revoked']);

      const audit = await env.admin.auditLogs(ctx, { action: 'admin.access_revoked' });
      t.is(audit.pagination.total, 2); // the revoke and the refused repeat
      const ok = audit.audit_logs.find((r) => !r.metadata.includes('"outcome"'))!;
      t.like(ok, { actor_type: 'admin', actor_id: 'super_admin', resource_type: 'user', resource_id: userId, ip_address: '203.0.113.7', user_agent: 'admin-test/1' });
      t.deepEqual(JSON.parse(ok.metadata), { via: 'admin_secret_header', protocol: 'rest' });
      t.true((await env.admin.audit.verifyChain()).ok);
    } finally {
      await receiver.close();
      await env.close();
    }
  });

  test(`users, user, update_user and delete_user (tuples, sessions and the row go together) (${backend})`, async (t) => {
    const env = await setup(backend);
    try {
      const a = await env.auth.signup({ email: 'a@example.com', password: 'correct horse battery' });
      await env.auth.signup({ email: 'b@example.com', password: 'correct horse battery' });
      const aId = a.response.user!.id;
      for (let i = 0; i < 11; i++) await env.auth.signup({ email: `u${i}@example.com`, password: 'correct horse battery' });
      const page = await env.admin.users(ctx);
      t.deepEqual(page.pagination, { page: 1, limit: 10, offset: 0, total: 13 });
      t.is(page.users.length, 10);
      t.false(JSON.stringify(page).includes('password'));
      t.is((await env.admin.users(ctx, { page: 2, limit: 10 })).users.length, 3);
      t.is((await t.throwsAsync(env.admin.users(ctx, { limit: 1000 })) as LatchkeyError).reason, 'invalid_pagination');

      const updated = await env.admin.updateUser(ctx, { id: aId, given_name: 'Ann', roles: ['editor'], email_verified: true, app_data: { plan: 'pro' } });
      t.like(updated, { given_name: 'Ann', roles: ['editor'], email_verified: true, app_data: { plan: 'pro' } });
      const badRole = await t.throwsAsync(env.admin.updateUser(ctx, { id: aId, roles: ['root'] }));
      t.is((badRole as LatchkeyError).reason, 'invalid_roles');
      const taken = await t.throwsAsync(env.admin.updateUser(ctx, { id: aId, email: 'B@example.com' }));
      t.is((taken as LatchkeyError).code, 'already_exists');
      t.is((taken as LatchkeyError).message, 'user with given email already exists');
      const missing = await t.throwsAsync(env.admin.user(ctx, { id: 'nope' }));
      t.is((missing as LatchkeyError).code, 'not_found');

      await env.admin.fgaWriteModel(ctx, MODEL);
      await env.admin.fgaWriteTuples(ctx, [
        { user: `user:${aId}`, relation: 'owner', object: 'doc:1' },
        { user: `user:${aId}`, relation: 'member', object: 'group:eng' },
        { user: 'user:other', relation: 'viewer', object: 'doc:1' },
      ]);
      const session = await env.auth.login({ email: 'a@example.com', password: 'correct horse battery' });
      await env.admin.deleteUser(ctx, 'A@example.com');
      t.is((await t.throwsAsync(env.admin.user(ctx, { id: aId })) as LatchkeyError).code, 'not_found');
      const remaining = await env.admin.fgaReadTuples(ctx, {});
      t.deepEqual(remaining.tuples, [{ user: 'user:other', relation: 'viewer', object: 'doc:1' }]);
      t.is((await t.throwsAsync(env.auth.authenticate({ bearer: session.response.access_token! })) as LatchkeyError).code, 'unauthenticated');
      t.deepEqual(await env.admin.webhooks.outboxStats(), {});
      const deleted = await env.admin.auditLogs(ctx, { action: 'admin.user_deleted' });
      t.is(deleted.audit_logs[0]!.resource_id, aId);
      t.is((await t.throwsAsync(env.admin.deleteUser(ctx, 'a@example.com')) as LatchkeyError).code, 'not_found');
    } finally {
      await env.close();
    }
  });
}

test('invite_members creates unverified users, reports existing ones, mails a link, and checks redirect_uri', async (t) => {
  const env = await setup('sqlite');
  try {
    await env.auth.signup({ email: 'old@example.com', password: 'correct horse battery' });
    const out = await env.admin.inviteMembers(ctx, { emails: ['New@example.com', 'old@example.com', 'new@example.com'], redirect_uri: 'https://app.example.com/welcome' });
    t.is(out.users.length, 1);
    t.deepEqual(out.existing, ['old@example.com']);
    t.like(out.users[0], { email: 'new@example.com', email_verified: false, roles: ['user'] });
    t.is(env.mails.length, 1);
    t.is(env.mails[0]!.to, 'new@example.com');
    t.is(env.mails[0]!.subject, 'You are invited');
    t.regex(env.mails[0]!.html, /https:\/\/app\.example\.com\/welcome\?token=[A-Za-z0-9_-]{43}/);
    const pending = await env.admin.verificationRequests(ctx);
    t.is(pending.pagination.total, 1);
    t.like(pending.verification_requests[0], { identifier: 'invite_member', email: 'new@example.com', token: null, redirect_uri: 'https://app.example.com/welcome' });
    t.true(env.mails[0]!.html.includes('Acme'));
    for (const bad of ['https://app.example.com.evil.io/', 'javascript:alert(1)', '//evil', 'https://app@evil.io/', 'https://evil.io/']) {
      const err = await t.throwsAsync(env.admin.inviteMembers(ctx, { emails: ['x@example.com'], redirect_uri: bad }));
      t.is((err as LatchkeyError).reason, 'invalid_redirect_uri', bad);
    }
    t.is(env.mails.length, 1);
    const badEmail = await t.throwsAsync(env.admin.inviteMembers(ctx, { emails: ['nope'], redirect_uri: 'https://app.example.com/' }));
    t.is((badEmail as LatchkeyError).reason, 'invalid_email');
    // A custom template is used for invitations.
    await env.admin.addEmailTemplate(ctx, { event_name: 'invite_member', subject: 'Join {{ organization.name }}', template: '<a href="{{ verification_url }}">join</a>' });
    await env.admin.inviteMembers(ctx, { emails: ['third@example.com'], redirect_uri: 'https://app.example.com/' });
    t.is(env.mails[1]!.subject, 'Join Acme');
  } finally {
    await env.close();
  }
});

test('invite_members without a mail sender is a clear error', async (t) => {
  const env = await setup('sqlite', { mail: false });
  try {
    const err = await t.throwsAsync(env.admin.inviteMembers(ctx, { emails: ['x@example.com'], redirect_uri: 'https://app.example.com/' }));
    t.is((err as LatchkeyError).reason, 'mail_disabled');
  } finally {
    await env.close();
  }
});

test('FGA administration: models with positioned errors, tuples, read pages, list users, expand, audited reset', async (t) => {
  const env = await setup('sqlite');
  try {
    t.deepEqual(await env.admin.fgaGetModel(ctx), { id: '', dsl: '' });
    const bad = await t.throwsAsync(env.admin.fgaWriteModel(ctx, 'model\n  schema 1.1\ntype user\ntype doc\n  relations\n    define viewer: [usr]\n'));
    t.is((bad as LatchkeyError).reason, 'invalid_dsl');
    const errors = (bad as LatchkeyError).details!['errors'] as Array<{ line: number; column: number }>;
    t.is(errors[0]!.line, 6);
    t.true(errors[0]!.column > 1);
    const written = await env.admin.fgaWriteModel(ctx, MODEL);
    t.regex(written.id, /^[0-9A-Z]{26}$/);
    const got = await env.admin.fgaGetModel(ctx);
    t.is(got.id, written.id);
    t.true(got.dsl.includes('define viewer: [user, group#member] or owner'));
    const tuples = Array.from({ length: 7 }, (_, i) => ({ user: `user:u${i}`, relation: 'viewer', object: 'doc:1' }));
    await env.admin.fgaWriteTuples(ctx, [...tuples, { user: 'group:eng#member', relation: 'viewer', object: 'doc:1' }, { user: 'user:z', relation: 'member', object: 'group:eng' }]);
    const p1 = await env.admin.fgaReadTuples(ctx, { object: 'doc:1', page_size: 5 });
    t.is(p1.tuples.length, 5);
    t.not(p1.continuation_token, '');
    const p2 = await env.admin.fgaReadTuples(ctx, { object: 'doc:1', page_size: 5, continuation_token: p1.continuation_token });
    t.is(p2.tuples.length, 3);
    t.is(p2.continuation_token, '');
    t.is((await t.throwsAsync(env.admin.fgaReadTuples(ctx, { page_size: 101 })) as LatchkeyError).reason, 'invalid_page_size');
    const users = await env.admin.fgaListUsers(ctx, { object: 'doc:1', relation: 'viewer', user_type: 'user' });
    t.deepEqual(users.users, [...tuples.map((x) => x.user), 'user:z'].sort());
    const expanded = await env.admin.fgaExpand(ctx, { relation: 'viewer', object: 'doc:1' });
    t.is(typeof expanded.tree, 'string');
    t.truthy((JSON.parse(expanded.tree) as { root: unknown }).root);
    const refused = await t.throwsAsync(env.admin.fgaReset(ctx));
    t.is((refused as LatchkeyError).code, 'failed_precondition');
    t.is((refused as LatchkeyError).reason, 'tuples_exist');
    await env.admin.fgaDeleteTuples(ctx, [...tuples, { user: 'group:eng#member', relation: 'viewer', object: 'doc:1' }, { user: 'user:z', relation: 'member', object: 'group:eng' }]);
    t.deepEqual(await env.admin.fgaReset(ctx), { message: 'authorization model reset successfully' });
    t.deepEqual(await env.admin.fgaGetModel(ctx), { id: '', dsl: '' });
    const resets = (await env.admin.auditLogs(ctx, { action: 'admin.fga_reset' })).audit_logs;
    t.is(resets.length, 2);
    t.like(JSON.parse(resets[1]!.metadata), { outcome: 'error', error: 'failed_precondition', reason: 'tuples_exist' });
    t.is((await env.admin.auditLogs(ctx, { action: 'admin.fga_tuples_written' })).pagination.total, 1);
  } finally {
    await env.close();
  }
});

test('FGA operations without an engine fail with the spec message', async (t) => {
  const env = await setup('sqlite', { fga: false });
  try {
    for (const call of [() => env.admin.fgaGetModel(ctx), () => env.admin.fgaReset(ctx), () => env.admin.fgaWriteModel(ctx, MODEL)]) {
      const err = await t.throwsAsync(call());
      t.is((err as LatchkeyError).code, 'failed_precondition');
      t.is((err as LatchkeyError).message, 'fga is not enabled on this server');
    }
  } finally {
    await env.close();
  }
});

test('admin login sessions and user events are audited without secrets', async (t) => {
  const env = await setup('sqlite');
  try {
    const wrong = await t.throwsAsync(env.admin.adminLogin(ctx, 'nope', true));
    t.is((wrong as LatchkeyError).code, 'unauthenticated');
    const ok = await env.admin.adminLogin(ctx, 'admin-secret', true);
    t.like(ok.cookie, { httpOnly: true, secure: true, sameSite: 'Strict' });
    t.true(await env.admin.sessions.verify(ok.token));
    await env.admin.adminSession({ ...ctx, via: 'admin_cookie' }, ok.token, true);
    await env.admin.adminLogout(ctx, ok.token);
    t.false(await env.admin.sessions.verify(ok.token));
    const user = await env.auth.users.create({ email: 'e@example.com', roles: ['user'] });
    await env.admin.userEvent({ action: 'user.login_failed', actor_id: user.id, ip_address: '198.51.100.1', user_agent: 'ua', metadata: { password: 'hunter2', reason: 'invalid_password' } });
    const all = JSON.stringify(await env.admin.auditLogs(ctx, { pagination: { limit: 100 } }));
    t.false(all.includes('hunter2'));
    t.false(all.includes('admin-secret'));
    t.false(all.includes(ok.token));
    t.is((await env.admin.auditLogs(ctx, { action: 'admin.login_failed' })).pagination.total, 1);
    t.is((await env.admin.auditLogs(ctx, { actor_id: user.id })).audit_logs[0]!.action, 'user.login_failed');
  } finally {
    await env.close();
  }
});
