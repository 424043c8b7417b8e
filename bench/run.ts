/**
 * The benchmark runner: `npm run bench [-- name ...] [-- --quick]`.
 *
 * Each suite is a module exporting `run(options)`, which seeds its data,
 * verifies its expected answers, then times; it returns its figures. The runner
 * runs the suites one at a time (nothing else should run on the machine), prints
 * one JSON line per suite, and writes them all with the machine description to
 * `bench/results/latest.json`. Benchmarks are never part of `npm test`.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { cpus, totalmem } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));

/** Suite name → module (relative to bench/). */
const SUITES: Record<string, string> = {
  dsl: './dsl_parse.ts',
  check: './check.ts',
  list: './list_objects.ts',
  list_pages: './list_pages.ts',
  start: './check_start.ts',
  transport: './transport.ts',
  server_path: './server_path.ts',
  openfga: './openfga_check.ts',
  auth: './auth.ts',
  client_credentials: './client_credentials.ts',
  cluster: './cluster.ts',
  sizing: './sizing.ts',
  sql: './sql_targets.ts',
  footprint: './footprint.ts',
  organizations: './organizations.ts',
  fga_bench: './fga_bench_agreement.ts',
  peers: './peers.ts',
  flows: './flows.ts',
  // Runs peers and flows again and writes docs/benchmarks.md: only when named.
  page: './page.ts',
};

/** Suites run only when named (`page` repeats others' runs). */
const NAMED_ONLY = new Set(['page']);

interface SuiteModule {
  run(options: { quick: boolean }): Promise<unknown>;
}

function machine(): Record<string, unknown> {
  const c = cpus();
  return {
    node: process.version,
    cpus: c.length,
    cpu_model: c[0]?.model ?? 'unknown',
    memory_gib: Math.round((totalmem() / 2 ** 30) * 10) / 10,
    platform: `${process.platform}-${process.arch}`,
  };
}

async function main(): Promise<number> {
  const args = process.argv.slice(2);
  const quick = args.includes('--quick');
  const names = args.filter((a) => !a.startsWith('--'));
  const selected = names.length > 0 ? names : Object.keys(SUITES).filter((n) => !NAMED_ONLY.has(n));
  const unknown = selected.filter((n) => !(n in SUITES));
  if (unknown.length > 0) {
    process.stderr.write(`unknown suite(s): ${unknown.join(', ')}; known: ${Object.keys(SUITES).join(', ')}\n`);
    return 2;
  }
  const results: Record<string, unknown> = {};
  let failed = false;
  for (const name of selected) {
    const started = Date.now();
    try {
      const mod = (await import(SUITES[name] as string)) as SuiteModule;
      const figures = await mod.run({ quick });
      results[name] = figures;
      process.stdout.write(`${JSON.stringify({ suite: name, seconds: (Date.now() - started) / 1000, figures })}\n`);
    } catch (err) {
      failed = true;
      const message = err instanceof Error ? err.message : String(err);
      results[name] = { error: message };
      process.stdout.write(`${JSON.stringify({ suite: name, error: message })}\n`);
    }
  }
  const out = join(here, 'results');
  await mkdir(out, { recursive: true });
  await writeFile(
    join(out, 'latest.json'),
    `${JSON.stringify({ date: new Date().toISOString(), machine: machine(), results }, null, 2)}\n`,
  );
  return failed ? 1 : 0;
}

process.exitCode = await main();
