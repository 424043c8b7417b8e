/**
 * The email-link flows of the public surface: sign-up verification
 * (`verify_email`, `resend_verify_email`), passwordless login
 * (`magic_link_login`) and `forgot_password`. Each records a one-time request
 * in {@link VerificationStore} (32 random bytes, only the SHA-256 stored) and
 * mails a link carrying the token; `verify_email` (sign-up and magic links)
 * and `reset_password` (reset links, see verification_flows.ts) use it up.
 *
 * No account enumeration (security matrix A6, ASVS v5 6.3.8): the requests
 * that name an address (`magic_link_login`, `forgot_password`,
 * `resend_verify_email`) check only what does not depend on the account
 * (feature switches, address syntax, the link's origin), answer at once with
 * a fixed message, and do the account lookup, the token and the mail in the
 * background. The answer — body, status and timing — is the same whether or
 * not the account exists; only its owner's mailbox can tell.
 *
 * Mails are rendered and queued by a {@link LinkMailer} that the caller
 * supplies (templates and the mail queue live outside `auth/`); the request
 * methods take it as a thunk, called after their own checks, so that a
 * disabled flow or a bad address is reported before the link's target or the
 * mail setup is looked at.
 */
import { auditRefusals, LINK_LOGIN_REFUSED } from './audit_port.ts';
import { LatchkeyError } from '../engine/errors.ts';
import type { MemoryStore } from './memory_store.ts';
import type { ResolvedAuthOptions } from './options.ts';
import { EMAIL_RE, PHONE_RE, invalidArgument } from './profile.ts';
import type { AuthCallContext, AuthResult } from './public_user.ts';
import { normalizeEmail, normalizePhone, type UserRecord, type UserStore } from './user_store_types.ts';
import { inTransaction, type MainDatabase, type StoreTransaction } from './main_database.ts';
import { signupEventSteps, type SignupRecorder } from './signup_recorder.ts';
import { VERIFICATION_TTL_SECONDS, invalidVerificationToken, type VerificationIdentifier, type VerificationStore } from './verification.ts';

/** The mail events of the link flows (the email template event names). */
export type LinkMailEvent = 'basic_auth_signup' | 'magic_link_login' | 'forgot_password' | 'update_email';

/** Renders and queues the mail of `event` with `url` as its `verification_url`. */
export type LinkMailer = (event: LinkMailEvent, user: UserRecord, url: string) => Promise<void>;

/** Where a link points and what happens around its mail. */
export interface LinkDelivery {
  /**
   * The page the link opens, its origin already checked by the caller; the
   * token is added as a `token` query parameter (and `state`, when given).
   */
  base: string;
  state?: string | undefined;
  send: LinkMailer;
  /**
   * Renders the mail of `event` and returns the step that queues it inside a
   * database transaction. Given, sign-up stores its user, verification
   * request and mail in one transaction (security matrix E3); otherwise the
   * mail goes through `send` after the user is stored.
   */
  prepare?: ((event: LinkMailEvent, user: UserRecord, url: string) => Promise<(transaction: StoreTransaction) => Promise<void>>) | undefined;
  /** Called once the mail is queued (audit, webhooks). */
  done?: ((user: UserRecord, info: { created: boolean }) => Promise<void>) | undefined;
  /** Failures of the background part; they never reach the caller. */
  onError: (err: unknown) => void;
}

/** What a verified link did: the session it opened and the facts for audit and webhooks. */
export interface VerifyEmailOutcome {
  result: AuthResult;
  user: UserRecord;
  identifier: 'basic_auth_signup' | 'magic_link_login' | 'update_email';
  /** True when this link verified the address (it was unverified before). */
  firstVerification: boolean;
  /** True when the answer is an MFA challenge (no session yet; `verify_otp` completes the login). */
  mfaChallenged: boolean;
}

/** Link mails asked for without authentication that one address may receive per window (against mail bombing). */
export const LINK_MAILS_PER_ADDRESS = 5;
export const LINK_MAIL_WINDOW_SECONDS = 15 * 60;

export const VERIFICATION_SENT_MESSAGE = 'Verification email has been sent. Please check your inbox';
export const MAGIC_LINK_SENT_MESSAGE = 'Magic Link has been sent to your email. Please check your inbox!';
export const RESET_LINK_SENT_MESSAGE = 'Please check your inbox! We have sent a password reset link.';
export const RESET_CODE_SENT_MESSAGE = 'Please check text message for the OTP to reset your password.';

/** The links `verify_email` accepts. */
const EMAIL_LINKS = ['basic_auth_signup', 'magic_link_login', 'update_email'] as const;

/** Memory-store key of the user an `update_email` request belongs to (its address is the new one). */
const changeKey = (requestId: string): string => `email_change:${requestId}`;

export interface EmailFlowsDeps {
  /** The main database (a verification and the user change it makes commit together). */
  database: MainDatabase;
  store: VerificationStore;
  users: UserStore;
  memoryStore: MemoryStore;
  options: ResolvedAuthOptions;
  nowSeconds: () => number;
  /** The roles a sign-up may ask for (throws `invalid_argument` otherwise). */
  signupRoles: (requested: readonly string[] | undefined) => string[];
  /**
   * The MFA challenge of a login whose first factor (the link) was proven, or
   * undefined when MFA does not apply to the user; throws `failed_precondition`
   * `mfa_method_unavailable` when it applies but cannot reach them (see `MfaFlows.methodFor`).
   */
  mfaChallenge: (user: UserRecord, login: { loginMethod: string; roles?: readonly string[] | undefined; scope?: readonly string[] | undefined }) => Promise<AuthResult | undefined>;
  /**
   * Throws `failed_precondition` `mfa_method_unavailable` when MFA applies to
   * the user but no second factor can reach them (see `MfaFlows.methodFor`).
   */
  assertMfaReachable: (user: UserRecord) => void;
  /** When every session of a user was last ended at once, ms since the epoch (see `SessionManager.endedAllAt`). */
  endedAllAt: (userId: string) => Promise<number | undefined>;
  /**
   * Texts a password-reset code to the user's phone (`forgot_password` by
   * phone number when the SMS vendor is configured; see `MfaFlows.sendResetCode`),
   * or undefined when codes cannot be texted (then a phone account's reset
   * link goes to its email address, if it has one).
   */
  textResetCode?: ((user: UserRecord) => Promise<void>) | undefined;
  /** Opens a session for a user whose address a link proved. */
  openSession: (
    userId: string,
    o: { loginMethod: string; roles?: readonly string[] | undefined; scope?: readonly string[] | undefined; message?: string },
    ctx: AuthCallContext,
  ) => Promise<AuthResult>;
}

/** Roles and scope asked for with a magic link, kept until the link is used. */
interface MagicGrant {
  roles?: string[] | undefined;
  scope?: string[] | undefined;
}

const grantKey = (requestId: string): string => `magic_link:${requestId}`;

function linkUrl(base: string, token: string, state: string | undefined): string {
  const url = new URL(base);
  url.searchParams.set('token', token);
  if (state) url.searchParams.set('state', state);
  return url.toString();
}

function emailOf(raw: string | undefined): string {
  const email = normalizeEmail(raw);
  if (email === undefined) throw invalidArgument('email is required', 'missing_identifier');
  if (email.length > 320 || !EMAIL_RE.test(email)) throw invalidArgument('invalid email address', 'invalid_email');
  return email;
}

export class EmailFlows {
  readonly #d: EmailFlowsDeps;
  readonly #pending = new Set<Promise<void>>();

  constructor(deps: EmailFlowsDeps) {
    this.#d = deps;
  }

  /** Runs the account-dependent part of a request after the answer. */
  #later(delivery: Pick<LinkDelivery, 'onError'>, task: () => Promise<void>): void {
    const p = task()
      .catch((err: unknown) => delivery.onError(err))
      .finally(() => this.#pending.delete(p));
    this.#pending.add(p);
  }

  /** Resolves when every background part started so far has finished (shutdown, tests). */
  async settled(): Promise<void> {
    while (this.#pending.size > 0) await Promise.allSettled([...this.#pending]);
  }

  /**
   * Records the request and queues the mail of `event` to `user`. `budgeted`:
   * a mail asked for by an unauthenticated request (resend, magic link,
   * forgot password), of which an address gets at most
   * {@link LINK_MAILS_PER_ADDRESS} per {@link LINK_MAIL_WINDOW_SECONDS},
   * shared by every process on the memory store: past that nothing is
   * recorded or sent, and the refusal goes to `delivery.onError` (the
   * caller's answer, already given, is the same either way).
   */
  async #mail(event: LinkMailEvent & VerificationIdentifier, user: UserRecord, delivery: LinkDelivery, grant?: MagicGrant, budgeted = false): Promise<string | undefined> {
    const email = user.email;
    if (email === null) return undefined;
    if (budgeted && (await this.#d.memoryStore.incr(`link_mails:${email}`, LINK_MAIL_WINDOW_SECONDS)) > LINK_MAILS_PER_ADDRESS) {
      throw new LatchkeyError('resource_exhausted', `no ${event} link sent: more than ${LINK_MAILS_PER_ADDRESS} link mails to this address in ${LINK_MAIL_WINDOW_SECONDS / 60} minutes`, {
        reason: 'too_many_link_mails',
        cause: { internal_reason: 'link_mail_budget', user_id: user.id },
      });
    }
    const { token, record } = await this.#d.store.create({ identifier: event, email, redirectUri: delivery.base });
    if (grant !== undefined) await this.#d.memoryStore.set(grantKey(record.id), JSON.stringify(grant), VERIFICATION_TTL_SECONDS);
    await delivery.send(event, user, linkUrl(delivery.base, token, delivery.state));
    return record.id;
  }

  /**
   * An email change under verification (`update_profile`): the address on
   * record stays until the new one is proven. Records an `update_email`
   * request for `newEmail`, remembers whose it is, and mails its link to the
   * new address; `verify_email` with the token switches the address (if no
   * one else took it meanwhile: `already_exists`). Counts against the new
   * address's link-mail budget. Awaited by the caller.
   */
  async requestEmailChange(user: UserRecord, newEmail: string, delivery: LinkDelivery): Promise<void> {
    const id = await this.#mail('update_email', { ...user, email: newEmail, email_verified_at: null }, delivery, undefined, true);
    if (id === undefined) return;
    await this.#d.memoryStore.set(changeKey(id), user.id, VERIFICATION_TTL_SECONDS);
    await delivery.done?.(user, { created: false });
  }

  /**
   * Sign-up with verification on, through a delivery with `prepare`: issues
   * the `basic_auth_signup` request of the user about to be stored (`draft`,
   * see `UserStore.draft`) and renders its mail, and returns the step that
   * stores both inside the transaction that stores the user. Undefined when
   * the user needs no link or the delivery cannot queue inside a transaction.
   */
  async prepareSignupVerification(draft: UserRecord, delivery: LinkDelivery): Promise<((user: UserRecord, transaction: StoreTransaction) => Promise<void>) | undefined> {
    if (draft.email === null || draft.email_verified_at !== null || delivery.prepare === undefined) return undefined;
    const issued = this.#d.store.issue({ identifier: 'basic_auth_signup', email: draft.email, redirectUri: delivery.base });
    const queue = await delivery.prepare('basic_auth_signup', draft, linkUrl(delivery.base, issued.token, delivery.state));
    return async (_user, transaction) => {
      await this.#d.store.insert(issued, transaction);
      await queue(transaction);
    };
  }

  /**
   * Sign-up with verification on: records the `basic_auth_signup` request of
   * a new unverified user and queues its mail. Awaited by the caller (the
   * sign-up answer already says the account exists).
   */
  async sendSignupVerification(user: UserRecord, delivery: LinkDelivery): Promise<void> {
    if (user.email === null || user.email_verified_at !== null) return;
    await this.#mail('basic_auth_signup', user, delivery);
    await delivery.done?.(user, { created: true });
  }

  /**
   * `verify_email`: uses up a sign-up or magic-link token, marks the address
   * verified and opens a session — or, when MFA applies to the user, answers
   * its challenge instead (a link is a first factor, like a password).
   * Errors: `unauthenticated` `invalid token`
   * (unknown, used or foreign token; the user gone or deactivated; issued
   * before every session of the user was ended),
   * `unauthenticated` `expired_token`, `permission_denied` (`access_revoked`,
   * or roles asked for with the link that the user no longer holds: the
   * token stays usable then), `failed_precondition` `mfa_method_unavailable`
   * (MFA applies but no second factor can reach the user: nothing is used up
   * or changed). Of concurrent uses exactly one wins.
   *
   * The first verification of a magic-link account is its sign-up: `record`
   * writes its `user.signup` event, on SQL as the last step of the
   * transaction that uses up the token and verifies the address (a failure
   * there changes nothing and the token stays usable), on DynamoDB right
   * after it (security matrix E3).
   */
  verifyEmail(input: { token: string }, ctx: AuthCallContext = {}, record?: SignupRecorder): Promise<VerifyEmailOutcome> {
    return auditRefusals(ctx.audit, LINK_LOGIN_REFUSED, () => this.#verifyEmail(input, ctx, record));
  }

  async #verifyEmail(input: { token: string }, ctx: AuthCallContext, record: SignupRecorder | undefined): Promise<VerifyEmailOutcome> {
    const d = this.#d;
    const request = await d.store.peek(input.token, EMAIL_LINKS);
    const identifier = request.identifier as VerifyEmailOutcome['identifier'];
    const changeOf = identifier === 'update_email' ? await d.memoryStore.get(changeKey(request.id)) : undefined;
    if (identifier === 'update_email' && changeOf === undefined) throw invalidVerificationToken();
    const user = changeOf !== undefined ? await d.users.findById(changeOf) : await d.users.findByEmail(request.email);
    if (user === undefined || user.deactivated_at !== null) throw invalidVerificationToken();
    if (user.revoked_timestamp !== null) throw new LatchkeyError('permission_denied', 'user access has been revoked', { reason: 'access_revoked' });
    // A link issued before every session of its user was ended (revoke_access, password reset) dies with
    // them, like any login proven before: refused as unusable (the row stays; a new link replaces it).
    const endedAt = await d.endedAllAt(user.id);
    if (endedAt !== undefined && request.created_at * 1000 <= endedAt) throw invalidVerificationToken();
    let grant: MagicGrant = {};
    if (identifier === 'magic_link_login') {
      const raw = await d.memoryStore.get(grantKey(request.id));
      if (raw !== undefined) grant = JSON.parse(raw) as MagicGrant;
      for (const r of grant.roles ?? []) if (!user.roles.includes(r)) throw new LatchkeyError('permission_denied', 'unauthorized', { reason: 'invalid_roles' });
    }
    // Refused before anything is written: the link stays unused and the address unverified.
    d.assertMfaReachable(user);
    const firstVerification = user.email_verified_at === null || identifier === 'update_email';
    const signup = signupEventSteps(d.database, firstVerification && identifier === 'magic_link_login' ? record : undefined);
    const activated = await inTransaction(d.database, async (transaction): Promise<UserRecord | undefined> => {
      await d.store.consume(request, transaction);
      // The new address replaces the old one now that it is proven (already_exists if another account took it meanwhile).
      if (identifier === 'update_email') {
        await d.users.update(user.id, { email: request.email, email_verified_at: d.nowSeconds() }, { transaction });
        return undefined;
      }
      if (!firstVerification) return undefined;
      // Account pre-hijacking (security matrix B8): a password set before the
      // address was proven may be someone else's; a magic link proves only the
      // mailbox, so that password stops working (forgot_password sets a new one).
      const patch = identifier === 'magic_link_login' && user.password !== null ? { email_verified_at: d.nowSeconds(), password: null } : { email_verified_at: d.nowSeconds() };
      const updated = await d.users.update(user.id, patch, { transaction });
      await signup.within?.(updated, transaction);
      return updated;
    });
    if (activated !== undefined) await signup.after?.(activated);
    await d.memoryStore.del(grantKey(request.id));
    if (changeOf !== undefined) await d.memoryStore.del(changeKey(request.id));
    const login = { loginMethod: identifier === 'magic_link_login' ? 'magic_link_login' : 'basic_auth', roles: grant.roles, scope: grant.scope };
    const current = (await d.users.findById(user.id)) ?? user;
    const challenge = await d.mfaChallenge(current, login);
    if (challenge !== undefined) return { result: challenge, user: current, identifier, firstVerification, mfaChallenged: true };
    const result = await d.openSession(user.id, { ...login, message: 'Email verified successfully.' }, ctx);
    return { result, user: result.record ?? current, identifier, firstVerification, mfaChallenged: false };
  }

  /**
   * `resend_verify_email`: a new link replaces the pending one of
   * (identifier, email). `basic_auth_signup`: for a password account whose
   * address is still unverified (also after the old link expired); `magic_link_login`:
   * while a magic link is pending, keeping its roles and scope. Always the
   * same answer. Errors: `invalid_argument` (`invalid_identifier`,
   * `invalid_email`), `failed_precondition` when the flow is disabled.
   */
  resendVerifyEmail(input: { email: string; identifier: string }, deliveryOf: () => LinkDelivery): { message: string } {
    const d = this.#d;
    const identifier = input.identifier;
    if (identifier !== 'basic_auth_signup' && identifier !== 'magic_link_login') throw invalidArgument('invalid identifier', 'invalid_identifier');
    if (identifier === 'basic_auth_signup' && !d.options.enableEmailVerification) {
      throw new LatchkeyError('failed_precondition', 'email verification is disabled for this instance', { reason: 'email_verification_disabled' });
    }
    if (identifier === 'magic_link_login') this.#requireMagicLinks();
    const email = emailOf(input.email);
    const delivery = deliveryOf();
    this.#later(delivery, async () => {
      const user = await d.users.findByEmail(email);
      if (user === undefined || user.deactivated_at !== null) return;
      const pending = await d.store.pending(identifier, email);
      let grant: MagicGrant | undefined;
      if (identifier === 'basic_auth_signup') {
        // Only a password sign-up awaits this link; for a passwordless account (invited, or made by a magic
        // link) it would be a login without a password, also where magic links are disabled.
        if (user.email_verified_at !== null || user.password === null) return;
      } else {
        if (pending === undefined) return;
        const raw = await d.memoryStore.get(grantKey(pending.id));
        grant = raw === undefined ? {} : (JSON.parse(raw) as MagicGrant);
      }
      await this.#mail(identifier, user, { ...delivery, base: pending?.redirect_uri || delivery.base }, grant, true);
      if (pending !== undefined) await d.memoryStore.del(grantKey(pending.id));
      await delivery.done?.(user, { created: false });
    });
    return { message: VERIFICATION_SENT_MESSAGE };
  }

  #requireMagicLinks(): void {
    if (!this.#d.options.enableMagicLinkLogin) {
      throw new LatchkeyError('failed_precondition', 'magic link login is disabled for this instance', { reason: 'magic_link_login_disabled' });
    }
  }

  /**
   * `magic_link_login`: mails a one-time login link. An unknown address gets
   * a new unverified, passwordless user with `--default-roles` (or the
   * requested roles, which must be allowed and not protected) when sign-up is
   * enabled; otherwise, like a deactivated or revoked account, no mail. The
   * roles and scope asked for go into the session the link opens. Errors:
   * `failed_precondition` (`magic_link_login_disabled`), `invalid_argument`
   * (`invalid_email`, `invalid_roles` for roles outside `--roles`).
   */
  magicLinkLogin(
    input: { email: string; roles?: readonly string[] | undefined; scope?: readonly string[] | undefined },
    deliveryOf: () => LinkDelivery,
  ): { message: string } {
    const d = this.#d;
    this.#requireMagicLinks();
    const email = emailOf(input.email);
    const roles = input.roles !== undefined && input.roles.length > 0 ? [...new Set(input.roles)] : undefined;
    for (const r of roles ?? []) if (!d.options.roles.includes(r)) throw invalidArgument(`invalid role ${r}`, 'invalid_roles');
    const grant: MagicGrant = { roles, scope: input.scope !== undefined && input.scope.length > 0 ? [...new Set(input.scope)] : undefined };
    const delivery = deliveryOf();
    this.#later(delivery, async () => {
      let user = await d.users.findByEmail(email);
      let created = false;
      if (user === undefined) {
        if (!d.options.enableSignup) return;
        try {
          user = await d.users.create({ email, roles: d.signupRoles(roles), signup_methods: 'magic_link_login' });
          created = true;
        } catch (err) {
          if (!(err instanceof LatchkeyError) || err.code !== 'already_exists') throw err;
          user = await d.users.findByEmail(email);
          if (user === undefined) throw err;
        }
      }
      if (user.deactivated_at !== null || user.revoked_timestamp !== null) return;
      const methods = (user.signup_methods ?? '').split(',').filter(Boolean);
      if (!methods.includes('magic_link_login')) user = await d.users.update(user.id, { signup_methods: [...methods, 'magic_link_login'].join(',') });
      await this.#mail('magic_link_login', user, delivery, grant, true);
      await delivery.done?.(user, { created });
    });
    return { message: MAGIC_LINK_SENT_MESSAGE };
  }

  /**
   * `forgot_password`: mails a reset link (used by `reset_password`) to the
   * account of the email or phone number, when it exists, is neither
   * deactivated nor revoked and has an email address. Named by its phone
   * number, with the SMS vendor configured, the account is texted a code
   * instead (`reset_password` with `otp` and `phone_number`) and the answer
   * says `should_show_mobile_otp_screen`. Always the same answer for a given
   * kind of identifier, whether or not the account exists. Errors:
   * `invalid_argument` (`missing_identifier`, `invalid_email`,
   * `invalid_phone_number`), `failed_precondition` when basic
   * authentication is disabled.
   */
  forgotPassword(
    input: { email?: string | undefined; phone_number?: string | undefined },
    deliveryOf: () => LinkDelivery,
    texted: Pick<LinkDelivery, 'done' | 'onError'> = { onError: () => {} },
  ): { message: string; should_show_mobile_otp_screen?: boolean } {
    const d = this.#d;
    if (!d.options.enableBasicAuthentication) {
      throw new LatchkeyError('failed_precondition', 'basic authentication is disabled for this instance', { reason: 'basic_authentication_disabled' });
    }
    const phone = normalizePhone(input.phone_number);
    const email = input.email !== undefined && input.email.trim() !== '' ? emailOf(input.email) : undefined;
    if (email === undefined && phone === undefined) throw invalidArgument('email or phone_number is required', 'missing_identifier');
    if (email === undefined && phone !== undefined && !PHONE_RE.test(phone)) throw invalidArgument('invalid phone number', 'invalid_phone_number');
    const text = d.textResetCode;
    if (email === undefined && phone !== undefined && text !== undefined) {
      // In the background, as the links: the answer's timing does not tell whether the number has an account.
      this.#later(texted, async () => {
        const user = await d.users.findByPhone(phone);
        if (user === undefined || user.deactivated_at !== null || user.revoked_timestamp !== null) return;
        await text(user);
        await texted.done?.(user, { created: false });
      });
      return { message: RESET_CODE_SENT_MESSAGE, should_show_mobile_otp_screen: true };
    }
    const delivery = deliveryOf();
    this.#later(delivery, async () => {
      const user = email !== undefined ? await d.users.findByEmail(email) : await d.users.findByPhone(phone ?? '');
      // A revoked user may not use anything (spec), so gets no link: the same silence as an unknown account.
      if (user === undefined || user.deactivated_at !== null || user.revoked_timestamp !== null || user.email === null) return;
      await this.#mail('forgot_password', user, delivery, undefined, true);
      await delivery.done?.(user, { created: false });
    });
    return { message: RESET_LINK_SENT_MESSAGE };
  }
}
