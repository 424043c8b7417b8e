/**
 * Per-client-IP rate limiting: `--rate-limit-rps` requests per second plus a
 * burst allowance of `--rate-limit-burst`. With `--redis-url` the counters
 * live in Redis (rate-limiter-flexible, keyed by client id and IP), so every
 * instance of one deployment shares one limit; if Redis fails the in-memory
 * limiter takes over (availability over strictness). Without Redis the same
 * rules run in process (see `memoryLimiter`).
 */
import { BurstyRateLimiter, RateLimiterMemory, RateLimiterRedis, RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible';
import type { Redis } from 'ioredis';

export interface RateLimiter {
  /** Resolves to `undefined` when allowed, or the seconds to wait (`Retry-After`) when refused. */
  take(key: string): Promise<number | undefined>;
  /**
   * The same decision without a promise, for a limiter that keeps its counts
   * in this process (absent when the counts live elsewhere, as in Redis).
   */
  takeNow?(key: string): number | undefined;
}

export const UNLIMITED: RateLimiter = { take: async () => undefined, takeNow: () => undefined };

export function createRateLimiter(options: { rps: number; burst: number; redis?: Redis; namespace?: string; now?: () => number }): RateLimiter {
  const { rps, burst } = options;
  if (rps <= 0) return UNLIMITED;
  const burstWindow = Math.max(1, Math.ceil(burst / rps));
  if (!options.redis) return memoryLimiter(rps, burst, burstWindow, options.now ?? Date.now);
  const make = (keyPrefix: string, points: number, duration: number): RateLimiterAbstract => {
    const memory = new RateLimiterMemory({ keyPrefix, points, duration });
    if (!options.redis) return memory;
    return new RateLimiterRedis({ storeClient: options.redis, keyPrefix: `latchkey_${keyPrefix}_${options.namespace ?? ''}`, points, duration, insuranceLimiter: memory });
  };
  const steady = make('rl', rps, 1);
  const limiter = burst > 0 ? new BurstyRateLimiter(steady as RateLimiterMemory, make('rlb', burst, burstWindow) as RateLimiterMemory) : steady;
  return {
    async take(key) {
      try {
        await limiter.consume(key, 1);
        return undefined;
      } catch (res) {
        if (res instanceof RateLimiterRes) return Math.max(1, Math.ceil(res.msBeforeNext / 1000));
        // A store failure without insurance: let the request through.
        return undefined;
      }
    },
  };
}

const ALLOWED: Promise<undefined> = Promise.resolve(undefined);

/**
 * The in-process limiter: the rules of rate-limiter-flexible's
 * `BurstyRateLimiter` over two `RateLimiterMemory` windows, which the Redis
 * variant keeps using, computed in place. Each key has a steady window of
 * `rps` points per second and a burst window of `burst` points per
 * `burstWindow` seconds, each fixed from its first hit: a request counts
 * against the steady window; past its points it draws on the burst window;
 * past both it is refused, to retry when the sooner of the two windows ends
 * (whole seconds, at least 1). Why not the library here: its promise chain
 * and result objects cost 4-6 µs per request on the server path
 * (docs/performance.md, Server path); this is a Map lookup. Expired windows
 * are swept at most once per second.
 */
function memoryLimiter(rps: number, burst: number, burstWindow: number, now: () => number): RateLimiter {
  interface Window {
    count: number;
    endsAt: number;
  }
  const steady = new Map<string, Window>();
  const bursts = new Map<string, Window>();
  let sweepAt = 0;
  const hit = (windows: Map<string, Window>, key: string, seconds: number, t: number): Window => {
    let w = windows.get(key);
    if (w === undefined || w.endsAt <= t) {
      w = { count: 0, endsAt: t + seconds * 1000 };
      windows.set(key, w);
    }
    w.count++;
    return w;
  };
  const sweep = (t: number): void => {
    sweepAt = t + 1000;
    for (const windows of [steady, bursts]) for (const [k, w] of windows) if (w.endsAt <= t) windows.delete(k);
  };
  const takeNow = (key: string): number | undefined => {
    const t = now();
    if (t >= sweepAt) sweep(t);
    const s = hit(steady, key, 1, t);
    if (s.count <= rps) return undefined;
    if (burst <= 0) return Math.max(1, Math.ceil((s.endsAt - t) / 1000));
    const b = hit(bursts, key, burstWindow, t);
    if (b.count <= burst) return undefined;
    return Math.max(1, Math.ceil(Math.min(s.endsAt - t, b.endsAt - t) / 1000));
  };
  return {
    take(key) {
      const wait = takeNow(key);
      return wait === undefined ? ALLOWED : Promise.resolve(wait);
    },
    takeNow,
  };
}
