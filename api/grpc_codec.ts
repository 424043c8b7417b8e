/**
 * Converts between the JSON form of a shape's value and its protobuf-js object
 * form as @grpc/proto-loader reads and writes it (options in {@link LOADER_OPTIONS}).
 */
import { ERROR_STATUS, type ErrorCode } from '../engine/errors.ts';
import { fieldList, type JsonValue, type ObjectShape, type OptionalShape, type Shape } from './shape.ts';

/**
 * proto-loader options used by the server and by clients (a plain object that
 * proto-loader's `Options` accepts, so the contract needs no gRPC library).
 */
export const LOADER_OPTIONS: {
  readonly keepCase: true;
  readonly longs: NumberConstructor;
  readonly enums: StringConstructor;
  readonly defaults: false;
  readonly arrays: false;
  readonly objects: false;
  readonly oneofs: true;
} = {
  keepCase: true,
  longs: Number,
  enums: String,
  defaults: false,
  arrays: false,
  objects: false,
  oneofs: true,
};

type PbValue = Record<string, unknown>;

/**
 * A JSON value as a `google.protobuf.Value`, as JSON.stringify would write it:
 * an object's undefined fields are left out, an undefined list element and a
 * number that is not finite become null, and -0 is 0.
 */
function jsonToValue(v: JsonValue | undefined): PbValue {
  if (v === null || v === undefined) return { nullValue: 'NULL_VALUE' };
  if (typeof v === 'number') return Number.isFinite(v) ? { numberValue: v === 0 ? 0 : v } : { nullValue: 'NULL_VALUE' };
  if (typeof v === 'string') return { stringValue: v };
  if (typeof v === 'boolean') return { boolValue: v };
  if (Array.isArray(v)) return { listValue: { values: v.map((x) => jsonToValue(x)) } };
  const fields: Record<string, PbValue> = {};
  for (const [k, x] of Object.entries(v)) if (x !== undefined) fields[k] = jsonToValue(x);
  return { structValue: { fields } };
}

function valueToJson(v: unknown): JsonValue {
  if (v === null || v === undefined || typeof v !== 'object') return null;
  const o = v as Record<string, unknown>;
  const kind = typeof o.kind === 'string' ? o.kind : Object.keys(o).find((k) => k.endsWith('Value'));
  switch (kind) {
    case 'numberValue':
      return Number(o.numberValue);
    case 'stringValue':
      return String(o.stringValue);
    case 'boolValue':
      return Boolean(o.boolValue);
    case 'listValue':
      return (((o.listValue as { values?: unknown[] } | undefined)?.values ?? []) as unknown[]).map(valueToJson);
    case 'structValue': {
      const fields = ((o.structValue as { fields?: Record<string, unknown> } | undefined)?.fields ?? {}) as Record<string, unknown>;
      return Object.fromEntries(Object.entries(fields).map(([k, x]) => [k, valueToJson(x)]));
    }
    default:
      return null;
  }
}

const hasJsonCache = new WeakMap<object, boolean>();

/** True when a `json` field occurs anywhere in the shape (only those need converting on the way out). */
function hasJson(shape: Shape | OptionalShape): boolean {
  const sh = shape.kind === 'optional' ? shape.inner : shape;
  if (sh.kind === 'json') return true;
  if (sh.kind === 'list') return hasJson(sh.item);
  if (sh.kind !== 'object') return false;
  let known = hasJsonCache.get(sh);
  if (known === undefined) {
    hasJsonCache.set(sh, false); // breaks cycles
    known = Object.values(sh.fields).some(hasJson);
    hasJsonCache.set(sh, known);
  }
  return known;
}

/**
 * JSON form → protobuf object (JSON values wrapped). Values without `json`
 * fields pass through untouched: protobuf.js skips `null` fields itself.
 */
export function toWire(shape: Shape | OptionalShape, value: unknown): unknown {
  if (!hasJson(shape)) return value === null ? undefined : value;
  return toWireSlow(shape, value);
}

function toWireSlow(shape: Shape | OptionalShape, value: unknown): unknown {
  if (value === null || value === undefined) return undefined;
  const sh = shape.kind === 'optional' ? shape.inner : shape;
  switch (sh.kind) {
    case 'json':
      return jsonToValue(value as JsonValue);
    case 'list':
      return Array.isArray(value) ? value.map((v) => toWireSlow(sh.item, v)) : value;
    case 'object': {
      if (typeof value !== 'object') return value;
      const out: Record<string, unknown> = {};
      for (const [k, f] of fieldList(sh)) {
        const w = toWireSlow(f, (value as Record<string, unknown>)[k]);
        if (w !== undefined) out[k] = w;
      }
      return out;
    }
    default:
      return value;
  }
}

function zero(sh: Shape): unknown {
  switch (sh.kind) {
    case 'string':
    case 'enum':
      return '';
    case 'int':
    case 'float':
      return 0;
    case 'bool':
      return false;
    case 'list':
      return [];
    case 'map':
      return {};
    default:
      return null;
  }
}

/**
 * Protobuf object → JSON form. For requests (`fill` false) absent fields stay
 * absent so validation reports them. For responses (`fill` true) absent
 * optional fields become `null` and absent required scalars their proto3 zero
 * value, giving exactly the object REST and GraphQL return.
 */
export function fromWire(shape: ObjectShape, value: unknown, fill: boolean): Record<string, unknown> {
  return fromWireAny(shape, value, fill) as Record<string, unknown>;
}

function fromWireAny(shape: Shape | OptionalShape, value: unknown, fill: boolean): unknown {
  const optional = shape.kind === 'optional';
  const sh = shape.kind === 'optional' ? shape.inner : shape;
  if (value === null || value === undefined) {
    // proto3 cannot tell an empty list or map from an absent one.
    if (!fill) return !optional && (sh.kind === 'list' || sh.kind === 'map') ? zero(sh) : undefined;
    return optional ? null : zero(sh);
  }
  switch (sh.kind) {
    case 'json':
      return valueToJson(value);
    case 'list':
      return Array.isArray(value) ? value.map((v) => fromWireAny(sh.item, v, fill)) : value;
    case 'map':
      return { ...(value as Record<string, string>) };
    case 'object': {
      const out: Record<string, unknown> = {};
      for (const [k, f] of fieldList(sh)) {
        const v = fromWireAny(f, (value as Record<string, unknown>)[k], fill);
        if (v !== undefined) out[k] = v;
      }
      return out;
    }
    default:
      return value;
  }
}

/** gRPC status number → the first error code mapped to it (for clients without the `x-error-code` trailer). */
export const ERROR_NAMES: Readonly<Record<number, ErrorCode>> = Object.freeze(
  Object.entries(ERROR_STATUS).reduce<Record<number, ErrorCode>>((acc, [code, st]) => {
    acc[st.grpc] ??= code as ErrorCode;
    return acc;
  }, {}),
);
