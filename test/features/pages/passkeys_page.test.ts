/**
 * Passkeys on the login page in Chromium, with Chrome's virtual
 * authenticator (DevTools protocol `WebAuthn.addVirtualAuthenticator`: CTAP2,
 * internal transport, resident keys, user verification): a sign-up with a
 * passkey and no password, a sign-out, a usernameless sign-in from the
 * passkey button, a sign-in from the email field's autofill (conditional
 * mediation), a password user adding a passkey after signing in, and a
 * passkey as the second factor of a password login; the dashboard listing a
 * user's passkeys and revoking one; the account center adding and renaming a
 * passkey, and deleting the account after a passkey step-up. Each sign-in flow ends signed in
 * with a session the server validates. The page is served at
 * `http://localhost:<port>` (`--url`), whose host is the relying party ID (a
 * WebAuthn RP ID is a domain, never an IP address). No CSP or Trusted Types
 * violation, page error or dialog along the way, and no serious accessibility
 * violation on the screens shown (`LATCHKEY_UI_SCREENSHOTS=docs/ui` refreshes
 * their pictures in docs/passkeys.md).
 */
import anyTest, { type ExecutionContext } from 'ava';
import { randomBytes } from 'node:crypto';
import type { Browser, BrowserContext, CDPSession, Page } from 'playwright-core';
import { launchChromium, watchPage } from '../../helpers/loopback.ts';
import { needs } from '../../helpers/needs.ts';
import { startTestServerOnPort, type TestServer } from '../../helpers/server.ts';
import { screenshot } from '../../helpers/screenshots.ts';
import { seriousViolations } from '../../helpers/accessibility.ts';
import { LOGIN_MESSAGES } from '../../../transports/web/login_messages.ts';

const test = needs(anyTest.serial, 'chromium');
const PASSWORD = 'Correct-Horse-7-Battery';
const WAIT = 30_000;

let browser: Browser | undefined;

test.before(async () => {
  browser = await launchChromium();
});

test.after.always(async () => {
  await browser?.close();
});

/** A server at http://localhost:<port> with passkeys on (RP ID localhost, origin the server's own). */
async function start(t: ExecutionContext, extra: Record<string, string | number | boolean> = {}): Promise<TestServer> {
  const server = await startTestServerOnPort((port) => ({ 'enable-email-verification': false, 'app-cookie-secure': false, 'enable-passkeys': true, url: `http://localhost:${port}`, ...extra }));
  t.teardown(() => server.close());
  return server;
}

interface Browsing {
  context: BrowserContext;
  page: Page;
  problems: string[];
  cdp: CDPSession;
  authenticatorId: string;
  base: string;
}

/** A fresh browser context whose page has a virtual platform authenticator (a phone's or laptop's passkeys). */
async function browse(t: ExecutionContext, server: TestServer): Promise<Browsing> {
  const context = await browser!.newContext();
  t.teardown(() => context.close());
  context.setDefaultTimeout(WAIT);
  const page = await context.newPage();
  const problems = watchPage(page);
  const cdp = await context.newCDPSession(page);
  await cdp.send('WebAuthn.enable', { enableUI: false });
  const { authenticatorId } = await cdp.send('WebAuthn.addVirtualAuthenticator', {
    options: { protocol: 'ctap2', transport: 'internal', hasResidentKey: true, hasUserVerification: true, isUserVerified: true, automaticPresenceSimulation: true },
  });
  const base = `http://localhost:${new URL(server.httpUrl).port}`;
  return { context, page, problems, cdp, authenticatorId, base };
}

/** A screen the test has reached: its picture for docs/passkeys.md (when asked for) and no serious or critical accessibility violation. */
async function screen(t: ExecutionContext, page: Page, name: string): Promise<void> {
  await screenshot(page, name);
  t.deepEqual(await seriousViolations(page), [], `accessibility of ${name}`);
}

const fresh = (): string => `p${randomBytes(6).toString('hex')}@example.com`;

/** Waits for `#<id>` to show, failing at once with the page's error when that shows instead. */
async function shown(page: Page, id: string): Promise<string> {
  await page.locator(`#${id}:visible, #error:visible`).first().waitFor();
  const error = (await page.isVisible('#error')) ? await page.textContent('#error') : null;
  if (error !== null && id !== 'error') throw new Error(`the page shows the error: ${error}`);
  return (await page.textContent(`#${id}`)) ?? '';
}

/**
 * The sign-in landed: on the account center when /app has nothing to offer first (`account`), or still on /app,
 * saying "Signed in", offering to add a passkey with a link on to the account center (`offer`: an account without
 * a passkey); either way its session cookie is one the server validates.
 */
async function signedIn(t: ExecutionContext, server: TestServer, b: Browsing, label: string, where: 'account' | 'offer' = 'account'): Promise<void> {
  if (where === 'account') {
    await b.page.waitForURL((url) => url.pathname === '/app/account');
    await b.page.locator('#account-email:not(:empty)').waitFor();
  } else {
    t.is(await shown(b.page, 'signed-in'), 'Signed in', label);
    await b.page.locator('#add-passkey').waitFor({ state: 'visible' });
    t.is(await b.page.getAttribute('#to-account', 'href'), '/app/account', `${label}: the way on to the account center`);
  }
  // The page's last answer may still be arriving (a second sign-in, from the autofill request, replaces the first
  // session with its own): the cookie is read once the page has nothing in flight.
  await b.page.waitForLoadState('networkidle');
  const cookie = (await b.context.cookies()).find((c) => c.name === 'cookie_session');
  t.truthy(cookie, `${label}: a session cookie`);
  const check = await server.call('validate_session', { cookie: cookie!.value }, { protocol: 'rest' });
  t.true(check.body?.['is_valid'] as boolean, `${label}: the server validates the session`);
}

/**
 * Ends the session (its cookie) and clears the cookies. The logout is sent from `/healthz`, a page of the site that
 * runs no script: the account center goes back to the sign-in page when one of its requests finds the session over,
 * and that navigation would interrupt the test's next one.
 */
async function signOut(b: Browsing): Promise<void> {
  await b.page.goto(`${b.base}/healthz`);
  const status = await b.page.evaluate(async () => {
    const res = await fetch('/v1/logout', { method: 'POST', credentials: 'same-origin', headers: { 'content-type': 'application/json' }, body: '{}' });
    return res.status;
  });
  if (status !== 200) throw new Error(`logout answered ${status}`);
  await b.context.clearCookies();
}

test('a passkey sign-up without a password, a sign-out, then a usernameless sign-in from the passkey button', async (t) => {
  const server = await start(t);
  const b = await browse(t, server);
  const email = fresh();
  await b.page.goto(`${b.base}/app`);
  await b.page.locator('#passkey-login').waitFor({ state: 'visible' });
  t.is(await b.page.getAttribute('#email', 'autocomplete'), 'username webauthn', 'the email field offers passkeys from autofill');
  await screen(t, b.page, 'app-passkeys-sign-in');
  await b.page.click('#to-signup');
  await b.page.fill('#su-id', email);
  await b.page.locator('#passkey-signup').waitFor({ state: 'visible' });
  await screen(t, b.page, 'app-passkeys-sign-up');
  await b.page.click('#passkey-signup');
  await signedIn(t, server, b, 'after the passkey sign-up');
  const user = (await server.call('users', { pagination: { page: 1, limit: 10 } }, { protocol: 'rest', headers: { 'x-service-admin-secret': 'test-admin-secret' } })).body!['users'] as Array<{ email: string; signup_methods: string }>;
  t.is(user.find((u) => u.email === email)?.signup_methods, 'passkey', 'the account has no password');

  await signOut(b);
  const { credentials } = await b.cdp.send('WebAuthn.getCredentials', { authenticatorId: b.authenticatorId });
  t.is(credentials.length, 1, 'the sign-up made one passkey, discoverable');
  t.true(credentials[0]!.isResidentCredential);
  // The virtual authenticator answers the email field's autofill request (conditional mediation) at any moment once
  // it holds a passkey of the site, and that sign-in would race the button's. This page is told the browser has no
  // passkey autofill, so it makes no such request (the next test signs in through it); only the button asks.
  await b.page.addInitScript("Object.defineProperty(PublicKeyCredential, 'isConditionalMediationAvailable', { value: async () => false });");
  await b.page.goto(`${b.base}/app?fresh=1`);
  await b.page.locator('#passkey-login').waitFor({ state: 'visible' });
  t.true(await b.page.isVisible('#login'), 'nothing signed in before the button');
  t.is(await b.page.inputValue('#email'), '', 'no identifier typed: a usernameless sign-in');
  await b.page.click('#passkey-login');
  await signedIn(t, server, b, 'after the usernameless sign-in');
  t.deepEqual(b.problems, []);
});

test('conditional mediation: the email field\'s autofill signs in with the passkey, no button pressed', async (t) => {
  const server = await start(t);
  const b = await browse(t, server);
  await b.page.goto(`${b.base}/app`);
  await b.page.click('#to-signup');
  await b.page.fill('#su-id', fresh());
  await b.page.click('#passkey-signup');
  await signedIn(t, server, b, 'after the passkey sign-up');
  await signOut(b);
  // The page asks for a passkey with mediation "conditional" as it loads; the virtual authenticator answers it.
  await b.page.goto(`${b.base}/app?again=1`);
  await signedIn(t, server, b, 'after the autofill sign-in');
  t.deepEqual(b.problems, []);
});

test('a password user signs in, adds a passkey, then signs in with it; with MFA on, the passkey is the second factor', async (t) => {
  const server = await start(t, { 'enable-mfa': true, 'enable-totp-login': true });
  const email = fresh();
  t.is((await server.call('signup', { email, password: PASSWORD }, { protocol: 'rest' })).error, undefined);
  const b = await browse(t, server);
  await b.page.goto(`${b.base}/app`);
  await b.page.locator('#passkey-login').waitFor({ state: 'visible' });
  await b.page.fill('#email', email);
  await b.page.fill('#password', PASSWORD);
  await b.page.click('#submit');
  await signedIn(t, server, b, 'after the password sign-in', 'offer');
  await screen(t, b.page, 'app-passkeys-add');
  await b.page.click('#add-passkey');
  await b.page.locator('#notice', { hasText: 'Passkey added' }).waitFor();
  t.true(await b.page.isHidden('#add-passkey'), 'offered once');
  await b.page.click('#to-account');
  await b.page.waitForURL((url) => url.pathname === '/app/account');
  const { credentials } = await b.cdp.send('WebAuthn.getCredentials', { authenticatorId: b.authenticatorId });
  t.is(credentials.length, 1, 'the authenticator holds the new passkey');

  // The account turns MFA on; the password sign-in then asks for the passkey, which the page gets from the authenticator.
  const turnedOn = await b.page.evaluate(async () => {
    const res = await fetch('/v1/update_profile', { method: 'POST', credentials: 'same-origin', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ is_multi_factor_auth_enabled: true }) });
    return res.status;
  });
  t.is(turnedOn, 200);
  await signOut(b);
  // Put back as a non-discoverable credential: the second-factor request names it, while the email field's autofill
  // request (which may be answered at any moment while the form is filled, see the first test) cannot use it.
  const { userHandle: _discoverable, ...passkey } = credentials[0]!;
  await b.cdp.send('WebAuthn.clearCredentials', { authenticatorId: b.authenticatorId });
  await b.cdp.send('WebAuthn.addCredential', { authenticatorId: b.authenticatorId, credential: { ...passkey, isResidentCredential: false } });
  await b.page.goto(`${b.base}/app?mfa=1`);
  await b.page.locator('#passkey-login').waitFor({ state: 'visible' });
  await b.page.fill('#email', email);
  await b.page.fill('#password', PASSWORD);
  await b.page.click('#submit');
  await signedIn(t, server, b, 'after the password and the passkey');
  const logs = await server.call('audit_logs', { action: 'user.login_success' }, { protocol: 'rest', headers: { 'x-service-admin-secret': 'test-admin-secret' } });
  const entries = (logs.body!['audit_logs'] as Array<{ metadata: string }>).map((e) => JSON.parse(e.metadata) as Record<string, unknown>);
  t.true(entries.some((m) => m['mfa_method'] === 'passkey'), 'the second factor was the passkey');

  // Discoverable again (with the signature counter the authenticator has reached), for the autofill sign-in.
  const { credentials: [used] } = await b.cdp.send('WebAuthn.getCredentials', { authenticatorId: b.authenticatorId });
  t.false(used!.isResidentCredential);
  await signOut(b);
  await b.cdp.send('WebAuthn.clearCredentials', { authenticatorId: b.authenticatorId });
  await b.cdp.send('WebAuthn.addCredential', { authenticatorId: b.authenticatorId, credential: { ...credentials[0]!, signCount: used!.signCount } });
  await b.page.goto(`${b.base}/app?again=1`);
  await signedIn(t, server, b, 'after a passkey sign-in (user verified: MFA satisfied)');
  t.deepEqual(b.problems, []);
});

test('the dashboard lists a user\'s passkeys and revokes one; the revoked passkey no longer signs in', async (t) => {
  const server = await start(t);
  const b = await browse(t, server);
  const email = fresh();
  await b.page.goto(`${b.base}/app`);
  await b.page.click('#to-signup');
  await b.page.fill('#su-id', email);
  await b.page.click('#passkey-signup');
  await signedIn(t, server, b, 'after the passkey sign-up');
  const { credentials } = await b.cdp.send('WebAuthn.getCredentials', { authenticatorId: b.authenticatorId });

  const admin = await browser!.newContext();
  t.teardown(() => admin.close());
  admin.setDefaultTimeout(WAIT);
  const page = await admin.newPage();
  const problems = watchPage(page);
  await page.goto(`${b.base}/dashboard#users`);
  await page.getByLabel('Admin secret').fill('test-admin-secret');
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('button', { name: `Open ${email}` }).click();
  const row = page.locator('#edit-passkeys li.passkey-row');
  await row.first().waitFor();
  t.is(await row.count(), 1);
  t.regex((await row.first().textContent()) ?? '', /Passkey · added/);
  await screen(t, page, 'dashboard-user-passkeys');
  await page.getByRole('button', { name: 'Revoke passkey Passkey' }).click();
  await page.locator('#confirm-ok').click();
  await page.locator('#edit-passkeys li', { hasText: 'No passkeys.' }).waitFor();
  const logs = await server.call('audit_logs', { action: 'passkey.revoked' }, { protocol: 'rest', headers: { 'x-service-admin-secret': 'test-admin-secret' } });
  t.is((logs.body!['pagination'] as { total: number }).total, 1);
  t.deepEqual(problems, []);

  // The user's browser still holds the passkey; the server refuses it now.
  await signOut(b);
  await b.cdp.send('WebAuthn.clearCredentials', { authenticatorId: b.authenticatorId });
  await b.page.goto(`${b.base}/app?revoked=1`);
  await b.page.locator('#passkey-login').waitFor({ state: 'visible' });
  await b.cdp.send('WebAuthn.addCredential', { authenticatorId: b.authenticatorId, credential: credentials[0]! });
  await b.page.click('#passkey-login');
  t.regex(await shown(b.page, 'error'), /not registered/);
});

test('the account center: a password user goes on from the offer, adds and renames a passkey there, and deletes the account after the passkey step-up', async (t) => {
  const server = await start(t);
  const email = fresh();
  t.is((await server.call('signup', { email, password: PASSWORD }, { protocol: 'rest' })).error, undefined);
  const b = await browse(t, server);
  await b.page.goto(`${b.base}/app`);
  await b.page.locator('#passkey-login').waitFor({ state: 'visible' });
  await b.page.fill('#email', email);
  await b.page.fill('#password', PASSWORD);
  await b.page.click('#submit');
  await signedIn(t, server, b, 'after the password sign-in', 'offer');
  await b.page.click('#to-account');
  await b.page.waitForURL((url) => url.pathname === '/app/account');
  await b.page.locator('#passkeys li', { hasText: 'No passkey yet.' }).waitFor();

  await b.page.click('#passkeys-box #add-passkey');
  await b.page.locator('#passkeys-msg', { hasText: 'Passkey added.' }).waitFor();
  const name = b.page.locator('#passkeys input');
  t.is(await name.count(), 1, 'the new passkey is listed');
  await name.fill('Laptop');
  await b.page.getByRole('button', { name: 'Rename' }).click();
  await b.page.locator('#passkeys-msg', { hasText: 'Passkey renamed.' }).waitFor();
  t.is(await b.page.inputValue('#passkeys input'), 'Laptop');
  const users = (await server.call('users', { pagination: { page: 1, limit: 10 } }, { protocol: 'rest', headers: { 'x-service-admin-secret': 'test-admin-secret' } })).body!['users'] as Array<{ id: string; email: string }>;
  const listed = await server.call('user_passkeys', { user_id: users.find((u) => u.email === email)!.id }, { protocol: 'rest', headers: { 'x-service-admin-secret': 'test-admin-secret' } });
  t.deepEqual((listed.body!['passkeys'] as Array<{ name: string }>).map((p) => p.name), ['Laptop']);
  await screen(t, b.page, 'app-account-passkeys');

  // A passkey holder's deletion needs the password and a passkey step-up, which the page asks the authenticator for.
  await b.page.fill('#delete-password', PASSWORD);
  await b.page.check('#delete-confirm');
  await b.page.click('#delete-submit');
  await b.page.waitForURL((url) => url.pathname === '/app');
  const login = await server.call('login', { email, password: PASSWORD }, { protocol: 'rest' });
  t.truthy(login.error, 'the deleted account no longer signs in');
  t.deepEqual(b.problems, []);
});

test('in German, the passkey buttons and the offer after sign-in come from the catalogue: no English left on screen', async (t) => {
  const server = await start(t);
  const email = fresh();
  t.is((await server.call('signup', { email, password: PASSWORD }, { protocol: 'rest' })).error, undefined);
  const b = await browse(t, server);
  const de = LOGIN_MESSAGES['de']!;
  const english = new Set(Object.values(LOGIN_MESSAGES['en']!));
  const englishShown = () => b.page.evaluate<string[]>("Array.from(document.querySelectorAll('h1,label,button,a,p,option')).filter((e) => e.offsetParent !== null).map((e) => e.textContent.trim()).filter(Boolean)")
    // The words German shares with English (as the language test allows them): "Code", "Name (optional)".
    .then((shown) => shown.filter((text) => english.has(text) && text !== de.code && text !== de.nameOptional));
  await b.page.goto(`${b.base}/app?ui_locales=de`);
  await b.page.locator('#passkey-login').waitFor({ state: 'visible' });
  t.is((await b.page.textContent('#passkey-login'))?.trim(), de.passkeyLogin);
  t.deepEqual(await englishShown(), [], 'the sign-in form');
  await b.page.click('#to-signup');
  await b.page.locator('#passkey-signup').waitFor({ state: 'visible' });
  t.is((await b.page.textContent('#passkey-signup'))?.trim(), de.passkeySignup);
  t.deepEqual(await englishShown(), [], 'the sign-up form');
  await b.page.click('#to-login');
  await b.page.fill('#email', email);
  await b.page.fill('#password', PASSWORD);
  await b.page.click('#submit');
  await b.page.locator('#add-passkey').waitFor({ state: 'visible' });
  t.is((await b.page.textContent('#add-passkey'))?.trim(), de.addPasskey);
  t.is((await b.page.textContent('#to-account'))?.trim(), de.continueToAccount);
  t.deepEqual(await englishShown(), [], 'the offer after sign-in');
  t.deepEqual(b.problems, []);
});
