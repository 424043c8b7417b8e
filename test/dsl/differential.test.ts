/**
 * Differential tests against OpenFGA's own language package
 * (`@openfga/syntax-transformer`): both must accept and reject the same texts
 * and produce the same JSON model.
 *
 * Known difference, on purpose: the reference validator crashes with a
 * TypeError on a tuple-to-userset whose tupleset restriction carries a
 * condition (`define parent: [folder with c]` + `viewer from parent`). The
 * OpenFGA server accepts such models (abac_tests.yaml
 * `tuple_to_userset_with_condition`, `simple_ttu_with_condition`), so we accept
 * them. The reference also crashes when a module file extends a type and
 * neither the type nor the extension defines a relation; the server merges
 * them into a type without relations, and so do we. The tests below check
 * that every reference crash is of one of these two kinds.
 *
 * 200 runs per property locally, 2,000 with CI set; replay a failure with
 * FC_SEED=<seed> (and FC_PATH=<path>).
 */
import test from 'ava';
import fc from 'fast-check';
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';
import { parseDsl, parseModularDsl, validateDsl } from '../../dsl/index.ts';
import { CONFORMANCE_DIR } from '../helpers/shared.ts';
import { needs } from '../helpers/needs.ts';
import { fcParams, genModelText, genModuleFiles } from './generators.ts';
import { disagreement, extendsRelationlessType, hasConditionalTupleset, normalize, oracle, reference } from './oracle.ts';

const RUNS = process.env['CI'] ? 2000 : 200;

function yamlModels(file: string): Array<{ name: string; model: string }> {
  const doc = parse(readFileSync(`${CONFORMANCE_DIR}/openfga/${file}`, 'utf8')) as {
    tests: Array<{ name: string; stages: Array<{ model?: string }> }>;
  };
  return doc.tests.flatMap((t) => t.stages.flatMap((s, i) => (s.model ? [{ name: `${t.name}#${i}`, model: s.model }] : [])));
}

for (const file of ['consolidated_1_1_tests.yaml', 'abac_tests.yaml']) {
  needs(test, 'shared')(`every model in ${file} gets the reference's verdict and JSON`, (t) => {
    const models = yamlModels(file);
    t.true(models.length > 20);
    for (const { name, model } of models) t.is(disagreement(model), undefined, name);
  });
}

test('a conditional tupleset, which crashes the reference, is accepted as the OpenFGA server does', (t) => {
  const text = `model
  schema 1.1
type user
type folder
  relations
    define viewer: [user]
type doc
  relations
    define parent: [folder with x_less_than]
    define viewer: viewer from parent
condition x_less_than(x: int) {
  x < 100
}
`;
  t.is(oracle(text).verdict, 'crashed');
  const ours = parseDsl(text);
  t.deepEqual(ours.errors, []);
  t.truthy(ours.model);
});

test('generated models get the reference verdict and JSON', (t) => {
  let accepted = 0;
  fc.assert(
    fc.property(fc.gen(), (g) => {
      const text = genModelText(g);
      const d = disagreement(text);
      if (d !== undefined) throw new Error(`${d}\n--- text ---\n${text}`);
      if (parseDsl(text).model) accepted++;
    }),
    fcParams(RUNS),
  );
  t.log(`accepted ${accepted} of ${RUNS}`);
  t.true(accepted > 0);
});

/** Counterexamples the generators found once, kept as fixed cases. */
const FOUND: Array<[string, string]> = [
  ['a line holding only a // comment (two line breaks meet)', 'model\n  schema 1.1\ntype user\n//x\n\n'],
  [
    'a condition body without its } swallows the next condition, parameter-mode tokens included',
    'model\n  schema 1.1\ntype user\ntype doc\n  relations\n    define a: [user with inside]\n\ncondition inside(x: int) {\n  x < 1\n\ncondition other(y: list<string>) {\n  y == y\n}\n',
  ],
];

for (const [name, text] of FOUND) {
  test(`found case: ${name}`, (t) => {
    t.is(disagreement(text), undefined);
  });
}

test('names that are Object.prototype members: the reference is wrong, we follow the OpenFGA server', (t) => {
  // The reference looks relations up in plain objects, so `constructor` counts
  // as a defined relation and `__proto__` replaces the relations' prototype
  // (the relation disappears from its JSON). The server treats both as
  // ordinary names.
  const inherited = 'model\n  schema 1.1\ntype user\ntype doc\n  relations\n    define viewer: [user] or constructor\n';
  t.is(oracle(inherited).verdict, 'accepted');
  t.deepEqual(validateDsl(inherited).map((e) => e.kind), ['missing-definition']);

  const proto = 'model\n  schema 1.1\ntype user\ntype doc\n  relations\n    define __proto__: [user]\n    define viewer: __proto__\n';
  const ours = parseDsl(proto);
  t.deepEqual(ours.errors, []);
  t.deepEqual(Object.keys(ours.model?.type_definitions?.[1]?.relations ?? {}), ['__proto__', 'viewer']);
  t.true(JSON.stringify(ours.model).includes('"__proto__":{"this":{}}'));
});

test('found case: extending a type without relations by an extension without relations (the reference crashes; we merge)', (t) => {
  const files = [
    { name: 'f0.fga', contents: 'module m0\n\n\n  # a comment\ntype a.b # note\n' },
    { name: 'f1.fga', contents: 'module m1\n\n\n  # a comment\nextend type a.b # note\n' },
  ];
  t.throws(() => reference.transformer.transformModuleFilesToModel(files, '1.2'), { instanceOf: TypeError });
  const ours = parseModularDsl(files);
  t.deepEqual(ours.errors, []);
  t.deepEqual(ours.model?.type_definitions?.map((td) => [td.type, Object.keys(td.relations ?? {}).length]), [['a.b', 0]]);
  t.true(extendsRelationlessType(files, ours.model));
});

test('generated module files combine as the reference combines them (verdict and JSON)', (t) => {
  let accepted = 0;
  t.notThrows(() =>
    fc.assert(
      fc.property(fc.gen(), (g) => {
        const files = genModuleFiles(g);
        let ref: unknown;
        let refError: unknown;
        try {
          ref = reference.transformer.transformModuleFilesToModel(files, '1.2');
        } catch (e) {
          refError = e;
        }
        const ours = parseModularDsl(files);
        if (ours.model) accepted++;
        const where = `\n--- files ---\n${JSON.stringify(files)}`;
        if (refError instanceof TypeError) {
          if (ours.model && !hasConditionalTupleset(ours.model) && !extendsRelationlessType(files, ours.model)) throw new Error(`reference crashed: ${refError.message}${where}`);
          return;
        }
        if (refError === undefined && !ours.model) throw new Error(`reference accepts, we reject: ${JSON.stringify(ours.errors)}${where}`);
        if (refError !== undefined && ours.model) throw new Error(`reference rejects, we accept${where}`);
        if (ours.model && normalize(ours.model) !== normalize(ref)) throw new Error(`models differ${where}`);
      }),
      fcParams(RUNS / 2),
    ),
  );
  t.log(`accepted ${accepted} of ${RUNS / 2}`);
  // Valid combinations are rarer here (every file must be valid and fit the
  // others); the conformance module cases pin valid ones.
});
