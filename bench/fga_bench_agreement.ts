/**
 * `latchkey fga bench` against `npm run bench` on the same scenario: do the
 * two report the same speed? For each named scenario of bench/scenarios (on
 * the memory store; `contextual_tuples` is left out, the command has no
 * contextual tuples), the check benchmark's own timing (`timeScenario` of
 * bench/check.ts: Check with no answer cache, then through the check cache)
 * and the command's (`runBench` with the scenario's tuples and its queries
 * as the workload, their expected answers verified first) run in interleaved
 * rounds, and the check benchmark's timing of the very chains the command
 * times (see `timeServerChains`); the figures are the medians over the
 * rounds and the ratios of the command's throughput and median latency to
 * each, cold and warm (1 is perfect agreement).
 *
 * Standalone: `node bench/fga_bench_agreement.ts [--quick]`; `run({ quick })`
 * is the `npm run bench -- fga_bench` entry point.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { runBench, type BenchFigures } from '../cmd/fga_bench.ts';
import { toModel } from '../engine/testing/index.ts';
import { buildEngine, MemoryStore, type TupleKey } from '../engine/index.ts';
import { timeScenario } from './check.ts';
import { timeAsync } from './check_timing.ts';
import type { Scenario } from './scenarios/registry.ts';
import { scenarios } from './scenarios/registry.ts';

const round = (x: number, d = 2): number => Math.round(x * 10 ** d) / 10 ** d;
const median = (xs: readonly number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;
const log = (msg: string): void => void process.stderr.write(`[fga_bench agreement ${new Date().toISOString().slice(11, 19)}] ${msg}\n`);

interface Side {
  ops_per_s: number;
  p50_us: number;
}

/**
 * The check benchmark's timing (`timeAsync`) of the chains the command
 * times: `buildEngine` without an answer cache or mirror (cold), and the
 * server's default chain after a first pass (warm). Set beside the
 * command's own figures, it separates the two questions: does the command
 * time like `npm run bench` (same chain, same figures), and what does the
 * server's chain cost over a bare `Engine` (the check benchmark's chain).
 */
async function timeServerChains(sc: Scenario): Promise<{ cold: Side; warm: Side }> {
  const store = new MemoryStore();
  const cold = (await buildEngine({ store, cacheSize: 0, mirror: false })).engine;
  await cold.writeModel({ dsl: sc.model });
  for (let i = 0; i < sc.tuples.length; i += 5000) await store.write([], sc.tuples.slice(i, i + 5000) as TupleKey[]);
  const req = (q: (typeof sc.queries)[number]) => ({ object: q.object, relation: q.relation, user: q.user, ...(q.context === undefined ? {} : { context: q.context }) });
  for (const q of sc.queries) if ((await cold.check(req(q))).allowed !== q.expected) throw new Error(`scenario ${sc.name}: wrong answer on the server's chain`);
  const c = await timeAsync(sc.queries, (q) => cold.check(req(q)), { passes: 3 });
  const warm = (await buildEngine({ store })).engine;
  for (const q of sc.queries) await warm.check(req(q));
  const w = await timeAsync(sc.queries, (q) => warm.check(req(q)), { passes: 3 });
  return { cold: { ops_per_s: c.ops_per_s, p50_us: c.p50_us }, warm: { ops_per_s: w.ops_per_s, p50_us: w.p50_us } };
}

export async function run(options: { quick: boolean }): Promise<Record<string, unknown>> {
  const rounds = options.quick ? 1 : 3;
  const dir = mkdtempSync(join(tmpdir(), 'lk-fga-bench-'));
  const out: Record<string, unknown> = { load_average_1m: round(loadavg()[0] ?? 0), rounds };
  try {
    for (const sc of scenarios(options.quick ? 5_000 : 30_000)) {
      if (sc.queries.some((q) => q.contextualTuples !== undefined)) continue;
      const model = toModel(sc.model);
      const checks = sc.queries.map((q) => ({ user: q.user, relation: q.relation, object: q.object, expected: q.expected, ...(q.context === undefined ? {} : { context: q.context }) }));
      const sides: Record<'bench_cold' | 'bench_warm' | 'command_cold' | 'command_warm' | 'bench_server_chain_cold' | 'bench_server_chain_warm', Side[]> = {
        bench_cold: [], bench_warm: [], command_cold: [], command_warm: [], bench_server_chain_cold: [], bench_server_chain_warm: [],
      };
      for (let r = 0; r < rounds; r++) {
        const own = await timeScenario(sc);
        sides.bench_cold.push({ ops_per_s: own.cold.ops_per_s, p50_us: own.cold.p50_us });
        sides.bench_warm.push({ ops_per_s: own.warm.ops_per_s, p50_us: own.warm.p50_us });
        const chains = await timeServerChains(sc);
        sides.bench_server_chain_cold.push(chains.cold);
        sides.bench_server_chain_warm.push(chains.warm);
        const json = join(dir, `${sc.name}_${r}.json`);
        const errors: string[] = [];
        const status = await runBench({ name: sc.name, model }, sc.tuples as TupleKey[], undefined, { checks, json }, () => undefined, (s) => errors.push(s));
        if (status !== 0) throw new Error(`latchkey fga bench on ${sc.name}: ${errors.join('')}`);
        const figures = JSON.parse(readFileSync(json, 'utf8')) as BenchFigures;
        const ops = figures.runs[0]!.operations;
        sides.command_cold.push({ ops_per_s: ops['check_cold']!.ops_per_s, p50_us: ops['check_cold']!.p50_ms * 1000 });
        sides.command_warm.push({ ops_per_s: ops['check_warm']!.ops_per_s, p50_us: ops['check_warm']!.p50_ms * 1000 });
      }
      const med = (xs: Side[]): Side => ({ ops_per_s: Math.round(median(xs.map((x) => x.ops_per_s))), p50_us: round(median(xs.map((x) => x.p50_us))) });
      const m = {
        bench_cold: med(sides.bench_cold), bench_warm: med(sides.bench_warm),
        bench_server_chain_cold: med(sides.bench_server_chain_cold), bench_server_chain_warm: med(sides.bench_server_chain_warm),
        command_cold: med(sides.command_cold), command_warm: med(sides.command_warm),
      };
      out[sc.name] = {
        tuples: sc.tuples.length,
        queries: sc.queries.length,
        ...m,
        // The command's figures over the check benchmark's timing of the same chains: 1 is perfect agreement.
        same_chain_throughput_ratio_cold: round(m.command_cold.ops_per_s / Math.max(1, m.bench_server_chain_cold.ops_per_s)),
        same_chain_throughput_ratio_warm: round(m.command_warm.ops_per_s / Math.max(1, m.bench_server_chain_warm.ops_per_s)),
        same_chain_p50_ratio_cold: round(m.command_cold.p50_us / Math.max(0.01, m.bench_server_chain_cold.p50_us)),
        same_chain_p50_ratio_warm: round(m.command_warm.p50_us / Math.max(0.01, m.bench_server_chain_warm.p50_us)),
        // The command's figure over the check benchmark's own (bare Engine, CheckCache) chains: the server chain's cost.
        throughput_ratio_cold: round(m.command_cold.ops_per_s / Math.max(1, m.bench_cold.ops_per_s)),
        throughput_ratio_warm: round(m.command_warm.ops_per_s / Math.max(1, m.bench_warm.ops_per_s)),
        p50_ratio_cold: round(m.command_cold.p50_us / Math.max(0.01, m.bench_cold.p50_us)),
        p50_ratio_warm: round(m.command_warm.p50_us / Math.max(0.01, m.bench_warm.p50_us)),
      };
      log(`${sc.name}: ${JSON.stringify(out[sc.name])}`);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  return out;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  process.stdout.write(`${JSON.stringify(await run({ quick: process.argv.includes('--quick') }), null, 2)}\n`);
}
