/**
 * OpenFGA's conformance suites (consolidated_1_1_tests.yaml, abac_tests.yaml),
 * read in place from ../shared/conformance, run against the engine directly
 * by the runner of test/conformance/openfga_harness.ts.
 *
 * Each YAML test gets a fresh engine on its memory store. Expected errors
 * compare OpenFGA's numeric code with `error.details.openfga_code`.
 */
import test from 'ava';
import { Engine, LatchkeyError, type TupleKey } from '../../engine/index.ts';
import { transformDslToModel } from '../../dsl/index.ts';
import { expectNoMismatches, openfgaConformance, type ConformanceClient, type YamlTuple } from './openfga_harness.ts';

function toTuple(t: YamlTuple): TupleKey {
  const out: TupleKey = { object: t.object, relation: t.relation, user: t.user };
  if (t.condition !== undefined) {
    out.condition = t.condition.context === undefined ? { name: t.condition.name } : { name: t.condition.name, context: t.condition.context };
  }
  return out;
}

const engineClient: ConformanceClient = {
  async createStore() {
    const engine = new Engine();
    return {
      async writeModel(dsl) {
        await engine.writeModel(transformDslToModel(dsl));
      },
      async write(tuples) {
        await engine.write({ writes: tuples.map(toTuple) });
      },
      async check(req) {
        return (await engine.check({ ...req, contextualTuples: req.contextualTuples.map(toTuple) })).allowed;
      },
      async listObjects(req) {
        return (await engine.listObjects({ ...req, contextualTuples: req.contextualTuples.map(toTuple) })).objects;
      },
      async listUsers(req) {
        return (await engine.listUsers({ ...req, contextualTuples: req.contextualTuples.map(toTuple) })).users;
      },
      async delete() {},
    };
  },
  errorCode(err) {
    if (err instanceof LatchkeyError) {
      const c = err.details?.['openfga_code'];
      return typeof c === 'number' ? c : `${err.code}/${err.reason ?? ''}`;
    }
    return `non-latchkey error: ${String(err)}`;
  },
  expectedCode: (code) => code,
};

const conformance = openfgaConformance(test, 'consolidated_1_1_tests.yaml and abac_tests.yaml: every OpenFGA conformance test', 'OpenFGA conformance assertions passed');
for (const run of conformance.runs) {
  test(run.title, async (t) => expectNoMismatches(t, await conformance.mismatches(engineClient, run)));
}
