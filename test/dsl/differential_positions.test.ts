/**
 * Differential test of diagnostic positions against OpenFGA's own language
 * package (`@openfga/syntax-transformer`): for each error kind our
 * diagnostics carry the reference's kind, line and columns.
 *
 * How the reference places semantic errors, and what we compare:
 * - it finds the offending name by searching the line for it (for a
 *   tupleset, for `from <name>`), so a name that occurs more than once on a
 *   line is reported at its first occurrence (a condition name even inside
 *   the relation's own name), and one it cannot find gets line -2 (or, for
 *   the schema version, line 0 column 0..3). We report where the error is,
 *   except for duplicates, which we place by the same search (OpenFGA's test
 *   data pins those positions; test/dsl/language_positions.test.ts).
 *   A reference error that marks the same name as ours on the same line, or
 *   one it could not place, counts as the same position; so does an
 *   undefined type after a wildcard restriction (`[a:*, ghost]`), which the
 *   reference marks from the relation's `:`;
 * - the server's limits (25 conditions of 25 parameters, 512-byte
 *   expressions) are checked by us and not by the reference's validator.
 * - it may report the same error twice; errors compare as sets.
 * Syntax errors: the first error is compared here; every error, with its
 * message, is compared in test/dsl/recovery.test.ts.
 *
 * Texts: generated models (most have semantic errors), generated and
 * conformance models (../shared/conformance/openfga-language) mutated, and
 * token soups (test/dsl/generators.ts).
 * The agreement per kind is logged; a fall below the floor fails the test.
 */
import test from 'ava';
import fc from 'fast-check';
import { readFileSync, readdirSync } from 'node:fs';
import { parseDsl } from '../../dsl/index.ts';
import { CONFORMANCE_DIR } from '../helpers/shared.ts';
import { needs } from '../helpers/needs.ts';
import { definitionSoup, fileSoup, genModelText, mutate } from './generators.ts';
import { reference } from './oracle.ts';

type Pos = { kind: string; line: number; start: number; end: number };

function referenceErrors(text: string): Pos[] | undefined {
  try {
    reference.validator.validateDSL(text);
    return undefined;
  } catch (e) {
    const errors = (e as { errors?: Array<{ line?: { start: number }; column?: { start: number; end: number }; metadata?: { errorType?: string } }> }).errors;
    if (!Array.isArray(errors)) return undefined;
    return errors.map((x) => ({ kind: x.metadata?.errorType ?? 'syntax', line: x.line?.start ?? -1, start: x.column?.start ?? -1, end: x.column?.end ?? -1 }));
  }
}

function ourErrors(text: string): Pos[] {
  return parseDsl(text).errors.map((d) => ({ kind: d.kind, line: d.line.start, start: d.column.start, end: d.column.end }));
}

/** Whether reference error `r` names the same place as our error `o` under the reference's name search (see above). */
function samePlace(lines: string[], r: Pos, o: Pos): boolean {
  if (r.kind !== o.kind) return false;
  if (r.line < 0 || (r.kind === 'invalid-schema' && r.line === 0 && r.start === 0)) return true;
  if (r.line !== o.line) return false;
  if (r.start === o.start && r.end === o.end) return true;
  // The reference marked another occurrence of the same name on the line.
  const line = lines[r.line] ?? '';
  const text = line.slice(o.start, o.end);
  if (text !== '' && line.slice(r.start, r.end) === text) return true;
  // An undefined type after a wildcard restriction: the reference marks from the relation's `:`.
  return r.kind === 'invalid-type' && line.charAt(r.start) === ':' && r.end - r.start === o.end - o.start;
}

/** Rules of OpenFGA's server that the reference's validator does not check (limits from the API definition). */
const SERVER_ONLY = new Set(['condition-limit']);

/** 'agree', or a description of the difference. */
function compare(text: string): { kind: string; agree: boolean; detail: string } | undefined {
  const ref = referenceErrors(text);
  if (ref === undefined || ref.length === 0) return undefined;
  const ours = ourErrors(text).filter((o) => !SERVER_ONLY.has(o.kind));
  const lines = text.split('\n');
  const kind = ref[0]!.kind;
  const show = (p: Pos[]): string => p.map((x) => `${x.kind}@${x.line}:${x.start}-${x.end}`).join(' ');
  if (kind === 'syntax') {
    const o = ours[0];
    const agree = o !== undefined && o.kind === 'syntax' && o.line === ref[0]!.line && o.start === ref[0]!.start && o.end === ref[0]!.end;
    return { kind, agree, detail: `reference ${show(ref.slice(0, 1))}, ours ${show(ours.slice(0, 1))}` };
  }
  const semanticRef = ref.filter((r) => r.kind !== 'syntax');
  const everyRefMatched = semanticRef.every((r) => ours.some((o) => samePlace(lines, r, o)));
  const everyOursMatched = ours.every((o) => semanticRef.some((r) => samePlace(lines, r, o)));
  return { kind, agree: everyRefMatched && everyOursMatched, detail: `reference ${show(ref)}\nours ${show(ours)}` };
}

const MODEL = (relations: string, extra = ''): string => `model\n  schema 1.1\ntype user\ntype group\n  relations\n    define member: [user]\ntype doc\n  relations\n${relations}${extra}`;

/** One text per error kind, with the exact position both must report. */
const KINDS: Array<[string, string, Pos]> = [
  ['undefined type', MODEL('    define viewer: [usr]\n'), { kind: 'invalid-type', line: 8, start: 20, end: 23 }],
  ['undefined relation (computed)', MODEL('    define viewer: [user] or editor\n'), { kind: 'missing-definition', line: 8, start: 29, end: 35 }],
  ['undefined relation on a type restriction', MODEL('    define viewer: [group#owner]\n'), { kind: 'invalid-relation-type', line: 8, start: 20, end: 31 }],
  ['tupleset that is not a relation', MODEL('    define viewer: member from parent\n'), { kind: 'invalid-relation-type', line: 8, start: 19, end: 37 }],
  ['relation missing on every tupleset type', MODEL('    define parent: [group]\n    define viewer: owner from parent\n'), { kind: 'invalid-relation-on-tupleset', line: 9, start: 19, end: 36 }],
  ['tupleset that is not direct', MODEL('    define parent: [group] or owner\n    define owner: [group]\n    define viewer: member from parent\n'), { kind: 'tupleuserset-not-direct', line: 10, start: 31, end: 37 }],
  ['no entry point (cycle)', MODEL('    define viewer: editor\n    define editor: viewer\n'), { kind: 'relation-no-entry-point', line: 8, start: 11, end: 17 }],
  ['duplicate type restriction', MODEL('    define viewer: [user, user]\n'), { kind: 'duplicated-error', line: 8, start: 20, end: 24 }],
  ['duplicate type', 'model\n  schema 1.1\ntype user\ntype doc\ntype user\n', { kind: 'duplicated-error', line: 2, start: 5, end: 9 }],
  ['duplicate operand', MODEL('    define viewer: [user]\n    define editor: viewer or viewer\n'), { kind: 'duplicated-error', line: 9, start: 19, end: 25 }],
  ['condition not defined', MODEL('    define viewer: [user with c]\n'), { kind: 'condition-not-defined', line: 8, start: 30, end: 31 }],
  ['condition not used', MODEL('    define viewer: [user]\n', 'condition c(x: int) {\n  x < 1\n}\n'), { kind: 'condition-not-used', line: 9, start: 10, end: 11 }],
  ['invalid schema version', 'model\n  schema 1.0\ntype user\n', { kind: 'invalid-schema', line: 1, start: 9, end: 12 }],
  ['reserved relation name', MODEL('    define this: [user]\n'), { kind: 'reserved-relation-keywords', line: 8, start: 11, end: 15 }],
  ['syntax: mixed operators', MODEL('    define viewer: [user] or member and member\n'), { kind: 'syntax', line: 8, start: 35, end: 36 }],
  ['syntax: a trailing `or`', MODEL('    define viewer: [user] or\n'), { kind: 'syntax', line: 8, start: 28, end: 29 }],
  ['syntax: a trailing `and` before the next relation', MODEL('    define viewer: [user] and\n    define x: [user]\n'), { kind: 'syntax', line: 8, start: 29, end: 34 }],
  ['syntax: a trailing `and` at the end of the file', 'model\n  schema 1.1\ntype user\n  relations\n    define a: [user]\n    define b: a and\n', { kind: 'syntax', line: 5, start: 19, end: 20 }],
  ['syntax: a misspelt `define`', MODEL('    defne viewer: [user]\n'), { kind: 'syntax', line: 8, start: 4, end: 9 }],
  ['syntax: `define` without a name', MODEL('    define viewer: [user]\n    define: [user]\n'), { kind: 'syntax', line: 9, start: 10, end: 11 }],
  ['syntax: an operator in a relation name', MODEL('    define viewer from x: [user]\n'), { kind: 'syntax', line: 8, start: 18, end: 22 }],
  ['syntax: an operator in a type restriction', MODEL('    define viewer: [user, group or member]\n'), { kind: 'syntax', line: 8, start: 32, end: 34 }],
  ['syntax: `relations` without relations', 'model\n  schema 1.1\ntype user\n  relations\ntype doc\n', { kind: 'syntax', line: 4, start: 0, end: 4 }],
  ['syntax: text before the header', ' from model\n  schema 1.1\n', { kind: 'syntax', line: 0, start: 1, end: 5 }],
  ['syntax: a condition without its closing brace (end of file)', MODEL('    define viewer: [user with c]\n', 'condition c(x: int) {\n  x < 1\n'), { kind: 'syntax', line: 11, start: 0, end: 5 }],
  ['syntax: a character no token starts with', MODEL('    define viewer: [us"er]\n'), { kind: 'syntax', line: 8, start: 22, end: 22 }],
  ['syntax: text before the header, then a bad character (the header error comes first)', '\ndefine a\nmodel\n  schema 1.1\ntype u@\n', { kind: 'syntax', line: 1, start: 0, end: 6 }],
  ['syntax: `define` after `model`', 'model\n  define schema 1.1\n', { kind: 'syntax', line: 1, start: 2, end: 8 }],
  ['syntax: `define` without blanks after it, first relation', MODEL('    define) viewer: [user]\n'), { kind: 'syntax', line: 8, start: 10, end: 11 }],
  ['syntax: `define` at the end of its line', MODEL('    define\n    define viewer: [user]\n'), { kind: 'syntax', line: 8, start: 10, end: 15 }],
  ['syntax: a relation name without `:` at the end of its line', MODEL('    define viewer\n    define editor: [user]\n'), { kind: 'syntax', line: 8, start: 17, end: 22 }],
  ['syntax: a `(` left open at the end of the line', MODEL('    define viewer: ([user]\n    define editor: [user]\n'), { kind: 'syntax', line: 8, start: 26, end: 31 }],
  ['syntax: no operand after `:`', MODEL('    define viewer: \n    define editor: [user]\n'), { kind: 'syntax', line: 8, start: 18, end: 23 }],
  ['syntax: `but not` without blanks after it, in parentheses', MODEL('    define viewer: ([user] but notmember)\n'), { kind: 'syntax', line: 8, start: 34, end: 40 }],
  ['syntax: `from` without blanks after it', MODEL('    define viewer: [user] or member from: parent\n'), { kind: 'syntax', line: 8, start: 40, end: 41 }],
  ['syntax: `from` at the end of the line', MODEL('    define viewer: member from\n'), { kind: 'syntax', line: 8, start: 30, end: 31 }],
  ['syntax: `with` without blanks after it', MODEL('    define viewer: [user with,user]\n'), { kind: 'syntax', line: 8, start: 29, end: 30 }],
  ['syntax: a stray name after a line break in a restriction list', MODEL('    define viewer: [user\n  x]\n'), { kind: 'syntax', line: 9, start: 2, end: 3 }],
  ['syntax: a restriction list left open before the next relation', MODEL('    define viewer: [user,\n    define editor: [user]\n'), { kind: 'syntax', line: 9, start: 4, end: 10 }],
  ['syntax: blanks then an operator right after `(`', MODEL('    define z: (  or a\n'), { kind: 'syntax', line: 8, start: 17, end: 19 }],
  ['syntax: a trailing `but not` after the first operand', MODEL('    define viewer: [user] but not \n'), { kind: 'syntax', line: 8, start: 33, end: 34 }],
  ['syntax: a trailing `or` after an intersection', MODEL('    define viewer: [user] and member or \n'), { kind: 'syntax', line: 8, start: 36, end: 37 }],
  ['syntax: an operator after a type name', 'model\n  schema 1.1\ntype user and \n', { kind: 'syntax', line: 2, start: 9, end: 10 }],
];

/**
 * Syntax errors placed differently, each with the reason: [name, text,
 * reference position, our position]. None is known: syntax errors are found
 * by walking OpenFGA's own grammar and tokens (dsl/recovery.ts).
 */
const SYNTAX_DIFFERENT: Array<[string, string, Pos, Pos]> = [];

for (const [name, text, refPos, ourPos] of SYNTAX_DIFFERENT) {
  test(`known syntax position difference: ${name}`, (t) => {
    t.deepEqual(referenceErrors(text)?.[0], refPos);
    t.deepEqual(ourErrors(text)[0], ourPos);
  });
}

for (const [name, text, expected] of KINDS) {
  test(`position of ${name}: the reference's and ours`, (t) => {
    const ref = referenceErrors(text) ?? [];
    t.true(ref.some((r) => r.kind === expected.kind && r.line === expected.line && r.start === expected.start && r.end === expected.end), `reference ${JSON.stringify(ref)}`);
    const ours = ourErrors(text);
    const mine = ours.find((o) => o.kind === expected.kind);
    t.truthy(mine, JSON.stringify(ours));
    t.deepEqual(mine, expected);
  });
}

/**
 * Agreement floors, just below the measured rates (see the log): with `CI`
 * set, syntax 1420/1420 and semantic 458/459; over other seeds the syntax
 * rate was 99.6 to 99.9%.
 */
const FLOORS: Record<string, number> = { syntax: 0.995, semantic: 0.995 };

needs(test, 'shared')('generated and mutated texts: the same kind and position as the reference, per error kind', (t) => {
  const texts: string[] = [];
  const corpus = readdirSync(`${CONFORMANCE_DIR}/openfga-language/transformer`).map((d) => readFileSync(`${CONFORMANCE_DIR}/openfga-language/transformer/${d}/authorization-model.fga`, 'utf8'));
  const runs = process.env['CI'] ? 600 : 150;
  fc.assert(
    fc.property(fc.gen(), (g) => {
      texts.push(genModelText(g));
      texts.push(mutate(g, genModelText(g)));
      texts.push(mutate(g, corpus[g(fc.integer, { min: 0, max: corpus.length - 1 })]!));
    }),
    { numRuns: runs, seed: 14 },
  );
  fc.assert(fc.property(fileSoup, (x) => void texts.push(x)), { numRuns: runs / 3, seed: 14 });
  fc.assert(fc.property(definitionSoup, (x) => void texts.push(x)), { numRuns: runs / 3, seed: 14 });
  const stats = new Map<string, { n: number; agree: number; example?: string }>();
  for (const text of texts) {
    const c = compare(text);
    if (c === undefined) continue;
    const s = stats.get(c.kind) ?? { n: 0, agree: 0 };
    s.n++;
    if (c.agree) s.agree++;
    else s.example ??= `${JSON.stringify(text)}\n${c.detail}`;
    stats.set(c.kind, s);
  }
  let semN = 0;
  let semAgree = 0;
  for (const [kind, s] of [...stats].sort()) {
    t.log(`${kind}: ${s.agree}/${s.n} agree (${((100 * s.agree) / s.n).toFixed(1)}%)`);
    if (kind !== 'syntax') {
      semN += s.n;
      semAgree += s.agree;
    }
  }
  const syntax = stats.get('syntax') ?? { n: 0, agree: 0 };
  t.true(syntax.n > 50 && semN > 50, 'the corpus reaches both syntax and semantic errors');
  t.true(syntax.agree / syntax.n >= FLOORS['syntax']!, `syntax ${syntax.agree}/${syntax.n}: ${syntax.example ?? ''}`);
  t.true(semAgree / semN >= FLOORS['semantic']!, `semantic ${semAgree}/${semN}`);
});
