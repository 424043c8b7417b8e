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
import { QueryTypes, Transaction, UniqueConstraintError, type Sequelize } from 'sequelize';
import { LatchkeyError } from '../engine/errors.ts';
import { runMigrations, type Migration, type MigrationContext, type SqlDialect } from '../engine/sql/migrate.ts';
import { isDeadlock } from './sql_conflicts.ts';
import { PROVIDER_IDENTITIES_MIGRATION } from './provider_identity_store.ts';
import { tableOptions, utf8mb4Migration } from './sql_charset.ts';
import type { StoreTransaction } from './main_database.ts';
import { USER_EXISTS_MESSAGE, emailKey, normalizeEmail, normalizePhone, type UserFields, type UserPage, type UserRecord, type UserStore } from './user_store_types.ts';

/** How long a write waits for an SQLite file another process holds, its turn in this process's queue included. */
const SQLITE_LOCK_WAIT_MS = 5000;

const COLUMNS: ReadonlyArray<[name: string, ddl: string]> = [
  ['id', 'VARCHAR(36) NOT NULL PRIMARY KEY'],
  ['email', 'VARCHAR(320) NULL'],
  ['email_verified_at', 'BIGINT NULL'],
  ['password', 'VARCHAR(255) NULL'],
  ['signup_methods', "VARCHAR(255) NOT NULL DEFAULT ''"],
  ['given_name', 'VARCHAR(256) NULL'],
  ['family_name', 'VARCHAR(256) NULL'],
  ['middle_name', 'VARCHAR(256) NULL'],
  ['nickname', 'VARCHAR(256) NULL'],
  ['gender', 'VARCHAR(64) NULL'],
  ['birthdate', 'VARCHAR(64) NULL'],
  ['phone_number', 'VARCHAR(64) NULL'],
  ['phone_number_verified_at', 'BIGINT NULL'],
  ['picture', 'TEXT NULL'],
  ['roles', "VARCHAR(1024) NOT NULL DEFAULT ''"],
  ['revoked_timestamp', 'BIGINT NULL'],
  ['is_multi_factor_auth_enabled', 'BOOLEAN NULL'],
  ['app_data', 'TEXT NULL'],
  ['deactivated_at', 'BIGINT NULL'],
  // The preferred language (OIDC Core §5.1 `locale`, a BCP 47 tag); added by 0006 to older tables.
  ['locale', 'VARCHAR(35) NULL'],
  ['created_at', 'BIGINT NOT NULL DEFAULT 0'],
  ['updated_at', 'BIGINT NOT NULL DEFAULT 0'],
];
/** The stored fields of a user, in column order. */
export const COLUMN_NAMES = COLUMNS.map(([n]) => n);
const IDENTIFIER_COLUMNS = ['email', 'phone_number'];

async function tableExists(ctx: MigrationContext, table: string): Promise<boolean> {
  const { sequelize, transaction, dialect } = ctx;
  const sql =
    dialect === 'sqlite'
      ? "SELECT name FROM sqlite_master WHERE type = 'table' AND name = ?"
      : dialect === 'postgres'
        ? 'SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() AND table_name = ?'
        : 'SELECT table_name FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name = ?';
  const rows = await sequelize.query(sql, { replacements: [table], transaction, type: QueryTypes.SELECT });
  return rows.length > 0;
}

async function existingColumns(ctx: MigrationContext, table: string): Promise<Set<string>> {
  const desc = await ctx.queryInterface.describeTable(table, { transaction: ctx.transaction } as never);
  return new Set(Object.keys(desc).map((c) => c.toLowerCase()));
}

function createUsersSql(table: string, dialect: SqlDialect): string {
  return `CREATE TABLE ${table} (${COLUMNS.map(([n, d]) => `${n} ${d}`).join(', ')})${tableOptions(dialect)}`;
}

/**
 * Drops unique constraints and unique indexes on `users.email` /
 * `users.phone_number` left by a v1 database. Exported for the startup path
 * and for tests; idempotent.
 */
export async function dropStaleIdentifierUniques(ctx: MigrationContext): Promise<string[]> {
  const { sequelize, transaction, dialect } = ctx;
  const dropped: string[] = [];
  const q = <T extends object>(sql: string, replacements: unknown[] = []) =>
    sequelize.query<T>(sql, { replacements, transaction, type: QueryTypes.SELECT });
  if (dialect === 'postgres') {
    const constraints = await q<{ name: string }>(
      `SELECT c.conname AS name FROM pg_constraint c
         JOIN pg_class t ON t.oid = c.conrelid
         JOIN pg_namespace n ON n.oid = t.relnamespace
        WHERE t.relname = 'users' AND n.nspname = current_schema() AND c.contype = 'u'
          AND EXISTS (SELECT 1 FROM pg_attribute a WHERE a.attrelid = t.oid AND a.attnum = ANY (c.conkey)
                      AND a.attname IN ('email', 'phone_number'))`,
    );
    for (const { name } of constraints) {
      await sequelize.query(`ALTER TABLE users DROP CONSTRAINT "${name.replace(/"/g, '""')}"`, { transaction });
      dropped.push(name);
    }
    const indexes = await q<{ name: string }>(
      `SELECT i.relname AS name FROM pg_index x
         JOIN pg_class i ON i.oid = x.indexrelid
         JOIN pg_class t ON t.oid = x.indrelid
         JOIN pg_namespace n ON n.oid = t.relnamespace
        WHERE t.relname = 'users' AND n.nspname = current_schema() AND x.indisunique AND NOT x.indisprimary
          AND EXISTS (SELECT 1 FROM pg_attribute a WHERE a.attrelid = t.oid AND a.attnum = ANY (x.indkey)
                      AND a.attname IN ('email', 'phone_number'))`,
    );
    for (const { name } of indexes) {
      await sequelize.query(`DROP INDEX IF EXISTS "${name.replace(/"/g, '""')}"`, { transaction });
      dropped.push(name);
    }
  } else if (dialect === 'mysql' || dialect === 'mariadb') {
    const rows = await q<{ Key_name: string; Non_unique: number | string; Column_name: string }>('SHOW INDEX FROM users');
    const names = new Set(
      rows
        .filter((r) => Number(r.Non_unique) === 0 && r.Key_name !== 'PRIMARY' && IDENTIFIER_COLUMNS.includes(r.Column_name))
        .map((r) => r.Key_name),
    );
    for (const name of names) {
      await sequelize.query(`DROP INDEX \`${name.replace(/`/g, '``')}\` ON users`, { transaction });
      dropped.push(name);
    }
  } else {
    const list = await q<{ name: string; unique: number; origin: string }>("SELECT * FROM pragma_index_list('users')");
    let rebuild = false;
    for (const idx of list) {
      if (!Number(idx.unique) || idx.origin === 'pk') continue;
      const cols = await q<{ name: string }>('SELECT name FROM pragma_index_info(?)', [idx.name]);
      if (!cols.some((c) => IDENTIFIER_COLUMNS.includes(c.name))) continue;
      if (idx.origin === 'c') {
        await sequelize.query(`DROP INDEX "${idx.name.replace(/"/g, '""')}"`, { transaction });
      } else {
        rebuild = true; // an inline UNIQUE constraint: SQLite can only drop it by rebuilding the table
      }
      dropped.push(idx.name);
    }
    if (rebuild) {
      const have = await existingColumns(ctx, 'users');
      const common = COLUMN_NAMES.filter((c) => have.has(c)).join(', ');
      await sequelize.query(createUsersSql('users_rebuild', dialect), { transaction });
      await sequelize.query(`INSERT INTO users_rebuild (${common}) SELECT ${common} FROM users`, { transaction });
      await sequelize.query('DROP TABLE users', { transaction });
      await sequelize.query('ALTER TABLE users_rebuild RENAME TO users', { transaction });
    }
  }
  return dropped;
}

async function ensureIndexes(ctx: MigrationContext): Promise<void> {
  const { sequelize, transaction, dialect } = ctx;
  const wanted: Array<[string, string]> = [
    ['users_email_idx', 'email'],
    ['users_phone_number_idx', 'phone_number'],
  ];
  for (const [name, col] of wanted) {
    if (dialect === 'mysql' || dialect === 'mariadb') {
      const rows = await sequelize.query<{ Key_name: string }>('SHOW INDEX FROM users', { transaction, type: QueryTypes.SELECT });
      if (rows.some((r) => r.Key_name === name)) continue;
      await sequelize.query(`CREATE INDEX ${name} ON users (${col})`, { transaction });
    } else {
      await sequelize.query(`CREATE INDEX IF NOT EXISTS ${name} ON users (${col})`, { transaction });
    }
  }
}

/** The identity store's migrations (component `auth`). */
export const AUTH_MIGRATIONS: readonly Migration[] = [
  {
    id: '0001_users',
    async up(ctx) {
      if (!(await tableExists(ctx, 'users'))) {
        await ctx.sequelize.query(createUsersSql('users', ctx.dialect), { transaction: ctx.transaction });
      } else {
        // A v1 database: bring its table up to this schema.
        await dropStaleIdentifierUniques(ctx);
        const have = await existingColumns(ctx, 'users');
        for (const [name, ddl] of COLUMNS) {
          if (!have.has(name)) await ctx.sequelize.query(`ALTER TABLE users ADD COLUMN ${name} ${ddl}`, { transaction: ctx.transaction });
        }
      }
      await ensureIndexes(ctx);
    },
  },
  {
    id: '0002_user_identifiers',
    async up(ctx) {
      const { sequelize, transaction } = ctx;
      await sequelize.query(
        `CREATE TABLE user_identifiers (kind VARCHAR(8) NOT NULL, value VARCHAR(320) NOT NULL, user_id VARCHAR(36) NOT NULL, created_at BIGINT NOT NULL, PRIMARY KEY (kind, value))${tableOptions(ctx.dialect)}`,
        { transaction },
      );
      await sequelize.query('CREATE INDEX user_identifiers_user_idx ON user_identifiers (user_id)', { transaction });
      // Backfill from existing rows (a v1 database); the first holder of a duplicated address keeps it.
      const rows = await sequelize.query<{ id: string; email: string | null; phone_number: string | null }>(
        'SELECT id, email, phone_number FROM users ORDER BY created_at, id',
        { transaction, type: QueryTypes.SELECT },
      );
      const seen = new Set<string>();
      for (const r of rows) {
        for (const [kind, value] of [
          ['email', nfcEmail(r.email)],
          ['phone', normalizePhone(r.phone_number)],
        ] as const) {
          if (value === undefined || seen.has(`${kind}:${value}`)) continue;
          seen.add(`${kind}:${value}`);
          await sequelize.query('INSERT INTO user_identifiers (kind, value, user_id, created_at) VALUES (?, ?, ?, ?)', {
            replacements: [kind, value, r.id, Math.floor(Date.now() / 1000)],
            transaction,
          });
        }
      }
    },
  },
  {
    // Emails stored before NFC normalisation: rewritten in the normalised form,
    // with their claims (rekeyEmails).
    id: '0003_email_nfc',
    up: (ctx) => rekeyEmails(ctx, nfcEmail),
  },
  // MySQL/MariaDB: utf8mb4 with a byte-wise collation, as on the other backends (auth/sql_charset.ts).
  utf8mb4Migration('0004_utf8mb4', ['users', 'user_identifiers']),
  {
    // Emails stored before width and invisible-character normalisation
    // (`ｋａｔｅ@…`, `ka\u200bte@…`): rewritten to their emailKey, with their
    // claims (rekeyEmails). After 0004, so that MySQL compares claims byte for byte.
    id: '0005_email_key',
    up: (ctx) => rekeyEmails(ctx, emailKey),
  },
  {
    // The user's preferred language (`locale`). A table 0001 created after the
    // column joined COLUMNS has it already.
    id: '0006_locale',
    async up(ctx) {
      if (!(await existingColumns(ctx, 'users')).has('locale')) {
        await ctx.sequelize.query('ALTER TABLE users ADD COLUMN locale VARCHAR(35) NULL', { transaction: ctx.transaction });
      }
    },
  },
  PROVIDER_IDENTITIES_MIGRATION,
];

/**
 * The normalisation of 0002 and 0003 (trim, NFC, lower-case), kept as they
 * ran: a released migration keeps its meaning; 0005 brings their rows to
 * {@link emailKey}.
 */
function nfcEmail(email: string | null | undefined): string | undefined {
  if (email === null || email === undefined) return undefined;
  const e = email.trim().normalize('NFC').toLowerCase().normalize('NFC');
  return e.length === 0 ? undefined : e;
}

/**
 * Rewrites every stored email that `key` changes to its key, with its claim,
 * in creation order. Two rows whose addresses now have one key (`kate@…` and
 * `ｋａｔｅ@…`) are never merged and neither is dropped: the row that already
 * holds the key's claim keeps it (the account that address has been reaching
 * goes on being reached by it), or else the first created row takes it. The
 * other row keeps its stored address, its password and everything else, but
 * no claim on the key: no login, reset or link by email reaches it, sign-up
 * with any spelling of the address is `already_exists`, and a super-admin
 * sees it in the user list, to give it another address or delete it. A key
 * longer than the column (NFKC can lengthen a string) leaves its row as it is.
 */
async function rekeyEmails(ctx: MigrationContext, key: (email: string) => string | undefined): Promise<void> {
  const { sequelize, transaction } = ctx;
  const rows = await sequelize.query<{ id: string; email: string }>('SELECT id, email FROM users WHERE email IS NOT NULL ORDER BY created_at, id', {
    transaction,
    type: QueryTypes.SELECT,
  });
  for (const r of rows) {
    const normal = key(r.email);
    if (normal === undefined || normal === r.email || normal.length > 320) continue;
    const holder = await sequelize.query<{ user_id: string }>("SELECT user_id FROM user_identifiers WHERE kind = 'email' AND value = ?", {
      replacements: [normal],
      transaction,
      type: QueryTypes.SELECT,
    });
    if (holder.length > 0 && holder[0]!.user_id !== r.id) continue;
    await sequelize.query("DELETE FROM user_identifiers WHERE kind = 'email' AND user_id = ?", { replacements: [r.id], transaction });
    await sequelize.query('INSERT INTO user_identifiers (kind, value, user_id, created_at) VALUES (?, ?, ?, ?)', {
      replacements: ['email', normal, r.id, Math.floor(Date.now() / 1000)],
      transaction,
    });
    await sequelize.query('UPDATE users SET email = ? WHERE id = ?', { replacements: [normal, r.id], transaction });
  }
}

function toBool(v: unknown): boolean | null {
  if (v === null || v === undefined) return null;
  return v === true || v === 1 || v === '1' || v === 't' || v === 'true';
}

function toNum(v: unknown): number | null {
  if (v === null || v === undefined) return null;
  const n = Number(v);
  return Number.isFinite(n) ? n : null;
}

/** A stored row (SQL columns, or a DynamoDB item with the same attributes) as a record. */
export function rowToRecord(r: Record<string, unknown>): UserRecord {
  let appData: Record<string, unknown> | null = null;
  if (typeof r['app_data'] === 'string' && r['app_data'].length > 0) {
    try {
      const parsed: unknown = JSON.parse(r['app_data']);
      if (parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed)) appData = parsed as Record<string, unknown>;
    } catch {
      appData = null;
    }
  }
  const str = (k: string): string | null => (r[k] === null || r[k] === undefined ? null : String(r[k]));
  return {
    id: String(r['id']),
    email: str('email'),
    email_verified_at: toNum(r['email_verified_at']),
    password: str('password'),
    signup_methods: str('signup_methods') ?? '',
    given_name: str('given_name'),
    family_name: str('family_name'),
    middle_name: str('middle_name'),
    nickname: str('nickname'),
    gender: str('gender'),
    birthdate: str('birthdate'),
    phone_number: str('phone_number'),
    phone_number_verified_at: toNum(r['phone_number_verified_at']),
    picture: str('picture'),
    roles: (str('roles') ?? '')
      .split(',')
      .map((s) => s.trim())
      .filter((s) => s.length > 0),
    revoked_timestamp: toNum(r['revoked_timestamp']),
    is_multi_factor_auth_enabled: toBool(r['is_multi_factor_auth_enabled']),
    app_data: appData,
    deactivated_at: toNum(r['deactivated_at']),
    locale: str('locale'),
    created_at: toNum(r['created_at']) ?? 0,
    updated_at: toNum(r['updated_at']) ?? 0,
  };
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
  sequelize: Sequelize;
  /** Seconds since the epoch. Default from `Date.now`. */
  nowSeconds?: () => number;
}

/**
 * The {@link UserStore} on SQL: the `users` table and its `user_identifiers`
 * claims, each change one transaction.
 */
export class SqlUserStore implements UserStore {
  readonly #sequelize: Sequelize;
  readonly #dialect: SqlDialect;
  readonly #now: () => number;
  #sqliteQueue: Promise<void> = Promise.resolve();
  /** When a write last found the SQLite file held by another process (unix ms). */
  #busyAt = 0;

  constructor(options: UserStoreOptions) {
    this.#sequelize = options.sequelize;
    const d = options.sequelize.getDialect();
    if (d !== 'sqlite' && d !== 'postgres' && d !== 'mysql' && d !== 'mariadb') {
      throw new LatchkeyError('invalid_argument', `unsupported SQL dialect ${d}`, { reason: 'invalid_option' });
    }
    this.#dialect = d;
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
          return await this.#sequelize.transaction({ type: Transaction.TYPES.IMMEDIATE }, fn);
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

  async #select(where: string, replacements: unknown[], transaction?: Transaction): Promise<UserRecord[]> {
    const rows = await this.#sequelize.query<Record<string, unknown>>(`SELECT * FROM users WHERE ${where}`, {
      replacements,
      type: QueryTypes.SELECT,
      ...(transaction === undefined ? {} : { transaction }),
    });
    return rows.map(rowToRecord);
  }

  /** The user with this id, or undefined. */
  async findById(id: string): Promise<UserRecord | undefined> {
    if (typeof id !== 'string' || id.length === 0 || id.length > 36) return undefined;
    return (await this.#select('id = ?', [id]))[0];
  }

  /** One query through the claim (login's hot path); falls back to the column for rows without a claim. */
  async #findByClaim(kind: 'email' | 'phone', value: string, column: 'email' | 'phone_number'): Promise<UserRecord | undefined> {
    const rows = await this.#sequelize.query<Record<string, unknown>>(
      'SELECT u.* FROM user_identifiers c JOIN users u ON u.id = c.user_id WHERE c.kind = ? AND c.value = ?',
      { replacements: [kind, value], type: QueryTypes.SELECT },
    );
    if (rows[0] !== undefined) return rowToRecord(rows[0]);
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
      if (err instanceof UniqueConstraintError || /unique|duplicate/i.test(String((err as Error)?.message))) {
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
