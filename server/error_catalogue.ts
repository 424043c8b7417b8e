/**
 * The translated `message` of the errors a user of the sign-in page or the
 * account center can meet (docs/errors.md, "Languages"), as data: the English
 * reference here, one table per language in `error_translations.ts`, all
 * keyed alike (a missing key fails the type check). Only the message
 * is translated; codes, reasons and details never are.
 *
 * A key is an error reason (`invalid_otp`), whose text serves every message
 * of that reason, or `reason.variant` (`invalid_password.too_short`) for one
 * of several English messages a reason carries: the variant whose English
 * text matches the error's message wins over the reason's own entry. The
 * English text of a key is the message as thrown, with `{name}` for a value
 * the message carries (a limit, a field, a provider); a translation may use
 * those names, and `details` fields of the same name, and no others (the
 * values are the ones of the English message, so nothing new is revealed).
 * Messages are short, in the second person, and say what to do.
 */

/** The English reference, by reason or `reason.variant`. */
export const ENGLISH_ERROR_MESSAGES = {
  // Sign-in and sign-up.
  invalid_credentials: 'invalid credentials',
  user_already_exists: 'user with given email already exists',
  signup_disabled: 'signup is disabled for this instance',
  access_revoked: 'user access has been revoked',
  account_deactivated: 'this account has been deactivated',
  basic_authentication_disabled: 'basic authentication is disabled for this instance',
  mobile_basic_authentication_disabled: 'mobile basic authentication is disabled for this instance',
  magic_link_login_disabled: 'magic link login is disabled for this instance',
  email_verification_disabled: 'email verification is disabled for this instance',
  missing_identifier: 'email or phone_number is required',
  email_not_verified: 'verify your email address before accepting the invitation',
  protected_role: 'role {role} cannot be assigned at sign-up',
  invalid_roles: 'invalid role {role}',
  // Passwords.
  password_mismatch: 'password and confirm password does not match',
  'invalid_password.required': 'password is required',
  'invalid_password.too_short': 'password must be at least {min} characters',
  'invalid_password.too_long': 'password must be at most {max} bytes',
  'invalid_password.common': 'password is too common',
  'invalid_password.email': 'password must not be the email address',
  missing_password: 'password is required',
  'missing_password.current': 'the current password is required',
  missing_old_password: 'old password is required',
  nothing_to_update: 'please enter at least one field to update',
  mfa_enforced: 'multi factor authentication is enforced',
  missing_reset_proof: 'token, or otp with phone_number, is required',
  invalid_phone_number: 'invalid phone number',
  // Codes, links and second factors.
  invalid_otp: 'invalid otp',
  expired_token: 'token has expired',
  invalid_token: 'invalid token',
  invalid_mfa_session: 'invalid or expired MFA session',
  missing_otp: 'a code of the authenticator app or a recovery code is required',
  'mfa_method_mismatch.totp': 'this login needs a TOTP code (is_totp: true)',
  'mfa_method_mismatch.sent': 'this login needs the code that was sent (is_totp: false)',
  mfa_method_unavailable: 'this second factor is not available',
  'mfa_method_unavailable.unreachable': 'a second factor is required for this account but none of the enabled methods can reach it; contact an administrator',
  'mfa_method_unavailable.lockout': 'no enabled second factor could reach this account after this change, so it would lock the account out',
  otp_not_resendable: 'a TOTP code is not sent; use the authenticator app',
  totp_not_enrolled: 'no authenticator app is enrolled on this account',
  concurrent_change: "another change of this account's sign-in methods is under way; try again",
  // Mail and text messages.
  mail_disabled: 'email sending is not configured',
  smtp_unavailable: 'mail could not be sent',
  sms_unavailable: 'phone verification needs the SMS vendor, which is not configured',
  sms_not_sent: 'the text message could not be sent',
  too_many_link_mails: 'no {event} link sent: more than {max} link mails to this address in {minutes} minutes',
  // Limits.
  too_many_attempts: 'too many login attempts, try again later',
  rate_limited: 'too many requests',
  // Sessions and re-authentication.
  unauthenticated: 'unauthorized',
  session_not_found: 'session not found',
  reauthentication_required: "this organization's session lifetime has passed since you signed in; sign in again to enter it",
  organization_session_expired: "the organization's session lifetime has passed; sign in again",
  user_not_found: 'user not found',
  // Passkeys.
  passkeys_disabled: 'passkeys are disabled for this instance',
  passkey_not_found: 'passkey not found',
  passkey_already_registered: 'this passkey is already registered',
  passkey_invalid_attestation: "the authenticator's attestation could not be verified",
  passkey_invalid_signature: 'the passkey signature is not valid',
  passkey_malformed_response: 'credential: {problem}',
  step_up_required: 'confirm it is you with one of your passkeys first (passkey_step_up)',
  // Sign-in methods and providers.
  last_sign_in_method: 'this is the only way to sign in to this account; set a password or link another provider first',
  'last_sign_in_method.passkey': 'this is the last way to sign in to this account; add another passkey or a password first',
  identity_not_linked: '{provider} is not linked to this account',
  invalid_provider: 'provider: must be one of {providers}',
  identity_owned_by_another_account: 'this provider account is already linked to another account; sign in to that account and unlink it there first',
  link_session_mismatch: 'the account to connect to is no longer signed in in this browser; sign in and connect again',
  social_login_denied: '{provider} did not authorize the login ({error})',
  social_login_failed: 'login with {provider} failed: {problem}',
  'social_login_failed.generic': 'login failed',
  unverified_provider_email: 'the OpenID provider says this email address is not verified',
  provider_unavailable: '{provider} could not be reached; try again later',
  provider_not_configured: 'provider is not configured',
  invalid_state: 'invalid or expired login state; start the login again',
  // Organizations and invitations.
  invitation_not_found: 'invitation not found',
  invitation_expired: 'the invitation has expired',
  invitation_not_pending: 'the invitation is not pending',
  invitation_email_mismatch: 'the invitation was sent to another email address',
  organization_not_found: 'organization not found',
  not_organization_member: 'you are not a member of this organization',
  organization_mfa_required: 'this organization requires a second factor',
  sign_in_method_not_allowed: 'this organization does not accept the way this session signed in',
  sso_email_domain_not_allowed: 'this connection signs in addresses of {domains} only',
  stale_organization: 'the active organization of this session is no longer valid; switch organization again',
  // The account center's other lists.
  consent_not_found: 'no consent to this client',
  // Input a form can send wrong.
  invalid_email: 'invalid email address',
  'invalid_email.none': 'the user has no email address',
  invalid_locale: 'locale must be a BCP 47 language tag such as en, de or pt-BR',
  invalid_field: '{field}: {problem}',
  'invalid_field.required': '{field}: is required',
  'invalid_field.empty': '{field}: must not be empty',
  'invalid_field.too_long': '{field}: must have at most {max} characters',
  'invalid_field.too_short': '{field}: must have at least {min} characters',
  // Outages.
  storage_unavailable: 'the database is unavailable; retry later',
  // Refused before the operation runs (HTTP guards).
  csrf_origin: 'cross-origin request refused',
} as const;

/** A key of the catalogues: a reason, or `reason.variant`. */
export type ErrorMessageKey = keyof typeof ENGLISH_ERROR_MESSAGES;
/** One language's messages: every key of the English reference. */
export type ErrorCatalogue = Readonly<Record<ErrorMessageKey, string>>;
