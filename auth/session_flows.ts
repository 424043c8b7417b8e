/**
 * Sessions and tokens of the identity service: opening the session of a
 * proven identity, refreshing and rotating it (`session`, the OAuth token
 * endpoint's refresh), ending it (`logout`, `revoke`), resolving credentials
 * into a principal (`authenticate`) and `validate_jwt_token` /
 * `validate_session`. {@link AuthService} delegates to it; errors are
 * {@link LatchkeyError}s with precise codes.
 */
import { LatchkeyError } from '../engine/errors.ts';
import type { ResolvedAuthOptions } from './options.ts';
import type { SessionLookup, SessionManager, SessionRecord } from './sessions.ts';
import { TOKEN_TYPES, type TokenClaims, type TokenService, type TokenType } from './tokens.ts';
import type { UserRecord, UserStore } from './user_store_types.ts';
import { issueTokens, refreshClaims } from './issue_tokens.ts';
import { actorSubjects, type Permissions, type RequiredRelation } from './permissions.ts';
import type { TokenScript } from './token_script.ts';
import { invalidArgument } from './profile.ts';
import { bearerPrincipal, cookiePrincipal, presentedSession } from './session_principals.ts';
import { OrgSessionRules, orgSessionExpired, ORGANIZATIONS_SCOPE, type OrgMemberships } from './org_sessions.ts';
import { sessionCookieOf, toPublicUser, type AuthCallContext, type AuthResponse, type AuthResult, type PublicUser, type UserPrincipal } from './public_user.ts';

/** `unauthenticated` with `reason` (default `unauthenticated`) and the message every failed API authentication gives. */
export const unauthenticated = (reason = 'unauthenticated', message = 'unauthorized'): LatchkeyError => new LatchkeyError('unauthenticated', message, { reason });
const DEFAULT_SCOPE = ['openid', 'email', 'profile', 'offline_access'];

/** The roles a login asks for, which the user must hold (`permission_denied` `invalid_roles`); none asked: all the user's roles. */
export function requestedRoles(user: UserRecord, requested: readonly string[] | undefined): string[] {
  if (requested === undefined || requested.length === 0) return [...user.roles];
  for (const r of requested) if (!user.roles.includes(r)) throw new LatchkeyError('permission_denied', 'unauthorized', { reason: 'invalid_roles' });
  return [...new Set(requested)];
}

export interface SessionFlowsDeps {
  options: ResolvedAuthOptions;
  users: UserStore;
  sessions: SessionManager;
  tokens: TokenService;
  permissions: Permissions;
  tokenScript: TokenScript | undefined;
  /** The organization memberships behind `org_id` claims (undefined: no organizations on this server). */
  organizations?: OrgMemberships | undefined;
}

/** What a new session is opened with. */
export interface SessionOpening {
  roles: string[];
  scope: readonly string[] | undefined;
  loginMethod: string;
  message: string;
  amr?: string[] | undefined;
}

export class SessionFlows {
  readonly #d: SessionFlowsDeps;
  readonly #org: OrgSessionRules;

  constructor(deps: SessionFlowsDeps) {
    this.#d = deps;
    this.#org = new OrgSessionRules({ organizations: deps.organizations, sessions: deps.sessions, nowSeconds: () => this.#nowSeconds() });
  }

  #nowSeconds(): number {
    return Math.floor(this.#d.options.now() / 1000);
  }

  /** The user if it exists, is not deactivated and not revoked. */
  async activeUser(userId: string): Promise<UserRecord | undefined> {
    const user = await this.#d.users.findById(userId);
    if (user === undefined || user.deactivated_at !== null || user.revoked_timestamp !== null) return undefined;
    return user;
  }

  /**
   * {@link activeUser} when the store answers without a promise and the user
   * is active; undefined otherwise (`activeUser` then decides, a missing or
   * inactive user included).
   */
  activeUserNow(userId: string): UserRecord | undefined {
    const user = this.#d.users.findByIdNow?.(userId);
    return user === undefined || user.deactivated_at !== null || user.revoked_timestamp !== null ? undefined : user;
  }

  // ---------------------------------------------------------------- opening a session

  /** Ends the session whose cookie the request carried, if any (a login never keeps a presented session: session fixation, B4). */
  async endPresentedSession(ctx: AuthCallContext): Promise<void> {
    if (ctx.sessionCookie === undefined) return;
    const s = await this.#d.sessions.fromCookie(ctx.sessionCookie);
    if (s !== undefined) await this.#d.sessions.end(s.sid);
  }

  /** Opens a session for `user` and issues its cookie and tokens. */
  async open(user: UserRecord, o: SessionOpening): Promise<AuthResult> {
    const scope = o.scope === undefined || o.scope.length === 0 ? DEFAULT_SCOPE : [...new Set(o.scope)];
    const { session, cookieToken } = await this.#d.sessions.create({
      user_id: user.id,
      roles: o.roles,
      scope,
      login_method: o.loginMethod,
      auth_time: this.#nowSeconds(),
      ...(o.amr === undefined ? {} : { amr: o.amr }),
    });
    const response = await this.#issueTokens(user, session, o.message);
    return { response, session: { token: cookieToken, maxAgeSeconds: this.#d.sessions.cookieTtl, sid: session.sid }, record: user };
  }

  /**
   * Opens a session for a user whose identity another flow has proven
   * (email verification, OTP/TOTP, magic link, OAuth): the same session,
   * cookie and tokens as a password login. Throws `unauthenticated` for an
   * unknown, deactivated or revoked user, `permission_denied` for roles the
   * user does not hold.
   */
  async openFor(
    userId: string,
    o: { loginMethod: string; roles?: readonly string[] | undefined; scope?: readonly string[] | undefined; message?: string; amr?: string[] | undefined },
    ctx: AuthCallContext = {},
  ): Promise<AuthResult> {
    const user = await this.activeUser(userId);
    if (user === undefined) throw unauthenticated();
    const roles = requestedRoles(user, o.roles);
    await this.endPresentedSession(ctx);
    return this.open(user, { roles, scope: o.scope, loginMethod: o.loginMethod, message: o.message ?? 'Logged in successfully', amr: o.amr });
  }

  /** Signs access + id (+ refresh with `offline_access`) tokens for a session (see {@link issueTokens}). */
  async #issueTokens(user: UserRecord, session: SessionRecord, message: string, refresh: { token: string } | 'new' = 'new'): Promise<AuthResponse> {
    const d = this.#d;
    const orgClaims = await this.#orgClaims(session);
    return issueTokens({ tokens: d.tokens, sessions: d.sessions, options: d.options, tokenScript: d.tokenScript, orgClaims }, user, session, message, refresh);
  }

  /**
   * The organization claims of a session's tokens: `org_id` and `org_roles`
   * of its active organization while the user is still a member, and the
   * `organizations` list when the scope asks for it.
   */
  async #orgClaims(session: SessionRecord): Promise<Record<string, unknown> | undefined> {
    const orgs = this.#d.organizations;
    if (orgs === undefined) return undefined;
    const out: Record<string, unknown> = {};
    if (session.org_id !== undefined && session.org_id !== '') {
      const m = await orgs.rolesOf(session.org_id, session.user_id);
      if (m !== undefined) {
        out['org_id'] = session.org_id;
        out['org_roles'] = m.roles;
      }
    }
    if (session.scope.includes(ORGANIZATIONS_SCOPE)) out['organizations'] = await orgs.organizationsOf(session.user_id);
    return out;
  }

  /**
   * Makes `orgId` the session's active organization (empty: none) and issues
   * the session's tokens again, with a new cookie. The caller has checked
   * that the user may enter the organization.
   */
  async reissueWithOrganization(session: SessionRecord, orgId: string, scope: readonly string[] | undefined, sessionLifetime = 0): Promise<AuthResult> {
    const user = await this.activeUser(session.user_id);
    if (user === undefined) throw unauthenticated();
    // An organization whose session lifetime has passed since this sign-in is entered only after signing in again.
    if (orgId !== '' && this.#org.lifetimePassed(session, sessionLifetime)) {
      throw new LatchkeyError('permission_denied', 'this organization\'s session lifetime has passed since you signed in; sign in again to enter it', { reason: 'reauthentication_required' });
    }
    const patch: Partial<Pick<SessionRecord, 'scope' | 'org_id' | 'org_expires_at'>> = {
      org_id: orgId === '' ? undefined : orgId,
      org_expires_at: orgId !== '' && sessionLifetime > 0 ? session.auth_time + sessionLifetime : undefined,
    };
    if (scope !== undefined && scope.length > 0) patch.scope = [...new Set(scope)];
    const { session: next, cookieToken } = await this.#d.sessions.rotateCookie(session, patch);
    const response = await this.#issueTokens(user, next, orgId === '' ? 'Left the organization' : 'Switched organization');
    return { response, session: { token: cookieToken, maxAgeSeconds: this.#d.sessions.cookieTtl }, record: user };
  }

  /** The session of the caller: from the session cookie, else the bearer token's session. */
  async sessionOfCaller(ctx: AuthCallContext): Promise<SessionRecord | undefined> {
    let session: SessionRecord | undefined;
    const seen: SessionLookup = {};
    if (ctx.sessionCookie !== undefined) session = await this.#d.sessions.fromCookie(ctx.sessionCookie, seen);
    if (session === undefined && ctx.principal?.kind === 'user' && ctx.principal.sessionId !== undefined) session = await this.#d.sessions.get(ctx.principal.sessionId, seen);
    if (seen.orgExpired === true) throw orgSessionExpired();
    if (session !== undefined && ctx.principal?.kind === 'user' && session.user_id !== ctx.principal.userId) return undefined;
    if (session !== undefined) await this.#org.require(session);
    return session;
  }

  // ---------------------------------------------------------------- refresh and end

  /**
   * `session`: refreshes the caller's session (from the session cookie, the
   * bearer token's session, or a `refresh_token`), rotating the cookie and
   * every token. With a refresh token, rotation is atomic and a replayed
   * rotated token revokes the whole family (`unauthenticated`,
   * reason `refresh_token_reused`). `required_relations` must all hold
   * (`permission_denied`, reason `relation_denied`).
   */
  async session(input: {
    roles?: readonly string[] | undefined;
    scope?: readonly string[] | undefined;
    required_relations?: readonly RequiredRelation[] | undefined;
    refresh_token?: string | undefined;
  }, ctx: AuthCallContext = {}): Promise<AuthResult> {
    const sessions = this.#d.sessions;
    let session: SessionRecord | undefined;
    let rotated: { token: string } | undefined;
    const seen: SessionLookup = {};
    if (input.refresh_token !== undefined && input.refresh_token !== '') {
      const r = await this.#rotateRefreshToken(input.refresh_token);
      session = r.session;
      rotated = { token: r.token };
    } else if (ctx.sessionCookie !== undefined) {
      session = await sessions.fromCookie(ctx.sessionCookie, seen);
    }
    if (session === undefined && ctx.principal?.kind === 'user' && ctx.principal.sessionId !== undefined) {
      session = await sessions.get(ctx.principal.sessionId, seen);
    }
    if (session === undefined) throw seen.orgExpired === true ? orgSessionExpired() : unauthenticated();
    await this.#org.require(session);
    const user = await this.activeUser(session.user_id);
    if (user === undefined) {
      await sessions.end(session.sid);
      throw unauthenticated();
    }
    const roles = input.roles !== undefined && input.roles.length > 0 ? requestedRoles(user, input.roles) : session.roles.filter((r) => user.roles.includes(r));
    await this.#d.permissions.requireRelations(user.id, input.required_relations);
    const scope = input.scope !== undefined && input.scope.length > 0 ? [...new Set(input.scope)] : session.scope;
    const { session: next, cookieToken } = await sessions.rotateCookie(session, { roles, scope });
    const response = await this.#issueTokens(user, next, 'Session refreshed', rotated ?? 'new');
    return { response, session: { token: cookieToken, maxAgeSeconds: sessions.cookieTtl, sid: next.sid } };
  }

  /**
   * Verifies a refresh token and atomically moves its lineage to a newly
   * signed one. Exactly one of concurrent uses wins; the others are refused
   * (`unauthenticated`, reason `refresh_token_reused`), and a replay after the
   * grace period ends the session, revoking the family.
   */
  async #rotateRefreshToken(refreshToken: string, proven?: string): Promise<{ session: SessionRecord; token: string }> {
    const { tokens, sessions } = this.#d;
    const claims = await tokens.verify(refreshToken, 'refresh_token');
    const sid = String(claims['sid'] ?? '');
    const seen: SessionLookup = {};
    const session = await sessions.get(sid, seen);
    if (seen.orgExpired === true) throw orgSessionExpired();
    if (session === undefined || session.user_id !== claims.sub) throw unauthenticated('invalid_token', 'invalid token');
    await this.#org.require(session);
    // A DPoP-bound grant's refresh token is redeemed at the token endpoint with a proof only (RFC 9449 §5).
    if (session.jkt !== undefined && proven === undefined) throw unauthenticated('invalid_token', 'invalid token');
    const next = await tokens.sign('refresh_token', session.user_id, refreshClaims(session));
    const outcome = await sessions.rotateRefresh(sid, String(claims.jti), next.jti);
    if (outcome !== 'rotated') throw unauthenticated(outcome === 'unknown' ? 'invalid_token' : 'refresh_token_reused', 'invalid token');
    return { session, token: next.token };
  }

  /**
   * Rotates a refresh token outside a cookie session (the OAuth token
   * endpoint): new access, id and refresh tokens, same session. `dpopJkt`:
   * the key a DPoP proof of the request proved (the caller checked it
   * against the grant's); the session's tokens are bound to it from now on.
   * A bound session's token is refused without one.
   */
  async refresh(refreshToken: string, dpopJkt?: string): Promise<AuthResponse> {
    const rotated = await this.#rotateRefreshToken(refreshToken, dpopJkt);
    let session = rotated.session;
    const user = await this.activeUser(session.user_id);
    if (user === undefined) {
      await this.#d.sessions.end(session.sid);
      throw unauthenticated('invalid_token', 'invalid token');
    }
    // Only the rotation that won rebinds, so concurrent refreshes cannot leave the session on a loser's key.
    if (dpopJkt !== undefined && dpopJkt !== session.jkt) session = (await this.#d.sessions.rotateCookie(session, { jkt: dpopJkt })).session;
    return this.#issueTokens(user, session, 'Session refreshed', { token: rotated.token });
  }

  /** `logout`: ends the caller's session server-side (its cookie, tokens and refresh lineage). */
  async logout(ctx: AuthCallContext): Promise<{ message: string }> {
    let sid: string | undefined;
    if (ctx.principal?.kind === 'user') sid = ctx.principal.sessionId;
    if (sid === undefined && ctx.sessionCookie !== undefined) sid = (await this.#d.sessions.fromCookie(ctx.sessionCookie))?.sid;
    if (sid === undefined) throw unauthenticated();
    await this.#d.sessions.end(sid);
    return { message: 'Logged out successfully' };
  }

  /** `revoke`: ends the session (family) of a refresh token. Unknown or invalid tokens answer the same. */
  async revoke(input: { refresh_token: string }): Promise<{ message: string }> {
    try {
      const claims = await this.#d.tokens.verify(input.refresh_token, 'refresh_token');
      const sid = String(claims['sid'] ?? '');
      if (await this.#d.sessions.isRefreshLive(sid, String(claims.jti))) await this.#d.sessions.end(sid);
    } catch (err) {
      if (!(err instanceof LatchkeyError) || err.code !== 'unauthenticated') throw err;
    }
    // RFC 7009 §2.2: the answer does not tell whether the token was valid.
    return { message: 'Token revoked successfully' };
  }

  // ---------------------------------------------------------------- credentials

  /**
   * Resolves user credentials into a principal: a bearer access token
   * (signature, claims, type and a live session) or a session cookie. Returns
   * undefined when no user credential is present; throws `unauthenticated`
   * when one is present but invalid. A bearer token verified before, whose
   * session an in-process store holds, is accepted without a promise hop
   * (`#liveNow`); anything else, every refusal included, takes the full path.
   */
  authenticate(credentials: { bearer?: string | undefined; cookies?: Readonly<Record<string, string>> | undefined }): Promise<UserPrincipal | undefined> {
    const now = this.authenticateNow(credentials);
    return now !== undefined ? Promise.resolve(now) : this.#authenticate(credentials);
  }

  /**
   * {@link authenticate}'s principal when it is known at once (a bearer token
   * verified before, its session alive in an in-process store), without a
   * promise; `undefined` when `authenticate` must be asked.
   */
  authenticateNow(credentials: { bearer?: string | undefined; cookies?: Readonly<Record<string, string>> | undefined }): UserPrincipal | undefined {
    if (credentials.bearer === undefined) return this.#cookieNow(credentials.cookies);
    const live = this.#liveNow(credentials.bearer);
    // A session in an organization is answered here only while its organization's session lifetime, read at once,
    // holds; and a DPoP-bound token, which is never a bearer token (RFC 9449 §7.1), takes the full path, which refuses it.
    return live === undefined || !this.#org.holdsNow(live.session) || live.claims['cnf'] !== undefined ? undefined : bearerPrincipal(live);
  }

  /**
   * The principal of a session cookie whose session, read without a promise,
   * is alive and in no organization, or in one whose session lifetime, read
   * at once, holds; undefined otherwise, refusals included: `#authenticate`
   * then answers.
   */
  #cookieNow(cookies: Readonly<Record<string, string>> | undefined): UserPrincipal | undefined {
    const cookie = sessionCookieOf(cookies);
    if (cookie === undefined) return undefined;
    const session = this.#d.sessions.fromCookieNow(cookie);
    return session === null || session === undefined || !this.#org.holdsNow(session) ? undefined : cookiePrincipal(session);
  }

  /**
   * The principal of a DPoP-bound access token presented with `Authorization:
   * DPoP` once its proof was checked: `jkt` is the proof's key, which must
   * be the one the token names (`cnf.jkt`). Throws `unauthenticated`.
   */
  async authenticateBound(token: string, jkt: string): Promise<UserPrincipal> {
    let live: { claims: TokenClaims; session: SessionRecord };
    try {
      live = await this.#verifyLive(token, 'access_token');
    } catch (err) {
      if (err instanceof LatchkeyError && err.code === 'unauthenticated') throw unauthenticated();
      throw err;
    }
    const bound = (live.claims['cnf'] as { jkt?: unknown } | undefined)?.jkt;
    if (typeof bound !== 'string' || bound !== jkt) throw unauthenticated();
    await this.#org.require(live.session, 'unauthorized');
    return bearerPrincipal(live);
  }

  async #authenticate(credentials: { bearer?: string | undefined; cookies?: Readonly<Record<string, string>> | undefined }): Promise<UserPrincipal | undefined> {
    if (credentials.bearer !== undefined) {
      let live: { claims: TokenClaims; session: SessionRecord };
      try {
        live = await this.#verifyLive(credentials.bearer, 'access_token');
      } catch (err) {
        // Conventions §3: one message for every authentication failure of an API call.
        if (err instanceof LatchkeyError && err.code === 'unauthenticated') throw new LatchkeyError('unauthenticated', 'unauthorized', { reason: 'unauthenticated', cause: err });
        throw err;
      }
      await this.#org.require(live.session, 'unauthorized');
      if (live.claims['cnf'] !== undefined) throw unauthenticated();
      return bearerPrincipal(live);
    }
    const cookie = sessionCookieOf(credentials.cookies);
    if (cookie === undefined) return undefined;
    const seen: SessionLookup = {};
    const session = await this.#d.sessions.fromCookie(cookie, seen);
    if (session === undefined) throw seen.orgExpired === true ? orgSessionExpired('unauthorized') : unauthenticated();
    await this.#org.require(session, 'unauthorized');
    return cookiePrincipal(session);
  }

  /**
   * `#verifyLive` of an access token when it answers yes at once: the token
   * was verified before and is valid now, and its session, read without a
   * promise, is alive and the token's subject's. Undefined otherwise.
   */
  #liveNow(token: string): { claims: TokenClaims; session: SessionRecord } | undefined {
    const { tokens, sessions } = this.#d;
    const claims = tokens.verifiedNow(token, 'access_token');
    const sid = claims?.['sid'];
    if (claims === undefined || typeof sid !== 'string') return undefined;
    const session = sessions.getNow(sid);
    return session !== null && session !== undefined && session.user_id === claims.sub ? { claims, session } : undefined;
  }

  /** Verifies a token and that its session is alive (and, for refresh tokens, that it is the live one). */
  async #verifyLive(token: string, type: TokenType): Promise<{ claims: TokenClaims; session: SessionRecord }> {
    const { tokens, sessions } = this.#d;
    const claims = await tokens.verify(token, type);
    const sid = claims['sid'];
    const seen: SessionLookup = {};
    const session = typeof sid === 'string' ? await sessions.get(sid, seen) : undefined;
    if (seen.orgExpired === true) throw orgSessionExpired();
    if (session === undefined || session.user_id !== claims.sub) throw unauthenticated('invalid_token', 'invalid token');
    if (type === 'refresh_token' && !(await sessions.isRefreshLive(session.sid, String(claims.jti)))) throw unauthenticated('invalid_token', 'invalid token');
    return { claims, session };
  }

  // ---------------------------------------------------------------- validation

  /**
   * `validate_jwt_token`: `{is_valid: true, claims}` or an error, never
   * `is_valid: false`. Access and refresh tokens must belong to a live
   * session; id tokens too (so that revoked or deactivated users' tokens die
   * at once). Errors: `invalid_argument` (`invalid_token_type`),
   * `unauthenticated` (`invalid_token`), `permission_denied` (`missing_role`,
   * `relation_denied`).
   */
  validateJwtToken(input: ValidateJwtTokenInput): ValidJwtToken | Promise<ValidJwtToken> {
    // An access token verified before whose session an in-process store holds alive, with no relation to check:
    // answered without a promise (`#liveNow`, the same checks as `#verifyLive`); anything else takes the full path.
    if (input.token_type === 'access_token' && (input.required_relations === undefined || input.required_relations.length === 0)) {
      const live = this.#liveNow(input.token);
      // A session in an organization, and a token with an organization's claims, are compared with the organization's
      // session lifetime and the member's roles as they are now, read at once; when they cannot be, or do not hold,
      // the full path reads them and refuses.
      if (live !== undefined && this.#org.holdsNow(live.session) && this.#org.now(live.claims['org_id'], live.claims['org_roles'], live.claims.sub, live.session) !== null) {
        try {
          return this.#valid(live.claims, input.roles);
        } catch (err) {
          return Promise.reject(err);
        }
      }
    }
    return this.#validateJwtToken(input);
  }

  async #validateJwtToken(input: ValidateJwtTokenInput): Promise<ValidJwtToken> {
    if (!(TOKEN_TYPES as readonly string[]).includes(input.token_type)) throw invalidArgument('invalid token type', 'invalid_token_type');
    const { claims, session } = await this.#verifyLive(input.token, input.token_type as TokenType);
    await this.#org.require(session);
    await this.#org.check(claims['org_id'], claims['org_roles'], claims.sub, session);
    const valid = this.#valid(claims, input.roles);
    await this.#d.permissions.requireRelations(claims.sub, input.required_relations, actorSubjects(claims));
    return valid;
  }

  /** The answer for a live token's claims that hold every role asked for (else `permission_denied`, `missing_role`). */
  #valid(claims: TokenClaims, roles: readonly string[] | undefined): ValidJwtToken {
    if (roles !== undefined && roles.length > 0) {
      const raw = claims[this.#d.options.jwt.roleClaim] ?? claims['roles'];
      const have = Array.isArray(raw) ? raw.map(String) : typeof raw === 'string' ? raw.split(',') : [];
      for (const r of roles) if (!have.includes(r)) throw new LatchkeyError('permission_denied', 'unauthorized', { reason: 'missing_role' });
    }
    return { is_valid: true, claims: { ...claims } };
  }

  /**
   * `validate_session`: `{is_valid: true, user}` for a live session cookie
   * value, or an error. The session the call was authenticated with, when
   * that was this very cookie, is not looked up again. A live session whose
   * active user the store reads without a promise, with the roles asked for
   * and no relation to check, and in no organization or in one whose
   * membership and session lifetime are read at once and hold, is answered
   * at once; anything else, every refusal included, takes the full path.
   */
  validateSession(input: ValidateSessionInput, ctx: AuthCallContext = {}): ValidSession | Promise<ValidSession> {
    return this.#validSessionNow(input, ctx) ?? this.#validateSession(input, ctx);
  }

  #validSessionNow(input: ValidateSessionInput, ctx: AuthCallContext): ValidSession | undefined {
    if (input.required_relations !== undefined && input.required_relations.length > 0) return undefined;
    const cookie = input.cookie !== undefined && input.cookie !== '' ? input.cookie : ctx.sessionCookie;
    if (cookie === undefined) return undefined;
    const session = presentedSession(cookie, ctx) ?? this.#d.sessions.fromCookieNow(cookie);
    if (session === null || session === undefined) return undefined;
    const user = this.activeUserNow(session.user_id);
    if (user === undefined) return undefined;
    if (input.roles !== undefined) for (const r of input.roles) if (!session.roles.includes(r)) return undefined;
    // The session's own organization: its membership row holds the lifetime that `OrgSessionRules.require` compares.
    const org = this.#org.now(session.org_id, undefined, user.id, session);
    return org === null ? undefined : { is_valid: true, user: toPublicUser(user), ...org };
  }

  async #validateSession(input: ValidateSessionInput, ctx: AuthCallContext): Promise<ValidSession> {
    const cookie = input.cookie !== undefined && input.cookie !== '' ? input.cookie : ctx.sessionCookie;
    if (cookie === undefined) throw invalidArgument('cookie is required', 'missing_cookie');
    const seen: SessionLookup = {};
    const session = presentedSession(cookie, ctx) ?? (await this.#d.sessions.fromCookie(cookie, seen));
    if (session === undefined) throw seen.orgExpired === true ? orgSessionExpired() : unauthenticated('invalid_session', 'invalid session');
    await this.#org.require(session);
    const user = await this.activeUser(session.user_id);
    if (user === undefined) throw unauthenticated('invalid_session', 'invalid session');
    if (input.roles !== undefined) for (const r of input.roles) if (!session.roles.includes(r)) throw new LatchkeyError('permission_denied', 'unauthorized', { reason: 'missing_role' });
    const org = await this.#org.check(session.org_id, undefined, user.id, session);
    await this.#d.permissions.requireRelations(user.id, input.required_relations);
    return { is_valid: true, user: toPublicUser(user), ...org };
  }
}

/** The input of `validate_session`. */
export interface ValidateSessionInput {
  cookie?: string | undefined;
  roles?: readonly string[] | undefined;
  required_relations?: readonly RequiredRelation[] | undefined;
}

/** What `validate_session` answers (an invalid session is an error). */
export interface ValidSession {
  is_valid: true;
  user: PublicUser;
  org_id?: string;
  org_roles?: string[];
}

/** The input of `validate_jwt_token`. */
export interface ValidateJwtTokenInput {
  token_type: string;
  token: string;
  roles?: readonly string[] | undefined;
  required_relations?: readonly RequiredRelation[] | undefined;
}

/** What `validate_jwt_token` answers (it never answers `is_valid: false`: an invalid token is an error). */
export interface ValidJwtToken {
  is_valid: true;
  claims: Record<string, unknown>;
}
