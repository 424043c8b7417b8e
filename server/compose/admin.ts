/**
 * The plug that builds the admin service in the composition root: the mail
 * queue, the FGA hooks of delete_user, the wrong-secret counter and the
 * admin authenticator.
 */
import { AdminService, DynamoMailOutbox, SqlMailOutbox, type AdminFailureCounter, type FgaUserTuples } from '../../admin/index.ts';
import { MailQueue, createSmtpMailer, openRedis } from '../../auth/index.ts';
import { epochMsOf, type Authenticator, type Principal, type Services } from '../context.ts';
import { createRedisFailureCounter } from './admin_failures.ts';
import { plugSmsQueue } from './sms_queue.ts';
import { logUnlessOutage } from './database.ts';

/**
 * How delete_user reaches the FGA tuples: inside its own transaction when the
 * FGA store is a SQL store on the main connection, then a refresh of the
 * in-process mirror and cache; otherwise (memory store, another database) the
 * admin service deletes through the engine after the commit.
 */
function fgaUserTuplesOf(services: Services): FgaUserTuples | undefined {
  const hooks = services.engine === undefined ? undefined : services.engineHooks;
  if (hooks === undefined) return undefined;
  // In delete_user's own transaction only when the FGA tables live on the main connection.
  const store = hooks.sqlStore;
  const shared = store !== undefined && store.sequelize === services.sequelize;
  return {
    deleteInTransaction: shared ? (users, transaction) => store.deleteTuplesOfUsers(users, { transaction }) : undefined,
    refresh: () => hooks.refresh(),
  };
}

/**
 * With `--redis-url`, wrong admin secrets are counted in Redis so that every
 * instance shares one budget per IP; otherwise in process.
 */
function adminFailureCounter(services: Services): AdminFailureCounter | undefined {
  const url = services.config.redisUrl;
  if (!url) return undefined;
  const redis = openRedis(url, { enableOfflineQueue: false, maxRetriesPerRequest: 1 });
  redis.on('error', (err: Error) => services.logger.warn('redis error (admin secret limiter)', { err: err.message }));
  services.closers.push(async () => {
    redis.disconnect();
  });
  return createRedisFailureCounter({ redis, namespace: services.config.clientId ?? '' });
}

/**
 * Builds the admin service into `services.admin` (after the engine and the
 * identity service are plugged in), the persisted mail queue when
 * `--smtp-host` is set (exposed as `services.admin.mail` for every mail the
 * server sends),
 * and the admin authenticator: the header secret (rate limited per IP,
 * ignored under `--disable-admin-header-auth`) and the `service-admin`
 * session cookie. Starts the webhook delivery worker; registers its stop.
 */
export async function plugAdmin(services: Services): Promise<AdminService> {
  const c = services.config;
  let mail: MailQueue | undefined;
  if (c.smtpHost) {
    const mailer = createSmtpMailer({
      host: c.smtpHost,
      port: c.smtpPort,
      username: c.smtpUsername,
      password: c.smtpPassword,
      senderEmail: c.smtpSenderEmail ?? '',
      senderName: c.smtpSenderName,
      localName: c.smtpLocalName,
      skipTlsVerification: c.skipTlsVerification,
    });
    // Mails wait in the admin store's outbox table (created by the admin migrations below) until sent.
    mail = new MailQueue({
      mailer,
      store: services.database.kind === 'sql' ? new SqlMailOutbox(services.database.sequelize) : new DynamoMailOutbox(services.database.dynamo),
      clock: epochMsOf(services.clock),
      leaseMs: c.outboxLease,
      onError: (err, info) => services.logger.warn('mail not sent', { mail_id: info.id, attempt: info.attempt, final: info.final, err }),
    });
    services.closers.push(async () => {
      await mail?.close();
      mailer.close();
    });
  }
  const service = await AdminService.create({
    database: services.database,
    adminSecret: c.adminSecret ?? '',
    signingSecret: c.clientSecret ?? '',
    allowPrivateWebhooks: c.webhookAllowPrivateNetworks,
    identity: services.auth,
    engine: () => services.engine,
    fgaUserTuples: () => fgaUserTuplesOf(services),
    mail,
    allowedRoles: c.roles,
    defaultRoles: c.defaultRoles,
    allowedOrigins: c.allowedOrigins,
    organization: { name: c.organizationName ?? 'Latchkey', logo: c.organizationLogo ?? '' },
    clock: epochMsOf(services.clock),
    webhooks: { leaseMs: c.outboxLease, onError: (err) => logUnlessOutage(services.logger, services.database, 'webhook worker error', err) },
    failureCounter: adminFailureCounter(services),
  });
  services.admin = service;
  const authenticator: Authenticator = (credentials, info) => {
    // No admin secret or admin cookie (a user's call): not this link's kind, answered without a promise.
    if (!service.sessions.presents(credentials, c.disableAdminHeaderAuth)) return undefined;
    return service.sessions.authenticate(credentials, info.clientIp, c.disableAdminHeaderAuth).then((via): Principal | undefined => {
      if (via === 'header') return { kind: 'super_admin', via: 'admin_secret_header' };
      if (via === 'cookie') return { kind: 'super_admin', via: 'admin_cookie' };
      return undefined;
    });
  };
  // First in the chain: the header check here is the rate-limited one.
  services.authenticators.unshift(authenticator);
  service.start();
  mail?.start();
  plugSmsQueue(services);
  services.closers.push(() => service.close());
  return service;
}
