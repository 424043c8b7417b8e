/**
 * `npm run docs:ui`: the pictures of docs/ui.md. Starts a server on
 * loopback (SQLite in a temporary file, the sign-in page, the account
 * center and the dashboard on, GitHub and a generic OpenID provider
 * configured so that their buttons show), drives Chromium through each
 * screen of /app, /app/account and /dashboard at 1280 and 375 pixels wide,
 * and writes a PNG of the viewport of each under docs/ui/ as
 * `<screen>-<width>.png` (the viewport, not the whole page, keeps them
 * small). The browser tests write the pictures of the screens only a flow
 * reaches (`LATCHKEY_UI_SCREENSHOTS`, test/helpers/screenshots.ts).
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { launchChromium, watchPage } from './helpers/loopback.ts';
import { TEST_ADMIN_SECRET, startTestServer, type TestServer } from './helpers/server.ts';
import { REPO_ROOT } from '../cmd/docs_gen.ts';

const OUT = join(REPO_ROOT, 'docs', 'ui');
const WIDTHS = [1280, 375] as const;
const PASSWORD = 'Correct-Horse-7-Battery';
const WAIT = 20_000;

interface Shot {
  name: string;
  /** Brings the page to the screen; the picture is taken after. */
  reach: (page: Page, server: TestServer) => Promise<void>;
  /** Whether the screen needs a signed-in session. */
  signedIn?: boolean;
}

const loaded = (page: Page) => page.locator('#content:not([aria-busy])').waitFor();
const scrollTo = async (page: Page, selector: string) => {
  await page.locator(selector).scrollIntoViewIfNeeded();
  await page.evaluate(`document.querySelector(${JSON.stringify(selector)})?.scrollIntoView({ block: 'start' })`);
};

const SHOTS: readonly Shot[] = [
  { name: 'app-sign-in', reach: async (page, s) => void (await page.goto(`${s.httpUrl}/app`)) },
  {
    name: 'app-sign-up',
    reach: async (page, s) => {
      await page.goto(`${s.httpUrl}/app`);
      await page.click('#to-signup');
    },
  },
  { name: 'app-sign-in-ja', reach: async (page, s) => void (await page.goto(`${s.httpUrl}/app?ui_locales=ja`)) },
  { name: 'app-sign-in-ar', reach: async (page, s) => void (await page.goto(`${s.httpUrl}/app?ui_locales=ar`)) },
  {
    name: 'app-account',
    signedIn: true,
    reach: async (page, s) => {
      await page.goto(`${s.httpUrl}/app/account`);
      await loaded(page);
    },
  },
  {
    name: 'app-account-security',
    signedIn: true,
    reach: async (page, s) => {
      await page.goto(`${s.httpUrl}/app/account`);
      await loaded(page);
      await scrollTo(page, '#security-title');
    },
  },
  {
    name: 'app-account-sessions',
    signedIn: true,
    reach: async (page, s) => {
      await page.goto(`${s.httpUrl}/app/account`);
      await loaded(page);
      await scrollTo(page, '#sessions-title');
    },
  },
  {
    name: 'app-account-delete',
    signedIn: true,
    reach: async (page, s) => {
      await page.goto(`${s.httpUrl}/app/account`);
      await loaded(page);
      await scrollTo(page, '#delete-title');
    },
  },
  {
    name: 'app-account-ar',
    signedIn: true,
    reach: async (page, s) => {
      await page.goto(`${s.httpUrl}/app/account?ui_locales=ar`);
      await loaded(page);
    },
  },
  { name: 'dashboard-sign-in', reach: async (page, s) => void (await page.goto(`${s.httpUrl}/dashboard`)) },
  ...['Users', 'Webhooks', 'Email templates', 'Audit log'].map(
    (section): Shot => ({
      name: `dashboard-${section.toLowerCase().replace(/ /g, '-')}`,
      reach: async (page, s) => {
        await page.goto(`${s.httpUrl}/dashboard`);
        await page.getByLabel('Admin secret').fill(TEST_ADMIN_SECRET);
        await page.getByRole('button', { name: 'Sign in' }).click();
        // The narrow layout may fold the navigation behind a button.
        const link = page.getByRole('link', { name: section, exact: true });
        if (!(await link.isVisible())) await page.getByRole('button', { name: /menu|sections/i }).first().click({ timeout: 2000 }).catch(() => undefined);
        await link.click();
        await page.waitForTimeout(300);
      },
    }),
  ),
];

/** A browser context `width` pixels wide, signed in when asked (the session of an API sign-up with a few devices). */
async function pageFor(browser: Browser, server: TestServer, width: number, signedIn: boolean): Promise<{ page: Page; close: () => Promise<void>; problems: string[] }> {
  const context = await browser.newContext({ viewport: { width, height: width > 600 ? 800 : 740 }, locale: 'en-US', colorScheme: 'light' });
  context.setDefaultTimeout(WAIT);
  if (signedIn) await context.addCookies(await sessionCookies(server, width));
  const page = await context.newPage();
  const problems = watchPage(page);
  return { page, problems, close: () => context.close() };
}

const sessions = new Map<number, { name: string; value: string; url: string }[]>();

/** The cookies of one signed-in account per width, opened once (with two more devices). */
async function sessionCookies(server: TestServer, width: number): Promise<{ name: string; value: string; url: string }[]> {
  const known = sessions.get(width);
  if (known !== undefined) return known;
  {
    const email = `ann.${width}@example.com`;
    const up = await server.call('signup', { email, password: PASSWORD, given_name: 'Ann', family_name: 'Smith' }, { protocol: 'rest' });
    const opened = up.error === undefined ? up : await server.call('login', { email, password: PASSWORD }, { protocol: 'rest' });
    // Two more devices, so that the sessions list shows what it is for.
    for (const ua of ['Mozilla/5.0 (iPhone; CPU iPhone OS 18_0 like Mac OS X) AppleWebKit/605.1.15 Version/18.0 Mobile/15E148 Safari/604.1', 'Mozilla/5.0 (X11; Linux x86_64; rv:140.0) Gecko/20100101 Firefox/140.0']) {
      await server.call('login', { email, password: PASSWORD }, { protocol: 'rest', headers: { 'user-agent': ua } });
    }
    const base = new URL(server.httpUrl);
    const cookies = opened.setCookies
      .map((l) => l.split(';')[0]!.trim())
      .map((pair) => ({ name: pair.slice(0, pair.indexOf('=')), value: pair.slice(pair.indexOf('=') + 1), url: base.origin }))
      .filter((c) => c.value !== '');
    sessions.set(width, cookies);
    return cookies;
  }
}

async function main(): Promise<void> {
  mkdirSync(OUT, { recursive: true });
  const server = await startTestServer({
    'enable-login-page': true,
    'enable-dashboard': true,
    'app-cookie-secure': false,
    'enable-email-verification': false,
    'organization-name': 'Example Corp',
    'github-client-id': 'gh',
    'github-client-secret': 'gh-secret',
    'oidc-issuer': 'https://sso.example.com/realms/staff',
    'oidc-client-id': 'latchkey',
    'oidc-client-secret': 'oidc-secret',
    'oidc-display-name': 'Staff SSO',
  });
  const browser = await launchChromium();
  const failed: string[] = [];
  try {
    for (const width of WIDTHS) {
      for (const shot of SHOTS) {
        const { page, problems, close } = await pageFor(browser, server, width, shot.signedIn === true);
        try {
          await shot.reach(page, server);
          await page.evaluate('document.fonts.ready');
          const file = join(OUT, `${shot.name}-${width}.png`);
          await page.screenshot({ path: file, fullPage: false, animations: 'disabled', caret: 'hide' });
          if (problems.length > 0) failed.push(`${shot.name} at ${width} px: ${problems.join('; ')}`);
          process.stdout.write(`wrote ${file}\n`);
        } catch (err) {
          failed.push(`${shot.name} at ${width} px: ${err instanceof Error ? err.message.split('\n')[0] : String(err)}`);
        } finally {
          await close();
        }
      }
    }
  } finally {
    await browser.close();
    await server.close();
  }
  if (failed.length > 0) {
    process.stderr.write(`screens not taken or with problems:\n${failed.join('\n')}\n`);
    process.exitCode = 1;
  }
}

await main();
