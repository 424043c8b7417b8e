/**
 * Property tests of the shape machinery the three transports share: a value
 * that fits its shape validates to itself, and its gRPC wire form decodes back
 * to exactly what REST and GraphQL send (`encodeOutput`).
 */
import test from 'ava';
import fc from 'fast-check';
import { encodeOutput, fromWire, s, toWire, validate, type JsonValue } from '../../cmd/index.ts';

const numRuns = process.env.CI ? 1000 : 100;

const ITEM = s.object('PropItem', { key: s.string(), on: s.bool(), n: s.optional(s.int()) });
const SHAPE = s.object('PropShape', {
  name: s.string(),
  count: s.optional(s.int({ min: -1000, max: 1000 })),
  ratio: s.optional(s.float()),
  flag: s.bool(),
  kind: s.enum('PropKind', ['a', 'b', 'c']),
  tags: s.list(s.string()),
  labels: s.optional(s.map()),
  context: s.optional(s.json()),
  items: s.list(ITEM),
  maybe_items: s.optional(s.list(ITEM)),
});

const json: fc.Arbitrary<JsonValue> = fc.letrec<{ v: JsonValue }>((tie) => ({
  v: fc.oneof(
    { depthSize: 'small' },
    fc.constant(null),
    fc.boolean(),
    fc.double({ noNaN: true, noDefaultInfinity: true }).map((d) => (Object.is(d, -0) ? 0 : d)),
    fc.string(),
    fc.array(tie('v'), { maxLength: 3 }),
    fc.dictionary(fc.string({ minLength: 1, maxLength: 5 }).filter((k) => k !== '__proto__'), tie('v'), { maxKeys: 3 }),
  ),
})).v;

const item = fc.record({ key: fc.string(), on: fc.boolean(), n: fc.option(fc.integer(), { nil: undefined }) }, { requiredKeys: ['key', 'on'] });

const value = fc.record(
  {
    name: fc.string(),
    count: fc.integer({ min: -1000, max: 1000 }),
    ratio: fc.double({ noNaN: true, noDefaultInfinity: true }).map((d) => (Object.is(d, -0) ? 0 : d)),
    flag: fc.boolean(),
    kind: fc.constantFrom('a', 'b', 'c'),
    tags: fc.array(fc.string(), { maxLength: 4 }),
    labels: fc.dictionary(fc.string({ minLength: 1, maxLength: 5 }).filter((k) => k !== '__proto__'), fc.string(), { maxKeys: 3 }),
    context: json.filter((x) => x !== null), // null is "absent" for an optional field
    items: fc.array(item, { maxLength: 3 }),
    maybe_items: fc.array(item, { minLength: 1, maxLength: 3 }),
  },
  { requiredKeys: ['name', 'flag', 'kind', 'tags', 'items'] },
);

function strip(v: unknown): unknown {
  return JSON.parse(JSON.stringify(v, (_k, x: unknown) => (x === undefined ? undefined : x)));
}

test('a value that fits its shape validates to itself', (t) => {
  fc.assert(
    fc.property(value, (v) => {
      const out = validate(SHAPE, strip(v));
      t.deepEqual(out, strip(v));
    }),
    { numRuns },
  );
});

test('gRPC wire form round-trips to the REST/GraphQL form', (t) => {
  fc.assert(
    fc.property(value, (v) => {
      const rest = encodeOutput(SHAPE, strip(v));
      const back = fromWire(SHAPE, toWire(SHAPE, rest), true);
      t.deepEqual(back, rest);
    }),
    { numRuns },
  );
});

test('an unknown field or a wrong type is refused with invalid_argument naming the path', (t) => {
  fc.assert(
    fc.property(value, fc.string({ minLength: 1, maxLength: 8 }).filter((k) => !(k in SHAPE.fields) && k !== '__proto__'), (v, extra) => {
      const e1 = t.throws(() => validate(SHAPE, { ...strip(v) as object, [extra]: 1 }));
      t.is((e1 as { code?: string }).code, 'invalid_argument');
      t.true(e1?.message.startsWith(`${extra}:`));
      const e2 = t.throws(() => validate(SHAPE, { ...strip(v) as object, flag: 'yes' }));
      t.is((e2 as { code?: string }).code, 'invalid_argument');
      t.true(e2?.message.startsWith('flag:'));
    }),
    { numRuns: Math.min(numRuns, 100) },
  );
});

test('a json field holding undefined members or non-finite numbers goes on the gRPC wire as JSON.stringify writes it', (t) => {
  const JSON_SHAPE = s.object('JsonHolder', { context: s.json() });
  // JSON-like values with undefined members and elements, and numbers that JSON has no form for.
  const loose: fc.Arbitrary<unknown> = fc.letrec<{ v: unknown }>((tie) => ({
    v: fc.oneof(
      { depthSize: 'small' },
      fc.constant(undefined),
      fc.constant(null),
      fc.boolean(),
      fc.string(),
      fc.double(),
      fc.constant(-0),
      fc.array(tie('v'), { maxLength: 4 }),
      fc.dictionary(fc.string({ maxLength: 6 }), tie('v'), { maxKeys: 4 }),
    ),
  })).v;
  fc.assert(
    fc.property(fc.dictionary(fc.string({ maxLength: 6 }), loose, { maxKeys: 4 }), (context) => {
      const back = fromWire(JSON_SHAPE, toWire(JSON_SHAPE, { context }), true) as { context: unknown };
      t.deepEqual(back.context, JSON.parse(JSON.stringify(context)));
    }),
    { numRuns },
  );
});
