/**
 * The signed-in user's own second-factor settings: `reset_totp` and
 * `regenerate_recovery_codes`. Both are sensitive (whoever holds them can
 * pass the second factor), so each first re-authenticates the caller
 * (ASVS v5 7.5.1), as `update_profile` does for a password change and
 * `deactivate_account` for a deletion:
 *
 * - an account with a password proves it (`password`; missing:
 *   `invalid_argument` `missing_password`; wrong: `unauthenticated`
 *   `invalid_credentials`);
 * - an account without one (social or magic-link sign-in) proves a code of
 *   its authenticator app or one of its recovery codes (`otp`; missing:
 *   `invalid_argument` `missing_otp`; wrong: `unauthenticated` `invalid_otp`,
 *   under the login's budget of 5 failures per 15 minutes);
 * - a passkey holder also confirms with a passkey first
 *   (`passkey_step_up`; else `permission_denied` `step_up_required`): a
 *   password is checked before the step-up is used up, a code after (a code
 *   is accepted once, so it must not be spent by a call refused for want of
 *   the step-up).
 *
 * Nothing changes unless every proof holds.
 */
import { LatchkeyError } from '../engine/errors.ts';
import type { MfaFlows } from './mfa.ts';
import type { PasskeyFlows } from './passkey_flows.ts';
import type { PasswordHasher } from './password.ts';
import { invalidCredentials } from './profile.ts';
import type { UserRecord } from './user_store_types.ts';

/** The proof a caller gives again before changing their second factor. */
export interface ReauthInput {
  password?: string | undefined;
  otp?: string | undefined;
}

export interface MfaSettingsDeps {
  mfa: MfaFlows;
  passwords: PasswordHasher;
  passkeys: Pick<PasskeyFlows, 'requireStepUp'>;
}

async function reauthenticate(d: MfaSettingsDeps, user: UserRecord, sessionId: string | undefined, input: ReauthInput): Promise<void> {
  if (user.password !== null && user.password !== '') {
    if (input.password === undefined || input.password === '') throw new LatchkeyError('invalid_argument', 'the current password is required', { reason: 'missing_password' });
    if (!(await d.passwords.verify(input.password, user.password))) throw invalidCredentials('wrong_old_password', user.id);
    await d.passkeys.requireStepUp(user, sessionId);
    return;
  }
  if (input.otp === undefined || input.otp === '') {
    throw new LatchkeyError('invalid_argument', 'a code of the authenticator app or a recovery code is required', { reason: 'missing_otp' });
  }
  // The step-up first: a code is accepted once, so the call repeated after a step-up could not prove the same code again.
  await d.passkeys.requireStepUp(user, sessionId);
  await d.mfa.proveCode(user, input.otp);
}

/**
 * `reset_totp`: after re-authentication, removes the caller's TOTP
 * enrolment and recovery codes (see `MfaFlows.resetTotp`). Errors: those
 * of re-authentication; `failed_precondition` (`totp_not_enrolled`),
 * checked first.
 */
export async function resetTotp(d: MfaSettingsDeps, user: UserRecord, sessionId: string | undefined, input: ReauthInput): Promise<void> {
  if ((await d.mfa.totpStatus(user.id)) === 'none') throw new LatchkeyError('failed_precondition', 'no authenticator app is enrolled on this account', { reason: 'totp_not_enrolled' });
  await reauthenticate(d, user, sessionId, input);
  await d.mfa.resetTotp(user.id);
}

/**
 * `regenerate_recovery_codes`: after re-authentication, new recovery codes
 * for the caller's confirmed enrolment (see
 * `MfaFlows.regenerateRecoveryCodes`). Errors: those of re-authentication;
 * `failed_precondition` (`totp_not_enrolled`), checked first.
 */
export async function regenerateRecoveryCodes(d: MfaSettingsDeps, user: UserRecord, sessionId: string | undefined, input: ReauthInput): Promise<string[]> {
  if ((await d.mfa.totpStatus(user.id)) !== 'confirmed') throw new LatchkeyError('failed_precondition', 'no authenticator app is enrolled on this account', { reason: 'totp_not_enrolled' });
  await reauthenticate(d, user, sessionId, input);
  return d.mfa.regenerateRecoveryCodes(user.id);
}
