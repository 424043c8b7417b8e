/**
 * OpenFGA's conformance suites (consolidated_1_1_tests.yaml, abac_tests.yaml),
 * read in place from ../shared/conformance, run by the runner of
 * test/conformance/openfga_harness.ts over OpenFGA's HTTP API of the real
 * server through OpenFGA's JS SDK (`@openfga/sdk`), on SQLite and (when their
 * URLs are set) PostgreSQL and MySQL.
 *
 * One server per backend serves every YAML test, at most 8 at once; each
 * test gets a store of its own, created through the API and deleted
 * afterwards, and each stage's model is written as JSON from the DSL. An
 * expected error compares OpenFGA's code name for the YAML's number with the
 * code the SDK reports.
 */
import test from 'ava';
import { CredentialsMethod, FgaApiError, OpenFgaClient, type TupleKey } from '@openfga/sdk';
import { transformDslToModel } from '../../dsl/index.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import type { SqlBackend } from '../helpers/databases.ts';
import { expectNoMismatches, openfgaConformance, type ConformanceClient, type YamlTuple } from './openfga_harness.ts';

const KEY = 'conformance-key-0123456789';

/** OpenFGA's names of the numeric codes the suites expect (openfga/api errors.proto). */
const CODE_NAMES: Record<number, string> = {
  2000: 'validation_error',
  2002: 'authorization_model_resolution_too_complex',
  2021: 'type_not_found',
  2022: 'relation_not_found',
  2027: 'invalid_tuple',
};

function backends(): SqlBackend[] {
  const out: SqlBackend[] = ['sqlite'];
  if (process.env['LATCHKEY_TEST_POSTGRES_URL']) out.push('postgres');
  if (process.env['LATCHKEY_TEST_MYSQL_URL']) out.push('mysql');
  return out;
}

const servers = new Map<SqlBackend, Promise<TestServer>>();
function server(backend: SqlBackend): Promise<TestServer> {
  let s = servers.get(backend);
  if (s === undefined) servers.set(backend, (s = startTestServer({ 'openfga-preshared-keys': KEY, 'log-level': 'silent' }, { backend })));
  return s;
}
test.after.always('close the servers', async () => {
  for (const s of servers.values()) await (await s).close();
});

/** At most this many YAML tests talk to one server at once. */
let running = 0;
const waiting: (() => void)[] = [];
async function slot<T>(fn: () => Promise<T>): Promise<T> {
  if (running >= 8) await new Promise<void>((resolve) => waiting.push(resolve));
  running++;
  try {
    return await fn();
  } finally {
    running--;
    waiting.shift()?.();
  }
}

function toTuple(t: YamlTuple): TupleKey {
  const out: TupleKey = { object: t.object, relation: t.relation, user: t.user };
  if (t.condition !== undefined) out.condition = { name: t.condition.name, context: t.condition.context ?? {} };
  return out;
}

function userString(u: { object?: { type: string; id: string }; userset?: { type: string; id: string; relation: string }; wildcard?: { type: string } }): string {
  if (u.object !== undefined) return `${u.object.type}:${u.object.id}`;
  if (u.userset !== undefined) return `${u.userset.type}:${u.userset.id}#${u.userset.relation}`;
  return `${u.wildcard?.type ?? '?'}:*`;
}

/** The SDK against the server at `apiUrl`: one store per YAML test, each query against the stage's model. */
function sdkClient(apiUrl: string): ConformanceClient {
  const credentials = { method: CredentialsMethod.ApiToken, config: { token: KEY } } as const;
  const admin = new OpenFgaClient({ apiUrl, credentials, retryParams: { maxRetry: 0 } });
  return {
    async createStore(name) {
      const store = await admin.createStore({ name: `conformance ${name}`.slice(0, 64) });
      const fga = new OpenFgaClient({ apiUrl, storeId: store.id, credentials, retryParams: { maxRetry: 0 } });
      let opts = { authorizationModelId: '' };
      return {
        async writeModel(dsl) {
          const { authorization_model_id: modelId } = await fga.writeAuthorizationModel(transformDslToModel(dsl) as never);
          opts = { authorizationModelId: modelId };
        },
        async write(tuples) {
          await fga.write({ writes: tuples.map(toTuple) }, opts);
        },
        async check(req) {
          return (await fga.check({ ...req, contextualTuples: req.contextualTuples.map(toTuple) }, opts)).allowed ?? false;
        },
        async listObjects(req) {
          return (await fga.listObjects({ ...req, contextualTuples: req.contextualTuples.map(toTuple) }, opts)).objects;
        },
        async listUsers({ object, relation, userFilters, ...req }) {
          const colon = object.indexOf(':');
          const res = await fga.listUsers(
            { object: { type: object.slice(0, colon), id: object.slice(colon + 1) }, relation, user_filters: userFilters, ...req, contextualTuples: req.contextualTuples.map(toTuple) } as never,
            opts,
          );
          return res.users.map(userString);
        },
        async delete() {
          await admin.deleteStore({ storeId: store.id });
        },
      };
    },
    errorCode(err) {
      if (err instanceof FgaApiError) return String((err as FgaApiError & { apiErrorCode?: string }).apiErrorCode ?? `http ${err.statusCode}`);
      return `not an API error: ${String(err)}`;
    },
    expectedCode: (code) => CODE_NAMES[code],
  };
}

const conformance = openfgaConformance(test, 'http: consolidated_1_1_tests.yaml and abac_tests.yaml, every OpenFGA conformance test', 'OpenFGA conformance over HTTP, assertions passed');
for (const backend of backends()) {
  for (const run of conformance.runs) {
    test(`http ${backend} ${run.title}`, async (t) => {
      expectNoMismatches(t, await slot(async () => conformance.mismatches(sdkClient((await server(backend)).httpUrl), run)));
    });
  }
}
