/**
 * The domain services a handler calls, from its request context: each
 * answers `unavailable` when the composition root did not build it.
 */
import { LatchkeyError } from '../../engine/errors.ts';
import { MFA_COOKIE, sessionCookieOf, type AuditPort, type AuthCallContext, type AuthService, type UserRecord } from '../../auth/index.ts';
import type { WebhookEvent } from '../../admin/index.ts';
import type { RequestContext } from '../context.ts';
import { logUnrecordedEvent, recordUserEvent } from './admin.ts';

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
    principal: p.kind === 'user' || p.kind === 'service_account' ? p : p.kind === 'super_admin' ? SUPER_ADMIN : ANONYMOUS_CALLER,
    sessionCookie: sessionCookieOf(ctx.credentials.cookies),
    bearer: ctx.credentials.bearer,
    mfaCookie: ctx.credentials.cookies?.[MFA_COOKIE],
  };
}

/**
 * The call context of a flow that reports its refusals: the identity
 * service audits them through this port, into the admin service's audit log,
 * with the request's address and agent.
 */
export function auditedCallContext(ctx: RequestContext): AuthCallContext {
  return { ...callContext(ctx), audit: auditPortOf(ctx) };
}

function auditPortOf(ctx: RequestContext): AuditPort {
  return (event) => audit(ctx, event.action, { userId: event.userId, metadata: { ...event.metadata } });
}

/**
 * Audits a user event (and queues its webhook) through the admin service.
 * Never throws: a failure is logged by the admin helper.
 */
export async function audit(
  ctx: RequestContext,
  action: string,
  o: { userId?: string | undefined; user?: UserRecord | undefined; webhook?: WebhookEvent; metadata?: Record<string, unknown> } = {},
): Promise<void> {
  try {
    const user = o.user ?? (o.userId ? await authOf(ctx).users.findById(o.userId) : undefined);
    await recordUserEvent(ctx, action, {
      user,
      actorId: o.userId,
      ...(o.webhook === undefined ? {} : { webhook: o.webhook }),
      ...(o.metadata === undefined ? {} : { metadata: o.metadata }),
    });
  } catch (err) {
    logUnrecordedEvent(ctx, action, err);
  }
}
