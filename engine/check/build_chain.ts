/**
 * The resolver chain and store layers of an engine as the Latchkey server
 * runs them (docs/engine.md, "The server's chain"), for `buildEngine` in
 * engine/index.ts, which puts an `Engine` on top. Kept apart from the
 * `Engine` class so that this folder never imports the entry point.
 *
 * - A store whose reads all need I/O (no synchronous reads: `SqlStore`) is
 *   read through the level-at-a-time checker, and, with `mirror` (default
 *   true), mirrored in memory: the synchronous evaluator answers from the
 *   mirror while it is fresh, and full-consistency checks go to the level
 *   checker over the asynchronous evaluator, whose reads never take the
 *   mirror's.
 * - A store with synchronous reads (`MemoryStore`) is read by the
 *   synchronous evaluator; `mirror` does not apply (the store is its own
 *   in-memory index).
 * - The answer cache goes in front unless `cacheSize` or `revisionPollMs`
 *   is 0.
 *
 * Writes go through the outermost store, so the cache and the mirror see
 * them before the write call returns (docs/caching.md).
 */
import { LatchkeyError } from '../errors.ts';
import { OPTION_RANGES, type EngineOptions } from '../engine_types.ts';
import { MemoryStore } from '../memory_store.ts';
import { syncSource } from '../reader.ts';
import type { TupleStore } from '../store.ts';
import { CheckCache } from './check_cache.ts';
import type { CheckResolver } from './check_resolver.ts';
import { GraphMirror } from './graph_mirror.ts';
import { LevelChecker } from './level_checker.ts';
import { LocalChecker } from './local_checker.ts';

/** Options of `buildEngine`: the engine's own options (except `resolver`, which is what it builds) and the chain's. */
export interface BuildEngineOptions extends Omit<EngineOptions, 'resolver'> {
  /**
   * Where models and tuples live (default: a new `MemoryStore`). Pass the
   * store itself, never a layer over it: the layers are built here, and the
   * engine is given the outermost.
   */
  store?: TupleStore;
  /**
   * Load the graph mirror (`GraphMirror`) in front of a store without
   * synchronous reads (SQL). Default true; does not apply to a store with
   * synchronous reads (the memory store). The server's `--fga-mirror`.
   */
  mirror?: boolean;
  /** Check answers kept in the answer cache (`CheckCache`, LRU). Default 100,000; 0 leaves the cache out. 0..10,000,000. The server's `--fga-cache-size`. */
  cacheSize?: number;
  /**
   * Longest delay, in milliseconds, before a write made by another process
   * on the same database is observed by the cache and the mirror. Default
   * 1,000; 0 leaves the cache out (and makes the mirror read the changelog
   * before every check). 0..3,600,000. The server's `--fga-cache-revision-poll`.
   */
  revisionPollMs?: number;
}

/**
 * A layer that answers from memory and catches up when told of a newer store
 * revision or model (`CheckCache`, `GraphMirror`): what a `RevisionListener`
 * (PostgreSQL notifications) must tell.
 */
export interface RevisionObserver {
  /** A write to the store committed `revision` (undefined: writes may have been missed; re-read). */
  observeRevision(revision?: number): void;
  /** Another process wrote a model: read the latest model id again. */
  observeModel(): void;
}

/** The layers `buildEngine` assembled, before the engine is put on top. */
export interface EngineChain {
  /** The outermost store: the engine's, and where every write must go. */
  store: TupleStore;
  /** The head of the resolver chain. */
  resolver: CheckResolver;
  /** The answer cache, unless left out. */
  cache: CheckCache | undefined;
  /** The graph mirror, when loaded. */
  mirror: GraphMirror | undefined;
  /** The layers that must hear of other processes' writes: the mirror, then the cache (empty when there is neither). */
  observers: readonly RevisionObserver[];
  /** The engine's own options (limits), validated. */
  engineOptions: Omit<EngineOptions, 'store' | 'resolver'>;
}

/** What a `BuiltEngine` (engine/index.ts) offers to keep its chain in step with changes made outside it. */
export interface ChainControls {
  observeRevision(revision?: number): void;
  observeModel(): void;
  refresh(): Promise<void>;
}

/**
 * The {@link ChainControls} of `chain` under `engine`: a revision observed
 * goes to every observer (mirror, then cache), then wakes the engine's
 * watchers; a refresh reads the outer store's revision (the mirror replays
 * the changelog), then empties the cache and wakes the watchers.
 */
export function chainControls(chain: EngineChain, engine: { notifyChanges(): void }): ChainControls {
  const { store, cache, observers } = chain;
  return {
    observeRevision(revision?: number): void {
      for (const o of observers) o.observeRevision(revision);
      engine.notifyChanges();
    },
    observeModel(): void {
      for (const o of observers) o.observeModel();
    },
    async refresh(): Promise<void> {
      try {
        await store.revision();
      } finally {
        cache?.invalidate();
        engine.notifyChanges();
      }
    },
  };
}

const CHAIN_OPTIONS: Record<string, readonly [number, number, number]> = {
  cacheSize: [0, 10_000_000, 100_000],
  revisionPollMs: [0, 3_600_000, 1000],
};

function invalidOption(key: string, message: string): LatchkeyError {
  return new LatchkeyError('invalid_argument', message, { reason: 'invalid_option', details: { option: key } });
}

/**
 * Validates `options` (unknown keys and bad values are `invalid_argument`
 * with reason `invalid_option`, naming the key in the message and in
 * `details.option`), then loads the mirror when it applies and assembles
 * the chain.
 */
export async function buildChain(options: BuildEngineOptions = {}): Promise<EngineChain> {
  if (options === null || typeof options !== 'object') throw invalidOption('', 'buildEngine options must be an object');
  const engineOptions: Record<string, number> & { now?: () => number } = {};
  const clock = options.now;
  if (clock !== undefined) {
    if (typeof clock !== 'function') throw invalidOption('now', "engine option 'now' must be a function returning milliseconds");
    engineOptions.now = clock;
  }
  for (const key of Object.keys(options)) {
    if (key === 'store' || key === 'mirror' || key === 'now' || key in CHAIN_OPTIONS) continue;
    if (!(key in OPTION_RANGES)) throw invalidOption(key, `unknown engine option '${key}'`);
    const [min, max] = OPTION_RANGES[key as keyof typeof OPTION_RANGES];
    const v = (options as Record<string, unknown>)[key];
    if (v === undefined) continue;
    if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max) throw invalidOption(key, `engine option '${key}' must be an integer from ${min} to ${max}`);
    engineOptions[key] = v;
  }
  const numbers: Record<string, number> = {};
  for (const [key, [min, max, def]] of Object.entries(CHAIN_OPTIONS)) {
    const v = (options as Record<string, unknown>)[key];
    if (v === undefined) numbers[key] = def;
    else if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max) throw invalidOption(key, `engine option '${key}' must be an integer from ${min} to ${max}`);
    else numbers[key] = v;
  }
  const mirrorOption = options.mirror ?? true;
  if (typeof mirrorOption !== 'boolean') throw invalidOption('mirror', "engine option 'mirror' must be a boolean");
  const store = options.store ?? new MemoryStore();
  if (store === null || typeof store !== 'object' || typeof (store as TupleStore).readUserTuples !== 'function') {
    throw invalidOption('store', "engine option 'store' must implement TupleStore");
  }
  const cacheSize = numbers['cacheSize']!;
  const revisionPollMs = numbers['revisionPollMs']!;

  const observers: RevisionObserver[] = [];
  let outer: TupleStore = store;
  let mirror: GraphMirror | undefined;
  // A store whose every read is a round trip (SQL) answers a level's reads with one statement whatever their kinds,
  // so reading usersets apart from the other forward lookups costs no round trip and skips every plain user on the
  // path (5x less CPU on SQLite). A store with synchronous reads (and the mirror) is read by the synchronous
  // evaluator, without a promise per sub-problem.
  const roundTrips = syncSource(store) === undefined;
  let resolver: CheckResolver = roundTrips ? new LevelChecker() : new LocalChecker();
  if (roundTrips && mirrorOption) {
    mirror = await GraphMirror.load(clock === undefined ? { store, revisionPollMs } : { store, revisionPollMs, clock });
    outer = mirror.store;
    observers.push(mirror);
    // Reads of the level checker go to the database; its exact evaluator must not take the mirror's synchronous reads.
    resolver = mirror.resolver(new LocalChecker(), new LevelChecker({ inner: new LocalChecker({ sync: false }) }));
  }
  let cache: CheckCache | undefined;
  if (cacheSize > 0 && revisionPollMs > 0) {
    cache = new CheckCache(clock === undefined ? { store: outer, maxEntries: cacheSize, revisionPollMs } : { store: outer, maxEntries: cacheSize, revisionPollMs, clock });
    outer = cache.store;
    observers.push(cache);
    resolver = cache.resolver(resolver);
  }
  return { store: outer, resolver, cache, mirror, observers, engineOptions };
}
