/**
 * Super-admin authentication: the admin secret (header or `admin_login`)
 * and the server-side admin sessions behind the `service-admin` cookie.
 *
 * - The secret is compared in constant time over SHA-256 digests, so neither
 *   its content nor its length leaks through timing.
 * - Wrong secrets are counted per client IP; once an IP reaches the limit in
 *   the window, further attempts are refused with `resource_exhausted`
 *   before any comparison runs (the slot is reserved first, so parallel
 *   guesses cannot overrun the limit).
 * - A session id is 32 random bytes; only its SHA-256 is stored, with an
 *   expiry. `admin_session` slides the expiry; `admin_logout` deletes it.
 * - Every failure says the same `unauthorized`, whatever was wrong.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { SqlDatabase } from '../engine/sql/sql_database.ts';
import { LatchkeyError } from '../engine/errors.ts';
import { exec, num, select, update } from './sql.ts';
import type { AdminFailureCounter } from './admin_types.ts';

/** Name of the admin session cookie. */
export const ADMIN_COOKIE = 'service-admin';

/** Attributes of the admin cookie (HttpOnly, SameSite=Strict, Secure per `--admin-cookie-secure`). */
export interface AdminCookieAttributes {
  httpOnly: true;
  secure: boolean;
  sameSite: 'Strict';
  path: '/';
  maxAgeSeconds: number;
}

export interface AdminSessionsOptions {
  /** The SQL connection (the store is then {@link SqlAdminSessionStore}); ignored when `store` is given. */
  sequelize?: SqlDatabase | undefined;
  /** Where sessions live (e.g. the DynamoDB store). */
  store?: AdminSessionStore | undefined;
  adminSecret: string;
  /** Lifetime of a session without activity (default 1 h). */
  ttlMs?: number;
  /** Wrong secrets allowed per IP per window (default 10). */
  maxFailures?: number;
  /** The failure-counting window (default 15 min). */
  windowMs?: number;
  clock?: () => number;
  /**
   * Where failures are counted. Default: this process ({@link MemoryFailureCounter}
   * with `maxFailures` and `windowMs`); the server passes a Redis-backed
   * counter with `--redis-url`, so that every instance shares one count per IP.
   */
  failureCounter?: AdminFailureCounter;
}

/**
 * Wrong admin secrets per key (the client IP) in a fixed window: at most
 * `max` reserved slots; a reservation over the limit reserves nothing and
 * answers the seconds until the window ends.
 */
export class MemoryFailureCounter implements AdminFailureCounter {
  readonly #max: number;
  readonly #windowMs: number;
  readonly #clock: () => number;
  readonly #failures = new Map<string, { count: number; resetAt: number }>();

  constructor(options: { max: number; windowMs: number; clock?: () => number }) {
    this.#max = options.max;
    this.#windowMs = options.windowMs;
    this.#clock = options.clock ?? Date.now;
  }

  async reserve(key: string): Promise<number | undefined> {
    const now = this.#clock();
    let entry = this.#failures.get(key);
    if (entry && entry.resetAt <= now) {
      this.#failures.delete(key);
      entry = undefined;
    }
    if (entry && entry.count >= this.#max) return Math.max(1, Math.ceil((entry.resetAt - now) / 1000));
    const slot = entry ?? { count: 0, resetAt: now + this.#windowMs };
    slot.count++;
    this.#failures.set(key, slot);
    if (this.#failures.size > 100_000) this.#sweep(now);
    return undefined;
  }

  async release(key: string): Promise<void> {
    const slot = this.#failures.get(key);
    if (!slot) return;
    slot.count--;
    if (slot.count <= 0) this.#failures.delete(key);
  }

  #sweep(now: number): void {
    for (const [ip, e] of this.#failures) if (e.resetAt <= now) this.#failures.delete(ip);
  }
}

const digest = (s: string): Buffer => createHash('sha256').update(s, 'utf8').digest();
const hashId = (id: string): string => createHash('sha256').update(id, 'utf8').digest('hex');

/** The one error of every failed admin authentication. */
export function adminUnauthenticated(): LatchkeyError {
  return new LatchkeyError('unauthenticated', 'unauthorized', { reason: 'unauthenticated' });
}

/**
 * Where admin sessions live, keyed by the SHA-256 of the session id. Times
 * are unix milliseconds.
 */
export interface AdminSessionStore {
  insert(idHash: string, ip: string, createdAt: number, expiresAt: number): Promise<void>;
  /** Removes sessions that expired before `now`. */
  deleteExpired(now: number): Promise<void>;
  /** The session's expiry, or undefined when there is none. */
  expiresAt(idHash: string): Promise<number | undefined>;
  /** Sets the expiry of a session still live at `now` (atomically); false when it is missing or expired. */
  slide(idHash: string, now: number, expiresAt: number): Promise<boolean>;
  delete(idHash: string): Promise<void>;
}

/** Admin sessions in the `admin_sessions` table. */
export class SqlAdminSessionStore implements AdminSessionStore {
  readonly #db: SqlDatabase;

  constructor(sequelize: SqlDatabase) {
    this.#db = sequelize;
  }

  async insert(idHash: string, ip: string, createdAt: number, expiresAt: number): Promise<void> {
    await exec(this.#db, 'INSERT INTO admin_sessions (id_hash, ip_address, created_at, expires_at) VALUES (?, ?, ?, ?)', [idHash, ip, createdAt, expiresAt]);
  }

  async deleteExpired(now: number): Promise<void> {
    await exec(this.#db, 'DELETE FROM admin_sessions WHERE expires_at < ?', [now]);
  }

  async expiresAt(idHash: string): Promise<number | undefined> {
    const row = (await select(this.#db, 'SELECT expires_at FROM admin_sessions WHERE id_hash = ?', [idHash]))[0];
    return row === undefined ? undefined : num(row['expires_at']);
  }

  async slide(idHash: string, now: number, expiresAt: number): Promise<boolean> {
    return (await update(this.#db, 'UPDATE admin_sessions SET expires_at = ? WHERE id_hash = ? AND expires_at > ?', [expiresAt, idHash, now])) === 1;
  }

  async delete(idHash: string): Promise<void> {
    await exec(this.#db, 'DELETE FROM admin_sessions WHERE id_hash = ?', [idHash]);
  }
}

/** Admin secret checks and admin sessions. */
export class AdminSessions {
  readonly #db: AdminSessionStore;
  readonly #secret: Buffer;
  readonly #ttlMs: number;
  readonly #clock: () => number;
  readonly #failures: AdminFailureCounter;

  constructor(options: AdminSessionsOptions) {
    if (!options.adminSecret) throw new Error('admin secret must not be empty');
    this.#db = options.store ?? new SqlAdminSessionStore(options.sequelize as SqlDatabase);
    this.#secret = digest(options.adminSecret);
    this.#ttlMs = options.ttlMs ?? 3_600_000;
    this.#clock = options.clock ?? Date.now;
    this.#failures =
      options.failureCounter ?? new MemoryFailureCounter({ max: options.maxFailures ?? 10, windowMs: options.windowMs ?? 900_000, clock: this.#clock });
  }

  /** Cookie attributes for a session cookie. */
  cookieAttributes(secure: boolean): AdminCookieAttributes {
    return { httpOnly: true, secure, sameSite: 'Strict', path: '/', maxAgeSeconds: Math.floor(this.#ttlMs / 1000) };
  }

  /**
   * Checks a presented admin secret for the client `ip`. Throws
   * `resource_exhausted` (reason `too_many_attempts`, `details.retry_after`
   * seconds) when the IP is over its limit, and `unauthenticated` when the
   * secret is wrong.
   */
  async checkSecret(presented: string, ip: string): Promise<void> {
    // Reserve the slot before comparing (parallel guesses cannot overrun the limit); give it back on success.
    const wait = await this.#failures.reserve(ip);
    if (wait !== undefined) {
      throw new LatchkeyError('resource_exhausted', 'too many attempts, try again later', {
        reason: 'too_many_attempts',
        details: { retry_after: wait },
      });
    }
    if (!timingSafeEqual(digest(presented), this.#secret)) throw adminUnauthenticated();
    await this.#failures.release(ip);
  }

  /**
   * `admin_login`: checks the secret (see {@link checkSecret}) and opens a
   * session. Returns the session id for the cookie and its expiry (unix ms).
   */
  async login(presented: string, ip: string): Promise<{ token: string; expiresAt: number }> {
    await this.checkSecret(presented, ip);
    const token = randomBytes(32).toString('base64url');
    const now = this.#clock();
    const expiresAt = now + this.#ttlMs;
    await this.#db.insert(hashId(token), ip.slice(0, 45), now, expiresAt);
    // Expired rows are removed opportunistically.
    await this.#db.deleteExpired(now);
    return { token, expiresAt };
  }

  /** True when `token` names a live session. */
  async verify(token: string | undefined): Promise<boolean> {
    if (!token || token.length > 128) return false;
    const expiresAt = await this.#db.expiresAt(hashId(token));
    return expiresAt !== undefined && expiresAt > this.#clock();
  }

  /**
   * `admin_session`: verifies the session and slides its expiry. Throws
   * `unauthenticated` when it is missing, unknown or expired.
   */
  async refresh(token: string | undefined): Promise<{ expiresAt: number }> {
    if (!token || token.length > 128) throw adminUnauthenticated();
    const now = this.#clock();
    const expiresAt = now + this.#ttlMs;
    if (!(await this.#db.slide(hashId(token), now, expiresAt))) throw adminUnauthenticated();
    return { expiresAt };
  }

  /** `admin_logout`: ends the session (a no-op for an unknown one). */
  async logout(token: string | undefined): Promise<void> {
    if (!token || token.length > 128) return;
    await this.#db.delete(hashId(token));
  }

  /**
   * Resolves admin credentials, for the transports' principal chain:
   * - with the header enabled and a secret presented: checked (rate limited);
   *   `header` on success, throws otherwise;
   * - else a live `service-admin` cookie: `cookie`;
   * - else `undefined` (not admin credentials, or an invalid cookie: the
   *   caller decides; admin rows then answer `unauthenticated`).
   */
  /**
   * Whether `credentials` hold anything {@link authenticate} would look at (the
   * admin secret, unless the header is disabled, or an admin cookie): when they
   * do not, it answers `undefined`, and the caller may skip it.
   */
  presents(credentials: { adminSecret?: string | undefined; cookies: Readonly<Record<string, string>> }, headerDisabled: boolean): boolean {
    return (!headerDisabled && credentials.adminSecret !== undefined) || credentials.cookies[ADMIN_COOKIE] !== undefined;
  }

  async authenticate(
    credentials: { adminSecret?: string | undefined; cookies: Readonly<Record<string, string>> },
    ip: string,
    headerDisabled: boolean,
  ): Promise<'header' | 'cookie' | undefined> {
    if (!headerDisabled && credentials.adminSecret !== undefined) {
      await this.checkSecret(credentials.adminSecret, ip);
      return 'header';
    }
    const cookie = credentials.cookies[ADMIN_COOKIE];
    if (cookie !== undefined && (await this.verify(cookie))) return 'cookie';
    return undefined;
  }
}
