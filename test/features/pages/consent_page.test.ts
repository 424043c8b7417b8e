/**
 * The consent page and the account center's connected apps in a real
 * browser (Debian's Chromium through playwright-core) against the real
 * server, at 1280 and 375 pixels wide: /authorize of a client that is not
 * first-party shows the page with the client and its scopes; it passes axe
 * in the light and dark scheme; Allow (pressed from the keyboard) lands on
 * the client's redirect URI with a code; the account center lists the app,
 * and "Remove access" withdraws it, after which the page is shown again.
 * Each decision (granted, revoked, denied) is in the audit log with the
 * client and the scopes. No console error, page error or policy violation.
 */
import anyTest, { type ExecutionContext } from 'ava';
import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { Browser, Page } from 'playwright-core';
import { launchChromium, watchPage } from '../../helpers/loopback.ts';
import { needs } from '../../helpers/needs.ts';
import { TEST_ADMIN_SECRET, type TestServer } from '../../helpers/server.ts';
import { startOnKnownPort } from '../../helpers/social.ts';
import { screenshot } from '../../helpers/screenshots.ts';
import { seriousViolations } from '../../helpers/accessibility.ts';

const test = needs(anyTest.serial, 'chromium');
const PASSWORD = 'Correct-Horse-7-Battery';
let CB = '';
let app: Server;
const WAIT = 30_000;

let browser: Browser | undefined;
let server: TestServer;
let base = '';

test.before(async () => {
  browser = await launchChromium();
  // The client: a native app's loopback redirect URI (any port), answered here.
  app = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/plain' }).end('client');
  });
  await new Promise<void>((resolve) => app.listen(0, '127.0.0.1', resolve));
  CB = `http://127.0.0.1:${(app.address() as { port: number }).port}/cb`;
  ({ server, base } = await startOnKnownPort((url) => ({ url, 'enable-email-verification': false, 'app-cookie-secure': false, 'organization-name': 'Example Corp' })));
  const added = await server.call('add_client', { client_id: 'photo-printer', client_name: 'Photo Printer', application_type: 'native', token_endpoint_auth_method: 'none', redirect_uris: ['http://127.0.0.1/cb'], scopes: ['openid', 'email', 'profile'], require_consent: true }, { protocol: 'rest', headers: { 'x-service-admin-secret': TEST_ADMIN_SECRET } });
  if (added.error !== undefined) throw new Error(JSON.stringify(added.error));
});

test.after.always(async () => {
  await browser?.close();
  await server?.close();
  app?.close();
});

const authorizeUrl = (): string =>
  `${base}/authorize?${new URLSearchParams({ client_id: 'photo-printer', response_type: 'code', redirect_uri: CB, scope: 'openid email profile', state: 'st', code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM', code_challenge_method: 'S256' })}`;

/** A signed-in browser `width` pixels wide (the session of an API sign-up). */
async function signedIn(t: ExecutionContext, width: number): Promise<{ page: Page; problems: string[]; userId: string }> {
  const r = await server.call('signup', { email: `u${randomBytes(6).toString('hex')}@example.com`, password: PASSWORD }, { protocol: 'rest' });
  const cookies = r.setCookies.map((l) => l.split(';')[0]!.trim()).map((pair) => ({ name: pair.slice(0, pair.indexOf('=')), value: pair.slice(pair.indexOf('=') + 1), url: base })).filter((c) => c.value !== '');
  const context = await browser!.newContext({ viewport: { width, height: width > 600 ? 900 : 800 } });
  t.teardown(() => context.close());
  context.setDefaultTimeout(WAIT);
  await context.addCookies(cookies);
  const page = await context.newPage();
  const problems = watchPage(page);
  page.on('console', (m) => {
    if (m.type() === 'error') problems.push(`console error: ${m.text()}`);
  });
  return { page, problems, userId: String((r.body?.['user'] as { id?: string } | undefined)?.id) };
}

/** The audit entries of `action` about `userId`: their actor and metadata. */
async function consentAudit(action: string, userId: string): Promise<Array<{ actor_id: string; metadata: Record<string, unknown> }>> {
  const logs = await server.call('audit_logs', { action }, { protocol: 'rest', headers: { 'x-service-admin-secret': TEST_ADMIN_SECRET } });
  return (logs.body!['audit_logs'] as Array<{ actor_id: string; resource_id: string; metadata: string }>)
    .filter((e) => e.resource_id === userId)
    .map((e) => ({ actor_id: e.actor_id, metadata: JSON.parse(e.metadata) as Record<string, unknown> }));
}

for (const width of [1280, 375] as const) {
  test(`${width} px: consent by keyboard lands on the client with a code; the account center removes the access`, async (t) => {
    const { page, problems, userId } = await signedIn(t, width);
    await page.goto(authorizeUrl());
    await page.waitForURL((u) => u.pathname === '/app/consent');
    t.regex((await page.textContent('h1')) ?? '', /Photo Printer wants to use your account/);
    t.deepEqual(await page.locator('ul.scopes li').allTextContents(), ['Know who you are when you sign in', 'See your email address', 'See your name, nickname and picture']);
    for (const scheme of ['light', 'dark'] as const) {
      await page.emulateMedia({ colorScheme: scheme });
      t.deepEqual(await seriousViolations(page), [], `accessibility (${scheme})`);
    }
    await page.emulateMedia({ colorScheme: 'light' });
    await screenshot(page, `app-consent-${width}`);
    // Keyboard only: Tab reaches Allow first, Enter submits.
    await page.keyboard.press('Tab');
    t.is(await page.evaluate<string | undefined>('document.activeElement?.id'), 'allow');
    await page.keyboard.press('Enter');
    await page.waitForURL((u) => u.href.startsWith(CB));
    const code = new URL(page.url()).searchParams;
    t.truthy(code.get('code'), 'a code for the client');
    t.is(code.get('state'), 'st');

    await page.goto(`${base}/app/account`);
    await page.locator('#content:not([aria-busy])').waitFor();
    await page.locator('#apps-section:visible').waitFor();
    t.regex((await page.textContent('#apps')) ?? '', /Photo Printer/);
    t.regex((await page.textContent('#apps')) ?? '', /Allowed: email, openid, profile/);
    await screenshot(page, `app-account-apps-${width}`);
    await page.click('#apps button');
    await page.locator('#apps-msg', { hasText: 'no longer has access' }).waitFor();
    t.is(await page.locator('#apps li').count(), 0);
    // Asked again.
    await page.goto(authorizeUrl());
    await page.waitForURL((u) => u.pathname === '/app/consent');
    await page.click('#deny');
    await page.waitForURL((u) => u.href.startsWith(CB));
    t.is(new URL(page.url()).searchParams.get('error'), 'access_denied');
    // Each decision in the audit log: who, which client, which scopes.
    const asked = { client_id: 'photo-printer', scopes: ['openid', 'email', 'profile'] };
    for (const action of ['user.consent_granted', 'user.consent_denied']) {
      const entries = await consentAudit(action, userId);
      t.is(entries.length, 1, action);
      t.is(entries[0]?.actor_id, userId, action);
      t.like(entries[0]?.metadata, asked, action);
    }
    const revoked = await consentAudit('user.consent_revoked', userId);
    t.is(revoked.length, 1);
    t.like(revoked[0]?.metadata, { client_id: 'photo-printer' });
    t.deepEqual([...(revoked[0]?.metadata['scopes'] as string[])].sort(), ['email', 'openid', 'profile']);
    t.deepEqual(problems, []);
  });
}
