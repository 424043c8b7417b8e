/**
 * The user store: the `users` table in the main SQL database (SQLite,
 * PostgreSQL, MySQL/MariaDB through the one sequelize connection).
 *
 * Email and phone number are optional, indexed, and **not unique in the
 * database** (spec, Versioning §4). Uniqueness is the service's, and it must
 * hold when sign-ups race (security matrix E1). The guard is a claims table,
 * `user_identifiers`, whose primary key is (kind, normalised value): a user
 * row is only written in the same transaction that inserts its claims, so two
 * racing sign-ups for one address cannot both commit, on any backend and
 * across processes. A claim is released in the transaction that changes or
 * removes the address.
 *
 * At startup, unique constraints and unique indexes left on `email` or
 * `phone_number` by a v1 database are dropped, missing columns are added, and
 * claims are backfilled from existing rows.
 *
 * The store's contract (the record, the interface, address normalisation)
 * is in auth/user_store_types.ts.
 */
import { randomUUID } from 'node:crypto';
import type { Transaction } from 'sequelize';
import { QueryTypes, TransactionTypes, isUniqueConstraintError, type SqlDatabase } from '../engine/sql/sql_database.ts';
import { LatchkeyError } from '../engine/errors.ts';
import { runMigrations, type SqlDialect } from '../engine/sql/migrate.ts';
import { isDeadlock } from './sql_conflicts.ts';
import { KeptUnderMark, SqliteStatements } from './sqlite_statements.ts';
import type { StoreTransaction } from './main_database.ts';
import { AUTH_MIGRATIONS, COLUMN_NAMES, dropStaleIdentifierUniques } from './user_migrations.ts';
import { USER_EXISTS_MESSAGE, emailKey, normalizeEmail, normalizePhone, type UserFields, type UserPage, type UserRecord, type UserStore } from './user_store_types.ts';

/** How long a write waits for an SQLite file another process holds, its turn in this process's queue included. */
const SQLITE_LOCK_WAIT_MS = 5000;

function toBool(v: unknown): boolean | null {
  if (v === null || v === undefined) return null;
  return v === true || v === 1 || v === '1' || v === 't' || v === 'true';
}

function toNum(v: unknown): number | null {
  if (v === null || v === undefined) return null;
  const n = Number(v);
  return Number.isFinite(n) ? n : null;
}

/** Where a column is in a positional row ({@link COLUMN_NAMES} order). */
function at(column: string): number {
  const i = COLUMN_NAMES.indexOf(column);
  if (i < 0) throw new Error(`users has no column ${column}`);
  return i;
}
const ID = at('id');
const EMAIL = at('email');
const EMAIL_VERIFIED_AT = at('email_verified_at');
const PASSWORD = at('password');
const SIGNUP_METHODS = at('signup_methods');
const GIVEN_NAME = at('given_name');
const FAMILY_NAME = at('family_name');
const MIDDLE_NAME = at('middle_name');
const NICKNAME = at('nickname');
const GENDER = at('gender');
const BIRTHDATE = at('birthdate');
const PHONE_NUMBER = at('phone_number');
const PHONE_NUMBER_VERIFIED_AT = at('phone_number_verified_at');
const PICTURE = at('picture');
const ROLES = at('roles');
const REVOKED_TIMESTAMP = at('revoked_timestamp');
const IS_MULTI_FACTOR_AUTH_ENABLED = at('is_multi_factor_auth_enabled');
const APP_DATA = at('app_data');
const DEACTIVATED_AT = at('deactivated_at');
const LOCALE = at('locale');
const CREATED_AT = at('created_at');
const UPDATED_AT = at('updated_at');

/** The columns of the users table in {@link COLUMN_NAMES} order, as a select list (`SELECT * ` names them in the table's order, which a migrated table may not share). */
const USER_COLUMNS = COLUMN_NAMES.join(', ');
const BY_ID = `SELECT ${USER_COLUMNS} FROM users WHERE id = ?`;
/** Users' rows {@link SqlUserStore} keeps on SQLite (the oldest read dropped first): a few hundred bytes each. */
const ROW_CACHE_SIZE = 4096;
/** A user found through a sign-in claim (email or phone), with its columns named as {@link USER_COLUMNS}. */
const CLAIMED = 'FROM user_identifiers c JOIN users u ON u.id = c.user_id WHERE c.kind = ? AND c.value = ?';
const BY_CLAIM = `SELECT ${COLUMN_NAMES.map((n) => `u.${n}`).join(', ')} ${CLAIMED}`;

const str = (v: unknown): string | null => (v === null || v === undefined ? null : String(v));

/**
 * A stored row as a record, from its column values in {@link COLUMN_NAMES}
 * order. On SQLite the store reads rows in this form: `node:sqlite` builds a
 * row object in dictionary mode, with its column names made into keys again
 * for every row, and reading its fields by name missed V8's inline caches;
 * the user read of a session check spent more there than in SQLite.
 */
export function valuesToRecord(v: readonly unknown[]): UserRecord {
  let appData: Record<string, unknown> | null = null;
  const appText = v[APP_DATA];
  if (typeof appText === 'string' && appText.length > 0) {
    try {
      const parsed: unknown = JSON.parse(appText);
      if (parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed)) appData = parsed as Record<string, unknown>;
    } catch {
      appData = null;
    }
  }
  return {
    id: String(v[ID]),
    email: str(v[EMAIL]),
    email_verified_at: toNum(v[EMAIL_VERIFIED_AT]),
    password: str(v[PASSWORD]),
    signup_methods: str(v[SIGNUP_METHODS]) ?? '',
    given_name: str(v[GIVEN_NAME]),
    family_name: str(v[FAMILY_NAME]),
    middle_name: str(v[MIDDLE_NAME]),
    nickname: str(v[NICKNAME]),
    gender: str(v[GENDER]),
    birthdate: str(v[BIRTHDATE]),
    phone_number: str(v[PHONE_NUMBER]),
    phone_number_verified_at: toNum(v[PHONE_NUMBER_VERIFIED_AT]),
    picture: str(v[PICTURE]),
    roles: (str(v[ROLES]) ?? '')
      .split(',')
      .map((s) => s.trim())
      .filter((s) => s.length > 0),
    revoked_timestamp: toNum(v[REVOKED_TIMESTAMP]),
    is_multi_factor_auth_enabled: toBool(v[IS_MULTI_FACTOR_AUTH_ENABLED]),
    app_data: appData,
    deactivated_at: toNum(v[DEACTIVATED_AT]),
    locale: str(v[LOCALE]),
    created_at: toNum(v[CREATED_AT]) ?? 0,
    updated_at: toNum(v[UPDATED_AT]) ?? 0,
  };
}

/** A stored row (SQL columns, or a DynamoDB item with the same attributes) as a record. */
export function rowToRecord(r: Record<string, unknown>): UserRecord {
  return valuesToRecord(COLUMN_NAMES.map((n) => r[n]));
}

/** A record field as stored (roles comma-separated, app_data JSON text). */
export function toColumn(key: string, value: unknown): unknown {
  if (value === undefined) return null;
  if (key === 'roles') return (value as string[]).join(',');
  if (key === 'app_data') return value === null ? null : JSON.stringify(value);
  if (key === 'is_multi_factor_auth_enabled') return value === null ? null : Boolean(value);
  return value;
}

/** Options of {@link SqlUserStore}. */
export interface UserStoreOptions {
  /** The one connection of the process. */
  sequelize: SqlDatabase;
  /** Seconds since the epoch. Default from `Date.now`. */
  nowSeconds?: () => number;
}

/**
 * The {@link UserStore} on SQL: the `users` table and its `user_identifiers`
 * claims, each change one transaction.
 */
export class SqlUserStore implements UserStore {
  readonly #sequelize: SqlDatabase;
  readonly #dialect: SqlDialect;
  readonly #now: () => number;
  /** SQLite: the reads outside a transaction, prepared once (auth/sqlite_statements.ts). */
  readonly #statements: SqliteStatements | undefined;
  #sqliteQueue: Promise<void> = Promise.resolve();
  /** When a write last found the SQLite file held by another process (unix ms). */
  #busyAt = 0;
  /**
   * SQLite: users' rows (their values in {@link USER_COLUMNS}' order) by id,
   * read at once ({@link findByIdNow}) and kept while the connection's change
   * mark is the one they were read under (auth/sqlite_statements.ts
   * `KeptUnderMark`): any write of this process on the connection, and any
   * commit of another connection or process since, empties it.
   */
  readonly #rowCache: KeptUnderMark<readonly unknown[]> | undefined;

  constructor(options: UserStoreOptions) {
    this.#sequelize = options.sequelize;
    const d = options.sequelize.getDialect();
    if (d !== 'sqlite' && d !== 'postgres' && d !== 'mysql' && d !== 'mariadb') {
      throw new LatchkeyError('invalid_argument', `unsupported SQL dialect ${d}`, { reason: 'invalid_option' });
    }
    this.#dialect = d;
    this.#statements = SqliteStatements.of(options.sequelize);
    this.#rowCache = this.#statements === undefined ? undefined : new KeptUnderMark(this.#statements, BY_ID, (row) => row, ROW_CACHE_SIZE);
    this.#now = options.nowSeconds ?? (() => Math.floor(Date.now() / 1000));
  }

  /** Runs the migrations, then drops any unique constraint a v1 database (re)introduced. Idempotent. */
  async init(): Promise<void> {
    await runMigrations(this.#sequelize, 'auth', AUTH_MIGRATIONS);
    await this.#sequelize.transaction(async (transaction) => {
      await dropStaleIdentifierUniques({
        sequelize: this.#sequelize,
        queryInterface: this.#sequelize.getQueryInterface(),
        transaction,
        dialect: this.#dialect,
      });
    });
  }

  /**
   * Runs `fn` in a transaction. SQLite takes its single write lock up front
   * (IMMEDIATE) and a busy database is retried with backoff, so racing writers
   * serialise instead of failing.
   */
  async #tx<T>(fn: (t: Transaction) => Promise<T>): Promise<T> {
    if (this.#dialect !== 'sqlite') {
      // A deadlock or serialization failure (MySQL 1213, PostgreSQL 40P01/40001) rolls the whole
      // transaction back; it is safe to run it again, and the claims make the retry see the winner.
      for (let attempt = 0; ; attempt++) {
        try {
          return await this.#sequelize.transaction(fn);
        } catch (err) {
          if (!isDeadlock(err) || attempt >= 5) throw err;
          await new Promise((r) => setTimeout(r, 5 + Math.random() * 20));
        }
      }
    }
    // SQLite has one writer: queue this process's write transactions behind each other
    // (sequelize opens one connection per transaction, which would otherwise collide),
    // and retry a database that another process holds.
    // The wait is bounded in time, queue included (security matrix F1: no hang past the busy
    // timeout): past it the write fails with SQLITE_BUSY, answered 503 unavailable.
    const started = Date.now();
    const deadline = started + SQLITE_LOCK_WAIT_MS;
    const previous = this.#sqliteQueue;
    let release!: () => void;
    this.#sqliteQueue = new Promise<void>((r) => (release = r));
    await previous;
    try {
      let locked: unknown;
      for (;;) {
        // Each attempt may itself wait the driver's busy timeout: none starts past the deadline
        // while the file is known to be held (by this attempt's or a queued predecessor's finding).
        if ((locked !== undefined || this.#busyAt >= started) && Date.now() >= deadline) {
          throw new LatchkeyError('unavailable', 'the database is locked by another process; retry later', { reason: 'storage_unavailable', cause: locked });
        }
        try {
          return await this.#sequelize.transaction({ type: TransactionTypes.IMMEDIATE }, fn);
        } catch (err) {
          const busy = /SQLITE_BUSY|database is locked/i.test(String((err as { message?: string })?.message ?? err));
          if (!busy) throw err;
          locked = err;
          this.#busyAt = Date.now();
          await new Promise((r) => setTimeout(r, 5 + Math.random() * 20));
        }
      }
    } finally {
      release();
    }
  }

  async #select(where: string, replacements: readonly string[], transaction?: Transaction): Promise<UserRecord[]> {
    if (transaction === undefined && this.#statements !== undefined) {
      const rows = await this.#statements.values(`SELECT ${USER_COLUMNS} FROM users WHERE ${where}`, replacements);
      if (rows !== undefined) return rows.map(valuesToRecord);
    }
    const rows = await this.#rows(`SELECT * FROM users WHERE ${where}`, replacements, transaction);
    return rows.map(rowToRecord);
  }

  /** A SELECT whose parameters are strings; outside a transaction on SQLite, a statement prepared once. */
  async #rows(sql: string, replacements: readonly string[], transaction?: Transaction): Promise<Record<string, unknown>[]> {
    if (transaction === undefined && this.#statements !== undefined) {
      const rows = await this.#statements.select(sql, replacements);
      if (rows !== undefined) return rows;
    }
    return this.#sequelize.query<Record<string, unknown>>(sql, {
      replacements: [...replacements],
      type: QueryTypes.SELECT,
      ...(transaction === undefined ? {} : { transaction }),
    });
  }

  /** The user with this id, or undefined. */
  async findById(id: string): Promise<UserRecord | undefined> {
    if (typeof id !== 'string' || id.length === 0 || id.length > 36) return undefined;
    return this.findByIdNow(id) ?? (await this.#select('id = ?', [id]))[0];
  }

  /**
   * {@link UserStore.findByIdNow}: on SQLite, the row read at once when the
   * connection can answer without waiting, or kept from an earlier read while
   * nothing can have changed it (see {@link #rowCache}); each call builds a
   * record of its own.
   *
   * Why: the session check (`profile`, `validate_session`) reads the user on
   * every request, and that read was about a seventh of its CPU time; the
   * change mark costs a third of it.
   */
  findByIdNow(id: string): UserRecord | undefined {
    if (this.#rowCache === undefined || typeof id !== 'string' || id.length === 0 || id.length > 36) return undefined;
    const row = this.#rowCache.valueNow(id);
    // No row: `findById` reads again and answers that there is none.
    return row === undefined || row === null ? undefined : valuesToRecord(row);
  }

  /** One query through the claim (login's hot path); falls back to the column for rows without a claim. */
  async #findByClaim(kind: 'email' | 'phone', value: string, column: 'email' | 'phone_number'): Promise<UserRecord | undefined> {
    const values = this.#statements === undefined ? undefined : await this.#statements.values(BY_CLAIM, [kind, value]);
    if (values !== undefined) {
      if (values[0] !== undefined) return valuesToRecord(values[0]);
    } else {
      const rows = await this.#rows(`SELECT u.* ${CLAIMED}`, [kind, value]);
      if (rows[0] !== undefined) return rowToRecord(rows[0]);
    }
    return (await this.#select(`${column} = ?`, [value]))[0];
  }

  /** The user holding this email (case and surrounding whitespace ignored), or undefined. */
  async findByEmail(email: string): Promise<UserRecord | undefined> {
    const e = normalizeEmail(email);
    if (e === undefined) return undefined;
    return this.#findByClaim('email', e, 'email');
  }

  /** The user holding this phone number, or undefined. */
  async findByPhone(phone: string): Promise<UserRecord | undefined> {
    const p = normalizePhone(phone);
    if (p === undefined) return undefined;
    return this.#findByClaim('phone', p, 'phone_number');
  }

  async #claim(kind: 'email' | 'phone', value: string, userId: string, transaction: Transaction): Promise<void> {
    try {
      await this.#sequelize.query('INSERT INTO user_identifiers (kind, value, user_id, created_at) VALUES (?, ?, ?, ?)', {
        replacements: [kind, value, userId, this.#now()],
        transaction,
      });
    } catch (err) {
      if (isUniqueConstraintError(err) || /unique|duplicate/i.test(String((err as Error)?.message))) {
        throw new LatchkeyError('already_exists', USER_EXISTS_MESSAGE, { reason: 'user_already_exists', cause: err });
      }
      throw err;
    }
  }

  /**
   * The record {@link create} would store for `fields` (normalised addresses,
   * a new id, this second's times), without storing anything: what a mail
   * rendered before the user exists is addressed to. Pass its id to `create`.
   */
  draft(fields: UserFields): UserRecord {
    const now = this.#now();
    const email = normalizeEmail(fields.email);
    const phone = normalizePhone(fields.phone_number);
    const record: Record<string, unknown> = { ...fields, email: email ?? null, phone_number: phone ?? null, id: randomUUID(), created_at: now, updated_at: now };
    return rowToRecord(Object.fromEntries(COLUMN_NAMES.map((c) => [c, toColumn(c, record[c])])));
  }

  /**
   * Creates a user; email and phone are normalised and claimed atomically.
   * `within` runs in the same transaction after the user row is written
   * (sign-up: its verification request and mail), so that either all of it
   * commits or nothing does; a deadlock retry runs it again. `id`: the id of
   * a {@link draft}. Throws `already_exists` when either address is held by
   * another user (then `within` has not run, or was rolled back).
   */
  async create(fields: UserFields, options: { id?: string; within?: (user: UserRecord, transaction: StoreTransaction) => Promise<void> } = {}): Promise<UserRecord> {
    const id = options.id ?? randomUUID();
    const now = this.#now();
    const email = normalizeEmail(fields.email);
    const phone = normalizePhone(fields.phone_number);
    const record: Record<string, unknown> = { ...fields, email: email ?? null, phone_number: phone ?? null, id, created_at: now, updated_at: now };
    const cols = COLUMN_NAMES.filter((c) => c in record);
    await this.#tx(async (transaction) => {
      if (email !== undefined) await this.#claim('email', email, id, transaction);
      if (phone !== undefined) await this.#claim('phone', phone, id, transaction);
      await this.#sequelize.query(`INSERT INTO users (${cols.join(', ')}) VALUES (${cols.map(() => '?').join(', ')})`, {
        replacements: cols.map((c) => toColumn(c, record[c])),
        transaction,
      });
      if (options.within !== undefined) {
        const stored = (await this.#select('id = ?', [id], transaction))[0];
        if (stored === undefined) throw new LatchkeyError('internal', 'user vanished after insert');
        await options.within(stored, transaction);
      }
    });
    const created = await this.findById(id);
    if (created === undefined) throw new LatchkeyError('internal', 'user vanished after insert');
    return created;
  }

  /**
   * Updates fields of a user. A changed email or phone is claimed (and the old
   * one released) in the same transaction. Returns the updated user.
   */
  async update(id: string, fields: UserFields, options: { transaction?: StoreTransaction } = {}): Promise<UserRecord> {
    const run = async (transaction: Transaction): Promise<UserRecord | undefined> => {
      const current = (await this.#select('id = ?', [id], transaction))[0];
      if (current === undefined) throw new LatchkeyError('not_found', 'user not found', { reason: 'user_not_found' });
      const patch: Record<string, unknown> = { ...fields };
      if ('email' in fields) {
        const email = normalizeEmail(fields.email);
        patch['email'] = email ?? null;
        const old = emailKey(current.email);
        if (email !== old) {
          if (old !== undefined)
            await this.#sequelize.query("DELETE FROM user_identifiers WHERE kind = 'email' AND value = ? AND user_id = ?", { replacements: [old, id], transaction });
          if (email !== undefined) await this.#claim('email', email, id, transaction);
        }
      }
      if ('phone_number' in fields) {
        const phone = normalizePhone(fields.phone_number);
        patch['phone_number'] = phone ?? null;
        const old = normalizePhone(current.phone_number);
        if (phone !== old) {
          if (old !== undefined)
            await this.#sequelize.query("DELETE FROM user_identifiers WHERE kind = 'phone' AND value = ? AND user_id = ?", { replacements: [old, id], transaction });
          if (phone !== undefined) await this.#claim('phone', phone, id, transaction);
        }
      }
      patch['updated_at'] = this.#now();
      const cols = COLUMN_NAMES.filter((c) => c !== 'id' && c !== 'created_at' && c in patch);
      await this.#sequelize.query(`UPDATE users SET ${cols.map((c) => `${c} = ?`).join(', ')} WHERE id = ?`, {
        replacements: [...cols.map((c) => toColumn(c, patch[c])), id],
        transaction,
      });
      return (await this.#select('id = ?', [id], transaction))[0];
    };
    const result = options.transaction === undefined ? await this.#tx(run) : await run(options.transaction as Transaction);
    if (result === undefined) throw new LatchkeyError('not_found', 'user not found', { reason: 'user_not_found' });
    return result;
  }

  /**
   * Deletes a user and releases its claims. Pass `transaction` to join a
   * larger one (the admin's delete also removes tuples and verification data).
   * Returns true when a row was deleted.
   */
  async delete(id: string, options: { transaction?: StoreTransaction } = {}): Promise<boolean> {
    const run = async (transaction: Transaction): Promise<boolean> => {
      const existing = (await this.#select('id = ?', [id], transaction))[0];
      await this.#sequelize.query('DELETE FROM user_identifiers WHERE user_id = ?', { replacements: [id], transaction });
      await this.#sequelize.query('DELETE FROM provider_identities WHERE user_id = ?', { replacements: [id], transaction });
      await this.#sequelize.query('DELETE FROM users WHERE id = ?', { replacements: [id], transaction });
      return existing !== undefined;
    };
    return options.transaction === undefined ? this.#tx(run) : run(options.transaction as Transaction);
  }

  /** A page of users ordered by creation time, with the total count. */
  async list(page: UserPage): Promise<{ users: UserRecord[]; total: number }> {
    const limit = Math.max(0, Math.floor(page.limit));
    const offset = Math.max(0, Math.floor(page.offset));
    const rows = await this.#sequelize.query<Record<string, unknown>>(`SELECT * FROM users ORDER BY created_at, id LIMIT ${limit} OFFSET ${offset}`, {
      type: QueryTypes.SELECT,
    });
    const [count] = await this.#sequelize.query<{ n: number | string }>('SELECT COUNT(*) AS n FROM users', { type: QueryTypes.SELECT });
    return { users: rows.map(rowToRecord), total: Number(count?.n ?? 0) };
  }

  /** How many user rows hold this email (tests use it to prove uniqueness under races). */
  async countByEmail(email: string): Promise<number> {
    const e = normalizeEmail(email);
    const [row] = await this.#sequelize.query<{ n: number | string }>('SELECT COUNT(*) AS n FROM users WHERE email = ?', {
      replacements: [e ?? ''],
      type: QueryTypes.SELECT,
    });
    return Number(row?.n ?? 0);
  }
}
