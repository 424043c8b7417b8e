/**
 * The shapes the admin service is built from and works on: its options, the
 * ports to the identity service, the FGA store and the mail queue, and the
 * records of the user operations.
 */
import type { Transaction } from 'sequelize';
import type { SqlDatabase } from '../engine/sql/sql_database.ts';
import { LatchkeyError } from '../engine/errors.ts';
import type { Engine } from '../engine/index.ts';
import { toPublicUser, type MainDatabase, type PublicUser, type StoreTransaction, type UserFields, type UserRecord } from '../auth/index.ts';
import type { WebhookServiceOptions } from './webhooks.ts';
import type { SsrfPolicy } from './ssrf.ts';

/** The User shape of the admin user operations: the same public User as the identity operations. */
export type AdminUser = PublicUser;

/**
 * A pending verification (sign-up email verification, password reset, magic
 * link, invitation). `token` is always null: only a digest of the token is
 * stored, so a live link can never be read back (not even by an admin).
 */
export interface VerificationRequest {
  id: string;
  /** The kind: `basic_auth_signup`, `forgot_password`, `magic_link_login`, `invite_member`, ... */
  identifier: string;
  token: string | null;
  email: string;
  /** Unix seconds. */
  expires: number;
  created_at: number;
  updated_at: number;
  nonce: string;
  redirect_uri: string;
}

/**
 * What the admin needs from the identity service. The auth service's own
 * methods have these names, so the composition root can pass it as is; the
 * optional members degrade as documented on each.
 */
export interface IdentityPort {
  readonly users: {
    findById(id: string): Promise<UserRecord | undefined>;
    findByEmail(email: string): Promise<UserRecord | undefined>;
    create(fields: UserFields): Promise<UserRecord>;
    update(id: string, fields: UserFields): Promise<UserRecord>;
    delete(id: string, options?: { transaction?: StoreTransaction }): Promise<boolean>;
    list(page: { offset: number; limit: number }): Promise<{ users: UserRecord[]; total: number }>;
  };
  /** Ends every session and refresh token of the user at once. */
  endAllSessions(userId: string): Promise<number>;
  /** Removes the user's OTPs, verification requests and other owned rows inside `transaction` (skipped when absent). */
  deleteUserData?(user: UserRecord, transaction: StoreTransaction): Promise<void>;
  /** Pending verification requests (an empty list when absent: no verification data exists). */
  listVerificationRequests?(page: { offset: number; limit: number }): Promise<{ verification_requests: VerificationRequest[]; total: number }>;
  /**
   * Creates the invitation (a verification request) of a new user and
   * returns the link to mail. When absent, the mail links to `redirect_uri`
   * with the email as a query parameter.
   */
  createInvitation?(user: UserRecord, redirectUri: string): Promise<string>;
}

/**
 * The FGA side of `delete_user`. When the FGA store shares the main
 * database, `deleteInTransaction` removes the users' tuples inside the
 * user-deletion transaction; `refresh` then makes the in-process mirror and
 * answer cache current after the commit.
 */
export interface FgaUserTuples {
  deleteInTransaction?: ((users: readonly string[], transaction: Transaction) => Promise<number>) | undefined;
  refresh(): Promise<void>;
}

/** Where mail goes (the mail queue): must return at once and never throw. */
export interface MailSink {
  enqueue(message: { to: string; subject: string; html: string }): string;
  /** Queues the mail inside the caller's database transaction (see `MailQueue.enqueueIn`); throws what the write throws. */
  enqueueIn?(message: { to: string; subject: string; html: string }, transaction: { afterCommit(fn: () => void): void }): Promise<string>;
  /** Claims no more mails (shutdown has begun); the ones being sent finish (see `MailQueue.stop`). */
  stop?(): void;
}

/** Who is calling, for the audit log. */
export interface AdminCallContext {
  ip: string;
  userAgent: string;
  /** `admin_secret_header`, `admin_cookie`, or `anonymous` for `admin_login`. */
  via?: string | undefined;
  /** The protocol of the call (kept in audit metadata). */
  protocol?: string | undefined;
}

/** Where wrong admin secrets are counted (the default counts in process). */
export interface AdminFailureCounter {
  /**
   * Reserves one failure slot for `key`; resolves to the seconds to wait
   * when the key is over its limit (nothing was reserved), else undefined.
   */
  reserve(key: string): Promise<number | undefined>;
  /** Gives back a slot reserved by {@link reserve} (the secret was right). */
  release(key: string): Promise<void>;
}

export interface AdminServiceOptions {
  /** The SQL main database; ignored when `database` is given. */
  sequelize?: SqlDatabase | undefined;
  /** The main database (SQL or DynamoDB); default: `sequelize`. */
  database?: MainDatabase | undefined;
  adminSecret: string;
  /** Key of the webhook signatures (the client secret). */
  signingSecret: string;
  /** `--webhook-allow-private-networks`. */
  allowPrivateWebhooks?: boolean;
  /** Overrides of the SSRF policy (tests: resolver, classifier). */
  ssrf?: Partial<SsrfPolicy>;
  identity?: IdentityPort | undefined;
  /** The FGA engine, or a function returning it (so a late-plugged engine is seen); undefined: FGA is disabled. */
  engine?: Engine | (() => Engine | undefined) | undefined;
  /** How `delete_user` removes tuples in its transaction and refreshes caches (see {@link FgaUserTuples}). */
  fgaUserTuples?: FgaUserTuples | (() => FgaUserTuples | undefined) | undefined;
  mail?: MailSink | undefined;
  /** `--roles`: roles a user may be given. */
  allowedRoles: readonly string[];
  /** `--default-roles`: roles of invited users. */
  defaultRoles: readonly string[];
  /** `--allowed-origins` (`*` means any origin, then only {@link publicUrl}'s origin is accepted when set). */
  allowedOrigins: readonly string[];
  /** The server's own public URL, used for links and the `*` origin rule. */
  publicUrl?: string | undefined;
  organization?: { name: string; logo: string };
  /** Unix ms clock. */
  clock?: () => number;
  /** Admin session lifetime (default 1 h). */
  sessionTtlMs?: number;
  /** Where wrong admin secrets are counted (default: in process; the server passes a Redis counter with `--redis-url`). */
  failureCounter?: AdminFailureCounter | undefined;
  /** Extra webhook delivery settings (timeouts, schedule). */
  webhooks?: Partial<Omit<WebhookServiceOptions, 'sequelize' | 'signingSecret' | 'ssrf' | 'clock'>>;
}

/** Input of `update_user`: every editable field. */
export interface UpdateUserInput {
  id: string;
  email?: string | undefined;
  email_verified?: boolean | undefined;
  given_name?: string | undefined;
  family_name?: string | undefined;
  middle_name?: string | undefined;
  nickname?: string | undefined;
  gender?: string | undefined;
  birthdate?: string | undefined;
  phone_number?: string | undefined;
  phone_number_verified?: boolean | undefined;
  picture?: string | undefined;
  roles?: string[] | undefined;
  is_multi_factor_auth_enabled?: boolean | undefined;
  app_data?: Record<string, unknown> | undefined;
}

export const EMAIL_RE = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

/** The public User of a stored user. */
export const toAdminUser: (u: UserRecord) => AdminUser = toPublicUser;

/** The webhook payload form of a user. */
export function eventUser(u: UserRecord): Record<string, unknown> {
  return toAdminUser(u) as unknown as Record<string, unknown>;
}

export function notFoundUser(): LatchkeyError {
  return new LatchkeyError('not_found', 'user not found', { reason: 'user_not_found' });
}
