/**
 * A small typed shape builder for operation inputs and outputs.
 *
 * One shape declares a wire object once; from it the transports derive the
 * runtime validation of inputs (precise `invalid_argument` messages naming the
 * field path), the normalised encoding of outputs, the GraphQL types, the
 * protobuf messages and `docs/api.md`. The TypeScript type of a value is
 * inferred with {@link Infer}.
 */
import { LatchkeyError } from '../engine/errors.ts';
import { FAIL, compiledEncoder, compiledValidator, type ValidationRules } from './shape_compiled.ts';

import type {
  BoolShape,
  EnumShape,
  Fields,
  FloatShape,
  GraphqlNote,
  Infer,
  IntShape,
  JsonShape,
  JsonValue,
  ListShape,
  MapShape,
  ObjectShape,
  OptionalShape,
  Shape,
  StringShape,
} from './shape_types.ts';

export type * from './shape_types.ts';

/** The shape builder. */
export const s = {
  string: (opts: { minLength?: number; maxLength?: number; text?: boolean; doc?: string } = {}): StringShape => ({ kind: 'string', ...opts }),
  int: (opts: { min?: number; max?: number; doc?: string } = {}): IntShape => ({ kind: 'int', ...opts }),
  float: (opts: { doc?: string } = {}): FloatShape => ({ kind: 'float', ...opts }),
  bool: (opts: { doc?: string } = {}): BoolShape => ({ kind: 'bool', ...opts }),
  enum: <const V extends string>(name: string, values: readonly V[], opts: { doc?: string } = {}): EnumShape<V> => ({
    kind: 'enum',
    name,
    values,
    ...opts,
  }),
  json: (opts: { doc?: string } = {}): JsonShape => ({ kind: 'json', ...opts }),
  map: (opts: { doc?: string } = {}): MapShape => ({ kind: 'map', ...opts }),
  list: <I extends Shape>(item: I, opts: { minItems?: number; maxItems?: number; doc?: string } = {}): ListShape<I> => ({
    kind: 'list',
    item,
    ...opts,
  }),
  optional: <I extends Shape>(inner: I): OptionalShape<I> => ({ kind: 'optional', inner }),
  object: <const F extends Fields>(name: string, fields: F, opts: { doc?: string; graphql?: GraphqlNote } = {}): ObjectShape<F> => ({
    kind: 'object',
    name,
    fields,
    ...opts,
  }),
} as const;

/** The empty input object (operations without request fields). */
export const EMPTY = s.object('Empty', {});

/** `{message}`: the payload of operations without a documented response. */
export const MESSAGE = s.object('Response', { message: s.string() });

/**
 * Where a value sits in a request: the root's path (a string, usually empty)
 * or a field or index under a parent. Built as a small record while walking
 * and written out as text only for an error, so a valid request builds no
 * path strings.
 */
type Path = string | { readonly parent: Path; readonly key: string | number };

function pathText(path: Path): string {
  return typeof path === 'string' ? path : join(pathText(path.parent), path.key);
}

function invalid(at: Path, problem: string): LatchkeyError {
  const path = pathText(at);
  return new LatchkeyError('invalid_argument', `${path || 'request'}: ${problem}`, {
    reason: 'invalid_field',
    details: { field: path },
  });
}

/** The fields of each object shape as a list, made once per shape (shapes are built at start-up and never change). */
const FIELD_LISTS = new WeakMap<object, readonly (readonly [string, Shape | OptionalShape])[]>();

export function fieldList(shape: ObjectShape): readonly (readonly [string, Shape | OptionalShape])[] {
  let list = FIELD_LISTS.get(shape);
  if (list === undefined) FIELD_LISTS.set(shape, (list = Object.entries(shape.fields)));
  return list;
}

/** The bound of an input string whose shape sets none (characters, as `maxLength`). */
export const DEFAULT_MAX_LENGTH = 16_384;

/**
 * Characters no one-line input string may hold: C0 controls (NUL included:
 * SQLite cuts a statement at it, PostgreSQL refuses it in text, MySQL keeps
 * it), DEL, C1 controls and the Unicode line/paragraph separators.
 */
const LINE_FORBIDDEN = /[\u0000-\u001F\u007F-\u009F\u2028\u2029]/u;
/** In multi-line text ({@link StringShape.text}): the same but tab, LF and CR (the line separators are allowed too). */
const TEXT_FORBIDDEN = /[\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F-\u009F]/u;

/**
 * Why a string may not be stored, or undefined: a forbidden control character
 * (named by its code point) or a lone UTF-16 surrogate (not Unicode text: the
 * three SQL backends would each store something else).
 */
export function stringProblem(value: string, text: boolean): string | undefined {
  if (!value.isWellFormed()) return 'must be valid Unicode (a lone surrogate was found)';
  const m = (text ? TEXT_FORBIDDEN : LINE_FORBIDDEN).exec(value);
  if (m !== null) return `must not contain control characters (U+${m[0].codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')})`;
  return undefined;
}

/** Keys that would reach an object's prototype when copied by assignment. */
const PROTOTYPE_KEYS = new Set(['__proto__', 'constructor', 'prototype']);

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'a list';
  return `a ${typeof value}`;
}

function join(path: string, key: string | number): string {
  if (typeof key === 'number') return `${path}[${key}]`;
  return path ? `${path}.${key}` : key;
}

/**
 * Validates `value` against `shape` and returns a fresh value that holds only
 * the declared fields. Throws `invalid_argument` (reason `invalid_field`)
 * naming the first offending field path, e.g. `checks[3].relation: is required`.
 * Unknown fields are rejected so that a typo never silently changes meaning.
 */
export function validate<S extends Shape>(shape: S, value: unknown, path = ''): Infer<S> {
  // The shape's compiled form answers a value it accepts; anything else takes the walk, which names the problem.
  const fast = compiledValidator(shape, RULES)(value);
  return (fast !== FAIL ? fast : check(shape, value, path)) as Infer<S>;
}

/** {@link validate} by the walk alone (the reference the compiled forms are tested against). */
export function validateByWalk<S extends Shape>(shape: S, value: unknown, path = ''): Infer<S> {
  return check(shape, value, path) as Infer<S>;
}

/** What the compiled validators share with the walk (shape_compiled.ts). */
const RULES: ValidationRules = {
  stringOk: (value, text) => stringProblem(value, text) === undefined,
  defaultMaxLength: DEFAULT_MAX_LENGTH,
  walk(shape, value) {
    try {
      return check(shape, value, '');
    } catch {
      return FAIL;
    }
  },
};

function check(shape: Shape, value: unknown, path: Path): unknown {
  switch (shape.kind) {
    case 'string':
      if (typeof value !== 'string') throw invalid(path, `must be a string, got ${describe(value)}`);
      if (shape.minLength !== undefined && value.length < shape.minLength)
        throw invalid(path, shape.minLength === 1 ? 'must not be empty' : `must have at least ${shape.minLength} characters`);
      if (value.length > (shape.maxLength ?? DEFAULT_MAX_LENGTH)) throw invalid(path, `must have at most ${shape.maxLength ?? DEFAULT_MAX_LENGTH} characters`);
      {
        const problem = stringProblem(value, shape.text === true);
        if (problem !== undefined) throw invalid(path, problem);
      }
      return value;
    case 'int':
      if (typeof value !== 'number' || !Number.isSafeInteger(value))
        throw invalid(path, `must be an integer, got ${describe(value)}`);
      if (shape.min !== undefined && value < shape.min) throw invalid(path, `must be at least ${shape.min}`);
      if (shape.max !== undefined && value > shape.max) throw invalid(path, `must be at most ${shape.max}`);
      return value;
    case 'float':
      if (typeof value !== 'number' || !Number.isFinite(value)) throw invalid(path, `must be a number, got ${describe(value)}`);
      return value;
    case 'bool':
      if (typeof value !== 'boolean') throw invalid(path, `must be a boolean, got ${describe(value)}`);
      return value;
    case 'enum':
      if (typeof value !== 'string' || !shape.values.includes(value))
        throw invalid(path, `must be one of ${shape.values.join(', ')}`);
      return value;
    case 'json':
      return checkJson(value, path, 0);
    case 'map': {
      if (value === null || typeof value !== 'object' || Array.isArray(value))
        throw invalid(path, `must be an object of strings, got ${describe(value)}`);
      const out: Record<string, string> = {};
      const entries = Object.entries(value);
      if (entries.length > MAX_MAP_ENTRIES) throw invalid(path, `must have at most ${MAX_MAP_ENTRIES} entries`);
      for (const [k, v] of entries) {
        const keyProblem = PROTOTYPE_KEYS.has(k) ? 'is not an allowed key' : k.length > 256 ? 'key must have at most 256 characters' : stringProblem(k, false);
        if (keyProblem !== undefined) throw invalid({ parent: path, key: k.slice(0, 64) }, keyProblem);
        if (typeof v !== 'string') throw invalid({ parent: path, key: k }, `must be a string, got ${describe(v)}`);
        if (v.length > DEFAULT_MAX_LENGTH) throw invalid({ parent: path, key: k }, `must have at most ${DEFAULT_MAX_LENGTH} characters`);
        const problem = stringProblem(v, false);
        if (problem !== undefined) throw invalid({ parent: path, key: k }, problem);
        out[k] = v;
      }
      return out;
    }
    case 'list': {
      if (!Array.isArray(value)) throw invalid(path, `must be a list, got ${describe(value)}`);
      if (shape.minItems !== undefined && value.length < shape.minItems)
        throw invalid(path, `must have at least ${shape.minItems} entr${shape.minItems === 1 ? 'y' : 'ies'}`);
      if (shape.maxItems !== undefined && value.length > shape.maxItems)
        throw invalid(path, `must have at most ${shape.maxItems} entries`);
      return value.map((item, i) => check(shape.item, item, { parent: path, key: i }));
    }
    case 'object': {
      if (value === null || typeof value !== 'object' || Array.isArray(value))
        throw invalid(path, `must be an object, got ${describe(value)}`);
      const input = value as Record<string, unknown>;
      for (const key of Object.keys(input)) {
        if (!Object.hasOwn(shape.fields, key)) throw invalid({ parent: path, key }, 'is not a known field');
      }
      const out: Record<string, unknown> = {};
      for (const [key, field] of fieldList(shape)) {
        const v = input[key];
        if (field.kind === 'optional') {
          if (v === undefined || v === null) continue;
          out[key] = check(field.inner, v, { parent: path, key });
        } else {
          if (v === undefined || v === null) throw invalid({ parent: path, key }, 'is required');
          out[key] = check(field, v, { parent: path, key });
        }
      }
      return out;
    }
  }
}

const MAX_JSON_DEPTH = 32;
/** Entries of a `map` input (e.g. webhook headers). */
const MAX_MAP_ENTRIES = 100;

function checkJson(value: unknown, path: Path, depth: number): JsonValue {
  if (depth > MAX_JSON_DEPTH) throw invalid(path, `is nested deeper than ${MAX_JSON_DEPTH} levels`);
  if (typeof value === 'string') {
    const problem = stringProblem(value, true);
    if (problem !== undefined) throw invalid(path, problem);
    return value;
  }
  if (value === null || typeof value === 'boolean') return value;
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw invalid(path, 'must be a finite number');
    return value;
  }
  if (Array.isArray(value)) return value.map((v, i) => checkJson(v, { parent: path, key: i }, depth + 1));
  if (typeof value === 'object') {
    const out: Record<string, JsonValue> = {};
    for (const [k, v] of Object.entries(value)) {
      const keyProblem = PROTOTYPE_KEYS.has(k) ? 'is not an allowed key' : stringProblem(k, false);
      if (keyProblem !== undefined) throw invalid({ parent: path, key: k.slice(0, 64) }, keyProblem);
      out[k] = checkJson(v, { parent: path, key: k }, depth + 1);
    }
    return out;
  }
  throw invalid(path, `must be JSON, got ${describe(value)}`);
}

/**
 * Normalises a handler's result to the wire form of `shape`: only declared
 * fields are kept, absent optional fields become `null` (as GraphQL reports
 * them), so REST, GraphQL and gRPC answer byte-for-byte the same object.
 * A missing required field is a programming error and throws (it surfaces to
 * the client as `internal`).
 */
export function encodeOutput(shape: Shape, value: unknown, path = ''): unknown {
  // The shape's compiled form answers a well-formed result; anything else takes the walk, which names the problem.
  const fast = compiledEncoder(shape)(value);
  return fast !== FAIL ? fast : encodeByWalk(shape, value, path);
}

/** {@link encodeOutput} by the walk alone (the reference the compiled forms are tested against). */
export function encodeByWalk(shape: Shape, value: unknown, path = ''): unknown {
  switch (shape.kind) {
    case 'object': {
      if (value === null || typeof value !== 'object') throw new Error(`output ${path || shape.name} is not an object`);
      const input = value as Record<string, unknown>;
      const out: Record<string, unknown> = {};
      for (const [key, field] of fieldList(shape)) {
        const v = input[key];
        if (field.kind === 'optional') {
          out[key] = v === undefined || v === null ? null : encode(field.inner, v, path, key);
        } else {
          if (v === undefined || v === null) throw new Error(`output field ${join(path, key)} is missing`);
          out[key] = encode(field, v, path, key);
        }
      }
      return out;
    }
    case 'list':
      if (!Array.isArray(value)) throw new Error(`output ${path} is not a list`);
      return value.map((v, i) => encode(shape.item, v, path, i));
    default:
      return value;
  }
}

/** {@link encodeOutput} of a field or item: its path is written out only for an object or a list, the shapes that may report it. */
function encode(shape: Shape, value: unknown, parent: string, key: string | number): unknown {
  return shape.kind === 'object' || shape.kind === 'list' ? encodeByWalk(shape, value, join(parent, key)) : value;
}

/** Every named object and enum reachable from `shape`, each once, dependencies first. */
export function namedTypes(roots: readonly Shape[]): (ObjectShape | EnumShape)[] {
  const seen = new Map<string, ObjectShape | EnumShape>();
  const visit = (sh: Shape | OptionalShape): void => {
    if (sh.kind === 'optional') return visit(sh.inner);
    if (sh.kind === 'list') return visit(sh.item);
    if (sh.kind === 'enum') {
      const prior = seen.get(sh.name);
      if (prior && prior !== sh && JSON.stringify(prior) !== JSON.stringify(sh))
        throw new Error(`two different shapes are named ${sh.name}`);
      seen.set(sh.name, sh);
      return;
    }
    if (sh.kind !== 'object') return;
    const prior = seen.get(sh.name);
    if (prior) {
      if (prior !== sh && JSON.stringify(prior) !== JSON.stringify(sh)) throw new Error(`two different shapes are named ${sh.name}`);
      return;
    }
    for (const f of Object.values(sh.fields)) visit(f);
    seen.set(sh.name, sh);
  };
  for (const r of roots) visit(r);
  return [...seen.values()];
}

/** A one-line human description of a shape, for docs: `string`, `Tuple[]`, `map<string,string>`. */
export function typeLabel(sh: Shape | OptionalShape): string {
  switch (sh.kind) {
    case 'optional':
      return typeLabel(sh.inner);
    case 'list':
      return `${typeLabel(sh.item)}[]`;
    case 'map':
      return 'map<string,string>';
    case 'object':
    case 'enum':
      return sh.name;
    default:
      return sh.kind;
  }
}
