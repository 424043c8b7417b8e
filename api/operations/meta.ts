/**
 * Server metadata, and the v1 configuration operations that v2 refuses
 * (spec, Errors rule 2).
 */
import { EMPTY, MESSAGE, s, type Fields } from '../shape.ts';
import { ALL_PROTOCOLS, defineOperation } from './types.ts';

/** Meta: the server's feature flags and provider availability (all public information). */
export const META = s.object(
  'Meta',
  {
    version: s.string({ doc: 'Server version' }),
    client_id: s.string({ doc: 'Client id of this instance' }),
    is_google_login_enabled: s.bool(),
    is_facebook_login_enabled: s.bool(),
    is_github_login_enabled: s.bool(),
    is_linkedin_login_enabled: s.bool(),
    is_apple_login_enabled: s.bool(),
    is_discord_login_enabled: s.bool(),
    is_twitter_login_enabled: s.bool(),
    is_microsoft_login_enabled: s.bool(),
    is_twitch_login_enabled: s.bool(),
    is_roblox_login_enabled: s.bool(),
    is_oidc_login_enabled: s.bool({ doc: 'The generic OpenID Connect provider (--oidc-issuer, --oidc-client-id, --oidc-client-secret) is configured; its login starts at /oauth_login/oidc' }),
    oidc_display_name: s.string({ doc: 'The name to show for the generic OpenID Connect provider (--oidc-display-name)' }),
    is_email_verification_enabled: s.bool({ doc: 'Needs --enable-email-verification and an SMTP host' }),
    is_basic_authentication_enabled: s.bool(),
    is_magic_link_login_enabled: s.bool({ doc: 'Needs --enable-magic-link-login and an SMTP host' }),
    is_sign_up_enabled: s.bool(),
    is_strong_password_enabled: s.bool(),
    is_multi_factor_auth_enabled: s.bool(),
    is_mobile_basic_authentication_enabled: s.bool(),
    is_phone_verification_enabled: s.bool(),
    is_totp_mfa_enabled: s.bool(),
    is_email_otp_mfa_enabled: s.bool(),
    is_sms_otp_mfa_enabled: s.bool(),
    is_mfa_enforced: s.bool(),
    is_passkey_enabled: s.bool({ doc: 'Passkeys (WebAuthn) sign-up, sign-in and second factor (--enable-passkeys)' }),
    languages: s.list(s.string(), { doc: 'The languages the pages are available in (BCP 47 tags), the default first' }),
  },
  { doc: 'Server feature flags and provider availability' },
);

/**
 * The fields of Authorizer's v1 `UpdateEnvRequest`, so that a v1 client's
 * `_update_env` call passes GraphQL validation and gets the spec's
 * deprecation message (Errors, rule 2) rather than an unknown-field error.
 * Nothing reads them.
 */
const V1_ENV_STRINGS = [
  'ACCESS_TOKEN_EXPIRY_TIME', 'ADMIN_SECRET', 'CUSTOM_ACCESS_TOKEN_SCRIPT', 'OLD_ADMIN_SECRET', 'SMTP_HOST',
  'SMTP_PORT', 'SMTP_USERNAME', 'SMTP_PASSWORD', 'SMTP_LOCAL_NAME', 'SENDER_EMAIL', 'SENDER_NAME', 'JWT_TYPE',
  'JWT_SECRET', 'JWT_PRIVATE_KEY', 'JWT_PUBLIC_KEY', 'APP_URL', 'RESET_PASSWORD_URL', 'JWT_ROLE_CLAIM',
  'GOOGLE_CLIENT_ID', 'GOOGLE_CLIENT_SECRET', 'GITHUB_CLIENT_ID', 'GITHUB_CLIENT_SECRET', 'FACEBOOK_CLIENT_ID',
  'FACEBOOK_CLIENT_SECRET', 'LINKEDIN_CLIENT_ID', 'LINKEDIN_CLIENT_SECRET', 'APPLE_CLIENT_ID', 'APPLE_CLIENT_SECRET',
  'DISCORD_CLIENT_ID', 'DISCORD_CLIENT_SECRET', 'TWITTER_CLIENT_ID', 'TWITTER_CLIENT_SECRET', 'MICROSOFT_CLIENT_ID',
  'MICROSOFT_CLIENT_SECRET', 'MICROSOFT_ACTIVE_DIRECTORY_TENANT_ID', 'TWITCH_CLIENT_ID', 'TWITCH_CLIENT_SECRET',
  'ROBLOX_CLIENT_ID', 'ROBLOX_CLIENT_SECRET', 'ORGANIZATION_NAME', 'ORGANIZATION_LOGO',
  'DEFAULT_AUTHORIZE_RESPONSE_TYPE', 'DEFAULT_AUTHORIZE_RESPONSE_MODE',
] as const;
const V1_ENV_BOOLS = [
  'APP_COOKIE_SECURE', 'ADMIN_COOKIE_SECURE', 'DISABLE_EMAIL_VERIFICATION', 'DISABLE_BASIC_AUTHENTICATION',
  'DISABLE_MOBILE_BASIC_AUTHENTICATION', 'DISABLE_MAGIC_LINK_LOGIN', 'DISABLE_LOGIN_PAGE', 'DISABLE_SIGN_UP',
  'DISABLE_REDIS_FOR_ENV', 'DISABLE_STRONG_PASSWORD', 'DISABLE_MULTI_FACTOR_AUTHENTICATION',
  'ENFORCE_MULTI_FACTOR_AUTHENTICATION', 'DISABLE_PLAYGROUND', 'DISABLE_MAIL_OTP_LOGIN', 'DISABLE_TOTP_LOGIN',
] as const;
const V1_ENV_LISTS = ['ALLOWED_ORIGINS', 'ROLES', 'PROTECTED_ROLES', 'DEFAULT_ROLES'] as const;
const V1_ENV_FIELDS: Fields = Object.fromEntries([
  // Multi-line text (a PEM key, a script): the call is refused with the deprecation message whatever it holds.
  ...V1_ENV_STRINGS.map((k) => [k, s.optional(s.string({ text: true }))] as const),
  ...V1_ENV_BOOLS.map((k) => [k, s.optional(s.bool())] as const),
  ...V1_ENV_LISTS.map((k) => [k, s.optional(s.list(s.string()))] as const),
]);

export const META_OPERATIONS = [
  defineOperation({
    name: 'meta',
    kind: 'query',
    auth: 'public',
    admin: false,
    input: EMPTY,
    output: META,
    rest: { method: 'GET', path: '/v1/meta' },
    grpc: { method: 'Meta' },
    protocols: ALL_PROTOCOLS,
    doc: 'Server feature flags and provider availability.',
  }),
  defineOperation({
    name: 'admin_signup',
    kind: 'mutation',
    auth: 'public',
    admin: true,
    input: s.object('AdminSignupRequest', { admin_secret: s.optional(s.string()) }),
    output: MESSAGE,
    protocols: ['graphql'],
    doc: 'Removed in v2: always fails; the admin secret is configured by --admin-secret.',
  }),
  defineOperation({
    name: 'update_env',
    kind: 'mutation',
    auth: 'public',
    admin: true,
    input: s.object('UpdateEnvRequest', V1_ENV_FIELDS),
    output: MESSAGE,
    protocols: ['graphql'],
    doc: 'Removed in v2: always fails; configuration comes from command-line flags.',
  }),
  defineOperation({
    name: 'generate_jwt_keys',
    kind: 'mutation',
    auth: 'public',
    admin: true,
    input: s.object('GenerateJwtKeysRequest', { type: s.optional(s.string()) }, { graphql: { name: 'GenerateJWTKeysRequest' } }),
    output: s.object(
      'GenerateJwtKeysResponse',
      { secret: s.optional(s.string()), public_key: s.optional(s.string()), private_key: s.optional(s.string()) },
      { doc: 'Never returned: the operation was removed in v2', graphql: { name: 'GenerateJWTKeysResponse' } },
    ),
    protocols: ['graphql'],
    doc: 'Removed in v2: always fails; JWT keys are configured by the --jwt-* flags.',
  }),
] as const;
