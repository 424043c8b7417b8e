/**
 * Consent for clients that are not first-party (`require_consent`), through
 * openid-client and a cookie-carrying fetch standing in for the browser:
 * /authorize sends the signed-in user to /app/consent, which lists the
 * scopes; allowing comes back with a code openid-client redeems; the grant
 * is remembered (the same or fewer scopes skip the page, more ask again);
 * prompt=consent asks anyway; prompt=none answers consent_required; a
 * denial answers access_denied to the redirect URI with the state; a ticket
 * is the session's own and used once; consented_apps and revoke_consent on
 * every protocol, after which the page is shown again. A first-party client
 * is never asked. Deleting a user removes its consents.
 */
import anyTest, { type ExecutionContext } from 'ava';
import * as client from 'openid-client';
import { QueryTypes } from 'sequelize';
import { openSequelize } from '../../../engine/sql/sqlite_sequelize.ts';
import { PROTOCOLS, TEST_ADMIN_SECRET, startTestServerOnPort, type TestServer } from '../../helpers/server.ts';

const test = anyTest.serial;
const ADMIN = { 'x-service-admin-secret': TEST_ADMIN_SECRET };
const PASSWORD = 'correct horse battery staple';
const CB = 'https://thirdparty.example/cb';

let server: TestServer;
let issuer = '';
let config: client.Configuration;
let firstParty: client.Configuration;

test.before(async () => {
  server = await startTestServerOnPort((port) => ({ url: `http://127.0.0.1:${port}`, 'enable-email-verification': false }));
  issuer = server.httpUrl;
  const added = await server.call('add_client', { client_id: 'third-party', client_name: 'Photo Printer', redirect_uris: [CB], scopes: ['openid', 'email', 'profile', 'offline_access'], require_consent: true }, { protocol: 'rest', headers: ADMIN });
  t_ok(added.error);
  t_ok((added.body!['client'] as Record<string, unknown>)['require_consent'] === true ? undefined : 'require_consent not stored');
  config = await client.discovery(new URL(issuer), 'third-party', {}, client.ClientSecretBasic(String(added.body!['client_secret'])), { execute: [client.allowInsecureRequests] });
  const own = await server.call('add_client', { client_id: 'own-app', redirect_uris: ['https://own.example/cb'] }, { protocol: 'rest', headers: ADMIN });
  t_ok(own.error);
  firstParty = await client.discovery(new URL(issuer), 'own-app', {}, client.ClientSecretBasic(String(own.body!['client_secret'])), { execute: [client.allowInsecureRequests] });
});
test.after.always(async () => {
  await server?.close();
});

function t_ok(err: unknown): void {
  if (err !== undefined) throw new Error(`setup failed: ${JSON.stringify(err)}`);
}

/** A signed-in browser: its session cookie and access token. */
async function signedIn(email: string): Promise<{ cookie: string; token: string }> {
  const r = await server.call('signup', { email, password: PASSWORD }, { protocol: 'rest' });
  const set = r.setCookies.find((c) => c.startsWith('cookie_session=')) ?? '';
  return { cookie: set.slice('cookie_session='.length, set.indexOf(';')), token: String(r.body!['access_token']) };
}

const browse = (cookie: string, url: string | URL, init: RequestInit = {}): Promise<Response> =>
  fetch(url, { ...init, headers: { cookie: `cookie_session=${cookie}`, ...(init.headers as Record<string, string> | undefined) }, redirect: 'manual' });

/** An authorization request of `cfg` for `scope`; its PKCE verifier and URL. */
async function request(cfg: client.Configuration, scope: string, extra: Record<string, string> = {}, redirect = CB): Promise<{ verifier: string; url: URL }> {
  const verifier = client.randomPKCECodeVerifier();
  const url = client.buildAuthorizationUrl(cfg, { redirect_uri: redirect, scope, state: 'st', code_challenge: await client.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256', ...extra });
  return { verifier, url };
}

/** Follows /authorize to the consent page; its ticket and HTML. */
async function consentPage(t: ExecutionContext, cookie: string, url: URL): Promise<{ ticket: string; html: string }> {
  const res = await browse(cookie, url);
  t.is(res.status, 302);
  const page = new URL(res.headers.get('location') ?? '');
  t.is(`${page.origin}${page.pathname}`, `${issuer}/app/consent`, 'the consent page');
  const shown = await browse(cookie, page);
  t.is(shown.status, 200);
  return { ticket: page.searchParams.get('ticket') ?? '', html: await shown.text() };
}

/** Posts the decision as the page's form does; where the browser ends up after /authorize. */
async function decide(t: ExecutionContext, cookie: string, ticket: string, decision: 'allow' | 'deny'): Promise<URL> {
  const posted = await browse(cookie, `${issuer}/app/consent`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', origin: issuer }, body: new URLSearchParams({ ticket, decision }) });
  t.is(posted.status, 303);
  const back = await browse(cookie, posted.headers.get('location') ?? '');
  t.is(back.status, 302);
  return new URL(back.headers.get('location') ?? '');
}

test('allow: the page lists the scopes in plain words; the code is redeemed; the grant is remembered for the same or fewer scopes', async (t) => {
  const { cookie, token } = await signedIn('allow@example.com');
  const first = await request(config, 'openid email');
  const { ticket, html } = await consentPage(t, cookie, first.url);
  t.regex(html, /<strong>Photo Printer<\/strong> wants to use your account/);
  t.regex(html, /See your email address/);
  t.regex(html, /Know who you are when you sign in/);
  t.notRegex(html, /See your phone number/);
  const landed = await decide(t, cookie, ticket, 'allow');
  const tokens = await client.authorizationCodeGrant(config, landed, { pkceCodeVerifier: first.verifier, expectedState: 'st' });
  t.truthy(tokens.access_token);
  t.is(tokens.claims()?.['email'], 'allow@example.com');

  // The same ticket is used once.
  const again = await browse(cookie, `${issuer}/authorize?client_id=third-party&consent_ticket=${encodeURIComponent(ticket)}`);
  t.is(again.status, 400);

  // Fewer scopes: no page.
  const fewer = await request(config, 'openid');
  const direct = await browse(cookie, fewer.url);
  t.true((direct.headers.get('location') ?? '').startsWith(`${CB}?`), 'no consent page for scopes already granted');
  t.truthy(new URL(direct.headers.get('location')!).searchParams.get('code'));
  // More scopes: asked again, for the whole set.
  const more = await request(config, 'openid email profile');
  const asked = await consentPage(t, cookie, more.url);
  t.regex(asked.html, /See your name, nickname and picture/);
  await decide(t, cookie, asked.ticket, 'allow');
  // prompt=consent asks even so; prompt=none answers consent_required when not granted.
  await consentPage(t, cookie, (await request(config, 'openid', { prompt: 'consent' })).url);
  const none = await browse(cookie, (await request(config, 'openid offline_access', { prompt: 'none' })).url);
  const noneAt = new URL(none.headers.get('location') ?? '');
  t.is(noneAt.searchParams.get('error'), 'consent_required');
  t.is(noneAt.searchParams.get('state'), 'st');

  // The account center's list, on every protocol; revoking asks again.
  for (const protocol of PROTOCOLS) {
    const listed = await server.call('consented_apps', {}, { protocol, headers: { authorization: `Bearer ${token}` } });
    t.is(listed.error, undefined, protocol);
    const apps = listed.body!['apps'] as { client_id: string; client_name: string; scopes: string[] }[];
    t.deepEqual(apps.map((a) => [a.client_id, a.client_name, a.scopes]), [['third-party', 'Photo Printer', ['email', 'openid', 'profile']]], protocol);
  }
  const [first_, ...rest] = PROTOCOLS;
  t.is((await server.call('revoke_consent', { client_id: 'third-party' }, { protocol: first_!, headers: { authorization: `Bearer ${token}` } })).error, undefined);
  for (const protocol of rest) {
    const r = await server.call('revoke_consent', { client_id: 'third-party' }, { protocol, headers: { authorization: `Bearer ${token}` } });
    t.is(r.error?.reason, 'consent_not_found', protocol);
  }
  await consentPage(t, cookie, (await request(config, 'openid')).url);
});

test('deny answers access_denied to the redirect URI with the state; nothing is remembered', async (t) => {
  const { cookie, token } = await signedIn('deny@example.com');
  const { ticket } = await consentPage(t, cookie, (await request(config, 'openid email')).url);
  const landed = await decide(t, cookie, ticket, 'deny');
  t.is(`${landed.origin}${landed.pathname}`, CB);
  t.is(landed.searchParams.get('error'), 'access_denied');
  t.is(landed.searchParams.get('state'), 'st');
  t.is(landed.searchParams.get('iss'), issuer);
  t.deepEqual((await server.call('consented_apps', {}, { protocol: 'rest', headers: { authorization: `Bearer ${token}` } })).body, { apps: [] });
});

test("a ticket is its session's own: another user's session sees the expired page and cannot decide it", async (t) => {
  const alice = await signedIn('alice-consent@example.com');
  const mallory = await signedIn('mallory-consent@example.com');
  const { ticket } = await consentPage(t, alice.cookie, (await request(config, 'openid')).url);
  const seen = await browse(mallory.cookie, `${issuer}/app/consent?ticket=${encodeURIComponent(ticket)}`);
  t.is(seen.status, 400);
  t.regex(await seen.text(), /expired or belongs to another session/);
  const posted = await browse(mallory.cookie, `${issuer}/app/consent`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', origin: issuer }, body: new URLSearchParams({ ticket, decision: 'allow' }) });
  t.is(posted.status, 400);
  // Not decided: the return to /authorize is refused; alice can still decide.
  t.is((await browse(alice.cookie, `${issuer}/authorize?client_id=third-party&consent_ticket=${encodeURIComponent(ticket)}`)).status, 400);
  t.is((await decide(t, alice.cookie, ticket, 'allow')).searchParams.has('code'), true);
});

test('a first-party client is never asked; the page speaks the language of ui_locales', async (t) => {
  const { cookie } = await signedIn('own@example.com');
  const r = await browse(cookie, (await request(firstParty, 'openid email', {}, 'https://own.example/cb')).url);
  t.true((r.headers.get('location') ?? '').startsWith('https://own.example/cb?code='));
  const { html } = await consentPage(t, cookie, (await request(config, 'openid email', { ui_locales: 'de' })).url);
  t.regex(html, /<html lang="de"/);
  t.regex(html, /möchte Ihr Konto verwenden/);
  t.regex(html, /Ihre E-Mail-Adresse sehen/);
});

test("deleting a user removes the user's remembered consents with it", async (t) => {
  const { cookie, token } = await signedIn('deleted-consent@example.com');
  await decide(t, cookie, (await consentPage(t, cookie, (await request(config, 'openid')).url)).ticket, 'allow');
  t.is(((await server.call('consented_apps', {}, { protocol: 'rest', headers: { authorization: `Bearer ${token}` } })).body!['apps'] as unknown[]).length, 1);
  const userId = String((await server.call('profile', {}, { protocol: 'rest', headers: { authorization: `Bearer ${token}` } })).body!['id']);
  t.is((await server.call('delete_user', { email: 'deleted-consent@example.com' }, { protocol: 'rest', headers: ADMIN })).error, undefined);
  const sequelize = openSequelize(server.database.url, { logging: false });
  try {
    const rows = await sequelize.query<{ n: number | string }>('SELECT COUNT(*) AS n FROM oauth_consents WHERE user_id = ?', { replacements: [userId], type: QueryTypes.SELECT });
    t.is(Number(rows[0]?.n ?? -1), 0);
  } finally {
    await sequelize.close();
  }
});
