/**
 * Where the email links of the identity flows point and how their mails go
 * out: the page a link opens (checked before any token is minted, security
 * matrix B7) and a {@link LinkDelivery} that renders the admin's email
 * template of the event (or the built-in default) and queues the mail in the
 * persisted outbox.
 */
import { LatchkeyError } from '../../engine/errors.ts';
import { checkRedirectUri, userMailLanguage } from '../../admin/index.ts';
import type { LinkDelivery } from '../../auth/index.ts';
import type { RequestContext } from '../context.ts';
import { issuerOf } from '../flags.ts';
import { authOf } from './services_of.ts';

/**
 * The page a link opens. A `redirect_uri` must be an http(s) URL on one of
 * `--allowed-origins`; under `*`, only the server's own origin (`--url`)
 * qualifies, since a link to any other site would hand it the token
 * (GHSA-x3f4-v83f-7wp2). Without one: `--reset-password-url` for reset links
 * when set (it wins over `redirect_uri` too: an operator's choice), else the
 * server's `/app` page (`/app/reset-password` for reset links), as the
 * reference does. Throws `invalid_argument` (`invalid_redirect_uri`).
 */
export function linkBase(ctx: RequestContext, redirectUri: string | undefined, kind: 'verify' | 'reset'): string {
  const c = ctx.services.config;
  const issuer = issuerOf(c);
  if (kind === 'reset' && c.resetPasswordUrl) return c.resetPasswordUrl;
  if (redirectUri) return checkRedirectUri(redirectUri, c.allowedOrigins, issuer).toString();
  return kind === 'reset' ? `${issuer}/app/reset-password` : `${issuer}/app`;
}

/**
 * A {@link LinkDelivery} through the admin service's templates and mail
 * queue. Throws `failed_precondition` (`mail_disabled`) at once when no SMTP
 * server is configured.
 */
export function linkDelivery(ctx: RequestContext, base: string, state: string | undefined, done?: LinkDelivery['done']): LinkDelivery {
  const admin = ctx.services.admin;
  const mail = admin?.mail;
  if (admin === undefined || mail === undefined) {
    throw new LatchkeyError('failed_precondition', 'email sending is not configured', { reason: 'mail_disabled' });
  }
  // The language of the built-in templates: the user's saved one, else the request's (its Accept-Language).
  const language = (user: { locale: string | null }) => userMailLanguage(user.locale, ctx.acceptLanguage);
  return {
    base,
    state,
    send: async (event, user, url) => {
      if (user.email === null) return;
      const rendered = await admin.renderEmail(event, user, { verification_url: url }, language(user));
      mail.enqueue({ to: user.email, subject: rendered.subject, html: rendered.html });
    },
    prepare:
      mail.enqueueIn === undefined
        ? undefined
        : async (event, user, url) => {
            const to = user.email;
            const rendered = await admin.renderEmail(event, user, { verification_url: url }, language(user));
            return async (transaction) => {
              if (to !== null) await mail.enqueueIn!({ to, subject: rendered.subject, html: rendered.html }, transaction);
            };
          },
    done,
    onError: (err) => ctx.logger.error('email link not sent', { err }),
  };
}

/**
 * `signup` with email verification on: checks the link's target and that
 * mail can be sent before the user is created, and returns the delivery
 * through which the sign-up stores the user, its `basic_auth_signup` request
 * and the mail of its link in one transaction. Undefined when the sign-up
 * needs no link.
 */
export function signupVerification(
  ctx: RequestContext,
  input: { email?: string | undefined; redirect_uri?: string | undefined; state?: string | undefined },
): LinkDelivery | undefined {
  const auth = authOf(ctx);
  if (!input.email?.trim() || !auth.options.enableEmailVerification) return undefined;
  return linkDelivery(ctx, linkBase(ctx, input.redirect_uri, 'verify'), input.state);
}
