/**
 * The character set of the identity tables on MySQL/MariaDB: `utf8mb4` with
 * the byte-wise `utf8mb4_bin` collation, as the FGA tables have
 * (engine/sql/fga_migrations.ts).
 *
 * - `utf8mb4`, because MySQL's `utf8` (utf8mb3) and a server default of
 *   `latin1` cannot store characters outside the Basic Multilingual Plane:
 *   an emoji or a supplementary CJK character in a name or an address was
 *   refused by the database (strict mode) and answered `internal`.
 * - `utf8mb4_bin`, because emails and phone numbers are normalised by the
 *   service before they are stored or compared (NFC, then lower case; see
 *   `normalizeEmail`), and PostgreSQL and SQLite then compare them byte for
 *   byte. A `_ci`/`_ai` collation would fold more than the service does:
 *   `josé@…` and `jose@…`, two addresses on the other backends, would be one
 *   claim on MySQL.
 *
 * Tables are created with these options, and a migration converts the tables
 * of a database created before (or under a server default of another
 * character set), their existing text kept.
 */
import type { Migration, SqlDialect } from '../engine/sql/migrate.ts';

/** The table options of a new table: the character set and collation on MySQL/MariaDB, nothing elsewhere. */
export function tableOptions(dialect: SqlDialect): string {
  return dialect === 'mysql' || dialect === 'mariadb' ? ' ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin' : '';
}

/**
 * A migration that converts `tables` (with every text column and its
 * existing values) to utf8mb4 / utf8mb4_bin on MySQL/MariaDB; a no-op on the
 * other backends, whose text is always UTF-8.
 */
export function utf8mb4Migration(id: string, tables: readonly string[]): Migration {
  return {
    id,
    async up({ sequelize, transaction, dialect }) {
      if (dialect !== 'mysql' && dialect !== 'mariadb') return;
      for (const table of tables) {
        await sequelize.query(`ALTER TABLE ${table} CONVERT TO CHARACTER SET utf8mb4 COLLATE utf8mb4_bin`, { transaction });
      }
    },
  };
}
