/**
 * The second factor of a login (verify_otp, resend_otp) and the signed-in
 * user's own authenticator settings (reset_totp, regenerate_recovery_codes).
 */
import { MESSAGE, s } from '../shape.ts';
import { AUTH_RESPONSE } from './auth.ts';
import { ALL_PROTOCOLS, defineOperation } from './types.ts';

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

const REAUTH_INPUT = (name: string) =>
  s.object(name, {
    password: s.optional(s.string({ maxLength: 1024, doc: 'The current password (accounts with a password)' })),
    otp: s.optional(s.string({ maxLength: 16, doc: 'A code of the authenticator app or a recovery code (accounts without a password)' })),
  });

const RECOVERY_CODES = s.object('RecoveryCodesResponse', {
  message: s.string(),
  recovery_codes: s.list(s.string(), { doc: 'The new recovery codes, shown once; each works once in place of a TOTP code' }),
});

const REAUTH_DOC =
  'Re-authentication first: the current password, or for an account without one a code of the authenticator app or a recovery code (otp); ' +
  'a passkey holder also confirms with a passkey (passkey_step_up). ';

function row<const N extends string>(name: N, grpc: string) {
  return { name, admin: false, kind: 'mutation', auth: 'public', rest: { method: 'POST', path: `/v1/${name}` }, grpc: { method: grpc }, protocols: ALL_PROTOCOLS } as const;
}

export const MFA_OPERATIONS = [
  defineOperation({
    ...row('verify_otp', 'VerifyOtp'),
    input: VERIFY_OTP_INPUT,
    output: AUTH_RESPONSE,
    doc:
      'Proves the second factor of a login (the mfa cookie): the emailed or texted code, a TOTP code, or a recovery code; ' +
      'or the texted code that verifies a phone number (phone sign-up or login under --enable-phone-verification); ' +
      'opens the session like login and sets the session cookies. 5 wrong codes lock the second factor for 15 minutes.',
  }),
  defineOperation({
    ...row('resend_otp', 'ResendOtp'),
    input: RESEND_OTP_INPUT,
    output: MESSAGE,
    doc: 'Sends a new email or SMS code for the login of the mfa cookie (the old code and cookie stop working) and sets a new mfa cookie. At most 5 per 15 minutes.',
  }),
  defineOperation({
    name: 'reset_totp',
    admin: false,
    kind: 'mutation',
    auth: 'user',
    rest: { method: 'POST', path: '/v1/reset_totp' },
    grpc: { method: 'ResetTotp' },
    protocols: ALL_PROTOCOLS,
    input: REAUTH_INPUT('ResetTotpRequest'),
    graphqlArg: { nullable: true },
    output: MESSAGE,
    doc:
      REAUTH_DOC +
      "Removes the caller's authenticator app enrolment and its recovery codes: every code of the old key stops working at once, and the next TOTP sign-in enrols a new key. " +
      'failed_precondition totp_not_enrolled without an enrolment.',
  }),
  defineOperation({
    name: 'regenerate_recovery_codes',
    admin: false,
    kind: 'mutation',
    auth: 'user',
    rest: { method: 'POST', path: '/v1/regenerate_recovery_codes' },
    grpc: { method: 'RegenerateRecoveryCodes' },
    protocols: ALL_PROTOCOLS,
    input: REAUTH_INPUT('RegenerateRecoveryCodesRequest'),
    graphqlArg: { nullable: true },
    output: RECOVERY_CODES,
    doc: REAUTH_DOC + 'Replaces the recovery codes of the caller\'s authenticator app with 10 new ones; the old ones stop working at once. failed_precondition totp_not_enrolled without a confirmed enrolment.',
  }),
] as const;
