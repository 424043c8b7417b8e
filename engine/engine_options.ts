/**
 * The options of an `Engine`, validated, with their defaults: the limits
 * (engine/engine_types.ts, `OPTION_RANGES`), the store (a new `MemoryStore`
 * by default), the resolver (a new `LocalChecker`) and the wall clock.
 *
 * Apart from engine/index.ts because validation runs once per engine and
 * holds no state: the `Engine` class keeps to its calls.
 */
import { LatchkeyError } from './errors.ts';
import { MemoryStore } from './memory_store.ts';
import type { TupleStore } from './store.ts';
import type { CheckResolver } from './check/check_resolver.ts';
import { LocalChecker } from './check/local_checker.ts';
import { OPTION_RANGES, type EngineOptions, type Limits } from './engine_types.ts';

/** {@link EngineOptions} with their defaults applied. */
export interface EngineSettings {
  limits: Limits;
  store: TupleStore;
  resolver: CheckResolver;
  /** Wall clock (ms) deciding expiry at write time and for collection. */
  now: () => number;
}

/**
 * Validates `options`: unknown keys and out-of-range values are
 * `invalid_argument` with reason `invalid_option`, naming the key
 * (`details.option`).
 */
export function engineSettings(options: EngineOptions): EngineSettings {
  if (options === null || typeof options !== 'object') {
    throw new LatchkeyError('invalid_argument', 'engine options must be an object', { reason: 'invalid_option' });
  }
  const limits = {} as Limits;
  for (const key of Object.keys(options)) {
    if (key !== 'store' && key !== 'resolver' && key !== 'now' && !(key in OPTION_RANGES)) {
      throw new LatchkeyError('invalid_argument', `unknown engine option '${key}'`, { reason: 'invalid_option', details: { option: key } });
    }
  }
  for (const [key, [min, max, def]] of Object.entries(OPTION_RANGES) as [keyof Limits, readonly [number, number, number]][]) {
    const v = (options as Record<string, unknown>)[key];
    if (v === undefined) {
      limits[key] = def;
    } else if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max) {
      throw new LatchkeyError('invalid_argument', `engine option '${key}' must be an integer from ${min} to ${max}`, {
        reason: 'invalid_option',
        details: { option: key },
      });
    } else {
      limits[key] = v;
    }
  }
  const store = options.store ?? new MemoryStore();
  if (typeof store !== 'object' || typeof (store as TupleStore).readUserTuples !== 'function') {
    throw new LatchkeyError('invalid_argument', "engine option 'store' must implement TupleStore", { reason: 'invalid_option', details: { option: 'store' } });
  }
  const resolver = options.resolver ?? new LocalChecker();
  if (typeof resolver !== 'object' || typeof (resolver as CheckResolver).resolveCheck !== 'function') {
    throw new LatchkeyError('invalid_argument', "engine option 'resolver' must implement CheckResolver", { reason: 'invalid_option', details: { option: 'resolver' } });
  }
  if (options.now !== undefined && typeof options.now !== 'function') {
    throw new LatchkeyError('invalid_argument', "engine option 'now' must be a function returning milliseconds", { reason: 'invalid_option', details: { option: 'now' } });
  }
  return { limits, store, resolver, now: options.now ?? Date.now };
}
