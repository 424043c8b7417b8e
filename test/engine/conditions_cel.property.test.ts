/**
 * Properties of the CEL rules added to the library to answer as cel-go
 * (internal helpers `compileCel` and the duration and timestamp values),
 * each against a reference computed in exact integer nanoseconds:
 * timestamp ± duration arithmetic (round trips, operand order, the range),
 * ordering and equality of timestamps and durations to the nanosecond,
 * `string(timestamp)` and `timestamp(string)` as inverses, accessors in a
 * fixed-offset zone, and bytes literals and their ordering.
 */
import test from 'ava';
import fc from 'fast-check';
import { compileCel } from '../../engine/conditions/cel.ts';
import { durationNanos, durationOf, formatTimestamp, parseRfc3339, timestampNanos, timestampOf } from '../../engine/conditions/cel_time.ts';

const NS = 1_000_000_000n;
/** cel-go's timestamp range, in nanoseconds. */
const MIN_NS = -62_135_596_800n * NS;
const MAX_NS = 253_402_300_799n * NS + 999_999_999n;
const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

const TS = 'google.protobuf.Timestamp';
const DUR = 'google.protobuf.Duration';

const floorSeconds = (ns: bigint): bigint => (ns < 0n && ns % NS !== 0n ? ns / NS - 1n : ns / NS);
const inRange = (ns: bigint): boolean => floorSeconds(ns) >= MIN_NS / NS && floorSeconds(ns) <= MAX_NS / NS;

/** Timestamps over the whole range, near its ends, and near each other with sub-millisecond parts. */
const timestampArb = fc.oneof(
  fc.bigInt({ min: MIN_NS, max: MAX_NS }),
  fc.bigInt({ min: MIN_NS, max: MIN_NS + 10n * NS }),
  fc.bigInt({ min: MAX_NS - 10n * NS, max: MAX_NS }),
  fc.bigInt({ min: -10n * NS, max: 10n * NS }),
);
/** Durations over Go's int64 nanoseconds, and small ones. */
const durationArb = fc.oneof(fc.bigInt({ min: INT64_MIN, max: INT64_MAX }), fc.bigInt({ min: -10n * NS, max: 10n * NS }), fc.bigInt({ min: -1000n, max: 1000n }));

const sumProgram = compileCel('t + d', { t: TS, d: DUR });
const reversedProgram = compileCel('d + t', { t: TS, d: DUR });
const differenceProgram = compileCel('t - d', { t: TS, d: DUR });
const roundTrip = compileCel('(t + d) - d == t && (t + d) - t == d && d + t == t + d && (t - d) + d == t', { t: TS, d: DUR });

function outcome(run: () => unknown): bigint | 'error' {
  try {
    return timestampNanos(run() as Date);
  } catch {
    return 'error';
  }
}

test('(internal compileCel) timestamp ± duration is exact to the nanosecond, in either operand order, and an error exactly when it leaves 0001..9999', (t) => {
  t.notThrows(() =>
    fc.assert(
      fc.property(timestampArb, durationArb, (tns, dns) => {
        const vars = { t: timestampOf(tns), d: durationOf(dns) };
        const sum = tns + dns;
        const expectedSum = inRange(sum) ? sum : 'error';
        const expectedDifference = inRange(tns - dns) ? tns - dns : 'error';
        if (outcome(() => sumProgram.run(vars).value) !== expectedSum) throw new Error(`t + d for ${tns} + ${dns}`);
        if (outcome(() => reversedProgram.run(vars).value) !== expectedSum) throw new Error(`d + t for ${tns} + ${dns}`);
        if (outcome(() => differenceProgram.run(vars).value) !== expectedDifference) throw new Error(`t - d for ${tns} - ${dns}`);
        if (inRange(sum) && inRange(tns - dns) && roundTrip.run(vars).value !== true) throw new Error(`round trip for ${tns}, ${dns}`);
      }),
    ),
  );
});

test('(internal compileCel) timestamp - timestamp is the exact duration, an error beyond int64 nanoseconds', (t) => {
  const program = compileCel('a - b', { a: TS, b: TS });
  t.notThrows(() =>
    fc.assert(
      fc.property(timestampArb, timestampArb, (a, b) => {
        let got: bigint | 'error';
        try {
          got = durationNanos(program.run({ a: timestampOf(a), b: timestampOf(b) }).value as { seconds: bigint; nanos: number });
        } catch {
          got = 'error';
        }
        const diff = a - b;
        if (got !== (diff >= INT64_MIN && diff <= INT64_MAX ? diff : 'error')) throw new Error(`${a} - ${b}`);
      }),
    ),
  );
});

const ORDERS: [string, (a: bigint, b: bigint) => boolean][] = [
  ['==', (a, b) => a === b],
  ['!=', (a, b) => a !== b],
  ['<', (a, b) => a < b],
  ['<=', (a, b) => a <= b],
  ['>', (a, b) => a > b],
  ['>=', (a, b) => a >= b],
];
const timestampOrder = ORDERS.map(([op, holds]) => [compileCel(`a ${op} b`, { a: TS, b: TS }), holds, op] as const);
const durationOrder = ORDERS.map(([op, holds]) => [compileCel(`a ${op} b`, { a: DUR, b: DUR }), holds, op] as const);
/** A value and one a few nanoseconds away (where millisecond precision would call them equal). */
const nearPair = (arb: fc.Arbitrary<bigint>): fc.Arbitrary<[bigint, bigint]> =>
  fc.oneof(fc.tuple(arb, arb), fc.tuple(arb, fc.integer({ min: -3, max: 3 })).map(([a, step]): [bigint, bigint] => [a, a + BigInt(step)]));

test('(internal compileCel) timestamps and durations compare and equal by their nanoseconds', (t) => {
  t.notThrows(() =>
    fc.assert(
      fc.property(nearPair(fc.bigInt({ min: MIN_NS + 3n, max: MAX_NS - 3n })), nearPair(fc.bigInt({ min: INT64_MIN + 3n, max: INT64_MAX - 3n })), ([ta, tb], [da, db]) => {
        for (const [program, holds, op] of timestampOrder) {
          if (program.run({ a: timestampOf(ta), b: timestampOf(tb) }).value !== holds(ta, tb)) throw new Error(`timestamp ${ta} ${op} ${tb}`);
        }
        for (const [program, holds, op] of durationOrder) {
          if (program.run({ a: durationOf(da), b: durationOf(db) }).value !== holds(da, db)) throw new Error(`duration ${da} ${op} ${db}`);
        }
      }),
    ),
  );
});

test('(internal compileCel) timestamp(string(t)) == t for every timestamp in range; the text is RFC 3339 in UTC with at most 9 fraction digits', (t) => {
  const program = compileCel('timestamp(string(t)) == t', { t: TS });
  const text = compileCel('string(t)', { t: TS });
  t.notThrows(() =>
    fc.assert(
      fc.property(timestampArb, (ns) => {
        const s = text.run({ t: timestampOf(ns) }).value as string;
        if (!/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{0,8}[1-9])?Z$/u.test(s)) throw new Error(`string(${ns}) = ${s}`);
        if (s !== formatTimestamp(timestampOf(ns)) || timestampNanos(parseRfc3339(s)!) !== ns) throw new Error(`parse(format(${ns}))`);
        if (program.run({ t: timestampOf(ns) }).value !== true) throw new Error(`round trip of ${s}`);
      }),
    ),
  );
});

const ACCESSORS = ['getFullYear', 'getMonth', 'getDate', 'getDayOfMonth', 'getDayOfWeek', 'getDayOfYear', 'getHours', 'getMinutes', 'getSeconds', 'getMilliseconds'];
const zoned = ACCESSORS.map((name) => [name, compileCel(`t.${name}(zone) == (t + d).${name}()`, { t: TS, d: DUR, zone: 'string' })] as const);

test('(internal compileCel) an accessor in a fixed-offset zone (±HH:MM) equals the UTC accessor of the timestamp moved by that offset', (t) => {
  t.notThrows(() =>
    fc.assert(
      fc.property(fc.bigInt({ min: MIN_NS + 15n * 3600n * NS, max: MAX_NS - 15n * 3600n * NS }), fc.integer({ min: -14 * 60, max: 14 * 60 }), (ns, minutes) => {
        const abs = Math.abs(minutes);
        const zone = `${minutes < 0 ? '-' : '+'}${String(Math.floor(abs / 60)).padStart(2, '0')}:${String(abs % 60).padStart(2, '0')}`;
        const vars = { t: timestampOf(ns), d: durationOf(BigInt(minutes) * 60n * NS), zone };
        for (const [name, program] of zoned) if (program.run(vars).value !== true) throw new Error(`${name}('${zone}') of ${ns}`);
      }),
    ),
  );
});

/** `bytes` as a CEL bytes literal, each byte escaped as hex or octal (picked per byte by `octal`). */
function escaped(bytes: Uint8Array, octal: boolean[]): string {
  return `b'${[...bytes].map((b, i) => (octal[i % Math.max(octal.length, 1)] ? `\\${b.toString(8).padStart(3, '0')}` : `\\x${b.toString(16).padStart(2, '0')}`)).join('')}'`;
}

test('(internal compileCel) bytes literals are the bytes written (hex and octal escapes, text as UTF-8) and order as Go bytes.Compare', (t) => {
  t.notThrows(() =>
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 12 }), fc.uint8Array({ maxLength: 12 }), fc.array(fc.boolean(), { maxLength: 4 }), fc.string({ unit: 'binary', maxLength: 8 }), (a, b, octal, text) => {
        const order = Buffer.compare(Buffer.from(a), Buffer.from(b));
        const la = escaped(a, octal);
        const lb = escaped(b, []);
        for (const [op, holds] of ORDERS) {
          const got = compileCel(`${la} ${op} ${lb}`, {}).run({}).value;
          if (got !== holds(BigInt(order), 0n)) throw new Error(`${la} ${op} ${lb}`);
        }
        const written = text.replace(/[\\'\n\r]/gu, (c) => ({ '\\': '\\\\', "'": "\\'", '\n': '\\n', '\r': '\\r' })[c]!);
        const value = compileCel(`b'${written}'`, {}).run({}).value as Uint8Array;
        if (!Buffer.from(value).equals(Buffer.from(text, 'utf8'))) throw new Error(`b'${written}'`);
        const raw = compileCel(`br'''${text.replace(/'/gu, '')}'''`, {}).run({}).value as Uint8Array;
        if (!Buffer.from(raw).equals(Buffer.from(text.replace(/'/gu, ''), 'utf8'))) throw new Error(`br'''…'''`);
      }),
      { numRuns: 50 },
    ),
  );
});
