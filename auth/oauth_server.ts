/**
 * The OAuth 2.0 / OpenID Connect provider of the one client this server
 * knows (`--client-id`, `--client-secret`): the logic behind `/authorize`
 * (RFC 6749 §4.1, §4.2; OpenID Connect Core §3), `/oauth/token` (RFC 6749
 * §4.1.3, §6; PKCE, RFC 7636) and `/oauth/revoke` (RFC 7009). `/userinfo`
 * (OpenID Connect Core §5.3), `/oauth/introspect` (RFC 7662) and `/logout`
 * (OpenID Connect RP-Initiated Logout 1.0) are answered by
 * {@link OidcEndpoints} (`oidc_endpoints.ts`), which this class builds and
 * forwards to, so callers hold one provider object.
 *
 * Errors are {@link LatchkeyError}s whose `reason` is the RFC 6749 error code
 * (`invalid_request`, `invalid_client`, `invalid_grant`, ...); the wire layer
 * sends them as `{error, error_description}`.
 *
 * Sessions: the browser session (the app cookie) only authorizes; the tokens
 * of a code or implicit grant belong to a session of their own, created from
 * it (same user, roles, login method and auth_time), so that its refresh
 * lineage, rotation and replay detection are those of every other session,
 * and revoking or replaying one grant ends that grant's tokens and nothing else.
 */
import type { ConsentService, ResumedRequest } from './consent.ts';
import { createHash, randomBytes } from 'node:crypto';
import { LatchkeyError } from '../engine/errors.ts';
import type { AuthService } from './auth_service.ts';
import { issueTokens } from './issue_tokens.ts';
import type { MemoryStore } from './memory_store.ts';
import { AuthorizationCodes, type CodeGrant } from './oauth_codes.ts';
import { activeUser, invalidGrant, invalidRequest, readParams, safeEqual, type OAuthParams } from './oauth_common.ts';
import { ClientRegistry, GRANT_CLIENT_CREDENTIALS, GRANT_TOKEN_EXCHANGE, type ResolvedClient } from './client_registry.ts';
import { DpopVerifier, JKT_FORMAT, invalidDpopProof } from './dpop.ts';
import { DeviceCodes, GRANT_DEVICE_CODE } from './device_flow.ts';
import { UnavailableClientStore } from './client_store.ts';
import { requestedResource } from './resource_indicators.ts';
import { ClientConfiguration, clientInformation, clientMetadataInput } from './client_configuration.ts';
import { OidcEndpoints, type EndSessionOutcome } from './oidc_endpoints.ts';
import { PKCE_VALUE, childSession, clientGrant, codeGrant, exchangeGrant, refreshGrant, tokenResponse, type GrantDeps, type OAuthEventSink, type OAuthTokenResponse } from './token_grants.ts';
import type { SessionRecord } from './sessions.ts';
import type { UserRecord } from './user_store_types.ts';

export type ResponseMode = 'query' | 'fragment' | 'form_post';
export { ACCESS_TOKEN_TYPE, type OAuthEvent, type OAuthEventSink, type OAuthTokenResponse } from './token_grants.ts';

export interface OAuthServerOptions {
  auth: AuthService;
  /** The sessions' memory store (authorization codes live next to the sessions they come from). */
  store: MemoryStore;
  /** `--client-secret`. */
  clientSecret: string;
  /** `--oauth-registration-access-token`: dynamic client registration (RFC 7591) is on, behind this initial access token. */
  registrationAccessToken?: string | undefined;
  /** The client registry (the `--client-id` client first); default: the `--client-id` client alone. */
  registry?: ClientRegistry | undefined;
  /** The server's redirect rule (`--allowed-origins`); throws for a URI that may not be redirected to. */
  checkRedirectUri: (uri: string) => URL;
  /** The login page a browser without a session is sent to; undefined: answer `login_required`. */
  loginUrl?: string | undefined;
  /** `--default-authorize-response-type`. Default `token`. */
  defaultResponseType?: string;
  /** `--default-authorize-response-mode`. Default `query`. */
  defaultResponseMode?: string;
  /** Lifetime of an authorization code, seconds. Default 60. */
  codeTtlSeconds?: number;
  /**
   * `--enable-pkce-plain`: accept `code_challenge_method=plain`, and take an
   * absent method as plain (RFC 7636 §4.3), for legacy clients. Default
   * false: S256 only (ASVS v5 10.4.6, OAuth 2.1).
   */
  allowPkcePlain?: boolean;
  /** The consent step for clients that are not first-party (auth/consent.ts); undefined: no consent is asked. */
  consent?: ConsentService | undefined;
}

const NO_EVENTS: OAuthEventSink = async () => {};

/** What `/authorize` answers. */
export type AuthorizeOutcome =
  /** 302 to the client (code, tokens or an error) or to the login page. */
  | { kind: 'redirect'; location: string }
  /** An auto-submitting form POSTing `fields` to `action` (response_mode form_post). */
  | { kind: 'form_post'; action: string; fields: Record<string, string> }
  /** The request cannot be answered to the client (bad client_id or redirect_uri): 400 to the user agent. */
  | { kind: 'error'; error: LatchkeyError };

export const SUPPORTED_SCOPES = ['openid', 'email', 'profile', 'phone', 'offline_access'] as const;
const DEFAULT_SCOPE = ['openid', 'email', 'profile'];
/** Lifetime of a pushed authorization request (RFC 9126 §2.2: short). */
const PAR_TTL_SECONDS = 60;

/** The OAuth provider. */
export class OAuthServer {
  readonly codes: AuthorizationCodes;
  readonly #auth: AuthService;
  readonly #o: OAuthServerOptions;
  readonly #oidc: OidcEndpoints;
  readonly registry: ClientRegistry;
  /** Checks DPoP proofs (the token endpoint's and, through the composition root, the API's). */
  readonly dpop: DpopVerifier;
  /** Device codes of the device authorization grant (RFC 8628). */
  readonly devices: DeviceCodes;
  /** The client configuration endpoint of dynamically registered clients (RFC 7592). */
  readonly configuration: ClientConfiguration;
  /** What the token endpoint's grants use (token_grants.ts). */
  readonly #grants: GrantDeps;

  constructor(options: OAuthServerOptions) {
    this.#o = options;
    this.#auth = options.auth;
    this.devices = new DeviceCodes(options.store);
    this.dpop = new DpopVerifier({ memory: options.store, nowSeconds: () => Math.floor(options.auth.options.now() / 1000) });
    this.registry =
      options.registry ??
      new ClientRegistry({
        store: new UnavailableClientStore(),
        memory: options.store,
        nowSeconds: () => Math.floor(options.auth.options.now() / 1000),
        issuer: options.auth.options.issuer,
        flagClient: { clientId: options.auth.options.clientId, clientSecret: options.clientSecret },
        roles: options.auth.options.roles,
        supportedScopes: SUPPORTED_SCOPES,
      });
    this.configuration = new ClientConfiguration(this.registry, options.auth.options.issuer, SUPPORTED_SCOPES);
    this.#oidc = new OidcEndpoints({ auth: options.auth, clientSecret: options.clientSecret, checkRedirectUri: options.checkRedirectUri, registry: this.registry });
    this.codes = new AuthorizationCodes({
      store: options.store,
      ...(options.codeTtlSeconds === undefined ? {} : { ttlSeconds: options.codeTtlSeconds }),
      endSession: (sid) => options.auth.sessions.end(sid),
    });
    this.#grants = { auth: options.auth, codes: this.codes, allowPkcePlain: options.allowPkcePlain === true };
  }

  #now(): number {
    return this.#auth.options.now();
  }

  // ---------------------------------------------------------------- /authorize

  /**
   * `/authorize`. Until `client_id` and `redirect_uri` are known good, errors
   * go to the user agent (`kind: 'error'`); after, they go back to the client
   * in the response mode (RFC 6749 §4.1.2.1), with `state` and `iss` (RFC 9207).
   */
  async authorize(params: OAuthParams, sessionCookie: string | undefined, onEvent: OAuthEventSink = NO_EVENTS): Promise<AuthorizeOutcome> {
    let p: Map<string, string>;
    try {
      p = readParams(params);
    } catch (err) {
      return { kind: 'error', error: err as LatchkeyError };
    }
    const clientId = p.get('client_id');
    if (clientId === undefined) return { kind: 'error', error: invalidRequest('client_id is required') };
    // RFC 9126 §4: a pushed request replaces the parameters; only client_id and request_uri travel in the URL.
    const requestUri = p.get('request_uri');
    const original = p;
    if (requestUri !== undefined) {
      let pushed: Map<string, string> | undefined;
      try {
        pushed = await this.#pushedRequest(requestUri);
      } catch (err) {
        return { kind: 'error', error: err as LatchkeyError };
      }
      if (pushed === undefined || pushed.get('client_id') !== clientId) return { kind: 'error', error: invalidRequest('request_uri is unknown, expired or not this client\'s') };
      p = pushed;
    }
    // The browser's return from the consent page: the parked request, decided (auth/consent.ts).
    let resumed: ResumedRequest | undefined;
    if (p.has('consent_ticket') && requestUri === undefined) {
      resumed = await this.#o.consent?.resume(p.get('consent_ticket') ?? '', clientId);
      if (resumed === undefined) return { kind: 'error', error: invalidRequest('consent_ticket is unknown, expired or not this client\'s') };
      p = resumed.params;
    }
    let client: ResolvedClient | undefined;
    try {
      client = await this.registry.find(clientId);
    } catch (err) {
      return { kind: 'error', error: err as LatchkeyError };
    }
    if (client === undefined || client.record.disabled || client.record.kind !== 'interactive' || !client.record.grant_types.includes('authorization_code')) {
      return { kind: 'error', error: new LatchkeyError('invalid_argument', 'unknown client_id', { reason: 'invalid_client' }) };
    }
    const redirectUri = p.get('redirect_uri');
    if (redirectUri === undefined) return { kind: 'error', error: invalidRequest('redirect_uri is required') };
    if (client.fromFlags) {
      try {
        this.#o.checkRedirectUri(redirectUri);
      } catch {
        return { kind: 'error', error: invalidRequest('redirect_uri is not allowed') };
      }
    } else if (!this.registry.redirectAllowed(client.record, redirectUri)) return { kind: 'error', error: invalidRequest('redirect_uri is not registered for this client') };
    const registered = client.fromFlags ? undefined : client.record;
    if (requestUri === undefined && resumed === undefined && registered?.require_pushed_authorization_requests === true) {
      return { kind: 'error', error: invalidRequest('this client must push its authorization requests to /oauth/par') };
    }

    const types = new Set((p.get('response_type') ?? this.#o.defaultResponseType ?? 'token').split(' ').filter(Boolean));
    const implicit = !types.has('code');
    // Tokens in the front channel: the implicit types and the hybrid ones (OpenID Connect Core §3.3).
    const frontTokens = types.has('token') || types.has('id_token');
    const configured = this.#o.defaultResponseMode ?? 'query';
    const fallbackMode: ResponseMode = frontTokens ? (configured === 'form_post' ? 'form_post' : 'fragment') : configured === 'fragment' || configured === 'form_post' ? configured : 'query';
    const requestedMode = p.get('response_mode');
    const mode = (requestedMode ?? fallbackMode) as ResponseMode;
    const state = p.get('state');
    const reply = (fields: Record<string, string>, m: ResponseMode = mode): AuthorizeOutcome =>
      this.#reply(redirectUri, m, { ...fields, ...(state === undefined ? {} : { state }), iss: this.#auth.options.issuer });
    const fail = (error: string, description: string, m: ResponseMode = mode): AuthorizeOutcome => reply({ error, error_description: description }, m);

    if (requestedMode !== undefined && !['query', 'fragment', 'form_post'].includes(requestedMode)) return fail('invalid_request', `response_mode ${requestedMode} is not supported`, fallbackMode);
    const known = [...types].every((t) => t === 'code' || t === 'token' || t === 'id_token') && types.size >= 1;
    if (!known) return fail('unsupported_response_type', 'response_type must be code, token, id_token, "id_token token", "code id_token", "code token" or "code id_token token"');
    // OAuth 2.0 Multiple Response Type Encoding Practices §5: tokens never travel in a query string.
    if (frontTokens && mode === 'query') return fail('invalid_request', 'response_mode query is not allowed for token responses', 'fragment');

    // A registered client speaks OAuth 2.1: the code flow only, with S256 PKCE.
    if (registered !== undefined && (types.size !== 1 || !types.has('code'))) return fail('unsupported_response_type', 'a registered client may use response_type code only');
    if (registered !== undefined && (p.get('code_challenge') === undefined || p.get('code_challenge_method') !== 'S256')) return fail('invalid_request', 'a registered client must send code_challenge with code_challenge_method S256');
    const scope = p.has('scope') ? [...new Set((p.get('scope') ?? '').split(' ').filter(Boolean))] : DEFAULT_SCOPE.filter((s) => registered === undefined || registered.scopes.includes(s));
    const unknownScope = scope.find((s) => !(SUPPORTED_SCOPES as readonly string[]).includes(s));
    if (unknownScope !== undefined) return fail('invalid_scope', `unsupported scope ${unknownScope}`);
    const notAllowed = registered === undefined ? undefined : scope.find((s) => !registered.scopes.includes(s));
    if (notAllowed !== undefined) return fail('invalid_scope', `scope ${notAllowed} is not allowed for this client`);
    if (scope.length === 0) return fail('invalid_scope', 'scope is empty');
    const nonce = p.get('nonce');
    if (nonce !== undefined && nonce.length > 512) return fail('invalid_request', 'nonce is too long');
    // OpenID Connect Core §3.2.2.1 and §3.3.2.11: the implicit id_token and every hybrid type need a nonce.
    if ((types.has('id_token') || (frontTokens && !implicit)) && nonce === undefined) return fail('invalid_request', 'nonce is required for id_token and hybrid responses');
    if (state !== undefined && state.length > 1024) return fail('invalid_request', 'state is too long');
    // RFC 9449 §10: the code is redeemed only with a DPoP proof by this key.
    const dpopJkt = p.get('dpop_jkt');
    let resource: string | undefined;
    try {
      resource = requestedResource(p, registered?.audiences ?? []);
    } catch (err) {
      return fail('invalid_target', (err as LatchkeyError).message);
    }
    if (resource !== undefined && implicit) return fail('invalid_target', 'resource applies to response_type code only');
    if (dpopJkt !== undefined && (implicit || !JKT_FORMAT.test(dpopJkt))) return fail('invalid_request', implicit ? 'dpop_jkt applies to response_type code only' : 'dpop_jkt must be a JWK SHA-256 thumbprint (43 base64url characters)');

    const challenge = p.get('code_challenge');
    const method = p.get('code_challenge_method');
    if (challenge === undefined && method !== undefined) return fail('invalid_request', 'code_challenge_method without code_challenge');
    if (challenge !== undefined) {
      if (implicit) return fail('invalid_request', 'code_challenge applies to response_type code only');
      if (!PKCE_VALUE.test(challenge)) return fail('invalid_request', 'code_challenge must be 43 to 128 characters of [A-Za-z0-9-._~]');
      if (this.#o.allowPkcePlain === true) {
        if (method !== undefined && method !== 'S256' && method !== 'plain') return fail('invalid_request', 'code_challenge_method must be S256 or plain');
      } else if (method === undefined) {
        // RFC 7636 §4.3 would take an absent method as plain; plain is off, so the method must be named.
        return fail('invalid_request', 'code_challenge_method is required and must be S256');
      } else if (method !== 'S256') {
        return fail('invalid_request', `code_challenge_method ${method === 'plain' ? 'plain is not allowed' : 'is not supported'}; use S256`);
      }
    }
    const prompt = new Set((p.get('prompt') ?? '').split(' ').filter(Boolean));
    if (prompt.has('none') && prompt.size > 1) return fail('invalid_request', 'prompt none cannot be combined with other values');
    const maxAgeRaw = p.get('max_age');
    const maxAge = maxAgeRaw === undefined ? undefined : Number(maxAgeRaw);
    if (maxAge !== undefined && (!Number.isSafeInteger(maxAge) || maxAge < 0)) return fail('invalid_request', 'max_age must be a non-negative integer');

    const signedIn = await this.#browserSession(sessionCookie);
    const fresh = signedIn !== undefined && (maxAge === undefined || Math.floor(this.#now() / 1000) - signedIn.session.auth_time <= maxAge);
    if (!fresh) {
      if (prompt.has('none') || this.#o.loginUrl === undefined) return fail('login_required', 'the user is not signed in');
      // The login page gets the whole request, so that it can come back here once the user has signed in.
      const login = new URL(this.#o.loginUrl);
      for (const [k, v] of original) login.searchParams.set(k, v);
      return { kind: 'redirect', location: login.href };
    }
    const { session, user } = signedIn;
    const roles = session.roles.filter((r) => user.roles.includes(r));
    const consent = await this.#o.consent?.gate({ client: registered, userId: user.id, sid: session.sid, scope, prompt, params: p, resumed });
    if (consent?.kind === 'redirect') return { kind: 'redirect', location: consent.location };
    if (consent?.kind === 'fail') return fail(consent.error, consent.description);

    let code: string | undefined;
    if (!implicit) {
      const grant: Omit<CodeGrant, 'expires_ms'> = {
        client_id: clientId,
        redirect_uri: redirectUri,
        scope,
        sid: session.sid,
        user_id: user.id,
        roles,
        login_method: session.login_method,
        auth_time: session.auth_time,
        ...(session.amr === undefined ? {} : { amr: session.amr }),
        ...(nonce === undefined ? {} : { nonce }),
        ...(challenge === undefined ? {} : { code_challenge: challenge, code_challenge_method: method === 'S256' ? 'S256' : 'plain' }),
        ...(dpopJkt === undefined ? {} : { dpop_jkt: dpopJkt }),
        ...(resource === undefined ? {} : { resource }),
      };
      code = await this.codes.issue(grant, this.#now());
      if (!frontTokens) return reply({ code });
    }
    // RFC 6749 §4.2.2: no refresh token in the front channel (an implicit grant, or a hybrid one's
    // front-channel tokens; its code still brings one at the token endpoint with offline_access).
    const implicitScope = scope.filter((s) => s !== 'offline_access');
    const child = await childSession(this.#auth, user, session, roles, implicitScope);
    // OpenID Connect Core §3.3.2.11: an id token sent with a code carries the code's hash.
    const out = await issueTokens(this.#auth, user, child, '', 'new', nonce, code === undefined ? {} : { c_hash: this.#auth.tokens.atHash(code) });
    const fields: Record<string, string> = { scope: implicitScope.join(' ') };
    if (code !== undefined) fields['code'] = code;
    if (types.has('token')) Object.assign(fields, { access_token: out.access_token ?? '', token_type: 'Bearer', expires_in: String(out.expires_in ?? 0) });
    if (types.has('id_token')) fields['id_token'] = out.id_token ?? '';
    await onEvent({ action: 'token.issued', userId: user.id, metadata: { response_type: [...types].join(' ') } });
    return reply(fields);
  }

  /** The live browser session of the cookie and its active user, or undefined. */
  async #browserSession(cookie: string | undefined): Promise<{ session: SessionRecord; user: UserRecord } | undefined> {
    if (cookie === undefined) return undefined;
    const session = await this.#auth.sessions.fromCookie(cookie);
    if (session === undefined) return undefined;
    const user = await this.#activeUser(session.user_id);
    return user === undefined ? undefined : { session, user };
  }

  #activeUser(userId: string): Promise<UserRecord | undefined> {
    return activeUser(this.#auth, userId);
  }

  #reply(redirectUri: string, mode: ResponseMode, fields: Record<string, string>): AuthorizeOutcome {
    if (mode === 'form_post') return { kind: 'form_post', action: redirectUri, fields };
    const url = new URL(redirectUri);
    if (mode === 'fragment') url.hash = new URLSearchParams(fields).toString();
    else for (const [k, v] of Object.entries(fields)) url.searchParams.set(k, v);
    return { kind: 'redirect', location: url.href };
  }

  // ---------------------------------------------------------------- /oauth/device_authorization

  /**
   * `/oauth/device_authorization` (RFC 8628 §3.1): a client registered for
   * the device grant (authenticated as at the token endpoint, or a public
   * client by its client_id) gets a device code, a user code to show, and
   * where the user enters it (`/app/device`). Errors: `invalid_client`,
   * `unauthorized_client`, `invalid_scope`.
   */
  async deviceAuthorization(params: OAuthParams, authorization: string | undefined): Promise<Record<string, unknown>> {
    const p = readParams(params);
    const { client } = await this.registry.authenticate(p, authorization);
    const r = client.record;
    if (r.kind !== 'interactive' || !r.grant_types.includes(GRANT_DEVICE_CODE)) throw new LatchkeyError('invalid_argument', 'this client may not use the device authorization grant', { reason: 'unauthorized_client' });
    const requested = p.has('scope') ? [...new Set((p.get('scope') ?? '').split(' ').filter(Boolean))] : DEFAULT_SCOPE.filter((s) => r.scopes.includes(s));
    const notAllowed = requested.find((s) => !r.scopes.includes(s) || !(SUPPORTED_SCOPES as readonly string[]).includes(s));
    if (notAllowed !== undefined) throw new LatchkeyError('invalid_argument', `scope ${notAllowed} is not allowed for this client`, { reason: 'invalid_scope' });
    const out = await this.devices.issue(r.client_id, requested, this.#now());
    const page = `${this.#auth.options.issuer}/app/device`;
    return { ...out, verification_uri: page, verification_uri_complete: `${page}?user_code=${encodeURIComponent(out.user_code)}` };
  }

  /**
   * The user's decision on `/app/device`: approves (or denies) the pending
   * request of `userCode` for the user of the browser session. Undefined
   * when there is no live session; `{done: false}` for an unknown, expired
   * or already decided code.
   */
  async decideDevice(userCode: string, approve: boolean, sessionCookie: string | undefined): Promise<{ done: boolean; userId: string; clientId?: string } | undefined> {
    const signedIn = await this.#browserSession(sessionCookie);
    if (signedIn === undefined) return undefined;
    const { session, user } = signedIn;
    const decision = approve
      ? { approved: true as const, user_id: user.id, roles: session.roles.filter((x) => user.roles.includes(x)), login_method: session.login_method, auth_time: session.auth_time, ...(session.amr === undefined ? {} : { amr: session.amr }) }
      : { approved: false as const };
    const out = await this.devices.decide(userCode, decision, this.#now());
    return out === undefined ? { done: false, userId: user.id } : { done: true, userId: user.id, clientId: out.client_id };
  }

  /** RFC 8628 §3.4, §3.5: the device's poll; tokens once the user approved. */
  async #deviceGrant(p: Map<string, string>, client: ResolvedClient, onEvent: OAuthEventSink, jkt?: string): Promise<OAuthTokenResponse> {
    const deviceCode = p.get('device_code');
    if (deviceCode === undefined) throw invalidRequest('device_code is required');
    const polled = await this.devices.poll(deviceCode, client.record.client_id, this.#now());
    const refuse = (reason: string, message: string): LatchkeyError => new LatchkeyError('invalid_argument', message, { reason });
    if (polled.kind === 'pending') throw refuse('authorization_pending', 'the user has not yet approved the request');
    if (polled.kind === 'slow_down') throw refuse('slow_down', `poll at most every ${this.devices.intervalSeconds} seconds`);
    if (polled.kind === 'denied') throw refuse('access_denied', 'the user denied the request');
    if (polled.kind === 'wrong_client') throw invalidGrant('the device code was issued to another client');
    if (polled.kind !== 'approved') throw refuse('expired_token', 'the device code is unknown, expired or already used');
    const g = polled.request;
    const user = g.user_id === undefined ? undefined : await this.#activeUser(g.user_id);
    if (user === undefined) throw invalidGrant('the approving user is no longer active');
    const roles = (g.roles ?? []).filter((x) => user.roles.includes(x));
    const session = await childSession(this.#auth, user, { login_method: g.login_method ?? 'device', auth_time: g.auth_time ?? 0, ...(g.amr === undefined ? {} : { amr: g.amr }) }, roles, g.scope, client.fromFlags ? undefined : client.record.client_id, jkt);
    const out = await issueTokens(this.#auth, user, session, '', 'new');
    await onEvent({ action: 'token.issued', userId: user.id, metadata: { grant_type: GRANT_DEVICE_CODE, dpop: jkt !== undefined } });
    return tokenResponse(out, g.scope, jkt);
  }

  // ---------------------------------------------------------------- /oauth/register

  /** True when dynamic client registration is on (`--oauth-registration-access-token`). */
  get registrationEnabled(): boolean {
    return (this.#o.registrationAccessToken ?? '') !== '';
  }

  /**
   * `POST /oauth/register` (RFC 7591): registers a client from its metadata
   * for a caller holding the initial access token (§3, `Authorization:
   * Bearer`). The client id is chosen here; a service account is registered
   * when `grant_types` asks for client_credentials; roles cannot be given
   * (the admin API does that). Answers the client's metadata with
   * `client_id_issued_at`, and a secret-authenticated client's
   * `client_secret` (shown once, never expiring), with the
   * `registration_access_token` and `registration_client_uri` of RFC 7592
   * (see {@link ClientConfiguration}). Errors: `invalid_token` (401),
   * `invalid_client_metadata`, `invalid_redirect_uri` (400).
   */
  async register(body: Readonly<Record<string, unknown>>, authorization: string | undefined): Promise<Record<string, unknown>> {
    const expected = this.#o.registrationAccessToken ?? '';
    const presented = authorization === undefined ? undefined : /^Bearer\s+(\S+)\s*$/i.exec(authorization)?.[1];
    if (expected === '' || presented === undefined || !safeEqual(presented, expected)) throw new LatchkeyError('unauthenticated', 'a valid initial access token is required', { reason: 'invalid_token' });
    const { client, client_secret } = await this.registry.add(clientMetadataInput(body));
    // RFC 7592: the client reads, replaces and deletes its registration with this token.
    return this.configuration.registered({ ...clientInformation(client), ...(client_secret === null ? {} : { client_secret, client_secret_expires_at: 0 }) }, client.client_id);
  }

  // ---------------------------------------------------------------- /oauth/par

  /**
   * `/oauth/par` (RFC 9126): the client, authenticated as at the token
   * endpoint (a public client by its client_id), pushes the parameters of
   * an authorization request; they are checked for the client and its
   * redirect URI, kept for 60 seconds, and named by the answered
   * `request_uri`, which `/authorize` then takes with the client_id. The
   * request URI may be used again within its lifetime (a user agent that
   * reloads, or comes back from the login page), by its client only.
   * Errors: `invalid_client`, `invalid_request`, `unauthorized_client`.
   */
  async pushAuthorizationRequest(params: OAuthParams, authorization: string | undefined, dpopProof?: string): Promise<{ request_uri: string; expires_in: number }> {
    const p = readParams(params);
    // RFC 9449 §10.1: a proof on the push binds the code to its key, as dpop_jkt would (and must agree with it).
    const dpop = dpopProof === undefined ? undefined : await this.dpop.verify(dpopProof, 'POST', `${this.#auth.options.issuer}/oauth/par`, undefined, true);
    if (dpop !== undefined && p.has('dpop_jkt') && p.get('dpop_jkt') !== dpop.jkt) throw invalidDpopProof('dpop_jkt names another key than the DPoP proof');
    if (p.has('request_uri')) throw invalidRequest('request_uri cannot be pushed');
    const { client } = await this.registry.authenticate(p, authorization);
    const r = client.record;
    if (r.kind !== 'interactive' || !r.grant_types.includes('authorization_code')) throw new LatchkeyError('invalid_argument', 'this client may not use the authorization_code grant', { reason: 'unauthorized_client' });
    const redirectUri = p.get('redirect_uri');
    if (redirectUri === undefined) throw invalidRequest('redirect_uri is required');
    if (client.fromFlags) {
      try {
        this.#o.checkRedirectUri(redirectUri);
      } catch {
        throw invalidRequest('redirect_uri is not allowed');
      }
    } else if (!this.registry.redirectAllowed(r, redirectUri)) throw invalidRequest('redirect_uri is not registered for this client');
    const kept: Record<string, string> = {};
    for (const [k, v] of p) if (k !== 'client_secret' && k !== 'client_assertion' && k !== 'client_assertion_type') kept[k] = v;
    kept['client_id'] = r.client_id;
    if (dpop !== undefined) kept['dpop_jkt'] = dpop.jkt;
    const uri = `urn:ietf:params:oauth:request_uri:${randomBytes(32).toString('base64url')}`;
    await this.#o.store.set(`par:${createHash('sha256').update(uri).digest('base64url')}`, JSON.stringify(kept), PAR_TTL_SECONDS);
    return { request_uri: uri, expires_in: PAR_TTL_SECONDS };
  }

  async #pushedRequest(uri: string): Promise<Map<string, string> | undefined> {
    if (!uri.startsWith('urn:ietf:params:oauth:request_uri:') || uri.length > 200) return undefined;
    const raw = await this.#o.store.get(`par:${createHash('sha256').update(uri).digest('base64url')}`);
    if (raw === undefined) return undefined;
    return new Map(Object.entries(JSON.parse(raw) as Record<string, string>));
  }

  // ---------------------------------------------------------------- /oauth/token

  /**
   * `/oauth/token`: grant types `authorization_code` (the default when
   * absent), `refresh_token` and `client_credentials`. Errors (reason = RFC 6749 §5.2 code):
   * `invalid_client` (401), `invalid_request`, `invalid_grant`,
   * `invalid_scope`, `unsupported_grant_type` (400).
   */
  async token(params: OAuthParams, authorization: string | undefined, onEvent: OAuthEventSink = NO_EVENTS, dpopProof?: string): Promise<OAuthTokenResponse> {
    const p = readParams(params);
    // RFC 9449 §5, §8: a DPoP proof, with a current server nonce, binds the tokens to the proof's key.
    const dpop = dpopProof === undefined ? undefined : await this.dpop.verify(dpopProof, 'POST', `${this.#auth.options.issuer}/oauth/token`, undefined, true);
    const { client, method } = await this.registry.authenticate(p, authorization);
    const withSecret = method !== 'none';
    const grantType = p.get('grant_type') ?? 'authorization_code';
    const known = grantType === 'authorization_code' || grantType === 'refresh_token' || grantType === GRANT_CLIENT_CREDENTIALS || grantType === GRANT_TOKEN_EXCHANGE || grantType === GRANT_DEVICE_CODE;
    if (!known) throw new LatchkeyError('invalid_argument', `grant_type ${grantType} is not supported`, { reason: 'unsupported_grant_type' });
    if (!client.record.grant_types.includes(grantType)) throw new LatchkeyError('invalid_argument', `this client may not use the ${grantType} grant`, { reason: 'unauthorized_client' });
    const audited: OAuthEventSink = (event) => onEvent({ ...event, metadata: { ...event.metadata, client_id: client.record.client_id, client_auth_method: method } });
    if (grantType === 'authorization_code') return codeGrant(this.#grants, p, client, withSecret, audited, dpop?.jkt);
    if (grantType === 'refresh_token') return refreshGrant(this.#grants, p, client, audited, dpop?.jkt, !withSecret);
    if (grantType === GRANT_DEVICE_CODE) return this.#deviceGrant(p, client, audited, dpop?.jkt);
    if (dpop !== undefined && grantType === GRANT_TOKEN_EXCHANGE) throw invalidRequest('token exchange does not issue DPoP-bound tokens');
    if (grantType === GRANT_TOKEN_EXCHANGE) return exchangeGrant(this.#grants, p, client, withSecret, audited);
    return clientGrant(this.#grants, p, client, withSecret, audited, dpop?.jkt);
  }

  // ---------------------------------------------------------------- /oauth/revoke

  /**
   * `/oauth/revoke` (RFC 7009): `token` (or `refresh_token`), optional
   * `token_type_hint`. A refresh token or an access token ends its session
   * (every token of that grant). Unknown, invalid or already revoked tokens
   * answer the same (§2.2). Errors: `invalid_client` (401), `invalid_request`.
   */
  async revoke(params: OAuthParams, authorization: string | undefined, onEvent: OAuthEventSink = NO_EVENTS): Promise<{ message: string }> {
    const p = readParams(params);
    await this.registry.authenticate(p, authorization);
    const token = p.get('token') ?? p.get('refresh_token');
    if (token === undefined) throw invalidRequest('token is required');
    const order = p.get('token_type_hint') === 'access_token' ? (['access_token', 'refresh_token'] as const) : (['refresh_token', 'access_token'] as const);
    for (const type of order) {
      let claims: { sub: string; [k: string]: unknown };
      try {
        claims = await this.#auth.tokens.verify(token, type);
      } catch (err) {
        if (err instanceof LatchkeyError && err.code === 'unauthenticated') continue;
        throw err;
      }
      if (type === 'refresh_token') await this.#auth.revoke({ refresh_token: token });
      else {
        const session = await this.#auth.sessions.get(String(claims['sid'] ?? ''));
        if (session !== undefined && session.user_id === claims.sub) await this.#auth.sessions.end(session.sid);
      }
      await onEvent({ action: 'token.revoked', userId: claims.sub, metadata: { token_type: type } });
      break;
    }
    return { message: 'Token revoked successfully' };
  }

  // ---------------------------------------------------------------- /userinfo, /oauth/introspect, /logout

  /**
   * `/userinfo`: see {@link OidcEndpoints.userinfo}. `dpop`: the token came
   * as `Authorization: DPoP`, with this proof (or none) on this method.
   */
  async userinfo(accessToken: string | undefined, dpop?: { proof: string | undefined; method: string }): Promise<Record<string, unknown>> {
    if (dpop === undefined || accessToken === undefined) return this.#oidc.userinfo(accessToken);
    if (dpop.proof === undefined) throw invalidDpopProof('a DPoP proof is required with the DPoP authorization scheme');
    const { jkt } = await this.dpop.verify(dpop.proof, dpop.method, `${this.#auth.options.issuer}/userinfo`, accessToken);
    return this.#oidc.userinfo(accessToken, jkt);
  }

  /** `/oauth/introspect`: see {@link OidcEndpoints.introspect}. */
  introspect(params: OAuthParams, authorization: string | undefined): Promise<Record<string, unknown>> {
    return this.#oidc.introspect(params, authorization);
  }

  /** `/logout`: see {@link OidcEndpoints.endSession}. */
  endSession(params: OAuthParams, sessionCookie: string | undefined, confirmed: boolean): Promise<EndSessionOutcome> {
    return this.#oidc.endSession(params, sessionCookie, confirmed);
  }
}
