/**
 * Schema of the FGA tuple store on SQLite, PostgreSQL and MySQL/MariaDB,
 * applied by `runMigrations(sequelize, 'fga', FGA_MIGRATIONS)`.
 *
 * Tables (names prefixed `fga_`; every row belongs to one store, whose id
 * leads each key, since migration 0004):
 * - `fga_store`: one row per store (id, name, times) holding the store's
 *   revision; every write transaction starts by incrementing it, which also
 *   serialises that store's writers.
 * - `fga_tuple`: one row per tuple. Primary key `(store, object_type,
 *   object_id, relation, _user)` serves point and forward lookups (Check,
 *   Expand, ListUsers); `fga_tuple_reverse (store, _user, relation,
 *   object_type, object_id)`
 *   serves reverse lookups (ListObjects). `user_kind` is `o` (object), `w`
 *   (wildcard `type:*`) or `s` (userset `type:id#relation`), so Check reads
 *   only usersets where it needs them. The condition name and its stored
 *   context (JSON) are payload, not identity.
 * - `fga_changelog`: one row per tuple write or delete, keyed by
 *   `(store, revision, seq)`, written in the same transaction as the change.
 * - `fga_model`: one row per model version (ULID id, JSON), append-only.
 * - `fga_assertion`: the assertions of a model version (JSON).
 * - `expires_at` (since migration 0005, on `fga_tuple` and `fga_changelog`):
 *   when an expiring tuple stops granting, in ms since the epoch; NULL when
 *   it never expires.
 *
 * Identifiers compare byte-exact on every backend (openfga/openfga#3169:
 * MySQL's default collations made `user:Alice` and `user:alice` one user):
 * PostgreSQL columns use `COLLATE "C"`, MySQL columns `utf8mb4_bin`, and
 * SQLite's default BINARY collation is already byte-wise.
 *
 * Column lengths follow OpenFGA's MySQL schema, whose index-size limit
 * (3,072 bytes, 4 bytes per utf8mb4 character) is the tightest.
 */
import { DEFAULT_STORE_ID } from '../store.ts';
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
  {
    // Many stores (OpenFGA's): a store column leads every key, and the single store's data becomes the default
    // store. Primary keys cannot be altered in place on SQLite, so each table is rebuilt: created under a new
    // name, filled from the old one, the old one dropped (with its indexes, whose names are then free again),
    // the new one renamed. MySQL's index-size limit still holds: the reverse index is 715 characters, 2,860 bytes.
    id: '0004_stores',
    async up(ctx) {
      const d = ctx.dialect;
      const L = COLUMN_LIMITS;
      const suffix = tableSuffix(d);
      const plainSuffix = d === 'mysql' || d === 'mariadb' ? suffix : '';
      const store = idCol(d, 26);
      const q = (v: string): string => `'${v}'`;
      await exec(
        ctx,
        `CREATE TABLE fga_store (
          id ${store} NOT NULL PRIMARY KEY,
          name ${idCol(d, 256)} NOT NULL,
          revision BIGINT NOT NULL,
          created_at BIGINT NOT NULL,
          updated_at BIGINT NOT NULL
        )${plainSuffix}`,
      );
      const now = Date.now();
      await exec(ctx, `INSERT INTO fga_store (id, name, revision, created_at, updated_at) SELECT ${q(DEFAULT_STORE_ID)}, 'default', revision, ${now}, ${now} FROM fga_revision WHERE id = 1`);
      await exec(ctx, `INSERT INTO fga_store (id, name, revision, created_at, updated_at) SELECT ${q(DEFAULT_STORE_ID)}, 'default', 0, ${now}, ${now} FROM fga_revision WHERE NOT EXISTS (SELECT 1 FROM fga_store)`);
      await exec(ctx, 'DROP TABLE fga_revision');

      await exec(
        ctx,
        `CREATE TABLE fga_tuple_v4 (
          store ${store} NOT NULL,
          object_type ${idCol(d, L.objectType)} NOT NULL,
          object_id ${idCol(d, L.objectId)} NOT NULL,
          relation ${idCol(d, L.relation)} NOT NULL,
          _user ${idCol(d, L.user)} NOT NULL,
          user_kind CHAR(1) NOT NULL,
          condition_name ${idCol(d, L.conditionName)} NULL,
          condition_context ${textCol(d)} NULL,
          revision BIGINT NOT NULL,
          inserted_at BIGINT NOT NULL,
          PRIMARY KEY (store, object_type, object_id, relation, _user)
        )${suffix}`,
      );
      const tupleCols = 'object_type, object_id, relation, _user, user_kind, condition_name, condition_context, revision, inserted_at';
      await exec(ctx, `INSERT INTO fga_tuple_v4 (store, ${tupleCols}) SELECT ${q(DEFAULT_STORE_ID)}, ${tupleCols} FROM fga_tuple`);
      await exec(ctx, 'DROP TABLE fga_tuple');
      await exec(ctx, 'ALTER TABLE fga_tuple_v4 RENAME TO fga_tuple');
      await exec(ctx, 'CREATE INDEX fga_tuple_reverse ON fga_tuple (store, _user, relation, object_type, object_id)');
      if (d === 'postgres' || d === 'sqlite') {
        await exec(ctx, "CREATE INDEX fga_tuple_usersets ON fga_tuple (store, object_type, object_id, relation, _user) WHERE user_kind = 's'");
      }

      await exec(
        ctx,
        `CREATE TABLE fga_changelog_v4 (
          store ${store} NOT NULL,
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
          PRIMARY KEY (store, revision, seq)
        )${plainSuffix}`,
      );
      const changeCols = 'revision, seq, operation, object_type, object_id, relation, _user, condition_name, condition_context, inserted_at';
      await exec(ctx, `INSERT INTO fga_changelog_v4 (store, ${changeCols}) SELECT ${q(DEFAULT_STORE_ID)}, ${changeCols} FROM fga_changelog`);
      await exec(ctx, 'DROP TABLE fga_changelog');
      await exec(ctx, 'ALTER TABLE fga_changelog_v4 RENAME TO fga_changelog');
      await exec(ctx, 'CREATE INDEX fga_changelog_type ON fga_changelog (store, object_type, revision, seq)');

      await exec(
        ctx,
        `CREATE TABLE fga_model_v4 (
          store ${store} NOT NULL,
          id ${idCol(d, 26)} NOT NULL,
          model ${textCol(d)} NOT NULL,
          created_at BIGINT NOT NULL,
          PRIMARY KEY (store, id)
        )${plainSuffix}`,
      );
      await exec(ctx, `INSERT INTO fga_model_v4 (store, id, model, created_at) SELECT ${q(DEFAULT_STORE_ID)}, id, model, created_at FROM fga_model`);
      await exec(ctx, 'DROP TABLE fga_model');
      await exec(ctx, 'ALTER TABLE fga_model_v4 RENAME TO fga_model');

      await exec(
        ctx,
        `CREATE TABLE fga_assertion (
          store ${store} NOT NULL,
          model_id ${idCol(d, 26)} NOT NULL,
          assertions ${textCol(d)} NOT NULL,
          PRIMARY KEY (store, model_id)
        )${plainSuffix}`,
      );
    },
  },
  {
    // Expiring tuples: `expires_at` (ms since the epoch, NULL for a tuple that never expires) on the tuple and on
    // its changelog row. Reads leave out rows whose expiry has passed; collection finds them through the expiry
    // index (partial where the backend has partial indexes, so tuples that never expire cost it nothing).
    id: '0005_tuple_expiry',
    async up(ctx) {
      const d = ctx.dialect;
      await exec(ctx, 'ALTER TABLE fga_tuple ADD COLUMN expires_at BIGINT NULL');
      await exec(ctx, 'ALTER TABLE fga_changelog ADD COLUMN expires_at BIGINT NULL');
      if (d === 'postgres' || d === 'sqlite') await exec(ctx, 'CREATE INDEX fga_tuple_expiry ON fga_tuple (store, expires_at) WHERE expires_at IS NOT NULL');
      else await exec(ctx, 'CREATE INDEX fga_tuple_expiry ON fga_tuple (store, expires_at)');
    },
  },
];
