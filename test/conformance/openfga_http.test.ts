/**
 * OpenFGA's conformance suites (consolidated_1_1_tests.yaml, abac_tests.yaml),
 * read in place from ../shared/conformance, run over OpenFGA's HTTP API of
 * the real server through OpenFGA's JS SDK (`@openfga/sdk`), on SQLite and
 * (when their URLs are set) PostgreSQL and MySQL.
 *
 * As OpenFGA's own harness and test/conformance/openfga.test.ts do: each
 * test gets a store of its own (created through the API); each stage writes
 * its model (JSON from the DSL), then its tuples (shuffled, in chunks of 40),
 * then runs its Check, ListObjects and ListUsers assertions, with and without
 * conditions and context; every ListObjects and ListUsers result is checked
 * again with Check. Each single-stage test also runs with the stage's tuples
 * sent as contextual tuples. An expected error compares OpenFGA's code name
 * for the YAML's number with the code the SDK reports.
 */
import test from 'ava';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { CredentialsMethod, FgaApiError, OpenFgaClient, type TupleKey } from '@openfga/sdk';
import { transformDslToModel } from '../../dsl/index.ts';
import { CONFORMANCE_DIR } from '../helpers/shared.ts';
import { loadOrSkip } from '../helpers/needs.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import type { SqlBackend } from '../helpers/databases.ts';

const KEY = 'conformance-key-0123456789';

/** OpenFGA's names of the numeric codes the suites expect (openfga/api errors.proto). */
const CODE_NAMES: Record<number, string> = {
  2000: 'validation_error',
  2002: 'authorization_model_resolution_too_complex',
  2021: 'type_not_found',
  2022: 'relation_not_found',
  2027: 'invalid_tuple',
};

interface YamlTuple {
  object: string;
  relation: string;
  user: string;
  condition?: { name: string; context?: Record<string, unknown> };
}
interface Stage {
  model: string;
  tuples?: YamlTuple[] | null;
  checkAssertions?: { tuple: { object: string; relation: string; user: string }; expectation?: boolean; errorCode?: number; contextualTuples?: YamlTuple[]; context?: Record<string, unknown> }[];
  listObjectsAssertions?: { request: { user: string; type: string; relation: string }; expectation?: string[] | null; errorCode?: number; contextualTuples?: YamlTuple[]; context?: Record<string, unknown> }[];
  listUsersAssertions?: {
    request: { object: string; relation: string; filters: string[]; expectation?: string[] | null };
    expectation?: string[] | null;
    errorCode?: number;
    contextualTuples?: YamlTuple[];
    context?: Record<string, unknown>;
  }[];
}
interface YamlTest {
  name: string;
  stages: Stage[];
}

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

const counts: Record<string, [number, number]> = { check: [0, 0], listObjects: [0, 0], listUsers: [0, 0], crossChecks: [0, 0] };

function toTuple(t: YamlTuple): TupleKey {
  const out: TupleKey = { object: t.object, relation: t.relation, user: t.user };
  if (t.condition !== undefined) out.condition = { name: t.condition.name, context: t.condition.context ?? {} };
  return out;
}

function shuffled<T>(items: T[], seed: number): T[] {
  const out = [...items];
  let s = seed || 1;
  for (let i = out.length - 1; i > 0; i--) {
    s = (s * 1103515245 + 12345) & 0x7fffffff;
    const j = s % (i + 1);
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

function sameSet(a: string[], b: string[]): boolean {
  const x = [...new Set(a)].sort();
  const y = [...new Set(b)].sort();
  return x.length === y.length && x.every((v, i) => v === y[i]);
}

function errorOf(err: unknown): string {
  if (err instanceof FgaApiError) return String((err as FgaApiError & { apiErrorCode?: string }).apiErrorCode ?? `http ${err.statusCode}`);
  return `not an API error: ${String(err)}`;
}

function userString(u: { object?: { type: string; id: string }; userset?: { type: string; id: string; relation: string }; wildcard?: { type: string } }): string {
  if (u.object !== undefined) return `${u.object.type}:${u.object.id}`;
  if (u.userset !== undefined) return `${u.userset.type}:${u.userset.id}#${u.userset.relation}`;
  return `${u.wildcard?.type ?? '?'}:*`;
}

async function runTest(s: TestServer, yt: YamlTest, contextual: boolean): Promise<string[]> {
  const failures: string[] = [];
  const tally = (kind: string, ok: boolean, what: string): void => {
    counts[kind]![ok ? 0 : 1]++;
    if (!ok) failures.push(what);
  };
  const credentials = { method: CredentialsMethod.ApiToken, config: { token: KEY } } as const;
  const admin = new OpenFgaClient({ apiUrl: s.httpUrl, credentials, retryParams: { maxRetry: 0 } });
  const store = await admin.createStore({ name: `conformance ${yt.name}`.slice(0, 64) });
  const fga = new OpenFgaClient({ apiUrl: s.httpUrl, storeId: store.id, credentials, retryParams: { maxRetry: 0 } });
  try {
    for (const [si, stage] of yt.stages.entries()) {
      const { authorization_model_id: modelId } = await fga.writeAuthorizationModel(transformDslToModel(stage.model) as never);
      const opts = { authorizationModelId: modelId };
      const tuples = (stage.tuples ?? []).map(toTuple);
      if (!contextual) {
        const order = shuffled(tuples, yt.name.length * 31 + si);
        for (let i = 0; i < order.length; i += 40) await fga.write({ writes: order.slice(i, i + 40) }, opts);
      }
      const extra = contextual ? tuples : [];
      const ctxTuples = (list: YamlTuple[] | undefined): TupleKey[] => [...(list ?? []).map(toTuple), ...extra];
      const check = async (user: string, relation: string, object: string, common: { contextualTuples: TupleKey[]; context?: Record<string, unknown> }): Promise<boolean> =>
        (await fga.check({ user, relation, object, ...common }, opts)).allowed ?? false;

      for (const [ai, a] of (stage.checkAssertions ?? []).entries()) {
        const where = `stage ${si} check #${ai} ${a.tuple.object}#${a.tuple.relation}@${a.tuple.user}`;
        try {
          const allowed = await check(a.tuple.user, a.tuple.relation, a.tuple.object, { contextualTuples: ctxTuples(a.contextualTuples), ...(a.context === undefined ? {} : { context: a.context }) });
          if (a.errorCode !== undefined) tally('check', false, `${where}: expected error ${a.errorCode}, got allowed=${allowed}`);
          else tally('check', allowed === (a.expectation ?? false), `${where}: expected ${a.expectation ?? false}, got ${allowed}`);
        } catch (err) {
          const code = errorOf(err);
          tally('check', a.errorCode !== undefined && code === CODE_NAMES[a.errorCode], `${where}: expected ${a.errorCode ?? a.expectation ?? false}, got error ${code} ${(err as Error).message}`);
        }
      }

      for (const [ai, a] of (stage.listObjectsAssertions ?? []).entries()) {
        const where = `stage ${si} listObjects #${ai} ${a.request.user} ${a.request.relation} ${a.request.type}`;
        const common = { contextualTuples: ctxTuples(a.contextualTuples), ...(a.context === undefined ? {} : { context: a.context }) };
        try {
          const { objects } = await fga.listObjects({ ...a.request, ...common }, opts);
          if (a.errorCode !== undefined) {
            tally('listObjects', false, `${where}: expected error ${a.errorCode}, got ${JSON.stringify(objects)}`);
            continue;
          }
          const expected = a.expectation ?? [];
          tally('listObjects', sameSet(objects, expected), `${where}: expected ${JSON.stringify(expected)}, got ${JSON.stringify(objects)}`);
          for (const o of objects) tally('crossChecks', await check(a.request.user, a.request.relation, o, common), `${where}: returned ${o} but Check says false`);
        } catch (err) {
          const code = errorOf(err);
          tally('listObjects', a.errorCode !== undefined && code === CODE_NAMES[a.errorCode], `${where}: expected ${a.errorCode ?? JSON.stringify(a.expectation)}, got error ${code} ${(err as Error).message}`);
        }
      }

      for (const [ai, a] of (stage.listUsersAssertions ?? []).entries()) {
        const r = a.request;
        const where = `stage ${si} listUsers #${ai} ${r.object}#${r.relation} ${r.filters.join(',')}`;
        const common = { contextualTuples: ctxTuples(a.contextualTuples), ...(a.context === undefined ? {} : { context: a.context }) };
        const userFilters = r.filters.map((f) => {
          const [type, relation] = f.split('#');
          return relation === undefined ? { type: type! } : { type: type!, relation };
        });
        const colon = r.object.indexOf(':');
        try {
          const res = await fga.listUsers(
            { object: { type: r.object.slice(0, colon), id: r.object.slice(colon + 1) }, relation: r.relation, user_filters: userFilters, ...common } as never,
            opts,
          );
          const users = res.users.map(userString);
          if (a.errorCode !== undefined) {
            tally('listUsers', false, `${where}: expected error ${a.errorCode}, got ${JSON.stringify(users)}`);
            continue;
          }
          const expected = a.expectation ?? r.expectation ?? [];
          tally('listUsers', sameSet(users, expected), `${where}: expected ${JSON.stringify(expected)}, got ${JSON.stringify(users)}`);
          for (const u of users) tally('crossChecks', await check(u, r.relation, r.object, common), `${where}: returned ${u} but Check says false`);
        } catch (err) {
          const code = errorOf(err);
          tally('listUsers', a.errorCode !== undefined && code === CODE_NAMES[a.errorCode], `${where}: expected ${a.errorCode ?? JSON.stringify(a.expectation)}, got error ${code} ${(err as Error).message}`);
        }
      }
    }
  } finally {
    await admin.deleteStore({ storeId: store.id });
  }
  return failures;
}

const FILES = loadOrSkip(test, 'http: consolidated_1_1_tests.yaml and abac_tests.yaml, every OpenFGA conformance test', 'shared', () => ['consolidated_1_1_tests.yaml', 'abac_tests.yaml'], []);
for (const backend of backends()) {
  for (const file of FILES) {
    const suite = parse(readFileSync(join(CONFORMANCE_DIR, 'openfga', file), 'utf8')) as { tests: YamlTest[] };
    const seen = new Map<string, number>();
    for (const yt of suite.tests) {
      const n = (seen.get(yt.name) ?? 0) + 1;
      seen.set(yt.name, n);
      const title = n === 1 ? yt.name : `${yt.name} (${n})`;
      test(`http ${backend} ${file}: ${title}`, async (t) => {
        const failures = await slot(async () => runTest(await server(backend), yt, false));
        t.is(failures.length, 0, `\n${failures.join('\n')}`);
      });
      const tupleCount = yt.stages[0]?.tuples?.length ?? 0;
      if (yt.stages.length === 1 && tupleCount <= 100) {
        test(`http ${backend} ${file}: ${title}_ctxTuples`, async (t) => {
          const failures = await slot(async () => runTest(await server(backend), yt, true));
          t.is(failures.length, 0, `\n${failures.join('\n')}`);
        });
      }
    }
  }
}

test.after.always('conformance summary', () => {
  const line = Object.entries(counts)
    .map(([k, [ok, bad]]) => `${k} ${ok}/${ok + bad}`)
    .join(', ');
  console.log(`OpenFGA conformance over HTTP, assertions passed: ${line}`);
});
