/**
 * The one runner of OpenFGA's conformance suites (consolidated_1_1_tests.yaml,
 * abac_tests.yaml, read in place from ../shared/conformance) over a
 * {@link ConformanceClient}. test/conformance/openfga.test.ts registers its
 * tests with a client on the engine directly, and
 * test/conformance/openfga_http.test.ts with one on OpenFGA's HTTP API of the
 * real server through `@openfga/sdk`.
 *
 * As OpenFGA's own harness does: each test gets a store of its own; each
 * stage writes its model (from the stage's DSL), then its tuples (shuffled
 * with a seed taken from the test's name, in chunks of 40), then runs its
 * Check, ListObjects and ListUsers assertions, with and without conditions and
 * context; every ListObjects and ListUsers result is re-checked with Check.
 * Each single-stage test with at most 100 tuples runs a second time
 * (`…_ctxTuples`) with the stage's tuples sent as contextual tuples instead of
 * being written. An expected error compares the code the client reports with
 * the client's way of reporting the YAML's numeric code.
 *
 * A run collects every mismatching assertion, and its test fails with the
 * list; a summary line reports the assertion counts of the file.
 *
 *   const conformance = openfgaConformance(test, '<title of the skipped test>', '<summary label>');
 *   for (const run of conformance.runs) {
 *     test(run.title, async (t) => expectNoMismatches(t, await conformance.mismatches(client, run)));
 *   }
 */
import type { ExecutionContext, TestFn } from 'ava';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { CONFORMANCE_DIR } from '../helpers/shared.ts';
import { loadOrSkip } from '../helpers/needs.ts';

/** A tuple as the suites spell it; each client turns it into its own. */
export interface YamlTuple {
  object: string;
  relation: string;
  user: string;
  condition?: { name: string; context?: Record<string, unknown> };
}
interface Stage {
  model: string;
  tuples?: YamlTuple[] | null;
  checkAssertions?: {
    tuple: { object: string; relation: string; user: string };
    expectation?: boolean;
    errorCode?: number;
    contextualTuples?: YamlTuple[];
    context?: Record<string, unknown>;
  }[];
  listObjectsAssertions?: {
    request: { user: string; type: string; relation: string };
    expectation?: string[] | null;
    errorCode?: number;
    contextualTuples?: YamlTuple[];
    context?: Record<string, unknown>;
  }[];
  listUsersAssertions?: {
    request: { object: string; relation: string; filters: string[]; expectation?: string[] | null };
    expectation?: string[] | null;
    errorCode?: number;
    contextualTuples?: YamlTuple[];
    context?: Record<string, unknown>;
  }[];
}
export interface YamlTest {
  name: string;
  stages: Stage[];
}

/** What every query carries besides its question: contextual tuples always, the request context when the YAML has one. */
export interface QueryExtras {
  contextualTuples: YamlTuple[];
  context?: Record<string, unknown>;
}
/** A ListUsers filter: `{ type: 'user' }` or `{ type: 'group', relation: 'member' }`. */
export type UserFilter = { type: string } | { type: string; relation: string };

/** One YAML test's store, as a client sees it. Answers are against the model written last. */
export interface ConformanceStore {
  /** Writes the stage's model, given as DSL. */
  writeModel(dsl: string): Promise<void>;
  /** Writes one chunk of tuples (at most 40). */
  write(tuples: YamlTuple[]): Promise<void>;
  check(req: { user: string; relation: string; object: string } & QueryExtras): Promise<boolean>;
  /** Objects as `type:id`. */
  listObjects(req: { user: string; relation: string; type: string } & QueryExtras): Promise<string[]>;
  /** Users as `type:id`, `type:*` or `type:id#relation`. */
  listUsers(req: { object: string; relation: string; userFilters: UserFilter[] } & QueryExtras): Promise<string[]>;
  /** Called once the test is over, whether it passed or threw. */
  delete(): Promise<void>;
}

/** How the conformance runner reaches an implementation. */
export interface ConformanceClient {
  /** A fresh, empty store for the YAML test named `name`. */
  createStore(name: string): Promise<ConformanceStore>;
  /** The OpenFGA code of an error a store call threw, as this client reports it (shown in a mismatch). */
  errorCode(err: unknown): number | string;
  /** How this client reports OpenFGA's numeric `code` (the YAML's `errorCode`), compared with {@link errorCode}; undefined when it has no spelling for it. */
  expectedCode(code: number): number | string | undefined;
}

/** One ava test: a YAML test, run with its tuples written or sent as contextual tuples. */
export interface ConformanceRun {
  /** `<file>: <name>`, a repeated name numbered `(2)`, and `_ctxTuples` for the contextual run. */
  title: string;
  test: YamlTest;
  contextual: boolean;
}

export interface Conformance {
  /** Every run of both suites, in file order, each test followed by its `_ctxTuples` run; none when ../shared is missing outside CI. */
  readonly runs: readonly ConformanceRun[];
  /** Runs `run` over `client`, counting its assertions for the summary; resolves to its mismatches. */
  mismatches(client: ConformanceClient, run: ConformanceRun): Promise<string[]>;
}

const FILES = ['consolidated_1_1_tests.yaml', 'abac_tests.yaml'];
const CHUNK = 40;
/** A single-stage test with more tuples than this has no `_ctxTuples` run. */
const MAX_CONTEXTUAL = 100;

type Kind = 'check' | 'listObjects' | 'listUsers' | 'crossChecks';
type Counts = Record<Kind, [passed: number, failed: number]>;

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

function runsOf(file: string): ConformanceRun[] {
  const suite = parse(readFileSync(join(CONFORMANCE_DIR, 'openfga', file), 'utf8')) as { tests: YamlTest[] };
  const runs: ConformanceRun[] = [];
  const seen = new Map<string, number>();
  for (const yt of suite.tests) {
    // One name appears twice in the consolidated file; keep titles unique.
    const n = (seen.get(yt.name) ?? 0) + 1;
    seen.set(yt.name, n);
    const title = `${file}: ${n === 1 ? yt.name : `${yt.name} (${n})`}`;
    runs.push({ title, test: yt, contextual: false });
    const tupleCount = yt.stages[0]?.tuples?.length ?? 0;
    if (yt.stages.length === 1 && tupleCount <= MAX_CONTEXTUAL) runs.push({ title: `${title}_ctxTuples`, test: yt, contextual: true });
  }
  return runs;
}

async function runTest(client: ConformanceClient, yt: YamlTest, contextual: boolean, counts: Counts): Promise<string[]> {
  const failures: string[] = [];
  const tally = (kind: Kind, ok: boolean, what: string): void => {
    counts[kind][ok ? 0 : 1]++;
    if (!ok) failures.push(what);
  };
  const expectedError = (err: unknown, code: number | undefined): boolean => code !== undefined && client.errorCode(err) === client.expectedCode(code);
  const gotError = (err: unknown): string => `got error ${client.errorCode(err)} ${(err as Error).message}`;

  const store = await client.createStore(yt.name);
  try {
    for (const [si, stage] of yt.stages.entries()) {
      await store.writeModel(stage.model);
      const tuples = stage.tuples ?? [];
      if (!contextual) {
        const order = shuffled(tuples, yt.name.length * 31 + si);
        for (let i = 0; i < order.length; i += CHUNK) await store.write(order.slice(i, i + CHUNK));
      }
      const extra = contextual ? tuples : [];
      const extras = (a: { contextualTuples?: YamlTuple[]; context?: Record<string, unknown> }): QueryExtras => ({
        contextualTuples: [...(a.contextualTuples ?? []), ...extra],
        ...(a.context === undefined ? {} : { context: a.context }),
      });

      for (const [ai, a] of (stage.checkAssertions ?? []).entries()) {
        const { user, relation, object } = a.tuple;
        const where = `stage ${si} check #${ai} ${object}#${relation}@${user}`;
        try {
          const allowed = await store.check({ user, relation, object, ...extras(a) });
          if (a.errorCode !== undefined) tally('check', false, `${where}: expected error ${a.errorCode}, got allowed=${allowed}`);
          else tally('check', allowed === (a.expectation ?? false), `${where}: expected ${a.expectation ?? false}, got ${allowed}`);
        } catch (err) {
          tally('check', expectedError(err, a.errorCode), `${where}: expected ${a.errorCode ?? a.expectation ?? false}, ${gotError(err)}`);
        }
      }

      for (const [ai, a] of (stage.listObjectsAssertions ?? []).entries()) {
        const r = a.request;
        const where = `stage ${si} listObjects #${ai} ${r.user} ${r.relation} ${r.type}`;
        const common = extras(a);
        try {
          const objects = await store.listObjects({ user: r.user, relation: r.relation, type: r.type, ...common });
          if (a.errorCode !== undefined) {
            tally('listObjects', false, `${where}: expected error ${a.errorCode}, got ${JSON.stringify(objects)}`);
            continue;
          }
          const expected = a.expectation ?? [];
          tally('listObjects', sameSet(objects, expected), `${where}: expected ${JSON.stringify(expected)}, got ${JSON.stringify(objects)}`);
          for (const o of objects) tally('crossChecks', await store.check({ user: r.user, relation: r.relation, object: o, ...common }), `${where}: returned ${o} but Check says false`);
        } catch (err) {
          tally('listObjects', expectedError(err, a.errorCode), `${where}: expected ${a.errorCode ?? JSON.stringify(a.expectation)}, ${gotError(err)}`);
        }
      }

      for (const [ai, a] of (stage.listUsersAssertions ?? []).entries()) {
        const r = a.request;
        const where = `stage ${si} listUsers #${ai} ${r.object}#${r.relation} ${r.filters.join(',')}`;
        const common = extras(a);
        const userFilters = r.filters.map((f): UserFilter => {
          const [type, relation] = f.split('#');
          return relation === undefined ? { type: type! } : { type: type!, relation };
        });
        try {
          const users = await store.listUsers({ object: r.object, relation: r.relation, userFilters, ...common });
          if (a.errorCode !== undefined) {
            tally('listUsers', false, `${where}: expected error ${a.errorCode}, got ${JSON.stringify(users)}`);
            continue;
          }
          const expected = a.expectation ?? r.expectation ?? [];
          tally('listUsers', sameSet(users, expected), `${where}: expected ${JSON.stringify(expected)}, got ${JSON.stringify(users)}`);
          for (const u of users) tally('crossChecks', await store.check({ user: u, relation: r.relation, object: r.object, ...common }), `${where}: returned ${u} but Check says false`);
        } catch (err) {
          tally('listUsers', expectedError(err, a.errorCode), `${where}: expected ${a.errorCode ?? JSON.stringify(a.expectation)}, ${gotError(err)}`);
        }
      }
    }
  } finally {
    await store.delete();
  }
  return failures;
}

/**
 * Loads both suites for the test file of `test`. When ../shared is missing
 * outside CI one skipped test titled `skippedTitle` stands for them
 * (`loadOrSkip`), and there are no runs; with `CI` set it fails the file.
 * Registers the file's summary hook, whose line starts with `summaryLabel`.
 */
export function openfgaConformance(test: TestFn, skippedTitle: string, summaryLabel: string): Conformance {
  const runs = loadOrSkip(test, skippedTitle, 'shared', () => FILES, []).flatMap(runsOf);
  const counts: Counts = { check: [0, 0], listObjects: [0, 0], listUsers: [0, 0], crossChecks: [0, 0] };
  test.after.always('conformance summary', () => {
    const line = Object.entries(counts)
      .map(([k, [ok, bad]]) => `${k} ${ok}/${ok + bad}`)
      .join(', ');
    console.log(`${summaryLabel}: ${line}`);
  });
  return { runs, mismatches: async (client, run) => runTest(client, run.test, run.contextual, counts) };
}

/** The one assertion of a run: no mismatches, or the test fails listing them. */
export function expectNoMismatches(t: ExecutionContext, failures: string[]): void {
  t.is(failures.length, 0, `\n${failures.join('\n')}`);
}
