/**
 * Per-client-IP rate limiting (rate-limiter-flexible): `--rate-limit-rps`
 * requests per second plus a burst allowance of `--rate-limit-burst`. With
 * `--redis-url` the counters live in Redis (keyed by client id and IP), so every
 * instance of one deployment shares one limit;
 * if Redis fails the in-memory limiter takes over (availability over strictness).
 */
import { BurstyRateLimiter, RateLimiterMemory, RateLimiterRedis, RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible';
import type { Redis } from 'ioredis';

export interface RateLimiter {
  /** Resolves to `undefined` when allowed, or the seconds to wait (`Retry-After`) when refused. */
  take(key: string): Promise<number | undefined>;
}

export const UNLIMITED: RateLimiter = { take: async () => undefined };

export function createRateLimiter(options: { rps: number; burst: number; redis?: Redis; namespace?: string }): RateLimiter {
  const { rps, burst } = options;
  if (rps <= 0) return UNLIMITED;
  const burstWindow = Math.max(1, Math.ceil(burst / rps));
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
