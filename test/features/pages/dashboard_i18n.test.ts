/**
 * The admin dashboard's languages and design, in a real browser (Debian's
 * Chromium through playwright-core) against the real server on loopback:
 * the catalogues (every language has exactly the English keys and the same
 * `{slots}`; every key page.html and the scripts name exists; page.html has
 * no words of its own), the language chosen from Accept-Language or the
 * saved `latchkey_lang` cookie, Arabic laid out right to left, and for each
 * language every section rendered with data in it and searched for English
 * left over (a text or label that is an English message where the language
 * has its own). Then every section at 1280 and 375 pixels wide in the light
 * and the dark scheme: axe-core finds no violation of any impact, nothing
 * scrolls sideways, and no console error or CSP violation happens; the
 * overview loads without layout shift; and the main flows by keyboard alone
 * (sign in, open a user, end their session, cancel and confirm the dialog);
 * and an email template saved for one language from the Email templates
 * section.
 */
import anyTest, { type ExecutionContext } from 'ava';
import { readFileSync, readdirSync } from 'node:fs';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { TEST_ADMIN_SECRET, startTestServer, type TestServer } from '../../helpers/server.ts';
import { launchChromium, watchPage } from '../../helpers/loopback.ts';
import { allViolations } from '../../helpers/accessibility.ts';
import { needs } from '../../helpers/needs.ts';
import { DASHBOARD_MESSAGES, DASHBOARD_MESSAGE_KEYS } from '../../../transports/web/dashboard/messages/index.ts';

const test = needs(anyTest.serial, 'chromium');
const WAIT = 30_000;
const PASSWORD = 'Correct-Horse-7-Battery';
const ADMIN = { 'x-service-admin-secret': TEST_ADMIN_SECRET };
const DIR = new URL('../../../transports/web/dashboard/', import.meta.url);
const SECTIONS = ['overview', 'users', 'webhooks', 'templates', 'orgs', 'sso', 'audit', 'authz', 'clients'] as const;
const en = DASHBOARD_MESSAGES['en']!;
const slots = (text: string): string[] => [...text.matchAll(/\{(\w+)\}/g)].map((m) => m[1]!).sort();

let browser: Browser | undefined;
test.before(async () => {
  browser = await launchChromium();
});
test.after.always(async () => {
  await browser?.close();
});

test('the catalogues: every language has exactly the English keys and slots; every key the page names exists; page.html has no words of its own', (t) => {
  t.deepEqual(Object.keys(DASHBOARD_MESSAGES), ['en', 'de', 'fr', 'es', 'ja', 'ar']);
  for (const [lang, messages] of Object.entries(DASHBOARD_MESSAGES)) {
    t.deepEqual(Object.keys(messages).sort(), [...DASHBOARD_MESSAGE_KEYS].sort(), `${lang} has the English keys`);
    for (const key of DASHBOARD_MESSAGE_KEYS) {
      t.true(messages[key].trim().length > 0, `${lang}.${key} is not empty`);
      t.deepEqual(slots(messages[key]), slots(en[key]), `${lang}.${key} has the slots of English`);
    }
  }
  const html = readFileSync(new URL('page.html', DIR), 'utf8');
  const used = new Set<string>();
  for (const m of html.matchAll(/\{\{([A-Za-z]+)\}\}/g)) used.add(m[1]!);
  for (const file of readdirSync(DIR).filter((f) => f.endsWith('.js'))) {
    const text = readFileSync(new URL(file, DIR), 'utf8');
    for (const m of text.matchAll(/\bt\('([A-Za-z]+)'/g)) used.add(m[1]!);
    for (const m of text.matchAll(/emptyRow\(\d+, '([A-Za-z]+)'\)/g)) used.add(m[1]!);
  }
  for (const key of ['lang', 'dir', 'logo']) used.delete(key);
  t.deepEqual([...used].filter((k) => !Object.hasOwn(en, k)), [], 'every key named exists');
  // Text between tags, once the slots, scripts and style are taken out, is only punctuation or code examples.
  const words = html
    .replace(/<(script|style)[^>]*>[\s\S]*?<\/\1>/g, '')
    .replace(/<option value="(web|native|spa|saml|oidc)">[^<]*<\/option>/g, '')
    .replace(/<[^>]+>/g, '\n')
    .replace(/\{\{[A-Za-z]+\}\}/g, '')
    .split('\n')
    .map((s) => s.trim())
    .filter((s) => /\p{L}/u.test(s));
  t.deepEqual(words, [], 'page.html has no text outside the catalogue');
  // Labels a reader hears: every aria-label and title in page.html is a slot.
  for (const m of html.matchAll(/\s(aria-label|title)="([^"]*)"/g)) t.regex(m[2]!, /^\{\{[A-Za-z]+\}\}$/, `${m[1]} ${m[2]}`);
});

async function until(probe: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + WAIT;
  while (!(await probe())) {
    if (Date.now() > deadline) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function start(t: ExecutionContext): Promise<TestServer> {
  const server = await startTestServer({ 'enable-email-verification': false, 'webhook-allow-private-networks': true, roles: 'user,editor' });
  t.teardown(() => server.close());
  return server;
}

/** Data in every section: a user with a session and a passkey-less account, a webhook, an organization with a team, a model and a tuple. */
async function seed(server: TestServer): Promise<{ orgId: string }> {
  await server.call('signup', { email: 'ann@example.com', password: PASSWORD }, { protocol: 'rest' });
  await server.call('login', { email: 'ann@example.com', password: PASSWORD }, { protocol: 'rest', headers: { 'user-agent': 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0 Safari/537.36' } });
  const hook = await server.call('add_webhook', { event_name: 'user.created', endpoint: 'http://127.0.0.1:9/in' }, { protocol: 'rest', headers: ADMIN });
  if (hook.error) throw new Error(`add_webhook: ${hook.error.message}`);
  const org = await server.call('admin_create_organization', { name: 'Acme' }, { protocol: 'rest', headers: ADMIN });
  const orgId = String((org.body as { id: string }).id);
  await server.call('admin_create_team', { organization_id: orgId, name: 'Engineering' }, { protocol: 'rest', headers: ADMIN });
  await server.call('fga_write_model', { dsl: 'model\n  schema 1.1\ntype user\ntype doc\n  relations\n    define viewer: [user]\n' }, { protocol: 'rest', headers: ADMIN });
  await server.call('fga_write_tuples', { tuples: [{ user: 'user:ann', relation: 'viewer', object: 'doc:1' }] }, { protocol: 'rest', headers: ADMIN });
  return { orgId };
}

async function context(t: ExecutionContext, o: { locale?: string; width?: number; dark?: boolean } = {}): Promise<{ ctx: BrowserContext; page: Page; problems: string[] }> {
  const ctx = await browser!.newContext({ locale: o.locale ?? 'en-US', viewport: { width: o.width ?? 1280, height: 800 }, colorScheme: o.dark ? 'dark' : 'light' });
  t.teardown(() => ctx.close());
  ctx.setDefaultTimeout(WAIT);
  const page = await ctx.newPage();
  const problems = watchPage(page);
  page.on('console', (m) => {
    // The page asks on load whether its session lives (admin_session); before sign-in the answer is a 401, which Chromium logs.
    if (m.type() === 'error' && !(/status of 401/.test(m.text()) && /\/v1\/admin\/session$/.test(m.location().url))) problems.push(`console error: ${m.text()} (${m.location().url})`);
  });
  return { ctx, page, problems };
}

async function signIn(page: Page, server: TestServer): Promise<void> {
  await page.goto(`${server.httpUrl}/dashboard`);
  await page.locator('#admin-secret').fill(TEST_ADMIN_SECRET);
  await page.locator('#signin-submit').click();
  await page.locator('#overview:visible').waitFor();
  await page.locator('#counts .card strong', { hasText: /^\d+$/ }).first().waitFor();
}

/** Opens a section and waits until its data is shown (and its detail opened, for users, organizations and SSO). */
async function visit(page: Page, section: (typeof SECTIONS)[number], orgId: string): Promise<void> {
  await page.locator(`nav a[data-section="${section}"]`).click();
  await page.locator(`#${section}:visible`).waitFor();
  if (section === 'users') {
    await page.locator('#user-rows tr', { hasText: 'ann@example.com' }).getByRole('button').click();
    await page.locator('#edit-sessions tr', { hasText: 'Chrome' }).waitFor();
    await page.locator('#edit-passkeys li').waitFor();
  } else if (section === 'webhooks') {
    await page.locator('#webhook-rows tr', { hasText: 'user.created' }).waitFor();
    await page.locator('#webhook-rows tr').getByRole('button').nth(2).click();
    await page.locator('#webhook-log-rows tr').waitFor();
  } else if (section === 'templates') {
    await page.locator('#template-state:not(:empty)').waitFor();
  } else if (section === 'orgs') {
    await page.locator('#org-rows tr', { hasText: 'Acme' }).getByRole('button').click();
    await page.locator('#org-team-rows tr', { hasText: 'Engineering' }).waitFor();
  } else if (section === 'sso') {
    await page.locator('#sso-org-id').fill(orgId);
    await page.locator('#sso-org button[type=submit]').click();
    await page.locator('#sso-detail:visible').waitFor();
  } else if (section === 'audit') {
    await page.locator('#audit-rows tr').first().waitFor();
  } else if (section === 'authz') {
    await page.locator('#tuple-rows tr', { hasText: 'doc:1' }).waitFor();
    await page.locator('#t-user').fill('user:ann');
    await page.locator('#t-relation').fill('viewer');
    await page.locator('#t-object').fill('doc:1');
    await page.locator('#tester button[type=submit]').click();
    await page.locator('#check-answer').waitFor();
  } else if (section === 'clients') {
    await page.locator('#client-rows tr').first().waitFor();
  }
}

/** Every text node and every label a reader hears (aria-label, title, placeholder, alt) of the document. */
async function shownTexts(page: Page): Promise<string[]> {
  // A string: the project's types have no DOM; it runs in the page.
  return page.evaluate(`(() => {
    const out = [];
    const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
    for (let n = walker.nextNode(); n; n = walker.nextNode()) {
      const parent = n.parentElement;
      if (!parent || parent.closest('script,style')) continue;
      const text = (n.textContent || '').trim();
      if (text) out.push(text);
    }
    for (const el of document.querySelectorAll('[aria-label],[title],[placeholder],[alt]')) {
      for (const a of ['aria-label', 'title', 'placeholder', 'alt']) {
        const v = el.getAttribute(a);
        if (v) out.push(v.trim());
      }
    }
    out.push(document.title);
    return out;
  })()`) as Promise<string[]>;
}

/** The English messages (as patterns: slots match anything) that `lang` words differently. */
function englishPatterns(lang: string): { key: string; re: RegExp }[] {
  const messages = DASHBOARD_MESSAGES[lang]!;
  return DASHBOARD_MESSAGE_KEYS.filter((k) => messages[k] !== en[k]).map((key) => {
    const parts = en[key].split(/\{\w+\}/).map((p) => p.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'));
    return { key, re: new RegExp(`^${parts.join('.+')}$`, 's') };
  });
}

for (const lang of ['de', 'fr', 'es', 'ja', 'ar']) {
  test(`${lang}: chosen from Accept-Language, every section rendered with data, no English left over`, async (t) => {
    const server = await start(t);
    const { orgId } = await seed(server);
    const { page, problems } = await context(t, { locale: lang });
    await signIn(page, server);
    t.is(await page.locator('html').getAttribute('lang'), lang);
    t.is(await page.locator('html').getAttribute('dir'), lang === 'ar' ? 'rtl' : 'ltr');
    const patterns = englishPatterns(lang);
    const leftovers = new Set<string>();
    for (const section of SECTIONS) {
      await visit(page, section, orgId);
      for (const text of await shownTexts(page)) {
        for (const p of patterns) if (p.re.test(text)) leftovers.add(`${section}: ${p.key} "${text}"`);
      }
    }
    t.deepEqual([...leftovers], [], `no English left in ${lang}`);
    if (lang === 'ar') {
      // Right to left: the section menu sits on the right of the content.
      const nav = await page.locator('nav').boundingBox();
      const main = await page.locator('#main').boundingBox();
      t.true(nav !== null && main !== null && nav.x > main.x, 'the menu is on the right');
    }
    t.deepEqual(problems, []);
  });
}

test('the language: the saved latchkey_lang cookie wins over Accept-Language; an unknown language falls back to English', async (t) => {
  const server = await start(t);
  const headers = (h: Record<string, string>) => fetch(`${server.httpUrl}/dashboard`, { headers: h });
  const fr = await headers({ 'accept-language': 'fr-CA,fr;q=0.9' });
  t.is(fr.headers.get('content-language'), 'fr');
  t.regex(await fr.text(), /<html lang="fr" dir="ltr">/);
  const saved = await headers({ 'accept-language': 'fr', cookie: 'latchkey_lang=ja' });
  t.is(saved.headers.get('content-language'), 'ja');
  const unknown = await headers({ 'accept-language': 'sw' });
  t.is(unknown.headers.get('content-language'), 'en');
  t.regex(unknown.headers.get('vary') ?? '', /accept-language/);
  // The policy is the same for every language: the words travel in a data block, not in a script.
  t.is(fr.headers.get('content-security-policy'), unknown.headers.get('content-security-policy'));
});

for (const width of [1280, 375]) {
  for (const dark of [false, true]) {
    const scheme = dark ? 'dark' : 'light';
    test(`every section at ${width} px in the ${scheme} scheme: no axe violation, no sideways scrolling, no console error or CSP violation`, async (t) => {
      const server = await start(t);
      const { orgId } = await seed(server);
      const { page, problems } = await context(t, { width, dark });
      await page.goto(`${server.httpUrl}/dashboard`);
      await page.locator('#admin-secret').waitFor();
      t.deepEqual(await allViolations(page), [], `sign-in (${scheme})`);
      await signIn(page, server);
      for (const section of SECTIONS) {
        await visit(page, section, orgId);
        t.deepEqual(await allViolations(page), [], `${section} at ${width} px (${scheme})`);
        const scroll = Number(await page.evaluate('document.documentElement.scrollWidth'));
        t.true(scroll <= width + 1, `${section}: no sideways scrolling at ${width} px (${scroll})`);
      }
      t.deepEqual(problems, []);
    });
  }
}

test('the overview loads without layout shift', async (t) => {
  const server = await start(t);
  await seed(server);
  const { page, problems } = await context(t);
  // Playwright's init script runs through the DevTools protocol, outside the page's CSP.
  await page.addInitScript(`globalThis.shift = 0;
    new PerformanceObserver((list) => { for (const e of list.getEntries()) if (!e.hadRecentInput) globalThis.shift += e.value; }).observe({ type: 'layout-shift', buffered: true });`);
  await signIn(page, server);
  await page.waitForLoadState('networkidle');
  const shift = Number(await page.evaluate('globalThis.shift'));
  t.true(shift < 0.01, `cumulative layout shift ${shift}`);
  t.deepEqual(problems, []);
});

test('by keyboard alone at 375 px: sign in, open a user, end their session; the dialog cancels with Escape and confirms with Enter', async (t) => {
  const server = await start(t);
  await seed(server);
  await server.call('add_webhook', { event_name: 'user.deleted', endpoint: 'http://127.0.0.1:9/gone' }, { protocol: 'rest', headers: ADMIN });
  const { page, problems } = await context(t, { width: 375 });
  await page.goto(`${server.httpUrl}/dashboard`);
  await page.locator('#admin-secret').waitFor();
  await page.keyboard.type(TEST_ADMIN_SECRET);
  await page.keyboard.press('Enter');
  await page.locator('#overview:visible').waitFor();
  // The skip link is the first stop and moves to the content.
  await page.keyboard.press('Tab');
  t.is(await page.evaluate('document.activeElement.className'), 'skip');
  const tabTo = async (selector: string): Promise<void> => {
    for (let i = 0; i < 80; i++) {
      if (await page.evaluate(`document.activeElement && document.activeElement.matches(${JSON.stringify(selector)})`)) return;
      await page.keyboard.press('Tab');
    }
    throw new Error(`Tab never reached ${selector}`);
  };
  await tabTo('nav a[data-section="users"]');
  await page.keyboard.press('Enter');
  await page.locator('#users:visible').waitFor();
  await tabTo('#user-rows button');
  await page.keyboard.press('Enter');
  await page.locator('#edit-sessions tr', { hasText: 'Chrome' }).waitFor();
  t.is(await page.evaluate('document.activeElement.id'), 'edit-email', 'the user form takes the focus');
  const before = await page.locator('#edit-sessions tr').count();
  await tabTo('#edit-sessions tr:has(td[title*="Chrome"]) button');
  await page.keyboard.press('Enter');
  await page.locator('#edit-sessions-box .msg.ok').waitFor();
  t.is(await page.locator('#edit-sessions tr').count(), before - 1, 'the session is gone');
  // The confirmation dialog: focus starts on Cancel; Escape cancels and gives the focus back.
  await page.locator('nav a[data-section="webhooks"]').focus();
  await page.keyboard.press('Enter');
  await page.locator('#webhook-rows tr', { hasText: 'user.deleted' }).waitFor();
  await tabTo('#webhook-rows tr:first-child button.danger');
  await page.keyboard.press('Enter');
  await page.locator('#confirm[open]').waitFor();
  t.is(await page.evaluate('document.activeElement.id'), 'confirm-cancel');
  await page.keyboard.press('Escape');
  await page.locator('#confirm[open]').waitFor({ state: 'detached' });
  t.true(Boolean(await page.evaluate("document.activeElement && document.activeElement.matches('#webhook-rows button.danger')")), 'the focus is back on the button');
  t.is(await page.locator('#webhook-rows tr').count(), 2, 'nothing deleted');
  await page.keyboard.press('Enter');
  await page.locator('#confirm[open]').waitFor();
  await page.keyboard.press('Tab');
  t.is(await page.evaluate('document.activeElement.id'), 'confirm-ok');
  await page.keyboard.press('Enter');
  await page.locator('#webhooks-table .msg.ok').waitFor();
  await until(async () => (await page.locator('#webhook-rows tr').count()) === 1);
  t.deepEqual(problems, []);
});

test('email templates per language: the German built-in default is shown for German, saving stores a German template, the one for every language stays the default', async (t) => {
  const server = await start(t);
  const { page, problems } = await context(t);
  await signIn(page, server);
  await page.locator('nav a[data-section="templates"]').click();
  await page.locator('#template-state:not(:empty)').waitFor();
  await page.locator('#template-event').selectOption('forgot_password');
  await page.locator('#template-language').selectOption('de');
  t.is(await page.locator('#template-subject').inputValue(), 'Setzen Sie Ihr Passwort zurück', 'the built-in German default');
  await page.locator('#template-subject').fill('Neues Passwort für {{ user.email }}');
  await page.locator('#template-form button[type=submit]').click();
  await page.locator('#template-actions .msg.ok').waitFor();
  const listed = (await server.call('email_templates', {}, { protocol: 'rest', headers: ADMIN })).body as { email_templates: { event_name: string; language: string; subject: string }[] };
  t.deepEqual(listed.email_templates.map((x) => [x.event_name, x.language, x.subject]), [['forgot_password', 'de', 'Neues Passwort für {{ user.email }}']]);
  await page.locator('#template-language').selectOption('');
  t.is(await page.locator('#template-subject').inputValue(), 'Reset your password', 'every language: still the built-in default');
  t.false(await page.locator('#template-delete').isEnabled());
  await page.locator('#template-language').selectOption('de');
  t.true(await page.locator('#template-delete').isEnabled(), 'the German template is stored');
  t.deepEqual(problems, []);
});
