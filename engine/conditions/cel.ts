/**
 * OpenFGA's CEL environment on `@marcbachmann/cel-js`: compilation, and an
 * evaluator that answers as cel-go does and counts cel-go's runtime cost.
 *
 * OpenFGA compiles conditions with cel-go's standard environment plus its
 * `ipaddress` type (`internal/condition/condition.go`,
 * `internal/condition/types/ipaddress.go`). What this module adds to the
 * library so that answers match cel-go:
 *
 * - `ipaddress`: the type, `ipaddress(string)`, `.in_cidr(string)` and
 *   equality (the values and their Go `net/netip` rules are in
 *   `cel_values.ts`);
 * - `matches(string, string)`, cel-go's global form of `.matches()`;
 * - on request (`openfgaOnly`, set for a model version being written), the
 *   refusal of the library's functions that OpenFGA's environment lacks
 *   (`cel_allowlist.ts`);
 * - `== null` / `!= null` on the types cel-go's checker calls nullable
 *   (`checker/types.go`, `isNullable`): timestamp, duration and opaque types
 *   such as `ipaddress`. On int, uint, double, bool, string, list and map the
 *   comparison does not compile, in cel-go and here alike;
 * - cel-go's answers where the library's differ, by wrapping each node's
 *   evaluation: equality and ordering across kinds, nanosecond durations and
 *   timestamps with cel-go's time zones (`cel_time.ts`), map
 *   literals keyed by their typed keys, lists indexed by a uint, strict UTF-8
 *   in `string(bytes)`, range errors;
 * - cel-go's types where the library's checker differs, by wrapping a node's
 *   check: `duration + timestamp` is a timestamp, and a macro over an empty
 *   list or map literal ranges over `dyn`;
 * - literals the library reads otherwise (bytes, raw strings, `.5`),
 *   rewritten before parsing (`cel_literals.ts`);
 * - the cost of an evaluation, counted as cel-go's `CostTracker` counts it
 *   (the rules are in `cel_cost.ts`), so that OpenFGA's limit
 *   (`maxConditionEvaluationCost`, default 100) stops the same expressions.
 *
 * Pinned by test/engine/conditions.test.ts, test/engine/conditions_cel.test.ts,
 * test/engine/conditions_cel_spec.test.ts (CEL's conformance cases),
 * test/engine/conditions.property.test.ts and
 * test/engine/conditions_cel.property.test.ts.
 */
import type { Environment } from '@marcbachmann/cel-js';
import { celLibrary } from './cel_library.ts';
import { checkOpenFgaEnvironment } from './cel_allowlist.ts';
import { type Node, type NodeState, type States, CostLimitError, Meter, children, macroCost, macroShape, nodeCost, size } from './cel_cost.ts';
import { normalizeLiterals } from './cel_literals.ts';
import { durationClass, compareTime, formatDuration, formatTimestamp, isTimestampAccessor, parseRfc3339, timeArithmetic, timestampAccessor, timestampInRange } from './cel_time.ts';
import { IPAddress, NOT_FOUND, uintClass, celEquals, checkValueRange, compareBytes, compareNumbers, isMapLike, mapEntries, mapLookup, numKind } from './cel_values.ts';

const NULLABLE = ['google.protobuf.Duration', 'google.protobuf.Timestamp', 'ipaddress'] as const;
const ORDER: Record<string, (c: -1 | 0 | 1) => boolean> = { '<': (c) => c < 0, '<=': (c) => c <= 0, '>': (c) => c > 0, '>=': (c) => c >= 0 };

function baseEnvironment(): Environment {
  const env = new (celLibrary().Environment)({ homogeneousAggregateLiterals: false })
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
    .registerFunction('timestamp(google.protobuf.Timestamp): google.protobuf.Timestamp', (t: Date) => t)
    // cel-go's global form of `matches`; it answers as the library's `string.matches(string)`.
    .registerFunction('matches(string, string): bool', matchesRegex);
  // `!=` and the reversed operands follow from `==`. A parameter value of these types is never null
  // (OpenFGA's converters reject null), but a value may be null under dyn.
  for (const t of NULLABLE) env.registerOperator(`${t} == null`, (a: unknown) => a === null);
  // cel-go orders bytes (`Bytes.Compare`); the library does not.
  for (const op of Object.keys(ORDER)) env.registerOperator(`bytes ${op} bytes`, (a: Uint8Array, b: Uint8Array) => ORDER[op]!(compareBytes(a, b)));
  return env;
}

/** The library's `string.matches(string)` (a JavaScript `RegExp`), for the global form. */
function matchesRegex(text: string, pattern: string): boolean {
  let re: RegExp;
  try {
    re = new RegExp(pattern);
  } catch {
    throw new TypeError(`Invalid regular expression: ${pattern}`);
  }
  return re.test(text);
}

let baseEnv: Environment | undefined;

/** An override's answer that leaves the node to the library. */
const PASS = Symbol('the library answers');
const UTF8 = new TextDecoder('utf-8', { fatal: true });
/** cel-go's `null_type` (the library's type value for null is named `null`). */
let nullTypeValue: object | undefined;
/** CEL's `null_type` type value (the library's type class, named). */
const nullType = (): object => (nullTypeValue ??= new ((celLibrary().evaluate('type(1)') as object).constructor as new (name: string) => object)('null_type'));
const INT64_BOUND_DOUBLE = 2 ** 63;

/**
 * Where cel-go and the library answer differently for the same operands,
 * the answer cel-go gives; {@link PASS} to let the library answer.
 */
function binaryOverride(op: string, l: unknown, r: unknown): unknown {
  switch (op) {
    case '==':
      return celEquals(l, r) ?? PASS;
    case '!=': {
      const e = celEquals(l, r);
      return e === undefined ? PASS : !e;
    }
    case '+':
    case '-':
      return timeArithmetic(op, l, r) ?? PASS;
    case '[]':
      // cel-go indexes lists by int or uint, and finds map keys of any numeric kind by value.
      if (Array.isArray(l) && r instanceof uintClass()) {
        if (r.value >= BigInt(l.length)) throw new RangeError(`index out of bounds: ${r.value}`);
        return l[Number(r.value)];
      }
      if (l instanceof Map && !l.has(r) && numKind(r) !== undefined) {
        const v = mapLookup([...l.entries()], r);
        return v === NOT_FOUND ? PASS : v;
      }
      return PASS;
    case 'in':
      if (Array.isArray(r)) {
        let unknown = false;
        for (const x of r) {
          const e = celEquals(l, x);
          if (e === true) return true;
          if (e === undefined) unknown = true;
        }
        return unknown ? PASS : false;
      }
      if (isMapLike(r) && (numKind(l) !== undefined || typeof l === 'string' || typeof l === 'boolean')) return mapLookup(mapEntries(r), l) !== NOT_FOUND;
      return PASS;
    default: {
      const t = compareTime(l, r);
      if (t !== undefined) return ORDER[op]!(t);
      const kl = numKind(l);
      const kr = numKind(r);
      if (kl === undefined || kr === undefined || kl === kr) return PASS;
      const c = compareNumbers(l as number, r as number);
      return c === undefined ? false : ORDER[op]!(c);
    }
  }
}

/** Functions some of whose answers {@link callOverride} gives. */
const CALLS = new Set(['type', 'timestamp', 'int', 'string', 'getFullYear', 'getMonth', 'getDate', 'getDayOfMonth', 'getDayOfWeek', 'getDayOfYear', 'getHours', 'getMinutes', 'getSeconds', 'getMilliseconds']);

/**
 * cel-go's answer to function `name` of `args` (the receiver first for a
 * receiver call) where the library's differs; {@link PASS} otherwise.
 */
function callOverride(name: string, args: unknown[], receiver: boolean): unknown {
  const [a, b] = args;
  if (!receiver && args.length === 1) {
    if (name === 'type' && a === null) return nullType();
    if (name === 'timestamp' && typeof a === 'string') {
      // cel-go: time.Parse(time.RFC3339, s), nanoseconds kept, then the range check.
      const t = parseRfc3339(a);
      if (t === undefined) throw new RangeError(`timestamp('${a}'): not an RFC 3339 timestamp`);
      if (!timestampInRange(t)) throw new RangeError('timestamp out of range');
      return t;
    }
    if (name === 'int' && typeof a === 'number') {
      // cel-go's doubleToInt64Checked: both bounds are out of range, -2^63 included.
      if (!(a > -INT64_BOUND_DOUBLE && a < INT64_BOUND_DOUBLE)) throw new RangeError('int overflow');
      return BigInt(Math.trunc(a));
    }
    if (name === 'string' && a instanceof Uint8Array) {
      try {
        return UTF8.decode(a);
      } catch {
        throw new TypeError('invalid UTF-8 in bytes');
      }
    }
  }
  if (receiver && name === 'getMilliseconds' && a instanceof durationClass() && args.length === 1) return BigInt(Math.trunc(a.nanos / 1e6));
  if (receiver && a instanceof Date && isTimestampAccessor(name) && (args.length === 1 || (args.length === 2 && typeof b === 'string'))) return timestampAccessor(name, a, b as string | undefined);
  return PASS;
}

/** Range checks cel-go applies to results the library lets through. */
function checkRange(n: Node, value: unknown): void {
  // Literals are the parser's business (`-9223372036854775808` is a negated literal).
  if (n.op === 'value') return;
  checkValueRange(value);
}

const BINARY = new Set(['==', '!=', '<', '<=', '>', '>=', 'in', '+', '-', '[]']);
type Runner = { run: (x: Node, ctx: unknown) => unknown };
type Handle = (...args: unknown[]) => unknown;
type Checker = { getType(name: string): TypeDecl; dynType: TypeDecl; registry: { getListType(t: TypeDecl): TypeDecl; getMapType(k: TypeDecl, v: TypeDecl): TypeDecl } };
type TypeDecl = { name: string };

/** The library's evaluation of `n`, with cel-go's answers where they differ. */
function evaluateNode(n: Node, ev: unknown, a: unknown, ctx: unknown): unknown {
  const meta = n.meta;
  if (meta.alternate !== undefined) return n.op === 'id' && n.args === 'null_type' ? nullType() : meta.alternate.evaluate(ev, meta.alternate, ctx);
  if (meta.macro !== undefined) return meta.macro.evaluate(ev, meta.macro, ctx);
  const runner = ev as Runner;
  const handle = (n as unknown as { handle: Handle }).handle;
  if (BINARY.has(n.op)) {
    const [ln, rn] = n.args as [Node, Node];
    const l = runner.run(ln, ctx);
    const r = runner.run(rn, ctx);
    const answer = binaryOverride(n.op, l, r);
    return answer !== PASS ? answer : handle(l, r, n, ev);
  }
  if ((n.op === 'call' || n.op === 'rcall') && CALLS.has((n.args as [string])[0])) {
    const receiver = n.op === 'rcall';
    const nodes = receiver ? [(n.args as [string, Node])[1], ...(n.args as [string, Node, Node[]])[2]] : (n.args as [string, Node[]])[1];
    const values = nodes.map((x) => runner.run(x, ctx));
    const answer = callOverride((n.args as [string])[0], values, receiver);
    if (answer !== PASS) return answer;
    return receiver ? handle(values, ev, n) : handle(values, n, ev);
  }
  if (n.op === 'map') {
    // The library makes a plain object (keys become strings, some names are dropped); cel-go keeps typed keys.
    const map = new Map<unknown, unknown>();
    for (const [k, v] of n.args as [Node, Node][]) map.set(runner.run(k, ctx), runner.run(v, ctx));
    return map;
  }
  return meta.evaluate.call(n, ev, a, ctx);
}

/** Wraps the checks whose types differ from cel-go's (see the module comment). */
function instrumentCheck(n: Node): void {
  if (n.op === '+') {
    const check = n.check;
    n.check = function (this: Node, chk: unknown, ast: unknown, ctx: unknown) {
      const type = check.call(this, chk, ast, ctx);
      const [l, r] = n.args as [Node, Node];
      const name = (x: Node): string | undefined => (x.checkedType as TypeDecl | undefined)?.name;
      return name(l) === 'google.protobuf.Duration' && name(r) === 'google.protobuf.Timestamp' ? (chk as Checker).getType('google.protobuf.Timestamp') : type;
    };
  }
  const shape = macroShape(n);
  const range = shape?.receiver;
  if (range !== undefined && (range.op === 'list' || range.op === 'map') && (range.args as unknown[]).length === 0) {
    const check = range.check;
    range.check = function (this: Node, chk: unknown, ast: unknown, ctx: unknown) {
      check.call(this, chk, ast, ctx);
      const { registry, dynType } = chk as Checker;
      return range.op === 'list' ? registry.getListType(dynType) : registry.getMapType(dynType, dynType);
    };
  }
}

function instrument(root: Node, holder: { meter: Meter | undefined }): void {
  const states: States = new Map();
  const visit = (n: Node): void => {
    if (states.has(n)) return;
    const st: NodeState = { value: undefined, evals: 0, trues: 0 };
    states.set(n, st);
    for (const c of children(n)) visit(c);
    instrumentCheck(n);
    const shape = macroShape(n);
    const predicate = shape === undefined ? undefined : (states.get(shape.predicate) ?? { value: undefined, evals: 0, trues: 0 });
    const receiver = shape === undefined ? undefined : states.get(shape.receiver);
    // The library's own evaluation is resolved per call: it sets a node's evaluation when it type-checks it.
    n.evaluate = function (this: Node, ev, a, ctx) {
      const meter = holder.meter;
      if (meter === undefined) {
        const value = evaluateNode(n, ev, a, ctx);
        checkRange(n, value);
        return value;
      }
      if (meter.exceeded) throw new CostLimitError(meter.limit);
      const evalsBefore = predicate?.evals ?? 0;
      const truesBefore = predicate?.trues ?? 0;
      const value = evaluateNode(n, ev, a, ctx);
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
 * cost tracking. `openfgaOnly: true` also refuses, before type checking, a
 * function, macro or namespace the library has and OpenFGA's environment
 * does not (`UndeclaredReference`, see `cel_allowlist.ts`).
 */
export function compileCel(expression: string, variables: Readonly<Record<string, string>>, options: { check?: boolean; openfgaOnly?: boolean } = {}): CelProgram {
  const env = (baseEnv ??= baseEnvironment()).clone();
  for (const [name, type] of Object.entries(variables)) env.registerVariable(name, type);
  let parsed: ReturnType<Environment['parse']>;
  try {
    parsed = env.parse(normalizeLiterals(expression));
  } catch (err) {
    throw new TypeError((err as Error).message.split('\n')[0]);
  }
  if (options.openfgaOnly === true) checkOpenFgaEnvironment(parsed.ast as unknown as Node, new Set(Object.keys(variables)));
  const holder: { meter: Meter | undefined } = { meter: undefined };
  instrument(parsed.ast as unknown as Node, holder);
  if (options.check === false) {
    return {
      type: 'dyn',
      run: (vars) => ({ value: parsed(vars) as unknown, cost: 0 }),
    };
  }
  const checked = parsed.check() as { valid: boolean; type?: string; error?: { message: string } };
  if (!checked.valid) throw new TypeError(checked.error?.message.split('\n')[0] ?? 'invalid expression');
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
