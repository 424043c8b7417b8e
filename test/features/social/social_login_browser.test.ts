/**
 * Social login in a real browser (Debian's Chromium through playwright-core):
 * the app's link to /oauth_login/google, `oidc-provider` on loopback as
 * Google (its login and consent finish at once), the callback, and the
 * browser back on the app's redirect URI, signed in: the session cookie the
 * browser keeps opens the user's profile, and a second visit is the same
 * user. A tampered state in the browser is refused with no session.
 */
import test from 'ava';
import type { Browser } from 'playwright-core';
import { landing, launchChromium } from '../../helpers/loopback.ts';
import { needs } from '../../helpers/needs.ts';
import { socialLoginOf } from '../../../cmd/index.ts';
import { startTestServerOnPort } from '../../helpers/server.ts';
import { startOidcProvider } from '../../helpers/social.ts';

const WAIT = 30_000;


needs(test, 'chromium')('Google through oidc-provider in Chromium: redirect → provider → callback → back on the app, signed in', async (t) => {
  // The provider registers the callback of the server's port: it starts once the server has bound that port
  // (the server's flags do not name the provider; its endpoints are set below).
  const server = await startTestServerOnPort((port) => ({ url: `http://127.0.0.1:${port}`, 'enable-email-verification': false, 'app-cookie-secure': false, 'google-client-id': 'google-id', 'google-client-secret': 'google-secret' }));
  t.teardown(() => server.close());
  const base = server.httpUrl;
  const google = await startOidcProvider({ clientId: 'google-id', clientSecret: 'google-secret', redirectUris: [`${base}/oauth_callback/google`] });
  t.teardown(() => google.close());
  google.accounts.set('bea', { email: 'bea@example.com', email_verified: true, given_name: 'Bea' });
  google.account = 'bea';
  socialLoginOf(server.server.services)?.useEndpointsForTests('google', {
    authorizationEndpoint: `${google.issuer}/auth`,
    tokenEndpoint: `${google.issuer}/token`,
    jwksUri: `${google.issuer}/jwks`,
    issuer: google.issuer,
  });

  const browser: Browser = await launchChromium();
  t.teardown(() => browser.close());
  const context = await browser.newContext();
  const page = await context.newPage();
  const start = `${base}/oauth_login/google?redirect_uri=${encodeURIComponent(`${base}/app`)}&state=app-state`;

  await page.goto(start, { waitUntil: 'load', timeout: WAIT });
  const landed = await landing(page, (u) => u.origin === base && u.pathname === '/app', WAIT);
  const fields = new URLSearchParams(landed.hash.slice(1));
  t.is(fields.get('state'), 'app-state');
  t.truthy(fields.get('access_token'));
  t.truthy(fields.get('id_token'));
  t.is(landed.search, '', 'tokens travel in the fragment, never the query');
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

  // Again, with the provider's session still open in the browser: the same user. In a second tab of the same
  // browser, since the first one may still be moving on from /app to the account center.
  const tab = await context.newPage();
  await tab.goto(start, { waitUntil: 'load', timeout: WAIT });
  await tab.waitForURL((u) => u.origin === base && u.pathname.startsWith('/app') && new URLSearchParams(u.hash.slice(1)).has('access_token'), { timeout: WAIT });
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
