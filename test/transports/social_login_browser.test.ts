/**
 * Social login in a real browser (Debian's Chromium through playwright-core):
 * the app's link to /oauth_login/google, `oidc-provider` on loopback as
 * Google (its login and consent finish at once), the callback, and the
 * browser back on the app's redirect URI, signed in: the session cookie the
 * browser keeps opens the user's profile, and a second visit is the same
 * user. A tampered state in the browser is refused with no session.
 */
import test from 'ava';
import { createServer } from 'node:net';
import { chromium, type Browser } from 'playwright-core';
import { socialLoginOf } from '../../transports/index.ts';
import { startTestServer } from '../helpers/server.ts';
import { startOidcProvider } from '../helpers/social.ts';

const WAIT = 30_000;

async function freePort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve));
  const port = (srv.address() as { port: number }).port;
  await new Promise<void>((resolve) => srv.close(() => resolve()));
  return port;
}

test('Google through oidc-provider in Chromium: redirect → provider → callback → back on the app, signed in', async (t) => {
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const google = await startOidcProvider({ clientId: 'google-id', clientSecret: 'google-secret', redirectUris: [`${base}/oauth_callback/google`] });
  t.teardown(() => google.close());
  google.accounts.set('bea', { email: 'bea@example.com', email_verified: true, given_name: 'Bea' });
  google.account = 'bea';
  const server = await startTestServer({ 'http-port': port, url: base, 'enable-email-verification': false, 'app-cookie-secure': false, 'google-client-id': 'google-id', 'google-client-secret': 'google-secret' });
  t.teardown(() => server.close());
  socialLoginOf(server.server.services)?.useEndpointsForTests('google', {
    authorizationEndpoint: `${google.issuer}/auth`,
    tokenEndpoint: `${google.issuer}/token`,
    jwksUri: `${google.issuer}/jwks`,
    issuer: google.issuer,
  });

  const browser: Browser = await chromium.launch({
    executablePath: '/usr/bin/chromium',
    headless: true,
    timeout: 60_000,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  t.teardown(() => browser.close());
  const context = await browser.newContext();
  const page = await context.newPage();
  const start = `${base}/oauth_login/google?redirect_uri=${encodeURIComponent(`${base}/app`)}&state=app-state`;

  await page.goto(start, { waitUntil: 'load', timeout: WAIT });
  await page.waitForURL((u) => u.origin === base && u.pathname.startsWith('/app'), { timeout: WAIT });
  const landed = new URL(page.url());
  t.is(landed.searchParams.get('state'), 'app-state');
  t.truthy(landed.searchParams.get('access_token'));
  t.truthy(landed.searchParams.get('id_token'));
  const cookies = await context.cookies(base);
  const session = cookies.find((c) => c.name === 'cookie_session');
  t.truthy(session);
  t.true(session?.httpOnly);
  t.falsy(cookies.find((c) => c.name === 'service-oauth-state'), 'the state cookie is cleared');
  const me = await server.call('profile', {}, { protocol: 'rest', cookies: { cookie_session: session?.value ?? '' } });
  const user = me.body as { id: string; email: string; signup_methods: string; given_name: string };
  t.is(user.email, 'bea@example.com');
  t.is(user.signup_methods, 'google');
  t.is(user.given_name, 'Bea');

  // Again, with the provider's session still open in the browser: the same user.
  await page.goto(start, { waitUntil: 'load', timeout: WAIT });
  await page.waitForURL((u) => u.origin === base && u.pathname.startsWith('/app') && u.searchParams.has('access_token'), { timeout: WAIT });
  const again = (await context.cookies(base)).find((c) => c.name === 'cookie_session');
  t.not(again?.value, session?.value, 'a new session');
  const me2 = await server.call('profile', {}, { protocol: 'rest', cookies: { cookie_session: again?.value ?? '' } });
  t.is((me2.body as { id: string }).id, user.id);

  // A callback whose state is not the browser's: refused, no session.
  const fresh = await browser.newContext();
  const other = await fresh.newPage();
  const res = await other.goto(`${base}/oauth_callback/google?code=stolen&state=not-this-browsers`, { timeout: WAIT });
  t.is(res?.status(), 400);
  t.falsy((await fresh.cookies(base)).find((c) => c.name === 'cookie_session'));
  await fresh.close();
});
