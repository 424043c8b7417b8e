/**
 * Test helper for social login: providers on loopback and a browser-like
 * HTTP driver.
 *
 * - {@link startOidcProvider}: `oidc-provider` (a real OpenID provider) with
 *   one confidential client; its login and consent interactions finish at
 *   once for the account the test names (`op.account = 'alice'`).
 * - {@link startFakeProvider}: a small OAuth 2.0 / OpenID server on
 *   node:http: GitHub-like (`/user`, `/user/emails`), Discord-like, or an
 *   OpenID one signing its own ID tokens (Apple-like with `form_post` and a
 *   client-secret JWT it verifies), whose ID tokens a test can spoil
 *   (`idToken: { aud, iss, nonce }`).
 * - {@link CookieJar} and {@link drive}: fetch with manual redirects, cookies
 *   kept per host like a browser, auto-submitted form_post pages.
 */
import { createHash, randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, importJWK, jwtVerify, SignJWT, type JWK } from 'jose';
import Provider from 'oidc-provider';
import { startTestServerOnPort, type TestServer, type TestServerOptions } from './server.ts';

async function listen(server: Server): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

/** Profile claims of an account at a fake provider. */
export interface Account {
  email?: string;
  email_verified?: boolean;
  given_name?: string;
  family_name?: string;
  /** Sent when the login asks a scope whose claims (`scopeClaims`) name it. */
  groups?: string[];
}

// ------------------------------------------------------------------ oidc-provider

export interface OidcProvider {
  readonly issuer: string;
  /** The account the next interaction logs in. */
  account: string;
  readonly accounts: Map<string, Account>;
  close(): Promise<void>;
}

/** `oidc-provider` on loopback with client `clientId`/`clientSecret` allowed to redirect to `redirectUris`. */
export async function startOidcProvider(o: { clientId: string; clientSecret: string; redirectUris: string[]; scopeClaims?: Record<string, string[]> }): Promise<OidcProvider> {
  const accounts = new Map<string, Account>();
  let provider: Provider | undefined;
  const state = { account: 'alice' };
  const server = createServer((req, res) => {
    const p = provider;
    if (p === undefined) {
      res.statusCode = 503;
      res.end();
      return;
    }
    if (req.url?.startsWith('/interaction/')) {
      void (async () => {
        const details = await p.interactionDetails(req, res);
        const accountId = state.account;
        const grant = new p.Grant({ accountId, clientId: String(details.params['client_id']) });
        grant.addOIDCScope(String(details.params['scope'] ?? 'openid'));
        const grantId = await grant.save();
        await p.interactionFinished(req, res, { login: { accountId }, consent: { grantId } }, { mergeWithLastSubmission: false });
      })().catch((err: unknown) => {
        res.statusCode = 500;
        res.end(String(err));
      });
      return;
    }
    p.callback()(req, res);
  });
  const port = await listen(server);
  const issuer = `http://127.0.0.1:${port}`;
  const signing = await generateKeyPair('RS256', { extractable: true });
  provider = new Provider(issuer, {
    jwks: { keys: [{ ...(await exportJWK(signing.privateKey)), kid: 'op-1', alg: 'RS256', use: 'sig' }] },
    ttl: { AccessToken: 600, AuthorizationCode: 60, IdToken: 600, Interaction: 600, Grant: 600, Session: 600 },
    clients: [
      {
        client_id: o.clientId,
        client_secret: o.clientSecret,
        redirect_uris: o.redirectUris,
        grant_types: ['authorization_code'],
        response_types: ['code'],
        token_endpoint_auth_method: 'client_secret_post',
      },
    ],
    findAccount: async (_ctx: unknown, sub: string) => ({ accountId: sub, claims: async () => ({ sub, ...(accounts.get(sub) ?? {}) }) }),
    claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['given_name', 'family_name'], ...(o.scopeClaims ?? {}) },
    // ID tokens carry the claims (as Google's do), not only the userinfo endpoint.
    conformIdTokenClaims: false,
    features: { devInteractions: { enabled: false } },
    interactions: { url: (_ctx: unknown, interaction: { uid: string }) => `/interaction/${interaction.uid}` },
    cookies: { keys: [randomBytes(16).toString('hex')] },
    pkce: { required: () => false },
  });
  provider.on('server_error', () => {});
  return {
    issuer,
    get account() {
      return state.account;
    },
    set account(v: string) {
      state.account = v;
    },
    accounts,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

// ------------------------------------------------------------------ fake OAuth 2.0 / OpenID servers

/**
 * `github` and `discord` answer their APIs' profile shapes, `oidc` signs ID
 * tokens, `userinfo` answers `/user` with whatever JSON the test sets
 * (Facebook's Graph `/me`, LinkedIn's userinfo, X's `/2/users/me`).
 */
export type FakeKind = 'github' | 'discord' | 'oidc' | 'userinfo';

export interface FakeProvider {
  readonly url: string;
  /** The account the next login is. */
  account: Account & { id: string };
  /** GitHub: the /user/emails answer (default: the account's address, primary, verified per `email_verified`). */
  emails?: { email: string; primary: boolean; verified: boolean }[] | undefined;
  /** Spoils the next ID tokens (OpenID kind). */
  idToken: { aud?: string; iss?: string; nonce?: string; extra?: Record<string, unknown> };
  /** The Apple client-secret JWT must verify against this key (ES256), issued by this team. */
  appleSecretKey?: { publicJwk: JWK; teamId: string } | undefined;
  /** `userinfo` kind: the JSON `/user` answers. */
  userinfo?: Record<string, unknown> | undefined;
  /** Token requests seen (form fields). */
  readonly tokenRequests: URLSearchParams[];
  close(): Promise<void>;
}

/** The endpoints of a fake `github` provider, for `useEndpointsForTests('github', …)` (a `discord` one: without `emailsEndpoint`). */
export function githubEndpoints(fake: FakeProvider): { authorizationEndpoint: string; tokenEndpoint: string; userinfoEndpoint: string; emailsEndpoint: string } {
  return { authorizationEndpoint: `${fake.url}/authorize`, tokenEndpoint: `${fake.url}/token`, userinfoEndpoint: `${fake.url}/user`, emailsEndpoint: `${fake.url}/user/emails` };
}

/** A fake provider of `kind` on loopback accepting `clientId` and (unless Apple) `clientSecret`. */
export async function startFakeProvider(kind: FakeKind, o: { clientId: string; clientSecret: string }): Promise<FakeProvider> {
  const { publicKey, privateKey } = await generateKeyPair('RS256');
  const jwk = { ...(await exportJWK(publicKey)), kid: 'k1', alg: 'RS256', use: 'sig' };
  const codes = new Map<string, { redirect: string; challenge?: string; nonce?: string }>();
  const tokens = new Map<string, true>();
  const fake: FakeProvider = {
    url: '',
    account: { id: '1001', email: 'someone@example.com', email_verified: true },
    idToken: {},
    tokenRequests: [],
    close: async () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
  const json = (res: ServerResponse, status: number, body: unknown): void => {
    res.statusCode = status;
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify(body));
  };
  const bearer = (req: IncomingMessage): boolean => tokens.has(String(req.headers.authorization ?? '').replace(/^Bearer /, ''));
  const server = createServer((req, res) => {
    void (async () => {
      const url = new URL(req.url ?? '/', fake.url);
      if (url.pathname === '/authorize') {
        const q = url.searchParams;
        if (q.get('client_id') !== o.clientId) return json(res, 400, { error: 'invalid_client' });
        const code = randomBytes(16).toString('hex');
        codes.set(code, { redirect: q.get('redirect_uri') ?? '', ...(q.get('code_challenge') ? { challenge: q.get('code_challenge') ?? '' } : {}), ...(q.get('nonce') ? { nonce: q.get('nonce') ?? '' } : {}) });
        if (q.get('response_mode') === 'form_post') {
          const user = JSON.stringify({ name: { firstName: fake.account.given_name ?? 'Ann', lastName: fake.account.family_name ?? 'Apple' }, email: fake.account.email });
          const esc = (s: string) => s.replace(/[&<>"']/g, (ch) => `&#${ch.charCodeAt(0)};`);
          res.setHeader('content-type', 'text/html');
          res.end(
            `<html><body onload="document.forms[0].submit()"><form method="post" action="${esc(q.get('redirect_uri') ?? '')}">` +
              `<input type="hidden" name="code" value="${code}"><input type="hidden" name="state" value="${esc(q.get('state') ?? '')}"><input type="hidden" name="user" value="${esc(user)}"></form></body></html>`,
          );
          return;
        }
        const back = new URL(q.get('redirect_uri') ?? '');
        back.searchParams.set('code', code);
        back.searchParams.set('state', q.get('state') ?? '');
        res.statusCode = 302;
        res.setHeader('location', back.toString());
        res.end();
        return;
      }
      if (url.pathname === '/token' && req.method === 'POST') {
        const form = new URLSearchParams(await readBody(req));
        fake.tokenRequests.push(form);
        const basic = /^Basic (.+)$/.exec(String(req.headers.authorization ?? ''));
        const [id, secret] = basic ? Buffer.from(basic[1] ?? '', 'base64').toString().split(':').map(decodeURIComponent) : [form.get('client_id'), form.get('client_secret')];
        if (id !== o.clientId) return json(res, 401, { error: 'invalid_client' });
        if (fake.appleSecretKey !== undefined) {
          try {
            await jwtVerify(secret ?? '', await importJWK(fake.appleSecretKey.publicJwk, 'ES256'), { issuer: fake.appleSecretKey.teamId, subject: o.clientId, audience: fake.url });
          } catch {
            return json(res, 401, { error: 'invalid_client' });
          }
        } else if (secret !== o.clientSecret) return json(res, 401, { error: 'invalid_client' });
        const grant = codes.get(form.get('code') ?? '');
        codes.delete(form.get('code') ?? '');
        if (grant === undefined || grant.redirect !== form.get('redirect_uri')) return json(res, 400, { error: 'invalid_grant' });
        if (grant.challenge !== undefined && createHash('sha256').update(form.get('code_verifier') ?? '').digest('base64url') !== grant.challenge) return json(res, 400, { error: 'invalid_grant' });
        const access = randomBytes(16).toString('hex');
        tokens.set(access, true);
        const body: Record<string, unknown> = { access_token: access, token_type: 'bearer' };
        if (kind === 'oidc') {
          const a = fake.account;
          body['id_token'] = await new SignJWT({ email: a.email, email_verified: a.email_verified === undefined ? undefined : String(a.email_verified), nonce: fake.idToken.nonce ?? grant.nonce, ...fake.idToken.extra })
            .setProtectedHeader({ alg: 'RS256', kid: 'k1' })
            .setIssuer(fake.idToken.iss ?? fake.url)
            .setAudience(fake.idToken.aud ?? o.clientId)
            .setSubject(a.id)
            .setIssuedAt()
            .setExpirationTime('5m')
            .sign(privateKey);
        }
        return json(res, 200, body);
      }
      if (url.pathname === '/jwks') return json(res, 200, { keys: [jwk] });
      if (url.pathname === '/user') {
        if (!bearer(req)) return json(res, 401, { message: 'Bad credentials' });
        const a = fake.account;
        if (kind === 'userinfo') return json(res, 200, fake.userinfo ?? {});
        if (kind === 'github') return json(res, 200, { id: Number(a.id), login: 'octo', name: `${a.given_name ?? 'Octo'} ${a.family_name ?? 'Cat'}`, email: a.email ?? null, avatar_url: 'https://avatars.example/1' });
        return json(res, 200, { id: a.id, username: 'disco', global_name: a.given_name ?? 'Disco', email: a.email, verified: a.email_verified === true, avatar: null });
      }
      if (url.pathname === '/user/emails') {
        if (!bearer(req)) return json(res, 401, { message: 'Bad credentials' });
        const a = fake.account;
        return json(res, 200, fake.emails ?? (a.email ? [{ email: a.email, primary: true, verified: a.email_verified === true }] : []));
      }
      json(res, 404, { error: 'not_found' });
    })().catch((err: unknown) => json(res, 500, { error: String(err) }));
  });
  const port = await listen(server);
  (fake as { url: string }).url = `http://127.0.0.1:${port}`;
  return fake;
}

// ------------------------------------------------------------------ browser-like HTTP

/** Cookies per host name (ports share cookies, as in browsers). */
export class CookieJar {
  readonly #byHost = new Map<string, Map<string, string>>();

  store(url: URL, res: Response): void {
    for (const line of res.headers.getSetCookie()) {
      const [pair = '', ...attrs] = line.split(';');
      const eq = pair.indexOf('=');
      const name = pair.slice(0, eq).trim();
      const value = pair.slice(eq + 1).trim();
      const expired = attrs.some((a) => /^\s*max-age=0\s*$/i.test(a));
      const jar = this.#byHost.get(url.hostname) ?? new Map<string, string>();
      this.#byHost.set(url.hostname, jar);
      if (expired || value === '') jar.delete(name);
      else jar.set(name, value);
    }
  }

  get(url: URL | string, name: string): string | undefined {
    return this.#byHost.get(new URL(url).hostname)?.get(name);
  }

  set(url: URL | string, name: string, value: string): void {
    const host = new URL(url).hostname;
    const jar = this.#byHost.get(host) ?? new Map<string, string>();
    this.#byHost.set(host, jar);
    jar.set(name, value);
  }

  header(url: URL): string {
    return [...(this.#byHost.get(url.hostname) ?? new Map<string, string>())].map(([k, v]) => `${k}=${v}`).join('; ');
  }
}

/** One request with the jar's cookies; stores the answer's cookies. */
export async function request(jar: CookieJar, url: URL, init: RequestInit = {}): Promise<Response> {
  const headers = new Headers(init.headers);
  const cookie = jar.header(url);
  if (cookie) headers.set('cookie', cookie);
  const res = await fetch(url, { ...init, headers, redirect: 'manual' });
  jar.store(url, res);
  return res;
}

/** Where a driven flow stopped. */
export interface Landing {
  /** The URL the browser was last sent to that `stop` matched (not fetched). */
  url?: URL;
  /** The last answer when the flow stopped elsewhere (an error page). */
  response?: Response;
  /** Every callback URL passed through (for replays). */
  callbacks: { url: URL; init: RequestInit }[];
}

/**
 * Follows redirects (and auto-submitting form_post pages) from `start` like a
 * browser, until the next URL matches `stop` (returned, not fetched) or an
 * answer is neither a redirect nor a form post.
 */
export async function drive(jar: CookieJar, start: URL | string, stop: (url: URL) => boolean): Promise<Landing> {
  let url = new URL(start);
  let init: RequestInit = {};
  const callbacks: Landing['callbacks'] = [];
  for (let hop = 0; hop < 20; hop++) {
    if (stop(url)) return { url, callbacks };
    if (url.pathname.startsWith('/oauth_callback/')) callbacks.push({ url, init });
    const res = await request(jar, url, init);
    if (res.status >= 300 && res.status < 400) {
      url = new URL(res.headers.get('location') ?? '', url);
      init = {};
      continue;
    }
    const type = res.headers.get('content-type') ?? '';
    if (res.status === 200 && type.includes('text/html')) {
      const html = await res.text();
      const form = /<form method="post" action="([^"]+)">(.*?)<\/form>/s.exec(html);
      if (form) {
        const unescape = (s: string) => s.replace(/&#(\d+);/g, (_m, n: string) => String.fromCharCode(Number(n))).replace(/&amp;/g, '&').replace(/&quot;/g, '"');
        const fields = new URLSearchParams();
        for (const m of (form[2] ?? '').matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)) fields.set(unescape(m[1] ?? ''), unescape(m[2] ?? ''));
        url = new URL(unescape(form[1] ?? ''), url);
        init = { method: 'POST', body: fields.toString(), headers: { 'content-type': 'application/x-www-form-urlencoded' } };
        continue;
      }
      return { response: new Response(html, { status: res.status, headers: res.headers }), callbacks };
    }
    return { response: res, callbacks };
  }
  throw new Error('too many redirects');
}

// ------------------------------------------------------------------ the server on a known port

/** A free loopback port. */
/** The fields the server sent back to a landing URL: its query and its fragment (where tokens go). */
export function landingParams(url: URL | undefined): URLSearchParams | undefined {
  if (url === undefined) return undefined;
  const out = new URLSearchParams(url.search);
  for (const [k, v] of new URLSearchParams(url.hash.slice(1))) out.set(k, v);
  return out;
}

/**
 * The test server on a port known before it starts, so that `--url` (the
 * callback URLs registered at the providers) names it. `flags(base)` gives
 * the flags for the base URL; another process taking the port in between is
 * retried on a fresh one.
 */
export async function startOnKnownPort(flags: (base: string) => Record<string, string | number | boolean>, options: TestServerOptions = {}): Promise<{ server: TestServer; base: string }> {
  const server = await startTestServerOnPort((port) => {
    const base = `http://127.0.0.1:${port}`;
    return { url: base, ...flags(base) };
  }, options);
  return { server, base: server.httpUrl };
}
