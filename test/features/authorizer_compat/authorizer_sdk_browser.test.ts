/**
 * Authorizer's JS SDK in a real browser (Debian's Chromium through
 * playwright-core), from a page on another loopback origin than the server:
 * its browser build (`lib/authorizer.min.js` of `@authorizerdev/authorizer-js`,
 * served by the page's own origin; no network) signs up, logs out, logs in,
 * reads the session and the profile and logs out again through the session
 * cookie alone (`credentials: 'include'`, no token handled by the page), as
 * the origin is listed in `--allowed-origins`. The same page served from an
 * origin that is not listed is refused: the CORS preflight gets no
 * Access-Control-Allow-Origin, the browser blocks the call, and the SDK
 * surfaces the failed fetch as an error (and no account is created). Under
 * the default `--allowed-origins=*` the credentialed call fails too, with the
 * console error docs/clients.md quotes.
 */
import anyTest, { type ExecutionContext } from 'ava';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { createServer as createHttpServer, type Server } from 'node:http';
import { dirname, join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { launchChromium } from '../../helpers/loopback.ts';
import { needs } from '../../helpers/needs.ts';
import { TEST_CLIENT_ID, startTestServerOnPort, type TestServer } from '../../helpers/server.ts';

// Serial: one browser, and every login costs a bcrypt compare on a shared machine.
const test = needs(anyTest.serial, 'chromium');
const PASSWORD = 'Correct-Horse-7-Battery';
const WAIT = 30_000;

const require = createRequire(import.meta.url);
const SDK_BUNDLE = readFileSync(join(dirname(require.resolve('@authorizerdev/authorizer-js')), 'authorizer.min.js'), 'utf8');
const PAGE = '<!DOCTYPE html><meta charset="utf-8"><title>client app</title><script src="/authorizer.min.js"></script><p>client app</p>';

let browser: Browser | undefined;

test.before(async () => {
  browser = await launchChromium();
});

test.after.always(async () => {
  await browser?.close();
});

/** A client app's origin on loopback: the page and the SDK's browser build; closed when the test ends. */
async function appOrigin(t: ExecutionContext): Promise<string> {
  const server: Server = createHttpServer((req, res) => {
    if (req.url === '/authorizer.min.js') {
      res.writeHead(200, { 'content-type': 'text/javascript; charset=utf-8' });
      res.end(SDK_BUNDLE);
    } else {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      res.end(PAGE);
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return `http://127.0.0.1:${(server.address() as { port: number }).port}`;
}

/** The server on its own loopback port (its `--url`), with `--allowed-origins` listing `allowed` (default `*`); closed when the test ends. */
async function start(t: ExecutionContext, allowed?: string): Promise<TestServer> {
  const server = await startTestServerOnPort((port) => ({
    url: `http://127.0.0.1:${port}`,
    ...(allowed === undefined ? {} : { 'allowed-origins': allowed }),
    'enable-email-verification': false,
  }));
  t.teardown(() => server.close());
  return server;
}

/** A fresh browser context (no cookies) on the client app's page; closed when the test ends. */
async function pageAt(t: ExecutionContext, origin: string): Promise<Page> {
  const context = await browser!.newContext();
  t.teardown(() => context.close());
  context.setDefaultTimeout(WAIT);
  const page = await context.newPage();
  await page.goto(`${origin}/`);
  await page.waitForFunction(() => typeof (globalThis as unknown as { authorizerdev?: unknown }).authorizerdev === 'object');
  return page;
}

type Outcome = {
  data: Record<string, unknown> | null;
  errors: { message: string; code: string | null; name: string | null }[];
};

/**
 * Calls `method` of an SDK instance made in the page (the page's own code, as
 * an app would write it), with `args`; the answer with its errors flattened
 * to what the page could show.
 */
async function sdkCall(page: Page, server: TestServer, method: string, ...args: unknown[]): Promise<Outcome> {
  return page.evaluate(
    async ({ url, clientId, method, args }) => {
      // The page's global scope (the test's tsconfig has no DOM types).
      const w = globalThis as unknown as {
        authorizerdev: { Authorizer: new (c: Record<string, unknown>) => Record<string, (...a: unknown[]) => Promise<{ data?: unknown; errors: unknown[] }>> };
        location: { origin: string };
      };
      const sdk = new w.authorizerdev.Authorizer({ authorizerURL: url, redirectURL: w.location.origin, clientID: clientId });
      const r = await sdk[method]!(...args);
      return {
        data: (r.data ?? null) as Record<string, unknown> | null,
        errors: (r.errors ?? []).map((e) => {
          const x = e as { message?: unknown; name?: unknown; extensions?: { code?: unknown } };
          return { message: String(x.message ?? e), code: typeof x.extensions?.code === 'string' ? x.extensions.code : null, name: typeof x.name === 'string' ? x.name : null };
        }),
      };
    },
    { url: server.httpUrl, clientId: TEST_CLIENT_ID, method, args },
  );
}

const sessionCookie = async (page: Page) => (await page.context().cookies()).find((c) => c.name === 'cookie_session');

test('from a listed origin, with cookies only: sign up, log out, log in, read the session and the profile, log out', async (t) => {
  const app = await appOrigin(t);
  const server = await start(t, app);
  const page = await pageAt(t, app);
  const email = `browser-${randomBytes(5).toString('hex')}@example.com`;

  const signup = await sdkCall(page, server, 'signup', { email, password: PASSWORD, confirm_password: PASSWORD, given_name: 'Ada' });
  t.deepEqual(signup.errors, []);
  t.is((signup.data?.['user'] as { email?: string } | undefined)?.email, email);
  t.truthy(await sessionCookie(page), 'the session cookie was stored for the server');

  t.deepEqual((await sdkCall(page, server, 'logout')).errors, [], 'logout');
  t.is(await sessionCookie(page), undefined, 'logout cleared the session cookie');
  const none = await sdkCall(page, server, 'getSession');
  t.is(none.errors[0]?.code, 'unauthenticated', 'no session after logout');

  const login = await sdkCall(page, server, 'login', { email, password: PASSWORD });
  t.deepEqual(login.errors, []);
  t.truthy(login.data?.['access_token']);
  t.truthy(await sessionCookie(page));

  // No token passes through the page's code from here: the browser sends the cookie.
  const session = await sdkCall(page, server, 'getSession');
  t.deepEqual(session.errors, []);
  t.is((session.data?.['user'] as { email?: string } | undefined)?.email, email);
  t.truthy(session.data?.['access_token']);

  const profile = await sdkCall(page, server, 'getProfile');
  t.deepEqual(profile.errors, []);
  t.is(profile.data?.['email'], email);
  t.is(profile.data?.['given_name'], 'Ada');

  t.deepEqual((await sdkCall(page, server, 'logout')).errors, [], 'logout');
  t.is(await sessionCookie(page), undefined);
  const after = await sdkCall(page, server, 'getProfile');
  t.is(after.errors[0]?.code, 'unauthenticated', 'the profile is refused after logout');
});

test('from an origin not in --allowed-origins the browser refuses the call, and the SDK surfaces the error', async (t) => {
  const listed = await appOrigin(t);
  const other = await appOrigin(t);
  const server = await start(t, listed);
  const page = await pageAt(t, other);
  const email = `refused-${randomBytes(5).toString('hex')}@example.com`;

  const signup = await sdkCall(page, server, 'signup', { email, password: PASSWORD, confirm_password: PASSWORD });
  t.is(signup.data, null);
  t.is(signup.errors.length, 1);
  t.is(signup.errors[0]?.name, 'TypeError');
  t.regex(signup.errors[0]?.message ?? '', /failed to fetch/i, 'the fetch the browser blocked');
  const meta = await sdkCall(page, server, 'getMetaData');
  t.regex(meta.errors[0]?.message ?? '', /failed to fetch/i);
  // Nothing reached the server: the account does not exist.
  const login = await server.call('login', { email, password: PASSWORD }, { protocol: 'rest', headers: { origin: listed } });
  t.is(login.error?.code, 'unauthenticated');
});

test('under the default --allowed-origins=* the browser refuses the credentialed call, with the console error docs/clients.md quotes', async (t) => {
  const app = await appOrigin(t);
  const server = await start(t);
  const page = await pageAt(t, app);
  const console: string[] = [];
  page.on('console', (m) => console.push(m.text()));
  const meta = await sdkCall(page, server, 'getMetaData');
  t.is(meta.data, null);
  t.regex(meta.errors[0]?.message ?? '', /failed to fetch/i);
  const cors = console.find((m) => m.includes('blocked by CORS policy'));
  t.truthy(cors, console.join('\n'));
  t.regex(cors ?? '', /must not be the wildcard '\*' when the request's credentials mode is 'include'/);
});
