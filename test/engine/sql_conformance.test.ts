/**
 * OpenFGA's conformance suites (read in place from ../shared/conformance)
 * through the engine on every SQL backend, with the check cache on, and with
 * the graph mirror and the level-batched fast path, compared assertion by
 * assertion with the YAML expectations (Check and ListObjects; ListUsers is
 * compared with the plain engine's answer). The full runner for the plain
 * engine is test/conformance/openfga.test.ts.
 *
 * One database per backend is reused: between YAML tests its tables are
 * emptied.
 */
import anyTest from 'ava';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { Sequelize } from 'sequelize';
import { CheckCache, Engine, GraphMirror, LatchkeyError, LevelChecker, LocalChecker, MemoryStore, type TupleKey, type TupleStore } from '../../engine/index.ts';
import { SqlStore } from '../../engine/sql/index.ts';
import { transformDslToModel } from '../../dsl/index.ts';
import { CONFORMANCE_DIR } from '../helpers/shared.ts';
import { missing, needs } from '../helpers/needs.ts';
import { createTestDatabase, sqlBackends } from '../helpers/databases.ts';
import { connect } from './sql_helpers.ts';

interface YamlTuple {
  object: string;
  relation: string;
  user: string;
  condition?: { name: string; context?: Record<string, unknown> };
}
interface Assertion<R> {
  request?: R;
  tuple?: R;
  expectation?: unknown;
  errorCode?: number;
  contextualTuples?: YamlTuple[];
  context?: Record<string, unknown>;
}
interface Stage {
  model: string;
  tuples?: YamlTuple[] | null;
  checkAssertions?: Assertion<{ object: string; relation: string; user: string }>[];
  listObjectsAssertions?: Assertion<{ user: string; type: string; relation: string }>[];
}
interface YamlTest {
  name: string;
  stages: Stage[];
}

const toTuple = (t: YamlTuple): TupleKey =>
  t.condition === undefined ? { object: t.object, relation: t.relation, user: t.user } : { object: t.object, relation: t.relation, user: t.user, condition: t.condition.context === undefined ? { name: t.condition.name } : { name: t.condition.name, context: t.condition.context } };

function codeOf(err: unknown): string {
  if (err instanceof LatchkeyError) {
    const c = err.details?.['openfga_code'];
    return typeof c === 'number' ? String(c) : `${err.code}/${err.reason ?? ''}`;
  }
  return `non-latchkey ${String(err)}`;
}

// Every test here runs the suites of ../shared/conformance.
const test = needs(anyTest, 'shared');
const TESTS: YamlTest[] = [];
for (const file of missing('shared') === undefined ? ['consolidated_1_1_tests.yaml', 'abac_tests.yaml'] : []) {
  TESTS.push(...(parse(readFileSync(join(CONFORMANCE_DIR, 'openfga', file), 'utf8')) as { tests: YamlTest[] }).tests);
}

type Variant = 'cache' | 'mirror+level' | 'mirror';

/** Runs every YAML test against engines built by `make`; returns the mismatches. */
async function runAll(make: () => Promise<{ engine: Engine; reset: () => Promise<void> }>): Promise<{ failures: string[]; assertions: number }> {
  const failures: string[] = [];
  let assertions = 0;
  const { engine: first, reset } = await make();
  void first;
  for (const yt of TESTS) {
    await reset();
    const { engine } = await make();
    for (const [si, stage] of yt.stages.entries()) {
      await engine.writeModel(transformDslToModel(stage.model));
      const tuples = (stage.tuples ?? []).map(toTuple);
      for (let i = 0; i < tuples.length; i += 40) await engine.write({ writes: tuples.slice(i, i + 40) });
      for (const a of stage.checkAssertions ?? []) {
        const q = a.tuple!;
        assertions++;
        const req = { ...q, contextualTuples: (a.contextualTuples ?? []).map(toTuple), ...(a.context === undefined ? {} : { context: a.context }) };
        let got: string;
        try {
          // Twice: the second answer may come from a cache.
          const one = (await engine.check(req)).allowed;
          const two = (await engine.check(req)).allowed;
          got = one === two ? String(one) : `unstable ${one}/${two}`;
        } catch (err) {
          got = `error ${codeOf(err)}`;
        }
        const want = a.errorCode !== undefined ? `error ${a.errorCode}` : String(a.expectation ?? false);
        if (got !== want) failures.push(`${yt.name} stage ${si} check ${q.object}#${q.relation}@${q.user}: expected ${want}, got ${got}`);
      }
      for (const a of stage.listObjectsAssertions ?? []) {
        const r = a.request!;
        assertions++;
        const req = { ...r, contextualTuples: (a.contextualTuples ?? []).map(toTuple), ...(a.context === undefined ? {} : { context: a.context }) };
        let got: string;
        try {
          got = JSON.stringify([...(await engine.listObjects(req)).objects].sort());
        } catch (err) {
          got = `error ${codeOf(err)}`;
        }
        const want = a.errorCode !== undefined ? `error ${a.errorCode}` : JSON.stringify([...((a.expectation as string[] | null) ?? [])].sort());
        if (got !== want) failures.push(`${yt.name} stage ${si} listObjects ${r.user} ${r.relation} ${r.type}: expected ${want}, got ${got}`);
      }
    }
  }
  return { failures, assertions };
}

function build(store: TupleStore, variant: Variant): Promise<Engine> {
  if (variant === 'cache') {
    const cache = new CheckCache({ store });
    return Promise.resolve(new Engine({ store: cache.store, resolver: cache.resolver() }));
  }
  return GraphMirror.load({ store }).then((mirror) => {
    const cache = new CheckCache({ store: mirror.store });
    // The server's stack: the synchronous evaluator over the mirror, the level checker for full consistency.
    const resolver =
      variant === 'mirror'
        ? mirror.resolver(new LocalChecker(), new LevelChecker({ inner: new LocalChecker({ sync: false }) }))
        : mirror.resolver(new LevelChecker({ combineReads: true }));
    return new Engine({ store: cache.store, resolver: cache.resolver(resolver) });
  });
}

for (const variant of ['cache', 'mirror+level', 'mirror'] as const) {
  test(`conformance on the memory store with ${variant}`, async (t) => {
    let store = new MemoryStore();
    const { failures, assertions } = await runAll(async () => ({
      engine: await build(store, variant),
      reset: async () => {
        store = new MemoryStore();
      },
    }));
    t.true(assertions > 500);
    t.deepEqual(failures, []);
  });
}

for (const backend of sqlBackends()) {
  test(`conformance on ${backend} with the cache and the mirror (the server's stack)`, async (t) => {
    const db = await createTestDatabase(backend, 'lk_conf');
    const sequelize: Sequelize = await connect(db);
    try {
      const store = await SqlStore.open({ sequelize });
      const { failures, assertions } = await runAll(async () => ({
        engine: await build(store, 'mirror'),
        reset: async () => {
          for (const table of ['fga_tuple', 'fga_model', 'fga_changelog']) await sequelize.query(`DELETE FROM ${table}`);
        },
      }));
      t.true(assertions > 500);
      t.deepEqual(failures, []);
      await store.close();
    } finally {
      await sequelize.close();
      await db.drop();
    }
  });
}
