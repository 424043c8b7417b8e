/**
 * Versioned, idempotent schema migrations for every SQL-backed component
 * (the FGA tuple store, the identity store, the admin store).
 *
 * Each component owns an ordered list of {@link Migration}s. `runMigrations`
 * applies the ones not yet recorded in `latchkey_migrations`, in order, under a
 * database-wide lock so that two processes starting at once never run one
 * migration twice. Running it again is a no-op. No `sync({ alter })` is used
 * anywhere: the schema is exactly what the migrations say.
 */
import type { Transaction } from 'sequelize';
import type { SqlDatabase } from './sql_database.ts';

/** The SQL dialects the project supports. */
export type SqlDialect = 'sqlite' | 'postgres' | 'mysql' | 'mariadb';

export interface MigrationContext {
  sequelize: SqlDatabase;
  queryInterface: ReturnType<SqlDatabase['getQueryInterface']>;
  /** The migration run's transaction; pass it to every query. */
  transaction: Transaction;
  dialect: SqlDialect;
}

export interface Migration {
  /** Sortable, unique within its component, never renamed once released: `0001_create_users`. */
  id: string;
  up(ctx: MigrationContext): Promise<void>;
}

const TABLE = 'latchkey_migrations';

function dialectOf(sequelize: SqlDatabase): SqlDialect {
  const d = sequelize.getDialect();
  if (d === 'sqlite' || d === 'postgres' || d === 'mysql' || d === 'mariadb') return d;
  throw new Error(`unsupported SQL dialect: ${d}`);
}

/** A stable 32-bit key for PostgreSQL's advisory lock. */
const PG_LOCK_KEY = 0x4c4b4d47; // "LKMG"

/**
 * Applies the pending migrations of `component`, in id order, and returns the
 * ids it applied (empty when the schema was already current).
 */
export async function runMigrations(
  sequelize: SqlDatabase,
  component: string,
  migrations: readonly Migration[],
): Promise<string[]> {
  const ids = migrations.map((m) => m.id);
  if (new Set(ids).size !== ids.length) throw new Error(`duplicate migration id in ${component}`);
  const ordered = [...migrations].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  const dialect = dialectOf(sequelize);
  const queryInterface = sequelize.getQueryInterface();
  const applied: string[] = [];

  await sequelize.transaction(async (transaction) => {
    if (dialect === 'postgres') {
      await sequelize.query(`SELECT pg_advisory_xact_lock(${PG_LOCK_KEY})`, { transaction });
    } else if (dialect === 'mysql' || dialect === 'mariadb') {
      await sequelize.query(`SELECT GET_LOCK('${TABLE}', 60)`, { transaction });
    }
    try {
      await sequelize.query(
        `CREATE TABLE IF NOT EXISTS ${TABLE} (component VARCHAR(64) NOT NULL, id VARCHAR(128) NOT NULL, applied_at BIGINT NOT NULL, PRIMARY KEY (component, id))`,
        { transaction },
      );
      const [rows] = await sequelize.query(`SELECT id FROM ${TABLE} WHERE component = ?`, {
        replacements: [component],
        transaction,
      });
      const done = new Set((rows as Array<{ id: string }>).map((r) => r.id));
      for (const m of ordered) {
        if (done.has(m.id)) continue;
        await m.up({ sequelize, queryInterface, transaction, dialect });
        await sequelize.query(`INSERT INTO ${TABLE} (component, id, applied_at) VALUES (?, ?, ?)`, {
          replacements: [component, m.id, Date.now()],
          transaction,
        });
        applied.push(m.id);
      }
    } finally {
      if (dialect === 'mysql' || dialect === 'mariadb') {
        await sequelize.query(`SELECT RELEASE_LOCK('${TABLE}')`, { transaction });
      }
    }
  });
  return applied;
}
