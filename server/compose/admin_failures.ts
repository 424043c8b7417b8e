/**
 * The count of wrong admin secrets per client IP in Redis (rate-limiter-flexible's
 * Redis limiter), so that every server instance pointing at one Redis shares
 * one budget per IP: a guesser cannot multiply it by spreading attempts over
 * instances. If Redis fails, an in-process count takes over (still limited,
 * per process).
 */
import { createRequire } from 'node:module';
import type * as Flexible from 'rate-limiter-flexible';
import type { Redis } from 'ioredis';
import type { AdminFailureCounter } from '../../admin/index.ts';

export interface RedisFailureCounterOptions {
  redis: Redis;
  /** Wrong secrets allowed per IP per window (default 10, as the in-process counter). */
  max?: number;
  /** The window in seconds (default 15 min). */
  windowSeconds?: number;
  /** Separates deployments sharing one Redis (the client id). */
  namespace?: string;
}

export function createRedisFailureCounter(options: RedisFailureCounterOptions): AdminFailureCounter {
  const points = options.max ?? 10;
  const duration = options.windowSeconds ?? 900;
  const keyPrefix = `latchkey_admin_secret_${options.namespace ?? ''}`;
  // Required here, with Redis: a server without it never loads the library (server/rate_limit.ts says why).
  const { RateLimiterMemory, RateLimiterRedis, RateLimiterRes } = createRequire(import.meta.url)('rate-limiter-flexible') as typeof Flexible;
  const limiter = new RateLimiterRedis({
    storeClient: options.redis,
    keyPrefix,
    points,
    duration,
    insuranceLimiter: new RateLimiterMemory({ keyPrefix, points, duration }),
  });
  return {
    async reserve(key) {
      await firstConnection(options.redis);
      try {
        await limiter.consume(key, 1);
        return undefined;
      } catch (res) {
        if (res instanceof RateLimiterRes) {
          // A refused reservation took no slot, but the limiter counted it: give it back, or a burst of
          // right secrets beyond the budget would leave points behind and end up locking the right secret out.
          await limiter.reward(key, 1).catch(() => undefined);
          return Math.max(1, Math.ceil(res.msBeforeNext / 1000));
        }
        throw res;
      }
    },
    async release(key) {
      await firstConnection(options.redis);
      await limiter.reward(key, 1);
    },
  };
}

/** Client states before the first connection is up. */
const STARTING = new Set(['wait', 'connecting', 'connect']);

/**
 * Waits (at most 1 s) for the client's first connection: without an offline
 * queue, a command sent while it is still connecting fails and would be
 * counted in the in-process fallback instead of the shared count.
 */
async function firstConnection(redis: Redis): Promise<void> {
  if (!STARTING.has(redis.status)) return;
  await new Promise<void>((resolve) => {
    const done = (): void => {
      clearTimeout(timer);
      redis.off('ready', done);
      redis.off('end', done);
      resolve();
    };
    const timer = setTimeout(done, 1000);
    redis.once('ready', done);
    redis.once('end', done);
  });
}
