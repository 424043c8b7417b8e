/**
 * Schema of the FGA tuple store on SQLite, PostgreSQL and MySQL/MariaDB,
 * applied by `runMigrations(sequelize, 'fga', FGA_MIGRATIONS)`.
 *
 * Tables (one FGA store per database; names prefixed `fga_`):
 * - `fga_tuple`: one row per tuple. Primary key `(object_type, object_id,
 *   relation, _user)` serves point and forward lookups (Check, Expand,
 *   ListUsers); `fga_tuple_reverse (_user, relation, object_type, object_id)`
 *   serves reverse lookups (ListObjects). `user_kind` is `o` (object), `w`
 *   (wildcard `type:*`) or `s` (userset `type:id#relation`), so Check reads
 *   only usersets where it needs them. The condition name and its stored
 *   context (JSON) are payload, not identity.
 * - `fga_changelog`: one row per tuple write or delete, keyed by
 *   `(revision, seq)`, written in the same transaction as the change.
 * - `fga_revision`: a single row holding the store revision; every write
 *   transaction starts by incrementing it, which also serialises writers.
 * - `fga_model`: one row per model version (ULID id, JSON), append-only.
 *
 * Identifiers compare byte-exact on every backend (openfga/openfga#3169:
 * MySQL's default collations made `user:Alice` and `user:alice` one user):
 * PostgreSQL columns use `COLLATE "C"`, MySQL columns `utf8mb4_bin`, and
 * SQLite's default BINARY collation is already byte-wise.
 *
 * Column lengths follow OpenFGA's MySQL schema, whose index-size limit
 * (3,072 bytes, 4 bytes per utf8mb4 character) is the tightest.
 */
import type { Migration, MigrationContext, SqlDialect } from './migrate.ts';

/** Maximum lengths of the identifier columns (characters). */
export const COLUMN_LIMITS = { objectType: 128, objectId: 255, relation: 50, user: 256, conditionName: 256 } as const;

function idCol(dialect: SqlDialect, length: number): string {
  if (dialect === 'postgres') return `VARCHAR(${length}) COLLATE "C"`;
  if (dialect === 'mysql' || dialect === 'mariadb') return `VARCHAR(${length}) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin`;
  return `VARCHAR(${length})`;
}

function textCol(dialect: SqlDialect): string {
  if (dialect === 'mysql' || dialect === 'mariadb') return 'LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin';
  return 'TEXT';
}

function tableSuffix(dialect: SqlDialect): string {
  if (dialect === 'mysql' || dialect === 'mariadb') return ' ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin';
  if (dialect === 'sqlite') return ' WITHOUT ROWID';
  return '';
}

async function exec(ctx: MigrationContext, sql: string): Promise<void> {
  await ctx.sequelize.query(sql, { transaction: ctx.transaction });
}

export const FGA_MIGRATIONS: readonly Migration[] = [
  {
    id: '0001_create_fga_tables',
    async up(ctx) {
      const d = ctx.dialect;
      const L = COLUMN_LIMITS;
      const suffix = tableSuffix(d);
      const plainSuffix = d === 'mysql' || d === 'mariadb' ? suffix : '';
      await exec(
        ctx,
        `CREATE TABLE fga_tuple (
          object_type ${idCol(d, L.objectType)} NOT NULL,
          object_id ${idCol(d, L.objectId)} NOT NULL,
          relation ${idCol(d, L.relation)} NOT NULL,
          _user ${idCol(d, L.user)} NOT NULL,
          user_kind CHAR(1) NOT NULL,
          condition_name ${idCol(d, L.conditionName)} NULL,
          condition_context ${textCol(d)} NULL,
          revision BIGINT NOT NULL,
          inserted_at BIGINT NOT NULL,
          PRIMARY KEY (object_type, object_id, relation, _user)
        )${suffix}`,
      );
      // User first (as OpenFGA's idx_user_lookup): an index led by (object_type, relation) would also match
      // forward lookups, and PostgreSQL then picked it for them, scanning every tuple of the relation.
      await exec(ctx, 'CREATE INDEX fga_tuple_reverse ON fga_tuple (_user, relation, object_type, object_id)');
      await exec(
        ctx,
        `CREATE TABLE fga_changelog (
          revision BIGINT NOT NULL,
          seq INTEGER NOT NULL,
          operation CHAR(1) NOT NULL,
          object_type ${idCol(d, L.objectType)} NOT NULL,
          object_id ${idCol(d, L.objectId)} NOT NULL,
          relation ${idCol(d, L.relation)} NOT NULL,
          _user ${idCol(d, L.user)} NOT NULL,
          condition_name ${idCol(d, L.conditionName)} NULL,
          condition_context ${textCol(d)} NULL,
          inserted_at BIGINT NOT NULL,
          PRIMARY KEY (revision, seq)
        )${plainSuffix}`,
      );
      await exec(ctx, 'CREATE INDEX fga_changelog_type ON fga_changelog (object_type, revision, seq)');
      await exec(ctx, `CREATE TABLE fga_revision (id INTEGER NOT NULL PRIMARY KEY, revision BIGINT NOT NULL)${plainSuffix}`);
      await exec(ctx, 'INSERT INTO fga_revision (id, revision) VALUES (1, 0)');
      await exec(
        ctx,
        `CREATE TABLE fga_model (
          id ${idCol(d, 26)} NOT NULL PRIMARY KEY,
          model ${textCol(d)} NOT NULL,
          created_at BIGINT NOT NULL
        )${plainSuffix}`,
      );
    },
  },
  {
    // PostgreSQL keeps rows in a heap apart from its indexes: reading only the usersets of an object relation
    // (the evaluator's userset step) scanned the primary key and fetched every row from the heap to test
    // user_kind: 0.5-0.9 ms for a group with about 70 members at 1 M tuples. A partial index holds the usersets
    // alone. SQLite (WITHOUT ROWID) and InnoDB keep rows in the primary key, where that test costs no fetch.
    id: '0002_usersets_index',
    async up(ctx) {
      if (ctx.dialect !== 'postgres') return;
      await exec(ctx, "CREATE INDEX fga_tuple_usersets ON fga_tuple (object_type, object_id, relation, _user) WHERE user_kind = 's'");
    },
  },
  {
    // SQLite keeps rows in the primary key, but testing user_kind still decodes every row of the object relation:
    // 13 µs for a group of 80 members at 1 M tuples, 3 µs through this index (its keys alone, then a primary-key
    // lookup per userset; engine/sql/level_reads.ts). Most of a cold 5-hop check's SQL time went to that test.
    id: '0003_sqlite_usersets_index',
    async up(ctx) {
      if (ctx.dialect !== 'sqlite') return;
      await exec(ctx, "CREATE INDEX fga_tuple_usersets ON fga_tuple (object_type, object_id, relation, _user) WHERE user_kind = 's'");
    },
  },
];
