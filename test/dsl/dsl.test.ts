/** Library API of dsl/: results, error codes and positioned diagnostics. */
import test from 'ava';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  loadModularModel,
  parseDsl,
  parseModManifest,
  printModel,
  transformDslToModel,
  transformModulesToModel,
  validateDsl,
} from '../../dsl/index.ts';
import { LatchkeyError } from '../../engine/errors.ts';

const HEADER = 'model\n  schema 1.1\n';

test('transformDslToModel returns the JSON model of a valid text', (t) => {
  const m = transformDslToModel(`${HEADER}type user\ntype doc\n  relations\n    define viewer: [user, user:*] or editor\n    define editor: [user]\n`);
  t.is(m.schema_version, '1.1');
  t.deepEqual(m.type_definitions?.[1]?.relations?.['viewer'], {
    union: { child: [{ this: {} }, { computedUserset: { relation: 'editor' } }] },
  });
  t.deepEqual(m.type_definitions?.[1]?.metadata?.relations?.['viewer']?.directly_related_user_types, [
    { type: 'user' },
    { type: 'user', wildcard: {} },
  ]);
});

test('transformDslToModel throws invalid_argument/invalid_dsl with every diagnostic', (t) => {
  const err = t.throws(() => transformDslToModel(`${HEADER}type doc\n  relations\n    define a: b\n    define c: [ghost]\n`));
  t.true(err instanceof LatchkeyError);
  const e = err as LatchkeyError;
  t.is(e.code, 'invalid_argument');
  t.is(e.reason, 'invalid_dsl');
  const errors = (e.details as { errors: Array<{ kind: string; message: string }> }).errors;
  t.deepEqual(errors.map((d) => d.kind), ['missing-definition', 'invalid-type']);
  t.is(e.message, errors[0]?.message ?? '');
});

test('a syntax error is reported with kind syntax, 0-based line and column', (t) => {
  const errors = validateDsl(`${HEADER}type doc\n  relations\n    define a: [user] or b and c\n`);
  t.is(errors.length, 1);
  t.is(errors[0]?.kind, 'syntax');
  t.deepEqual(errors[0]?.line, { start: 4, end: 4 });
});

test('undefined relation is positioned on the name (missing-definition)', (t) => {
  const errors = validateDsl(`${HEADER}type user\ntype doc\n  relations\n    define a: [user]\n    define b: zzz\n`);
  t.deepEqual(errors, [
    {
      kind: 'missing-definition',
      message: 'the relation `zzz` does not exist.',
      line: { start: 6, end: 6 },
      column: { start: 14, end: 17 },
    },
  ]);
});

test('a relation with no entry point and a pure loop are reported', (t) => {
  const errors = validateDsl(`${HEADER}type user\ntype doc\n  relations\n    define a: b\n    define b: a\n`);
  t.deepEqual(
    errors.map((e) => e.message),
    ['`a` is an impossible relation for `doc` (potential loop).', '`b` is an impossible relation for `doc` (potential loop).'],
  );
});

test('unused condition and undefined condition are reported', (t) => {
  const unused = validateDsl(`${HEADER}type user\ncondition c(x: int) {\n  x < 1\n}\n`);
  t.deepEqual(unused.map((e) => e.kind), ['condition-not-used']);
  const undef = validateDsl(`${HEADER}type user\ntype doc\n  relations\n    define a: [user with nope]\n`);
  t.deepEqual(undef.map((e) => e.kind), ['condition-not-defined']);
});

test('schema 1.0 and a missing schema are rejected', (t) => {
  t.deepEqual(validateDsl('model\n  schema 1.0\ntype user\n').map((e) => e.kind), ['invalid-schema']);
  t.deepEqual(validateDsl('module m\ntype user\n').map((e) => e.kind), ['schema-version-required']);
});

test('the tupleset of from must be a direct relation', (t) => {
  const errors = validateDsl(`${HEADER}type user\ntype doc\n  relations\n    define p: [doc] or q\n    define q: [doc]\n    define v: [user] or v from p\n`);
  t.true(errors.some((e) => e.kind === 'tupleuserset-not-direct'));
});

test('duplicate relation in a type is a syntax-level error', (t) => {
  const errors = validateDsl(`${HEADER}type user\ntype doc\n  relations\n    define a: [user]\n    define a: [user]\n`);
  t.deepEqual(errors.map((e) => e.message), ["'a' is already defined in 'doc'"]);
});

test('comments are stripped as OpenFGA does; a # without a space before it is an error', (t) => {
  t.deepEqual(validateDsl(`# top\n${HEADER}type user # trailing\n  # whole line\ntype doc\n  relations\n    define a: [user] # x\n`), []);
  t.is(validateDsl(`${HEADER}type user\ntype doc\n  relations\n    define a: [user]#x\n`)[0]?.kind, 'syntax');
});

test('reserved words cannot be names but model/type/schema can', (t) => {
  t.deepEqual(validateDsl(`${HEADER}type model\ntype type\n  relations\n    define schema: [model]\n`), []);
  t.is(validateDsl(`${HEADER}type define\n`)[0]?.kind, 'syntax');
  t.is(validateDsl(`${HEADER}type self\n`)[0]?.kind, 'reserved-type-keywords');
});

test('conditions keep their CEL text and parameter types', (t) => {
  const m = transformDslToModel(
    `${HEADER}type user\ntype doc\n  relations\n    define a: [user with c]\ncondition c(x: int, m: map<string>, l: list<ipaddress>) {\n  x < 10 && "k" in m // why\n}\n`,
  );
  t.deepEqual(m.conditions?.['c'], {
    name: 'c',
    expression: 'x < 10 && "k" in m',
    parameters: {
      x: { type_name: 'TYPE_NAME_INT' },
      m: { type_name: 'TYPE_NAME_MAP', generic_types: [{ type_name: 'TYPE_NAME_STRING' }] },
      l: { type_name: 'TYPE_NAME_LIST', generic_types: [{ type_name: 'TYPE_NAME_IPADDRESS' }] },
    },
  });
});

test('printModel refuses a direct assignment that is not the first operand', (t) => {
  const err = t.throws(() =>
    printModel({
      schema_version: '1.1',
      type_definitions: [
        {
          type: 'doc',
          relations: { a: { union: { child: [{ computedUserset: { relation: 'b' } }, { this: {} }] } } },
          metadata: { relations: { a: { directly_related_user_types: [{ type: 'doc' }] } } },
        },
      ],
    }),
  ) as LatchkeyError;
  t.is(err.code, 'invalid_argument');
  t.is(err.reason, 'unsupported_dsl_nesting');
});

test('parseDsl never throws, even on non-text input', (t) => {
  t.notThrows(() => parseDsl(undefined as unknown as string));
  t.true(parseDsl('\u0000\uffff').errors.length > 0);
});

test('fga.mod manifests are read, and modules load from disk', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'dsl-mod-'));
  writeFileSync(join(dir, 'fga.mod'), "schema: '1.2'\ncontents:\n  - core.fga\n  - docs.fga\n");
  writeFileSync(join(dir, 'core.fga'), 'module core\n\ntype user\n');
  writeFileSync(join(dir, 'docs.fga'), 'module docs\n\ntype doc\n  relations\n    define viewer: [user]\n\nextend type user\n  relations\n    define self_ish: [user]\n');
  const m = loadModularModel(join(dir, 'fga.mod'));
  t.is(m.schema_version, '1.2');
  t.deepEqual(m.type_definitions?.map((td) => td.type), ['user', 'doc']);
  t.deepEqual(m.type_definitions?.[0]?.metadata?.relations?.['self_ish']?.source_info, { file: 'docs.fga' });
  const err = t.throws(() => loadModularModel(join(dir, 'missing.mod'))) as LatchkeyError;
  t.is(err.code, 'not_found');
});

test('fga.mod errors: schema, contents, extensions and traversal', (t) => {
  t.deepEqual(parseModManifest("contents:\n  - a.fga\n").errors.map((e) => e.message), ['missing schema field']);
  t.deepEqual(parseModManifest("schema: '1.1'\ncontents: [a.fga]\n").errors.map((e) => e.message), [
    'unsupported schema version, fga.mod only supported in version `1.2`',
  ]);
  t.deepEqual(parseModManifest("schema: '1.2'\n").errors.map((e) => e.message), ['missing contents field']);
  t.is(parseModManifest("schema: '1.2'\ncontents:\n  - a.txt\n").errors[0]?.message, 'contents items should use fga file extension, got a.txt');
  t.is(parseModManifest("schema: '1.2'\ncontents:\n  - ../a.fga\n").errors[0]?.message, 'invalid contents item ../a.fga');
});

test('transformModulesToModel throws invalid_dsl with file-tagged diagnostics', (t) => {
  const err = t.throws(() => transformModulesToModel([{ name: 'a.fga', contents: 'model\n  schema 1.1\ntype user\n' }])) as LatchkeyError;
  t.is(err.reason, 'invalid_dsl');
  t.deepEqual((err.details as { errors: Array<{ file?: string; message: string }> }).errors.map((e) => [e.file, e.message]), [
    ['a.fga', 'file is not a module'],
  ]);
});

test("OpenFGA's condition limits are enforced: count, parameters, expression size, name length", (t) => {
  const model = (conds: string[], uses: string[]): string =>
    `${HEADER}type user\ntype doc\n  relations\n    define a: [${uses.map((c) => `user with ${c}`).join(', ')}]\n${conds.join('\n')}\n`;
  const names = Array.from({ length: 26 }, (_, i) => `c${i}`);
  const many = validateDsl(model(names.map((n) => `condition ${n}(x: int) {\n  x < 1\n}`), names));
  t.deepEqual(many.map((e) => e.kind), ['condition-limit']);
  t.is(many[0]?.line.start, 6 + 25 * 3);

  const params = Array.from({ length: 26 }, (_, i) => `p${i}: int`).join(', ');
  t.deepEqual(validateDsl(model([`condition c(${params}) {\n  p0 < 1\n}`], ['c'])).map((e) => e.kind), ['condition-limit']);

  const long = `x < 1${' && x < 1'.repeat(70)}`;
  t.deepEqual(validateDsl(model([`condition c(x: int) {\n  ${long}\n}`], ['c'])).map((e) => e.kind), ['condition-limit']);

  const name = 'c'.repeat(51);
  t.deepEqual(validateDsl(model([`condition ${name}(x: int) {\n  x < 1\n}`], [name])).map((e) => e.kind), ['invalid-name']);
  t.deepEqual(validateDsl(model(['condition c(x: int) {\n  x < 1\n}'], ['c'])), []);
});

test('pathologically deep nesting is a syntax error, not a crash', (t) => {
  const deep = (n: number): string => `${HEADER}type user\ntype doc\n  relations\n    define a: [user]\n    define b: ${'('.repeat(n)}a${')'.repeat(n)}\n`;
  t.deepEqual(validateDsl(deep(200)), []);
  const errors = validateDsl(deep(5000));
  t.is(errors.length, 1);
  t.is(errors[0]?.kind, 'syntax');
});

test('syntax errors of several declarations are reported in one run, as OpenFGA recovers from each', (t) => {
  const text = `${HEADER}type user\ntype doc\n  relations\n    define a: [user] or\n    define b: [user]]\n    define c: [user]\ntype x y\n`;
  const errors = validateDsl(text);
  // What @openfga/syntax-transformer reports for this text.
  t.deepEqual(
    errors.map((e) => [e.kind, e.message, e.line.start, e.column.start, e.column.end]),
    [
      ['syntax', "mismatched input '\\n    ' expecting WHITESPACE", 5, 23, 28],
      ['syntax', "extraneous input ']' expecting {<EOF>, NEWLINE}", 6, 20, 21],
      ['syntax', "no viable alternative at input '\\n    define'", 7, 4, 10],
    ],
  );
});
