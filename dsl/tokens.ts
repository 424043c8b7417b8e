/**
 * Lexer of the OpenFGA modeling language.
 *
 * The token set and the matching rules follow OpenFGA's lexer
 * (openfga/language `OpenFGALexer.g4`): longest match wins, and on a tie the
 * rule listed first wins. Chevrotain picks the first matching pattern, so the
 * longest-match cases are made explicit here:
 * - keywords carry `longer_alt: Identifier` (`types` is a name, `type` a keyword);
 * - an extended identifier (`a.b`, `x/y`) is only taken when it is strictly
 *   longer than the plain identifier at the same place (`a-b` is an identifier,
 *   `type.x` is an extended identifier);
 * - `1.1` is a schema version, not a float (schema version is listed first).
 *
 * Two modes, as in OpenFGA: the `condition` keyword switches to the parameter
 * mode (where `map`, `int`, ... are parameter types and a line break is an
 * error), and the `)` closing the parameter list switches back.
 *
 * Whitespace and line breaks are real tokens: the grammar needs them (a line
 * break separates declarations, a space separates `a or b`). A NEWLINE token
 * takes blanks around one or more line breaks, so two NEWLINE tokens only
 * meet around a line that holds nothing but a `//` comment (skipped, as
 * OpenFGA puts CEL comments on a hidden channel).
 */
import { createToken, Lexer, type TokenType } from 'chevrotain';

const LETTERS = [...'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_'];
const DIGITS = [...'0123456789'];

/** Tokens that may appear inside a condition's CEL body (everything but `}`). */
export const ExprToken = createToken({ name: 'ExprToken', pattern: Lexer.NA });
/** OpenFGA's `identifier`: a plain identifier or one of the keywords allowed as a name (module names). */
export const Ident = createToken({ name: 'Ident', pattern: Lexer.NA });
/** OpenFGA's `extended_identifier`: `Ident` or an extended identifier (type, relation and restriction names). */
export const Name = createToken({ name: 'Name', pattern: Lexer.NA });

function tok(name: string, pattern: RegExp | string, extra: Record<string, unknown> = {}): TokenType {
  return createToken({ name, pattern, categories: [ExprToken], ...extra } as Parameters<typeof createToken>[0]);
}

export const Newline = tok('NEWLINE', /[ \t\f]*(?:(?:\r\n|\r|\n)[ \t\f]*)+/, {
  line_breaks: true,
  start_chars_hint: [' ', '\t', '\f', '\r', '\n'],
});
export const Whitespace = tok('WHITESPACE', /[ \t\f]+/);
/** A line break, `define` and the whitespace after it: the start of every relation declaration. */
export const DefineLine = tok('DEFINE_LINE', /[ \t\f]*(?:(?:\r\n|\r|\n)[ \t\f]*)+define[ \t\f]+/, {
  line_breaks: true,
  start_chars_hint: [' ', '\t', '\f', '\r', '\n'],
});
/** `,` or `:` with the whitespace after it (restriction lists, `define a: ...`). */
export const CommaWs = tok('COMMA_WS', /,[ \t\f]+/);
export const ColonWs = tok('COLON_WS', /:[ \t\f]+/);

// `WHITESPACE or WHITESPACE` and the like as one token each. The grammar only
// ever uses these keywords between two whitespace tokens, and a whitespace
// token is maximal, so the combined token appears exactly where OpenFGA's
// lexer produces the three-token sequence. A quarter fewer tokens make the
// parser measurably faster (bench/dsl_parse.ts).
const WS_START = [' ', '\t', '\f'];
export const OrOp = tok('OR_OP', /[ \t\f]+or[ \t\f]+/, { start_chars_hint: WS_START });
export const AndOp = tok('AND_OP', /[ \t\f]+and[ \t\f]+/, { start_chars_hint: WS_START });
export const ButNotOp = tok('BUT_NOT_OP', /[ \t\f]+but not[ \t\f]+/, { start_chars_hint: WS_START });
export const FromOp = tok('FROM_OP', /[ \t\f]+from[ \t\f]+/, { start_chars_hint: WS_START });
export const WithOp = tok('WITH_OP', /[ \t\f]+with[ \t\f]+/, { start_chars_hint: WS_START });
export const CelComment = createToken({ name: 'CEL_COMMENT', pattern: /\/\/[^\n]*/, group: Lexer.SKIPPED });

const ESC = String.raw`\\(?:[abfnrtv"'\\?\x60]|[0-3][0-7][0-7]|[xX][0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8})`;
const STRING_BODY =
  String.raw`(?:[rR](?:"""[\s\S]*?"""|'''[\s\S]*?'''|"[^"\n\r]*"|'[^'\n\r]*')` +
  `|"""(?:${ESC}|[^\\\\])*?"""|'''(?:${ESC}|[^\\\\])*?'''` +
  `|"(?:${ESC}|[^\\\\"\\n\\r])*"|'(?:${ESC}|[^\\\\'\\n\\r])*')`;
export const Bytes = tok('BYTES', new RegExp(`[bB]${STRING_BODY}`), {
  line_breaks: true,
  start_chars_hint: ['b', 'B'],
});
export const StringLiteral = tok('STRING', new RegExp(STRING_BODY), {
  line_breaks: true,
  start_chars_hint: ['r', 'R', '"', "'"],
});

export const SchemaVersion = tok('SCHEMA_VERSION', /\d+\.\d+(?![eE][+-]?\d)/, { start_chars_hint: DIGITS });
export const NumFloat = tok('NUM_FLOAT', /\d+\.\d+(?:[eE][+-]?\d+)?|\d+[eE][+-]?\d+|\.\d+(?:[eE][+-]?\d+)?/, {
  start_chars_hint: [...DIGITS, '.'],
});
export const NumUint = tok('NUM_UINT', /0x[0-9a-fA-F]+[uU]|\d+[uU]/, { start_chars_hint: DIGITS });
export const NumInt = tok('NUM_INT', /0x[0-9a-fA-F]+|\d+/, { start_chars_hint: DIGITS });

export const Identifier = tok('IDENTIFIER', /[a-zA-Z_][a-zA-Z0-9_-]*/, { categories: [ExprToken, Ident, Name] });
/**
 * OpenFGA's EXTENDED_IDENTIFIER (`[a-zA-Z_]` then groups of an optional `/`,
 * `.` or `-` and `[a-zA-Z0-9_]+`). It only wins over IDENTIFIER (which also
 * allows `-`) when it is longer, that is when it contains a `.` or `/`; the
 * pattern therefore requires one, and keeps the longest extension after it.
 */
export const ExtendedIdentifier = tok(
  'EXTENDED_IDENTIFIER',
  /[a-zA-Z_](?:-?[a-zA-Z0-9_])*[./][a-zA-Z0-9_](?:[./-]?[a-zA-Z0-9_])*/,
  { categories: [ExprToken, Name], start_chars_hint: LETTERS },
);

function keyword(name: string, word: string, extra: Record<string, unknown> = {}): TokenType {
  return tok(name, word, { longer_alt: Identifier, ...extra });
}

export const ButNot = keyword('BUT_NOT', 'but not');
export const And = keyword('AND', 'and');
export const Or = keyword('OR', 'or');
export const From = keyword('FROM', 'from');
export const Module = keyword('MODULE', 'module', { categories: [ExprToken, Ident, Name] });
export const Model = keyword('MODEL', 'model', { categories: [ExprToken, Ident, Name] });
export const Schema = keyword('SCHEMA', 'schema', { categories: [ExprToken, Ident, Name] });
export const Extend = keyword('EXTEND', 'extend', { categories: [ExprToken, Ident, Name] });
export const Type = keyword('TYPE', 'type', { categories: [ExprToken, Ident, Name] });
export const Condition = keyword('CONDITION', 'condition', { push_mode: 'condition' });
export const Relations = keyword('RELATIONS', 'relations');
export const Relation = keyword('RELATION', 'relation', { categories: [ExprToken, Ident, Name] });
export const Define = keyword('DEFINE', 'define');
export const With = keyword('KEYWORD_WITH', 'with');
export const In = keyword('IN', 'in');
export const CelTrue = keyword('CEL_TRUE', 'true');
export const CelFalse = keyword('CEL_FALSE', 'false');
export const Null = keyword('NUL', 'null');

export const Equals = tok('EQUALS', '==');
export const NotEquals = tok('NOT_EQUALS', '!=');
export const LessEquals = tok('LESS_EQUALS', '<=');
export const GreaterEquals = tok('GREATER_EQUALS', '>=');
export const LogicalAnd = tok('LOGICAL_AND', '&&');
export const LogicalOr = tok('LOGICAL_OR', '||');
export const Less = tok('LESS', '<');
export const Greater = tok('GREATER', '>');
export const Exclam = tok('EXCLAM', '!');
export const Colon = tok('COLON', ':');
export const Comma = tok('COMMA', ',');
export const LBracket = tok('LBRACKET', '[');
export const RBracket = tok('RPRACKET', ']');
export const LBrace = tok('LBRACE', '{');
export const RBrace = createToken({ name: 'RBRACE', pattern: '}' });
export const LParen = tok('LPAREN', '(');
export const RParen = tok('RPAREN', ')');
export const Dot = tok('DOT', '.');
export const Minus = tok('MINUS', '-');
export const QuestionMark = tok('QUESTIONMARK', '?');
export const Plus = tok('PLUS', '+');
export const Star = tok('STAR', '*');
export const Slash = tok('SLASH', '/');
export const Percent = tok('PERCENT', '%');
export const Hash = tok('HASH', '#');

/** `)` that closes a condition's parameter list and leaves the parameter mode. */
// The parameter-mode tokens are also CEL body tokens: `condition` inside a
// body (a body whose `}` is missing runs into the next declaration) switches
// the lexer to parameter mode there too, and OpenFGA takes whatever follows
// into the body up to the first `}`.
export const ConditionParamsEnd = createToken({
  name: 'CONDITION_PARAMS_END',
  pattern: ')',
  pop_mode: true,
  categories: [ExprToken],
});
export const ConditionParamContainer = createToken({
  name: 'CONDITION_PARAM_CONTAINER',
  pattern: /map|list/,
  longer_alt: Identifier,
  categories: [ExprToken],
});
export const ConditionParamType = createToken({
  name: 'CONDITION_PARAM_TYPE',
  pattern: /bool|string|int|uint|double|duration|timestamp|ipaddress/,
  longer_alt: Identifier,
  categories: [ExprToken],
});

const defaultMode: TokenType[] = [
  DefineLine,
  Newline,
  OrOp,
  AndOp,
  ButNotOp,
  FromOp,
  WithOp,
  Whitespace,
  CelComment,
  Bytes,
  StringLiteral,
  SchemaVersion,
  NumFloat,
  NumUint,
  NumInt,
  ExtendedIdentifier,
  ButNot,
  And,
  Or,
  From,
  Module,
  Model,
  Schema,
  Extend,
  Type,
  Condition,
  Relations,
  Relation,
  Define,
  With,
  In,
  CelTrue,
  CelFalse,
  Null,
  Identifier,
  Equals,
  NotEquals,
  LessEquals,
  GreaterEquals,
  LogicalAnd,
  LogicalOr,
  Less,
  Greater,
  Exclam,
  ColonWs,
  Colon,
  CommaWs,
  Comma,
  LBracket,
  RBracket,
  LBrace,
  RBrace,
  LParen,
  RParen,
  Dot,
  Minus,
  QuestionMark,
  Plus,
  Star,
  Slash,
  Percent,
  Hash,
];

const conditionMode: TokenType[] = [
  ConditionParamsEnd,
  ConditionParamContainer,
  ConditionParamType,
  Less,
  Greater,
  LParen,
  Colon,
  Comma,
  Whitespace,
  Identifier,
];

/** Every token type, for the parser. */
export const allTokens: TokenType[] = [ExprToken, Ident, Name, ...defaultMode, ConditionParamsEnd, ConditionParamContainer, ConditionParamType];

/** The lexer, built once. Only `\n` starts a new line, as in OpenFGA's positions. */
export const dslLexer = new Lexer(
  { modes: { default: defaultMode, condition: conditionMode }, defaultMode: 'default' },
  {
    positionTracking: 'onlyStart',
    lineTerminatorsPattern: /\n/g,
    lineTerminatorCharacters: ['\n'],
    ensureOptimizations: true,
    skipValidations: true,
  },
);
