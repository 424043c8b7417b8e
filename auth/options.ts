/**
 * Options of the identity service: a plain object built by the composition
 * root from the flags (auth/ never reads flags or the environment).
 */
import { randomBytes } from 'node:crypto';
import { LatchkeyError } from '../engine/errors.ts';
import type { JwtAlgorithm } from './tokens.ts';
import type { RelyingPartyOptions } from './webauthn.ts';

/** Feature switches and policies of the identity service. */
export interface AuthOptions {
  /** `--client-id`: the `aud` of every token and Meta's `client_id`. */
  clientId: string;
  /** The server's public URL: the `iss` of every token and the base of discovery URLs. */
  issuer: string;
  jwt: {
    /** `--jwt-type`. */
    type: JwtAlgorithm;
    /** `--jwt-secret` (HS*). */
    secret?: string | undefined;
    /** `--jwt-private-key` (PEM, RS*, ES*, PS*). */
    privateKey?: string | undefined;
    /** `--jwt-public-key` (PEM, RS*, ES*, PS*). */
    publicKey?: string | undefined;
    /** `--jwt-role-claim`: the id-token claim that carries the roles. Default `role`. */
    roleClaim?: string | undefined;
  };
  /** Access and id token lifetime, seconds. Default 1800. */
  accessTokenTtl?: number;
  /** `--refresh-token-expires-in`, seconds. Default 30 days. */
  refreshTokenTtl?: number;
  /** Session cookie lifetime, seconds. Default 86400. */
  cookieTtl?: number;
  /** `--bcrypt-cost`. Default 10. */
  bcryptCost?: number;
  /** `--roles`. Default `['user']`. */
  roles?: readonly string[];
  /** `--default-roles`. Default `['user']`. */
  defaultRoles?: readonly string[];
  /** `--protected-roles`: never granted by sign-up. Default none. */
  protectedRoles?: readonly string[];
  enableSignup?: boolean;
  enableBasicAuthentication?: boolean;
  enableMobileBasicAuthentication?: boolean;
  enableStrongPassword?: boolean;
  enableEmailVerification?: boolean;
  enablePhoneVerification?: boolean;
  enableMagicLinkLogin?: boolean;
  enableEmailOtp?: boolean;
  enableSmsOtp?: boolean;
  enableTotpLogin?: boolean;
  enableMfa?: boolean;
  enforceMfa?: boolean;
  /** Login lockout: failed attempts allowed per window (security matrix A2). Default 5. */
  maxLoginAttempts?: number;
  /** Login lockout window, seconds. Default 900. */
  loginAttemptWindow?: number;
  /** A rotated refresh token replayed within this many seconds does not revoke its family. Default 10. */
  refreshReuseGraceSeconds?: number;
  /**
   * Key material of the OTP digests and of the encryption of TOTP secrets
   * (the server passes `--client-secret`). Changing it invalidates pending
   * codes and TOTP enrolments. Default: random per process (tests only).
   */
  mfaSecret?: string;
  /** Issuer shown by authenticator apps for TOTP enrolments (`--organization-name`). Default `Latchkey`. */
  totpIssuer?: string;
  /** Passkeys (WebAuthn): the relying party's settings, or undefined when passkeys are off. Default off. */
  webauthn?: RelyingPartyOptions | undefined;
  /** Milliseconds since the epoch; injected by tests. Default `Date.now`. */
  now?: () => number;
}

/** {@link AuthOptions} with every default filled in. */
export type ResolvedAuthOptions = Required<Omit<AuthOptions, 'jwt' | 'roles' | 'defaultRoles' | 'protectedRoles'>> & {
  jwt: AuthOptions['jwt'] & { roleClaim: string };
  roles: readonly string[];
  defaultRoles: readonly string[];
  protectedRoles: readonly string[];
};

const KNOWN = new Set([
  'clientId',
  'issuer',
  'jwt',
  'accessTokenTtl',
  'refreshTokenTtl',
  'cookieTtl',
  'bcryptCost',
  'roles',
  'defaultRoles',
  'protectedRoles',
  'enableSignup',
  'enableBasicAuthentication',
  'enableMobileBasicAuthentication',
  'enableStrongPassword',
  'enableEmailVerification',
  'enablePhoneVerification',
  'enableMagicLinkLogin',
  'enableEmailOtp',
  'enableSmsOtp',
  'enableTotpLogin',
  'enableMfa',
  'enforceMfa',
  'maxLoginAttempts',
  'loginAttemptWindow',
  'refreshReuseGraceSeconds',
  'mfaSecret',
  'totpIssuer',
  'webauthn',
  'now',
]);

/** Fills defaults and validates; throws `invalid_argument` (reason `invalid_option`) naming the bad key. */
export function resolveAuthOptions(options: AuthOptions): ResolvedAuthOptions {
  const bad = (message: string): LatchkeyError => new LatchkeyError('invalid_argument', message, { reason: 'invalid_option' });
  for (const key of Object.keys(options)) if (!KNOWN.has(key)) throw bad(`unknown auth option ${key}`);
  if (!options.clientId) throw bad('auth option clientId is required');
  if (!options.issuer) throw bad('auth option issuer is required');
  const roles = options.roles ?? ['user'];
  const defaultRoles = options.defaultRoles ?? ['user'];
  const protectedRoles = options.protectedRoles ?? [];
  for (const r of defaultRoles) if (!roles.includes(r)) throw bad(`default role ${r} is not in roles`);
  const positive = (name: string, v: number | undefined, dflt: number): number => {
    const value = v ?? dflt;
    if (!Number.isFinite(value) || value <= 0) throw bad(`auth option ${name} must be a positive number`);
    return value;
  };
  return {
    clientId: options.clientId,
    issuer: options.issuer,
    jwt: { ...options.jwt, roleClaim: options.jwt.roleClaim || 'role' },
    accessTokenTtl: positive('accessTokenTtl', options.accessTokenTtl, 1800),
    refreshTokenTtl: positive('refreshTokenTtl', options.refreshTokenTtl, 30 * 24 * 3600),
    cookieTtl: positive('cookieTtl', options.cookieTtl, 86400),
    bcryptCost: options.bcryptCost ?? 10,
    roles,
    defaultRoles,
    protectedRoles,
    enableSignup: options.enableSignup ?? true,
    enableBasicAuthentication: options.enableBasicAuthentication ?? true,
    enableMobileBasicAuthentication: options.enableMobileBasicAuthentication ?? true,
    enableStrongPassword: options.enableStrongPassword ?? true,
    enableEmailVerification: options.enableEmailVerification ?? false,
    enablePhoneVerification: options.enablePhoneVerification ?? false,
    enableMagicLinkLogin: options.enableMagicLinkLogin ?? false,
    enableEmailOtp: options.enableEmailOtp ?? false,
    enableSmsOtp: options.enableSmsOtp ?? false,
    enableTotpLogin: options.enableTotpLogin ?? false,
    enableMfa: options.enableMfa ?? false,
    enforceMfa: options.enforceMfa ?? false,
    maxLoginAttempts: positive('maxLoginAttempts', options.maxLoginAttempts, 5),
    loginAttemptWindow: positive('loginAttemptWindow', options.loginAttemptWindow, 900),
    refreshReuseGraceSeconds: options.refreshReuseGraceSeconds ?? 10,
    mfaSecret: options.mfaSecret || randomBytes(32).toString('base64url'),
    totpIssuer: options.totpIssuer || 'Latchkey',
    webauthn: options.webauthn,
    now: options.now ?? Date.now,
  };
}
