/**
 * The identity service: one method per operation of the spec's identity
 * half (signup, login, session, logout, profile, update_profile,
 * deactivate_account, revoke, validate_jwt_token, validate_session,
 * check_permissions, list_permissions), plus `authenticate` (credentials →
 * principal) and the hooks the admin surface needs (end sessions, revoke and
 * re-enable access).
 *
 * Methods take validated input and return plain objects; they throw
 * {@link LatchkeyError} with precise codes. Cookies are not set here: results
 * that open a session carry a {@link SessionGrant} which the wire layer turns
 * into the `cookie_session` / `cookie_session_domain` pair.
 */
import { LatchkeyError } from '../engine/errors.ts';
import type { MemoryStore } from './memory_store.ts';
import { resolveAuthOptions, type AuthOptions, type ResolvedAuthOptions } from './options.ts';
import { PasswordHasher, assertPasswordAcceptable } from './password.ts';
import { SessionManager, type SessionRecord } from './sessions.ts';
import { TOKEN_TYPES, TokenService, type TokenClaims, type TokenType } from './tokens.ts';
import { UserStore, normalizeEmail, normalizePhone, type UserFields, type UserRecord } from './user_store.ts';
import type { Sequelize } from 'sequelize';
import { Permissions, type PermissionEngine, type RequiredRelation } from './permissions.ts';

/** Name of the host-scoped session cookie. */
export const SESSION_COOKIE = 'cookie_session';
/** Name of the domain-scoped session cookie. */
export const SESSION_DOMAIN_COOKIE = 'cookie_session_domain';
/** The one message of every failed login, whatever the cause (no account enumeration). */
export const INVALID_CREDENTIALS_MESSAGE = 'invalid credentials';
/** The public User shape (spec Resources + authorizer contract §2.5). */
export interface PublicUser {
  id: string;
  email: string | null;
  email_verified: boolean;
  signup_methods: string;
  given_name: string | null;
  family_name: string | null;
  middle_name: string | null;
  nickname: string | null;
  preferred_username: string | null;
  gender: string | null;
  birthdate: string | null;
  phone_number: string | null;
  phone_number_verified: boolean;
  picture: string | null;
  roles: string[];
  created_at: number;
  updated_at: number;
  revoked_timestamp: number | null;
  is_multi_factor_auth_enabled: boolean | null;
  app_data: Record<string, unknown> | null;
}

/** The AuthResponse shape (spec Resources). */
export interface AuthResponse {
  message: string;
  access_token?: string;
  id_token?: string;
  refresh_token?: string;
  expires_in?: number;
  user?: PublicUser;
  should_show_email_otp_screen?: boolean;
  should_show_mobile_otp_screen?: boolean;
  should_show_totp_screen?: boolean;
}

/** A new session cookie the wire layer must set (token shown once). */
export interface SessionGrant {
  token: string;
  maxAgeSeconds: number;
}

/** An AuthResponse plus the session cookie to set, when one was opened. */
export interface AuthResult {
  response: AuthResponse;
  session?: SessionGrant;
  /** The stored user the session was opened for (for audit and webhooks; never sent). */
  record?: UserRecord;
}

/** The authenticated caller, shaped like the transports' user principal. */
export interface UserPrincipal {
  readonly kind: 'user';
  readonly userId: string;
  readonly subject: string;
  readonly roles: readonly string[];
  readonly sessionId?: string;
  readonly claims?: Readonly<Record<string, unknown>>;
}

/** Who calls: the resolved principal plus raw credentials (for cookie-based operations). */
export interface AuthCallContext {
  /** A user principal, or a super-admin marker for admin-trusted calls. */
  principal?: UserPrincipal | { readonly kind: 'super_admin' } | { readonly kind: 'anonymous' };
  /** The session cookie the request carried (host cookie first, then domain cookie). */
  sessionCookie?: string | undefined;
  /** The bearer token the request carried. */
  bearer?: string | undefined;
}

/** Dependencies of {@link AuthService}. */
export interface AuthDependencies {
  sequelize: Sequelize;
  memoryStore: MemoryStore;
  /** The FGA engine, or undefined when FGA is not enabled. */
  engine?: PermissionEngine | undefined;
}

const unauthenticated = (reason = 'unauthenticated', message = 'unauthorized'): LatchkeyError => new LatchkeyError('unauthenticated', message, { reason });
/**
 * The one login failure. The precise internal reason (and the user, when
 * known) travel in `cause`, which is logged and audited but never serialized.
 */
const invalidCredentials = (internalReason: string, userId?: string): LatchkeyError =>
  new LatchkeyError('unauthenticated', INVALID_CREDENTIALS_MESSAGE, { reason: 'invalid_credentials', cause: { internal_reason: internalReason, user_id: userId } });
const invalidArgument = (message: string, reason: string): LatchkeyError => new LatchkeyError('invalid_argument', message, { reason });
const EMAIL_RE = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;
const PHONE_RE = /^\+?[0-9]{6,20}$/;
const DEFAULT_SCOPE = ['openid', 'email', 'profile', 'offline_access'];

/** The public User of a stored user. */
export function toPublicUser(u: UserRecord): PublicUser {
  return {
    id: u.id,
    email: u.email,
    email_verified: u.email_verified_at !== null,
    signup_methods: u.signup_methods,
    given_name: u.given_name,
    family_name: u.family_name,
    middle_name: u.middle_name,
    nickname: u.nickname,
    preferred_username: u.email ?? u.phone_number,
    gender: u.gender,
    birthdate: u.birthdate,
    phone_number: u.phone_number,
    phone_number_verified: u.phone_number_verified_at !== null,
    picture: u.picture,
    roles: [...u.roles],
    created_at: u.created_at,
    updated_at: u.updated_at,
    revoked_timestamp: u.revoked_timestamp,
    is_multi_factor_auth_enabled: u.is_multi_factor_auth_enabled,
    app_data: u.app_data,
  };
}

/** The identity service. Build with {@link AuthService.create}. */
export class AuthService {
  readonly options: ResolvedAuthOptions;
  readonly users: UserStore;
  readonly sessions: SessionManager;
  readonly tokens: TokenService;
  readonly passwords: PasswordHasher;
  readonly #store: MemoryStore;
  readonly #permissions: Permissions;

  private constructor(init: {
    options: ResolvedAuthOptions;
    users: UserStore;
    sessions: SessionManager;
    tokens: TokenService;
    passwords: PasswordHasher;
    store: MemoryStore;
    engine: PermissionEngine | undefined;
  }) {
    this.options = init.options;
    this.users = init.users;
    this.sessions = init.sessions;
    this.tokens = init.tokens;
    this.passwords = init.passwords;
    this.#store = init.store;
    this.#permissions = new Permissions(init.engine);
  }

  /**
   * Validates options, imports the JWT keys, runs the identity migrations
   * (dropping v1 unique constraints) and precomputes the dummy hash.
   * Throws `invalid_argument` for bad options.
   */
  static async create(options: AuthOptions, deps: AuthDependencies): Promise<AuthService> {
    const o = resolveAuthOptions(options);
    const tokens = await TokenService.create({
      algorithm: o.jwt.type,
      secret: o.jwt.secret,
      privateKey: o.jwt.privateKey,
      publicKey: o.jwt.publicKey,
      issuer: o.issuer,
      audience: o.clientId,
      accessTokenTtl: o.accessTokenTtl,
      refreshTokenTtl: o.refreshTokenTtl,
      now: o.now,
    });
    const users = new UserStore({ sequelize: deps.sequelize, nowSeconds: () => Math.floor(o.now() / 1000) });
    await users.init();
    const passwords = new PasswordHasher({ cost: o.bcryptCost });
    await passwords.warmUp();
    const sessions = new SessionManager({
      store: deps.memoryStore,
      cookieTtl: o.cookieTtl,
      sessionTtl: o.refreshTokenTtl,
      reuseGraceSeconds: o.refreshReuseGraceSeconds,
      now: o.now,
    });
    return new AuthService({ options: o, users, sessions, tokens, passwords, store: deps.memoryStore, engine: deps.engine });
  }

  /** True when FGA is enabled (an engine was given). */
  get fgaEnabled(): boolean {
    return this.#permissions.enabled;
  }

  #nowSeconds(): number {
    return Math.floor(this.options.now() / 1000);
  }

  // ---------------------------------------------------------------- sign-up and login

  /**
   * `signup`. Errors: `failed_precondition` when sign-up or the needed basic
   * authentication is disabled; `invalid_argument` for a bad email, phone,
   * password (reason `invalid_password`) or role (reasons `invalid_roles`,
   * `protected_role`); `already_exists` with the spec's message when the email
   * or phone is taken (also under concurrency).
   */
  async signup(input: {
    email?: string | undefined;
    phone_number?: string | undefined;
    password: string;
    confirm_password?: string | undefined;
    given_name?: string | undefined;
    family_name?: string | undefined;
    middle_name?: string | undefined;
    nickname?: string | undefined;
    gender?: string | undefined;
    birthdate?: string | undefined;
    picture?: string | undefined;
    roles?: readonly string[] | undefined;
    scope?: readonly string[] | undefined;
    app_data?: Record<string, unknown> | undefined;
  }, ctx: AuthCallContext = {}): Promise<AuthResult> {
    const o = this.options;
    if (!o.enableSignup) throw new LatchkeyError('failed_precondition', 'signup is disabled for this instance', { reason: 'signup_disabled' });
    const email = normalizeEmail(input.email);
    const phone = normalizePhone(input.phone_number);
    if (email === undefined && phone === undefined) throw invalidArgument('email or phone_number is required', 'missing_identifier');
    if (email !== undefined) {
      if (!o.enableBasicAuthentication) throw new LatchkeyError('failed_precondition', 'basic authentication is disabled for this instance', { reason: 'basic_authentication_disabled' });
      if (email.length > 320 || !EMAIL_RE.test(email)) throw invalidArgument('invalid email address', 'invalid_email');
    } else if (!o.enableMobileBasicAuthentication) {
      throw new LatchkeyError('failed_precondition', 'mobile basic authentication is disabled for this instance', { reason: 'mobile_basic_authentication_disabled' });
    }
    if (phone !== undefined && !PHONE_RE.test(phone)) throw invalidArgument('invalid phone number', 'invalid_phone_number');
    if (input.confirm_password !== undefined && input.confirm_password !== input.password) {
      throw invalidArgument('password and confirm password does not match', 'password_mismatch');
    }
    assertPasswordAcceptable(input.password, { strong: o.enableStrongPassword }, { email: email ?? null });
    const roles = this.#signupRoles(input.roles);
    // Hash before the uniqueness check so a taken address costs the same time as a free one.
    const hash = await this.passwords.hash(input.password);
    const now = this.#nowSeconds();
    const fields: UserFields = {
      email: email ?? null,
      phone_number: phone ?? null,
      password: hash,
      signup_methods: email !== undefined ? 'basic_auth' : 'mobile_basic_auth',
      roles,
      given_name: input.given_name ?? null,
      family_name: input.family_name ?? null,
      middle_name: input.middle_name ?? null,
      nickname: input.nickname ?? null,
      gender: input.gender ?? null,
      birthdate: input.birthdate ?? null,
      picture: input.picture ?? null,
      app_data: input.app_data ?? null,
      // Without verification flows an address is taken as verified at sign-up.
      email_verified_at: email !== undefined && !o.enableEmailVerification ? now : null,
      phone_number_verified_at: phone !== undefined && !o.enablePhoneVerification ? now : null,
    };
    const user = await this.users.create(fields);
    if (email !== undefined && o.enableEmailVerification) {
      return { response: { message: 'Verification email has been sent. Please check your inbox', user: toPublicUser(user) } };
    }
    await this.#endPresentedSession(ctx);
    return this.#openSession(user, { roles, scope: input.scope, loginMethod: fields.signup_methods ?? 'basic_auth', message: 'Signed up successfully.' });
  }

  #signupRoles(requested: readonly string[] | undefined): string[] {
    const o = this.options;
    if (requested === undefined || requested.length === 0) return [...o.defaultRoles];
    const roles = [...new Set(requested)];
    for (const r of roles) {
      if (o.protectedRoles.includes(r)) throw invalidArgument(`role ${r} cannot be assigned at sign-up`, 'protected_role');
      if (!o.roles.includes(r)) throw invalidArgument(`invalid role ${r}`, 'invalid_roles');
    }
    return roles;
  }

  /**
   * `login` with email or phone and password. Every failure before the
   * password is proven (unknown account, wrong or over-long password,
   * deactivated account, unverified address) answers `unauthenticated`
   * `invalid credentials` after one full bcrypt compare. Five failures in the
   * window lock the account: `resource_exhausted` (reason
   * `too_many_attempts`, `details.retry_after_seconds`), checked before the
   * compare so concurrent guesses cannot exceed the budget. A correct
   * password on a revoked account gives `permission_denied`
   * (`access_revoked`). With MFA it answers the challenge flag instead of tokens.
   */
  async login(input: {
    email?: string | undefined;
    phone_number?: string | undefined;
    password: string;
    roles?: readonly string[] | undefined;
    scope?: readonly string[] | undefined;
  }, ctx: AuthCallContext = {}): Promise<AuthResult> {
    const o = this.options;
    const email = normalizeEmail(input.email);
    const phone = normalizePhone(input.phone_number);
    if (email === undefined && phone === undefined) throw invalidArgument('email or phone_number is required', 'missing_identifier');
    if (typeof input.password !== 'string' || input.password.length === 0) throw invalidArgument('password is required', 'missing_password');
    if (email !== undefined && !o.enableBasicAuthentication) throw new LatchkeyError('failed_precondition', 'basic authentication is disabled for this instance', { reason: 'basic_authentication_disabled' });
    if (email === undefined && !o.enableMobileBasicAuthentication) throw new LatchkeyError('failed_precondition', 'mobile basic authentication is disabled for this instance', { reason: 'mobile_basic_authentication_disabled' });
    const user = email !== undefined ? await this.users.findByEmail(email) : await this.users.findByPhone(phone ?? '');
    if (user === undefined) {
      await this.passwords.verify(input.password, undefined);
      throw invalidCredentials('unknown_account');
    }
    // Reserve an attempt before comparing (security matrix A2/A3): concurrent guesses cannot exceed the budget.
    const attemptsKey = `login_attempts:${user.id}`;
    const attempts = await this.#store.incr(attemptsKey, o.loginAttemptWindow);
    if (attempts > o.maxLoginAttempts) {
      const retryAfter = await this.#store.ttl(attemptsKey);
      throw new LatchkeyError('resource_exhausted', 'too many login attempts, try again later', {
        reason: 'too_many_attempts',
        details: { retry_after_seconds: Math.max(1, retryAfter) },
        cause: { internal_reason: 'locked_out', user_id: user.id },
      });
    }
    const ok = await this.passwords.verify(input.password, user.password);
    const unverified = email !== undefined ? user.email_verified_at === null && o.enableEmailVerification : user.phone_number_verified_at === null && o.enablePhoneVerification;
    if (!ok) throw invalidCredentials('wrong_password', user.id);
    if (user.deactivated_at !== null) throw invalidCredentials('account_deactivated', user.id);
    if (unverified) throw invalidCredentials('unverified_identifier', user.id);
    await this.#store.del(attemptsKey);
    if (user.revoked_timestamp !== null) throw new LatchkeyError('permission_denied', 'user access has been revoked', { reason: 'access_revoked', cause: { internal_reason: 'access_revoked', user_id: user.id } });
    const roles = this.#requestedRoles(user, input.roles);
    const mfaOn = o.enforceMfa || user.is_multi_factor_auth_enabled === true;
    if (mfaOn && o.enableTotpLogin) return { response: { message: 'Proceed to totp verification screen', should_show_totp_screen: true } };
    if (mfaOn && o.enableEmailOtp && user.email !== null) return { response: { message: 'Please check email inbox for the OTP', should_show_email_otp_screen: true } };
    if (mfaOn && o.enableSmsOtp && user.phone_number !== null) return { response: { message: 'Please check text message for the OTP', should_show_mobile_otp_screen: true } };
    // Session fixation (B4): whatever session the request carried ends; the login gets a new one.
    await this.#endPresentedSession(ctx);
    return this.#openSession(user, { roles, scope: input.scope, loginMethod: email !== undefined ? 'basic_auth' : 'mobile_basic_auth', message: 'Logged in successfully' });
  }

  #requestedRoles(user: UserRecord, requested: readonly string[] | undefined): string[] {
    if (requested === undefined || requested.length === 0) return [...user.roles];
    for (const r of requested) if (!user.roles.includes(r)) throw new LatchkeyError('permission_denied', 'unauthorized', { reason: 'invalid_roles' });
    return [...new Set(requested)];
  }

  async #endPresentedSession(ctx: AuthCallContext): Promise<void> {
    if (ctx.sessionCookie === undefined) return;
    const s = await this.sessions.fromCookie(ctx.sessionCookie);
    if (s !== undefined) await this.sessions.end(s.sid);
  }

  async #openSession(user: UserRecord, o: { roles: string[]; scope: readonly string[] | undefined; loginMethod: string; message: string }): Promise<AuthResult> {
    const scope = o.scope === undefined || o.scope.length === 0 ? DEFAULT_SCOPE : [...new Set(o.scope)];
    const { session, cookieToken } = await this.sessions.create({
      user_id: user.id,
      roles: o.roles,
      scope,
      login_method: o.loginMethod,
      auth_time: this.#nowSeconds(),
    });
    const response = await this.#issueTokens(user, session, o.message);
    return { response, session: { token: cookieToken, maxAgeSeconds: this.sessions.cookieTtl }, record: user };
  }

  /** Signs access + id (+ refresh with `offline_access`) tokens for a session and records the refresh lineage. */
  async #issueTokens(user: UserRecord, session: SessionRecord, message: string, refresh: { token: string } | 'new' = 'new'): Promise<AuthResponse> {
    const common = { sid: session.sid, roles: session.roles, scope: session.scope, login_method: session.login_method, allowed_roles: user.roles };
    const access = await this.tokens.sign('access_token', user.id, common);
    const pub = toPublicUser(user);
    const { id: _id, created_at, updated_at, app_data, revoked_timestamp: _r, ...profile } = pub;
    const id = await this.tokens.sign('id_token', user.id, {
      ...profile,
      app_data,
      created_at,
      updated_at,
      [this.options.jwt.roleClaim]: session.roles,
      sid: session.sid,
      scope: session.scope,
      login_method: session.login_method,
      allowed_roles: user.roles,
      roles: session.roles,
      auth_time: session.auth_time,
      amr: [session.login_method === 'mobile_basic_auth' || session.login_method === 'basic_auth' ? 'pwd' : session.login_method],
      acr: '0',
      at_hash: this.tokens.atHash(access.token),
    });
    const response: AuthResponse = {
      message,
      access_token: access.token,
      id_token: id.token,
      expires_in: this.options.accessTokenTtl,
      user: pub,
    };
    if (refresh !== 'new') {
      response.refresh_token = refresh.token;
    } else if (session.scope.includes('offline_access')) {
      const next = await this.tokens.sign('refresh_token', user.id, { sid: session.sid, scope: session.scope, roles: session.roles });
      await this.sessions.setRefresh(session.sid, next.jti);
      response.refresh_token = next.token;
    }
    return response;
  }

  // ---------------------------------------------------------------- sessions

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
    let session: SessionRecord | undefined;
    let rotated: { token: string } | undefined;
    if (input.refresh_token !== undefined && input.refresh_token !== '') {
      const r = await this.#rotateRefreshToken(input.refresh_token);
      session = r.session;
      rotated = { token: r.token };
    } else if (ctx.sessionCookie !== undefined) {
      session = await this.sessions.fromCookie(ctx.sessionCookie);
    }
    if (session === undefined && ctx.principal?.kind === 'user' && ctx.principal.sessionId !== undefined) {
      session = await this.sessions.get(ctx.principal.sessionId);
    }
    if (session === undefined) throw unauthenticated();
    const user = await this.#activeUser(session.user_id);
    if (user === undefined) {
      await this.sessions.end(session.sid);
      throw unauthenticated();
    }
    const roles = input.roles !== undefined && input.roles.length > 0 ? this.#requestedRoles(user, input.roles) : session.roles.filter((r) => user.roles.includes(r));
    await this.#permissions.requireRelations(user.id, input.required_relations);
    const scope = input.scope !== undefined && input.scope.length > 0 ? [...new Set(input.scope)] : session.scope;
    const { session: next, cookieToken } = await this.sessions.rotateCookie(session, { roles, scope });
    const response = await this.#issueTokens(user, next, 'Session refreshed', rotated ?? 'new');
    return { response, session: { token: cookieToken, maxAgeSeconds: this.sessions.cookieTtl } };
  }

  /**
   * Verifies a refresh token and atomically moves its lineage to a newly
   * signed one. Exactly one of concurrent uses wins; the others are refused
   * (`unauthenticated`, reason `refresh_token_reused`), and a replay after the
   * grace period ends the session, revoking the family.
   */
  async #rotateRefreshToken(refreshToken: string): Promise<{ session: SessionRecord; token: string }> {
    const claims = await this.tokens.verify(refreshToken, 'refresh_token');
    const sid = String(claims['sid'] ?? '');
    const session = await this.sessions.get(sid);
    if (session === undefined || session.user_id !== claims.sub) throw unauthenticated('invalid_token', 'invalid token');
    const next = await this.tokens.sign('refresh_token', session.user_id, { sid, scope: session.scope, roles: session.roles });
    const outcome = await this.sessions.rotateRefresh(sid, String(claims.jti), next.jti);
    if (outcome !== 'rotated') throw unauthenticated(outcome === 'unknown' ? 'invalid_token' : 'refresh_token_reused', 'invalid token');
    return { session, token: next.token };
  }

  /**
   * Rotates a refresh token outside a cookie session (the OAuth token
   * endpoint): new access, id and refresh tokens, same session.
   */
  async refresh(refreshToken: string): Promise<AuthResponse> {
    const { session, token } = await this.#rotateRefreshToken(refreshToken);
    const user = await this.#activeUser(session.user_id);
    if (user === undefined) {
      await this.sessions.end(session.sid);
      throw unauthenticated('invalid_token', 'invalid token');
    }
    return this.#issueTokens(user, session, 'Session refreshed', { token });
  }

  /** The user if it exists, is not deactivated and not revoked. */
  async #activeUser(userId: string): Promise<UserRecord | undefined> {
    const user = await this.users.findById(userId);
    if (user === undefined || user.deactivated_at !== null || user.revoked_timestamp !== null) return undefined;
    return user;
  }

  /** `logout`: ends the caller's session server-side (its cookie, tokens and refresh lineage). */
  async logout(ctx: AuthCallContext): Promise<{ message: string }> {
    let sid: string | undefined;
    if (ctx.principal?.kind === 'user') sid = ctx.principal.sessionId;
    if (sid === undefined && ctx.sessionCookie !== undefined) sid = (await this.sessions.fromCookie(ctx.sessionCookie))?.sid;
    if (sid === undefined) throw unauthenticated();
    await this.sessions.end(sid);
    return { message: 'Logged out successfully' };
  }

  /** `revoke`: ends the session (family) of a refresh token. Unknown or invalid tokens answer the same. */
  async revoke(input: { refresh_token: string }): Promise<{ message: string }> {
    try {
      const claims = await this.tokens.verify(input.refresh_token, 'refresh_token');
      const sid = String(claims['sid'] ?? '');
      if (await this.sessions.isRefreshLive(sid, String(claims.jti))) await this.sessions.end(sid);
    } catch (err) {
      if (!(err instanceof LatchkeyError) || err.code !== 'unauthenticated') throw err;
    }
    // RFC 7009 §2.2: the answer does not tell whether the token was valid.
    return { message: 'Token revoked successfully' };
  }

  // ---------------------------------------------------------------- profile

  #requireUser(ctx: AuthCallContext): UserPrincipal {
    const p = ctx.principal;
    if (p === undefined || p.kind !== 'user') throw unauthenticated();
    return p;
  }

  async #currentUser(ctx: AuthCallContext): Promise<UserRecord> {
    const p = this.#requireUser(ctx);
    const user = await this.#activeUser(p.userId);
    if (user === undefined) throw unauthenticated();
    return user;
  }

  /** `profile`: the caller's User. */
  async profile(ctx: AuthCallContext): Promise<PublicUser> {
    return toPublicUser(await this.#currentUser(ctx));
  }

  /**
   * `update_profile`. Changing the password, the email or the phone number
   * needs `old_password` (missing: `invalid_argument`
   * `missing_old_password`; wrong: `unauthenticated` `invalid credentials`).
   * A new password is checked against the policy and confirmation and ends
   * every other session of the user. A changed email or phone keeps the
   * uniqueness rule.
   */
  async updateProfile(input: {
    old_password?: string | undefined;
    new_password?: string | undefined;
    confirm_new_password?: string | undefined;
    email?: string | undefined;
    phone_number?: string | undefined;
    given_name?: string | undefined;
    family_name?: string | undefined;
    middle_name?: string | undefined;
    nickname?: string | undefined;
    gender?: string | undefined;
    birthdate?: string | undefined;
    picture?: string | undefined;
    is_multi_factor_auth_enabled?: boolean | undefined;
    app_data?: Record<string, unknown> | undefined;
  }, ctx: AuthCallContext): Promise<{ message: string }> {
    const principal = this.#requireUser(ctx);
    const user = await this.#currentUser(ctx);
    const patch: UserFields = {};
    for (const k of ['given_name', 'family_name', 'middle_name', 'nickname', 'gender', 'birthdate', 'picture'] as const) {
      if (input[k] !== undefined) patch[k] = input[k];
    }
    if (input.app_data !== undefined) patch.app_data = input.app_data;
    if (input.is_multi_factor_auth_enabled !== undefined) {
      if (this.options.enforceMfa && !input.is_multi_factor_auth_enabled) throw invalidArgument('multi factor authentication is enforced', 'mfa_enforced');
      patch.is_multi_factor_auth_enabled = input.is_multi_factor_auth_enabled;
    }
    let passwordChanged = false;
    const changesEmail = input.email !== undefined && normalizeEmail(input.email) !== normalizeEmail(user.email);
    const changesPhone = input.phone_number !== undefined && normalizePhone(input.phone_number) !== normalizePhone(user.phone_number);
    const changesPassword = input.new_password !== undefined && input.new_password !== '';
    // ASVS v5 7.5.1: re-authenticate before changing a password, an email or a phone number
    // (a stolen session alone must not be enough to take the account over). Accounts without a
    // password (signed up through another flow) can change their address without one.
    if (changesPassword || ((changesEmail || changesPhone) && user.password !== null)) {
      if (input.old_password === undefined || input.old_password === '') throw invalidArgument('old password is required', 'missing_old_password');
      if (!(await this.passwords.verify(input.old_password, user.password))) throw invalidCredentials('wrong_old_password', user.id);
    }
    if (changesPassword && input.new_password !== undefined) {
      if (input.confirm_new_password !== undefined && input.confirm_new_password !== input.new_password) {
        throw invalidArgument('password and confirm password does not match', 'password_mismatch');
      }
      assertPasswordAcceptable(input.new_password, { strong: this.options.enableStrongPassword }, { email: user.email });
      patch.password = await this.passwords.hash(input.new_password);
      passwordChanged = true;
    }
    if (changesEmail) {
      const email = normalizeEmail(input.email);
      if (email === undefined || !EMAIL_RE.test(email)) throw invalidArgument('invalid email address', 'invalid_email');
      patch.email = email;
      patch.email_verified_at = this.options.enableEmailVerification ? null : this.#nowSeconds();
    }
    if (changesPhone) {
      const phone = normalizePhone(input.phone_number);
      if (phone === undefined || !PHONE_RE.test(phone)) throw invalidArgument('invalid phone number', 'invalid_phone_number');
      patch.phone_number = phone;
      patch.phone_number_verified_at = this.options.enablePhoneVerification ? null : this.#nowSeconds();
    }
    if (Object.keys(patch).length === 0) throw invalidArgument('please enter at least one field to update', 'nothing_to_update');
    await this.users.update(user.id, patch);
    // ASVS v5 7.4.3: a changed password ends every other session.
    if (passwordChanged) await this.sessions.endAllForUser(user.id, principal.sessionId);
    return { message: 'Profile successfully updated.' };
  }

  /** `deactivate_account`: soft delete; login and every token and session are refused afterwards. */
  async deactivateAccount(ctx: AuthCallContext): Promise<{ message: string }> {
    const user = await this.#currentUser(ctx);
    await this.users.update(user.id, { deactivated_at: this.#nowSeconds() });
    await this.sessions.endAllForUser(user.id);
    return { message: 'Account deactivated successfully' };
  }

  // ---------------------------------------------------------------- hooks for other flows

  /**
   * Opens a session for a user whose identity another flow has proven
   * (email verification, OTP/TOTP, magic link, OAuth): the same session,
   * cookie and tokens as a password login. Throws `unauthenticated` for an
   * unknown, deactivated or revoked user, `permission_denied` for roles the
   * user does not hold.
   */
  async openSessionFor(
    userId: string,
    o: { loginMethod: string; roles?: readonly string[] | undefined; scope?: readonly string[] | undefined; message?: string },
    ctx: AuthCallContext = {},
  ): Promise<AuthResult> {
    const user = await this.#activeUser(userId);
    if (user === undefined) throw unauthenticated();
    const roles = this.#requestedRoles(user, o.roles);
    await this.#endPresentedSession(ctx);
    return this.#openSession(user, { roles, scope: o.scope, loginMethod: o.loginMethod, message: o.message ?? 'Logged in successfully' });
  }

  /**
   * Sets a new password (password reset): checks the policy, stores the hash
   * and ends every session of the user (ASVS v5 7.4.3). Throws
   * `invalid_argument` (`invalid_password`) or `not_found`.
   */
  async setPassword(userId: string, password: string): Promise<void> {
    const user = await this.users.findById(userId);
    if (user === undefined) throw new LatchkeyError('not_found', 'user not found', { reason: 'user_not_found' });
    assertPasswordAcceptable(password, { strong: this.options.enableStrongPassword }, { email: user.email });
    await this.users.update(userId, { password: await this.passwords.hash(password) });
    await this.sessions.endAllForUser(userId);
  }

  // ---------------------------------------------------------------- admin hooks

  /** Ends every session and refresh token of a user at once (admin revoke, delete, password reset). */
  async endAllSessions(userId: string): Promise<number> {
    return this.sessions.endAllForUser(userId);
  }

  /** Sets `revoked_timestamp` and ends every session. Throws `not_found` for an unknown user. */
  async revokeAccess(userId: string): Promise<UserRecord> {
    const user = await this.users.update(userId, { revoked_timestamp: this.#nowSeconds() });
    await this.sessions.endAllForUser(userId);
    return user;
  }

  /** Clears `revoked_timestamp`. Throws `not_found` for an unknown user. */
  async enableAccess(userId: string): Promise<UserRecord> {
    return this.users.update(userId, { revoked_timestamp: null });
  }

  // ---------------------------------------------------------------- credentials

  /**
   * Resolves user credentials into a principal: a bearer access token
   * (signature, claims, type and a live session) or a session cookie. Returns
   * undefined when no user credential is present; throws `unauthenticated`
   * when one is present but invalid.
   */
  async authenticate(credentials: { bearer?: string | undefined; cookies?: Readonly<Record<string, string>> | undefined }): Promise<UserPrincipal | undefined> {
    if (credentials.bearer !== undefined) {
      let live: { claims: TokenClaims; session: SessionRecord };
      try {
        live = await this.#verifyLive(credentials.bearer, 'access_token');
      } catch (err) {
        // Conventions §3: one message for every authentication failure of an API call.
        if (err instanceof LatchkeyError && err.code === 'unauthenticated') throw new LatchkeyError('unauthenticated', 'unauthorized', { reason: 'unauthenticated', cause: err });
        throw err;
      }
      const { claims, session } = live;
      return { kind: 'user', userId: session.user_id, subject: `user:${session.user_id}`, roles: session.roles, sessionId: session.sid, claims };
    }
    const cookie = sessionCookieOf(credentials.cookies);
    if (cookie === undefined) return undefined;
    const session = await this.sessions.fromCookie(cookie);
    if (session === undefined) throw unauthenticated();
    return { kind: 'user', userId: session.user_id, subject: `user:${session.user_id}`, roles: session.roles, sessionId: session.sid };
  }

  /** Verifies a token and that its session is alive (and, for refresh tokens, that it is the live one). */
  async #verifyLive(token: string, type: TokenType): Promise<{ claims: TokenClaims; session: SessionRecord }> {
    const claims = await this.tokens.verify(token, type);
    const sid = claims['sid'];
    const session = typeof sid === 'string' ? await this.sessions.get(sid) : undefined;
    if (session === undefined || session.user_id !== claims.sub) throw unauthenticated('invalid_token', 'invalid token');
    if (type === 'refresh_token' && !(await this.sessions.isRefreshLive(session.sid, String(claims.jti)))) throw unauthenticated('invalid_token', 'invalid token');
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
  async validateJwtToken(input: {
    token_type: string;
    token: string;
    roles?: readonly string[] | undefined;
    required_relations?: readonly RequiredRelation[] | undefined;
  }): Promise<{ is_valid: true; claims: Record<string, unknown> }> {
    if (!(TOKEN_TYPES as readonly string[]).includes(input.token_type)) throw invalidArgument('invalid token type', 'invalid_token_type');
    const { claims } = await this.#verifyLive(input.token, input.token_type as TokenType);
    if (input.roles !== undefined && input.roles.length > 0) {
      const raw = claims[this.options.jwt.roleClaim] ?? claims['roles'];
      const have = Array.isArray(raw) ? raw.map(String) : typeof raw === 'string' ? raw.split(',') : [];
      for (const r of input.roles) if (!have.includes(r)) throw new LatchkeyError('permission_denied', 'unauthorized', { reason: 'missing_role' });
    }
    await this.#permissions.requireRelations(claims.sub, input.required_relations);
    return { is_valid: true, claims: { ...claims } };
  }

  /** `validate_session`: `{is_valid: true, user}` for a live session cookie value, or an error. */
  async validateSession(input: {
    cookie?: string | undefined;
    roles?: readonly string[] | undefined;
    required_relations?: readonly RequiredRelation[] | undefined;
  }, ctx: AuthCallContext = {}): Promise<{ is_valid: true; user: PublicUser }> {
    const cookie = input.cookie !== undefined && input.cookie !== '' ? input.cookie : ctx.sessionCookie;
    if (cookie === undefined) throw invalidArgument('cookie is required', 'missing_cookie');
    const session = await this.sessions.fromCookie(cookie);
    if (session === undefined) throw unauthenticated('invalid_session', 'invalid session');
    const user = await this.#activeUser(session.user_id);
    if (user === undefined) throw unauthenticated('invalid_session', 'invalid session');
    if (input.roles !== undefined) for (const r of input.roles) if (!session.roles.includes(r)) throw new LatchkeyError('permission_denied', 'unauthorized', { reason: 'missing_role' });
    await this.#permissions.requireRelations(user.id, input.required_relations);
    return { is_valid: true, user: toPublicUser(user) };
  }

  /** `check_permissions` (see {@link Permissions.check}). */
  checkPermissions(input: Parameters<Permissions['check']>[0], ctx: AuthCallContext): ReturnType<Permissions['check']> {
    return this.#permissions.check(input, ctx.principal);
  }

  /** `list_permissions` (see {@link Permissions.list}). */
  listPermissions(input: Parameters<Permissions['list']>[0], ctx: AuthCallContext): ReturnType<Permissions['list']> {
    return this.#permissions.list(input, ctx.principal);
  }
}

/** The session cookie value: the host cookie first, then the domain cookie. */
export function sessionCookieOf(cookies: Readonly<Record<string, string>> | undefined): string | undefined {
  if (cookies === undefined) return undefined;
  const v = cookies[SESSION_COOKIE] ?? cookies[SESSION_DOMAIN_COOKIE];
  return v === undefined || v === '' ? undefined : v;
}
