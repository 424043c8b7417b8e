/**
 * delete_user on the real server: with the FGA store on the main database the
 * user's tuples go in the same transaction as the user row (a failure after
 * the tuple deletion rolls both back), and the in-process mirror and answer
 * cache serve no stale allow afterwards even with a one-minute revision poll;
 * with the memory FGA store the tuples go through the engine after the
 * commit, with retries.
 */
import test from 'ava';
import { openSequelize } from '../../engine/sql/sqlite_sequelize.ts';
import { TEST_ADMIN_SECRET, startTestServer, type TestServer } from '../helpers/server.ts';
import { createTestDatabase, sqlBackends } from '../helpers/databases.ts';
import { AdminService, type AdminCallContext } from '../../admin/index.ts';
import { AuthService } from '../../auth/auth_service.ts';
import { createMemoryStore } from '../../auth/memory_store.ts';
import { Engine, MemoryStore } from '../../engine/index.ts';
import type { LatchkeyError } from '../../engine/errors.ts';

const admin = { 'x-service-admin-secret': TEST_ADMIN_SECRET };
const DSL = 'model\n  schema 1.1\ntype user\ntype group\n  relations\n    define member: [user]\ntype doc\n  relations\n    define viewer: [user, group#member]\n';

async function ok(srv: TestServer, op: string, input: Record<string, unknown>): Promise<Record<string, unknown>> {
  const r = await srv.call(op, input, { protocol: 'rest', headers: admin });
  if (r.error) throw new Error(`${op}: ${r.error.code} ${r.error.message}`);
  return r.body!;
}

async function allowed(srv: TestServer, uid: string, object: string): Promise<boolean> {
  const body = await ok(srv, 'check_permissions', { user: `user:${uid}`, checks: [{ relation: 'viewer', object }] });
  return (body['results'] as Array<{ allowed: boolean }>)[0]!.allowed;
}

async function tuplesOf(srv: TestServer, uid: string): Promise<unknown[]> {
  const body = await ok(srv, 'fga_read_tuples', { page_size: 100 });
  return (body['tuples'] as Array<{ user: string }>).filter((t) => t.user === `user:${uid}`);
}

async function scenario(t: import('ava').ExecutionContext, srv: TestServer): Promise<void> {
  await ok(srv, 'fga_write_model', { dsl: DSL });
  const signup = async (email: string): Promise<string> => {
    const r = await srv.call('signup', { email, password: 'correct horse battery' }, { protocol: 'rest' });
    return (r.body!['user'] as { id: string }).id;
  };
  const a = await signup('gone@example.com');
  const b = await signup('stays@example.com');
  await ok(srv, 'fga_write_tuples', {
    tuples: [
      { user: `user:${a}`, relation: 'viewer', object: 'doc:1' },
      { user: `user:${a}`, relation: 'member', object: 'group:eng' },
      { user: 'group:eng#member', relation: 'viewer', object: 'doc:2' },
      { user: `user:${b}`, relation: 'viewer', object: 'doc:1' },
    ],
  });
  // Asked twice so the second answer can come from the cache and the mirror.
  for (let i = 0; i < 2; i++) {
    t.true(await allowed(srv, a, 'doc:1'));
    t.true(await allowed(srv, a, 'doc:2'));
  }

  // A row that references the user makes the user-row delete fail, after the tuple deletion ran.
  const sequelize = srv.server.services.sequelize!;
  await sequelize.query('CREATE TABLE pinned_users (user_id VARCHAR(36) NOT NULL, FOREIGN KEY (user_id) REFERENCES users (id))');
  await sequelize.query('INSERT INTO pinned_users (user_id) VALUES (?)', { replacements: [a] });
  const failed = await srv.call('delete_user', { email: 'gone@example.com' }, { protocol: 'rest', headers: admin });
  t.truthy(failed.error, 'the constraint fails the delete');
  t.is(((await ok(srv, 'user', { id: a })) as { id: string }).id, a, 'the user row is back');
  t.is((await tuplesOf(srv, a)).length, 2, 'the tuples are back');
  t.true(await allowed(srv, a, 'doc:1'));
  t.true(await allowed(srv, a, 'doc:2'));

  await sequelize.query('DELETE FROM pinned_users');
  t.deepEqual(await ok(srv, 'delete_user', { email: 'gone@example.com' }), { message: 'user deleted successfully' });
  // The revision poll is a minute: only the refresh inside delete_user can make these false now.
  t.false(await allowed(srv, a, 'doc:1'), 'no stale allow from the cache or mirror');
  t.false(await allowed(srv, a, 'doc:2'));
  t.deepEqual(await tuplesOf(srv, a), []);
  t.true(await allowed(srv, b, 'doc:1'), 'other users keep their tuples');
  const missing = await srv.call('user', { id: a }, { protocol: 'rest', headers: admin });
  t.is(missing.error?.code, 'not_found');
}

for (const backend of sqlBackends()) {
  test(`delete_user removes the tuples in the user's transaction and leaves no stale allow (${backend})`, async (t) => {
    const srv = await startTestServer({ 'fga-cache-revision-poll': '60s' }, { backend });
    try {
      await scenario(t, srv);
      // The changelog records the deletion, so other processes' mirrors see it too.
      const [row] = await srv.server.services.sequelize!.query("SELECT COUNT(*) AS n FROM fga_changelog WHERE operation = 'd'", { type: 'SELECT' as never });
      t.is(Number((row as unknown as { n: number | string }).n), 2);
    } finally {
      await srv.close();
    }
  });
}

test('delete_user with the memory FGA store deletes through the engine after the commit', async (t) => {
  const srv = await startTestServer({ 'fga-store': 'memory' });
  try {
    await scenario(t, srv);
  } finally {
    await srv.close();
  }
});

const ctx: AdminCallContext = { ip: '203.0.113.7', userAgent: 'admin-test/1', via: 'admin_secret_header', protocol: 'rest' };

async function serviceWithFlakyEngine(failures: number) {
  const db = await createTestDatabase('sqlite');
  const sequelize = openSequelize(db.url, { logging: false });
  const auth = await AuthService.create(
    { clientId: 'client', issuer: 'http://127.0.0.1', jwt: { type: 'HS256', secret: 'x'.repeat(32) }, bcryptCost: 4, roles: ['user'], enableStrongPassword: false },
    { sequelize, memoryStore: createMemoryStore() },
  );
  // The store fails its deletes `failures` times (the engine deletes a user's tuples by filter, in store writes).
  const store = new MemoryStore();
  let left = failures;
  const storeWrite = store.write.bind(store);
  store.write = async (deletes, writes) => {
    if (deletes.length > 0 && left-- > 0) throw new Error('store unavailable');
    return storeWrite(deletes, writes);
  };
  const engine = new Engine({ store });
  await engine.writeModel({ dsl: DSL });
  const write = engine.write.bind(engine);
  const service = await AdminService.create({
    sequelize,
    adminSecret: 'admin-secret',
    signingSecret: 'client-secret',
    identity: auth,
    engine,
    allowedRoles: ['user'],
    defaultRoles: ['user'],
    allowedOrigins: ['https://app.example.com'],
  });
  const user = (await auth.signup({ email: 'flaky@example.com', password: 'correct horse battery' })).response.user!;
  await write({ writes: [{ user: `user:${user.id}`, relation: 'viewer', object: 'doc:1' }] });
  return {
    service,
    auth,
    engine,
    userId: user.id,
    async close() {
      await service.close();
      await sequelize.close();
      await db.drop();
    },
  };
}

test('the engine-side tuple deletion is retried, and a lasting failure is reported after the user is gone', async (t) => {
  const flaky = await serviceWithFlakyEngine(2);
  try {
    await flaky.service.deleteUser(ctx, 'flaky@example.com');
    t.deepEqual((await flaky.engine.read({ user: `user:${flaky.userId}` })).tuples, []);
  } finally {
    await flaky.close();
  }
  const down = await serviceWithFlakyEngine(100);
  try {
    const err = (await t.throwsAsync(down.service.deleteUser(ctx, 'flaky@example.com'))) as LatchkeyError;
    t.is(err.code, 'unavailable');
    t.is(err.reason, 'fga_cleanup_failed');
    t.is(await down.auth.users.findById(down.userId), undefined, 'the user is deleted');
    t.is((await down.engine.read({ user: `user:${down.userId}` })).tuples.length, 1);
    const audit = await down.service.auditLogs(ctx, { action: 'admin.user_deleted' });
    t.true(audit.audit_logs[0]!.metadata.includes('fga_cleanup_failed'));
  } finally {
    await down.close();
  }
});
