/**
 * The compiled forms of a shape (api/shape_compiled.ts) answer exactly
 * as the walk of shape.ts: over random shapes (every kind, nested objects and
 * lists, optional fields, bounds) and random values (values made to fit the
 * shape, the same with one part broken, and arbitrary JSON with prototype
 * keys, holes and non-JSON values), `validate` returns a value deep-equal to
 * the walk's (same keys in the same order) or throws the walk's very error,
 * and `encodeOutput` likewise. Each compiled form is also checked to answer
 * (not hand back to the walk) a value that fits, so the test cannot pass with
 * compiled forms that always decline.
 */
import test from 'ava';
import fc from 'fast-check';
import { DEFAULT_MAX_LENGTH, encodeByWalk, encodeOutput, s, stringProblem, validate, validateByWalk, type Shape } from '../../api/shape.ts';
import { FAIL, compiledEncoder, compiledValidator, type ValidationRules } from '../../api/shape_compiled.ts';

/** The rules shape.ts gives the compiled validators. */
const RULES: ValidationRules = {
  stringOk: (v, text) => stringProblem(v, text) === undefined,
  defaultMaxLength: DEFAULT_MAX_LENGTH,
  walk(sh, v) {
    try {
      return validateByWalk(sh, v);
    } catch {
      return FAIL;
    }
  },
};

const numRuns = process.env.CI ? 600 : 150;
let names = 0;

type Field = Shape | ReturnType<typeof s.optional>;

const leaf: fc.Arbitrary<Shape> = fc.oneof(
  fc.record({ minLength: fc.option(fc.integer({ min: 0, max: 3 }), { nil: undefined }), maxLength: fc.option(fc.integer({ min: 3, max: 12 }), { nil: undefined }), text: fc.boolean() }).map((o) =>
    s.string({ ...(o.minLength === undefined ? {} : { minLength: o.minLength }), ...(o.maxLength === undefined ? {} : { maxLength: o.maxLength }), text: o.text }),
  ),
  fc.record({ min: fc.option(fc.integer({ min: -50, max: 0 }), { nil: undefined }), max: fc.option(fc.integer({ min: 0, max: 50 }), { nil: undefined }) }).map((o) =>
    s.int({ ...(o.min === undefined ? {} : { min: o.min }), ...(o.max === undefined ? {} : { max: o.max }) }),
  ),
  fc.constant(s.float()),
  fc.constant(s.bool()),
  fc.constant(s.enum('E', ['a', 'b', 'c'])),
  fc.constant(s.json()),
  fc.constant(s.map()),
);

const shape: fc.Arbitrary<Shape> = fc.letrec<{ shape: Shape; field: Field }>((tie) => ({
  shape: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    leaf,
    fc.record({ item: tie('shape'), minItems: fc.option(fc.integer({ min: 0, max: 2 }), { nil: undefined }), maxItems: fc.option(fc.integer({ min: 2, max: 4 }), { nil: undefined }) }).map((o) =>
      s.list(o.item, { ...(o.minItems === undefined ? {} : { minItems: o.minItems }), ...(o.maxItems === undefined ? {} : { maxItems: o.maxItems }) }),
    ),
    fc.dictionary(fc.constantFrom('a', 'b', 'name', 'items', 'x_y', 'the "key"', 'constructor', 'toString'), tie('field'), { maxKeys: 4 }).map((fields) => s.object(`O${names++}`, fields)),
  ),
  field: fc.oneof(tie('shape'), tie('shape').map((x) => s.optional(x))),
})).shape;

const junk: fc.Arbitrary<unknown> = fc.oneof(
  fc.constantFrom(null, undefined, true, false, 0, -0, 1.5, NaN, Infinity, 2 ** 60, '', 'a', 'b', 'x\u0000y', 'line\nbreak', '\ud800', 'a\u2028b', [], {}, [1, , 3], new Date(0)),
  fc.jsonValue({ maxDepth: 3 }),
  fc.dictionary(fc.constantFrom('a', 'b', '__proto__', 'constructor', 'extra'), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 3 }),
);

/** A value fitting `sh`, sometimes with one part replaced by junk. */
function fitting(sh: Shape | Field): fc.Arbitrary<unknown> {
  if (sh.kind === 'optional') return fc.oneof(fc.constantFrom(undefined, null), fitting(sh.inner));
  const any = (a: fc.Arbitrary<unknown>): fc.Arbitrary<unknown> => fc.oneof({ weight: 6, arbitrary: a }, { weight: 1, arbitrary: junk });
  switch (sh.kind) {
    case 'string':
      // Now and then a character a string may not hold (a control, a lone surrogate, a line separator), or a tab or a newline (text only).
      return any(
        fc.oneof(
          { weight: 4, arbitrary: fc.string({ minLength: sh.minLength ?? 0, maxLength: Math.min(sh.maxLength ?? 12, 12) }) },
          { weight: 1, arbitrary: fc.constantFrom('ab\u0001', 'x\ud83d', 'b\u2028c', 'tab\there', 'two\nlines', 'nul\u0000') },
        ),
      );
    case 'int':
      return any(fc.integer({ min: sh.min ?? -100, max: sh.max ?? 100 }));
    case 'float':
      return any(fc.double({ noNaN: true, noDefaultInfinity: true }));
    case 'bool':
      return any(fc.boolean());
    case 'enum':
      return any(fc.constantFrom(...sh.values));
    case 'json':
      return any(fc.jsonValue({ maxDepth: 2 }));
    case 'map':
      return any(fc.dictionary(fc.string({ maxLength: 4 }), fc.string({ maxLength: 4 }), { maxKeys: 3 }));
    case 'list':
      return any(fc.array(fitting(sh.item), { minLength: sh.minItems ?? 0, maxLength: Math.min(sh.maxItems ?? 3, 3) }));
    case 'object': {
      const entries = Object.entries(sh.fields).map(([k, f]) => fitting(f).map((v) => [k, v] as const));
      return any(fc.tuple(...entries).map((kv) => Object.fromEntries(kv.filter(([, v]) => v !== undefined))));
    }
  }
}

/** What a call answered: its value, or its error's message. */
function outcome(f: () => unknown): { value?: unknown; error?: string } {
  try {
    return { value: f() };
  } catch (err) {
    return { error: err instanceof Error ? `${err.constructor.name}: ${err.message}` : String(err) };
  }
}

/** JSON text with keys in their order, undefined kept apart from absent (`deepEqual` ignores key order). */
const exact = (v: unknown): string => JSON.stringify(v, (_k, x: unknown) => (x === undefined ? '<undefined>' : Number.isNaN(x) ? '<NaN>' : x));

const shapeAndValue = shape.chain((sh) => fc.tuple(fc.constant(sh), fc.oneof(fitting(sh), junk)));

test('validate answers as the walk does: the same value with the same keys in order, or the same error', (t) => {
  let compiled = 0;
  fc.assert(
    fc.property(shapeAndValue, ([sh, v]) => {
      const walk = outcome(() => validateByWalk(sh, v));
      const got = outcome(() => validate(sh, v));
      if (walk.error !== undefined) return got.error === walk.error;
      if (got.error !== undefined || exact(got.value) !== exact(walk.value)) return false;
      // Accepted by the walk: the compiled form answered it itself (a JSON-parsed value always is).
      if (compiledValidator(sh, RULES)(v) !== FAIL) compiled++;
      return true;
    }),
    { numRuns },
  );
  t.true(compiled > numRuns / 10, `compiled forms answered ${compiled} values`);
});

test('a value that fits is answered by the compiled validator itself, not handed back to the walk', (t) => {
  const CHECK = s.object('CheckLike', { checks: s.list(s.object('One', { relation: s.string({ maxLength: 64 }), object: s.string({ maxLength: 256 }), context: s.optional(s.json()) }), { minItems: 1, maxItems: 100 }), user: s.optional(s.string()) });
  const input = { checks: [{ relation: 'viewer', object: 'doc:1' }, { relation: 'editor', object: 'doc:2', context: { ip: '10.0.0.1' } }] };
  const rules = RULES;
  const fast = compiledValidator(CHECK, rules)(input);
  t.not(fast, FAIL);
  t.deepEqual(fast, validateByWalk(CHECK, input));
  t.is(compiledValidator(CHECK, rules)({ ...input, extra: 1 }), FAIL);
  t.is(compiledValidator(CHECK, rules)({ checks: [] }), FAIL);
  t.is(compiledValidator(CHECK, rules)(JSON.parse('{"checks":[{"relation":"r","object":"o"}],"__proto__":{}}')), FAIL);
  t.throws(() => validate(CHECK, { checks: [{ relation: 'viewer' }] }), { message: 'checks[0].object: is required' });
});

test('encodeOutput answers as the walk does, over random shapes and results', (t) => {
  fc.assert(
    fc.property(shapeAndValue, ([sh, v]) => {
      const walk = outcome(() => encodeByWalk(sh, v));
      const got = outcome(() => encodeOutput(sh, v));
      if (walk.error !== undefined) return got.error === walk.error;
      return got.error === undefined && exact(got.value) === exact(walk.value);
    }),
    { numRuns },
  );
  const RESULT = s.object('Results', { results: s.list(s.object('R', { relation: s.string(), object: s.string(), allowed: s.bool(), note: s.optional(s.string()) })) });
  const out = { results: [{ allowed: true, object: 'doc:1', relation: 'viewer', extra: 'dropped' }] };
  const fast = compiledEncoder(RESULT)(out);
  t.not(fast, FAIL);
  t.is(JSON.stringify(fast), '{"results":[{"relation":"viewer","object":"doc:1","allowed":true,"note":null}]}');
  t.is(JSON.stringify(fast), JSON.stringify(encodeByWalk(RESULT, out)));
  t.throws(() => encodeOutput(RESULT, { results: [{ relation: 'r', object: 'o' }] }), { message: 'output field results[0].allowed is missing' });
});
