/**
 * The email-link flows built on {@link VerificationStore}: invitations (the
 * admin's `invite_members`) and `reset_password`, which sets the password of
 * an invited user (or of one who asked for a reset) from the link's token.
 */
import { LatchkeyError } from '../engine/errors.ts';
import type { ResolvedAuthOptions } from './options.ts';
import { assertPasswordAcceptable, type PasswordHasher } from './password.ts';
import type { SessionManager } from './sessions.ts';
import type { UserRecord, UserStore } from './user_store_types.ts';
import { inTransaction, type MainDatabase, type StoreTransaction } from './main_database.ts';
import { INVITATION_TTL_SECONDS, invalidVerificationToken, type VerificationRecord, type VerificationStore } from './verification.ts';

/** The kinds of link `reset_password` accepts. */
const PASSWORD_LINKS = ['forgot_password', 'invite_member'] as const;

export interface VerificationFlowsDeps {
  database: MainDatabase;
  store: VerificationStore;
  users: UserStore;
  passwords: PasswordHasher;
  sessions: SessionManager;
  options: ResolvedAuthOptions;
  nowSeconds: () => number;
}

export class VerificationFlows {
  readonly #d: VerificationFlowsDeps;

  constructor(deps: VerificationFlowsDeps) {
    this.#d = deps;
  }

  /**
   * Records the invitation of a new (unverified, passwordless) user and
   * returns the link to mail: `redirectUri` (already checked against the
   * allowed origins by the caller) with a one-time `token` query parameter,
   * valid for 7 days. The page there calls `reset_password` with the token.
   */
  async createInvitation(user: UserRecord, redirectUri: string): Promise<string> {
    if (user.email === null) throw new LatchkeyError('invalid_argument', 'the user has no email address', { reason: 'invalid_email' });
    const { token } = await this.#d.store.create({ identifier: 'invite_member', email: user.email, redirectUri, ttlSeconds: INVITATION_TTL_SECONDS });
    const url = new URL(redirectUri);
    url.searchParams.set('token', token);
    // Tells the page the link opens (the built-in /app among them) that this token sets a password
    // (reset_password) rather than verifying an address (verify_email).
    url.searchParams.set('type', 'invite_member');
    return url.toString();
  }

  /**
   * `reset_password`: sets the password of the user a `forgot_password` or
   * `invite_member` link was made for. The token is used up in the same
   * transaction as the password change; the email counts as verified (the
   * user proved they read it); every session of the user ends. Errors:
   * `unauthenticated` `invalid token` for an unknown, used or foreign
   * token, one of a deactivated or revoked user, or one issued before every
   * session of its user was ended (one message for all; nothing is used up
   * or changed), `unauthenticated` `expired_token`, `invalid_argument` for a password
   * the policy refuses or a confirmation that differs (the token stays
   * usable then).
   */
  async resetPassword(input: { token: string; password: string; confirm_password?: string | undefined }): Promise<{ message: string; user: UserRecord; identifier: string }> {
    const d = this.#d;
    const request = await d.store.peek(input.token, PASSWORD_LINKS);
    const user = await d.users.findByEmail(request.email);
    // Spec: a revoked user cannot log in or use anything issued before. A revoked user's link, and a link
    // issued before every session of its user was ended (revoke_access even once access is enabled again,
    // a password change or reset), answer like an invalid token (no enumeration) and stay unused.
    if (user === undefined || user.deactivated_at !== null || user.revoked_timestamp !== null) throw invalidVerificationToken();
    const endedAt = await d.sessions.endedAllAt(user.id);
    if (endedAt !== undefined && request.created_at * 1000 <= endedAt) throw invalidVerificationToken();
    if (input.confirm_password !== undefined && input.confirm_password !== input.password) {
      throw new LatchkeyError('invalid_argument', 'password and confirm password does not match', { reason: 'password_mismatch' });
    }
    assertPasswordAcceptable(input.password, { strong: d.options.enableStrongPassword }, { email: user.email });
    const hash = await d.passwords.hash(input.password);
    const now = d.nowSeconds();
    await inTransaction(d.database, async (transaction) => {
      await d.store.consume(request, transaction);
      const updated = await d.users.update(user.id, { password: hash, email_verified_at: user.email_verified_at ?? now }, { transaction });
      // Revoked or deactivated while the hash was computed: the update holds the row, so this sees it; roll back.
      if (updated.revoked_timestamp !== null || updated.deactivated_at !== null) throw invalidVerificationToken();
    });
    await d.sessions.endAllForUser(user.id);
    return { message: 'Password updated successfully.', user, identifier: request.identifier };
  }

  /** Pending verification requests for the admin listing (`token` is always null). */
  listVerificationRequests(page: { offset: number; limit: number }): Promise<{ verification_requests: VerificationRecord[]; total: number }> {
    return this.#d.store.list(page);
  }

  /** Removes the user's verification requests inside the user-deletion transaction. */
  async deleteUserData(user: UserRecord, transaction: StoreTransaction): Promise<void> {
    if (user.email !== null) await this.#d.store.deleteByEmail(user.email, transaction);
  }
}
