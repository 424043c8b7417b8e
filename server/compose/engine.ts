/**
 * Builds the FGA engine into `services.engine` (spec, Versioning §7), with
 * the hooks delete_user needs in `services.engineHooks`: by default on the
 * main SQL database (its own `fga_*` tables, migrated here); on a DynamoDB
 * (NoSQL) main database FGA is off unless `--fga-store` is set (`memory`, or
 * a SQL store with `--fga-store-url`): the operations then answer
 * `failed_precondition` ("fga is not enabled on this server");
 * `--fga-store memory` keeps tuples in process (lost on restart);
 * `--fga-store sqlite|postgres|mysql|mariadb` with `--fga-store-url` uses
 * another database, whose connection is closed at shutdown.
 *
 * A store that cannot be opened (a separate FGA database that is down) is
 * logged and leaves FGA disabled rather than stopping the server: identity
 * keeps working, and every permission operation fails closed with
 * `failed_precondition` ("fga is not enabled on this server").
 *
 * The chain in front of the store is the engine's own `buildEngine`
 * (docs/engine.md), so a library user gets the chain the server runs: on SQL
 * stores the graph mirror (`--fga-mirror`) with the synchronous evaluator over
 * its reads and the level-at-a-time checker for full-consistency requests;
 * the check cache in front (`--fga-cache-size`, `--fga-cache-revision-poll`;
 * either at 0 turns it off). Conditions stop at `--fga-condition-cost-limit`.
 *
 * Expiring tuples are decided by the server's clock, and collected (deleted,
 * each a `delete` change) every {@link EXPIRY_COLLECT_MS} by every replica;
 * collection is safe to run concurrently and never needed for correctness.
 */
import { buildEngine, MemoryStore, type BuiltEngine, type TupleStore } from '../../engine/index.ts';
import { openSequelize, RevisionListener, SqlStore } from '../../engine/sql/index.ts';
import { epochMsOf, type Services } from '../context.ts';

/** How often expired tuples are collected (ms). */
export const EXPIRY_COLLECT_MS = 60_000;

export async function plugFgaEngine(services: Services): Promise<void> {
  if (services.engine !== undefined) return;
  const c = services.config;
  if (c.fgaStore === 'memory') {
    const built = await composeEngine(new MemoryStore({ now: epochMsOf(services.clock) }), services);
    services.engine = built.engine;
    collectExpired(built, services);
    services.engineHooks = { refresh: () => built.refresh() };
    return;
  }
  if (services.database.kind === 'dynamodb' && !c.fgaStoreUrl) {
    services.logger.info('FGA is off: the main database is dynamodb and no --fga-store with --fga-store-url is set (spec, Versioning §7)');
    return;
  }
  let sequelize = services.sequelize;
  if (c.fgaStoreUrl) {
    const url = c.fgaStore === 'sqlite' && !c.fgaStoreUrl.startsWith('sqlite:') ? `sqlite:${c.fgaStoreUrl}` : c.fgaStoreUrl;
    // SQLite files open through the process's one SQLite library (engine/sql/node_sqlite_driver.ts).
    const own = openSequelize(url, { logging: false });
    services.closers.push(() => own.close());
    sequelize = own;
  }
  if (sequelize === undefined) return;
  try {
    const store = await SqlStore.open({ sequelize, now: epochMsOf(services.clock) });
    // Closed before its connection (closers run last-pushed first): queued writes finish, and on SQLite the store's
    // checkpoint thread stops, so nothing touches the file once the server has stopped.
    services.closers.push(() => store.close());
    const built = await composeEngine(store, services);
    // PostgreSQL: every committed write notifies its revision, and the cache and mirror catch up at once
    // rather than at their next revision poll, which stays the bound when a notification is lost (docs/caching.md);
    // watchers (the watch stream) read the changelog at once too, their poll being the bound likewise.
    {
      const logger = services.logger;
      const listener = await RevisionListener.start({
        sequelize,
        storeId: store.storeId,
        onRevision: (revision) => built.observeRevision(revision),
        onModel: () => built.observeModel(),
        onGap: () => {
          built.observeRevision();
          built.observeModel();
        },
        onError: (err) => logger.warn('FGA revision notifications interrupted; reconnecting (the revision poll bounds staleness meanwhile)', { err }),
      });
      if (listener !== undefined) services.closers.push(() => listener.close());
    }
    services.engine = built.engine;
    services.engineHooks = { sqlStore: store, refresh: () => built.refresh() };
    collectExpired(built, services);
  } catch (err) {
    services.logger.error('FGA store could not be opened; fine-grained authorization is disabled', { err });
  }
}

/** The engine's own chain over `store`, with the server's flags. */
function composeEngine(store: TupleStore, services: Services): Promise<BuiltEngine> {
  const c = services.config;
  return buildEngine({
    store,
    mirror: c.fgaMirror,
    cacheSize: c.fgaCacheSize,
    revisionPollMs: c.fgaCacheRevisionPoll,
    conditionCostLimit: c.fgaConditionCostLimit,
    now: epochMsOf(services.clock),
  });
}

/** Collects expired tuples in the background until shutdown; a failure is logged and retried at the next tick. */
function collectExpired(built: BuiltEngine, services: Services): void {
  let running = false;
  const timer = setInterval(() => {
    if (running) return;
    running = true;
    built.engine.collectExpired().then(
      (n) => {
        if (n > 0) services.logger.info('expired FGA tuples collected', { count: n });
      },
      (err: unknown) => services.logger.warn('collecting expired FGA tuples failed; retrying at the next interval', { err }),
    ).finally(() => {
      running = false;
    });
  }, EXPIRY_COLLECT_MS);
  timer.unref();
  services.closers.push(async () => clearInterval(timer));
}
