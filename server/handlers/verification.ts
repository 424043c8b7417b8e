/**
 * The email-link operations (spec: Public endpoints): `magic_link_login`,
 * `verify_email`, `resend_verify_email` and `forgot_password`, served over
 * GraphQL, REST and gRPC alike. The flows are in auth/email_flows.ts; this
 * file checks where links point, supplies the mail delivery, sets the
 * session cookies and records the audit rows and webhooks of the reference:
 *
 * | operation | audit action | webhook |
 * |---|---|---|
 * | magic_link_login | `user.magic_link_requested` (when a mail went out) | — |
 * | verify_email | `user.email_verified` (first verification), `user.signup` (first verification of a magic-link account), `user.login_success` (unless MFA challenges the login: then `verify_otp` records it), `user.login_failed` (reason `mfa_method_unavailable`) | `user.signup` (same condition), `user.login` (same) |
 * | resend_verify_email | `user.verify_email_resent` (when a mail went out) | — |
 * | forgot_password | `user.forgot_password_requested` (when a mail went out) | — |
 *
 * The `user.signup` of a magic-link account is written in the transaction
 * that uses up its first link and verifies its address (SQL; security matrix
 * E3); the other rows once the operation's outcome is known.
 */
import { LatchkeyError } from '../../engine/errors.ts';
import type { AuthResult, UserRecord, VerifyEmailOutcome } from '../../auth/index.ts';
import type { RequestContext } from '../context.ts';
import { MESSAGE, s } from '../../api/shape.ts';
import { AUTH_RESPONSE, STR, STRINGS, audit, authOf, callContext, failureOf, row, setMfaCookie, setSessionCookies } from './auth.ts';
import { linkBase, linkDelivery } from '../link_mail.ts';
import { userEventRecorder } from './admin.ts';
import { defineOperation, type AnyOperation } from '../../api/operations/types.ts';

const EMAIL = s.string({ minLength: 1, maxLength: 320 });

/** Audits a request whose mail went out (the background part of the flow). */
const auditOnMail =
  (ctx: RequestContext, action: string) =>
  async (user: UserRecord, info: { created: boolean }): Promise<void> =>
    audit(ctx, action, { userId: user.id, user, metadata: info.created ? { user_created: true } : {} });

export const VERIFICATION_OPERATIONS: readonly AnyOperation[] = [
  defineOperation({
    ...row('magic_link_login', 'POST', 'MagicLinkLogin'),
    kind: 'mutation',
    auth: 'public',
    input: s.object('MagicLinkLoginRequest', {
      email: EMAIL,
      roles: STRINGS('Roles for the session the link opens (a subset of the user roles; for a new user, within --roles and not --protected-roles)'),
      scope: STRINGS('Token scopes of the session the link opens'),
      state: STR(1024),
      redirect_uri: STR(2048),
    }),
    output: MESSAGE,
    doc: 'Mails a one-time login link (verify_email logs in with its token); creates the user when unknown and sign-up is enabled. Same answer whether or not the account exists.',
    handler: async (ctx, input) => {
      const delivery = () => linkDelivery(ctx, linkBase(ctx, input.redirect_uri, 'verify'), input.state, auditOnMail(ctx, 'user.magic_link_requested'));
      return authOf(ctx).email.magicLinkLogin(input, delivery);
    },
  }),
  defineOperation({
    ...row('verify_email', 'POST', 'VerifyEmail'),
    kind: 'mutation',
    auth: 'public',
    input: s.object('VerifyEmailRequest', {
      token: s.string({ minLength: 1, maxLength: 512, doc: 'The token of a sign-up verification or magic link' }),
      state: STR(1024),
    }),
    output: AUTH_RESPONSE,
    doc: 'Uses up a sign-up verification or magic-link token: marks the email verified and opens a session (sets the session cookies), or answers the MFA challenge when MFA applies.',
    handler: async (ctx, input) => {
      let out: VerifyEmailOutcome;
      // The first verification of a magic-link account is its sign-up: its audit row and webhook deliveries commit with it.
      const signup = userEventRecorder(ctx, 'user.signup', { webhook: 'user.signup', metadata: { login_method: 'magic_link_login' } });
      try {
        out = await authOf(ctx).email.verifyEmail(input, callContext(ctx), signup);
      } catch (err) {
        // The link proved the first factor, but no second factor can reach its user: audited like a refused login.
        const failure = failureOf(err);
        if (err instanceof LatchkeyError && err.reason === 'mfa_method_unavailable' && failure !== undefined) {
          await audit(ctx, 'user.login_failed', { userId: failure.userId, metadata: { reason: failure.reason } });
        }
        throw err;
      }
      const user = out.result.record ?? out.user;
      const loginMethod = out.identifier === 'magic_link_login' ? 'magic_link_login' : 'basic_auth';
      if (out.firstVerification) await audit(ctx, 'user.email_verified', { userId: user.id, user });
      const result: AuthResult = out.result;
      if (out.mfaChallenged) {
        setMfaCookie(ctx, result);
        return result.response as never;
      }
      await audit(ctx, 'user.login_success', { userId: user.id, user, webhook: 'user.login', metadata: { login_method: loginMethod } });
      setSessionCookies(ctx, result);
      return result.response as never;
    },
  }),
  defineOperation({
    ...row('resend_verify_email', 'POST', 'ResendVerifyEmail'),
    kind: 'mutation',
    auth: 'public',
    input: s.object('ResendVerifyEmailRequest', {
      email: EMAIL,
      identifier: s.string({ minLength: 1, maxLength: 64, doc: 'basic_auth_signup or magic_link_login' }),
      state: STR(1024),
    }),
    output: MESSAGE,
    doc: 'Mails a new sign-up verification (or pending magic) link, replacing the old one. Same answer whether or not the account exists.',
    handler: async (ctx, input) => {
      const delivery = () => linkDelivery(ctx, linkBase(ctx, undefined, 'verify'), input.state, auditOnMail(ctx, 'user.verify_email_resent'));
      return authOf(ctx).email.resendVerifyEmail(input, delivery);
    },
  }),
  defineOperation({
    ...row('forgot_password', 'POST', 'ForgotPassword'),
    kind: 'mutation',
    auth: 'public',
    input: s.object('ForgotPasswordRequest', {
      email: STR(320),
      phone_number: STR(32),
      state: STR(1024),
      redirect_uri: STR(2048),
    }),
    output: s.object('ForgotPasswordResponse', {
      message: s.string(),
      should_show_mobile_otp_screen: s.optional(s.bool({ doc: 'True when the account was named by its phone number and a code is texted for reset_password (otp, phone_number)' })),
    }),
    doc:
      'Mails a password-reset link (--reset-password-url, else redirect_uri) for reset_password; for a phone number, with the SMS vendor configured, texts a code instead ' +
      '(should_show_mobile_otp_screen). Same answer whether or not the account exists.',
    handler: async (ctx, input) => {
      const delivery = () => linkDelivery(ctx, linkBase(ctx, input.redirect_uri, 'reset'), input.state, auditOnMail(ctx, 'user.forgot_password_requested'));
      const texted = { done: auditOnMail(ctx, 'user.forgot_password_requested'), onError: (err: unknown) => ctx.logger.error('password reset code not texted', { err }) };
      return authOf(ctx).email.forgotPassword(input, delivery, texted);
    },
  }),
];
