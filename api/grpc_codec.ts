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

/** True when a `json` field (a `google.protobuf.Value`) occurs anywhere in the shape (only those need converting on the way out). */
export function carriesJson(shape: Shape | OptionalShape): boolean {
  const sh = shape.kind === 'optional' ? shape.inner : shape;
  if (sh.kind === 'json') return true;
  if (sh.kind === 'list') return carriesJson(sh.item);
  if (sh.kind !== 'object') return false;
  let known = hasJsonCache.get(sh);
  if (known === undefined) {
    hasJsonCache.set(sh, false); // breaks cycles
    known = Object.values(sh.fields).some(carriesJson);
    hasJsonCache.set(sh, known);
  }
  return known;
}

/**
 * JSON form → protobuf object (JSON values wrapped). Values without `json`
 * fields pass through untouched: protobuf.js skips `null` fields itself.
 */
export function toWire(shape: Shape | OptionalShape, value: unknown): unknown {
  if (!carriesJson(shape)) return value === null ? undefined : value;
  return toWireSlow(shape, value, jsonToValue);
}

/**
 * {@link toWire} for an encoder whose `json` fields are declared `bytes`
 * (`generateProto`'s `jsonAsBytes`): each JSON value is given as the bytes
 * of its `google.protobuf.Value` ({@link encodeJsonValue}). A message field
 * and a bytes field are the same on the wire, so the encoded message is the
 * one the `google.protobuf.Value` declaration gives, byte for byte.
 */
export function toWireEncoded(shape: Shape | OptionalShape, value: unknown): unknown {
  if (!carriesJson(shape)) return value === null ? undefined : value;
  return toWireSlow(shape, value, encodeJsonValue);
}

function toWireSlow(shape: Shape | OptionalShape, value: unknown, json: (v: JsonValue) => unknown): unknown {
  if (value === null || value === undefined) return undefined;
  const sh = shape.kind === 'optional' ? shape.inner : shape;
  switch (sh.kind) {
    case 'json':
      return json(value as JsonValue);
    case 'list':
      return Array.isArray(value) ? value.map((v) => toWireSlow(sh.item, v, json)) : value;
    case 'object': {
      if (typeof value !== 'object') return value;
      const out: Record<string, unknown> = {};
      for (const [k, f] of fieldList(sh)) {
        const w = toWireSlow(f, (value as Record<string, unknown>)[k], json);
        if (w !== undefined) out[k] = w;
      }
      return out;
    }
    default:
      return value;
  }
}

// ------------------------------------------------ google.protobuf.Value, encoded directly
//
// The message (google/protobuf/struct.proto): Value is a oneof of null_value = 1
// (enum, varint), number_value = 2 (double), string_value = 3, bool_value = 4
// (varint), struct_value = 5 (Struct), list_value = 6 (ListValue); Struct is
// `map<string, Value> fields = 1`, each entry a message of key = 1 and
// value = 2; ListValue is `repeated Value values = 1`. The bytes are those
// protobuf.js writes for jsonToValue's object through `fromObject` and
// `encode`: the oneof member always written, map entries in the object's key
// order with the key always written (test/api/grpc_json_value.property.test.ts).
// Two passes: the sizes of every length-delimited part, then the bytes into
// one buffer of the exact size (protobuf.js forks a writer per nested
// message and copies each into its parent).

const varintSize = (n: number): number => (n < 0x80 ? 1 : n < 0x4000 ? 2 : n < 0x200000 ? 3 : n < 0x10000000 ? 4 : 5);

/** A length-delimited part of `n` bytes with its one-byte tag. */
const delimited = (n: number): number => 1 + varintSize(n) + n;

/** The keys a JSON object's Struct holds, as jsonToValue takes them: own enumerable keys whose value is defined. */
function definedKeys(o: object): string[] {
  const keys = Object.keys(o);
  for (let i = 0; i < keys.length; i++) {
    if ((o as Record<string, unknown>)[keys[i] as string] === undefined) return keys.filter((k) => (o as Record<string, unknown>)[k] !== undefined);
  }
  return keys;
}

/** Pass one: the size of v's Value; pushes the size of each length-delimited part in the order pass two writes them. */
function sizeValue(v: unknown, sizes: number[]): number {
  if (v === null || v === undefined) return 2;
  switch (typeof v) {
    case 'number':
      return Number.isFinite(v) ? 9 : 2;
    case 'boolean':
      return 2;
    case 'string': {
      const n = Buffer.byteLength(v, 'utf8');
      sizes.push(n);
      return delimited(n);
    }
  }
  const at = sizes.push(0) - 1;
  let body = 0;
  if (Array.isArray(v)) {
    for (const x of v) {
      const slot = sizes.push(0) - 1;
      const n = sizeValue(x, sizes);
      sizes[slot] = n;
      body += delimited(n);
    }
  } else {
    for (const k of definedKeys(v as object)) {
      const entrySlot = sizes.push(0) - 1;
      const kn = Buffer.byteLength(k, 'utf8');
      sizes.push(kn);
      const valueSlot = sizes.push(0) - 1;
      const vn = sizeValue((v as Record<string, unknown>)[k], sizes);
      sizes[valueSlot] = vn;
      const entry = delimited(kn) + delimited(vn);
      sizes[entrySlot] = entry;
      body += delimited(entry);
    }
  }
  sizes[at] = body;
  return delimited(body);
}

/** Pass two: writes what {@link sizeValue} measured. */
class ValueWriter {
  pos = 0;
  #i = 0;
  readonly buf: Buffer;
  readonly sizes: readonly number[];

  constructor(buf: Buffer, sizes: readonly number[]) {
    this.buf = buf;
    this.sizes = sizes;
  }

  #varint(n: number): void {
    const buf = this.buf;
    while (n > 0x7f) {
      buf[this.pos++] = (n & 0x7f) | 0x80;
      n >>>= 7;
    }
    buf[this.pos++] = n;
  }

  /** A tag and the next measured length. */
  #open(tag: number): void {
    this.buf[this.pos++] = tag;
    this.#varint(this.sizes[this.#i++] as number);
  }

  #string(s: string): void {
    const n = this.sizes[this.#i - 1] as number;
    if (n > 0) this.buf.write(s, this.pos, n, 'utf8');
    this.pos += n;
  }

  value(v: unknown): void {
    const buf = this.buf;
    if (v === null || v === undefined) {
      buf[this.pos++] = 0x08;
      buf[this.pos++] = 0;
      return;
    }
    switch (typeof v) {
      case 'number':
        if (!Number.isFinite(v)) {
          buf[this.pos++] = 0x08;
          buf[this.pos++] = 0;
        } else {
          buf[this.pos++] = 0x11;
          this.pos = buf.writeDoubleLE(v === 0 ? 0 : v, this.pos);
        }
        return;
      case 'boolean':
        buf[this.pos++] = 0x20;
        buf[this.pos++] = v ? 1 : 0;
        return;
      case 'string':
        this.#open(0x1a);
        this.#string(v);
        return;
    }
    if (Array.isArray(v)) {
      this.#open(0x32);
      for (const x of v) {
        this.#open(0x0a);
        this.value(x);
      }
      return;
    }
    this.#open(0x2a);
    for (const k of definedKeys(v as object)) {
      this.#open(0x0a);
      this.#open(0x0a);
      this.#string(k);
      this.#open(0x12);
      this.value((v as Record<string, unknown>)[k]);
    }
  }
}

/**
 * The bytes of a JSON value's `google.protobuf.Value`, as JSON.stringify
 * would write the value (see jsonToValue): what protobuf.js writes for
 * `Value.fromObject(jsonToValue(v))`, without building either object.
 */
export function encodeJsonValue(v: JsonValue): Buffer {
  const sizes: number[] = [];
  const n = sizeValue(v, sizes);
  const w = new ValueWriter(Buffer.allocUnsafe(n), sizes);
  w.value(v);
  if (w.pos !== n) throw new Error(`google.protobuf.Value: wrote ${w.pos} of ${n} bytes`);
  return w.buf;
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
