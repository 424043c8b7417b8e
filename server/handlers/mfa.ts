/**
 * The second factor of a login (spec: Public endpoints `verify_otp`,
 * `resend_otp`; authorizer contract §2.2). Both need the `mfa` challenge
 * cookie that `login` set when MFA applied; gRPC clients send it as `cookie`
 * metadata and receive it as `set-cookie` metadata, like the session cookies.
 */
import { audit, authOf, clearMfaCookie, setMfaCookie, setSessionCookies } from './auth.ts';
import { auditedCallContext, callContext } from './services_of.ts';
import { MFA_OPERATIONS } from '../../api/index.ts';
import type { HandlersOf } from './types.ts';



export const MFA_HANDLERS: HandlersOf<typeof MFA_OPERATIONS> = {
  verify_otp: async (ctx, input) => {
    // A refused code is audited by the identity service with its precise reason (auth/audit_port.ts).
    const result = await authOf(ctx).verifyOtp(input, auditedCallContext(ctx));
    const userId = result.response.user?.id ?? result.record?.id;
    if (result.verifiedPhone) await audit(ctx, 'user.phone_verified', { userId, user: result.record });
    if (result.mfaSession !== undefined) {
      // The number is verified and a second factor of another method follows: a new challenge, no session yet.
      setMfaCookie(ctx, result);
      return result.response as never;
    }
    if (result.enrolled) await audit(ctx, 'user.mfa_enabled', { userId, user: result.record, metadata: { method: result.method } });
    await audit(ctx, 'user.login_success', {
      userId,
      user: result.record,
      webhook: 'user.login',
      metadata: { mfa_method: result.method, ...(result.recoveryCodeUsed ? { recovery_code: true } : {}) },
    });
    clearMfaCookie(ctx);
    await setSessionCookies(ctx, result);
    return result.response as never;
  },
  resend_otp: async (ctx, input) => {
    const result = await authOf(ctx).resendOtp(input, auditedCallContext(ctx));
    await audit(ctx, 'user.otp_resent', { userId: result.record?.id, user: result.record });
    setMfaCookie(ctx, result);
    return { message: result.response.message };
  },
  reset_totp: async (ctx, input) => {
    const user = await authOf(ctx).resetTotp(input, callContext(ctx));
    await audit(ctx, 'user.totp_reset', { userId: user.id, user });
    return { message: 'Authenticator app removed; the next sign-in with a second factor sets up a new one' };
  },
  regenerate_recovery_codes: async (ctx, input) => {
    const { user, codes } = await authOf(ctx).regenerateRecoveryCodes(input, callContext(ctx));
    await audit(ctx, 'user.recovery_codes_regenerated', { userId: user.id, user });
    return { message: 'New recovery codes; the old ones no longer work', recovery_codes: codes };
  },
};
