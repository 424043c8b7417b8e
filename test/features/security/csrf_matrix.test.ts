/**
 * Security matrix B5 as one row test: `login`, `update_profile` (by session
 * cookie) and admin mutations (by the admin session cookie: `update_user`,
 * `add_webhook`), over REST and GraphQL, each sent
 *
 * - with a foreign `Origin`,
 * - with no `Origin` (nor `Referer`),
 * - with a `text/plain` body (what a cross-site form or a fetch without
 *   preflight can send), with a foreign origin, with none, and with the
 *   allowed origin;
 *
 * is refused (403 `permission_denied` `csrf_origin`; the `text/plain` body from
 * the allowed origin 400 `invalid_argument` `unsupported_media_type`: an
 * allowed origin still needs the non-simple JSON media type, ASVS v5 3.5.2) and
 * changes nothing: no session or cookie is issued, the profile and the user
 * keep their names, no webhook exists. The OAuth endpoints a client's server
 * calls (`/oauth/token`, `/oauth/introspect`, `/oauth/revoke`) are exempt and
 * answer without any `Origin`.
 */
import test from 'ava';
import { OPERATIONS, graphqlDocument } from '../../../cmd/index.ts';
import { TEST_ADMIN_SECRET, TEST_CLIENT_ID, TEST_CLIENT_SECRET, startTestServer } from '../../helpers/server.ts';

const APP = 'https://app.example.com';
const PASSWORD = 'Correct horse 9 battery!';

function cookieOf(setCookies: string[], name: string): string {
  const line = setCookies.find((c) => c.startsWith(`${name}=`));
  if (line === undefined) throw new Error(`no ${name} cookie`);
  return line.slice(name.length + 1).split(';')[0]!;
}

test('B5: login, update_profile and admin mutations with a foreign Origin, no Origin or a text/plain body are refused and change nothing; /oauth/token, introspect and revoke are exempt', async (t) => {
  const srv = await startTestServer({ 'allowed-origins': APP });
  try {
    const origin = { origin: APP };
    const signup = await srv.call('signup', { email: 'victim@example.com', password: PASSWORD, given_name: 'Victor' }, { protocol: 'rest', headers: origin });
    t.is(signup.error, undefined);
    const userId = String((signup.body!['user'] as { id: string }).id);
    const login = await srv.call('login', { email: 'victim@example.com', password: PASSWORD }, { protocol: 'rest', headers: origin });
    const session = cookieOf(login.setCookies, 'cookie_session');
    const adminLogin = await srv.call('admin_login', { admin_secret: TEST_ADMIN_SECRET }, { protocol: 'rest', headers: origin });
    const adminCookieLine = adminLogin.setCookies[0]!;
    const adminCookie = adminCookieLine.split(';')[0]!;

    const targets = [
      { op: 'login', input: { email: 'victim@example.com', password: PASSWORD }, cookie: '' },
      { op: 'update_profile', input: { given_name: 'Mallory' }, cookie: `cookie_session=${session}` },
      { op: 'update_user', input: { id: userId, given_name: 'Mallory' }, cookie: adminCookie },
      { op: 'add_webhook', input: { event_name: 'user.login', endpoint: 'https://hooks.example.com/x' }, cookie: adminCookie },
    ];
    const variants: Array<{ name: string; origin: string | undefined; type: string; expect: [number, string, string] }> = [
      { name: 'foreign Origin', origin: 'https://evil.example', type: 'application/json', expect: [403, 'permission_denied', 'csrf_origin'] },
      { name: 'no Origin', origin: undefined, type: 'application/json', expect: [403, 'permission_denied', 'csrf_origin'] },
      { name: 'text/plain, foreign Origin', origin: 'https://evil.example', type: 'text/plain', expect: [403, 'permission_denied', 'csrf_origin'] },
      { name: 'text/plain, no Origin', origin: undefined, type: 'text/plain', expect: [403, 'permission_denied', 'csrf_origin'] },
      { name: 'text/plain, allowed Origin', origin: APP, type: 'text/plain', expect: [400, 'invalid_argument', 'unsupported_media_type'] },
    ];
    let refused = 0;
    for (const target of targets) {
      const op = OPERATIONS.find((o) => o.name === target.op)!;
      const requests = [
        { path: op.rest!.path, body: JSON.stringify(target.input) },
        { path: '/graphql', body: JSON.stringify({ query: graphqlDocument(op), variables: { params: target.input } }) },
      ];
      for (const { path, body } of requests) {
        for (const v of variants) {
          const headers: Record<string, string> = { 'content-type': v.type };
          if (v.origin !== undefined) headers['origin'] = v.origin;
          if (target.cookie) headers['cookie'] = target.cookie;
          const res = await fetch(`${srv.httpUrl}${path}`, { method: 'POST', headers, body });
          const what = `${target.op} ${path} ${v.name}`;
          const answer = (await res.json()) as { code?: string; reason?: string; errors?: Array<{ extensions: { code: string; reason?: string } }> };
          const error = path === '/graphql' ? answer.errors?.[0]?.extensions : answer;
          t.deepEqual([res.status, error?.code, error?.reason], v.expect, what);
          t.deepEqual(res.headers.getSetCookie(), [], `${what}: no cookie set`);
          refused++;
        }
      }
    }
    t.is(refused, targets.length * 2 * variants.length);

    // Nothing changed: one login (the test's own), the names kept, no webhook.
    const admin = { ...origin, 'x-service-admin-secret': TEST_ADMIN_SECRET };
    const user = await srv.call('user', { id: userId }, { protocol: 'rest', headers: admin });
    t.is(user.body?.['given_name'], 'Victor');
    const profile = await srv.call('profile', {}, { protocol: 'rest', headers: origin, cookies: { cookie_session: session } });
    t.is(profile.body?.['given_name'], 'Victor');
    const webhooks = await srv.call('webhooks', {}, { protocol: 'rest', headers: admin });
    t.deepEqual(webhooks.body?.['webhooks'], []);
    const logins = await srv.call('audit_logs', { action: 'user.login_success' }, { protocol: 'rest', headers: admin });
    t.is((logins.body?.['pagination'] as { total: number }).total, 1);
    // The same requests from the allowed origin go through (the refusals above were the guard's).
    const allowed = await srv.call('update_profile', { given_name: 'Vic' }, { protocol: 'rest', headers: origin, cookies: { cookie_session: session } });
    t.is(allowed.error, undefined);

    // Exempt: a client's server calls the OAuth endpoints with its credentials and no Origin.
    const form = (fields: Record<string, string>, auth = false): RequestInit => ({
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        ...(auth ? { authorization: `Basic ${Buffer.from(`${TEST_CLIENT_ID}:${TEST_CLIENT_SECRET}`).toString('base64')}` } : {}),
      },
      body: new URLSearchParams(fields).toString(),
    });
    const refreshToken = String(login.body!['refresh_token']);
    const token = await fetch(`${srv.httpUrl}/oauth/token`, form({ grant_type: 'refresh_token', refresh_token: refreshToken, client_id: TEST_CLIENT_ID }));
    t.is(token.status, 200, '/oauth/token without Origin');
    const tokens = (await token.json()) as { access_token: string; refresh_token: string };
    const introspect = await fetch(`${srv.httpUrl}/oauth/introspect`, form({ token: tokens.access_token }, true));
    t.is(introspect.status, 200, '/oauth/introspect without Origin');
    t.like(await introspect.json(), { active: true });
    const revoke = await fetch(`${srv.httpUrl}/oauth/revoke`, form({ token: tokens.refresh_token, client_id: TEST_CLIENT_ID }));
    t.is(revoke.status, 200, '/oauth/revoke without Origin');
  } finally {
    await srv.close();
  }
});
