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
import type { AuthResult, UserRecord } from '../../auth/index.ts';
import type { RequestContext } from '../context.ts';
import { audit, authOf, setMfaCookie, setSessionCookies } from './auth.ts';
import { auditedCallContext } from './services_of.ts';
import { linkBase, linkDelivery } from './link_mail.ts';
import { userEventRecorder } from './admin.ts';
import { VERIFICATION_OPERATIONS } from '../../api/index.ts';
import type { HandlersOf } from './types.ts';


/** Audits a request whose mail went out (the background part of the flow). */
const auditOnMail =
  (ctx: RequestContext, action: string) =>
  async (user: UserRecord, info: { created: boolean }): Promise<void> =>
    audit(ctx, action, { userId: user.id, user, metadata: info.created ? { user_created: true } : {} });

export const VERIFICATION_HANDLERS: HandlersOf<typeof VERIFICATION_OPERATIONS> = {
  magic_link_login: async (ctx, input) => {
    const delivery = () => linkDelivery(ctx, linkBase(ctx, input.redirect_uri, 'verify'), input.state, auditOnMail(ctx, 'user.magic_link_requested'));
    return authOf(ctx).email.magicLinkLogin(input, delivery);
  },
  verify_email: async (ctx, input) => {
    // The first verification of a magic-link account is its sign-up: its audit row and webhook deliveries commit with it.
    const signup = userEventRecorder(ctx, 'user.signup', { webhook: 'user.signup', metadata: { login_method: 'magic_link_login' } });
    // A link that proved the first factor when no second factor can reach its user is audited like a refused login (auth/audit_port.ts).
    const out = await authOf(ctx).email.verifyEmail(input, auditedCallContext(ctx), signup);
    const user = out.result.record ?? out.user;
    const loginMethod = out.identifier === 'magic_link_login' ? 'magic_link_login' : 'basic_auth';
    if (out.firstVerification) await audit(ctx, 'user.email_verified', { userId: user.id, user });
    const result: AuthResult = out.result;
    if (out.mfaChallenged) {
      setMfaCookie(ctx, result);
      return result.response as never;
    }
    await audit(ctx, 'user.login_success', { userId: user.id, user, webhook: 'user.login', metadata: { login_method: loginMethod } });
    await setSessionCookies(ctx, result);
    return result.response as never;
  },
  resend_verify_email: async (ctx, input) => {
    const delivery = () => linkDelivery(ctx, linkBase(ctx, undefined, 'verify'), input.state, auditOnMail(ctx, 'user.verify_email_resent'));
    return authOf(ctx).email.resendVerifyEmail(input, delivery);
  },
  forgot_password: async (ctx, input) => {
    const delivery = () => linkDelivery(ctx, linkBase(ctx, input.redirect_uri, 'reset'), input.state, auditOnMail(ctx, 'user.forgot_password_requested'));
    const texted = { done: auditOnMail(ctx, 'user.forgot_password_requested'), onError: (err: unknown) => ctx.logger.error('password reset code not texted', { err }) };
    return authOf(ctx).email.forgotPassword(input, delivery, texted);
  },
};
