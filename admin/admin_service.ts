/**
 * The admin service: every super-admin operation of the spec, each audited,
 * with the webhook events the operations cause. The transports call it
 * through the rows of `server/handlers/admin.ts`; the identity service
 * calls {@link AdminService.userEvent} for the user events it causes
 * (sign-up, login, deactivation, ...).
 *
 * The caller's authentication is done before any method here runs (the
 * transports resolve the principal once); methods receive an
 * {@link AdminCallContext} naming the actor for the audit log.
 */
import { LatchkeyError } from '../engine/errors.ts';
import type { Engine } from '../engine/index.ts';
import { normalizeEmail, sqlDatabase, type MainDatabase, type StoreTransaction, type UserRecord } from '../auth/index.ts';
import { openAdminStores, type AdminStores } from './admin_stores.ts';
import { normalizePagination, type Pagination, type PaginationInput } from './pagination.ts';
import { AdminSessions, type AdminCookieAttributes } from './admin_sessions.ts';
import { AuditLog, type AuditEntry, type AuditLogFilter, type AuditLogRecord, type ActorType } from './audit_log.ts';
import { EmailTemplates, type EmailTemplate, type EmailTemplateEvent } from './email_templates.ts';
import { WebhookService, type AddWebhookInput, type TestEndpointInput, type UpdateWebhookInput, type Webhook, type WebhookEvent, type WebhookLog } from './webhooks.ts';
import {
  fgaDeleteTuples,
  fgaExpand,
  fgaExplain,
  type FgaExplainInput,
  fgaGetModel,
  fgaListModels,
  fgaListUsers,
  fgaReadTuples,
  fgaValidateModel,
  fgaWriteModel,
  fgaWriteTuples,
  requireEngine,
  type DslProblem,
  type FgaTuple,
  type FgaTupleInput,
} from './fga_admin.ts';
import { fgaWatch, type FgaWatchEvent, type FgaWatchInput } from './fga_watch.ts';
import {
  eventUser,
  notFoundUser,
  toAdminUser,
  type AdminCallContext,
  type AdminServiceOptions,
  type AdminUser,
  type IdentityPort,
  type MailSink,
  type UpdateUserInput,
  type VerificationRequest,
} from './admin_types.ts';
import { checkRedirectUri, deleteUserEverywhere, inviteMembers, userUpdateFields } from './user_admin.ts';

export { toAdminUser } from './admin_types.ts';
export type { AdminCallContext, AdminFailureCounter, AdminServiceOptions, AdminUser, FgaUserTuples, IdentityPort, MailSink, UpdateUserInput, VerificationRequest } from './admin_types.ts';

/** All super-admin operations. Build with {@link AdminService.create}. */
export class AdminService {
  readonly sessions: AdminSessions;
  readonly webhooks: WebhookService;
  readonly templates: EmailTemplates;
  readonly audit: AuditLog;
  readonly #o: AdminServiceOptions;
  readonly #clock: () => number;

  readonly #database: MainDatabase;

  private constructor(o: AdminServiceOptions, database: MainDatabase, stores: AdminStores) {
    this.#o = o;
    this.#database = database;
    this.#clock = o.clock ?? Date.now;
    const clock = this.#clock;
    this.sessions = new AdminSessions({
      store: stores.sessions,
      adminSecret: o.adminSecret,
      clock,
      ...(o.sessionTtlMs === undefined ? {} : { ttlMs: o.sessionTtlMs }),
      ...(o.failureCounter === undefined ? {} : { failureCounter: o.failureCounter }),
    });
    this.webhooks = new WebhookService({
      ...o.webhooks,
      store: stores.webhooks,
      signingSecret: o.signingSecret,
      ssrf: { allowPrivate: o.allowPrivateWebhooks ?? false, ...o.ssrf },
      clock,
    });
    this.templates = new EmailTemplates({ store: stores.templates, clock });
    this.audit = new AuditLog({ store: stores.audit, clock });
  }

  /**
   * Runs the admin migrations (SQL) or creates the missing tables (DynamoDB)
   * and builds the service (the delivery worker is not started).
   */
  static async create(options: AdminServiceOptions): Promise<AdminService> {
    if (!options.adminSecret) throw new LatchkeyError('invalid_argument', 'admin secret must not be empty', { reason: 'invalid_option' });
    const database = options.database ?? (options.sequelize ? sqlDatabase(options.sequelize) : undefined);
    if (database === undefined) throw new LatchkeyError('invalid_argument', 'the admin service needs a database', { reason: 'invalid_option' });
    return new AdminService(options, database, await openAdminStores(database));
  }

  /** The mail sink (the mail queue), or undefined when no SMTP server is configured. */
  get mail(): MailSink | undefined {
    return this.#o.mail;
  }

  /** Starts the webhook delivery worker. */
  start(): void {
    this.webhooks.start();
  }

  /** Stops the delivery worker (waits for attempts in flight). */
  async close(): Promise<void> {
    await this.webhooks.stop();
  }

  get #engine(): Engine | undefined {
    const e = this.#o.engine;
    return typeof e === 'function' ? e() : e;
  }

  get #identity(): IdentityPort {
    const id = this.#o.identity;
    if (!id) throw new LatchkeyError('unavailable', 'the identity service is not available', { reason: 'identity_unavailable' });
    return id;
  }

  // ------------------------------------------------------------ audit helpers

  async #audit(ctx: AdminCallContext, action: string, resource: { type?: string; id?: string } = {}, metadata: Record<string, unknown> = {}): Promise<void> {
    await this.audit.record({
      actor_type: 'admin',
      actor_id: 'super_admin',
      action,
      resource_type: resource.type,
      resource_id: resource.id,
      ip_address: ctx.ip,
      user_agent: ctx.userAgent,
      metadata: { ...metadata, ...(ctx.via ? { via: ctx.via } : {}), ...(ctx.protocol ? { protocol: ctx.protocol } : {}) },
    });
  }

  /**
   * Runs an admin operation and audits it: `action` on success; on failure
   * the same action with metadata `outcome: error`, `error` (the code) and
   * `reason` (the error is rethrown).
   */
  async #run<T>(ctx: AdminCallContext, action: string, resource: { type?: string; id?: string }, fn: () => Promise<T>, meta: Record<string, unknown> = {}): Promise<T> {
    try {
      const out = await fn();
      await this.#audit(ctx, action, resource, meta);
      return out;
    } catch (err) {
      const code = err instanceof LatchkeyError ? err.code : 'internal';
      const reason = err instanceof LatchkeyError ? err.reason : undefined;
      await this.#audit(ctx, action, resource, { ...meta, outcome: 'error', error: code, ...(reason ? { reason } : {}) }).catch(() => {});
      throw err;
    }
  }

  /**
   * Records a security-relevant user event (sign-up, login success/failure,
   * logout, password reset, deactivation, ...) and, for the events that have
   * one, queues the webhook. Called by the identity service; never throws
   * into it (failures are reported to `onError`).
   */
  async userEvent(
    entry: Omit<AuditEntry, 'actor_type'> & { actor_type?: ActorType },
    webhook?: { event: WebhookEvent; user: UserRecord } | undefined,
    onError: (err: unknown) => void = () => {},
  ): Promise<void> {
    try {
      await this.audit.record({ ...entry, actor_type: entry.actor_type ?? 'user' });
      if (webhook) await this.webhooks.emit(webhook.event, { user: eventUser(webhook.user) });
    } catch (err) {
      onError(err);
    }
  }

  /**
   * Records a user event and queues its webhook inside `transaction`, the
   * SQL transaction of the change that caused it (sign-up: the user's
   * rows), so that the change, its audit row and its deliveries commit
   * together or not at all (security matrix E3). Unlike {@link userEvent} it
   * throws, so that a failure rolls the change back. The audit row is written
   * last: it holds the chain head until the transaction commits.
   */
  async userEventInTransaction(
    transaction: StoreTransaction,
    entry: Omit<AuditEntry, 'actor_type'> & { actor_type?: ActorType },
    webhook?: { event: WebhookEvent; user: UserRecord } | undefined,
  ): Promise<void> {
    if (webhook) await this.webhooks.emit(webhook.event, { user: eventUser(webhook.user) }, transaction);
    await this.audit.record({ ...entry, actor_type: entry.actor_type ?? 'user' }, transaction);
  }

  // ------------------------------------------------------------ admin session

  /**
   * `admin_login`: checks the secret (rate limited per IP) and opens a
   * session; the caller sets the cookie. Audited as `admin.login_success` /
   * `admin.login_failed`.
   */
  async adminLogin(ctx: AdminCallContext, adminSecret: string, cookieSecure: boolean): Promise<{ message: string; token: string; cookie: AdminCookieAttributes }> {
    try {
      const { token } = await this.sessions.login(adminSecret, ctx.ip);
      await this.#audit(ctx, 'admin.login_success', { type: 'admin_session' });
      return { message: 'admin logged in successfully', token, cookie: this.sessions.cookieAttributes(cookieSecure) };
    } catch (err) {
      const reason = err instanceof LatchkeyError ? (err.reason ?? err.code) : 'internal';
      await this.#audit(ctx, 'admin.login_failed', { type: 'admin_session' }, { reason }).catch(() => {});
      throw err;
    }
  }

  /** `admin_logout`: ends the session of the presented cookie. */
  async adminLogout(ctx: AdminCallContext, cookie: string | undefined): Promise<{ message: string }> {
    await this.sessions.logout(cookie);
    await this.#audit(ctx, 'admin.logout', { type: 'admin_session' });
    return { message: 'admin logged out successfully' };
  }

  /**
   * `admin_session`: with a cookie, verifies and slides the session (throws
   * `unauthenticated` when it is not live); with the header secret, there is
   * no session to extend and the call just confirms the credentials.
   */
  async adminSession(ctx: AdminCallContext, cookie: string | undefined, cookieSecure: boolean): Promise<{ message: string; cookie?: AdminCookieAttributes }> {
    if (ctx.via === 'admin_cookie' || (cookie !== undefined && ctx.via !== 'admin_secret_header')) {
      await this.sessions.refresh(cookie);
      return { message: 'admin session is valid', cookie: this.sessions.cookieAttributes(cookieSecure) };
    }
    return { message: 'admin session is valid' };
  }

  // ------------------------------------------------------------ users

  /** `users`: a page of users, oldest first. */
  async users(ctx: AdminCallContext, pagination?: PaginationInput | null): Promise<{ users: AdminUser[]; pagination: Pagination }> {
    const p = normalizePagination(pagination);
    return this.#run(ctx, 'admin.users_listed', { type: 'user' }, async () => {
      const page = await this.#identity.users.list({ offset: p.offset, limit: p.limit });
      return { users: page.users.map(toAdminUser), pagination: { ...p, total: page.total } };
    });
  }

  async #findUser(input: { id?: string | undefined; email?: string | undefined }): Promise<UserRecord> {
    if (!input.id && !input.email) throw new LatchkeyError('invalid_argument', 'id or email is required', { reason: 'missing_user_identifier' });
    const store = this.#identity.users;
    const user = input.id ? await store.findById(input.id) : await store.findByEmail(input.email!);
    if (!user || (input.id && input.email && user.email !== normalizeEmail(input.email))) throw notFoundUser();
    return user;
  }

  /** `user`: one user by id or email. Throws `not_found`. */
  async user(ctx: AdminCallContext, input: { id?: string | undefined; email?: string | undefined }): Promise<AdminUser> {
    return this.#run(ctx, 'admin.user_viewed', { type: 'user', ...(input.id ? { id: input.id } : {}) }, async () => toAdminUser(await this.#findUser(input)));
  }

  /**
   * `update_user`: changes every given field. Roles must be among the
   * allowed roles (`invalid_argument`, reason `invalid_roles`); a taken email
   * or phone number fails with `already_exists` and the spec's message.
   */
  async updateUser(ctx: AdminCallContext, input: UpdateUserInput): Promise<AdminUser> {
    return this.#run(ctx, 'admin.user_updated', { type: 'user', id: input.id }, async () => {
      const current = await this.#identity.users.findById(input.id);
      if (!current) throw notFoundUser();
      const fields = userUpdateFields(current, input, this.#o.allowedRoles, Math.floor(this.#clock() / 1000));
      const updated = Object.keys(fields).length === 0 ? current : await this.#identity.users.update(input.id, fields);
      // Changed roles must not live on in existing sessions.
      if (fields.roles && fields.roles.join(',') !== current.roles.join(',')) await this.#identity.endAllSessions(input.id);
      return toAdminUser(updated);
    }, { fields: Object.keys(input).filter((k) => k !== 'id') });
  }

  /** `delete_user` (by email): see {@link deleteUserEverywhere} for what goes, in which transaction. */
  async deleteUser(ctx: AdminCallContext, email: string): Promise<{ message: string }> {
    const resource: { type: string; id?: string } = { type: 'user' };
    return this.#run(ctx, 'admin.user_deleted', resource, async () => {
      const user = await this.#identity.users.findByEmail(email);
      if (!user) throw notFoundUser();
      resource.id = user.id;
      const fga = this.#o.fgaUserTuples;
      await deleteUserEverywhere(
        { database: this.#database, identity: this.#identity, webhooks: this.webhooks, engine: this.#engine, fga: typeof fga === 'function' ? fga() : fga },
        user,
      );
      return { message: 'user deleted successfully' };
    });
  }

  /** `verification_requests`: pending verifications, paginated. */
  async verificationRequests(ctx: AdminCallContext, pagination?: PaginationInput | null): Promise<{ verification_requests: VerificationRequest[]; pagination: Pagination }> {
    const p = normalizePagination(pagination);
    return this.#run(ctx, 'admin.verification_requests_listed', { type: 'verification_request' }, async () => {
      const list = this.#identity.listVerificationRequests;
      if (!list) return { verification_requests: [], pagination: { ...p, total: 0 } };
      const page = await list.call(this.#identity, { offset: p.offset, limit: p.limit });
      return { verification_requests: page.verification_requests, pagination: { ...p, total: page.total } };
    });
  }

  /**
   * `revoke_access`: sets `revoked_timestamp`, ends every session and refresh
   * token of the user at once, fires `user.access_revoked`. Revoking a user
   * already revoked is refused with `failed_precondition` (reason
   * `access_already_revoked`) and changes nothing.
   */
  async revokeAccess(ctx: AdminCallContext, userId: string): Promise<{ message: string }> {
    return this.#run(ctx, 'admin.access_revoked', { type: 'user', id: userId }, async () => {
      const user = await this.#identity.users.findById(userId);
      if (!user) throw notFoundUser();
      if (user.revoked_timestamp !== null) {
        throw new LatchkeyError('failed_precondition', 'user access is already revoked', { reason: 'access_already_revoked' });
      }
      const updated = await this.#identity.users.update(userId, { revoked_timestamp: Math.floor(this.#clock() / 1000) });
      await this.#identity.endAllSessions(userId);
      await this.webhooks.emit('user.access_revoked', { user: eventUser(updated) });
      return { message: 'user access revoked successfully' };
    });
  }

  /**
   * `enable_access`: clears `revoked_timestamp` and fires
   * `user.access_enabled`. Enabling a user that is not revoked is refused
   * with `failed_precondition` (reason `access_not_revoked`).
   */
  async enableAccess(ctx: AdminCallContext, userId: string): Promise<{ message: string }> {
    return this.#run(ctx, 'admin.access_enabled', { type: 'user', id: userId }, async () => {
      const user = await this.#identity.users.findById(userId);
      if (!user) throw notFoundUser();
      if (user.revoked_timestamp === null) {
        throw new LatchkeyError('failed_precondition', 'user access is not revoked', { reason: 'access_not_revoked' });
      }
      const updated = await this.#identity.users.update(userId, { revoked_timestamp: null });
      await this.webhooks.emit('user.access_enabled', { user: eventUser(updated) });
      return { message: 'user access enabled successfully' };
    });
  }

  /** Checks a redirect URI against `--allowed-origins` (see {@link checkRedirectUri}). */
  checkRedirectUri(uri: string): URL {
    return checkRedirectUri(uri, this.#o.allowedOrigins, this.#o.publicUrl);
  }

  /**
   * `invite_members`: creates an unverified user for each new email and
   * mails each an invitation link (template `invite_member`); emails of
   * existing users are reported, not duplicated, and get no mail. Works with
   * sign-up disabled. Throws `failed_precondition` (reason `mail_disabled`)
   * when no mail sender is configured, `invalid_argument` for bad emails or
   * a redirect URI outside the allowed origins.
   */
  async inviteMembers(ctx: AdminCallContext, input: { emails: string[]; redirect_uri?: string | undefined }): Promise<{ message: string; users: AdminUser[]; existing: string[] }> {
    return this.#run(ctx, 'admin.invite_sent', { type: 'user' }, async () => {
      const { created, existing } = await inviteMembers(
        {
          identity: this.#identity,
          mail: this.#o.mail,
          templates: this.templates,
          webhooks: this.webhooks,
          defaultRoles: this.#o.defaultRoles,
          organization: this.#o.organization ?? { name: 'Latchkey', logo: '' },
          redirect: (uri) => {
            const redirect = uri ?? this.#o.publicUrl;
            if (!redirect) throw new LatchkeyError('invalid_argument', 'redirect_uri is required', { reason: 'invalid_redirect_uri' });
            return this.checkRedirectUri(redirect);
          },
        },
        input,
      );
      return {
        message: created.length > 0 ? `invitation sent to ${created.length} member(s)` : 'no new members to invite',
        users: created.map(toAdminUser),
        existing,
      };
    }, { count: input.emails.length });
  }

  // ------------------------------------------------------------ webhooks

  async addWebhook(ctx: AdminCallContext, input: AddWebhookInput): Promise<{ message: string; webhook: Webhook }> {
    return this.#run(ctx, 'admin.webhook_created', { type: 'webhook' }, async () => {
      const webhook = await this.webhooks.add(input);
      return { message: 'webhook added successfully', webhook };
    }, { event_name: input.event_name });
  }

  async updateWebhook(ctx: AdminCallContext, input: UpdateWebhookInput): Promise<{ message: string; webhook: Webhook }> {
    return this.#run(ctx, 'admin.webhook_updated', { type: 'webhook', id: input.id }, async () => {
      const webhook = await this.webhooks.update(input);
      return { message: 'webhook updated successfully', webhook };
    });
  }

  async deleteWebhook(ctx: AdminCallContext, id: string): Promise<{ message: string }> {
    return this.#run(ctx, 'admin.webhook_deleted', { type: 'webhook', id }, async () => {
      await this.webhooks.delete(id);
      return { message: 'webhook deleted successfully' };
    });
  }

  async getWebhook(ctx: AdminCallContext, id: string): Promise<Webhook> {
    return this.#run(ctx, 'admin.webhook_viewed', { type: 'webhook', id }, () => this.webhooks.get(id));
  }

  async listWebhooks(ctx: AdminCallContext, pagination?: PaginationInput | null): Promise<{ webhooks: Webhook[]; pagination: Pagination }> {
    return this.#run(ctx, 'admin.webhooks_listed', { type: 'webhook' }, () => this.webhooks.list(pagination));
  }

  async webhookLogs(ctx: AdminCallContext, input: { pagination?: PaginationInput | null | undefined; webhook_id?: string | undefined }): Promise<{ webhook_logs: WebhookLog[]; pagination: Pagination }> {
    return this.#run(ctx, 'admin.webhook_logs_listed', { type: 'webhook', ...(input.webhook_id ? { id: input.webhook_id } : {}) }, () => this.webhooks.logs(input));
  }

  async testEndpoint(ctx: AdminCallContext, input: TestEndpointInput): Promise<{ http_status: number; response: string }> {
    return this.#run(ctx, 'admin.webhook_endpoint_tested', { type: 'webhook' }, () => this.webhooks.testEndpoint(input), { event_name: input.event_name });
  }

  // ------------------------------------------------------------ email templates

  async addEmailTemplate(ctx: AdminCallContext, input: { event_name: string; language?: string | undefined; subject: string; template: string; design?: string | undefined }): Promise<{ message: string; email_template: EmailTemplate }> {
    return this.#run(ctx, 'admin.email_template_created', { type: 'email_template' }, async () => ({
      message: 'email template added successfully',
      email_template: await this.templates.add(input),
    }), { event_name: input.event_name, language: input.language ?? '' });
  }

  async updateEmailTemplate(ctx: AdminCallContext, input: { id: string; event_name?: string | undefined; language?: string | undefined; subject?: string | undefined; template?: string | undefined; design?: string | undefined }): Promise<{ message: string; email_template: EmailTemplate }> {
    return this.#run(ctx, 'admin.email_template_updated', { type: 'email_template', id: input.id }, async () => ({
      message: 'email template updated successfully',
      email_template: await this.templates.update(input),
    }));
  }

  async deleteEmailTemplate(ctx: AdminCallContext, id: string): Promise<{ message: string }> {
    return this.#run(ctx, 'admin.email_template_deleted', { type: 'email_template', id }, async () => {
      await this.templates.delete(id);
      return { message: 'email template deleted successfully' };
    });
  }

  async emailTemplates(ctx: AdminCallContext, pagination?: PaginationInput | null): Promise<{ email_templates: EmailTemplate[]; pagination: Pagination }> {
    return this.#run(ctx, 'admin.email_templates_listed', { type: 'email_template' }, () => this.templates.list(pagination));
  }

  /** Renders the mail of a template event (stored template, or the default in `language`). */
  renderEmail(event: EmailTemplateEvent, user: UserRecord, extra: { verification_url?: string; otp?: string } = {}, language = 'en') {
    return this.templates.render(
      event,
      {
        user: eventUser(user),
        organization: this.#o.organization ?? { name: 'Latchkey', logo: '' },
        ...extra,
      },
      language,
    );
  }

  // ------------------------------------------------------------ audit log

  /** `audit_logs`: filtered by actor id, action and resource; newest first. Reading is not itself audited (it would grow the log it reads). */
  async auditLogs(_ctx: AdminCallContext, filter: AuditLogFilter): Promise<{ audit_logs: AuditLogRecord[]; pagination: Pagination }> {
    return this.audit.list(filter);
  }

  // ------------------------------------------------------------ FGA

  async fgaGetModel(ctx: AdminCallContext): Promise<{ id: string; dsl: string }> {
    return this.#run(ctx, 'admin.fga_model_viewed', { type: 'fga_model' }, () => fgaGetModel(requireEngine(this.#engine)));
  }

  async fgaWriteModel(ctx: AdminCallContext, dsl: string): Promise<{ id: string; dsl: string }> {
    return this.#run(ctx, 'admin.fga_model_written', { type: 'fga_model' }, () => fgaWriteModel(requireEngine(this.#engine), dsl));
  }

  /** Checks DSL without installing it. Not audited: the dashboard calls it as the model is typed, and it reads and changes nothing. */
  fgaValidateModel(dsl: string): Promise<{ valid: boolean; errors: DslProblem[] }> {
    return fgaValidateModel(dsl);
  }

  async fgaListModels(ctx: AdminCallContext, input: Parameters<typeof fgaListModels>[1]): ReturnType<typeof fgaListModels> {
    return this.#run(ctx, 'admin.fga_models_listed', { type: 'fga_model' }, () => fgaListModels(requireEngine(this.#engine), input));
  }

  async fgaWriteTuples(ctx: AdminCallContext, tuples: FgaTupleInput[]): Promise<{ message: string; consistency_token: string }> {
    return this.#run(ctx, 'admin.fga_tuples_written', { type: 'fga_tuple' }, async () => {
      const { revision } = await fgaWriteTuples(requireEngine(this.#engine), tuples);
      return { message: 'tuples written successfully', consistency_token: String(revision) };
    }, { count: tuples.length, tuples: tuples.slice(0, 20) });
  }

  async fgaDeleteTuples(ctx: AdminCallContext, tuples: FgaTupleInput[]): Promise<{ message: string; consistency_token: string }> {
    return this.#run(ctx, 'admin.fga_tuples_deleted', { type: 'fga_tuple' }, async () => {
      const { revision } = await fgaDeleteTuples(requireEngine(this.#engine), tuples);
      return { message: 'tuples deleted successfully', consistency_token: String(revision) };
    }, { count: tuples.length, tuples: tuples.slice(0, 20) });
  }

  async fgaDeleteTuplesByFilter(
    ctx: AdminCallContext,
    input: { user?: string | undefined; relation?: string | undefined; object?: string | undefined; object_type?: string | undefined },
  ): Promise<{ message: string; deleted: number; batches: number; consistency_token: string }> {
    const filter = { ...(input.user ? { user: input.user } : {}), ...(input.relation ? { relation: input.relation } : {}), ...(input.object ? { object: input.object } : {}), ...(input.object_type ? { object_type: input.object_type } : {}) };
    // The audit entry records how far it got, also when a later batch fails (every finished batch stays deleted).
    const progress = { filter, deleted: 0, batches: 0 };
    return this.#run(ctx, 'admin.fga_tuples_deleted_by_filter', { type: 'fga_tuple' }, async () => {
      const r = await requireEngine(this.#engine).deleteTuplesByFilter(
        { ...(input.user ? { user: input.user } : {}), ...(input.relation ? { relation: input.relation } : {}), ...(input.object ? { object: input.object } : {}), ...(input.object_type ? { objectType: input.object_type } : {}) },
        {
          onProgress: (p) => {
            progress.deleted = p.deleted;
            progress.batches = p.batches;
          },
        },
      );
      return { message: `${r.deleted} tuples deleted`, deleted: r.deleted, batches: r.batches, consistency_token: String(r.revision) };
    }, progress);
  }

  async fgaReadTuples(ctx: AdminCallContext, input: Parameters<typeof fgaReadTuples>[1]): Promise<{ tuples: FgaTuple[]; continuation_token: string }> {
    return this.#run(ctx, 'admin.fga_tuples_read', { type: 'fga_tuple' }, () => fgaReadTuples(requireEngine(this.#engine), input));
  }

  async fgaListUsers(ctx: AdminCallContext, input: Parameters<typeof fgaListUsers>[1]): Promise<{ users: string[]; continuation_token: string; deadline_exceeded: boolean }> {
    return this.#run(ctx, 'admin.fga_users_listed', { type: 'fga_tuple', id: input.object }, () => fgaListUsers(requireEngine(this.#engine), input));
  }

  async fgaExpand(ctx: AdminCallContext, input: { relation: string; object: string }): Promise<{ tree: string }> {
    return this.#run(ctx, 'admin.fga_expanded', { type: 'fga_tuple', id: input.object }, () => fgaExpand(requireEngine(this.#engine), input));
  }

  /** `fga_explain` (see {@link fgaExplain}). Audited as `admin.fga_explained`. */
  async fgaExplain(ctx: AdminCallContext, input: FgaExplainInput): ReturnType<typeof fgaExplain> {
    return this.#run(ctx, 'admin.fga_explained', { type: 'fga_tuple', id: input.object }, () => fgaExplain(requireEngine(this.#engine), input));
  }

  /**
   * `watch_fga` (see admin/fga_watch.ts): the change feed until `signal`
   * aborts. Audited as `admin.fga_watch_started` when it starts (refusals
   * included); the changes it delivers are not audited one by one.
   */
  async fgaWatch(ctx: AdminCallContext, input: FgaWatchInput, signal: AbortSignal): Promise<AsyncIterable<FgaWatchEvent>> {
    return this.#run(ctx, 'admin.fga_watch_started', { type: 'fga_tuple' }, () => fgaWatch(requireEngine(this.#engine), input, signal), {
      ...(input.start_token === undefined ? {} : { start_token: input.start_token }),
      ...(input.object_type === undefined ? {} : { object_type: input.object_type }),
    });
  }

  /**
   * `fga_reset`: deletes every model version. Refused with
   * `failed_precondition` (reason `tuples_exist`) while any tuple exists.
   * Audited as `admin.fga_reset`, refusals included.
   */
  async fgaReset(ctx: AdminCallContext): Promise<{ message: string }> {
    return this.#run(ctx, 'admin.fga_reset', { type: 'fga_model' }, async () => {
      await requireEngine(this.#engine).reset();
      return { message: 'authorization model reset successfully' };
    });
  }
}
