/**
 * Linking a provider account to the signed-in user (`POST /oauth_link/<provider>`,
 * the account center's "Connect") and signing in by provider subject, over
 * plain HTTP with a cookie jar per browser, GitHub and Discord as fakes on
 * loopback:
 * - a linked provider account whose address differs from the account's signs
 *   in to that account after a sign-out, even once its address changed;
 * - a first sign-in by verified address records the identity, so the next
 *   one finds the account by subject whatever the address;
 * - a provider account another user holds is refused
 *   (`identity_owned_by_another_account`, described in the reader's
 *   language) and nothing changes;
 * - a link callback is refused unless the session that started it is still
 *   the browser's (signed out meanwhile, another user signed in meanwhile, or
 *   no session at all), and the link never opens a session nor ends one;
 * - after unlink_identity the provider account no longer reaches the account;
 * - an account linked before identities were recorded signs in by address
 *   and is recorded then.
 * Each on SQLite and on DynamoDB (dynalite).
 */
import anyTest, { type ExecutionContext } from 'ava';
import { socialLoginOf } from '../../../cmd/index.ts';
import type { MainBackend } from '../../helpers/main_databases.ts';
import { TEST_ADMIN_SECRET, type TestServer } from '../../helpers/server.ts';
import { CookieJar, drive, type FakeProvider, githubEndpoints, type Landing, landingParams, request, startFakeProvider, startOnKnownPort } from '../../helpers/social.ts';

// Serial: the fakes' accounts are shared by the tests of one server.
const test = anyTest.serial;
const PASSWORD = 'correct horse battery staple';
const ADMIN = { protocol: 'rest' as const, headers: { 'x-service-admin-secret': TEST_ADMIN_SECRET } };

const BACKENDS: readonly MainBackend[] = ['sqlite', 'dynamodb'];
let github: FakeProvider;
let discord: FakeProvider;
const servers = new Map<MainBackend, { server: TestServer; base: string }>();
// The server of the running test (the tests run one at a time).
let server: TestServer;
let base = '';
let ids = 5000;

test.before(async () => {
  github = await startFakeProvider('github', { clientId: 'gh', clientSecret: 'gh-secret' });
  discord = await startFakeProvider('discord', { clientId: 'dc', clientSecret: 'dc-secret' });
  for (const backend of BACKENDS) {
    const started = await startOnKnownPort(
      () => ({
        'enable-email-verification': false,
        'app-cookie-secure': false,
        'github-client-id': 'gh',
        'github-client-secret': 'gh-secret',
        'discord-client-id': 'dc',
        'discord-client-secret': 'dc-secret',
      }),
      { backend },
    );
    servers.set(backend, started);
    const social = socialLoginOf(started.server.server.services);
    social?.useEndpointsForTests('github', githubEndpoints(github));
    social?.useEndpointsForTests('discord', { authorizationEndpoint: `${discord.url}/authorize`, tokenEndpoint: `${discord.url}/token`, userinfoEndpoint: `${discord.url}/user` });
  }
});
test.after.always(async () => {
  for (const s of servers.values()) await s.server.close();
  await github?.close();
  await discord?.close();
});

/** A GitHub account id not used before (GitHub's ids are numbers). */
const githubId = (): string => String(++ids);
const cases: [title: string, run: (t: ExecutionContext) => Promise<void>][] = [];

let n = 0;
const fresh = (label: string): string => `${label}-${++n}@example.com`;
const atDone = (u: URL): boolean => u.origin === base && u.pathname === '/done';

/** A password account signed in in a new browser (its jar holds the session cookie). */
async function passwordUser(t: ExecutionContext, email: string): Promise<{ jar: CookieJar; id: string }> {
  t.is((await server.call('signup', { email, password: PASSWORD }, { protocol: 'rest' })).status, 200);
  const jar = new CookieJar();
  const res = await request(jar, new URL(`${base}/v1/login`), { method: 'POST', headers: { 'content-type': 'application/json', origin: base }, body: JSON.stringify({ email, password: PASSWORD }) });
  t.is(res.status, 200);
  const me = await profileOf(jar);
  t.truthy(me?.id);
  return { jar, id: me!.id };
}

async function profileOf(jar: CookieJar): Promise<{ id: string; email: string; signup_methods: string } | undefined> {
  const cookie = jar.get(base, 'cookie_session');
  if (cookie === undefined) return undefined;
  const r = await server.call('profile', {}, { protocol: 'rest', cookies: { cookie_session: cookie } });
  return r.error === undefined ? (r.body as { id: string; email: string; signup_methods: string }) : undefined;
}

async function linkedOf(jar: CookieJar): Promise<{ provider: string; email?: string; linked_at?: number }[]> {
  const r = await server.call('linked_identities', {}, { protocol: 'rest', cookies: { cookie_session: jar.get(base, 'cookie_session') ?? '' } });
  return (r.body?.['identities'] ?? []) as { provider: string; email?: string }[];
}

/** Follows the flow, and the callback's page that sends the browser on from our own origin when it holds one. */
async function follow(jar: CookieJar, start: URL | string, resumed: { pages: number }): Promise<Landing> {
  let landing = await drive(jar, start, atDone);
  for (let hop = 0; hop < 2 && landing.response !== undefined; hop++) {
    const html = await landing.response.text();
    const next = /http-equiv="refresh" content="0;url=([^"]+)"/.exec(html)?.[1];
    if (next === undefined) break;
    resumed.pages++;
    landing = await drive(jar, new URL(next.replace(/&#(\d+);/g, (_m, c: string) => String.fromCharCode(Number(c))), base), atDone);
  }
  return landing;
}

/** "Connect <provider>" in the browser of `jar`: the start, the provider, the callback. */
async function connect(t: ExecutionContext, jar: CookieJar, provider: string, resumed = { pages: 0 }): Promise<URLSearchParams | undefined> {
  const started = await startLink(jar, provider);
  t.is(started.status, 200);
  const location = (await started.json()) as { location?: string };
  t.truthy(location.location);
  return landingParams((await follow(jar, location.location!, resumed)).url);
}

function startLink(jar: CookieJar, provider: string): Promise<Response> {
  return request(jar, new URL(`${base}/oauth_link/${provider}`), {
    method: 'POST',
    headers: { 'content-type': 'application/json', origin: base },
    body: JSON.stringify({ redirect_uri: `${base}/done` }),
  });
}

/** A sign-in with `provider` in a new browser; the user it reached, or the refusal. */
async function providerSignIn(provider: string): Promise<{ jar: CookieJar; params: URLSearchParams | undefined; id: string | undefined }> {
  const jar = new CookieJar();
  const landing = await drive(jar, `${base}/oauth_login/${provider}?redirect_uri=${encodeURIComponent(`${base}/done`)}`, atDone);
  return { jar, params: landingParams(landing.url), id: (await profileOf(jar))?.id };
}

async function auditRows(action: string, userId: string): Promise<{ metadata: string }[]> {
  const r = await server.call('audit_logs', { action, actor_id: userId, pagination: { limit: 20, page: 1 } }, ADMIN);
  return (r.body?.['audit_logs'] ?? []) as { metadata: string }[];
}

cases.push(['a second provider whose address differs is connected; after signing out it signs in to the same account, even once its address changed', async (t) => {
  const alice = await passwordUser(t, fresh('alice'));
  const before = alice.jar.get(base, 'cookie_session');
  const aliceGithub = githubId();
  github.account = { id: aliceGithub, email: 'alice.codes@elsewhere.example', email_verified: true };
  const params = await connect(t, alice.jar, 'github');
  t.is(params?.get('linked'), 'github');
  t.is(params?.get('error'), null);
  t.is(params?.get('access_token'), null, 'a link opens no session');
  // The same session goes on: not replaced, not ended.
  t.is(alice.jar.get(base, 'cookie_session'), before);
  t.is((await profileOf(alice.jar))?.id, alice.id);
  t.is((await profileOf(alice.jar))?.signup_methods, 'basic_auth,github');
  const linked = await linkedOf(alice.jar);
  t.is(linked.length, 1);
  t.is(linked[0]?.provider, 'github');
  t.is(linked[0]?.email, 'alice.codes@elsewhere.example');
  t.is(typeof linked[0]?.linked_at, 'number');
  t.is((await auditRows('user.identity_linked', alice.id)).length, 1);
  t.regex((await auditRows('user.identity_linked', alice.id))[0]?.metadata ?? '', /github/);

  // Signed out, the GitHub account signs in to Alice's account, by its subject.
  const out = await request(alice.jar, new URL(`${base}/v1/logout`), { method: 'POST', headers: { 'content-type': 'application/json', origin: base }, body: '{}' });
  t.is(out.status, 200);
  t.is(await profileOf(alice.jar), undefined);
  const viaGithub = await providerSignIn('github');
  t.truthy(viaGithub.params?.get('access_token'));
  t.is(viaGithub.id, alice.id);
  // Its address at GitHub changed (and is no longer verified): the subject still finds the account.
  github.account = { id: aliceGithub, email: 'alice.renamed@elsewhere.example', email_verified: false };
  const renamed = await providerSignIn('github');
  t.truthy(renamed.params?.get('access_token'));
  t.is(renamed.id, alice.id);
  t.is((await linkedOf(renamed.jar))[0]?.email, 'alice.renamed@elsewhere.example', 'the address seen is brought up to date');
}]);

cases.push(['a first sign-in by verified address records the identity: the next one finds the account by subject whatever the address', async (t) => {
  const email = fresh('carol');
  const carol = await passwordUser(t, email);
  const carolDiscord = `dc-carol-${++ids}`;
  discord.account = { id: carolDiscord, email, email_verified: true };
  const first = await providerSignIn('discord');
  t.is(first.id, carol.id);
  t.is((await linkedOf(carol.jar))[0]?.email, email);
  discord.account = { id: carolDiscord, email: 'carol@another.example', email_verified: true };
  const second = await providerSignIn('discord');
  t.is(second.id, carol.id, 'not a new account for the new address');
  // Another Discord account with Carol's verified address still reaches her account by address, as before.
  discord.account = { id: `${carolDiscord}-2`, email, email_verified: true };
  t.is((await providerSignIn('discord')).id, carol.id);
}]);

cases.push(["a provider account another user holds is refused and nothing changes", async (t) => {
  // Bob's account was made by GitHub.
  const bobEmail = fresh('bob');
  github.account = { id: githubId(), email: bobEmail, email_verified: true };
  const bob = await providerSignIn('github');
  t.truthy(bob.id);
  const alice = await passwordUser(t, fresh('alice'));
  const before = alice.jar.get(base, 'cookie_session');
  // Alice reads the pages in German (the language menu's cookie): the description is German, the codes are not.
  alice.jar.set(base, 'latchkey_lang', 'de');
  const params = await connect(t, alice.jar, 'github');
  t.is(params?.get('error'), 'access_denied');
  t.is(params?.get('error_reason'), 'identity_owned_by_another_account');
  t.is(params?.get('error_description'), 'Dieses Anbieterkonto ist bereits mit einem anderen Konto verbunden; trennen Sie es zuerst dort');
  t.is(params?.get('linked'), null);
  // Nothing changed: Alice has no GitHub, her session goes on, GitHub still signs in to Bob.
  t.deepEqual(await linkedOf(alice.jar), []);
  t.is((await profileOf(alice.jar))?.signup_methods, 'basic_auth');
  t.is(alice.jar.get(base, 'cookie_session'), before);
  t.is((await linkedOf(bob.jar))[0]?.provider, 'github');
  t.is((await providerSignIn('github')).id, bob.id);
  t.is((await auditRows('user.identity_linked', alice.id)).length, 0);
}]);

cases.push(['a link callback is refused unless the session that started it is still the browser’s', async (t) => {
  // Signed out between the start and the callback.
  const alice = await passwordUser(t, fresh('alice'));
  const started = await startLink(alice.jar, 'github');
  const location = ((await started.json()) as { location: string }).location;
  await request(alice.jar, new URL(`${base}/v1/logout`), { method: 'POST', headers: { 'content-type': 'application/json', origin: base }, body: '{}' });
  github.account = { id: githubId(), email: 'late@elsewhere.example', email_verified: true };
  const resumed = { pages: 0 };
  const refused = landingParams((await follow(alice.jar, location, resumed)).url);
  t.is(resumed.pages, 1, 'without its session cookie the callback sends the browser on once, from its own origin');
  t.is(refused?.get('error_reason'), 'link_session_mismatch');
  t.is(refused?.get('access_token'), null, 'nobody is signed in');
  t.is(await profileOf(alice.jar), undefined);
  const again = await passwordUser(t, fresh('alice'));
  t.deepEqual(await linkedOf(again.jar), []);

  // Another user signed in to the same browser between the start and the callback.
  const dave = await passwordUser(t, fresh('dave'));
  const daveStart = ((await (await startLink(dave.jar, 'github')).json()) as { location: string }).location;
  const eve = fresh('eve');
  t.is((await server.call('signup', { email: eve, password: PASSWORD }, { protocol: 'rest' })).status, 200);
  await request(dave.jar, new URL(`${base}/v1/login`), { method: 'POST', headers: { 'content-type': 'application/json', origin: base }, body: JSON.stringify({ email: eve, password: PASSWORD }) });
  const eveId = (await profileOf(dave.jar))?.id;
  t.truthy(eveId);
  t.not(eveId, dave.id);
  github.account = { id: githubId(), email: 'dave@elsewhere.example', email_verified: true };
  const crossed = landingParams((await follow(dave.jar, daveStart, { pages: 0 })).url);
  t.is(crossed?.get('error_reason'), 'link_session_mismatch');
  t.deepEqual(await linkedOf(dave.jar), [], 'nothing linked to the user signed in now');
  t.is((await profileOf(dave.jar))?.id, eveId, 'and that user stays signed in');

  // The callback in a browser without the state cookie (another browser): the state is refused outright.
  const frank = await passwordUser(t, fresh('frank'));
  const frankStart = ((await (await startLink(frank.jar, 'github')).json()) as { location: string }).location;
  const elsewhere = new CookieJar();
  elsewhere.set(base, 'cookie_session', frank.jar.get(base, 'cookie_session') ?? '');
  const stranger = await follow(elsewhere, frankStart, { pages: 0 });
  t.is(stranger.response?.status, 400);
  t.deepEqual(await linkedOf(frank.jar), []);

  // No session at all: the link cannot start.
  const anonymous = await startLink(new CookieJar(), 'github');
  t.is(anonymous.status, 401);
  // A cross-site start is refused by the CSRF origin rule.
  const crossSite = await request(frank.jar, new URL(`${base}/oauth_link/github`), {
    method: 'POST',
    headers: { 'content-type': 'application/json', origin: 'https://attacker.example' },
    body: JSON.stringify({ redirect_uri: `${base}/done` }),
  });
  t.is(crossSite.status, 403);
}]);

cases.push(['after unlink the provider account no longer reaches the account by subject', async (t) => {
  const alice = await passwordUser(t, fresh('alice'));
  github.account = { id: githubId(), email: 'unlinked.alice@elsewhere.example', email_verified: true };
  t.is((await connect(t, alice.jar, 'github'))?.get('linked'), 'github');
  t.is((await providerSignIn('github')).id, alice.id);
  const r = await server.call('unlink_identity', { provider: 'github' }, { protocol: 'rest', cookies: { cookie_session: alice.jar.get(base, 'cookie_session') ?? '' } });
  t.is(r.error, undefined);
  t.deepEqual(await linkedOf(alice.jar), []);
  t.is((await auditRows('user.identity_unlinked', alice.id)).length, 1);
  // The GitHub account signs up afresh by its own verified address: another account.
  const after = await providerSignIn('github');
  t.truthy(after.id);
  t.not(after.id, alice.id);
  t.is((await profileOf(after.jar))?.email, 'unlinked.alice@elsewhere.example');
}]);

cases.push(['an account linked before identities were recorded signs in by its verified address and is recorded then', async (t) => {
  const email = fresh('legacy');
  const legacy = await passwordUser(t, email);
  const id = githubId();
  github.account = { id, email, email_verified: true };
  t.is((await providerSignIn('github')).id, legacy.id);
  // As before identities were recorded: GitHub in signup_methods, no identity.
  await server.server.services.auth!.identities.unlink(legacy.id, 'github');
  t.deepEqual(await linkedOf(legacy.jar), [{ provider: 'github', display_name: 'GitHub', email: null, linked_at: null }], 'listed, without an address or a time');
  t.is((await providerSignIn('github')).id, legacy.id);
  t.is((await linkedOf(legacy.jar))[0]?.email, email, 'recorded by that sign-in');
  github.account = { id, email: 'legacy@renamed.example', email_verified: true };
  t.is((await providerSignIn('github')).id, legacy.id, 'and found by subject from then on');
}]);

for (const backend of BACKENDS) {
  for (const [title, run] of cases) {
    test(`${title} (${backend})`, async (t) => {
      ({ server, base } = servers.get(backend)!);
      await run(t);
    });
  }
}
