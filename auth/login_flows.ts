/**
 * Sign-up and login with a password, and the second step of a login
 * (`verify_otp`, `resend_otp`): the identity service's first-factor flows.
 * {@link AuthService} delegates to it; sessions are opened through
 * {@link SessionFlows}, second factors and phone verification go through
 * {@link MfaFlows}, sign-up verification mail through {@link EmailFlows}.
 */
import { LatchkeyError } from '../engine/errors.ts';
import type { MemoryStore } from './memory_store.ts';
import { ResponsePadding } from './response_padding.ts';
import type { ResolvedAuthOptions } from './options.ts';
import { assertPasswordAcceptable, type PasswordHasher } from './password.ts';
import { normalizeEmail, normalizePhone, type UserFields, type UserRecord, type UserStore } from './user_store_types.ts';
import type { MainDatabase, StoreTransaction } from './main_database.ts';
import { firstFactorAmr } from './issue_tokens.ts';
import { reserveAttempt } from './attempts.ts';
import type { MfaFlows, MfaMethod } from './mfa.ts';
import type { EmailFlows, LinkDelivery } from './email_flows.ts';
import type { PasskeyFlows } from './passkey_flows.ts';
import { signupEventSteps, type SignupRecorder } from './signup_recorder.ts';
import { EMAIL_RE, PHONE_RE, invalidArgument, invalidCredentials, type SignupInput } from './profile.ts';
import { toPublicUser, type AuthCallContext, type AuthResult } from './public_user.ts';
import { requestedRoles, type SessionFlows } from './session_flows.ts';

/**
 * The roles a sign-up asks for: none asked, the default roles; else each must
 * be a known role (`invalid_argument` `invalid_roles`) that is not protected
 * (`protected_role`).
 */
export function signupRoles(o: ResolvedAuthOptions, requested: readonly string[] | undefined): string[] {
  if (requested === undefined || requested.length === 0) return [...o.defaultRoles];
  const roles = [...new Set(requested)];
  for (const r of roles) {
    if (o.protectedRoles.includes(r)) throw invalidArgument(`role ${r} cannot be assigned at sign-up`, 'protected_role');
    if (!o.roles.includes(r)) throw invalidArgument(`invalid role ${r}`, 'invalid_roles');
  }
  return roles;
}

export interface LoginFlowsDeps {
  options: ResolvedAuthOptions;
  database: MainDatabase;
  users: UserStore;
  passwords: PasswordHasher;
  /** Where login attempts are counted. */
  memoryStore: MemoryStore;
  mfa: MfaFlows;
  email: EmailFlows;
  sessions: SessionFlows;
  passkeys: PasskeyFlows;
}

export class LoginFlows {
  readonly #d: LoginFlowsDeps;
  /** A sign-up of a taken address answers in the time a new one takes (A6). */
  readonly #signupTime = new ResponsePadding();

  constructor(deps: LoginFlowsDeps) {
    this.#d = deps;
  }

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
   * When MFA applies to the new user (`--enforce-mfa`) a sign-up that would
   * open a session answers the second-factor challenge instead, as `login`
   * does: no tokens and no session until `verify_otp`; `failed_precondition`
   * (`mfa_method_unavailable`) before anything is stored when no enabled
   * second factor can reach the user.
   *
   * `record` writes the sign-up's audit row and webhook deliveries: on SQL as
   * the last step of that same transaction (a failure there fails the
   * sign-up and stores nothing), on DynamoDB, which has no transactions,
   * right after the user is stored (docs/storage.md).
   */
  async signup(input: SignupInput, ctx: AuthCallContext = {}, verification?: LinkDelivery, record?: SignupRecorder): Promise<AuthResult> {
    const started = performance.now();
    try {
      const out = await this.#signup(input, ctx, verification, record);
      this.#signupTime.observe(performance.now() - started);
      return out;
    } catch (err) {
      // A taken address is refused before the user, its audit row and its session are written: held to a new sign-up's time.
      if (err instanceof LatchkeyError && err.code === 'already_exists') await this.#signupTime.hold(started);
      throw err;
    }
  }

  async #signup(input: SignupInput, ctx: AuthCallContext, verification?: LinkDelivery, record?: SignupRecorder): Promise<AuthResult> {
    const { options: o, users, mfa } = this.#d;
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
    if (verifyPhone && !mfa.canSendSms()) {
      throw new LatchkeyError('failed_precondition', 'phone verification needs the SMS vendor, which is not configured', { reason: 'sms_unavailable' });
    }
    if (input.confirm_password !== undefined && input.confirm_password !== input.password) {
      throw invalidArgument('password and confirm password does not match', 'password_mismatch');
    }
    assertPasswordAcceptable(input.password, { strong: o.enableStrongPassword }, { email: email ?? null });
    const roles = signupRoles(o, input.roles);
    // Hash before the uniqueness check so a taken address costs the same time as a free one.
    const hash = await this.#d.passwords.hash(input.password);
    const now = Math.floor(o.now() / 1000);
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
    // A sign-up that opens a session at once must pass MFA as a login does: refused before anything is stored
    // when a second factor applies but none can reach the user (as login refuses with mfa_method_unavailable).
    const opensSession = !(email !== undefined && o.enableEmailVerification) && !verifyPhone;
    if (opensSession) mfa.methodFor(users.draft(fields));
    const mailed = email !== undefined && o.enableEmailVerification && verification !== undefined;
    const draft = mailed ? users.draft(fields) : undefined;
    const mail = draft !== undefined && verification !== undefined ? await this.#d.email.prepareSignupVerification(draft, verification) : undefined;
    const events = signupEventSteps(this.#d.database, record);
    const within =
      mail === undefined || events.within === undefined
        ? (mail ?? events.within)
        : async (stored: UserRecord, transaction: StoreTransaction): Promise<void> => {
            await mail(stored, transaction);
            await events.within?.(stored, transaction);
          };
    const user = await users.create(fields, {
      ...(draft !== undefined && mail !== undefined ? { id: draft.id } : {}),
      ...(within === undefined ? {} : { within }),
    });
    await events.after?.(user);
    if (mailed && mail === undefined) await this.#d.email.sendSignupVerification(user, verification);
    else if (mailed) await verification.done?.(user, { created: true });
    if (email !== undefined && o.enableEmailVerification) {
      return { response: { message: 'Verification email has been sent. Please check your inbox', user: toPublicUser(user) } };
    }
    if (verifyPhone) {
      // No session before the number is proven: a texted code and the challenge cookie (verify_otp finishes the sign-up).
      const { response, grant } = await mfa.phoneVerification(user, { roles, scope: input.scope, loginMethod: 'mobile_basic_auth' });
      return { response: { ...response, user: toPublicUser(user) }, mfaSession: grant, record: user };
    }
    const loginMethod = fields.signup_methods ?? 'basic_auth';
    const method = mfa.methodFor(user);
    if (method !== undefined) {
      // --enforce-mfa: no tokens before the second factor, as at login; verify_otp opens the session.
      const { response, grant } = await mfa.challenge(user, method, { roles, scope: input.scope, loginMethod });
      return { response: { ...response, user: toPublicUser(user) }, mfaSession: grant, record: user };
    }
    await this.#d.sessions.endPresentedSession(ctx);
    return this.#d.sessions.open(user, { roles, scope: input.scope, loginMethod, message: 'Signed up successfully.' });
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
    const { options: o, users, passwords, mfa, memoryStore } = this.#d;
    const email = normalizeEmail(input.email);
    const phone = normalizePhone(input.phone_number);
    if (email === undefined && phone === undefined) throw invalidArgument('email or phone_number is required', 'missing_identifier');
    if (typeof input.password !== 'string' || input.password.length === 0) throw invalidArgument('password is required', 'missing_password');
    if (email !== undefined && !o.enableBasicAuthentication) throw new LatchkeyError('failed_precondition', 'basic authentication is disabled for this instance', { reason: 'basic_authentication_disabled' });
    if (email === undefined && !o.enableMobileBasicAuthentication) throw new LatchkeyError('failed_precondition', 'mobile basic authentication is disabled for this instance', { reason: 'mobile_basic_authentication_disabled' });
    const user = email !== undefined ? await users.findByEmail(email) : await users.findByPhone(phone ?? '');
    if (user === undefined) {
      await passwords.verify(input.password, undefined);
      throw invalidCredentials('unknown_account');
    }
    // Reserve an attempt before comparing (security matrix A2/A3): concurrent guesses cannot exceed the budget.
    const attemptsKey = `login_attempts:${user.id}`;
    await reserveAttempt(memoryStore, attemptsKey, { max: o.maxLoginAttempts, windowSeconds: o.loginAttemptWindow, message: 'too many login attempts, try again later', userId: user.id });
    const ok = await passwords.verify(input.password, user.password);
    const unverified = email !== undefined ? user.email_verified_at === null && o.enableEmailVerification : user.phone_number_verified_at === null && o.enablePhoneVerification;
    if (!ok) throw invalidCredentials('wrong_password', user.id);
    if (user.deactivated_at !== null) throw invalidCredentials('account_deactivated', user.id);
    // An unverified phone number is verified now, by a texted code (the password is proven); an unverified email stays refused.
    const phoneToVerify = unverified && email === undefined && mfa.canSendSms();
    if (unverified && !phoneToVerify) throw invalidCredentials('unverified_identifier', user.id);
    await memoryStore.del(attemptsKey);
    if (user.revoked_timestamp !== null) throw new LatchkeyError('permission_denied', 'user access has been revoked', { reason: 'access_revoked', cause: { internal_reason: 'access_revoked', user_id: user.id } });
    const roles = requestedRoles(user, input.roles);
    const loginMethod = email !== undefined ? 'basic_auth' : 'mobile_basic_auth';
    if (phoneToVerify) {
      const { response, grant } = await mfa.phoneVerification(user, { roles, scope: input.scope, loginMethod });
      return { response, mfaSession: grant, record: user };
    }
    if (o.enforceMfa || (o.enableMfa && user.is_multi_factor_auth_enabled === true)) {
      // A user with a passkey proves the second factor with it (verify_passkey), before the other methods.
      const passkey = await this.#d.passkeys.mfaChallenge(user, { roles, scope: input.scope, loginMethod });
      if (passkey !== undefined) return { response: passkey.response, mfaSession: passkey.grant, record: user };
    }
    const method = mfa.methodFor(user);
    if (method !== undefined) {
      // No tokens before the second factor: only the challenge session (the `mfa` cookie).
      const { response, grant } = await mfa.challenge(user, method, { roles, scope: input.scope, loginMethod });
      return { response, mfaSession: grant, record: user };
    }
    // Session fixation (B4): whatever session the request carried ends; the login gets a new one.
    await this.#d.sessions.endPresentedSession(ctx);
    return this.#d.sessions.open(user, { roles, scope: input.scope, loginMethod, message: 'Logged in successfully' });
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
    const mfa = this.#d.mfa;
    const proof = await mfa.verify(input, ctx.mfaCookie);
    // RFC 8176: the first factor (a password, or the link of a magic-link login), the code (sms for a texted one) and the fact of two factors.
    let amr = [firstFactorAmr(proof.loginMethod), proof.method === 'sms_otp' ? 'sms' : 'otp', 'mfa'];
    if (proof.verifiedPhone) {
      const user = await this.#d.users.update(proof.user.id, { phone_number_verified_at: Math.floor(this.#d.options.now() / 1000) });
      // MFA by another method still applies once the number is verified; a texted code is also the SMS second factor.
      const method = mfa.methodFor(user);
      if (method !== undefined && method !== 'sms_otp') {
        const { response, grant } = await mfa.challenge(user, method, { roles: proof.roles, scope: proof.scope, loginMethod: proof.loginMethod });
        return { response, mfaSession: grant, record: user, method: proof.method, enrolled: false, recoveryCodeUsed: false, verifiedPhone: true };
      }
      if (method === undefined) amr = [firstFactorAmr(proof.loginMethod), 'sms'];
    }
    const result = await this.#d.sessions.openFor(proof.user.id, { loginMethod: proof.loginMethod, roles: proof.roles, scope: proof.scope, message: 'Otp verified successfully.', amr }, ctx);
    return { ...result, method: proof.method, enrolled: proof.enrolled, recoveryCodeUsed: proof.recoveryCodeUsed, verifiedPhone: proof.verifiedPhone };
  }

  /** `resend_otp`: a new code and challenge session (see {@link MfaFlows.resend}). */
  async resendOtp(input: { email?: string | undefined; phone_number?: string | undefined }, ctx: AuthCallContext = {}): Promise<AuthResult> {
    const { user, method, grant } = await this.#d.mfa.resend(input, ctx.mfaCookie);
    const message = method === 'email_otp' ? 'Please check email inbox for the OTP' : 'Please check text message for the OTP';
    return { response: { message }, mfaSession: grant, record: user };
  }
}
