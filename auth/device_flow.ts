/**
 * The device authorization grant (RFC 8628) on the memory store: a device
 * asks `/oauth/device_authorization` for a device code and a short user
 * code; the user types the user code on `/app/device` in a browser where
 * they are signed in and approves or denies; the device polls
 * `/oauth/token` with `grant_type=urn:ietf:params:oauth:grant-type:device_code`.
 *
 * Keys (codes are never stored, only their SHA-256):
 * - `device:<hash of device code>`: the request (JSON), until it expires;
 * - `device_user:<hash of user code>`: the device code's hash.
 * Approval and redemption are compare-and-set on the request, so a code is
 * approved once and redeemed once, across processes with Redis.
 */
import { createHash, randomBytes, randomInt } from 'node:crypto';
import type { MemoryStore } from './memory_store.ts';

export const GRANT_DEVICE_CODE = 'urn:ietf:params:oauth:grant-type:device_code';
/** RFC 8628 §6.1: a user code from an alphabet without vowels or look-alikes, 8 characters (about 34 bits). */
const USER_CODE_ALPHABET = 'BCDFGHJKLMNPQRSTVWXZ';
const TTL_SECONDS = 600;
const INTERVAL_SECONDS = 5;

export interface DeviceRequest {
  client_id: string;
  scope: string[];
  status: 'pending' | 'approved' | 'denied' | 'redeemed';
  /** Set on approval: the browser session's user and how it authenticated. */
  user_id?: string;
  roles?: string[];
  login_method?: string;
  auth_time?: number;
  amr?: string[];
  expires_ms: number;
  /** When the device last polled (milliseconds), for `slow_down`. */
  polled_ms: number;
}

const hash = (s: string): string => createHash('sha256').update(s, 'utf8').digest('base64url');

/** The user code as typed: upper case, without spaces and dashes. */
export function normalizeUserCode(code: string): string {
  return code.toUpperCase().replace(/[\s-]/g, '');
}

export class DeviceCodes {
  readonly #store: MemoryStore;

  constructor(store: MemoryStore) {
    this.#store = store;
  }

  get intervalSeconds(): number {
    return INTERVAL_SECONDS;
  }

  /** A new request: the device code (secret, the device's) and the user code (shown to the user). */
  async issue(clientId: string, scope: string[], nowMs: number): Promise<{ device_code: string; user_code: string; expires_in: number; interval: number }> {
    const deviceCode = randomBytes(32).toString('base64url');
    let user = '';
    for (let i = 0; i < 8; i++) user += USER_CODE_ALPHABET[randomInt(USER_CODE_ALPHABET.length)];
    const request: DeviceRequest = { client_id: clientId, scope, status: 'pending', expires_ms: nowMs + TTL_SECONDS * 1000, polled_ms: 0 };
    await this.#store.set(`device:${hash(deviceCode)}`, JSON.stringify(request), TTL_SECONDS);
    if (!(await this.#store.setIfAbsent(`device_user:${hash(user)}`, hash(deviceCode), TTL_SECONDS))) return this.issue(clientId, scope, nowMs);
    return { device_code: deviceCode, user_code: `${user.slice(0, 4)}-${user.slice(4)}`, expires_in: TTL_SECONDS, interval: INTERVAL_SECONDS };
  }

  /** The pending request of a user code (for the approval page), or undefined. */
  async pending(userCode: string, nowMs: number): Promise<{ key: string; request: DeviceRequest; raw: string } | undefined> {
    const code = normalizeUserCode(userCode);
    if (!/^[A-Z]{8}$/.test(code)) return undefined;
    const deviceHash = await this.#store.get(`device_user:${hash(code)}`);
    if (deviceHash === undefined) return undefined;
    const key = `device:${deviceHash}`;
    const raw = await this.#store.get(key);
    if (raw === undefined) return undefined;
    const request = JSON.parse(raw) as DeviceRequest;
    return request.status === 'pending' && request.expires_ms > nowMs ? { key, request, raw } : undefined;
  }

  /** Records the user's decision on a pending request; false when it was no longer pending. */
  async decide(userCode: string, decision: { approved: true; user_id: string; roles: string[]; login_method: string; auth_time: number; amr?: string[] } | { approved: false }, nowMs: number): Promise<{ client_id: string } | undefined> {
    const found = await this.pending(userCode, nowMs);
    if (found === undefined) return undefined;
    const { approved, ...who } = decision as { approved: boolean } & Record<string, unknown>;
    const next: DeviceRequest = { ...found.request, status: approved ? 'approved' : 'denied', ...(approved ? (who as Partial<DeviceRequest>) : {}) };
    const ttl = Math.max(1, Math.ceil((found.request.expires_ms - nowMs) / 1000));
    if (!(await this.#store.compareAndSet(found.key, found.raw, JSON.stringify(next), ttl))) return undefined;
    await this.#store.del(`device_user:${hash(normalizeUserCode(userCode))}`);
    return { client_id: found.request.client_id };
  }

  /**
   * A poll of the device: `pending` (or `slow_down` when it polls faster
   * than the interval), `denied`, `expired` (unknown, expired or already
   * redeemed), or `approved` once, with the request.
   */
  async poll(deviceCode: string, clientId: string, nowMs: number): Promise<{ kind: 'pending' | 'slow_down' | 'denied' | 'expired' | 'wrong_client' } | { kind: 'approved'; request: DeviceRequest }> {
    if (deviceCode.length === 0 || deviceCode.length > 128) return { kind: 'expired' };
    const key = `device:${hash(deviceCode)}`;
    const raw = await this.#store.get(key);
    if (raw === undefined) return { kind: 'expired' };
    const request = JSON.parse(raw) as DeviceRequest;
    if (request.client_id !== clientId) return { kind: 'wrong_client' };
    if (request.expires_ms <= nowMs || request.status === 'redeemed') return { kind: 'expired' };
    if (request.status === 'denied') {
      await this.#store.del(key);
      return { kind: 'denied' };
    }
    const ttl = Math.max(1, Math.ceil((request.expires_ms - nowMs) / 1000));
    if (request.status === 'approved') {
      const won = await this.#store.compareAndSet(key, raw, JSON.stringify({ ...request, status: 'redeemed' }), ttl);
      return won ? { kind: 'approved', request } : { kind: 'expired' };
    }
    const tooSoon = request.polled_ms !== 0 && nowMs - request.polled_ms < INTERVAL_SECONDS * 1000;
    await this.#store.compareAndSet(key, raw, JSON.stringify({ ...request, polled_ms: nowMs }), ttl);
    return { kind: tooSoon ? 'slow_down' : 'pending' };
  }
}
