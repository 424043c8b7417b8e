/**
 * OpenFGA's language conformance pairs (openfga/language tests/data, read in
 * place from ../shared): every transformer/ `.fga` gives its
 * `authorization-model.json`, and printing that JSON and parsing it back gives
 * the same JSON; every transformer-module/ case gives its combined model or
 * exactly its expected errors (message, file, line and column), and its
 * combined JSON prints as its `combined.fga` / `combined-sourceinfo.fga`.
 */
import test from 'ava';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { parseDslSyntax, parseModularDsl, printModel } from '../../dsl/index.ts';
import type { AuthorizationModel } from '../../engine/model.ts';
import { CONFORMANCE_DIR } from '../helpers/shared.ts';
import { loadOrSkip } from '../helpers/needs.ts';
import { normalize, reference } from './oracle.ts';

const LANG = `${CONFORMANCE_DIR}/openfga-language`;
const [TRANSFORMER, MODULES] = loadOrSkip(test, 'transformer and transformer-module: the language conformance pairs', 'shared', () => [readdirSync(`${LANG}/transformer`).sort(), readdirSync(`${LANG}/transformer-module`).sort()], [[], []]);

for (const name of TRANSFORMER) {
  const dir = `${LANG}/transformer/${name}`;
  const fga = readFileSync(`${dir}/authorization-model.fga`, 'utf8');
  const json = JSON.parse(readFileSync(`${dir}/authorization-model.json`, 'utf8')) as AuthorizationModel;

  test(`transformer ${name}: DSL gives the expected JSON`, (t) => {
    const { model, errors } = parseDslSyntax(fga);
    t.deepEqual(errors, []);
    t.is(normalize(model), normalize(json));
  });

  test(`transformer ${name}: JSON printed as DSL parses back to the same JSON`, (t) => {
    const printed = printModel(json);
    t.is(printed, reference.transformer.transformJSONToDSL(json), "the text OpenFGA's printer writes");
    const { model, errors } = parseDslSyntax(printed);
    t.deepEqual(errors, [], printed);
    t.is(normalize(model), normalize(json));
  });
}

for (const name of MODULES) {
  const dir = `${LANG}/transformer-module/${name}`;
  if (!existsSync(`${dir}/module`)) continue;
  const files = readdirSync(`${dir}/module`)
    .sort()
    .map((f) => ({ name: f, contents: readFileSync(`${dir}/module/${f}`, 'utf8') }));

  if (existsSync(`${dir}/combined.fga`)) {
    test(`transformer-module ${name}: the combined JSON prints as combined.fga and, with sources, combined-sourceinfo.fga`, (t) => {
      const json = JSON.parse(readFileSync(`${dir}/authorization-model.json`, 'utf8')) as AuthorizationModel;
      t.is(printModel(json), readFileSync(`${dir}/combined.fga`, 'utf8'));
      t.is(printModel(json, { includeSourceInformation: true }), readFileSync(`${dir}/combined-sourceinfo.fga`, 'utf8'));
    });
  }

  if (existsSync(`${dir}/authorization-model.json`)) {
    test(`transformer-module ${name}: modules combine into the expected JSON`, (t) => {
      const expected = JSON.parse(readFileSync(`${dir}/authorization-model.json`, 'utf8')) as unknown;
      const { model, errors } = parseModularDsl(files);
      t.deepEqual(errors, []);
      t.is(normalize(model), normalize(expected));
    });
  } else {
    test(`transformer-module ${name}: modules give exactly the expected errors`, (t) => {
      type Expected = { msg: string; file: string; line: unknown; column: unknown };
      const expected = (JSON.parse(readFileSync(`${dir}/expected_errors.json`, 'utf8')) as Expected[]).map((e) => ({
        message: e.msg,
        file: e.file,
        line: e.line,
        column: e.column,
      }));
      const { model, errors } = parseModularDsl(files);
      t.is(model, undefined);
      t.deepEqual(
        errors.map((e) => ({ message: e.message, file: e.file, line: e.line, column: e.column })),
        expected,
      );
    });
  }
}
