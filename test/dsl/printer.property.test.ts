/**
 * Properties of the DSL: printing a parsed model and parsing it back gives
 * the same model; no input makes the parser throw or hang.
 * Replay a failure with FC_SEED=<seed> (and FC_PATH=<path>).
 */
import test from 'ava';
import fc from 'fast-check';
import { parseDsl, parseDslSyntax, printModel } from '../../dsl/index.ts';
import { fcParams, genModelText, mutate } from './generators.ts';
import { normalize, reference } from './oracle.ts';

const RUNS = process.env['CI'] ? 2000 : 200;

test('print then parse gives back the same model (syntax-valid models)', (t) => {
  t.notThrows(() =>
    fc.assert(
      fc.property(fc.gen(), (g) => {
        const { model } = parseDslSyntax(genModelText(g));
        if (!model) return;
        const printed = printModel(model);
        const again = parseDslSyntax(printed);
        if (normalize(again.model) !== normalize(model)) throw new Error(`round trip changed the model:\n${printed}`);
      }),
      fcParams(RUNS),
    ),
  );
});

test('printing is stable: print(parse(print(m))) equals print(m)', (t) => {
  t.notThrows(() =>
    fc.assert(
      fc.property(fc.gen(), (g) => {
        const { model } = parseDslSyntax(genModelText(g));
        if (!model) return;
        const once = printModel(model);
        const twice = printModel(parseDslSyntax(once).model as NonNullable<typeof model>);
        if (once !== twice) throw new Error(`${once}\n---\n${twice}`);
      }),
      fcParams(RUNS),
    ),
  );
});

test("printing writes the same text as OpenFGA's printer (transformJSONToDSL)", (t) => {
  t.notThrows(() =>
    fc.assert(
      fc.property(fc.gen(), (g) => {
        const { model } = parseDslSyntax(genModelText(g));
        if (!model) return;
        const ours = printModel(model);
        const theirs = reference.transformer.transformJSONToDSL(model);
        if (ours !== theirs) throw new Error(`${ours}\n--- reference ---\n${theirs}`);
      }),
      fcParams(RUNS),
    ),
  );
});

test('random strings, random bytes, mutations and truncations never throw and finish quickly', (t) => {
  const inputs = fc.oneof(
    fc.string({ maxLength: 300 }),
    fc.string({ unit: 'binary', maxLength: 300 }),
    fc.uint8Array({ maxLength: 300 }).map((b) => Buffer.from(b).toString('latin1')),
    fc.gen().map((g) => mutate(g, genModelText(g))),
    fc.tuple(fc.gen(), fc.nat()).map(([g, n]) => {
      const text = genModelText(g);
      return text.slice(0, n % (text.length + 1));
    }),
  );
  t.notThrows(() =>
    fc.assert(
      fc.property(inputs, (text) => {
        const started = performance.now();
        const result = parseDsl(text);
        const elapsed = performance.now() - started;
        if (elapsed > 1000) throw new Error(`took ${elapsed} ms`);
        if (result.model === undefined && result.errors.length === 0) throw new Error('rejected without a diagnostic');
        if (result.errors.some((e) => e.kind === 'internal')) throw new Error(JSON.stringify(result.errors));
      }),
      fcParams(RUNS * 2),
    ),
  );
});
