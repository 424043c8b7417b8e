/**
 * The dashboard's OAuth clients section in a real browser (Debian's Chromium
 * through playwright-core) under the page's strict CSP: the registry listed
 * with the --client-id client first, a client registered with its secret
 * shown once, the secret rotated (the new one shown once, and it works at the
 * token endpoint), and the client deleted with a two-step button; no CSP
 * violation or native dialog.
 */
import anyTest from 'ava';
import type { Browser } from 'playwright-core';
import { launchChromium, watchPage } from '../../helpers/loopback.ts';
import { needs } from '../../helpers/needs.ts';
import { TEST_ADMIN_SECRET, TEST_CLIENT_ID, startTestServer } from '../../helpers/server.ts';

const test = needs(anyTest.serial, 'chromium');
const WAIT = 30_000;

let browser: Browser | undefined;
test.before(async () => {
  browser = await launchChromium();
});
test.after.always(async () => {
  await browser?.close();
});

test('the OAuth clients section: list, register (secret shown once), rotate the secret, delete', async (t) => {
  const server = await startTestServer({ 'enable-email-verification': false });
  t.teardown(() => server.close());
  const context = await browser!.newContext();
  t.teardown(() => context.close());
  context.setDefaultTimeout(WAIT);
  const page = await context.newPage();
  const problems = watchPage(page);
  await page.goto(`${server.httpUrl}/dashboard`);
  await page.getByLabel('Admin secret').fill(TEST_ADMIN_SECRET);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.locator('#overview:visible').waitFor();

  await page.click('nav a[data-section="clients"]');
  await page.locator('#clients:visible').waitFor();
  t.true(await page.locator('#overview').isHidden(), 'the other sections are hidden');
  await page.locator(`#client-rows tr[data-client-id="${TEST_CLIENT_ID}"]`).waitFor();
  t.regex(await page.locator(`#client-rows tr[data-client-id="${TEST_CLIENT_ID}"]`).innerText(), /set by flags/);

  // Register: the secret is shown once.
  await page.fill('#client-id', 'dash-web');
  await page.fill('#client-name', 'Dashboard app');
  await page.fill('#client-redirects', 'https://dash.example/cb');
  await page.click('#client-form button[type="submit"]');
  await page.locator('#client-rows tr[data-client-id="dash-web"]').waitFor();
  await page.locator('#client-secret:visible').waitFor();
  t.is(await page.locator('#client-secret-id').innerText(), 'dash-web');
  const first = await page.locator('#client-secret-value').innerText();
  t.regex(first, /^[A-Za-z0-9_-]{43}$/);
  const listed = await server.call('client', { client_id: 'dash-web' }, { protocol: 'rest', headers: { 'x-service-admin-secret': TEST_ADMIN_SECRET } });
  t.is(listed.body?.['client_name'], 'Dashboard app');

  // Rotate: a new secret, shown once; it authenticates the client.
  await page.locator('#client-rows tr[data-client-id="dash-web"]').getByRole('button', { name: 'Rotate the secret of dash-web' }).click();
  await page.locator('#clients-status', { hasText: 'rotated' }).waitFor();
  const second = await page.locator('#client-secret-value').innerText();
  t.regex(second, /^[A-Za-z0-9_-]{43}$/);
  t.not(second, first);
  const intro = await fetch(`${server.httpUrl}/oauth/introspect`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: `Basic ${Buffer.from(`dash-web:${second}`).toString('base64')}` },
    body: 'token=x',
  });
  t.is(intro.status, 200, 'the rotated secret authenticates the client');

  // Delete: asked in the page's own dialog (no native one); the row and the client are gone.
  await page.locator('#client-rows tr[data-client-id="dash-web"]').getByRole('button', { name: 'Delete the client dash-web' }).click();
  await page.getByRole('dialog').getByRole('button', { name: 'Delete' }).click();
  await page.locator('#clients-status', { hasText: 'deleted' }).waitFor();
  t.is(await page.locator('#client-rows tr[data-client-id="dash-web"]').count(), 0);
  t.true(await page.locator('#client-secret').isHidden(), 'no secret stays on screen');
  const gone = await server.call('client', { client_id: 'dash-web' }, { protocol: 'rest', headers: { 'x-service-admin-secret': TEST_ADMIN_SECRET } });
  t.is(gone.error?.code, 'not_found');

  // Back to another section: this one hides.
  await page.click('nav a[data-section="overview"]');
  await page.locator('#overview:visible').waitFor();
  t.true(await page.locator('#clients').isHidden());
  t.deepEqual(problems, [], 'no CSP violation or dialog');
});
