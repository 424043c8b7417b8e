/**
 * The super-admin surface: webhooks and their signed, retried deliveries,
 * email templates, the append-only audit log, admin sessions, user
 * management, access revocation, invitations and FGA administration.
 */
export { migrateAdminStore, ADMIN_MIGRATIONS } from './migrations.ts';
export { normalizePagination, DEFAULT_PAGE_LIMIT, MAX_PAGE_LIMIT } from './pagination.ts';
export type { Pagination, PaginationInput } from './pagination.ts';
export { validateEndpoint, isPrivateAddress } from './ssrf.ts';
export type { SsrfPolicy, Resolver, ResolvedAddress, ValidatedEndpoint } from './ssrf.ts';
export { signWebhook, verifyWebhook, computeSignature, WEBHOOK_HEADERS } from './webhook_signature.ts';
export type { VerifyWebhookOptions } from './webhook_signature.ts';
export { WebhookService, WEBHOOK_EVENTS } from './webhooks.ts';
export type { Webhook, WebhookLog, WebhookEvent, WebhookServiceOptions, AddWebhookInput, UpdateWebhookInput, TestEndpointInput } from './webhooks.ts';
export type { WebhookStore, DeliveryRow, DeliveryOutcome } from './webhook_store.ts';
export { SqlWebhookStore } from './webhook_store_sql.ts';
export { AuditLog, SqlAuditLogStore } from './audit_log.ts';
export type { AuditEntry, AuditLogRecord, AuditLogFilter, AuditLogOptions, ActorType, AuditLogStore, AuditMatch, AuditRowContent } from './audit_log.ts';
export {
  EmailTemplates,
  SqlEmailTemplateStore,
  EMAIL_TEMPLATE_EVENTS,
  DEFAULT_EMAIL_TEMPLATES,
  defaultTemplate,
  validateTemplateText,
  renderTemplateText,
} from './email_templates.ts';
export { EMAIL_LANGUAGES, mailLanguage, userMailLanguage } from './email_messages.ts';
export { NOTICE_LANGUAGES, invitationMail, smsCodeText } from './notice_messages.ts';
export type {
  EmailTemplate,
  EmailTemplateEvent,
  EmailRenderData,
  RenderedEmail,
  EmailTemplatesOptions,
  EmailTemplateStore,
} from './email_templates.ts';
export { AdminSessions, ADMIN_COOKIE, MemoryFailureCounter, SqlAdminSessionStore, adminUnauthenticated } from './admin_sessions.ts';
export type { AdminSessionsOptions, AdminCookieAttributes, AdminSessionStore } from './admin_sessions.ts';
export { openAdminStores, type AdminStores } from './admin_stores.ts';
export { DynamoAdminSessionStore, DynamoAuditLogStore, DynamoEmailTemplateStore, DynamoMailOutbox, DynamoWebhookStore } from './dynamo_admin_stores.ts';
export { AdminService, toAdminUser } from './admin_service.ts';
export { checkRedirectUri } from './user_admin.ts';
export type {
  AdminServiceOptions,
  AdminCallContext,
  AdminFailureCounter,
  AdminUser,
  FgaUserTuples,
  IdentityPort,
  MailSink,
  UpdateUserInput,
  VerificationRequest,
} from './admin_service.ts';
export { FGA_DISABLED_MESSAGE, FGA_READ_PAGE_SIZE } from './fga_admin.ts';
export type { FgaTuple, FgaTupleInput } from './fga_admin.ts';
export { WATCH_HEARTBEAT_SECONDS, type FgaWatchEvent, type FgaWatchInput } from './fga_watch.ts';
export { SqlMailOutbox } from './mail_outbox.ts';
export type { OutboxChannel, OutboxMessage } from './mail_outbox.ts';
