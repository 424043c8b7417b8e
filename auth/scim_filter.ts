/**
 * The SCIM 2.0 filter language (RFC 7644 §3.4.2.2) and PATCH paths
 * (§3.5.2): a tokenizer, a recursive-descent parser to a small tree, a
 * printer whose output parses back to the same tree, and an evaluator over
 * SCIM resources in their JSON form.
 *
 * Precedence, loosest first: `or`, `and`, `not`, then an attribute
 * expression, a value path `emails[type eq "work"]` or a parenthesised
 * filter. Operators and attribute names are case-insensitive; names are kept
 * as written and matched case-insensitively. A filter is at most
 * {@link MAX_FILTER_LENGTH} characters and {@link MAX_DEPTH} levels deep, so
 * that no input makes the parser recurse without bound.
 */

export const MAX_FILTER_LENGTH = 4096;
const MAX_DEPTH = 32;

export type CompareOp = 'eq' | 'ne' | 'co' | 'sw' | 'ew' | 'gt' | 'ge' | 'lt' | 'le';
export type CompValue = string | number | boolean | null;

/** `[uri:]name[.sub]`: `uri` is a schema URN such as `urn:ietf:params:scim:schemas:extension:enterprise:2.0:User`. */
export interface AttrPath {
  uri?: string;
  name: string;
  sub?: string;
}

export type Filter =
  | { kind: 'and' | 'or'; left: Filter; right: Filter }
  | { kind: 'not'; filter: Filter }
  | { kind: 'pr'; path: AttrPath }
  | { kind: 'compare'; op: CompareOp; path: AttrPath; value: CompValue }
  | { kind: 'valuePath'; path: AttrPath; filter: Filter };

/** A PATCH path: an attribute path, or a value path with an optional sub-attribute (`emails[type eq "work"].value`). */
export type PatchPath = { kind: 'attr'; path: AttrPath } | { kind: 'valuePath'; path: AttrPath; filter: Filter; sub?: string };

/** A filter or path the grammar refuses; the SCIM answer is 400 with `scimType` `invalidFilter` or `invalidPath`. */
export class ScimFilterError extends Error {}

const COMPARE_OPS = new Set<string>(['eq', 'ne', 'co', 'sw', 'ew', 'gt', 'ge', 'lt', 'le']);
const ATTRNAME = /^[A-Za-z$][A-Za-z0-9_$-]*$/;

type Token =
  | { t: 'word'; v: string; at: number }
  | { t: 'string'; v: string; at: number }
  | { t: 'number'; v: number; at: number }
  | { t: '(' | ')' | '[' | ']'; at: number };

function tokenize(text: string): Token[] {
  if (text.length > MAX_FILTER_LENGTH) throw new ScimFilterError(`a filter is at most ${MAX_FILTER_LENGTH} characters`);
  const out: Token[] = [];
  let i = 0;
  while (i < text.length) {
    const c = text[i]!;
    if (c === ' ' || c === '\t' || c === '\n' || c === '\r') {
      i++;
    } else if (c === '(' || c === ')' || c === '[' || c === ']') {
      out.push({ t: c, at: i });
      i++;
    } else if (c === '"') {
      // A JSON string (RFC 7159 escapes), as the grammar's compValue says.
      let j = i + 1;
      while (j < text.length && text[j] !== '"') j += text[j] === '\\' ? 2 : 1;
      if (j >= text.length) throw new ScimFilterError(`unterminated string at ${i}`);
      let v: unknown;
      try {
        v = JSON.parse(text.slice(i, j + 1));
      } catch {
        throw new ScimFilterError(`invalid string at ${i}`);
      }
      out.push({ t: 'string', v: v as string, at: i });
      i = j + 1;
    } else if (c === '-' || (c >= '0' && c <= '9')) {
      const m = /^-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?/.exec(text.slice(i));
      if (m === null) throw new ScimFilterError(`invalid number at ${i}`);
      out.push({ t: 'number', v: Number(m[0]), at: i });
      i += m[0].length;
    } else {
      // A word: an operator, a literal or an attribute path (a URN prefix has colons and dots).
      const m = /^[A-Za-z0-9_$:.-]+/.exec(text.slice(i));
      if (m === null) throw new ScimFilterError(`unexpected character ${JSON.stringify(c)} at ${i}`);
      out.push({ t: 'word', v: m[0], at: i });
      i += m[0].length;
    }
  }
  return out;
}

/** Parses `[uri:]name[.sub]`. */
export function parseAttrPath(text: string): AttrPath {
  let uri: string | undefined;
  let rest = text;
  const colon = text.lastIndexOf(':');
  if (colon >= 0) {
    uri = text.slice(0, colon);
    rest = text.slice(colon + 1);
    if (!/^urn:[A-Za-z0-9:._-]+$/i.test(uri)) throw new ScimFilterError(`invalid schema URI in ${JSON.stringify(text)}`);
  }
  const parts = rest.split('.');
  if (parts.length > 2 || !parts.every((p) => ATTRNAME.test(p))) throw new ScimFilterError(`invalid attribute path ${JSON.stringify(text)}`);
  return { ...(uri === undefined ? {} : { uri }), name: parts[0]!, ...(parts[1] === undefined ? {} : { sub: parts[1] }) };
}

class Parser {
  readonly #toks: Token[];
  #i = 0;
  #depth = 0;

  constructor(toks: Token[]) {
    this.#toks = toks;
  }

  get done(): boolean {
    return this.#i >= this.#toks.length;
  }

  peek(): Token | undefined {
    return this.#toks[this.#i];
  }

  #word(): string | undefined {
    const t = this.peek();
    return t?.t === 'word' ? t.v.toLowerCase() : undefined;
  }

  expect(kind: Token['t']): Token {
    const t = this.#toks[this.#i];
    if (t === undefined || t.t !== kind) throw new ScimFilterError(t === undefined ? `expected ${kind} at the end` : `expected ${kind} at ${t.at}`);
    this.#i++;
    return t;
  }

  /** filter := and ("or" and)* */
  filter(inValue: boolean): Filter {
    if (++this.#depth > MAX_DEPTH) throw new ScimFilterError(`a filter nests at most ${MAX_DEPTH} levels`);
    let left = this.#and(inValue);
    while (this.#word() === 'or') {
      this.#i++;
      left = { kind: 'or', left, right: this.#and(inValue) };
    }
    this.#depth--;
    return left;
  }

  #and(inValue: boolean): Filter {
    let left = this.#unary(inValue);
    while (this.#word() === 'and') {
      this.#i++;
      left = { kind: 'and', left, right: this.#unary(inValue) };
    }
    return left;
  }

  #unary(inValue: boolean): Filter {
    const t = this.peek();
    if (t === undefined) throw new ScimFilterError('unexpected end of filter');
    if (t.t === '(') {
      this.#i++;
      const f = this.filter(inValue);
      this.expect(')');
      return f;
    }
    if (t.t === 'word' && t.v.toLowerCase() === 'not' && this.#toks[this.#i + 1]?.t === '(') {
      this.#i += 2;
      const f = this.filter(inValue);
      this.expect(')');
      return { kind: 'not', filter: f };
    }
    if (t.t !== 'word') throw new ScimFilterError(`expected an attribute path at ${t.at}`);
    this.#i++;
    const path = parseAttrPath(t.v);
    const next = this.peek();
    if (next?.t === '[') {
      if (inValue) throw new ScimFilterError(`a value filter cannot hold another at ${next.at}`);
      if (path.sub !== undefined) throw new ScimFilterError(`a value path names a multi-valued attribute, not a sub-attribute, at ${next.at}`);
      this.#i++;
      const inner = this.filter(true);
      this.expect(']');
      return { kind: 'valuePath', path, filter: inner };
    }
    if (next?.t !== 'word') throw new ScimFilterError(next === undefined ? 'expected an operator at the end' : `expected an operator at ${next.at}`);
    const op = next.v.toLowerCase();
    this.#i++;
    if (op === 'pr') return { kind: 'pr', path };
    if (!COMPARE_OPS.has(op)) throw new ScimFilterError(`unknown operator ${JSON.stringify(next.v)} at ${next.at}`);
    const v = this.peek();
    if (v === undefined) throw new ScimFilterError('expected a value at the end');
    this.#i++;
    let value: CompValue;
    if (v.t === 'string' || v.t === 'number') value = v.v;
    else if (v.t === 'word' && ['true', 'false', 'null'].includes(v.v.toLowerCase())) value = v.v.toLowerCase() === 'null' ? null : v.v.toLowerCase() === 'true';
    else throw new ScimFilterError(`expected a value (string, number, true, false or null) at ${v.at}`);
    return { kind: 'compare', op: op as CompareOp, path, value };
  }
}

/** Parses a `filter` query parameter (RFC 7644 §3.4.2.2); throws {@link ScimFilterError}. */
export function parseFilter(text: string): Filter {
  const p = new Parser(tokenize(text));
  const f = p.filter(false);
  if (!p.done) throw new ScimFilterError(`unexpected ${JSON.stringify(p.peek()!.t === 'word' ? (p.peek() as { v: string }).v : p.peek()!.t)} at ${p.peek()!.at}`);
  return f;
}

/** Parses a PATCH operation's `path` (RFC 7644 §3.5.2); throws {@link ScimFilterError}. */
export function parsePatchPath(text: string): PatchPath {
  if (text.length > MAX_FILTER_LENGTH) throw new ScimFilterError(`a path is at most ${MAX_FILTER_LENGTH} characters`);
  const open = text.indexOf('[');
  if (open < 0) return { kind: 'attr', path: parseAttrPath(text.trim()) };
  const close = text.lastIndexOf(']');
  if (close < open) throw new ScimFilterError(`unbalanced [ in path ${JSON.stringify(text)}`);
  const path = parseAttrPath(text.slice(0, open).trim());
  if (path.sub !== undefined) throw new ScimFilterError(`a value path names a multi-valued attribute in ${JSON.stringify(text)}`);
  const p = new Parser(tokenize(text.slice(open + 1, close)));
  const filter = p.filter(true);
  if (!p.done) throw new ScimFilterError(`unexpected text in the value filter of ${JSON.stringify(text)}`);
  const tail = text.slice(close + 1);
  if (tail === '') return { kind: 'valuePath', path, filter };
  if (!tail.startsWith('.') || !ATTRNAME.test(tail.slice(1))) throw new ScimFilterError(`invalid sub-attribute after ] in ${JSON.stringify(text)}`);
  return { kind: 'valuePath', path, filter, sub: tail.slice(1) };
}

// ---------------------------------------------------------------- printing

export function printAttrPath(p: AttrPath): string {
  return `${p.uri === undefined ? '' : `${p.uri}:`}${p.name}${p.sub === undefined ? '' : `.${p.sub}`}`;
}

function printValue(v: CompValue): string {
  return typeof v === 'string' ? JSON.stringify(v) : String(v);
}

/** Prints a filter fully parenthesised where precedence needs it; `parseFilter(printFilter(f))` gives `f` back. */
export function printFilter(f: Filter): string {
  switch (f.kind) {
    case 'or':
      return `${printFilter(f.left)} or ${f.right.kind === 'or' ? `(${printFilter(f.right)})` : printFilter(f.right)}`;
    case 'and': {
      const side = (g: Filter, right: boolean) => (g.kind === 'or' || (right && g.kind === 'and') ? `(${printFilter(g)})` : printFilter(g));
      return `${side(f.left, false)} and ${side(f.right, true)}`;
    }
    case 'not':
      return `not (${printFilter(f.filter)})`;
    case 'pr':
      return `${printAttrPath(f.path)} pr`;
    case 'compare':
      return `${printAttrPath(f.path)} ${f.op} ${printValue(f.value)}`;
    case 'valuePath':
      return `${printAttrPath(f.path)}[${printFilter(f.filter)}]`;
  }
}

// ---------------------------------------------------------------- evaluation

/** Which attributes compare case-sensitively (RFC 7643 `caseExact`); the rest compare case-insensitively. */
export type CaseExact = (path: string) => boolean;

/** The value of `name` in `obj`, matched case-insensitively. */
export function getCi(obj: unknown, name: string): unknown {
  if (obj === null || typeof obj !== 'object' || Array.isArray(obj)) return undefined;
  const lower = name.toLowerCase();
  for (const [k, v] of Object.entries(obj as Record<string, unknown>)) if (k.toLowerCase() === lower) return v;
  return undefined;
}

/** The container of a path's attribute: the resource, or its extension object named by the URI. */
function containerOf(resource: Record<string, unknown>, path: AttrPath, schema: string): unknown {
  if (path.uri === undefined || path.uri.toLowerCase() === schema.toLowerCase()) return resource;
  return getCi(resource, path.uri);
}

function present(v: unknown): boolean {
  if (v === undefined || v === null) return false;
  if (typeof v === 'string') return v !== '';
  if (Array.isArray(v)) return v.length > 0;
  if (typeof v === 'object') return Object.keys(v).length > 0;
  return true;
}

function compare(op: CompareOp, actual: unknown, want: CompValue, exact: boolean): boolean {
  if (actual === undefined || actual === null) return op === 'ne' ? want !== null : op === 'eq' && want === null;
  if (typeof actual === 'string' && typeof want === 'string') {
    const a = exact ? actual : actual.toLowerCase();
    const w = exact ? want : want.toLowerCase();
    switch (op) {
      case 'eq': return a === w;
      case 'ne': return a !== w;
      case 'co': return a.includes(w);
      case 'sw': return a.startsWith(w);
      case 'ew': return a.endsWith(w);
      case 'gt': return a > w;
      case 'ge': return a >= w;
      case 'lt': return a < w;
      case 'le': return a <= w;
    }
  }
  if (typeof actual === 'boolean' || typeof want === 'boolean') {
    if (op === 'eq') return actual === want;
    if (op === 'ne') return actual !== want;
    return false;
  }
  if (typeof actual === 'number' && typeof want === 'number') {
    switch (op) {
      case 'eq': return actual === want;
      case 'ne': return actual !== want;
      case 'gt': return actual > want;
      case 'ge': return actual >= want;
      case 'lt': return actual < want;
      case 'le': return actual <= want;
      default: return false;
    }
  }
  return op === 'ne';
}

/** The values an attribute path reaches (a multi-valued attribute spreads; its sub-attribute is read from each value). */
function valuesAt(container: unknown, path: AttrPath): unknown[] {
  const top = getCi(container, path.name);
  const tops = Array.isArray(top) ? top : [top];
  if (path.sub === undefined) {
    // A multi-valued attribute of complex values is compared by its `value` sub-attribute (RFC 7644 §3.4.2.2).
    return tops.map((v) => (v !== null && typeof v === 'object' && !Array.isArray(v) ? getCi(v, 'value') : v));
  }
  return tops.map((v) => getCi(v, path.sub!));
}

/**
 * Whether `resource` (whose core schema is `schema`) matches `f`. A
 * comparison on a multi-valued attribute matches when any value does.
 */
export function matches(f: Filter, resource: Record<string, unknown>, schema: string, caseExact: CaseExact): boolean {
  switch (f.kind) {
    case 'and':
      return matches(f.left, resource, schema, caseExact) && matches(f.right, resource, schema, caseExact);
    case 'or':
      return matches(f.left, resource, schema, caseExact) || matches(f.right, resource, schema, caseExact);
    case 'not':
      return !matches(f.filter, resource, schema, caseExact);
    case 'pr':
      return valuesAt(containerOf(resource, f.path, schema), f.path).some(present);
    case 'compare': {
      const exact = caseExact(`${f.path.name}${f.path.sub === undefined ? '' : `.${f.path.sub}`}`.toLowerCase());
      const values = valuesAt(containerOf(resource, f.path, schema), f.path);
      if (f.op === 'ne') return values.every((v) => compare('ne', v, f.value, exact));
      return values.some((v) => compare(f.op, v, f.value, exact));
    }
    case 'valuePath': {
      const top = getCi(containerOf(resource, f.path, schema), f.path.name);
      const items = Array.isArray(top) ? top : top === undefined ? [] : [top];
      return items.some((item) => item !== null && typeof item === 'object' && matchesValue(f.filter, item as Record<string, unknown>, f.path.name, caseExact));
    }
  }
}

/** Whether one value of a multi-valued attribute (`emails[...]`) matches its value filter. */
export function matchesValue(f: Filter, item: Record<string, unknown>, parent: string, caseExact: CaseExact): boolean {
  switch (f.kind) {
    case 'and':
      return matchesValue(f.left, item, parent, caseExact) && matchesValue(f.right, item, parent, caseExact);
    case 'or':
      return matchesValue(f.left, item, parent, caseExact) || matchesValue(f.right, item, parent, caseExact);
    case 'not':
      return !matchesValue(f.filter, item, parent, caseExact);
    case 'pr':
      return present(getCi(item, f.path.name));
    case 'compare':
      return compare(f.op, getCi(item, f.path.name), f.value, caseExact(`${parent}.${f.path.name}`.toLowerCase()));
    case 'valuePath':
      return false;
  }
}
