/**
 * The memory store: short-lived shared state of the identity half (sessions,
 * refresh-token lineages, login attempt counters).
 *
 * Two implementations of one small interface:
 * - {@link InProcessMemoryStore}: a Map with expiries, for a single process
 *   (the default; state is lost on restart, which logs everyone out).
 * - {@link RedisMemoryStore}: ioredis, for several server processes sharing
 *   sessions. Every compound operation is one Redis command or one Lua script,
 *   so it is atomic across processes.
 *
 * Failure mode: sessions and revocation fail **closed**. A Redis error
 * surfaces as `unavailable`, which callers turn into a refusal, never into an
 * accepted token (conventions §0: correct authorization beats availability).
 */
import { createRequire } from 'node:module';
import type { Redis, RedisOptions } from 'ioredis';
import { LatchkeyError } from '../engine/errors.ts';

/**
 * A Redis client: the one place the process creates one. The client library
 * is loaded on the first call, so a server without `--redis-url` never holds
 * it in memory.
 */
export function openRedis(url: string, options: Pick<RedisOptions, 'keyPrefix' | 'enableOfflineQueue' | 'maxRetriesPerRequest' | 'lazyConnect'>): Redis {
  const { Redis: Client } = createRequire(import.meta.url)('ioredis') as typeof import('ioredis');
  return new Client(url, options);
}

/** The operations the identity half needs; every one is atomic. */
export interface MemoryStore {
  /** The value under `key`, or undefined when absent or expired. */
  get(key: string): Promise<string | undefined>;
  /** `get` answered at once, by a store kept in this process (absent on stores behind a network). */
  getNow?(key: string): string | undefined;
  /** Sets `key` to `value` for `ttlSeconds` (> 0). */
  set(key: string, value: string, ttlSeconds: number): Promise<void>;
  /** Sets `key` only when absent; true when this call set it. */
  setIfAbsent(key: string, value: string, ttlSeconds: number): Promise<boolean>;
  /**
   * Replaces the value of `key` with `next` only when it currently equals
   * `expected`; true when replaced. The TTL is reset to `ttlSeconds`.
   */
  compareAndSet(key: string, expected: string, next: string, ttlSeconds: number): Promise<boolean>;
  /** Deletes keys; returns how many existed. */
  del(...keys: string[]): Promise<number>;
  /**
   * Increments the integer under `key` (absent = 0) and returns the new value.
   * When the key did not exist, its TTL is set to `ttlSeconds` (a fixed window).
   */
  incr(key: string, ttlSeconds: number): Promise<number>;
  /** Seconds until `key` expires; 0 when absent. */
  ttl(key: string): Promise<number>;
  /** Adds a member to the set under `key` and (re)sets the set's TTL. */
  addToSet(key: string, member: string, ttlSeconds: number): Promise<void>;
  /** Removes a member from the set under `key`. */
  removeFromSet(key: string, member: string): Promise<void>;
  /** The members of the set under `key` (empty when absent). */
  members(key: string): Promise<string[]>;
  /** Releases connections. */
  close(): Promise<void>;
}

/** Options of {@link InProcessMemoryStore}. */
export interface InProcessMemoryStoreOptions {
  /** Milliseconds since the epoch; injected by tests. Default `Date.now`. */
  now?: () => number;
}

interface Entry {
  value: string | Set<string>;
  expiresAt: number;
}

/** A single-process memory store. Operations are synchronous under the hood, hence atomic. */
export class InProcessMemoryStore implements MemoryStore {
  readonly #map = new Map<string, Entry>();
  readonly #now: () => number;
  #ops = 0;

  constructor(options: InProcessMemoryStoreOptions = {}) {
    this.#now = options.now ?? Date.now;
  }

  #live(key: string): Entry | undefined {
    const e = this.#map.get(key);
    if (e === undefined) return undefined;
    if (e.expiresAt <= this.#now()) {
      this.#map.delete(key);
      return undefined;
    }
    return e;
  }

  // Expired entries are also swept every 1024 writes so that abandoned keys do not accumulate.
  #sweep(): void {
    if (++this.#ops % 1024 !== 0) return;
    const now = this.#now();
    for (const [k, e] of this.#map) if (e.expiresAt <= now) this.#map.delete(k);
  }

  #put(key: string, value: string | Set<string>, ttlSeconds: number): void {
    this.#sweep();
    this.#map.set(key, { value, expiresAt: this.#now() + ttlSeconds * 1000 });
  }

  async get(key: string): Promise<string | undefined> {
    return this.getNow(key);
  }

  getNow(key: string): string | undefined {
    const e = this.#live(key);
    return typeof e?.value === 'string' ? e.value : undefined;
  }

  async set(key: string, value: string, ttlSeconds: number): Promise<void> {
    this.#put(key, value, ttlSeconds);
  }

  async setIfAbsent(key: string, value: string, ttlSeconds: number): Promise<boolean> {
    if (this.#live(key) !== undefined) return false;
    this.#put(key, value, ttlSeconds);
    return true;
  }

  async compareAndSet(key: string, expected: string, next: string, ttlSeconds: number): Promise<boolean> {
    const e = this.#live(key);
    if (e === undefined || e.value !== expected) return false;
    this.#put(key, next, ttlSeconds);
    return true;
  }

  async del(...keys: string[]): Promise<number> {
    let n = 0;
    for (const k of keys) if (this.#live(k) !== undefined && this.#map.delete(k)) n++;
    return n;
  }

  async incr(key: string, ttlSeconds: number): Promise<number> {
    const e = this.#live(key);
    if (e === undefined || typeof e.value !== 'string') {
      this.#put(key, '1', ttlSeconds);
      return 1;
    }
    const v = Number(e.value) + 1;
    e.value = String(v);
    return v;
  }

  async ttl(key: string): Promise<number> {
    const e = this.#live(key);
    return e === undefined ? 0 : Math.max(1, Math.ceil((e.expiresAt - this.#now()) / 1000));
  }

  async addToSet(key: string, member: string, ttlSeconds: number): Promise<void> {
    const e = this.#live(key);
    const set = e !== undefined && e.value instanceof Set ? e.value : new Set<string>();
    set.add(member);
    this.#put(key, set, ttlSeconds);
  }

  async removeFromSet(key: string, member: string): Promise<void> {
    const e = this.#live(key);
    if (e !== undefined && e.value instanceof Set) e.value.delete(member);
  }

  async members(key: string): Promise<string[]> {
    const e = this.#live(key);
    return e !== undefined && e.value instanceof Set ? [...e.value] : [];
  }

  async close(): Promise<void> {
    this.#map.clear();
  }
}

/** Options of {@link RedisMemoryStore}. */
export interface RedisMemoryStoreOptions {
  /** `redis://[user:password@]host:port[/db]` (or `rediss://`). */
  url: string;
  /** Prefix of every key, so that several deployments can share one Redis. Default `latchkey:`. */
  keyPrefix?: string;
}

// Lua keeps compare-and-set and first-increment-with-expiry atomic across processes.
const CAS_SCRIPT = `if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('SET', KEYS[1], ARGV[2], 'EX', ARGV[3]) return 1 else return 0 end`;
const INCR_SCRIPT = `local v = redis.call('INCR', KEYS[1]) if v == 1 then redis.call('EXPIRE', KEYS[1], ARGV[1]) end return v`;

/** A memory store in Redis, shared by every server process that points at it. */
export class RedisMemoryStore implements MemoryStore {
  readonly #redis: Redis;

  constructor(options: RedisMemoryStoreOptions) {
    // One retry per request: while Redis is down, calls fail quickly (closed) instead of hanging.
    this.#redis = openRedis(options.url, {
      keyPrefix: options.keyPrefix ?? 'latchkey:',
      enableOfflineQueue: true,
      maxRetriesPerRequest: 1,
      lazyConnect: false,
    });
    this.#redis.on('error', () => {
      // Reported per call (as `unavailable`); the client reconnects by itself.
    });
  }

  async #run<T>(fn: (r: Redis) => Promise<T>): Promise<T> {
    // Connection lost and not yet back: refuse at once rather than queue the command until a
    // reconnection attempt fails (measured: 4-6 s per request with Redis stopped, which held
    // every session-touching request that long; replicas_shared_state.test.ts).
    const status = this.#redis.status;
    if (status === 'reconnecting' || status === 'close' || status === 'end') {
      throw new LatchkeyError('unavailable', 'session store unavailable', { reason: 'session_store_unavailable', cause: new Error(`redis ${status}`) });
    }
    try {
      return await fn(this.#redis);
    } catch (err) {
      throw new LatchkeyError('unavailable', 'session store unavailable', { reason: 'session_store_unavailable', cause: err });
    }
  }

  /** Resolves once connected (or rejects with `unavailable`). */
  async ready(): Promise<void> {
    await this.#run((r) => r.ping());
  }

  get(key: string): Promise<string | undefined> {
    return this.#run(async (r) => (await r.get(key)) ?? undefined);
  }

  async set(key: string, value: string, ttlSeconds: number): Promise<void> {
    await this.#run((r) => r.set(key, value, 'EX', Math.max(1, Math.ceil(ttlSeconds))));
  }

  setIfAbsent(key: string, value: string, ttlSeconds: number): Promise<boolean> {
    return this.#run(async (r) => (await r.set(key, value, 'EX', Math.max(1, Math.ceil(ttlSeconds)), 'NX')) === 'OK');
  }

  compareAndSet(key: string, expected: string, next: string, ttlSeconds: number): Promise<boolean> {
    return this.#run(async (r) => (await r.eval(CAS_SCRIPT, 1, key, expected, next, Math.max(1, Math.ceil(ttlSeconds)))) === 1);
  }

  del(...keys: string[]): Promise<number> {
    if (keys.length === 0) return Promise.resolve(0);
    return this.#run((r) => r.del(...keys));
  }

  incr(key: string, ttlSeconds: number): Promise<number> {
    return this.#run(async (r) => Number(await r.eval(INCR_SCRIPT, 1, key, Math.max(1, Math.ceil(ttlSeconds)))));
  }

  ttl(key: string): Promise<number> {
    return this.#run(async (r) => Math.max(0, await r.ttl(key)));
  }

  async addToSet(key: string, member: string, ttlSeconds: number): Promise<void> {
    await this.#run((r) => r.multi().sadd(key, member).expire(key, Math.max(1, Math.ceil(ttlSeconds))).exec());
  }

  async removeFromSet(key: string, member: string): Promise<void> {
    await this.#run((r) => r.srem(key, member));
  }

  members(key: string): Promise<string[]> {
    return this.#run((r) => r.smembers(key));
  }

  async close(): Promise<void> {
    try {
      await this.#redis.quit();
    } catch {
      this.#redis.disconnect();
    }
  }
}

/** The in-process store, or Redis when a URL is given. */
export function createMemoryStore(options: { redisUrl?: string | undefined; now?: () => number } = {}): MemoryStore {
  if (options.redisUrl) return new RedisMemoryStore({ url: options.redisUrl });
  return new InProcessMemoryStore(options.now === undefined ? {} : { now: options.now });
}
