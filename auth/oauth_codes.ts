/**
 * One-time authorization codes (RFC 6749 §4.1.2, §10.5) on the memory store.
 *
 * The store is the sessions' own: a code is worth something only where the
 * session it was issued from lives, so with `--redis-url` every process sees
 * every code and every redemption, and without it codes are as
 * process-local as sessions are.
 *
 * Keys (the code itself is never stored, only its SHA-256):
 * - `oauth_code:<hash>`: the grant (JSON), expiring with the code;
 * - `oauth_code_used:<hash>`: set atomically by the one redemption that wins
 *   (`setIfAbsent`), later holding the id of the session the code's tokens
 *   belong to, so that a replay can end it (RFC 6749 §4.1.2: tokens issued
 *   from a replayed code should be revoked);
 * - `oauth_code_replayed:<hash>`: a replay that came before the winner had
 *   recorded its session; the winner then ends its session itself.
 */
import { createHash, randomBytes } from 'node:crypto';
import type { MemoryStore } from './memory_store.ts';

/** What an authorization code grants. */
export interface CodeGrant {
  client_id: string;
  redirect_uri: string;
  scope: string[];
  nonce?: string;
  code_challenge?: string;
  code_challenge_method?: 'S256' | 'plain';
  /** The browser session the code was issued from. */
  sid: string;
  user_id: string;
  roles: string[];
  login_method: string;
  auth_time: number;
  /** The browser session's amr (RFC 8176) when it was opened with a second factor. */
  amr?: string[];
  /** Milliseconds since the epoch; checked against the injected clock as well as the store TTL. */
  expires_ms: number;
  /** RFC 9449 §10: the thumbprint of the DPoP key the code must be redeemed with (`dpop_jkt`). */
  dpop_jkt?: string;
  /** RFC 8707: the resource server the authorization request named. */
  resource?: string;
}

/** Outcome of {@link AuthorizationCodes.redeem}. */
export type Redemption =
  | { kind: 'granted'; grant: CodeGrant; hash: string }
  /** Never issued, expired from the store, or malformed. */
  | { kind: 'unknown' }
  /** Already redeemed: the session of its tokens (if known yet) has been ended. */
  | { kind: 'replayed' };

const hashCode = (code: string): string => createHash('sha256').update(code, 'utf8').digest('base64url');

/** Issues and redeems authorization codes. */
export class AuthorizationCodes {
  readonly #store: MemoryStore;
  readonly #ttl: number;
  readonly #endSession: (sid: string) => Promise<void>;

  /**
   * `ttlSeconds`: lifetime of a code (RFC 6749 §4.1.2 recommends at most 10
   * minutes; the default 60 s is what a redirect round trip needs).
   * `endSession` ends the session of a replayed code's tokens.
   */
  constructor(options: { store: MemoryStore; ttlSeconds?: number; endSession: (sid: string) => Promise<void> }) {
    this.#store = options.store;
    this.#ttl = options.ttlSeconds ?? 60;
    this.#endSession = options.endSession;
  }

  get ttlSeconds(): number {
    return this.#ttl;
  }

  /** Stores a grant under a new random 256-bit code and returns the code (shown once). */
  async issue(grant: Omit<CodeGrant, 'expires_ms'>, nowMs: number): Promise<string> {
    const code = randomBytes(32).toString('base64url');
    const record: CodeGrant = { ...grant, expires_ms: nowMs + this.#ttl * 1000 };
    await this.#store.set(`oauth_code:${hashCode(code)}`, JSON.stringify(record), this.#ttl);
    return code;
  }

  /**
   * Redeems a code: exactly one of any number of concurrent redemptions gets
   * the grant; the code is burnt whether or not the caller then accepts it
   * (a wrong verifier does not leave the code open to more guesses).
   */
  async redeem(code: string): Promise<Redemption> {
    if (typeof code !== 'string' || code.length === 0 || code.length > 256) return { kind: 'unknown' };
    const hash = hashCode(code);
    const raw = await this.#store.get(`oauth_code:${hash}`);
    const usedKey = `oauth_code_used:${hash}`;
    // The used marker outlives the code by its own lifetime, so a replay soon after is still recognised.
    const markerTtl = this.#ttl * 10;
    if (raw === undefined) {
      const marker = await this.#store.get(usedKey);
      if (marker === undefined) return { kind: 'unknown' };
      await this.#replayed(hash, marker, markerTtl);
      return { kind: 'replayed' };
    }
    if (!(await this.#store.setIfAbsent(usedKey, '', markerTtl))) {
      await this.#replayed(hash, (await this.#store.get(usedKey)) ?? '', markerTtl);
      return { kind: 'replayed' };
    }
    await this.#store.del(`oauth_code:${hash}`);
    return { kind: 'granted', grant: JSON.parse(raw) as CodeGrant, hash };
  }

  /**
   * Records the session the tokens of a redeemed code belong to. Returns false
   * when a replay came meanwhile: the caller must then end that session and
   * refuse (the replay could not, not knowing it yet).
   */
  async bindSession(hash: string, sid: string): Promise<boolean> {
    await this.#store.set(`oauth_code_used:${hash}`, sid, this.#ttl * 10);
    return (await this.#store.get(`oauth_code_replayed:${hash}`)) === undefined;
  }

  // Winner: write sid, then read the flag. Replay: write the flag, then read sid. Whatever the
  // interleaving, at least one of the two sees the other's write and ends the session.
  async #replayed(hash: string, sid: string, ttl: number): Promise<void> {
    if (sid === '') {
      await this.#store.set(`oauth_code_replayed:${hash}`, '1', ttl);
      sid = (await this.#store.get(`oauth_code_used:${hash}`)) ?? '';
    }
    if (sid !== '') await this.#endSession(sid);
  }
}
