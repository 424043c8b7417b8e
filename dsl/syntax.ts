/**
 * Text → CST → model for one DSL file, with syntax diagnostics.
 * Never throws: lexer and parser failures become `syntax` diagnostics.
 */
import { tokenMatcher, type IRecognitionException, type IToken } from 'chevrotain';
import { diagnostic, type DslDiagnostic } from './diagnostics.ts';
import { dslParser, parseTail, parseTokens } from './parser.ts';
import { ButNot, Condition, DefineLine, dslLexer, Extend, From, FromOp, LBracket, LParen, Model, Module, Name, Newline, RBracket, Relations, RParen, Type, Whitespace, With } from './tokens.ts';
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
    // Where ANTLR matches a single token (the header's first, or `schema`
    // after `model`) it reports a mismatch, not a failed prediction.
    const index = tokens.indexOf(t);
    const expected = beforeHeader(tokens, index) ? " expecting {'#', 'module', 'model'}" : tokens[index - 1]?.tokenType === Model ? " expecting 'schema'" : undefined;
    if (expected !== undefined) return diagnostic('syntax', `mismatched input 'define'${expected}`, span);
    // A relation left unfinished at the end of its line (no `:`, no operand
    // after it, an unclosed `(`): ANTLR stops at the line break, which may
    // be followed by blanks in its grammar.
    const due = expecting(e);
    // Inside `[...]`, which may span lines, the line break is matched and
    // `define` is the offending token: extraneous after a type, a mismatch
    // where a type is due.
    if (due !== '' && due !== ' expecting <EOF>' && inRelations(tokens, index) && inBrackets(tokens, index)) {
      const typeDue = tokens[index - 1]?.tokenType === LBracket || tokens[index - 1]?.tokenType.name === 'COMMA_WS' || tokens[index - 1]?.tokenType.name === 'COMMA';
      return diagnostic('syntax', typeDue ? `mismatched input 'define'${due}` : `extraneous input 'define' expecting {',', WHITESPACE, ']'}`, span);
    }
    if (due !== '' && due !== ' expecting <EOF>' && inRelations(tokens, index)) {
      const at = spanOf(t);
      return diagnostic('syntax', `mismatched input '${display(breaks)}'${withBlanks(due)}`, { line: at.line, column: at.column, length: breaks.length });
    }
    return diagnostic('syntax', `no viable alternative at input '${display(breaks)}define'`, span);
  }
  const index = tokens.indexOf(t);
  const moved = antlrOffending(tokens, index, expecting(e));
  if (moved !== undefined && moved.viable) {
    const span = spanOf(moved.token);
    // `,` and `:` with their blanks are one token here; OpenFGA marks only the `,` or `:`.
    if (moved.token.tokenType.name === 'COLON_WS' || moved.token.tokenType.name === 'COMMA_WS') span.length = 1;
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
  // Before the header, after the optional line breaks, ANTLR checks the
  // token against the header's first tokens before predicting: a mismatch,
  // reported as soon as the token is read (so before later bad characters).
  // Inside a type restriction list, which may span lines, the line break is
  // matched and the token after it is extraneous.
  const expected = expecting(e);
  const message =
    prev && prev.tokenType === Newline && beforeHeader(tokens, index)
      ? `mismatched input '${describe(t)}' expecting {'#', 'module', 'model'}`
      : prev && prev.tokenType === Newline && expected.includes("']'")
        ? `extraneous input '${describe(t)}' expecting {',', WHITESPACE, ']'}`
        : prev && prev.tokenType === Newline && expected !== " expecting 'schema'"
          ? `no viable alternative at input '${display(prev.image)}${describe(t)}'`
          : `mismatched input '${describe(t)}'${expected}`;
  const span = spanOf(t);
  span.length = describe(t).replace(/\\[nrt]/g, ' ').length;
  return diagnostic('syntax', message, span);
}

/** `expecting X` as OpenFGA's grammar says it where blanks may come first: `expecting {X, WHITESPACE}`. */
function withBlanks(due: string): string {
  const names = due.replace(/^ expecting /u, '').replace(/^\{(.*)\}$/u, '$1');
  return ` expecting {${names}, WHITESPACE}`;
}

/** Whether `tokens[index]` is inside a `[` not closed on its relation's line. */
function inBrackets(tokens: IToken[], index: number): boolean {
  for (let i = index - 1; i >= 0; i--) {
    const type = (tokens[i] as IToken).tokenType;
    if (type === RBracket || type === DefineLine) return false;
    if (type === LBracket) return true;
  }
  return false;
}

/**
 * The operators (`OR_OP`, `AND_OP`, `BUT_NOT_OP`, `FROM_OP`, `WITH_OP`) met
 * outside parentheses and brackets in the relation definition that
 * `tokens[index]` continues on its `define` line; undefined off such a line.
 */
function operatorsSoFar(tokens: IToken[], index: number): Set<string> | undefined {
  const ops = new Set<string>();
  let depth = 0;
  for (let i = index - 1; i >= 0; i--) {
    const t = tokens[i] as IToken;
    if (t.tokenType === DefineLine) return ops;
    if (t.tokenType === Newline) return undefined;
    if (t.tokenType === RParen || t.tokenType === RBracket) depth++;
    else if (t.tokenType === LParen || t.tokenType === LBracket) depth--;
    else if (depth === 0 && COMBINED_OPERATORS.has(t.tokenType.name)) ops.add(t.tokenType.name);
  }
  return undefined;
}

/** Whether ANTLR, in its loop of `op` (`OR_OP`, `AND_OP`), would take one more: no other operator so far (a tuple-to-userset is an operand). */
function sameChain(tokens: IToken[], index: number, op: string): boolean {
  const ops = operatorsSoFar(tokens, index);
  return ops !== undefined && [...ops].every((o) => o === op || o === 'FROM_OP');
}

/** Whether only the first operand of the definition came so far (not a tuple-to-userset): where ANTLR enters a `but not`. */
function firstOperandOnly(tokens: IToken[], index: number): boolean {
  return operatorsSoFar(tokens, index)?.size === 0;
}

/**
 * Whether `tokens[index]` lies in a type's relations: the nearest line
 * before it that starts a declaration is `relations` or a `define` line.
 */
function inRelations(tokens: IToken[], index: number): boolean {
  for (let i = index - 1; i >= 0; i--) {
    const t = tokens[i] as IToken;
    if (t.tokenType === DefineLine) return true;
    if (t.tokenType !== Newline) continue;
    const first = tokens[i + 1]?.tokenType;
    if (first === Relations) return true;
    if (first === Type || first === Condition || first === Extend || first === Model || first === Module) return false;
  }
  return false;
}

/** Whether only blanks and line breaks come before `tokens[index]` (the file's header is due). */
function beforeHeader(tokens: IToken[], index: number): boolean {
  for (let i = 0; i < index; i++) {
    const type = (tokens[i] as IToken).tokenType;
    if (type !== Newline && type !== Whitespace) return false;
  }
  return true;
}

const COMBINED_OPERATORS = new Set(['OR_OP', 'AND_OP', 'BUT_NOT_OP', 'FROM_OP', 'WITH_OP']);
const BARE_OPERATORS = new Set(['OR', 'AND']);
/** Operator keywords OpenFGA's grammar has between blanks; without the blank after them they are bare keyword tokens here. */
const BARE_KEYWORDS = new Set(['OR', 'AND', 'BUT_NOT', 'FROM']);

/**
 * ANTLR stopped at `token` where blanks were due (after a keyword that must
 * be followed by them): its text as ANTLR's token, a line break without the
 * `define` that follows it here, `,` or `:` without their blanks.
 */
function stopAt(token: IToken): Moved {
  const name = token.tokenType.name;
  const length = token.tokenType === DefineLine ? token.image.lastIndexOf('define') : name === 'COLON_WS' || name === 'COMMA_WS' ? 1 : token.image.length;
  return { token, skip: 0, length, expecting: ' expecting WHITESPACE' };
}

/** Whether blanks at `tokens[index]` follow a name that can start `name from tupleset` (one not already the end of a tuple-to-userset). */
function startsTupleset(tokens: IToken[], index: number): boolean {
  const name = tokens[index - 1];
  return name !== undefined && tokenMatcher(name, Name) && tokens[index - 2]?.tokenType !== FromOp;
}

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
 *   across the line break and finds no alternative at the line's first token;
 * - a keyword that must be followed by blanks (`define`, `with`, `from`,
 *   `but not`, `and`, `or`) and is not, where ANTLR enters its rule (an
 *   operator in parentheses; `from` after a name; `but not` after the first
 *   operand; `and`/`or` continuing a chain of the same operator): it takes
 *   the keyword and stops at the token after it, expecting blanks;
 * - blanks and an operator right after `(`: it skips the optional blanks and
 *   stops at the operator.
 * Measured over mutated and generated models in
 * test/dsl/differential_positions.test.ts.
 */
type Moved = { token: IToken; skip: number; length?: number; expecting?: string; viable?: false } | { token: IToken; viable: true };

function antlrOffending(tokens: IToken[], index: number, expected: string): Moved | undefined {
  const t = tokens[index];
  if (t === undefined) return undefined;
  const prev = tokens[index - 1];
  const next = tokens[index + 1];
  if (t.tokenType === Newline && expected === " expecting 'define'" && next !== undefined) {
    // `define` not followed by blanks: ANTLR takes the keyword and stops at what follows it.
    const after = tokens[index + 2];
    if (next.image === 'define' && after !== undefined) return stopAt(after);
    return { token: next, viable: true };
  }
  if (COMBINED_OPERATORS.has(t.tokenType.name) && (index === 0 || prev?.tokenType === LParen || ["':'", "')'", "']'", 'IDENTIFIER', 'WHITESPACE'].some((x) => expected === ` expecting ${x}`))) {
    return { token: t, skip: /^[ \t\f]*/u.exec(t.image)?.[0].length ?? 0 };
  }
  if (t.tokenType === Whitespace) {
    const after = tokens[index + 2];
    if (
      expected === ' expecting <EOF>' &&
      next !== undefined &&
      after !== undefined &&
      inRelations(tokens, index) &&
      ((BARE_OPERATORS.has(next.tokenType.name) && sameChain(tokens, index, `${next.tokenType.name}_OP`)) ||
        (next.tokenType === From && startsTupleset(tokens, index)) ||
        (next.tokenType === ButNot && firstOperandOnly(tokens, index)))
    ) {
      return stopAt(after);
    }
    // Blanks before the header are optional in ANTLR's grammar.
    if (index === 0 && next !== undefined) return { token: next, skip: 0 };
  }
  // Inside parentheses, blanks and an operator keyword without blanks after
  // it: ANTLR takes the keyword and stops at what follows it.
  if (expected === " expecting ')'" && BARE_KEYWORDS.has(t.tokenType.name) && prev?.tokenType === Whitespace && next !== undefined) {
    return stopAt(next);
  }
  // `define` must be followed by blanks: ANTLR takes the keyword and stops at what follows it.
  if (t.image === 'define' && prev?.tokenType === Newline && next !== undefined && inRelations(tokens, index)) return stopAt(next);
  // `with` must be followed by blanks too (`[user with c]`).
  if (t.tokenType === With && prev?.tokenType === Whitespace && next !== undefined) return stopAt(next);
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
