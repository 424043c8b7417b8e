/**
 * Differential fuzzing against OpenFGA's own language package: mutated models
 * and token soups (random sequences of grammar fragments) must get the same
 * verdict and JSON as `@openfga/syntax-transformer`. See differential.test.ts
 * for the known, deliberate differences.
 *
 * 200 runs per property locally, 2,000 with CI set; replay a failure with
 * FC_SEED=<seed> (and FC_PATH=<path>).
 */
import test from 'ava';
import fc from 'fast-check';
import { definitionSoup, fcParams, fileSoup, genModelText, mutate } from './generators.ts';
import { disagreement } from './oracle.ts';

const RUNS = process.env['CI'] ? 2000 : 200;

test('mutated (mostly broken) models get the reference verdict', (t) => {
  t.notThrows(() =>
    fc.assert(
      fc.property(fc.gen(), (g) => {
        const text = mutate(g, genModelText(g));
        const d = disagreement(text);
        if (d !== undefined) throw new Error(`${d}\n--- text ---\n${JSON.stringify(text)}`);
      }),
      fcParams(RUNS),
    ),
  );
});

test('token soups in a relation definition get the reference verdict and JSON', (t) => {
  t.notThrows(() =>
    fc.assert(
      fc.property(definitionSoup, (text) => {
        const d = disagreement(text);
        if (d !== undefined) throw new Error(`${d}\n--- text ---\n${JSON.stringify(text)}`);
      }),
      fcParams(RUNS),
    ),
  );
});

test('token soups across a whole file get the reference verdict and JSON', (t) => {
  t.notThrows(() =>
    fc.assert(
      fc.property(fileSoup, (text) => {
        const d = disagreement(text);
        if (d !== undefined) throw new Error(`${d}\n--- text ---\n${JSON.stringify(text)}`);
      }),
      fcParams(RUNS),
    ),
  );
});
