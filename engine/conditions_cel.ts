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
 *   `conditions_cel_values.ts`);
 * - `== null` / `!= null` on the types cel-go's checker calls nullable
 *   (`checker/types.go`, `isNullable`): timestamp, duration and opaque types
 *   such as `ipaddress`. On int, uint, double, bool, string, list and map the
 *   comparison does not compile, in cel-go and here alike;
 * - cel-go's answers where the library's differ (equality and ordering across
 *   kinds, range errors), by wrapping each node's evaluation;
 * - the cost of an evaluation, counted as cel-go's `CostTracker` counts it
 *   (the rules are in `conditions_cel_cost.ts`), so that OpenFGA's limit
 *   (`maxConditionEvaluationCost`, default 100) stops the same expressions.
 *
 * Pinned by test/engine/conditions.test.ts,
 * test/engine/conditions_cel_spec.test.ts and
 * test/engine/conditions.property.test.ts.
 */
import { Environment } from '@marcbachmann/cel-js';
import { type EvalFn, type Node, type NodeState, type States, CostLimitError, Meter, children, macroCost, macroShape, nodeCost, size } from './conditions_cel_cost.ts';
import { Duration, IPAddress, NOT_FOUND, celEquals, checkValueRange, compareNumbers, formatDuration, formatTimestamp, isMapLike, mapEntries, mapLookup, numKind } from './conditions_cel_values.ts';

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

const ORDER: Record<string, (c: -1 | 0 | 1) => boolean> = { '<': (c) => c < 0, '<=': (c) => c <= 0, '>': (c) => c > 0, '>=': (c) => c >= 0 };

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
  checkValueRange(value);
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
