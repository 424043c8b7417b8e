/**
 * CEL's own conformance tests (google/cel-spec `tests/simple/testdata`, read
 * from ../shared/conformance/cel-spec) run through the engine's CEL
 * environment for conditions (internal helper `compileCel`), the environment
 * OpenFGA's conditions evaluate in with cel-go.
 *
 * Each case is one of:
 * - run: it must pass; a failure is a regression and fails the test;
 * - not applicable: it needs something OpenFGA's environment does not have
 *   (protobuf message types and containers, cel-go extensions), by rule;
 * - skipped: named in SKIPPED with its reason; each must still fail, so the
 *   list only holds known deviations.
 * The pass rate per file is logged (`npx ava --verbose`).
 */
import test from 'ava';
import { readFileSync, readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { compileCel } from '../../engine/conditions/cel.ts';
import { durationClass, durationNanos, timestampNanos, timestampOf } from '../../engine/conditions/cel_time.ts';
import { uintClass } from '../../engine/conditions/cel_values.ts';
import { loadOrSkip, needs } from '../helpers/needs.ts';
import { field, parseTextProto, scalar, sub, subs, textString, type TextMessage, type TextValue } from './textproto.ts';

const DIR = fileURLToPath(new URL('../../../shared/conformance/cel-spec/', import.meta.url));

/** Files whose cases are all outside OpenFGA's environment. */
const NOT_APPLICABLE_FILES: Record<string, string> = {
  'macros2.textproto': 'two-variable comprehensions are a cel-go extension (ext.TwoVarComprehensions) that OpenFGA does not enable',
};

/**
 * Cases that fail, `file/section/test` with the reason. Each is a form only
 * unchecked evaluation reaches (the case sets `disable_check`): OpenFGA
 * always type-checks a condition when the model is written, and its
 * checker rejects each of these expressions, so no condition can reach them.
 */
const R1 =
  'unchecked evaluation of an undeclared name is an error in the library; OpenFGA always type-checks, which rejects the expression';
const R2 =
  'unchecked comparison of differently typed literals: the library rejects it before evaluation; OpenFGA type-checks, which rejects it as well';
const R7 =
  'unchecked evaluation with non-bool operands or mixed branch types: the library type-checks anyway; OpenFGA type-checks, which rejects it as well';
const R10 =
  'unchecked calls of undeclared receiver functions named by reserved words (`as`, `if`, ...): the library does not parse them; OpenFGA declares no such functions, so its checker rejects them';
const SKIPPED: Record<string, string> = {
  'basic.textproto/variables/unbound_is_runtime_error': R1,
  'basic.textproto/functions/unbound_is_runtime_error': R1,
  'comparisons.textproto/eq_literal/not_eq_list_length': R2,
  'comparisons.textproto/eq_literal/eq_mixed_types': R2,
  'comparisons.textproto/eq_literal/eq_list_elem_mixed_types': R2,
  'comparisons.textproto/ne_literal/ne_mixed_types': R2,
  'logic.textproto/conditional/mixed_type': R7,
  'logic.textproto/AND/short_circuit_type_left': R7,
  'logic.textproto/AND/short_circuit_type_right': R7,
  'logic.textproto/OR/short_circuit_type_left': R7,
  'logic.textproto/OR/short_circuit_type_right': R7,
  'parse.textproto/receiver_function_names/as': R10,
  'parse.textproto/receiver_function_names/break': R10,
  'parse.textproto/receiver_function_names/const': R10,
  'parse.textproto/receiver_function_names/continue': R10,
  'parse.textproto/receiver_function_names/else': R10,
  'parse.textproto/receiver_function_names/for': R10,
  'parse.textproto/receiver_function_names/function': R10,
  'parse.textproto/receiver_function_names/if': R10,
  'parse.textproto/receiver_function_names/import': R10,
  'parse.textproto/receiver_function_names/let': R10,
  'parse.textproto/receiver_function_names/loop': R10,
  'parse.textproto/receiver_function_names/package': R10,
  'parse.textproto/receiver_function_names/namespace': R10,
  'parse.textproto/receiver_function_names/return': R10,
  'parse.textproto/receiver_function_names/var': R10,
  'parse.textproto/receiver_function_names/void': R10,
  'parse.textproto/receiver_function_names/while': R10,
};

class NotApplicable extends Error {}

const PRIMITIVES: Record<string, string> = { INT64: 'int', UINT64: 'uint', DOUBLE: 'double', STRING: 'string', BOOL: 'bool', BYTES: 'bytes' };

function celType(t: TextMessage | undefined): string {
  if (t === undefined) throw new NotApplicable('declaration without a type');
  const prim = scalar(field(t, 'primitive'));
  if (prim !== undefined) return PRIMITIVES[prim] ?? (() => { throw new NotApplicable(`primitive ${prim}`); })();
  if (t.has('dyn')) return 'dyn';
  if (t.has('null')) return 'null';
  const list = sub(t, 'list_type');
  if (list !== undefined) return `list<${celType(sub(list, 'elem_type'))}>`;
  const map = sub(t, 'map_type');
  if (map !== undefined) return `map<${celType(sub(map, 'key_type'))}, ${celType(sub(map, 'value_type'))}>`;
  const wk = scalar(field(t, 'well_known'));
  if (wk === 'DURATION') return 'google.protobuf.Duration';
  if (wk === 'TIMESTAMP') return 'google.protobuf.Timestamp';
  const msg = textString(field(t, 'message_type'));
  if (msg === 'google.protobuf.Duration' || msg === 'google.protobuf.Timestamp') return msg;
  throw new NotApplicable(`type ${msg ?? [...t.keys()].join(',')} is not an OpenFGA parameter type`);
}

function parseDouble(s: string): number {
  const lower = s.toLowerCase();
  if (lower === 'inf' || lower === 'infinity') return Infinity;
  if (lower === '-inf' || lower === '-infinity') return -Infinity;
  if (lower === 'nan') return NaN;
  return Number(s);
}

/** A cel.expr.Value as the library's value. */
function celValue(v: TextMessage): unknown {
  const [kind, values] = [...v.entries()][0] ?? [];
  const x: TextValue | undefined = values?.[0];
  switch (kind) {
    case 'int64_value':
      return BigInt(scalar(x)!);
    case 'uint64_value':
      return new (uintClass())(BigInt(scalar(x)!));
    case 'double_value':
      return parseDouble(scalar(x)!);
    case 'string_value':
      return textString(x);
    case 'bytes_value':
      return new Uint8Array(Buffer.from(x as string, 'latin1'));
    case 'bool_value':
      return scalar(x) === 'true';
    case 'null_value':
      return null;
    case 'list_value':
      return subs(x as TextMessage, 'values').map(celValue);
    case 'map_value':
      return new Map(subs(x as TextMessage, 'entries').map((e) => [celValue(sub(e, 'key')!), celValue(sub(e, 'value')!)]));
    case 'type_value':
      return { type: textString(x) };
    case 'object_value': {
      const any = x as TextMessage;
      const duration = sub(any, '[type.googleapis.com/google.protobuf.Duration]');
      if (duration !== undefined) return new (durationClass())(BigInt(scalar(field(duration, 'seconds')) ?? '0'), Number(scalar(field(duration, 'nanos')) ?? '0'));
      const ts = sub(any, '[type.googleapis.com/google.protobuf.Timestamp]');
      if (ts !== undefined) return timestampOf(BigInt(scalar(field(ts, 'seconds')) ?? '0') * 1_000_000_000n + BigInt(scalar(field(ts, 'nanos')) ?? '0'));
      throw new NotApplicable('protobuf message value');
    }
    default:
      throw new NotApplicable(`value kind ${String(kind)}`);
  }
}

/** CEL equality of an expected and an actual value, strict on types. */
function same(expected: unknown, actual: unknown): boolean {
  if (typeof expected === 'number') return typeof actual === 'number' && (Number.isNaN(expected) ? Number.isNaN(actual) : expected === actual);
  if (typeof expected !== 'object' || expected === null) return expected === actual;
  if (expected instanceof uintClass()) return actual instanceof uintClass() && actual.value === expected.value;
  if (expected instanceof durationClass()) return actual instanceof durationClass() && durationNanos(actual) === durationNanos(expected);
  if (expected instanceof Date) return actual instanceof Date && timestampNanos(actual) === timestampNanos(expected);
  if (expected instanceof Uint8Array) return actual instanceof Uint8Array && Buffer.from(actual).equals(Buffer.from(expected));
  if (Array.isArray(expected)) return Array.isArray(actual) && actual.length === expected.length && expected.every((e, i) => same(e, actual[i]));
  if (expected instanceof Map) {
    const entries = actual instanceof Map ? [...actual.entries()] : typeof actual === 'object' && actual !== null ? Object.entries(actual) : undefined;
    if (entries === undefined || entries.length !== expected.size) return false;
    return [...expected.entries()].every(([k, v]) => entries.some(([ak, av]) => same(k, ak) && same(v, av)));
  }
  if ('type' in expected) return actual !== null && typeof actual === 'object' && String((actual as { name?: string }).name ?? actual) === (expected as { type: string }).type;
  return false;
}

interface Outcome {
  id: string;
  status: 'pass' | 'fail' | 'na';
  detail: string;
}

function runCase(file: string, section: string, t: TextMessage): Outcome {
  const name = textString(field(t, 'name')) ?? '?';
  const id = `${file}/${section}/${name}`;
  try {
    if (NOT_APPLICABLE_FILES[file] !== undefined) throw new NotApplicable(NOT_APPLICABLE_FILES[file]);
    if (field(t, 'container') !== undefined) throw new NotApplicable('container (protobuf message namespace)');
    if (/google\.protobuf\.|TestAllTypes/u.test(textString(field(t, 'expr')) ?? '')) throw new NotApplicable('protobuf messages');
    if (scalar(field(t, 'disable_macros')) === 'true') throw new NotApplicable('macros disabled (OpenFGA always has them)');
    if (t.has('unknown') || t.has('any_unknowns')) throw new NotApplicable('unknown sets');
    const expr = textString(field(t, 'expr')) ?? '';
    const vars: Record<string, string> = {};
    for (const decl of subs(t, 'type_env')) {
      const ident = sub(decl, 'ident');
      if (ident === undefined) throw new NotApplicable('function declarations');
      vars[textString(field(decl, 'name'))!] = celType(sub(ident, 'type'));
    }
    const bindings: Record<string, unknown> = {};
    for (const b of subs(t, 'bindings')) {
      const key = textString(field(b, 'key'))!;
      const ev = sub(b, 'value');
      const v = ev === undefined ? undefined : sub(ev, 'value');
      if (v === undefined) throw new NotApplicable('error or unknown binding');
      bindings[key] = celValue(v);
      vars[key] ??= 'dyn';
    }
    const check = scalar(field(t, 'disable_check')) !== 'true';
    const typed = sub(t, 'typed_result');
    const expectedValue = sub(t, 'value') ?? (typed === undefined ? undefined : sub(typed, 'result'));
    const expectsError = t.has('eval_error') || t.has('any_eval_errors');
    const expected = expectedValue === undefined ? (expectsError ? undefined : true) : celValue(expectedValue);
    let program;
    try {
      program = compileCel(expr, vars, { check });
    } catch (err) {
      return { id, status: 'fail', detail: `does not compile: ${(err as Error).message}` };
    }
    if (scalar(field(t, 'check_only')) === 'true') return { id, status: 'pass', detail: '' };
    let actual: unknown;
    try {
      actual = program.run(bindings).value;
    } catch (err) {
      return expectsError ? { id, status: 'pass', detail: '' } : { id, status: 'fail', detail: `error: ${(err as Error).message.split('\n')[0]}` };
    }
    if (expectsError) return { id, status: 'fail', detail: `expected an error, got ${show(actual)}` };
    return same(expected, actual) ? { id, status: 'pass', detail: '' } : { id, status: 'fail', detail: `expected ${show(expected)}, got ${show(actual)}` };
  } catch (err) {
    if (err instanceof NotApplicable) return { id, status: 'na', detail: err.message };
    throw err;
  }
}

function show(v: unknown): string {
  if (typeof v === 'bigint') return `${v}`;
  if (v instanceof uintClass()) return `${v.value}u`;
  if (Array.isArray(v)) return `[${v.map(show).join(', ')}]`;
  if (v instanceof Map) return `{${[...v.entries()].map(([k, x]) => `${show(k)}: ${show(x)}`).join(', ')}}`;
  if (typeof v === 'string') return JSON.stringify(v);
  return String(v);
}

const FILES = loadOrSkip(test, '(internal compileCel) cel-spec: every applicable case of each conformance file passes', 'shared', () => readdirSync(DIR).filter((f) => f.endsWith('.textproto')).sort(), []);
const outcomes = new Map<string, Outcome[]>();
for (const file of FILES) {
  const doc = parseTextProto(readFileSync(DIR + file, 'utf8'));
  const list: Outcome[] = [];
  for (const section of subs(doc, 'section')) {
    const sname = textString(field(section, 'name')) ?? '?';
    for (const c of subs(section, 'test')) list.push(runCase(file, sname, c));
  }
  outcomes.set(file, list);
}

for (const file of FILES) {
  test(`(internal compileCel) cel-spec ${file}: every applicable case passes, except the named skips`, (t) => {
    const list = outcomes.get(file)!;
    const applicable = list.filter((o) => o.status !== 'na');
    const pass = applicable.filter((o) => o.status === 'pass').length;
    const skipped = applicable.filter((o) => SKIPPED[o.id] !== undefined);
    const regressions = applicable.filter((o) => o.status === 'fail' && SKIPPED[o.id] === undefined);
    const fixed = skipped.filter((o) => o.status === 'pass');
    t.log(`${file}: ${pass}/${applicable.length} applicable cases pass (${applicable.length === 0 ? 100 : ((100 * pass) / applicable.length).toFixed(1)}%), ${skipped.length} skipped by name, ${list.length - applicable.length} not applicable`);
    for (const o of regressions) t.log(`FAIL ${o.id}: ${o.detail}`);
    t.deepEqual(regressions.map((o) => o.id), [], 'applicable cases that fail and are not in SKIPPED');
    t.deepEqual(fixed.map((o) => o.id), [], 'cases in SKIPPED that now pass (remove them from the list)');
  });
}

needs(test, 'shared')('(internal compileCel) every named skip is a case of the conformance files', (t) => {
  const ids = new Set([...outcomes.values()].flat().map((o) => o.id));
  t.deepEqual(Object.keys(SKIPPED).filter((id) => !ids.has(id)), []);
});
