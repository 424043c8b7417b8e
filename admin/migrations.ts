/**
 * Schema of the admin store: webhooks, their delivery outbox and attempt
 * logs, email templates, the audit log and admin sessions. Applied with
 * `runMigrations(sequelize, 'admin', ADMIN_MIGRATIONS)`.
 *
 * Column types are the portable subset of SQLite, PostgreSQL and MySQL:
 * times are BIGINT unix milliseconds, booleans SMALLINT 0/1, JSON is TEXT.
 */
import type { Sequelize } from 'sequelize';
import { runMigrations, type Migration } from '../engine/sql/migrate.ts';

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
    async up({ sequelize, transaction }) {
      for (const sql of statements) await sequelize.query(sql, { transaction });
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
          updated_at BIGINT NOT NULL)`,
        { transaction },
      );
      await sequelize.query('CREATE INDEX mail_outbox_due ON mail_outbox (status, next_attempt_at)', { transaction });
    },
  },
];

/** Creates or upgrades the admin tables on the given connection. */
export async function migrateAdminStore(sequelize: Sequelize): Promise<void> {
  await runMigrations(sequelize, 'admin', ADMIN_MIGRATIONS);
}
