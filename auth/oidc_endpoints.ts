/**
 * The OpenID Connect endpoints that answer about tokens and sessions the
 * provider (`OAuthServer`, `oauth_server.ts`) has already issued:
 * `/userinfo` (OpenID Connect Core §5.3), `/oauth/introspect` (RFC 7662)
 * and `/logout` (OpenID Connect RP-Initiated Logout 1.0). `OAuthServer`
 * builds one and forwards those three endpoints to it; authorization and
 * token issuance stay there.
 *
 * Errors are {@link LatchkeyError}s whose `reason` is the RFC 6749 or RFC
 * 6750 error code (`invalid_request`, `invalid_client`, `invalid_token`,
 * `insufficient_scope`).
 */
import { LatchkeyError } from '../engine/errors.ts';
import type { AuthService } from './auth_service.ts';
import { activeUser, invalidClient, invalidRequest, invalidToken, readParams, safeEqual, type OAuthParams } from './oauth_common.ts';
import type { ClientRegistry } from './client_registry.ts';

export interface OidcEndpointsOptions {
  auth: AuthService;
  /** `--client-secret`. */
  clientSecret: string;
  /** The client registry: any client that authenticates with a credential may introspect. */
  registry: ClientRegistry;
  /** The server's redirect rule (`--allowed-origins`); throws for a URI that may not be redirected to. */
  checkRedirectUri: (uri: string) => URL;
}

/** The claims each scope releases at `/userinfo` (OpenID Connect Core §5.4); `sub` is always released. */
const SCOPE_CLAIMS: Readonly<Record<string, readonly string[]>> = {
  email: ['email', 'email_verified'],
  phone: ['phone_number', 'phone_number_verified'],
  profile: ['given_name', 'family_name', 'middle_name', 'nickname', 'preferred_username', 'picture', 'gender', 'birthdate', 'locale', 'updated_at'],
};

/** What `/logout` does next: ask the user to confirm, or (sessions ended) redirect or show the signed-out page. */
export type EndSessionOutcome =
  | { kind: 'confirm'; params: Record<string, string> }
  | { kind: 'done'; redirect?: string; userId?: string };

/** `/userinfo`, `/oauth/introspect` and `/logout` of the one client this server knows. */
export class OidcEndpoints {
  readonly #auth: AuthService;
  readonly #o: OidcEndpointsOptions;

  constructor(options: OidcEndpointsOptions) {
    this.#o = options;
    this.#auth = options.auth;
  }

  // ---------------------------------------------------------------- /userinfo

  /**
   * `/userinfo` (OpenID Connect Core §5.3): the claims of the access token's
   * user, as the token's scope releases them (§5.4): `sub` always, `email`,
   * `phone` and `profile` their standard claims. The token must be a live
   * access token (its session not ended, its user neither revoked nor
   * deactivated) of a grant that included `openid`; a DPoP-bound token
   * comes with `Authorization: DPoP` and its proof (RFC 9449 §7). Errors: `unauthenticated`
   * (reason `invalid_token`), `permission_denied` (reason `insufficient_scope`).
   */
  async userinfo(accessToken: string | undefined, dpopJkt?: string): Promise<Record<string, unknown>> {
    if (accessToken === undefined || accessToken === '') throw new LatchkeyError('unauthenticated', 'an access token is required', { reason: 'invalid_token' });
    let principal: Awaited<ReturnType<AuthService['authenticate']>>;
    try {
      // `dpopJkt`: the token came with `Authorization: DPoP` and a proof by that key (a bound token is no bearer token).
      principal = dpopJkt === undefined ? await this.#auth.authenticate({ bearer: accessToken }) : await this.#auth.authenticateBound(accessToken, dpopJkt);
    } catch (err) {
      if (err instanceof LatchkeyError && err.code === 'unauthenticated') throw invalidToken(err);
      throw err;
    }
    const scope = principal?.claims?.['scope'];
    const scopes = Array.isArray(scope) ? scope.map(String) : [];
    if (principal === undefined) throw invalidToken();
    if (!scopes.includes('openid')) throw new LatchkeyError('permission_denied', 'the access token was not granted the openid scope', { reason: 'insufficient_scope' });
    const user = await activeUser(this.#auth, principal.userId);
    if (user === undefined) throw invalidToken();
    const all: Record<string, unknown> = {
      email: user.email,
      email_verified: user.email !== null && user.email_verified_at !== null,
      phone_number: user.phone_number,
      phone_number_verified: user.phone_number !== null && user.phone_number_verified_at !== null,
      given_name: user.given_name,
      family_name: user.family_name,
      middle_name: user.middle_name,
      nickname: user.nickname,
      preferred_username: user.email ?? user.phone_number,
      picture: user.picture,
      gender: user.gender,
      birthdate: user.birthdate,
      locale: user.locale,
      updated_at: user.updated_at,
    };
    const out: Record<string, unknown> = { sub: user.id };
    for (const s of scopes) {
      for (const claim of SCOPE_CLAIMS[s] ?? []) {
        // §5.3.2: claims without a value are omitted rather than sent as null.
        if (all[claim] !== null && all[claim] !== undefined) out[claim] = all[claim];
      }
    }
    return out;
  }

  // ---------------------------------------------------------------- /oauth/introspect

  /**
   * `/oauth/introspect` (RFC 7662): whether `token` is an active access or
   * refresh token, and its claims when it is. Active means: signed by this
   * server, unexpired, its session alive (not logged out, revoked, replaced or
   * ended by revoke_access), for a refresh token the live one of its
   * session, and its user neither revoked nor deactivated. Anything else is
   * `{active: false}` and nothing more (§2.2). The caller must authenticate
   * as the client with its secret (§2.1). Errors: `invalid_client`,
   * `invalid_request`.
   */
  async introspect(params: OAuthParams, authorization: string | undefined): Promise<Record<string, unknown>> {
    const p = readParams(params);
    const client = await this.#o.registry.authenticate(p, authorization);
    if (client.method === 'none') throw invalidClient('introspection requires the client secret');
    const token = p.get('token');
    if (token === undefined) throw invalidRequest('token is required');
    const order = p.get('token_type_hint') === 'refresh_token' ? (['refresh_token', 'access_token'] as const) : (['access_token', 'refresh_token'] as const);
    for (const type of order) {
      let claims: Record<string, unknown>;
      try {
        ({ claims } = await this.#auth.validateJwtToken({ token_type: type, token }));
      } catch (err) {
        if (err instanceof LatchkeyError && err.code === 'unauthenticated') continue;
        throw err;
      }
      const user = await activeUser(this.#auth, String(claims['sub']));
      if (user === undefined) return { active: false };
      const scope = Array.isArray(claims['scope']) ? claims['scope'].map(String).join(' ') : undefined;
      const out: Record<string, unknown> = {
        active: true,
        token_type: type === 'access_token' ? (claims['cnf'] === undefined ? 'Bearer' : 'DPoP') : 'refresh_token',
        client_id: typeof claims['client_id'] === 'string' ? claims['client_id'] : this.#auth.options.clientId,
        sub: claims['sub'],
        iss: claims['iss'],
        aud: claims['aud'],
        exp: claims['exp'],
        iat: claims['iat'],
        jti: claims['jti'],
      };
      if (scope !== undefined) out['scope'] = scope;
      if (claims['nbf'] !== undefined) out['nbf'] = claims['nbf'];
      if (claims['sid'] !== undefined) out['sid'] = claims['sid'];
      // RFC 8693 §4.1 and §4.4: who acts for the subject, and which client may use the token.
      if (claims['act'] !== undefined) out['act'] = claims['act'];
      if (claims['gty'] !== undefined) out['gty'] = claims['gty'];
      // RFC 9449 §6.2: the key a DPoP-bound token is bound to.
      if (claims['cnf'] !== undefined) out['cnf'] = claims['cnf'];
      const username = user.email ?? user.phone_number;
      if (username !== null) out['username'] = username;
      return out;
    }
    const machine = await this.#clientToken(token);
    if (machine !== undefined) {
      const scope = Array.isArray(machine['scope']) ? machine['scope'].map(String).join(' ') : '';
      const out: Record<string, unknown> = { active: true, token_type: machine['cnf'] === undefined ? 'Bearer' : 'DPoP', client_id: machine['sub'], sub: machine['sub'], iss: machine['iss'], aud: machine['aud'], exp: machine['exp'], iat: machine['iat'], jti: machine['jti'], scope };
      if (typeof machine['fga_subject'] === 'string') out['fga_subject'] = machine['fga_subject'];
      if (Array.isArray(machine['roles'])) out['roles'] = machine['roles'];
      // RFC 9449 §6.2: the key a DPoP-bound token is bound to.
      if (machine['cnf'] !== undefined) out['cnf'] = machine['cnf'];
      return out;
    }
    return { active: false };
  }

  /** A live client_credentials access token's claims, or undefined. */
  async #clientToken(token: string): Promise<Record<string, unknown> | undefined> {
    let claims: Record<string, unknown>;
    try {
      claims = await this.#auth.tokens.verify(token, 'access_token');
    } catch (err) {
      if (err instanceof LatchkeyError && err.code === 'unauthenticated') return undefined;
      throw err;
    }
    if (claims['gty'] !== 'client_credentials') return undefined;
    if (claims['sub'] === this.#auth.options.clientId) return claims;
    // A registered service account's token is active while its client is registered and enabled.
    const client = await this.#o.registry.find(String(claims['sub']));
    return client !== undefined && !client.fromFlags && !client.record.disabled && client.record.kind === 'service_account' ? claims : undefined;
  }

  // ---------------------------------------------------------------- /logout

  /**
   * `/logout` (OpenID Connect RP-Initiated Logout 1.0). With a valid
   * `id_token_hint` (signed here, unexpired, for this client) it ends the
   * grant's session named in the token and the browser session when it is
   * the same user's, then redirects to `post_logout_redirect_uri` (checked
   * like every redirect of the server, with `state` added) or shows the
   * signed-out page. Without a valid hint nothing ends before the user
   * confirms (`confirmed`, the form of the confirmation page). A
   * `post_logout_redirect_uri` is honoured only with a valid hint or this
   * server's `client_id`. Errors: `invalid_request`.
   */
  async endSession(params: OAuthParams, sessionCookie: string | undefined, confirmed: boolean): Promise<EndSessionOutcome> {
    const p = readParams(params);
    const clientId = p.get('client_id');
    if (clientId !== undefined && !safeEqual(clientId, this.#auth.options.clientId)) throw invalidRequest('unknown client_id');
    const hintText = p.get('id_token_hint');
    let hint: { sub: string; sid?: string } | undefined;
    if (hintText !== undefined) {
      try {
        const claims = await this.#auth.tokens.verify(hintText, 'id_token');
        hint = { sub: claims.sub, ...(typeof claims['sid'] === 'string' ? { sid: claims['sid'] } : {}) };
      } catch (err) {
        if (!(err instanceof LatchkeyError && err.code === 'unauthenticated')) throw err;
      }
    }
    const postLogout = p.get('post_logout_redirect_uri');
    let redirect: URL | undefined;
    if (postLogout !== undefined) {
      if (hint === undefined && clientId === undefined) throw invalidRequest('post_logout_redirect_uri needs a valid id_token_hint or the client_id');
      try {
        redirect = this.#o.checkRedirectUri(postLogout);
      } catch (err) {
        throw new LatchkeyError('invalid_argument', 'post_logout_redirect_uri is not allowed', { reason: 'invalid_request', cause: err });
      }
      const state = p.get('state');
      if (state !== undefined) redirect.searchParams.set('state', state);
    }
    if (hint === undefined && !confirmed) {
      const keep: Record<string, string> = {};
      for (const k of ['post_logout_redirect_uri', 'state', 'client_id', 'ui_locales']) {
        const v = p.get(k);
        if (v !== undefined) keep[k] = v;
      }
      return { kind: 'confirm', params: keep };
    }
    const browser = sessionCookie === undefined ? undefined : await this.#auth.sessions.fromCookie(sessionCookie);
    if (hint?.sid !== undefined) {
      const granted = await this.#auth.sessions.get(hint.sid);
      if (granted !== undefined && granted.user_id === hint.sub) await this.#auth.sessions.end(granted.sid);
    }
    let userId = hint?.sub;
    if (browser !== undefined && (hint === undefined || browser.user_id === hint.sub)) {
      await this.#auth.sessions.end(browser.sid);
      userId = browser.user_id;
    }
    return { kind: 'done', ...(redirect === undefined ? {} : { redirect: redirect.toString() }), ...(userId === undefined ? {} : { userId }) };
  }
}
