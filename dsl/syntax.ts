/**
 * Text → CST → model for one DSL file, with syntax diagnostics.
 * Never throws: lexer and parser failures become `syntax` diagnostics.
 */
import type { IToken } from 'chevrotain';
import { diagnostic, type DslDiagnostic } from './diagnostics.ts';
import { dslParser, parseTokens } from './parser.ts';
import { antlrSyntaxErrors, type AntlrError } from './recovery.ts';
import { dslLexer, LParen, RParen } from './tokens.ts';
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
 * The syntax errors of a text the parser or its lexer refused, as OpenFGA
 * reports them (recovery.ts: every error its ANTLR parser's recovery finds,
 * with its message and place). Should the two grammars ever disagree (none
 * is known), the parser's first error is reported where it stopped.
 */
function syntaxErrors(cleaned: string, first: IToken | undefined): DslDiagnostic[] {
  let found: AntlrError[] = [];
  try {
    found = antlrSyntaxErrors(cleaned);
  } catch {
    found = [];
  }
  if (found.length > 0) return found.map((e) => diagnostic('syntax', e.message, { line: e.line, column: e.start, length: e.end - e.start }));
  const span = first === undefined || Number.isNaN(first.startOffset) ? undefined : spanOf(first);
  return [diagnostic('syntax', `syntax error at '${first?.image ?? '<EOF>'}'`, span)];
}

/**
 * Lexes, parses and visits one DSL text. With `track` false the model is
 * built without recording source positions (see `visitFile`).
 */
export function parseSyntax(text: string, track = true): SyntaxResult {
  const cleaned = stripComments(text);
  const lexed = dslLexer.tokenize(cleaned);
  const tooDeep = firstTooDeep(lexed.tokens);
  if (tooDeep !== undefined) {
    // Refused before any further reading: the nesting alone is reported.
    const errors = [diagnostic('syntax', `parentheses nested more than ${MAX_NESTING} levels deep`, spanOf(tooDeep))];
    return { visited: undefined, errors };
  }
  const cst = parseTokens(lexed.tokens);
  const parseErrors = dslParser.errors;
  if (parseErrors.length > 0) return { visited: undefined, errors: syntaxErrors(cleaned, parseErrors[0]?.token) };
  const errors = lexed.errors.length > 0 ? syntaxErrors(cleaned, undefined) : [];
  const visited = visitFile(cst, track);
  errors.push(...visited.errors);
  return { visited, errors };
}
