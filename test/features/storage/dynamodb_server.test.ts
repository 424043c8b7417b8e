/**
 * The server on a DynamoDB main database (dynalite on loopback): identity
 * over every protocol, readiness, FGA off by default and on with
 * `--fga-store` (spec, Versioning §7), delete_user removing the user's tuples
 * from that store, sessions shared by two servers without Redis (the memory
 * store lives in DynamoDB), and an unreachable endpoint refused at startup.
 */
import test from 'ava';
import { parseFlags } from '../../../server/flags.ts';
import { startServer } from '../../../cmd/server.ts';
import { TEST_ADMIN_SECRET, startTestServer, type TestServer } from '../../helpers/server.ts';
import { createTestDatabase } from '../../helpers/databases.ts';
import type { LatchkeyError } from '../../../engine/errors.ts';

const admin = { 'x-service-admin-secret': TEST_ADMIN_SECRET };
const PASSWORD = 'correct horse battery';
const DSL = 'model\n  schema 1.1\ntype user\ntype doc\n  relations\n    define viewer: [user]\n';

async function ok(srv: TestServer, op: string, input: Record<string, unknown>, headers: Record<string, string> = admin): Promise<Record<string, unknown>> {
  const r = await srv.call(op, input, { protocol: 'rest', headers });
  if (r.error) throw new Error(`${op}: ${r.error.code} ${r.error.message}`);
  return r.body!;
}

test('dynamodb: sign-up, login and session on every protocol; ready; FGA off without --fga-store', async (t) => {
  const srv = await startTestServer({}, { backend: 'dynamodb' });
  try {
    const ready = await fetch(`${srv.httpUrl}/readyz`);
    t.is(ready.status, 200);
    t.like(await ready.json(), { checks: { database: true } });
    for (const protocol of ['graphql', 'rest', 'grpc'] as const) {
      const email = `${protocol}@example.com`;
      const signup = await srv.call('signup', { email, password: PASSWORD }, { protocol });
      t.falsy(signup.error, protocol);
      const again = await srv.call('signup', { email: email.toUpperCase(), password: PASSWORD }, { protocol });
      t.is(again.error?.code, 'already_exists', `${protocol}: the address is taken`);
      const login = await srv.call('login', { email, password: PASSWORD }, { protocol });
      const token = login.body?.['access_token'] as string;
      t.truthy(token, protocol);
      const profile = await srv.call('profile', {}, { protocol, headers: { authorization: `Bearer ${token}` } });
      t.is((profile.body as { email?: string } | undefined)?.email, email);
    }
    const users = await ok(srv, 'users', {});
    t.is((users['pagination'] as { total: number }).total, 3);
    const fga = await srv.call('fga_write_model', { dsl: DSL }, { protocol: 'rest', headers: admin });
    t.is(fga.error?.code, 'failed_precondition', 'FGA is off on a NoSQL main database unless --fga-store is set');
  } finally {
    await srv.close();
  }
});

for (const fgaStore of ['memory', 'sqlite'] as const) {
  test(`dynamodb with --fga-store ${fgaStore}: FGA answers, and delete_user removes the user, its sessions and its tuples`, async (t) => {
    const fgaDb = fgaStore === 'sqlite' ? await createTestDatabase('sqlite') : undefined;
    const srv = await startTestServer({ 'fga-store': fgaStore, ...(fgaDb ? { 'fga-store-url': fgaDb.url } : {}) }, { backend: 'dynamodb' });
    try {
      await ok(srv, 'fga_write_model', { dsl: DSL });
      const a = ((await ok(srv, 'signup', { email: 'gone@example.com', password: PASSWORD }, {}))['user'] as { id: string }).id;
      const b = ((await ok(srv, 'signup', { email: 'stays@example.com', password: PASSWORD }, {}))['user'] as { id: string }).id;
      await ok(srv, 'fga_write_tuples', {
        tuples: [
          { user: `user:${a}`, relation: 'viewer', object: 'doc:1' },
          { user: `user:${b}`, relation: 'viewer', object: 'doc:1' },
        ],
      });
      const check = async (uid: string): Promise<boolean> =>
        ((await ok(srv, 'check_permissions', { user: `user:${uid}`, checks: [{ relation: 'viewer', object: 'doc:1' }] }))['results'] as Array<{ allowed: boolean }>)[0]!.allowed;
      t.true(await check(a));
      const token = (await ok(srv, 'login', { email: 'gone@example.com', password: PASSWORD }, {}))['access_token'] as string;
      t.deepEqual(await ok(srv, 'delete_user', { email: 'gone@example.com' }), { message: 'user deleted successfully' });
      t.false(await check(a), 'the deleted user holds no tuple');
      t.true(await check(b), 'other users keep theirs');
      const tuples = (await ok(srv, 'fga_read_tuples', { page_size: 100 }))['tuples'] as Array<{ user: string }>;
      t.deepEqual(tuples.map((x) => x.user), [`user:${b}`]);
      const after = await srv.call('profile', {}, { protocol: 'rest', headers: { authorization: `Bearer ${token}` } });
      t.is(after.error?.code, 'unauthenticated', 'its sessions and tokens ended');
      t.is((await srv.call('user', { id: a }, { protocol: 'rest', headers: admin })).error?.code, 'not_found');
      // The address is free again.
      t.truthy((await ok(srv, 'signup', { email: 'gone@example.com', password: PASSWORD }, {}))['user']);
    } finally {
      await srv.close();
      await fgaDb?.drop();
    }
  });
}

test('dynamodb without Redis: two servers on one database share sessions (the memory store is in DynamoDB)', async (t) => {
  const a = await startTestServer({}, { backend: 'dynamodb' });
  const b = await startTestServer({ ...a.database.flags }, { backend: 'dynamodb' });
  try {
    await ok(a, 'signup', { email: 'shared@example.com', password: PASSWORD }, {});
    const login = await a.call('login', { email: 'shared@example.com', password: PASSWORD }, { protocol: 'rest' });
    const cookie = login.setCookies.find((c) => c.startsWith('cookie_session='))!.split(';')[0]!.split('=')[1]!;
    const onB = await b.call('session', {}, { protocol: 'rest', cookies: { cookie_session: cookie } });
    t.falsy(onB.error, 'a session opened on one server is valid on the other');
    t.truthy(onB.body?.['access_token']);
    await b.call('logout', {}, { protocol: 'rest', cookies: { cookie_session: cookie } });
    const afterLogout = await a.call('session', {}, { protocol: 'rest', cookies: { cookie_session: cookie } });
    t.is(afterLogout.error?.code, 'unauthenticated', 'a logout on one server ends the session on the other');
  } finally {
    await b.close();
    await a.close();
  }
});

test('dynamodb: an endpoint nobody answers refuses startup with unavailable (database_unreachable)', async (t) => {
  const parsed = parseFlags([
    '--database-type=dynamodb',
    '--database-url=http://127.0.0.1:9',
    '--cloud-region=us-east-1',
    '--cloud-access-key-id=a',
    '--cloud-secret-access-key=b',
    '--admin-secret=s',
    '--client-id=c',
    '--client-secret=cs',
    '--jwt-type=HS256',
    '--jwt-secret=x',
    '--log-level=silent',
  ]);
  if (!parsed.ok) throw new Error(parsed.problems.join('\n'));
  const err = (await t.throwsAsync(startServer(parsed.config))) as LatchkeyError;
  t.is(err.code, 'unavailable');
  t.is(err.reason, 'database_unreachable');
  t.regex(err.message, /cannot connect to the dynamodb database at 127\.0\.0\.1:9/);
});
