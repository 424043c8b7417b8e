/**
 * Hooks of the FGA engine as the server composes it, for callers that change
 * the FGA tables outside the engine (delete_user, inside its own
 * transaction): the SQL store under the engine and a refresh of the
 * in-process graph mirror and answer cache. Kept apart from the operation
 * rows so that the admin rows can import it without a cycle.
 */
import type { CheckCache, Engine, TupleStore } from '../../engine/index.ts';
import type { SqlStore } from '../../engine/sql/index.ts';

/**
 * What a caller that changed the FGA tables outside the engine (delete_user,
 * in its own transaction) needs: the SQL store, when there is one, and a
 * refresh that makes the in-process mirror and answer cache current.
 */
export interface EngineHooks {
  /** The SQL store under the engine (undefined for the memory store). */
  sqlStore?: SqlStore;
  /**
   * Brings the graph mirror up to the store's revision (reading the outer
   * store's revision makes the mirror replay the changelog) and empties the
   * answer cache, so no answer older than the call is served afterwards.
   */
  refresh(): Promise<void>;
}

export const ENGINE_HOOKS = new WeakMap<Engine, EngineHooks>();

export function withHooks(engine: Engine, outer: TupleStore, cache: CheckCache | undefined): Engine {
  ENGINE_HOOKS.set(engine, {
    async refresh() {
      try {
        await outer.revision();
      } finally {
        cache?.invalidate();
      }
    },
  });
  return engine;
}

/** The hooks of an engine built by `plugFgaEngine` (undefined for an engine plugged in another way). */
export function engineHooks(engine: Engine): EngineHooks | undefined {
  return ENGINE_HOOKS.get(engine);
}
