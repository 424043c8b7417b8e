/**
 * A counterexample as a store-test file (the format `latchkey fga test` and
 * OpenFGA's `fga model test` run): the model as DSL, the shrunk tuples, and
 * the failing check with the answer the property requires, so that pasting
 * it into a store file gives a test that fails until the model is fixed.
 */
import { printModel } from '../../dsl/index.ts';
import type { TupleKey } from '../store.ts';
import type { Counterexample, PropertyResult } from './properties.ts';

/** YAML scalar: JSON text is YAML 1.2 flow syntax, so every value is written as JSON. */
const q = (v: unknown): string => JSON.stringify(v);

function tupleLines(tuples: readonly TupleKey[], indent: string): string[] {
  const out: string[] = [];
  for (const t of tuples) {
    out.push(`${indent}- user: ${q(t.user)}`, `${indent}  relation: ${q(t.relation)}`, `${indent}  object: ${q(t.object)}`);
    if (t.condition !== undefined) {
      out.push(`${indent}  condition:`, `${indent}    name: ${q(t.condition.name)}`);
      if (t.condition.context !== undefined && Object.keys(t.condition.context).length > 0) out.push(`${indent}    context: ${q(t.condition.context)}`);
    }
  }
  return out;
}

/**
 * The store-test file of `counterexample`, named `name`. When the
 * counterexample names a check (every kind but a predicate that names none),
 * running the file fails on that check with the engine's answer.
 */
export function storeTestCase(counterexample: Counterexample, name: string, replay?: { seed: number; path?: string }): string {
  const lines: string[] = [];
  lines.push(`# ${counterexample.reason.replace(/\n/g, ' ')}`);
  if (replay !== undefined) lines.push(`# replay: seed ${replay.seed}${replay.path === undefined ? '' : `, path ${q(replay.path)}`}`);
  lines.push(`name: ${q(`counterexample: ${name}`)}`);
  let dsl: string;
  try {
    dsl = printModel(counterexample.model);
  } catch (err) {
    dsl = `# the model could not be printed as DSL: ${err instanceof Error ? err.message : String(err)}`;
  }
  lines.push('model: |');
  for (const l of dsl.replace(/\n+$/, '').split('\n')) lines.push(l === '' ? '' : `  ${l}`);
  if (counterexample.tuples.length === 0) lines.push('tuples: []');
  else lines.push('tuples:', ...tupleLines(counterexample.tuples, '  '));
  lines.push('tests:', `  - name: ${q(name)}`);
  const c = counterexample.check;
  if (c === undefined) {
    // A store file needs an assertion; without a named check this one only pins the store (the predicate names none).
    lines.push('    check: []');
  } else {
    lines.push('    check:', `      - user: ${q(c.user)}`, `        object: ${q(c.object)}`);
    if (Object.keys(counterexample.context).length > 0) lines.push(`        context: ${q(counterexample.context)}`);
    lines.push('        assertions:', `          ${q(c.relation)}: ${c.expected}`);
  }
  return `${lines.join('\n')}\n`;
}

/** A failing result in words: the reason, the failing check with expected and actual, the seed, and the store-test case. */
export function describeFailure(result: PropertyResult, name: string): string {
  const ce = result.counterexample;
  if (ce === undefined) return `property '${name}' failed (seed ${result.seed})\n`;
  const lines = [`property '${name}' does not hold after ${result.numRuns} store${result.numRuns === 1 ? '' : 's'} (seed ${result.seed}, shrunk ${result.numShrinks} times to ${ce.tuples.length} tuple${ce.tuples.length === 1 ? '' : 's'})`, `  ${ce.reason}`];
  if (ce.check !== undefined) {
    lines.push(`  check ${ce.check.user} ${ce.check.relation} ${ce.check.object}`, `  expected: ${JSON.stringify(ce.check.expected)}`, `  actual:   ${JSON.stringify(ce.check.actual)}`);
  }
  lines.push('  as a store test (paste into a .fga.yaml file):', '', storeTestCase(ce, name, { seed: result.seed, ...(result.path === undefined ? {} : { path: result.path }) }));
  return lines.join('\n');
}
