/** Email verification, magic links and password reset. */
import { MESSAGE, s } from '../shape.ts';
import { AUTH_RESPONSE, STR, STRINGS, row } from './auth.ts';
import { defineOperation } from './types.ts';

const EMAIL = s.string({ minLength: 1, maxLength: 320 });

export const VERIFICATION_OPERATIONS = [
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
  }),
] as const;
