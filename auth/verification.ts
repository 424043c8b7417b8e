/**
 * Verification requests: the one-time links of the email flows (sign-up
 * verification, password reset, magic link, invitation), in the
 * `verification_requests` table of the main database.
 *
 * - A token is 32 random bytes (base64url). Only its SHA-256 is stored, so
 *   neither the table nor the admin listing can give a live link away; a
 *   token is checked by looking up its digest, whatever its length or
 *   content, so nothing about other tokens leaks through timing.
 * - One pending request per (identifier, email): a new one replaces the old,
 *   whose link stops working.
 * - A token is used once: consuming it deletes the row in one statement, and
 *   of two concurrent uses exactly one wins. Expired rows are refused and
 *   removed opportunistically.
 */
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import type { Transaction } from 'sequelize';
import { QueryTypes, type SqlDatabase } from '../engine/sql/sql_database.ts';
import { LatchkeyError } from '../engine/errors.ts';
import { runMigrations, type Migration } from '../engine/sql/migrate.ts';
import { isUniqueViolation, retryConflicts } from './sql_conflicts.ts';
import { tableOptions, utf8mb4Migration } from './sql_charset.ts';
import type { StoreTransaction } from './main_database.ts';

/** The kinds of verification request (the reference's identifiers). */
export const VERIFICATION_IDENTIFIERS = ['basic_auth_signup', 'update_email', 'forgot_password', 'magic_link_login', 'invite_member'] as const;
export type VerificationIdentifier = (typeof VERIFICATION_IDENTIFIERS)[number];

/** Lifetime of a link (reference: 30 minutes), except invitations: 7 days, since an invitee may not read mail at once. */
export const VERIFICATION_TTL_SECONDS = 30 * 60;
export const INVITATION_TTL_SECONDS = 7 * 24 * 3600;

/** A stored request as the admin listing shows it: `token` is always null (only its digest exists). */
export interface VerificationRecord {
  id: string;
  identifier: string;
  token: null;
  email: string;
  expires: number;
  created_at: number;
  updated_at: number;
  nonce: string;
  redirect_uri: string;
}

export const VERIFICATION_MIGRATIONS: readonly Migration[] = [
  {
    id: '0001_verification_requests',
    async up({ sequelize, transaction, dialect }) {
      await sequelize.query(
        `CREATE TABLE verification_requests (
          id VARCHAR(36) NOT NULL PRIMARY KEY,
          token_hash CHAR(64) NOT NULL,
          identifier VARCHAR(64) NOT NULL,
          email VARCHAR(320) NOT NULL,
          nonce VARCHAR(64) NOT NULL,
          redirect_uri VARCHAR(2048) NOT NULL,
          expires_at BIGINT NOT NULL,
          created_at BIGINT NOT NULL,
          updated_at BIGINT NOT NULL)${tableOptions(dialect)}`,
        { transaction },
      );
      await sequelize.query('CREATE UNIQUE INDEX verification_requests_token ON verification_requests (token_hash)', { transaction });
      await sequelize.query('CREATE UNIQUE INDEX verification_requests_kind_email ON verification_requests (identifier, email)', { transaction });
      await sequelize.query('CREATE INDEX verification_requests_created ON verification_requests (created_at)', { transaction });
    },
  },
  utf8mb4Migration('0002_utf8mb4', ['verification_requests']),
];

/** A request made by `VerificationStore.issue`: the token for the link (never stored) and the row to store. */
export interface IssuedVerification {
  token: string;
  record: VerificationRecord;
  row: {
    id: string;
    token_hash: string;
    identifier: VerificationIdentifier;
    email: string;
    nonce: string;
    redirect_uri: string;
    expires_at: number;
    created_at: number;
    updated_at: number;
  };
}

/** The stored digest of a token (SHA-256, hex). */
export const digest = (token: string): string => createHash('sha256').update(token, 'utf8').digest('hex');

/** The one error of every unusable token (unknown, used, wrong kind). */
export function invalidVerificationToken(): LatchkeyError {
  return new LatchkeyError('unauthenticated', 'invalid token', { reason: 'invalid_token' });
}

/**
 * A link used after its expiry (security matrix A4: `expired_token`, row
 * gone). Telling it apart from an unknown token reveals nothing: only the
 * holder of the once-valid link can get this answer.
 */
export function expiredVerificationToken(): LatchkeyError {
  return new LatchkeyError('unauthenticated', 'token has expired', { reason: 'expired_token' });
}

/** A stored row (or item) as the record callers see. */
/** A new verification request issued at `now` (unix seconds): its token, its record and its row, not yet stored. */
export function issueVerification(now: number, input: { identifier: VerificationIdentifier; email: string; redirectUri: string; ttlSeconds?: number }): IssuedVerification {
  const token = randomBytes(32).toString('base64url');
  const row = {
    id: randomUUID(),
    token_hash: digest(token),
    identifier: input.identifier,
    email: input.email,
    nonce: randomBytes(16).toString('hex'),
    redirect_uri: input.redirectUri,
    expires_at: now + (input.ttlSeconds ?? VERIFICATION_TTL_SECONDS),
    created_at: now,
    updated_at: now,
  };
  return { token, record: toRecord(row), row };
}

export function toRecord(r: Record<string, unknown>): VerificationRecord {
  return {
    id: String(r['id']),
    identifier: String(r['identifier']),
    token: null,
    email: String(r['email']),
    expires: Number(r['expires_at']),
    created_at: Number(r['created_at']),
    updated_at: Number(r['updated_at']),
    nonce: String(r['nonce']),
    redirect_uri: String(r['redirect_uri']),
  };
}

/**
 * Where verification requests live. Implementers keep: one pending request
 * per (identifier, email), a new one replacing the old; a token found only
 * through its digest; {@link consume} removing a request atomically, so of
 * concurrent uses exactly one succeeds.
 */
export interface VerificationStore {
  /** Creates or upgrades the schema. Idempotent. */
  init(): Promise<void>;
  /** Records a new request for (identifier, email), replacing a pending one; returns the token for the link. */
  create(input: { identifier: VerificationIdentifier; email: string; redirectUri: string; ttlSeconds?: number }): Promise<{ token: string; record: VerificationRecord }>;
  /** A new request and its token, not yet stored. */
  issue(input: { identifier: VerificationIdentifier; email: string; redirectUri: string; ttlSeconds?: number }): IssuedVerification;
  /** Stores an issued request (inside `transaction`), replacing a pending one of its (identifier, email). */
  insert(issued: IssuedVerification, transaction: StoreTransaction): Promise<void>;
  /** The live request of `token` among `identifiers`; throws `unauthenticated` (`expired_token` or `invalid_token`). */
  peek(token: string, identifiers: readonly VerificationIdentifier[]): Promise<VerificationRecord>;
  /** The live request of (identifier, email), if any. */
  pending(identifier: VerificationIdentifier, email: string): Promise<VerificationRecord | undefined>;
  /** Uses the request up; throws `unauthenticated` (`invalid_token`) when it was used already or expired. */
  consume(record: VerificationRecord, transaction: StoreTransaction): Promise<void>;
  /** Pending (unexpired) requests, newest first, with their total. */
  list(page: { offset: number; limit: number }): Promise<{ verification_requests: VerificationRecord[]; total: number }>;
  /** Removes every request of an email (user deletion). */
  deleteByEmail(email: string, transaction: StoreTransaction): Promise<void>;
}

/** The {@link VerificationStore} on SQL: the `verification_requests` table. */
export class SqlVerificationStore implements VerificationStore {
  readonly #db: SqlDatabase;
  readonly #now: () => number;

  constructor(options: { sequelize: SqlDatabase; nowSeconds: () => number }) {
    this.#db = options.sequelize;
    this.#now = options.nowSeconds;
  }

  /** Runs the migrations (component `auth_verification`). Idempotent. */
  async init(): Promise<void> {
    await runMigrations(this.#db, 'auth_verification', VERIFICATION_MIGRATIONS);
  }

  /**
   * Records a new request for (identifier, email), replacing a pending one,
   * and returns the token to put in the link (shown once, never stored).
   */
  async create(input: { identifier: VerificationIdentifier; email: string; redirectUri: string; ttlSeconds?: number }): Promise<{ token: string; record: VerificationRecord }> {
    const issued = this.issue(input);
    // Concurrent requests (MySQL's gap locks under the range delete, or one (identifier, email) twice) lose
    // whole and run again; the later one replaces the other's link, as a resend does.
    await retryConflicts(() => this.#db.transaction((transaction) => this.insert(issued, transaction)), isUniqueViolation);
    return { token: issued.token, record: issued.record };
  }

  /**
   * A new request and its token, not yet stored: {@link insert} stores it
   * inside a caller's transaction (sign-up stores its user, this request and
   * its mail in one).
   */
  issue(input: { identifier: VerificationIdentifier; email: string; redirectUri: string; ttlSeconds?: number }): IssuedVerification {
    return issueVerification(this.#now(), input);
  }

  /**
   * Stores an issued request inside `transaction`, replacing a pending one of
   * its (identifier, email) and removing expired ones. A unique violation
   * (the same pair inserted concurrently) or a deadlock rolls the caller's
   * transaction back; running it again is safe.
   */
  async insert(issued: IssuedVerification, tx: StoreTransaction): Promise<void> {
    const transaction = tx as Transaction;
    const { row } = issued;
    await this.#db.query('DELETE FROM verification_requests WHERE (identifier = ? AND email = ?) OR expires_at <= ?', {
      replacements: [row.identifier, row.email, row.created_at],
      transaction,
    });
    await this.#db.query(
      'INSERT INTO verification_requests (id, token_hash, identifier, email, nonce, redirect_uri, expires_at, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)',
      {
        replacements: [row.id, row.token_hash, row.identifier, row.email, row.nonce, row.redirect_uri, row.expires_at, row.created_at, row.updated_at],
        transaction,
      },
    );
  }

  /**
   * The live request of `token` among `identifiers`, without using it up.
   * Throws `unauthenticated`: reason `expired_token` for an expired request
   * of one of those kinds (which is deleted), `invalid_token` otherwise.
   */
  async peek(token: string, identifiers: readonly VerificationIdentifier[]): Promise<VerificationRecord> {
    if (typeof token !== 'string' || token.length === 0 || token.length > 512) throw invalidVerificationToken();
    const rows = await this.#db.query<Record<string, unknown>>('SELECT * FROM verification_requests WHERE token_hash = ?', {
      replacements: [digest(token)],
      type: QueryTypes.SELECT,
    });
    const row = rows[0];
    if (row === undefined || !(identifiers as readonly string[]).includes(String(row['identifier']))) throw invalidVerificationToken();
    if (Number(row['expires_at']) <= this.#now()) {
      await this.#db.query('DELETE FROM verification_requests WHERE id = ?', { replacements: [row['id']] });
      throw expiredVerificationToken();
    }
    return toRecord(row);
  }

  /** The live request of (identifier, email), if any (for re-sending its link). */
  async pending(identifier: VerificationIdentifier, email: string): Promise<VerificationRecord | undefined> {
    const rows = await this.#db.query<Record<string, unknown>>(
      'SELECT id, identifier, email, nonce, redirect_uri, expires_at, created_at, updated_at FROM verification_requests WHERE identifier = ? AND email = ? AND expires_at > ?',
      { replacements: [identifier, email, this.#now()], type: QueryTypes.SELECT },
    );
    return rows[0] === undefined ? undefined : toRecord(rows[0]);
  }

  /**
   * Uses the request up (deletes it) inside `transaction`: resolves when this
   * call removed it, throws `unauthenticated` (`invalid_token`) when it was
   * gone already (used concurrently) or has expired since.
   */
  async consume(record: VerificationRecord, tx: StoreTransaction): Promise<void> {
    const transaction = tx as Transaction;
    const n = await this.#db.query('DELETE FROM verification_requests WHERE id = ? AND expires_at > ?', {
      replacements: [record.id, this.#now()],
      type: QueryTypes.BULKDELETE,
      transaction,
    });
    if (Number(n) !== 1) throw invalidVerificationToken();
  }

  /** Pending (unexpired) requests, newest first, with their total. */
  async list(page: { offset: number; limit: number }): Promise<{ verification_requests: VerificationRecord[]; total: number }> {
    const limit = Math.max(0, Math.floor(page.limit));
    const offset = Math.max(0, Math.floor(page.offset));
    const now = this.#now();
    const rows = await this.#db.query<Record<string, unknown>>(
      `SELECT id, identifier, email, nonce, redirect_uri, expires_at, created_at, updated_at FROM verification_requests WHERE expires_at > ? ORDER BY created_at DESC, id LIMIT ${limit} OFFSET ${offset}`,
      { replacements: [now], type: QueryTypes.SELECT },
    );
    const [count] = await this.#db.query<{ n: number | string }>('SELECT COUNT(*) AS n FROM verification_requests WHERE expires_at > ?', {
      replacements: [now],
      type: QueryTypes.SELECT,
    });
    return { verification_requests: rows.map(toRecord), total: Number(count?.n ?? 0) };
  }

  /** Removes every request of an email (user deletion), inside `transaction`. */
  async deleteByEmail(email: string, tx: StoreTransaction): Promise<void> {
    const transaction = tx as Transaction;
    await this.#db.query('DELETE FROM verification_requests WHERE email = ?', { replacements: [email], transaction });
  }
}
