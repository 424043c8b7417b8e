/**
 * The identity operations (spec: Public endpoints): sign-up, login, session,
 * logout, profile, update_profile, deactivate_account, revoke,
 * validate_jwt_token and validate_session. Every row is served over GraphQL,
 * REST and gRPC alike. As in the GraphQL schema clients already use,
 * `session`, `validate_jwt_token` and `validate_session` are GraphQL queries
 * (REST POST).
 */
import { EMPTY, MESSAGE, s } from '../shape.ts';
import { USER } from './admin_shapes.ts';
import { ALL_PROTOCOLS, defineOperation } from './types.ts';

/** The AuthResponse of signup, login, session, verify_email and verify_otp. */
export const AUTH_RESPONSE = s.object(
  'AuthResponse',
  {
    message: s.string(),
    should_show_email_otp_screen: s.optional(s.bool({ doc: 'Login answered with an email OTP challenge instead of tokens' })),
    should_show_mobile_otp_screen: s.optional(s.bool({ doc: 'Login answered with an SMS OTP challenge instead of tokens' })),
    should_show_totp_screen: s.optional(s.bool({ doc: 'Login answered with a TOTP challenge instead of tokens' })),
    access_token: s.optional(s.string({ doc: 'Bearer token for later calls' })),
    id_token: s.optional(s.string({ doc: 'OpenID Connect identity token' })),
    refresh_token: s.optional(s.string({ doc: 'Rotating refresh token (scope offline_access, the default)' })),
    expires_in: s.optional(s.int({ doc: 'Seconds until the access token expires' })),
    user: s.optional(USER),
    authenticator_secret: s.optional(s.string({ doc: 'TOTP enrolment (first TOTP challenge): the base32 secret for the authenticator app' })),
    authenticator_uri: s.optional(s.string({ doc: 'TOTP enrolment: the otpauth:// URI of the secret (what a QR code encodes)' })),
    authenticator_recovery_codes: s.optional(s.list(s.string(), { doc: 'TOTP enrolment: single-use recovery codes, shown this once' })),
    authenticator_scanner_image: s.optional(s.string({ doc: 'TOTP enrolment: the QR code of authenticator_uri as a base64 data URL (GIF)' })),
    should_show_passkey_screen: s.optional(s.bool({ doc: 'Login answered with a passkey challenge (second factor, verify_passkey) instead of tokens' })),
    passkey_options: s.optional(s.json({ doc: 'With should_show_passkey_screen: the options for navigator.credentials.get()' })),
  },
  { doc: 'The result of signup, login and session', graphql: { nullableItems: ['authenticator_recovery_codes'], scalars: { passkey_options: 'Map' } } },
);

/** `{relation, object}` pairs that must all hold for the caller (checked through FGA). */
export const REQUIRED_RELATION = s.object(
  'RequiredRelationInput',
  {
    relation: s.string({ minLength: 1, maxLength: 64 }),
    object: s.string({ minLength: 1, maxLength: 256 }),
  },
  { graphql: { name: 'FgaRelationInput' } },
);

export const STR = (maxLength = 256) => s.optional(s.string({ maxLength }));
export const STRINGS = (doc: string) => s.optional(s.list(s.string({ maxLength: 256 }), { maxItems: 100, doc }));

const SIGNUP_INPUT = s.object('SignupRequest', {
  email: STR(320),
  phone_number: STR(32),
  password: s.string({ minLength: 1, maxLength: 1024 }),
  confirm_password: STR(1024),
  given_name: STR(),
  family_name: STR(),
  middle_name: STR(),
  nickname: STR(),
  gender: STR(64),
  birthdate: STR(64),
  picture: STR(2048),
  roles: STRINGS('Roles within --roles; none of --protected-roles (default: --default-roles)'),
  scope: STRINGS('Token scopes (default: openid email profile offline_access)'),
  redirect_uri: STR(2048),
  state: STR(1024),
  app_data: s.optional(s.json({ doc: 'Free-form application data (a JSON object)' })),
}, { graphql: { name: 'SignUpRequest', scalars: { app_data: 'Map' } } });

const LOGIN_INPUT = s.object('LoginRequest', {
  email: STR(320),
  phone_number: STR(32),
  password: s.string({ minLength: 1, maxLength: 1024 }),
  roles: STRINGS('A subset of the user roles to put in the tokens'),
  scope: STRINGS('Token scopes (default: openid email profile offline_access)'),
  state: STR(1024),
});

const SESSION_INPUT = s.object('SessionRequest', {
  roles: STRINGS('A subset of the user roles to put in the tokens'),
  scope: STRINGS('Token scopes'),
  state: STR(1024),
  required_relations: s.optional(s.list(REQUIRED_RELATION, { maxItems: 100, doc: 'Relations the caller must hold (all of them)' })),
  refresh_token: s.optional(s.string({ maxLength: 16384, doc: 'Rotate this refresh token instead of using the session cookie' })),
}, { graphql: { name: 'SessionQueryRequest' } });

const UPDATE_PROFILE_INPUT = s.object('UpdateProfileRequest', {
  old_password: STR(1024),
  new_password: STR(1024),
  confirm_new_password: STR(1024),
  email: STR(320),
  phone_number: STR(32),
  given_name: STR(),
  family_name: STR(),
  middle_name: STR(),
  nickname: STR(),
  gender: STR(64),
  birthdate: STR(64),
  picture: STR(2048),
  is_multi_factor_auth_enabled: s.optional(s.bool()),
  app_data: s.optional(s.json()),
  locale: s.optional(s.string({ maxLength: 35, doc: 'The preferred language, a BCP 47 tag such as de or pt-BR; empty clears it' })),
}, { graphql: { scalars: { app_data: 'Map' } } });

const VALIDATE_JWT_INPUT = s.object('ValidateJwtTokenRequest', {
  token_type: s.string({ minLength: 1, maxLength: 32, doc: 'access_token, id_token or refresh_token' }),
  token: s.string({ minLength: 1, maxLength: 16384 }),
  roles: STRINGS('Roles the token must all carry'),
  required_relations: s.optional(s.list(REQUIRED_RELATION, { maxItems: 100 })),
}, { graphql: { name: 'ValidateJWTTokenRequest' } });

const VALIDATE_JWT_OUTPUT = s.object('ValidateJwtTokenResponse', {
  is_valid: s.bool(),
  claims: s.optional(s.json({ doc: 'The decoded claims of the token' })),
}, { graphql: { name: 'ValidateJWTTokenResponse', scalars: { claims: 'Map' } } });

const VALIDATE_SESSION_INPUT = s.object('ValidateSessionRequest', {
  cookie: s.optional(s.string({ maxLength: 4096, doc: 'The session cookie value (default: the request cookie)' })),
  roles: STRINGS('Roles the session must all carry'),
  required_relations: s.optional(s.list(REQUIRED_RELATION, { maxItems: 100 })),
});

const VALIDATE_SESSION_OUTPUT = s.object('ValidateSessionResponse', {
  is_valid: s.bool(),
  user: USER,
  org_id: s.optional(s.string({ doc: 'The session\'s active organization (switch_organization)' })),
  org_roles: s.optional(s.list(s.string(), { doc: 'The member\'s roles in the active organization' })),
});

/** The common part of an identity row: served on every protocol at `/v1/<name>`. */
export function row<const N extends string>(name: N, method: 'GET' | 'POST', grpc: string) {
  return { name, admin: false, rest: { method, path: `/v1/${name}` }, grpc: { method: grpc }, protocols: ALL_PROTOCOLS } as const;
}

export const AUTH_OPERATIONS = [
  defineOperation({
    ...row('signup', 'POST', 'Signup'),
    kind: 'mutation',
    auth: 'public',
    input: SIGNUP_INPUT,
    output: AUTH_RESPONSE,
    doc: 'Creates a user (email or phone with password) and opens a session; sets the session cookies. With email verification it mails a link instead; with phone verification it texts a code for verify_otp and sets the mfa cookie; when MFA applies (--enforce-mfa) it answers the MFA challenge as login does, with the mfa cookie and no tokens.',
  }),
  defineOperation({
    ...row('login', 'POST', 'Login'),
    kind: 'mutation',
    auth: 'public',
    input: LOGIN_INPUT,
    output: AUTH_RESPONSE,
    doc: 'Logs in with email or phone and password; answers an MFA challenge flag instead of tokens when MFA applies.',
  }),
  defineOperation({
    ...row('session', 'POST', 'Session'),
    graphqlArg: { nullable: true },
    kind: 'query',
    auth: 'user',
    input: SESSION_INPUT,
    output: AUTH_RESPONSE,
    doc: 'Refreshes the current session (cookie, bearer session or refresh token): new cookie and tokens.',
  }),
  defineOperation({
    ...row('logout', 'POST', 'Logout'),
    kind: 'mutation',
    auth: 'user',
    input: EMPTY,
    output: MESSAGE,
    doc: 'Ends the current session server-side (its cookie, tokens and refresh tokens) and clears the cookies.',
  }),
  defineOperation({
    ...row('profile', 'GET', 'Profile'),
    kind: 'query',
    auth: 'user',
    input: EMPTY,
    output: USER,
    doc: 'The caller\'s user.',
  }),
  defineOperation({
    ...row('update_profile', 'POST', 'UpdateProfile'),
    kind: 'mutation',
    auth: 'user',
    input: UPDATE_PROFILE_INPUT,
    output: MESSAGE,
    doc:
      'Updates profile fields; a password change needs old_password and ends the other sessions. With email verification a new email takes effect once confirmed ' +
      'through the link mailed to it (verify_email); until then the old address stays the login.',
  }),
  defineOperation({
    ...row('deactivate_account', 'POST', 'DeactivateAccount'),
    kind: 'mutation',
    auth: 'user',
    input: s.object('DeactivateAccountRequest', {
      password: s.optional(s.string({ maxLength: 1024, doc: 'The current password, proven again before anything changes (a wrong one: unauthenticated invalid_credentials); the account center always sends it' })),
    }),
    graphqlArg: { nullable: true },
    output: MESSAGE,
    doc: 'Soft-deletes the caller\'s account: every session ends and login is refused afterwards. With password, only when it is the current one.',
  }),
  defineOperation({
    ...row('revoke', 'POST', 'Revoke'),
    kind: 'mutation',
    auth: 'public',
    input: s.object('RevokeRequest', { refresh_token: s.string({ minLength: 1, maxLength: 16384 }) }, { graphql: { name: 'OAuthRevokeRequest' } }),
    output: MESSAGE,
    doc: 'Revokes a refresh token and its whole family; the answer does not reveal whether the token was valid.',
  }),
  defineOperation({
    ...row('reset_password', 'POST', 'ResetPassword'),
    kind: 'mutation',
    auth: 'public',
    input: s.object('ResetPasswordRequest', {
      token: s.optional(s.string({ minLength: 1, maxLength: 512, doc: 'The token of a password-reset or invitation link' })),
      otp: s.optional(s.string({ minLength: 1, maxLength: 32, doc: 'The code forgot_password texted (with phone_number, instead of token)' })),
      phone_number: STR(32),
      password: s.string({ minLength: 1, maxLength: 1024 }),
      confirm_password: STR(1024),
    }),
    output: MESSAGE,
    doc:
      'Sets the password from a one-time reset or invitation link token (marks the email verified), or from the code forgot_password texted with the phone number ' +
      '(marks the number verified); ends every session of the user.',
  }),
  defineOperation({
    ...row('validate_jwt_token', 'POST', 'ValidateJwtToken'),
    kind: 'query',
    auth: 'public',
    input: VALIDATE_JWT_INPUT,
    output: VALIDATE_JWT_OUTPUT,
    doc: 'Validates a token of the given type (live session, optional roles and required relations); errors instead of is_valid false.',
  }),
  defineOperation({
    ...row('validate_session', 'POST', 'ValidateSession'),
    graphqlArg: { nullable: true },
    kind: 'query',
    auth: 'public',
    input: VALIDATE_SESSION_INPUT,
    output: VALIDATE_SESSION_OUTPUT,
    doc: 'Validates a session cookie value (or the request cookie) with optional roles and required relations.',
  }),
] as const;
