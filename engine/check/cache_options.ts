/**
 * The options of a `CheckCache`, validated, and what the cache learns of the
 * store it wraps before the first lookup: whether it has synchronous reads
 * that tell their expiring tuples ({@link ExpiryFloor}).
 *
 * Apart from engine/check/check_cache.ts because this runs once, when the
 * cache is made, and holds no state: the cache module keeps to lookups,
 * fills and invalidation.
 */
import { LatchkeyError } from '../errors.ts';
import type { TupleStore } from '../store.ts';

/** Options of a `CheckCache`; unknown keys are rejected. */
export interface CheckCacheOptions {
  /** The store whose writes the cache follows; use `CheckCache.store` in its place. */
  store: TupleStore;
  /** Cached answers kept at most (LRU). Default 100,000; 0 disables caching. 0..10,000,000. */
  maxEntries?: number;
  /**
   * Longest delay, in milliseconds, before a write made by another process
   * on the same database is observed. Default 1,000; 0 disables caching.
   * 0..3,600,000.
   */
  revisionPollMs?: number;
  /** Clock (milliseconds), for tests. Default `performance.now`-based monotonic clock. */
  now?: () => number;
  /**
   * Wall clock (milliseconds since the epoch) against which tuple expiry is
   * decided; the store's own clock. Default `Date.now`.
   */
  clock?: () => number;
}

/**
 * What a store with synchronous reads tells about its expiring tuples
 * (the memory store, the graph mirror): see `CheckCache` on expiry.
 */
export interface ExpiryFloor {
  /** Its `value`: the earliest `expires_at` (ms) of a tuple added since the last {@link ExpiryFloor.refreshExpiryFloor}, or held then and unexpired; `Infinity` when none. */
  readonly expiryFloorCell: { readonly value: number };
  /** Recomputes the floor from the tuples held that expire after `now`, and returns it. */
  refreshExpiryFloor(now: number): number;
}

/** {@link CheckCacheOptions} with their defaults applied. */
export interface CacheSettings {
  store: TupleStore;
  /** Entries the LRU holds at most; 0 when the cache is disabled (by either `maxEntries` or `revisionPollMs`). */
  maxEntries: number;
  pollMs: number;
  now: () => number;
  clock: () => number;
  /** The store's expiry floor, when it has synchronous reads. */
  floor: ExpiryFloor | undefined;
}

function option(options: object, key: string, min: number, max: number, def: number): number {
  const v = (options as Record<string, unknown>)[key];
  if (v === undefined) return def;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max) {
    throw new LatchkeyError('invalid_argument', `cache option '${key}' must be an integer from ${min} to ${max}`, { reason: 'invalid_option', details: { option: key } });
  }
  return v;
}

/** Validates `options` (`invalid_argument`, reason `invalid_option`, naming the key) and applies the defaults. */
export function cacheSettings(options: CheckCacheOptions): CacheSettings {
  if (options === null || typeof options !== 'object') {
    throw new LatchkeyError('invalid_argument', 'cache options must be an object', { reason: 'invalid_option' });
  }
  for (const key of Object.keys(options)) {
    if (!['store', 'maxEntries', 'revisionPollMs', 'now', 'clock'].includes(key)) {
      throw new LatchkeyError('invalid_argument', `unknown cache option '${key}'`, { reason: 'invalid_option', details: { option: key } });
    }
  }
  const store = options.store;
  if (store === null || typeof store !== 'object' || typeof store.revision !== 'function') {
    throw new LatchkeyError('invalid_argument', "cache option 'store' must implement TupleStore", { reason: 'invalid_option', details: { option: 'store' } });
  }
  const maxEntries = option(options, 'maxEntries', 0, 10_000_000, 100_000);
  const pollMs = option(options, 'revisionPollMs', 0, 3_600_000, 1000);
  const now = options.now ?? (() => performance.now());
  if (options.clock !== undefined && typeof options.clock !== 'function') {
    throw new LatchkeyError('invalid_argument', "cache option 'clock' must be a function", { reason: 'invalid_option', details: { option: 'clock' } });
  }
  const floor = store as Partial<ExpiryFloor>;
  return {
    store,
    maxEntries: maxEntries > 0 && pollMs > 0 ? maxEntries : 0,
    pollMs,
    now,
    clock: options.clock ?? Date.now,
    floor: typeof floor.expiryFloorCell === 'object' && typeof floor.refreshExpiryFloor === 'function' ? (store as unknown as ExpiryFloor) : undefined,
  };
}
