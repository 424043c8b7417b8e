/**
 * Input validation and output encoding compiled once per shape: the fast
 * form of `validate` and `encodeOutput` (shape.ts) for values they accept.
 *
 * Why: the walk in shape.ts is one generic function for every shape, so its
 * property reads and writes (`input[key]`, `out[key]`) see every field name
 * of every operation and run on V8's slowest (megamorphic) paths; with the
 * field paths it builds, validating `check_permissions`' input and encoding
 * its answer cost about 7% of a REST call's instructions (docs/performance.md,
 * Server path). Here each object shape gets a function of its own, generated
 * from its field names, whose reads and writes each see one name.
 *
 * The compiled forms decide nothing on their own: for a value the walk
 * accepts they return what the walk returns (the same fields, in the same
 * order), and for anything else they return {@link FAIL}, and the caller runs
 * the walk, which then throws its precise error naming the field. A value the
 * compiled form turns down needlessly is only slower, never answered
 * differently. `test/api/shape_compiled.property.test.ts` holds both
 * forms equal over random shapes and values, valid and invalid.
 *
 * The generated source holds only the shapes' own field names, each written
 * as a JSON string literal; no request data ever reaches it.
 */
import type { ObjectShape, OptionalShape, Shape } from './shape_types.ts';

/** Returned by a compiled form for a value it does not answer: the walk must. */
export const FAIL: unique symbol = Symbol('shape: use the walk');

/** A compiled form: the result, or {@link FAIL}. */
export type Compiled = (value: unknown) => unknown;

/** What the compiled validators take from shape.ts's rules. */
export interface ValidationRules {
  /** True when `value` holds no character a string of this kind may not hold (shape.ts `stringProblem`). */
  stringOk(value: string, text: boolean): boolean;
  /** The bound of a string whose shape sets none. */
  readonly defaultMaxLength: number;
  /** The walk's result for a shape without a compiled form (json, map), or {@link FAIL} where it throws. */
  walk(shape: Shape, value: unknown): unknown;
}

const VALIDATORS = new WeakMap<Shape, Compiled>();
const ENCODERS = new WeakMap<Shape, Compiled>();

/** The compiled validator of `shape` (made on first use, kept for the shape's life). */
export function compiledValidator(shape: Shape, rules: ValidationRules): Compiled {
  let v = VALIDATORS.get(shape);
  if (v === undefined) VALIDATORS.set(shape, (v = validatorOf(shape, rules)));
  return v;
}

/** The compiled encoder of `shape` (see {@link compiledValidator}). */
export function compiledEncoder(shape: Shape): Compiled {
  let e = ENCODERS.get(shape);
  if (e === undefined) ENCODERS.set(shape, (e = encoderOf(shape)));
  return e;
}

function validatorOf(shape: Shape, rules: ValidationRules): Compiled {
  switch (shape.kind) {
    case 'string': {
      const min = shape.minLength ?? 0;
      const max = shape.maxLength ?? rules.defaultMaxLength;
      const text = shape.text === true;
      return (x) => (typeof x === 'string' && x.length >= min && x.length <= max && rules.stringOk(x, text) ? x : FAIL);
    }
    case 'int': {
      const min = shape.min ?? -Infinity;
      const max = shape.max ?? Infinity;
      return (x) => (typeof x === 'number' && Number.isSafeInteger(x) && x >= min && x <= max ? x : FAIL);
    }
    case 'float':
      return (x) => (typeof x === 'number' && Number.isFinite(x) ? x : FAIL);
    case 'bool':
      return (x) => (typeof x === 'boolean' ? x : FAIL);
    case 'enum': {
      const values: readonly string[] = shape.values;
      return (x) => (typeof x === 'string' && values.includes(x) ? x : FAIL);
    }
    case 'json':
    case 'map':
      return (x) => rules.walk(shape, x);
    case 'list': {
      const item = compiledValidator(shape.item, rules);
      const min = shape.minItems ?? 0;
      const max = shape.maxItems ?? Infinity;
      return (x) => {
        if (!Array.isArray(x) || x.length < min || x.length > max) return FAIL;
        const out: unknown[] = [];
        for (let i = 0; i < x.length; i++) {
          const y = item(x[i]);
          if (y === FAIL) return FAIL;
          out.push(y);
        }
        return out;
      };
    }
    case 'object':
      return objectValidator(shape, rules);
  }
}

/** A field's name as a JavaScript string literal (JSON's string syntax is a subset of it). */
const literal = (name: string): string => JSON.stringify(name);

/**
 * An object shape's validator: refuses a non-object, an array and any key it
 * does not declare; reads each field once; a required field absent (or null)
 * fails; an optional one absent is left out; each present field is validated
 * by its own compiled form, in declaration order, into a fresh object.
 */
function objectValidator(shape: ObjectShape, rules: ValidationRules): Compiled {
  const fields = Object.entries(shape.fields);
  const inner = fields.map(([, f]) => compiledValidator(unwrap(f), rules));
  const cases = fields.map(([k]) => `case ${literal(k)}:`).join(' ');
  const lines = fields.map(([k, f], i) => {
    const read = `x = v[${literal(k)}];`;
    const store = `y = f[${i}](x); if (y === FAIL) return FAIL; o[${literal(k)}] = y;`;
    return f.kind === 'optional' ? `${read} if (x !== undefined && x !== null) { ${store} }` : `${read} if (x === undefined || x === null) return FAIL; ${store}`;
  });
  const keys = fields.length === 0 ? 'for (const k in v) return FAIL;' : `for (const k in v) { switch (k) { ${cases} break; default: return FAIL; } }`;
  return generated('validate', [`if (v === null || typeof v !== 'object' || Array.isArray(v)) return FAIL;`, keys], lines, inner);
}

/**
 * A function `name(v)` made from source: the `checks` (each may return
 * FAIL), then a fresh object `o` filled by `lines` (with `x` and `y` to work
 * in, the field forms as `f`), returned. Only shape field names, as JSON
 * string literals, are ever written into the source.
 */
function generated(name: string, checks: readonly string[], lines: readonly string[], inner: readonly Compiled[]): Compiled {
  const source = `return function ${name}(v) {
  ${checks.join('\n  ')}
  const o = {};
  let x, y;
  ${lines.join('\n  ')}
  return o;
};`;
  return new Function('FAIL', 'f', source)(FAIL, inner) as Compiled;
}

function unwrap(f: Shape | OptionalShape): Shape {
  return f.kind === 'optional' ? f.inner : f;
}

/** A shape whose encoding is the value itself (the walk keeps leaves as they are). */
const isLeaf = (sh: Shape): boolean => sh.kind !== 'object' && sh.kind !== 'list';

function encoderOf(shape: Shape): Compiled {
  if (shape.kind === 'list') {
    const item = shape.item;
    if (isLeaf(item)) return (x) => (Array.isArray(x) ? x.map((y: unknown) => y) : FAIL);
    const enc = compiledEncoder(item);
    return (x) => {
      if (!Array.isArray(x)) return FAIL;
      const out: unknown[] = [];
      for (let i = 0; i < x.length; i++) {
        if (!(i in x)) return FAIL;
        const y = enc(x[i]);
        if (y === FAIL) return FAIL;
        out.push(y);
      }
      return out;
    };
  }
  if (shape.kind !== 'object') return (x) => x;
  const fields = Object.entries(shape.fields);
  const inner = fields.map(([, f]) => compiledEncoder(unwrap(f)));
  // A leaf is stored as it is; an object or a list through its own encoder. An optional field absent is null.
  const lines = fields.map(([k, f], i) => {
    const read = `x = v[${literal(k)}];`;
    const store = isLeaf(unwrap(f)) ? `o[${literal(k)}] = x;` : `y = f[${i}](x); if (y === FAIL) return FAIL; o[${literal(k)}] = y;`;
    const absent = f.kind === 'optional' ? `o[${literal(k)}] = null;` : 'return FAIL;';
    return `${read} if (x === undefined || x === null) ${absent} else { ${store} }`;
  });
  return generated('encode', [`if (v === null || typeof v !== 'object') return FAIL;`], lines, inner);
}
