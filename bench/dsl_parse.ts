/**
 * DSL benchmark: parse + validate a generated 2,000-line model and the
 * conformance corpus, timed against OpenFGA's own JS language package
 * (`@openfga/syntax-transformer`) in the same run. Before timing, both
 * implementations must accept every input and produce the same JSON.
 *
 * Standalone: `node bench/dsl_parse.ts [--quick]`; in the suite runner: `npm run bench dsl`.
 * Targets (issue #3): under 20 ms warm for the 2,000-line model, and at least
 * 3× faster than the reference.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse as parseYaml } from 'yaml';
import { parseDsl } from '../dsl/index.ts';

const here = dirname(fileURLToPath(import.meta.url));
const SHARED = join(here, '..', '..', 'shared', 'conformance');

type Reference = {
  validator: { validateDSL(dsl: string): void };
  transformer: { transformDSLToJSONObject(dsl: string): unknown };
};
const reference = createRequire(import.meta.url)('@openfga/syntax-transformer') as Reference;

/** A valid model of about `lines` lines using every construct of the language. */
export function generateModel(lines: number): string {
  const out = ['model', '  schema 1.1', '', 'type user', '', 'type group', '  relations', '    define member: [user, user:*, group#member]'];
  let i = 0;
  while (out.length < lines) {
    const prev = i === 0 ? 'group' : `folder_${i - 1}`;
    out.push(
      '',
      `# resource ${i}`,
      `type folder_${i}`,
      '  relations',
      `    define parent: [${prev}]`,
      '    define owner: [user, group#member] or owner from parent',
      `    define editor: [user, group#member with in_hours] or owner`,
      '    define viewer: [user, user:*] or editor or viewer from parent',
      '    define blocked: [user]',
      '    define can_view: viewer but not blocked',
      '    define can_edit: (editor or owner) and can_view',
      `    define auditor: [user with in_hours, group#member]`,
      '    define can_audit: auditor and (viewer but not blocked)',
    );
    i++;
  }
  // The first folder's parent is `group`, which has no owner/viewer; give it some.
  out[7] = '    define member: [user, user:*, group#member]\n    define owner: [user]\n    define viewer: [user]';
  out.push('', 'condition in_hours(now: timestamp, start: timestamp, hours: int) {', '  now >= start && now < start + duration(string(hours) + "h")', '}', '');
  return out.join('\n');
}

function normalize(value: unknown): string {
  return JSON.stringify(value, (_k, v: unknown) =>
    v && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : v,
  );
}

function corpus(): string[] {
  const texts: string[] = [];
  const dir = join(SHARED, 'openfga-language', 'transformer');
  for (const name of readdirSync(dir)) texts.push(readFileSync(join(dir, name, 'authorization-model.fga'), 'utf8'));
  for (const file of ['consolidated_1_1_tests.yaml', 'abac_tests.yaml']) {
    const doc = parseYaml(readFileSync(join(SHARED, 'openfga', file), 'utf8')) as { tests: Array<{ stages: Array<{ model?: string }> }> };
    for (const t of doc.tests) for (const s of t.stages) if (s.model) texts.push(s.model);
  }
  return texts;
}

/** Texts both implementations accept with identical JSON (verification before timing). */
function verified(texts: string[]): string[] {
  const ok: string[] = [];
  for (const text of texts) {
    const ours = parseDsl(text);
    let refModel: unknown;
    try {
      reference.validator.validateDSL(text);
      refModel = reference.transformer.transformDSLToJSONObject(text);
    } catch {
      refModel = undefined;
    }
    if (ours.model && refModel !== undefined) {
      if (normalize(ours.model) !== normalize(refModel)) throw new Error('model mismatch in the benchmark corpus');
      ok.push(text);
    }
  }
  return ok;
}

type Timing = { median_ms: number; p95_ms: number; min_ms: number; cpu_median_ms: number };

/**
 * Wall-clock and CPU-time percentiles. CPU time (user + system of this
 * process) is reported too because the benchmark machine is shared: wall
 * time grows with the load of other processes, CPU time much less.
 */
function time(fn: () => void, runs: number): Timing {
  const wall: number[] = [];
  const cpu: number[] = [];
  for (let i = 0; i < runs; i++) {
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    fn();
    wall.push(performance.now() - t0);
    const c = process.cpuUsage(c0);
    cpu.push((c.user + c.system) / 1000);
  }
  wall.sort((a, b) => a - b);
  cpu.sort((a, b) => a - b);
  const at = (xs: number[], q: number): number =>
    Math.round((xs[Math.min(xs.length - 1, Math.floor(q * xs.length))] as number) * 1000) / 1000;
  return { median_ms: at(wall, 0.5), p95_ms: at(wall, 0.95), min_ms: at(wall, 0), cpu_median_ms: at(cpu, 0.5) };
}

function ratio(a: number, b: number): number {
  return Math.round((a / b) * 10) / 10;
}

/** Verifies, then times; returns the figures. */
export async function run(options: { quick?: boolean } = {}): Promise<object> {
  const runs = options.quick ? 10 : 60;
  const big = generateModel(2000);
  const bigLines = big.split('\n').length;
  const [checkedBig] = verified([big]);
  if (checkedBig === undefined) throw new Error('the generated model is not accepted by both implementations');
  const texts = verified(corpus());

  const oursBig = () => {
    if (!parseDsl(big).model) throw new Error('rejected');
  };
  const refBig = () => reference.validator.validateDSL(big);
  // Each implementation is warmed up, then timed, on its own (the other's
  // garbage would otherwise be collected during the timed runs).
  for (let i = 0; i < runs; i++) oursBig();
  const ours = time(oursBig, runs);
  for (let i = 0; i < 10; i++) refBig();
  const ref = time(refBig, Math.max(5, Math.floor(runs / 2)));

  const oursCorpus = () => {
    for (const t of texts) parseDsl(t);
  };
  const refCorpus = () => {
    for (const t of texts) reference.validator.validateDSL(t);
  };
  for (let i = 0; i < 5; i++) oursCorpus();
  const oursC = time(oursCorpus, Math.max(3, Math.floor(runs / 4)));
  for (let i = 0; i < 3; i++) refCorpus();
  const refC = time(refCorpus, Math.max(3, Math.floor(runs / 4)));

  return {
    model_2000_lines: {
      lines: bigLines,
      ours,
      reference: ref,
      speedup: ratio(ref.median_ms, ours.median_ms),
      speedup_cpu: ratio(ref.cpu_median_ms, ours.cpu_median_ms),
      speedup_min: ratio(ref.min_ms, ours.min_ms),
      target_under_20ms: ours.median_ms < 20,
      target_under_20ms_cpu: ours.cpu_median_ms < 20,
    },
    conformance_corpus: {
      models: texts.length,
      ours: oursC,
      reference: refC,
      speedup: ratio(refC.median_ms, oursC.median_ms),
      speedup_cpu: ratio(refC.cpu_median_ms, oursC.cpu_median_ms),
      speedup_min: ratio(refC.min_ms, oursC.min_ms),
    },
  };
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const figures = await run({ quick: process.argv.includes('--quick') });
  process.stdout.write(`${JSON.stringify(figures, null, 2)}\n`);
}
