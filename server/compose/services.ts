/**
 * The composition root: builds the services object that every handler sees as
 * `ctx.services`, from the frozen configuration and the main database. Domain services are created and plugged in here, in order:
 * engine first (identity and admin build on it), then auth, then admin.
 */
import type { MainDatabase } from '../../auth/index.ts';
import type { Config } from '../flags.ts';
import type { Logger } from '../logger.ts';
import { SYSTEM_CLOCK, type Clock, type Services } from '../context.ts';
import { adminSecretAuthenticator } from '../authenticate.ts';
import { VERSION } from '../version.ts';
import { plugAdmin } from './admin.ts';
import { plugAuth } from './auth.ts';
import { plugFgaEngine } from './engine.ts';

export type { Services };


export interface ServicesOptions {
  config: Config;
  database: MainDatabase;
  logger: Logger;
  clock?: Clock;
  /** DNS TXT lookups of domain verification (default: the system resolver). */
  resolveTxt?: (name: string) => Promise<string[][]>;
}

/**
 * Builds the services. Each component runs its own migrations (through
 * `engine/sql/migrate.ts`) while being created here, before anything listens.
 */
export async function createServices(options: ServicesOptions): Promise<Services> {
  const { config, database, logger } = options;
  const services: Services = {
    config,
    database,
    sequelize: database.kind === 'sql' ? database.sequelize : undefined,
    logger,
    clock: options.clock ?? SYSTEM_CLOCK,
    version: VERSION,
    authenticators: [adminSecretAuthenticator(config.adminSecret ?? '', config.disableAdminHeaderAuth)],
    closers: [],
    ...(options.resolveTxt ? { resolveTxt: options.resolveTxt } : {}),
  };

  // Domain services are plugged in below, in dependency order: the engine, then identity (which checks
  // permissions through it and appends the user authenticator), then admin (which manages both and puts
  // its authenticator first in the chain).
  await plugFgaEngine(services);
  await plugAuth(services);
  await plugAdmin(services);

  return services;
}

/** Closes the domain services (last created first). The database is closed by the caller. */
export async function closeServices(services: Services): Promise<void> {
  for (const close of [...services.closers].reverse()) {
    try {
      await close();
    } catch (err) {
      services.logger.error('error while closing a service', { err });
    }
  }
}
