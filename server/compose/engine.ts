import { CheckCache, Engine, GraphMirror, LevelChecker, LocalChecker, MemoryStore, type CheckResolver, type TupleStore } from '../../engine/index.ts';
import { openSequelize, RevisionListener, SqlStore } from '../../engine/sql/index.ts';
import type { Services } from '../context.ts';

/**
 * Builds the FGA engine into `services.engine` (spec, Versioning §7): by
 * default on the main SQL database (its own `fga_*` tables, migrated here);
 * on a DynamoDB (NoSQL) main database FGA is off unless `--fga-store` is set
 * (`memory`, or a SQL store with `--fga-store-url`): the operations then
 * answer `failed_precondition` ("fga is not enabled on this server");
 * `--fga-store memory` keeps tuples in process (lost on restart);
 * `--fga-store sqlite|postgres|mysql` with `--fga-store-url` uses another
 * database, whose connection is closed at shutdown. Leaves an engine another
 * component already plugged in untouched.
 *
 * A store that cannot be opened (a separate FGA database that is down) is
 * logged and leaves FGA disabled rather than stopping the server: identity
 * keeps working, and every permission operation fails closed with
 * `failed_precondition` ("fga is not enabled on this server").
 */
export async function plugFgaEngine(services: Services): Promise<void> {
  if (services.engine !== undefined) return;
  const c = services.config;
  if (c.fgaStore === 'memory') {
    const built = await composeEngine(new MemoryStore(), false, c);
    services.engine = built.engine;
    services.engineHooks = { refresh: built.refresh };
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
    const store = await SqlStore.open({ sequelize });
    // Closed before its connection (closers run last-pushed first): queued writes finish, and on SQLite the store's
    // checkpoint thread stops, so nothing touches the file once the server has stopped.
    services.closers.push(() => store.close());
    const observers: Observer[] = [];
    const engine = await composeEngine(store, true, c, observers);
    // PostgreSQL: every committed write notifies its revision, and the cache and mirror catch up at once
    // rather than at their next revision poll, which stays the bound when a notification is lost (docs/caching.md).
    if (observers.length > 0) {
      const logger = services.logger;
      const listener = await RevisionListener.start({
        sequelize,
        storeId: store.storeId,
        onRevision: (revision) => {
          for (const o of observers) o.observeRevision(revision);
        },
        onModel: () => {
          for (const o of observers) o.observeModel();
        },
        onGap: () => {
          for (const o of observers) {
            o.observeRevision();
            o.observeModel();
          }
        },
        onError: (err) => logger.warn('FGA revision notifications interrupted; reconnecting (the revision poll bounds staleness meanwhile)', { err }),
      });
      if (listener !== undefined) services.closers.push(() => listener.close());
    }
    services.engine = engine.engine;
    services.engineHooks = { sqlStore: store, refresh: engine.refresh };
  } catch (err) {
    services.logger.error('FGA store could not be opened; fine-grained authorization is disabled', { err });
  }
}

/**
 * The FGA engine as the server runs it: on SQL stores the in-memory graph
 * mirror (`--fga-mirror`) with the synchronous evaluator over its reads, and
 * the level-at-a-time checker for full-consistency requests (and for every
 * check with `--fga-mirror=false`); the check cache in front
 * (`--fga-cache-size`, `--fga-cache-revision-poll`; either at 0 turns it
 * off). Writes go through the outermost store so that the cache and the
 * mirror see them before the write call returns (docs/caching.md).
 * Conditions stop at `--fga-condition-cost-limit` (the engine's
 * `conditionCostLimit`).
 */
/** A layer that answers from memory and catches up when told of a newer store revision. */
interface Observer {
  observeRevision(revision?: number): void;
  /** Another process wrote a model: read the latest model id again. */
  observeModel(): void;
}

async function composeEngine(store: TupleStore, sql: boolean, c: Services['config'], observers: Observer[] = []): Promise<ComposedEngine> {
  let base: TupleStore = store;
  // SqlStore answers a level's reads with one statement whatever their kinds, so reading usersets apart from the
  // other forward lookups costs no round trip and skips every plain user on the path (5x less CPU on SQLite).
  // A memory store (and the mirror) reads synchronously, so the plain evaluator answers without a promise per sub-problem.
  let resolver: CheckResolver = sql ? new LevelChecker() : new LocalChecker();
  if (sql && c.fgaMirror) {
    const mirror = await GraphMirror.load({ store, revisionPollMs: c.fgaCacheRevisionPoll });
    base = mirror.store;
    observers.push(mirror);
    // Reads of the level checker go to the database; its exact evaluator must not take the mirror's synchronous reads.
    resolver = mirror.resolver(new LocalChecker(), new LevelChecker({ inner: new LocalChecker({ sync: false }) }));
  }
  if (c.fgaCacheSize > 0 && c.fgaCacheRevisionPoll > 0) {
    const cache = new CheckCache({ store: base, maxEntries: c.fgaCacheSize, revisionPollMs: c.fgaCacheRevisionPoll });
    observers.push(cache);
    return composed(new Engine({ store: cache.store, resolver: cache.resolver(resolver), conditionCostLimit: c.fgaConditionCostLimit }), cache.store, cache);
  }
  return composed(new Engine({ store: base, resolver, conditionCostLimit: c.fgaConditionCostLimit }), base, undefined);
}

/** An engine as composed here, with the refresh that delete_user's own transaction needs afterwards. */
interface ComposedEngine {
  readonly engine: Engine;
  /**
   * Brings the graph mirror up to the store's revision (reading the outer
   * store's revision makes the mirror replay the changelog) and empties the
   * answer cache, so no answer older than the call is served afterwards.
   */
  readonly refresh: () => Promise<void>;
}

function composed(engine: Engine, outer: TupleStore, cache: CheckCache | undefined): ComposedEngine {
  return {
    engine,
    async refresh() {
      try {
        await outer.revision();
      } finally {
        cache?.invalidate();
      }
    },
  };
}
