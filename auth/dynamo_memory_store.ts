/**
 * The memory store on DynamoDB: sessions, refresh-token lineages, one-time
 * codes and attempt counters shared by every server process when the main
 * database is DynamoDB and there is no `--redis-url`.
 *
 * One item per key in the `memory` table (`pk` the key, `sk` `-`): a string
 * `value`, a counter `n` or a string set `members`, and `expires_at` (unix
 * ms; `expires_s`, the same in seconds, is there for DynamoDB's TTL, which an
 * operator may enable on it to have expired items removed). An expired item
 * counts as absent: every read checks the expiry and every write that needs
 * "absent" accepts an expired item. Each operation is one conditional write,
 * or a conditional write retried on the answer of another, so each is atomic
 * across processes, as the interface requires.
 *
 * Like the Redis store it fails closed: a DynamoDB error reaches the caller,
 * which refuses (never accepts) the session.
 */
import type { DynamoDatabase } from './dynamodb.ts';
import type { MemoryStore } from './memory_store.ts';

const TABLE = 'memory';
const LIVE = { expression: 'attribute_exists(pk) AND #x > :now', names: { '#x': 'expires_at' } };
const ABSENT = { expression: 'attribute_not_exists(pk) OR #x <= :now', names: { '#x': 'expires_at' } };

/** A {@link MemoryStore} in a DynamoDB table. */
export class DynamoMemoryStore implements MemoryStore {
  readonly #db: DynamoDatabase;
  readonly #now: () => number;

  constructor(options: { db: DynamoDatabase; now?: (() => number) | undefined }) {
    this.#db = options.db;
    this.#now = options.now ?? Date.now;
  }

  /** Creates the table when missing. */
  init(): Promise<void> {
    return this.#db.ensureTable({ name: TABLE });
  }

  #expiry(ttlSeconds: number): { expires_at: number; expires_s: number } {
    const at = this.#now() + ttlSeconds * 1000;
    return { expires_at: at, expires_s: Math.ceil(at / 1000) };
  }

  async #live(key: string): Promise<Record<string, unknown> | undefined> {
    const item = await this.#db.get(TABLE, key, '-');
    return item !== undefined && Number(item['expires_at']) > this.#now() ? item : undefined;
  }

  async get(key: string): Promise<string | undefined> {
    const item = await this.#live(key);
    return typeof item?.['value'] === 'string' ? item['value'] : undefined;
  }

  async set(key: string, value: string, ttlSeconds: number): Promise<void> {
    await this.#db.put(TABLE, { pk: key, sk: '-', value, ...this.#expiry(ttlSeconds) });
  }

  setIfAbsent(key: string, value: string, ttlSeconds: number): Promise<boolean> {
    return this.#db.put(TABLE, { pk: key, sk: '-', value, ...this.#expiry(ttlSeconds) }, { ...ABSENT, values: { ':now': this.#now() } });
  }

  compareAndSet(key: string, expected: string, next: string, ttlSeconds: number): Promise<boolean> {
    return this.#db.put(
      TABLE,
      { pk: key, sk: '-', value: next, ...this.#expiry(ttlSeconds) },
      { expression: `${LIVE.expression} AND #v = :expected`, names: { ...LIVE.names, '#v': 'value' }, values: { ':now': this.#now(), ':expected': expected } },
    );
  }

  async del(...keys: string[]): Promise<number> {
    let n = 0;
    for (const key of keys) {
      const old = await this.#db.delete(TABLE, key, '-');
      if (old !== undefined && Number(old['expires_at']) > this.#now()) n++;
    }
    return n;
  }

  async incr(key: string, ttlSeconds: number): Promise<number> {
    for (;;) {
      const now = this.#now();
      const bumped = await this.#db.update(TABLE, key, '-', { add: { n: 1 } }, { ...LIVE, values: { ':now': now } });
      if (bumped !== undefined) return Number(bumped['n']);
      // Absent or expired: start a new window at 1, unless another process just did.
      if (await this.#db.put(TABLE, { pk: key, sk: '-', n: 1, ...this.#expiry(ttlSeconds) }, { ...ABSENT, values: { ':now': now } })) return 1;
    }
  }

  async ttl(key: string): Promise<number> {
    const item = await this.#live(key);
    return item === undefined ? 0 : Math.max(1, Math.ceil((Number(item['expires_at']) - this.#now()) / 1000));
  }

  async addToSet(key: string, member: string, ttlSeconds: number): Promise<void> {
    for (;;) {
      const now = this.#now();
      const added = await this.#db.update(TABLE, key, '-', { add: { members: new Set([member]) }, set: this.#expiry(ttlSeconds) }, { ...LIVE, values: { ':now': now } });
      if (added !== undefined) return;
      if (await this.#db.put(TABLE, { pk: key, sk: '-', members: new Set([member]), ...this.#expiry(ttlSeconds) }, { ...ABSENT, values: { ':now': now } })) return;
    }
  }

  async removeFromSet(key: string, member: string): Promise<void> {
    await this.#db.update(TABLE, key, '-', { del: { members: new Set([member]) } }, { ...LIVE, values: { ':now': this.#now() } });
  }

  async members(key: string): Promise<string[]> {
    const item = await this.#live(key);
    const set = item?.['members'];
    return set instanceof Set ? [...(set as Set<string>)] : [];
  }

  async close(): Promise<void> {
    // The DynamoDB client belongs to the main database and is closed with it.
  }
}
