/**
 * Per-client-IP rate limiting: `--rate-limit-rps` requests per second plus a
 * burst allowance of `--rate-limit-burst`. With `--redis-url` the counters
 * live in Redis (rate-limiter-flexible, keyed by client id and IP), so every
 * instance of one deployment shares one limit; if Redis fails the in-memory
 * limiter takes over (availability over strictness). Without Redis the same
 * rules run in process (see `memoryLimiter`).
 *
 * Clients are told the limits with the two fields of the IETF httpapi
 * draft "RateLimit header fields for HTTP" (draft-ietf-httpapi-ratelimit-headers-10):
 * `RateLimit-Policy` names each quota policy, its quota `q` and window `w`
 * in seconds (`"steady";q=<rps>;w=1, "burst";q=<burst>;w=<burst window>`,
 * the same on every response), and `RateLimit` the caller's service limit
 * now, per policy: the quota units remaining `r` and the seconds `t` until
 * the window resets. A refused request also gets `Retry-After` (RFC 9110
 * §10.2.3).
 */
import { createRequire } from 'node:module';
import type * as Flexible from 'rate-limiter-flexible';
import type { RateLimiterAbstract, RateLimiterMemory, RateLimiterRes } from 'rate-limiter-flexible';
import type { Redis } from 'ioredis';

/**
 * rate-limiter-flexible, required when a limiter with Redis is made: its entry loads every store it supports (some
 * 30 modules), and without `--redis-url` the limits run in process without it (docs/performance.md, "Server
 * footprint").
 */
const flexible = (): typeof Flexible => createRequire(import.meta.url)('rate-limiter-flexible') as typeof Flexible;

export interface RateLimiter {
  /** Resolves to `undefined` when allowed, or the seconds to wait (`Retry-After`) when refused. */
  take(key: string): Promise<number | undefined>;
  /**
   * The same decision without a promise, for a limiter that keeps its counts
   * in this process (absent when the counts live elsewhere, as in Redis).
   */
  takeNow?(key: string): number | undefined;
  /** The `RateLimit-Policy` field value (absent when nothing is limited). */
  readonly policy?: string;
  /** The `RateLimit` field value for `key` after its last `take`, or undefined when not known. */
  status?(key: string): string | undefined;
}

export const UNLIMITED: RateLimiter = { take: async () => undefined, takeNow: () => undefined };

/** The `RateLimit-Policy` value of a steady window of `rps` a second and a burst window of `burst` per `burstWindow` seconds. */
export function rateLimitPolicy(rps: number, burst: number, burstWindow: number): string {
  const steady = `"steady";q=${rps};w=1`;
  return burst > 0 ? `${steady}, "burst";q=${burst};w=${burstWindow}` : steady;
}

/** How many `RateLimit` values the Redis limiter remembers (one per recent client key); emptied when full. */
const STATUS_KEYS = 10_000;

export function createRateLimiter(options: { rps: number; burst: number; redis?: Redis; namespace?: string; now?: () => number }): RateLimiter {
  const { rps, burst } = options;
  if (rps <= 0) return UNLIMITED;
  const burstWindow = Math.max(1, Math.ceil(burst / rps));
  if (!options.redis) return memoryLimiter(rps, burst, burstWindow, options.now ?? Date.now);
  const { BurstyRateLimiter, RateLimiterMemory, RateLimiterRedis, RateLimiterRes } = flexible();
  const make = (keyPrefix: string, points: number, duration: number): RateLimiterAbstract => {
    const memory = new RateLimiterMemory({ keyPrefix, points, duration });
    if (!options.redis) return memory;
    return new RateLimiterRedis({ storeClient: options.redis, keyPrefix: `latchkey_${keyPrefix}_${options.namespace ?? ''}`, points, duration, insuranceLimiter: memory });
  };
  const steady = make('rl', rps, 1);
  const limiter = burst > 0 ? new BurstyRateLimiter(steady as RateLimiterMemory, make('rlb', burst, burstWindow) as RateLimiterMemory) : steady;
  // The shared counters answer with what is left of the window that decided; that is what `RateLimit` reports.
  const statuses = new Map<string, string>();
  const remember = (key: string, res: RateLimiterRes): void => {
    if (statuses.size >= STATUS_KEYS) statuses.clear();
    statuses.set(key, `"steady";r=${Math.max(0, res.remainingPoints)};t=${Math.max(0, Math.ceil(res.msBeforeNext / 1000))}`);
  };
  return {
    policy: rateLimitPolicy(rps, burst, burstWindow),
    status: (key) => statuses.get(key),
    async take(key) {
      try {
        const res = await limiter.consume(key, 1);
        if (res instanceof RateLimiterRes) remember(key, res);
        return undefined;
      } catch (res) {
        if (res instanceof RateLimiterRes) {
          remember(key, res);
          return Math.max(1, Math.ceil(res.msBeforeNext / 1000));
        }
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
  const left = (w: Window | undefined, quota: number, seconds: number, t: number): string =>
    w === undefined || w.endsAt <= t ? `r=${quota};t=${seconds}` : `r=${Math.max(0, quota - w.count)};t=${Math.ceil((w.endsAt - t) / 1000)}`;
  return {
    take(key) {
      const wait = takeNow(key);
      return wait === undefined ? ALLOWED : Promise.resolve(wait);
    },
    takeNow,
    policy: rateLimitPolicy(rps, burst, burstWindow),
    status(key) {
      const t = now();
      const s = `"steady";${left(steady.get(key), rps, 1, t)}`;
      return burst > 0 ? `${s}, "burst";${left(bursts.get(key), burst, burstWindow, t)}` : s;
    },
  };
}
