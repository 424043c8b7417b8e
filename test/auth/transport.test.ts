import anyTest from 'ava';

// Serial: every sign-up and login costs a real bcrypt hash at cost 10; run one at a time so that
// calls stay well inside the client's deadline on a shared 2-core machine.
const test = anyTest.serial;
import { PROTOCOLS, TEST_ADMIN_SECRET, startTestServer, type TestServer, type CallResult } from '../helpers/server.ts';
import bcrypt from 'bcrypt';
import { openSequelize } from '../../engine/sql/sqlite_sequelize.ts';
import { createTestDatabase, redisUrl, sqlBackends } from '../helpers/databases.ts';
import { mainBackends } from '../helpers/main_databases.ts';
import { createLocalJWKSet, jwtVerify } from 'jose';
import { pemPair } from './fixtures.ts';

const PASSWORD = 'correct horse battery';
let srv: TestServer;

anyTest.before(async () => {
  srv = await startTestServer();
});
anyTest.after.always(async () => {
  await srv?.close();
});

/** name → {value, attributes (lower-cased names)} of each Set-Cookie. */
function cookiesOf(r: CallResult): Map<string, { value: string; attrs: Map<string, string> }> {
  const out = new Map<string, { value: string; attrs: Map<string, string> }>();
  for (const line of r.setCookies) {
    const [pair, ...rest] = line.split(';').map((p) => p.trim());
    const eq = pair!.indexOf('=');
    const attrs = new Map<string, string>();
    for (const a of rest) {
      const i = a.indexOf('=');
      attrs.set((i < 0 ? a : a.slice(0, i)).toLowerCase(), i < 0 ? '' : a.slice(i + 1));
    }
    out.set(pair!.slice(0, eq), { value: pair!.slice(eq + 1), attrs });
  }
  return out;
}

const bearer = (token: unknown) => ({ authorization: `Bearer ${String(token)}` });
let seq = 0;
const email = (tag: string) => `${tag}-${Date.now().toString(36)}-${seq++}@example.com`;

for (const protocol of PROTOCOLS) {
  test(`${protocol}: signup returns an AuthResponse and sets HttpOnly, Secure, SameSite session cookies`, async (t) => {
    const r = await srv.call('signup', { email: email('signup'), password: PASSWORD, given_name: 'Sam' }, { protocol });
    t.is(r.error, undefined);
    const body = r.body!;
    t.is(typeof body['access_token'], 'string');
    t.is(typeof body['id_token'], 'string');
    t.is(typeof body['refresh_token'], 'string');
    t.is(body['expires_in'], 1800);
    t.is((body['user'] as Record<string, unknown>)['given_name'], 'Sam');
    t.false('password' in (body['user'] as Record<string, unknown>));
    const cookies = cookiesOf(r);
    for (const name of ['cookie_session', 'cookie_session_domain']) {
      const c = cookies.get(name);
      t.truthy(c, name);
      t.true(c!.value.length >= 40);
      t.true(c!.attrs.has('httponly'));
      t.true(c!.attrs.has('secure'));
      t.is(c!.attrs.get('samesite'), 'None');
      t.is(c!.attrs.get('path'), '/');
      t.is(c!.attrs.get('max-age'), '86400');
    }
    t.is(cookies.get('cookie_session')!.value, cookies.get('cookie_session_domain')!.value);
  });

  test(`${protocol}: login, profile by bearer and by cookie, session rotation, logout kills token and cookie`, async (t) => {
    const e = email('flow');
    await srv.call('signup', { email: e, password: PASSWORD }, { protocol });
    const login = await srv.call('login', { email: e.toUpperCase(), password: PASSWORD }, { protocol });
    t.is(login.error, undefined);
    const token = login.body!['access_token'];
    const cookie = cookiesOf(login).get('cookie_session')!.value;
    const byBearer = await srv.call('profile', {}, { protocol, headers: bearer(token) });
    t.is(byBearer.body?.['email'], e);
    const byCookie = await srv.call('profile', {}, { protocol, cookies: { cookie_session: cookie } });
    t.is(byCookie.body?.['email'], e);
    const byDomainCookie = await srv.call('profile', {}, { protocol, cookies: { cookie_session_domain: cookie } });
    t.is(byDomainCookie.body?.['id'], byCookie.body?.['id']);
    const session = await srv.call('session', {}, { protocol, cookies: { cookie_session: cookie } });
    t.is(session.error, undefined);
    const rotated = cookiesOf(session).get('cookie_session')!.value;
    t.not(rotated, cookie);
    t.is((await srv.call('profile', {}, { protocol, cookies: { cookie_session: cookie } })).error?.code, 'unauthenticated');
    const out = await srv.call('logout', {}, { protocol, headers: bearer(session.body!['access_token']) });
    t.deepEqual(out.body, { message: 'Logged out successfully' });
    const cleared = cookiesOf(out).get('cookie_session');
    t.is(cleared?.attrs.get('max-age'), '0');
    t.is((await srv.call('profile', {}, { protocol, headers: bearer(session.body!['access_token']) })).error?.code, 'unauthenticated');
    t.is((await srv.call('profile', {}, { protocol, cookies: { cookie_session: rotated } })).error?.code, 'unauthenticated');
    t.is((await srv.call('profile', {}, { protocol })).error?.code, 'unauthenticated');
  });

  test(`${protocol}: login failures share one code and message; duplicate sign-up gives the spec message`, async (t) => {
    const e = email('fail');
    await srv.call('signup', { email: e, password: PASSWORD }, { protocol });
    const wrong = await srv.call('login', { email: e, password: 'not the password' }, { protocol });
    const unknown = await srv.call('login', { email: email('nobody'), password: PASSWORD }, { protocol });
    t.deepEqual(wrong.error, unknown.error);
    t.is(wrong.error?.code, 'unauthenticated');
    t.is(wrong.error?.message, 'invalid credentials');
    t.is(wrong.setCookies.length, 0);
    const dup = await srv.call('signup', { email: ` ${e.toUpperCase()} `, password: PASSWORD }, { protocol });
    t.is(dup.error?.code, 'already_exists');
    t.is(dup.error?.message, 'user with given email already exists');
    const weak = await srv.call('signup', { email: email('weak'), password: 'short' }, { protocol });
    t.is(weak.error?.code, 'invalid_argument');
  });

  test(`${protocol}: update_profile with password change ends other sessions; deactivate_account refuses login after`, async (t) => {
    const e = email('upd');
    const s1 = await srv.call('signup', { email: e, password: PASSWORD }, { protocol });
    const s2 = await srv.call('login', { email: e, password: PASSWORD }, { protocol });
    const r = await srv.call('update_profile', { given_name: 'New', old_password: PASSWORD, new_password: 'a brand new phrase' }, { protocol, headers: bearer(s2.body!['access_token']) });
    t.deepEqual(r.body, { message: 'Profile successfully updated.' });
    t.is((await srv.call('profile', {}, { protocol, headers: bearer(s1.body!['access_token']) })).error?.code, 'unauthenticated');
    const me = await srv.call('profile', {}, { protocol, headers: bearer(s2.body!['access_token']) });
    t.is(me.body?.['given_name'], 'New');
    const d = await srv.call('deactivate_account', {}, { protocol, headers: bearer(s2.body!['access_token']) });
    t.deepEqual(d.body, { message: 'Account deactivated successfully' });
    t.is((await srv.call('profile', {}, { protocol, headers: bearer(s2.body!['access_token']) })).error?.code, 'unauthenticated');
    t.is((await srv.call('login', { email: e, password: 'a brand new phrase' }, { protocol })).error?.code, 'unauthenticated');
  });

  test(`${protocol}: validate_jwt_token, validate_session and revoke`, async (t) => {
    const s = await srv.call('signup', { email: email('val'), password: PASSWORD }, { protocol });
    const body = s.body!;
    const v = await srv.call('validate_jwt_token', { token_type: 'access_token', token: body['access_token'] }, { protocol });
    t.is(v.body?.['is_valid'], true);
    t.is((v.body?.['claims'] as Record<string, unknown>)['sub'], (body['user'] as Record<string, unknown>)['id']);
    t.is((await srv.call('validate_jwt_token', { token_type: 'access_token', token: body['id_token'] }, { protocol })).error?.code, 'unauthenticated');
    t.is((await srv.call('validate_jwt_token', { token_type: 'nonsense', token: body['id_token'] }, { protocol })).error?.code, 'invalid_argument');
    const cookie = cookiesOf(s).get('cookie_session')!.value;
    const vs = await srv.call('validate_session', { cookie }, { protocol });
    t.is(vs.body?.['is_valid'], true);
    t.is((vs.body?.['user'] as Record<string, unknown>)['id'], (body['user'] as Record<string, unknown>)['id']);
    const fromRequestCookie = await srv.call('validate_session', {}, { protocol, cookies: { cookie_session: cookie } });
    t.is(fromRequestCookie.body?.['is_valid'], true);
    t.deepEqual((await srv.call('revoke', { refresh_token: body['refresh_token'] }, { protocol })).body, { message: 'Token revoked successfully' });
    t.is((await srv.call('validate_jwt_token', { token_type: 'refresh_token', token: body['refresh_token'] }, { protocol })).error?.code, 'unauthenticated');
    t.is((await srv.call('validate_session', { cookie }, { protocol })).error?.code, 'unauthenticated');
  });

  test(`${protocol}: session with a refresh token rotates it; replay is refused`, async (t) => {
    const s = await srv.call('signup', { email: email('rt'), password: PASSWORD }, { protocol });
    const rt1 = s.body!['refresh_token'];
    const r = await srv.call('session', { refresh_token: rt1 }, { protocol, headers: bearer(s.body!['access_token']) });
    t.is(r.error, undefined);
    t.not(r.body!['refresh_token'], rt1);
    const replay = await srv.call('session', { refresh_token: rt1 }, { protocol, headers: bearer(r.body!['access_token']) });
    t.is(replay.error?.code, 'unauthenticated');
  });
}

test('check_permissions and list_permissions over every protocol: pinned subject, order, contextual tuples, 403, 400, 401', async (t) => {
  const admin = { 'x-service-admin-secret': TEST_ADMIN_SECRET };
  const model = await srv.call('fga_write_model', { dsl: 'model\n  schema 1.1\ntype user\ntype document\n  relations\n    define viewer: [user]\n    define editor: [user]\n' }, { protocol: 'rest', headers: admin });
  t.is(model.error, undefined, JSON.stringify(model.error));
  const s = await srv.call('signup', { email: email('perm'), password: PASSWORD }, { protocol: 'rest' });
  const uid = (s.body!['user'] as Record<string, unknown>)['id'] as string;
  const w = await srv.call('fga_write_tuples', { tuples: [{ user: `user:${uid}`, relation: 'viewer', object: 'document:2' }, { user: 'user:other', relation: 'viewer', object: 'document:1' }] }, { protocol: 'rest', headers: admin });
  t.is(w.error, undefined, JSON.stringify(w.error));
  const auth = bearer(s.body!['access_token']);
  const checks = [
    { relation: 'viewer', object: 'document:1' },
    { relation: 'viewer', object: 'document:2' },
    { relation: 'editor', object: 'document:3', contextual_tuples: [{ user: `user:${uid}`, relation: 'editor', object: 'document:3' }] },
  ];
  for (const protocol of PROTOCOLS) {
    const r = await srv.call('check_permissions', { checks }, { protocol, headers: auth });
    t.deepEqual(r.body, {
      results: [
        { relation: 'viewer', object: 'document:1', allowed: false },
        { relation: 'viewer', object: 'document:2', allowed: true },
        { relation: 'editor', object: 'document:3', allowed: true },
      ],
    }, protocol);
    const after = await srv.call('check_permissions', { checks: [{ relation: 'editor', object: 'document:3' }] }, { protocol, headers: auth });
    t.false((after.body!['results'] as Array<{ allowed: boolean }>)[0]!.allowed, `${protocol}: contextual tuple not persisted`);
    t.is((await srv.call('check_permissions', { checks, user: 'user:other' }, { protocol, headers: auth })).error?.code, 'permission_denied', protocol);
    const asAdmin = await srv.call('check_permissions', { checks: [checks[0]!], user: 'other' }, { protocol, headers: admin });
    t.true((asAdmin.body!['results'] as Array<{ allowed: boolean }>)[0]!.allowed, protocol);
    t.is((await srv.call('check_permissions', { checks: [] }, { protocol, headers: auth })).error?.code, 'invalid_argument', protocol);
    t.is((await srv.call('check_permissions', { checks: Array(101).fill(checks[0]) }, { protocol, headers: auth })).error?.code, 'invalid_argument', protocol);
    t.is((await srv.call('check_permissions', { checks }, { protocol })).error?.code, 'unauthenticated', protocol);
    const lp = await srv.call('list_permissions', {}, { protocol, headers: auth });
    t.deepEqual(lp.body, { objects: ['document:2'], permissions: [{ object: 'document:2', relation: 'viewer' }], undecided_permissions: [], truncated: false, continuation_token: '', deadline_exceeded: false }, protocol);
    const narrowed = await srv.call('list_permissions', { relation: 'viewer', object_type: 'document' }, { protocol, headers: auth });
    t.deepEqual(narrowed.body?.['objects'], ['document:2'], protocol);
    t.is((await srv.call('list_permissions', { user: 'user:other' }, { protocol, headers: auth })).error?.code, 'permission_denied', protocol);
    // required_relations of validate_jwt_token go through the same engine.
    const ok = await srv.call('validate_jwt_token', { token_type: 'access_token', token: s.body!['access_token'], required_relations: [{ relation: 'viewer', object: 'document:2' }] }, { protocol });
    t.is(ok.body?.['is_valid'], true, protocol);
    const denied = await srv.call('validate_jwt_token', { token_type: 'access_token', token: s.body!['access_token'], required_relations: [{ relation: 'viewer', object: 'document:1' }] }, { protocol });
    t.is(denied.error?.code, 'permission_denied', protocol);
  }
});

test('when the FGA store cannot be opened, identity works and permission operations answer 400 failed_precondition with the spec message on every protocol', async (t) => {
  const plain = await startTestServer({ 'fga-store': 'postgres', 'fga-store-url': 'postgres://latchkey@127.0.0.1:1/unreachable' });
  try {
    const s = await plain.call('signup', { email: email('nofga'), password: PASSWORD }, { protocol: 'rest' });
    for (const protocol of PROTOCOLS) {
      const r = await plain.call('check_permissions', { checks: [{ relation: 'viewer', object: 'document:1' }] }, { protocol, headers: bearer(s.body!['access_token']) });
      t.is(r.error?.code, 'failed_precondition', protocol);
      t.is(r.error?.message, 'fga is not enabled on this server', protocol);
      if (protocol === 'rest') t.is(r.status, 400);
      const l = await plain.call('list_permissions', {}, { protocol, headers: bearer(s.body!['access_token']) });
      t.is(l.error?.code, 'failed_precondition', protocol);
    }
  } finally {
    await plain.close();
  }
});

test('discovery and JWKS documents are served for other services (HS256: empty key set)', async (t) => {
  const d = await fetch(`${srv.httpUrl}/.well-known/openid-configuration`);
  t.is(d.status, 200);
  t.regex(d.headers.get('cache-control') ?? '', /max-age=300/);
  const doc = (await d.json()) as Record<string, unknown>;
  t.is(doc['jwks_uri'], `${doc['issuer'] as string}/.well-known/jwks.json`);
  const j = await fetch(`${srv.httpUrl}/.well-known/jwks.json`);
  t.deepEqual(await j.json(), { keys: [] });
});

test('REST: a locked-out login answers 429 resource_exhausted with Retry-After', async (t) => {
  const e = email('lock');
  await srv.call('signup', { email: e, password: PASSWORD }, { protocol: 'rest' });
  for (let i = 0; i < 5; i++) await srv.call('login', { email: e, password: 'wrong wrong wrong' }, { protocol: 'rest' });
  const locked = await srv.call('login', { email: e, password: PASSWORD }, { protocol: 'rest' });
  t.is(locked.status, 429);
  t.is(locked.error?.code, 'resource_exhausted');
  t.regex(locked.headers['retry-after'] ?? '', /^[1-9]\d*$/);
});

for (const backend of mainBackends()) {
  test(`E1 on the wire (${backend}): 20 parallel REST sign-ups with one email make exactly one user, never a 500`, async (t) => {
    // On DynamoDB the FGA store is named (Versioning §7: FGA is off on a NoSQL main database otherwise).
    const server = backend === 'sqlite' ? srv : await startTestServer(backend === 'dynamodb' ? { 'fga-store': 'memory' } : {}, { backend });
    try {
      const base = email('race');
      const variants = Array.from({ length: 20 }, (_, i) => (i % 2 ? ` ${base.toUpperCase()}` : base));
      const results = await Promise.all(variants.map((e, i) => server.call('signup', { email: e, password: PASSWORD }, { protocol: PROTOCOLS[i % 3]! })));
      t.is(results.filter((r) => r.error === undefined).length, 1);
      for (const r of results.filter((x) => x.error !== undefined)) {
        t.is(r.error?.code, 'already_exists');
        t.is(r.error?.message, 'user with given email already exists');
      }
      // The FGA store defaults to the same main database (SQL), or is the memory store (DynamoDB).
      const winner = results.find((r) => r.error === undefined)!;
      const uid = (winner.body!['user'] as Record<string, unknown>)['id'] as string;
      const admin = { 'x-service-admin-secret': TEST_ADMIN_SECRET };
      t.is((await server.call('fga_write_model', { dsl: 'model\n  schema 1.1\ntype user\ntype doc\n  relations\n    define viewer: [user]\n' }, { protocol: 'rest', headers: admin })).error, undefined);
      t.is((await server.call('fga_write_tuples', { tuples: [{ user: `user:${uid}`, relation: 'viewer', object: `doc:${backend}` }] }, { protocol: 'rest', headers: admin })).error, undefined);
      const check = await server.call('check_permissions', { checks: [{ relation: 'viewer', object: `doc:${backend}` }] }, { protocol: 'rest', headers: bearer(winner.body!['access_token']) });
      t.deepEqual(check.body, { results: [{ relation: 'viewer', object: `doc:${backend}`, allowed: true }] });
    } finally {
      if (server !== srv) await server.close();
    }
  });
}

const redis = redisUrl();
if (redis) {
  test('two server processes sharing Redis and one database share sessions (--redis-url)', async (t) => {
    const a = await startTestServer({ 'redis-url': redis });
    const b = await startTestServer({ 'redis-url': redis, 'database-type': a.database.backend, 'database-url': a.database.url });
    try {
      const s = await a.call('signup', { email: email('redis'), password: PASSWORD }, { protocol: 'rest' });
      const cookie = cookiesOf(s).get('cookie_session')!.value;
      t.is((await b.call('profile', {}, { protocol: 'grpc', cookies: { cookie_session: cookie } })).error, undefined);
      await b.call('logout', {}, { protocol: 'graphql', headers: bearer(s.body!['access_token']) });
      t.is((await a.call('profile', {}, { protocol: 'rest', cookies: { cookie_session: cookie } })).error?.code, 'unauthenticated');
      t.is((await a.call('profile', {}, { protocol: 'rest', headers: bearer(s.body!['access_token']) })).error?.code, 'unauthenticated');
    } finally {
      await b.close();
      await a.close();
    }
  });
}

test('A1 audit: a failed login is audited as user.login_failed with its internal reason, which the client never sees', async (t) => {
  const admin = { 'x-service-admin-secret': TEST_ADMIN_SECRET };
  const e = email('audit');
  const s = await srv.call('signup', { email: e, password: PASSWORD }, { protocol: 'rest' });
  const uid = (s.body!['user'] as Record<string, unknown>)['id'] as string;
  const wrong = await srv.call('login', { email: e, password: 'wrong wrong wrong' }, { protocol: 'rest' });
  t.false(JSON.stringify(wrong.error).includes('wrong_password'));
  const ok = await srv.call('login', { email: e, password: PASSWORD }, { protocol: 'rest' });
  t.is(ok.error, undefined);
  const logs = await srv.call('audit_logs', { actor_id: uid }, { protocol: 'rest', headers: admin });
  t.is(logs.error, undefined, JSON.stringify(logs.error));
  const rows = logs.body!['audit_logs'] as Array<Record<string, unknown>>;
  const actions = rows.map((r) => r['action']);
  t.true(actions.includes('user.signup'));
  t.true(actions.includes('user.login_success'));
  const failed = rows.find((r) => r['action'] === 'user.login_failed');
  t.truthy(failed);
  t.regex(String(failed!['metadata']), /wrong_password/);
  t.false(JSON.stringify(rows).includes(PASSWORD));
});

test('B4 on the wire: login with a pre-set session cookie issues a new one; insecure config gives SameSite=Lax without Secure', async (t) => {
  const insecure = await startTestServer({ 'app-cookie-secure': false });
  try {
    const e = email('fixation');
    const s = await insecure.call('signup', { email: e, password: PASSWORD }, { protocol: 'rest' });
    const old = cookiesOf(s).get('cookie_session')!;
    t.false(old.attrs.has('secure'));
    t.is(old.attrs.get('samesite'), 'Lax');
    t.true(old.attrs.has('httponly'));
    const l = await insecure.call('login', { email: e, password: PASSWORD }, { protocol: 'rest', cookies: { cookie_session: old.value } });
    const fresh = cookiesOf(l).get('cookie_session')!;
    t.not(fresh.value, old.value);
    t.is((await insecure.call('profile', {}, { protocol: 'rest', cookies: { cookie_session: old.value } })).error?.code, 'unauthenticated');
    t.is((await insecure.call('profile', {}, { protocol: 'rest', cookies: { cookie_session: fresh.value } })).error, undefined);
  } finally {
    await insecure.close();
  }
});

test('the session check by cookie (profile, validate_session): the presented session, an explicit cookie, a bearer beside a cookie, roles, logout, deactivation and revocation, on every protocol', async (t) => {
  const admin = { 'x-service-admin-secret': TEST_ADMIN_SECRET };
  const idOf = (r: CallResult): unknown => (r.body?.['user'] as Record<string, unknown> | undefined)?.['id'];
  const a = await srv.call('signup', { email: email('check-a'), password: PASSWORD }, { protocol: 'rest' });
  const b = await srv.call('signup', { email: email('check-b'), password: PASSWORD }, { protocol: 'rest' });
  const [ua, ub] = [idOf(a), idOf(b)];
  const ca = cookiesOf(a).get('cookie_session')!.value;
  const cb = cookiesOf(b).get('cookie_session')!.value;
  for (const protocol of PROTOCOLS) {
    const asA = { protocol, cookies: { cookie_session: ca } };
    t.is((await srv.call('profile', {}, asA)).body?.['id'], ua, protocol);
    t.is(idOf(await srv.call('validate_session', {}, asA)), ua, protocol);
    // The cookie in the input is the one checked, not the request's.
    t.is(idOf(await srv.call('validate_session', { cookie: cb }, asA)), ub, protocol);
    t.is((await srv.call('validate_session', { cookie: 'not-a-session' }, asA)).error?.code, 'unauthenticated', protocol);
    // A bearer token of B beside A's cookie: validate_session checks the cookie, profile answers for the bearer.
    const both = { protocol, cookies: { cookie_session: ca }, headers: bearer(b.body!['access_token']) };
    t.is(idOf(await srv.call('validate_session', {}, both)), ua, protocol);
    t.is((await srv.call('profile', {}, both)).body?.['id'], ub, protocol);
    t.is(idOf(await srv.call('validate_session', { roles: ['user'] }, asA)), ua, protocol);
    const missing = await srv.call('validate_session', { roles: ['admin'] }, asA);
    t.is(missing.error?.code, 'permission_denied', protocol);
    t.is(missing.error?.reason, 'missing_role', protocol);
  }
  // B signs out by cookie: its session is gone for both checks at once.
  t.is((await srv.call('logout', {}, { protocol: 'rest', cookies: { cookie_session: cb } })).error, undefined);
  for (const protocol of PROTOCOLS) {
    t.is((await srv.call('profile', {}, { protocol, cookies: { cookie_session: cb } })).error?.code, 'unauthenticated', protocol);
    t.is((await srv.call('validate_session', {}, { protocol, cookies: { cookie_session: cb } })).error?.code, 'unauthenticated', protocol);
    t.is((await srv.call('validate_session', { cookie: cb }, { protocol, cookies: { cookie_session: ca } })).error?.code, 'unauthenticated', protocol);
  }
  // Rows that say deactivated or revoked while their sessions are still stored: refused by the user read.
  const c = await srv.call('signup', { email: email('check-c'), password: PASSWORD }, { protocol: 'rest' });
  const d = await srv.call('signup', { email: email('check-d'), password: PASSWORD }, { protocol: 'rest' });
  const [cc, cd] = [cookiesOf(c).get('cookie_session')!.value, cookiesOf(d).get('cookie_session')!.value];
  const users = srv.server.services.auth!.users;
  await users.update(idOf(c) as string, { deactivated_at: Math.floor(Date.now() / 1000) });
  await users.update(idOf(d) as string, { revoked_timestamp: Math.floor(Date.now() / 1000) });
  // And A's access revoked by the admin API.
  t.is((await srv.call('revoke_access', { user_id: ua }, { protocol: 'rest', headers: admin })).error, undefined);
  for (const protocol of PROTOCOLS) {
    for (const cookie of [ca, cc, cd]) {
      t.is((await srv.call('profile', {}, { protocol, cookies: { cookie_session: cookie } })).error?.code, 'unauthenticated', protocol);
      t.is((await srv.call('validate_session', {}, { protocol, cookies: { cookie_session: cookie } })).error?.code, 'unauthenticated', protocol);
    }
  }
});

test('B6 on the wire: admin revoke_access kills the user token and session on the next request, on every protocol', async (t) => {
  const admin = { 'x-service-admin-secret': TEST_ADMIN_SECRET };
  const s = await srv.call('signup', { email: email('revoked'), password: PASSWORD }, { protocol: 'rest' });
  const uid = (s.body!['user'] as Record<string, unknown>)['id'] as string;
  const cookie = cookiesOf(s).get('cookie_session')!.value;
  const r = await srv.call('revoke_access', { user_id: uid }, { protocol: 'rest', headers: admin });
  t.is(r.error, undefined, JSON.stringify(r.error));
  for (const protocol of PROTOCOLS) {
    t.is((await srv.call('profile', {}, { protocol, headers: bearer(s.body!['access_token']) })).error?.code, 'unauthenticated', protocol);
    t.is((await srv.call('profile', {}, { protocol, cookies: { cookie_session: cookie } })).error?.code, 'unauthenticated', protocol);
    t.is((await srv.call('validate_jwt_token', { token_type: 'id_token', token: s.body!['id_token'] }, { protocol })).error?.code, 'unauthenticated', protocol);
  }
  t.is((await srv.call('revoke', { refresh_token: s.body!['refresh_token'] }, { protocol: 'rest' })).error, undefined);
});

for (const alg of ['RS256', 'ES384', 'PS512'] as const) {
  test(`--jwt-type ${alg}: the JWKS document lets another service verify our access and id tokens`, async (t) => {
    const keys = pemPair(alg);
    const server = await startTestServer({ 'jwt-type': alg, 'jwt-private-key': keys.privateKey, 'jwt-public-key': keys.publicKey, url: 'https://auth.example.com' });
    try {
      const s = await server.call('signup', { email: email('jwks'), password: PASSWORD }, { protocol: 'grpc' });
      t.is(s.error, undefined, JSON.stringify(s.error));
      const jwks = (await (await fetch(`${server.httpUrl}/.well-known/jwks.json`)).json()) as { keys: Array<Record<string, unknown>> };
      t.is(jwks.keys.length, 1);
      t.is(jwks.keys[0]!['alg'], alg);
      t.false('d' in jwks.keys[0]!);
      const discovery = (await (await fetch(`${server.httpUrl}/.well-known/openid-configuration`)).json()) as Record<string, unknown>;
      t.is(discovery['issuer'], 'https://auth.example.com');
      t.deepEqual(discovery['id_token_signing_alg_values_supported'], [alg]);
      const set = createLocalJWKSet(jwks as never);
      for (const token of [s.body!['access_token'], s.body!['id_token']]) {
        const { payload } = await jwtVerify(String(token), set, { issuer: 'https://auth.example.com', audience: 'test-client-id' });
        t.is(payload.sub, (s.body!['user'] as Record<string, unknown>)['id'] as string);
      }
      // The domain cookie is scoped to the registrable domain of --url.
      t.is(cookiesOf(s).get('cookie_session_domain')?.attrs.get('domain'), '.example.com');
      t.false(cookiesOf(s).get('cookie_session')!.attrs.has('domain'));
    } finally {
      await server.close();
    }
  });
}

test('sign-up flags on the wire: --enable-signup=false refuses; --roles/--default-roles/--protected-roles are honoured', async (t) => {
  const closed = await startTestServer({ 'enable-signup': false });
  try {
    for (const protocol of PROTOCOLS) {
      const r = await closed.call('signup', { email: email('closed'), password: PASSWORD }, { protocol });
      t.is(r.error?.code, 'failed_precondition', protocol);
    }
  } finally {
    await closed.close();
  }
  const roles = await startTestServer({ roles: 'user,editor,admin', 'default-roles': 'user', 'protected-roles': 'admin', 'enable-mobile-basic-authentication': true });
  try {
    for (const protocol of PROTOCOLS) {
      t.is((await roles.call('signup', { email: email('adm'), password: PASSWORD, roles: ['admin'] }, { protocol })).error?.code, 'invalid_argument', protocol);
      t.is((await roles.call('signup', { email: email('own'), password: PASSWORD, roles: ['owner'] }, { protocol })).error?.code, 'invalid_argument', protocol);
      const ed = await roles.call('signup', { email: email('ed'), password: PASSWORD, roles: ['editor'] }, { protocol });
      t.deepEqual((ed.body!['user'] as Record<string, unknown>)['roles'], ['editor'], protocol);
      const dflt = await roles.call('signup', { phone_number: `+1555${String(1000000 + seq++).slice(-7)}`, password: PASSWORD }, { protocol });
      t.deepEqual((dflt.body!['user'] as Record<string, unknown>)['roles'], ['user'], protocol);
      const v = await roles.call('validate_jwt_token', { token_type: 'id_token', token: ed.body!['id_token'], roles: ['editor'] }, { protocol });
      t.is(v.body?.['is_valid'], true, protocol);
      t.is((await roles.call('validate_jwt_token', { token_type: 'id_token', token: ed.body!['id_token'], roles: ['admin'] }, { protocol })).error?.code, 'permission_denied', protocol);
    }
  } finally {
    await roles.close();
  }
});

test('C5: a user token cannot write tuples or call any admin FGA operation, on GraphQL, REST and gRPC alike', async (t) => {
  const s = await srv.call('signup', { email: email('c5'), password: PASSWORD }, { protocol: 'rest' });
  const auth = bearer(s.body!['access_token']);
  const uid = (s.body!['user'] as Record<string, unknown>)['id'] as string;
  const tuples = [{ user: `user:${uid}`, relation: 'editor', object: 'document:9' }];
  for (const protocol of PROTOCOLS) {
    t.is((await srv.call('fga_write_tuples', { tuples }, { protocol, headers: auth })).error?.code, 'unauthenticated', protocol);
    t.is((await srv.call('fga_delete_tuples', { tuples }, { protocol, headers: auth })).error?.code, 'unauthenticated', protocol);
    t.is((await srv.call('fga_write_model', { dsl: 'model\n  schema 1.1\ntype user\n' }, { protocol, headers: auth })).error?.code, 'unauthenticated', protocol);
  }
  const read = await srv.call('fga_read_tuples', { object: 'document:9' }, { protocol: 'rest', headers: { 'x-service-admin-secret': TEST_ADMIN_SECRET } });
  t.deepEqual(read.body?.['tuples'], []);
});

test('--fga-store memory: an in-process FGA store answers checks', async (t) => {
  const mem = await startTestServer({ 'fga-store': 'memory' });
  try {
    const admin = { 'x-service-admin-secret': TEST_ADMIN_SECRET };
    t.is((await mem.call('fga_write_model', { dsl: 'model\n  schema 1.1\ntype user\ntype doc\n  relations\n    define viewer: [user]\n' }, { protocol: 'rest', headers: admin })).error, undefined);
    const s = await mem.call('signup', { email: email('mem'), password: PASSWORD }, { protocol: 'rest' });
    const uid = (s.body!['user'] as Record<string, unknown>)['id'] as string;
    await mem.call('fga_write_tuples', { tuples: [{ user: `user:${uid}`, relation: 'viewer', object: 'doc:1' }] }, { protocol: 'rest', headers: admin });
    const r = await mem.call('check_permissions', { checks: [{ relation: 'viewer', object: 'doc:1' }] }, { protocol: 'grpc', headers: bearer(s.body!['access_token']) });
    t.deepEqual(r.body, { results: [{ relation: 'viewer', object: 'doc:1', allowed: true }] });
  } finally {
    await mem.close();
  }
});

for (const backend of sqlBackends()) {
  test(`a v1 database (${backend}): unique constraints dropped at startup, its users log in with their bcrypt hashes, uniqueness still holds`, async (t) => {
    const db = await createTestDatabase(backend, 'lk_v1');
    const sequelize = openSequelize(db.url, { logging: false });
    try {
      await sequelize.query(
        'CREATE TABLE users (id VARCHAR(36) NOT NULL PRIMARY KEY, email VARCHAR(256) UNIQUE, phone_number VARCHAR(30) UNIQUE, password VARCHAR(255), signup_methods VARCHAR(255), roles VARCHAR(255), email_verified_at BIGINT, created_at BIGINT, updated_at BIGINT)',
      );
      await sequelize.query('INSERT INTO users (id, email, password, signup_methods, roles, email_verified_at, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)', {
        replacements: ['v1-user', 'Old@Example.com', await bcrypt.hash(PASSWORD, 10), 'basic_auth', 'user', 1, 1, 1],
      });
    } finally {
      await sequelize.close();
    }
    const server = await startTestServer({ 'database-type': backend, 'database-url': db.url });
    try {
      const login = await server.call('login', { email: 'old@example.com', password: PASSWORD }, { protocol: 'rest' });
      t.is(login.error, undefined, JSON.stringify(login.error));
      t.is((login.body!['user'] as Record<string, unknown>)['id'], 'v1-user');
      const dup = await server.call('signup', { email: 'OLD@example.com', password: PASSWORD }, { protocol: 'grpc' });
      t.is(dup.error?.message, 'user with given email already exists');
      t.is((await server.call('signup', { email: email('v1-new'), password: PASSWORD }, { protocol: 'graphql' })).error, undefined);
    } finally {
      await server.close();
      await db.drop();
    }
  });
}
