/**
 * The GraphQL playground in a real browser: GraphiQL loads from the server
 * alone (no other origin, no CSP violation), runs a query against /graphql
 * and shows the answer; the admin header typed into its headers editor
 * reaches the admin operations.
 */
import test from 'ava';
import { seriousViolations } from '../../helpers/accessibility.ts';
import { launchChromium } from '../../helpers/loopback.ts';
import { needs } from '../../helpers/needs.ts';
import { screenshot } from '../../helpers/screenshots.ts';
import { TEST_ADMIN_SECRET, startTestServer } from '../../helpers/server.ts';

const WAIT = 30_000;

needs(test, 'chromium')('GraphiQL at /playground: loads from the server alone, runs queries with the headers editor, and reports no CSP violation', async (t) => {
  const server = await startTestServer();
  t.teardown(() => server.close());
  const browser = await launchChromium();
  t.teardown(() => browser.close());
  const page = await (await browser.newContext()).newPage();
  const problems: string[] = [];
  const foreign: string[] = [];
  page.on('console', (m) => {
    if (m.type() === 'error') problems.push(m.text());
  });
  page.on('pageerror', (e) => problems.push(e.message));
  page.on('request', (r) => {
    if (!r.url().startsWith(server.httpUrl)) foreign.push(r.url());
  });
  const missing: string[] = [];
  page.on('response', (r) => {
    if (r.status() === 404) missing.push(new URL(r.url()).pathname);
  });

  const res = await page.goto(`${server.httpUrl}/playground`, { timeout: WAIT });
  t.regex(res?.headers()['content-security-policy'] ?? '', /script-src 'self'/);
  await page.locator('.graphiql-container').waitFor({ timeout: WAIT });
  await page.locator('.graphiql-execute-button').click();
  await page.locator('.result-window').getByText('"version"').first().waitFor({ timeout: WAIT });
  t.regex(await page.locator('.result-window').innerText(), /"is_sign_up_enabled"/);
  t.deepEqual(await seriousViolations(page), [], 'accessibility of the playground');
  await screenshot(page, 'playground');

  // An admin query: refused without credentials, answered with the admin header from the headers editor.
  const query = page.locator('.graphiql-query-editor .CodeMirror');
  await query.click();
  await page.keyboard.press('Control+A');
  await page.keyboard.insertText('{ _users { pagination { total } } }');
  await page.locator('.graphiql-execute-button').click();
  await page.locator('.result-window').getByText('unauthenticated').first().waitFor({ timeout: WAIT });
  await page.locator('.graphiql-editor-tools button', { hasText: 'Headers' }).click();
  await page.locator('.graphiql-editor-tool .CodeMirror').last().click();
  await page.keyboard.press('Control+A');
  await page.keyboard.insertText(`{"x-service-admin-secret": "${TEST_ADMIN_SECRET}"}`);
  await page.locator('.graphiql-execute-button').click();
  await page.locator('.result-window').getByText('"total"').first().waitFor({ timeout: WAIT });

  t.deepEqual(foreign, [], 'nothing is loaded from another origin');
  // The browser's own favicon request is the one 404 (its console line is Chromium's "Failed to load resource").
  t.deepEqual(missing.filter((p) => p !== '/favicon.ico'), [], 'every file of the page is served');
  t.deepEqual(problems.filter((p) => !/^Failed to load resource/.test(p)), [], 'no script error or CSP violation');
});
