/**
 * The values of OpenFGA's CEL environment as cel-go has them, on
 * `@marcbachmann/cel-js`'s representation: the `ipaddress` type (Go
 * `net/netip`), cel-go's equality and ordering across numeric kinds, bytes,
 * lists and maps (`common/types/compare.go`, `types.Equal`), and the range
 * checks of results. Durations and timestamps are in
 * `cel_time.ts`.
 *
 * Pinned by test/engine/conditions_cel.test.ts,
 * test/engine/conditions_cel_spec.test.ts and
 * test/engine/conditions.property.test.ts.
 */
import { isIP } from 'node:net';
import { celLibrary } from './cel_library.ts';
import { durationClass, durationInRange, durationNanos, timestampInRange, timestampNanos } from './cel_time.ts';

/** OpenFGA's `ipaddress` CEL type (Go `netip.Addr` semantics). */
export class IPAddress {
  readonly address: string;
  /** 4 or 16 bytes. */
  readonly bytes: Uint8Array;
  /** The IPv6 zone (`fe80::1%eth0`), or the empty string. */
  readonly zone: string;
  constructor(address: string) {
    const parsed = parseAddr(address);
    if (parsed === undefined) throw new TypeError(`invalid ip address '${address}'`);
    this.address = address;
    this.bytes = parsed.bytes;
    this.zone = parsed.zone;
  }
  /** True when this address lies in `cidr` (netip `ParsePrefix` then `Prefix.Contains`). */
  inCidr(cidr: string): boolean {
    const slash = cidr.lastIndexOf('/');
    const bits = cidr.slice(slash + 1);
    const net = slash < 0 ? undefined : parseAddr(cidr.slice(0, slash));
    const max = net === undefined ? 0 : net.bytes.length * 8;
    if (net === undefined || net.zone !== '' || !/^(0|[1-9]\d{0,2})$/u.test(bits) || Number(bits) > max) {
      throw new TypeError(`'${cidr}' is a malformed CIDR string`);
    }
    if (this.zone !== '' || this.bytes.length !== net.bytes.length) return false;
    let left = Number(bits);
    for (let i = 0; left > 0; i++, left -= 8) {
      const mask = left >= 8 ? 0xff : (0xff << (8 - left)) & 0xff;
      if ((this.bytes[i]! & mask) !== (net.bytes[i]! & mask)) return false;
    }
    return true;
  }
  /** netip `Addr.Compare(...) == 0`: same length, bytes and zone. */
  equals(other: IPAddress): boolean {
    return this.zone === other.zone && this.bytes.length === other.bytes.length && this.bytes.every((b, i) => b === other.bytes[i]);
  }
  toString(): string {
    return this.address;
  }
}

function parseIPv4(s: string): number[] | undefined {
  const parts = s.split('.');
  if (parts.length !== 4 || parts.some((p) => !/^(0|[1-9]\d{0,2})$/u.test(p) || Number(p) > 255)) return undefined;
  return parts.map(Number);
}

function parseAddr(s: string): { bytes: Uint8Array; zone: string } | undefined {
  if (isIP(s) === 4) {
    const v4 = parseIPv4(s);
    return v4 === undefined ? undefined : { bytes: Uint8Array.from(v4), zone: '' };
  }
  const pct = s.indexOf('%');
  const zone = pct < 0 ? '' : s.slice(pct + 1);
  const body = pct < 0 ? s : s.slice(0, pct);
  if (pct >= 0 && zone === '') return undefined;
  if (isIP(body) !== 6) return undefined;
  let groups: number[] = [];
  const tail = body.lastIndexOf(':');
  let head = body;
  if (body.slice(tail + 1).includes('.')) {
    const v4 = parseIPv4(body.slice(tail + 1));
    if (v4 === undefined) return undefined;
    head = `${body.slice(0, tail + 1)}${((v4[0]! << 8) | v4[1]!).toString(16)}:${((v4[2]! << 8) | v4[3]!).toString(16)}`;
  }
  const [l, r] = head.split('::') as [string, string | undefined];
  const words = (x: string): number[] => (x === '' ? [] : x.split(':').map((w) => parseInt(w, 16)));
  groups = r === undefined ? words(l) : [...words(l), ...new Array<number>(8 - words(l).length - words(r).length).fill(0), ...words(r)];
  const bytes = new Uint8Array(16);
  groups.forEach((g, i) => {
    bytes[2 * i] = g >> 8;
    bytes[2 * i + 1] = g & 0xff;
  });
  return { bytes, zone };
}

/** The library's unsigned integer class, reached through a value it produces. */
type UnsignedIntClass = new (value: bigint | number) => { readonly value: bigint };
let uintCtor: UnsignedIntClass | undefined;
/** The CEL library's `uint` class (loading the library on the first call). */
export function uintClass(): UnsignedIntClass {
  return (uintCtor ??= (celLibrary().evaluate('1u') as object).constructor as UnsignedIntClass);
}

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;
const UINT64_MAX = 2n ** 64n - 1n;
/** float64(math.MaxInt64) and float64(math.MaxUint64), as Go rounds them. */
const INT64_MAX_DOUBLE = 2 ** 63;
const UINT64_MAX_DOUBLE = 2 ** 64;

type NumKind = 'int' | 'uint' | 'double';
/** Which CEL numeric kind `v` is, or undefined for a value that is not a number. */
export function numKind(v: unknown): NumKind | undefined {
  if (typeof v === 'bigint') return 'int';
  if (typeof v === 'number') return 'double';
  if (v instanceof uintClass()) return 'uint';
  return undefined;
}

function sign(x: number | bigint): -1 | 0 | 1 {
  return x < 0 ? -1 : x > 0 ? 1 : 0;
}

function compareDouble(a: number, b: number): -1 | 0 | 1 {
  return a < b ? -1 : a > b ? 1 : 0;
}

/**
 * cel-go's cross-type numeric comparison (`common/types/compare.go`): an int
 * or uint against a double converts the integer to float64 (so large values
 * compare as their nearest double), doubles beyond the integer range are
 * below or above every integer, and int against uint compares exactly.
 * Returns undefined when a NaN is involved.
 */
export function compareNumbers(a: bigint | number | { readonly value: bigint }, b: bigint | number | { readonly value: bigint }): -1 | 0 | 1 | undefined {
  const ka = numKind(a)!;
  const kb = numKind(b)!;
  const int = (x: unknown): bigint => (typeof x === 'bigint' ? x : (x as { value: bigint }).value);
  if (ka === 'double' || kb === 'double') {
    if (ka === 'double' && kb === 'double') return Number.isNaN(a) || Number.isNaN(b) ? undefined : compareDouble(a as number, b as number);
    const flip = ka !== 'double';
    const d = (flip ? b : a) as number;
    const other = flip ? a : b;
    if (Number.isNaN(d)) return undefined;
    let c: -1 | 0 | 1;
    if (numKind(other) === 'int') c = d < -INT64_MAX_DOUBLE ? -1 : d > INT64_MAX_DOUBLE ? 1 : compareDouble(d, Number(int(other)));
    else c = d < 0 ? -1 : d > UINT64_MAX_DOUBLE ? 1 : compareDouble(d, Number(int(other)));
    return flip ? ((-c || 0) as -1 | 0 | 1) : c;
  }
  return sign(int(a) - int(b));
}

/**
 * CEL's heterogeneous equality as cel-go implements it (`types.Equal`): null
 * equals only null, numbers of different kinds compare by value, values of
 * other different types are unequal (not an error), lists and maps compare
 * element by element. Undefined for values this function does not know
 * (left to the library).
 */
export function celEquals(a: unknown, b: unknown): boolean | undefined {
  if (a === null || b === null) return a === b;
  const ka = numKind(a);
  const kb = numKind(b);
  if (ka !== undefined || kb !== undefined) return ka !== undefined && kb !== undefined ? compareNumbers(a as number, b as number) === 0 : false;
  if (typeof a === 'string' || typeof a === 'boolean') return a === b;
  if (typeof b === 'string' || typeof b === 'boolean') return false;
  if (a instanceof Uint8Array || b instanceof Uint8Array) return a instanceof Uint8Array && b instanceof Uint8Array && a.length === b.length && a.every((x, i) => x === b[i]);
  if (a instanceof Date || b instanceof Date) return a instanceof Date && b instanceof Date && timestampNanos(a) === timestampNanos(b);
  if (a instanceof durationClass() || b instanceof durationClass()) return a instanceof durationClass() && b instanceof durationClass() && durationNanos(a) === durationNanos(b);
  if (a instanceof IPAddress || b instanceof IPAddress) return a instanceof IPAddress && b instanceof IPAddress && a.equals(b);
  if (Array.isArray(a) || Array.isArray(b)) {
    if (!Array.isArray(a) || !Array.isArray(b)) return isMapLike(a) || isMapLike(b) ? false : undefined;
    if (a.length !== b.length) return false;
    let unknown = false;
    for (let i = 0; i < a.length; i++) {
      const e = celEquals(a[i], b[i]);
      if (e === false) return false;
      if (e === undefined) unknown = true;
    }
    return unknown ? undefined : true;
  }
  if (isMapLike(a) && isMapLike(b)) {
    const ea = mapEntries(a);
    const eb = mapEntries(b);
    if (ea.length !== eb.length) return false;
    let unknown = false;
    for (const [k, v] of ea) {
      const found = mapLookup(eb, k);
      if (found === NOT_FOUND) return false;
      const e = celEquals(v, found);
      if (e === false) return false;
      if (e === undefined) unknown = true;
    }
    return unknown ? undefined : true;
  }
  return undefined;
}

/** A CEL map: the library's plain-object literal or a `Map`. */
export function isMapLike(v: unknown): v is Map<unknown, unknown> | Record<string, unknown> {
  return v instanceof Map || (typeof v === 'object' && v !== null && Object.getPrototypeOf(v) === Object.prototype);
}

/** A map's entries, whichever representation it has. */
export function mapEntries(m: Map<unknown, unknown> | Record<string, unknown>): [unknown, unknown][] {
  return m instanceof Map ? [...m.entries()] : Object.entries(m);
}

/** {@link mapLookup}'s answer for a key the map does not hold. */
export const NOT_FOUND = Symbol('not found');

/** A map key lookup where numeric keys of any kind match by value (cel-go `baseMap.Find`). */
export function mapLookup(entries: [unknown, unknown][], key: unknown): unknown {
  for (const [k, v] of entries) {
    if (k === key) return v;
    const kk = numKind(k);
    const kq = numKind(key);
    if (kk !== undefined && kq !== undefined && compareNumbers(k as number, key as number) === 0) return v;
    if (kk === undefined && kq === undefined && celEquals(k, key) === true) return v;
  }
  return NOT_FOUND;
}

/** Range checks cel-go applies to results the library lets through; throws `RangeError`. */
export function checkValueRange(value: unknown): void {
  if (typeof value === 'bigint' && (value < INT64_MIN || value > INT64_MAX)) throw new RangeError('int overflow');
  if (value instanceof uintClass() && (value.value < 0n || value.value > UINT64_MAX)) throw new RangeError('uint overflow');
  if (value instanceof durationClass() && !durationInRange(value)) throw new RangeError('duration out of range');
  if (value instanceof Date && !timestampInRange(value)) throw new RangeError('timestamp out of range');
}

/** Lexicographic order of two byte strings (cel-go `Bytes.Compare`, Go `bytes.Compare`). */
export function compareBytes(a: Uint8Array, b: Uint8Array): -1 | 0 | 1 {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return a[i]! < b[i]! ? -1 : 1;
  return a.length < b.length ? -1 : a.length > b.length ? 1 : 0;
}
