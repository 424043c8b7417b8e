/**
 * Authorizer's official JS SDK (`@authorizerdev/authorizer-js` 3.x, the line
 * that speaks the 2.3.0 schema), unmodified, from Node against the real
 * server on loopback with the real SMTP test server: every SDK method that
 * maps to a spec operation, each asserted on its real result (meta, signup,
 * resend verify email, verify email, login, profile, update profile, session,
 * validate JWT, token refresh, revoke, magic link, forgot and reset password,
 * logout, deactivate; then, with the cookies a browser would keep, email OTP
 * resend and verify and validate session).
 *
 * In Node the SDK fetches through cross-fetch and never shows a response's
 * headers, so a server-side caller authenticates with the `Authorization`
 * header and sends `Origin` itself (CSRF, spec). The `mfa` and session
 * cookies only travel with a cookie-keeping fetch, which the SDK takes from
 * `window.fetch` as in a browser: the last test gives it one.
 */
import anyTest, { type ExecutionContext } from 'ava';
import { randomBytes } from 'node:crypto';
import { Authorizer } from '@authorizerdev/authorizer-js';
import { TEST_CLIENT_ID, startTestServerOnPort, type TestServer } from '../../helpers/server.ts';
import { mailsTo, startSmtp, type Smtp } from '../../admin/smtp.ts';

// Serial: the last test lends the SDK a `window`, and every login costs a bcrypt compare on a shared machine.
const test = anyTest.serial;
const PASSWORD = 'Correct-Horse-7-Battery';
const NEW_PASSWORD = 'Second-Horse-8-Battery';

/** The SDK's answer: `data` on success, else `errors` (GraphQL errors or thrown `Error`s). */
type SdkResult<T = Record<string, unknown>> = { data?: T; errors: { message?: string; extensions?: { code?: string; reason?: string } }[] };

/** The server (its `--url` names its own port, so mailed links point at it) and the SMTP test server; closed when the test ends. */
async function start(t: ExecutionContext, extra: Record<string, string | number | boolean> = {}): Promise<{ server: TestServer; smtp: Smtp }> {
  const smtp = await startSmtp();
  t.teardown(() => smtp.close());
  const server = await startTestServerOnPort((port) => ({
    url: `http://127.0.0.1:${port}`,
    'smtp-host': '127.0.0.1',
    'smtp-port': smtp.port,
    'smtp-sender-email': 'noreply@example.com',
    'enable-email-verification': true,
    'enable-magic-link-login': true,
    'enable-email-otp': true,
    ...extra,
  }));
  t.teardown(() => server.close());
  return { server, smtp };
}

/** The SDK as a Node service configures it: its URL, client id, the page links return to, and `Origin` (CSRF). */
function sdkFor(server: TestServer): Authorizer {
  return new Authorizer({
    authorizerURL: server.httpUrl,
    redirectURL: `${server.httpUrl}/app`,
    clientID: TEST_CLIENT_ID,
    extraHeaders: { Origin: server.httpUrl },
  });
}

function ok<T>(t: ExecutionContext, r: SdkResult<T>, what: string): T {
  t.deepEqual(r.errors, [], what);
  if (r.data === undefined) throw new Error(`${what}: no data`);
  return r.data;
}

/** The `token=` of the link in the n-th (1-based) mail to `email`. */
async function linkToken(smtp: Smtp, email: string, n: number): Promise<string> {
  const mail = (await mailsTo(smtp, email, n))[n - 1]!;
  const m = /[?&]token=([A-Za-z0-9_-]+)/.exec(mail);
  if (m === null) throw new Error(`no token link in mail ${n} to ${email}`);
  return m[1]!;
}

const codeIn = (mail: string): string => /code is <strong>([0-9]{6})<\/strong>/.exec(mail)?.[1] ?? '';
const email = (tag: string): string => `${tag}-${randomBytes(5).toString('hex')}@example.com`;
const bearer = (token: unknown): Record<string, string> => ({ Authorization: `Bearer ${String(token)}` });

type Auth = { message: string; access_token?: string; refresh_token?: string; id_token?: string; expires_in?: number; user?: { id: string; email: string; email_verified: boolean; given_name?: string | null; roles: string[] }; should_show_email_otp_screen?: boolean };

test('meta, sign-up with email verification, login, profile, update profile, session, validate JWT, token refresh, revoke, logout', async (t) => {
  const { server, smtp } = await start(t);
  const sdk = sdkFor(server);

  const meta = ok(t, (await sdk.getMetaData()) as unknown as SdkResult<Record<string, unknown>>, 'getMetaData');
  t.is(meta['client_id'], TEST_CLIENT_ID);
  t.is(typeof meta['version'], 'string');
  t.is(meta['is_email_verification_enabled'], true);
  t.is(meta['is_magic_link_login_enabled'], true);
  t.is(meta['is_sign_up_enabled'], true);

  const address = email('sdk');
  const signup = ok(t, (await sdk.signup({ email: address, password: PASSWORD, confirm_password: PASSWORD, given_name: 'Ada' })) as unknown as SdkResult<Auth>, 'signup');
  t.is(signup.access_token ?? null, null, 'no tokens before the email is verified');
  t.truthy(signup.message);
  const firstToken = await linkToken(smtp, address, 1);

  const resent = ok(t, (await sdk.resendVerifyEmail({ email: address, identifier: 'basic_auth_signup' })) as unknown as SdkResult<{ message: string }>, 'resendVerifyEmail');
  t.truthy(resent.message);
  const secondToken = await linkToken(smtp, address, 2);
  t.not(secondToken, firstToken);
  const stale = (await sdk.verifyEmail({ token: firstToken })) as unknown as SdkResult;
  t.true(stale.errors.length > 0, 'the replaced link no longer works');

  const verified = ok(t, (await sdk.verifyEmail({ token: secondToken })) as unknown as SdkResult<Auth>, 'verifyEmail');
  t.truthy(verified.access_token);
  t.is(verified.user?.email, address);
  t.true(verified.user?.email_verified);

  const login = ok(t, (await sdk.login({ email: address, password: PASSWORD })) as unknown as SdkResult<Auth>, 'login');
  t.truthy(login.access_token);
  t.truthy(login.id_token);
  t.truthy(login.refresh_token);
  t.true((login.expires_in ?? 0) > 0);
  const userId = login.user!.id;
  t.is(login.user?.email, address);
  t.deepEqual(login.user?.roles, ['user']);
  const wrong = (await sdk.login({ email: address, password: 'Not-The-Password-1' })) as unknown as SdkResult;
  t.is(wrong.errors[0]?.extensions?.code, 'unauthenticated', 'a wrong password surfaces as an error');

  const profile = ok(t, (await sdk.getProfile(bearer(login.access_token))) as unknown as SdkResult<Record<string, unknown>>, 'getProfile');
  t.is(profile['id'], userId);
  t.is(profile['email'], address);
  t.is(profile['given_name'], 'Ada');
  t.is(profile['signup_methods'], 'basic_auth');

  const updated = ok(t, (await sdk.updateProfile({ given_name: 'Grace', family_name: 'Hopper' }, bearer(login.access_token))) as unknown as SdkResult<{ message: string }>, 'updateProfile');
  t.truthy(updated.message);
  const after = ok(t, (await sdk.getProfile(bearer(login.access_token))) as unknown as SdkResult<Record<string, unknown>>, 'getProfile after update');
  t.is(after['given_name'], 'Grace');
  t.is(after['family_name'], 'Hopper');

  const session = ok(t, (await sdk.getSession(bearer(login.access_token))) as unknown as SdkResult<Auth>, 'getSession');
  t.truthy(session.access_token);
  t.is(session.user?.id, userId);

  const jwt = ok(t, (await sdk.validateJWTToken({ token_type: 'access_token', token: session.access_token! })) as unknown as SdkResult<{ is_valid: boolean; claims: Record<string, unknown> }>, 'validateJWTToken');
  t.true(jwt.is_valid);
  t.is(jwt.claims['sub'], userId);
  const forged = (await sdk.validateJWTToken({ token_type: 'access_token', token: `${session.access_token!.slice(0, -4)}AAAA` })) as unknown as SdkResult;
  t.is(forged.errors[0]?.extensions?.code, 'unauthenticated');

  // session rotated the session's refresh token: the one it answered is the live one.
  t.truthy(session.refresh_token);
  const refreshed = ok(t, (await sdk.getToken({ grant_type: 'refresh_token', refresh_token: session.refresh_token! })) as unknown as SdkResult<Record<string, unknown>>, 'getToken');
  t.is(typeof refreshed['access_token'], 'string');
  t.is(typeof refreshed['refresh_token'], 'string');
  t.not(refreshed['refresh_token'], session.refresh_token, 'the refresh token rotates');
  const validRefreshed = ok(t, (await sdk.validateJWTToken({ token_type: 'access_token', token: String(refreshed['access_token']) })) as unknown as SdkResult<{ is_valid: boolean }>, 'refreshed token');
  t.true(validRefreshed.is_valid);

  const revoked = ok(t, (await sdk.revokeToken({ refresh_token: String(refreshed['refresh_token']) })) as unknown as SdkResult<{ message: string }>, 'revokeToken');
  t.truthy(revoked.message);
  const afterRevoke = (await sdk.getToken({ grant_type: 'refresh_token', refresh_token: String(refreshed['refresh_token']) })) as unknown as SdkResult;
  t.true(afterRevoke.errors.length > 0, 'a revoked refresh token is refused');

  // The SDK's logout answers no data (it reads `data.response`), only errors.
  const live = ok(t, (await sdk.login({ email: address, password: PASSWORD })) as unknown as SdkResult<Auth>, 'login again').access_token;
  t.deepEqual(((await sdk.getProfile(bearer(live))) as unknown as SdkResult).errors, []);
  const out = (await sdk.logout(bearer(live))) as unknown as SdkResult;
  t.deepEqual(out.errors, [], 'logout');
  const gone = (await sdk.getProfile(bearer(live))) as unknown as SdkResult;
  t.is(gone.errors[0]?.extensions?.code, 'unauthenticated', 'the session ended with logout');
});

test('magic link, forgot and reset password, deactivate', async (t) => {
  const { server, smtp } = await start(t);
  const sdk = sdkFor(server);
  const address = email('magic');

  const sent = ok(t, (await sdk.magicLinkLogin({ email: address })) as unknown as SdkResult<{ message: string }>, 'magicLinkLogin');
  t.truthy(sent.message);
  const magic = ok(t, (await sdk.verifyEmail({ token: await linkToken(smtp, address, 1) })) as unknown as SdkResult<Auth>, 'verifyEmail (magic link)');
  t.truthy(magic.access_token);
  t.is(magic.user?.email, address);
  const profile = ok(t, (await sdk.getProfile(bearer(magic.access_token))) as unknown as SdkResult<Record<string, unknown>>, 'getProfile');
  t.is(profile['signup_methods'], 'magic_link_login');

  const forgot = ok(t, (await sdk.forgotPassword({ email: address })) as unknown as SdkResult<{ message: string; should_show_mobile_otp_screen: boolean | null }>, 'forgotPassword');
  t.truthy(forgot.message);
  const reset = ok(
    t,
    (await sdk.resetPassword({ token: await linkToken(smtp, address, 2), password: NEW_PASSWORD, confirm_password: NEW_PASSWORD })) as unknown as SdkResult<{ message: string }>,
    'resetPassword',
  );
  t.truthy(reset.message);
  const login = ok(t, (await sdk.login({ email: address, password: NEW_PASSWORD })) as unknown as SdkResult<Auth>, 'login with the new password');
  t.is(login.user?.email, address);

  const deactivated = ok(t, (await sdk.deactivateAccount(bearer(login.access_token))) as unknown as SdkResult<{ message: string }>, 'deactivateAccount');
  t.truthy(deactivated.message);
  const refused = (await sdk.login({ email: address, password: NEW_PASSWORD })) as unknown as SdkResult;
  t.true(refused.errors.length > 0, 'a deactivated account cannot log in');
  const gone = (await sdk.getProfile(bearer(login.access_token))) as unknown as SdkResult;
  t.is(gone.errors[0]?.extensions?.code, 'unauthenticated');
});

/** A fetch that keeps cookies per name, as a browser does for one site. */
function cookieFetch(): { fetch: typeof fetch; cookies: Map<string, string> } {
  const cookies = new Map<string, string>();
  const f = (async (input: string | URL | Request, init: RequestInit = {}) => {
    const headers = new Headers(init.headers);
    if (cookies.size > 0) headers.set('cookie', [...cookies].map(([k, v]) => `${k}=${v}`).join('; '));
    const res = await fetch(input, { ...init, headers });
    for (const c of res.headers.getSetCookie()) {
      const [pair = '', ...attrs] = c.split(';');
      const i = pair.indexOf('=');
      const name = pair.slice(0, i).trim();
      const value = pair.slice(i + 1).trim();
      if (value === '' || attrs.some((a) => /^\s*max-age=0\s*$/i.test(a))) cookies.delete(name);
      else cookies.set(name, value);
    }
    return res;
  }) as typeof fetch;
  return { fetch: f, cookies };
}

test('with the cookies a browser keeps: email OTP resend and verify, validate session, logout', async (t) => {
  const { server, smtp } = await start(t, { 'enable-email-verification': false });
  const jar = cookieFetch();
  const g = globalThis as { window?: unknown };
  g.window = { fetch: jar.fetch, crypto: globalThis.crypto };
  t.teardown(() => {
    delete g.window;
  });
  const sdk = sdkFor(server);
  const address = email('otp');
  const signup = ok(t, (await sdk.signup({ email: address, password: PASSWORD, confirm_password: PASSWORD })) as unknown as SdkResult<Auth>, 'signup');
  ok(t, (await sdk.updateProfile({ is_multi_factor_auth_enabled: true }, bearer(signup.access_token))) as unknown as SdkResult, 'updateProfile (MFA on)');
  // The SDK's logout answers no data (it reads `data.response`), only errors.
  t.deepEqual(((await sdk.logout()) as unknown as SdkResult).errors, [], 'logout (cookie)');
  t.false(jar.cookies.has('cookie_session'), 'logout cleared the session cookie');

  const challenge = ok(t, (await sdk.login({ email: address, password: PASSWORD })) as unknown as SdkResult<Auth>, 'login');
  t.true(challenge.should_show_email_otp_screen);
  t.is(challenge.access_token ?? null, null, 'no tokens before the second factor');
  t.true(jar.cookies.has('mfa'));
  const firstCode = codeIn((await mailsTo(smtp, address, 1))[0]!);
  t.regex(firstCode, /^\d{6}$/);

  const resent = ok(t, (await sdk.resendOtp({ email: address })) as unknown as SdkResult<{ message: string }>, 'resendOtp');
  t.truthy(resent.message);
  const secondCode = codeIn((await mailsTo(smtp, address, 2))[1]!);
  t.regex(secondCode, /^\d{6}$/);

  const verified = ok(t, (await sdk.verifyOtp({ email: address, otp: secondCode })) as unknown as SdkResult<Auth>, 'verifyOtp');
  t.truthy(verified.access_token);
  t.is(verified.user?.email, address);
  const cookie = jar.cookies.get('cookie_session');
  t.truthy(cookie, 'verify_otp set the session cookie');

  const valid = ok(t, (await sdk.validateSession({ cookie: cookie! })) as unknown as SdkResult<{ is_valid: boolean; user: { email: string } }>, 'validateSession');
  t.true(valid.is_valid);
  t.is(valid.user.email, address);
  const session = ok(t, (await sdk.getSession()) as unknown as SdkResult<Auth>, 'getSession (cookie)');
  t.is(session.user?.email, address);

  t.deepEqual(((await sdk.logout()) as unknown as SdkResult).errors, [], 'logout');
  const ended = (await sdk.validateSession({ cookie: cookie! })) as unknown as SdkResult;
  t.is(ended.errors[0]?.extensions?.code, 'unauthenticated', 'the ended session no longer validates');
});
