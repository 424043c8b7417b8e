/**
 * For random conditions built from declared functions and from functions the
 * CEL library has beyond OpenFGA's environment (`lowerAscii`, `upperAscii`,
 * `trim`, `substring`, `join`, `indexOf`, `cel.bind`):
 * - writing the model is refused exactly when a refused function is used,
 *   and the refusal names one of them;
 * - the same model stored directly (as a release without the refusal stored
 *   it) always loads, and answers as a reference evaluation in JavaScript;
 * - where the write is accepted, the written version answers as the stored
 *   one (the check at write changes what is accepted, never an answer).
 * Seed: FC_SEED replays a failure (test/helpers/fast_check_ci.ts).
 */
import test from 'ava';
import fc from 'fast-check';
import { ulid } from 'ulid';
import { Engine, LatchkeyError, MemoryStore, type AuthorizationModel } from '../../engine/index.ts';

/** A generated expression: its text, the refused functions it calls, and its value for `s` in JavaScript. */
interface Expr<T> {
  text: string;
  refused: readonly string[];
  value: (s: string) => T;
}

const codePoints = (x: string): number => [...x].length;
const lit = (x: string): Expr<string> => ({ text: JSON.stringify(x), refused: [], value: () => x });
const str1 = (s: Expr<string>, text: string, value: (x: string) => string, refused?: string): Expr<string> => ({
  text: text.replace('$', s.text),
  refused: refused === undefined ? s.refused : [...s.refused, refused],
  value: (v) => value(s.value(v)),
});

const { bool } = fc.letrec<{ str: Expr<string>; bool: Expr<boolean> }>((tie) => {
  const S = tie('str') as fc.Arbitrary<Expr<string>>;
  const B = tie('bool') as fc.Arbitrary<Expr<boolean>>;
  const pair = <A, C>(a: fc.Arbitrary<A>, c: fc.Arbitrary<C>) => fc.tuple(a, c);
  return {
    str: fc.oneof(
      { depthSize: 'small', withCrossShrink: true },
      { weight: 4, arbitrary: fc.constantFrom<Expr<string>>({ text: 's', refused: [], value: (s) => s }, lit('ab'), lit('Hello'), lit(' a ')) },
      { weight: 4, arbitrary: S.map((x) => str1(x, 'string(size($))', (v) => String(codePoints(v)))) },
      { weight: 4, arbitrary: pair(S, S).map(([a, b]): Expr<string> => ({ text: `(${a.text} + ${b.text})`, refused: [...a.refused, ...b.refused], value: (s) => a.value(s) + b.value(s) })) },
      { weight: 1, arbitrary: S.map((x) => str1(x, '$.lowerAscii()', (v) => v.replace(/[A-Z]/gu, (c) => c.toLowerCase()), 'lowerAscii')) },
      { weight: 1, arbitrary: S.map((x) => str1(x, '$.upperAscii()', (v) => v.replace(/[a-z]/gu, (c) => c.toUpperCase()), 'upperAscii')) },
      { weight: 1, arbitrary: S.map((x) => str1(x, '$.trim()', (v) => v.trim(), 'trim')) },
      { weight: 1, arbitrary: S.map((x) => str1(x, '$.substring(0)', (v) => v, 'substring')) },
      { weight: 1, arbitrary: pair(S, S).map(([a, b]): Expr<string> => ({ text: `[${a.text}, ${b.text}].join("")`, refused: [...a.refused, ...b.refused, 'join'], value: (s) => a.value(s) + b.value(s) })) },
    ),
    bool: fc.oneof(
      { depthSize: 'small', withCrossShrink: true },
      { weight: 4, arbitrary: pair(S, S).map(([a, b]): Expr<boolean> => ({ text: `(${a.text} == ${b.text})`, refused: [...a.refused, ...b.refused], value: (s) => a.value(s) === b.value(s) })) },
      { weight: 4, arbitrary: pair(S, S).map(([a, b]): Expr<boolean> => ({ text: `${a.text}.startsWith(${b.text})`, refused: [...a.refused, ...b.refused], value: (s) => a.value(s).startsWith(b.value(s)) })) },
      { weight: 4, arbitrary: pair(S, S).map(([a, b]): Expr<boolean> => ({ text: `${a.text}.endsWith(${b.text})`, refused: [...a.refused, ...b.refused], value: (s) => a.value(s).endsWith(b.value(s)) })) },
      { weight: 4, arbitrary: pair(S, S).map(([a, b]): Expr<boolean> => ({ text: `${a.text}.contains(${b.text})`, refused: [...a.refused, ...b.refused], value: (s) => a.value(s).includes(b.value(s)) })) },
      { weight: 4, arbitrary: S.map((a): Expr<boolean> => ({ text: `${a.text}.matches("^[a-z]*$")`, refused: a.refused, value: (s) => /^[a-z]*$/u.test(a.value(s)) })) },
      { weight: 4, arbitrary: S.map((a): Expr<boolean> => ({ text: `matches(${a.text}, "b")`, refused: a.refused, value: (s) => a.value(s).includes('b') })) },
      { weight: 4, arbitrary: S.map((a): Expr<boolean> => ({ text: `(size(${a.text}) > 1)`, refused: a.refused, value: (s) => codePoints(a.value(s)) > 1 })) },
      { weight: 4, arbitrary: S.map((a): Expr<boolean> => ({ text: `(${a.text}.size() < 3)`, refused: a.refused, value: (s) => codePoints(a.value(s)) < 3 })) },
      { weight: 4, arbitrary: S.map((a): Expr<boolean> => ({ text: `[${a.text}].exists(x, x == s)`, refused: a.refused, value: (s) => a.value(s) === s })) },
      { weight: 1, arbitrary: S.map((a): Expr<boolean> => ({ text: `(${a.text}.indexOf("a") >= 0)`, refused: [...a.refused, 'indexOf'], value: (s) => a.value(s).includes('a') })) },
      { weight: 1, arbitrary: S.map((a): Expr<boolean> => ({ text: `cel.bind(v, ${a.text}, v == s)`, refused: [...a.refused, 'cel.bind'], value: (s) => a.value(s) === s })) },
      { weight: 4, arbitrary: pair(B, B).map(([a, b]): Expr<boolean> => ({ text: `(${a.text} && ${b.text})`, refused: [...a.refused, ...b.refused], value: (s) => a.value(s) && b.value(s) })) },
      { weight: 4, arbitrary: pair(B, B).map(([a, b]): Expr<boolean> => ({ text: `(${a.text} || ${b.text})`, refused: [...a.refused, ...b.refused], value: (s) => a.value(s) || b.value(s) })) },
      { weight: 4, arbitrary: B.map((a): Expr<boolean> => ({ text: `!${a.text}`, refused: a.refused, value: (s) => !a.value(s) })) },
    ),
  };
});

function modelWith(expression: string): AuthorizationModel {
  return {
    schema_version: '1.1',
    type_definitions: [
      { type: 'user' },
      { type: 'doc', relations: { viewer: { this: {} } }, metadata: { relations: { viewer: { directly_related_user_types: [{ type: 'user', condition: 'c' }] } } } },
    ],
    conditions: { c: { name: 'c', expression, parameters: { s: { type_name: 'TYPE_NAME_STRING' } } } },
  } as AuthorizationModel;
}

/** The check's answer, or the error's reason. */
async function answer(e: Engine, s: string): Promise<boolean | string> {
  try {
    return (await e.check({ user: 'user:a', relation: 'viewer', object: 'doc:1', context: { s } })).allowed;
  } catch (err) {
    return err instanceof LatchkeyError ? `${err.reason}` : `not a LatchkeyError: ${String(err)}`;
  }
}

const TUPLE = { user: 'user:a', relation: 'viewer', object: 'doc:1', condition: { name: 'c' } };
const contexts = fc.constantFrom('', 's', 'ab', 'Hello', ' a ', 'b', 'HELLO');

test('(conditions allowlist) a write is refused exactly when a refused function is used; stored versions load and answer as the reference, and as the written version where it is accepted', async (t) => {
  let refusedRuns = 0;
  let acceptedRuns = 0;
  let costly = 0;
  await fc.assert(
    fc.asyncProperty(bool.filter((b) => Buffer.byteLength(b.text) <= 512), contexts, async (expr, s) => {
      const model = modelWith(expr.text);
      const written = new Engine();
      let refusal: unknown;
      try {
        await written.writeModel(model);
      } catch (err) {
        refusal = err;
      }
      if (expr.refused.length === 0) {
        if (refusal !== undefined) throw new Error(`refused ${expr.text}: ${String(refusal)}`);
        acceptedRuns++;
      } else {
        refusedRuns++;
        if (!(refusal instanceof LatchkeyError) || refusal.reason !== 'invalid_authorization_model') throw new Error(`accepted ${expr.text}`);
        const reference = refusal.details?.['reference'];
        if (!expr.refused.includes(reference as string)) throw new Error(`${expr.text}: names ${String(reference)}, not one of ${expr.refused.join(', ')}`);
      }

      const store = new MemoryStore();
      await store.writeModel({ id: ulid(), ...model });
      const stored = new Engine({ store });
      await stored.write({ writes: [TUPLE] });
      const got = await answer(stored, s);
      // Deep expressions may cost more than OpenFGA's limit (100): an error, never an answer.
      if (got === 'condition_cost_exceeded') costly++;
      else if (got !== expr.value(s)) throw new Error(`${expr.text} with s=${JSON.stringify(s)}: ${String(got)}, expected ${String(expr.value(s))}`);
      if (refusal === undefined) {
        await written.write({ writes: [TUPLE] });
        const direct = await answer(written, s);
        if (direct !== got) throw new Error(`${expr.text}: written ${String(direct)}, stored ${String(got)}`);
      }
    }),
    { numRuns: process.env['CI'] ? 300 : 80 },
  );
  t.log(`${acceptedRuns} accepted, ${refusedRuns} refused, ${costly} over the cost limit`);
  t.true(acceptedRuns > 0 && refusedRuns > 0, 'both outcomes were exercised');
});
