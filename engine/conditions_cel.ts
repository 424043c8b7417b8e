/**
 * OpenFGA's CEL environment on `@marcbachmann/cel-js`, with cel-go's runtime
 * cost tracking.
 *
 * OpenFGA compiles conditions with cel-go's standard environment plus its
 * `ipaddress` type (`internal/condition/condition.go`,
 * `internal/condition/types/ipaddress.go`). What this module adds to the
 * library so that answers match cel-go:
 *
 * - `ipaddress`: the type, `ipaddress(string)`, `.in_cidr(string)` and
 *   equality, with Go's `net/netip` rules (an IPv4 address and its
 *   IPv4-mapped IPv6 form are different addresses; an address with a zone is
 *   in no prefix; a prefix length has no leading zero);
 * - `== null` / `!= null` on the types cel-go's checker calls nullable
 *   (`checker/types.go`, `isNullable`): timestamp, duration and opaque types
 *   such as `ipaddress`. On int, uint, double, bool, string, list and map the
 *   comparison does not compile, in cel-go and here alike;
 * - the cost of an evaluation, counted as cel-go's `CostTracker` counts it
 *   (`interpreter/runtimecost.go`), so that OpenFGA's limit
 *   (`maxConditionEvaluationCost`, default 100) stops the same expressions.
 *
 * Pinned by test/engine/conditions.test.ts,
 * test/engine/conditions_cel_spec.test.ts and
 * test/engine/conditions.property.test.ts.
 */
import { isIP } from 'node:net';
import { Environment, evaluate as celEvaluate } from '@marcbachmann/cel-js';

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

/** The library's value classes, reached through values it produces. */
export const UnsignedInt = (celEvaluate('1u') as object).constructor as new (value: bigint | number) => { readonly value: bigint };
export const Duration = (celEvaluate('duration("1s")') as object).constructor as new (seconds: bigint, nanos: number) => { readonly seconds: bigint; readonly nanos: number };

/** RFC 3339 in UTC with the fraction's trailing zeros dropped (Go's `time.RFC3339Nano`). */
function formatTimestamp(t: Date): string {
  return t.toISOString().replace(/\.?0*Z$/u, (m) => (m.startsWith('.') ? `${m.replace(/0+Z$/u, '').replace(/\.$/u, '')}Z` : 'Z'));
}

/** Seconds with a decimal fraction and an `s` (cel-go's duration to string). */
function formatDuration(d: { seconds: bigint; nanos: number }): string {
  const negative = d.seconds < 0n || d.nanos < 0;
  const secs = d.seconds < 0n ? -d.seconds : d.seconds;
  const frac = String(Math.abs(d.nanos)).padStart(9, '0').replace(/0+$/u, '');
  return `${negative ? '-' : ''}${secs}${frac === '' ? '' : `.${frac}`}s`;
}

const NULLABLE = ['google.protobuf.Duration', 'google.protobuf.Timestamp', 'ipaddress'] as const;

function baseEnvironment(): Environment {
  const env = new Environment({ homogeneousAggregateLiterals: false })
    .registerType('ipaddress', IPAddress)
    .registerFunction('ipaddress(string): ipaddress', (s: string) => new IPAddress(s))
    .registerFunction('ipaddress.in_cidr(string): bool', (ip: IPAddress, cidr: string) => ip.inCidr(cidr))
    .registerOperator('ipaddress == ipaddress', (a: IPAddress, b: IPAddress) => a.equals(b))
    // Standard conversions cel-go has and the library lacks.
    .registerFunction('int(uint): int', (u: { value: bigint }) => u.value)
    .registerFunction('int(google.protobuf.Timestamp): int', (t: Date) => BigInt(Math.floor(t.getTime() / 1000)))
    .registerFunction('string(google.protobuf.Timestamp): string', formatTimestamp)
    .registerFunction('string(google.protobuf.Duration): string', formatDuration)
    .registerFunction('duration(google.protobuf.Duration): google.protobuf.Duration', (d: unknown) => d)
    .registerFunction('timestamp(google.protobuf.Timestamp): google.protobuf.Timestamp', (t: Date) => t);
  // `!=` and the reversed operands follow from `==`. A parameter value of these types is never null
  // (OpenFGA's converters reject null), but a value may be null under dyn.
  for (const t of NULLABLE) {
    env
      .registerOperator(`${t} == null`, (a: unknown) => a === null);
  }
  return env;
}

const BASE_ENV = baseEnvironment();

/** cel-go's cost constants (`common/cost.go`). */
const STRING_TRAVERSAL_FACTOR = 0.1;
const REGEX_LENGTH_FACTOR = 0.25;
const LIST_CREATE_COST = 10;
const MAP_CREATE_COST = 30;

/** Raised when an evaluation goes over its cost limit (cel-go: "operation cancelled: actual cost limit exceeded"). */
export class CostLimitError extends Error {
  readonly limit: number;
  constructor(limit: number) {
    super(`operation cancelled: actual cost limit exceeded (limit ${limit})`);
    this.limit = limit;
  }
}

type EvalFn = (ev: unknown, ast: unknown, ctx: unknown) => unknown;
interface Node {
  op: string;
  args: unknown;
  start: number;
  end: number;
  input: string;
  meta: { alternate?: Node; macro?: { evaluate: EvalFn }; evaluate: EvalFn };
  evaluate: EvalFn;
  checkedType?: unknown;
}

function isNode(x: unknown): x is Node {
  return typeof x === 'object' && x !== null && typeof (x as Node).op === 'string' && 'meta' in (x as object);
}

/** What the cost rules need to know of a node's evaluations: its last value, how often it ran and answered true. */
interface NodeState {
  value: unknown;
  evals: number;
  trues: number;
}
type States = Map<Node, NodeState>;

class Meter {
  cost = 0;
  exceeded = false;
  readonly limit: number;
  constructor(limit: number) {
    this.limit = limit;
  }
  add(n: number): void {
    this.cost += n;
    if (this.cost > this.limit) {
      this.exceeded = true;
      throw new CostLimitError(this.limit);
    }
  }
}

/** cel-go's `actualSize`: a string's code points, a bytes' length, a list's or map's entries, else 1. */
function size(v: unknown): number {
  if (typeof v === 'string') {
    let n = 0;
    for (const _ of v) n++;
    return n;
  }
  if (v instanceof Uint8Array || Array.isArray(v)) return v.length;
  if (v instanceof Map || v instanceof Set) return v.size;
  if (typeof v === 'object' && v !== null && Object.getPrototypeOf(v) === Object.prototype) return Object.keys(v).length;
  return 1;
}

const isText = (v: unknown): boolean => typeof v === 'string' || v instanceof Uint8Array;
const factor = (n: number, f: number): number => Math.ceil(n * f);

/** An identifier, or a select/index chain on one: cel-go plans it as one attribute. */
function isAttribute(n: Node): boolean {
  if (n.op === 'id') return true;
  if (n.op === '.' || n.op === '.?' || n.op === '[]' || n.op === '[?]') return isAttribute((n.args as Node[])[0]!);
  return false;
}

interface MacroShape {
  kind: string;
  receiver: Node;
  predicate: Node;
}

/** The nodes of the expression as written (not the library's macro expansions). */
function children(n: Node): Node[] {
  const a = n.args;
  switch (n.op) {
    case 'value':
    case 'id':
      return [];
    case 'call':
      return ((a as [string, Node[]])[1] ?? []).filter(isNode);
    case 'rcall': {
      const [, recv, args] = a as [string, Node, Node[]];
      return [recv, ...args].filter(isNode);
    }
    case 'map':
      return (a as [Node, Node][]).flat().filter(isNode);
    default:
      if (Array.isArray(a)) return a.filter(isNode);
      return isNode(a) ? [a] : [];
  }
}

function macroShape(n: Node): MacroShape | undefined {
  if (n.op !== 'rcall' || n.meta.alternate?.op !== 'comprehension') return undefined;
  const [name, receiver, args] = n.args as [string, Node, Node[]];
  const predicate = name === 'map' ? args[args.length - 1]! : args[1]!;
  return { kind: name === 'map' && args.length === 3 ? 'map_filter' : name, receiver, predicate: name === 'map' && args.length === 3 ? args[1]! : predicate };
}

/** cel-go's per-call cost (`CostTracker.costCall`). */
function callCost(n: Node, states: States): number {
  const v = (x: Node | undefined): unknown => (x === undefined ? undefined : states.get(x)?.value);
  let name: string;
  let args: Node[];
  if (n.op === 'rcall') {
    const [fn, recv, rest] = n.args as [string, Node, Node[]];
    name = fn;
    args = [recv, ...rest];
  } else {
    const [fn, rest] = n.args as [string, Node[]];
    name = fn;
    args = rest;
  }
  switch (name) {
    case 'startsWith':
    case 'endsWith':
      return isText(v(args[0])) ? factor(size(v(args[1])), STRING_TRAVERSAL_FACTOR) : 1;
    case 'contains':
      return isText(v(args[0])) ? factor(size(v(args[0])), STRING_TRAVERSAL_FACTOR) * factor(size(v(args[1])), STRING_TRAVERSAL_FACTOR) : 1;
    case 'matches':
      return factor(1 + size(v(args[0])), STRING_TRAVERSAL_FACTOR) * factor(size(v(args[1])), REGEX_LENGTH_FACTOR);
    default:
      return 1;
  }
}

function nodeCost(n: Node, states: States): number {
  const val = (x: unknown): unknown => states.get(x as Node)?.value;
  const args = n.args as Node[];
  switch (n.op) {
    case 'value':
    case '&&':
    case '||':
    case '?:':
      return 0;
    case 'id':
      return 1;
    case '.':
    case '.?':
    case '[]':
    case '[?]':
      // An attribute costs 1 and each qualifier 1; a qualifier on a computed
      // value makes a relative attribute (1 + 1).
      return isAttribute(args[0]!) ? 1 : 2;
    case '!_':
      return 1;
    case '-_': {
      // cel-go's parser reads `-1` as one literal.
      const operand = n.args as Node;
      return operand.op === 'value' && !n.input.slice(n.start, n.end).includes('(') ? 0 : 1;
    }
    case '==':
    case '!=':
      return factor(Math.min(size(val(args[0])), size(val(args[1]))), STRING_TRAVERSAL_FACTOR);
    case '<':
    case '<=':
    case '>':
    case '>=': {
      const l = val(args[0]);
      const r = val(args[1]);
      return isText(l) && isText(r) ? factor(Math.min(size(l), size(r)), STRING_TRAVERSAL_FACTOR) : 1;
    }
    case 'in':
      return Array.isArray(val(args[1])) ? size(val(args[1])) : 1;
    case '+': {
      const l = val(args[0]);
      const r = val(args[1]);
      return isText(l) && isText(r) ? factor(size(l) + size(r), STRING_TRAVERSAL_FACTOR) : 1;
    }
    case 'list':
      return LIST_CREATE_COST;
    case 'map':
      return MAP_CREATE_COST;
    case 'call':
      if (n.meta.macro !== undefined) {
        // has(a.b.c): the attribute and each qualifier, the identifier being counted by itself.
        let depth = 0;
        for (let x = (n.args as [string, Node[]])[1][0]; x !== undefined && (x.op === '.' || x.op === '.?'); x = (x.args as Node[])[0]) depth++;
        return depth;
      }
      return callCost(n, states);
    case 'rcall':
      return callCost(n, states);
    default:
      return 1;
  }
}

/**
 * The overhead cel-go's macro expansions add around the predicate
 * (`parser/macro.go`): accumulator reads, the loop condition, list
 * construction for map/filter, and the result read.
 */
function macroCost(shape: MacroShape, steps: number, trues: number, rangeSize: number): number {
  switch (shape.kind) {
    case 'all':
    case 'exists': {
      // The loop condition runs before each step and once more when it stops the loop early.
      const conditions = steps + (steps < rangeSize ? 1 : 0);
      return conditions * (shape.kind === 'all' ? 2 : 3) + steps + 1;
    }
    case 'exists_one':
      return steps + trues + 2;
    case 'map':
      return LIST_CREATE_COST + steps * (LIST_CREATE_COST + 2) + 1;
    case 'map_filter':
      return LIST_CREATE_COST + trues * (LIST_CREATE_COST + 2) + (steps - trues) + 1;
    case 'filter':
      return LIST_CREATE_COST + trues * (LIST_CREATE_COST + 3) + (steps - trues) + 1;
    default:
      return 0;
  }
}

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;
const UINT64_MAX = 2n ** 64n - 1n;
/** float64(math.MaxInt64) and float64(math.MaxUint64), as Go rounds them. */
const INT64_MAX_DOUBLE = 2 ** 63;
const UINT64_MAX_DOUBLE = 2 ** 64;
/** cel-go's durations are Go `time.Duration` (int64 nanoseconds); timestamps run from 0001-01-01 to 9999-12-31. */
const MAX_DURATION_NANOS = 2n ** 63n - 1n;
const MIN_TIMESTAMP_MS = Date.parse('0001-01-01T00:00:00Z');
const MAX_TIMESTAMP_MS = Date.parse('9999-12-31T23:59:59.999Z');

type NumKind = 'int' | 'uint' | 'double';
function numKind(v: unknown): NumKind | undefined {
  if (typeof v === 'bigint') return 'int';
  if (typeof v === 'number') return 'double';
  if (v instanceof UnsignedInt) return 'uint';
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
  if (a instanceof Date || b instanceof Date) return a instanceof Date && b instanceof Date && a.getTime() === b.getTime();
  if (a instanceof Duration || b instanceof Duration) return a instanceof Duration && b instanceof Duration && a.seconds === b.seconds && a.nanos === b.nanos;
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

function isMapLike(v: unknown): v is Map<unknown, unknown> | Record<string, unknown> {
  return v instanceof Map || (typeof v === 'object' && v !== null && Object.getPrototypeOf(v) === Object.prototype);
}

function mapEntries(m: Map<unknown, unknown> | Record<string, unknown>): [unknown, unknown][] {
  return m instanceof Map ? [...m.entries()] : Object.entries(m);
}

const NOT_FOUND = Symbol('not found');

/** A map key lookup where numeric keys of any kind match by value (cel-go `baseMap.Find`). */
function mapLookup(entries: [unknown, unknown][], key: unknown): unknown {
  for (const [k, v] of entries) {
    if (k === key) return v;
    const kk = numKind(k);
    const kq = numKind(key);
    if (kk !== undefined && kq !== undefined && compareNumbers(k as number, key as number) === 0) return v;
    if (kk === undefined && kq === undefined && celEquals(k, key) === true) return v;
  }
  return NOT_FOUND;
}

const ORDER: Record<string, (c: -1 | 0 | 1) => boolean> = { '<': (c) => c < 0, '<=': (c) => c <= 0, '>': (c) => c > 0, '>=': (c) => c >= 0 };

function rangeError(message: string): Error {
  return new RangeError(message);
}

/**
 * Where cel-go and the library answer differently for the same operands,
 * the answer cel-go gives; undefined to let the library answer.
 */
function binaryOverride(op: string, l: unknown, r: unknown): boolean | undefined {
  switch (op) {
    case '==':
      return celEquals(l, r);
    case '!=': {
      const e = celEquals(l, r);
      return e === undefined ? undefined : !e;
    }
    case 'in':
      if (Array.isArray(r)) {
        let unknown = false;
        for (const x of r) {
          const e = celEquals(l, x);
          if (e === true) return true;
          if (e === undefined) unknown = true;
        }
        return unknown ? undefined : false;
      }
      if (isMapLike(r) && (numKind(l) !== undefined || typeof l === 'string' || typeof l === 'boolean')) return mapLookup(mapEntries(r), l) !== NOT_FOUND;
      return undefined;
    default: {
      const kl = numKind(l);
      const kr = numKind(r);
      if (kl === undefined || kr === undefined || kl === kr) return undefined;
      const c = compareNumbers(l as number, r as number);
      return c === undefined ? false : ORDER[op]!(c);
    }
  }
}

/** Range checks cel-go applies to results the library lets through. */
function checkRange(n: Node, value: unknown): void {
  // Literals are the parser's business (`-9223372036854775808` is a negated literal).
  if (n.op === 'value') return;
  if (typeof value === 'bigint' && (value < INT64_MIN || value > INT64_MAX)) throw rangeError('int overflow');
  if (value instanceof UnsignedInt && (value.value < 0n || value.value > UINT64_MAX)) throw rangeError('uint overflow');
  if (value instanceof Duration) {
    const nanos = value.seconds * 1_000_000_000n + BigInt(value.nanos);
    if (nanos > MAX_DURATION_NANOS || nanos < -MAX_DURATION_NANOS - 1n) throw rangeError('duration out of range');
  }
  if (value instanceof Date && (Number.isNaN(value.getTime()) || value.getTime() < MIN_TIMESTAMP_MS || value.getTime() > MAX_TIMESTAMP_MS)) throw rangeError('timestamp out of range');
}

const BINARY = new Set(['==', '!=', '<', '<=', '>', '>=', 'in']);

function instrument(root: Node, holder: { meter: Meter | undefined }): void {
  const states: States = new Map();
  const visit = (n: Node): void => {
    if (states.has(n)) return;
    const st: NodeState = { value: undefined, evals: 0, trues: 0 };
    states.set(n, st);
    for (const c of children(n)) visit(c);
    const binary = BINARY.has(n.op);
    // Resolved per call: the library sets a node's evaluation when it type-checks it.
    const inner: EvalFn = (ev, a, ctx) => {
      const meta = n.meta;
      if (meta.alternate !== undefined) return meta.alternate.evaluate(ev, meta.alternate, ctx);
      if (meta.macro !== undefined) return meta.macro.evaluate(ev, meta.macro, ctx);
      if (n.op === 'rcall' && (n.args as [string])[0] === 'getMilliseconds') {
        // cel-go: the milliseconds component of a duration, not its total.
        const recv = (ev as { run: (x: Node, c: unknown) => unknown }).run((n.args as [string, Node])[1], ctx);
        if (recv instanceof Duration) return BigInt(Math.trunc(recv.nanos / 1e6));
      }
      if (binary) {
        const runner = ev as { run: (x: Node, c: unknown) => unknown };
        const [ln, rn] = n.args as [Node, Node];
        const l = runner.run(ln, ctx);
        const r = runner.run(rn, ctx);
        const answer = binaryOverride(n.op, l, r);
        if (answer !== undefined) return answer;
        return (n as unknown as { handle: (l: unknown, r: unknown, ast: Node, ev: unknown) => unknown }).handle(l, r, n, ev);
      }
      return meta.evaluate.call(n, ev, a, ctx);
    };
    const shape = macroShape(n);
    const predicate = shape === undefined ? undefined : (states.get(shape.predicate) ?? { value: undefined, evals: 0, trues: 0 });
    const receiver = shape === undefined ? undefined : states.get(shape.receiver);
    n.evaluate = function (this: Node, ev, a, ctx) {
      const meter = holder.meter;
      if (meter === undefined) {
        const value = inner.call(n, ev, a, ctx);
        checkRange(n, value);
        return value;
      }
      if (meter.exceeded) throw new CostLimitError(meter.limit);
      const evalsBefore = predicate?.evals ?? 0;
      const truesBefore = predicate?.trues ?? 0;
      const value = inner.call(n, ev, a, ctx);
      checkRange(n, value);
      st.value = value;
      st.evals++;
      if (value === true) st.trues++;
      if (shape !== undefined && predicate !== undefined) {
        meter.add(macroCost(shape, predicate.evals - evalsBefore, predicate.trues - truesBefore, size(receiver?.value)));
      } else {
        meter.add(nodeCost(n, states));
      }
      return value;
    };
  };
  visit(root);
}

/** A compiled CEL program. */
export interface CelProgram {
  /** The checked result type (`dyn` when type checking was skipped). */
  readonly type: string;
  /**
   * Evaluates with `variables` (CEL values); returns the value and its cost.
   * Throws {@link CostLimitError} past `costLimit`, or the library's error.
   */
  run(variables: Record<string, unknown>, costLimit?: number): { value: unknown; cost: number };
}

/**
 * Compiles `expression` in OpenFGA's CEL environment with `variables`
 * declared (name to CEL type name). Throws `TypeError` with the checker's
 * message when it does not compile. `check: false` evaluates without type
 * checking (for CEL conformance cases that skip the checker) and without
 * cost tracking.
 */
export function compileCel(expression: string, variables: Readonly<Record<string, string>>, options: { check?: boolean } = {}): CelProgram {
  const env = BASE_ENV.clone();
  for (const [name, type] of Object.entries(variables)) env.registerVariable(name, type);
  let parsed: ReturnType<Environment['parse']>;
  try {
    parsed = env.parse(expression);
  } catch (err) {
    throw new TypeError((err as Error).message.split('\n')[0]);
  }
  const holder: { meter: Meter | undefined } = { meter: undefined };
  if (options.check === false) {
    instrument(parsed.ast as unknown as Node, holder);
    return {
      type: 'dyn',
      run: (vars) => ({ value: parsed(vars) as unknown, cost: 0 }),
    };
  }
  const checked = parsed.check() as { valid: boolean; type?: string; error?: { message: string } };
  if (!checked.valid) throw new TypeError(checked.error?.message.split('\n')[0] ?? 'invalid expression');
  instrument(parsed.ast as unknown as Node, holder);
  return {
    type: checked.type ?? 'dyn',
    run(vars, costLimit = Infinity) {
      const meter = new Meter(costLimit);
      holder.meter = meter;
      try {
        const value = parsed(vars) as unknown;
        if (meter.exceeded) throw new CostLimitError(costLimit);
        return { value, cost: meter.cost };
      } catch (err) {
        if (meter.exceeded) throw new CostLimitError(costLimit);
        throw err;
      } finally {
        holder.meter = undefined;
      }
    },
  };
}
