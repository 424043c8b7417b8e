/**
 * Property tests of the engine against the tiny reference evaluator of
 * test/engine/random_models.ts (a least fixpoint over facts
 * `object#relation@user`), on small random models (no conditions) and
 * random tuples.
 *
 * Replay a failure with FC_SEED=<seed> (and FC_PATH=<path>).
 */
import test from 'ava';
import fc from 'fast-check';
import { CheckCache, Engine, LatchkeyError, LocalChecker, MemoryStore, type TupleKey } from '../../engine/index.ts';
import { OBJECTS, QUERIES, RELS, USERS, buildModel, candidateTuples, reference, scenarioArb, specArb, type Spec } from './random_models.ts';

const RUNS = process.env['CI'] ? 200 : 30;
const params = (): fc.Parameters<unknown> => {
  const p: fc.Parameters<unknown> = { numRuns: RUNS };
  if (process.env['FC_SEED'] !== undefined) p.seed = Number(process.env['FC_SEED']);
  if (process.env['FC_PATH'] !== undefined) p.path = process.env['FC_PATH'];
  return p;
};

/** An engine with the model, or `undefined` when the random model has no entry point somewhere. */
async function setup(spec: Spec, tuples: TupleKey[]): Promise<Engine | undefined> {
  const engine = new Engine();
  try {
    await engine.writeModel(buildModel(spec));
  } catch {
    return undefined;
  }
  for (let i = 0; i < tuples.length; i += 100) await engine.write({ writes: tuples.slice(i, i + 100) });
  return engine;
}

test('Check agrees with the reference evaluator', async (t) => {
  let models = 0;
  await fc.assert(
    fc.asyncProperty(scenarioArb, async ({ spec, tuples }) => {
      const engine = await setup(spec, tuples);
      if (engine === undefined) return;
      models++;
      const facts = reference(spec, tuples);
      for (const [object, relation] of QUERIES) {
        for (const user of USERS) {
          const { allowed } = await engine.check({ user, relation, object });
          if (allowed !== facts.has(`${object}#${relation}@${user}`)) {
            throw new Error(`check ${object}#${relation}@${user}: engine ${allowed}, reference ${!allowed}`);
          }
        }
      }
      // BatchCheck shares work across checks and must give the same answers.
      const batch = QUERIES.flatMap(([object, relation]) => USERS.map((user) => ({ user, relation, object })));
      const results = await engine.batchCheck(batch.slice(0, 100));
      results.forEach((r) => {
        if (r.error !== undefined || r.allowed !== facts.has(`${r.object}#${r.relation}@${r.user}`)) throw new Error(`batch ${r.object}#${r.relation}@${r.user}`);
      });
    }),
    params(),
  );
  t.true(models > 0, 'some random models were valid');
});

test('ListObjects returns exactly the objects that pass Check', async (t) => {
  await t.notThrowsAsync(
    fc.assert(
      fc.asyncProperty(scenarioArb, async ({ spec, tuples }) => {
        const engine = await setup(spec, tuples);
        if (engine === undefined) return;
        for (const type of ['group', 'folder', 'doc']) {
          for (const relation of type === 'group' ? ['member'] : RELS) {
            for (const user of [...USERS, 'user:*', 'group:g0#member']) {
              const { objects, truncated } = await engine.listObjects({ user, relation, type });
              const expected: string[] = [];
              for (const o of OBJECTS[type]!) if ((await engine.check({ user, relation, object: o })).allowed) expected.push(o);
              if (truncated || JSON.stringify(objects) !== JSON.stringify(expected.sort())) {
                throw new Error(`listObjects ${user} ${relation} ${type}: ${JSON.stringify(objects)} vs checks ${JSON.stringify(expected)}`);
              }
            }
          }
        }
      }),
      params(),
    ),
  );
});

test('ListUsers returns exactly the users that pass Check', async (t) => {
  await t.notThrowsAsync(
    fc.assert(
      fc.asyncProperty(scenarioArb, async ({ spec, tuples }) => {
        const engine = await setup(spec, tuples);
        if (engine === undefined) return;
        for (const [object, relation] of QUERIES) {
          const { users } = await engine.listUsers({ object, relation, userFilters: [{ type: 'user' }] });
          // Sound: every returned user (or wildcard) passes Check.
          for (const u of users) {
            if (!(await engine.check({ user: u, relation, object })).allowed) throw new Error(`listUsers ${object}#${relation} returned ${u}, Check says false`);
          }
          // Complete: every user passing Check is returned, or covered by a returned wildcard
          // (OpenFGA lists `user:*` once instead of every user it stands for).
          for (const u of [...USERS, 'user:*']) {
            if ((await engine.check({ user: u, relation, object })).allowed && !users.includes(u) && !users.includes('user:*')) {
              throw new Error(`listUsers ${object}#${relation}: ${JSON.stringify(users)} misses ${u}`);
            }
          }
          const { users: sets } = await engine.listUsers({ object, relation, userFilters: [{ type: 'group', relation: 'member' }] });
          const expectedSets: string[] = [];
          for (const g of OBJECTS['group']!) if ((await engine.check({ user: `${g}#member`, relation, object })).allowed) expectedSets.push(`${g}#member`);
          if (JSON.stringify(sets) !== JSON.stringify(expectedSets.sort())) {
            throw new Error(`listUsers ${object}#${relation} group#member: ${JSON.stringify(sets)} vs checks ${JSON.stringify(expectedSets)}`);
          }
        }
      }),
      params(),
    ),
  );
});

test('contextual tuples give the same answers as the same tuples written', async (t) => {
  await t.notThrowsAsync(
    fc.assert(
      fc.asyncProperty(scenarioArb, async ({ spec, tuples, split }) => {
        const written = tuples.slice(0, split);
        const contextual = tuples.slice(split);
        const full = await setup(spec, tuples);
        const partial = await setup(spec, written);
        if (full === undefined || partial === undefined) return;
        for (const [object, relation] of QUERIES) {
          for (const user of USERS) {
            const a = (await full.check({ user, relation, object })).allowed;
            const b = (await partial.check({ user, relation, object, contextualTuples: contextual })).allowed;
            if (a !== b) throw new Error(`${object}#${relation}@${user}: written ${a}, contextual ${b}`);
          }
        }
      }),
      params(),
    ),
  );
});

test('writes then deletes leave the store as it was', async (t) => {
  await t.notThrowsAsync(
    fc.assert(
      fc.asyncProperty(scenarioArb, async ({ spec, tuples, split }) => {
        const base = tuples.slice(0, split);
        const extra = tuples.slice(split);
        const engine = await setup(spec, base);
        if (engine === undefined || extra.length === 0) return;
        const before = await engine.read({}, { pageSize: 100 });
        await engine.write({ writes: extra });
        await engine.write({ deletes: extra });
        const after = await engine.read({}, { pageSize: 100 });
        if (JSON.stringify(before) !== JSON.stringify(after)) throw new Error('store changed');
      }),
      params(),
    ),
  );
});

test('concatenated read pages equal the unpaginated read', async (t) => {
  await t.notThrowsAsync(
    fc.assert(
      fc.asyncProperty(scenarioArb, fc.integer({ min: 1, max: 7 }), fc.constantFrom(undefined, 'user:u0', 'group:g1#member'), async ({ spec, tuples }, pageSize, user) => {
        const engine = await setup(spec, tuples);
        if (engine === undefined) return;
        const filter = user === undefined ? {} : { user };
        const all = (await engine.read(filter, { pageSize: 100 })).tuples;
        const pages = [];
        let token = '';
        do {
          const p = await engine.read(filter, { pageSize, continuationToken: token });
          pages.push(...p.tuples);
          token = p.continuationToken;
        } while (token !== '');
        if (JSON.stringify(pages) !== JSON.stringify(all)) throw new Error('pages differ from the full read');
      }),
      params(),
    ),
  );
});

test('sharing sub-problem answers across checks never changes an answer', async (t) => {
  // Here `blocked` may also hold group usersets, so cycles among groups can
  // reach the subtracted side of `but not`, where OpenFGA's per-path cycle
  // rule applies; whatever the answer, a batch (one shared memo) and
  // ListObjects must give the same answers as checks made one by one.
  const arb = specArb.chain((spec) => {
    const groupsBlocked = candidateTuples(spec).concat(
      (['folder', 'doc'] as const).flatMap((type) => OBJECTS[type]!.flatMap((o) => OBJECTS['group']!.map((g) => ({ object: o, relation: 'blocked', user: `${g}#member` })))),
    );
    return fc.record({ spec: fc.constant(spec), tuples: fc.subarray(groupsBlocked, { maxLength: 30 }) });
  });
  await t.notThrowsAsync(
    fc.assert(
      fc.asyncProperty(arb, async ({ spec, tuples }) => {
        const engine = new Engine();
        try {
          await engine.writeModel(buildModel(spec, true));
        } catch {
          return;
        }
        for (let i = 0; i < tuples.length; i += 100) await engine.write({ writes: tuples.slice(i, i + 100) });
        const queries = QUERIES.flatMap(([object, relation]) => USERS.map((user) => ({ user, relation, object })));
        const single: boolean[] = [];
        for (const q of queries) single.push((await engine.check(q)).allowed);
        for (let i = 0; i < queries.length; i += 100) {
          const batch = await engine.batchCheck(queries.slice(i, i + 100));
          batch.forEach((r, j) => {
            if (r.error !== undefined || r.allowed !== single[i + j]) throw new Error(`batch ${r.object}#${r.relation}@${r.user}: ${r.allowed}, alone ${single[i + j]}`);
          });
        }
        const reversed = [...queries].reverse().slice(0, 100);
        const back = await engine.batchCheck(reversed);
        back.forEach((r, j) => {
          if (r.allowed !== single[queries.length - 1 - j]) throw new Error(`reversed batch ${r.object}#${r.relation}@${r.user}`);
        });
        for (const type of ['folder', 'doc'] as const) {
          for (const relation of RELS) {
            for (const user of USERS) {
              const { objects } = await engine.listObjects({ user, relation, type });
              const expected = OBJECTS[type]!.filter((o) => single[queries.findIndex((q) => q.object === o && q.relation === relation && q.user === user)]);
              if (JSON.stringify(objects) !== JSON.stringify(expected.sort())) throw new Error(`listObjects ${user} ${relation} ${type}: ${JSON.stringify(objects)} vs ${JSON.stringify(expected)}`);
            }
          }
        }
      }),
      params(),
    ),
  );
});

test('the synchronous and asynchronous evaluators answer alike', async (t) => {
  // The memory store answers reads synchronously, so the engine resolves a
  // check in one synchronous call (engine/check/resolve_sync.ts); LocalChecker with
  // `sync: false` resolves the same store through promises, as for SQL stores.
  // Same model, tuples, contextual tuples and depth limit: same answer or the
  // same error code. `blocked` may hold group usersets (cycles reach `but not`)
  // and small depth limits make resolution_too_complex errors common; where
  // the visited set makes that error depend on the order of exploration, one
  // may answer false instead (docs/check.md, "Two evaluators").
  const outcome = async (engine: Engine, q: { user: string; relation: string; object: string; contextualTuples?: TupleKey[] }): Promise<string> => {
    try {
      return String((await engine.check(q)).allowed);
    } catch (err) {
      if (!(err instanceof LatchkeyError)) throw err;
      return `${err.code}/${String(err.details?.['openfga_code'])}`;
    }
  };
  const arb = specArb.chain((spec) => {
    const candidates = candidateTuples(spec).concat(
      (['folder', 'doc'] as const).flatMap((type) => OBJECTS[type]!.flatMap((o) => OBJECTS['group']!.map((g) => ({ object: o, relation: 'blocked', user: `${g}#member` })))),
    );
    return fc.record({
      spec: fc.constant(spec),
      tuples: fc.subarray(candidates, { maxLength: 30 }),
      contextual: fc.subarray(candidates, { maxLength: 4 }),
      depth: fc.integer({ min: 2, max: 25 }),
    });
  });
  // `checkSync` on the same engine gives `check`'s outcome exactly, or (only for models
  // with cycles through intersection or exclusion, which keep the concurrent evaluator) sync_unavailable.
  const outcomeSync = (engine: Engine, q: { user: string; relation: string; object: string; contextualTuples?: TupleKey[] }): string => {
    try {
      return String(engine.checkSync(q).allowed);
    } catch (err) {
      if (!(err instanceof LatchkeyError)) throw err;
      return err.reason === 'sync_unavailable' ? 'sync_unavailable' : `${err.code}/${String(err.details?.['openfga_code'])}`;
    }
  };
  let compared = 0;
  let comparedSync = 0;
  await t.notThrowsAsync(
    fc.assert(
      fc.asyncProperty(arb, async ({ spec, tuples, contextual, depth }) => {
        const store = new MemoryStore();
        const fast = new Engine({ store, maxResolutionDepth: depth });
        const slow = new Engine({ store, maxResolutionDepth: depth, resolver: new LocalChecker({ sync: false }) });
        try {
          await fast.writeModel(buildModel(spec, true));
        } catch {
          return;
        }
        for (let i = 0; i < tuples.length; i += 100) await fast.write({ writes: tuples.slice(i, i + 100) });
        for (const [object, relation] of QUERIES) {
          for (const user of [...USERS, 'group:g0#member']) {
            for (const q of [{ user, relation, object }, { user, relation, object, contextualTuples: contextual }]) {
              const a = await outcome(fast, q);
              const b = await outcome(slow, q);
              const c = outcomeSync(fast, q);
              if (c !== a && c !== 'sync_unavailable') throw new Error(`${object}#${relation}@${user}: checkSync ${c}, check ${a}`);
              if (c === a) comparedSync++;
              // One allowance (see test/engine/cache_graph.test.ts, `agree`): a depth error against false or
              // another error, in cyclic graphs near the limit, where the order of exploration decides which comes first.
              const depthError = 'failed_precondition/2002';
              if (a !== b && !((b === depthError && a !== 'true') || (a === depthError && b !== 'true'))) {
                throw new Error(`${object}#${relation}@${user} (${q.contextualTuples === undefined ? 'no' : contextual.length} contextual, depth ${depth}): sync ${a}, async ${b}`);
              }
              compared++;
            }
          }
        }
      }),
      params(),
    ),
  );
  t.true(compared > 0);
  t.true(comparedSync > compared / 2, `checkSync answered ${comparedSync} of ${compared}`);
});

test('a cached engine answers as an uncached one under random writes and deletes (random models)', async (t) => {
  // The cache invalidates only the relations a written tuple can affect, computed from the model
  // (engine/check/check_dependencies.ts, tupleClassesRead): on random models with usersets, tuple-to-userset chains,
  // intersections and exclusions, every answer after every write must equal a fresh evaluation.
  const arb = specArb.chain((spec) => {
    const candidates = candidateTuples(spec).concat(
      (['folder', 'doc'] as const).flatMap((type) => OBJECTS[type]!.flatMap((o) => OBJECTS['group']!.map((g) => ({ object: o, relation: 'blocked', user: `${g}#member` })))),
    );
    return fc.record({
      spec: fc.constant(spec),
      steps: fc.array(fc.record({ tuple: fc.constantFrom(...candidates), queries: fc.subarray(QUERIES, { minLength: 4, maxLength: 12 }) }), { minLength: 1, maxLength: 30 }),
      asyncInner: fc.boolean(),
    });
  });
  let compared = 0;
  await t.notThrowsAsync(
    fc.assert(
      fc.asyncProperty(arb, async ({ spec, steps, asyncInner }) => {
        const store = new MemoryStore();
        const cache = new CheckCache({ store, maxEntries: 1000 });
        const cached = new Engine({ store: cache.store, resolver: cache.resolver(asyncInner ? new LocalChecker({ sync: false }) : undefined) });
        const plain = new Engine({ store });
        try {
          await cached.writeModel(buildModel(spec, true));
        } catch {
          return;
        }
        const present = new Set<string>();
        const outcome = async (e: Engine, q: { user: string; relation: string; object: string }): Promise<string> => {
          try {
            return String((await e.check(q)).allowed);
          } catch (err) {
            if (!(err instanceof LatchkeyError)) throw err;
            return err.code;
          }
        };
        for (const step of steps) {
          const k = `${step.tuple.object}#${step.tuple.relation}@${step.tuple.user}`;
          await cached.write(present.has(k) ? { deletes: [step.tuple] } : { writes: [step.tuple] });
          if (present.has(k)) present.delete(k);
          else present.add(k);
          for (const [object, relation] of step.queries) {
            for (const user of [...USERS, 'group:g1#member']) {
              const q = { user, relation, object };
              const want = await outcome(plain, q);
              const got = await outcome(cached, q);
              if (want !== got) throw new Error(`after ${present.has(k) ? 'writing' : 'deleting'} ${k}: ${object}#${relation}@${user} uncached ${want}, cached ${got}`);
              compared++;
            }
          }
        }
      }),
      params(),
    ),
  );
  t.true(compared > 0);
});
