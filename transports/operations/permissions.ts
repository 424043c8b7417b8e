/**
 * The permission operations (spec: POST /v1/check_permissions, POST
 * /v1/list_permissions): the caller's own relationship checks through the FGA
 * engine, over GraphQL, REST and gRPC alike.
 *
 * Order of refusals: 401 `unauthenticated` without credentials (before
 * anything else), 400 `invalid_argument` for a malformed request (1 to 100
 * checks), 403 `permission_denied` for a `user` that is neither the caller
 * nor asked by a super-admin, 400 `failed_precondition` ("fga is not enabled
 * on this server") without an FGA store.
 */
import { buildEngine, MemoryStore, type Engine, type TupleStore } from '../../engine/index.ts';
import { openSequelize, RevisionListener, SqlStore } from '../../engine/sql/index.ts';
import type { Services } from '../services.ts';
import { ENGINE_HOOKS, withHooks } from './engine_hooks.ts';
import { s } from '../shape.ts';
import { authOf, callContext } from './auth.ts';
import { TUPLE_CONDITION_INPUT } from './admin_shapes.ts';
import { ALL_PROTOCOLS, defineOperation, type AnyOperation } from './types.ts';

const CONTEXTUAL_TUPLE = s.object('ContextualTupleInput', {
  user: s.string({ minLength: 1, maxLength: 512, doc: '`type:id` or `type:id#relation`' }),
  relation: s.string({ minLength: 1, maxLength: 64 }),
  object: s.string({ minLength: 1, maxLength: 256, doc: '`type:id`' }),
  condition: s.optional(TUPLE_CONDITION_INPUT),
}, { graphql: { name: 'FgaTupleInput' } });

/** The request context of conditions (OpenFGA's `context`). */
const CONTEXT = s.optional(s.json({ doc: "Values of condition parameters for this request (a JSON object); a tuple's stored values win on a clash" }));

const CHECK_INPUT = s.object('PermissionCheckInput', {
  relation: s.string({ minLength: 1, maxLength: 64 }),
  object: s.string({ minLength: 1, maxLength: 256, doc: '`type:id`' }),
  contextual_tuples: s.optional(s.list(CONTEXTUAL_TUPLE, { maxItems: 100, doc: 'Tuples for this one check; never persisted' })),
  context: CONTEXT,
});

const CHECK_RESULT = s.object('PermissionCheckResult', { relation: s.string(), object: s.string(), allowed: s.bool() });

const CONSISTENCY_TOKEN = s.optional(
  s.string({ maxLength: 20, doc: 'The consistency_token an FGA write returned: the answer reflects at least that write (from a cache only once it has caught up, else from the database)' }),
);

const SUBJECT = s.optional(
  s.string({ maxLength: 512, doc: 'Explicit subject (`type:id`, or a bare id for `user:<id>`): only the caller itself, or anyone for a super-admin' }),
);

export const PERMISSION_OPERATIONS: readonly AnyOperation[] = [
  defineOperation({
    name: 'check_permissions',
    admin: false,
    kind: 'query',
    auth: 'user',
    rest: { method: 'POST', path: '/v1/check_permissions' },
    grpc: { method: 'CheckPermissions' },
    protocols: ALL_PROTOCOLS,
    input: s.object('CheckPermissionsRequest', {
      checks: s.list(CHECK_INPUT, { minItems: 1, maxItems: 100, doc: '1 to 100 checks, answered in order' }),
      user: SUBJECT,
      consistency_token: CONSISTENCY_TOKEN,
    }, { graphql: { name: 'CheckPermissionsInput' } }),
    output: s.object('CheckPermissionsResponse', { results: s.list(CHECK_RESULT) }),
    doc: 'Checks relations of the caller (or, for a super-admin, of `user`) on objects; results in request order.',
    // Not async: an answer at hand (a cache hit) goes back to the pipeline without a promise.
    handler: (ctx, input) => authOf(ctx).checkPermissions(input, callContext(ctx)),
  }),
  defineOperation({
    name: 'list_permissions',
    admin: false,
    kind: 'query',
    auth: 'user',
    rest: { method: 'POST', path: '/v1/list_permissions' },
    grpc: { method: 'ListPermissions' },
    protocols: ALL_PROTOCOLS,
    input: s.object('ListPermissionsRequest', {
      relation: s.optional(s.string({ maxLength: 64 })),
      object_type: s.optional(s.string({ maxLength: 64 })),
      user: SUBJECT,
      context: CONTEXT,
      consistency_token: CONSISTENCY_TOKEN,
    }, { graphql: { name: 'ListPermissionsInput' } }),
    output: s.object('ListPermissionsResponse', {
      objects: s.list(s.string()),
      permissions: s.list(s.object('Permission', { object: s.string(), relation: s.string() })),
      truncated: s.bool({ doc: 'True when the result was capped at 1000 entries and more exist' }),
    }),
    doc: 'Every (object, relation) the subject holds, narrowed by relation and object_type; capped at 1000 with truncated.',
    handler: async (ctx, input) => authOf(ctx).listPermissions(input, callContext(ctx)),
  }),
];

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
    services.engine = await composeEngine(new MemoryStore(), false, c);
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
    const hooks = ENGINE_HOOKS.get(engine);
    if (hooks !== undefined) hooks.sqlStore = store;
    services.engine = engine;
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

async function composeEngine(store: TupleStore, sql: boolean, c: Services['config'], observers: Observer[] = []): Promise<Engine> {
  // The chain is the engine's own (buildEngine, docs/engine.md): a library user gets the same one.
  const built = await buildEngine({
    store,
    mirror: sql && c.fgaMirror,
    cacheSize: c.fgaCacheSize,
    revisionPollMs: c.fgaCacheRevisionPoll,
    conditionCostLimit: c.fgaConditionCostLimit,
  });
  observers.push(...built.observers);
  return withHooks(built.engine, built.store, built.cache);
}
