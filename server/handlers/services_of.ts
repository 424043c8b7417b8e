/**
 * The domain services a handler calls, from its request context: each
 * answers `unavailable` when the composition root did not build it.
 */
import { LatchkeyError } from '../../engine/errors.ts';
import { MFA_COOKIE, sessionCookieOf, type AuthCallContext, type AuthService } from '../../auth/index.ts';
import type { RequestContext } from '../context.ts';

/** The identity service of the composition root; `unavailable` when it was not plugged in. */
export function authOf(ctx: RequestContext): AuthService {
  const a = ctx.services.auth;
  if (a === undefined) throw new LatchkeyError('unavailable', 'identity service is not available', { reason: 'auth_unavailable' });
  return a;
}

const SUPER_ADMIN = Object.freeze({ kind: 'super_admin' } as const);
const ANONYMOUS_CALLER = Object.freeze({ kind: 'anonymous' } as const);

/** The call context the identity service needs, from the request context. */
export function callContext(ctx: RequestContext): AuthCallContext {
  const p = ctx.principal;
  return {
    // A user principal is passed as it is (the same fields; principals are never changed once resolved).
    principal: p.kind === 'user' ? p : p.kind === 'super_admin' ? SUPER_ADMIN : ANONYMOUS_CALLER,
    sessionCookie: sessionCookieOf(ctx.credentials.cookies),
    bearer: ctx.credentials.bearer,
    mfaCookie: ctx.credentials.cookies?.[MFA_COOKIE],
  };
}

