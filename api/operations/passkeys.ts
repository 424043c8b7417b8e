/**
 * Passkeys (WebAuthn, `--enable-passkeys`): each ceremony is an `_options`
 * row that answers the options for the browser's `navigator.credentials`
 * call with a single-use `ceremony_id`, and a row that takes the
 * authenticator's answer back (`credential`, the JSON that
 * `@simplewebauthn/browser`'s `startRegistration` / `startAuthentication`
 * return). A passkey as the second factor of a password login goes with the
 * `mfa` cookie, as `verify_otp` does.
 */
import { EMPTY, MESSAGE, s } from '../shape.ts';
import { AUTH_RESPONSE, STR, STRINGS } from './auth.ts';
import { ALL_PROTOCOLS, defineOperation } from './types.ts';

const CEREMONY = s.object('PasskeyCeremony', {
  ceremony_id: s.string({ doc: 'Hand it back with the authenticator\'s answer; single use, valid for 5 minutes' }),
  options: s.json({ doc: 'The options for navigator.credentials.create() or .get() (PublicKeyCredentialCreationOptionsJSON or PublicKeyCredentialRequestOptionsJSON)' }),
}, { doc: 'A started passkey ceremony', graphql: { scalars: { options: 'Map' } } });

const CEREMONY_ID = s.string({ minLength: 1, maxLength: 256, doc: 'The ceremony_id of the _options call' });
const CREDENTIAL = s.json({ doc: 'The authenticator\'s answer as JSON (RegistrationResponseJSON or AuthenticationResponseJSON)' });
const PASSKEY_NAME = s.string({ minLength: 1, maxLength: 64, doc: 'A name for the passkey, shown in its list (default Passkey)' });

/** One passkey of a user. */
export const PASSKEY = s.object('Passkey', {
  id: s.string(),
  name: s.string(),
  credential_id: s.string({ doc: 'The WebAuthn credential id (base64url)' }),
  transports: s.list(s.string(), { doc: 'How the authenticator was reached (internal, hybrid, usb, nfc, ble)' }),
  backup_eligible: s.bool({ doc: 'A synced (multi-device) passkey' }),
  backed_up: s.bool({ doc: 'Backed up at its last use' }),
  aaguid: s.string({ doc: 'The authenticator model\'s AAGUID (zeros when not disclosed)' }),
  created_at: s.int(),
  last_used_at: s.optional(s.int()),
}, { doc: 'A passkey (WebAuthn credential) of a user' });

const PASSKEYS = s.object('Passkeys', { passkeys: s.list(PASSKEY) });

function row<const N extends string>(name: N, grpc: string) {
  return { name, admin: false, rest: { method: 'POST', path: `/v1/${name}` }, grpc: { method: grpc }, protocols: ALL_PROTOCOLS } as const;
}

function adminRow<const N extends string>(name: N, grpc: string) {
  return { name, admin: true, auth: 'super_admin', rest: { method: 'POST', path: `/v1/admin/${name}` }, grpc: { method: grpc }, protocols: ALL_PROTOCOLS } as const;
}

export const PASSKEY_OPERATIONS = [
  defineOperation({
    ...row('passkey_signup_options', 'PasskeySignupOptions'),
    kind: 'mutation',
    auth: 'public',
    input: s.object('PasskeySignupOptionsRequest', {
      email: s.string({ minLength: 1, maxLength: 320 }),
      given_name: STR(),
      family_name: STR(),
      nickname: STR(),
      roles: STRINGS('Roles within --roles; none of --protected-roles (default: --default-roles)'),
    }),
    output: CEREMONY,
    doc: 'Starts a sign-up with a passkey and no password: the registration options for the new account\'s email. Refused when the email is taken (already_exists).',
  }),
  defineOperation({
    ...row('passkey_signup', 'PasskeySignup'),
    kind: 'mutation',
    auth: 'public',
    input: s.object('PasskeySignupRequest', { ceremony_id: CEREMONY_ID, credential: CREDENTIAL, name: s.optional(PASSKEY_NAME), scope: STRINGS('Token scopes (default: openid email profile offline_access)'), redirect_uri: STR(2048), state: STR(1024) }, { graphql: { scalars: { credential: 'Map' } } }),
    output: AUTH_RESPONSE,
    doc: 'Creates the account with its passkey and opens a session (sets the session cookies); with email verification it mails the link instead, as signup does.',
  }),
  defineOperation({
    ...row('passkey_login_options', 'PasskeyLoginOptions'),
    kind: 'mutation',
    auth: 'public',
    input: s.object('PasskeyLoginOptionsRequest', { email: STR(320) }),
    output: CEREMONY,
    doc: 'Starts a passkey sign-in: without email any discoverable passkey of this site may answer (usernameless, browser autofill); with email, that account\'s passkeys.',
  }),
  defineOperation({
    ...row('passkey_login', 'PasskeyLogin'),
    kind: 'mutation',
    auth: 'public',
    input: s.object('PasskeyLoginRequest', {
      ceremony_id: CEREMONY_ID,
      credential: CREDENTIAL,
      roles: STRINGS('A subset of the user roles to put in the tokens'),
      scope: STRINGS('Token scopes (default: openid email profile offline_access)'),
      state: STR(1024),
    }, { graphql: { scalars: { credential: 'Map' } } }),
    output: AUTH_RESPONSE,
    doc: 'Signs in with a passkey and opens a session (sets the session cookies). A user-verified passkey satisfies MFA; when MFA applies, an answer without user verification is refused.',
  }),
  defineOperation({
    ...row('verify_passkey', 'VerifyPasskey'),
    kind: 'mutation',
    auth: 'public',
    input: s.object('VerifyPasskeyRequest', { credential: CREDENTIAL, state: STR(1024) }, { graphql: { scalars: { credential: 'Map' } } }),
    output: AUTH_RESPONSE,
    doc: 'Proves the second factor of a login (the mfa cookie) with one of the user\'s passkeys, answering the passkey_options of a login that said should_show_passkey_screen; opens the session like verify_otp.',
  }),
  defineOperation({
    ...row('passkey_registration_options', 'PasskeyRegistrationOptions'),
    kind: 'mutation',
    auth: 'user',
    input: EMPTY,
    output: CEREMONY,
    doc: 'Starts adding a passkey to the caller\'s account (bound to the caller\'s session); its existing passkeys are excluded.',
  }),
  defineOperation({
    ...row('add_passkey', 'AddPasskey'),
    kind: 'mutation',
    auth: 'user',
    input: s.object('AddPasskeyRequest', { ceremony_id: CEREMONY_ID, credential: CREDENTIAL, name: s.optional(PASSKEY_NAME) }, { graphql: { scalars: { credential: 'Map' } } }),
    output: PASSKEY,
    doc: 'Adds the passkey of a passkey_registration_options ceremony of the same session to the caller\'s account.',
  }),
  defineOperation({
    ...row('passkeys', 'Passkeys'),
    kind: 'query',
    auth: 'user',
    input: EMPTY,
    output: PASSKEYS,
    doc: 'The caller\'s passkeys, oldest first.',
  }),
  defineOperation({
    ...row('rename_passkey', 'RenamePasskey'),
    kind: 'mutation',
    auth: 'user',
    input: s.object('RenamePasskeyRequest', { id: s.string({ minLength: 1, maxLength: 64 }), name: PASSKEY_NAME }),
    output: PASSKEY,
    doc: 'Renames one of the caller\'s passkeys.',
  }),
  defineOperation({
    ...row('delete_passkey', 'DeletePasskey'),
    kind: 'mutation',
    auth: 'user',
    input: s.object('DeletePasskeyRequest', { id: s.string({ minLength: 1, maxLength: 64 }) }),
    output: MESSAGE,
    doc: 'Deletes one of the caller\'s passkeys; the last way to sign in to the account is refused (failed_precondition, last_sign_in_method).',
  }),
  defineOperation({
    ...row('passkey_step_up_options', 'PasskeyStepUpOptions'),
    kind: 'mutation',
    auth: 'user',
    input: EMPTY,
    output: CEREMONY,
    doc: 'Starts a step-up: the caller confirms with one of their passkeys before a sensitive operation (deactivate_account, changing the email or phone number); not_found without a passkey.',
  }),
  defineOperation({
    ...row('passkey_step_up', 'PasskeyStepUp'),
    kind: 'mutation',
    auth: 'user',
    input: s.object('PasskeyStepUpRequest', { ceremony_id: CEREMONY_ID, credential: CREDENTIAL }, { graphql: { scalars: { credential: 'Map' } } }),
    output: MESSAGE,
    doc: 'Verifies the step-up of the same session; its next sensitive operation within 5 minutes may run (once). Without it a passkey holder\'s deactivate_account and email or phone change are refused (permission_denied, step_up_required).',
  }),
  defineOperation({
    ...adminRow('user_passkeys', 'UserPasskeys'),
    kind: 'query',
    input: s.object('UserPasskeysRequest', { user_id: s.string({ minLength: 1, maxLength: 64 }) }),
    output: PASSKEYS,
    doc: 'A user\'s passkeys, oldest first.',
  }),
  defineOperation({
    ...adminRow('revoke_user_passkey', 'RevokeUserPasskey'),
    kind: 'mutation',
    input: s.object('RevokeUserPasskeyRequest', { user_id: s.string({ minLength: 1, maxLength: 64 }), id: s.string({ minLength: 1, maxLength: 64 }) }),
    output: MESSAGE,
    doc: 'Revokes (deletes) one of a user\'s passkeys; it can no longer sign in.',
  }),
] as const;
