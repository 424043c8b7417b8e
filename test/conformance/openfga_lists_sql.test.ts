/**
 * OpenFGA's ListObjects and ListUsers conformance assertions
 * (consolidated_1_1_tests.yaml, abac_tests.yaml, read in place from
 * ../shared/conformance) on every configured SQL backend, with the tuples
 * written to the SQL store, and again for each single-stage test with the
 * tuples sent as contextual tuples instead (`…_ctxTuples`, as
 * test/conformance/openfga.test.ts does on the memory store). Every returned
 * result is re-checked with Check.
 *
 * One database per backend is reused: between YAML tests its tables are
 * emptied. Each backend runs twice: on the SQL store alone, and behind the
 * server's stack (the check cache over the graph mirror, the synchronous
 * evaluator over the mirror's reads), whose ListObjects takes the mirror's
 * synchronous reverse reads.
 */
import anyTest from 'ava';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import type { Sequelize } from 'sequelize';
import { CheckCache, Engine, GraphMirror, LatchkeyError, LevelChecker, LocalChecker, type TupleKey, type TupleStore } from '../../engine/index.ts';
import { SqlStore } from '../../engine/sql/index.ts';
import { transformDslToModel } from '../../dsl/index.ts';
import { CONFORMANCE_DIR } from '../helpers/shared.ts';
import { missing, needs } from '../helpers/needs.ts';
import { createTestDatabase, sqlBackends } from '../helpers/databases.ts';
import { connect } from '../engine/sql_helpers.ts';

interface YamlTuple {
  object: string;
  relation: string;
  user: string;
  condition?: { name: string; context?: Record<string, unknown> };
}
interface Common {
  errorCode?: number;
  contextualTuples?: YamlTuple[];
  context?: Record<string, unknown>;
}
interface Stage {
  model: string;
  tuples?: YamlTuple[] | null;
  listObjectsAssertions?: (Common & { request: { user: string; type: string; relation: string }; expectation?: string[] | null })[];
  listUsersAssertions?: (Common & { request: { object: string; relation: string; filters: string[]; expectation?: string[] | null }; expectation?: string[] | null })[];
}
interface YamlTest {
  name: string;
  stages: Stage[];
}

// Every test here runs the suites of ../shared/conformance.
const test = needs(anyTest, 'shared');
const TESTS: YamlTest[] = [];
for (const file of missing('shared') === undefined ? ['consolidated_1_1_tests.yaml', 'abac_tests.yaml'] : []) {
  TESTS.push(...(parse(readFileSync(join(CONFORMANCE_DIR, 'openfga', file), 'utf8')) as { tests: YamlTest[] }).tests);
}

function toTuple(t: YamlTuple): TupleKey {
  const out: TupleKey = { object: t.object, relation: t.relation, user: t.user };
  if (t.condition !== undefined) out.condition = t.condition.context === undefined ? { name: t.condition.name } : { name: t.condition.name, context: t.condition.context };
  return out;
}

function codeOf(err: unknown): string {
  if (err instanceof LatchkeyError) {
    const c = err.details?.['openfga_code'];
    return typeof c === 'number' ? String(c) : `${err.code}/${err.reason ?? ''}`;
  }
  return `non-latchkey ${String(err)}`;
}

const sorted = (xs: readonly string[]): string => JSON.stringify([...new Set(xs)].sort());

/** Runs the ListObjects and ListUsers assertions of one YAML test; returns the mismatches and counts. */
async function runTest(engine: Engine, yt: YamlTest, contextual: boolean, counts: { lo: number; lu: number; cross: number }): Promise<string[]> {
  const failures: string[] = [];
  for (const [si, stage] of yt.stages.entries()) {
    await engine.writeModel(transformDslToModel(stage.model));
    const tuples = (stage.tuples ?? []).map(toTuple);
    if (!contextual) for (let i = 0; i < tuples.length; i += 40) await engine.write({ writes: tuples.slice(i, i + 40) });
    const common = (a: Common) => ({
      contextualTuples: [...(a.contextualTuples ?? []).map(toTuple), ...(contextual ? tuples : [])],
      ...(a.context === undefined ? {} : { context: a.context }),
    });
    const where = (kind: string, what: string) => `${yt.name}${contextual ? '_ctxTuples' : ''} stage ${si} ${kind} ${what}`;
    for (const a of stage.listObjectsAssertions ?? []) {
      counts.lo++;
      const w = where('listObjects', `${a.request.user} ${a.request.relation} ${a.request.type}`);
      let got: string;
      let objects: string[] = [];
      try {
        objects = (await engine.listObjects({ ...a.request, ...common(a) })).objects;
        got = sorted(objects);
      } catch (err) {
        got = `error ${codeOf(err)}`;
      }
      const want = a.errorCode !== undefined ? `error ${a.errorCode}` : sorted(a.expectation ?? []);
      if (got !== want) failures.push(`${w}: expected ${want}, got ${got}`);
      for (const o of objects) {
        counts.cross++;
        if (!(await engine.check({ user: a.request.user, relation: a.request.relation, object: o, ...common(a) })).allowed) failures.push(`${w}: returned ${o}, Check says false`);
      }
    }
    for (const a of stage.listUsersAssertions ?? []) {
      counts.lu++;
      const r = a.request;
      const w = where('listUsers', `${r.object}#${r.relation} ${r.filters.join(',')}`);
      const userFilters = r.filters.map((f) => {
        const [type, relation] = f.split('#');
        return relation === undefined ? { type: type! } : { type: type!, relation };
      });
      let got: string;
      let users: string[] = [];
      try {
        users = (await engine.listUsers({ object: r.object, relation: r.relation, userFilters, ...common(a) })).users;
        got = sorted(users);
      } catch (err) {
        got = `error ${codeOf(err)}`;
      }
      const want = a.errorCode !== undefined ? `error ${a.errorCode}` : sorted(a.expectation ?? r.expectation ?? []);
      if (got !== want) failures.push(`${w}: expected ${want}, got ${got}`);
      for (const u of users) {
        counts.cross++;
        if (!(await engine.check({ user: u, relation: r.relation, object: r.object, ...common(a) })).allowed) failures.push(`${w}: returned ${u}, Check says false`);
      }
    }
  }
  return failures;
}

/** The server's stack on a SQL store (server/handlers/permissions.ts `composeEngine`). */
async function mirrorStack(store: TupleStore): Promise<Engine> {
  const mirror = await GraphMirror.load({ store });
  const cache = new CheckCache({ store: mirror.store });
  const resolver = mirror.resolver(new LocalChecker(), new LevelChecker({ inner: new LocalChecker({ sync: false }) }));
  return new Engine({ store: cache.store, resolver: cache.resolver(resolver) });
}

for (const backend of sqlBackends()) {
 for (const stack of ['store', 'mirror'] as const) {
  test(`ListObjects and ListUsers conformance on ${backend}${stack === 'mirror' ? ' behind the graph mirror' : ''}, tuples written and as contextual tuples`, async (t) => {
    const db = await createTestDatabase(backend, 'lk_lists');
    const sequelize: Sequelize = await connect(db);
    try {
      const store = await SqlStore.open({ sequelize });
      const failures: string[] = [];
      const counts = { lo: 0, lu: 0, cross: 0 };
      for (const yt of TESTS) {
        for (const contextual of [false, true]) {
          if (contextual && (yt.stages.length !== 1 || (yt.stages[0]?.tuples?.length ?? 0) > 100)) continue;
          for (const table of ['fga_tuple', 'fga_model', 'fga_changelog']) await sequelize.query(`DELETE FROM ${table}`);
          failures.push(...(await runTest(stack === 'mirror' ? await mirrorStack(store) : new Engine({ store }), yt, contextual, counts)));
        }
      }
      t.log(`listObjects ${counts.lo}, listUsers ${counts.lu}, cross-checks ${counts.cross}`);
      t.true(counts.lo >= 626 && counts.lu >= 716);
      t.deepEqual(failures, []);
      await store.close();
    } finally {
      await sequelize.close();
      await db.drop();
    }
  });
 }
}
