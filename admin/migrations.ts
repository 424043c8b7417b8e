/**
 * Schema of the admin store: webhooks, their delivery outbox and attempt
 * logs, email templates, the audit log and admin sessions. Applied with
 * `runMigrations(sequelize, 'admin', ADMIN_MIGRATIONS)`.
 *
 * Column types are the portable subset of SQLite, PostgreSQL and MySQL:
 * times are BIGINT unix milliseconds, booleans SMALLINT 0/1, JSON is TEXT.
 * On MySQL/MariaDB every table is utf8mb4 with the byte-wise utf8mb4_bin
 * collation, as the identity and FGA tables are (auth/sql_charset.ts says
 * why): template bodies, webhook payloads and names hold any Unicode
 * character, emoji and supplementary CJK included, and compare as on the
 * other backends. Tables of a database created before are converted
 * (`0003_utf8mb4`). `audit_chain_lock` holds one row that audit appends
 * inside a transaction lock to take the chain head in turn
 * (`0004_audit_chain_lock`, admin/audit_log.ts).
 */
import type { SqlDatabase } from '../engine/sql/sql_database.ts';
import { runMigrations, type Migration, type SqlDialect } from '../engine/sql/migrate.ts';

const isMysql = (dialect: SqlDialect): boolean => dialect === 'mysql' || dialect === 'mariadb';

/** The options of a new table: utf8mb4 / utf8mb4_bin on MySQL/MariaDB, nothing elsewhere. */
const tableOptions = (dialect: SqlDialect): string => (isMysql(dialect) ? ' ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin' : '');

/** The admin tables, converted to utf8mb4 by `0003_utf8mb4`. */
const TABLES = ['webhooks', 'webhook_deliveries', 'webhook_logs', 'email_templates', 'audit_logs', 'admin_sessions', 'mail_outbox'] as const;

const statements: string[] = [
  `CREATE TABLE webhooks (
    id VARCHAR(36) NOT NULL PRIMARY KEY,
    event_name VARCHAR(100) NOT NULL,
    event_description VARCHAR(256) NOT NULL,
    endpoint VARCHAR(2048) NOT NULL,
    headers TEXT NOT NULL,
    enabled SMALLINT NOT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL)`,
  'CREATE INDEX webhooks_event_name ON webhooks (event_name)',
  `CREATE TABLE webhook_deliveries (
    id VARCHAR(36) NOT NULL PRIMARY KEY,
    webhook_id VARCHAR(36) NOT NULL,
    event_name VARCHAR(100) NOT NULL,
    payload TEXT NOT NULL,
    status VARCHAR(16) NOT NULL,
    attempts INTEGER NOT NULL,
    next_attempt_at BIGINT NOT NULL,
    lease_until BIGINT NOT NULL,
    last_http_status INTEGER NOT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL)`,
  'CREATE INDEX webhook_deliveries_due ON webhook_deliveries (status, next_attempt_at)',
  'CREATE INDEX webhook_deliveries_webhook ON webhook_deliveries (webhook_id)',
  `CREATE TABLE webhook_logs (
    id VARCHAR(36) NOT NULL PRIMARY KEY,
    webhook_id VARCHAR(36) NOT NULL,
    delivery_id VARCHAR(36) NOT NULL,
    event_name VARCHAR(100) NOT NULL,
    attempt INTEGER NOT NULL,
    http_status INTEGER NOT NULL,
    duration_ms INTEGER NOT NULL,
    outcome VARCHAR(16) NOT NULL,
    error VARCHAR(256) NOT NULL,
    request TEXT NOT NULL,
    response TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL)`,
  'CREATE INDEX webhook_logs_webhook ON webhook_logs (webhook_id, created_at)',
  `CREATE TABLE email_templates (
    id VARCHAR(36) NOT NULL PRIMARY KEY,
    event_name VARCHAR(64) NOT NULL,
    subject VARCHAR(512) NOT NULL,
    template TEXT NOT NULL,
    design TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL)`,
  'CREATE UNIQUE INDEX email_templates_event_name ON email_templates (event_name)',
  `CREATE TABLE audit_logs (
    id VARCHAR(36) NOT NULL PRIMARY KEY,
    seq BIGINT NOT NULL,
    actor_id VARCHAR(64) NOT NULL,
    actor_type VARCHAR(30) NOT NULL,
    actor_email VARCHAR(256) NOT NULL,
    action VARCHAR(100) NOT NULL,
    resource_type VARCHAR(50) NOT NULL,
    resource_id VARCHAR(256) NOT NULL,
    ip_address VARCHAR(45) NOT NULL,
    user_agent VARCHAR(512) NOT NULL,
    metadata TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    prev_hash VARCHAR(64) NOT NULL,
    hash VARCHAR(64) NOT NULL)`,
  'CREATE UNIQUE INDEX audit_logs_seq ON audit_logs (seq)',
  'CREATE INDEX audit_logs_actor ON audit_logs (actor_id)',
  'CREATE INDEX audit_logs_action ON audit_logs (action)',
  'CREATE INDEX audit_logs_resource ON audit_logs (resource_type, resource_id)',
  `CREATE TABLE admin_sessions (
    id_hash VARCHAR(64) NOT NULL PRIMARY KEY,
    ip_address VARCHAR(45) NOT NULL,
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL)`,
];

/** The admin component's migrations, in order. */
export const ADMIN_MIGRATIONS: readonly Migration[] = [
  {
    id: '0001_admin_tables',
    async up({ sequelize, transaction, dialect }) {
      for (const sql of statements) await sequelize.query(sql.startsWith('CREATE TABLE') ? `${sql}${tableOptions(dialect)}` : sql, { transaction });
    },
  },
  {
    id: '0002_mail_outbox',
    async up({ sequelize, transaction, dialect }) {
      // A mail body can exceed MySQL's 64 KiB TEXT.
      const body = dialect === 'mysql' || dialect === 'mariadb' ? 'MEDIUMTEXT' : 'TEXT';
      await sequelize.query(
        `CREATE TABLE mail_outbox (
          id VARCHAR(36) NOT NULL PRIMARY KEY,
          recipient VARCHAR(320) NOT NULL,
          subject VARCHAR(1024) NOT NULL,
          html ${body} NOT NULL,
          text_body ${body} NOT NULL,
          status VARCHAR(16) NOT NULL,
          attempts INTEGER NOT NULL,
          next_attempt_at BIGINT NOT NULL,
          lease_until BIGINT NOT NULL,
          created_at BIGINT NOT NULL,
          updated_at BIGINT NOT NULL)${tableOptions(dialect)}`,
        { transaction },
      );
      await sequelize.query('CREATE INDEX mail_outbox_due ON mail_outbox (status, next_attempt_at)', { transaction });
    },
  },
  {
    // Tables made before under a server default of latin1 or utf8 (utf8mb3): converted with their text.
    id: '0003_utf8mb4',
    async up({ sequelize, transaction, dialect }) {
      if (!isMysql(dialect)) return;
      for (const table of TABLES) await sequelize.query(`ALTER TABLE ${table} CONVERT TO CHARACTER SET utf8mb4 COLLATE utf8mb4_bin`, { transaction });
    },
  },
  {
    // A row lock rather than a lock on the head row itself: on MySQL a locking read of the head also
    // locks the gap above it, two such gap locks are granted together, and the two inserts then deadlock.
    id: '0004_audit_chain_lock',
    async up({ sequelize, transaction, dialect }) {
      await sequelize.query(`CREATE TABLE audit_chain_lock (id SMALLINT NOT NULL PRIMARY KEY)${tableOptions(dialect)}`, { transaction });
      await sequelize.query('INSERT INTO audit_chain_lock (id) VALUES (1)', { transaction });
    },
  },
  {
    // Text messages wait in the same outbox as mails; a row's channel says which sender takes it.
    id: '0005_outbox_channel',
    async up({ sequelize, transaction }) {
      await sequelize.query("ALTER TABLE mail_outbox ADD COLUMN channel VARCHAR(8) NOT NULL DEFAULT 'mail'", { transaction });
    },
  },
  {
    // Email templates per language: '' is the template for every language (what every template was before).
    id: '0006_email_template_language',
    async up({ sequelize, transaction, dialect }) {
      await sequelize.query("ALTER TABLE email_templates ADD COLUMN language VARCHAR(16) NOT NULL DEFAULT ''", { transaction });
      await sequelize.query(isMysql(dialect) ? 'DROP INDEX email_templates_event_name ON email_templates' : 'DROP INDEX email_templates_event_name', { transaction });
      await sequelize.query('CREATE UNIQUE INDEX email_templates_event_language ON email_templates (event_name, language)', { transaction });
    },
  },
];

/** Creates or upgrades the admin tables on the given connection. */
export async function migrateAdminStore(sequelize: SqlDatabase): Promise<void> {
  await runMigrations(sequelize, 'admin', ADMIN_MIGRATIONS);
}
