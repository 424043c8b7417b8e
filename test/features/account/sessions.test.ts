/**
 * The account center's session operations on every protocol: list_sessions
 * shows each session with its browser, IP, first and last seen and the
 * current flag; revoke_session ends one (its cookie and token are refused on
 * their next call) or all the others; a session of another user is
 * not_found; the admin forms list and end any user's sessions. The device is
 * recorded on every main database (SQLite, PostgreSQL, MySQL, DynamoDB), and
 * a session ended through one replica is refused by another that shares
 * Redis.
 */
import test from 'ava';
import { PROTOCOLS, TEST_ADMIN_SECRET, createServerDatabase, startTestServer, type CallOptions, type TestServer } from '../../helpers/server.ts';
import { mainBackends } from '../../helpers/main_databases.ts';
import { redisUrl } from '../../helpers/databases.ts';
import { needs } from '../../helpers/needs.ts';
import type { Protocol } from '../../../cmd/index.ts';

const PASSWORD = 'correct horse battery staple';
const FIREFOX = 'Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0';
const SAFARI_IPHONE = 'Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1';

interface Login {
  bearer: string;
  cookies: Record<string, string>;
  userId: string;
}

function cookiesOf(setCookies: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const c of setCookies) {
    const [pair] = c.split(';');
    const eq = pair!.indexOf('=');
    const value = pair!.slice(eq + 1);
    if (value !== '') out[pair!.slice(0, eq)] = value;
  }
  return out;
}

async function login(server: TestServer, email: string, userAgent: string, protocol: Protocol = 'rest'): Promise<Login> {
  const r = await server.call('login', { email, password: PASSWORD }, { protocol, headers: { 'user-agent': userAgent } });
  if (r.body === undefined) throw new Error(`login failed: ${JSON.stringify(r.error)}`);
  return { bearer: r.body['access_token'] as string, cookies: cookiesOf(r.setCookies), userId: (r.body['user'] as { id: string }).id };
}

const asBearer = (l: Login, protocol: Protocol): CallOptions => ({ protocol, headers: { authorization: `Bearer ${l.bearer}` } });
const asAdmin = (protocol: Protocol): CallOptions => ({ protocol, headers: { 'x-service-admin-secret': TEST_ADMIN_SECRET } });

interface Listed {
  id: string;
  browser: string;
  user_agent: string;
  ip: string;
  login_method: string;
  first_seen_at: number;
  last_seen_at: number;
  current: boolean;
}

async function signUp(server: TestServer, email: string): Promise<void> {
  const r = await server.call('signup', { email, password: PASSWORD }, { protocol: 'rest' });
  if (r.body === undefined) throw new Error(`signup failed: ${JSON.stringify(r.error)}`);
}

let server: TestServer;
test.before(async () => {
  server = await startTestServer();
});
test.after.always(async () => {
  await server?.close();
});

for (const protocol of PROTOCOLS) {
  test.serial(`${protocol}: list_sessions shows each session's device and the current one; revoke_session ends another, which is refused on its next call`, async (t) => {
    const email = `list-${protocol}@account.test`;
    await signUp(server, email);
    const laptop = await login(server, email, FIREFOX);
    const phone = await login(server, email, SAFARI_IPHONE);
    const before = Math.floor(Date.now() / 1000);

    const listed = await server.call('list_sessions', {}, asBearer(laptop, protocol));
    t.is(listed.error, undefined);
    const sessions = listed.body!['sessions'] as Listed[];
    // The sign-up opened a session too: three in all, each with its device.
    t.is(sessions.length, 3);
    const current = sessions.filter((s) => s.current);
    t.is(current.length, 1);
    t.is(current[0]!.browser, 'Firefox on Linux');
    t.is(current[0]!.user_agent, FIREFOX);
    t.is(current[0]!.ip, '127.0.0.1');
    t.is(current[0]!.login_method, 'basic_auth');
    t.true(current[0]!.first_seen_at <= current[0]!.last_seen_at);
    t.true(Math.abs(current[0]!.last_seen_at - before) <= 5);
    const other = sessions.find((s) => s.browser === 'Safari on iOS');
    t.truthy(other);
    t.false(other!.current);

    // The phone's session works until it is ended from the laptop.
    t.is((await server.call('profile', {}, asBearer(phone, protocol))).error, undefined);
    const revoked = await server.call('revoke_session', { id: other!.id }, asBearer(laptop, protocol));
    t.is(revoked.error, undefined);
    t.is(revoked.body!['revoked'], 1);
    const byToken = await server.call('profile', {}, asBearer(phone, protocol));
    t.is(byToken.error?.code, 'unauthenticated');
    const byCookie = await server.call('profile', {}, { protocol, cookies: phone.cookies });
    t.is(byCookie.error?.code, 'unauthenticated');
    t.is((await server.call('session', {}, { protocol, cookies: phone.cookies })).error?.code, 'unauthenticated');
    // The laptop's own session is untouched, and the list no longer shows the phone.
    const after = (await server.call('list_sessions', {}, asBearer(laptop, protocol))).body!['sessions'] as Listed[];
    t.is(after.length, 2);
    t.false(after.some((s) => s.id === other!.id));

    // all_others ends everything but the caller's session.
    const all = await server.call('revoke_session', { all_others: true }, asBearer(laptop, protocol));
    t.is(all.body?.['revoked'], 1);
    const left = (await server.call('list_sessions', {}, asBearer(laptop, protocol))).body!['sessions'] as Listed[];
    t.deepEqual(left.map((s) => s.current), [true]);
  });

  test.serial(`${protocol}: revoke_session refuses another user's session, a bad request and an anonymous caller`, async (t) => {
    const ann = `ann-${protocol}@account.test`;
    const bob = `bob-${protocol}@account.test`;
    await signUp(server, ann);
    await signUp(server, bob);
    const a = await login(server, ann, FIREFOX);
    const b = await login(server, bob, FIREFOX);
    const bobs = (await server.call('list_sessions', {}, asBearer(b, protocol))).body!['sessions'] as Listed[];
    const foreign = await server.call('revoke_session', { id: bobs[0]!.id }, asBearer(a, protocol));
    t.is(foreign.error?.code, 'not_found');
    t.is(foreign.error?.reason, 'session_not_found');
    // Bob's session lives on.
    t.is((await server.call('profile', {}, asBearer(b, protocol))).error, undefined);
    const unknown = await server.call('revoke_session', { id: 'no-such-session' }, asBearer(a, protocol));
    t.is(unknown.error?.reason, 'session_not_found');
    t.is(unknown.error?.message, foreign.error?.message);
    const neither = await server.call('revoke_session', {}, asBearer(a, protocol));
    t.is(neither.error?.code, 'invalid_argument');
    t.is(neither.error?.reason, 'invalid_revoke_session_request');
    const both = await server.call('revoke_session', { id: bobs[0]!.id, all_others: true }, asBearer(a, protocol));
    t.is(both.error?.reason, 'invalid_revoke_session_request');
    const tooLong = await server.call('revoke_session', { id: 'x'.repeat(65) }, asBearer(a, protocol));
    t.is(tooLong.error?.code, 'invalid_argument');
    t.is((await server.call('list_sessions', {}, { protocol })).error?.code, 'unauthenticated');
    t.is((await server.call('revoke_session', { all_others: true }, { protocol })).error?.code, 'unauthenticated');
  });

  test.serial(`${protocol}: ending the current session signs the caller out and clears the cookies, as logout does`, async (t) => {
    const email = `self-${protocol}@account.test`;
    await signUp(server, email);
    const l = await login(server, email, FIREFOX);
    const mine = ((await server.call('list_sessions', {}, { protocol, cookies: l.cookies })).body!['sessions'] as Listed[]).find((s) => s.current)!;
    const ended = await server.call('revoke_session', { id: mine.id }, { protocol, cookies: l.cookies });
    t.is(ended.error, undefined);
    t.true(ended.setCookies.some((c) => /^cookie_session=;/.test(c) && /Max-Age=0/.test(c)), ended.setCookies.join(' | '));
    t.is((await server.call('profile', {}, { protocol, cookies: l.cookies })).error?.code, 'unauthenticated');
    t.is((await server.call('profile', {}, asBearer(l, protocol))).error?.code, 'unauthenticated');
  });

  test.serial(`${protocol}: the admin lists any user's sessions and ends one`, async (t) => {
    const email = `admin-view-${protocol}@account.test`;
    await signUp(server, email);
    const l = await login(server, email, SAFARI_IPHONE);
    const listed = await server.call('admin_list_sessions', { user_id: l.userId }, asAdmin(protocol));
    t.is(listed.error, undefined);
    const sessions = listed.body!['sessions'] as Listed[];
    t.is(sessions.length, 2);
    t.false(sessions.some((s) => s.current));
    const phone = sessions.find((s) => s.browser === 'Safari on iOS')!;
    t.is((await server.call('admin_revoke_session', { id: phone.id }, asAdmin(protocol))).body?.['revoked'], 1);
    t.is((await server.call('profile', {}, asBearer(l, protocol))).error?.code, 'unauthenticated');
    t.is((await server.call('admin_revoke_session', { id: phone.id }, asAdmin(protocol))).error?.reason, 'session_not_found');
    t.is((await server.call('admin_list_sessions', { user_id: 'nobody' }, asAdmin(protocol))).error?.reason, 'user_not_found');
    // A user's token is no admin credential.
    t.is((await server.call('admin_list_sessions', { user_id: l.userId }, asBearer(l, protocol))).error?.code, 'unauthenticated');
  });
}

for (const backend of mainBackends()) {
  test(`${backend}: the device of a session is recorded at login and refresh, and gone once the session ends`, async (t) => {
    const s = await startTestServer({}, { backend });
    t.teardown(() => s.close());
    const email = `device-${backend}@account.test`;
    await signUp(s, email);
    const l = await login(s, email, FIREFOX);
    const first = ((await s.call('list_sessions', {}, asBearer(l, 'rest'))).body!['sessions'] as Listed[]).find((x) => x.current)!;
    t.is(first.browser, 'Firefox on Linux');
    // A refresh from another agent (the same session, a rotated cookie) updates the device and keeps the first time.
    const refreshed = await s.call('session', {}, { protocol: 'rest', cookies: l.cookies, headers: { 'user-agent': SAFARI_IPHONE } });
    t.is(refreshed.error, undefined);
    const bearer2 = refreshed.body!['access_token'] as string;
    const again = ((await s.call('list_sessions', {}, { protocol: 'rest', headers: { authorization: `Bearer ${bearer2}` } })).body!['sessions'] as Listed[]).find((x) => x.current)!;
    t.is(again.id, first.id);
    t.is(again.browser, 'Safari on iOS');
    t.is(again.first_seen_at, first.first_seen_at);
    t.true(again.last_seen_at >= first.last_seen_at);
    t.is((await s.call('logout', {}, { protocol: 'rest', headers: { authorization: `Bearer ${bearer2}` } })).error, undefined);
    const listed = (await s.call('admin_list_sessions', { user_id: l.userId }, asAdmin('rest'))).body!['sessions'] as Listed[];
    t.false(listed.some((x) => x.id === first.id));
  });
}

needs(test, 'redis')('a session ended through one replica is refused by another that shares Redis', async (t) => {
  const database = await createServerDatabase('sqlite');
  t.teardown(() => database.drop());
  const flags = { 'redis-url': redisUrl()!, 'client-id': `account-${process.pid}-${Date.now()}` };
  const one = await startTestServer(flags, { database });
  t.teardown(() => one.close());
  const two = await startTestServer(flags, { database });
  t.teardown(() => two.close());
  const email = `replicas-${Date.now()}@account.test`;
  await signUp(one, email);
  const laptop = await login(one, email, FIREFOX);
  const phone = await login(two, email, SAFARI_IPHONE);
  t.is((await two.call('profile', {}, asBearer(phone, 'rest'))).error, undefined);
  const sessions = (await one.call('list_sessions', {}, asBearer(laptop, 'rest'))).body!['sessions'] as Listed[];
  const phoneSession = sessions.find((s) => s.browser === 'Safari on iOS')!;
  t.truthy(phoneSession);
  t.is((await one.call('revoke_session', { id: phoneSession.id }, asBearer(laptop, 'rest'))).error, undefined);
  t.is((await two.call('profile', {}, asBearer(phone, 'rest'))).error?.code, 'unauthenticated');
  t.is((await two.call('profile', {}, { protocol: 'rest', cookies: phone.cookies })).error?.code, 'unauthenticated');
});
