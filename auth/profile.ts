/**
 * The inputs of `signup` and `update_profile`, the shared input errors,
 * and the field rules of `update_profile`: which stored fields change, and the
 * re-authentication a password, email or phone change needs.
 */
import { LatchkeyError } from '../engine/errors.ts';
import type { ResolvedAuthOptions } from './options.ts';
import { assertPasswordAcceptable, type PasswordHasher } from './password.ts';
import { emailKey, normalizeEmail, normalizePhone, type UserFields, type UserRecord } from './user_store_types.ts';

export const EMAIL_RE = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;
export const PHONE_RE = /^\+?[0-9]{6,20}$/;
/** The one message of every failed login, whatever the cause (no account enumeration). */
export const INVALID_CREDENTIALS_MESSAGE = 'invalid credentials';

export const invalidArgument = (message: string, reason: string): LatchkeyError => new LatchkeyError('invalid_argument', message, { reason });
/**
 * The one login failure. The precise internal reason (and the user, when
 * known) travel in `cause`, which is logged and audited but never serialized.
 */
export const invalidCredentials = (internalReason: string, userId?: string): LatchkeyError =>
  new LatchkeyError('unauthenticated', INVALID_CREDENTIALS_MESSAGE, { reason: 'invalid_credentials', cause: { internal_reason: internalReason, user_id: userId } });

/** Input of `signup`. */
export interface SignupInput {
  email?: string | undefined;
  phone_number?: string | undefined;
  password: string;
  confirm_password?: string | undefined;
  given_name?: string | undefined;
  family_name?: string | undefined;
  middle_name?: string | undefined;
  nickname?: string | undefined;
  gender?: string | undefined;
  birthdate?: string | undefined;
  picture?: string | undefined;
  roles?: readonly string[] | undefined;
  scope?: readonly string[] | undefined;
  app_data?: Record<string, unknown> | undefined;
}

/** Input of `update_profile`. */
export interface UpdateProfileInput {
  old_password?: string | undefined;
  new_password?: string | undefined;
  confirm_new_password?: string | undefined;
  email?: string | undefined;
  phone_number?: string | undefined;
  given_name?: string | undefined;
  family_name?: string | undefined;
  middle_name?: string | undefined;
  nickname?: string | undefined;
  gender?: string | undefined;
  birthdate?: string | undefined;
  picture?: string | undefined;
  is_multi_factor_auth_enabled?: boolean | undefined;
  app_data?: Record<string, unknown> | undefined;
  /** The preferred language, a BCP 47 tag; `''` clears it. */
  locale?: string | undefined;
}

/**
 * A well-formed BCP 47 language tag (RFC 5646 §2.1, the common forms): a
 * primary language subtag of 2 or 3 letters, then subtags of 1 to 8 letters
 * or digits (`de`, `pt-BR`, `zh-Hant-TW`, `es-419`).
 */
const LOCALE_RE = /^[A-Za-z]{2,3}(?:-[A-Za-z0-9]{1,8})*$/;

/**
 * The stored form of a `locale` input: `null` for `''` (cleared), the tag
 * with its language subtag lower-cased otherwise. `invalid_argument`
 * `invalid_locale` for what is not a language tag.
 */
export function localeOf(input: string): string | null {
  const tag = input.trim();
  if (tag === '') return null;
  if (tag.length > 35 || !LOCALE_RE.test(tag)) {
    throw new LatchkeyError('invalid_argument', 'locale must be a BCP 47 language tag such as en, de or pt-BR', { reason: 'invalid_locale', details: { field: 'locale' } });
  }
  const [lang = '', ...rest] = tag.split('-');
  return [lang.toLowerCase(), ...rest].join('-');
}

/**
 * The stored fields `update_profile` changes for `user`. Changing the
 * password, the email or the phone number needs `old_password` (missing:
 * `invalid_argument` `missing_old_password`; wrong: `unauthenticated`
 * `invalid credentials`); a new password is checked against the policy and
 * its confirmation.
 */
export async function profilePatch(
  user: UserRecord,
  input: UpdateProfileInput,
  o: ResolvedAuthOptions,
  passwords: PasswordHasher,
  nowSeconds: number,
): Promise<{ patch: UserFields; passwordChanged: boolean; pendingEmail?: string }> {
    const patch: UserFields = {};
    for (const k of ['given_name', 'family_name', 'middle_name', 'nickname', 'gender', 'birthdate', 'picture'] as const) {
      if (input[k] !== undefined) patch[k] = input[k];
    }
    if (input.app_data !== undefined) patch.app_data = input.app_data;
    if (input.locale !== undefined) patch.locale = localeOf(input.locale);
    if (input.is_multi_factor_auth_enabled !== undefined) {
      if (o.enforceMfa && !input.is_multi_factor_auth_enabled) throw invalidArgument('multi factor authentication is enforced', 'mfa_enforced');
      patch.is_multi_factor_auth_enabled = input.is_multi_factor_auth_enabled;
    }
    let passwordChanged = false;
    const changesEmail = input.email !== undefined && normalizeEmail(input.email) !== emailKey(user.email);
    const changesPhone = input.phone_number !== undefined && normalizePhone(input.phone_number) !== normalizePhone(user.phone_number);
    const changesPassword = input.new_password !== undefined && input.new_password !== '';
    // ASVS v5 7.5.1: re-authenticate before changing a password, an email or a phone number
    // (a stolen session alone must not be enough to take the account over). Accounts without a
    // password (signed up through another flow) can change their address without one.
    if (changesPassword || ((changesEmail || changesPhone) && user.password !== null)) {
      if (input.old_password === undefined || input.old_password === '') throw invalidArgument('old password is required', 'missing_old_password');
      if (!(await passwords.verify(input.old_password, user.password))) throw invalidCredentials('wrong_old_password', user.id);
    }
    if (changesPassword && input.new_password !== undefined) {
      if (input.confirm_new_password !== undefined && input.confirm_new_password !== input.new_password) {
        throw invalidArgument('password and confirm password does not match', 'password_mismatch');
      }
      assertPasswordAcceptable(input.new_password, { strong: o.enableStrongPassword }, { email: user.email });
      patch.password = await passwords.hash(input.new_password);
      passwordChanged = true;
    }
    let pendingEmail: string | undefined;
    if (changesEmail) {
      const email = normalizeEmail(input.email);
      if (email === undefined || !EMAIL_RE.test(email)) throw invalidArgument('invalid email address', 'invalid_email');
      // With verification the address on record stays until the new one is proven (update_email link),
      // so the user can always log in; without it the new address is taken as it is.
      if (o.enableEmailVerification) pendingEmail = email;
      else {
        patch.email = email;
        patch.email_verified_at = nowSeconds;
      }
    }
    if (changesPhone) {
      const phone = normalizePhone(input.phone_number);
      if (phone === undefined || !PHONE_RE.test(phone)) throw invalidArgument('invalid phone number', 'invalid_phone_number');
      patch.phone_number = phone;
      patch.phone_number_verified_at = o.enablePhoneVerification ? null : nowSeconds;
    }
    return pendingEmail === undefined ? { patch, passwordChanged } : { patch, passwordChanged, pendingEmail };
}
