/**
 * The server writes a JSON value's `google.protobuf.Value` itself
 * (grpc_codec.ts `encodeJsonValue`), through a reading of the answer's
 * message with its JSON fields declared `bytes` (transports/grpc/server.ts).
 * Clients read those answers with the published `.proto`, so the bytes must
 * be the ones protobuf.js writes from that `.proto` for the same answer:
 * compared here byte for byte, for any JSON value, and read back.
 */
import test from 'ava';
import fc from 'fast-check';
import { carriesJson, encodeJsonValue, fromWire, generateProto, OPERATIONS, PROTO_PACKAGE, toWire, toWireEncoded, type AnyOperation, type JsonValue, type OptionalShape, type Shape } from '../../api/index.ts';
import { loadPackageDefinition } from '../../transports/grpc/package_definition.ts';

const numRuns = process.env.CI ? 1000 : 200;

type Serialize = (message: unknown) => Buffer;
type Deserialize = (bytes: Buffer) => unknown;
type Methods = Record<string, Record<string, { responseSerialize: Serialize; responseDeserialize: Deserialize }>>;

const grpcRows: readonly AnyOperation[] = OPERATIONS.filter((op) => op.protocols.includes('grpc'));
const jsonRows = grpcRows.filter((op) => op.stream !== true && carriesJson(op.output));
const published = loadPackageDefinition(generateProto(OPERATIONS)) as unknown as Methods;
const asBytes = loadPackageDefinition(generateProto(jsonRows, { jsonAsBytes: true })) as unknown as Methods;

const validateJwt = OPERATIONS.find((op) => op.name === 'validate_jwt_token') as AnyOperation;
const method = (defs: Methods, op: AnyOperation) => {
  const m = defs[`${PROTO_PACKAGE}.Latchkey`]?.[op.grpc?.method as string] ?? defs[`${PROTO_PACKAGE}.LatchkeyAdmin`]?.[op.grpc?.method as string];
  if (m === undefined) throw new Error(`no method for ${op.name}`);
  return m;
};

/** Strings of any well-formed text, short and long (protobuf.js writes strings under 40 characters with its own UTF-8 writer). */
const text = fc.oneof(fc.string({ unit: 'grapheme', maxLength: 12 }), fc.string({ unit: 'binary', minLength: 30, maxLength: 300 }).filter((x) => x.isWellFormed()), fc.string({ maxLength: 3 }));
/** Keys: any text but `__proto__`, which a plain object built by assignment cannot hold (jsonToValue's, protobuf.js's). */
const key = text.filter((k) => k !== '__proto__');

/** JSON values and what JSON.stringify also takes: -0, NaN and infinities (null on the wire), undefined members and elements. */
const value: fc.Arbitrary<unknown> = fc.letrec<{ v: unknown }>((tie) => ({
  v: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.constant(null),
    fc.boolean(),
    fc.double(),
    fc.integer({ min: -(2 ** 40), max: 2 ** 40 }),
    fc.constantFrom(0, -0, Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, Number.MAX_VALUE, Number.MIN_VALUE),
    text,
    fc.array(fc.oneof(tie('v'), fc.constant(undefined)), { maxLength: 5 }),
    fc.dictionary(key, fc.oneof(tie('v'), fc.constant(undefined)), { maxKeys: 6 }),
  ),
})).v;

/** Large parts, so that lengths take several varint bytes. */
const large = fc.oneof(
  fc.array(text, { minLength: 40, maxLength: 200 }),
  fc.dictionary(key, text, { minKeys: 20, maxKeys: 80 }),
  fc.string({ minLength: 200, maxLength: 20_000 }),
);

const answerOf = (claims: unknown): Record<string, unknown> => ({ is_valid: true, claims });

test('a validate_jwt_token answer is encoded byte for byte as protobuf.js encodes it from the published .proto', (t) => {
  const ours = method(asBytes, validateJwt).responseSerialize;
  const theirs = method(published, validateJwt).responseSerialize;
  fc.assert(
    fc.property(fc.oneof(value, large), (claims) => {
      const answer = answerOf(claims);
      const a = ours(toWireEncoded(validateJwt.output, answer));
      const b = theirs(toWire(validateJwt.output, answer));
      t.deepEqual(Buffer.from(a), Buffer.from(b));
    }),
    { numRuns },
  );
});

/** An answer of the shape with every field present (optional ones too) and `json` as each JSON field's value. */
function answerOfShape(shape: Shape | OptionalShape, json: unknown, depth = 0): unknown {
  const sh = shape.kind === 'optional' ? shape.inner : shape;
  switch (sh.kind) {
    case 'string':
      return 'text';
    case 'int':
      return 7;
    case 'float':
      return 1.5;
    case 'bool':
      return true;
    case 'enum':
      return sh.values[0];
    case 'map':
      return { a: 'b' };
    case 'json':
      return json;
    case 'list':
      return [answerOfShape(sh.item, json, depth + 1), answerOfShape(sh.item, json, depth + 1)];
    case 'object':
      // Recursive shapes stop at a depth (their optional fields left out).
      return Object.fromEntries(Object.entries(sh.fields).flatMap(([k, f]) => (depth > 4 && f.kind === 'optional' ? [] : [[k, answerOfShape(f, json, depth + 1)]])));
  }
}

test('every unary row whose answer holds JSON is encoded byte for byte as from the published .proto', (t) => {
  t.true(jsonRows.length > 1);
  fc.assert(
    fc.property(value.filter((v) => v !== null && v !== undefined), (json) => {
      for (const op of jsonRows) {
        const answer = answerOfShape(op.output, json);
        const a = method(asBytes, op).responseSerialize(toWireEncoded(op.output, answer));
        const b = method(published, op).responseSerialize(toWire(op.output, answer));
        t.deepEqual(Buffer.from(a), Buffer.from(b), op.name);
      }
    }),
    { numRuns: Math.ceil(numRuns / 10) },
  );
});

test('a JSON value read back from its encoded answer is what JSON.stringify writes of it', (t) => {
  const ours = method(asBytes, validateJwt).responseSerialize;
  const read = method(published, validateJwt).responseDeserialize;
  fc.assert(
    fc.property(fc.dictionary(key, value, { maxKeys: 8 }), (claims) => {
      const back = fromWire(validateJwt.output, read(Buffer.from(ours(toWireEncoded(validateJwt.output, answerOf(claims))))), true);
      t.deepEqual(back['claims'], JSON.parse(JSON.stringify(claims)) as JsonValue);
    }),
    { numRuns },
  );
});

test('a lone surrogate is written as U+FFFD, as the REST answer writes it, and the buffer is exactly full', (t) => {
  const bytes = encodeJsonValue({ s: 'a\ud800b' });
  const read = method(published, validateJwt).responseDeserialize;
  const wrapped = Buffer.concat([Buffer.from([0x08, 0x01, 0x12, bytes.length]), bytes]);
  t.deepEqual(fromWire(validateJwt.output, read(wrapped), true)['claims'], { s: 'a\ufffdb' });
  t.is(encodeJsonValue(null).length, 2);
  t.deepEqual([...encodeJsonValue(-0)], [0x11, 0, 0, 0, 0, 0, 0, 0, 0]);
});

test('the JSON-as-bytes reading declares the published messages with only their JSON fields changed', (t) => {
  t.true(jsonRows.includes(validateJwt));
  const publishedText = generateProto(OPERATIONS);
  const bytesText = generateProto(jsonRows, { jsonAsBytes: true });
  t.false(bytesText.includes('google.protobuf.Value '));
  // Each message of the second reading is in the published text, with `bytes` where it says `google.protobuf.Value`.
  const messages = bytesText.split('\n\n').filter((m) => m.includes('message '));
  t.true(messages.length > 0);
  for (const m of messages) {
    const body = m.slice(m.indexOf('message ')).trimEnd();
    const name = /^message (\w+)/.exec(body)?.[1] as string;
    const publishedBody = publishedText.slice(publishedText.indexOf(`message ${name} {`));
    const expected = publishedBody.slice(0, publishedBody.indexOf('\n}') + 2).replaceAll('google.protobuf.Value ', 'bytes ');
    t.is(body, expected, name);
  }
});
