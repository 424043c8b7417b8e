/**
 * An organization's `session_lifetime` cuts the session (docs/organizations.md,
 * "Settings"): once the time since sign-in passes the active organization's
 * lifetime, the whole session ends, and every use of it is refused
 * (`validate_session`, `validate_jwt_token`, `session`, the refresh grant,
 * an API call with its bearer token or its cookie), on every SQL backend and
 * every protocol that serves them. A lifetime set after the switch counts;
 * an organization whose lifetime has already passed is entered only after
 * signing in again; a session outside the organization is untouched.
 */
import test from 'ava';
import { sqlBackends } from '../../helpers/databases.ts';
import { PROTOCOLS, TEST_CLIENT_ID, startTestServer, sessionCookieOf, type CallResult, type TestServer } from '../../helpers/server.ts';
import type { Protocol } from '../../../api/index.ts';

const PASSWORD = 'a long enough passphrase';

interface Session {
  id: string;
  cookie: string;
  access: string;
  refresh: string;
}

async function ok(srv: TestServer, op: string, input: Record<string, unknown>, headers: Record<string, string> = {}, protocol: Protocol = 'rest'): Promise<CallResult> {
  const r = await srv.call(op, input, { protocol, headers });
  if (r.error !== undefined) throw new Error(`${op} over ${protocol}: ${JSON.stringify(r.error)}`);
  return r;
}

async function signup(srv: TestServer, email: string): Promise<Session> {
  const r = await ok(srv, 'signup', { email, password: PASSWORD, scope: ['openid', 'offline_access'] });
  return { id: (r.body!['user'] as { id: string }).id, cookie: sessionCookieOf(r), access: r.body!['access_token'] as string, refresh: r.body!['refresh_token'] as string };
}

/** Switches the session (by its cookie) into `orgId`: the new cookie and tokens. */
async function enter(srv: TestServer, s: Session, orgId: string, protocol: Protocol): Promise<Session> {
  const r = await ok(srv, 'switch_organization', { organization_id: orgId, scope: ['openid', 'offline_access'] }, { cookie: `cookie_session=${s.cookie}` }, protocol);
  return { id: s.id, cookie: sessionCookieOf(r), access: r.body!['access_token'] as string, refresh: r.body!['refresh_token'] as string };
}

for (const backend of sqlBackends()) {
  let offsetMs = 0;
  const clock = { now: () => new Date(Date.now() + offsetMs) };

  test.serial(`an organization's session lifetime ends the session on every protocol (${backend})`, async (t) => {
    const srv = await startTestServer({}, { backend, clock });
    try {
      const owner = await signup(srv, `owner-${backend}@example.com`);
      const ownerBearer = { authorization: `Bearer ${owner.access}` };
      const strict = (await ok(srv, 'create_organization', { name: 'Strict', settings: { session_lifetime: 60 } }, ownerBearer)).body!['id'] as string;
      const later = (await ok(srv, 'create_organization', { name: 'Later' }, ownerBearer)).body!['id'] as string;

      for (const protocol of PROTOCOLS) {
        // The owner signs in afresh (the clock moves on past access tokens' lifetimes).
        const asOwner = { authorization: `Bearer ${(await signupLogin(srv, `owner-${backend}@example.com`)).access}` };
        // Seven sessions of members: each one is ended by one use past the lifetime.
        const users: Session[] = [];
        for (const name of ['cookie', 'token', 'refresh', 'api', 'late', 'late-api', 'late-web']) {
          const u = await signup(srv, `${name}-${protocol}-${backend}@example.com`);
          await ok(srv, 'add_organization_member', { organization_id: strict, user_id: u.id }, asOwner);
          await ok(srv, 'add_organization_member', { organization_id: later, user_id: u.id }, asOwner);
          users.push(u);
        }
        const [byCookie, byToken, byRefresh, byApi, late, lateApi, lateWeb] = users as [Session, Session, Session, Session, Session, Session, Session];
        const inStrict = await Promise.all([byCookie, byToken, byRefresh, byApi].map((u) => enter(srv, u, strict, protocol)));
        const lateInLater = await enter(srv, late, later, protocol);
        const [apiInLater, webInLater] = await Promise.all([lateApi, lateWeb].map((u) => enter(srv, u, later, protocol))) as [Session, Session];
        const outside = await signup(srv, `outside-${protocol}-${backend}@example.com`);

        // Within the lifetime every use holds.
        const within = await ok(srv, 'validate_session', { cookie: inStrict[0]!.cookie }, {}, protocol);
        t.is(within.body!['org_id'], strict, protocol);
        t.is((await ok(srv, 'validate_jwt_token', { token_type: 'access_token', token: inStrict[1]!.access }, {}, protocol)).body!['is_valid'], true, protocol);
        // API calls with a session's bearer token and with its cookie (the token is then one verified before, whose
        // next use may be answered without a promise: the organization's lifetime is compared there too).
        t.is((await ok(srv, 'profile', {}, { authorization: `Bearer ${apiInLater.access}` }, protocol)).body!['id'], lateApi.id, protocol);
        t.is((await ok(srv, 'profile', {}, { cookie: `cookie_session=${webInLater.cookie}` }, protocol)).body!['id'], lateWeb.id, protocol);

        offsetMs += 61_000 + 1_000;
        // A lifetime set after the switch counts too: `later` gets one now, already passed for `late`'s session.
        await ok(srv, 'update_organization', { organization_id: later, settings: { session_lifetime: 30 } }, asOwner);

        const refusedSession = await srv.call('validate_session', { cookie: inStrict[0]!.cookie }, { protocol });
        t.is(refusedSession.error?.code, 'unauthenticated', `validate_session over ${protocol}`);
        t.is(refusedSession.error?.reason, 'organization_session_expired', `validate_session over ${protocol}`);
        // The session ended, not only its organization: its tokens and its cookie are dead.
        const afterEnd = await srv.call('validate_jwt_token', { token_type: 'access_token', token: inStrict[0]!.access }, { protocol });
        t.is(afterEnd.error?.code, 'unauthenticated', `the ended session's token over ${protocol}`);
        t.is((await srv.call('session', {}, { protocol, headers: { cookie: `cookie_session=${inStrict[0]!.cookie}` } })).error?.code, 'unauthenticated', protocol);

        const refusedToken = await srv.call('validate_jwt_token', { token_type: 'access_token', token: inStrict[1]!.access }, { protocol });
        t.is(refusedToken.error?.reason, 'organization_session_expired', `validate_jwt_token over ${protocol}`);
        t.is((await srv.call('validate_session', { cookie: inStrict[1]!.cookie }, { protocol })).error?.code, 'unauthenticated', protocol);

        // The OAuth token endpoint's refresh grant (the refresh of every protocol's session tokens) is refused, and
        // `session` over the protocol with the session's cookie too.
        const refreshed = await fetch(`${srv.httpUrl}/oauth/token`, {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: inStrict[2]!.refresh, client_id: TEST_CLIENT_ID }).toString(),
        });
        t.is(refreshed.status, 400, `refresh past the lifetime (${protocol})`);
        t.is(((await refreshed.json()) as { error: string }).error, 'invalid_grant');
        t.is((await srv.call('session', {}, { protocol, headers: { cookie: `cookie_session=${inStrict[2]!.cookie}` } })).error?.code, 'unauthenticated', protocol);

        const refusedApi = await srv.call('profile', {}, { protocol, headers: { authorization: `Bearer ${inStrict[3]!.access}` } });
        t.is(refusedApi.error?.code, 'unauthenticated', `an API call over ${protocol}`);
        t.is((await srv.call('profile', {}, { protocol, headers: { cookie: `cookie_session=${inStrict[3]!.cookie}` } })).error?.code, 'unauthenticated', protocol);

        const refusedLate = await srv.call('validate_session', { cookie: lateInLater.cookie }, { protocol });
        t.is(refusedLate.error?.reason, 'organization_session_expired', `a lifetime set after the switch, over ${protocol}`);
        const refusedLateApi = await srv.call('profile', {}, { protocol, headers: { authorization: `Bearer ${apiInLater.access}` } });
        t.is(refusedLateApi.error?.code, 'unauthenticated', `an API call with a bearer token, a lifetime set after the switch, over ${protocol}`);
        const refusedLateWeb = await srv.call('profile', {}, { protocol, headers: { cookie: `cookie_session=${webInLater.cookie}` } });
        t.is(refusedLateWeb.error?.code, 'unauthenticated', `an API call with the cookie, a lifetime set after the switch, over ${protocol}`);
        // Each session ended: its other credential is refused as well.
        t.is((await srv.call('validate_session', { cookie: apiInLater.cookie }, { protocol })).error?.code, 'unauthenticated', protocol);
        t.is((await srv.call('validate_jwt_token', { token_type: 'access_token', token: webInLater.access }, { protocol })).error?.code, 'unauthenticated', protocol);

        // A session outside any organization lives on; entering an organization whose lifetime has passed since the
        // sign-in needs a new sign-in.
        t.is((await ok(srv, 'validate_session', { cookie: outside.cookie }, {}, protocol)).body!['is_valid'], true, protocol);
        const added = await srv.call('add_organization_member', { organization_id: strict, user_id: outside.id }, { headers: asOwner, protocol: 'rest' });
        t.is(added.error, undefined);
        offsetMs += 61_000;
        const reenter = await srv.call('switch_organization', { organization_id: strict }, { protocol, headers: { cookie: `cookie_session=${outside.cookie}` } });
        t.is(reenter.error?.code, 'permission_denied', protocol);
        t.is(reenter.error?.reason, 'reauthentication_required', protocol);
        const fresh = await signupLogin(srv, `outside-${protocol}-${backend}@example.com`);
        const entered = await enter(srv, fresh, strict, protocol);
        t.is((await ok(srv, 'validate_session', { cookie: entered.cookie }, {}, protocol)).body!['org_id'], strict, 'a new sign-in enters');
        await ok(srv, 'update_organization', { organization_id: later, settings: { session_lifetime: 0 } }, asOwner);
      }
    } finally {
      await srv.close();
    }
  });

  /** A new sign-in of an existing user (a new session, so a new sign-in time). */
  async function signupLogin(srv: TestServer, email: string): Promise<Session> {
    const r = await ok(srv, 'login', { email, password: PASSWORD, scope: ['openid', 'offline_access'] });
    return { id: (r.body!['user'] as { id: string }).id, cookie: sessionCookieOf(r), access: r.body!['access_token'] as string, refresh: r.body!['refresh_token'] as string };
  }
}
