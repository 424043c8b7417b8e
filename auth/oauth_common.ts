/**
 * What every OAuth 2.0 / OpenID Connect endpoint of the server shares: the
 * request parameters read as single strings, the RFC 6749 error builders,
 * client authentication and the active-user lookup. Used by
 * `oauth_server.ts` (authorize, token, revoke) and `oidc_endpoints.ts`
 * (userinfo, introspection, logout).
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { LatchkeyError } from '../engine/errors.ts';
import type { AuthService } from './auth_service.ts';
import type { UserRecord } from './user_store_types.ts';

/** Request parameters (query or body), as received: strings, or arrays when repeated. */
export type OAuthParams = Readonly<Record<string, unknown>>;

const MAX_PARAM = 4096;

export const invalidRequest = (message: string): LatchkeyError => new LatchkeyError('invalid_argument', message, { reason: 'invalid_request' });
export const invalidGrant = (message: string, cause?: unknown): LatchkeyError => new LatchkeyError('invalid_argument', message, { reason: 'invalid_grant', cause });
export const invalidClient = (message = 'client authentication failed'): LatchkeyError => new LatchkeyError('unauthenticated', message, { reason: 'invalid_client' });
export const invalidToken = (cause?: unknown): LatchkeyError => new LatchkeyError('unauthenticated', 'invalid token', { reason: 'invalid_token', cause });

/** Equality without an early exit (hashes first, so lengths do not leak either). */
export function safeEqual(a: string, b: string): boolean {
  const h = (s: string): Buffer => createHash('sha256').update(s, 'utf8').digest();
  return timingSafeEqual(h(a), h(b));
}

/**
 * The parameters as single strings. RFC 6749 §3.1: a parameter must not be
 * repeated, and one sent without a value is treated as omitted.
 */
export function readParams(params: OAuthParams): Map<string, string> {
  const out = new Map<string, string>();
  for (const [k, v] of Object.entries(params)) {
    if (Array.isArray(v)) throw invalidRequest(`parameter ${k} is repeated`);
    if (v === undefined || v === null || v === '') continue;
    if (typeof v !== 'string') throw invalidRequest(`parameter ${k} must be a string`);
    if (v.length > MAX_PARAM) throw invalidRequest(`parameter ${k} is too long`);
    out.set(k, v);
  }
  return out;
}

/**
 * Client authentication (RFC 6749 §2.3.1): HTTP Basic, `client_secret` in
 * the body, or none (`client_id` alone: a public client, which must then
 * have used PKCE). One method per request. Errors: `invalid_client`,
 * `invalid_request`.
 */
export function authenticateClient(p: Map<string, string>, authorization: string | undefined, clientId: string, clientSecret: string): { withSecret: boolean } {
  let id = p.get('client_id');
  let secret = p.get('client_secret');
  const basic = authorization === undefined ? undefined : /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(authorization);
  if (basic) {
    if (secret !== undefined) throw invalidRequest('use one client authentication method');
    const decoded = Buffer.from(basic[1] ?? '', 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    if (colon < 0) throw invalidClient();
    let basicId: string;
    try {
      basicId = decodeURIComponent(decoded.slice(0, colon).replace(/\+/g, ' '));
      secret = decodeURIComponent(decoded.slice(colon + 1).replace(/\+/g, ' '));
    } catch {
      throw invalidClient();
    }
    if (id !== undefined && id !== basicId) throw invalidRequest('client_id differs from the Authorization header');
    id = basicId;
  }
  if (id === undefined) throw invalidClient('client_id is required');
  const idOk = safeEqual(id, clientId);
  const secretOk = secret === undefined || safeEqual(secret, clientSecret);
  if (!idOk || !secretOk) throw invalidClient();
  return { withSecret: secret !== undefined };
}

/** The user, unless unknown, deactivated or revoked. */
export async function activeUser(auth: AuthService, userId: string): Promise<UserRecord | undefined> {
  const user = await auth.users.findById(userId);
  return user === undefined || user.deactivated_at !== null || user.revoked_timestamp !== null ? undefined : user;
}
