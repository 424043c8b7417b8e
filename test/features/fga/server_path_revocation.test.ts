/**
 * The server path keeps caches (verified tokens by their text, parsed session
 * records by their stored text, the REST fast path around express). None may
 * let a token outlive its session or its time: with every cache warmed by
 * repeated `check_permissions` and `validate_jwt_token` calls, a logout, a
 * revoked refresh token, an admin's revoke_access, a deactivated account and
 * an expired token are each refused on the very next call, over REST and
 * gRPC; and on two servers sharing Redis sessions, an ending on one is
 * honoured by the other at once.
 */
import anyTest, { type ExecutionContext } from 'ava';
import type { Clock } from '../../../cmd/index.ts';
import { TEST_ADMIN_SECRET, startTestServer, type TestServer } from '../../helpers/server.ts';
import { redisUrl } from '../../helpers/databases.ts';
import { needs } from '../../helpers/needs.ts';

// Serial: every sign-up costs a bcrypt hash; one at a time keeps calls inside the client's deadline on a shared machine.
const test = anyTest.serial;

const PASSWORD = 'correct horse battery';
const ADMIN = { 'x-service-admin-secret': TEST_ADMIN_SECRET };
const MODEL = 'model\n  schema 1.1\ntype user\ntype doc\n  relations\n    define viewer: [user]\n';
const PATHS = ['rest', 'grpc'] as const;

class TestClock implements Clock {
  offsetMs = 0;
  now(): Date {
    return new Date(Date.now() + this.offsetMs);
  }
}

const clock = new TestClock();
let srv: TestServer;
let seq = 0;

anyTest.before(async () => {
  srv = await startTestServer({}, { clock });
  const model = await srv.call('fga_write_model', { dsl: MODEL }, { protocol: 'rest', headers: ADMIN });
  if (model.error) throw new Error(JSON.stringify(model.error));
});
anyTest.after.always(async () => {
  await srv?.close();
});

interface User {
  id: string;
  access: string;
  refresh: string;
  /** The consistency token of the write that granted the user `viewer` (so that another server answers from at least it). */
  consistency?: string;
}

async function signUp(server: TestServer): Promise<User> {
  const r = await server.call('signup', { email: `cache-${Date.now().toString(36)}-${seq++}@example.com`, password: PASSWORD }, { protocol: 'rest' });
  if (r.error) throw new Error(JSON.stringify(r.error));
  const id = (r.body!['user'] as { id: string }).id;
  return { id, access: String(r.body!['access_token']), refresh: String(r.body!['refresh_token']) };
}

const bearer = (u: User): Record<string, string> => ({ authorization: `Bearer ${u.access}` });
const checkInput = (u: User): Record<string, unknown> => ({ checks: [{ relation: 'viewer', object: 'doc:d' }], ...(u.consistency ? { consistency_token: u.consistency } : {}) });

/** Every call of the server path with the user's token: the answers while the session lives. */
async function assertServed(t: ExecutionContext, server: TestServer, u: User, times = 3): Promise<void> {
  for (let i = 0; i < times; i++) {
    for (const protocol of PATHS) {
      const check = await server.call('check_permissions', checkInput(u), { protocol, headers: bearer(u) });
      t.deepEqual(check.body?.['results'], [{ relation: 'viewer', object: 'doc:d', allowed: true }], `${protocol} check_permissions: ${JSON.stringify(check.error)}`);
      const valid = await server.call('validate_jwt_token', { token_type: 'access_token', token: u.access }, { protocol });
      t.is(valid.body?.['is_valid'], true, `${protocol} validate_jwt_token: ${JSON.stringify(valid.error)}`);
    }
  }
}

/** The next call on every path is refused as an unauthenticated caller. */
async function assertRefused(t: ExecutionContext, server: TestServer, u: User, what: string): Promise<void> {
  for (const protocol of PATHS) {
    const check = await server.call('check_permissions', checkInput(u), { protocol, headers: bearer(u) });
    t.is(check.error?.code, 'unauthenticated', `${what}: ${protocol} check_permissions answered ${JSON.stringify(check.body ?? check.error)}`);
    t.is(check.status, protocol === 'rest' ? 401 : 16);
    const valid = await server.call('validate_jwt_token', { token_type: 'access_token', token: u.access }, { protocol });
    t.is(valid.error?.code, 'unauthenticated', `${what}: ${protocol} validate_jwt_token answered ${JSON.stringify(valid.body ?? valid.error)}`);
    t.is(valid.error?.reason, 'invalid_token');
  }
}

async function grantViewer(u: User): Promise<void> {
  const w = await srv.call('fga_write_tuples', { tuples: [{ user: `user:${u.id}`, relation: 'viewer', object: 'doc:d' }] }, { protocol: 'rest', headers: ADMIN });
  if (w.error) throw new Error(JSON.stringify(w.error));
}

test('a logged-out token is refused on the next call, REST and gRPC, with every cache warm', async (t) => {
  const u = await signUp(srv);
  await grantViewer(u);
  await assertServed(t, srv, u);
  const out = await srv.call('logout', {}, { protocol: 'grpc', headers: bearer(u) });
  t.is(out.error, undefined);
  await assertRefused(t, srv, u, 'after logout');
});

test('a revoked refresh token ends its session: the access token of that session is refused next', async (t) => {
  const u = await signUp(srv);
  await grantViewer(u);
  await assertServed(t, srv, u);
  t.is((await srv.call('revoke', { refresh_token: u.refresh }, { protocol: 'rest' })).error, undefined);
  await assertRefused(t, srv, u, 'after revoke');
});

test("an admin's revoke_access and a user's deactivate_account are refused next; other users are untouched", async (t) => {
  const revoked = await signUp(srv);
  const deactivated = await signUp(srv);
  const bystander = await signUp(srv);
  for (const u of [revoked, deactivated, bystander]) {
    await grantViewer(u);
    await assertServed(t, srv, u, 2);
  }
  t.is((await srv.call('revoke_access', { user_id: revoked.id }, { protocol: 'grpc', headers: ADMIN })).error, undefined);
  await assertRefused(t, srv, revoked, 'after revoke_access');
  t.is((await srv.call('deactivate_account', {}, { protocol: 'rest', headers: bearer(deactivated) })).error, undefined);
  await assertRefused(t, srv, deactivated, 'after deactivate_account');
  await assertServed(t, srv, bystander, 1);
});

test('a verified token stops working when it expires, though its signature check is cached', async (t) => {
  const u = await signUp(srv);
  await grantViewer(u);
  await assertServed(t, srv, u);
  // Verification tolerates 30 s of skew past the token's own `exp` (whole seconds); the clock is set from that
  // `exp`, not from the time of sign-up, so that slow calls on a loaded machine cannot move the boundary.
  const exp = (JSON.parse(Buffer.from(u.access.split('.')[1]!, 'base64url').toString()) as { exp: number }).exp;
  t.true(exp * 1000 > Date.now() + 1700_000, 'access tokens live about 1800 s');
  const at = (secondsPastExp: number): number => exp * 1000 + secondsPastExp * 1000 - Date.now();
  clock.offsetMs = at(27);
  try {
    await assertServed(t, srv, u, 1);
    clock.offsetMs = at(31);
    await assertRefused(t, srv, u, 'after expiry');
  } finally {
    clock.offsetMs = 0;
  }
});

needs(test, 'redis')('two servers sharing Redis sessions: an ending on one is refused by the other on its next call', async (t) => {
  const url = redisUrl();
  if (url === undefined) {
    t.pass('LATCHKEY_TEST_REDIS_URL not set');
    return;
  }
  const a = await startTestServer({ 'redis-url': url });
  const b = await startTestServer({ ...a.database.flags, 'redis-url': url });
  try {
    const model = await a.call('fga_write_model', { dsl: MODEL }, { protocol: 'rest', headers: ADMIN });
    t.is(model.error, undefined);
    const users: User[] = [];
    for (let i = 0; i < 3; i++) users.push(await signUp(a));
    const [loggedOut, revoked, deactivated] = users as [User, User, User];
    for (const u of users) {
      const w = await a.call('fga_write_tuples', { tuples: [{ user: `user:${u.id}`, relation: 'viewer', object: 'doc:d' }] }, { protocol: 'rest', headers: ADMIN });
      t.is(w.error, undefined);
      u.consistency = String(w.body?.['consistency_token']);
      // B's caches are the ones under test: warm them there.
      await assertServed(t, b, u);
    }
    t.is((await a.call('logout', {}, { protocol: 'rest', headers: bearer(loggedOut) })).error, undefined);
    await assertRefused(t, b, loggedOut, 'logout on the other server');
    t.is((await a.call('revoke_access', { user_id: revoked.id }, { protocol: 'rest', headers: ADMIN })).error, undefined);
    await assertRefused(t, b, revoked, 'revoke_access on the other server');
    t.is((await a.call('deactivate_account', {}, { protocol: 'grpc', headers: bearer(deactivated) })).error, undefined);
    await assertRefused(t, b, deactivated, 'deactivate_account on the other server');
  } finally {
    await b.close();
    await a.close();
  }
});
