/** The second factor of a login: verify_otp and resend_otp. */
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
] as const;
