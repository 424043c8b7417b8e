/**
 * Durations and timestamps as cel-go has them (`common/types/duration.go`,
 * `common/types/timestamp.go`), on `@marcbachmann/cel-js`'s values.
 *
 * - A duration is the library's `Duration` (seconds and nanoseconds of the
 *   same sign); cel-go's is a Go `time.Duration`, int64 nanoseconds, so
 *   arithmetic here is done in nanoseconds and fails outside that range.
 * - A timestamp is a JavaScript `Date` (what the library's functions take
 *   and give) that also carries the nanoseconds below its millisecond, so
 *   that timestamps keep Go's nanosecond precision through parsing,
 *   arithmetic, comparison and `string()`. Timestamps run from
 *   0001-01-01T00:00:00Z to 9999-12-31T23:59:59.999999999Z (cel-go's range,
 *   checked on whole seconds as cel-go checks `Unix()`).
 * - Accessors take cel-go's time zone argument: an IANA name, or an offset
 *   `[+-]HH:MM` read with Go's `strconv.Atoi` on each side of the colon.
 *
 * Pinned by test/engine/conditions_cel_spec.test.ts (timestamps.textproto)
 * and test/engine/conditions_cel.property.test.ts.
 */
import { celLibrary } from './cel_library.ts';

/** A CEL duration as the library represents it. */
export interface CelDuration {
  readonly seconds: bigint;
  readonly nanos: number;
}

/** The library's duration class, reached through a value it produces. */
type DurationClass = new (seconds: bigint, nanos: number) => CelDuration;
let durationCtor: DurationClass | undefined;
/** The CEL library's duration class (loading the library on the first call). */
export function durationClass(): DurationClass {
  return (durationCtor ??= (celLibrary().evaluate('duration("1s")') as object).constructor as DurationClass);
}

const NS_PER_SECOND = 1_000_000_000n;
const NS_PER_MS = 1_000_000n;
/** Go `time.Duration` bounds. */
const MIN_DURATION_NANOS = -(2n ** 63n);
const MAX_DURATION_NANOS = 2n ** 63n - 1n;
/** cel-go's `minUnixTime` and `maxUnixTime` (0001-01-01T00:00:00Z and 9999-12-31T23:59:59Z). */
const MIN_UNIX_SECONDS = -62_135_596_800n;
const MAX_UNIX_SECONDS = 253_402_300_799n;

/** The duration's total nanoseconds. */
export function durationNanos(d: CelDuration): bigint {
  return d.seconds * NS_PER_SECOND + BigInt(d.nanos);
}

/** A duration of `ns` nanoseconds; `RangeError` outside Go's int64 range. */
export function durationOf(ns: bigint): CelDuration {
  if (ns < MIN_DURATION_NANOS || ns > MAX_DURATION_NANOS) throw new RangeError('duration out of range');
  // Truncating division keeps seconds and nanoseconds of one sign, as the library's parser makes them.
  return new (durationClass())(ns / NS_PER_SECOND, Number(ns % NS_PER_SECOND));
}

/** True when `d` is within Go's int64 nanoseconds. */
export function durationInRange(d: CelDuration): boolean {
  const ns = durationNanos(d);
  return ns >= MIN_DURATION_NANOS && ns <= MAX_DURATION_NANOS;
}

const SUB_MILLISECOND = Symbol('nanoseconds below the millisecond');
type Timestamp = Date & { [SUB_MILLISECOND]?: number };

function floorDiv(a: bigint, b: bigint): bigint {
  const q = a / b;
  return a % b !== 0n && a < 0n !== b < 0n ? q - 1n : q;
}

/** Nanoseconds since the Unix epoch. */
export function timestampNanos(t: Date): bigint {
  return BigInt(t.getTime()) * NS_PER_MS + BigInt((t as Timestamp)[SUB_MILLISECOND] ?? 0);
}

/** The timestamp `ns` nanoseconds after the Unix epoch (not range-checked: see {@link timestampInRange}). */
export function timestampOf(ns: bigint): Date {
  const ms = floorDiv(ns, NS_PER_MS);
  const t: Timestamp = new Date(Number(ms));
  const sub = Number(ns - ms * NS_PER_MS);
  if (sub !== 0) t[SUB_MILLISECOND] = sub;
  return t;
}

/** True when `t` is a valid date within cel-go's timestamp range. */
export function timestampInRange(t: Date): boolean {
  if (Number.isNaN(t.getTime())) return false;
  const seconds = floorDiv(timestampNanos(t), NS_PER_SECOND);
  return seconds >= MIN_UNIX_SECONDS && seconds <= MAX_UNIX_SECONDS;
}

function checkedTimestamp(ns: bigint): Date {
  const t = timestampOf(ns);
  if (!timestampInRange(t)) throw new RangeError('timestamp out of range');
  return t;
}

/**
 * `l op r` for cel-go's duration and timestamp arithmetic (`+`, `-`), in
 * nanoseconds; `RangeError` when the result leaves its type's range;
 * undefined when the operands are not durations and timestamps that the
 * operator combines.
 */
export function timeArithmetic(op: string, l: unknown, r: unknown): CelDuration | Date | undefined {
  const ld = l instanceof durationClass();
  const rd = r instanceof durationClass();
  const lt = l instanceof Date;
  const rt = r instanceof Date;
  if (op === '+') {
    if (ld && rd) return durationOf(durationNanos(l) + durationNanos(r));
    if (lt && rd) return checkedTimestamp(timestampNanos(l) + durationNanos(r));
    if (ld && rt) return checkedTimestamp(timestampNanos(r) + durationNanos(l));
  } else if (op === '-') {
    if (ld && rd) return durationOf(durationNanos(l) - durationNanos(r));
    if (lt && rd) return checkedTimestamp(timestampNanos(l) - durationNanos(r));
    if (lt && rt) return durationOf(timestampNanos(l) - timestampNanos(r));
  }
  return undefined;
}

/** Order of two durations or two timestamps (to the nanosecond); undefined for other operands. */
export function compareTime(l: unknown, r: unknown): -1 | 0 | 1 | undefined {
  let a: bigint;
  let b: bigint;
  if (l instanceof durationClass() && r instanceof durationClass()) {
    a = durationNanos(l);
    b = durationNanos(r);
  } else if (l instanceof Date && r instanceof Date) {
    a = timestampNanos(l);
    b = timestampNanos(r);
  } else {
    return undefined;
  }
  return a < b ? -1 : a > b ? 1 : 0;
}

/** RFC 3339 in UTC with the fraction's trailing zeros dropped (Go's `time.RFC3339Nano`). */
export function formatTimestamp(t: Date): string {
  const ns = timestampNanos(t);
  const fraction = String(ns - floorDiv(ns, NS_PER_SECOND) * NS_PER_SECOND).padStart(9, '0').replace(/0+$/u, '');
  return `${t.toISOString().slice(0, 19)}${fraction === '' ? '' : `.${fraction}`}Z`;
}

/** Seconds with a decimal fraction and an `s` (cel-go's duration to string). */
export function formatDuration(d: CelDuration): string {
  const negative = d.seconds < 0n || d.nanos < 0;
  const secs = d.seconds < 0n ? -d.seconds : d.seconds;
  const frac = String(Math.abs(d.nanos)).padStart(9, '0').replace(/0+$/u, '');
  return `${negative ? '-' : ''}${secs}${frac === '' ? '' : `.${frac}`}s`;
}

const DURATION_UNITS: Record<string, bigint> = { ns: 1n, us: 1_000n, 'µs': 1_000n, 'μs': 1_000n, ms: 1_000_000n, s: 1_000_000_000n, m: 60_000_000_000n, h: 3_600_000_000_000n };

/** Go's `time.ParseDuration`: `[-+]?([0-9]*(\.[0-9]*)?[a-z]+)+` or `0`, in int64 nanoseconds. */
export function parseGoDuration(text: string): bigint | undefined {
  let s = text;
  let negative = false;
  if (s.startsWith('-') || s.startsWith('+')) {
    negative = s.startsWith('-');
    s = s.slice(1);
  }
  if (s === '0') return 0n;
  if (s === '') return undefined;
  let total = 0n;
  while (s !== '') {
    const m = /^(\d*)(?:\.(\d*))?([^\d.]+)/u.exec(s);
    if (m === null || (m[1] === '' && (m[2] ?? '') === '')) return undefined;
    const unit = DURATION_UNITS[m[3]!];
    if (unit === undefined) return undefined;
    let part = BigInt(m[1] === '' ? '0' : m[1]!) * unit;
    const frac = m[2] ?? '';
    if (frac !== '') {
      // Go scales the fraction in float64 and truncates.
      const f = Number(frac.slice(0, 18));
      const scale = 10 ** Math.min(frac.length, 18);
      part += BigInt(Math.trunc(f * (Number(unit) / scale)));
    }
    total += part;
    if (total > 2n ** 63n) return undefined;
    s = s.slice(m[0].length);
  }
  if (!negative && total > 2n ** 63n - 1n) return undefined;
  return negative ? -total : total;
}

const DAYS_IN_MONTH = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
const isLeap = (year: number): boolean => (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;

/** Milliseconds since the epoch of a UTC civil time (`Date.UTC` reads years 0 to 99 as 1900 to 1999). */
function utcMs(year: number, month: number, day: number, hour: number, minute: number, second: number): number {
  const t = Date.UTC(year, month - 1, day, hour, minute, second);
  return year < 100 ? new Date(t).setUTCFullYear(year) : t;
}

/**
 * Go's `time.Parse(time.RFC3339, s)`: `YYYY-MM-DDTHH:MM:SS[.frac](Z|±HH:MM)`,
 * the fraction to the nanosecond (further digits are dropped, as Go drops
 * them). Not range-checked: cel-go's `timestamp()` checks the range, the
 * parameter conversion does not.
 */
export function parseRfc3339(s: string): Date | undefined {
  const m = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?(Z|([+-])(\d{2}):(\d{2}))$/u.exec(s);
  if (m === null) return undefined;
  const [year, month, day, hour, minute, second] = m.slice(1, 7).map(Number) as [number, number, number, number, number, number];
  if (month < 1 || month > 12 || day < 1 || day > (month === 2 && isLeap(year) ? 29 : DAYS_IN_MONTH[month - 1]!)) return undefined;
  if (hour > 23 || minute > 59 || second > 59) return undefined;
  let offset = 0;
  if (m[8] !== 'Z') {
    const oh = Number(m[10]);
    const om = Number(m[11]);
    if (oh > 23 || om > 59) return undefined;
    offset = (m[9] === '-' ? -1 : 1) * (oh * 60 + om);
  }
  const nanos = BigInt((m[7] ?? '').slice(0, 9).padEnd(9, '0'));
  const ms = utcMs(year, month, day, hour, minute, second) - offset * 60_000;
  return timestampOf(BigInt(ms) * NS_PER_MS + nanos);
}

/** Go's `strconv.Atoi`: an optional sign and decimal digits. */
function atoi(s: string): number {
  if (!/^[+-]?\d+$/u.test(s)) throw new RangeError(`invalid time zone offset '${s}'`);
  return Number(s);
}

const ZONE_FORMATS = new Map<string, Intl.DateTimeFormat>();

/** The offset east of UTC, in ms, of IANA zone `name` at instant `ms` (Go `time.LoadLocation`). */
function namedZoneOffset(name: string, ms: number): number {
  if (name === '' || name === 'UTC') return 0;
  let format = ZONE_FORMATS.get(name);
  if (format === undefined) {
    // Intl also reads offsets and is case-insensitive; Go's zone database holds names only.
    if (!/^[A-Za-z][A-Za-z0-9_+\-/]*$/u.test(name)) throw new RangeError(`unknown time zone '${name}'`);
    try {
      format = new Intl.DateTimeFormat('en-US', { timeZone: name, hourCycle: 'h23', era: 'short', year: 'numeric', month: 'numeric', day: 'numeric', hour: 'numeric', minute: 'numeric', second: 'numeric' });
    } catch {
      throw new RangeError(`unknown time zone '${name}'`);
    }
    if (ZONE_FORMATS.size >= 64) ZONE_FORMATS.clear();
    ZONE_FORMATS.set(name, format);
  }
  const parts: Record<string, string> = {};
  for (const p of format.formatToParts(new Date(ms))) parts[p.type] = p.value;
  const year = Number(parts['year']);
  const local = utcMs(parts['era'] === 'BC' ? 1 - year : year, Number(parts['month']), Number(parts['day']), Number(parts['hour']), Number(parts['minute']), Number(parts['second']));
  return local - (ms - (((ms % 1000) + 1000) % 1000));
}

/** cel-go's time zone argument (`timeZone` in `common/types/timestamp.go`): offset east of UTC in ms at instant `ms`. */
export function zoneOffsetMs(zone: string, ms: number): number {
  const colon = zone.indexOf(':');
  if (colon < 0) return namedZoneOffset(zone, ms);
  const hours = atoi(zone.slice(0, colon));
  const minutes = atoi(zone.slice(colon + 1));
  return (zone.startsWith('-') ? hours * 60 - minutes : hours * 60 + minutes) * 60_000;
}

const ACCESSORS: Record<string, (d: Date) => number> = {
  getFullYear: (d) => d.getUTCFullYear(),
  getMonth: (d) => d.getUTCMonth(),
  getDate: (d) => d.getUTCDate(),
  getDayOfMonth: (d) => d.getUTCDate() - 1,
  getDayOfWeek: (d) => d.getUTCDay(),
  getDayOfYear: (d) => {
    let days = d.getUTCDate() - 1;
    for (let m = 0; m < d.getUTCMonth(); m++) days += m === 1 && isLeap(d.getUTCFullYear()) ? 29 : DAYS_IN_MONTH[m]!;
    return days;
  },
  getHours: (d) => d.getUTCHours(),
  getMinutes: (d) => d.getUTCMinutes(),
  getSeconds: (d) => d.getUTCSeconds(),
  getMilliseconds: (d) => d.getUTCMilliseconds(),
};

/** True when `name` is one of cel-go's timestamp accessors. */
export function isTimestampAccessor(name: string): boolean {
  return Object.hasOwn(ACCESSORS, name);
}

/** cel-go's timestamp accessor `name` of `t` in `zone` (UTC when omitted); `RangeError` for an unknown zone. */
export function timestampAccessor(name: string, t: Date, zone?: string): bigint {
  const ms = t.getTime();
  const local = new Date(zone === undefined ? ms : ms + zoneOffsetMs(zone, ms));
  return BigInt(ACCESSORS[name]!(local));
}
