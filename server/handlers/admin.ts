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
import { EMPTY, MESSAGE, s } from '../../api/shape.ts';
import { ALL_PROTOCOLS, defineOperation, type AnyOperation } from '../../api/operations/types.ts';
import { metaFromConfig } from './meta.ts';
import { VERSION } from '../version.ts';
import {
  ADMIN_META,
  AUDIT_LOG,
  EMAIL_TEMPLATE,
  FGA_MODEL,
  FGA_TUPLE,
  FGA_TUPLE_INPUT,
  PAGINATED,
  PAGINATION,
  PAGINATION_INPUT,
  USER,
  VERIFICATION_REQUEST,
  WEBHOOK,
  WEBHOOK_LOG,
} from '../../api/operations/admin_shapes.ts';

import { asEngine } from '../compose/admin.ts';
export { plugAdmin } from '../compose/admin.ts';
export { USER } from '../../api/operations/admin_shapes.ts';

// ------------------------------------------------------------------ helpers

/** The admin service of a running server; `unavailable` when it was not plugged in. */
export function adminOf(ctx: RequestContext): AdminService {
  const admin = ctx.services.admin;
  if (!(admin instanceof AdminService)) {
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
  if (!(admin instanceof AdminService)) return;
  await admin.userEvent(
    userEventEntry(ctx, action, options),
    options.webhook && options.user ? { event: options.webhook, user: options.user } : undefined,
    (err) => ctx.logger.error('user event not recorded', { action, err }),
  );
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
  admin: unknown,
  event: { entry: (user: UserRecord) => AuditEntry; webhook?: WebhookEvent | undefined; onError: (err: unknown) => void },
): SignupRecorder | undefined {
  if (!(admin instanceof AdminService)) return undefined;
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
    onError: (err) => ctx.logger.error('user event not recorded', { action, err }),
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

const admin = (name: string, method: 'GET' | 'POST', path: string, grpcMethod: string, protocols = ALL_PROTOCOLS) =>
  ({
    name,
    auth: 'super_admin' as const,
    admin: true,
    protocols,
    ...(protocols.includes('rest') ? { rest: { method, path } } : {}),
    ...(protocols.includes('grpc') ? { grpc: { method: grpcMethod } } : {}),
  }) as const;

const REST_GRPC = ['rest', 'grpc'] as const;

/** A tuple write's result: the message, and the consistency token of the store revision it committed. */
const FGA_WRITE_RESULT = s.object('FgaWriteResponse', {
  message: s.string(),
  consistency_token: s.string({ doc: 'The store revision this write committed; pass it as consistency_token to check_permissions or list_permissions to read at least this write' }),
});
const list = <T>(items: readonly T[]): T[] => [...items];

// ------------------------------------------------------------------ rows

export const ADMIN_OPERATIONS: readonly AnyOperation[] = [
  defineOperation({
    ...admin('admin_login', 'POST', '/v1/admin/login', 'AdminLogin'),
    auth: 'public',
    kind: 'mutation',
    input: s.object('AdminLoginRequest', { admin_secret: s.string({ minLength: 1, maxLength: 1024 }) }),
    output: MESSAGE,
    doc: 'Checks the admin secret and sets the service-admin session cookie (wrong secrets are rate limited per IP).',
    handler: async (ctx, input) => {
      const cfg = ctx.services.config;
      const out = await adminOf(ctx).adminLogin(callCtx(ctx), input.admin_secret, cfg.adminCookieSecure);
      ctx.cookies.set(ADMIN_COOKIE, out.token, out.cookie);
      return { message: out.message };
    },
  }),
  defineOperation({
    ...admin('admin_logout', 'POST', '/v1/admin/logout', 'AdminLogout', REST_GRPC),
    kind: 'mutation',
    input: EMPTY,
    output: MESSAGE,
    doc: 'Ends the admin session of the request cookie and clears the cookie.',
    handler: async (ctx) => {
      const out = await adminOf(ctx).adminLogout(callCtx(ctx), ctx.credentials.cookies[ADMIN_COOKIE]);
      ctx.cookies.clear(ADMIN_COOKIE, { path: '/', httpOnly: true, secure: ctx.services.config.adminCookieSecure, sameSite: 'Strict' });
      return out;
    },
  }),
  defineOperation({
    ...admin('admin_session', 'GET', '/v1/admin/session', 'AdminSession', REST_GRPC),
    kind: 'query',
    input: EMPTY,
    output: MESSAGE,
    doc: 'Verifies the admin credentials; with the cookie, extends the session and re-sets the cookie.',
    handler: async (ctx) => {
      const cookie = ctx.credentials.cookies[ADMIN_COOKIE];
      const out = await adminOf(ctx).adminSession(callCtx(ctx), cookie, ctx.services.config.adminCookieSecure);
      if (out.cookie && cookie !== undefined) ctx.cookies.set(ADMIN_COOKIE, cookie, out.cookie);
      return { message: out.message };
    },
  }),
  defineOperation({
    ...admin('admin_meta', 'GET', '/v1/admin/meta', 'AdminMeta', REST_GRPC),
    kind: 'query',
    input: EMPTY,
    output: ADMIN_META,
    doc: 'Meta plus admin-only fields: server version, roles, enabled services, event names.',
    handler: async (ctx) => {
      const c = ctx.services.config;
      return {
        ...metaFromConfig(c),
        server_version: VERSION,
        roles: list(c.roles),
        default_roles: list(c.defaultRoles),
        protected_roles: list(c.protectedRoles),
        is_fga_enabled: asEngine(ctx.services.engine) !== undefined,
        is_email_service_enabled: Boolean(c.smtpHost),
        is_admin_header_auth_enabled: !c.disableAdminHeaderAuth,
        webhook_events: list(WEBHOOK_EVENTS),
        email_template_events: list(EMAIL_TEMPLATE_EVENTS),
      };
    },
  }),
  defineOperation({
    ...admin('env', 'POST', '', 'Env', ['graphql']),
    kind: 'query',
    input: EMPTY,
    output: s.object('EnvResponse', { env: s.json({ doc: 'Effective configuration by flag name, secrets shown as [redacted]' }) }),
    doc: 'The effective configuration (every flag), with every secret redacted.',
    handler: async (ctx) => ({ env: redactedConfig(ctx.services.config) as never }),
  }),
  defineOperation({
    ...admin('users', 'POST', '/v1/admin/users', 'Users'),
    graphqlArg: { nullable: true },
    kind: 'query',
    input: s.object('UsersRequest', { pagination: s.optional(PAGINATION_INPUT) }, PAGINATED),
    output: s.object('Users', { users: s.list(USER), pagination: PAGINATION }),
    doc: 'Users, oldest first, paginated.',
    handler: async (ctx, input) => adminOf(ctx).users(callCtx(ctx), input.pagination) as never,
  }),
  defineOperation({
    ...admin('user', 'POST', '/v1/admin/user', 'User'),
    kind: 'query',
    input: s.object('UserRequest', { id: s.optional(s.string()), email: s.optional(s.string()) }, { graphql: { name: 'GetUserRequest' } }),
    output: USER,
    doc: 'One user by id or email.',
    handler: async (ctx, input) => adminOf(ctx).user(callCtx(ctx), input) as never,
  }),
  defineOperation({
    ...admin('update_user', 'POST', '/v1/admin/update_user', 'UpdateUser'),
    kind: 'mutation',
    input: s.object('UpdateUserRequest', {
      id: s.string({ minLength: 1 }),
      email: s.optional(s.string({ maxLength: 320 })),
      email_verified: s.optional(s.bool()),
      given_name: s.optional(s.string({ maxLength: 256 })),
      family_name: s.optional(s.string({ maxLength: 256 })),
      middle_name: s.optional(s.string({ maxLength: 256 })),
      nickname: s.optional(s.string({ maxLength: 256 })),
      gender: s.optional(s.string({ maxLength: 64 })),
      birthdate: s.optional(s.string({ maxLength: 64 })),
      phone_number: s.optional(s.string({ maxLength: 32 })),
      phone_number_verified: s.optional(s.bool()),
      picture: s.optional(s.string({ maxLength: 2048 })),
      roles: s.optional(s.list(s.string(), { maxItems: 100 })),
      is_multi_factor_auth_enabled: s.optional(s.bool()),
      app_data: s.optional(s.json()),
    }, { graphql: { scalars: { id: 'ID', app_data: 'Map' }, nullableItems: ['roles'] } }),
    output: USER,
    doc: 'Changes any editable field of a user; roles must be allowed; email and phone stay unique.',
    handler: async (ctx, input) => {
      const { app_data, ...rest } = input;
      if (app_data !== undefined && (app_data === null || typeof app_data !== 'object' || Array.isArray(app_data))) {
        throw new LatchkeyError('invalid_argument', 'app_data: must be an object', { reason: 'invalid_field', details: { field: 'app_data' } });
      }
      return adminOf(ctx).updateUser(callCtx(ctx), { ...rest, ...(app_data ? { app_data } : {}) }) as never;
    },
  }),
  defineOperation({
    ...admin('delete_user', 'POST', '/v1/admin/delete_user', 'DeleteUser'),
    kind: 'mutation',
    input: s.object('DeleteUserRequest', { email: s.string({ minLength: 1 }) }),
    output: MESSAGE,
    doc: "Deletes a user with its sessions, OTP and verification data and the FGA tuples whose user it is.",
    handler: async (ctx, input) => adminOf(ctx).deleteUser(callCtx(ctx), input.email),
  }),
  defineOperation({
    ...admin('verification_requests', 'POST', '/v1/admin/verification_requests', 'VerificationRequests'),
    graphqlArg: { nullable: true },
    kind: 'query',
    input: s.object('VerificationRequestsRequest', { pagination: s.optional(PAGINATION_INPUT) }, PAGINATED),
    output: s.object('VerificationRequests', { verification_requests: s.list(VERIFICATION_REQUEST), pagination: PAGINATION }),
    doc: 'Pending verification requests, paginated.',
    handler: async (ctx, input) => adminOf(ctx).verificationRequests(callCtx(ctx), input.pagination),
  }),
  defineOperation({
    ...admin('revoke_access', 'POST', '/v1/admin/revoke_access', 'RevokeAccess'),
    graphqlArg: { name: 'param' },
    kind: 'mutation',
    input: s.object('RevokeAccessRequest', { user_id: s.string({ minLength: 1 }) }, { graphql: { name: 'UpdateAccessRequest' } }),
    output: MESSAGE,
    doc: 'Sets revoked_timestamp, ends every session and refresh token of the user, fires user.access_revoked. Refused when already revoked.',
    handler: async (ctx, input) => adminOf(ctx).revokeAccess(callCtx(ctx), input.user_id),
  }),
  defineOperation({
    ...admin('enable_access', 'POST', '/v1/admin/enable_access', 'EnableAccess'),
    graphqlArg: { name: 'param' },
    kind: 'mutation',
    input: s.object('EnableAccessRequest', { user_id: s.string({ minLength: 1 }) }, { graphql: { name: 'UpdateAccessRequest' } }),
    output: MESSAGE,
    doc: 'Clears revoked_timestamp and fires user.access_enabled. Refused when not revoked.',
    handler: async (ctx, input) => adminOf(ctx).enableAccess(callCtx(ctx), input.user_id),
  }),
  defineOperation({
    ...admin('invite_members', 'POST', '/v1/admin/invite_members', 'InviteMembers'),
    kind: 'mutation',
    input: s.object('InviteMembersRequest', {
      emails: s.list(s.string({ maxLength: 320 }), { minItems: 1, maxItems: 50 }),
      redirect_uri: s.optional(s.string({ maxLength: 2048 })),
    }, { graphql: { name: 'InviteMemberRequest' } }),
    output: s.object('InviteMembersResponse', { message: s.string(), users: s.list(USER), existing: s.list(s.string()) }),
    doc: 'Creates unverified users for new emails and mails each an invitation link; existing emails are reported.',
    handler: async (ctx, input) => adminOf(ctx).inviteMembers(callCtx(ctx), input) as never,
  }),
  defineOperation({
    ...admin('add_webhook', 'POST', '/v1/admin/add_webhook', 'AddWebhook'),
    kind: 'mutation',
    input: s.object('AddWebhookRequest', {
      event_name: s.string({ minLength: 1 }),
      event_description: s.optional(s.string({ maxLength: 256 })),
      endpoint: s.string({ minLength: 1, maxLength: 2048 }),
      enabled: s.optional(s.bool()),
      headers: s.optional(s.map()),
    }),
    output: MESSAGE,
    doc: `Registers a webhook for an event (${WEBHOOK_EVENTS.join(', ')}); the endpoint must be http(s) and public.`,
    handler: async (ctx, input) => ({ message: (await adminOf(ctx).addWebhook(callCtx(ctx), input)).message }),
  }),
  defineOperation({
    ...admin('update_webhook', 'POST', '/v1/admin/update_webhook', 'UpdateWebhook'),
    kind: 'mutation',
    input: s.object('UpdateWebhookRequest', {
      id: s.string({ minLength: 1 }),
      event_name: s.optional(s.string()),
      event_description: s.optional(s.string({ maxLength: 256 })),
      endpoint: s.optional(s.string({ maxLength: 2048 })),
      enabled: s.optional(s.bool()),
      headers: s.optional(s.map()),
    }, { graphql: { scalars: { id: 'ID' } } }),
    output: MESSAGE,
    doc: 'Changes a webhook (event, endpoint, headers, enabled state).',
    handler: async (ctx, input) => ({ message: (await adminOf(ctx).updateWebhook(callCtx(ctx), input)).message }),
  }),
  defineOperation({
    ...admin('delete_webhook', 'POST', '/v1/admin/delete_webhook', 'DeleteWebhook'),
    kind: 'mutation',
    input: s.object('DeleteWebhookRequest', { id: s.string({ minLength: 1 }) }, { graphql: { name: 'WebhookRequest', scalars: { id: 'ID' } } }),
    output: MESSAGE,
    doc: 'Deletes a webhook with its pending deliveries and logs.',
    handler: async (ctx, input) => adminOf(ctx).deleteWebhook(callCtx(ctx), input.id),
  }),
  defineOperation({
    ...admin('get_webhook', 'POST', '/v1/admin/webhook', 'GetWebhook'),
    graphql: '_webhook',
    kind: 'query',
    input: s.object('GetWebhookRequest', { id: s.string({ minLength: 1 }) }, { graphql: { name: 'WebhookRequest', scalars: { id: 'ID' } } }),
    output: WEBHOOK,
    doc: 'One webhook.',
    handler: async (ctx, input) => adminOf(ctx).getWebhook(callCtx(ctx), input.id),
  }),
  defineOperation({
    ...admin('webhooks', 'POST', '/v1/admin/webhooks', 'Webhooks'),
    graphqlArg: { nullable: true },
    kind: 'query',
    input: s.object('WebhooksRequest', { pagination: s.optional(PAGINATION_INPUT) }, PAGINATED),
    output: s.object('Webhooks', { webhooks: s.list(WEBHOOK), pagination: PAGINATION }),
    doc: 'Webhooks, paginated.',
    handler: async (ctx, input) => adminOf(ctx).listWebhooks(callCtx(ctx), input.pagination),
  }),
  defineOperation({
    ...admin('webhook_logs', 'POST', '/v1/admin/webhook_logs', 'WebhookLogs'),
    graphqlArg: { nullable: true },
    kind: 'query',
    input: s.object('WebhookLogsRequest', { pagination: s.optional(PAGINATION_INPUT), webhook_id: s.optional(s.string()) }, { graphql: { name: 'ListWebhookLogRequest' } }),
    output: s.object('WebhookLogs', { webhook_logs: s.list(WEBHOOK_LOG), pagination: PAGINATION }),
    doc: 'Delivery attempts, newest first, optionally of one webhook.',
    handler: async (ctx, input) => adminOf(ctx).webhookLogs(callCtx(ctx), input),
  }),
  defineOperation({
    ...admin('test_endpoint', 'POST', '/v1/admin/test_endpoint', 'TestEndpoint'),
    kind: 'mutation',
    input: s.object('TestEndpointRequest', {
      event_name: s.string({ minLength: 1 }),
      endpoint: s.string({ minLength: 1, maxLength: 2048 }),
      event_description: s.optional(s.string()),
      headers: s.optional(s.map()),
    }),
    output: s.object('TestEndpointResponse', { http_status: s.int(), response: s.string() }, { graphql: { nullable: ['http_status', 'response'] } }),
    doc: 'Posts a signed sample event to an endpoint now and returns its status and response text.',
    handler: async (ctx, input) =>
      adminOf(ctx).testEndpoint(callCtx(ctx), { event_name: input.event_name, endpoint: input.endpoint, headers: input.headers }),
  }),
  defineOperation({
    ...admin('add_email_template', 'POST', '/v1/admin/add_email_template', 'AddEmailTemplate'),
    kind: 'mutation',
    input: s.object('AddEmailTemplateRequest', {
      event_name: s.string({ minLength: 1 }),
      subject: s.string({ minLength: 1, maxLength: 512 }),
      template: s.string({ minLength: 1, maxLength: 60_000, text: true }),
      design: s.optional(s.string({ maxLength: 60_000, text: true })),
    }),
    output: MESSAGE,
    doc: `Stores the template of a mail event (${EMAIL_TEMPLATE_EVENTS.join(', ')}); it must render.`,
    handler: async (ctx, input) => ({ message: (await adminOf(ctx).addEmailTemplate(callCtx(ctx), input)).message }),
  }),
  defineOperation({
    ...admin('update_email_template', 'POST', '/v1/admin/update_email_template', 'UpdateEmailTemplate'),
    kind: 'mutation',
    input: s.object('UpdateEmailTemplateRequest', {
      id: s.string({ minLength: 1 }),
      event_name: s.optional(s.string()),
      subject: s.optional(s.string({ maxLength: 512 })),
      template: s.optional(s.string({ maxLength: 60_000, text: true })),
      design: s.optional(s.string({ maxLength: 60_000, text: true })),
    }, { graphql: { scalars: { id: 'ID' } } }),
    output: MESSAGE,
    doc: 'Changes an email template; it must still render.',
    handler: async (ctx, input) => ({ message: (await adminOf(ctx).updateEmailTemplate(callCtx(ctx), input)).message }),
  }),
  defineOperation({
    ...admin('delete_email_template', 'POST', '/v1/admin/delete_email_template', 'DeleteEmailTemplate'),
    kind: 'mutation',
    input: s.object('DeleteEmailTemplateRequest', { id: s.string({ minLength: 1 }) }, { graphql: { scalars: { id: 'ID' } } }),
    output: MESSAGE,
    doc: 'Deletes an email template; the event falls back to its built-in default.',
    handler: async (ctx, input) => adminOf(ctx).deleteEmailTemplate(callCtx(ctx), input.id),
  }),
  defineOperation({
    ...admin('email_templates', 'POST', '/v1/admin/email_templates', 'EmailTemplates'),
    graphqlArg: { nullable: true },
    kind: 'query',
    input: s.object('EmailTemplatesRequest', { pagination: s.optional(PAGINATION_INPUT) }, PAGINATED),
    output: s.object('EmailTemplates', { email_templates: s.list(EMAIL_TEMPLATE), pagination: PAGINATION }),
    doc: 'Stored email templates, paginated.',
    handler: async (ctx, input) => adminOf(ctx).emailTemplates(callCtx(ctx), input.pagination),
  }),
  defineOperation({
    ...admin('audit_logs', 'POST', '/v1/admin/audit_logs', 'AuditLogs'),
    graphqlArg: { nullable: true },
    kind: 'query',
    input: s.object('AuditLogsRequest', {
      pagination: s.optional(PAGINATION_INPUT),
      actor_id: s.optional(s.string()),
      action: s.optional(s.string()),
      resource: s.optional(s.string({ doc: '`type` or `type:id`' })),
      resource_type: s.optional(s.string()),
      resource_id: s.optional(s.string()),
      from_timestamp: s.optional(s.int({ doc: 'Unix seconds, inclusive' })),
      to_timestamp: s.optional(s.int({ doc: 'Unix seconds, inclusive' })),
    }, { graphql: { name: 'ListAuditLogRequest' } }),
    output: s.object('AuditLogs', { audit_logs: s.list(AUDIT_LOG), pagination: PAGINATION }),
    doc: 'Audit rows, newest first, filtered by actor id, action and resource. No operation edits or deletes them.',
    handler: async (ctx, input) => adminOf(ctx).auditLogs(callCtx(ctx), input),
  }),
  defineOperation({
    ...admin('fga_get_model', 'GET', '/v1/admin/fga/model', 'FgaGetModel', REST_GRPC),
    kind: 'query',
    input: EMPTY,
    output: FGA_MODEL,
    doc: 'The latest authorization model as DSL; an empty store gives an empty model.',
    handler: async (ctx) => adminOf(ctx).fgaGetModel(callCtx(ctx)),
  }),
  defineOperation({
    ...admin('fga_write_model', 'POST', '/v1/admin/fga/model', 'FgaWriteModel'),
    kind: 'mutation',
    input: s.object('FgaWriteModelRequest', { dsl: s.string({ minLength: 1, maxLength: 1_000_000, text: true }) }, { graphql: { name: 'FgaWriteModelInput' } }),
    output: FGA_MODEL,
    doc: 'Installs a new model version from DSL; errors carry line and column.',
    handler: async (ctx, input) => adminOf(ctx).fgaWriteModel(callCtx(ctx), input.dsl),
  }),
  defineOperation({
    ...admin('fga_validate_model', 'POST', '/v1/admin/fga/validate_model', 'FgaValidateModel'),
    kind: 'query',
    input: s.object('FgaValidateModelRequest', { dsl: s.string({ minLength: 1, maxLength: 1_000_000, text: true }) }, { graphql: { name: 'FgaValidateModelInput' } }),
    output: s.object('FgaValidateModelResponse', {
      valid: s.bool(),
      errors: s.list(s.object('DslProblem', { line: s.int({ doc: '1-based' }), column: s.int({ doc: '1-based' }), kind: s.string(), message: s.string() })),
    }),
    doc: 'Checks DSL as fga_write_model would, without installing it: every problem with its line and column. Not audited.',
    handler: async (ctx, input) => adminOf(ctx).fgaValidateModel(input.dsl),
  }),
  defineOperation({
    ...admin('fga_list_models', 'POST', '/v1/admin/fga/models', 'FgaListModels'),
    kind: 'query',
    input: s.object('FgaListModelsRequest', {
      page_size: s.optional(s.int({ min: 1, max: 50 })),
      continuation_token: s.optional(s.string()),
    }, { graphql: { name: 'FgaListModelsInput' } }),
    output: s.object('FgaModels', {
      models: s.list(s.object('FgaModelVersion', { id: s.string(), dsl: s.string(), created_at: s.int({ doc: 'Unix seconds' }) })),
      continuation_token: s.string(),
    }, { graphql: { nullable: ['continuation_token'] } }),
    doc: 'The authorization model versions, newest first, as DSL; page size 1 to 50 (default 50) with a continuation token.',
    handler: async (ctx, input) => adminOf(ctx).fgaListModels(callCtx(ctx), input),
  }),
  defineOperation({
    ...admin('fga_write_tuples', 'POST', '/v1/admin/fga/tuples', 'FgaWriteTuples'),
    kind: 'mutation',
    input: s.object('FgaWriteTuplesRequest', { tuples: s.list(FGA_TUPLE_INPUT, { minItems: 1, maxItems: 100 }) }, { graphql: { name: 'FgaWriteTuplesInput' } }),
    output: FGA_WRITE_RESULT,
    doc: 'Writes up to 100 tuples, all or nothing.',
    handler: async (ctx, input) => adminOf(ctx).fgaWriteTuples(callCtx(ctx), input.tuples),
  }),
  defineOperation({
    ...admin('fga_delete_tuples', 'POST', '/v1/admin/fga/tuples/delete', 'FgaDeleteTuples'),
    kind: 'mutation',
    input: s.object('FgaDeleteTuplesRequest', { tuples: s.list(FGA_TUPLE_INPUT, { minItems: 1, maxItems: 100 }) }, { graphql: { name: 'FgaWriteTuplesInput' } }),
    output: FGA_WRITE_RESULT,
    doc: 'Deletes up to 100 tuples, all or nothing.',
    handler: async (ctx, input) => adminOf(ctx).fgaDeleteTuples(callCtx(ctx), input.tuples),
  }),
  defineOperation({
    ...admin('fga_read_tuples', 'POST', '/v1/admin/fga/tuples/read', 'FgaReadTuples'),
    kind: 'query',
    input: s.object('FgaReadTuplesRequest', {
      user: s.optional(s.string()),
      relation: s.optional(s.string()),
      object: s.optional(s.string()),
      page_size: s.optional(s.int({ min: 1, max: 100 })),
      continuation_token: s.optional(s.string()),
    }, { graphql: { name: 'FgaReadTuplesInput' } }),
    output: s.object('FgaTuples', { tuples: s.list(FGA_TUPLE), continuation_token: s.string() }, { graphql: { nullable: ['continuation_token'] } }),
    doc: 'Reads tuples by optional filters; page size 1 to 100 (default 100) with a continuation token.',
    handler: async (ctx, input) => adminOf(ctx).fgaReadTuples(callCtx(ctx), input),
  }),
  defineOperation({
    ...admin('fga_list_users', 'POST', '/v1/admin/fga/list_users', 'FgaListUsers'),
    kind: 'query',
    input: s.object('FgaListUsersRequest', {
      object: s.string({ minLength: 1 }),
      relation: s.string({ minLength: 1 }),
      user_type: s.string({ minLength: 1 }),
    }, { graphql: { name: 'FgaListUsersInput' } }),
    output: s.object('FgaListUsersResponse', { users: s.list(s.string()) }),
    doc: 'Users of a type holding a relation on an object (admin-only: it reveals the access graph).',
    handler: async (ctx, input) => adminOf(ctx).fgaListUsers(callCtx(ctx), input),
  }),
  defineOperation({
    ...admin('fga_expand', 'POST', '/v1/admin/fga/expand', 'FgaExpand'),
    kind: 'query',
    input: s.object('FgaExpandRequest', { relation: s.string({ minLength: 1 }), object: s.string({ minLength: 1 }) }, { graphql: { name: 'FgaExpandInput' } }),
    output: s.object('FgaExpandResponse', { tree: s.string({ doc: 'The userset tree as a JSON string' }) }),
    doc: 'The userset tree of a relation on an object, as a JSON string.',
    handler: async (ctx, input) => adminOf(ctx).fgaExpand(callCtx(ctx), input),
  }),
  defineOperation({
    ...admin('fga_reset', 'POST', '/v1/admin/fga/reset', 'FgaReset', REST_GRPC),
    kind: 'mutation',
    input: EMPTY,
    output: MESSAGE,
    doc: 'Deletes every model version; refused while tuples exist (failed_precondition). Audited.',
    handler: async (ctx) => adminOf(ctx).fgaReset(callCtx(ctx)),
  }),
];
