/**
 * The account center's authenticator app settings in a real browser
 * (Debian's Chromium through playwright-core) against the real server with
 * TOTP second factors, at 1280 and 375 pixels wide: new recovery codes after
 * the password is proven again (a wrong one changes nothing, answered next
 * to the form), shown once and replacing the old ones at once; a reset of
 * the app, after which the old key's codes are refused and the next sign-in
 * enrols a new key. axe-core with no serious or critical violation in the
 * light and dark scheme; no console error, page error or policy violation.
 */
import anyTest, { type ExecutionContext } from 'ava';
import { randomBytes } from 'node:crypto';
import { generate } from 'otplib';
import type { Browser, Page } from 'playwright-core';
import { launchChromium, watchPage } from '../../helpers/loopback.ts';
import { needs } from '../../helpers/needs.ts';
import { type CallResult, type TestServer } from '../../helpers/server.ts';
import { startOnKnownPort } from '../../helpers/social.ts';
import { screenshot } from '../../helpers/screenshots.ts';
import { seriousViolations } from '../../helpers/accessibility.ts';

const test = needs(anyTest.serial, 'chromium');
const PASSWORD = 'Correct-Horse-7-Battery';
const WAIT = 30_000;

let browser: Browser | undefined;
let server: TestServer;
let base = '';

test.before(async () => {
  browser = await launchChromium();
  ({ server, base } = await startOnKnownPort((url) => ({
    url,
    'enable-email-verification': false,
    'app-cookie-secure': false,
    'enable-mfa': true,
    'enforce-mfa': true,
    'enable-totp-login': true,
  })));
});

test.after.always(async () => {
  await browser?.close();
  await server?.close();
});

const cookiePairs = (r: CallResult): { name: string; value: string }[] =>
  r.setCookies.map((line) => line.split(';')[0]!.trim()).map((pair) => ({ name: pair.slice(0, pair.indexOf('=')), value: pair.slice(pair.indexOf('=') + 1) })).filter((c) => c.value !== '');

/** Signs up `email` with TOTP through the API: its key, its recovery codes and the cookies of the session the enrolment opened. */
async function enrolled(email: string): Promise<{ secret: string; codes: string[]; cookies: { name: string; value: string }[] }> {
  const signup = await server.call('signup', { email, password: PASSWORD }, { protocol: 'rest' });
  const secret = String(signup.body?.['authenticator_secret']);
  const mfa = cookiePairs(signup).find((c) => c.name === 'mfa')!.value;
  const ok = await server.call('verify_otp', { email, otp: await generate({ secret }), is_totp: true }, { protocol: 'rest', cookies: { mfa } });
  if (ok.error !== undefined) throw new Error(`enrolment failed: ${JSON.stringify(ok.error)}`);
  return { secret, codes: signup.body?.['authenticator_recovery_codes'] as string[], cookies: cookiePairs(ok).filter((c) => c.name !== 'mfa') };
}

/** The account center of a fresh browser context `width` pixels wide, signed in with `cookies`. */
async function accountPage(t: ExecutionContext, width: number, cookies: { name: string; value: string }[]): Promise<{ page: Page; problems: string[] }> {
  const context = await browser!.newContext({ viewport: { width, height: width > 600 ? 900 : 800 } });
  t.teardown(() => context.close());
  context.setDefaultTimeout(WAIT);
  await context.addCookies(cookies.map((c) => ({ ...c, url: base })));
  const page = await context.newPage();
  const problems = watchPage(page);
  page.on('console', (m) => {
    if (m.type() === 'error') problems.push(`console error: ${m.text()}`);
  });
  await page.goto(`${base}/app/account`);
  await page.locator('#content:not([aria-busy])').waitFor();
  return { page, problems };
}

async function message(page: Page, id: string): Promise<string> {
  await page.locator(`#${id}:not(:empty)`).waitFor();
  return (await page.textContent(`#${id}`)) ?? '';
}

/** Signs in through the API as `email` and proves `otp`: the error of verify_otp, or undefined; the login's answer. */
async function signInWith(email: string, otp: (login: CallResult) => Promise<string> | string): Promise<{ login: CallResult; error: string | undefined }> {
  const login = await server.call('login', { email, password: PASSWORD }, { protocol: 'rest' });
  const mfa = cookiePairs(login).find((c) => c.name === 'mfa')!.value;
  const r = await server.call('verify_otp', { email, otp: await otp(login), is_totp: true }, { protocol: 'rest', cookies: { mfa } });
  return { login, error: r.error?.reason };
}

for (const width of [1280, 375] as const) {
  test(`${width} px: new recovery codes after the password, then a reset of the authenticator app`, async (t) => {
    const email = `u${randomBytes(6).toString('hex')}@example.com`;
    const { secret, codes, cookies } = await enrolled(email);
    const { page, problems } = await accountPage(t, width, cookies);
    await page.locator('#totp-form:visible').waitFor();
    t.true(await page.isHidden('#totp-code-field'), 'an account with a password proves the password');

    // A wrong password changes nothing.
    await page.fill('#totp-password', 'not-my-password');
    await page.click('#new-recovery-codes');
    t.regex(await message(page, 'totp-msg'), /invalid credentials/);
    t.is(await page.getAttribute('#totp-msg', 'class'), 'msg error');
    t.true(await page.isHidden('#recovery-codes'));

    await page.fill('#totp-password', PASSWORD);
    await page.click('#new-recovery-codes');
    t.regex(await message(page, 'totp-msg'), /new recovery codes are below/);
    await page.locator('#recovery-codes:visible').waitFor();
    const shown = await page.locator('#recovery-codes code').allTextContents();
    t.is(shown.length, 10);
    for (const c of shown) t.regex(c, /^[a-z2-9]{5}-[a-z2-9]{5}$/);
    t.is(await page.inputValue('#totp-password'), '', 'the password is not left in the field');
    for (const scheme of ['light', 'dark'] as const) {
      await page.emulateMedia({ colorScheme: scheme });
      t.deepEqual(await seriousViolations(page), [], `accessibility (${scheme})`);
    }
    await page.emulateMedia({ colorScheme: 'light' });
    await screenshot(page, `app-account-recovery-codes-${width}`);
    t.is((await signInWith(email, () => codes[0]!)).error, 'invalid_otp', 'an old recovery code is refused at once');
    t.is((await signInWith(email, () => shown[0]!)).error, undefined, 'a new one signs in');

    await page.fill('#totp-password', PASSWORD);
    await page.click('#reset-totp');
    await page.locator('#totp-msg', { hasText: 'authenticator app was removed' }).waitFor();
    t.true(await page.isHidden('#recovery-codes'), 'the codes shown are gone with the app');
    const next = await signInWith(email, () => generate({ secret, epoch: Math.floor(Date.now() / 1000) + 30 }));
    t.is(next.error, 'invalid_otp', "the old key's codes are refused");
    t.truthy(next.login.body?.['authenticator_secret'], 'the next sign-in enrols a new key');
    // The one refused call (the wrong password) is the browser's only complaint.
    t.deepEqual(problems, ['console error: Failed to load resource: the server responded with a status of 401 (Unauthorized)']);
  });
}
