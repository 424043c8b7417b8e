/**
 * The multi-factor tables of the main database:
 * - `otps`: the pending one-time code of a user (at most one), stored as an
 *   HMAC-SHA256 digest with its expiry; using it deletes the row, so of two
 *   concurrent uses exactly one wins.
 * - `authenticators`: a user's TOTP enrolment, UNIQUE(user_id, method): the
 *   secret encrypted, the recovery codes as digests, the last accepted time
 *   step (a TOTP code is accepted once) and when the enrolment was confirmed.
 *
 * Only digests and ciphertexts are written here; {@link MfaFlows} computes
 * them. Every conditional write reports whether it won, so single use holds
 * across processes.
 */
import { randomUUID } from 'node:crypto';
import type { Transaction } from 'sequelize';
import { QueryTypes, type SqlDatabase } from '../engine/sql/sql_database.ts';
import { runMigrations, type Migration } from '../engine/sql/migrate.ts';
import { isDeadlock, isUniqueViolation, retryConflicts } from './sql_conflicts.ts';
import { tableOptions, utf8mb4Migration } from './sql_charset.ts';
import type { StoreTransaction } from './main_database.ts';

export const MFA_MIGRATIONS: readonly Migration[] = [
  {
    id: '0001_otps_authenticators',
    async up({ sequelize, transaction, dialect }) {
      await sequelize.query(
        `CREATE TABLE otps (
          id VARCHAR(36) NOT NULL PRIMARY KEY,
          user_id VARCHAR(36) NOT NULL,
          email VARCHAR(320) NULL,
          phone_number VARCHAR(32) NULL,
          otp CHAR(64) NOT NULL,
          expires_at BIGINT NOT NULL,
          created_at BIGINT NOT NULL,
          updated_at BIGINT NOT NULL)${tableOptions(dialect)}`,
        { transaction },
      );
      await sequelize.query('CREATE UNIQUE INDEX otps_user ON otps (user_id)', { transaction });
      await sequelize.query('CREATE INDEX otps_email ON otps (email)', { transaction });
      await sequelize.query('CREATE INDEX otps_phone_number ON otps (phone_number)', { transaction });
      await sequelize.query(
        `CREATE TABLE authenticators (
          id VARCHAR(36) NOT NULL PRIMARY KEY,
          user_id VARCHAR(36) NOT NULL,
          method VARCHAR(16) NOT NULL,
          secret VARCHAR(512) NOT NULL,
          recovery_codes TEXT NOT NULL,
          last_time_step BIGINT NULL,
          verified_at BIGINT NULL,
          created_at BIGINT NOT NULL,
          updated_at BIGINT NOT NULL)${tableOptions(dialect)}`,
        { transaction },
      );
      await sequelize.query('CREATE UNIQUE INDEX authenticators_user_method ON authenticators (user_id, method)', { transaction });
    },
  },
  utf8mb4Migration('0002_utf8mb4', ['otps', 'authenticators']),
];

/** A pending one-time code. Times are unix seconds. */
export interface OtpRow {
  id: string;
  user_id: string;
  otp: string;
  expires_at: number;
}

/** A TOTP enrolment. `recovery_codes` is the stored JSON text (digests). */
export interface AuthenticatorRow {
  id: string;
  user_id: string;
  method: string;
  secret: string;
  recovery_codes: string;
  last_time_step: number | null;
  verified_at: number | null;
}

/** A concurrent insert of the same user's row won the unique index. */

const num = (v: unknown): number => (typeof v === 'number' ? v : Number(v));
const numOrNull = (v: unknown): number | null => (v === null || v === undefined ? null : num(v));

/**
 * Where one-time codes and TOTP enrolments live. Implementers make each
 * method atomic across processes: of concurrent uses of one code exactly one
 * `deleteOtp` succeeds, a time step is accepted once, recovery codes are
 * swapped only from the expected value, and a confirmed enrolment is never
 * replaced by a pending one.
 */
export interface MfaStore {
  /** Creates or upgrades the schema. Idempotent. */
  init(): Promise<void>;
  /** Replaces the user's pending code (the old one stops working). */
  putOtp(input: { userId: string; email: string | null; phoneNumber: string | null; digest: string; ttlSeconds: number }): Promise<void>;
  /** The user's pending code, expired or not. */
  getOtp(userId: string): Promise<OtpRow | undefined>;
  /** Deletes a code; true when this call removed it. */
  deleteOtp(id: string): Promise<boolean>;
  /** The user's authenticator of `method`, confirmed or not. */
  getAuthenticator(userId: string, method: string): Promise<AuthenticatorRow | undefined>;
  /** Records a new, unconfirmed enrolment, replacing an unconfirmed one; false when a confirmed one exists or a concurrent call won. */
  putPendingAuthenticator(input: { userId: string; method: string; secret: string; recoveryCodes: string }): Promise<boolean>;
  /** Accepts `timeStep` and confirms the enrolment; true when this call moved the step forward. */
  acceptTimeStep(id: string, timeStep: number): Promise<boolean>;
  /** Replaces the recovery codes only if they still are `expected`. */
  replaceRecoveryCodes(id: string, expected: string, next: string): Promise<boolean>;
  /** Removes the authenticator `id` (confirmed or not) with its recovery codes; true when this call removed it. */
  deleteAuthenticator(id: string): Promise<boolean>;
  /** Removes the user's codes and enrolments (inside `transaction` when given). */
  deleteUserData(userId: string, transaction?: StoreTransaction): Promise<void>;
}

/** The {@link MfaStore} on SQL: the `otps` and `authenticators` tables. */
export class SqlMfaStore implements MfaStore {
  readonly #db: SqlDatabase;
  readonly #now: () => number;

  constructor(options: { sequelize: SqlDatabase; nowSeconds: () => number }) {
    this.#db = options.sequelize;
    this.#now = options.nowSeconds;
  }

  /** Runs the migrations (component `auth_mfa`). Idempotent. */
  async init(): Promise<void> {
    await runMigrations(this.#db, 'auth_mfa', MFA_MIGRATIONS);
  }

  async #count(sql: string, replacements: unknown[], type: 'update' | 'delete'): Promise<number> {
    if (type === 'delete') return Number(await this.#db.query(sql, { replacements, type: QueryTypes.BULKDELETE }));
    const result = (await this.#db.query(sql, { replacements, type: QueryTypes.UPDATE })) as unknown as [unknown, number];
    return Number(result[1]);
  }

  /** Sweeps expired codes, then replaces the user's pending code (the old one stops working). */
  async putOtp(input: { userId: string; email: string | null; phoneNumber: string | null; digest: string; ttlSeconds: number }): Promise<void> {
    const now = this.#now();
    // Housekeeping: a sweep that loses a deadlock to a concurrent one (MySQL's gap locks) leaves the expired
    // rows to the next sweep; expired codes are refused on use anyway.
    await this.#db.query('DELETE FROM otps WHERE expires_at <= ?', { replacements: [now] }).catch((err: unknown) => {
      if (!isDeadlock(err)) throw err;
    });
    // Two logins of one user at once: the later insert meets the other's row on UNIQUE(user_id), or (MySQL)
    // their gap locks deadlock; either way one transaction rolled back whole, and a retry replaces the winner's code.
    await retryConflicts(
      () =>
        this.#db.transaction(async (transaction) => {
          await this.#db.query('DELETE FROM otps WHERE user_id = ?', { replacements: [input.userId], transaction });
          await this.#db.query('INSERT INTO otps (id, user_id, email, phone_number, otp, expires_at, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)', {
            replacements: [randomUUID(), input.userId, input.email, input.phoneNumber, input.digest, now + input.ttlSeconds, now, now],
            transaction,
          });
        }),
      isUniqueViolation,
    );
  }

  /** The user's pending code, expired or not. */
  async getOtp(userId: string): Promise<OtpRow | undefined> {
    const rows = await this.#db.query<Record<string, unknown>>('SELECT id, user_id, otp, expires_at FROM otps WHERE user_id = ?', {
      replacements: [userId],
      type: QueryTypes.SELECT,
    });
    const r = rows[0];
    return r === undefined ? undefined : { id: String(r['id']), user_id: String(r['user_id']), otp: String(r['otp']), expires_at: num(r['expires_at']) };
  }

  /** Deletes a code; true when this call removed it (of concurrent uses, one wins). */
  async deleteOtp(id: string): Promise<boolean> {
    return (await this.#count('DELETE FROM otps WHERE id = ?', [id], 'delete')) === 1;
  }

  /** The user's authenticator of `method`, confirmed or not. */
  async getAuthenticator(userId: string, method: string): Promise<AuthenticatorRow | undefined> {
    const rows = await this.#db.query<Record<string, unknown>>('SELECT * FROM authenticators WHERE user_id = ? AND method = ?', {
      replacements: [userId, method],
      type: QueryTypes.SELECT,
    });
    const r = rows[0];
    if (r === undefined) return undefined;
    return {
      id: String(r['id']),
      user_id: String(r['user_id']),
      method: String(r['method']),
      secret: String(r['secret']),
      recovery_codes: String(r['recovery_codes']),
      last_time_step: numOrNull(r['last_time_step']),
      verified_at: numOrNull(r['verified_at']),
    };
  }

  /**
   * Records a new, unconfirmed enrolment, replacing an unconfirmed one.
   * False when a confirmed enrolment exists (it is never replaced here) or a
   * concurrent call recorded one first.
   */
  async putPendingAuthenticator(input: { userId: string; method: string; secret: string; recoveryCodes: string }): Promise<boolean> {
    const now = this.#now();
    try {
      return await this.#putPending(input, now);
    } catch (err) {
      // A concurrent first login of the same user recorded its enrolment first; that one stands.
      if (isUniqueViolation(err) || isDeadlock(err)) return false;
      throw err;
    }
  }

  #putPending(input: { userId: string; method: string; secret: string; recoveryCodes: string }, now: number): Promise<boolean> {
    return this.#db.transaction(async (transaction) => {
      await this.#db.query('DELETE FROM authenticators WHERE user_id = ? AND method = ? AND verified_at IS NULL', {
        replacements: [input.userId, input.method],
        transaction,
      });
      const existing = await this.#db.query('SELECT id FROM authenticators WHERE user_id = ? AND method = ?', {
        replacements: [input.userId, input.method],
        type: QueryTypes.SELECT,
        transaction,
      });
      if (existing.length > 0) return false;
      await this.#db.query(
        'INSERT INTO authenticators (id, user_id, method, secret, recovery_codes, last_time_step, verified_at, created_at, updated_at) VALUES (?, ?, ?, ?, ?, NULL, NULL, ?, ?)',
        { replacements: [randomUUID(), input.userId, input.method, input.secret, input.recoveryCodes, now, now], transaction },
      );
      return true;
    });
  }

  /**
   * Records `timeStep` as the last accepted TOTP step and confirms the
   * enrolment; true when this call moved the step forward (a code, or an
   * older one, presented again is refused).
   */
  async acceptTimeStep(id: string, timeStep: number): Promise<boolean> {
    const now = this.#now();
    return (
      (await this.#count(
        'UPDATE authenticators SET last_time_step = ?, verified_at = COALESCE(verified_at, ?), updated_at = ? WHERE id = ? AND (last_time_step IS NULL OR last_time_step < ?)',
        [timeStep, now, now, id, timeStep],
        'update',
      )) === 1
    );
  }

  /** Replaces the recovery codes only if they still are `expected`; true when this call changed them. */
  async replaceRecoveryCodes(id: string, expected: string, next: string): Promise<boolean> {
    const now = this.#now();
    return (await this.#count('UPDATE authenticators SET recovery_codes = ?, updated_at = ? WHERE id = ? AND recovery_codes = ?', [next, now, id, expected], 'update')) === 1;
  }

  /** Removes the authenticator `id` with its recovery codes (`reset_totp`); true when this call removed it. */
  async deleteAuthenticator(id: string): Promise<boolean> {
    return (await this.#count('DELETE FROM authenticators WHERE id = ?', [id], 'delete')) === 1;
  }

  /** Removes the user's codes and enrolments (deactivation, deletion), inside `transaction` when given. */
  async deleteUserData(userId: string, transaction?: StoreTransaction): Promise<void> {
    const t = transaction === undefined ? {} : { transaction: transaction as Transaction };
    await this.#db.query('DELETE FROM otps WHERE user_id = ?', { replacements: [userId], ...t });
    await this.#db.query('DELETE FROM authenticators WHERE user_id = ?', { replacements: [userId], ...t });
  }
}
