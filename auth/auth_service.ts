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
 *
 * The flows live in modules of their own, which the service delegates to:
 * sign-up, password login and its second step in `login_flows.ts`; opening,
 * refreshing, ending and validating sessions and tokens in
 * `session_flows.ts`; second factors in `mfa.ts`, email links in
 * `email_flows.ts` and `verification_flows.ts`. Profile changes, account
 * deactivation, password reset and the admin hooks are here; the stores and
 * flows are built and wired to each other in `auth_parts.ts`.
 */
import { auditRefusals, LOGIN_REFUSED, PASSKEY_LOGIN_REFUSED, PASSKEY_SECOND_FACTOR_REFUSED, RESEND_REFUSED, SECOND_FACTOR_REFUSED } from './audit_port.ts';
import type { PasskeyFlows } from './passkey_flows.ts';
import { LatchkeyError } from '../engine/errors.ts';
import { resolveAuthOptions, type AuthOptions, type ResolvedAuthOptions } from './options.ts';
import { assertPasswordAcceptable, type PasswordHasher } from './password.ts';
import type { SessionManager } from './sessions.ts';
import type { TokenService } from './tokens.ts';
import { normalizeEmail, normalizePhone, type UserFields, type UserRecord, type UserStore } from './user_store_types.ts';
import type { StoreTransaction } from './main_database.ts';
import type { MfaFlows } from './mfa.ts';
import type { VerificationFlows } from './verification_flows.ts';
import type { EmailFlows, LinkDelivery } from './email_flows.ts';
import type { Permissions } from './permissions.ts';
import type { TokenScript } from './token_script.ts';
import { invalidArgument, invalidCredentials, profilePatch, type UpdateProfileInput } from './profile.ts';
import { toPublicUser, type AuthCallContext, type AuthResult, type PublicUser, type UserPrincipal } from './public_user.ts';
import type { LoginFlows } from './login_flows.ts';
import { unauthenticated, type SessionFlows } from './session_flows.ts';
import type { OrganizationService, OrgCall } from './organizations.ts';
import { ScimService } from './scim.ts';
import type { AccountSessions, LinkedIdentityInfo, SessionInfo } from './account_sessions.ts';
import type { ProviderIdentityStore } from './provider_identity_store.ts';
import { regenerateRecoveryCodes, resetTotp, type ReauthInput } from './mfa_settings.ts';
import { buildAuthParts, type AuthDependencies, type AuthParts } from './auth_parts.ts';

export { INVALID_CREDENTIALS_MESSAGE } from './profile.ts';
export { SESSION_COOKIE, SESSION_DOMAIN_COOKIE, sessionCookieOf, toPublicUser, type AuthCallContext, type AuthResponse, type AuthResult, type PublicUser, type SessionGrant, type UserPrincipal } from './public_user.ts';

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
  /** Organizations, members, teams, invitations and domains; undefined on DynamoDB (docs/organizations.md). */
  readonly organizations: OrganizationService | undefined;
  /** Passkeys: sign-up, sign-in, second factor, management. */
  readonly passkeys: PasskeyFlows;
  /** The SCIM 2.0 service provider of each organization (docs/scim.md); undefined with organizations. */
  readonly scim: ScimService | undefined;
  readonly #permissions: Permissions;
  readonly #login: LoginFlows;
  readonly #session: SessionFlows;
  readonly #account: AccountSessions;
  /** The provider accounts (provider, subject) linked to users: social login finds its user here first. */
  get identities(): ProviderIdentityStore {
    return this.#account.identities;
  }

  private constructor(init: AuthParts) {
    this.organizations = init.organizations;
    this.passkeys = init.passkeys;
    this.#account = init.account;
    this.scim =
      init.organizations === undefined
        ? undefined
        : new ScimService({
            organizations: init.organizations,
            orgStore: init.organizations.store,
            scim: init.organizations.scimStore,
            users: init.users,
            deleteUserData: (user, tx) => this.deleteUserData(user, tx),
            endAllSessions: (userId) => this.sessions.endAllForUser(userId),
            nowSeconds: () => Math.floor(init.options.now() / 1000),
          });
    this.tokenScript = init.tokenScript;
    this.verification = init.verification;
    this.email = init.email;
    this.options = init.options;
    this.users = init.users;
    this.sessions = init.sessions;
    this.tokens = init.tokens;
    this.passwords = init.passwords;
    this.mfa = init.mfa;
    this.#permissions = init.permissions;
    this.#login = init.login;
    this.#session = init.session;
  }

  /**
   * Validates options, imports the JWT keys, runs the identity migrations
   * (dropping v1 unique constraints) and precomputes the dummy hash.
   * Throws `invalid_argument` for bad options.
   */
  static async create(options: AuthOptions, deps: AuthDependencies): Promise<AuthService> {
    const parts = await buildAuthParts(resolveAuthOptions(options), deps);
    const service = new AuthService(parts);
    const { identities } = parts;
    service.userDataRemovers.push((userId, transaction) => identities.deleteUserData(userId, transaction));
    return service;
  }

  /** True when FGA is enabled (an engine was given). */
  get fgaEnabled(): boolean {
    return this.#permissions.enabled;
  }

  #nowSeconds(): number {
    return Math.floor(this.options.now() / 1000);
  }

  // ---------------------------------------------------------------- sign-up and login

  /** `signup` (see {@link LoginFlows.signup}). */
  signup(...args: Parameters<LoginFlows['signup']>): ReturnType<LoginFlows['signup']> {
    return this.#login.signup(...args);
  }

  /** `login` with email or phone and password (see {@link LoginFlows.login}). */
  login(...args: Parameters<LoginFlows['login']>): ReturnType<LoginFlows['login']> {
    return auditRefusals(args[1]?.audit, LOGIN_REFUSED, () => this.#login.login(...args));
  }

  /** `verify_otp` (see {@link LoginFlows.verifyOtp}). */
  verifyOtp(...args: Parameters<LoginFlows['verifyOtp']>): ReturnType<LoginFlows['verifyOtp']> {
    return auditRefusals(args[1]?.audit, SECOND_FACTOR_REFUSED, () => this.#login.verifyOtp(...args));
  }

  /** `passkey_login` (see {@link PasskeyFlows.login}); refusals are audited like a refused login. */
  passkeyLogin(...args: Parameters<PasskeyFlows['login']>): ReturnType<PasskeyFlows['login']> {
    return auditRefusals(args[1]?.audit, PASSKEY_LOGIN_REFUSED, () => this.passkeys.login(...args));
  }

  /** `verify_passkey` (see {@link PasskeyFlows.verifyMfa}); refusals are audited like a refused second factor. */
  verifyPasskey(...args: Parameters<PasskeyFlows['verifyMfa']>): ReturnType<PasskeyFlows['verifyMfa']> {
    return auditRefusals(args[1]?.audit, PASSKEY_SECOND_FACTOR_REFUSED, () => this.passkeys.verifyMfa(...args));
  }

  /** `resend_otp` (see {@link LoginFlows.resendOtp}). */
  resendOtp(...args: Parameters<LoginFlows['resendOtp']>): ReturnType<LoginFlows['resendOtp']> {
    return auditRefusals(args[1]?.audit, RESEND_REFUSED, () => this.#login.resendOtp(...args));
  }

  // ---------------------------------------------------------------- sessions

  /** `session`: refreshes the caller's session and rotates its cookie and tokens (see {@link SessionFlows.session}). */
  session(...args: Parameters<SessionFlows['session']>): ReturnType<SessionFlows['session']> {
    return this.#session.session(...args);
  }

  /** Rotates a refresh token outside a cookie session, for the OAuth token endpoint (see {@link SessionFlows.refresh}). */
  refresh(refreshToken: string, dpopJkt?: string): ReturnType<SessionFlows['refresh']> {
    return this.#session.refresh(refreshToken, dpopJkt);
  }

  /** `logout` (see {@link SessionFlows.logout}). */
  logout(ctx: AuthCallContext): ReturnType<SessionFlows['logout']> {
    return this.#session.logout(ctx);
  }

  /** `revoke` (see {@link SessionFlows.revoke}). */
  revoke(input: Parameters<SessionFlows['revoke']>[0]): ReturnType<SessionFlows['revoke']> {
    return this.#session.revoke(input);
  }

  // ---------------------------------------------------------------- profile

  #requireUser(ctx: AuthCallContext): UserPrincipal {
    const p = ctx.principal;
    if (p === undefined || p.kind !== 'user') throw unauthenticated();
    return p;
  }

  async #currentUser(ctx: AuthCallContext): Promise<UserRecord> {
    const p = this.#requireUser(ctx);
    const user = await this.#session.activeUser(p.userId);
    if (user === undefined) throw unauthenticated();
    return user;
  }

  /** `profile`: the caller's User; at once when the store reads an active user without a promise (else, refusals included, through `activeUser`). */
  profile(ctx: AuthCallContext): PublicUser | Promise<PublicUser> {
    const p = ctx.principal;
    const user = p !== undefined && p.kind === 'user' ? this.#session.activeUserNow(p.userId) : undefined;
    return user !== undefined ? toPublicUser(user) : this.#profile(ctx);
  }

  async #profile(ctx: AuthCallContext): Promise<PublicUser> {
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
    // A passkey holder's address changes only after a fresh passkey step-up of this session (a stolen session is not enough).
    if ('email' in patch || 'phone_number' in patch || pendingEmail !== undefined) await this.passkeys.requireStepUp(user, principal.sessionId);
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

  /**
   * `deactivate_account`: soft delete; login and every token and session are
   * refused afterwards. With `password` (re-authentication, ASVS v5 7.5.1),
   * nothing changes unless it is the account's current one
   * (`unauthenticated` `invalid_credentials`; an account without a password
   * cannot prove one).
   */
  async deactivateAccount(ctx: AuthCallContext, password?: string): Promise<{ message: string }> {
    const user = await this.#currentUser(ctx);
    if (password !== undefined && (user.password === null || !(await this.passwords.verify(password, user.password)))) {
      throw invalidCredentials('wrong_old_password', user.id);
    }
    // A passkey holder confirms with a passkey first (passkey_step_up; `permission_denied` `step_up_required`).
    await this.passkeys.requireStepUp(user, this.#requireUser(ctx).sessionId);
    await this.users.update(user.id, { deactivated_at: this.#nowSeconds() });
    await this.sessions.endAllForUser(user.id);
    await this.mfa.deleteUserData(user.id);
    await this.passkeys.deleteUserData(user.id);
    for (const remove of this.userDataRemovers) await remove(user.id);
    return { message: 'Account deactivated successfully' };
  }

  // ---------------------------------------------------------------- sessions and sign-in methods

  /** `list_sessions`: the caller's live sessions with their devices (see {@link AccountSessions.list}). */
  async listSessions(ctx: AuthCallContext): Promise<SessionInfo[]> {
    const user = await this.#currentUser(ctx);
    return this.#account.list({ userId: user.id, sessionId: this.#requireUser(ctx).sessionId });
  }

  /** `revoke_session`: ends one of the caller's sessions, or all the others (see {@link AccountSessions.revoke}). */
  async revokeSession(input: { id?: string | undefined; all_others?: boolean | undefined }, ctx: AuthCallContext): Promise<number> {
    const user = await this.#currentUser(ctx);
    return this.#account.revoke({ userId: user.id, sessionId: this.#requireUser(ctx).sessionId }, input);
  }

  /** `_list_sessions`: any user's live sessions (admin). */
  listSessionsOf(userId: string): Promise<SessionInfo[]> {
    return this.#account.listOf(userId);
  }

  /** `_revoke_session`: ends any live session (admin); returns its user's id. */
  revokeAnySession(id: string): Promise<string> {
    return this.#account.revokeAny(id);
  }

  /** `linked_identities`: the providers linked to the caller's account (see {@link AccountSessions.linked}), and whether a password is set. */
  async linkedIdentities(ctx: AuthCallContext): Promise<{ identities: LinkedIdentityInfo[]; has_password: boolean }> {
    const user = await this.#currentUser(ctx);
    return { identities: await this.#account.linked(user), has_password: user.password !== null };
  }

  /** `unlink_identity` (see {@link AccountSessions.unlink}); returns the updated user. */
  async unlinkIdentity(provider: string, ctx: AuthCallContext): Promise<UserRecord> {
    const user = await this.#currentUser(ctx);
    return this.#account.unlink(user, provider, this.#requireUser(ctx).sessionId);
  }

  /** `reset_totp`: the caller's TOTP enrolment removed after re-authentication (see auth/mfa_settings.ts). */
  async resetTotp(input: ReauthInput, ctx: AuthCallContext): Promise<UserRecord> {
    const user = await this.#currentUser(ctx);
    await resetTotp(this, user, this.#requireUser(ctx).sessionId, input);
    return user;
  }

  /** `regenerate_recovery_codes`: new recovery codes after re-authentication (see auth/mfa_settings.ts). */
  async regenerateRecoveryCodes(input: ReauthInput, ctx: AuthCallContext): Promise<{ user: UserRecord; codes: string[] }> {
    const user = await this.#currentUser(ctx);
    return { user, codes: await regenerateRecoveryCodes(this, user, this.#requireUser(ctx).sessionId, input) };
  }

  // ---------------------------------------------------------------- hooks for other flows

  /** Opens a session for a user whose identity another flow has proven (see {@link SessionFlows.openFor}). */
  openSessionFor(...args: Parameters<SessionFlows['openFor']>): ReturnType<SessionFlows['openFor']> {
    return this.#session.openFor(...args);
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
    // The memberships' tuples go with the user's own (every tuple of `user:<id>`, in this transaction).
    await this.organizations?.deleteUserRows(user.id, transaction);
    await this.passkeys.deleteUserData(user.id, transaction);
    for (const remove of this.userDataRemovers) await remove(user.id, transaction);
  }

  /** Removers of what other components keep about a user (consents, say), run by deletion (in its transaction) and deactivation. */
  readonly userDataRemovers: ((userId: string, transaction?: StoreTransaction) => Promise<void>)[] = [];

  /**
   * `switch_organization`: makes `organization_id` the active organization
   * of the caller's session (empty: none) and issues the session's tokens
   * again with `org_id` and `org_roles` (and `organizations` when the scope
   * has `organizations`). The caller must be a member, or may join by a
   * verified domain (see `OrganizationService.enter`).
   */
  async switchOrganization(input: { organization_id?: string | undefined; scope?: readonly string[] | undefined }, ctx: AuthCallContext, call: Omit<OrgCall, 'actor'> = {}): Promise<AuthResult> {
    const principal = this.#requireUser(ctx);
    const orgs = this.organizations;
    if (orgs === undefined) throw new LatchkeyError('failed_precondition', 'organizations need a SQL main database', { reason: 'organizations_unavailable' });
    const session = await this.#session.sessionOfCaller(ctx);
    if (session === undefined) throw unauthenticated();
    const orgId = input.organization_id ?? '';
    const entered = orgId === '' ? undefined : await orgs.enter({ ...call, actor: { kind: 'user', userId: principal.userId } }, orgId, session);
    return this.#session.reissueWithOrganization(session, orgId, input.scope, entered?.org.settings.session_lifetime ?? 0);
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

  // ---------------------------------------------------------------- credentials and validation

  /** Resolves user credentials (a bearer access token or a session cookie) into a principal (see {@link SessionFlows.authenticate}). */
  authenticate(credentials: Parameters<SessionFlows['authenticate']>[0]): ReturnType<SessionFlows['authenticate']> {
    return this.#session.authenticate(credentials);
  }

  /** The principal of a DPoP-bound access token whose proof showed key `jkt` (see {@link SessionFlows.authenticateBound}). */
  authenticateBound(token: string, jkt: string): ReturnType<SessionFlows['authenticateBound']> {
    return this.#session.authenticateBound(token, jkt);
  }

  /** {@link authenticate}'s principal when it is known without a promise, else `undefined` (see `SessionFlows.authenticateNow`). */
  authenticateNow(credentials: Parameters<SessionFlows['authenticateNow']>[0]): ReturnType<SessionFlows['authenticateNow']> {
    return this.#session.authenticateNow(credentials);
  }

  /** `validate_jwt_token` (see {@link SessionFlows.validateJwtToken}). */
  validateJwtToken(input: Parameters<SessionFlows['validateJwtToken']>[0]): ReturnType<SessionFlows['validateJwtToken']> {
    return this.#session.validateJwtToken(input);
  }

  /** `validate_session` (see {@link SessionFlows.validateSession}). */
  validateSession(...args: Parameters<SessionFlows['validateSession']>): ReturnType<SessionFlows['validateSession']> {
    return this.#session.validateSession(...args);
  }

  /** `check_permissions` (see {@link Permissions.check}). */
  checkPermissions(input: Parameters<Permissions['check']>[0], ctx: AuthCallContext): ReturnType<Permissions['check']> {
    return this.#permissions.check(input, ctx.principal);
  }

  /** `explain_permission` (see {@link Permissions.explain}). */
  explainPermission(input: Parameters<Permissions['explain']>[0], ctx: AuthCallContext): ReturnType<Permissions['explain']> {
    return this.#permissions.explain(input, ctx.principal);
  }

  /** `list_relations` (see {@link Permissions.relations}). */
  listRelations(input: Parameters<Permissions['relations']>[0], ctx: AuthCallContext): ReturnType<Permissions['relations']> {
    return this.#permissions.relations(input, ctx.principal);
  }

  /** `list_permissions` (see {@link Permissions.list}). */
  listPermissions(input: Parameters<Permissions['list']>[0], ctx: AuthCallContext): ReturnType<Permissions['list']> {
    return this.#permissions.list(input, ctx.principal);
  }
}