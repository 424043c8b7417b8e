/**
 * OpenFGA's conformance suites (consolidated_1_1_tests.yaml, abac_tests.yaml),
 * read in place from ../shared/conformance, run against the engine directly.
 *
 * As OpenFGA's own harness does: each test gets a fresh store; each stage
 * writes its model, then its tuples (shuffled, in chunks of 40), then runs
 * its Check, ListObjects and ListUsers assertions; every ListObjects and
 * ListUsers result is re-checked with Check. Each single-stage test runs a
 * second time (`…_ctxTuples`) with the stage's tuples sent as contextual
 * tuples instead of being written. Expected errors compare OpenFGA's numeric
 * code with `error.details.openfga_code`.
 *
 * One ava test per YAML test; each collects every mismatching assertion and
 * fails with the list, and a summary line reports the assertion counts.
 */
import test from 'ava';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { Engine, LatchkeyError, type TupleKey } from '../../engine/index.ts';
import { transformDslToModel } from '../../dsl/index.ts';
import { CONFORMANCE_DIR } from '../helpers/shared.ts';
import { loadOrSkip } from '../helpers/needs.ts';

interface YamlTuple {
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
interface YamlTest {
  name: string;
  stages: Stage[];
}

const counts = { check: [0, 0], listObjects: [0, 0], listUsers: [0, 0], crossChecks: [0, 0] } as Record<string, [number, number]>;

function errorCodeOf(err: unknown): number | string {
  if (err instanceof LatchkeyError) {
    const c = err.details?.['openfga_code'];
    return typeof c === 'number' ? c : `${err.code}/${err.reason ?? ''}`;
  }
  return `non-latchkey error: ${String(err)}`;
}

function toTuple(t: YamlTuple): TupleKey {
  const out: TupleKey = { object: t.object, relation: t.relation, user: t.user };
  if (t.condition !== undefined) {
    out.condition = t.condition.context === undefined ? { name: t.condition.name } : { name: t.condition.name, context: t.condition.context };
  }
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

async function runTest(yt: YamlTest, contextual: boolean): Promise<string[]> {
  const failures: string[] = [];
  const tally = (kind: string, ok: boolean, what: string): void => {
    counts[kind]![ok ? 0 : 1]++;
    if (!ok) failures.push(what);
  };
  const engine = new Engine();
  for (const [si, stage] of yt.stages.entries()) {
    await engine.writeModel(transformDslToModel(stage.model));
    const tuples = (stage.tuples ?? []).map(toTuple);
    if (!contextual) {
      const order = shuffled(tuples, yt.name.length * 31 + si);
      for (let i = 0; i < order.length; i += 40) await engine.write({ writes: order.slice(i, i + 40) });
    }
    const extra = contextual ? tuples : [];
    const ctxTuples = (list: YamlTuple[] | undefined): TupleKey[] => [...(list ?? []).map(toTuple), ...extra];

    for (const [ai, a] of (stage.checkAssertions ?? []).entries()) {
      const where = `stage ${si} check #${ai} ${a.tuple.object}#${a.tuple.relation}@${a.tuple.user}`;
      const req = { ...a.tuple, contextualTuples: ctxTuples(a.contextualTuples), ...(a.context === undefined ? {} : { context: a.context }) };
      try {
        const { allowed } = await engine.check(req);
        if (a.errorCode !== undefined) tally('check', false, `${where}: expected error ${a.errorCode}, got allowed=${allowed}`);
        else tally('check', allowed === (a.expectation ?? false), `${where}: expected ${a.expectation ?? false}, got ${allowed}`);
      } catch (err) {
        const code = errorCodeOf(err);
        tally('check', a.errorCode !== undefined && code === a.errorCode, `${where}: expected ${a.errorCode ?? a.expectation ?? false}, got error ${code} ${(err as Error).message}`);
      }
    }

    for (const [ai, a] of (stage.listObjectsAssertions ?? []).entries()) {
      const where = `stage ${si} listObjects #${ai} ${a.request.user} ${a.request.relation} ${a.request.type}`;
      const common = { contextualTuples: ctxTuples(a.contextualTuples), ...(a.context === undefined ? {} : { context: a.context }) };
      try {
        const { objects } = await engine.listObjects({ ...a.request, ...common });
        if (a.errorCode !== undefined) {
          tally('listObjects', false, `${where}: expected error ${a.errorCode}, got ${JSON.stringify(objects)}`);
          continue;
        }
        const expected = a.expectation ?? [];
        tally('listObjects', sameSet(objects, expected), `${where}: expected ${JSON.stringify(expected)}, got ${JSON.stringify(objects)}`);
        for (const o of objects) {
          const { allowed } = await engine.check({ user: a.request.user, relation: a.request.relation, object: o, ...common });
          tally('crossChecks', allowed, `${where}: returned ${o} but Check says false`);
        }
      } catch (err) {
        const code = errorCodeOf(err);
        tally('listObjects', a.errorCode !== undefined && code === a.errorCode, `${where}: expected ${a.errorCode ?? JSON.stringify(a.expectation)}, got error ${code} ${(err as Error).message}`);
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
      try {
        const { users } = await engine.listUsers({ object: r.object, relation: r.relation, userFilters, ...common });
        if (a.errorCode !== undefined) {
          tally('listUsers', false, `${where}: expected error ${a.errorCode}, got ${JSON.stringify(users)}`);
          continue;
        }
        const expected = a.expectation ?? r.expectation ?? [];
        tally('listUsers', sameSet(users, expected), `${where}: expected ${JSON.stringify(expected)}, got ${JSON.stringify(users)}`);
        for (const u of users) {
          const { allowed } = await engine.check({ user: u, relation: r.relation, object: r.object, ...common });
          tally('crossChecks', allowed, `${where}: returned ${u} but Check says false`);
        }
      } catch (err) {
        const code = errorCodeOf(err);
        tally('listUsers', a.errorCode !== undefined && code === a.errorCode, `${where}: expected ${a.errorCode ?? JSON.stringify(a.expectation)}, got error ${code} ${(err as Error).message}`);
      }
    }
  }
  return failures;
}

for (const file of loadOrSkip(test, 'consolidated_1_1_tests.yaml and abac_tests.yaml: every OpenFGA conformance test', 'shared', () => ['consolidated_1_1_tests.yaml', 'abac_tests.yaml'], [])) {
  const suite = parse(readFileSync(join(CONFORMANCE_DIR, 'openfga', file), 'utf8')) as { tests: YamlTest[] };
  const seen = new Map<string, number>();
  for (const yt of suite.tests) {
    // One name appears twice in the consolidated file; keep titles unique.
    const n = (seen.get(yt.name) ?? 0) + 1;
    seen.set(yt.name, n);
    const title = n === 1 ? yt.name : `${yt.name} (${n})`;
    test(`${file}: ${title}`, async (t) => {
      const failures = await runTest(yt, false);
      t.is(failures.length, 0, `\n${failures.join('\n')}`);
    });
    const tupleCount = yt.stages[0]?.tuples?.length ?? 0;
    if (yt.stages.length === 1 && tupleCount <= 100) {
      test(`${file}: ${title}_ctxTuples`, async (t) => {
        const failures = await runTest(yt, true);
        t.is(failures.length, 0, `\n${failures.join('\n')}`);
      });
    }
  }
}

test.after.always('conformance summary', () => {
  const line = Object.entries(counts)
    .map(([k, [ok, bad]]) => `${k} ${ok}/${ok + bad}`)
    .join(', ');
  console.log(`OpenFGA conformance assertions passed: ${line}`);
});
