/**
 * The work behind the admin user operations that span several stores:
 * `update_user` field rules, `delete_user` (user row, owned data, FGA tuples
 * and sessions), `invite_members` and the redirect URI rule. The admin
 * service wraps each in its audit record.
 */
import type { Transaction } from 'sequelize';
import { LatchkeyError } from '../engine/errors.ts';
import type { Engine } from '../engine/index.ts';
import { fgaSubjectsOfUser, inTransaction as runInTransaction, normalizeEmail, type MainDatabase, type UserFields, type UserRecord } from '../auth/index.ts';
import type { EmailTemplates } from './email_templates.ts';
import type { WebhookService } from './webhooks.ts';
import { EMAIL_RE, eventUser, type FgaUserTuples, type IdentityPort, type MailSink, type UpdateUserInput } from './admin_types.ts';

const MAX_INVITES = 50;

/**
 * The stored fields `update_user` changes. Roles must be among `allowedRoles`
 * (`invalid_argument`, reason `invalid_roles`); an email must look like one.
 */
export function userUpdateFields(current: UserRecord, input: UpdateUserInput, allowedRoles: readonly string[], nowSeconds: number): UserFields {
  const fields: UserFields = {};
  if (input.email !== undefined) {
    // Checked in the form it is stored in (a fullwidth `＠` is an `@`); an invisible character is refused there.
    const email = normalizeEmail(input.email) ?? '';
    if (email.length > 320 || !EMAIL_RE.test(email)) throw new LatchkeyError('invalid_argument', 'invalid email address', { reason: 'invalid_email' });
    fields.email = email;
  }
  if (input.email_verified !== undefined) fields.email_verified_at = input.email_verified ? (current.email_verified_at ?? nowSeconds) : null;
  if (input.phone_number !== undefined) fields.phone_number = input.phone_number === '' ? null : input.phone_number;
  if (input.phone_number_verified !== undefined) fields.phone_number_verified_at = input.phone_number_verified ? (current.phone_number_verified_at ?? nowSeconds) : null;
  for (const key of ['given_name', 'family_name', 'middle_name', 'nickname', 'gender', 'birthdate', 'picture'] as const) {
    const v = input[key];
    if (v !== undefined) fields[key] = v;
  }
  if (input.roles !== undefined) {
    const bad = input.roles.filter((r) => !allowedRoles.includes(r));
    if (bad.length > 0 || input.roles.length === 0) {
      throw new LatchkeyError('invalid_argument', `invalid roles: ${bad.join(', ') || '(empty)'}`, { reason: 'invalid_roles', details: { allowed: [...allowedRoles] } });
    }
    fields.roles = [...new Set(input.roles)];
  }
  if (input.is_multi_factor_auth_enabled !== undefined) fields.is_multi_factor_auth_enabled = input.is_multi_factor_auth_enabled;
  if (input.app_data !== undefined) fields.app_data = input.app_data;
  return fields;
}

export interface DeleteUserDeps {
  database: MainDatabase;
  identity: IdentityPort;
  webhooks: WebhookService;
  engine: Engine | undefined;
  fga: FgaUserTuples | undefined;
  /** Waits between retries of the engine-side tuple deletion (default: real timers). */
  sleep?: (ms: number) => Promise<void>;
}

/** Pauses before the 2nd, 3rd and 4th attempt of a tuple deletion through the engine. */
const ENGINE_RETRY_MS = [100, 400, 1600];

/**
 * `delete_user`. In one transaction: the user's FGA tuples (when the FGA
 * store shares the main database), its owned data (OTPs, verification
 * requests), the user row and the `user.deleted` webhook. A failure at any
 * step rolls all of it back. After the commit, every session and refresh
 * token ends, and the in-process FGA mirror and answer cache are brought
 * current before this returns, so no cached allow outlives the call.
 *
 * When FGA lives elsewhere (the memory store or another database), the
 * tuples are deleted through the engine right after the commit, retried up to
 * four times; if that still fails the call fails with `unavailable` (reason
 * `fga_cleanup_failed`): the user is gone and can no longer sign in, and the
 * leftover tuples name a user id that is never reused, so they grant nothing
 * to anyone; an operator removes them with `fga_delete_tuples_by_filter`.
 */
export async function deleteUserEverywhere(d: DeleteUserDeps, user: UserRecord): Promise<void> {
  const subjects = fgaSubjectsOfUser(user.id);
  const inTransaction = d.engine !== undefined ? d.fga?.deleteInTransaction : undefined;
  await runInTransaction(d.database, async (transaction) => {
    if (inTransaction) await inTransaction(subjects, transaction as Transaction);
    if (d.identity.deleteUserData) await d.identity.deleteUserData(user, transaction);
    await d.identity.users.delete(user.id, { transaction });
    await d.webhooks.emit('user.deleted', { user: eventUser(user) }, transaction);
  });
  await d.identity.endAllSessions(user.id);
  if (d.engine === undefined) return;
  if (inTransaction) {
    await d.fga!.refresh();
    return;
  }
  await deleteThroughEngine(d.engine, subjects, d.sleep ?? ((ms) => new Promise((r) => setTimeout(r, ms))));
}

async function deleteThroughEngine(engine: Engine, subjects: readonly string[], sleep: (ms: number) => Promise<void>): Promise<void> {
  let last: unknown;
  for (let attempt = 0; attempt <= ENGINE_RETRY_MS.length; attempt++) {
    if (attempt > 0) await sleep(ENGINE_RETRY_MS[attempt - 1]!);
    try {
      // Bounded batches by filter: a partial earlier attempt left only the rest.
      for (const subject of subjects) await engine.deleteTuplesByFilter({ user: subject });
      return;
    } catch (err) {
      last = err;
    }
  }
  throw new LatchkeyError('unavailable', 'the user was deleted, but its FGA tuples could not be removed; delete them with fga_delete_tuples_by_filter', {
    reason: 'fga_cleanup_failed',
    cause: last,
  });
}

/**
 * Checks a redirect URI against `--allowed-origins`: an absolute http(s)
 * URL without credentials whose origin is listed; under `*`, any origin
 * unless the server's public URL is known, then only that origin. Throws
 * `invalid_argument` (reason `invalid_redirect_uri`).
 */
export function checkRedirectUri(uri: string, allowedOrigins: readonly string[], publicUrl: string | undefined): URL {
  const bad = (): LatchkeyError => new LatchkeyError('invalid_argument', 'invalid redirect_uri', { reason: 'invalid_redirect_uri' });
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    throw bad();
  }
  if ((url.protocol !== 'https:' && url.protocol !== 'http:') || url.username || url.password || !url.hostname) throw bad();
  if (allowedOrigins.includes('*')) {
    if (publicUrl && new URL(publicUrl).origin !== url.origin) throw bad();
    return url;
  }
  const ok = allowedOrigins.some((o) => {
    if (o.startsWith('*.') || o.includes('://*.')) {
      const suffix = o.slice(o.indexOf('*.') + 1);
      const scheme = o.includes('://') ? o.slice(0, o.indexOf('://') + 1) : undefined;
      return url.hostname.endsWith(suffix) && url.hostname.length > suffix.length && (!scheme || url.protocol === scheme);
    }
    try {
      return new URL(o).origin === url.origin;
    } catch {
      return false;
    }
  });
  if (!ok) throw bad();
  return url;
}

export interface InviteDeps {
  identity: IdentityPort;
  mail: MailSink | undefined;
  templates: EmailTemplates;
  webhooks: WebhookService;
  defaultRoles: readonly string[];
  organization: { name: string; logo: string };
  /** The checked redirect URI (see {@link checkRedirectUri}). */
  redirect: (uri: string | undefined) => URL;
}

/**
 * `invite_members`: creates an unverified user for each new email, records
 * its invitation (a verification request with a one-time token) and mails
 * the link; emails of existing users are reported, not duplicated, and get
 * no mail.
 */
export async function inviteMembers(d: InviteDeps, input: { emails: string[]; redirect_uri?: string | undefined }): Promise<{ created: UserRecord[]; existing: string[] }> {
  const mail = d.mail;
  if (!mail) throw new LatchkeyError('failed_precondition', 'email sending is not configured', { reason: 'mail_disabled' });
  if (input.emails.length === 0 || input.emails.length > MAX_INVITES) {
    throw new LatchkeyError('invalid_argument', `emails must have 1 to ${MAX_INVITES} entries`, { reason: 'invalid_emails' });
  }
  const emails = [...new Set(input.emails.map((e) => normalizeEmail(e) ?? ''))];
  const invalid = emails.filter((e) => !EMAIL_RE.test(e));
  if (invalid.length > 0) throw new LatchkeyError('invalid_argument', 'invalid email address', { reason: 'invalid_email', details: { emails: invalid } });
  const redirectUrl = d.redirect(input.redirect_uri);
  const identity = d.identity;
  const created: UserRecord[] = [];
  const existing: string[] = [];
  for (const email of emails) {
    if (await identity.users.findByEmail(email)) {
      existing.push(email);
      continue;
    }
    let user: UserRecord;
    try {
      user = await identity.users.create({ email, roles: [...d.defaultRoles], signup_methods: 'basic_auth' });
    } catch (err) {
      if (err instanceof LatchkeyError && err.code === 'already_exists') {
        existing.push(email);
        continue;
      }
      throw err;
    }
    created.push(user);
    let link: string;
    if (identity.createInvitation) link = await identity.createInvitation(user, redirectUrl.toString());
    else {
      const u = new URL(redirectUrl);
      u.searchParams.set('email', email);
      link = u.toString();
    }
    const rendered = await d.templates.render('invite_member', { user: eventUser(user), organization: d.organization, verification_url: link });
    mail.enqueue({ to: email, subject: rendered.subject, html: rendered.html });
    await d.webhooks.emit('user.created', { user: eventUser(user) });
  }
  return { created, existing };
}
