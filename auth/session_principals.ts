/**
 * The principals the session flows resolve, one frozen object per session
 * record: a caller that keeps presenting the same cookie or token gets the
 * same principal, whose subject string is then the same object on every call
 * (a check keyed by it reuses its hash instead of building and hashing a new
 * string). Records are cached while unchanged (see SessionManager).
 */
import type { SessionRecord } from './sessions.ts';
import type { TokenClaims } from './tokens.ts';
import type { AuthCallContext, UserPrincipal } from './public_user.ts';

/**
 * The principal of a session cookie, one frozen object per session record
 * (records are cached while unchanged: see SessionManager), and the session
 * each such principal was resolved from. Only a cookie's authentication makes
 * these principals, so a call whose principal is one of them was
 * authenticated with its session cookie.
 */
const COOKIE_PRINCIPALS = new WeakMap<SessionRecord, UserPrincipal>();
const COOKIE_SESSIONS = new WeakMap<object, SessionRecord>();

export function cookiePrincipal(session: SessionRecord): UserPrincipal {
  let principal = COOKIE_PRINCIPALS.get(session);
  if (principal === undefined) {
    principal = Object.freeze({ kind: 'user', userId: session.user_id, subject: `user:${session.user_id}`, roles: session.roles, sessionId: session.sid });
    COOKIE_PRINCIPALS.set(session, principal);
    COOKIE_SESSIONS.set(principal, session);
  }
  return principal;
}

/**
 * The live session the call was authenticated with, when that was `cookie`
 * itself (the request's session cookie): found by the authentication of this
 * same call, so not looked up twice. Undefined otherwise.
 */
export function presentedSession(cookie: string, ctx: AuthCallContext): SessionRecord | undefined {
  const p = ctx.principal;
  return p !== undefined && cookie === ctx.sessionCookie ? COOKIE_SESSIONS.get(p) : undefined;
}

/**
 * The principal of a verified token and its live session, one frozen object
 * per (session record, claims) pair while both are the cached ones: a caller
 * that keeps presenting the same token gets the same principal, whose subject
 * string is then the same object on every call (a check keyed by it reuses
 * its hash instead of building and hashing a new string).
 */
const PRINCIPALS = new WeakMap<SessionRecord, { claims: TokenClaims; principal: UserPrincipal }>();

export function bearerPrincipal({ claims, session }: { claims: TokenClaims; session: SessionRecord }): UserPrincipal {
  const known = PRINCIPALS.get(session);
  if (known !== undefined && known.claims === claims) return known.principal;
  const principal: UserPrincipal = Object.freeze({ kind: 'user', userId: session.user_id, subject: `user:${session.user_id}`, roles: session.roles, sessionId: session.sid, claims });
  PRINCIPALS.set(session, { claims, principal });
  return principal;
}
