/**
 * The account center at /app/account in a real browser (Debian's Chromium
 * through playwright-core) against the real server, at 1280 and 375 pixels
 * wide: a sign-in on /app lands on it; changing the password (the old one
 * stops working, the other sessions end); ending another session, which is
 * refused on its next call; unlinking a provider (GitHub, a fake on
 * loopback); deleting the account after the password is proven again; all
 * of it by keyboard alone in one run; axe-core with no serious or critical
 * violation in the light and the dark scheme; no console error, page error
 * or Content-Security-Policy violation; the generic OpenID provider's button
 * with its display name; in German (the sign-in page's menu, an English
 * browser) the server's errors shown next to a form are German too.
 * Screenshots for docs/ui.md.
 */
import anyTest, { type ExecutionContext } from 'ava';
import { randomBytes } from 'node:crypto';
import type { Browser, Page } from 'playwright-core';
import { socialLoginOf } from '../../../cmd/index.ts';
import { launchChromium, watchPage } from '../../helpers/loopback.ts';
import { needs } from '../../helpers/needs.ts';
import { type TestServer } from '../../helpers/server.ts';
import { CookieJar, drive, type FakeProvider, githubEndpoints, landingParams, startFakeProvider, startOnKnownPort } from '../../helpers/social.ts';
import { screenshot } from '../../helpers/screenshots.ts';
import { seriousViolations } from '../../helpers/accessibility.ts';

const test = needs(anyTest.serial, 'chromium');
const PASSWORD = 'Correct-Horse-7-Battery';
const NEW_PASSWORD = 'Another-Horse-8-Stable';
const WAIT = 30_000;
const WIDTHS = [1280, 375] as const;

let browser: Browser | undefined;
let github: FakeProvider;
let server: TestServer;
let base = '';

test.before(async () => {
  browser = await launchChromium();
  github = await startFakeProvider('github', { clientId: 'gh', clientSecret: 'gh-secret' });
  ({ server, base } = await startOnKnownPort((url) => ({
    url,
    'enable-email-verification': false,
    'app-cookie-secure': false,
    'github-client-id': 'gh',
    'github-client-secret': 'gh-secret',
    'organization-name': 'Example Corp',
    // The generic OpenID provider: its button carries the name the deployment gives it (discovery waits for a login).
    'oidc-issuer': 'https://sso.example.com/realms/staff',
    'oidc-client-id': 'latchkey',
    'oidc-client-secret': 'oidc-secret',
    'oidc-display-name': 'Staff SSO',
  })));
  socialLoginOf(server.server.services)?.useEndpointsForTests('github', githubEndpoints(github));
});

test.after.always(async () => {
  await browser?.close();
  await server?.close();
  await github?.close();
});

const fresh = (): string => `u${randomBytes(6).toString('hex')}@example.com`;

/** A page of a fresh browser context `width` pixels wide, watched for console errors, page errors and policy violations. */
async function pageFor(t: ExecutionContext, width: number): Promise<{ page: Page; problems: string[] }> {
  const context = await browser!.newContext({ viewport: { width, height: width > 600 ? 900 : 800 } });
  t.teardown(() => context.close());
  context.setDefaultTimeout(WAIT);
  const page = await context.newPage();
  const problems = watchPage(page);
  page.on('console', (m) => {
    if (m.type() === 'error') problems.push(`console error: ${m.text()}`);
  });
  return { page, problems };
}

/** Creates the account through the API and ends the session its sign-up opened, so that the browser's is its first. */
async function signUp(email: string): Promise<void> {
  const r = await server.call('signup', { email, password: PASSWORD }, { protocol: 'rest' });
  if (r.body === undefined) throw new Error(`signup failed: ${JSON.stringify(r.error)}`);
  await server.call('logout', {}, { protocol: 'rest', headers: { authorization: `Bearer ${String(r.body['access_token'])}` } });
}

/** Signs in on /app as `email` and waits for the account center. */
async function signIn(page: Page, email: string, password = PASSWORD): Promise<void> {
  await page.goto(`${base}/app`);
  await page.fill('#email', email);
  await page.fill('#password', password);
  await page.click('#submit');
  await page.waitForURL((url) => url.pathname === '/app/account');
  await page.locator('#account-email:not(:empty)').waitFor();
  await page.locator('#content:not([aria-busy])').waitFor();
}

/** A second session of `email`, opened through the API from another device; its access token. */
async function otherDevice(email: string, password = PASSWORD): Promise<string> {
  const r = await server.call('login', { email, password }, { protocol: 'rest', headers: { 'user-agent': 'Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1' } });
  if (r.body === undefined) throw new Error(`login failed: ${JSON.stringify(r.error)}`);
  return r.body['access_token'] as string;
}

const stillValid = async (token: string): Promise<boolean> =>
  (await server.call('profile', {}, { protocol: 'rest', headers: { authorization: `Bearer ${token}` } })).error === undefined;

/** The message next to a control, once it says something. */
async function message(page: Page, id: string): Promise<string> {
  await page.locator(`#${id}:not(:empty)`).waitFor();
  return (await page.textContent(`#${id}`)) ?? '';
}

/** axe-core in the light and the dark scheme; the screenshots of each (when asked for). */
async function checkScreen(t: ExecutionContext, page: Page, name: string): Promise<void> {
  for (const scheme of ['light', 'dark'] as const) {
    await page.emulateMedia({ colorScheme: scheme });
    t.deepEqual(await seriousViolations(page), [], `accessibility of ${name} (${scheme})`);
  }
  await page.emulateMedia({ colorScheme: 'light' });
  await screenshot(page, name);
}

/** The text of the message next to a control once it reads `expected` (or what it reads after the wait). */
async function messageReads(page: Page, id: string, expected: string): Promise<string> {
  type Doc = { getElementById(id: string): { textContent: string | null } | null };
  await page
    .waitForFunction(([el, text]) => (globalThis as unknown as { document: Doc }).document.getElementById(el)?.textContent === text, [id, expected] as const, { timeout: WAIT })
    .catch(() => undefined);
  return (await page.textContent(`#${id}`)) ?? '';
}

test("in German, chosen on the sign-in page's menu in an English browser: the server's errors are German too", async (t) => {
  const email = fresh();
  await signUp(email);
  const { page } = await pageFor(t, 1280);
  await page.context().addCookies([{ name: 'latchkey_lang', value: 'de', url: base }]);
  await signIn(page, email);
  t.is(await page.getAttribute('html', 'lang'), 'de');
  // A new password too short for the policy (--enable-strong-password: at least 8 characters).
  await page.fill('#old-password', PASSWORD);
  await page.fill('#new-password', 'kurz');
  await page.fill('#confirm-password', 'kurz');
  await page.click('#change-password');
  t.is(await messageReads(page, 'password-msg', 'Das Passwort muss mindestens 8 Zeichen lang sein'), 'Das Passwort muss mindestens 8 Zeichen lang sein');
  // A wrong current password.
  await page.fill('#old-password', 'nicht-mein-Passwort');
  await page.fill('#new-password', NEW_PASSWORD);
  await page.fill('#confirm-password', NEW_PASSWORD);
  await page.click('#change-password');
  t.is(await messageReads(page, 'password-msg', 'Ungültige Anmeldedaten'), 'Ungültige Anmeldedaten');
  t.is(await page.getAttribute('#password-msg', 'class'), 'msg error');
  t.is((await server.call('login', { email, password: PASSWORD }, { protocol: 'rest' })).error, undefined, 'nothing changed');
});

for (const width of WIDTHS) {
  test(`${width} px: a sign-in lands on the account center; the sign-in page and the account center pass axe in light and dark`, async (t) => {
    const email = fresh();
    await signUp(email);
    const { page, problems } = await pageFor(t, width);
    await page.goto(`${base}/app`);
    await page.locator('#login:visible').waitFor();
    await page.locator('#social .provider').first().waitFor();
    await checkScreen(t, page, `app-sign-in-${width}`);
    t.regex((await page.textContent('#social')) ?? '', /Continue with GitHub/);
    t.is(await page.locator('#social a', { hasText: 'Continue with Staff SSO' }).getAttribute('href'), `/oauth_login/oidc?redirect_uri=${encodeURIComponent(`${base}/app`)}`);
    await signIn(page, email);
    t.is(await page.textContent('#account-email'), email);
    t.is(await page.locator('#sessions li').count(), 1, 'this device');
    t.regex((await page.textContent('#sessions')) ?? '', /This device/);
    // No horizontal scrolling at this width.
    const wide = await page.evaluate<string[]>("Array.from(document.querySelectorAll('body *')).filter((e) => e.getBoundingClientRect().right > document.documentElement.clientWidth + 0.5).map((e) => e.tagName + '#' + e.id + '.' + e.className + ' ' + Math.round(e.getBoundingClientRect().right))");
    t.deepEqual(wide, [], 'nothing wider than the screen');
    t.true(await page.evaluate<boolean>('document.documentElement.scrollWidth <= document.documentElement.clientWidth'));
    await checkScreen(t, page, `app-account-${width}`);
    t.deepEqual(problems, []);
  });

  test(`${width} px: change the password: the old one stops working and the other sessions end`, async (t) => {
    const email = fresh();
    await signUp(email);
    const { page, problems } = await pageFor(t, width);
    await signIn(page, email);
    const phone = await otherDevice(email);
    await page.fill('#old-password', PASSWORD);
    await page.fill('#new-password', NEW_PASSWORD);
    await page.fill('#confirm-password', NEW_PASSWORD);
    await page.click('#change-password');
    t.is(await message(page, 'password-msg'), 'Password changed. Your other sessions were ended.');
    t.false(await stillValid(phone), 'the other session ended');
    t.is((await server.call('login', { email, password: PASSWORD }, { protocol: 'rest' })).error?.code, 'unauthenticated');
    t.is((await server.call('login', { email, password: NEW_PASSWORD }, { protocol: 'rest' })).error, undefined);
    t.deepEqual(problems, []);
  });

  test(`${width} px: a wrong current password is answered next to the form, and nothing changes`, async (t) => {
    const email = fresh();
    await signUp(email);
    const { page } = await pageFor(t, width);
    await signIn(page, email);
    await page.fill('#old-password', 'not-my-password');
    await page.fill('#new-password', NEW_PASSWORD);
    await page.fill('#confirm-password', NEW_PASSWORD);
    await page.click('#change-password');
    t.regex(await message(page, 'password-msg'), /invalid credentials/);
    t.is(await page.getAttribute('#password-msg', 'class'), 'msg error');
    t.is(new URL(page.url()).pathname, '/app/account', 'still signed in');
    t.is((await server.call('login', { email, password: PASSWORD }, { protocol: 'rest' })).error, undefined);
  });

  test(`${width} px: end another session: it is refused on its next call; this one goes on`, async (t) => {
    const email = fresh();
    await signUp(email);
    const { page, problems } = await pageFor(t, width);
    const phone = await otherDevice(email);
    await signIn(page, email);
    t.true(await stillValid(phone));
    const other = page.locator('#sessions li', { hasText: 'Safari on iOS' });
    await other.waitFor();
    await other.getByRole('button', { name: /End session \(Safari on iOS/ }).click();
    t.is(await message(page, 'sessions-msg'), 'Session ended.');
    t.false(await stillValid(phone), 'the ended session is refused');
    t.is(await page.locator('#sessions li').count(), 1);
    await page.reload();
    await page.locator('#account-email:not(:empty)').waitFor();
    t.is(new URL(page.url()).pathname, '/app/account', 'this session goes on');
    t.deepEqual(problems, []);
  });

  test(`${width} px: unlink a provider; it can be connected again`, async (t) => {
    const email = fresh();
    await signUp(email);
    // The account signs in with GitHub once (same verified address): GitHub is linked.
    github.account = { id: String(width), email, email_verified: true };
    const r = await drive(new CookieJar(), `${base}/oauth_login/github?redirect_uri=${encodeURIComponent(`${base}/app`)}`, (u) => u.origin === base && u.pathname === '/app');
    t.truthy(landingParams(r.url)?.get('access_token'));
    const { page, problems } = await pageFor(t, width);
    await signIn(page, email);
    const row = page.locator('#methods li', { hasText: 'GitHub' });
    await row.waitFor();
    await checkScreen(t, page, `app-account-methods-${width}`);
    await row.getByRole('button', { name: 'Disconnect GitHub' }).click();
    t.is(await message(page, 'methods-msg'), 'GitHub unlinked');
    t.is(await page.locator('#methods li', { hasText: 'GitHub' }).count(), 0);
    t.is((await server.call('user', { email }, { protocol: 'rest', headers: { 'x-service-admin-secret': 'test-admin-secret' } })).body?.['signup_methods'], 'basic_auth');
    t.true(await page.locator('#connect .provider', { hasText: 'Connect GitHub' }).isVisible(), 'GitHub can be connected again');
    t.deepEqual(problems, []);
  });

  test(`${width} px: delete the account after the password is proven again; a wrong one deletes nothing`, async (t) => {
    const email = fresh();
    await signUp(email);
    const { page } = await pageFor(t, width);
    await signIn(page, email);
    await page.fill('#delete-password', 'not-my-password');
    await page.check('#delete-confirm');
    await page.click('#delete-submit');
    t.is(await message(page, 'delete-msg'), 'invalid credentials');
    t.is((await server.call('login', { email, password: PASSWORD }, { protocol: 'rest' })).error, undefined, 'not deleted');
    await page.fill('#delete-password', PASSWORD);
    await page.click('#delete-submit');
    await page.waitForURL((url) => url.pathname === '/app');
    const refused = await server.call('login', { email, password: PASSWORD }, { protocol: 'rest' });
    t.is(refused.error?.code, 'unauthenticated', 'the deactivated account signs in no more');
  });

  test(`${width} px: the language menu saves the profile's locale; the page comes back in it, and goes back to the browser's`, async (t) => {
    const email = fresh();
    await signUp(email);
    const { page, problems } = await pageFor(t, width);
    await signIn(page, email);
    t.is(await page.inputValue('#locale'), '', 'nothing saved: the browser decides');
    await page.selectOption('#locale', 'de');
    await page.click('#profile-form button[type=submit]');
    // Exactly "Profil": the English page's "Profile" holds it too, and is still there until the reload lands.
    await page.locator('#profile-title', { hasText: /^Profil$/ }).waitFor();
    await page.locator('#content:not([aria-busy])').waitFor();
    t.is(await page.getAttribute('html', 'lang'), 'de');
    t.is(await page.inputValue('#locale'), 'de', 'the saved language is selected');
    const login = await server.call('login', { email, password: PASSWORD }, { protocol: 'rest' });
    t.is((await server.call('profile', {}, { protocol: 'rest', headers: { authorization: `Bearer ${String(login.body?.['access_token'])}` } })).body?.['locale'], 'de');
    t.deepEqual(await seriousViolations(page), [], 'accessibility with the menu');
    await page.selectOption('#locale', '');
    await page.click('#profile-form button[type=submit]');
    await page.locator('#profile-title', { hasText: /^Profile$/ }).waitFor();
    t.is(await page.getAttribute('html', 'lang'), 'en', "back to the browser's language");
    t.deepEqual(problems, []);
  });
}

test('keyboard only: sign in, end the other sessions and sign out without a pointer', async (t) => {
  const email = fresh();
  await signUp(email);
  const phone = await otherDevice(email);
  const { page, problems } = await pageFor(t, 375);
  await page.goto(`${base}/app`);
  await page.locator('#login:visible').waitFor();
  const focused = (): Promise<string> => page.evaluate<string>("document.activeElement ? document.activeElement.id : ''");
  /** Presses Tab until the element `id` has the focus (at most 80 times). */
  const tabTo = async (id: string): Promise<void> => {
    for (let i = 0; i < 80 && (await focused()) !== id; i++) await page.keyboard.press('Tab');
    t.is(await focused(), id, `${id} is reached by Tab`);
  };
  await tabTo('email');
  await page.keyboard.type(email);
  await page.keyboard.press('Tab');
  t.is(await focused(), 'password');
  await page.keyboard.type(PASSWORD);
  await page.keyboard.press('Enter');
  await page.waitForURL((url) => url.pathname === '/app/account');
  await page.locator('#end-others:visible').waitFor();
  await tabTo('end-others');
  // The focus ring is visible.
  t.not(await page.evaluate<string>('getComputedStyle(document.activeElement).outlineStyle'), 'none');
  await page.keyboard.press('Enter');
  t.is(await message(page, 'sessions-msg'), '1 other session ended.');
  t.false(await stillValid(phone));
  await tabTo('sign-out');
  await page.keyboard.press('Enter');
  await page.waitForURL((url) => url.pathname === '/app');
  await page.goto(`${base}/app/account`);
  await page.waitForURL((url) => url.pathname === '/app', { timeout: WAIT });
  // The account center without a session asks for one: its one 401 is expected.
  t.deepEqual(problems.filter((p) => !/401/.test(p)), []);
});

test('the account center is served under a strict policy and not without --enable-login-page', async (t) => {
  const res = await fetch(`${base}/app/account`);
  t.is(res.status, 200);
  const csp = res.headers.get('content-security-policy') ?? '';
  t.regex(csp, /default-src 'none'/);
  t.regex(csp, /script-src 'sha256-[A-Za-z0-9+/=]+'/);
  t.regex(csp, /require-trusted-types-for 'script'/);
  t.regex(csp, /frame-ancestors 'none'/);
  t.is(res.headers.get('x-frame-options'), 'DENY');
  t.is(res.headers.get('cache-control'), 'no-store');
  t.regex(await res.text(), /Example Corp/);
  const { server: off, base: offBase } = await startOnKnownPort(() => ({ 'enable-login-page': false }));
  t.teardown(() => off.close());
  t.is((await fetch(`${offBase}/app/account`)).status, 404);
});
