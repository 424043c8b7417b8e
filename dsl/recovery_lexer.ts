/**
 * A second lexer of the modeling language, token for token the one OpenFGA's
 * parser reads (openfga/language `OpenFGALexer.g4`): blanks, keywords and
 * operators are separate tokens, `//` comments are hidden, and the token
 * types carry OpenFGA's numbers, which order the names in an "expecting {…}"
 * message. Used only to report syntax errors as OpenFGA reports them
 * (recovery.ts); the parser that builds models uses tokens.ts.
 *
 * Matching: the longest match wins, on a tie the rule listed first in
 * OpenFGA's lexer. Positions count code points, as OpenFGA's lexer does;
 * lines are 1-based and split on `\n` only, columns 0-based.
 */

/** OpenFGA's token types, by their symbolic names. */
export const TT = {
  EOF: -1, COLON: 1, COMMA: 2, LESS: 3, GREATER: 4, LBRACKET: 5, RBRACKET: 6, LPAREN: 7, RPAREN: 8, WHITESPACE: 9,
  IDENTIFIER: 10, HASH: 11, AND: 12, OR: 13, BUT_NOT: 14, FROM: 15, MODULE: 16, MODEL: 17, SCHEMA: 18, SCHEMA_VERSION: 19,
  EXTEND: 20, TYPE: 21, CONDITION: 22, RELATIONS: 23, RELATION: 24, DEFINE: 25, KEYWORD_WITH: 26, EQUALS: 27,
  NOT_EQUALS: 28, IN: 29, LESS_EQUALS: 30, GREATER_EQUALS: 31, LOGICAL_AND: 32, LOGICAL_OR: 33, RPRACKET: 34,
  LBRACE: 35, RBRACE: 36, DOT: 37, MINUS: 38, EXCLAM: 39, QUESTIONMARK: 40, PLUS: 41, STAR: 42, SLASH: 43, PERCENT: 44,
  CEL_TRUE: 45, CEL_FALSE: 46, NUL: 47, CEL_COMMENT: 48, NUM_FLOAT: 49, NUM_INT: 50, NUM_UINT: 51, STRING: 52, BYTES: 53,
  EXTENDED_IDENTIFIER: 54, NEWLINE: 55, CONDITION_PARAM_CONTAINER: 56, CONDITION_PARAM_TYPE: 57,
} as const;

/** Highest token type. */
export const MAX_TYPE = 57;

/** How OpenFGA names a token type in messages: its literal when it has one, else its symbolic name. */
export const DISPLAY_NAMES: Record<number, string> = {};
const LITERALS: Record<string, string> = {
  COLON: ':', COMMA: ',', LESS: '<', GREATER: '>', LBRACKET: '[', LPAREN: '(', RPAREN: ')', HASH: '#', AND: 'and', OR: 'or',
  BUT_NOT: 'but not', FROM: 'from', MODULE: 'module', MODEL: 'model', SCHEMA: 'schema', EXTEND: 'extend', TYPE: 'type',
  CONDITION: 'condition', RELATIONS: 'relations', RELATION: 'relation', DEFINE: 'define', KEYWORD_WITH: 'with',
  EQUALS: '==', NOT_EQUALS: '!=', IN: 'in', LESS_EQUALS: '<=', GREATER_EQUALS: '>=', LOGICAL_AND: '&&', LOGICAL_OR: '||',
  RPRACKET: ']', LBRACE: '{', RBRACE: '}', DOT: '.', MINUS: '-', EXCLAM: '!', QUESTIONMARK: '?', PLUS: '+', STAR: '*',
  SLASH: '/', PERCENT: '%', CEL_TRUE: 'true', CEL_FALSE: 'false', NUL: 'null',
};
for (const [name, type] of Object.entries(TT)) DISPLAY_NAMES[type] = name === 'EOF' ? '<EOF>' : LITERALS[name] !== undefined ? `'${LITERALS[name]}'` : name;

export type LexToken = {
  type: number;
  text: string;
  /** 1-based line, 0-based column (code points) of the first character. */
  line: number;
  column: number;
  hidden: boolean;
};

/** A character no rule could start a token with, as OpenFGA's lexer reports it. */
export type LexError = { text: string; line: number; column: number; /** index of the token being read when it was met */ before: number };

// Keyword literals of the default mode in the lexer's rule order (a tie goes to the earlier rule).
const KEYWORDS: Array<[string, number]> = [
  ['#', TT.HASH], [':', TT.COLON], [',', TT.COMMA], ['and', TT.AND], ['or', TT.OR], ['but not', TT.BUT_NOT], ['from', TT.FROM],
  ['module', TT.MODULE], ['model', TT.MODEL], ['schema', TT.SCHEMA], ['extend', TT.EXTEND], ['type', TT.TYPE],
  ['condition', TT.CONDITION], ['relations', TT.RELATIONS], ['relation', TT.RELATION], ['define', TT.DEFINE],
  ['with', TT.KEYWORD_WITH], ['==', TT.EQUALS], ['!=', TT.NOT_EQUALS], ['in', TT.IN], ['<', TT.LESS], ['<=', TT.LESS_EQUALS],
  ['>=', TT.GREATER_EQUALS], ['>', TT.GREATER], ['&&', TT.LOGICAL_AND], ['||', TT.LOGICAL_OR], ['[', TT.LBRACKET],
  [']', TT.RPRACKET], ['{', TT.LBRACE], ['}', TT.RBRACE], ['(', TT.LPAREN], [')', TT.RPAREN], ['.', TT.DOT], ['-', TT.MINUS],
  ['!', TT.EXCLAM], ['?', TT.QUESTIONMARK], ['+', TT.PLUS], ['*', TT.STAR], ['/', TT.SLASH], ['%', TT.PERCENT],
  ['true', TT.CEL_TRUE], ['false', TT.CEL_FALSE], ['null', TT.NUL],
];
const CONDITION_KEYWORDS: Array<[string, number]> = [
  [')', TT.RPAREN], ['map', TT.CONDITION_PARAM_CONTAINER], ['list', TT.CONDITION_PARAM_CONTAINER],
  ...['bool', 'string', 'int', 'uint', 'double', 'duration', 'timestamp', 'ipaddress'].map((k): [string, number] => [k, TT.CONDITION_PARAM_TYPE]),
  ['<', TT.LESS], ['>', TT.GREATER], ['(', TT.LPAREN], [':', TT.COLON], [',', TT.COMMA],
];

const isLetter = (c: string | undefined): boolean => c !== undefined && /^[A-Za-z]$/u.test(c);
const isDigit = (c: string | undefined): boolean => c !== undefined && c >= '0' && c <= '9';
const isHex = (c: string | undefined): boolean => c !== undefined && /^[0-9a-fA-F]$/u.test(c);
const isBlank = (c: string | undefined): boolean => c === ' ' || c === '\t' || c === '\f';

/** A match: its length, or, when no rule matched, how far the attempt read (for the error text). */
type Match = { length: number; type: number } | { failedAt: number };

class Scanner {
  readonly s: string[];

  constructor(s: string[]) {
    this.s = s;
  }

  at(i: number): string | undefined {
    return this.s[i];
  }

  /** A literal at `i`: matched, or how far a partial match read before failing. */
  literal(i: number, cs: readonly string[]): Match | undefined {
    let k = 0;
    while (k < cs.length && this.s[i + k] === cs[k]) k++;
    if (k === cs.length) return { length: k, type: 0 };
    return k === 0 ? undefined : { failedAt: i + k };
  }

  digits(i: number): number {
    let j = i;
    while (isDigit(this.s[j])) j++;
    return j - i;
  }

  identifier(i: number): number {
    const c = this.s[i];
    if (!isLetter(c) && c !== '_') return 0;
    let j = i + 1;
    for (let d = this.s[j]; isLetter(d) || isDigit(d) || d === '_' || d === '-'; d = this.s[++j]);
    return j - i;
  }

  extendedIdentifier(i: number): number {
    const c = this.s[i];
    if (!isLetter(c) && c !== '_') return 0;
    let end = i + 1;
    let j = end;
    for (;;) {
      let k = j;
      const sep = this.s[k];
      if (sep === '/' || sep === '.' || sep === '-') k++;
      const start = k;
      for (let d = this.s[k]; isLetter(d) || isDigit(d) || d === '_'; d = this.s[++k]);
      if (k === start) break;
      j = end = k;
    }
    return end - i;
  }

  /** NUM_FLOAT, NUM_INT, NUM_UINT, SCHEMA_VERSION: [length, type] of the longest. */
  number(i: number): [number, number] {
    let best: [number, number] = [0, 0];
    const take = (len: number, type: number): void => {
      if (len > best[0]) best = [len, type];
    };
    const exponent = (j: number): number => {
      if (this.s[j] !== 'e' && this.s[j] !== 'E') return 0;
      let k = j + 1;
      if (this.s[k] === '+' || this.s[k] === '-') k++;
      const d = this.digits(k);
      return d === 0 ? 0 : k + d - j;
    };
    const d = this.digits(i);
    if (d > 0) {
      if (this.s[i + d] === '.' && this.digits(i + d + 1) > 0) {
        const frac = this.digits(i + d + 1);
        take(d + 1 + frac, TT.SCHEMA_VERSION);
        take(d + 1 + frac + exponent(i + d + 1 + frac), TT.NUM_FLOAT);
      }
      const e = exponent(i + d);
      if (e > 0) take(d + e, TT.NUM_FLOAT);
      take(d, TT.NUM_INT);
      if (this.s[i + d] === 'u' || this.s[i + d] === 'U') take(d + 1, TT.NUM_UINT);
    }
    if (this.s[i] === '0' && this.s[i + 1] === 'x') {
      let k = i + 2;
      while (isHex(this.s[k])) k++;
      if (k > i + 2) {
        take(k - i, TT.NUM_INT);
        if (this.s[k] === 'u' || this.s[k] === 'U') take(k + 1 - i, TT.NUM_UINT);
      }
    }
    if (this.s[i] === '.' && this.digits(i + 1) > 0) {
      const frac = this.digits(i + 1);
      take(1 + frac + exponent(i + 1 + frac), TT.NUM_FLOAT);
    }
    return best;
  }

  /** An escape sequence at `i`: its length, 0 if none. */
  escape(i: number): number {
    if (this.s[i] !== '\\') return 0;
    const c = this.s[i + 1];
    if (c !== undefined && 'abfnrtv"\'\\?`'.includes(c)) return 2;
    if (c !== undefined && c >= '0' && c <= '3' && /[0-7]/u.test(this.s[i + 2] ?? '') && /[0-7]/u.test(this.s[i + 3] ?? '')) return 4;
    if ((c === 'x' || c === 'X') && isHex(this.s[i + 2]) && isHex(this.s[i + 3])) return 4;
    const hexRun = (from: number, n: number): boolean => Array.from({ length: n }, (_, k) => this.s[from + k]).every(isHex);
    if (c === 'u' && hexRun(i + 2, 4)) return 6;
    if (c === 'U' && hexRun(i + 2, 8)) return 10;
    return 0;
  }

  /** A string literal at `i` (after an optional `r`/`b` prefix handled by the caller): its length or the failing index. */
  string(i: number, raw: boolean): Match {
    const q = this.s[i];
    if (q !== '"' && q !== "'") return { failedAt: i };
    const triple = this.s[i + 1] === q && this.s[i + 2] === q;
    if (triple) {
      // An unterminated triple-quoted string falls back, as the lexer falls back to its last accepting state, to
      // the empty string its first two quotes make (`'''` is `''` and then an unreadable `'`).
      const empty: Match = { length: 2, type: TT.STRING };
      let j = i + 3;
      for (;;) {
        if (j >= this.s.length) return empty;
        if (this.s[j] === q && this.s[j + 1] === q && this.s[j + 2] === q) return { length: j + 3 - i, type: TT.STRING };
        if (!raw && this.s[j] === '\\') {
          const e = this.escape(j);
          if (e === 0) return empty;
          j += e;
        } else j++;
      }
    }
    // `""` is the empty string, not the start of a triple-quoted one.
    let j = i + 1;
    for (;;) {
      const c = this.s[j];
      if (c === undefined || c === '\n' || c === '\r') return { failedAt: j };
      if (c === q) return { length: j + 1 - i, type: TT.STRING };
      if (!raw && c === '\\') {
        const e = this.escape(j);
        if (e === 0) return { failedAt: j + 1 };
        j += e;
      } else j++;
    }
  }
}

function better(a: Match | undefined, b: Match): Match {
  if (a === undefined) return b;
  if ('length' in b && (!('length' in a) || b.length > a.length)) return b;
  if ('failedAt' in b && 'failedAt' in a && b.failedAt > a.failedAt) return b;
  return a;
}

/** Literals by their first character, each as its characters. */
function byFirst(list: Array<[string, number]>): Map<string, Array<[string[], number]>> {
  const map = new Map<string, Array<[string[], number]>>();
  for (const [lit, type] of list) {
    const cs = [...lit];
    const entries = map.get(cs[0] as string) ?? [];
    entries.push([cs, type]);
    map.set(cs[0] as string, entries);
  }
  return map;
}
const DEFAULT_LITERALS = byFirst(KEYWORDS);
const CONDITION_LITERALS = byFirst(CONDITION_KEYWORDS);

function literal(sc: Scanner, i: number, lit: readonly string[], type: number, best: Match | undefined): Match | undefined {
  const m = sc.literal(i, lit);
  if (m === undefined) return best;
  return better(best, 'length' in m ? { length: m.length, type } : m);
}

function matchDefault(sc: Scanner, i: number): Match {
  let best: Match | undefined;
  for (const [lit, type] of DEFAULT_LITERALS.get(sc.at(i) ?? '') ?? []) best = literal(sc, i, lit, type, best);
  const c = sc.at(i);
  if (isBlank(c) || c === '\n' || c === '\r') {
    // WHITESPACE, or NEWLINE: a run of blanks and line breaks holding at least one line break (`\f` counts as both).
    let j = i;
    let lineBreak = false;
    for (let d = sc.at(j); isBlank(d) || d === '\n' || d === '\r'; d = sc.at(++j)) if (d === '\n' || d === '\r' || d === '\f') lineBreak = true;
    let blanks = i;
    while (isBlank(sc.at(blanks))) blanks++;
    if (blanks > i) best = better(best, { length: blanks - i, type: TT.WHITESPACE });
    if (lineBreak) best = better(best, { length: j - i, type: TT.NEWLINE });
  }
  if (c === '/' && sc.at(i + 1) === '/') {
    let j = i + 2;
    while (j < sc.s.length && sc.at(j) !== '\n') j++;
    best = better(best, { length: j - i, type: TT.CEL_COMMENT });
  }
  const [numLen, numType] = sc.number(i);
  if (numLen > 0) best = better(best, { length: numLen, type: numType });
  if (c === '"' || c === "'") best = better(best, sc.string(i, false));
  if ((c === 'r' || c === 'R') && (sc.at(i + 1) === '"' || sc.at(i + 1) === "'")) {
    const m = sc.string(i + 1, true);
    best = better(best, 'length' in m ? { length: m.length + 1, type: TT.STRING } : m);
  }
  if ((c === 'b' || c === 'B') && (sc.at(i + 1) === '"' || sc.at(i + 1) === "'" || ((sc.at(i + 1) === 'r' || sc.at(i + 1) === 'R') && (sc.at(i + 2) === '"' || sc.at(i + 2) === "'")))) {
    const raw = sc.at(i + 1) === 'r' || sc.at(i + 1) === 'R';
    const m = sc.string(i + (raw ? 2 : 1), raw);
    best = better(best, 'length' in m ? { length: m.length + (raw ? 2 : 1), type: TT.BYTES } : m);
  }
  const id = sc.identifier(i);
  if (id > 0) best = better(best, { length: id, type: TT.IDENTIFIER });
  const ext = sc.extendedIdentifier(i);
  if (ext > 0) best = better(best, { length: ext, type: TT.EXTENDED_IDENTIFIER });
  return best ?? { failedAt: i };
}

function matchCondition(sc: Scanner, i: number): Match {
  let best: Match | undefined;
  for (const [lit, type] of CONDITION_LITERALS.get(sc.at(i) ?? '') ?? []) best = literal(sc, i, lit, type, best);
  let blanks = i;
  while (isBlank(sc.at(blanks))) blanks++;
  if (blanks > i) best = better(best, { length: blanks - i, type: TT.WHITESPACE });
  const id = sc.identifier(i);
  if (id > 0) best = better(best, { length: id, type: TT.IDENTIFIER });
  return best ?? { failedAt: i };
}

/** Tokens (ending with EOF) and the characters no token could start with. */
export function lexAntlr(text: string): { tokens: LexToken[]; errors: LexError[] } {
  const s = [...text];
  const sc = new Scanner(s);
  const tokens: LexToken[] = [];
  const errors: LexError[] = [];
  let i = 0;
  let line = 1;
  let column = 0;
  let conditionMode = false;
  const advance = (to: number): void => {
    for (; i < to; i++) {
      if (s[i] === '\n') {
        line++;
        column = 0;
      } else column++;
    }
  };
  while (i < s.length) {
    const m = conditionMode ? matchCondition(sc, i) : matchDefault(sc, i);
    if ('failedAt' in m) {
      // The text read up to and including the character that failed is reported and skipped.
      const upTo = Math.min(m.failedAt, s.length - 1);
      errors.push({ text: s.slice(i, upTo + 1).join(''), line, column, before: tokens.length });
      advance(upTo + 1);
      continue;
    }
    const tokenText = s.slice(i, i + m.length).join('');
    tokens.push({ type: m.type, text: tokenText, line, column, hidden: m.type === TT.CEL_COMMENT });
    if (m.type === TT.CONDITION && !conditionMode) conditionMode = true;
    else if (conditionMode && m.type === TT.RPAREN) conditionMode = false;
    advance(i + m.length);
  }
  tokens.push({ type: TT.EOF, text: '<EOF>', line, column, hidden: false });
  return { tokens, errors };
}
