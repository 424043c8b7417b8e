/**
 * The admin component's stores on the main database: SQL (the admin
 * migrations run first) or DynamoDB (missing tables are created). Each store
 * has its interface beside the service that uses it.
 */
import type { MainDatabase } from '../auth/index.ts';
import { SqlAuditLogStore, type AuditLogStore } from './audit_log.ts';
import { SqlAdminSessionStore, type AdminSessionStore } from './admin_sessions.ts';
import { DynamoAdminSessionStore, DynamoAuditLogStore, DynamoEmailTemplateStore, DynamoMailOutbox, DynamoWebhookStore } from './dynamo_admin_stores.ts';
import { SqlMailOutbox } from './mail_outbox.ts';
import { SqlEmailTemplateStore, type EmailTemplateStore } from './email_templates.ts';
import type { WebhookStore } from './webhook_store.ts';
import { SqlWebhookStore } from './webhook_store_sql.ts';
import { migrateAdminStore } from './migrations.ts';

/** Every admin store, on one main database. */
export interface AdminStores {
  readonly audit: AuditLogStore;
  readonly sessions: AdminSessionStore;
  readonly webhooks: WebhookStore;
  readonly templates: EmailTemplateStore;
  /** The mail queue's outbox (a `MailOutboxStore` of auth/mail_queue.ts). */
  readonly outbox: SqlMailOutbox | DynamoMailOutbox;
}

/** Opens (creating or migrating the schema of) the admin stores on `database`. */
export async function openAdminStores(database: MainDatabase): Promise<AdminStores> {
  if (database.kind === 'sql') {
    const sequelize = database.sequelize;
    await migrateAdminStore(sequelize);
    return { audit: new SqlAuditLogStore(sequelize), sessions: new SqlAdminSessionStore(sequelize), webhooks: new SqlWebhookStore(sequelize), templates: new SqlEmailTemplateStore(sequelize), outbox: new SqlMailOutbox(sequelize) };
  }
  const db = database.dynamo;
  const stores = { audit: new DynamoAuditLogStore(db), sessions: new DynamoAdminSessionStore(db), webhooks: new DynamoWebhookStore(db), templates: new DynamoEmailTemplateStore(db), outbox: new DynamoMailOutbox(db) };
  await Promise.all(Object.values(stores).map((s) => s.init()));
  return stores;
}
