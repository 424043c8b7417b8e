/**
 * The public shapes of the identity service: the User and AuthResponse of
 * the spec, the result of a call that opens a session, and the caller
 * context every method takes.
 */
import type { AuditPort } from './audit_port.ts';
import type { UserRecord } from './user_store_types.ts';

/** Name of the host-scoped session cookie. */
export const SESSION_COOKIE = 'cookie_session';
/** Name of the domain-scoped session cookie. */
export const SESSION_DOMAIN_COOKIE = 'cookie_session_domain';

/** The public User shape (spec Resources + authorizer contract §2.5). */
export interface PublicUser {
  id: string;
  email: string | null;
  email_verified: boolean;
  signup_methods: string;
  given_name: string | null;
  family_name: string | null;
  middle_name: string | null;
  nickname: string | null;
  preferred_username: string | null;
  gender: string | null;
  birthdate: string | null;
  phone_number: string | null;
  phone_number_verified: boolean;
  picture: string | null;
  roles: string[];
  created_at: number;
  updated_at: number;
  revoked_timestamp: number | null;
  is_multi_factor_auth_enabled: boolean | null;
  app_data: Record<string, unknown> | null;
  /** The preferred language (BCP 47), or null. */
  locale: string | null;
}

/** The AuthResponse shape (spec Resources). */
export interface AuthResponse {
  message: string;
  access_token?: string;
  id_token?: string;
  refresh_token?: string;
  expires_in?: number;
  user?: PublicUser;
  should_show_email_otp_screen?: boolean;
  should_show_mobile_otp_screen?: boolean;
  should_show_totp_screen?: boolean;
  /** TOTP enrolment (first TOTP challenge only): the base32 secret. */
  authenticator_secret?: string;
  /** TOTP enrolment: the otpauth:// URI of the secret (what the QR code encodes). */
  authenticator_uri?: string;
  /** TOTP enrolment: the QR code of `authenticator_uri` as a base64 data URL (GIF). */
  authenticator_scanner_image?: string;
  /** TOTP enrolment: single-use recovery codes, shown this once. */
  authenticator_recovery_codes?: string[];
  /** Login answered with a passkey challenge (second factor) instead of tokens. */
  should_show_passkey_screen?: boolean;
  /** The passkey challenge's options for `navigator.credentials.get()` (with `should_show_passkey_screen`). */
  passkey_options?: Record<string, unknown>;
}

/** A new session cookie the wire layer must set (token shown once). */
export interface SessionGrant {
  token: string;
  maxAgeSeconds: number;
  /** The id of the session the cookie belongs to (a login's or refresh's, not an MFA challenge's), so the wire layer can record the request's device for it; never sent. */
  sid?: string;
}

/** An AuthResponse plus the session cookie to set, when one was opened. */
export interface AuthResult {
  response: AuthResponse;
  session?: SessionGrant;
  /** The stored user the session was opened for (for audit and webhooks; never sent). */
  record?: UserRecord;
  /** A new MFA challenge session the wire layer sets as the `mfa` cookie (token shown once). */
  mfaSession?: SessionGrant;
}

/** The authenticated caller, shaped like the transports' user principal. */
export interface UserPrincipal {
  readonly kind: 'user';
  readonly userId: string;
  readonly subject: string;
  readonly roles: readonly string[];
  readonly sessionId?: string;
  readonly claims?: Readonly<Record<string, unknown>>;
}

/** A registered service account calling with its client_credentials token or an API key. */
export interface ServiceAccountPrincipal {
  readonly kind: 'service_account';
  readonly clientId: string;
  /** `service_account:<clientId>`. */
  readonly subject: string;
  readonly roles: readonly string[];
  readonly claims?: Readonly<Record<string, unknown>>;
}

/** Who calls: the resolved principal plus raw credentials (for cookie-based operations). */
export interface AuthCallContext {
  /** A user or service-account principal, or a super-admin marker for admin-trusted calls. */
  principal?: UserPrincipal | ServiceAccountPrincipal | { readonly kind: 'super_admin' } | { readonly kind: 'anonymous' };
  /** The session cookie the request carried (host cookie first, then domain cookie). */
  sessionCookie?: string | undefined;
  /** The bearer token the request carried. */
  bearer?: string | undefined;
  /** The MFA challenge cookie (`mfa`) the request carried. */
  mfaCookie?: string | undefined;
  /** Where the flows of this call report their refusals (the admin service's audit log, bound to the request). */
  audit?: AuditPort | undefined;
}

/** The public User of a stored user. */
export function toPublicUser(u: UserRecord): PublicUser {
  return {
    id: u.id,
    email: u.email,
    email_verified: u.email_verified_at !== null,
    signup_methods: u.signup_methods,
    given_name: u.given_name,
    family_name: u.family_name,
    middle_name: u.middle_name,
    nickname: u.nickname,
    preferred_username: u.email ?? u.phone_number,
    gender: u.gender,
    birthdate: u.birthdate,
    phone_number: u.phone_number,
    phone_number_verified: u.phone_number_verified_at !== null,
    picture: u.picture,
    roles: [...u.roles],
    created_at: u.created_at,
    updated_at: u.updated_at,
    revoked_timestamp: u.revoked_timestamp,
    is_multi_factor_auth_enabled: u.is_multi_factor_auth_enabled,
    app_data: u.app_data,
    locale: u.locale,
  };
}

/** The session cookie value: the host cookie first, then the domain cookie. */
export function sessionCookieOf(cookies: Readonly<Record<string, string>> | undefined): string | undefined {
  if (cookies === undefined) return undefined;
  const v = cookies[SESSION_COOKIE] ?? cookies[SESSION_DOMAIN_COOKIE];
  return v === undefined || v === '' ? undefined : v;
}
