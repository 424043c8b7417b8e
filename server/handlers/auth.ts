/**
 * The handlers of the identity operations (spec: Public endpoints): sign-up, login, session,
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
import type { AuthResult } from '../../auth/index.ts';
import { AUTH_OPERATIONS } from '../../api/index.ts';
import type { RequestContext } from '../context.ts';
import { clearMfaCookieOn, clearSessionCookiesOn, setMfaCookieOn, setSessionPairOn } from '../session_cookies.ts';
import { recordSessionDevice } from '../session_device.ts';
import { linkBase, linkDelivery, signupVerification } from './link_mail.ts';
import { userEventRecorder } from './admin.ts';
import { audit, auditedCallContext, authOf, callContext } from './services_of.ts';

export { audit, authOf, callContext };
import type { HandlersOf } from './types.ts';

// ------------------------------------------------------------------ helpers

/** Sets the session cookie pair for a new or rotated session, and records the request's device for it (`list_sessions`). */
export async function setSessionCookies(ctx: RequestContext, result: AuthResult): Promise<void> {
  setSessionPairOn(ctx.cookies, ctx.services.config, result);
  await recordSessionDevice(ctx.services.auth, result, ctx, ctx.logger);
}

/** Sets the `mfa` challenge cookie when a result opened an MFA challenge. */
export function setMfaCookie(ctx: RequestContext, result: AuthResult): void {
  setMfaCookieOn(ctx.cookies, ctx.services.config, result);
}

/** Clears the `mfa` challenge cookie. */
export function clearMfaCookie(ctx: RequestContext): void {
  clearMfaCookieOn(ctx.cookies, ctx.services.config);
}

/** Clears the session cookie pair. */
export function clearSessionCookies(ctx: RequestContext): void {
  clearSessionCookiesOn(ctx.cookies, ctx.services.config);
}

export const AUTH_HANDLERS: HandlersOf<typeof AUTH_OPERATIONS> = {
  signup: async (ctx, input) => {
    const { app_data, ...rest } = input;
    const appData = app_data === undefined || app_data === null ? undefined : (app_data as unknown);
    if (appData !== undefined && (typeof appData !== 'object' || Array.isArray(appData))) {
      throw new LatchkeyError('invalid_argument', 'app_data: must be an object', { reason: 'invalid_field', details: { field: 'app_data' } });
    }
    const verify = signupVerification(ctx, input);
    // The audit row and the webhook deliveries commit with the user (security matrix E3).
    const record = userEventRecorder(ctx, 'user.signup', { webhook: 'user.signup' });
    const result = await authOf(ctx).signup({ ...rest, ...(appData === undefined ? {} : { app_data: appData as Record<string, unknown> }) }, callContext(ctx), verify, record);
    await setSessionCookies(ctx, result);
    // A phone sign-up under --enable-phone-verification, or any sign-up under --enforce-mfa, gets the challenge cookie instead of a session.
    setMfaCookie(ctx, result);
    return result.response as never;
  },
  login: async (ctx, input) => {
    // A1: the identity service audits a refusal with its precise reason (auth/audit_port.ts); the client never sees it.
    const result = await authOf(ctx).login(input, auditedCallContext(ctx));
    if (result.response.user !== undefined) await audit(ctx, 'user.login_success', { userId: result.response.user.id, user: result.record, webhook: 'user.login' });
    await setSessionCookies(ctx, result);
    setMfaCookie(ctx, result);
    return result.response as never;
  },
  session: async (ctx, input) => {
    let result: AuthResult;
    try {
      result = await authOf(ctx).session(input, callContext(ctx));
    } catch (err) {
      // B2: a replayed refresh token is a security event.
      if (err instanceof LatchkeyError && err.reason === 'refresh_token_reused') await audit(ctx, 'token.refresh_token_reuse');
      throw err;
    }
    await setSessionCookies(ctx, result);
    return result.response as never;
  },
  logout: async (ctx) => {
    const out = await authOf(ctx).logout(callContext(ctx));
    await audit(ctx, 'user.logout', { userId: ctx.principal.kind === 'user' ? ctx.principal.userId : undefined });
    clearSessionCookies(ctx);
    return out;
  },
  // Not async: a live cookie session's active user, read at once, is answered without a promise.
  profile: (ctx) => authOf(ctx).profile(callContext(ctx)) as never,
  update_profile: async (ctx, input) => {
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
  deactivate_account: async (ctx, input) => {
    const out = await authOf(ctx).deactivateAccount(callContext(ctx), input.password ?? undefined);
    await audit(ctx, 'user.deactivated', { userId: ctx.principal.kind === 'user' ? ctx.principal.userId : undefined, webhook: 'user.deactivated' });
    clearSessionCookies(ctx);
    return out;
  },
  revoke: async (ctx, input) => {
    const out = await authOf(ctx).revoke(input);
    await audit(ctx, 'token.revoked');
    return out;
  },
  reset_password: async (ctx, input) => {
    const out = await authOf(ctx).resetPassword(input);
    await audit(ctx, 'user.password_reset', { userId: out.user.id, metadata: { link: out.identifier } });
    return { message: out.message };
  },
  // Not async: a token verified before, with its session alive in process, is answered without a promise.
  validate_jwt_token: (ctx, input) => authOf(ctx).validateJwtToken(input) as never,
  validate_session: (ctx, input) => authOf(ctx).validateSession(input, callContext(ctx)) as never,
};

