/**
 * SAML sign-in through `/app` in Chromium (through playwright-core). The
 * server is `http://localhost:<port>` with Secure cookies (Chromium counts
 * localhost as a secure origin), the identity provider
 * `http://127.0.0.1:<port>`: another site, so its form POST to the ACS is a
 * real cross-site arrival. SP-initiated: the email typed on `/app` is
 * discovered as the connection's domain (`discover_organization`), the
 * browser goes to `/sso/<id>`, the IdP, back to the ACS with the state
 * cookie, and lands on `/app` signed in. IdP-initiated: the IdP's own link
 * signs in the same user. The session cookie survives the cross-site
 * arrival: it opens the profile.
 */
import test from 'ava';
import type { Browser } from 'playwright-core';
import { launchChromium } from '../../helpers/loopback.ts';
import { needs } from '../../helpers/needs.ts';
import { ownedOrganization, startSsoServer, TestSamlIdp } from '../../helpers/saml_idp.ts';

const WAIT = 30_000;
const PASSWORD = 'a long enough passphrase';

needs(test, 'chromium')('SAML in Chromium: home-realm discovery on /app → /sso/<id> → IdP → cross-site POST to the ACS → /app signed in; then IdP-initiated', async (t) => {
  const txt = new Map<string, string[][]>();
  const srv = await startSsoServer({ 'enable-email-verification': false }, { backend: 'sqlite', resolveTxt: async (name) => txt.get(name) ?? [] }, 'localhost');
  t.teardown(() => srv.close());
  const base = `http://localhost:${new URL(srv.httpUrl).port}`;
  const idp = new TestSamlIdp('okta');
  await idp.start();
  t.teardown(() => idp.close());
  const { ok, owner, orgId, domain } = await ownedOrganization(srv, txt, PASSWORD);
  const org = { id: orgId };
  const conn = await ok('add_sso_connection', { organization_id: org['id'], type: 'saml', name: 'Okta', domains: [domain], saml: { idp_metadata_xml: idp.metadata() } }, owner);
  const saml = conn['saml'] as Record<string, string>;
  idp.sp = { acsUrl: saml['sp_acs_url']!, audience: saml['sp_entity_id']! };
  t.true(saml['sp_acs_url']!.startsWith(base));
  const found = await ok('discover_organization', { email: 'grace@acme.example.com' }, {});
  t.like(found, { found: true, sso_connection_id: conn['id'], sso_url: `${base}/sso/${conn['id'] as string}` });
  t.falsy((await ok('discover_organization', { email: 'grace@elsewhere.example.com' }, {}))['sso_url']);

  idp.user = { email: 'grace@acme.example.com', givenName: 'Grace', familyName: 'Hopper' };
  const browser: Browser = await launchChromium();
  t.teardown(() => browser.close());
  const context = await browser.newContext();
  const page = await context.newPage();
  await page.goto(`${base}/app`, { waitUntil: 'load', timeout: WAIT });
  await page.fill('#email', 'grace@acme.example.com');
  await page.press('#email', 'Tab');
  await page.waitForURL((u) => u.origin === base && u.pathname === '/app' && new URLSearchParams(u.hash.slice(1)).has('access_token'), { timeout: WAIT });
  t.is(idp.requests.length, 1, 'the IdP received one AuthnRequest');
  await page.waitForSelector('#signed-in:not([hidden])', { timeout: WAIT });
  const cookies = await context.cookies(base);
  const session = cookies.find((c) => c.name === 'cookie_session');
  t.truthy(session, 'the session cookie survived the cross-site arrival');
  t.true(session?.httpOnly);
  t.falsy(cookies.find((c) => c.name === 'service-sso-state'), 'the state cookie is cleared');
  const me = await srv.call('profile', {}, { protocol: 'rest', cookies: { cookie_session: session?.value ?? '' } });
  t.like(me.body, { email: 'grace@acme.example.com', given_name: 'Grace', signup_methods: 'saml' });

  // IdP-initiated, in a fresh browser: the IdP's own page posts to the ACS.
  const fresh = await browser.newContext();
  const p2 = await fresh.newPage();
  await p2.goto(`${idp.url}/init`, { waitUntil: 'load', timeout: WAIT });
  await p2.waitForURL((u) => u.origin === base && u.pathname === '/app' && new URLSearchParams(u.hash.slice(1)).has('access_token'), { timeout: WAIT });
  const s2 = (await fresh.cookies(base)).find((c) => c.name === 'cookie_session');
  t.truthy(s2);
  const me2 = await srv.call('profile', {}, { protocol: 'rest', cookies: { cookie_session: s2?.value ?? '' } });
  t.is((me2.body as { id: string }).id, (me.body as { id: string }).id, 'the same user');
  await fresh.close();
});
