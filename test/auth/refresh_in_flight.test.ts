/**
 * Security matrix B6 with the refresh in flight: logout, password reset,
 * admin revoke, account deactivation and user deletion, each sent while a
 * refresh of the same session is under way (fired together, the action after
 * 0 to 12 ms, over many rounds so the two interleave at every step of the
 * refresh). Whatever the order, on the next call:
 *
 * - every token of the session is dead: the access tokens from before and
 *   from the refresh, the refresh tokens, the cookie (`unauthenticated`);
 * - `/oauth/introspect` answers `active: false` for each;
 * - the session record itself is gone (read through the server's session
 *   manager, so a session rewritten by a late refresh is found);
 * - a deleted user gets no tokens and leaves no tuples.
 *
 * Sessions on the in-process memory store, and on Redis (`--redis-url`).
 */
import test from 'ava';
import { decodeJwt } from 'jose';
import { redisUrl } from '../helpers/databases.ts';
import { needs } from '../helpers/needs.ts';
import { TEST_ADMIN_SECRET, TEST_CLIENT_ID, TEST_CLIENT_SECRET, startTestServer, type TestServer } from '../helpers/server.ts';
import { mailTo, startSmtp, type Smtp } from '../admin/smtp.ts';
import type { AuthService } from '../../auth/index.ts';

const APP = 'https://app.example.com';
const origin = { origin: APP };
const admin = { ...origin, 'x-service-admin-secret': TEST_ADMIN_SECRET };
const PASSWORD = 'Correct horse 9 battery!';
const DSL = 'model\n  schema 1.1\ntype user\ntype doc\n  relations\n    define viewer: [user]\n';
const ROUNDS = 12;

type Action = 'logout' | 'reset_password' | 'revoke_access' | 'deactivate_account' | 'delete_user';
const ACTIONS: readonly Action[] = ['logout', 'reset_password', 'revoke_access', 'deactivate_account', 'delete_user'];

interface Login {
  userId: string;
  email: string;
  access: string;
  refresh: string;
  cookie: string;
  resetToken?: string | undefined;
}

function cookieOf(setCookies: string[]): string | undefined {
  const line = setCookies.find((c) => c.startsWith('cookie_session='));
  return line?.slice('cookie_session='.length).split(';')[0];
}

async function introspect(srv: TestServer, token: string): Promise<unknown> {
  const res = await fetch(`${srv.httpUrl}/oauth/introspect`, {
    method: 'POST',
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      authorization: `Basic ${Buffer.from(`${TEST_CLIENT_ID}:${TEST_CLIENT_SECRET}`).toString('base64')}`,
    },
    body: new URLSearchParams({ token }).toString(),
  });
  return ((await res.json()) as { active?: unknown }).active;
}

async function run(t: import('ava').ExecutionContext, flags: Record<string, string | number | boolean>): Promise<void> {
  const smtp: Smtp = await startSmtp();
  const srv = await startTestServer({
    'allowed-origins': APP,
    'enable-email-verification': false,
    'smtp-host': '127.0.0.1',
    'smtp-port': smtp.port,
    'smtp-sender-email': 'noreply@example.com',
    ...flags,
  });
  try {
    const auth = srv.server.services.auth as AuthService;
    const call = (op: string, input: Record<string, unknown>, headers: Record<string, string> = origin, cookies?: Record<string, string>) =>
      srv.call(op, input, { protocol: 'rest', headers, ...(cookies ? { cookies } : {}) });
    t.is((await call('fga_write_model', { dsl: DSL }, admin)).error, undefined);

    const login = async (email: string): Promise<Login> => {
      const r = await call('login', { email, password: PASSWORD });
      if (r.error) throw new Error(`login: ${r.error.code}`);
      return { userId: String((r.body!['user'] as { id: string }).id), email, access: String(r.body!['access_token']), refresh: String(r.body!['refresh_token']), cookie: cookieOf(r.setCookies)! };
    };
    /** The action, as its caller sends it. */
    const act = async (action: Action, l: Login): Promise<void> => {
      let r;
      if (action === 'logout') r = await call('logout', {}, { ...origin, authorization: `Bearer ${l.access}` });
      else if (action === 'deactivate_account') r = await call('deactivate_account', {}, { ...origin, authorization: `Bearer ${l.access}` });
      else if (action === 'revoke_access') r = await call('revoke_access', { user_id: l.userId }, admin);
      else if (action === 'delete_user') r = await call('delete_user', { email: l.email }, admin);
      else r = await call('reset_password', { token: l.resetToken, password: 'Another horse 9 battery!', confirm_password: 'Another horse 9 battery!' });
      if (r.error) throw new Error(`${action}: ${r.error.code} ${r.error.message}`);
    };

    let refreshedBefore = 0;
    let refreshedAfterOrRefused = 0;
    for (const action of ACTIONS) {
      for (let round = 0; round < ROUNDS; round++) {
        const email = `${action}-${round}@example.com`;
        t.is((await call('signup', { email, password: PASSWORD })).error, undefined);
        const l = await login(email);
        await call('fga_write_tuples', { tuples: [{ user: `user:${l.userId}`, relation: 'viewer', object: `doc:${action}-${round}` }] }, admin);
        if (action === 'reset_password') {
          await call('forgot_password', { email, redirect_uri: `${APP}/reset` });
          l.resetToken = /\/reset\?token=([A-Za-z0-9_-]+)/.exec(await mailTo(smtp, email))?.[1];
        }
        // The refresh in flight, and the action after a few milliseconds (0 to 12): every interleaving over the rounds.
        const refreshing = call('session', { refresh_token: l.refresh }, origin, { cookie_session: l.cookie });
        await new Promise((r) => setTimeout(r, round));
        const [refreshed] = await Promise.all([refreshing, act(action, l)]);
        const tokens = [l.access, l.refresh];
        const cookies = [l.cookie];
        const sids = new Set([String(decodeJwt(l.access)['sid'])]);
        if (refreshed.error === undefined) {
          refreshedBefore++;
          tokens.push(String(refreshed.body!['access_token']), String(refreshed.body!['refresh_token']));
          const c = cookieOf(refreshed.setCookies);
          if (c !== undefined) cookies.push(c);
          sids.add(String(decodeJwt(String(refreshed.body!['access_token']))['sid']));
        } else {
          refreshedAfterOrRefused++;
          t.is(refreshed.error.code, 'unauthenticated', `${action} ${round}: a refused refresh is unauthenticated`);
        }
        const what = `${action}, round ${round} (refresh ${refreshed.error === undefined ? 'answered' : 'refused'})`;
        for (const access of tokens.filter((x) => decodeJwt(x)['token_type'] === 'access_token')) {
          t.is((await call('profile', {}, { ...origin, authorization: `Bearer ${access}` })).error?.code, 'unauthenticated', `${what}: an access token`);
        }
        for (const refresh of tokens.filter((x) => decodeJwt(x)['token_type'] === 'refresh_token')) {
          t.is((await call('session', { refresh_token: refresh })).error?.code, 'unauthenticated', `${what}: a refresh token`);
        }
        for (const cookie of cookies) t.is((await call('profile', {}, origin, { cookie_session: cookie })).error?.code, 'unauthenticated', `${what}: a cookie`);
        for (const token of tokens) t.is(await introspect(srv, token), false, `${what}: introspection`);
        for (const sid of sids) t.is(await auth.sessions.get(sid), undefined, `${what}: no session left`);
        if (action === 'delete_user') {
          const tuples = ((await call('fga_read_tuples', { page_size: 100 }, admin)).body!['tuples'] as Array<{ user: string }>).filter((x) => x.user === `user:${l.userId}`);
          t.deepEqual(tuples, [], `${what}: no tuples left`);
          t.is((await call('login', { email, password: PASSWORD })).error?.code, 'unauthenticated', `${what}: no tokens for a deleted user`);
        }
      }
    }
    t.log(`refreshes answered ${refreshedBefore}, refused ${refreshedAfterOrRefused} of ${ACTIONS.length * ROUNDS}`);
  } finally {
    await srv.close();
    await smtp.close();
  }
}

test('B6: logout, password reset, revoke, deactivate and delete with a refresh in flight leave no live token, cookie or session (memory store)', async (t) => {
  await run(t, {});
});

needs(test, 'redis')('B6: the same on Redis sessions (--redis-url)', async (t) => {
  const url = redisUrl();
  if (url === undefined) {
    t.pass('LATCHKEY_TEST_REDIS_URL not set');
    return;
  }
  await run(t, { 'redis-url': url });
});
