/**
 * `NaiveEvaluator` (`@latchkey/engine/testing`, the yardstick of
 * `latchkey fga bench`) agrees with the engine wherever it answers, on
 * generated stores of random cyclic models (test/dsl/generators.ts) and of
 * a model with exclusions, intersections, wildcards and usersets; and it
 * answers most queries.
 *
 * Replay a failure with FC_SEED=<seed> (and FC_PATH=<path>).
 */
import test from 'ava';
import fc from 'fast-check';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { TypeSystem, type AuthorizationModel } from '../../engine/index.ts';
import { buildUniverse, engineFor, NaiveEvaluator, objectsOf, storeArbitrary, toModel } from '../../engine/testing/index.ts';
import { fcParams, genCyclicModel } from '../dsl/generators.ts';
import { REPO_ROOT } from '../helpers/shared.ts';

const RUNS = process.env['CI'] ? 150 : 40;

function validModel(text: string): AuthorizationModel | undefined {
  try {
    const model = toModel(text);
    new TypeSystem(model, 'm');
    return model;
  } catch {
    return undefined;
  }
}

/** Compares every answer the naive evaluator gives with the engine's; returns [answered, asked]. */
async function compare(model: AuthorizationModel, tuples: Parameters<typeof engineFor>[1]): Promise<[number, number]> {
  const engine = await engineFor(model, tuples);
  const naive = new NaiveEvaluator(model, tuples);
  const universe = buildUniverse(model);
  let answered = 0;
  let asked = 0;
  for (const td of model.type_definitions ?? []) {
    for (const relation of Object.keys(td.relations ?? {})) {
      for (const object of objectsOf(universe, td.type)) {
        for (const user of universe.users) {
          asked++;
          const expected = naive.check(user, relation, object);
          if (expected === undefined) continue;
          answered++;
          const { allowed } = await engine.check({ user, relation, object });
          if (allowed !== expected) throw new Error(`check ${user} ${relation} ${object}: engine ${allowed}, naive ${expected}\n${JSON.stringify(tuples)}`);
        }
      }
    }
  }
  return [answered, asked];
}

test('the naive evaluator agrees with the engine on random cyclic models', async (t) => {
  let answered = 0;
  let asked = 0;
  await fc.assert(
    fc.asyncProperty(
      fc.gen().chain((g) => {
        const model = validModel(genCyclicModel(g));
        return fc.record({ model: fc.constant(model), store: model === undefined ? fc.constant(undefined) : storeArbitrary(model, { maxTuples: 20 }) });
      }),
      async ({ model, store }) => {
        fc.pre(model !== undefined && store !== undefined);
        const [a, b] = await compare(model!, store!.tuples);
        answered += a;
        asked += b;
      },
    ),
    fcParams(RUNS),
  );
  t.log(`${answered} of ${asked} answered`);
  t.true(answered > asked / 2, `${answered} of ${asked} answered`);
});

test('the naive evaluator agrees with the engine on a model with exclusions, intersections, wildcards and usersets', async (t) => {
  const model = toModel(readFileSync(join(REPO_ROOT, 'test', 'corpus', 'fga', 'properties', 'docs.fga'), 'utf8'));
  let answered = 0;
  let asked = 0;
  await fc.assert(
    fc.asyncProperty(storeArbitrary(model, { maxTuples: 24 }), async (store) => {
      const [a, b] = await compare(model, store.tuples);
      answered += a;
      asked += b;
    }),
    fcParams(RUNS),
  );
  t.true(answered > (asked * 9) / 10, `${answered} of ${asked} answered`);
});

test('a conditional tuple on the way leaves the answer undecided', (t) => {
  const model = toModel('model\n  schema 1.1\ntype user\ntype doc\n  relations\n    define viewer: [user, user with c]\ncondition c(x: int) {\n  x < 1\n}\n');
  const naive = new NaiveEvaluator(model, [{ user: 'user:a', relation: 'viewer', object: 'doc:1', condition: { name: 'c' } }, { user: 'user:b', relation: 'viewer', object: 'doc:1' }]);
  t.is(naive.check('user:a', 'viewer', 'doc:1'), undefined);
  t.is(naive.check('user:b', 'viewer', 'doc:1'), true);
  t.is(naive.check('user:c', 'viewer', 'doc:1'), false);
});
