/**
 * The super-admin operations (spec: Admin endpoints, GraphQL-only
 * administrative operations); their shapes are in `admin_shapes.ts`, the
 * plug that builds the admin service in `admin_plug.ts`.
 *
 * Protocol support follows the spec's client table. The five parameterless
 * methods of its middle row (admin_logout, admin_session, admin_meta,
 * fga_get_model, fga_reset) are served over REST and gRPC, the pair the
 * reference SDKs of that API mark for them (authorizer-contract §2.4);
 * GraphQL refuses them as unknown fields before anything runs. `_env` is
 * GraphQL-only.
 */
import { LatchkeyError } from '../../engine/errors.ts';
import { ADMIN_COOKIE, AdminService, EMAIL_TEMPLATE_EVENTS, WEBHOOK_EVENTS, type AdminCallContext, type AuditEntry, type WebhookEvent } from '../../admin/index.ts';
import type { SignupRecorder, UserRecord } from '../../auth/index.ts';
import { redactedConfig } from '../flags.ts';
import type { RequestContext } from '../context.ts';
import { logUnlessOutage } from '../compose/database.ts';
import { ADMIN_OPERATIONS } from '../../api/index.ts';
import type { HandlersOf } from './types.ts';
import { metaFromConfig } from './meta.ts';
import { VERSION } from '../version.ts';


// ------------------------------------------------------------------ helpers

/** The admin service of a running server; `unavailable` when it was not plugged in. */
export function adminOf(ctx: RequestContext): AdminService {
  const admin = ctx.services.admin;
  if (admin === undefined) {
    throw new LatchkeyError('unavailable', 'the admin service is not available', { reason: 'admin_unavailable' });
  }
  return admin;
}

/**
 * For the identity rows: audits a security-relevant user event (`action`,
 * e.g. `user.signup`, `user.login_success`, `user.login_failed`,
 * `user.logout`, `user.password_reset`, `user.deactivated`) with the
 * request's IP and user agent, and queues the webhook `webhook` for `user`
 * when given. Never throws and never delays the response beyond the two
 * inserts; a failure is logged.
 */
export async function recordUserEvent(
  ctx: RequestContext,
  action: string,
  options: { user?: UserRecord | undefined; actorId?: string | undefined; webhook?: WebhookEvent | undefined; metadata?: Record<string, unknown> | undefined } = {},
): Promise<void> {
  const admin = ctx.services.admin;
  if (admin === undefined) return;
  await admin.userEvent(
    userEventEntry(ctx, action, options),
    options.webhook && options.user ? { event: options.webhook, user: options.user } : undefined,
    (err) => logUnrecordedEvent(ctx, action, err),
  );
}

/**
 * Logs a user event that could not be recorded. During an outage of the main
 * database (the failure is a dependency's, or the database does not answer a
 * ping) it is an expected consequence of the outage: a warning naming the
 * outage, without a stack. Anything else is an error.
 */
export function logUnrecordedEvent(ctx: RequestContext, action: string, err: unknown): void {
  logUnlessOutage(ctx.logger, ctx.services.database, 'user event not recorded', err, { action });
}

/**
 * The {@link SignupRecorder} of a user event that a change of the identity
 * service records as part of itself (sign-up: `user.signup`): given the
 * change's SQL transaction, it writes the audit row `entry` and queues the
 * webhook `webhook` in it, and throws on failure so that the change rolls
 * back with them (security matrix E3); given no transaction (DynamoDB), it
 * records after the change through {@link AdminService.userEvent}, which
 * reports a failure to `onError` instead of throwing. Undefined when no
 * admin service is plugged in.
 */
export function adminEventRecorder(
  admin: AdminService | undefined,
  event: { entry: (user: UserRecord) => AuditEntry; webhook?: WebhookEvent | undefined; onError: (err: unknown) => void },
): SignupRecorder | undefined {
  if (admin === undefined) return undefined;
  return async (user, transaction) => {
    const entry = event.entry(user);
    const webhook = event.webhook === undefined ? undefined : { event: event.webhook, user };
    if (transaction === undefined) return admin.userEvent(entry, webhook, event.onError);
    await admin.userEventInTransaction(transaction, entry, webhook);
  };
}

/**
 * For the identity rows: the {@link adminEventRecorder} of the user event
 * `action` caused by the request, audited with its IP and user agent as
 * {@link recordUserEvent} does.
 */
export function userEventRecorder(
  ctx: RequestContext,
  action: string,
  options: { webhook?: WebhookEvent | undefined; metadata?: Record<string, unknown> | undefined } = {},
): SignupRecorder | undefined {
  return adminEventRecorder(ctx.services.admin, {
    entry: (user) => userEventEntry(ctx, action, { ...options, user, actorId: user.id }),
    webhook: options.webhook,
    onError: (err) => logUnrecordedEvent(ctx, action, err),
  });
}

/** The audit entry of a user event caused by the request. */
function userEventEntry(
  ctx: RequestContext,
  action: string,
  options: { user?: UserRecord | undefined; actorId?: string | undefined; metadata?: Record<string, unknown> | undefined },
): AuditEntry {
  const actorId = options.actorId ?? options.user?.id ?? (ctx.principal.kind === 'user' ? ctx.principal.userId : '');
  return {
    actor_type: actorId ? 'user' : 'anonymous',
    actor_id: actorId,
    actor_email: options.user?.email ?? undefined,
    action,
    resource_type: 'user',
    resource_id: options.user?.id ?? actorId,
    ip_address: ctx.clientIp,
    user_agent: ctx.userAgent,
    metadata: { ...options.metadata, protocol: ctx.protocol },
  };
}

function callCtx(ctx: RequestContext): AdminCallContext {
  const p = ctx.principal;
  return {
    ip: ctx.clientIp,
    userAgent: ctx.userAgent,
    via: p.kind === 'super_admin' ? p.via : 'anonymous',
    protocol: ctx.protocol,
  };
}


const list = <T>(items: readonly T[]): T[] => [...items];


export const ADMIN_HANDLERS: HandlersOf<typeof ADMIN_OPERATIONS> = {
  admin_login: async (ctx, input) => {
    const cfg = ctx.services.config;
    const out = await adminOf(ctx).adminLogin(callCtx(ctx), input.admin_secret, cfg.adminCookieSecure);
    ctx.cookies.set(ADMIN_COOKIE, out.token, out.cookie);
    return { message: out.message };
  },
  admin_logout: async (ctx) => {
    const out = await adminOf(ctx).adminLogout(callCtx(ctx), ctx.credentials.cookies[ADMIN_COOKIE]);
    ctx.cookies.clear(ADMIN_COOKIE, { path: '/', httpOnly: true, secure: ctx.services.config.adminCookieSecure, sameSite: 'Strict' });
    return out;
  },
  admin_session: async (ctx) => {
    const cookie = ctx.credentials.cookies[ADMIN_COOKIE];
    const out = await adminOf(ctx).adminSession(callCtx(ctx), cookie, ctx.services.config.adminCookieSecure);
    if (out.cookie && cookie !== undefined) ctx.cookies.set(ADMIN_COOKIE, cookie, out.cookie);
    return { message: out.message };
  },
  admin_meta: async (ctx) => {
    const c = ctx.services.config;
    return {
      ...metaFromConfig(c),
      server_version: VERSION,
      roles: list(c.roles),
      default_roles: list(c.defaultRoles),
      protected_roles: list(c.protectedRoles),
      is_fga_enabled: ctx.services.engine !== undefined,
      is_email_service_enabled: Boolean(c.smtpHost),
      is_admin_header_auth_enabled: !c.disableAdminHeaderAuth,
      webhook_events: list(WEBHOOK_EVENTS),
      email_template_events: list(EMAIL_TEMPLATE_EVENTS),
    };
  },
  env: async (ctx) => ({ env: redactedConfig(ctx.services.config) as never }),
  users: async (ctx, input) => adminOf(ctx).users(callCtx(ctx), input.pagination) as never,
  user: async (ctx, input) => adminOf(ctx).user(callCtx(ctx), input) as never,
  update_user: async (ctx, input) => {
    const { app_data, ...rest } = input;
    if (app_data !== undefined && (app_data === null || typeof app_data !== 'object' || Array.isArray(app_data))) {
      throw new LatchkeyError('invalid_argument', 'app_data: must be an object', { reason: 'invalid_field', details: { field: 'app_data' } });
    }
    return adminOf(ctx).updateUser(callCtx(ctx), { ...rest, ...(app_data ? { app_data } : {}) }) as never;
  },
  delete_user: async (ctx, input) => adminOf(ctx).deleteUser(callCtx(ctx), input.email),
  verification_requests: async (ctx, input) => adminOf(ctx).verificationRequests(callCtx(ctx), input.pagination),
  revoke_access: async (ctx, input) => adminOf(ctx).revokeAccess(callCtx(ctx), input.user_id),
  enable_access: async (ctx, input) => adminOf(ctx).enableAccess(callCtx(ctx), input.user_id),
  invite_members: async (ctx, input) => adminOf(ctx).inviteMembers(callCtx(ctx), input) as never,
  add_webhook: async (ctx, input) => ({ message: (await adminOf(ctx).addWebhook(callCtx(ctx), input)).message }),
  update_webhook: async (ctx, input) => ({ message: (await adminOf(ctx).updateWebhook(callCtx(ctx), input)).message }),
  delete_webhook: async (ctx, input) => adminOf(ctx).deleteWebhook(callCtx(ctx), input.id),
  get_webhook: async (ctx, input) => adminOf(ctx).getWebhook(callCtx(ctx), input.id),
  webhooks: async (ctx, input) => adminOf(ctx).listWebhooks(callCtx(ctx), input.pagination),
  webhook_logs: async (ctx, input) => adminOf(ctx).webhookLogs(callCtx(ctx), input),
  test_endpoint: async (ctx, input) =>
    adminOf(ctx).testEndpoint(callCtx(ctx), { event_name: input.event_name, endpoint: input.endpoint, headers: input.headers }),
  add_email_template: async (ctx, input) => ({ message: (await adminOf(ctx).addEmailTemplate(callCtx(ctx), input)).message }),
  update_email_template: async (ctx, input) => ({ message: (await adminOf(ctx).updateEmailTemplate(callCtx(ctx), input)).message }),
  delete_email_template: async (ctx, input) => adminOf(ctx).deleteEmailTemplate(callCtx(ctx), input.id),
  email_templates: async (ctx, input) => adminOf(ctx).emailTemplates(callCtx(ctx), input.pagination),
  audit_logs: async (ctx, input) => adminOf(ctx).auditLogs(callCtx(ctx), input),
  fga_get_model: async (ctx) => adminOf(ctx).fgaGetModel(callCtx(ctx)),
  fga_write_model: async (ctx, input) => adminOf(ctx).fgaWriteModel(callCtx(ctx), input.dsl),
  fga_validate_model: async (ctx, input) => adminOf(ctx).fgaValidateModel(input.dsl),
  fga_list_models: async (ctx, input) => adminOf(ctx).fgaListModels(callCtx(ctx), input),
  fga_write_tuples: async (ctx, input) => adminOf(ctx).fgaWriteTuples(callCtx(ctx), input.tuples),
  fga_delete_tuples: async (ctx, input) => adminOf(ctx).fgaDeleteTuples(callCtx(ctx), input.tuples),
  fga_delete_tuples_by_filter: async (ctx, input) => adminOf(ctx).fgaDeleteTuplesByFilter(callCtx(ctx), input),
  fga_read_tuples: async (ctx, input) => adminOf(ctx).fgaReadTuples(callCtx(ctx), input),
  fga_list_users: async (ctx, input) => adminOf(ctx).fgaListUsers(callCtx(ctx), input),
  fga_expand: async (ctx, input) => adminOf(ctx).fgaExpand(callCtx(ctx), input),
  fga_explain: async (ctx, input) => adminOf(ctx).fgaExplain(callCtx(ctx), input),
  watch_fga: async (ctx, input) => adminOf(ctx).fgaWatch(callCtx(ctx), input, ctx.signal),
  fga_reset: async (ctx) => adminOf(ctx).fgaReset(callCtx(ctx)),
};
