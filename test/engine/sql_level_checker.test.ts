/**
 * The level-batched check fast path (engine/check/level_checker.ts): same
 * answers as the evaluator alone, on the reference dataset (memory store and
 * SQLite, against the generator's expected answers) and on random graphs with
 * conditions, wildcards, cycles and non-monotone relations (differential
 * property against the plain evaluator); one store call per read kind per
 * graph level.
 */
import test from 'ava';
import fc from 'fast-check';
import { Engine, MemoryStore, type TupleKey, type TupleStore } from '../../engine/index.ts';
import { LevelChecker } from '../../engine/check/level_checker.ts';
import { ReferenceDataset, REFERENCE_MODEL_DSL } from '../../bench/baseline/dataset.ts';
import { buildQueries, QUERY_SETS } from '../../bench/baseline/queries.ts';
import { GRAPH_MODEL, graphUniverse, outcome } from './graph_universe.ts';
import { openSqlStore } from './sql_helpers.ts';
import { sqlBackends } from '../helpers/databases.ts';

async function load(store: TupleStore, ds: ReferenceDataset): Promise<void> {
  const all: TupleKey[] = [];
  ds.forEachTuple((object, relation, user) => all.push({ object, relation, user }));
  for (let i = 0; i < all.length; i += 2000) await store.write([], all.slice(i, i + 2000));
}

test('level checker answers the reference query sets correctly on the memory store', async (t) => {
  const ds = new ReferenceDataset(0.02);
  const store = new MemoryStore();
  const level = new LevelChecker();
  const engine = new Engine({ store, resolver: level });
  await engine.writeModel({ dsl: REFERENCE_MODEL_DSL });
  await load(store, ds);
  for (const set of QUERY_SETS) {
    for (const q of buildQueries(ds, set, 200)) t.is((await engine.check(q)).allowed, q.expected, `${set} ${q.object}#${q.relation}@${q.user}`);
  }
  t.true(level.stats.fast > 0);
  t.is(level.stats.deferred, 0);
});

test('level checker on SQLite: correct answers, one store call per read kind per level', async (t) => {
  const ds = new ReferenceDataset(0.01);
  const { store, teardown } = await openSqlStore('sqlite');
  try {
    let calls = 0;
    const counting = new Proxy(store, {
      get(target, prop) {
        const v = Reflect.get(target, prop, target) as unknown;
        if (typeof v !== 'function') return v;
        const fn = (v as (...a: unknown[]) => unknown).bind(target);
        if (prop === 'readUserTuples' || prop === 'readObjectRelations') return (...a: unknown[]) => (calls++, fn(...a));
        return fn;
      },
    });
    const level = new LevelChecker({ combineReads: true });
    const engine = new Engine({ store: counting, resolver: level });
    await engine.writeModel({ dsl: REFERENCE_MODEL_DSL });
    await load(store, ds);
    for (const set of QUERY_SETS) {
      for (const q of buildQueries(ds, set, 30)) t.is((await engine.check(q)).allowed, q.expected, `${set} ${q.object}#${q.relation}@${q.user}`);
    }
    // A worst-case negative explores document → 5 folder levels → 3 group levels: at most 2 calls per level.
    const neg = buildQueries(ds, 'negative', 10);
    const c0 = calls;
    const l0 = level.stats.levels;
    const s0 = store.levelStatements;
    for (const q of neg) await engine.check(q);
    t.true(calls - c0 <= 2 * (level.stats.levels - l0), `${calls - c0} calls for ${level.stats.levels - l0} levels`);
    // The store answers the calls of one level with one statement.
    t.is(store.levelStatements - s0, level.stats.levels - l0);
    t.true((level.stats.levels - l0) / neg.length <= 10);
  } finally {
    await teardown();
  }
});

const { users, groups, docs, tuples: UNIVERSE } = graphUniverse(3, () => true);
const MODEL = GRAPH_MODEL;
/** Positions in UNIVERSE of doc:d0's parent doc:d1, doc:d1's parent doc:d2, and user:u1 a viewer of doc:d2. */
const CHAIN = [
  { object: 'doc:d0', relation: 'parent', user: 'doc:d1' },
  { object: 'doc:d1', relation: 'parent', user: 'doc:d2' },
  { object: 'doc:d2', relation: 'viewer', user: 'user:u1' },
].map((k) => UNIVERSE.findIndex((u) => u.object === k.object && u.relation === k.relation && u.user === k.user && u.condition === undefined));

test('level checker equals the evaluator on random graphs (property)', async (t) => {
  await t.notThrowsAsync(
    fc.assert(
      fc.asyncProperty(
        fc.uniqueArray(fc.nat({ max: UNIVERSE.length - 1 }), { maxLength: 40, selector: (i) => { const u = UNIVERSE[i]!; return `${u.object}#${u.relation}@${u.user}`; } }),
        fc.array(
          fc.record({
            object: fc.constantFrom(...docs, ...groups),
            relation: fc.constantFrom('viewer', 'can_read', 'editor'),
            user: fc.constantFrom(...users, 'user:*', 'group:g0#member'),
            x: fc.option(fc.integer({ min: 0, max: 10 }), { nil: undefined }),
          }),
          { minLength: 1, maxLength: 10 },
        ),
        async (picked, queries) => {
          const tuples = picked.map((i) => UNIVERSE[i]!);
          const plain = new Engine();
          const fast = new Engine({ resolver: new LevelChecker() });
          for (const e of [plain, fast]) {
            await e.writeModel({ dsl: MODEL });
            if (tuples.length > 0) await e.write({ writes: tuples });
          }
          for (const q of queries) {
            const req = {
              object: q.object,
              relation: q.object.startsWith('group:') ? 'member' : q.relation,
              user: q.user,
              ...(q.x === undefined ? {} : { context: { x: q.x } }),
            };
            const want = await outcome(plain, req);
            const got = await outcome(fast, req);
            if (want !== got) throw new Error(`${req.object}#${req.relation}@${req.user} x=${String(q.x)}: evaluator ${want}, fast path ${got}`);
          }
          return true;
        },
      ),
      { numRuns: process.env.CI ? 300 : 80 },
    ),
  );
});


for (const backend of sqlBackends()) {
  test(`sql ${backend}: the point and forward reads of one tick are one statement`, async (t) => {
    const { store, teardown } = await openSqlStore(backend);
    try {
      await store.write([], [
        { object: 'doc:1', relation: 'viewer', user: 'user:a' },
        { object: 'doc:1', relation: 'viewer', user: 'group:g#member' },
        { object: 'doc:2', relation: 'viewer', user: 'user:b', condition: { name: 'c', context: { x: 1 } } },
        { object: 'group:g', relation: 'member', user: 'user:c' },
      ]);
      const s0 = store.levelStatements;
      const [points, all, sets, again] = await Promise.all([
        store.readUserTuples([
          { objectType: 'doc', objectId: '1', relation: 'viewer', user: 'user:a' },
          { objectType: 'doc', objectId: '1', relation: 'viewer', user: 'user:A' },
          { objectType: 'doc', objectId: '2', relation: 'viewer', user: 'user:b' },
        ]),
        store.readObjectRelations([{ objectType: 'doc', objectId: '1', relation: 'viewer' }, { objectType: 'group', objectId: 'g', relation: 'member' }, { objectType: 'doc', objectId: '9', relation: 'viewer' }], 'all'),
        store.readObjectRelations([{ objectType: 'doc', objectId: '1', relation: 'viewer' }], 'usersets'),
        store.readObjectRelations([{ objectType: 'doc', objectId: '1', relation: 'viewer' }], 'all'),
      ]);
      t.is(store.levelStatements - s0, 1);
      t.deepEqual(points.map((p) => p?.user), ['user:a', undefined, 'user:b']);
      t.deepEqual(points[2]?.condition, { name: 'c', context: { x: 1 } });
      t.deepEqual(all.map((l) => l.map((x) => x.user)), [['group:g#member', 'user:a'], ['user:c'], []]);
      t.deepEqual(sets.map((l) => l.map((x) => x.user)), [['group:g#member']]);
      t.deepEqual(again.map((l) => l.map((x) => x.user)), [['group:g#member', 'user:a']]);
    } finally {
      await teardown();
    }
  });
}

for (const backend of sqlBackends()) {
  test(`sql ${backend}: with tupleset chains the level checker equals the evaluator on random graphs (property)`, async (t) => {
    const { store, teardown } = await openSqlStore(backend);
    try {
      const plain = new Engine({ store });
      const level = new LevelChecker();
      const fast = new Engine({ store, resolver: level });
      await plain.writeModel({ dsl: MODEL });
      let written: TupleKey[] = [];
      await t.notThrowsAsync(
        fc.assert(
          fc.asyncProperty(
            fc.uniqueArray(fc.nat({ max: UNIVERSE.length - 1 }), { maxLength: 40, selector: (i) => { const u = UNIVERSE[i]!; return `${u.object}#${u.relation}@${u.user}`; } }),
            fc.array(
              fc.record({
                object: fc.constantFrom(...docs),
                relation: fc.constantFrom('viewer', 'can_read'),
                user: fc.constantFrom(...users),
                x: fc.option(fc.integer({ min: 0, max: 10 }), { nil: undefined }),
              }),
              { minLength: 1, maxLength: 8 },
            ),
            async (picked, queries) => {
              const tuples = picked.map((i) => UNIVERSE[i]!);
              if (written.length > 0 || tuples.length > 0) await store.write(written, tuples);
              written = tuples;
              for (const q of queries) {
                const req = { object: q.object, relation: q.relation, user: q.user, ...(q.x === undefined ? {} : { context: { x: q.x } }) };
                const want = await outcome(plain, req);
                const got = await outcome(fast, req);
                if (want !== got) throw new Error(`${req.object}#${req.relation}@${req.user} x=${String(q.x)} over ${JSON.stringify(tuples)}: evaluator ${want}, fast path ${got}`);
              }
              return true;
            },
          ),
          // The first run is a parent chain two hops long (doc:d0 → doc:d1 → doc:d2, viewer there), so that chains are
          // read in every run of the test, whatever the random graphs hold.
          { numRuns: process.env.CI ? 150 : 40, examples: [[CHAIN, [{ object: 'doc:d0', relation: 'viewer', user: 'user:u1', x: undefined }]]] },
        ),
      );
      // Chains only where the store offers them (not on MySQL).
      t.is(level.stats.chains > 0, backend !== 'mysql');
    } finally {
      await teardown();
    }
  });
}

test('sql sqlite: a 5-hop check reads its folder chain at once: three statements instead of six, same answers', async (t) => {
  const ds = new ReferenceDataset(0.01);
  const { store, teardown } = await openSqlStore('sqlite');
  try {
    const chained = new LevelChecker();
    const stepped = new LevelChecker({ chains: false });
    const engines = [new Engine({ store, resolver: chained }), new Engine({ store, resolver: stepped })];
    await engines[0]!.writeModel({ dsl: REFERENCE_MODEL_DSL });
    await load(store, ds);
    const qs = buildQueries(ds, 'deep5', 20);
    const statements: number[] = [];
    for (const engine of engines) {
      const s0 = store.levelStatements;
      for (const q of qs) t.is((await engine.check(q)).allowed, q.expected, `${q.object}#${q.relation}@${q.user}`);
      statements.push((store.levelStatements - s0) / qs.length);
    }
    t.deepEqual(statements, [3, 6]);
    t.true(chained.stats.chains >= qs.length);
    t.is(stepped.stats.chains, 0);
  } finally {
    await teardown();
  }
});

test('sql sqlite: a chain longer than the store returns is read level by level, with the same answer', async (t) => {
  const { store, teardown } = await openSqlStore('sqlite');
  try {
    const level = new LevelChecker();
    const engine = new Engine({ store, resolver: level });
    await engine.writeModel({ dsl: MODEL });
    // doc:top's parent doc:x has 1,200 parents: its chain passes the store's 1,000 rows.
    const writes: TupleKey[] = [{ object: 'doc:top', relation: 'parent', user: 'doc:x' }];
    for (let i = 0; i < 1200; i++) writes.push({ object: 'doc:x', relation: 'parent', user: `doc:p${i}` });
    writes.push({ object: 'doc:p1199', relation: 'viewer', user: 'user:u1' });
    await store.write([], writes);
    t.true((await engine.check({ object: 'doc:top', relation: 'viewer', user: 'user:u1' })).allowed);
    t.false((await engine.check({ object: 'doc:top', relation: 'viewer', user: 'user:u2' })).allowed);
    t.true(level.stats.chains >= 2);
    t.is(level.stats.deferred, 0);
  } finally {
    await teardown();
  }
});
