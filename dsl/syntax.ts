/**
 * Text → CST → model for one DSL file, with syntax diagnostics.
 * Never throws: lexer and parser failures become `syntax` diagnostics.
 */
import type { IRecognitionException, IToken } from 'chevrotain';
import { diagnostic, type DslDiagnostic } from './diagnostics.ts';
import { dslParser, parseTail, parseTokens } from './parser.ts';
import { Condition, DefineLine, dslLexer, Extend, LParen, Newline, RParen, Type, Whitespace } from './tokens.ts';
import { visitFile, spanOf, type VisitedFile } from './visitor.ts';

/**
 * OpenFGA's comment pre-pass (openfga/language `parseDSL`): a line whose first
 * non-blank character is `#` becomes empty; on other lines everything from
 * the first ` #` (space, hash) is cut and trailing blanks are trimmed. Lines
 * are split on `\n` only, so positions are unchanged before each cut.
 */
export function stripComments(text: string): string {
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] as string;
    if (line.trimStart().startsWith('#')) {
      lines[i] = '';
      continue;
    }
    const cut = line.indexOf(' #');
    lines[i] = (cut === -1 ? line : line.slice(0, cut)).trimEnd();
  }
  return lines.join('\n');
}

/** Parses one file. `visited` is undefined only when the parser could not build a tree. */
export type SyntaxResult = { visited: VisitedFile | undefined; errors: DslDiagnostic[] };

/** Token text as OpenFGA shows it in messages: line breaks and tabs escaped. */
function display(text: string): string {
  return text.replace(/\n/g, '\\n').replace(/\r/g, '\\r').replace(/\t/g, '\\t');
}

/** How OpenFGA names a token in messages: its literal in quotes, or its symbolic name. */
const EXPECTED_NAMES: Record<string, string> = {
  EOF: '<EOF>',
  Name: 'IDENTIFIER',
  Ident: 'IDENTIFIER',
  LBRACKET: "'['",
  RPRACKET: "']'",
  LPAREN: "'('",
  RPAREN: "')'",
  CONDITION_PARAMS_END: "')'",
  LBRACE: "'{'",
  RBRACE: "'}'",
  COLON: "':'",
  COLON_WS: "':'",
  COMMA: "','",
  COMMA_WS: "','",
  STAR: "'*'",
  HASH: "'#'",
  LESS: "'<'",
  GREATER: "'>'",
  OR_OP: "'or'",
  AND_OP: "'and'",
  BUT_NOT_OP: "'but not'",
  FROM_OP: "'from'",
  WITH_OP: "'with'",
  DEFINE_LINE: "'define'",
  MODEL: "'model'",
  MODULE: "'module'",
  SCHEMA: "'schema'",
  TYPE: "'type'",
  EXTEND: "'extend'",
  RELATIONS: "'relations'",
  CONDITION: "'condition'",
};

/** The offending token as OpenFGA shows it: combined tokens by their first part. */
function describe(t: IToken): string {
  switch (t.tokenType.name) {
    case 'EOF':
      return '<EOF>';
    case 'OR_OP':
    case 'AND_OP':
    case 'BUT_NOT_OP':
    case 'FROM_OP':
    case 'WITH_OP':
      return display(/^[ \t\f]+/.exec(t.image)?.[0] ?? t.image);
    case 'COLON_WS':
    case 'COMMA_WS':
      return t.image.charAt(0);
    default:
      return display(t.image);
  }
}

/**
 * The tokens chevrotain expected (from its message: `--> T <--` for a
 * mismatched token, `[T, ...]` sequences for no viable alternative), named as
 * OpenFGA names them: ` expecting X` or ` expecting {X, Y}`.
 */
function expecting(e: IRecognitionException): string {
  const names: string[] = [];
  for (const m of e.message.matchAll(/--> (\w+) <--|\[(\w+)(?:, \w+)*\]/g)) {
    const raw = m[1] ?? m[2];
    if (raw === undefined) continue;
    const name = EXPECTED_NAMES[raw] ?? raw;
    if (!names.includes(name)) names.push(name);
  }
  if (names.length === 0) return '';
  return names.length === 1 ? ` expecting ${names[0]}` : ` expecting {${names.join(', ')}}`;
}

function syntaxDiagnostic(e: IRecognitionException, tokens: IToken[], text: string): DslDiagnostic {
  const t = e.token;
  if (t.tokenType.name === 'EOF' || Number.isNaN(t.startOffset)) {
    // ANTLR's EOF token sits after the last character, and its text '<EOF>' gives the marked length.
    const lines = text.split(/\r\n|\r|\n/u);
    const span = { line: lines.length - 1, column: (lines[lines.length - 1] ?? '').length, length: '<EOF>'.length };
    return diagnostic('syntax', `mismatched input '<EOF>'${expecting(e)}`, span);
  }
  if (t.tokenType === DefineLine) {
    // One token here, three in OpenFGA (line break, `define`, blanks): report
    // it as OpenFGA would, at the `define` keyword.
    const at = t.image.lastIndexOf('define');
    const breaks = t.image.slice(0, at);
    const lastBreak = breaks.lastIndexOf('\n');
    const span = {
      line: (t.startLine ?? 1) - 1 + (breaks.match(/\n/g)?.length ?? 0),
      column: lastBreak === -1 ? (t.startColumn ?? 1) - 1 + at : at - lastBreak - 1,
      length: 'define'.length,
    };
    return diagnostic('syntax', `no viable alternative at input '${display(breaks)}define'`, span);
  }
  const index = tokens.indexOf(t);
  const moved = antlrOffending(tokens, index, expecting(e));
  if (moved !== undefined && moved.viable) {
    const span = spanOf(moved.token);
    return diagnostic('syntax', `no viable alternative at input '${display(t.image)}${describe(moved.token)}'`, span);
  }
  if (moved !== undefined) {
    const shown =
      moved.skip > 0
        ? moved.token.image.slice(moved.skip).replace(/[ \t\f]+$/u, '')
        : moved.length !== undefined
          ? moved.token.image.slice(0, moved.length)
          : moved.token.tokenType.name === 'COLON_WS' || moved.token.tokenType.name === 'COMMA_WS'
            ? moved.token.image.charAt(0)
            : moved.token.image;
    const span = spanOf(moved.token);
    span.column += moved.skip;
    span.length = shown.length;
    return diagnostic('syntax', `mismatched input '${display(shown)}'${moved.expecting ?? expecting(e)}`, span);
  }
  const prev = index > 0 ? tokens[index - 1] : undefined;
  // OpenFGA reports a declaration that cannot start after a line break as
  // "no viable alternative at input '<line break><token>'" (module conformance
  // case 01, syntax-error.fga); other failures as a mismatched input.
  // After `model` only `schema` can follow: a plain match in ANTLR, not a decision.
  const message =
    prev && prev.tokenType === Newline && expecting(e) !== " expecting 'schema'"
      ? `no viable alternative at input '${display(prev.image)}${describe(t)}'`
      : `mismatched input '${describe(t)}'${expecting(e)}`;
  const span = spanOf(t);
  span.length = describe(t).replace(/\\[nrt]/g, ' ').length;
  return diagnostic('syntax', message, span);
}

const COMBINED_OPERATORS = new Set(['OR_OP', 'AND_OP', 'BUT_NOT_OP', 'FROM_OP', 'WITH_OP']);
const BARE_OPERATORS = new Set(['OR', 'AND']);

/**
 * Where OpenFGA's ANTLR parser stops when ours stops at `tokens[index]`, if
 * elsewhere. Its grammar has blanks and operator keywords as separate tokens
 * and optional blanks before many of them, so it reads past blanks that ours
 * keeps in one token with the operator:
 * - an operator token with its blanks (` from `) where a `:` or `)` is
 *   due, which ANTLR may find after optional blanks: at the keyword;
 * - blanks before a bare `and`/`or` (at the end of a line): it enters the
 *   operator loop, takes the keyword and stops at the token after it;
 * - a line after `relations` that does not start with `define`: it predicts
 *   across the line break and finds no alternative at the line's first token.
 * Measured over mutated and generated models in
 * test/dsl/differential_positions.test.ts.
 */
type Moved = { token: IToken; skip: number; length?: number; expecting?: string; viable?: false } | { token: IToken; viable: true };

function antlrOffending(tokens: IToken[], index: number, expected: string): Moved | undefined {
  const t = tokens[index];
  if (t === undefined) return undefined;
  const prev = tokens[index - 1];
  const next = tokens[index + 1];
  if (t.tokenType === Newline && expected === " expecting 'define'" && next !== undefined) return { token: next, viable: true };
  if (COMBINED_OPERATORS.has(t.tokenType.name) && (index === 0 || ["':'", "')'", "']'", 'IDENTIFIER', 'WHITESPACE'].some((x) => expected === ` expecting ${x}`))) {
    return { token: t, skip: /^[ \t\f]*/u.exec(t.image)?.[0].length ?? 0 };
  }
  if (t.tokenType === Whitespace) {
    const after = tokens[index + 2];
    if (expected === ' expecting <EOF>' && next !== undefined && BARE_OPERATORS.has(next.tokenType.name) && after !== undefined) {
      // ANTLR's line break token ends before `define`.
      return { token: after, skip: 0, length: after.tokenType === DefineLine ? after.image.lastIndexOf('define') : after.image.length, expecting: ' expecting WHITESPACE' };
    }
    // Blanks before the header are optional in ANTLR's grammar.
    if (index === 0 && next !== undefined) return { token: next, skip: 0 };
  }
  // `define` must be followed by blanks: ANTLR takes the keyword and stops at what follows it.
  if (t.image === 'define' && prev?.tokenType === Newline && next !== undefined && next.tokenType !== Newline) return { token: next, skip: 0, expecting: ' expecting WHITESPACE' };
  // A line break after a trailing `or`/`and`: ANTLR is in the operator loop, waiting for blanks.
  if (t.tokenType === DefineLine && prev !== undefined && BARE_OPERATORS.has(prev.tokenType.name)) {
    return { token: t, skip: 0, length: t.image.lastIndexOf('define'), expecting: ' expecting WHITESPACE' };
  }
  return undefined;
}

/** At most this many syntax errors are reported for one file. */
const MAX_SYNTAX_ERRORS = 20;

function isSyncPoint(tokens: IToken[], i: number): boolean {
  const t = tokens[i] as IToken;
  if (t.tokenType === DefineLine) return true;
  if (t.tokenType !== Newline) return false;
  const next = tokens[i + 1]?.tokenType;
  return next === Type || next === Extend || next === Condition;
}

/**
 * The parser stops at the first error; to report the errors of later
 * declarations too, parsing resumes at the next line that starts a relation,
 * type or condition (OpenFGA's parser recovers and reports on as well).
 */
function laterSyntaxErrors(first: IRecognitionException, tokens: IToken[], text: string): DslDiagnostic[] {
  const out = [syntaxDiagnostic(first, tokens, text)];
  let at = tokens.indexOf(first.token);
  while (at !== -1 && out.length < MAX_SYNTAX_ERRORS) {
    let sync = at + 1;
    while (sync < tokens.length && !isSyncPoint(tokens, sync)) sync++;
    if (sync >= tokens.length) break;
    parseTail(tokens.slice(sync));
    const e = dslParser.errors[0];
    if (e === undefined) break;
    out.push(syntaxDiagnostic(e, tokens, text));
    at = tokens.indexOf(e.token);
  }
  return out;
}

/**
 * The parser is recursive; a few hundred nested parentheses are far beyond
 * any real model, and a limit keeps pathological input from exhausting the
 * stack (it overflows somewhere above 600 levels).
 */
export const MAX_NESTING = 256;

function firstTooDeep(tokens: IToken[]): IToken | undefined {
  let depth = 0;
  for (const t of tokens) {
    if (t.tokenType === LParen) {
      if (++depth > MAX_NESTING) return t;
    } else if (t.tokenType === RParen) depth--;
  }
  return undefined;
}

/**
 * Lexer and parser errors in the order OpenFGA's ANTLR parser reports them.
 * Its lexer runs as the parser asks for tokens, so a bad character is
 * reported before a parser error only when it lies before the end of the
 * token the parser stopped at; later ones come after it
 * (test/dsl/differential_positions.test.ts).
 */
function inReportOrder(lexErrors: DslDiagnostic[], parseErrors: DslDiagnostic[]): DslDiagnostic[] {
  const first = parseErrors[0];
  if (first === undefined) return lexErrors;
  // ANTLR finds no viable alternative only after reading ahead as far as its alternatives reach.
  const lookahead = first.message.startsWith('no viable alternative');
  const before = (e: DslDiagnostic): boolean => lookahead || e.line.start < first.line.end || (e.line.start === first.line.end && e.column.start <= first.column.end);
  return [...lexErrors.filter(before), ...parseErrors, ...lexErrors.filter((e) => !before(e))];
}

/**
 * Lexes, parses and visits one DSL text. With `track` false the model is
 * built without recording source positions (see `visitFile`).
 */
export function parseSyntax(text: string, track = true): SyntaxResult {
  const cleaned = stripComments(text);
  const lexed = dslLexer.tokenize(cleaned);
  const errors: DslDiagnostic[] = [];
  for (const e of lexed.errors) {
    const bad = cleaned.slice(e.offset, e.offset + e.length);
    errors.push(
      diagnostic('syntax', `token recognition error at: '${display(bad)}'`, {
        line: (e.line ?? 1) - 1,
        column: (e.column ?? 1) - 1,
        length: 0,
      }),
    );
  }
  const tooDeep = firstTooDeep(lexed.tokens);
  if (tooDeep !== undefined) {
    errors.push(
      diagnostic('syntax', `parentheses nested more than ${MAX_NESTING} levels deep`, spanOf(tooDeep)),
    );
    return { visited: undefined, errors };
  }
  const cst = parseTokens(lexed.tokens);
  const parseErrors = dslParser.errors;
  if (parseErrors.length > 0) {
    return { visited: undefined, errors: inReportOrder(errors, laterSyntaxErrors(parseErrors[0] as IRecognitionException, lexed.tokens, cleaned)) };
  }
  const visited = visitFile(cst, track);
  errors.push(...visited.errors);
  return { visited, errors };
}
