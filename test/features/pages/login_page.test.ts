/**
 * The built-in login page at /app, driven in a real browser (Debian's Chromium
 * through playwright-core) against the real server on loopback: the OAuth code
 * flow from /authorize through the page back to the client's redirect_uri and
 * the code exchanged for tokens; a wrong password; an email-OTP second factor
 * through the real SMTP test server; forgot password; a query carrying markup
 * neither executed nor rendered; the page's headers; no page with
 * --enable-login-page=false; the email links: a mailed sign-up verification
 * link signs in (once), a magic link through the email-code step, a mailed
 * reset link sets a password the page then signs in with. SQLite, and the code flow on PostgreSQL when set.
 */
import anyTest, { type ExecutionContext } from 'ava';
import { randomBytes } from 'node:crypto';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { launchChromium, watchPage } from '../../helpers/loopback.ts';
import { needs } from '../../helpers/needs.ts';
import { TEST_CLIENT_ID, startTestServerOnPort, type TestServer } from '../../helpers/server.ts';
import { postgresUrl, type SqlBackend } from '../../helpers/databases.ts';
import { TestClock, pkce } from '../../helpers/oauth.ts';
import { mailTo, mailsTo, startSmtp, type Smtp } from '../../admin/smtp.ts';

// Serial: one browser, and every login costs a bcrypt compare on a shared machine.
const test = needs(anyTest.serial, 'chromium');
const PASSWORD = 'Correct-Horse-7-Battery';
const WAIT = 30_000;

let browser: Browser | undefined;

// playwright launches the browser on a fresh temporary profile (user-data-dir) and removes it on close.
test.before(async () => {
  browser = await launchChromium();
});

test.after.always(async () => {
  await browser?.close();
});

/**
 * The server whose issuer is its own loopback address, so /authorize sends the
 * browser to its /app; closed when the test ends (like every resource below:
 * AVA runs teardowns last registered first).
 */
async function start(t: ExecutionContext, extra: Record<string, string | number | boolean> = {}, backend: SqlBackend = 'sqlite', clock?: TestClock): Promise<TestServer> {
  const server = await startTestServerOnPort((port) => ({ url: `http://127.0.0.1:${port}`, 'enable-email-verification': false, ...extra }), { backend, ...(clock === undefined ? {} : { clock }) });
  t.teardown(() => server.close());
  return server;
}

/** Waits until a direct sign-in has landed on the account center and it shows the signed-in account. */
async function landedOnAccount(page: Page): Promise<void> {
  await page.waitForURL((url) => url.pathname === '/app/account');
  await page.locator('#account-email:not(:empty)').waitFor();
}

/** The SMTP test server, closed when the test ends. */
async function smtpFor(t: ExecutionContext): Promise<Smtp> {
  const smtp = await startSmtp();
  t.teardown(() => smtp.close());
  return smtp;
}

async function signup(server: TestServer, email = `u${randomBytes(6).toString('hex')}@example.com`): Promise<string> {
  const r = await server.call('signup', { email, password: PASSWORD }, { protocol: 'rest' });
  if (!r.body) throw new Error(`signup failed: ${JSON.stringify(r.error)}`);
  return email;
}

/** A fresh browser context (no cookies) whose requests to `<server>/callback` are answered by a stub client page; closed when the test ends. */
async function contextFor(t: ExecutionContext, server: TestServer): Promise<{ context: BrowserContext; page: Page }> {
  const context = await browser!.newContext();
  t.teardown(() => context.close());
  context.setDefaultTimeout(WAIT);
  await context.route(`${server.httpUrl}/callback**`, (route) => route.fulfill({ status: 200, contentType: 'text/html', body: '<!DOCTYPE html><p>client callback</p>' }));
  return { context, page: await context.newPage() };
}

/** A server that mails through the real SMTP test server. */
function smtpFlags(smtp: Smtp): Record<string, string | number> {
  return { 'smtp-host': '127.0.0.1', 'smtp-port': smtp.port, 'smtp-sender-email': 'noreply@example.com' };
}

/** The link to `<server>/<path>?token=…` in a mail (the page the link mails point at). */
function linkIn(server: TestServer, mail: string, path: string): string {
  const m = new RegExp(`${server.httpUrl.replace(/[.]/g, '\\.')}${path}\\?token=[A-Za-z0-9_-]+`).exec(mail);
  if (m === null) throw new Error(`no link to ${path} in the mail`);
  return m[0];
}

const sessionCookies = async (context: BrowserContext) => (await context.cookies()).filter((c) => c.name === 'cookie_session');

function authorizeUrl(server: TestServer, challenge: string, state: string): string {
  const q = new URLSearchParams({
    response_type: 'code',
    client_id: TEST_CLIENT_ID,
    redirect_uri: `${server.httpUrl}/callback`,
    state,
    scope: 'openid email profile offline_access',
    nonce: 'n-1',
    code_challenge: challenge,
    code_challenge_method: 'S256',
  });
  return `${server.httpUrl}/authorize?${q.toString()}`;
}

async function exchange(server: TestServer, code: string, verifier: string): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`${server.httpUrl}/oauth/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'authorization_code', code, redirect_uri: `${server.httpUrl}/callback`, client_id: TEST_CLIENT_ID, code_verifier: verifier }).toString(),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

/** Opens the client's /authorize in the browser; asserts it lands on the login page with the same query. */
async function openAuthorize(t: import('ava').ExecutionContext, server: TestServer, page: Page, state: string): Promise<string> {
  const { verifier, challenge } = pkce();
  const start = authorizeUrl(server, challenge, state);
  await page.goto(start);
  await page.waitForURL((u) => u.pathname === '/app');
  t.is(new URL(page.url()).search, new URL(start).search, 'the page got the whole authorization request');
  await page.locator('#email').waitFor({ state: 'visible' });
  return verifier;
}

/** Waits for the client's callback; asserts its `state` and exchanges its `code` for tokens. */
async function finishAtClient(t: import('ava').ExecutionContext, server: TestServer, page: Page, state: string, verifier: string): Promise<Record<string, unknown>> {
  await page.waitForURL((u) => u.pathname === '/callback');
  const back = new URL(page.url());
  t.is(back.searchParams.get('state'), state);
  const code = back.searchParams.get('code');
  t.truthy(code, page.url());
  const tokens = await exchange(server, code ?? '', verifier);
  t.is(tokens.status, 200, JSON.stringify(tokens.body));
  t.is(typeof tokens.body.access_token, 'string');
  t.is(typeof tokens.body.id_token, 'string');
  return tokens.body;
}

const backends: SqlBackend[] = postgresUrl() ? ['sqlite', 'postgres'] : ['sqlite'];
for (const backend of backends) {
  test(`OAuth code flow: /authorize without a session → the page → email and password → the client gets a code that exchanges for tokens (${backend})`, async (t) => {
    const server = await start(t, {}, backend);
    const { page } = await contextFor(t, server);
    const email = await signup(server);
    const problems = watchPage(page);
    const state = `st-${randomBytes(4).toString('hex')}`;
    const verifier = await openAuthorize(t, server, page, state);
    await page.fill('#email', email);
    await page.fill('#password', PASSWORD);
    await page.click('#submit');
    await finishAtClient(t, server, page, state, verifier);
    t.deepEqual(problems, []);
  });
}

test('a wrong password shows the server error and stays on the page; the right one without a query lands on the account center', async (t) => {
  const server = await start(t);
  const { context, page } = await contextFor(t, server);
  const email = await signup(server);
  const problems = watchPage(page);
  await page.goto(`${server.httpUrl}/app`);
  await page.fill('#email', email);
  await page.fill('#password', 'not-the-password');
  await page.click('#submit');
  await page.locator('#error').waitFor({ state: 'visible' });
  const shown = (await page.textContent('#error')) ?? '';
  const direct = await server.call('login', { email, password: 'not-the-password' }, { protocol: 'rest' });
  t.is(shown, String(direct.error?.message), 'the message the server answers');
  t.is(new URL(page.url()).pathname, '/app');
  t.true(await page.isVisible('#login'));
  t.deepEqual((await context.cookies()).filter((c) => c.name === 'cookie_session'), []);

  await page.fill('#password', PASSWORD);
  await page.click('#submit');
  await landedOnAccount(page);
  t.is(new URL(page.url()).pathname, '/app/account');
  t.is((await context.cookies()).filter((c) => c.name === 'cookie_session').length, 1);
  t.deepEqual(problems, []);
});

test('MFA by email code: the page asks for the code mailed through SMTP and completes the OAuth flow; forgot password shows the message', async (t) => {
  const smtp = await smtpFor(t);
  const server = await start(t, { 'enable-mfa': true, 'enforce-mfa': true, 'enable-email-otp': true, ...smtpFlags(smtp) });
  const { page } = await contextFor(t, server);
  const email = await signup(server);
  const problems = watchPage(page);
  const state = `st-${randomBytes(4).toString('hex')}`;
  const verifier = await openAuthorize(t, server, page, state);

  await page.fill('#email', email);
  await page.click('#forgot');
  await page.locator('#notice').waitFor({ state: 'visible' });
  const direct = await server.call('forgot_password', { email: `nobody-${randomBytes(4).toString('hex')}@example.com` }, { protocol: 'rest' });
  t.is(await page.textContent('#notice'), String(direct.body?.message), 'the same non-enumerating message as for an unknown address');
  // The sign-up's own challenge (--enforce-mfa) and the reset mail.
  await mailsTo(smtp, email, 2);

  await page.fill('#password', PASSWORD);
  await page.click('#submit');
  await page.locator('#otp').waitFor({ state: 'visible' });
  t.regex((await page.textContent('#mfa-prompt')) ?? '', /email/);
  t.true(await page.isHidden('#login'));
  const mails = await mailsTo(smtp, email, 3);
  const code = /code is <strong>([0-9]{6})<\/strong>/.exec(mails[2]!)?.[1] ?? '';
  t.regex(code, /^[0-9]{6}$/);

  await page.fill('#otp', code === '000000' ? '000001' : '000000');
  await page.click('#verify');
  await page.locator('#error').waitFor({ state: 'visible' });
  t.truthy(await page.textContent('#error'));
  t.is(new URL(page.url()).pathname, '/app');

  await page.fill('#otp', code);
  await page.click('#verify');
  const tokens = await finishAtClient(t, server, page, state, verifier);
  const claims = JSON.parse(Buffer.from(String(tokens.id_token).split('.')[1]!, 'base64url').toString('utf8')) as { amr?: string[] };
  t.deepEqual(claims.amr, ['pwd', 'otp', 'mfa'], 'the session was opened by the second factor');
  t.deepEqual(problems, []);
});

test('a query carrying markup is neither executed nor rendered', async (t) => {
  const server = await start(t);
  const { page } = await contextFor(t, server);
  const problems = watchPage(page);
  const evil = '<script>window.__pwned=1</script>"><img src=x onerror="window.__pwned=2">';
  const query = new URLSearchParams({ state: evil, redirect_uri: 'javascript:window.__pwned=3', client_id: evil });
  const res = await fetch(`${server.httpUrl}/app?${query.toString()}`);
  const html = await res.text();
  t.false(html.includes('__pwned'), 'the document does not contain the query');
  await page.goto(`${server.httpUrl}/app?${query.toString()}`);
  await page.locator('#email').waitFor({ state: 'visible' });
  t.is(await page.evaluate(() => (globalThis as { __pwned?: number }).__pwned), undefined);
  t.is(await page.locator('script:not([type="application/json"])').count(), 1, 'one script (and the data block of its messages)');
  t.false((await page.textContent('#messages'))?.includes('__pwned'));
  t.is(await page.locator('img').count(), 1, 'only the page own (hidden) enrolment image');
  t.false((await page.content()).includes('__pwned'));
  t.deepEqual(problems, []);
});

test('the page headers: strict CSP (no inline script allowed but its own), no-store, no framing; /app/ and /app/reset-password too; 404 with --enable-login-page=false', async (t) => {
  const server = await start(t);
  for (const path of ['/app', '/app/', '/app?a=1', '/app/reset-password', '/app/reset-password?token=abc']) {
    const res = await fetch(`${server.httpUrl}${path}`);
    t.is(res.status, 200, path);
    t.regex(res.headers.get('content-type') ?? '', /^text\/html/);
    t.is(res.headers.get('cache-control'), 'no-store');
    t.is(res.headers.get('x-frame-options'), 'DENY');
    const csp = res.headers.get('content-security-policy') ?? '';
    const directives = new Map(csp.split(';').map((d) => d.trim().split(/\s+/)).map(([name, ...values]) => [name, values]));
    t.deepEqual(directives.get('default-src'), ["'none'"]);
    t.deepEqual(directives.get('frame-ancestors'), ["'none'"]);
    t.deepEqual(directives.get('connect-src'), ["'self'"]);
    t.deepEqual(directives.get('form-action'), ["'none'"]);
    t.deepEqual(directives.get('base-uri'), ["'none'"]);
    t.deepEqual(directives.get('require-trusted-types-for'), ["'script'"]);
    const scripts = directives.get('script-src') ?? [];
    t.is(scripts.length, 1);
    t.regex(scripts[0] ?? '', /^'sha256-[A-Za-z0-9+/]{43}='$/);
    t.false(csp.includes('unsafe'), csp);
  }
  const off = await start(t, { 'enable-login-page': false });
  for (const path of ['/app', '/app/reset-password']) {
    const res = await fetch(`${off.httpUrl}${path}`);
    t.is(res.status, 404, path);
    await res.arrayBuffer();
  }
  const { challenge } = pkce();
  const login = await fetch(authorizeUrl(off, challenge, 'st-off'), { redirect: 'manual' });
  const location = new URL(login.headers.get('location') ?? 'http://invalid/');
  t.is(location.pathname, '/callback');
  t.is(location.searchParams.get('error'), 'login_required');
});

test('sign-up verification link: the page uses it up and signs in; the same link again shows the server error and the sign-in form', async (t) => {
  const smtp = await smtpFor(t);
  const server = await start(t, { 'enable-email-verification': true, ...smtpFlags(smtp) });
  const first = await contextFor(t, server);
  const second = await contextFor(t, server);
  const email = await signup(server);
  const refused = await server.call('login', { email, password: PASSWORD }, { protocol: 'rest' });
  t.is(refused.error?.code, 'unauthenticated', 'unverified before the link');
  const link = linkIn(server, await mailTo(smtp, email), '/app');

  const problems = watchPage(first.page);
  await first.page.goto(link);
  await landedOnAccount(first.page);
  t.is(new URL(first.page.url()).search, '', 'the used token left the address bar');
  t.is((await sessionCookies(first.context)).length, 1);
  t.deepEqual(problems, []);

  const again = watchPage(second.page);
  await second.page.goto(link);
  await second.page.locator('#error').waitFor({ state: 'visible' });
  const direct = await server.call('verify_email', { token: new URL(link).searchParams.get('token') }, { protocol: 'rest' });
  t.truthy(direct.error, 'the link is used up');
  t.is(await second.page.textContent('#error'), String(direct.error?.message), 'the message the server answers');
  t.true(await second.page.isVisible('#email'), 'the sign-in form');
  t.true(await second.page.isHidden('#signed-in'));
  t.deepEqual(await sessionCookies(second.context), []);
  t.deepEqual(again, []);

  const login = await server.call('login', { email, password: PASSWORD }, { protocol: 'rest' });
  t.is(login.error, undefined, 'the address is verified');
});

test('an expired sign-up link: the page shows the server\'s expired-link error and the sign-in form, and signs nobody in', async (t) => {
  const smtp = await smtpFor(t);
  const clock = new TestClock();
  const server = await start(t, { 'enable-email-verification': true, ...smtpFlags(smtp) }, 'sqlite', clock);
  const { context, page } = await contextFor(t, server);
  const email = await signup(server);
  const link = linkIn(server, await mailTo(smtp, email), '/app');
  clock.offsetMs = 31 * 60 * 1000; // links live 30 minutes

  const problems = watchPage(page);
  await page.goto(link);
  await page.locator('#error').waitFor({ state: 'visible' });
  t.regex(String(await page.textContent('#error')), /expired/i);
  t.true(await page.isVisible('#email'), 'the sign-in form');
  t.true(await page.isHidden('#signed-in'));
  t.deepEqual(await sessionCookies(context), []);
  t.deepEqual(problems, []);
  t.is((await server.call('login', { email, password: PASSWORD }, { protocol: 'rest' })).error?.code, 'unauthenticated', 'the address is still unverified');
});

test('reset link: /app/reset-password sets the new password (both fields must match), then the page signs in with it; without a token it says the link is incomplete', async (t) => {
  const smtp = await smtpFor(t);
  const server = await start(t, smtpFlags(smtp));
  const { context, page } = await contextFor(t, server);
  const email = await signup(server);
  const problems = watchPage(page);
  await page.goto(`${server.httpUrl}/app/reset-password`);
  await page.locator('#error').waitFor({ state: 'visible' });
  t.regex((await page.textContent('#error')) ?? '', /incomplete/);
  t.true(await page.isHidden('#reset'));
  t.true(await page.isVisible('#email'), 'the sign-in form');

  await page.fill('#email', email);
  await page.click('#forgot');
  await page.locator('#notice').waitFor({ state: 'visible' });
  const link = linkIn(server, await mailTo(smtp, email), '/app/reset-password');

  const fresh = 'Another-Horse-8-Staple';
  await page.goto(link);
  await page.locator('#new-password').waitFor({ state: 'visible' });
  t.is(await page.textContent('#title'), 'Set a new password');
  t.true(await page.isHidden('#login'));
  await page.fill('#new-password', fresh);
  await page.fill('#confirm-password', `${fresh}x`);
  await page.click('#reset-submit');
  await page.locator('#error').waitFor({ state: 'visible' });
  t.true(await page.isVisible('#reset'), 'differing passwords stay on the form');
  t.truthy((await server.call('login', { email, password: PASSWORD }, { protocol: 'rest' })).body, 'nothing was changed');

  await page.fill('#confirm-password', fresh);
  await page.click('#reset-submit');
  await page.locator('#login').waitFor({ state: 'visible' });
  t.truthy(await page.textContent('#notice'));
  t.true(await page.isHidden('#error'));
  t.true(await page.isHidden('#reset'));
  t.is(new URL(page.url()).search, '', 'the used token left the address bar');
  const old = await server.call('login', { email, password: PASSWORD }, { protocol: 'rest' });
  t.is(old.error?.code, 'unauthenticated', 'the old password no longer works');

  await page.fill('#email', email);
  await page.fill('#password', fresh);
  await page.click('#submit');
  await landedOnAccount(page);
  t.is((await sessionCookies(context)).length, 1);
  t.deepEqual(problems, []);
});

test('magic link with MFA: the page answers the challenge in the code step, asking the email the link did not name, then lands on the account center', async (t) => {
  const smtp = await smtpFor(t);
  const server = await start(t, { 'enable-mfa': true, 'enforce-mfa': true, 'enable-email-otp': true, ...smtpFlags(smtp) });
  const { context, page } = await contextFor(t, server);
  const email = await signup(server);
  await mailsTo(smtp, email, 1); // the sign-up's own challenge (--enforce-mfa)
  const asked = await server.call('magic_link_login', { email }, { protocol: 'rest' });
  t.is(asked.error, undefined);
  const link = linkIn(server, (await mailsTo(smtp, email, 2))[1]!, '/app');

  const problems = watchPage(page);
  await page.goto(link);
  await page.locator('#otp').waitFor({ state: 'visible' });
  t.regex((await page.textContent('#mfa-prompt')) ?? '', /email/);
  t.true(await page.isVisible('#mfa-email'));
  t.deepEqual(await sessionCookies(context), [], 'no session before the second factor');
  const mails = await mailsTo(smtp, email, 3);
  const code = /code is <strong>([0-9]{6})<\/strong>/.exec(mails[2]!)?.[1] ?? '';
  t.regex(code, /^[0-9]{6}$/);

  await page.fill('#mfa-email', email);
  await page.fill('#otp', code);
  await page.click('#verify');
  await landedOnAccount(page);
  t.is((await sessionCookies(context)).length, 1);
  t.deepEqual(problems, []);
});
