/**
 * Connecting and disconnecting a provider from the account center in a real
 * browser (Debian's Chromium through playwright-core) at 1280 and 375 pixels
 * wide, GitHub a fake on loopback: "Connect GitHub" goes through GitHub and
 * back to /app/account with the provider account (whose address differs
 * from the account's) listed and a message saying so; "Disconnect GitHub"
 * removes it and offers "Connect GitHub" again. A GitHub account another
 * user holds is refused with the page's own message and nothing is listed.
 * No console error, page error or Content-Security-Policy violation; axe in
 * the light scheme with the provider listed.
 */
import anyTest, { type ExecutionContext } from 'ava';
import { randomBytes } from 'node:crypto';
import type { Browser, Page } from 'playwright-core';
import { socialLoginOf } from '../../../cmd/index.ts';
import { launchChromium, watchPage } from '../../helpers/loopback.ts';
import { needs } from '../../helpers/needs.ts';
import { type TestServer } from '../../helpers/server.ts';
import { CookieJar, drive, type FakeProvider, githubEndpoints, landingParams, startFakeProvider, startOnKnownPort } from '../../helpers/social.ts';
import { seriousViolations } from '../../helpers/accessibility.ts';
import { screenshot } from '../../helpers/screenshots.ts';

const test = needs(anyTest.serial, 'chromium');
const PASSWORD = 'Correct-Horse-7-Battery';
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
  })));
  socialLoginOf(server.server.services)?.useEndpointsForTests('github', githubEndpoints(github));
});

test.after.always(async () => {
  await browser?.close();
  await server?.close();
  await github?.close();
});

const fresh = (): string => `u${randomBytes(6).toString('hex')}@example.com`;
let githubIds = 7000;

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

/** A password account, signed in on /app in the page's browser; lands on the account center. */
async function signedIn(page: Page): Promise<string> {
  const email = fresh();
  const r = await server.call('signup', { email, password: PASSWORD }, { protocol: 'rest' });
  if (r.body === undefined) throw new Error(`signup failed: ${JSON.stringify(r.error)}`);
  await server.call('logout', {}, { protocol: 'rest', headers: { authorization: `Bearer ${String(r.body['access_token'])}` } });
  await page.goto(`${base}/app`);
  await page.fill('#email', email);
  await page.fill('#password', PASSWORD);
  await page.click('#submit');
  await page.waitForURL((url) => url.pathname === '/app/account');
  await page.locator('#content:not([aria-busy])').waitFor();
  return email;
}

async function message(page: Page, id: string): Promise<string> {
  await page.locator(`#${id}:not(:empty)`).waitFor();
  return (await page.textContent(`#${id}`)) ?? '';
}

const adminUser = async (email: string) =>
  (await server.call('user', { email }, { protocol: 'rest', headers: { 'x-service-admin-secret': 'test-admin-secret' } })).body as { signup_methods: string } | undefined;

for (const width of WIDTHS) {
  test(`${width} px: connect GitHub from /app/account, then disconnect it`, async (t) => {
    const { page, problems } = await pageFor(t, width);
    const email = await signedIn(page);
    github.account = { id: String(++githubIds), email: `octo-${width}@elsewhere.example`, email_verified: true };
    const connect = page.locator('#connect .provider', { hasText: 'Connect GitHub' });
    await connect.click();
    // Through GitHub and back, the outcome shown once and taken out of the address.
    await page.waitForURL((url) => url.pathname === '/app/account' && url.search === '');
    t.is(await message(page, 'methods-msg'), 'GitHub connected.');
    const row = page.locator('#methods li', { hasText: 'GitHub' });
    await row.waitFor();
    t.regex((await row.textContent()) ?? '', new RegExp(`octo-${width}@elsewhere\\.example`));
    t.is(await page.locator('#connect .provider', { hasText: 'Connect GitHub' }).count(), 0);
    t.is((await adminUser(email))?.signup_methods, 'basic_auth,github');
    t.deepEqual(await seriousViolations(page), [], 'accessibility with the provider listed');
    await screenshot(page, `app-account-connected-${width}`);
    // No horizontal scrolling at this width.
    t.true(await page.evaluate<boolean>('document.documentElement.scrollWidth <= document.documentElement.clientWidth'));

    await row.getByRole('button', { name: 'Disconnect GitHub' }).click();
    t.is(await message(page, 'methods-msg'), 'GitHub unlinked');
    t.is(await page.locator('#methods li', { hasText: 'GitHub' }).count(), 0);
    t.true(await page.locator('#connect .provider', { hasText: 'Connect GitHub' }).isVisible());
    t.is((await adminUser(email))?.signup_methods, 'basic_auth');
    t.deepEqual(problems, []);
  });

  test(`${width} px: a GitHub account another user holds is refused with the page's message and nothing is listed`, async (t) => {
    const other = String(++githubIds);
    github.account = { id: other, email: `owner-${width}-${other}@example.com`, email_verified: true };
    const owner = await drive(new CookieJar(), `${base}/oauth_login/github?redirect_uri=${encodeURIComponent(`${base}/app`)}`, (u) => u.origin === base && u.pathname === '/app');
    t.truthy(landingParams(owner.url)?.get('access_token'));
    const { page, problems } = await pageFor(t, width);
    const email = await signedIn(page);
    await page.locator('#connect .provider', { hasText: 'Connect GitHub' }).click();
    await page.waitForURL((url) => url.pathname === '/app/account' && url.search === '');
    t.is(await message(page, 'methods-msg'), 'That provider account is already connected to another account. Nothing was changed.');
    t.is(await page.getAttribute('#methods-msg', 'class'), 'msg error');
    t.is(await page.locator('#methods li', { hasText: 'GitHub' }).count(), 0);
    t.is((await adminUser(email))?.signup_methods, 'basic_auth');
    t.deepEqual(problems, []);
  });
}
