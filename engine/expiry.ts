/**
 * Expiring tuples: the `expires_at` of a tuple (RFC 3339), its parsing and
 * its canonical form. A tuple whose `expires_at` is at or before the clock's
 * current time grants nothing: every store drops it from every read from
 * that instant, and collection later deletes it (a `delete` change).
 */
import { LatchkeyError } from './errors.ts';
import { show } from './tuple.ts';

/** RFC 3339 `date-time`: full date, `T` (or `t`/space), full time with optional fraction, `Z` or a numeric offset. */
const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(\.\d{1,9})?([Zz]|[+-]\d{2}:\d{2})$/u;

/** Latest accepted expiry: 9999-12-31T23:59:59.999Z. */
const MAX_MS = 253_402_300_799_999;

/** An `invalid_argument` error about `expires_at` (reason `invalid_expires_at`, OpenFGA 2000). */
export function invalidExpiry(message: string, details: Record<string, unknown> = {}): LatchkeyError {
  return new LatchkeyError('invalid_argument', message, { reason: 'invalid_expires_at', details: { openfga_code: 2000, ...details } });
}

/**
 * Parses an RFC 3339 timestamp to milliseconds since the epoch (sub-millisecond
 * digits are truncated), or `undefined` when `s` is not one (bad shape, or a
 * date or time out of range, such as February 30 or hour 24).
 */
export function parseRfc3339(s: unknown): number | undefined {
  if (typeof s !== 'string' || s.length > 40) return undefined;
  const m = RFC3339.exec(s);
  if (m === null) return undefined;
  const [year, month, day, hour, minute, second] = [m[1], m[2], m[3], m[4], m[5], m[6]].map(Number) as [number, number, number, number, number, number];
  if (month < 1 || month > 12 || hour > 23 || minute > 59 || second > 59) return undefined;
  const daysIn = new Date(Date.UTC(year, month, 0)).getUTCDate();
  if (day < 1 || day > daysIn) return undefined;
  const frac = m[7] === undefined ? 0 : Math.floor(Number(`0${m[7]}`) * 1000);
  let offset = 0;
  const z = m[8]!;
  if (z !== 'Z' && z !== 'z') {
    const oh = Number(z.slice(1, 3));
    const om = Number(z.slice(4, 6));
    if (oh > 23 || om > 59) return undefined;
    offset = (z[0] === '-' ? -1 : 1) * (oh * 60 + om) * 60_000;
  }
  const ms = Date.UTC(year, month - 1, day, hour, minute, second, frac) - offset;
  return Number.isFinite(ms) && ms >= 0 && ms <= MAX_MS ? ms : undefined;
}

/** The canonical form of an expiry: UTC, milliseconds, `Z` (`2030-01-02T03:04:05.000Z`). */
export function formatExpiry(ms: number): string {
  return new Date(ms).toISOString();
}

/** The expiry of a tuple in milliseconds, or `undefined` when it does not expire. Assumes a validated tuple. */
export function expiryOf(t: { expires_at?: string | undefined }): number | undefined {
  return t.expires_at === undefined ? undefined : parseRfc3339(t.expires_at);
}

/**
 * Validates the `expires_at` of a tuple about to be written: an RFC 3339
 * timestamp strictly after `now`. Returns its canonical form, or `undefined`
 * when the tuple does not expire; throws `invalid_argument` (reason
 * `invalid_expires_at`) otherwise.
 */
export function validateExpiry(value: unknown, now: number, what: string): string | undefined {
  if (value === undefined) return undefined;
  const ms = parseRfc3339(value);
  if (ms === undefined) {
    throw invalidExpiry(`invalid expires_at '${show(value)}' on ${what}: expected an RFC 3339 timestamp such as 2030-01-02T03:04:05Z`, { expires_at: show(value) });
  }
  if (ms <= now) {
    throw invalidExpiry(`expires_at '${show(value)}' on ${what} is not in the future (now is ${formatExpiry(now)})`, { expires_at: show(value), now: formatExpiry(now) });
  }
  return formatExpiry(ms);
}
