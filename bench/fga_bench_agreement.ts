/**
 * `latchkey fga bench` against `npm run bench` on the same scenario: do the
 * two report the same speed? For each named scenario of bench/scenarios (on
 * the memory store; `contextual_tuples` is left out, the command has no
 * contextual tuples), the check benchmark's timing (`timeScenario` of
 * bench/check.ts: Check with no answer cache, then through the check cache)
 * and the command's (`runBench` with the scenario's tuples and its queries
 * as the workload, their expected answers verified first) run in rounds of
 * three: bench, command, bench. Both time with one loop
 * (cmd/fga_bench_timing.ts); what differs is what each sets up (the store
 * loaded through the engine or directly, the naive evaluator, the engines
 * built by `buildEngine` or by hand).
 *
 * Noise, and the criterion. A side's spread is the largest of its runs over
 * the smallest (the bench's over its two runs a round, the command's over
 * its one): how far the same measurement moves from run to run on this
 * machine at this time. The two agree on a figure (cold and warm
 * throughput, cold and warm p50) when the ratio of their medians over the
 * rounds, taken either way up, is at most the larger of the two spreads
 * (and never less than `FLOOR`, below which a quiet machine's spread says
 * nothing). The suite fails, naming the figure, when they do not.
 *
 * Standalone: `node --expose-gc bench/fga_bench_agreement.ts [--quick]`;
 * `run({ quick })` is the `npm run bench -- fga_bench` entry point.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { runBench, type BenchFigures } from '../cmd/fga_bench.ts';
import { toModel } from '../engine/testing/index.ts';
import type { TupleKey } from '../engine/index.ts';
import { timeScenario } from './check.ts';
import { scenarios } from './scenarios/registry.ts';

/** The least tolerance: two timings of a few hundred milliseconds each are not told apart below 10 %. */
const FLOOR = 1.1;

const round = (x: number, d = 2): number => Math.round(x * 10 ** d) / 10 ** d;
const median = (xs: readonly number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 === 1 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};
const spread = (xs: readonly number[]): number => Math.max(...xs) / Math.max(Math.min(...xs), 1e-9);
const log = (msg: string): void => void process.stderr.write(`[fga_bench agreement ${new Date().toISOString().slice(11, 19)}] ${msg}\n`);

type Figure = 'cold_ops_per_s' | 'warm_ops_per_s' | 'cold_p50_us' | 'warm_p50_us';
const FIGURES: readonly Figure[] = ['cold_ops_per_s', 'warm_ops_per_s', 'cold_p50_us', 'warm_p50_us'];

/** One figure of one scenario: both sides' runs, medians and spreads, their ratio and whether it is within noise. */
export interface Agreement {
  bench: number[];
  command: number[];
  bench_median: number;
  command_median: number;
  /** The command's median over the bench's (1: the same). */
  ratio: number;
  bench_spread: number;
  command_spread: number;
  /** The larger spread, at least FLOOR: the ratio (either way up) must be at most this. */
  tolerance: number;
  agree: boolean;
}

/** Compares the runs of the two sides by the criterion of the module's comment. */
export function agreement(bench: readonly number[], command: readonly number[]): Agreement {
  const b = median(bench);
  const c = median(command);
  const ratio = c / Math.max(b, 1e-9);
  const tolerance = Math.max(FLOOR, spread(bench), spread(command));
  return {
    bench: bench.map((x) => round(x)),
    command: command.map((x) => round(x)),
    bench_median: round(b),
    command_median: round(c),
    ratio: round(ratio, 3),
    bench_spread: round(spread(bench), 3),
    command_spread: round(spread(command), 3),
    tolerance: round(tolerance, 3),
    agree: Math.max(ratio, 1 / ratio) <= tolerance,
  };
}

export async function run(options: { quick: boolean }): Promise<Record<string, unknown>> {
  const rounds = options.quick ? 2 : 3;
  const dir = mkdtempSync(join(tmpdir(), 'lk-fga-bench-'));
  const out: Record<string, unknown> = { load_average_1m: round(loadavg()[0] ?? 0), rounds, order: 'bench, command, bench', floor: FLOOR };
  const failures: string[] = [];
  try {
    for (const sc of scenarios(options.quick ? 5_000 : 30_000)) {
      if (sc.queries.some((q) => q.contextualTuples !== undefined)) continue;
      const model = toModel(sc.model);
      const checks = sc.queries.map((q) => ({ user: q.user, relation: q.relation, object: q.object, expected: q.expected, ...(q.context === undefined ? {} : { context: q.context }) }));
      const runs: Record<'bench' | 'command', Record<Figure, number[]>> = {
        bench: { cold_ops_per_s: [], warm_ops_per_s: [], cold_p50_us: [], warm_p50_us: [] },
        command: { cold_ops_per_s: [], warm_ops_per_s: [], cold_p50_us: [], warm_p50_us: [] },
      };
      const benchRun = async (): Promise<void> => {
        const own = await timeScenario(sc);
        runs.bench.cold_ops_per_s.push(own.cold.ops_per_s);
        runs.bench.warm_ops_per_s.push(own.warm.ops_per_s);
        runs.bench.cold_p50_us.push(own.cold.p50_us);
        runs.bench.warm_p50_us.push(own.warm.p50_us);
      };
      for (let r = 0; r < rounds; r++) {
        await benchRun();
        const json = join(dir, `${sc.name}_${r}.json`);
        const errors: string[] = [];
        const status = await runBench({ name: sc.name, model }, sc.tuples as TupleKey[], undefined, { checks, json }, () => undefined, (s) => errors.push(s));
        if (status !== 0) throw new Error(`latchkey fga bench on ${sc.name}: ${errors.join('')}`);
        const ops = (JSON.parse(readFileSync(json, 'utf8')) as BenchFigures).runs[0]!.operations;
        runs.command.cold_ops_per_s.push(ops['check_cold']!.ops_per_s);
        runs.command.warm_ops_per_s.push(ops['check_warm']!.ops_per_s);
        runs.command.cold_p50_us.push(ops['check_cold']!.p50_ms * 1000);
        runs.command.warm_p50_us.push(ops['check_warm']!.p50_ms * 1000);
        await benchRun();
      }
      const figures: Record<string, unknown> = { tuples: sc.tuples.length, queries: sc.queries.length };
      for (const f of FIGURES) {
        const a = agreement(runs.bench[f], runs.command[f]);
        figures[f] = a;
        if (!a.agree) failures.push(`${sc.name} ${f}: the command's median ${a.command_median} is ${a.ratio}× the check benchmark's ${a.bench_median}, beyond the noise (${a.tolerance}×)`);
      }
      out[sc.name] = figures;
      log(`${sc.name}: ${FIGURES.map((f) => { const a = figures[f] as Agreement; return `${f} ${a.ratio} (±${a.tolerance}${a.agree ? '' : ' NOT'})`; }).join(', ')}`);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  if (failures.length > 0) throw new Error(`latchkey fga bench disagrees with the check benchmark: ${failures.join('; ')} — ${JSON.stringify(out)}`);
  return out;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  process.stdout.write(`${JSON.stringify(await run({ quick: process.argv.includes('--quick') }), null, 2)}\n`);
}
