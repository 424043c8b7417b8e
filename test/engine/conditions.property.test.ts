/**
 * Properties of condition evaluation that hold for all inputs (internal
 * helper `CompiledCondition`, the engine's compiled form of a condition):
 * numeric equality and ordering across int, uint and double follow cel-go's
 * rules, and `== null` / `!= null` behave on every parameter type as in
 * OpenFGA.
 */
import test from 'ava';
import fc from 'fast-check';
import { CompiledCondition } from '../../engine/conditions/compiled_condition.ts';
import { LatchkeyError } from '../../engine/index.ts';
import type { ConditionParamTypeRef } from '../../engine/model.ts';

type Kind = 'int' | 'uint' | 'double';
interface Num {
  kind: Kind;
  /** Exact for int and uint. */
  big?: bigint;
  double?: number;
}

const EDGES = [0n, 1n, -1n, 2n ** 53n, 2n ** 53n + 1n, 2n ** 63n - 1n, -(2n ** 63n), 2n ** 63n, 2n ** 64n - 1n, 2n ** 62n];

const intArb: fc.Arbitrary<Num> = fc.oneof(fc.constantFrom(...EDGES.filter((b) => b >= -(2n ** 63n) && b < 2n ** 63n)), fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }), fc.bigInt({ min: -1000n, max: 1000n })).map((big) => ({ kind: 'int' as const, big }));
const uintArb: fc.Arbitrary<Num> = fc.oneof(fc.constantFrom(...EDGES.filter((b) => b >= 0n && b < 2n ** 64n)), fc.bigInt({ min: 0n, max: 2n ** 64n - 1n }), fc.bigInt({ min: 0n, max: 1000n })).map((big) => ({ kind: 'uint' as const, big }));
const doubleArb: fc.Arbitrary<Num> = fc
  .oneof(fc.double({ noNaN: true, noDefaultInfinity: true }), fc.constantFrom(0, -0, 0.5, -1, 1, 2 ** 53, 2 ** 63, -(2 ** 63), 2 ** 64, 9.2e18, 1.8e19, 1e300), fc.integer({ min: -1000, max: 1000 }).map((n) => n / 2))
  .filter((d) => Number.isFinite(d))
  .map((double) => ({ kind: 'double' as const, double }));
/** The next double above or below `d`. */
function nextDouble(d: number, up: boolean): number {
  const view = new DataView(new ArrayBuffer(8));
  view.setFloat64(0, d);
  const bits = view.getBigUint64(0);
  view.setBigUint64(0, d === 0 ? (up ? 1n : 0x8000000000000001n) : (d > 0) === up ? bits + 1n : bits - 1n);
  return view.getFloat64(0);
}

/**
 * An integer and a double next to it: where converting the integer to a
 * double loses precision, and so where cel-go's answer and an exact
 * comparison part.
 */
const nearPairArb: fc.Arbitrary<[Num, Num]> = fc
  .tuple(fc.oneof(intArb, uintArb), fc.constantFrom(-1, 0, 1), fc.boolean())
  .map(([i, step, swap]) => {
    const base = Number(i.big!);
    const d: Num = { kind: 'double', double: step === 0 ? base : nextDouble(base, step > 0) };
    return swap ? [d, i] : [i, d];
  });
const numArb = fc.oneof(intArb, uintArb, doubleArb);
const pairArb: fc.Arbitrary<[Num, Num]> = fc.oneof(fc.tuple(numArb, numArb), nearPairArb);

/**
 * The reference: cel-go `common/types/compare.go`. Integers of either kind
 * compare exactly; an integer against a double is converted to float64,
 * except that doubles beyond the integer type's range are below or above all
 * of it.
 */
function reference(a: Num, b: Num): -1 | 0 | 1 {
  const sgn = (x: number | bigint): -1 | 0 | 1 => (x < 0 ? -1 : x > 0 ? 1 : 0);
  if (a.kind !== 'double' && b.kind !== 'double') return sgn(a.big! - b.big!);
  if (a.kind === 'double' && b.kind === 'double') return sgn(a.double! - b.double!);
  const [d, i, flip] = a.kind === 'double' ? [a.double!, b, false] : [b.double!, a, true];
  let c: -1 | 0 | 1;
  if (i.kind === 'int' && d < -(2 ** 63)) c = -1;
  else if (i.kind === 'int' && d > 2 ** 63) c = 1;
  else if (i.kind === 'uint' && d < 0) c = -1;
  else if (i.kind === 'uint' && d > 2 ** 64) c = 1;
  else c = sgn(d - Number(i.big!));
  return flip ? ((-c || 0) as -1 | 0 | 1) : c;
}

const TYPE: Record<Kind, ConditionParamTypeRef> = { int: { type_name: 'TYPE_NAME_INT' }, uint: { type_name: 'TYPE_NAME_UINT' }, double: { type_name: 'TYPE_NAME_DOUBLE' } };

/** Context values as a client sends them: integers beyond 2^53 as strings (OpenFGA converts numeric strings). */
const wire = (n: Num): unknown => (n.kind === 'double' ? n.double : n.big! >= -(2n ** 53n) && n.big! <= 2n ** 53n ? Number(n.big) : n.big!.toString());

const OPS: [string, (c: number) => boolean][] = [
  ['==', (c) => c === 0],
  ['!=', (c) => c !== 0],
  ['<', (c) => c < 0],
  ['<=', (c) => c <= 0],
  ['>', (c) => c > 0],
  ['>=', (c) => c >= 0],
];

const compiled = new Map<string, CompiledCondition>();
function condition(ka: Kind, kb: Kind, op: string): CompiledCondition {
  const key = `${ka} ${op} ${kb}`;
  let c = compiled.get(key);
  if (c === undefined) {
    c = new CompiledCondition({ name: 'c', expression: `dyn(a) ${op} dyn(b)`, parameters: { a: TYPE[ka], b: TYPE[kb] } });
    compiled.set(key, c);
  }
  return c;
}

test('(internal CompiledCondition) numeric equality and ordering across int, uint and double follow cel-go', (t) => {
  const run = (): void =>
    fc.assert(
      fc.property(pairArb, ([a, b]) => {
        const expected = reference(a, b);
        for (const [op, holds] of OPS) {
          const got = condition(a.kind, b.kind, op).evaluate(undefined, { a: wire(a), b: wire(b) });
          if (got !== holds(expected)) throw new Error(`${a.kind} ${String(a.big ?? a.double)} ${op} ${b.kind} ${String(b.big ?? b.double)}: got ${got}, cel-go ${holds(expected)}`);
        }
      }),
    );
  t.notThrows(run);
});

test('(internal CompiledCondition) typed cross-kind ordering (no dyn) agrees with the dyn form', (t) => {
  const run = (): void =>
    fc.assert(
      fc.property(pairArb, ([a, b]) => {
        fc.pre(a.kind !== b.kind);
        for (const [op, holds] of OPS.slice(2)) {
          const c = new CompiledCondition({ name: 'c', expression: `a ${op} b`, parameters: { a: TYPE[a.kind], b: TYPE[b.kind] } });
          if (c.evaluate(undefined, { a: wire(a), b: wire(b) }) !== holds(reference(a, b))) throw new Error(`${a.kind} ${op} ${b.kind}`);
        }
      }),
      { numRuns: 50 },
    );
  t.notThrows(run);
});

type ParamCase = { type: ConditionParamTypeRef; value: fc.Arbitrary<unknown> };
const PARAMS: Record<string, ParamCase> = {
  string: { type: { type_name: 'TYPE_NAME_STRING' }, value: fc.string() },
  int: { type: { type_name: 'TYPE_NAME_INT' }, value: fc.integer() },
  uint: { type: { type_name: 'TYPE_NAME_UINT' }, value: fc.nat() },
  double: { type: { type_name: 'TYPE_NAME_DOUBLE' }, value: fc.double({ noNaN: true, noDefaultInfinity: true }) },
  bool: { type: { type_name: 'TYPE_NAME_BOOL' }, value: fc.boolean() },
  duration: { type: { type_name: 'TYPE_NAME_DURATION' }, value: fc.tuple(fc.nat(10_000), fc.constantFrom('ns', 'us', 'ms', 's', 'm', 'h')).map(([n, u]) => `${n}${u}`) },
  timestamp: { type: { type_name: 'TYPE_NAME_TIMESTAMP' }, value: fc.date({ min: new Date('0001-01-01T00:00:00Z'), max: new Date('9999-12-31T23:59:59Z'), noInvalidDate: true }).map((d) => d.toISOString()) },
  ipaddress: { type: { type_name: 'TYPE_NAME_IPADDRESS' }, value: fc.oneof(fc.ipV4(), fc.ipV6()) },
  list: { type: { type_name: 'TYPE_NAME_LIST', generic_types: [{ type_name: 'TYPE_NAME_STRING' }] }, value: fc.array(fc.string()) },
  map: { type: { type_name: 'TYPE_NAME_MAP', generic_types: [{ type_name: 'TYPE_NAME_INT' }] }, value: fc.dictionary(fc.string(), fc.integer()) },
  any: { type: { type_name: 'TYPE_NAME_ANY' }, value: fc.jsonValue() },
};
/** cel-go's checker (`isNullable`): null compares only with these (and dyn). */
const NULLABLE = new Set(['duration', 'timestamp', 'ipaddress']);
const NULL_EXPRESSIONS: [string, boolean][] = [
  ['x == null', true],
  ['null == x', true],
  ['x != null', false],
  ['null != x', false],
];

for (const [name, p] of Object.entries(PARAMS)) {
  test(`(internal CompiledCondition) null comparisons on a ${name} parameter answer as OpenFGA`, (t) => {
    for (const [expression] of NULL_EXPRESSIONS) {
      const make = (): CompiledCondition => new CompiledCondition({ name: 'c', expression, parameters: { x: p.type } });
      if (name !== 'any' && !NULLABLE.has(name)) {
        t.throws(make, { instanceOf: TypeError }, `${name}: ${expression} must not compile`);
        continue;
      }
      const c = make();
      t.notThrows(
        () =>
          fc.assert(
            fc.property(fc.option(p.value, { nil: null, freq: 3 }), (value) => {
              const isEq = expression.includes('==');
              if (value === null && name !== 'any') {
                try {
                  c.evaluate(undefined, { x: value });
                } catch (err) {
                  if (err instanceof LatchkeyError && err.reason === 'invalid_condition_context') return;
                  throw err;
                }
                throw new Error(`${name}: null must not convert`);
              }
              const got = c.evaluate(undefined, { x: value });
              if (got !== (isEq === (value === null))) throw new Error(`${name} ${JSON.stringify(value)}: ${expression} gave ${got}`);
            }),
          ),
        `${name}: ${expression}`,
      );
    }
  });
}
