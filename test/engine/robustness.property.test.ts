/**
 * Bad input never crashes or hangs the engine: random requests built from
 * malformed ids, unknown names, wrong JSON types and oversize lists either
 * answer or throw a LatchkeyError (never another error), quickly.
 */
import test from 'ava';
import fc from 'fast-check';
import { Engine, LatchkeyError } from '../../engine/index.ts';

const RUNS = process.env['CI'] ? 500 : 100;

const DSL = `model
  schema 1.1
type user
type group
  relations
    define member: [user, user:*, group#member]
type doc
  relations
    define parent: [doc]
    define owner: [user with c]
    define viewer: ([user, group#member] or owner or viewer from parent) but not blocked
    define blocked: [user]
condition c(x: int) {
  x < 10
}
`;

const idLike = fc.oneof(
  fc.constantFrom('user:a', 'user:*', 'group:g#member', 'doc:1', 'doc:*', 'a:b:c', ':x', 'x:', 'doc:1#', 'doc:1#nope', '#', '', ' ', 'user: a', 'group:*#member', 'nope:1', 'doc:1\u0000'),
  fc.string({ maxLength: 12 }),
  fc.string({ maxLength: 4 }).map((s) => `user:${s}`),
  fc.string({ maxLength: 4 }).map((s) => `doc:${s}`),
);
const anyJson: fc.Arbitrary<unknown> = fc.oneof(idLike, fc.integer(), fc.constant(null), fc.constant(undefined), fc.boolean(), fc.array(idLike, { maxLength: 3 }), fc.dictionary(fc.string({ maxLength: 3 }), idLike, { maxKeys: 2 }));
const relation = fc.oneof(fc.constantFrom('viewer', 'owner', 'member', 'parent', 'blocked', 'nope', ''), fc.string({ maxLength: 6 }), anyJson);
const tuple = fc.record({ user: fc.oneof(idLike, anyJson), relation, object: fc.oneof(idLike, anyJson), condition: fc.option(fc.record({ name: fc.oneof(fc.constant('c'), fc.string({ maxLength: 3 })), context: fc.option(fc.dictionary(fc.constantFrom('x', 'y'), anyJson), { nil: undefined }) }), { nil: undefined }) }, { requiredKeys: [] });
const tuples = fc.oneof(fc.array(tuple, { maxLength: 4 }), anyJson, fc.constant(Array.from({ length: 150 }, (_, i) => ({ user: `user:${i}`, relation: 'blocked', object: 'doc:1' }))));
const context = fc.option(fc.oneof(fc.dictionary(fc.constantFrom('x', 'y'), anyJson), anyJson), { nil: undefined });

const call = fc.oneof(
  fc.record({ op: fc.constant('check' as const), user: anyJson, relation, object: anyJson, contextualTuples: fc.option(tuples, { nil: undefined }), context }),
  fc.record({ op: fc.constant('listObjects' as const), user: anyJson, relation, type: anyJson, contextualTuples: fc.option(tuples, { nil: undefined }), context }),
  fc.record({ op: fc.constant('listUsers' as const), object: anyJson, relation, userFilters: fc.oneof(fc.array(fc.record({ type: anyJson, relation: fc.option(relation, { nil: undefined }) }), { maxLength: 2 }), anyJson), context }),
  fc.record({ op: fc.constant('expand' as const), object: anyJson, relation }),
  fc.record({ op: fc.constant('write' as const), writes: fc.option(tuples, { nil: undefined }), deletes: fc.option(tuples, { nil: undefined }) }),
  fc.record({ op: fc.constant('read' as const), user: fc.option(anyJson, { nil: undefined }), relation: fc.option(relation, { nil: undefined }), object: fc.option(anyJson, { nil: undefined }), pageSize: fc.option(fc.oneof(fc.integer({ min: -5, max: 200 }), anyJson), { nil: undefined }), continuationToken: fc.option(anyJson, { nil: undefined }) }),
  fc.record({ op: fc.constant('batchCheck' as const), checks: fc.oneof(fc.array(fc.record({ user: anyJson, relation, object: anyJson }), { maxLength: 5 }), anyJson) }),
  fc.record({ op: fc.constant('writeModel' as const), model: anyJson }),
);

test('random malformed requests answer or throw LatchkeyError, quickly', async (t) => {
  const engine = new Engine();
  await engine.writeModel({ dsl: DSL });
  await engine.write({ writes: [{ user: 'user:a', relation: 'member', object: 'group:g' }, { user: 'group:g#member', relation: 'viewer', object: 'doc:1' }, { user: 'doc:1', relation: 'parent', object: 'doc:2' }] });
  await t.notThrowsAsync(
    fc.assert(
      fc.asyncProperty(call, async (c) => {
        const started = Date.now();
        try {
          const e = engine as unknown as Record<string, (...args: unknown[]) => Promise<unknown>>;
          switch (c.op) {
            case 'check':
            case 'listObjects':
            case 'listUsers':
            case 'expand':
            case 'write': {
              const { op, ...req } = c;
              await e[op]!.call(engine, req);
              break;
            }
            case 'read':
              await engine.read({ user: c.user, relation: c.relation, object: c.object } as never, { pageSize: c.pageSize, continuationToken: c.continuationToken } as never);
              break;
            case 'batchCheck':
              await engine.batchCheck(c.checks as never);
              break;
            case 'writeModel':
              await engine.writeModel(c.model as never);
              break;
          }
        } catch (err) {
          if (!(err instanceof LatchkeyError)) throw new Error(`${c.op} threw a non-LatchkeyError: ${String(err)}`, { cause: err });
        }
        if (Date.now() - started > 2000) throw new Error(`${c.op} took ${Date.now() - started} ms`);
      }),
      { numRuns: RUNS },
    ),
  );
});
