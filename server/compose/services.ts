/**
 * The composition root: builds the services object that every handler sees as
 * `ctx.services`, from the frozen configuration and the one Sequelize
 * connection. Domain services are created and plugged in here, in order:
 * engine first (identity and admin build on it), then auth, then admin.
 */
import type { Sequelize } from 'sequelize';
import type { MainDatabase } from '../../auth/index.ts';
import type { LatchkeyError } from '../../engine/errors.ts';
import type { Config } from '../flags.ts';
import type { Logger } from '../logger.ts';
import { SYSTEM_CLOCK, type Clock } from '../context.ts';
import { adminSecretAuthenticator, type Authenticator } from '../authenticate.ts';
import { VERSION } from '../version.ts';
import { plugAdmin } from './admin.ts';
import { plugAuth } from '../handlers/auth.ts';
import { plugFgaEngine } from '../handlers/permissions.ts';
import { plugDashboard } from '../../transports/web/dashboard/dashboard.ts';

export interface Services {
  readonly config: Config;
  /** The main database: the one SQL connection or the DynamoDB client (every identity and admin store receives it). */
  readonly database: MainDatabase;
  /** The one SQL connection when the main database is SQL (every SQL store receives it); undefined on DynamoDB. */
  readonly sequelize: Sequelize | undefined;
  readonly logger: Logger;
  readonly clock: Clock;
  readonly version: string;
  /**
   * Credential → principal chain, tried in order (see `authenticate.ts`). The
   * admin-secret header check is first; auth and admin append theirs.
   */
  readonly authenticators: Authenticator[];
  /** The FGA engine service (plugged in by the engine issue). */
  engine?: unknown;
  /** Identity, sessions and tokens (plugged in by the auth issue). */
  auth?: unknown;
  /** Super-admin operations (plugged in by the admin issue). */
  admin?: unknown;
  /**
   * Extra HTTP endpoints served by domain services outside the operations
   * table (e.g. `/.well-known/jwks.json`, the OAuth endpoints); mounted by the HTTP adapter.
   */
  httpRoutes?: HttpRoute[];
  /** Run at shutdown, last-registered first, before the database closes. */
  readonly closers: (() => Promise<void>)[];
}

/**
 * An endpoint served on the HTTP port outside the operations table: a GET
 * document, or a GET/POST endpoint whose POST body is a form
 * (`application/x-www-form-urlencoded`) or JSON. Guards (CORS, rate limit,
 * CSRF) apply as to every path.
 */
export interface HttpRoute {
  readonly path: string;
  /** Default `['GET']`. */
  readonly methods?: readonly ('GET' | 'POST')[];
  readonly handler: (request: HttpRouteRequest) => Promise<HttpRouteResponse>;
}

/** What an {@link HttpRoute} handler sees of the request. */
export interface HttpRouteRequest {
  readonly method: string;
  /** Query parameters: a string, or an array when repeated. */
  readonly query: Readonly<Record<string, unknown>>;
  /** The parsed form or JSON body (empty for GET or when there is none). */
  readonly body: Readonly<Record<string, unknown>>;
  /** Set when the body could not be read (malformed, too large, other media type); `body` is then empty. */
  readonly bodyError?: LatchkeyError | undefined;
  readonly authorization?: string | undefined;
  readonly cookies: Readonly<Record<string, string>>;
  readonly requestId: string;
  readonly clientIp: string;
  readonly userAgent: string;
}

/** The answer of an {@link HttpRoute}: JSON `body`, an `html` page, or neither (e.g. a redirect). */
export interface HttpRouteResponse {
  /** Default 200. */
  readonly status?: number;
  readonly body?: unknown;
  readonly html?: string;
  readonly headers?: Readonly<Record<string, string>>;
  /** `Set-Cookie` header values, each sent as its own header. */
  readonly cookies?: readonly string[];
}

export interface ServicesOptions {
  config: Config;
  database: MainDatabase;
  logger: Logger;
  clock?: Clock;
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
  };

  // Domain services are plugged in below, in dependency order:
  // engine → services.engine = await createEngineService(...)
  // auth   → services.auth = ...; services.authenticators.push(userAuthenticator)
  // admin  → services.admin = ...; services.authenticators.push(adminCookieAuthenticator)
  await plugFgaEngine(services);
  await plugAuth(services);
  await plugAdmin(services);
  plugDashboard(services);

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
