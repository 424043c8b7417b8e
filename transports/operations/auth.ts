/**
 * The identity operations (spec: Public endpoints) and the plug that builds
 * the identity service in the composition root: sign-up, login, session,
 * logout, profile, update_profile, deactivate_account, revoke,
 * validate_jwt_token and validate_session. Every row is served over GraphQL,
 * REST and gRPC alike. As in the GraphQL schema clients already use, `session`,
 * `validate_jwt_token` and `validate_session` are GraphQL queries (REST POST).
 *
 * Session cookies: `cookie_session` (host-only) and `cookie_session_domain`
 * (scoped to the registrable domain of `--url` when it has one), both
 * HttpOnly, `Path=/`, `Max-Age` of the session cookie lifetime, `Secure` per
 * `--app-cookie-secure`, and `SameSite` per `--app-cookie-same-site` (default
 * None, which browsers only honour on Secure cookies, so an insecure cookie
 * falls back to Lax).
 */
import { LatchkeyError } from '../../engine/errors.ts';
import type { Engine } from '../../engine/index.ts';
import {
  AuthService,
  TokenScript,
  MFA_COOKIE,
  SESSION_COOKIE,
  SESSION_DOMAIN_COOKIE,
  DynamoMemoryStore,
  createMemoryStore,
  engineAsPermissionEngine,
  sessionCookieOf,
  type AuthCallContext,
  type AuthResult,
  type JwtAlgorithm,
  type PermissionEngine,
  type UserRecord,
} from '../../auth/index.ts';
import type { Authenticator } from '../authenticate.ts';
import { epochMsOf, type CookieOptions, type CookieSink, type RequestContext } from '../context.ts';
import type { Config } from '../flags.ts';
import type { Services } from '../services.ts';
import { EMPTY, MESSAGE, s } from '../shape.ts';
import type { WebhookEvent } from '../../admin/index.ts';
import { USER, recordUserEvent, userEventRecorder } from './admin.ts';
import { plugOAuth } from './oauth.ts';
import { plugSocialLogin } from './social.ts';
import { ALL_PROTOCOLS, defineOperation, type AnyOperation } from './types.ts';
import { linkBase, linkDelivery, signupVerification } from './link_mail.ts';
import { otpDeliveryOf } from './otp_delivery.ts';

// ------------------------------------------------------------------ shapes

/** The AuthResponse of signup, login, session, verify_email and verify_otp. */
export const AUTH_RESPONSE = s.object(
  'AuthResponse',
  {
    message: s.string(),
    should_show_email_otp_screen: s.optional(s.bool({ doc: 'Login answered with an email OTP challenge instead of tokens' })),
    should_show_mobile_otp_screen: s.optional(s.bool({ doc: 'Login answered with an SMS OTP challenge instead of tokens' })),
    should_show_totp_screen: s.optional(s.bool({ doc: 'Login answered with a TOTP challenge instead of tokens' })),
    access_token: s.optional(s.string({ doc: 'Bearer token for later calls' })),
    id_token: s.optional(s.string({ doc: 'OpenID Connect identity token' })),
    refresh_token: s.optional(s.string({ doc: 'Rotating refresh token (scope offline_access, the default)' })),
    expires_in: s.optional(s.int({ doc: 'Seconds until the access token expires' })),
    user: s.optional(USER),
    authenticator_secret: s.optional(s.string({ doc: 'TOTP enrolment (first TOTP challenge): the base32 secret for the authenticator app' })),
    authenticator_uri: s.optional(s.string({ doc: 'TOTP enrolment: the otpauth:// URI of the secret (what a QR code encodes)' })),
    authenticator_recovery_codes: s.optional(s.list(s.string(), { doc: 'TOTP enrolment: single-use recovery codes, shown this once' })),
    authenticator_scanner_image: s.optional(s.string({ doc: 'TOTP enrolment: the QR code of authenticator_uri as a base64 data URL (GIF)' })),
  },
  { doc: 'The result of signup, login and session', graphql: { nullableItems: ['authenticator_recovery_codes'] } },
);

/** `{relation, object}` pairs that must all hold for the caller (checked through FGA). */
export const REQUIRED_RELATION = s.object(
  'RequiredRelationInput',
  {
    relation: s.string({ minLength: 1, maxLength: 64 }),
    object: s.string({ minLength: 1, maxLength: 256 }),
  },
  { graphql: { name: 'FgaRelationInput' } },
);

export const STR = (maxLength = 256) => s.optional(s.string({ maxLength }));
export const STRINGS = (doc: string) => s.optional(s.list(s.string({ maxLength: 256 }), { maxItems: 100, doc }));

const SIGNUP_INPUT = s.object('SignupRequest', {
  email: STR(320),
  phone_number: STR(32),
  password: s.string({ minLength: 1, maxLength: 1024 }),
  confirm_password: STR(1024),
  given_name: STR(),
  family_name: STR(),
  middle_name: STR(),
  nickname: STR(),
  gender: STR(64),
  birthdate: STR(64),
  picture: STR(2048),
  roles: STRINGS('Roles within --roles; none of --protected-roles (default: --default-roles)'),
  scope: STRINGS('Token scopes (default: openid email profile offline_access)'),
  redirect_uri: STR(2048),
  state: STR(1024),
  app_data: s.optional(s.json({ doc: 'Free-form application data (a JSON object)' })),
}, { graphql: { name: 'SignUpRequest', scalars: { app_data: 'Map' } } });

const LOGIN_INPUT = s.object('LoginRequest', {
  email: STR(320),
  phone_number: STR(32),
  password: s.string({ minLength: 1, maxLength: 1024 }),
  roles: STRINGS('A subset of the user roles to put in the tokens'),
  scope: STRINGS('Token scopes (default: openid email profile offline_access)'),
  state: STR(1024),
});

const SESSION_INPUT = s.object('SessionRequest', {
  roles: STRINGS('A subset of the user roles to put in the tokens'),
  scope: STRINGS('Token scopes'),
  state: STR(1024),
  required_relations: s.optional(s.list(REQUIRED_RELATION, { maxItems: 100, doc: 'Relations the caller must hold (all of them)' })),
  refresh_token: s.optional(s.string({ maxLength: 16384, doc: 'Rotate this refresh token instead of using the session cookie' })),
}, { graphql: { name: 'SessionQueryRequest' } });

const UPDATE_PROFILE_INPUT = s.object('UpdateProfileRequest', {
  old_password: STR(1024),
  new_password: STR(1024),
  confirm_new_password: STR(1024),
  email: STR(320),
  phone_number: STR(32),
  given_name: STR(),
  family_name: STR(),
  middle_name: STR(),
  nickname: STR(),
  gender: STR(64),
  birthdate: STR(64),
  picture: STR(2048),
  is_multi_factor_auth_enabled: s.optional(s.bool()),
  app_data: s.optional(s.json()),
}, { graphql: { scalars: { app_data: 'Map' } } });

const VALIDATE_JWT_INPUT = s.object('ValidateJwtTokenRequest', {
  token_type: s.string({ minLength: 1, maxLength: 32, doc: 'access_token, id_token or refresh_token' }),
  token: s.string({ minLength: 1, maxLength: 16384 }),
  roles: STRINGS('Roles the token must all carry'),
  required_relations: s.optional(s.list(REQUIRED_RELATION, { maxItems: 100 })),
}, { graphql: { name: 'ValidateJWTTokenRequest' } });

const VALIDATE_JWT_OUTPUT = s.object('ValidateJwtTokenResponse', {
  is_valid: s.bool(),
  claims: s.optional(s.json({ doc: 'The decoded claims of the token' })),
}, { graphql: { name: 'ValidateJWTTokenResponse', scalars: { claims: 'Map' } } });

const VALIDATE_SESSION_INPUT = s.object('ValidateSessionRequest', {
  cookie: s.optional(s.string({ maxLength: 4096, doc: 'The session cookie value (default: the request cookie)' })),
  roles: STRINGS('Roles the session must all carry'),
  required_relations: s.optional(s.list(REQUIRED_RELATION, { maxItems: 100 })),
});

const VALIDATE_SESSION_OUTPUT = s.object('ValidateSessionResponse', { is_valid: s.bool(), user: USER });

// ------------------------------------------------------------------ helpers

/** The identity service of the composition root; `unavailable` when it was not plugged in. */
export function authOf(ctx: RequestContext): AuthService {
  const a = ctx.services.auth;
  if (!(a instanceof AuthService)) throw new LatchkeyError('unavailable', 'identity service is not available', { reason: 'auth_unavailable' });
  return a;
}

/** The call context the identity service needs, from the request context. */
const SUPER_ADMIN = Object.freeze({ kind: 'super_admin' } as const);
const ANONYMOUS_CALLER = Object.freeze({ kind: 'anonymous' } as const);

export function callContext(ctx: RequestContext): AuthCallContext {
  const p = ctx.principal;
  return {
    // A user principal is passed as it is (the same fields; principals are never changed once resolved).
    principal: p.kind === 'user' ? p : p.kind === 'super_admin' ? SUPER_ADMIN : ANONYMOUS_CALLER,
    sessionCookie: sessionCookieOf(ctx.credentials.cookies),
    bearer: ctx.credentials.bearer,
    mfaCookie: ctx.credentials.cookies?.[MFA_COOKIE],
  };
}

/** `.example.com` for `https://app.example.com`; undefined for IPs, single labels and without `--url`. */
export function cookieDomainOf(url: string | undefined): string | undefined {
  if (!url) return undefined;
  let host: string;
  try {
    host = new URL(url).hostname;
  } catch {
    return undefined;
  }
  if (/^[0-9.]+$/.test(host) || host.includes(':') || !host.includes('.')) return undefined;
  const labels = host.split('.');
  return `.${labels.length > 2 ? labels.slice(-2).join('.') : host}`;
}

function cookieBase(c: Config): CookieOptions {
  const secure = Boolean(c.appCookieSecure);
  const configured = c.appCookieSameSite;
  const sameSite: CookieOptions['sameSite'] = configured === 'strict' ? 'Strict' : configured === 'lax' ? 'Lax' : secure ? 'None' : 'Lax';
  return { path: '/', httpOnly: true, secure, sameSite };
}

/** Sets the session cookie pair for a new or rotated session. */
export function setSessionCookies(ctx: RequestContext, result: AuthResult): void {
  if (result.session === undefined) return;
  const base = cookieBase(ctx.services.config);
  const domain = cookieDomainOf(ctx.services.config.url);
  ctx.cookies.set(SESSION_COOKIE, result.session.token, { ...base, maxAgeSeconds: result.session.maxAgeSeconds });
  ctx.cookies.set(SESSION_DOMAIN_COOKIE, result.session.token, { ...base, maxAgeSeconds: result.session.maxAgeSeconds, ...(domain ? { domain } : {}) });
}

/** Sets the `mfa` challenge cookie (host-only, HttpOnly) when a result opened an MFA challenge. */
export function setMfaCookie(ctx: RequestContext, result: AuthResult): void {
  if (result.mfaSession === undefined) return;
  ctx.cookies.set(MFA_COOKIE, result.mfaSession.token, { ...cookieBase(ctx.services.config), maxAgeSeconds: result.mfaSession.maxAgeSeconds });
}

/** Sets the session cookie pair and the `mfa` challenge cookie a result carries on `sink` (for endpoints outside the operations table). */
export function setSessionCookiesOn(sink: CookieSink, config: Config, result: AuthResult): void {
  const base = cookieBase(config);
  if (result.session !== undefined) {
    const domain = cookieDomainOf(config.url);
    sink.set(SESSION_COOKIE, result.session.token, { ...base, maxAgeSeconds: result.session.maxAgeSeconds });
    sink.set(SESSION_DOMAIN_COOKIE, result.session.token, { ...base, maxAgeSeconds: result.session.maxAgeSeconds, ...(domain ? { domain } : {}) });
  }
  if (result.mfaSession !== undefined) sink.set(MFA_COOKIE, result.mfaSession.token, { ...base, maxAgeSeconds: result.mfaSession.maxAgeSeconds });
}

/** Clears the `mfa` challenge cookie. */
export function clearMfaCookie(ctx: RequestContext): void {
  ctx.cookies.clear(MFA_COOKIE, cookieBase(ctx.services.config));
}

/** Clears the session cookie pair. */
export function clearSessionCookies(ctx: RequestContext): void {
  clearSessionCookiesOn(ctx.cookies, ctx.services.config);
}

/** Clears both app session cookies on `sink` (for endpoints outside the operations table, e.g. `/logout`). */
export function clearSessionCookiesOn(sink: CookieSink, config: Config): void {
  const base = cookieBase(config);
  const domain = cookieDomainOf(config.url);
  sink.clear(SESSION_COOKIE, base);
  sink.clear(SESSION_DOMAIN_COOKIE, { ...base, ...(domain ? { domain } : {}) });
}

/**
 * Audits a user event (and queues its webhook) through the admin service.
 * Never throws: a failure is logged by the admin helper.
 */
export async function audit(
  ctx: RequestContext,
  action: string,
  o: { userId?: string | undefined; user?: UserRecord | undefined; webhook?: WebhookEvent; metadata?: Record<string, unknown> } = {},
): Promise<void> {
  try {
    const user = o.user ?? (o.userId ? await authOf(ctx).users.findById(o.userId) : undefined);
    await recordUserEvent(ctx, action, {
      user,
      actorId: o.userId,
      ...(o.webhook === undefined ? {} : { webhook: o.webhook }),
      ...(o.metadata === undefined ? {} : { metadata: o.metadata }),
    });
  } catch (err) {
    ctx.logger.error('user event not recorded', { action, err });
  }
}

/** The internal reason and user of a refused login (carried in the error's never-serialized cause). */
export function failureOf(err: unknown): { reason: string; userId?: string } | undefined {
  if (!(err instanceof LatchkeyError)) return undefined;
  const cause = err.cause as { internal_reason?: unknown; user_id?: unknown } | undefined;
  const reason = typeof cause?.internal_reason === 'string' ? cause.internal_reason : err.reason ?? err.code;
  return typeof cause?.user_id === 'string' ? { reason, userId: cause.user_id } : { reason };
}

export function row(name: string, method: 'GET' | 'POST', grpc: string) {
  return { name, admin: false, rest: { method, path: `/v1/${name}` }, grpc: { method: grpc }, protocols: ALL_PROTOCOLS } as const;
}

// ------------------------------------------------------------------ rows

export const AUTH_OPERATIONS: readonly AnyOperation[] = [
  defineOperation({
    ...row('signup', 'POST', 'Signup'),
    kind: 'mutation',
    auth: 'public',
    input: SIGNUP_INPUT,
    output: AUTH_RESPONSE,
    doc: 'Creates a user (email or phone with password) and opens a session; sets the session cookies. With email verification it mails a link instead; with phone verification it texts a code for verify_otp and sets the mfa cookie; when MFA applies (--enforce-mfa) it answers the MFA challenge as login does, with the mfa cookie and no tokens.',
    handler: async (ctx, input) => {
      const { app_data, ...rest } = input;
      const appData = app_data === undefined || app_data === null ? undefined : (app_data as unknown);
      if (appData !== undefined && (typeof appData !== 'object' || Array.isArray(appData))) {
        throw new LatchkeyError('invalid_argument', 'app_data: must be an object', { reason: 'invalid_field', details: { field: 'app_data' } });
      }
      const verify = signupVerification(ctx, input);
      // The audit row and the webhook deliveries commit with the user (security matrix E3).
      const record = userEventRecorder(ctx, 'user.signup', { webhook: 'user.signup' });
      const result = await authOf(ctx).signup({ ...rest, ...(appData === undefined ? {} : { app_data: appData as Record<string, unknown> }) }, callContext(ctx), verify, record);
      setSessionCookies(ctx, result);
      // A phone sign-up under --enable-phone-verification, or any sign-up under --enforce-mfa, gets the challenge cookie instead of a session.
      setMfaCookie(ctx, result);
      return result.response as never;
    },
  }),
  defineOperation({
    ...row('login', 'POST', 'Login'),
    kind: 'mutation',
    auth: 'public',
    input: LOGIN_INPUT,
    output: AUTH_RESPONSE,
    doc: 'Logs in with email or phone and password; answers an MFA challenge flag instead of tokens when MFA applies.',
    handler: async (ctx, input) => {
      let result: AuthResult;
      try {
        result = await authOf(ctx).login(input, callContext(ctx));
      } catch (err) {
        const failure = failureOf(err);
        // A1: the precise reason is audited, never returned. Of the refusals by configuration, only the
        // one about this user (MFA applies but no second factor reaches them) is a security event.
        const audited = err instanceof LatchkeyError && err.code !== 'invalid_argument' && (err.code !== 'failed_precondition' || err.reason === 'mfa_method_unavailable');
        if (failure !== undefined && audited) {
          await audit(ctx, 'user.login_failed', { userId: failure.userId, metadata: { reason: failure.reason } });
        }
        throw err;
      }
      if (result.response.user !== undefined) await audit(ctx, 'user.login_success', { userId: result.response.user.id, user: result.record, webhook: 'user.login' });
      setSessionCookies(ctx, result);
      setMfaCookie(ctx, result);
      return result.response as never;
    },
  }),
  defineOperation({
    ...row('session', 'POST', 'Session'),
    graphqlArg: { nullable: true },
    kind: 'query',
    auth: 'user',
    input: SESSION_INPUT,
    output: AUTH_RESPONSE,
    doc: 'Refreshes the current session (cookie, bearer session or refresh token): new cookie and tokens.',
    handler: async (ctx, input) => {
      let result: AuthResult;
      try {
        result = await authOf(ctx).session(input, callContext(ctx));
      } catch (err) {
        // B2: a replayed refresh token is a security event.
        if (err instanceof LatchkeyError && err.reason === 'refresh_token_reused') await audit(ctx, 'token.refresh_token_reuse');
        throw err;
      }
      setSessionCookies(ctx, result);
      return result.response as never;
    },
  }),
  defineOperation({
    ...row('logout', 'POST', 'Logout'),
    kind: 'mutation',
    auth: 'user',
    input: EMPTY,
    output: MESSAGE,
    doc: 'Ends the current session server-side (its cookie, tokens and refresh tokens) and clears the cookies.',
    handler: async (ctx) => {
      const out = await authOf(ctx).logout(callContext(ctx));
      await audit(ctx, 'user.logout', { userId: ctx.principal.kind === 'user' ? ctx.principal.userId : undefined });
      clearSessionCookies(ctx);
      return out;
    },
  }),
  defineOperation({
    ...row('profile', 'GET', 'Profile'),
    kind: 'query',
    auth: 'user',
    input: EMPTY,
    output: USER,
    doc: 'The caller\'s user.',
    handler: async (ctx) => (await authOf(ctx).profile(callContext(ctx))) as never,
  }),
  defineOperation({
    ...row('update_profile', 'POST', 'UpdateProfile'),
    kind: 'mutation',
    auth: 'user',
    input: UPDATE_PROFILE_INPUT,
    output: MESSAGE,
    doc:
      'Updates profile fields; a password change needs old_password and ends the other sessions. With email verification a new email takes effect once confirmed ' +
      'through the link mailed to it (verify_email); until then the old address stays the login.',
    handler: async (ctx, input) => {
      const { app_data, ...rest } = input;
      const appData = app_data === undefined || app_data === null ? undefined : (app_data as unknown);
      if (appData !== undefined && (typeof appData !== 'object' || Array.isArray(appData))) {
        throw new LatchkeyError('invalid_argument', 'app_data: must be an object', { reason: 'invalid_field', details: { field: 'app_data' } });
      }
      // An email change under verification mails a confirmation link to the new address (update_email).
      const emailChange = () =>
        linkDelivery(ctx, linkBase(ctx, undefined, 'verify'), undefined, async (user) => audit(ctx, 'user.email_change_requested', { userId: user.id, user }));
      const out = await authOf(ctx).updateProfile({ ...rest, ...(appData === undefined ? {} : { app_data: appData as Record<string, unknown> }) }, callContext(ctx), emailChange);
      const userId = ctx.principal.kind === 'user' ? ctx.principal.userId : undefined;
      await audit(ctx, 'user.profile_updated', { userId });
      if (input.new_password) await audit(ctx, 'user.password_changed', { userId });
      return out;
    },
  }),
  defineOperation({
    ...row('deactivate_account', 'POST', 'DeactivateAccount'),
    kind: 'mutation',
    auth: 'user',
    input: EMPTY,
    output: MESSAGE,
    doc: 'Soft-deletes the caller\'s account: every session ends and login is refused afterwards.',
    handler: async (ctx) => {
      const out = await authOf(ctx).deactivateAccount(callContext(ctx));
      await audit(ctx, 'user.deactivated', { userId: ctx.principal.kind === 'user' ? ctx.principal.userId : undefined, webhook: 'user.deactivated' });
      clearSessionCookies(ctx);
      return out;
    },
  }),
  defineOperation({
    ...row('revoke', 'POST', 'Revoke'),
    kind: 'mutation',
    auth: 'public',
    input: s.object('RevokeRequest', { refresh_token: s.string({ minLength: 1, maxLength: 16384 }) }, { graphql: { name: 'OAuthRevokeRequest' } }),
    output: MESSAGE,
    doc: 'Revokes a refresh token and its whole family; the answer does not reveal whether the token was valid.',
    handler: async (ctx, input) => {
      const out = await authOf(ctx).revoke(input);
      await audit(ctx, 'token.revoked');
      return out;
    },
  }),
  defineOperation({
    ...row('reset_password', 'POST', 'ResetPassword'),
    kind: 'mutation',
    auth: 'public',
    input: s.object('ResetPasswordRequest', {
      token: s.optional(s.string({ minLength: 1, maxLength: 512, doc: 'The token of a password-reset or invitation link' })),
      otp: s.optional(s.string({ minLength: 1, maxLength: 32, doc: 'The code forgot_password texted (with phone_number, instead of token)' })),
      phone_number: STR(32),
      password: s.string({ minLength: 1, maxLength: 1024 }),
      confirm_password: STR(1024),
    }),
    output: MESSAGE,
    doc:
      'Sets the password from a one-time reset or invitation link token (marks the email verified), or from the code forgot_password texted with the phone number ' +
      '(marks the number verified); ends every session of the user.',
    handler: async (ctx, input) => {
      const out = await authOf(ctx).resetPassword(input);
      await audit(ctx, 'user.password_reset', { userId: out.user.id, metadata: { link: out.identifier } });
      return { message: out.message };
    },
  }),
  defineOperation({
    ...row('validate_jwt_token', 'POST', 'ValidateJwtToken'),
    kind: 'query',
    auth: 'public',
    input: VALIDATE_JWT_INPUT,
    output: VALIDATE_JWT_OUTPUT,
    doc: 'Validates a token of the given type (live session, optional roles and required relations); errors instead of is_valid false.',
    // Not async: a token verified before, with its session alive in process, is answered without a promise.
    handler: (ctx, input) => authOf(ctx).validateJwtToken(input) as never,
  }),
  defineOperation({
    ...row('validate_session', 'POST', 'ValidateSession'),
    graphqlArg: { nullable: true },
    kind: 'query',
    auth: 'public',
    input: VALIDATE_SESSION_INPUT,
    output: VALIDATE_SESSION_OUTPUT,
    doc: 'Validates a session cookie value (or the request cookie) with optional roles and required relations.',
    handler: async (ctx, input) => (await authOf(ctx).validateSession(input, callContext(ctx))) as never,
  }),
];

// ------------------------------------------------------------------ plug

function asEngine(v: unknown): Engine | undefined {
  const looks = (x: unknown): x is Engine =>
    typeof x === 'object' && x !== null && ['batchCheck', 'listObjects', 'readModel'].every((m) => typeof (x as Record<string, unknown>)[m] === 'function');
  if (looks(v)) return v;
  const inner = (v as { engine?: unknown } | undefined)?.engine;
  return looks(inner) ? inner : undefined;
}

/** The issuer of tokens: `--url` when given, else the local HTTP address. */
export function issuerOf(c: Config): string {
  const url = c.url;
  if (url) return url.replace(/\/+$/, '');
  const host = c.host === '0.0.0.0' || c.host === '::' ? 'localhost' : c.host;
  return `http://${host}:${c.httpPort}`;
}

/**
 * Builds the identity service into `services.auth` (after the engine, before
 * admin), with the memory store from `--redis-url`, and appends the user
 * authenticator (bearer access token or session cookie) to the chain.
 */
export async function plugAuth(services: Services): Promise<AuthService> {
  const c = services.config;
  // Sessions and codes live in Redis when it is configured; without it, in the main database when that is
  // DynamoDB (shared by every process, like the rest of its state), else in this process.
  const db = services.database;
  const memoryStore = !c.redisUrl && db.kind === 'dynamodb' ? new DynamoMemoryStore({ db: db.dynamo }) : createMemoryStore({ redisUrl: c.redisUrl });
  if (memoryStore instanceof DynamoMemoryStore) await memoryStore.init();
  const engine = asEngine(services.engine);
  const permissionEngine: PermissionEngine | undefined = engine === undefined ? undefined : engineAsPermissionEngine(engine);
  const mail = Boolean(c.smtpHost);
  // A script that does not compile refuses startup (with the flag named) rather than every later login.
  const tokenScript = c.customAccessTokenScript
    ? await TokenScript.create(c.customAccessTokenScript, {
        onFailure: (detail) => services.logger.error('custom access token script failed; login refused', { reason: detail.reason, message: detail.message }),
      })
    : undefined;
  if (tokenScript !== undefined) services.closers.push(() => tokenScript.close());
  const auth = await AuthService.create(
    {
      clientId: c.clientId ?? '',
      issuer: issuerOf(c),
      jwt: {
        type: c.jwtType as JwtAlgorithm,
        secret: c.jwtSecret,
        privateKey: c.jwtPrivateKey,
        publicKey: c.jwtPublicKey,
        roleClaim: c.jwtRoleClaim,
      },
      bcryptCost: c.bcryptCost,
      accessTokenTtl: c.accessTokenExpiresIn,
      refreshTokenTtl: c.refreshTokenExpiresIn,
      roles: c.roles,
      defaultRoles: c.defaultRoles,
      protectedRoles: c.protectedRoles,
      enableSignup: c.enableSignup,
      enableBasicAuthentication: c.enableBasicAuthentication,
      enableMobileBasicAuthentication: c.enableMobileBasicAuthentication,
      enableStrongPassword: c.enableStrongPassword,
      // Verification needs mail (or SMS) to be possible at all; without it addresses count as verified.
      enableEmailVerification: c.enableEmailVerification && mail,
      enablePhoneVerification: c.enablePhoneVerification && Boolean(c.smsApiKey),
      enableMagicLinkLogin: c.enableMagicLinkLogin && mail,
      enableEmailOtp: c.enableMfa && c.enableEmailOtp && mail,
      enableSmsOtp: c.enableMfa && c.enableSmsOtp,
      enableTotpLogin: c.enableMfa && c.enableTotpLogin,
      enableMfa: c.enableMfa,
      enforceMfa: c.enableMfa && c.enforceMfa,
      mfaSecret: c.clientSecret ?? '',
      totpIssuer: c.organizationName ?? 'Latchkey',
      now: epochMsOf(services.clock),
    },
    { database: services.database, memoryStore, engine: permissionEngine, otpDelivery: otpDeliveryOf(services), tokenScript },
  );
  services.auth = auth;
  // The user principal as the auth service resolves it (the same fields; frozen, shared between calls of one token),
  // without a promise when it is known at once.
  const authenticator: Authenticator = (credentials) => auth.authenticateNow(credentials) ?? auth.authenticate(credentials);
  services.authenticators.push(authenticator);
  services.closers.push(() => memoryStore.close());
  // Closers run last-in first-out: the email flows' background work finishes before the memory store closes.
  services.closers.push(() => auth.email.settled());
  // OpenID discovery and the JWKS, so that other services can verify our tokens (cacheable for 5 minutes).
  const cache = { 'cache-control': 'public, max-age=300' };
  const discovery = async () => ({ body: auth.tokens.openidConfiguration(issuerOf(c), { roleClaim: auth.options.jwt.roleClaim, pkcePlain: c.enablePkcePlain }), headers: cache });
  (services.httpRoutes ??= []).push(
    { path: '/.well-known/openid-configuration', handler: discovery },
    { path: '/.well-known/oauth-authorization-server', handler: discovery },
    { path: '/.well-known/jwks.json', handler: async () => ({ body: auth.tokens.jwks(), headers: cache }) },
  );
  plugOAuth(services, auth, memoryStore, issuerOf(c), (sink) => clearSessionCookiesOn(sink, c));
  plugSocialLogin(services, auth, memoryStore, issuerOf(c), (sink, result) => setSessionCookiesOn(sink, c, result));
  return auth;
}
