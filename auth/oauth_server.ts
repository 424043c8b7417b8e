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
import { activeUser, invalidClient, invalidGrant, invalidRequest, readParams, safeEqual, type OAuthParams } from './oauth_common.ts';
import { ClientRegistry, GRANT_CLIENT_CREDENTIALS, GRANT_TOKEN_EXCHANGE, serviceAccountSubject, type ResolvedClient } from './client_registry.ts';
import { MAX_ACTORS } from './permissions.ts';
import { DpopVerifier, JKT_FORMAT, checkGrantKey, invalidDpopProof } from './dpop.ts';
import { DeviceCodes, GRANT_DEVICE_CODE } from './device_flow.ts';
import { UnavailableClientStore } from './client_store.ts';
import { grantedResource, requestedResource } from './resource_indicators.ts';
import { ClientConfiguration, clientInformation, clientMetadataInput } from './client_configuration.ts';
import { OidcEndpoints, type EndSessionOutcome } from './oidc_endpoints.ts';
import type { SessionRecord } from './sessions.ts';
import type { UserRecord } from './user_store_types.ts';

export type ResponseMode = 'query' | 'fragment' | 'form_post';

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

/**
 * A security-relevant fact for the audit log: tokens issued, refreshed or
 * revoked, or a spent code or rotated refresh token presented again.
 */
export interface OAuthEvent {
  action: 'token.issued' | 'token.refreshed' | 'token.revoked' | 'token.code_reuse' | 'token.refresh_token_reuse' | 'user.logout' | 'device.approved' | 'device.denied' | 'client.registered' | 'client.updated' | 'client.deleted';
  userId?: string | undefined;
  metadata?: Record<string, unknown>;
}

/** Receives {@link OAuthEvent}s; must not throw (failures are the sink's to log). */
export type OAuthEventSink = (event: OAuthEvent) => Promise<void>;

const NO_EVENTS: OAuthEventSink = async () => {};

/** What `/authorize` answers. */
export type AuthorizeOutcome =
  /** 302 to the client (code, tokens or an error) or to the login page. */
  | { kind: 'redirect'; location: string }
  /** An auto-submitting form POSTing `fields` to `action` (response_mode form_post). */
  | { kind: 'form_post'; action: string; fields: Record<string, string> }
  /** The request cannot be answered to the client (bad client_id or redirect_uri): 400 to the user agent. */
  | { kind: 'error'; error: LatchkeyError };

/** The body of a successful `/oauth/token` answer. */
export interface OAuthTokenResponse {
  access_token: string;
  /** `DPoP` for a token bound to a DPoP key (RFC 9449 §5). */
  token_type: 'Bearer' | 'DPoP';
  expires_in: number;
  scope: string;
  id_token?: string;
  refresh_token?: string;
  /** RFC 8693 §2.2.1: the type of a token issued by token exchange. */
  issued_token_type?: string;
}

/** RFC 8693 §3: the token type identifier of an access token (the only type exchanged and issued here). */
export const ACCESS_TOKEN_TYPE = 'urn:ietf:params:oauth:token-type:access_token';
const JWT_TOKEN_TYPE = 'urn:ietf:params:oauth:token-type:jwt';

export const SUPPORTED_SCOPES = ['openid', 'email', 'profile', 'phone', 'offline_access'] as const;
const DEFAULT_SCOPE = ['openid', 'email', 'profile'];
const PKCE_VALUE = /^[A-Za-z0-9._~-]{43,128}$/;
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
    const child = await this.#childSession(user, session, roles, implicitScope);
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

  // The grant's session says how its user authenticated (login method, auth_time, and the amr of a second factor).
  // `jkt`: the DPoP key the grant's tokens are bound to (RFC 9449 §5).
  #childSession(user: UserRecord, from: Pick<SessionRecord, 'login_method' | 'auth_time' | 'amr'>, roles: string[], scope: string[], clientId?: string, jkt?: string, resource?: string): Promise<SessionRecord> {
    const amr = from.amr === undefined ? {} : { amr: from.amr };
    const client = clientId === undefined ? {} : { client_id: clientId };
    const bound = jkt === undefined ? {} : { jkt };
    const target = resource === undefined ? {} : { resource };
    return this.#auth.sessions.create({ user_id: user.id, roles, scope, login_method: from.login_method, auth_time: from.auth_time, ...amr, ...client, ...bound, ...target }).then((c) => c.session);
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
    const session = await this.#childSession(user, { login_method: g.login_method ?? 'device', auth_time: g.auth_time ?? 0, ...(g.amr === undefined ? {} : { amr: g.amr }) }, roles, g.scope, client.fromFlags ? undefined : client.record.client_id, jkt);
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
    if (grantType === 'authorization_code') return this.#codeGrant(p, client, withSecret, audited, dpop?.jkt);
    if (grantType === 'refresh_token') return this.#refreshGrant(p, client, audited, dpop?.jkt, !withSecret);
    if (grantType === GRANT_DEVICE_CODE) return this.#deviceGrant(p, client, audited, dpop?.jkt);
    if (dpop !== undefined && grantType === GRANT_TOKEN_EXCHANGE) throw invalidRequest('token exchange does not issue DPoP-bound tokens');
    if (grantType === GRANT_TOKEN_EXCHANGE) return this.#exchangeGrant(p, client, withSecret, audited);
    return this.#clientGrant(p, client, withSecret, audited, dpop?.jkt);
  }

  /**
   * Token exchange (RFC 8693). The subject token is a live user access token
   * of this server (its session alive, its user active), possibly itself
   * exchanged. Without `actor_token` it is impersonation: a token for the
   * same user, its actor chain unchanged. With `actor_token` it is
   * delegation: the actor token must be the requesting service account's own
   * client_credentials token, and the new token's `act` names it, with the
   * subject token's own `act` nested inside (§4.1), at most five deep. Scope
   * and audience are only narrowed: the scope within the subject token's, the
   * audience (`audience` or `resource`, RFC 8707) within the subject token's
   * extra audiences, or, for a token that has none, within the client's
   * registered audiences (`invalid_target` otherwise). The new token never
   * outlives the subject token, and dies with its session. A check made with
   * a delegated token is allowed only when the user and every actor are
   * (see `Permissions`).
   */
  async #exchangeGrant(p: Map<string, string>, client: ResolvedClient, withSecret: boolean, onEvent: OAuthEventSink): Promise<OAuthTokenResponse> {
    if (!withSecret) throw invalidClient('token exchange requires client authentication');
    const subjectToken = p.get('subject_token');
    if (subjectToken === undefined) throw invalidRequest('subject_token is required');
    const subjectType = p.get('subject_token_type');
    if (subjectType !== ACCESS_TOKEN_TYPE && subjectType !== JWT_TOKEN_TYPE) throw invalidRequest(`subject_token_type must be ${ACCESS_TOKEN_TYPE}`);
    const requestedType = p.get('requested_token_type');
    if (requestedType !== undefined && requestedType !== ACCESS_TOKEN_TYPE) throw invalidRequest(`requested_token_type must be ${ACCESS_TOKEN_TYPE}`);
    let claims: Record<string, unknown>;
    try {
      claims = await this.#auth.tokens.verify(subjectToken, 'access_token');
    } catch (err) {
      throw invalidGrant('subject_token is not a valid access token', err);
    }
    const sid = claims['sid'];
    const session = typeof sid === 'string' ? await this.#auth.sessions.get(sid) : undefined;
    if (session === undefined || session.user_id !== claims['sub']) throw invalidGrant('subject_token is not a live user access token');
    const user = await this.#activeUser(session.user_id);
    if (user === undefined) throw invalidGrant('subject_token is not a live user access token');

    let act = claims['act'] as Record<string, unknown> | undefined;
    const actorToken = p.get('actor_token');
    const actorType = p.get('actor_token_type');
    if (actorToken === undefined && actorType !== undefined) throw invalidRequest('actor_token_type without actor_token');
    if (actorToken !== undefined) {
      if (actorType !== ACCESS_TOKEN_TYPE && actorType !== JWT_TOKEN_TYPE) throw invalidRequest(`actor_token_type must be ${ACCESS_TOKEN_TYPE}`);
      let actor: Record<string, unknown>;
      try {
        actor = await this.#auth.tokens.verify(actorToken, 'access_token');
      } catch (err) {
        throw invalidGrant('actor_token is not a valid access token', err);
      }
      if (client.fromFlags || client.record.kind !== 'service_account' || actor['gty'] !== GRANT_CLIENT_CREDENTIALS || actor['sub'] !== client.record.client_id) {
        throw invalidGrant("actor_token must be the requesting service account's own client_credentials token");
      }
      act = { sub: client.record.client_id, fga_subject: serviceAccountSubject(client.record.client_id), ...(act === undefined ? {} : { act }) };
      let depth = 0;
      for (let a: unknown = act; a !== undefined && a !== null; a = (a as Record<string, unknown>)['act']) depth++;
      if (depth > MAX_ACTORS) throw invalidRequest(`a delegation chain names at most ${MAX_ACTORS} actors`);
    }

    const subjectScope = Array.isArray(claims['scope']) ? claims['scope'].map(String) : [];
    const requested = [...new Set((p.get('scope') ?? '').split(' ').filter(Boolean))];
    const wider = requested.find((s) => !subjectScope.includes(s));
    if (wider !== undefined) throw new LatchkeyError('invalid_argument', `scope ${wider} is not in the subject token's scope`, { reason: 'invalid_scope' });
    const scope = requested.length > 0 ? requested : subjectScope;

    const audiences = Array.isArray(claims['aud']) ? claims['aud'].map(String) : [String(claims['aud'])];
    const subjectAudiences = audiences.filter((a) => a !== this.#auth.options.clientId);
    const audienceParam = p.get('audience');
    const resource = p.get('resource');
    if (audienceParam !== undefined && resource !== undefined && audienceParam !== resource) throw invalidRequest('audience and resource name different targets');
    const target = audienceParam ?? resource;
    let audience = subjectAudiences;
    if (target !== undefined) {
      const allowed = subjectAudiences.length > 0 ? subjectAudiences : client.record.audiences;
      if (!allowed.includes(target)) throw new LatchkeyError('invalid_argument', `audience ${target} is not allowed`, { reason: 'invalid_target' });
      audience = [target];
    }

    const now = Math.floor(this.#now() / 1000);
    const remaining = Number(claims['exp']) - now;
    const ttl = Math.max(1, Math.min(remaining, client.record.access_token_ttl ?? this.#auth.options.accessTokenTtl));
    const access = await this.#auth.tokens.sign(
      'access_token',
      user.id,
      {
        sid: session.sid,
        roles: claims['roles'],
        scope,
        login_method: claims['login_method'],
        client_id: client.record.client_id,
        gty: GRANT_TOKEN_EXCHANGE,
        ...(act === undefined ? {} : { act }),
      },
      ttl,
      audience,
    );
    await onEvent({ action: 'token.issued', userId: user.id, metadata: { grant_type: GRANT_TOKEN_EXCHANGE, delegation: actorToken !== undefined, ...(act === undefined ? {} : { act }) } });
    return { access_token: access.token, issued_token_type: ACCESS_TOKEN_TYPE, token_type: 'Bearer', expires_in: ttl, scope: scope.join(' ') };
  }

  async #codeGrant(p: Map<string, string>, client: ResolvedClient, withSecret: boolean, onEvent: OAuthEventSink, jkt?: string): Promise<OAuthTokenResponse> {
    const code = p.get('code');
    if (code === undefined) throw invalidRequest('code is required');
    const redirectUri = p.get('redirect_uri');
    if (redirectUri === undefined) throw invalidRequest('redirect_uri is required');
    const r = await this.codes.redeem(code);
    if (r.kind === 'replayed') {
      await onEvent({ action: 'token.code_reuse' });
      throw invalidGrant('authorization code was already used; the tokens issued from it are revoked');
    }
    if (r.kind === 'unknown') throw invalidGrant('invalid authorization code');
    const g = r.grant;
    if (g.expires_ms <= this.#now()) throw invalidGrant('authorization code expired');
    if (!safeEqual(g.client_id, client.record.client_id)) throw invalidGrant('authorization code was issued to another client');
    // RFC 6749 §4.1.3: the same redirect_uri as in the authorization request, compared exactly.
    if (g.redirect_uri !== redirectUri) throw invalidGrant('redirect_uri does not match the authorization request');
    const verifier = p.get('code_verifier');
    if (g.code_challenge !== undefined) {
      // A plain code issued while --enable-pkce-plain was on is not redeemed once it is off.
      if (g.code_challenge_method !== 'S256' && this.#o.allowPkcePlain !== true) throw invalidGrant('authorization code was issued with code_challenge_method plain, which is not allowed');
      if (verifier === undefined) throw invalidGrant('code_verifier is required');
      if (!PKCE_VALUE.test(verifier)) throw invalidGrant('code_verifier must be 43 to 128 characters of [A-Za-z0-9-._~]');
      const derived = g.code_challenge_method === 'S256' ? createHash('sha256').update(verifier, 'ascii').digest('base64url') : verifier;
      if (!safeEqual(derived, g.code_challenge)) throw invalidGrant('code_verifier does not match the code_challenge');
    } else {
      if (verifier !== undefined) throw invalidGrant('code_verifier given, but the authorization request had no code_challenge');
      // Without PKCE nothing but the client secret binds the code to the client that asked for it.
      if (!withSecret) throw invalidClient('client_secret is required for a code issued without code_challenge');
    }
    checkGrantKey(g.dpop_jkt, jkt, true);
    // RFC 8707 §2.2: the token request may name the resource the authorization request named, and no other.
    const resource = grantedResource(p, g.resource);
    if ((await this.#auth.sessions.get(g.sid)) === undefined) throw invalidGrant('the session that authorized this code has ended');
    const user = await this.#activeUser(g.user_id);
    if (user === undefined) throw invalidGrant('invalid authorization code');
    const roles = g.roles.filter((role) => user.roles.includes(role));
    const session = await this.#childSession(user, g, roles, g.scope, client.fromFlags ? undefined : client.record.client_id, jkt, resource);
    if (!(await this.codes.bindSession(r.hash, session.sid))) {
      await this.#auth.sessions.end(session.sid);
      await onEvent({ action: 'token.code_reuse', userId: user.id });
      throw invalidGrant('authorization code was already used; the tokens issued from it are revoked');
    }
    const out = await issueTokens(this.#auth, user, session, '', 'new', g.nonce);
    await onEvent({ action: 'token.issued', userId: user.id, metadata: { grant_type: 'authorization_code', dpop: jkt !== undefined } });
    return tokenResponse(out, g.scope, jkt);
  }

  /**
   * `client_credentials` (RFC 6749 §4.4): the client, authenticated with its
   * secret, gets an access token about itself (`sub` = client id, `gty`
   * `client_credentials`) for resource servers that verify it by the JWKS or
   * by introspection. It has no session, so it opens none of the user
   * operations, and no refresh or id token (§4.4.3); it lives
   * `--access-token-expires-in` and cannot be revoked before. No scope is
   * defined for a client, so a requested one is `invalid_scope`.
   */
  async #clientGrant(p: Map<string, string>, client: ResolvedClient, withSecret: boolean, onEvent: OAuthEventSink, jkt?: string): Promise<OAuthTokenResponse> {
    if (!withSecret) throw invalidClient('client_credentials requires the client secret');
    if (!client.fromFlags) return this.#serviceAccountGrant(p, client.record, onEvent, jkt);
    if (jkt !== undefined) throw invalidRequest('DPoP-bound tokens are issued to registered service accounts only');
    requestedResource(p, []);
    const requested = (p.get('scope') ?? '').split(' ').filter(Boolean);
    if (requested.length > 0) throw new LatchkeyError('invalid_argument', 'client_credentials grants no scope', { reason: 'invalid_scope' });
    const clientId = this.#auth.options.clientId;
    const access = await this.#auth.tokens.sign('access_token', clientId, { client_id: clientId, gty: 'client_credentials', scope: [] });
    await onEvent({ action: 'token.issued', metadata: { grant_type: 'client_credentials' } });
    return { access_token: access.token, token_type: 'Bearer', expires_in: this.#auth.options.accessTokenTtl, scope: '' };
  }

  /**
   * `client_credentials` of a registered service account: an access token
   * whose subject is the service account (`sub` its client id, FGA subject
   * `service_account:<client_id>`), with the roles it holds and the scopes
   * it asked for among those it was given (all of them when it asks for
   * none), living the client's `access_token_ttl` or the server's default.
   */
  async #serviceAccountGrant(p: Map<string, string>, r: ResolvedClient['record'], onEvent: OAuthEventSink, jkt?: string): Promise<OAuthTokenResponse> {
    const requested = [...new Set((p.get('scope') ?? '').split(' ').filter(Boolean))];
    const wider = requested.find((s) => !r.scopes.includes(s));
    if (wider !== undefined) throw new LatchkeyError('invalid_argument', `scope ${wider} is not allowed for this client`, { reason: 'invalid_scope' });
    const scope = requested.length > 0 ? requested : r.scopes;
    const resource = requestedResource(p, r.audiences);
    const ttl = r.access_token_ttl ?? this.#auth.options.accessTokenTtl;
    const access = await this.#auth.tokens.sign(
      'access_token',
      r.client_id,
      { client_id: r.client_id, gty: GRANT_CLIENT_CREDENTIALS, scope, roles: r.roles, fga_subject: serviceAccountSubject(r.client_id), ...(jkt === undefined ? {} : { cnf: { jkt } }) },
      ttl,
      resource === undefined ? [] : [resource],
    );
    await onEvent({ action: 'token.issued', metadata: { grant_type: GRANT_CLIENT_CREDENTIALS, subject: serviceAccountSubject(r.client_id), dpop: jkt !== undefined } });
    return { access_token: access.token, token_type: jkt === undefined ? 'Bearer' : 'DPoP', expires_in: ttl, scope: scope.join(' ') };
  }

  /**
   * `refresh_token` (RFC 6749 §6). DPoP (RFC 9449 §5): a grant whose tokens
   * are bound needs a proof; a public client's by the same key (its refresh
   * token is bound), a confidential client's by any key (its refresh token
   * is bound to its authentication), which the new tokens are then bound
   * to. A proof on an unbound grant binds it from then on.
   */
  async #refreshGrant(p: Map<string, string>, client: ResolvedClient, onEvent: OAuthEventSink, jkt: string | undefined, publicClient: boolean): Promise<OAuthTokenResponse> {
    const refreshToken = p.get('refresh_token');
    if (refreshToken === undefined) throw invalidRequest('refresh_token is required');
    let scope: string[];
    let userId: string;
    let sid: unknown;
    try {
      const claims = await this.#auth.tokens.verify(refreshToken, 'refresh_token');
      scope = Array.isArray(claims['scope']) ? claims['scope'].map(String) : [];
      userId = claims.sub;
      sid = claims['sid'];
      // A refresh token issued to a registered client is redeemed by that client only.
      const owner = typeof claims['client_id'] === 'string' ? claims['client_id'] : this.#auth.options.clientId;
      if (!safeEqual(owner, client.record.client_id)) throw invalidGrant('the refresh token was issued to another client');
    } catch (err) {
      throw invalidGrant('invalid refresh token', err);
    }
    // RFC 6749 §6: a refresh may not widen the scope (narrowing is not offered: the session keeps its scope).
    const requested = (p.get('scope') ?? '').split(' ').filter(Boolean);
    const wider = requested.find((s) => !scope.includes(s));
    if (wider !== undefined) throw new LatchkeyError('invalid_argument', `scope ${wider} was not granted`, { reason: 'invalid_scope' });
    // Checked before the rotation, so that a refused proof does not spend the refresh token.
    const grant = typeof sid === 'string' ? await this.#auth.sessions.get(sid) : undefined;
    checkGrantKey(grant?.jkt, jkt, publicClient);
    grantedResource(p, grant?.resource);
    let out: Awaited<ReturnType<AuthService['refresh']>>;
    try {
      out = await this.#auth.refresh(refreshToken, jkt);
    } catch (err) {
      if (err instanceof LatchkeyError && err.reason === 'refresh_token_reused') await onEvent({ action: 'token.refresh_token_reuse', userId });
      if (err instanceof LatchkeyError && err.code === 'unauthenticated') throw invalidGrant('invalid refresh token', err);
      throw err;
    }
    await onEvent({ action: 'token.refreshed', userId, metadata: { dpop: jkt !== undefined } });
    return tokenResponse(out, scope, jkt);
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

function tokenResponse(out: { access_token?: string | undefined; id_token?: string | undefined; refresh_token?: string | undefined; expires_in?: number | undefined }, scope: readonly string[], jkt?: string): OAuthTokenResponse {
  const body: OAuthTokenResponse = { access_token: out.access_token ?? '', token_type: jkt === undefined ? 'Bearer' : 'DPoP', expires_in: out.expires_in ?? 0, scope: scope.join(' ') };
  if (scope.includes('openid') && out.id_token !== undefined) body.id_token = out.id_token;
  if (out.refresh_token !== undefined) body.refresh_token = out.refresh_token;
  return body;
}
