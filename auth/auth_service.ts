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
import { normalizeEmail, normalizePhone, type UserFields, type UserRecord, type UserStore } from './user_store_types.ts';
import type { Sequelize } from 'sequelize';
import { openAuthStores } from './auth_stores.ts';
import { sqlDatabase, type MainDatabase, type StoreTransaction } from './main_database.ts';
import { firstFactorAmr, issueTokens } from './issue_tokens.ts';
import { reserveAttempt } from './attempts.ts';
import { MfaFlows, type MfaMethod, type OtpDelivery } from './mfa.ts';
import { VerificationFlows } from './verification_flows.ts';
import { EmailFlows, type LinkDelivery } from './email_flows.ts';
import { signupEventSteps, type SignupRecorder } from './signup_recorder.ts';
import { Permissions, type PermissionEngine, type RequiredRelation } from './permissions.ts';
import type { TokenScript } from './token_script.ts';
import { EMAIL_RE, PHONE_RE, invalidArgument, invalidCredentials, profilePatch, type SignupInput, type UpdateProfileInput } from './profile.ts';
import { sessionCookieOf, toPublicUser, type AuthCallContext, type AuthResponse, type AuthResult, type PublicUser, type UserPrincipal } from './public_user.ts';

export { INVALID_CREDENTIALS_MESSAGE } from './profile.ts';
export { SESSION_COOKIE, SESSION_DOMAIN_COOKIE, sessionCookieOf, toPublicUser, type AuthCallContext, type AuthResponse, type AuthResult, type PublicUser, type SessionGrant, type UserPrincipal } from './public_user.ts';

/** Dependencies of {@link AuthService}. */
export interface AuthDependencies {
  /** The SQL main database; ignored when `database` is given. */
  sequelize?: Sequelize | undefined;
  /** The main database (SQL or DynamoDB); default: `sequelize`. */
  database?: MainDatabase | undefined;
  memoryStore: MemoryStore;
  /** The FGA engine, or undefined when FGA is not enabled. */
  engine?: PermissionEngine | undefined;
  /** How email and SMS one-time codes reach users (the channels that are configured). */
  otpDelivery?: OtpDelivery | undefined;
  /** `--custom-access-token-script`, compiled: its claims go into every access and id token. */
  tokenScript?: TokenScript | undefined;
}

const unauthenticated = (reason = 'unauthenticated', message = 'unauthorized'): LatchkeyError => new LatchkeyError('unauthenticated', message, { reason });
const DEFAULT_SCOPE = ['openid', 'email', 'profile', 'offline_access'];


/** The identity service. Build with {@link AuthService.create}. */
export class AuthService {
  readonly options: ResolvedAuthOptions;
  readonly users: UserStore;
  readonly sessions: SessionManager;
  readonly tokens: TokenService;
  readonly passwords: PasswordHasher;
  /** The second factor of logins: email/SMS codes and TOTP. */
  readonly mfa: MfaFlows;
  /** The email-link flows: invitations, password reset, the admin's verification listing. */
  readonly verification: VerificationFlows;
  /** Sign-up verification, magic-link login and forgot-password links. */
  readonly email: EmailFlows;
  /** The custom access token script, when configured (see {@link TokenScript}). */
  readonly tokenScript: TokenScript | undefined;
  readonly #store: MemoryStore;
  readonly #permissions: Permissions;
  readonly #database: MainDatabase;

  private constructor(init: {
    options: ResolvedAuthOptions;
    users: UserStore;
    sessions: SessionManager;
    tokens: TokenService;
    passwords: PasswordHasher;
    mfa: MfaFlows;
    store: MemoryStore;
    engine: PermissionEngine | undefined;
    verification: VerificationFlows;
    email: (service: AuthService) => EmailFlows;
    tokenScript: TokenScript | undefined;
    database: MainDatabase;
  }) {
    this.#database = init.database;
    this.tokenScript = init.tokenScript;
    this.verification = init.verification;
    this.email = init.email(this);
    this.options = init.options;
    this.users = init.users;
    this.sessions = init.sessions;
    this.tokens = init.tokens;
    this.passwords = init.passwords;
    this.mfa = init.mfa;
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
    const nowSeconds = () => Math.floor(o.now() / 1000);
    const database = deps.database ?? (deps.sequelize ? sqlDatabase(deps.sequelize) : undefined);
    if (database === undefined) throw new LatchkeyError('invalid_argument', 'the identity service needs a database', { reason: 'invalid_option' });
    const { users, verifications, mfa: mfaStore } = await openAuthStores(database, nowSeconds);
    const passwords = new PasswordHasher({ cost: o.bcryptCost });
    await passwords.warmUp();
    const sessions = new SessionManager({
      store: deps.memoryStore,
      cookieTtl: o.cookieTtl,
      sessionTtl: o.refreshTokenTtl,
      reuseGraceSeconds: o.refreshReuseGraceSeconds,
      now: o.now,
    });
    const mfa = new MfaFlows({ store: mfaStore, memory: deps.memoryStore, users, options: o, delivery: deps.otpDelivery ?? {}, nowSeconds, sessions });
    const verification = new VerificationFlows({ database, store: verifications, users, passwords, sessions, options: o, nowSeconds });
    const email = (service: AuthService) =>
      new EmailFlows({
        database,
        store: verifications,
        users,
        memoryStore: deps.memoryStore,
        options: o,
        nowSeconds,
        signupRoles: (requested) => service.#signupRoles(requested),
        endedAllAt: (userId) => sessions.endedAllAt(userId),
        openSession: (userId, opts, ctx) => service.openSessionFor(userId, opts, ctx),
        textResetCode: o.enableMobileBasicAuthentication && deps.otpDelivery?.sms !== undefined ? (user) => mfa.sendResetCode(user) : undefined,
        assertMfaReachable: (user) => void mfa.methodFor(user),
        mfaChallenge: async (user, login) => {
          const method = mfa.methodFor(user);
          if (method === undefined) return undefined;
          const roles = service.#requestedRoles(user, login.roles);
          const { response, grant } = await mfa.challenge(user, method, { roles, scope: login.scope, loginMethod: login.loginMethod });
          return { response, mfaSession: grant, record: user };
        },
      });
    return new AuthService({ options: o, users, sessions, tokens, passwords, store: deps.memoryStore, engine: deps.engine, mfa, verification, email, tokenScript: deps.tokenScript, database });
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
   *
   * With email verification on and a `verification` delivery, the user, its
   * claims, its `basic_auth_signup` request and its mail are one transaction
   * (security matrix E3): a sign-up cut by a crash or an outage leaves all of
   * it or nothing, and its retry answers `already_exists` exactly when the
   * first attempt committed (docs/security.md, "Retrying after an outage or a
   * crash"). A delivery without `prepare` gets the mail after the user is stored.
   *
   * `record` writes the sign-up's audit row and webhook deliveries: on SQL as
   * the last step of that same transaction (a failure there fails the
   * sign-up and stores nothing), on DynamoDB, which has no transactions,
   * right after the user is stored (docs/storage.md).
   */
  async signup(input: SignupInput, ctx: AuthCallContext = {}, verification?: LinkDelivery, record?: SignupRecorder): Promise<AuthResult> {
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
    const verifyPhone = email === undefined && phone !== undefined && o.enablePhoneVerification;
    if (verifyPhone && !this.mfa.canSendSms()) {
      throw new LatchkeyError('failed_precondition', 'phone verification needs the SMS vendor, which is not configured', { reason: 'sms_unavailable' });
    }
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
    const mailed = email !== undefined && o.enableEmailVerification && verification !== undefined;
    const draft = mailed ? this.users.draft(fields) : undefined;
    const mail = draft !== undefined && verification !== undefined ? await this.email.prepareSignupVerification(draft, verification) : undefined;
    const events = signupEventSteps(this.#database, record);
    const within =
      mail === undefined || events.within === undefined
        ? (mail ?? events.within)
        : async (stored: UserRecord, transaction: StoreTransaction): Promise<void> => {
            await mail(stored, transaction);
            await events.within?.(stored, transaction);
          };
    const user = await this.users.create(fields, {
      ...(draft !== undefined && mail !== undefined ? { id: draft.id } : {}),
      ...(within === undefined ? {} : { within }),
    });
    await events.after?.(user);
    if (mailed && mail === undefined) await this.email.sendSignupVerification(user, verification);
    else if (mailed) await verification.done?.(user, { created: true });
    if (email !== undefined && o.enableEmailVerification) {
      return { response: { message: 'Verification email has been sent. Please check your inbox', user: toPublicUser(user) } };
    }
    if (verifyPhone) {
      // No session before the number is proven: a texted code and the challenge cookie (verify_otp finishes the sign-up).
      const { response, grant } = await this.mfa.phoneVerification(user, { roles, scope: input.scope, loginMethod: 'mobile_basic_auth' });
      return { response: { ...response, user: toPublicUser(user) }, mfaSession: grant, record: user };
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
   * (`access_revoked`). With MFA it answers the challenge flag instead of
   * tokens; when MFA applies but no second factor can reach the user it
   * refuses with `failed_precondition` (`mfa_method_unavailable`).
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
    await reserveAttempt(this.#store, attemptsKey, { max: o.maxLoginAttempts, windowSeconds: o.loginAttemptWindow, message: 'too many login attempts, try again later', userId: user.id });
    const ok = await this.passwords.verify(input.password, user.password);
    const unverified = email !== undefined ? user.email_verified_at === null && o.enableEmailVerification : user.phone_number_verified_at === null && o.enablePhoneVerification;
    if (!ok) throw invalidCredentials('wrong_password', user.id);
    if (user.deactivated_at !== null) throw invalidCredentials('account_deactivated', user.id);
    // An unverified phone number is verified now, by a texted code (the password is proven); an unverified email stays refused.
    const phoneToVerify = unverified && email === undefined && this.mfa.canSendSms();
    if (unverified && !phoneToVerify) throw invalidCredentials('unverified_identifier', user.id);
    await this.#store.del(attemptsKey);
    if (user.revoked_timestamp !== null) throw new LatchkeyError('permission_denied', 'user access has been revoked', { reason: 'access_revoked', cause: { internal_reason: 'access_revoked', user_id: user.id } });
    const roles = this.#requestedRoles(user, input.roles);
    const loginMethod = email !== undefined ? 'basic_auth' : 'mobile_basic_auth';
    if (phoneToVerify) {
      const { response, grant } = await this.mfa.phoneVerification(user, { roles, scope: input.scope, loginMethod });
      return { response, mfaSession: grant, record: user };
    }
    const method = this.mfa.methodFor(user);
    if (method !== undefined) {
      // No tokens before the second factor: only the challenge session (the `mfa` cookie).
      const { response, grant } = await this.mfa.challenge(user, method, { roles, scope: input.scope, loginMethod });
      return { response, mfaSession: grant, record: user };
    }
    // Session fixation (B4): whatever session the request carried ends; the login gets a new one.
    await this.#endPresentedSession(ctx);
    return this.#openSession(user, { roles, scope: input.scope, loginMethod, message: 'Logged in successfully' });
  }

  /**
   * `verify_otp`: proves the second factor of the MFA challenge in
   * `ctx.mfaCookie` (see {@link MfaFlows.verify} for the errors), then opens
   * the session of the login like a password login without MFA.
   */
  async verifyOtp(
    input: { email?: string | undefined; phone_number?: string | undefined; otp: string; is_totp?: boolean | undefined },
    ctx: AuthCallContext = {},
  ): Promise<AuthResult & { method: MfaMethod; enrolled: boolean; recoveryCodeUsed: boolean; verifiedPhone: boolean }> {
    const proof = await this.mfa.verify(input, ctx.mfaCookie);
    // RFC 8176: the first factor (a password, or the link of a magic-link login), the code (sms for a texted one) and the fact of two factors.
    let amr = [firstFactorAmr(proof.loginMethod), proof.method === 'sms_otp' ? 'sms' : 'otp', 'mfa'];
    if (proof.verifiedPhone) {
      const user = await this.users.update(proof.user.id, { phone_number_verified_at: this.#nowSeconds() });
      // MFA by another method still applies once the number is verified; a texted code is also the SMS second factor.
      const method = this.mfa.methodFor(user);
      if (method !== undefined && method !== 'sms_otp') {
        const { response, grant } = await this.mfa.challenge(user, method, { roles: proof.roles, scope: proof.scope, loginMethod: proof.loginMethod });
        return { response, mfaSession: grant, record: user, method: proof.method, enrolled: false, recoveryCodeUsed: false, verifiedPhone: true };
      }
      if (method === undefined) amr = [firstFactorAmr(proof.loginMethod), 'sms'];
    }
    const result = await this.openSessionFor(proof.user.id, { loginMethod: proof.loginMethod, roles: proof.roles, scope: proof.scope, message: 'Otp verified successfully.', amr }, ctx);
    return { ...result, method: proof.method, enrolled: proof.enrolled, recoveryCodeUsed: proof.recoveryCodeUsed, verifiedPhone: proof.verifiedPhone };
  }

  /** `resend_otp`: a new code and challenge session (see {@link MfaFlows.resend}). */
  async resendOtp(input: { email?: string | undefined; phone_number?: string | undefined }, ctx: AuthCallContext = {}): Promise<AuthResult> {
    const { user, method, grant } = await this.mfa.resend(input, ctx.mfaCookie);
    const message = method === 'email_otp' ? 'Please check email inbox for the OTP' : 'Please check text message for the OTP';
    return { response: { message }, mfaSession: grant, record: user };
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

  async #openSession(user: UserRecord, o: { roles: string[]; scope: readonly string[] | undefined; loginMethod: string; message: string; amr?: string[] | undefined }): Promise<AuthResult> {
    const scope = o.scope === undefined || o.scope.length === 0 ? DEFAULT_SCOPE : [...new Set(o.scope)];
    const { session, cookieToken } = await this.sessions.create({
      user_id: user.id,
      roles: o.roles,
      scope,
      login_method: o.loginMethod,
      auth_time: this.#nowSeconds(),
      ...(o.amr === undefined ? {} : { amr: o.amr }),
    });
    const response = await this.#issueTokens(user, session, o.message);
    return { response, session: { token: cookieToken, maxAgeSeconds: this.sessions.cookieTtl }, record: user };
  }

  /** Signs access + id (+ refresh with `offline_access`) tokens for a session (see {@link issueTokens}). */
  #issueTokens(user: UserRecord, session: SessionRecord, message: string, refresh: { token: string } | 'new' = 'new'): Promise<AuthResponse> {
    return issueTokens({ tokens: this.tokens, sessions: this.sessions, options: this.options, tokenScript: this.tokenScript }, user, session, message, refresh);
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
   * uniqueness rule. Turning MFA on, or changing the email or phone, so that
   * MFA applies but no enabled second factor reaches the user is
   * `failed_precondition` `mfa_method_unavailable` (nothing is changed).
   */
  async updateProfile(input: UpdateProfileInput, ctx: AuthCallContext, emailChangeDelivery?: () => LinkDelivery): Promise<{ message: string }> {
    const principal = this.#requireUser(ctx);
    const user = await this.#currentUser(ctx);
    const { patch, passwordChanged, pendingEmail } = await profilePatch(user, input, this.options, this.passwords, this.#nowSeconds());
    if (Object.keys(patch).length === 0 && pendingEmail === undefined) throw invalidArgument('please enter at least one field to update', 'nothing_to_update');
    if ('is_multi_factor_auth_enabled' in patch || 'email' in patch || 'phone_number' in patch) this.#assertMfaReachableAfter(user, patch);
    let delivery: LinkDelivery | undefined;
    if (pendingEmail !== undefined) {
      // Checked before anything is written: a taken address, or no way to mail the link, changes nothing.
      const holder = await this.users.findByEmail(pendingEmail);
      if (holder !== undefined && holder.id !== user.id) throw new LatchkeyError('already_exists', 'user with given email already exists', { reason: 'user_already_exists' });
      if (emailChangeDelivery === undefined) throw new LatchkeyError('failed_precondition', 'email sending is not configured', { reason: 'mail_disabled' });
      delivery = emailChangeDelivery();
    }
    if (Object.keys(patch).length > 0) await this.users.update(user.id, patch);
    // ASVS v5 7.4.3: a changed password ends every other session.
    if (passwordChanged) await this.sessions.endAllForUser(user.id, principal.sessionId);
    if (pendingEmail !== undefined && delivery !== undefined) {
      await this.email.requestEmailChange(user, pendingEmail, delivery);
      return { message: 'Profile successfully updated. The new email address takes effect once confirmed through the link sent to it.' };
    }
    return { message: 'Profile successfully updated.' };
  }

  /**
   * MFA fails closed at login (see `MfaFlows.methodFor`), so a change after
   * which MFA applies to the user but no second factor reaches them would
   * lock them out: refused here with `failed_precondition`
   * `mfa_method_unavailable`, before anything is written.
   */
  #assertMfaReachableAfter(user: UserRecord, patch: UserFields): void {
    const next: UserRecord = {
      ...user,
      ...(patch.is_multi_factor_auth_enabled === undefined ? {} : { is_multi_factor_auth_enabled: patch.is_multi_factor_auth_enabled }),
      ...(patch.email === undefined ? {} : { email: normalizeEmail(patch.email) ?? null }),
      ...(patch.phone_number === undefined ? {} : { phone_number: normalizePhone(patch.phone_number) ?? null }),
    };
    try {
      this.mfa.methodFor(next);
    } catch (err) {
      if (!(err instanceof LatchkeyError) || err.reason !== 'mfa_method_unavailable') throw err;
      throw new LatchkeyError('failed_precondition', 'no enabled second factor could reach this account after this change, so it would lock the account out', {
        reason: 'mfa_method_unavailable',
      });
    }
  }

  /** `deactivate_account`: soft delete; login and every token and session are refused afterwards. */
  async deactivateAccount(ctx: AuthCallContext): Promise<{ message: string }> {
    const user = await this.#currentUser(ctx);
    await this.users.update(user.id, { deactivated_at: this.#nowSeconds() });
    await this.sessions.endAllForUser(user.id);
    await this.mfa.deleteUserData(user.id);
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
    o: { loginMethod: string; roles?: readonly string[] | undefined; scope?: readonly string[] | undefined; message?: string; amr?: string[] | undefined },
    ctx: AuthCallContext = {},
  ): Promise<AuthResult> {
    const user = await this.#activeUser(userId);
    if (user === undefined) throw unauthenticated();
    const roles = this.#requestedRoles(user, o.roles);
    await this.#endPresentedSession(ctx);
    return this.#openSession(user, { roles, scope: o.scope, loginMethod: o.loginMethod, message: o.message ?? 'Logged in successfully', amr: o.amr });
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

  // ---------------------------------------------------------------- email links

  /**
   * `reset_password`: with `token`, from a reset or invitation link (see
   * {@link VerificationFlows.resetPassword}); with `otp` and `phone_number`,
   * from the code `forgot_password` texted: the code is proven and used up
   * (errors of `MfaFlows.checkResetCode`; an unknown, deactivated or revoked
   * account answers as a wrong code), the password set, the number marked
   * verified and every session of the user ended. `invalid_argument`
   * (`missing_reset_proof`) without either.
   */
  async resetPassword(input: {
    token?: string | undefined;
    otp?: string | undefined;
    phone_number?: string | undefined;
    password: string;
    confirm_password?: string | undefined;
  }): ReturnType<VerificationFlows['resetPassword']> {
    if (input.token !== undefined && input.token !== '') {
      return this.verification.resetPassword({ token: input.token, password: input.password, confirm_password: input.confirm_password });
    }
    const phone = normalizePhone(input.phone_number);
    if (input.otp === undefined || input.otp === '' || phone === undefined) {
      throw invalidArgument('token, or otp with phone_number, is required', 'missing_reset_proof');
    }
    if (input.confirm_password !== undefined && input.confirm_password !== input.password) {
      throw invalidArgument('password and confirm password does not match', 'password_mismatch');
    }
    const user = await this.users.findByPhone(phone);
    if (user === undefined || user.deactivated_at !== null || user.revoked_timestamp !== null) {
      throw new LatchkeyError('unauthenticated', 'invalid otp', { reason: 'invalid_otp', cause: { internal_reason: 'reset_unknown_account' } });
    }
    assertPasswordAcceptable(input.password, { strong: this.options.enableStrongPassword }, { email: user.email });
    await this.mfa.checkResetCode(user, input.otp);
    const hash = await this.passwords.hash(input.password);
    const updated = await this.users.update(user.id, { password: hash, phone_number_verified_at: user.phone_number_verified_at ?? this.#nowSeconds() });
    await this.sessions.endAllForUser(user.id);
    return { message: 'Password updated successfully.', user: updated, identifier: 'forgot_password_otp' };
  }

  // ---------------------------------------------------------------- admin hooks

  /** The invitation link of a new user (see {@link VerificationFlows.createInvitation}). */
  createInvitation(user: UserRecord, redirectUri: string): Promise<string> {
    return this.verification.createInvitation(user, redirectUri);
  }

  /** Pending verification requests, newest first (`token` always null). */
  listVerificationRequests(page: { offset: number; limit: number }): ReturnType<VerificationFlows['listVerificationRequests']> {
    return this.verification.listVerificationRequests(page);
  }

  /** Removes the user's verification requests, one-time codes and authenticators inside the admin's user-deletion transaction. */
  async deleteUserData(user: UserRecord, transaction: StoreTransaction): Promise<void> {
    await this.verification.deleteUserData(user, transaction);
    await this.mfa.deleteUserData(user.id, transaction);
  }

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
