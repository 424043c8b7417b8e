/**
 * Property tests of expiring tuples: for random models, random tuples and
 * random expiry times, at every instant T around each expiry (one
 * millisecond before, at, one millisecond after), Check, BatchCheck,
 * ListObjects and ListUsers answer what the reference evaluator
 * (test/engine/random_models.ts) answers given only the tuples unexpired at
 * T. Each scenario runs on the plain engine (no cache, no mirror) and on the
 * server's chain (answer cache; on SQL also the graph mirror and the level
 * checker), on memory, SQLite and PostgreSQL. Answers are asked in time
 * order, so every answer cached before an expiry is put to the test just
 * after it.
 *
 * Replay a failure with FC_SEED=<seed> (and FC_PATH=<path>).
 */
import test from 'ava';
import fc from 'fast-check';
import { buildEngine, Engine, MemoryStore, type TupleKey, type TupleStore } from '../../engine/index.ts';
import { SqlStore } from '../../engine/sql/sql_store.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/databases.ts';
import { needs } from '../helpers/needs.ts';
import { connect } from './sql_helpers.ts';
import { OBJECTS, QUERIES, USERS, buildModel, candidateTuples, reference, specArb } from './random_models.ts';

const CI = process.env['CI'] !== undefined;
const params = (runs: number): fc.Parameters<unknown> => {
  const p: fc.Parameters<unknown> = { numRuns: runs };
  if (process.env['FC_SEED'] !== undefined) p.seed = Number(process.env['FC_SEED']);
  if (process.env['FC_PATH'] !== undefined) p.path = process.env['FC_PATH'];
  return p;
};

const T0 = Date.parse('2031-06-01T00:00:00.000Z');
/** Expiry offsets from T0 a tuple may get (`undefined`: it never expires). */
const OFFSETS = [undefined, 1000, 2000, 3000] as const;

const scenarioArb = specArb.chain((spec) =>
  fc.record({
    spec: fc.constant(spec),
    tuples: fc.subarray(candidateTuples(spec), { maxLength: 24 }).chain((tuples) =>
      fc.tuple(...tuples.map((t) => fc.constantFrom(...OFFSETS).map((o): TupleKey => (o === undefined ? t : { ...t, expires_at: new Date(T0 + o).toISOString() })))),
    ),
  }),
);

interface Clock {
  t: number;
}

/** One store per scenario: a new memory store, or a new store of the shared SQL database. */
type StoreFactory = (clock: Clock) => Promise<TupleStore>;

const live = (tuples: readonly TupleKey[], at: number): TupleKey[] => tuples.map((t) => ({ object: t.object, relation: t.relation, user: t.user, ...(t.expires_at === undefined || Date.parse(t.expires_at) > at ? {} : { gone: true }) })).filter((t) => !('gone' in t));

/** The instants to ask at: T0, and one millisecond before, at and after each expiry used. */
function instants(tuples: readonly TupleKey[]): number[] {
  const out = new Set<number>([T0]);
  for (const t of tuples) {
    if (t.expires_at === undefined) continue;
    const e = Date.parse(t.expires_at);
    out.add(e - 1).add(e).add(e + 1);
  }
  return [...out].sort((a, b) => a - b);
}

async function runScenario(makeStore: StoreFactory, layout: 'plain' | 'chain', spec: Parameters<typeof buildModel>[0], tuples: TupleKey[]): Promise<boolean> {
  const clock: Clock = { t: T0 };
  const now = (): number => clock.t;
  const store = await makeStore(clock);
  let engine: Engine;
  try {
    engine = layout === 'plain' ? new Engine({ store, now }) : (await buildEngine({ store, now, revisionPollMs: 60_000 })).engine;
    try {
      await engine.writeModel(buildModel(spec));
    } catch {
      return false; // the random model has no entry point somewhere
    }
    for (let i = 0; i < tuples.length; i += 100) await engine.write({ writes: tuples.slice(i, i + 100) });
    for (const at of instants(tuples)) {
      clock.t = at;
      const facts = reference(spec, live(tuples, at));
      const when = `at T0+${at - T0}ms (${layout})`;
      for (const [object, relation] of QUERIES) {
        for (const user of USERS) {
          const { allowed } = await engine.check({ user, relation, object });
          if (allowed !== facts.has(`${object}#${relation}@${user}`)) throw new Error(`${when}: check ${object}#${relation}@${user}: engine ${allowed}, reference ${!allowed}`);
        }
      }
      const batch = QUERIES.flatMap(([object, relation]) => USERS.map((user) => ({ user, relation, object })));
      for (const r of await engine.batchCheck(batch.slice(0, 100))) {
        if (r.error !== undefined || r.allowed !== facts.has(`${r.object}#${r.relation}@${r.user}`)) throw new Error(`${when}: batch ${r.object}#${r.relation}@${r.user}`);
      }
      for (const [object, relation] of QUERIES.filter((_, i) => i % 3 === 0)) {
        const { users } = await engine.listUsers({ object, relation, userFilters: [{ type: 'user' }] });
        // A listed user holds the relation; one who holds it is listed or covered by a listed `user:*` (which,
        // as in OpenFGA, does not claim every user: an exclusion may still hold some out).
        const wildcard = users.includes('user:*');
        for (const user of USERS) {
          const expected = facts.has(`${object}#${relation}@${user}`);
          if (users.includes(user) ? !expected : expected && !wildcard) throw new Error(`${when}: listUsers ${object}#${relation} ${JSON.stringify(users)} vs reference for ${user}: ${expected}`);
        }
      }
      for (const user of USERS) {
        for (const type of ['folder', 'doc'] as const) {
          const relation = 'r0';
          const { objects } = await engine.listObjects({ user, relation, type });
          const expected = OBJECTS[type]!.filter((o) => facts.has(`${o}#${relation}@${user}`)).sort();
          if (JSON.stringify(objects) !== JSON.stringify(expected)) throw new Error(`${when}: listObjects ${user} ${relation} ${type}: ${JSON.stringify(objects)} vs ${JSON.stringify(expected)}`);
        }
      }
    }
    return true;
  } finally {
    await store.close();
  }
}

async function property(t: import('ava').ExecutionContext, makeStore: StoreFactory, runs: number): Promise<void> {
  let models = 0;
  await fc.assert(
    fc.asyncProperty(scenarioArb, async ({ spec, tuples }) => {
      for (const layout of ['plain', 'chain'] as const) {
        try {
          if (await runScenario(makeStore, layout, spec, tuples)) models++;
        } catch (err) {
          t.log(String(err));
          throw err;
        }
      }
    }),
    params(runs),
  );
  t.true(models > 0, 'some random models were valid');
}

test('memory: every evaluator agrees with the reference given the tuples unexpired at T', async (t) => {
  await property(t, async (clock) => new MemoryStore({ now: () => clock.t }), CI ? 150 : 25);
});

/** Runs the property on one database, each scenario in a store of its own. */
async function sqlProperty(t: import('ava').ExecutionContext, db: TestDatabase, runs: number): Promise<void> {
  const sequelize = await connect(db);
  const clockRef: { current: Clock } = { current: { t: T0 } };
  const root = await SqlStore.open({ sequelize, now: () => clockRef.current.t });
  let n = 0;
  try {
    await property(t, async (clock) => {
      clockRef.current = clock;
      const id = `01J${String(++n).padStart(23, '0')}`;
      await root.catalog().createStore({ id, name: `s${n}`, createdAt: T0, updatedAt: T0 });
      return root.catalog().store(id);
    }, runs);
  } finally {
    await root.close();
    await sequelize.close();
    await db.drop();
  }
}

test('sqlite: every evaluator agrees with the reference given the tuples unexpired at T', async (t) => {
  await sqlProperty(t, await createTestDatabase('sqlite', 'lk_exp_prop'), CI ? 40 : 8);
});

needs(test, 'postgres')('postgres: every evaluator agrees with the reference given the tuples unexpired at T', async (t) => {
  await sqlProperty(t, await createTestDatabase('postgres', 'lk_exp_prop'), CI ? 40 : 6);
});
