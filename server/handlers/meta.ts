/**
 * Server metadata and the v1 configuration operations that v2 refuses.
 */
import { LatchkeyError } from '../../engine/errors.ts';
import { META, META_OPERATIONS, type Infer } from '../../api/index.ts';
import { SOCIAL_PROVIDERS, type Config } from '../flags.ts';
import { VERSION } from '../version.ts';

/**
 * The languages the sign-in page is available in, the default first (its
 * catalogues are in transports/web/login_messages.ts; a test holds the two
 * lists equal).
 */
export const PAGE_LANGUAGES: readonly string[] = Object.freeze(['en', 'de', 'fr', 'es', 'ja', 'ar']);
import type { HandlersOf } from './types.ts';


const metaCache = new WeakMap<Config, Infer<typeof META>>();

/** Builds Meta from the configuration (also used by the admin meta operation). Computed once per config. */
export function metaFromConfig(c: Config): Infer<typeof META> {
  let meta = metaCache.get(c);
  if (!meta) {
    meta = Object.freeze(buildMeta(c));
    metaCache.set(c, meta);
  }
  return meta;
}

function buildMeta(c: Config): Infer<typeof META> {
  const cfg = c as unknown as Record<string, unknown>;
  const provider = (p: (typeof SOCIAL_PROVIDERS)[number]): boolean =>
    Boolean(cfg[`${p}ClientId`]) && Boolean(cfg[`${p}ClientSecret`]);
  const mail = Boolean(c.smtpHost);
  return {
    version: VERSION,
    client_id: c.clientId ?? '',
    is_google_login_enabled: provider('google'),
    is_facebook_login_enabled: provider('facebook'),
    is_github_login_enabled: provider('github'),
    is_linkedin_login_enabled: provider('linkedin'),
    is_apple_login_enabled: provider('apple'),
    is_discord_login_enabled: provider('discord'),
    is_twitter_login_enabled: provider('twitter'),
    is_microsoft_login_enabled: provider('microsoft'),
    is_twitch_login_enabled: provider('twitch'),
    is_roblox_login_enabled: provider('roblox'),
    is_oidc_login_enabled: Boolean(c.oidcIssuer) && Boolean(c.oidcClientId) && Boolean(c.oidcClientSecret),
    oidc_display_name: c.oidcDisplayName || 'OpenID Connect',
    is_email_verification_enabled: c.enableEmailVerification && mail,
    is_basic_authentication_enabled: c.enableBasicAuthentication,
    is_magic_link_login_enabled: c.enableMagicLinkLogin && mail,
    is_sign_up_enabled: c.enableSignup,
    is_strong_password_enabled: c.enableStrongPassword,
    is_multi_factor_auth_enabled: c.enableMfa,
    is_mobile_basic_authentication_enabled: c.enableMobileBasicAuthentication,
    is_phone_verification_enabled: c.enablePhoneVerification,
    is_totp_mfa_enabled: c.enableMfa && c.enableTotpLogin,
    is_email_otp_mfa_enabled: c.enableMfa && c.enableEmailOtp && mail,
    is_sms_otp_mfa_enabled: c.enableMfa && c.enableSmsOtp,
    is_mfa_enforced: c.enableMfa && c.enforceMfa,
    is_passkey_enabled: c.enablePasskeys,
    languages: [...PAGE_LANGUAGES],
  };
}

/** The spec's messages for the three v1 configuration operations (Errors, rule 2). */
export const DEPRECATED_MESSAGES = {
  update_env: 'deprecated. please configure env via cli args',
  admin_signup: 'deprecated. please configure admin secret via cli args',
  generate_jwt_keys: 'deprecated. please configure jwt keys via cli args',
} as const;


function deprecated(name: keyof typeof DEPRECATED_MESSAGES): never {
  throw new LatchkeyError('failed_precondition', DEPRECATED_MESSAGES[name], { reason: 'deprecated_operation' });
}

export const META_HANDLERS: HandlersOf<typeof META_OPERATIONS> = {
  meta: async (ctx) => metaFromConfig(ctx.services.config),
  admin_signup: async () => deprecated('admin_signup'),
  update_env: async () => deprecated('update_env'),
  generate_jwt_keys: async () => deprecated('generate_jwt_keys'),
};
