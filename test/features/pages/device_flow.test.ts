/**
 * The device authorization grant (RFC 8628) end to end in a real browser
 * (Debian's Chromium through playwright-core): a device starts the flow with
 * `openid-client`; in the browser the user signs in at `/app`, opens the
 * verification URI (`/app/device`), enters the user code shown on the device
 * and approves; the device's polling then gets tokens for that user. A
 * denial in the browser makes the device's polling fail with access_denied.
 */
import anyTest, { type ExecutionContext } from 'ava';
import * as client from 'openid-client';
import type { Browser, Page } from 'playwright-core';
import { launchChromium, watchPage } from '../../helpers/loopback.ts';
import { needs } from '../../helpers/needs.ts';
import { TEST_ADMIN_SECRET, startTestServerOnPort, type TestServer } from '../../helpers/server.ts';

const test = needs(anyTest.serial, 'chromium');
const PASSWORD = 'Correct-Horse-7-Battery';
const WAIT = 30_000;
const DEVICE_GRANT = 'urn:ietf:params:oauth:grant-type:device_code';

let browser: Browser | undefined;
test.before(async () => {
  browser = await launchChromium();
});
test.after.always(async () => {
  await browser?.close();
});

async function start(t: ExecutionContext): Promise<{ server: TestServer; issuer: string }> {
  const server = await startTestServerOnPort((port) => ({ url: `http://127.0.0.1:${port}`, 'enable-email-verification': false, 'app-cookie-secure': false }));
  t.teardown(() => server.close());
  return { server, issuer: server.httpUrl };
}

/** A fresh browser context signed in at /app as `email`. */
async function signedIn(t: ExecutionContext, issuer: string, email: string): Promise<{ page: Page; problems: string[] }> {
  const context = await browser!.newContext();
  t.teardown(() => context.close());
  context.setDefaultTimeout(WAIT);
  const page = await context.newPage();
  const problems = watchPage(page);
  await page.goto(`${issuer}/app`);
  await page.fill('#email', email);
  await page.fill('#password', PASSWORD);
  await page.click('#submit');
  await page.waitForURL((url) => url.pathname === '/app/account');
  return { page, problems };
}

test('a device gets tokens once the user signs in at /app, enters the user code at /app/device and approves; a denial is access_denied', async (t) => {
  const { server, issuer } = await start(t);
  const added = await server.call('add_client', { client_id: 'tv-app', application_type: 'native', grant_types: [DEVICE_GRANT, 'refresh_token'], scopes: ['openid', 'offline_access'] }, { protocol: 'rest', headers: { 'x-service-admin-secret': TEST_ADMIN_SECRET } });
  t.is(added.error, undefined);
  const signup = await server.call('signup', { email: 'tv-viewer@example.com', password: PASSWORD }, { protocol: 'rest' });
  const userId = (signup.body?.['user'] as { id: string }).id;
  const config = await client.discovery(new URL(issuer), 'tv-app', {}, client.None(), { execute: [client.allowInsecureRequests] });

  // The device starts the flow and shows the user code and where to enter it.
  const started = await client.initiateDeviceAuthorization(config, { scope: 'openid offline_access' });
  t.is(started.verification_uri, `${issuer}/app/device`);
  const polling = client.pollDeviceAuthorizationGrant(config, started);

  // In the browser: sign in, open the verification URI, type the code, approve.
  const { page, problems } = await signedIn(t, issuer, 'tv-viewer@example.com');
  await page.goto(started.verification_uri);
  await page.fill('input[name="user_code"]', started.user_code);
  await page.click('button[value="approve"]');
  await page.locator('h1', { hasText: 'Device connected' }).waitFor();

  const tokens = await polling;
  t.is(tokens.claims()?.sub, userId);
  t.is(tokens.claims()?.azp, 'tv-app');
  t.truthy(tokens.refresh_token, 'offline_access brings a refresh token');
  const me = await server.call('profile', {}, { protocol: 'rest', headers: { authorization: `Bearer ${tokens.access_token}` } });
  t.is(me.body?.['email'], 'tv-viewer@example.com');

  // A second device: the user denies it in the browser, and the device's polling ends with access_denied.
  const second = await client.initiateDeviceAuthorization(config, { scope: 'openid' });
  const denied = client.pollDeviceAuthorizationGrant(config, second).catch((e: unknown) => e);
  await page.goto(second.verification_uri_complete ?? second.verification_uri);
  t.is(await page.inputValue('input[name="user_code"]'), second.user_code, 'verification_uri_complete fills the code in');
  await page.click('button[value="deny"]');
  await page.locator('h1', { hasText: 'Device refused' }).waitFor();
  t.is(((await denied) as { error?: string }).error, 'access_denied');
  t.deepEqual(problems, [], 'no CSP violation or dialog on the pages');
});
