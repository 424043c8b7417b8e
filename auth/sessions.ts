/**
 * Server-side sessions on a {@link MemoryStore}.
 *
 * A session is created at every login or sign-up (never reused: a new id on
 * every authentication, ASVS v5 7.2.4, security matrix B4) and holds:
 * - `sess:<sid>`: the session record (user, roles, scope, login method, times);
 * - `cookie:<sha256(token)>` → sid: the opaque 256-bit cookie token, stored only
 *   hashed so that a leaked store does not leak live cookies;
 * - `rt:<sid>`: the jti of the one live refresh token of the session's lineage
 *   (the session id is the refresh-token family);
 * - `rt_used:<jti>`: when a rotated-away refresh token was used, so that a replay
 *   can be told from garbage;
 * - `user_sessions:<uid>`: the user's session ids, to end them all at once;
 * - `ended:<sid>`: that the session was ended, written before its keys are
 *   deleted, so that a refresh in flight cannot write the session back
 *   (security matrix B6);
 * - `seen:<sid>`: the device the session was opened and last refreshed from
 *   (user agent, client IP, first and last time), for the account center's
 *   list of sessions. Kept apart from `sess:<sid>` so that recording it never
 *   races a cookie rotation that rewrites the record.
 *
 * Access tokens carry `sid`; a token whose session is gone is refused. Ending
 * a session therefore revokes every token issued in it, on every process that
 * shares the store.
 */
import { hash } from 'node:crypto';
import { LatchkeyError } from '../engine/errors.ts';
import type { MemoryStore } from './memory_store.ts';
import { randomBase64url } from './random_token.ts';

/** What a session remembers. */
export interface SessionRecord {
  sid: string;
  user_id: string;
  roles: string[];
  scope: string[];
  login_method: string;
  /** Unix seconds of the authentication that created the session. */
  auth_time: number;
  /** Authentication method references (RFC 8176) when a second factor was proven, e.g. `['pwd', 'otp', 'mfa']`. */
  amr?: string[];
  /** The registered OAuth client the session's tokens were issued to (absent: the `--client-id` client or a first-party login). */
  client_id?: string;
  /** Hash of the current cookie token. */
  cookie_hash: string;
  /** Milliseconds since the epoch when the session was created. */
  created_ms: number;
  /**
   * The thumbprint (RFC 7638) of the DPoP key the session's access tokens
   * are bound to (`cnf.jkt`, RFC 9449): set for an OAuth grant made with a
   * DPoP proof; such a session's refresh tokens are redeemed with a proof only.
   */
  jkt?: string;
  /** The resource server (RFC 8707) the grant was made for: its access tokens name it in `aud`. */
  resource?: string;
  /** The active organization (`switch_organization`): its id goes into the session's tokens as `org_id`. */
  org_id?: string | undefined;
  /**
   * Unix seconds past which the session is over: its sign-in plus the active
   * organization's `session_lifetime`, set by `switch_organization` (absent:
   * no organization, or one without a lifetime). Past it the session reads
   * as ended everywhere, and `get` ends it.
   */
  org_expires_at?: number | undefined;
}

/** What a lookup saw besides its answer: a session ended because its organization's lifetime had passed. */
export interface SessionLookup {
  orgExpired?: boolean;
}

/** Where a session was opened and last refreshed from (`seen:<sid>`). */
export interface SessionDevice {
  /** The `User-Agent` of the request that last opened or refreshed the session (at most 512 characters). */
  user_agent: string;
  /** The client IP of that request. */
  ip: string;
  /** Milliseconds since the epoch of the first request recorded. */
  first_seen_ms: number;
  /** Milliseconds since the epoch of the last request recorded. */
  last_seen_ms: number;
}

/** A live session of a user with its device, as the account center lists it. */
export interface SessionListing {
  session: SessionRecord;
  device: SessionDevice | undefined;
}

/** The most sessions {@link SessionManager.listForUser} returns (the most recently seen first). */
export const SESSION_LIST_LIMIT = 200;

/** Outcome of a refresh-token rotation. */
export type RotationOutcome =
  /** The presented token was the live one; the lineage moved to the new jti. */
  | 'rotated'
  /** An already rotated token presented again within the grace period: refused, lineage untouched. */
  | 'reused_in_grace'
  /** An already rotated token presented after the grace period: the whole family was revoked. */
  | 'reused_family_revoked'
  /** Not a token of a live session. */
  | 'unknown';

export interface SessionManagerOptions {
  store: MemoryStore;
  /** Lifetime of the cookie token, seconds. Default 86400 (one day). */
  cookieTtl?: number;
  /** Lifetime of the session record and its refresh lineage, seconds. Default 30 days. */
  sessionTtl?: number;
  /** A rotated refresh token replayed within this many seconds is refused without revoking the family. Default 10. */
  reuseGraceSeconds?: number;
  /** Milliseconds since the epoch. Default `Date.now`. */
  now?: () => number;
}

/** How many parsed session records {@link SessionManager} keeps (about 3 MB at 300 bytes a record). */
const PARSED_RECORDS = 10_000;

/**
 * The store key `prefix + id` of the ids read on every authenticated call
 * (a session's id, its user's id), kept once built: the id is the same string
 * on each call (from a cached token's claims or a cached record), so finding
 * its key reuses the id's hash, where a key built anew was a new string to
 * flatten and hash on every lookup. Bounded; emptied when full.
 */
class KeyMemo {
  readonly #keys = new Map<string, string>();
  readonly #prefix: string;

  constructor(prefix: string) {
    this.#prefix = prefix;
  }

  of(id: string): string {
    let key = this.#keys.get(id);
    if (key === undefined) {
      if (this.#keys.size >= PARSED_RECORDS) this.#keys.clear();
      key = `${this.#prefix}${id}`;
      this.#keys.set(id, key);
    }
    return key;
  }
}

/** SHA-256 of a token, base64url (one call: a `Hash` object per token cost more than the digest on a session check). */
const hashToken = (token: string): string => hash('sha256', token, 'base64url');

/** Creates, reads, rotates and ends sessions. */
export class SessionManager {
  readonly #store: MemoryStore;
  readonly cookieTtl: number;
  readonly sessionTtl: number;
  readonly #grace: number;
  readonly #now: () => number;
  readonly #parsed = new Map<string, SessionRecord>();
  readonly #sessKey = new KeyMemo('sess:');
  readonly #nbfKey = new KeyMemo('user_nbf:');

  constructor(options: SessionManagerOptions) {
    this.#store = options.store;
    this.cookieTtl = options.cookieTtl ?? 86400;
    this.sessionTtl = options.sessionTtl ?? 30 * 24 * 3600;
    this.#grace = options.reuseGraceSeconds ?? 10;
    this.#now = options.now ?? Date.now;
  }

  /** Creates a session; returns it with its cookie token (shown once, stored hashed). */
  async create(data: Omit<SessionRecord, 'sid' | 'cookie_hash' | 'created_ms'>): Promise<{ session: SessionRecord; cookieToken: string }> {
    const sid = randomBase64url(18);
    const cookieToken = randomBase64url(32);
    const session: SessionRecord = { ...data, sid, cookie_hash: hashToken(cookieToken), created_ms: this.#now() };
    await this.#store.set(`sess:${sid}`, JSON.stringify(session), this.sessionTtl);
    await this.#store.set(`cookie:${session.cookie_hash}`, sid, this.cookieTtl);
    await this.#store.addToSet(`user_sessions:${data.user_id}`, sid, this.sessionTtl);
    return { session, cookieToken };
  }

  /**
   * The live session with this id, or undefined. `seen.orgExpired` is set
   * when the session was there but past its organization's lifetime (and so
   * was ended by this call), for the caller to say so.
   */
  async get(sid: string, seen?: SessionLookup): Promise<SessionRecord | undefined> {
    if (typeof sid !== 'string' || sid.length === 0 || sid.length > 64) return undefined;
    const raw = await this.#store.get(this.#sessKey.of(sid));
    if (raw === undefined) return undefined;
    const session = this.#parse(raw);
    if (this.#orgExpired(session)) {
      await this.#endRecord(session);
      if (seen !== undefined) seen.orgExpired = true;
      return undefined;
    }
    return alive(session, await this.#store.get(this.#nbfKey.of(session.user_id)));
  }

  /** Whether the session's active organization's lifetime has passed (`org_expires_at`). */
  #orgExpired(session: SessionRecord): boolean {
    return session.org_expires_at !== undefined && this.#now() / 1000 > session.org_expires_at;
  }

  /**
   * {@link get} without a promise, when the store is kept in this process:
   * the live session, null when there is none, or undefined when the store
   * must be asked asynchronously (use `get`).
   */
  getNow(sid: string): SessionRecord | null | undefined {
    const store = this.#store;
    if (store.getNow === undefined) return undefined;
    if (typeof sid !== 'string' || sid.length === 0 || sid.length > 64) return null;
    const raw = store.getNow(this.#sessKey.of(sid));
    if (raw === undefined) return null;
    const session = this.#parse(raw);
    // Past its organization's lifetime: `get` ends it.
    if (this.#orgExpired(session)) return undefined;
    return alive(session, store.getNow(this.#nbfKey.of(session.user_id))) ?? null;
  }

  /**
   * The record stored as `raw`, parsed once per distinct text: every request
   * with a bearer token reads its session, and parsing the same record again
   * cost more than the store lookup. Keyed by the exact stored text, so a
   * changed record (rotated cookie, new roles) is a new key and parsed anew,
   * and the store is still read on every call: an ended session is gone from
   * the store and never reaches this cache. Records are frozen, as they are
   * shared between callers. Bounded; the oldest text is dropped first.
   */
  #parse(raw: string): SessionRecord {
    const hit = this.#parsed.get(raw);
    if (hit !== undefined) return hit;
    const session = JSON.parse(raw) as SessionRecord;
    for (const v of Object.values(session)) if (Array.isArray(v)) Object.freeze(v);
    Object.freeze(session);
    if (this.#parsed.size >= PARSED_RECORDS) this.#parsed.delete(this.#parsed.keys().next().value as string);
    this.#parsed.set(raw, session);
    return session;
  }

  /**
   * When every session of the user was last ended at once (revocation,
   * deactivation, password reset), in milliseconds since the epoch; anything
   * a login proved before then (a session, an MFA challenge) is dead.
   */
  async endedAllAt(userId: string): Promise<number | undefined> {
    const raw = await this.#store.get(`user_nbf:${userId}`);
    return raw === undefined ? undefined : Number(raw);
  }

  /** The live session a cookie token belongs to, or undefined (`seen` as for {@link get}). */
  async fromCookie(cookieToken: string, seen?: SessionLookup): Promise<SessionRecord | undefined> {
    if (typeof cookieToken !== 'string' || cookieToken.length === 0 || cookieToken.length > 256) return undefined;
    const hash = hashToken(cookieToken);
    const sid = await this.#store.get(`cookie:${hash}`);
    if (sid === undefined) return undefined;
    const session = await this.get(sid, seen);
    // The mapping may outlive a rotation for an instant; only the session's current cookie counts.
    return session !== undefined && session.cookie_hash === hash ? session : undefined;
  }

  /**
   * {@link fromCookie} without a promise, when the store is kept in this
   * process: the live session, null when the cookie opens none, or undefined
   * when `fromCookie` must be asked (a store outside the process, or a
   * session past its organization's lifetime, which `fromCookie` ends).
   */
  fromCookieNow(cookieToken: string): SessionRecord | null | undefined {
    const store = this.#store;
    if (store.getNow === undefined) return undefined;
    if (typeof cookieToken !== 'string' || cookieToken.length === 0 || cookieToken.length > 256) return null;
    const hash = hashToken(cookieToken);
    const sid = store.getNow(`cookie:${hash}`);
    if (sid === undefined) return null;
    const session = this.getNow(sid);
    if (session === undefined) return undefined;
    // As `fromCookie`: only the session's current cookie counts.
    return session !== null && session.cookie_hash === hash ? session : null;
  }

  /**
   * Replaces the session's cookie token (the old one stops working) and
   * optionally its roles/scope. The session was read before; when it has
   * been ended since (a logout while this refresh was in flight), what this
   * call wrote is removed again and it throws `unauthenticated`: the marker
   * `ended:<sid>` is written before an ending deletes anything, so either the
   * ending deletes this write or this call sees the marker (security matrix B6).
   */
  async rotateCookie(session: SessionRecord, patch: Partial<Pick<SessionRecord, 'roles' | 'scope' | 'org_id' | 'org_expires_at' | 'jkt'>> = {}): Promise<{ session: SessionRecord; cookieToken: string }> {
    const cookieToken = randomBase64url(32);
    const next: SessionRecord = { ...session, ...patch, cookie_hash: hashToken(cookieToken) };
    await this.#store.set(`sess:${session.sid}`, JSON.stringify(next), this.sessionTtl);
    await this.#store.set(`cookie:${next.cookie_hash}`, session.sid, this.cookieTtl);
    await this.#store.del(`cookie:${session.cookie_hash}`);
    if ((await this.#store.get(`ended:${session.sid}`)) !== undefined) {
      await this.#store.del(`sess:${session.sid}`, `rt:${session.sid}`, `cookie:${next.cookie_hash}`);
      throw new LatchkeyError('unauthenticated', 'unauthorized', { reason: 'unauthenticated' });
    }
    return { session: next, cookieToken };
  }

  /** Records `jti` as the live refresh token of the session's lineage. */
  async setRefresh(sid: string, jti: string): Promise<void> {
    await this.#store.set(`rt:${sid}`, jti, this.sessionTtl);
  }

  /** True when `jti` is the live refresh token of session `sid`. */
  async isRefreshLive(sid: string, jti: string): Promise<boolean> {
    return (await this.#store.get(`rt:${sid}`)) === jti;
  }

  /**
   * Atomically moves the lineage of `sid` from `oldJti` to `newJti`. Exactly
   * one of any number of concurrent rotations with the same token wins
   * (security matrix B3). A replay of a rotated token after the grace period
   * ends the session, which revokes the whole family (B2, ASVS v5 10.4.5).
   */
  async rotateRefresh(sid: string, oldJti: string, newJti: string): Promise<RotationOutcome> {
    if (await this.#store.compareAndSet(`rt:${sid}`, oldJti, newJti, this.sessionTtl)) {
      await this.#store.set(`rt_used:${oldJti}`, JSON.stringify({ sid, at: this.#now() }), this.sessionTtl);
      return 'rotated';
    }
    const used = await this.#store.get(`rt_used:${oldJti}`);
    if (used === undefined) return 'unknown';
    const { sid: usedSid, at } = JSON.parse(used) as { sid: string; at: number };
    if (usedSid !== sid) return 'unknown';
    if (this.#now() - at <= this.#grace * 1000) return 'reused_in_grace';
    await this.end(sid);
    return 'reused_family_revoked';
  }

  /**
   * Records the device of a request that opened or refreshed session `sid`:
   * its user agent (clipped to 512 characters, control characters removed)
   * and client IP, keeping the first time seen. Nothing is written for a
   * session that is not live (an ending raced this call: the ending's marker
   * is checked after the write, and what was written is removed again).
   */
  async recordDevice(sid: string, device: { user_agent: string; ip: string }): Promise<void> {
    const session = await this.get(sid);
    if (session === undefined) return;
    const now = this.#now();
    const raw = await this.#store.get(`seen:${sid}`);
    const before = raw === undefined ? undefined : (JSON.parse(raw) as SessionDevice);
    const next: SessionDevice = {
      user_agent: cleanAgent(device.user_agent),
      ip: device.ip.slice(0, 64),
      first_seen_ms: before?.first_seen_ms ?? session.created_ms,
      last_seen_ms: now,
    };
    await this.#store.set(`seen:${sid}`, JSON.stringify(next), this.sessionTtl);
    if ((await this.#store.get(`ended:${sid}`)) !== undefined) await this.#store.del(`seen:${sid}`);
  }

  /** The device recorded for session `sid`, if any. */
  async deviceOf(sid: string): Promise<SessionDevice | undefined> {
    const raw = await this.#store.get(`seen:${sid}`);
    return raw === undefined ? undefined : (JSON.parse(raw) as SessionDevice);
  }

  /**
   * The live sessions of a user with their devices, the most recently seen
   * first, at most {@link SESSION_LIST_LIMIT}. Ids of sessions that are gone
   * (expired) are dropped from the user's set on the way.
   */
  async listForUser(userId: string): Promise<SessionListing[]> {
    const sids = await this.#store.members(`user_sessions:${userId}`);
    const out: SessionListing[] = [];
    for (const sid of sids) {
      const session = await this.get(sid);
      if (session === undefined || session.user_id !== userId) {
        if (session === undefined) await this.#store.removeFromSet(`user_sessions:${userId}`, sid);
        continue;
      }
      out.push({ session, device: await this.deviceOf(sid) });
    }
    const seen = (l: SessionListing): number => l.device?.last_seen_ms ?? l.session.created_ms;
    out.sort((a, b) => seen(b) - seen(a) || (a.session.sid < b.session.sid ? -1 : 1));
    return out.slice(0, SESSION_LIST_LIMIT);
  }

  /**
   * Told of each session an {@link end} removed (read before its keys go,
   * also when all of its user's sessions were ended at once). Must not throw;
   * what it starts is its own to finish (it is not awaited).
   */
  onEnded: ((session: SessionRecord) => void) | undefined;

  /** Ends one session: its record, cookie and refresh lineage. Idempotent. */
  async end(sid: string): Promise<void> {
    await this.#store.set(`ended:${sid}`, '1', this.sessionTtl);
    const session = await this.get(sid);
    // The record as stored, even when endAllForUser has already made it dead for `get`.
    const raw = session ?? (this.onEnded === undefined ? undefined : await this.#store.get(this.#sessKey.of(sid)));
    const record = typeof raw === 'string' ? this.#parse(raw) : raw;
    const keys = [`sess:${sid}`, `rt:${sid}`, `seen:${sid}`];
    if (record !== undefined) keys.push(`cookie:${record.cookie_hash}`);
    const removed = await this.#store.del(...keys);
    if (record !== undefined) await this.#store.removeFromSet(`user_sessions:${record.user_id}`, sid);
    // Only the ending that removed the record tells, so a session is announced once.
    if (record !== undefined && removed > 0 && this.onEnded !== undefined) this.onEnded(record);
  }

  /** {@link end} of a session record in hand (one past its organization's lifetime, which `get` no longer answers). */
  async #endRecord(session: SessionRecord): Promise<void> {
    await this.#store.set(`ended:${session.sid}`, '1', this.sessionTtl);
    await this.#store.del(`sess:${session.sid}`, `rt:${session.sid}`, `seen:${session.sid}`, `cookie:${session.cookie_hash}`);
    await this.#store.removeFromSet(`user_sessions:${session.user_id}`, session.sid);
  }

  /**
   * Ends every session of a user except `exceptSid`; returns how many were
   * ended. Without `exceptSid`, sessions created up to this instant by any
   * process are dead too, even one a concurrent login is just writing.
   */
  async endAllForUser(userId: string, exceptSid?: string): Promise<number> {
    if (exceptSid === undefined) await this.#store.set(`user_nbf:${userId}`, String(this.#now()), this.sessionTtl);
    const sids = await this.#store.members(`user_sessions:${userId}`);
    let n = 0;
    for (const sid of sids) {
      if (sid === exceptSid) continue;
      await this.end(sid);
      n++;
    }
    return n;
  }
}

/** A user agent as stored: control characters removed, at most 512 characters. */
function cleanAgent(ua: string): string {
  return ua.replace(/[\u0000-\u001f\u007f]/g, '').slice(0, 512);
}

/**
 * `session`, or undefined when it was created before its user's sessions
 * were all ended (`notBeforeRaw`, stored by `endAll`): such a session is dead
 * even if it slipped past the sweep in a race with a concurrent login.
 */
function alive(session: SessionRecord, notBeforeRaw: string | undefined): SessionRecord | undefined {
  return notBeforeRaw !== undefined && session.created_ms <= Number(notBeforeRaw) ? undefined : session;
}
