/**
 * A reader for protobuf text format, enough for CEL's conformance data
 * (cel-spec `tests/simple/testdata/*.textproto`, described by `simple.proto`).
 *
 * Without the schema every field may repeat, so a message is read as a map
 * from field name to the list of its values. A value is a string (quoted
 * literals, escapes decoded to bytes and then kept as a latin-1 string so
 * that `bytes_value` survives; `textString` turns it back into UTF-8), a
 * scalar token (number, enum name, `true`), or a nested message.
 */

export type TextValue = string | TextScalar | TextMessage;
/** An unquoted token: a number, a boolean or an enum name. */
export class TextScalar {
  readonly text: string;
  constructor(text: string) {
    this.text = text;
  }
}
export type TextMessage = Map<string, TextValue[]>;

/** Parses a whole text-format document into its top-level message. */
export function parseTextProto(source: string): TextMessage {
  let pos = 0;
  const fail = (what: string): never => {
    const line = source.slice(0, pos).split('\n').length;
    throw new SyntaxError(`textproto: ${what} at line ${line}`);
  };
  const skip = (): void => {
    for (;;) {
      while (pos < source.length && /\s/u.test(source[pos]!)) pos++;
      if (source[pos] === '#') {
        while (pos < source.length && source[pos] !== '\n') pos++;
        continue;
      }
      return;
    }
  };
  const ident = (): string => {
    if (source[pos] === '[') {
      const end = source.indexOf(']', pos);
      if (end < 0) fail('unterminated extension name');
      const name = source.slice(pos, end + 1);
      pos = end + 1;
      return name;
    }
    const m = /^[A-Za-z_][A-Za-z0-9_.]*/u.exec(source.slice(pos));
    if (m === null) return fail('expected a field name');
    pos += m[0].length;
    return m[0];
  };
  const quoted = (): string => {
    const quote = source[pos]!;
    pos++;
    const bytes: number[] = [];
    while (source[pos] !== quote) {
      if (pos >= source.length) fail('unterminated string');
      const c = source[pos]!;
      if (c !== '\\') {
        const cp = source.codePointAt(pos)!;
        for (const b of Buffer.from(String.fromCodePoint(cp), 'utf8')) bytes.push(b);
        pos += cp > 0xffff ? 2 : 1;
        continue;
      }
      const e = source[pos + 1]!;
      pos += 2;
      const simple: Record<string, number> = { n: 10, t: 9, r: 13, a: 7, b: 8, f: 12, v: 11, '\\': 92, "'": 39, '"': 34, '?': 63 };
      if (e in simple) bytes.push(simple[e]!);
      else if (/[0-7]/u.test(e)) {
        let digits = e;
        while (digits.length < 3 && /[0-7]/u.test(source[pos] ?? '')) digits += source[pos++];
        bytes.push(parseInt(digits, 8) & 0xff);
      } else if (e === 'x' || e === 'X') {
        let digits = '';
        while (digits.length < 2 && /[0-9a-fA-F]/u.test(source[pos] ?? '')) digits += source[pos++];
        bytes.push(parseInt(digits, 16));
      } else if (e === 'u' || e === 'U') {
        const n = e === 'u' ? 4 : 8;
        const cp = parseInt(source.slice(pos, pos + n), 16);
        pos += n;
        for (const b of Buffer.from(String.fromCodePoint(cp), 'utf8')) bytes.push(b);
      } else fail(`unknown escape \\${e}`);
    }
    pos++;
    return Buffer.from(bytes).toString('latin1');
  };
  const value = (): TextValue => {
    skip();
    const c = source[pos];
    if (c === '{' || c === '<') return message(c === '{' ? '}' : '>');
    if (c === '"' || c === "'") {
      let s = quoted();
      // Adjacent string literals concatenate.
      for (;;) {
        skip();
        if (source[pos] !== '"' && source[pos] !== "'") return s;
        s += quoted();
      }
    }
    const m = /^[-+]?[A-Za-z0-9_.+-]+/u.exec(source.slice(pos));
    if (m === null) return fail('expected a value');
    pos += m[0].length;
    return new TextScalar(m[0]);
  };
  const message = (close: string | undefined): TextMessage => {
    if (close !== undefined) pos++;
    const out: TextMessage = new Map();
    for (;;) {
      skip();
      if (close === undefined ? pos >= source.length : source[pos] === close) {
        if (close !== undefined) pos++;
        return out;
      }
      if (pos >= source.length) fail('unexpected end of input');
      const name = ident();
      skip();
      if (source[pos] === ':') pos++;
      skip();
      const values: TextValue[] = [];
      if (source[pos] === '[') {
        pos++;
        for (;;) {
          skip();
          if (source[pos] === ']') {
            pos++;
            break;
          }
          values.push(value());
          skip();
          if (source[pos] === ',') pos++;
        }
      } else values.push(value());
      const list = out.get(name) ?? [];
      list.push(...values);
      out.set(name, list);
      skip();
      if (source[pos] === ',' || source[pos] === ';') pos++;
    }
  };
  return message(undefined);
}

/** The single value of `field`, or undefined. */
export function field(m: TextMessage, name: string): TextValue | undefined {
  return m.get(name)?.[0];
}

/** The nested message in `field`, or undefined. */
export function sub(m: TextMessage, name: string): TextMessage | undefined {
  const v = field(m, name);
  return v instanceof Map ? v : undefined;
}

/** All nested messages of a repeated field. */
export function subs(m: TextMessage, name: string): TextMessage[] {
  return (m.get(name) ?? []).filter((v): v is TextMessage => v instanceof Map);
}

/** A string field decoded as UTF-8. */
export function textString(v: TextValue | undefined): string | undefined {
  return typeof v === 'string' ? Buffer.from(v, 'latin1').toString('utf8') : undefined;
}

/** A scalar field's token. */
export function scalar(v: TextValue | undefined): string | undefined {
  return v instanceof TextScalar ? v.text : undefined;
}
