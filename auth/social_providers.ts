/**
 * The social login providers: ONE table, one row per provider, saying where
 * its endpoints are, which scopes are asked for by default, whether PKCE and
 * `nonce` are sent, how the client authenticates at the token endpoint, and
 * how the provider's answer (ID token claims, userinfo JSON, GitHub's email
 * list) maps onto a {@link SocialProfile}.
 *
 * `kind: 'oidc'` rows get an ID token that is verified against the
 * provider's JWKS (issuer, audience, expiry, nonce); `kind: 'oauth2'` rows
 * read the profile and the verified email from the provider's API with the
 * access token. Endpoints are those the providers document (links in
 * docs/auth.md, "Social login"). The generic OpenID Connect row (`oidc`) is
 * built from the issuer's discovery document (see `SocialLogin`).
 *
 * `verified` in the mapping is what the provider attests, never a guess: an
 * account links to an existing user only through an email the provider says
 * is verified (security matrix B8).
 */

/** The ten providers of the spec, plus `oidc` (any OpenID Connect issuer by discovery). */
export const SOCIAL_LOGIN_PROVIDERS = ['google', 'facebook', 'github', 'linkedin', 'apple', 'discord', 'twitter', 'microsoft', 'twitch', 'roblox', 'oidc'] as const;
export type SocialLoginProvider = (typeof SOCIAL_LOGIN_PROVIDERS)[number];

/** What a provider tells about its account, mapped to our user fields. */
export interface SocialProfile {
  /** The provider's stable account id (`sub`, GitHub's numeric id, …). */
  subject: string;
  email?: string | undefined;
  /** True only when the provider attests the email address as verified. */
  emailVerified: boolean;
  givenName?: string | undefined;
  familyName?: string | undefined;
  nickname?: string | undefined;
  picture?: string | undefined;
}

/** Everything a provider answered: the verified ID token claims, userinfo JSON, extra API answers, the callback form. */
export interface ProviderAnswer {
  claims?: Record<string, unknown> | undefined;
  userinfo?: Record<string, unknown> | undefined;
  /** GitHub: the `/user/emails` list. */
  emails?: unknown;
  /** The callback's own parameters (Apple posts the user's name once, in `user`). */
  callback?: Readonly<Record<string, unknown>> | undefined;
}

/** The endpoints of a row, which tests may point at fake providers on loopback. */
export interface ProviderEndpoints {
  authorizationEndpoint: string;
  tokenEndpoint: string;
  /** Profile JSON read with the access token (OAuth 2.0 rows; optional for OpenID rows). */
  userinfoEndpoint?: string | undefined;
  /** GitHub's list of the account's addresses with their verification. */
  emailsEndpoint?: string | undefined;
  /** OpenID rows: the key set the ID token is verified against. */
  jwksUri?: string | undefined;
  /** OpenID rows: the expected `iss`; `{tenantid}` is replaced by the token's `tid` (Microsoft's multi-tenant endpoints). */
  issuer?: string | undefined;
}

export interface SocialProviderRow extends ProviderEndpoints {
  readonly name: SocialLoginProvider;
  readonly displayName: string;
  readonly kind: 'oidc' | 'oauth2';
  readonly defaultScopes: readonly string[];
  /** How scopes are joined in the authorization request (all space except Facebook's and GitHub's commas also accept spaces). */
  readonly scopeSeparator: ' ' | ',';
  /** RFC 7636 S256 challenge sent (providers that support it; Twitter/X requires it). */
  readonly pkce: boolean;
  /** `nonce` sent and checked in the ID token (OpenID rows). */
  readonly nonce: boolean;
  /** Apple answers by POST (`response_mode=form_post`) when name or email is asked for. */
  readonly responseMode?: 'form_post' | undefined;
  /** Client authentication at the token endpoint (RFC 6749 §2.3.1). */
  readonly tokenAuth: 'client_secret_post' | 'client_secret_basic';
  /** Fixed extra authorization parameters. */
  readonly authorizeParams?: Readonly<Record<string, string>> | undefined;
  /** Maps the provider's answer to a profile; throws when it lacks a subject. */
  readonly profile: (answer: ProviderAnswer) => SocialProfile;
  /** Microsoft multi-tenant: the `tid` the token must carry (undefined: any tenant). */
  readonly tenant?: string | undefined;
}

const str = (v: unknown): string | undefined => (typeof v === 'string' && v.length > 0 ? v : typeof v === 'number' ? String(v) : undefined);
/** Apple sends `email_verified` as the string "true"; others as a boolean. */
const truthy = (v: unknown): boolean => v === true || v === 'true';

function need(subject: string | undefined): string {
  if (subject === undefined) throw new Error('provider answer has no account id');
  return subject;
}

/** Standard OpenID claims (ID token first, userinfo filling the gaps). */
function oidcProfile(a: ProviderAnswer, verified: (c: Record<string, unknown>) => boolean = (c) => truthy(c['email_verified'])): SocialProfile {
  const c = { ...a.userinfo, ...a.claims };
  if (a.claims !== undefined && a.userinfo !== undefined && a.userinfo['sub'] !== undefined && a.userinfo['sub'] !== a.claims['sub']) {
    // OpenID Connect Core §5.3.2: a userinfo answer about another subject must not be used.
    throw new Error('userinfo subject differs from the ID token subject');
  }
  return {
    subject: need(str(c['sub'])),
    email: str(c['email']),
    emailVerified: verified(c),
    givenName: str(c['given_name']),
    familyName: str(c['family_name']),
    nickname: str(c['nickname']) ?? str(c['preferred_username']),
    picture: str(c['picture']),
  };
}

/** Microsoft's consumer (MSA) tenant, whose addresses Microsoft verifies itself. */
const MSA_TENANT = '9188040d-6c67-4c5b-b112-36a304b66dad';

/** Options of {@link socialProviderTable}. */
export interface SocialTableOptions {
  /** `--microsoft-tenant-id` (`common`, `organizations`, `consumers` or a tenant GUID/domain). */
  microsoftTenantId?: string | undefined;
}

/**
 * The provider table. Pure data plus mapping functions; endpoints are the
 * providers' documented production endpoints.
 */
export function socialProviderTable(o: SocialTableOptions = {}): Readonly<Record<Exclude<SocialLoginProvider, 'oidc'>, SocialProviderRow>> {
  const tenant = o.microsoftTenantId || 'common';
  const anyTenant = ['common', 'organizations', 'consumers'].includes(tenant);
  return {
    google: {
      name: 'google',
      displayName: 'Google',
      kind: 'oidc',
      authorizationEndpoint: 'https://accounts.google.com/o/oauth2/v2/auth',
      tokenEndpoint: 'https://oauth2.googleapis.com/token',
      jwksUri: 'https://www.googleapis.com/oauth2/v3/certs',
      issuer: 'https://accounts.google.com',
      defaultScopes: ['openid', 'email', 'profile'],
      scopeSeparator: ' ',
      pkce: true,
      nonce: true,
      tokenAuth: 'client_secret_post',
      profile: (a) => oidcProfile(a),
    },
    facebook: {
      name: 'facebook',
      displayName: 'Facebook',
      kind: 'oauth2',
      authorizationEndpoint: 'https://www.facebook.com/v19.0/dialog/oauth',
      tokenEndpoint: 'https://graph.facebook.com/v19.0/oauth/access_token',
      userinfoEndpoint: 'https://graph.facebook.com/v19.0/me?fields=id,first_name,last_name,email,picture',
      defaultScopes: ['public_profile', 'email'],
      scopeSeparator: ',',
      pkce: true,
      nonce: false,
      tokenAuth: 'client_secret_post',
      // Graph API: `email` is only returned when the account has a confirmed primary address.
      profile: ({ userinfo: u = {} }) => {
        const picture = (u['picture'] as { data?: { url?: unknown } } | undefined)?.data?.url;
        return { subject: need(str(u['id'])), email: str(u['email']), emailVerified: str(u['email']) !== undefined, givenName: str(u['first_name']), familyName: str(u['last_name']), picture: str(picture) };
      },
    },
    github: {
      name: 'github',
      displayName: 'GitHub',
      kind: 'oauth2',
      authorizationEndpoint: 'https://github.com/login/oauth/authorize',
      tokenEndpoint: 'https://github.com/login/oauth/access_token',
      userinfoEndpoint: 'https://api.github.com/user',
      emailsEndpoint: 'https://api.github.com/user/emails',
      defaultScopes: ['read:user', 'user:email'],
      scopeSeparator: ' ',
      pkce: true,
      nonce: false,
      tokenAuth: 'client_secret_post',
      // The profile's public `email` carries no verification: only the primary address that /user/emails marks verified counts.
      profile: ({ userinfo: u = {}, emails }) => {
        const list = Array.isArray(emails) ? (emails as { email?: unknown; primary?: unknown; verified?: unknown }[]) : [];
        const primary = list.find((e) => e.primary === true && e.verified === true) ?? list.find((e) => e.verified === true);
        const name = str(u['name'])?.split(/\s+/) ?? [];
        return {
          subject: need(str(u['id'])),
          email: str(primary?.email) ?? str(u['email']),
          emailVerified: primary !== undefined,
          givenName: name[0],
          familyName: name.length > 1 ? name.slice(1).join(' ') : undefined,
          nickname: str(u['login']),
          picture: str(u['avatar_url']),
        };
      },
    },
    linkedin: {
      name: 'linkedin',
      displayName: 'LinkedIn',
      kind: 'oauth2',
      authorizationEndpoint: 'https://www.linkedin.com/oauth/v2/authorization',
      tokenEndpoint: 'https://www.linkedin.com/oauth/v2/accessToken',
      // "Sign In with LinkedIn using OpenID Connect": the standard userinfo claims, email_verified included.
      userinfoEndpoint: 'https://api.linkedin.com/v2/userinfo',
      defaultScopes: ['openid', 'profile', 'email'],
      scopeSeparator: ' ',
      pkce: false,
      nonce: false,
      tokenAuth: 'client_secret_post',
      profile: (a) => oidcProfile(a),
    },
    apple: {
      name: 'apple',
      displayName: 'Apple',
      kind: 'oidc',
      authorizationEndpoint: 'https://appleid.apple.com/auth/authorize',
      tokenEndpoint: 'https://appleid.apple.com/auth/token',
      jwksUri: 'https://appleid.apple.com/auth/keys',
      issuer: 'https://appleid.apple.com',
      defaultScopes: ['name', 'email'],
      scopeSeparator: ' ',
      pkce: false,
      nonce: true,
      responseMode: 'form_post',
      tokenAuth: 'client_secret_post',
      // The name comes once, in the first callback's `user` form field; the email and its verification in the ID token.
      profile: (a) => {
        let name: { firstName?: unknown; lastName?: unknown } = {};
        const raw = a.callback?.['user'];
        if (typeof raw === 'string') {
          try {
            name = ((JSON.parse(raw) as { name?: typeof name }).name ?? {}) as typeof name;
          } catch {
            name = {};
          }
        }
        const p = oidcProfile({ claims: a.claims });
        return { ...p, givenName: str(name.firstName), familyName: str(name.lastName) };
      },
    },
    discord: {
      name: 'discord',
      displayName: 'Discord',
      kind: 'oauth2',
      authorizationEndpoint: 'https://discord.com/oauth2/authorize',
      tokenEndpoint: 'https://discord.com/api/oauth2/token',
      userinfoEndpoint: 'https://discord.com/api/users/@me',
      defaultScopes: ['identify', 'email'],
      scopeSeparator: ' ',
      pkce: false,
      nonce: false,
      tokenAuth: 'client_secret_post',
      profile: ({ userinfo: u = {} }) => {
        const id = need(str(u['id']));
        const avatar = str(u['avatar']);
        return {
          subject: id,
          email: str(u['email']),
          emailVerified: u['verified'] === true,
          givenName: str(u['global_name']),
          nickname: str(u['username']),
          picture: avatar === undefined ? undefined : `https://cdn.discordapp.com/avatars/${id}/${avatar}.png`,
        };
      },
    },
    twitter: {
      name: 'twitter',
      displayName: 'X (Twitter)',
      kind: 'oauth2',
      authorizationEndpoint: 'https://x.com/i/oauth2/authorize',
      tokenEndpoint: 'https://api.x.com/2/oauth2/token',
      userinfoEndpoint: 'https://api.x.com/2/users/me?user.fields=name,username,profile_image_url,confirmed_email',
      defaultScopes: ['users.read', 'tweet.read', 'users.email'],
      scopeSeparator: ' ',
      pkce: true,
      nonce: false,
      tokenAuth: 'client_secret_basic',
      // `confirmed_email` (scope users.email) is only ever an address X has confirmed.
      profile: ({ userinfo }) => {
        const u = (userinfo?.['data'] ?? {}) as Record<string, unknown>;
        const name = str(u['name'])?.split(/\s+/) ?? [];
        return {
          subject: need(str(u['id'])),
          email: str(u['confirmed_email']),
          emailVerified: str(u['confirmed_email']) !== undefined,
          givenName: name[0],
          familyName: name.length > 1 ? name.slice(1).join(' ') : undefined,
          nickname: str(u['username']),
          picture: str(u['profile_image_url']),
        };
      },
    },
    microsoft: {
      name: 'microsoft',
      displayName: 'Microsoft',
      kind: 'oidc',
      authorizationEndpoint: `https://login.microsoftonline.com/${tenant}/oauth2/v2.0/authorize`,
      tokenEndpoint: `https://login.microsoftonline.com/${tenant}/oauth2/v2.0/token`,
      jwksUri: `https://login.microsoftonline.com/${tenant}/discovery/v2.0/keys`,
      issuer: 'https://login.microsoftonline.com/{tenantid}/v2.0',
      tenant: anyTenant ? undefined : tenant,
      defaultScopes: ['openid', 'email', 'profile'],
      scopeSeparator: ' ',
      pkce: true,
      nonce: true,
      tokenAuth: 'client_secret_post',
      // Entra's `email` claim is not verified by default (the "nOAuth" flaw): only the optional `xms_edov`
      // claim (email domain owner verified) or a consumer account (Microsoft-verified) counts.
      profile: (a) => oidcProfile(a, (c) => c['xms_edov'] === true || c['xms_edov'] === 'true' || c['tid'] === MSA_TENANT || truthy(c['email_verified'])),
    },
    twitch: {
      name: 'twitch',
      displayName: 'Twitch',
      kind: 'oidc',
      authorizationEndpoint: 'https://id.twitch.tv/oauth2/authorize',
      tokenEndpoint: 'https://id.twitch.tv/oauth2/token',
      jwksUri: 'https://id.twitch.tv/oauth2/keys',
      issuer: 'https://id.twitch.tv/oauth2',
      defaultScopes: ['openid', 'user:read:email'],
      scopeSeparator: ' ',
      pkce: false,
      nonce: true,
      tokenAuth: 'client_secret_post',
      // Twitch puts email and email_verified in the ID token only when asked for through `claims`.
      authorizeParams: { claims: JSON.stringify({ id_token: { email: null, email_verified: null, preferred_username: null, picture: null } }) },
      profile: (a) => oidcProfile(a),
    },
    roblox: {
      name: 'roblox',
      displayName: 'Roblox',
      kind: 'oidc',
      authorizationEndpoint: 'https://apis.roblox.com/oauth/v1/authorize',
      tokenEndpoint: 'https://apis.roblox.com/oauth/v1/token',
      jwksUri: 'https://apis.roblox.com/oauth/v1/certs',
      issuer: 'https://apis.roblox.com/oauth/',
      defaultScopes: ['openid', 'profile', 'email'],
      scopeSeparator: ' ',
      pkce: true,
      nonce: true,
      tokenAuth: 'client_secret_post',
      profile: (a) => oidcProfile(a),
    },
  };
}

/**
 * The row of a generic OpenID Connect provider from its discovery document
 * (OpenID Connect Discovery 1.0 §3): PKCE when it advertises S256, the
 * client authentication it supports, the standard claims.
 */
export function oidcRowFromDiscovery(doc: Record<string, unknown>, displayName: string): SocialProviderRow {
  const url = (k: string): string => {
    const v = doc[k];
    if (typeof v !== 'string' || !/^https?:\/\//.test(v)) throw new Error(`discovery document lacks ${k}`);
    return v;
  };
  const methods = Array.isArray(doc['token_endpoint_auth_methods_supported']) ? (doc['token_endpoint_auth_methods_supported'] as unknown[]) : ['client_secret_basic'];
  const pkce = Array.isArray(doc['code_challenge_methods_supported']) && (doc['code_challenge_methods_supported'] as unknown[]).includes('S256');
  return {
    name: 'oidc',
    displayName,
    kind: 'oidc',
    authorizationEndpoint: url('authorization_endpoint'),
    tokenEndpoint: url('token_endpoint'),
    jwksUri: url('jwks_uri'),
    issuer: url('issuer'),
    userinfoEndpoint: typeof doc['userinfo_endpoint'] === 'string' ? (doc['userinfo_endpoint'] as string) : undefined,
    defaultScopes: ['openid', 'email', 'profile'],
    scopeSeparator: ' ',
    pkce,
    nonce: true,
    tokenAuth: methods.includes('client_secret_post') && !methods.includes('client_secret_basic') ? 'client_secret_post' : 'client_secret_basic',
    profile: (a) => oidcProfile(a),
  };
}
