/**
 * The second factor of a login (spec: Public endpoints `verify_otp`,
 * `resend_otp`; authorizer contract §2.2). Both need the `mfa` challenge
 * cookie that `login` set when MFA applied; gRPC clients send it as `cookie`
 * metadata and receive it as `set-cookie` metadata, like the session cookies.
 */
import { LatchkeyError } from '../../engine/errors.ts';
import { MESSAGE, s } from '../../api/shape.ts';
import { AUTH_RESPONSE, audit, authOf, callContext, clearMfaCookie, failureOf, setMfaCookie, setSessionCookies } from './auth.ts';
import { ALL_PROTOCOLS, defineOperation, type AnyOperation } from '../../api/operations/types.ts';

const IDENTIFIERS = {
  email: s.optional(s.string({ maxLength: 320, doc: 'The email of the login (or phone_number)' })),
  phone_number: s.optional(s.string({ maxLength: 32, doc: 'The phone number of the login (or email)' })),
};

const VERIFY_OTP_INPUT = s.object('VerifyOtpRequest', {
  ...IDENTIFIERS,
  otp: s.string({ minLength: 1, maxLength: 16, doc: 'The emailed or texted code, a TOTP code, or (with is_totp) a recovery code' }),
  is_totp: s.optional(s.bool({ doc: 'True for a TOTP (authenticator app) or recovery code' })),
  state: s.optional(s.string({ maxLength: 1024 })),
}, { graphql: { name: 'VerifyOTPRequest' } });

const RESEND_OTP_INPUT = s.object('ResendOtpRequest', {
  ...IDENTIFIERS,
  state: s.optional(s.string({ maxLength: 1024 })),
}, { graphql: { name: 'ResendOTPRequest' } });

function row(name: string, grpc: string) {
  return { name, admin: false, kind: 'mutation', auth: 'public', rest: { method: 'POST', path: `/v1/${name}` }, grpc: { method: grpc }, protocols: ALL_PROTOCOLS } as const;
}

/** Audits a refused second factor with its internal reason (never returned to the client). */
async function auditFailure(ctx: Parameters<typeof audit>[0], err: unknown, action: string): Promise<void> {
  const failure = failureOf(err);
  if (failure === undefined || !(err instanceof LatchkeyError) || (err.code !== 'unauthenticated' && err.code !== 'resource_exhausted')) return;
  await audit(ctx, action, { userId: failure.userId, metadata: { reason: failure.reason, mfa: true } });
}

export const MFA_OPERATIONS: readonly AnyOperation[] = [
  defineOperation({
    ...row('verify_otp', 'VerifyOtp'),
    input: VERIFY_OTP_INPUT,
    output: AUTH_RESPONSE,
    doc:
      'Proves the second factor of a login (the mfa cookie): the emailed or texted code, a TOTP code, or a recovery code; ' +
      'or the texted code that verifies a phone number (phone sign-up or login under --enable-phone-verification); ' +
      'opens the session like login and sets the session cookies. 5 wrong codes lock the second factor for 15 minutes.',
    handler: async (ctx, input) => {
      let result: Awaited<ReturnType<ReturnType<typeof authOf>['verifyOtp']>>;
      try {
        result = await authOf(ctx).verifyOtp(input, callContext(ctx));
      } catch (err) {
        await auditFailure(ctx, err, 'user.login_failed');
        throw err;
      }
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
      setSessionCookies(ctx, result);
      return result.response as never;
    },
  }),
  defineOperation({
    ...row('resend_otp', 'ResendOtp'),
    input: RESEND_OTP_INPUT,
    output: MESSAGE,
    doc: 'Sends a new email or SMS code for the login of the mfa cookie (the old code and cookie stop working) and sets a new mfa cookie. At most 5 per 15 minutes.',
    handler: async (ctx, input) => {
      let result: Awaited<ReturnType<ReturnType<typeof authOf>['resendOtp']>>;
      try {
        result = await authOf(ctx).resendOtp(input, callContext(ctx));
      } catch (err) {
        await auditFailure(ctx, err, 'user.otp_resend_failed');
        throw err;
      }
      await audit(ctx, 'user.otp_resent', { userId: result.record?.id, user: result.record });
      setMfaCookie(ctx, result);
      return { message: result.response.message };
    },
  }),
];
