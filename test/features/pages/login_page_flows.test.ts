/**
 * The login page's other flows in Chromium against the real server and the
 * real SMTP test server on loopback: an invitation link (from the admin's
 * invite_members) opened at /app sets a password the page then signs in
 * with; sign-up by email and by phone, then sign-in by phone; sign-up with
 * email verification on (check your inbox, nobody signed in, the mailed link
 * signs in) and with --enforce-mfa (the code step first); a magic link
 * asked for on the page, mailed and opened; an email code resent from the
 * code step (the first code no longer works, the new one does); TOTP
 * enrolment at the first challenge (QR code, key, otpauth URI, recovery
 * codes) and the code of the enrolled key accepted; an SMS code after a
 * sign-in by phone, resent from the code step (through a fake SMS vendor
 * on loopback); the
 * organization's name and logo from the flags, with the logo's origin the
 * only image source the policy adds; a button for each enabled social
 * provider linking to /oauth_login/<provider> with the way back; none of
 * those where the server does not offer them. No CSP or Trusted Types
 * violation, page error or dialog along the way.
 */
import anyTest, { type ExecutionContext } from 'ava';
import { randomBytes } from 'node:crypto';
import { generate } from 'otplib';
import type { Browser, Page } from 'playwright-core';
import { launchChromium, watchPage } from '../../helpers/loopback.ts';
import { needs } from '../../helpers/needs.ts';
import { TEST_ADMIN_SECRET, startTestServer, type TestServer } from '../../helpers/server.ts';
import { mailsTo, startSmtp, type Smtp } from '../../admin/smtp.ts';
import { lastCodeTo, smsFlags, startSmsVendor } from '../../helpers/sms_vendor.ts';
import { screenshot } from '../../helpers/screenshots.ts';
import { seriousViolations } from '../../helpers/accessibility.ts';

const test = needs(anyTest.serial, 'chromium');

/** A screen the test has reached: its picture for docs/ui.md (when asked for) and no serious or critical accessibility violation. */
async function screen(t: ExecutionContext, page: Page, name: string): Promise<void> {
  await screenshot(page, name);
  t.deepEqual(await seriousViolations(page), [], `accessibility of ${name}`);
}
const PASSWORD = 'Correct-Horse-7-Battery';
const WAIT = 30_000;

let browser: Browser | undefined;

test.before(async () => {
  browser = await launchChromium();
});

test.after.always(async () => {
  await browser?.close();
});

async function start(t: ExecutionContext, extra: Record<string, string | number | boolean> = {}): Promise<TestServer> {
  const server = await startTestServer({ 'enable-email-verification': false, 'app-cookie-secure': false, ...extra });
  t.teardown(() => server.close());
  return server;
}

async function smtpFor(t: ExecutionContext): Promise<{ smtp: Smtp; flags: Record<string, string | number> }> {
  const smtp = await startSmtp();
  t.teardown(() => smtp.close());
  return { smtp, flags: { 'smtp-host': '127.0.0.1', 'smtp-port': smtp.port, 'smtp-sender-email': 'noreply@example.com' } };
}

async function pageFor(t: ExecutionContext, width?: number): Promise<{ page: Page; problems: string[] }> {
  const context = await browser!.newContext(width === undefined ? {} : { viewport: { width, height: 800 } });
  t.teardown(() => context.close());
  context.setDefaultTimeout(WAIT);
  const page = await context.newPage();
  return { page, problems: watchPage(page) };
}

const fresh = (): string => `u${randomBytes(6).toString('hex')}@example.com`;
const mailLink = (mail: string, prefix: string): string => {
  const m = new RegExp(`${prefix.replace(/[.]/g, '\\.')}\\?[^"\\s<]+`).exec(mail.replace(/&#38;/g, '&'));
  if (m === null) throw new Error(`no link to ${prefix} in the mail`);
  return m[0];
};

/** Waits for `#<id>` to show, failing at once with the page's error when that shows instead. */
async function shown(page: Page, id: string): Promise<string> {
  await page.locator(`#${id}:visible, #error:visible`).first().waitFor();
  const error = (await page.isVisible('#error')) ? await page.textContent('#error') : null;
  if (error !== null && id !== 'error') throw new Error(`the page shows the error: ${error}`);
  return (await page.textContent(`#${id}`)) ?? '';
}

/** A direct sign-in lands on the account center, which shows the signed-in account. */
async function signedIn(page: Page): Promise<void> {
  await page.waitForURL((url) => url.pathname === '/app/account');
  await page.locator('#account-email:not(:empty)').waitFor();
}

test('an invitation link opened at /app sets a password, then the page signs in with it', async (t) => {
  const { smtp, flags } = await smtpFor(t);
  const server = await start(t, flags);
  const email = fresh();
  const invited = await server.call('invite_members', { emails: [email], redirect_uri: `${server.httpUrl}/app` }, { protocol: 'rest', headers: { 'x-service-admin-secret': TEST_ADMIN_SECRET } });
  t.is(invited.error, undefined);
  const [mail] = await mailsTo(smtp, email, 1);
  const link = mailLink(mail!, `${server.httpUrl}/app`);
  t.regex(link, /type=invite_member/);
  const { page, problems } = await pageFor(t);
  await page.goto(link);
  await page.locator('#title', { hasText: 'Accept the invitation' }).waitFor();
  await screen(t, page, 'app-invitation');
  await page.fill('#new-password', PASSWORD);
  await page.fill('#confirm-password', PASSWORD);
  await page.click('#reset-submit');
  await page.locator('#notice', { hasText: 'Your password is set' }).waitFor();
  t.false(page.url().includes('token='), 'the used token leaves the address bar');
  await page.fill('#email', email);
  await page.fill('#password', PASSWORD);
  await page.click('#submit');
  await signedIn(page);
  // The link works once.
  await page.goto(link);
  await page.fill('#new-password', PASSWORD);
  await page.fill('#confirm-password', PASSWORD);
  await page.click('#reset-submit');
  await page.locator('#error', { hasText: 'invalid token' }).waitFor();
  t.deepEqual(problems, []);
});

test('sign-up by email signs in; sign-up by phone, then sign-in by phone', async (t) => {
  const server = await start(t, { 'enable-mobile-basic-authentication': true });
  const { page, problems } = await pageFor(t);
  await page.goto(`${server.httpUrl}/app`);
  await page.click('#to-signup');
  const email = fresh();
  await page.fill('#su-id', email);
  await page.fill('#su-given', 'Ann');
  await page.fill('#su-password', PASSWORD);
  await page.fill('#su-confirm', `${PASSWORD}x`);
  await page.click('#signup-submit');
  await page.locator('#error', { hasText: 'The two passwords differ.' }).waitFor();
  await screen(t, page, 'app-sign-up');
  await page.fill('#su-confirm', PASSWORD);
  await page.click('#signup-submit');
  await signedIn(page);
  const user = await server.call('user', { email }, { protocol: 'rest', headers: { 'x-service-admin-secret': TEST_ADMIN_SECRET } });
  t.is(user.body?.['given_name'], 'Ann');

  const phone = `+1555${String(Date.now()).slice(-7)}`;
  const second = await pageFor(t);
  await second.page.goto(`${server.httpUrl}/app`);
  await second.page.click('#to-signup');
  await second.page.fill('#su-id', phone);
  await second.page.fill('#su-password', PASSWORD);
  await second.page.fill('#su-confirm', PASSWORD);
  await second.page.click('#signup-submit');
  await signedIn(second.page);
  const third = await pageFor(t);
  await third.page.goto(`${server.httpUrl}/app`);
  await third.page.fill('#email', phone);
  await third.page.fill('#password', PASSWORD);
  await third.page.click('#submit');
  await signedIn(third.page);
  t.deepEqual([...problems, ...second.problems, ...third.problems], []);
});

for (const width of [1280, 375]) test(`sign-up with email verification on, ${width} px wide: the page says to check the inbox and signs nobody in; the mailed link then signs in`, async (t) => {
  const { smtp, flags } = await smtpFor(t);
  const server = await start(t, { ...flags, 'enable-email-verification': true });
  const { page, problems } = await pageFor(t, width);
  await page.goto(`${server.httpUrl}/app`);
  await page.click('#to-signup');
  const email = fresh();
  await page.fill('#su-id', email);
  await page.fill('#su-password', PASSWORD);
  await page.fill('#su-confirm', PASSWORD);
  await page.click('#signup-submit');
  t.regex(await shown(page, 'notice'), /^Check your inbox: we sent a link to .+\. Open it to verify your address and sign in\.$/);
  t.true((await page.textContent('#notice'))!.includes(email), 'the notice names the address');
  t.true(await page.isHidden('#signed-in'), 'not shown as signed in');
  t.is(await page.textContent('#title'), 'Sign in');
  t.true(await page.isVisible('#login'), 'the sign-in form, for after the link');
  t.is(await page.inputValue('#email'), email);
  t.deepEqual((await page.context().cookies()).filter((c) => c.name.startsWith('cookie_session')), [], 'no session');
  t.true(await page.evaluate<boolean>('document.documentElement.scrollWidth <= window.innerWidth'), 'nothing wider than the screen');
  await screen(t, page, `app-check-inbox-${width}`);

  const [mail] = await mailsTo(smtp, email, 1);
  const token = /\/app\?token=([A-Za-z0-9_-]+)/.exec(mail!)?.[1];
  t.truthy(token, 'the mail links to /app with a token');
  await page.goto(`${server.httpUrl}/app?token=${token}`);
  await signedIn(page);
  t.deepEqual(problems, []);
});

test('sign-up with --enforce-mfa: the page asks for the second factor before signing in', async (t) => {
  const { smtp, flags } = await smtpFor(t);
  const server = await start(t, { ...flags, 'enable-mfa': true, 'enforce-mfa': true, 'enable-email-otp': true });
  const { page, problems } = await pageFor(t);
  await page.goto(`${server.httpUrl}/app`);
  await page.click('#to-signup');
  const email = fresh();
  await page.fill('#su-id', email);
  await page.fill('#su-password', PASSWORD);
  await page.fill('#su-confirm', PASSWORD);
  await page.click('#signup-submit');
  t.regex(await shown(page, 'mfa-prompt'), /email/);
  t.true(await page.isHidden('#signed-in'));
  t.deepEqual((await page.context().cookies()).filter((c) => c.name.startsWith('cookie_session')), [], 'no session before the second factor');
  const code = /code is <strong>([0-9]{6})<\/strong>/.exec((await mailsTo(smtp, email, 1))[0]!)?.[1] ?? '';
  t.regex(code, /^[0-9]{6}$/);
  await page.fill('#otp', code);
  await page.click('#verify');
  await signedIn(page);
  t.is((await page.context().cookies()).filter((c) => c.name === 'cookie_session').length, 1);
  t.deepEqual(problems, []);
});

test('a magic link asked for on the page is mailed and signs in; an email code is resent from the code step', async (t) => {
  const { smtp, flags } = await smtpFor(t);
  const server = await start(t, { ...flags, 'enable-magic-link-login': true });
  const email = fresh();
  await server.call('signup', { email, password: PASSWORD }, { protocol: 'rest' });
  const { page, problems } = await pageFor(t);
  await page.goto(`${server.httpUrl}/app`);
  await page.click('#magic');
  await page.locator('#error', { hasText: 'Enter your email first.' }).waitFor();
  await page.fill('#email', email);
  await page.click('#magic');
  await shown(page, 'notice');
  const [mail] = await mailsTo(smtp, email, 1);
  // The link names the server's --url (not set here); the same /app on the test server's address.
  const token = /\/app\?token=([A-Za-z0-9_-]+)/.exec(mail!)?.[1];
  t.truthy(token, 'the mail links to /app with a token');
  const link = `${server.httpUrl}/app?token=${token}`;
  const other = await pageFor(t);
  await other.page.goto(link);
  await signedIn(other.page);

  // Email codes: the code step can send a new one; the first stops working.
  const { smtp: smtp2, flags: flags2 } = await smtpFor(t);
  const mfa = await start(t, { ...flags2, 'enable-mfa': true, 'enforce-mfa': true, 'enable-email-otp': true });
  const mfaEmail = fresh();
  await mfa.call('signup', { email: mfaEmail, password: PASSWORD }, { protocol: 'rest' });
  const third = await pageFor(t);
  await third.page.goto(`${mfa.httpUrl}/app`);
  await third.page.fill('#email', mfaEmail);
  await third.page.fill('#password', PASSWORD);
  await third.page.click('#submit');
  await third.page.locator('#otp').waitFor();
  const codeOf = (m: string): string => /code is <strong>([0-9]{6})<\/strong>/.exec(m)?.[1] ?? '';
  // The first mail is the sign-up's own challenge (--enforce-mfa), the second the login's.
  const first = codeOf((await mailsTo(smtp2, mfaEmail, 2))[1]!);
  await third.page.click('#resend');
  await shown(third.page, 'notice');
  const second = codeOf((await mailsTo(smtp2, mfaEmail, 3))[2]!);
  t.regex(second, /^[0-9]{6}$/);
  if (first !== second) {
    await third.page.fill('#otp', first);
    await third.page.click('#verify');
    await third.page.locator('#error').waitFor();
  }
  await third.page.fill('#otp', second);
  await third.page.click('#verify');
  await signedIn(third.page);
  t.deepEqual([...problems, ...other.problems, ...third.problems], []);
});

test('the organization name and logo from the flags; social buttons for the enabled providers only; no sign-up or magic link where they are off', async (t) => {
  const server = await start(t, {
    'organization-name': 'Acme <Corp>',
    'organization-logo': 'https://cdn.example.com/logo.png',
    'google-client-id': 'g-id',
    'google-client-secret': 'g-secret',
  });
  const res = await fetch(`${server.httpUrl}/app`);
  const csp = res.headers.get('content-security-policy') ?? '';
  t.regex(csp, /img-src data: https:\/\/cdn\.example\.com(;|$)/);
  const { page, problems } = await pageFor(t);
  await page.context().route('https://cdn.example.com/**', (route) =>
    route.fulfill({ status: 200, contentType: 'image/png', body: Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=', 'base64') }),
  );
  await page.goto(`${server.httpUrl}/app?client_id=abc&state=s1`);
  t.is(await page.textContent('#org'), 'Acme <Corp>');
  t.is(await page.getAttribute('#logo', 'src'), 'https://cdn.example.com/logo.png');
  const google = page.getByRole('link', { name: 'Continue with Google' });
  await google.waitFor();
  const href = new URL((await google.getAttribute('href'))!, server.httpUrl);
  t.is(href.pathname, '/oauth_login/google');
  const back = new URL(href.searchParams.get('redirect_uri')!);
  t.is(back.pathname, '/authorize', 'with an authorization request, the provider comes back to it');
  t.is(back.searchParams.get('client_id'), 'abc');
  t.is(await page.locator('#social a').count(), 1);
  await screen(t, page, 'app-sign-in');
  t.true(await page.isVisible('#to-signup'));
  t.true(await page.isHidden('#magic'));

  const plain = await start(t, { 'enable-signup': false });
  const other = await pageFor(t);
  await other.page.goto(`${plain.httpUrl}/app`);
  await other.page.locator('#email').waitFor();
  await other.page.locator('#to-signup-p').waitFor({ state: 'hidden' });
  t.is(await other.page.locator('#social a').count(), 0);
  t.true(await other.page.isHidden('#social'));
  t.deepEqual([...problems, ...other.problems], []);
});

test('TOTP: the first challenge shows the enrolment (QR code, key, URI, recovery codes); a code of that key signs in', async (t) => {
  const server = await start(t, { 'enable-mfa': true, 'enforce-mfa': true, 'enable-totp-login': true });
  const email = fresh();
  await server.call('signup', { email, password: PASSWORD }, { protocol: 'rest' });
  const { page, problems } = await pageFor(t);
  await page.goto(`${server.httpUrl}/app`);
  await page.fill('#email', email);
  await page.fill('#password', PASSWORD);
  await page.click('#submit');
  await shown(page, 'enrol');
  t.regex((await page.textContent('#mfa-prompt')) ?? '', /authenticator/);
  t.regex((await page.getAttribute('#enrol-qr', 'src')) ?? '', /^data:image\//);
  t.true(await page.isVisible('#enrol-qr'));
  const secret = ((await page.textContent('#enrol-secret')) ?? '').trim();
  t.regex(secret, /^[A-Z2-7]+=*$/);
  t.regex((await page.textContent('#enrol-uri')) ?? '', /^otpauth:\/\/totp\//);
  t.true(((await page.textContent('#enrol-codes')) ?? '').trim().split(/\s+/).length >= 5, 'recovery codes are shown');
  t.true(await page.isHidden('#resend'), 'no code to resend for an authenticator app');
  await screen(t, page, 'app-totp-enrolment');
  await page.fill('#otp', await generate({ secret, epoch: Math.floor(Date.now() / 1000) }));
  await page.click('#verify');
  await signedIn(page);
  t.deepEqual(problems, []);
});

test('SMS code: a sign-in by phone asks for the texted code; a new one is texted on request and signs in', async (t) => {
  const vendor = await startSmsVendor();
  t.teardown(() => vendor.close());
  const server = await start(t, { 'enable-mfa': true, 'enforce-mfa': true, 'enable-sms-otp': true, 'enable-mobile-basic-authentication': true, ...smsFlags(vendor) });
  const phone = `+1555${String(Date.now()).slice(-7)}`;
  const made = await server.call('signup', { phone_number: phone, password: PASSWORD }, { protocol: 'rest' });
  t.is(made.error, undefined);
  const { page, problems } = await pageFor(t);
  await page.goto(`${server.httpUrl}/app`);
  await page.fill('#email', phone);
  await page.fill('#password', PASSWORD);
  await page.click('#submit');
  t.regex(await shown(page, 'mfa-prompt'), /phone/);
  const first = lastCodeTo(vendor, phone);
  t.regex(first ?? '', /^[0-9]{6}$/);
  const sent = vendor.messages.length;
  await page.click('#resend');
  await shown(page, 'notice');
  t.is(vendor.messages.length, sent + 1, 'a new code was texted');
  await screen(t, page, 'app-code');
  const second = lastCodeTo(vendor, phone)!;
  if (second !== first) {
    await page.fill('#otp', first!);
    await page.click('#verify');
    await shown(page, 'error');
  }
  await page.fill('#otp', second);
  await page.click('#verify');
  await signedIn(page);
  t.deepEqual(problems, []);
});
