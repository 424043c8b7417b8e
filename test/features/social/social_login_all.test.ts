/**
 * Every one of the ten social login providers, end to end: each pointed at a
 * fake of its own on loopback (ID tokens signed by the fake for the OpenID
 * providers; the provider's own profile API shape for the others: GitHub's
 * /user and /user/emails, Discord's /users/@me, Facebook's Graph /me,
 * LinkedIn's userinfo, X's /2/users/me; Apple by form_post with the
 * client-secret JWT), the whole redirect → provider → callback → session
 * flow, first in Chromium, then over plain HTTP with a cookie jar, for a new
 * user each time. The cases of each flow (state, nonce, audience, issuer,
 * unverified addresses, sign-up disabled, revoked users) are in
 * social_login.test.ts.
 */
import anyTest from 'ava';
import { exportJWK, exportPKCS8, generateKeyPair } from 'jose';
import type { Browser } from 'playwright-core';
import { socialLoginOf } from '../../../cmd/index.ts';
import { landing, launchChromium } from '../../helpers/loopback.ts';
import { missing, needs } from '../../helpers/needs.ts';
import { CookieJar, drive, landingParams, startFakeProvider, startOnKnownPort, type FakeKind, type FakeProvider } from '../../helpers/social.ts';
import type { TestServer } from '../../helpers/server.ts';

const test = anyTest.serial;
const WAIT = 30_000;
const TENANT = '11111111-2222-3333-4444-555555555555';

type Provider = 'google' | 'facebook' | 'github' | 'linkedin' | 'apple' | 'discord' | 'twitter' | 'microsoft' | 'twitch' | 'roblox';

/** Each provider's fake and how its account is given for a login of `who`. */
const SETUP: Record<Provider, { kind: FakeKind; account: (fake: FakeProvider, who: string) => void }> = {
  google: { kind: 'oidc', account: (f, who) => void (f.account = { id: who, email: `${who}@example.com`, email_verified: true, given_name: 'Gia' }) },
  facebook: {
    kind: 'userinfo',
    account: (f, who) => void (f.userinfo = { id: who, first_name: 'Fay', last_name: 'Book', email: `${who}@example.com`, picture: { data: { url: 'https://img.example/f.png' } } }),
  },
  github: { kind: 'github', account: (f, who) => void (f.account = { id: String(1000 + who.length), email: `${who}@example.com`, email_verified: true, given_name: 'Gus' }) },
  linkedin: { kind: 'userinfo', account: (f, who) => void (f.userinfo = { sub: who, given_name: 'Lin', family_name: 'Ked', email: `${who}@example.com`, email_verified: true }) },
  apple: { kind: 'oidc', account: (f, who) => void (f.account = { id: who, email: `${who}@example.com`, email_verified: true }) },
  discord: { kind: 'discord', account: (f, who) => void (f.account = { id: who, email: `${who}@example.com`, email_verified: true, given_name: 'Dee' }) },
  twitter: { kind: 'userinfo', account: (f, who) => void (f.userinfo = { data: { id: who, name: 'Xavier Bird', username: who, confirmed_email: `${who}@example.com` } }) },
  microsoft: {
    kind: 'oidc',
    account: (f, who) => {
      f.account = { id: who, email: `${who}@example.com` };
      f.idToken = { iss: `${f.url}/${TENANT}/v2.0`, extra: { tid: TENANT, xms_edov: true } };
    },
  },
  twitch: { kind: 'oidc', account: (f, who) => void (f.account = { id: who, email: `${who}@example.com`, email_verified: true }) },
  roblox: { kind: 'oidc', account: (f, who) => void (f.account = { id: who, email: `${who}@example.com`, email_verified: true }) },
};
const PROVIDERS = Object.keys(SETUP) as Provider[];

interface World {
  server: TestServer;
  base: string;
  fakes: Record<Provider, FakeProvider>;
  /** Undefined without Chromium (outside CI): the browser tests are skipped, the plain HTTP ones still run. */
  browser: Browser | undefined;
}
let world: World | undefined;
const closers: (() => Promise<void>)[] = [];

test.before(async () => {
  const fakes = {} as Record<Provider, FakeProvider>;
  for (const p of PROVIDERS) {
    const fake = await startFakeProvider(SETUP[p].kind, { clientId: `${p}-id`, clientSecret: p === 'apple' ? '' : `${p}-secret` });
    closers.push(() => fake.close());
    fakes[p] = fake;
  }
  const appleKey = await generateKeyPair('ES256', { extractable: true });
  fakes.apple.appleSecretKey = { publicJwk: await exportJWK(appleKey.publicKey), teamId: 'TEAM123456' };
  const flags: Record<string, string | boolean> = { 'enable-email-verification': false, 'app-cookie-secure': false };
  for (const p of PROVIDERS) {
    flags[`${p}-client-id`] = `${p}-id`;
    flags[`${p}-client-secret`] = `${p}-secret`;
  }
  Object.assign(flags, { 'apple-client-secret': await exportPKCS8(appleKey.privateKey), 'apple-team-id': 'TEAM123456', 'apple-key-id': 'KEY1' });
  const { server, base } = await startOnKnownPort(() => flags);
  closers.push(() => server.close());
  const social = socialLoginOf(server.server.services);
  if (social === undefined) throw new Error('social login not plugged');
  for (const p of PROVIDERS) {
    const url = fakes[p].url;
    const oidc = SETUP[p].kind === 'oidc';
    social.useEndpointsForTests(p, {
      authorizationEndpoint: `${url}/authorize`,
      tokenEndpoint: `${url}/token`,
      ...(oidc ? { jwksUri: `${url}/jwks`, issuer: p === 'microsoft' ? `${url}/{tenantid}/v2.0` : url } : { userinfoEndpoint: p === 'facebook' ? `${url}/user?fields=id,first_name,last_name,email,picture` : `${url}/user` }),
      ...(p === 'github' ? { emailsEndpoint: `${url}/user/emails` } : {}),
    });
  }
  const browser = missing('chromium') === undefined ? await launchChromium() : undefined;
  if (browser !== undefined) closers.push(() => browser.close());
  world = { server, base, fakes, browser };
});

test.after.always(async () => {
  for (const close of closers.reverse()) await close().catch(() => {});
});

const w = (): World => {
  if (world === undefined) throw new Error('no world');
  return world;
};

async function profileOf(cookie: string | undefined) {
  const r = await w().server.call('profile', {}, { protocol: 'rest', cookies: { cookie_session: cookie ?? '' } });
  return r.body as { email: string; email_verified: boolean; signup_methods: string } | undefined;
}

for (const provider of PROVIDERS) {
  needs(test, 'chromium')(`${provider}: in Chromium, the app's link → the provider → the callback → back on the app, signed in`, async (t) => {
    const { base, fakes, browser } = w();
    const who = `${provider}-browser`;
    SETUP[provider].account(fakes[provider], who);
    const context = await browser!.newContext();
    t.teardown(() => context.close());
    const page = await context.newPage();
    await page.goto(`${base}/oauth_login/${provider}?redirect_uri=${encodeURIComponent(`${base}/app`)}&state=s-${provider}`, { timeout: WAIT });
    const landed = await landing(page, (u) => u.origin === base && u.pathname === '/app' && u.hash.includes('access_token='), WAIT);
    const fields = new URLSearchParams(landed.hash.slice(1));
    t.is(fields.get('state'), `s-${provider}`);
    const session = (await context.cookies(base)).find((c) => c.name === 'cookie_session');
    t.true(session?.httpOnly);
    const me = await profileOf(session?.value);
    t.is(me?.email, `${who}@example.com`);
    t.true(me?.email_verified);
    t.is(me?.signup_methods, provider);
  });

  test(`${provider}: over plain HTTP with a cookie jar, the same flow signs a new user in`, async (t) => {
    const { base, fakes } = w();
    const who = `${provider}-http`;
    SETUP[provider].account(fakes[provider], who);
    const jar = new CookieJar();
    const landing = await drive(jar, `${base}/oauth_login/${provider}?redirect_uri=${encodeURIComponent(`${base}/done`)}&state=h-${provider}`, (u) => u.origin === base && u.pathname === '/done');
    const fields = landingParams(landing.url);
    t.is(fields?.get('error'), null, fields?.get('error_description') ?? '');
    t.truthy(fields?.get('access_token'));
    t.is(fields?.get('state'), `h-${provider}`);
    const me = await profileOf(jar.get(base, 'cookie_session'));
    t.is(me?.email, `${who}@example.com`);
    t.is(me?.signup_methods, provider);
  });
}
