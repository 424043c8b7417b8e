/**
 * CEL literals that `@marcbachmann/cel-js` reads differently from cel-go,
 * rewritten before parsing into forms it reads as cel-go reads the
 * originals (cel-go `parser/gen/CEL.g4` and `parser/unescape.go`):
 *
 * - bytes literals: text characters are their UTF-8 bytes (the library
 *   keeps only each character's low byte, so `b'ÿ'` was one byte, not two),
 *   `\x` and octal escapes are single bytes, `\u`/`\U` are errors; raw
 *   bytes literals (`br'…'`, `bR"…"`, …) keep their text as written (the
 *   library does not read them at all). Each becomes `b"\xHH…"`;
 * - raw string literals (`r'…'`): a backslash is a character like any other
 *   and cannot escape the closing quote (the library skipped the character
 *   after it). Each becomes an ordinary escaped string;
 * - a double literal without a leading digit (`.99`) becomes `0.99`.
 *
 * Everything else, including comments and the other strings, is kept as
 * written. A malformed literal is a `TypeError`, as cel-go's parser rejects
 * it. Pinned by test/engine/conditions_cel_spec.test.ts (parse.textproto,
 * basic.textproto, comparisons.textproto).
 */

const SIMPLE_ESCAPES: Record<string, number> = { a: 7, b: 8, f: 12, n: 10, r: 13, t: 9, v: 11, '\\': 92, '?': 63, '"': 34, "'": 39, '`': 96 };
const isDigit = (c: string | undefined): boolean => c !== undefined && c >= '0' && c <= '9';
const isIdentChar = (c: string | undefined): boolean => c !== undefined && /^[A-Za-z0-9_]$/u.test(c);

/** The bytes of a (non-raw) bytes literal's body, escapes decoded as cel-go's `unescape(…, isBytes=true)` does. */
function decodeBytes(body: string): number[] {
  const out: number[] = [];
  const utf8 = new TextEncoder();
  for (let i = 0; i < body.length; ) {
    const c = body[i]!;
    if (c !== '\\') {
      const cp = body.codePointAt(i)!;
      const ch = String.fromCodePoint(cp);
      out.push(...utf8.encode(ch));
      i += ch.length;
      continue;
    }
    const e = body[i + 1];
    if (e !== undefined && SIMPLE_ESCAPES[e] !== undefined) {
      out.push(SIMPLE_ESCAPES[e]);
      i += 2;
    } else if ((e === 'x' || e === 'X') && /^[0-9a-fA-F]{2}$/u.test(body.slice(i + 2, i + 4))) {
      out.push(parseInt(body.slice(i + 2, i + 4), 16));
      i += 4;
    } else if (/^[0-3][0-7]{2}$/u.test(body.slice(i + 1, i + 4))) {
      out.push(parseInt(body.slice(i + 1, i + 4), 8));
      i += 4;
    } else {
      throw new TypeError(`invalid escape sequence in bytes literal: \\${e ?? ''}`);
    }
  }
  return out;
}

function bytesLiteral(bytes: Iterable<number>): string {
  let s = 'b"';
  for (const b of bytes) s += `\\x${b.toString(16).padStart(2, '0')}`;
  return `${s}"`;
}

/** `text` as an ordinary double-quoted CEL string. */
function stringLiteral(text: string): string {
  let s = '"';
  for (const ch of text) {
    const cp = ch.codePointAt(0)!;
    if (ch === '"' || ch === '\\') s += `\\${ch}`;
    else if (cp >= 0x20 && cp < 0x7f) s += ch;
    else if (cp > 0xffff) s += `\\U${cp.toString(16).padStart(8, '0')}`;
    else s += `\\u${cp.toString(16).padStart(4, '0')}`;
  }
  return `${s}"`;
}

/** The end (exclusive) of the quoted literal whose opening quote is at `start`, and where its body starts and ends. */
function quoted(src: string, start: number, raw: boolean): { bodyStart: number; bodyEnd: number; end: number } {
  const q = src[start]!;
  const triple = src.startsWith(q.repeat(3), start);
  const close = triple ? q.repeat(3) : q;
  const bodyStart = start + close.length;
  for (let i = bodyStart; i < src.length; i++) {
    if (src.startsWith(close, i)) return { bodyStart, bodyEnd: i, end: i + close.length };
    if (!triple && (src[i] === '\n' || src[i] === '\r')) break;
    if (!raw && src[i] === '\\') i++;
  }
  throw new TypeError('unterminated string literal');
}

/** `expression` with the literals above rewritten; everything else unchanged. */
export function normalizeLiterals(expression: string): string {
  const src = expression;
  let out = '';
  let i = 0;
  while (i < src.length) {
    const c = src[i]!;
    if (c === '/' && src[i + 1] === '/') {
      const nl = src.indexOf('\n', i);
      const end = nl < 0 ? src.length : nl;
      out += src.slice(i, end);
      i = end;
    } else if (c === '"' || c === "'") {
      const { end } = quoted(src, i, false);
      out += src.slice(i, end);
      i = end;
    } else if (/[A-Za-z_]/u.test(c)) {
      let j = i;
      while (isIdentChar(src[j])) j++;
      const word = src.slice(i, j);
      const q = src[j];
      if ((q === '"' || q === "'") && /^(?:[bB][rR]?|[rR])$/u.test(word)) {
        const bytes = /^[bB]/u.test(word);
        const raw = /[rR]/u.test(word);
        const lit = quoted(src, j, raw);
        const body = src.slice(lit.bodyStart, lit.bodyEnd);
        if (bytes) out += bytesLiteral(raw ? new TextEncoder().encode(body) : decodeBytes(body));
        else out += stringLiteral(body);
        i = lit.end;
      } else {
        out += word;
        i = j;
      }
    } else if (isDigit(c)) {
      // A number as written (so that its `.` is not read as a leading-dot double below).
      let j = i + 1;
      if (c === '0' && (src[j] === 'x' || src[j] === 'X')) {
        j++;
        while (/[0-9a-fA-F]/u.test(src[j] ?? '')) j++;
      } else {
        while (isDigit(src[j])) j++;
        if (src[j] === '.' && isDigit(src[j + 1])) for (j++; isDigit(src[j]); ) j++;
        if ((src[j] === 'e' || src[j] === 'E') && (isDigit(src[j + 1]) || ((src[j + 1] === '+' || src[j + 1] === '-') && isDigit(src[j + 2])))) for (j += 2; isDigit(src[j]); ) j++;
      }
      out += src.slice(i, j);
      i = j;
    } else if (c === '.' && isDigit(src[i + 1])) {
      // cel-go's lexer reads `.99` as a double; the library reads a member access.
      out += isIdentChar(out[out.length - 1]) ? ' 0' : '0';
      out += c;
      i++;
    } else {
      out += c;
      i++;
    }
  }
  return out;
}
