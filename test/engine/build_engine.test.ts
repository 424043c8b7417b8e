/**
 * `buildEngine` (engine/index.ts, engine/check/build_chain.ts): the chain the
 * server runs, for library users. On SQLite it builds the mirror, the level
 * checker and the answer cache, and answers like a plain engine on the same
 * store under random writes (through the built engine, and straight to the
 * store as another process would, after `refresh()`), at once after a revoke;
 * on the memory store it builds the synchronous evaluator under the cache;
 * its options are validated as the engine's are.
 */
import test from 'ava';
import fc from 'fast-check';
import { buildEngine, CheckCache, Engine, GraphMirror, LatchkeyError, MemoryStore, type TupleKey } from '../../engine/index.ts';
import { GRAPH_MODEL, graphUniverse, outcome } from './graph_universe.ts';
import { openSqlStore } from './sql_helpers.ts';

const { users, groups, docs, tuples: UNIVERSE } = graphUniverse(3, (g) => g !== 'group:g1');
const key = (t: TupleKey): string => `${t.object}#${t.relation}@${t.user}`;

test('sql sqlite: the built chain (mirror, level checker, cache) answers like a plain engine under random writes (property)', async (t) => {
  const { store, sequelize, teardown } = await openSqlStore('sqlite');
  try {
    const op = fc.oneof(
      fc.record({ kind: fc.constantFrom('here' as const, 'other' as const), i: fc.nat({ max: UNIVERSE.length - 1 }) }),
      fc.record({
        kind: fc.constant('check' as const),
        object: fc.constantFrom(...docs, ...groups),
        relation: fc.constantFrom('viewer', 'can_read', 'member', 'editor'),
        user: fc.constantFrom(...users, 'user:*', 'group:g0#member'),
        x: fc.option(fc.integer({ min: 0, max: 10 }), { nil: undefined }),
        full: fc.boolean(),
      }),
    );
    await t.notThrowsAsync(
      fc.assert(
        fc.asyncProperty(fc.array(op, { minLength: 5, maxLength: 40, size: 'max' }), async (ops) => {
          for (const table of ['fga_tuple', 'fga_model', 'fga_changelog']) await sequelize.query(`DELETE FROM ${table}`);
          // The reference reads the SQL store directly; it is also the other process writing past the built layers.
          const plain = new Engine({ store });
          await plain.writeModel({ dsl: GRAPH_MODEL });
          // A long delay: another process's writes are seen only after refresh().
          const built = await buildEngine({ store, revisionPollMs: 3_600_000 });
          const present = new Map<string, TupleKey>();
          let pending = false;
          for (const step of ops) {
            if (step.kind === 'here' || step.kind === 'other') {
              const o = step;
              const tuple = UNIVERSE[o.i]!;
              const there = present.get(key(tuple));
              const req = there !== undefined ? { deletes: [there] } : { writes: [tuple] };
              if (there !== undefined) present.delete(key(tuple));
              else present.set(key(tuple), tuple);
              if (o.kind === 'here') await built.engine.write(req);
              else {
                await plain.write(req);
                pending = true;
              }
              continue;
            }
            const o = step as Extract<typeof step, { kind: 'check' }>;
            if (pending) {
              await built.refresh();
              pending = false;
            }
            if (o.relation === 'member' && !o.object.startsWith('group:')) continue;
            if (o.relation !== 'member' && o.object.startsWith('group:')) continue;
            const q = { object: o.object, relation: o.relation, user: o.user, ...(o.x !== undefined ? { context: { x: o.x } } : {}) };
            const full = o.full ? { consistency: 'higher_consistency' as const } : {};
            const got = await outcome(built.engine, { ...q, ...full });
            const want = await outcome(plain, q);
            if (got !== want) throw new Error(`${JSON.stringify(o)}: built ${got}, plain ${want}`);
          }
        }),
        { numRuns: 25 },
      ),
    );
  } finally {
    await teardown();
  }
});

test('sql sqlite: buildEngine puts the mirror under the cache, and both hear of revisions', async (t) => {
  const { store, teardown } = await openSqlStore('sqlite');
  try {
    const built = await buildEngine({ store, conditionCostLimit: 50 });
    t.true(built.mirror instanceof GraphMirror);
    t.true(built.cache instanceof CheckCache);
    t.is(built.store, built.cache!.store);
    t.deepEqual(built.observers, [built.mirror!, built.cache!]);
    t.is(built.engine.store, built.store);
    t.is(built.engine.limits.conditionCostLimit, 50);
    await built.engine.writeModel({ dsl: GRAPH_MODEL });
    await built.engine.write({ writes: [{ object: 'doc:d0', relation: 'viewer', user: 'user:u0' }] });
    t.true((await built.engine.check({ object: 'doc:d0', relation: 'viewer', user: 'user:u0' })).allowed);
    // A revoke through the built engine is seen at once, by the cache and the mirror.
    await built.engine.write({ deletes: [{ object: 'doc:d0', relation: 'viewer', user: 'user:u0' }] });
    t.false((await built.engine.check({ object: 'doc:d0', relation: 'viewer', user: 'user:u0' })).allowed);
    // Without the mirror, or without the cache.
    const noMirror = await buildEngine({ store, mirror: false });
    t.is(noMirror.mirror, undefined);
    t.deepEqual(noMirror.observers, [noMirror.cache!]);
    const noCache = await buildEngine({ store, cacheSize: 0 });
    t.is(noCache.cache, undefined);
    t.is(noCache.store, noCache.mirror!.store);
    const bare = await buildEngine({ store, mirror: false, revisionPollMs: 0 });
    t.deepEqual(bare.observers, []);
    t.is(bare.store, store);
    for (const b of [noMirror, noCache, bare]) t.false((await b.engine.check({ object: 'doc:d0', relation: 'viewer', user: 'user:u0' })).allowed);
    // observeRevision reaches every layer: an unknown revision makes them catch up before answering.
    await new Engine({ store }).write({ writes: [{ object: 'doc:d0', relation: 'viewer', user: 'user:u1' }] });
    built.observeRevision(await store.revision());
    t.true((await built.engine.check({ object: 'doc:d0', relation: 'viewer', user: 'user:u1' })).allowed);
  } finally {
    await teardown();
  }
});

test('on the memory store buildEngine answers synchronously behind the cache; mirror does not apply', async (t) => {
  const built = await buildEngine({ mirror: true });
  t.true(built.engine.store === built.cache!.store);
  t.is(built.mirror, undefined);
  t.deepEqual(built.observers, [built.cache!]);
  await built.engine.writeModel({ dsl: GRAPH_MODEL });
  await built.engine.write({ writes: [{ object: 'group:g0', relation: 'member', user: 'user:u0' }, { object: 'doc:d0', relation: 'viewer', user: 'group:g0#member' }] });
  await built.engine.loadModel();
  t.deepEqual(built.engine.checkSync({ object: 'doc:d0', relation: 'can_read', user: 'user:u0' }), { allowed: true });
  const own = new MemoryStore();
  const mine = await buildEngine({ store: own, cacheSize: 0 });
  t.is(mine.store, own);
  t.is(mine.cache, undefined);
  await t.notThrowsAsync(mine.refresh());
});

test('buildEngine validates its options as the engine does: unknown keys and bad values name the option', async (t) => {
  const refused = async (options: unknown, option: string): Promise<void> => {
    const err = await t.throwsAsync(buildEngine(options as never), { instanceOf: LatchkeyError });
    t.is(err?.code, 'invalid_argument');
    t.is(err?.reason, 'invalid_option');
    t.is((err?.details as { option?: string } | undefined)?.option, option);
    t.true(err!.message.includes(`'${option}'`), err!.message);
  };
  await refused({ cachesize: 10 }, 'cachesize');
  await refused({ resolver: {} }, 'resolver');
  await refused({ cacheSize: -1 }, 'cacheSize');
  await refused({ cacheSize: 1.5 }, 'cacheSize');
  await refused({ revisionPollMs: 3_600_001 }, 'revisionPollMs');
  await refused({ mirror: 'yes' }, 'mirror');
  await refused({ conditionCostLimit: 0 }, 'conditionCostLimit');
  await refused({ maxResolutionDepth: 101 }, 'maxResolutionDepth');
  await refused({ store: {} }, 'store');
});
