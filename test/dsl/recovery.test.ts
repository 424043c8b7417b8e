/**
 * Syntax errors after the first one: every error OpenFGA's ANTLR parser
 * reports, with its message, place and order, is what `parseDsl` reports
 * (dsl/recovery.ts walks OpenFGA's grammar with ANTLR's default error
 * strategy). The reference is the lexer and parser generated from
 * openfga/language's grammar, as shipped in `@openfga/syntax-transformer`
 * (test/dsl/oracle.ts), run on the text after the comment pass.
 *
 * Texts: generated models, mutated once or twice (most are broken), token
 * soups in a relation definition and across whole files
 * (test/dsl/generators.ts), and mutated conformance models. 200 runs per
 * property locally, 2,000 with CI set; replay a failure with FC_SEED and
 * FC_PATH.
 */
import test from 'ava';
import fc from 'fast-check';
import { readdirSync, readFileSync } from 'node:fs';
import { parseDsl } from '../../dsl/index.ts';
import { lexAntlr } from '../../dsl/recovery_lexer.ts';
import { stripComments } from '../../dsl/syntax.ts';
import { CONFORMANCE_DIR } from '../helpers/shared.ts';
import { needs } from '../helpers/needs.ts';
import { definitionSoup, fcParams, fileSoup, genModelText, mutate } from './generators.ts';
import { referenceSyntaxErrors, referenceTokens, referenceTransformErrors, type ReferenceSyntaxError } from './oracle.ts';

const RUNS = process.env['CI'] ? 2000 : 200;

/** Our syntax errors as the reference lists them; undefined when the text has none (so it must have none in the reference either). */
function ours(text: string): ReferenceSyntaxError[] {
  return parseDsl(text)
    .errors.filter((e) => e.kind === 'syntax')
    .map((e): ReferenceSyntaxError => [e.message, e.line.start, e.column.start, e.column.end]);
}

/**
 * A description of the difference, if any, for a text OpenFGA's lexer or parser refuses (the texts that parse
 * are compared with its validator elsewhere). Past errors of the lexer alone the parser reads the rest as usual,
 * and OpenFGA's listener checks (a relation or condition defined twice, also kind `syntax`) add their errors to
 * its list, as `parseDsl` does: there the reference is the transformer's whole list. Past a parser error only
 * the lexer's and parser's errors are compared: OpenFGA's listener then walks the tree its parser's recovery
 * made up, which `parseDsl` does not build (docs/dsl.md, "Syntax errors").
 */
function difference(text: string): string | undefined {
  const syntax = referenceSyntaxErrors(stripComments(text));
  if (syntax.length === 0) return undefined;
  const lexerOnly = syntax.every(([message]) => message.startsWith('token recognition error'));
  const ref = (lexerOnly ? referenceTransformErrors(text) : undefined) ?? syntax;
  const mine = ours(text);
  if (JSON.stringify(ref) === JSON.stringify(mine)) return undefined;
  return `reference ${JSON.stringify(ref)}\nours      ${JSON.stringify(mine)}\ntext      ${JSON.stringify(text)}`;
}

const property = (arb: fc.Arbitrary<string>) => (t: { notThrows(f: () => void): void }) =>
  t.notThrows(() =>
    fc.assert(
      fc.property(arb, (text) => {
        const d = difference(text);
        if (d !== undefined) throw new Error(d);
      }),
      fcParams(RUNS),
    ),
  );

const mutated = fc.gen().map((g) => mutate(g, genModelText(g)));
const twiceMutated = fc.gen().map((g) => mutate(g, mutate(g, genModelText(g))));

test('mutated models: every syntax error as OpenFGA reports it', property(mutated));
test('models mutated twice: every syntax error as OpenFGA reports it', property(twiceMutated));
test('token soups in a relation definition: every syntax error as OpenFGA reports it', property(definitionSoup));
test('token soups across a whole file: every syntax error as OpenFGA reports it', property(fileSoup));

needs(test, 'shared')('mutated conformance models: every syntax error as OpenFGA reports it', (t) => {
  const dir = `${CONFORMANCE_DIR}/openfga-language/transformer`;
  const corpus = readdirSync(dir).map((d) => readFileSync(`${dir}/${d}/authorization-model.fga`, 'utf8'));
  property(fc.gen().map((g) => mutate(g, mutate(g, corpus[g(fc.integer, { min: 0, max: corpus.length - 1 })] as string))))(t);
});

test("the error lexer gives OpenFGA's lexer's tokens and errors", (t) => {
  const texts = fc.oneof(mutated, definitionSoup, fileSoup, fc.string({ unit: fc.constantFrom(...'ab_1.-/ \t\n\r\f"\'\\#:,()[]{}<>=!&|*?+%@é`rbux09e'.split('')), maxLength: 40 }));
  t.notThrows(() =>
    fc.assert(
      fc.property(texts, (text) => {
        const ref = referenceTokens(text);
        const mine = lexAntlr(text);
        const tokens = mine.tokens.slice(0, -1).map((x) => [x.type, x.text, x.line, x.column, x.hidden]);
        const errors = mine.errors.map((e) => [`token recognition error at: '${e.text}'`, e.line - 1, e.column, e.column]);
        if (JSON.stringify({ tokens: ref.tokens, errors: ref.errors }) !== JSON.stringify({ tokens, errors })) {
          throw new Error(`${JSON.stringify(text)}\nreference ${JSON.stringify(ref)}\nours ${JSON.stringify({ tokens, errors })}`);
        }
      }),
      fcParams(RUNS),
    ),
  );
});

test('named recovery steps, as OpenFGA reports them', (t) => {
  const cases: Array<[string, string]> = [
    ['a token skipped when the next one is expected (extraneous input)', 'model\n  schema 1.1\ntype user\n  relations\n    define viewer: [user]]\n'],
    ['a token assumed present when the current one can follow it (missing X at Y)', 'model\n  schema 1.1\ntype user\n  relations\n    define viewer as self\n'],
    ['a mismatch, then tokens skipped up to one that can follow a rule in progress', 'model\n  schema 1.1\ntype user\ntype org\n  relations\n    define member: [ ]\n    define reader: [user]\n'],
    ['no viable alternative, with the tokens read', 'model\n  schema 1.1\ntype user\n  relations\n    defne viewer: [user]\n'],
    ['a loop: unexpected tokens skipped and reported once', 'model\n  schema 1.1\ntype user\n  relations\n    define viewer: [user] and (a but not b but not c)\n'],
    ['characters no token starts with, reported when the parser reads past them', 'model\n  schema 1.1\ntype u@ser\n  relations\n    defne viewer: [us"er]\n'],
    ['no header at all', 'type user\n'],
  ];
  for (const [name, text] of cases) {
    const ref = referenceSyntaxErrors(stripComments(text));
    t.true(ref.length > 0, name);
    t.deepEqual(ours(text), ref, name);
  }
});

const nested = (depth: number): string => `model\n  schema 1.1\ntype user\n  relations\n    define a: ${'('.repeat(depth)}a or${')'.repeat(depth)}\n`;

test('an error inside parentheses nested 10 deep: every error as OpenFGA reports it', (t) => {
  const text = nested(10);
  t.deepEqual(ours(text), referenceSyntaxErrors(stripComments(text)));
});

test('deeper (the one known limit): our parser\'s first error, found in bounded time', (t) => {
  // Prediction follows each alternative stack on its own; past its work limit
  // (about 11 open levels) the text gets the first error our parser finds.
  for (const depth of [11, 40, 250]) {
    const started = performance.now();
    const errors = ours(nested(depth));
    t.true(performance.now() - started < 20_000, `depth ${depth}`);
    t.deepEqual(errors.map(([message, line]) => [message, line]), [["syntax error at 'or'", 4]], `depth ${depth}`);
  }
});
