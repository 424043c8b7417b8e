/**
 * `@latchkey/engine/testing` as a library: `assertModelProperty` throws the
 * shrunk counterexample of a planted mistake (as a store-test case);
 * equivalent formulations of a model pass `equivalent` on 1,000 stores;
 * `diffModels` counts and shows what a change gains and loses.
 */
import test from 'ava';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { assertModelProperty, checkModelProperty, diffModels, ModelPropertyError, storeTestCase, toModel } from '../../engine/testing/index.ts';
import { REPO_ROOT } from '../helpers/shared.ts';

const DIR = join(REPO_ROOT, 'test', 'corpus', 'fga', 'properties');
const DOCS = readFileSync(join(DIR, 'docs.fga'), 'utf8');
const model = (file: string): string => readFileSync(join(DIR, file), 'utf8');

const PLANTED = `model
  schema 1.1
type user
type document
  relations
    define blocked: [user]
    define editor: [user]
    define viewer: ([user] or editor) but not blocked
`;

test('assertModelProperty throws the shrunk counterexample, with the check, the seed and a store-test case', async (t) => {
  for (const seed of [1, 2, 3]) {
    const err = await t.throwsAsync(assertModelProperty(PLANTED, { kind: 'implies', if: 'document#editor', then: 'document#viewer' }, { seed, numRuns: 300, name: 'editors view' }), { instanceOf: ModelPropertyError });
    const ce = (err as ModelPropertyError).result.counterexample!;
    // The two tuples that cause it: the user is an editor, and blocked.
    t.is(ce.tuples.length, 2, `seed ${seed}`);
    t.deepEqual(ce.tuples.map((x) => x.relation).sort(), ['blocked', 'editor']);
    t.like(ce.check, { relation: 'viewer', expected: true, actual: false, user: ce.tuples[0]!.user, object: ce.tuples[0]!.object });
    t.regex(err!.message, new RegExp(`seed ${seed}, shrunk \\d+ times to 2 tuples`));
    t.regex(err!.message, /^ {2}expected: true\n {2}actual: {3}false$/m);
    // The case is a store file: YAML with the model, the tuples and the failing check.
    const doc = parseYaml(err!.message.slice(err!.message.indexOf('\n# '))) as { model: string; tuples: unknown[]; tests: { check: { user: string; object: string; assertions: Record<string, boolean> }[] }[] };
    t.is(doc.tuples.length, 2);
    t.deepEqual(toModel(doc.model), toModel(PLANTED));
    t.deepEqual(doc.tests[0]!.check[0], { user: ce.check!.user, object: ce.check!.object, assertions: { viewer: true } });
  }
});

test('a property that holds resolves to its result', async (t) => {
  const r = await assertModelProperty(DOCS, { kind: 'excludes', relations: ['document#blocked', 'document#can_read'] }, { seed: 9, numRuns: 100 });
  t.true(r.ok);
  t.is(r.numRuns, 100);
  t.is(r.seed, 9);
});

for (const [what, property] of [
  ['a refactored model (the same answers written another way)', { kind: 'equivalent', model: toModel(model('docs_refactored.fga')) }],
  [
    'a model whose exclusion and intersection are rewritten',
    {
      kind: 'equivalent',
      model: toModel(DOCS.replace('define can_read: viewer but not blocked', 'define can_read: (viewer but not blocked) and viewer').replace('define can_share: owner and can_read', 'define can_share: owner and (viewer but not blocked)')),
    },
  ],
] as const) {
  test(`equivalent formulations pass equivalent on 1,000 stores: ${what}`, async (t) => {
    const r = await checkModelProperty(toModel(DOCS), property, { seed: 1000, numRuns: 1000 });
    t.true(r.ok, r.counterexample?.reason);
    t.is(r.numRuns, 1000);
  });
}

test('equivalent relations of one model pass on 1,000 stores, and a near miss is found', async (t) => {
  const text = `${DOCS}    define can_share_2: can_read and owner\n    define can_share_3: owner and viewer\n`;
  const m = toModel(text);
  const same = await checkModelProperty(m, { kind: 'equivalent', relations: ['document#can_share', 'document#can_share_2'] }, { seed: 7, numRuns: 1000 });
  t.true(same.ok, same.counterexample?.reason);
  const near = await checkModelProperty(m, { kind: 'equivalent', relations: ['document#can_share', 'document#can_share_3'] }, { seed: 7, numRuns: 1000 });
  t.false(near.ok);
  t.is(near.counterexample!.tuples.length, 2);
  t.like(near.counterexample!.check, { relation: 'can_share_3', expected: false, actual: true });
});

test('diffModels: the changed relation with its counts and shrunk example; the others unchanged', async (t) => {
  const impact = await diffModels(toModel(DOCS), toModel(model('docs_changed.fga')), { seed: 4, numRuns: 200 });
  t.is(impact.numRuns, 200);
  const changed = impact.relations.filter((r) => r.gained + r.lost > 0);
  t.deepEqual(changed.map((r) => r.relation), ['document#can_share']);
  const c = changed[0]!;
  t.true(c.gained > 0 && c.storesGaining > 0 && c.lost === 0);
  t.is(c.example?.tuples.length, 2);
  t.like(c.example?.check, { relation: 'can_share', expected: false, actual: true });
});

test('a predicate that names no check: the counterexample says why, and its case pins the store', async (t) => {
  const r = await checkModelProperty(toModel(PLANTED), { kind: 'predicate', predicate: (s) => (s.tuples.length < 3 ? true : 'three tuples or more') }, { seed: 5, numRuns: 100 });
  t.false(r.ok);
  t.is(r.counterexample!.reason, 'three tuples or more');
  t.is(r.counterexample!.tuples.length, 3, 'shrunk to the smallest store that breaks it');
  t.is(r.counterexample!.check, undefined);
  t.regex(storeTestCase(r.counterexample!, 'small stores'), /^ {4}check: \[\]$/m);
});

test('properties that do not fit the model are invalid_argument with reason invalid_property', async (t) => {
  const m = toModel(PLANTED);
  for (const property of [
    { kind: 'implies', if: 'document#editor', then: 'document#owner' },
    { kind: 'implies', if: 'document', then: 'document#viewer' },
    { kind: 'excludes', relations: ['document#editor'] },
    { kind: 'bounded', relation: 'document#viewer', pattern: '(' },
    { kind: 'frobnicate' },
  ]) {
    const err = await t.throwsAsync(checkModelProperty(m, property as never, { numRuns: 1 }));
    t.is((err as { reason?: string }).reason, 'invalid_property', JSON.stringify(property));
  }
});
