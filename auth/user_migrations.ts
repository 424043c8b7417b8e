/**
 * The `users` table's columns and the auth migrations of the main SQL
 * database (SQLite, PostgreSQL, MySQL/MariaDB), run by auth/user_store.ts at
 * startup: the table and its identifier claims (`user_identifiers`), the
 * columns added release by release, the email normalisations, and the
 * tables of other auth stores that live in this migration list. A released
 * migration keeps its meaning; a change is a new migration.
 */
import { QueryTypes } from '../engine/sql/sql_database.ts';
import type { Migration, MigrationContext, SqlDialect } from '../engine/sql/migrate.ts';
import { PROVIDER_IDENTITIES_MIGRATION } from './provider_identity_store.ts';
import { tableOptions, utf8mb4Migration } from './sql_charset.ts';
import { emailKey, normalizePhone } from './user_store_types.ts';

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
