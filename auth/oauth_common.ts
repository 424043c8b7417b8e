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

/**
 * Characters no parameter may hold: C0 controls (tab, CR and LF included),
 * DEL, C1 controls and the Unicode line/paragraph separators; the same set as
 * every other one-line field of the API (`LINE_FORBIDDEN` of the operations'
 * shapes). A URL parser drops tab, CR and LF from `redirect_uri` (WHATWG URL,
 * "basic URL parser"), so a code issued for the URI as written would travel
 * to another one: such a request is refused, never cleaned up.
 */
const PARAM_FORBIDDEN = /[\u0000-\u001F\u007F-\u009F\u2028\u2029]/u;

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
 * repeated, and one sent without a value is treated as omitted. A name or
 * value holding a control character or a lone surrogate is `invalid_request`
 * (the name is left out of the message when it is the bad one).
 */
export function readParams(params: OAuthParams): Map<string, string> {
  const out = new Map<string, string>();
  for (const [k, v] of Object.entries(params)) {
    if (PARAM_FORBIDDEN.test(k) || !k.isWellFormed()) throw invalidRequest('a parameter name holds a control character');
    if (Array.isArray(v)) throw invalidRequest(`parameter ${k} is repeated`);
    if (v === undefined || v === null || v === '') continue;
    if (typeof v !== 'string') throw invalidRequest(`parameter ${k} must be a string`);
    if (v.length > MAX_PARAM) throw invalidRequest(`parameter ${k} is too long`);
    if (PARAM_FORBIDDEN.test(v)) throw invalidRequest(`parameter ${k} must not contain control characters`);
    if (!v.isWellFormed()) throw invalidRequest(`parameter ${k} must be valid Unicode`);
    out.set(k, v);
  }
  return out;
}

/**
 * The client id and secret of an HTTP Basic `Authorization` header (RFC 6749
 * §2.3.1: each form-urlencoded before the two are joined), `undefined` when
 * the request has no such header; `invalid_client` when it is malformed.
 */
export function basicClientCredentials(authorization: string | undefined): { id: string; secret: string } | undefined {
  const basic = authorization === undefined ? undefined : /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(authorization);
  if (!basic) return undefined;
  const decoded = Buffer.from(basic[1] ?? '', 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 0) throw invalidClient();
  try {
    return { id: decodeURIComponent(decoded.slice(0, colon).replace(/\+/g, ' ')), secret: decodeURIComponent(decoded.slice(colon + 1).replace(/\+/g, ' ')) };
  } catch {
    throw invalidClient();
  }
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
  const basic = basicClientCredentials(authorization);
  if (basic !== undefined) {
    if (secret !== undefined) throw invalidRequest('use one client authentication method');
    if (id !== undefined && id !== basic.id) throw invalidRequest('client_id differs from the Authorization header');
    ({ id, secret } = basic);
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
