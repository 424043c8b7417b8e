/**
 * `@latchkey/engine/testing`'s store arbitraries: every generated store is
 * valid for its model (the engine writes it), on random cyclic models
 * (test/dsl/generators.ts) and on a model with every kind of restriction
 * (usersets, wildcards, parents, conditions of each parameter type); the
 * stores reach deep and cyclic graphs; condition values have their declared
 * types.
 *
 * Replay a failure with FC_SEED=<seed> (and FC_PATH=<path>).
 */
import test from 'ava';
import fc from 'fast-check';
import { buildUniverse, engineFor, parameterValue, storeArbitrary, toModel, tupleSetArbitrary } from '../../engine/testing/index.ts';
import { Engine, TypeSystem, type AuthorizationModel } from '../../engine/index.ts';
import { fcParams, genCyclicModel } from '../dsl/generators.ts';

const RUNS = process.env['CI'] ? 100 : 25;

const RICH = `model
  schema 1.1
type user
type team
  relations
    define member: [user, user:*, team#member, user with in_office]
type folder
  relations
    define parent: [folder]
    define owner: [user, team#member]
    define viewer: [user:*, team#member with recent] or owner or viewer from parent
type doc
  relations
    define parent: [folder]
    define viewer: [user with typed] or viewer from parent
condition in_office(ip: ipaddress, floor: string) {
  ip.in_cidr('10.0.0.0/16') && floor != ""
}
condition recent(granted: timestamp, now: timestamp, grace: duration) {
  now - granted < grace
}
condition typed(i: int, u: uint, d: double, b: bool, l: list<string>, m: map<int>) {
  b && i > 0 && u > 0u && d > 0.0 && size(l) >= 0 && size(m) >= 0
}
`;

/** A model of genCyclicModel's, or undefined when it is one OpenFGA refuses (an unknown relation on a parent's type, a relation defined only through itself, …). */
function validModel(text: string): AuthorizationModel | undefined {
  try {
    const model = toModel(text);
    new TypeSystem(model, 'm');
    return model;
  } catch {
    return undefined;
  }
}

test('every generated store is valid for a random cyclic model (the engine writes it)', async (t) => {
  let written = 0;
  await fc.assert(
    fc.asyncProperty(
      fc.gen().chain((g) => {
        const model = validModel(genCyclicModel(g));
        return fc.record({ model: fc.constant(model), store: model === undefined ? fc.constant(undefined) : storeArbitrary(model, { maxTuples: 24 }) });
      }),
      async ({ model, store }) => {
        fc.pre(model !== undefined && store !== undefined);
        await engineFor(model!, store!.tuples);
        written += store!.tuples.length;
      },
    ),
    fcParams(RUNS),
  );
  t.true(written > 0);
});

test('every generated store is valid for a model with usersets, wildcards, parents and conditions, and its checks answer without error', async (t) => {
  const model = toModel(RICH);
  const universe = buildUniverse(model);
  let conditional = 0;
  await fc.assert(
    fc.asyncProperty(storeArbitrary(model, { maxTuples: 30 }), async (store) => {
      const engine = await engineFor(model, store.tuples);
      conditional += store.tuples.filter((x) => x.condition !== undefined).length;
      for (const user of universe.users) {
        for (const object of ['doc:0', 'folder:1', 'team:2']) {
          const relation = object.startsWith('team') ? 'member' : 'viewer';
          // Every parameter a tuple leaves out is in the request context, so no check lacks one.
          await engine.check({ user, relation, object, context: store.context });
        }
      }
    }),
    fcParams(RUNS),
  );
  t.true(conditional > 0, 'some tuples carry conditions');
});

test('the universe holds every kind of tuple the restrictions admit', (t) => {
  const u = buildUniverse(toModel(RICH), { ids: { user: ['anne', 'bob'] }, idsPerType: 2 });
  const has = (object: string, relation: string, user: string): boolean => u.slots.some((s) => s.object === object && s.relation === relation && s.user === user);
  t.true(has('team:0', 'member', 'user:anne'));
  t.true(has('team:0', 'member', 'user:*'));
  t.true(has('team:0', 'member', 'team:1#member'));
  t.true(has('folder:1', 'parent', 'folder:0'));
  t.true(has('folder:1', 'viewer', 'team:0#member'));
  t.false(has('doc:0', 'viewer', 'user:*'), 'doc#viewer admits no wildcard');
  t.deepEqual([...u.users], ['user:anne', 'user:bob']);
  t.is(u.slots.find((s) => s.object === 'doc:0' && s.relation === 'viewer')?.condition?.name, 'typed');
  // The chain of folder parents: 0 → 1 → 0 (two ids), the link that closes a cycle.
  t.deepEqual(u.slots.filter((s) => s.chain && s.relation === 'parent' && s.object.startsWith('folder')).map((s) => `${s.object}→${s.user}`), ['folder:0→folder:1', 'folder:1→folder:0']);
});

test('stores are biased toward deep chains and cycles of parents and nested groups', async (t) => {
  const model = toModel('model\n  schema 1.1\ntype user\ntype folder\n  relations\n    define parent: [folder]\n    define viewer: [user] or viewer from parent\n');
  const samples = fc.sample(storeArbitrary(model, { idsPerType: 5, maxTuples: 20 }), { numRuns: 200, seed: 7 });
  const longest = samples.map((s) => {
    const parent = new Map<string, string[]>();
    for (const x of s.tuples) if (x.relation === 'parent') parent.set(x.object, [...(parent.get(x.object) ?? []), x.user]);
    let best = 0;
    const walk = (node: string, seen: Set<string>): void => {
      best = Math.max(best, seen.size);
      for (const next of parent.get(node) ?? []) if (!seen.has(next)) walk(next, new Set([...seen, next]));
    };
    for (const start of parent.keys()) walk(start, new Set([start]));
    return best;
  });
  const cyclic = samples.filter((s) => {
    const parents = s.tuples.filter((x) => x.relation === 'parent');
    return parents.some((x) => parents.some((y) => y.object === x.user && y.user === x.object)) || parents.length >= 5;
  });
  t.true(longest.filter((n) => n >= 4).length >= 20, `chains of 4 or more folders in ${longest.filter((n) => n >= 4).length} of 200 stores`);
  t.true(cyclic.length >= 10, `${cyclic.length} of 200 stores loop back or chain every folder`);
  // Without the bias, long chains are rare.
  const flat = fc.sample(storeArbitrary(model, { idsPerType: 5, maxTuples: 20, linkBias: 0 }), { numRuns: 200, seed: 7 });
  t.true(flat.every((s) => s.tuples.length <= 20));
});

test('condition values have their declared types (the engine accepts them as context)', async (t) => {
  const model = toModel(RICH);
  const engine = new Engine();
  await engine.writeModel(model);
  const params = model.conditions!['typed']!.parameters!;
  let answered = 0;
  await t.notThrowsAsync(
    fc.assert(
      fc.asyncProperty(fc.record(Object.fromEntries(Object.entries(params).map(([k, v]) => [k, parameterValue(v)]))), async (context) => {
        await engine.write({ writes: [{ user: 'user:x', relation: 'viewer', object: 'doc:x', condition: { name: 'typed' } }] });
        try {
          // A value of the wrong type fails the check with invalid_argument; every generated one converts and is answered.
          const r = await engine.check({ user: 'user:x', relation: 'viewer', object: 'doc:x', context });
          if (typeof r.allowed !== 'boolean') return false;
          answered++;
          return true;
        } finally {
          await engine.write({ deletes: [{ user: 'user:x', relation: 'viewer', object: 'doc:x' }] });
        }
      }),
      fcParams(RUNS),
    ),
  );
  t.true(answered > 0, 'the engine answered checks with generated contexts');
});

test('tupleSetArbitrary gives distinct tuples, at most maxTuples', (t) => {
  const model = toModel(RICH);
  for (const tuples of fc.sample(tupleSetArbitrary(model, { maxTuples: 5 }), { numRuns: 50, seed: 3 })) {
    t.true(tuples.length <= 5);
    t.is(new Set(tuples.map((x) => `${x.object}#${x.relation}@${x.user}`)).size, tuples.length);
  }
});

test('bad options are invalid_argument naming the option', (t) => {
  const model = toModel(RICH);
  t.is(t.throws(() => storeArbitrary(model, { maxTuples: 0 }))?.message.includes('maxTuples'), true);
  t.is((t.throws(() => buildUniverse(model, { ids: ['a b'] })) as { reason?: string }).reason, 'invalid_option');
});
