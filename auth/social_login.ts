/**
 * Social login: the relying-party side of OAuth 2.0 / OpenID Connect towards
 * the providers of {@link socialProviderTable} and any OpenID provider by
 * discovery.
 *
 * `begin` checks the request (redirect URI through the server's one redirect
 * rule, roles, scope), keeps what the callback needs under an opaque,
 * single-use state handle in the memory store (10 minutes), and returns the
 * provider's authorization URL (with an S256 PKCE challenge where the
 * provider supports one, and a `nonce` for OpenID providers). The wire layer
 * binds the handle to the browser in a short-lived HttpOnly cookie.
 *
 * `finish` takes the handle back exactly once (compared with the cookie in
 * constant time, then consumed atomically so a replay fails), exchanges the
 * code, verifies the ID token against the provider's JWKS (signature,
 * issuer, audience, expiry, nonce), reads the profile from the provider's API
 * where there is no ID token, and resolves the user:
 *
 * - a provider account already linked (by provider and subject) signs in
 *   its owner; a link started from the account center attaches it to the
 *   signed-in user instead (auth/social_link.ts);
 * - an existing user is linked only through an email address the provider
 *   attests as verified; otherwise the login is refused. A password account
 *   whose own address was never verified is not linked (security matrix B8):
 *   it may be someone's squat, so it is removed (password, sessions, second
 *   factor) and the provider's account signs up afresh, as the reference
 *   replaces it. An unverified account without a password (an invitation, a
 *   pending magic link) is linked and its address marked verified;
 * - a new user is created as a password sign-up would be (sign-up enabled,
 *   default roles, protected roles refused), its address verified, and its
 *   `user.signup` event written with it (in its transaction on SQL, right
 *   after it on DynamoDB: security matrix E3);
 * - revoked and deactivated users are refused; MFA applies as to a password
 *   login (the challenge is opened instead of a session).
 *
 * Priority 1 of the conventions decides every doubt here: anything the
 * provider does not prove (a mismatched state, an ID token for another
 * audience, an unverified address) refuses the login.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { JWTVerifyGetKey } from 'jose';
import { jose } from './jose.ts';
import { LatchkeyError } from '../engine/errors.ts';
import type { AuthService } from './auth_service.ts';
import type { MainDatabase } from './main_database.ts';
import type { MemoryStore } from './memory_store.ts';
import type { AuthResult } from './public_user.ts';
import { emailKey, type UserFields, type UserRecord } from './user_store_types.ts';
import { signupEventSteps, type SignupRecorder } from './signup_recorder.ts';
import { providerFailed, providerJson, providerJsonAny } from './provider_http.ts';
import { attachIdentity, ownerBySubject, recordIdentity, withMethod, type LinkIntent } from './social_link.ts';
import {
  oidcRowFromDiscovery,
  socialProviderTable,
  type ProviderEndpoints,
  type SocialLoginProvider,
  type SocialProfile,
  type SocialProviderRow,
} from './social_providers.ts';

/** How long a started login may take before its state expires (seconds). */
export const SOCIAL_STATE_TTL_SECONDS = 600;

/** The credentials of one configured provider. */
export interface SocialClient {
  clientId: string;
  clientSecret: string;
  /** Scopes replacing the provider's defaults (`--<provider>-scopes`). */
  scopes?: readonly string[] | undefined;
}

export interface SocialLoginOptions {
  auth: AuthService;
  store: MemoryStore;
  /** The main database the identity service stores users in (a new user's sign-up event commits with it there). */
  database: MainDatabase;
  /** The server's public base URL; callbacks are `<base>/oauth_callback/<provider>`. */
  publicUrl: string;
  /** The configured providers (only these are served). */
  clients: Partial<Record<SocialLoginProvider, SocialClient>>;
  /** `--microsoft-tenant-id`. */
  microsoftTenantId?: string | undefined;
  /** Apple: when the client secret is a PEM private key, the client-secret JWT is signed with it (`--apple-team-id`, `--apple-key-id`). */
  appleTeamId?: string | undefined;
  appleKeyId?: string | undefined;
  /** The generic OpenID provider: issuer URL (discovered) and the name shown for it. */
  oidc?: { issuer: string; displayName: string } | undefined;
  /** The server's redirect rule (`--allowed-origins`); throws `invalid_argument` `invalid_redirect_uri`. */
  checkRedirectUri: (uri: string) => URL;
  /** Where the browser goes when the login request names no redirect_uri. */
  defaultRedirectUri: string;
  /** Milliseconds since the epoch. */
  now: () => number;
}

/** What `begin` returns: the provider URL and the state handle the wire layer binds to the browser. */
export interface SocialLoginStart {
  location: string;
  state: string;
}

/** What `finish` returns once the state is proven: where to send the browser, and the login's outcome. */
export interface SocialLoginFinish {
  provider: SocialLoginProvider;
  redirectUri: string;
  /** The client's own `state` of the login request, echoed to it. */
  clientState: string | undefined;
  /** The session (or MFA challenge) opened; absent when `error` is set. */
  result?: AuthResult;
  user?: UserRecord;
  /** True when this login created the user. */
  created?: boolean;
  /** True when an unverified account with this address was taken over. */
  replacedUnverified?: boolean;
  /** Set for a link (false until it attached the provider account to `user`); a link opens no session. */
  linked?: boolean;
  error?: LatchkeyError;
}

interface StateRecord {
  provider: SocialLoginProvider;
  redirect_uri: string;
  client_state?: string;
  roles?: string[];
  scope?: string[];
  verifier?: string;
  nonce?: string;
  link?: LinkIntent;
}

const STATE_KEY = (handle: string): string => `social_state:${createHash('sha256').update(handle).digest('base64url')}`;
const ID_TOKEN_ALGORITHMS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA'];

const notConfigured = (): never => {
  throw new LatchkeyError('not_found', 'provider is not configured', { reason: 'provider_not_configured' });
};
const invalidState = (): LatchkeyError =>
  new LatchkeyError('invalid_argument', 'invalid or expired login state; start the login again', { reason: 'invalid_state' });

function splitList(v: unknown): string[] {
  const parts = (Array.isArray(v) ? v : [v]).filter((x): x is string => typeof x === 'string');
  return [...new Set(parts.flatMap((x) => x.split(/[\s,]+/)).filter((x) => x.length > 0))];
}

const clip = (v: string | undefined, max: number): string | null => (v === undefined ? null : [...v].slice(0, max).join(''));

const single = (v: unknown): string | undefined => (typeof v === 'string' && v.length > 0 ? v : undefined);

/** The social login flows. One per process, built by the wire layer from the flags. */
export class SocialLogin {
  readonly #o: SocialLoginOptions;
  readonly #rows: Map<SocialLoginProvider, SocialProviderRow>;
  readonly #jwks = new Map<string, JWTVerifyGetKey>();
  #discovered: Promise<SocialProviderRow> | undefined;

  constructor(options: SocialLoginOptions) {
    this.#o = options;
    const table = socialProviderTable({ microsoftTenantId: options.microsoftTenantId });
    this.#rows = new Map(Object.values(table).map((r) => [r.name, r]));
  }

  /** The providers that are configured, in table order. */
  get providers(): SocialLoginProvider[] {
    return [...this.#rows.keys(), 'oidc' as const].filter((p) => this.#o.clients[p] !== undefined && (p !== 'oidc' || this.#o.oidc !== undefined));
  }

  /**
   * Points a provider's endpoints elsewhere. For tests only (fake providers on
   * loopback); there is no flag for it.
   */
  useEndpointsForTests(provider: Exclude<SocialLoginProvider, 'oidc'>, endpoints: Partial<ProviderEndpoints>): void {
    const row = this.#rows.get(provider);
    if (row === undefined) throw new Error(`unknown provider ${provider}`);
    this.#rows.set(provider, { ...row, ...endpoints });
    this.#jwks.clear();
  }

  /** The callback URL to register at the provider. */
  callbackUrl(provider: SocialLoginProvider): string {
    return `${this.#o.publicUrl}/oauth_callback/${provider}`;
  }

  async #row(provider: SocialLoginProvider): Promise<SocialProviderRow> {
    if (provider === 'oidc') {
      const oidc = this.#o.oidc;
      if (oidc === undefined) return notConfigured();
      this.#discovered ??= this.#discover(oidc.issuer, oidc.displayName);
      try {
        return await this.#discovered;
      } catch (err) {
        // A failed discovery is retried by the next login rather than cached.
        this.#discovered = undefined;
        throw err;
      }
    }
    const row = this.#rows.get(provider);
    return row ?? notConfigured();
  }

  async #discover(issuer: string, displayName: string): Promise<SocialProviderRow> {
    const base = issuer.replace(/\/+$/, '');
    const doc = await providerJson(displayName, `${base}/.well-known/openid-configuration`, { headers: { accept: 'application/json' } });
    // OpenID Connect Discovery §4.3: the document must name the issuer it was fetched for.
    if (doc['issuer'] !== issuer && doc['issuer'] !== base) throw providerFailed(displayName, 'its discovery document names another issuer');
    try {
      return oidcRowFromDiscovery(doc, displayName);
    } catch (err) {
      throw providerFailed(displayName, 'its discovery document is incomplete', err);
    }
  }

  #client(provider: SocialLoginProvider): SocialClient {
    return this.#o.clients[provider] ?? notConfigured();
  }

  /**
   * Starts a login: checks `redirect_uri` (default: the login page), `roles`
   * (comma-separated; each within `--roles` or `--protected-roles`) and
   * `scope` (space- or comma-separated token scopes), stores the state and
   * returns the provider's authorization URL. Throws `invalid_argument`
   * (`invalid_redirect_uri`, `invalid_roles`) or `not_found`. With `link`,
   * the callback links the provider account to that session's user instead.
   */
  async begin(provider: SocialLoginProvider, query: Readonly<Record<string, unknown>>, link?: LinkIntent): Promise<SocialLoginStart> {
    const client = this.#client(provider);
    const row = await this.#row(provider);
    const redirectUri = this.#o.checkRedirectUri(single(query['redirect_uri']) ?? this.#o.defaultRedirectUri).toString();
    const o = this.#o.auth.options;
    const roles = splitList(query['roles']);
    for (const r of roles) {
      if (!o.roles.includes(r) && !o.protectedRoles.includes(r)) throw new LatchkeyError('invalid_argument', `invalid role ${r}`, { reason: 'invalid_roles' });
    }
    const scope = splitList(query['scope']);
    const clientState = single(query['state']);
    if (clientState !== undefined && clientState.length > 1024) throw new LatchkeyError('invalid_argument', 'state is too long', { reason: 'invalid_field', details: { field: 'state' } });
    const handle = randomBytes(32).toString('base64url');
    const record: StateRecord = { provider, redirect_uri: redirectUri, ...(link === undefined ? {} : { link: { sid: link.sid, user_id: link.user_id } }) };
    if (clientState !== undefined) record.client_state = clientState;
    if (roles.length > 0) record.roles = roles;
    if (scope.length > 0) record.scope = scope;
    const url = new URL(row.authorizationEndpoint);
    const params = url.searchParams;
    params.set('response_type', 'code');
    params.set('client_id', client.clientId);
    params.set('redirect_uri', this.callbackUrl(provider));
    const scopes = client.scopes !== undefined && client.scopes.length > 0 ? client.scopes : row.defaultScopes;
    params.set('scope', scopes.join(row.scopeSeparator));
    params.set('state', handle);
    if (row.pkce) {
      record.verifier = randomBytes(32).toString('base64url');
      params.set('code_challenge', createHash('sha256').update(record.verifier).digest('base64url'));
      params.set('code_challenge_method', 'S256');
    }
    if (row.nonce) {
      record.nonce = randomBytes(24).toString('base64url');
      params.set('nonce', record.nonce);
    }
    if (row.responseMode !== undefined) params.set('response_mode', row.responseMode);
    for (const [k, v] of Object.entries(row.authorizeParams ?? {})) params.set(k, v);
    await this.#o.store.set(STATE_KEY(handle), JSON.stringify(record), SOCIAL_STATE_TTL_SECONDS);
    return { location: url.toString(), state: handle };
  }

  /**
   * True when `state` names a started link that is still pending (read, not
   * used up): its callback needs the browser's session cookie, which a
   * `SameSite=Strict` cookie withholds from the provider's cross-site
   * redirect until a page of our own origin sends the browser on.
   */
  async isLink(state: unknown): Promise<boolean> {
    const handle = single(state);
    const raw = handle === undefined || handle.length > 256 ? undefined : await this.#o.store.get(STATE_KEY(handle));
    return raw !== undefined && (JSON.parse(raw) as StateRecord).link !== undefined;
  }

  /**
   * Finishes a login from the provider's callback. Throws `invalid_argument`
   * (`invalid_state`) when the state is missing, differs from the browser's
   * cookie, is unknown, expired, already used or belongs to another
   * provider: the browser cannot be sent anywhere then. Every later failure
   * comes back as `error` with the client's redirect URI: the provider's own
   * refusal or a failed exchange or verification (`unauthenticated`
   * `social_login_failed`), an unverified address (`permission_denied`
   * `unverified_provider_email`), sign-up disabled, a revoked or deactivated
   * user, roles not held.
   *
   * `signupEvent` writes the `user.signup` event of a user this login
   * creates: on SQL as the last step of the transaction that stores the user
   * (a failure there stores no user and fails the login), on DynamoDB right
   * after. It is not called for an existing user.
   */
  async finish(
    provider: SocialLoginProvider,
    params: Readonly<Record<string, unknown>>,
    browserState: string | undefined,
    presentedSession: string | undefined,
    signupEvent?: SignupRecorder,
  ): Promise<SocialLoginFinish> {
    const state = single(params['state']);
    if (state === undefined || browserState === undefined) throw invalidState();
    const a = Buffer.from(state);
    const b = Buffer.from(browserState);
    if (a.length !== b.length || !timingSafeEqual(a, b)) throw invalidState();
    const key = STATE_KEY(state);
    const raw = await this.#o.store.get(key);
    // Single use: of concurrent callbacks with one state only the one whose delete removed it goes on.
    if (raw === undefined || (await this.#o.store.del(key)) !== 1) throw invalidState();
    const record = JSON.parse(raw) as StateRecord;
    if (record.provider !== provider) throw invalidState();
    const out: SocialLoginFinish = { provider, redirectUri: record.redirect_uri, clientState: record.client_state, ...(record.link === undefined ? {} : { linked: false }) };
    try {
      const row = await this.#row(provider);
      const providerError = single(params['error']);
      if (providerError !== undefined) {
        throw new LatchkeyError('permission_denied', `${row.displayName} did not authorize the login (${providerError.slice(0, 64)})`, { reason: 'social_login_denied' });
      }
      const code = single(params['code']);
      if (code === undefined) throw providerFailed(row.displayName, 'no authorization code');
      const profile = await this.#profile(row, record, code, params);
      if (record.link !== undefined) {
        out.user = await attachIdentity(this.#o.auth, record.link, provider, profile, presentedSession);
        out.linked = true;
        return out;
      }
      const { user, created, replaced } = await this.#resolveUser(row, profile, record.roles, signupEvent);
      out.user = user;
      out.created = created;
      out.replacedUnverified = replaced;
      out.result = await this.#open(row, user, record, presentedSession);
    } catch (err) {
      if (!(err instanceof LatchkeyError) || err.code === 'internal') {
        // Unexpected: the cause stays server-side (logged by the wire layer).
        out.error = new LatchkeyError('internal', 'login failed', { reason: 'social_login_failed', cause: err });
      } else out.error = err;
    }
    return out;
  }

  // ---------------------------------------------------------------- provider calls

  async #clientSecret(row: SocialProviderRow, client: SocialClient): Promise<string> {
    if (row.name !== 'apple' || !client.clientSecret.includes('PRIVATE KEY')) return client.clientSecret;
    // Sign in with Apple: the client secret is a short-lived ES256 JWT signed with the developer key
    // (https://developer.apple.com/documentation/accountorganizationaldatasharing/creating-a-client-secret).
    const key = await jose().importPKCS8(client.clientSecret.replace(/\\n/g, '\n'), 'ES256');
    const now = Math.floor(this.#o.now() / 1000);
    return new (jose().SignJWT)({})
      .setProtectedHeader({ alg: 'ES256', ...(this.#o.appleKeyId ? { kid: this.#o.appleKeyId } : {}) })
      .setIssuer(this.#o.appleTeamId ?? '')
      .setSubject(client.clientId)
      .setAudience(row.issuer ?? 'https://appleid.apple.com')
      .setIssuedAt(now)
      .setExpirationTime(now + 300)
      .sign(key);
  }

  async #profile(row: SocialProviderRow, record: StateRecord, code: string, params: Readonly<Record<string, unknown>>): Promise<SocialProfile> {
    const client = this.#client(row.name);
    const form = new URLSearchParams({ grant_type: 'authorization_code', code, redirect_uri: this.callbackUrl(row.name) });
    if (record.verifier !== undefined) form.set('code_verifier', record.verifier);
    const headers: Record<string, string> = { accept: 'application/json', 'content-type': 'application/x-www-form-urlencoded' };
    const secret = await this.#clientSecret(row, client);
    if (row.tokenAuth === 'client_secret_basic') {
      // RFC 6749 §2.3.1: both parts form-encoded before Basic.
      const enc = (s: string) => encodeURIComponent(s).replace(/%20/g, '+');
      headers['authorization'] = `Basic ${Buffer.from(`${enc(client.clientId)}:${enc(secret)}`).toString('base64')}`;
      form.set('client_id', client.clientId);
    } else {
      form.set('client_id', client.clientId);
      form.set('client_secret', secret);
    }
    const tokens = await providerJson(row.displayName, row.tokenEndpoint, { method: 'POST', headers, body: form.toString() });
    if (typeof tokens['error'] === 'string') throw providerFailed(row.displayName, 'the authorization code was refused');
    const accessToken = single(tokens['access_token']);
    let claims: Record<string, unknown> | undefined;
    if (row.kind === 'oidc') {
      const idToken = single(tokens['id_token']);
      if (idToken === undefined) throw providerFailed(row.displayName, 'no ID token');
      claims = await this.#verifyIdToken(row, client, idToken, record.nonce);
    }
    let userinfo: Record<string, unknown> | undefined;
    let emails: unknown;
    if (row.userinfoEndpoint !== undefined && (row.kind === 'oauth2' || accessToken !== undefined)) {
      if (accessToken === undefined) throw providerFailed(row.displayName, 'no access token');
      const auth = { headers: { authorization: `Bearer ${accessToken}`, accept: 'application/json', 'user-agent': 'Latchkey' } };
      userinfo = await providerJson(row.displayName, row.userinfoEndpoint, auth);
      if (row.emailsEndpoint !== undefined) emails = await providerJsonAny(row.displayName, row.emailsEndpoint, auth);
    }
    try {
      return row.profile({ claims, userinfo, emails, callback: params });
    } catch (err) {
      throw providerFailed(row.displayName, 'the account could not be read', err);
    }
  }

  /**
   * OpenID Connect Core §3.1.3.7: signature by a key of the provider's JWKS,
   * `iss` exactly the provider's, `aud` containing our client id (and `azp`
   * ours when there are several audiences), `exp` in the future (one minute
   * of clock skew), `nonce` the one of this login.
   */
  async #verifyIdToken(row: SocialProviderRow, client: SocialClient, idToken: string, nonce: string | undefined): Promise<Record<string, unknown>> {
    if (row.jwksUri === undefined || row.issuer === undefined) throw providerFailed(row.displayName, 'no key set to verify the ID token');
    let issuer = row.issuer;
    if (issuer.includes('{tenantid}')) {
      let tid: unknown;
      try {
        tid = jose().decodeJwt(idToken)['tid'];
      } catch (err) {
        throw providerFailed(row.displayName, 'the ID token is not valid', err);
      }
      if (typeof tid !== 'string' || !/^[0-9a-f-]{36}$/i.test(tid) || (row.tenant !== undefined && /^[0-9a-f-]{36}$/i.test(row.tenant) && tid !== row.tenant)) {
        throw providerFailed(row.displayName, 'the ID token is from another tenant');
      }
      issuer = issuer.replace('{tenantid}', tid);
    }
    let jwks = this.#jwks.get(row.jwksUri);
    if (jwks === undefined) {
      jwks = jose().createRemoteJWKSet(new URL(row.jwksUri), { timeoutDuration: 5_000, cooldownDuration: 30_000, cacheMaxAge: 600_000 });
      this.#jwks.set(row.jwksUri, jwks);
    }
    let payload: Record<string, unknown>;
    try {
      const verified = await jose().jwtVerify(idToken, jwks, {
        issuer,
        audience: client.clientId,
        algorithms: ID_TOKEN_ALGORITHMS,
        currentDate: new Date(this.#o.now()),
        clockTolerance: 60,
        requiredClaims: ['sub', 'exp', 'iat'],
      });
      payload = verified.payload as Record<string, unknown>;
    } catch (err) {
      throw providerFailed(row.displayName, 'the ID token is not valid', err);
    }
    const aud = payload['aud'];
    if (Array.isArray(aud) && aud.length > 1 && payload['azp'] !== client.clientId) throw providerFailed(row.displayName, 'the ID token was issued to another client');
    if (row.nonce) {
      const got = typeof payload['nonce'] === 'string' ? Buffer.from(payload['nonce']) : Buffer.alloc(0);
      const want = Buffer.from(nonce ?? '');
      if (want.length === 0 || got.length !== want.length || !timingSafeEqual(got, want)) throw providerFailed(row.displayName, 'the ID token nonce does not match');
    }
    return payload;
  }

  // ---------------------------------------------------------------- users

  async #resolveUser(
    row: SocialProviderRow,
    profile: SocialProfile,
    roles: readonly string[] | undefined,
    signupEvent: SignupRecorder | undefined,
  ): Promise<{ user: UserRecord; created: boolean; replaced: boolean }> {
    const users = this.#o.auth.users;
    const known = await ownerBySubject(this.#o.auth, row.name, profile.subject);
    if (known !== undefined) {
      const resolved = await this.#link(row, known.user, roles, profile, undefined, 'subject');
      await recordIdentity(this.#o.auth, row.name, profile, known.user.id, known.identity);
      return resolved;
    }
    // The provider verified the address as it spells it. A spelling that the key folds beyond case and
    // canonical equivalence (fullwidth `ｋａｔｅ@…`, an invisible character) may be another mailbox to the
    // provider and its mail server, so it proves nothing about the address on record: it counts as
    // unverified, links no account and makes none.
    const raw = profile.email?.trim();
    const email = emailKey(raw);
    const spelledAsStored = raw !== undefined && raw.normalize('NFC').toLowerCase().normalize('NFC') === email;
    if (email === undefined || !profile.emailVerified || !spelledAsStored) {
      const taken = email === undefined ? undefined : await users.findByEmail(email);
      throw new LatchkeyError(
        'permission_denied',
        taken !== undefined
          ? `the email address of this ${row.displayName} account is not verified by ${row.displayName}, so it cannot sign in to the existing account with that address; verify it at ${row.displayName} or sign in another way`
          : `${row.displayName} did not share a verified email address for this account; verify one at ${row.displayName} (and allow access to it), then try again`,
        { reason: 'unverified_provider_email' },
      );
    }
    const existing = await users.findByEmail(email);
    const resolved = existing !== undefined ? await this.#link(row, existing, roles, profile, signupEvent) : await this.#resolveNew(row, email, roles, profile, signupEvent);
    await recordIdentity(this.#o.auth, row.name, profile, resolved.user.id);
    return resolved;
  }

  async #resolveNew(
    row: SocialProviderRow,
    email: string,
    roles: readonly string[] | undefined,
    profile: SocialProfile,
    signupEvent: SignupRecorder | undefined,
  ): Promise<{ user: UserRecord; created: boolean; replaced: boolean }> {
    const users = this.#o.auth.users;
    const o = this.#o.auth.options;
    if (!o.enableSignup) throw new LatchkeyError('failed_precondition', 'signup is disabled for this instance', { reason: 'signup_disabled' });
    const signupRoles = this.#signupRoles(roles);
    const now = Math.floor(this.#o.now() / 1000);
    const fields: UserFields = {
      email,
      email_verified_at: now,
      password: null,
      signup_methods: row.name,
      roles: signupRoles,
      // Within the columns (and the limits of update_profile), whatever the provider sends.
      given_name: clip(profile.givenName, 256),
      family_name: clip(profile.familyName, 256),
      nickname: clip(profile.nickname, 256),
      picture: profile.picture !== undefined && profile.picture.length <= 2048 && /^https:\/\//.test(profile.picture) ? profile.picture : null,
    };
    const event = signupEventSteps(this.#o.database, signupEvent);
    let user: UserRecord;
    try {
      user = await users.create(fields, event.within === undefined ? {} : { within: event.within });
    } catch (err) {
      // A concurrent sign-up took the address first: log in to that account instead (same rules).
      if (!(err instanceof LatchkeyError) || err.code !== 'already_exists') throw err;
      const raced = await users.findByEmail(email);
      if (raced === undefined) throw err;
      return this.#link(row, raced, roles, profile, undefined, 'raced');
    }
    await event.after?.(user);
    return { user, created: true, replaced: false };
  }

  /** Same rule as `signup`: default roles, or a subset of `--roles` without protected ones. */
  #signupRoles(requested: readonly string[] | undefined): string[] {
    const o = this.#o.auth.options;
    if (requested === undefined || requested.length === 0) return [...o.defaultRoles];
    for (const r of requested) {
      if (o.protectedRoles.includes(r)) throw new LatchkeyError('invalid_argument', `role ${r} cannot be assigned at sign-up`, { reason: 'protected_role' });
      if (!o.roles.includes(r)) throw new LatchkeyError('invalid_argument', `invalid role ${r}`, { reason: 'invalid_roles' });
    }
    return [...new Set(requested)];
  }

  async #link(
    row: SocialProviderRow,
    user: UserRecord,
    roles: readonly string[] | undefined,
    profile: SocialProfile,
    signupEvent: SignupRecorder | undefined,
    by: 'email' | 'raced' | 'subject' = 'email',
  ): Promise<{ user: UserRecord; created: boolean; replaced: boolean }> {
    if (user.deactivated_at !== null) throw new LatchkeyError('permission_denied', 'this account has been deactivated', { reason: 'account_deactivated' });
    if (user.revoked_timestamp !== null) throw new LatchkeyError('permission_denied', 'user access has been revoked', { reason: 'access_revoked' });
    if (user.email_verified_at === null && user.password !== null && by === 'email') {
      // Pre-hijacking defence (security matrix B8): a password account that never proved this mailbox,
      // which the provider just did, may be someone else's squat. It is not linked: it is removed with
      // its password, sessions and second factor, and the provider's account signs up afresh.
      const auth = this.#o.auth;
      // The sign-up that replaces it must be allowed before anything is removed.
      if (!auth.options.enableSignup) throw new LatchkeyError('failed_precondition', 'signup is disabled for this instance', { reason: 'signup_disabled' });
      this.#signupRoles(roles);
      await auth.endAllSessions(user.id);
      await auth.mfa.deleteUserData(user.id);
      await auth.users.delete(user.id);
      const fresh = await this.#resolveNew(row, user.email ?? '', roles, profile, signupEvent);
      return { ...fresh, replaced: true };
    }
    if (roles !== undefined) for (const r of roles) if (!user.roles.includes(r)) throw new LatchkeyError('permission_denied', 'unauthorized', { reason: 'invalid_roles' });
    const patch: UserFields = {};
    if (withMethod(user.signup_methods, row.name) !== user.signup_methods) patch.signup_methods = withMethod(user.signup_methods, row.name);
    // An account without a password that never verified its address (an invitation, a magic link not yet
    // used) holds nothing its creator chose to sign in with: the provider's proof verifies the address
    // (not when the provider account was found by subject: its address may be another).
    if (user.email_verified_at === null && by !== 'subject') patch.email_verified_at = Math.floor(this.#o.now() / 1000);
    const updated = Object.keys(patch).length === 0 ? user : await this.#o.auth.users.update(user.id, patch);
    return { user: updated, created: false, replaced: false };
  }

  /** Opens the session, or the MFA challenge when a second factor applies (as after a password). */
  async #open(row: SocialProviderRow, user: UserRecord, record: StateRecord, presentedSession: string | undefined): Promise<AuthResult> {
    const auth = this.#o.auth;
    const method = auth.mfa.methodFor(user);
    const roles = record.roles !== undefined && record.roles.length > 0 ? [...record.roles] : [...user.roles];
    if (method !== undefined) {
      const { response, grant } = await auth.mfa.challenge(user, method, { roles, scope: record.scope, loginMethod: row.name });
      return { response, mfaSession: grant, record: user };
    }
    return auth.openSessionFor(user.id, { loginMethod: row.name, roles, scope: record.scope, message: 'Logged in successfully' }, presentedSession === undefined ? {} : { sessionCookie: presentedSession });
  }
}
