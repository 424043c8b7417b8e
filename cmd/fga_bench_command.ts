/**
 * `latchkey fga bench FILE.fga.yaml [options]`: the flags, the baseline
 * file, and the run (cmd/fga_bench.ts).
 */
import { readFileSync } from 'node:fs';
import { basename, resolve } from 'node:path';
import type { AuthorizationModel } from '../engine/index.ts';
import { runBench, type BenchFigures, type BenchOptions } from './fga_bench.ts';
import { describeError, loadModelOrStore, parseArgs, StoreFileError } from './fga_store_file.ts';

/** The figures an earlier `latchkey fga bench --json` wrote. */
function readBaseline(path: string): BenchFigures {
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(path, 'utf8'));
  } catch (e) {
    throw new StoreFileError(`not a baseline written by \`latchkey fga bench --json\`: ${e instanceof Error ? e.message : String(e)}`);
  }
  const f = parsed as Partial<BenchFigures>;
  if (typeof f !== 'object' || f === null || typeof f.seed !== 'number' || typeof f.tuples !== 'number' || typeof f.queries !== 'number' || !Array.isArray(f.runs)) {
    throw new StoreFileError('not a baseline written by `latchkey fga bench --json` (seed, tuples, queries and runs expected)');
  }
  return f as BenchFigures;
}

/** Runs `latchkey fga bench <argv…>`; resolves to the exit status. `usage` is printed after a usage error. */
export async function benchCommand(argv: string[], out: (s: string) => void, err: (s: string) => void, usage: string): Promise<number> {
  const parsed = parseArgs(argv, ['scale', 'generate', 'ids-per-type', 'queries', 'store', 'against', 'json', 'seed', 'baseline', 'max-slowdown']);
  if (typeof parsed === 'string' || parsed.positional.length !== 1) {
    err(`latchkey fga bench: ${typeof parsed === 'string' ? parsed : 'give one store file (FILE.fga.yaml)'}\n\n${usage}`);
    return 2;
  }
  const options: BenchOptions = {};
  const numbers: [string, 'scale' | 'generate' | 'idsPerType' | 'queries' | 'seed', number][] = [['scale', 'scale', 1], ['generate', 'generate', 1], ['ids-per-type', 'idsPerType', 1], ['queries', 'queries', 1], ['seed', 'seed', 0]];
  for (const [flag, key, min] of numbers) {
    const v = parsed.flags[flag];
    if (v === undefined) continue;
    const n = Number(v);
    if (!Number.isSafeInteger(n) || n < min) {
      err(`latchkey fga bench: --${flag} must be an integer of at least ${min}\n`);
      return 2;
    }
    options[key] = n;
  }
  if (parsed.flags['store'] !== undefined) options.store = parsed.flags['store'];
  if (parsed.flags['json'] !== undefined) options.json = resolve(parsed.flags['json']);
  if (parsed.flags['max-slowdown'] !== undefined) {
    const r = Number(parsed.flags['max-slowdown']);
    if (!Number.isFinite(r) || r < 1 || parsed.flags['baseline'] === undefined) {
      err('latchkey fga bench: --max-slowdown takes a factor of at least 1, with --baseline\n');
      return 2;
    }
    options.maxSlowdown = r;
  }
  const file = resolve(parsed.positional[0]!);
  let at = file;
  try {
    if (parsed.flags['baseline'] !== undefined) {
      at = resolve(parsed.flags['baseline']);
      options.baseline = readBaseline(at);
      at = file;
    }
    const main = loadModelOrStore(file);
    let against: { name: string; model: AuthorizationModel } | undefined;
    if (parsed.flags['against'] !== undefined) {
      at = resolve(parsed.flags['against']);
      against = { name: basename(at), model: loadModelOrStore(at).model };
    }
    return await runBench({ name: basename(file), model: main.model }, main.tuples ?? [], against, options, out, err);
  } catch (e) {
    err(`${at}: ${e instanceof StoreFileError ? e.message : describeError(e)}\n`);
    return 1;
  }
}
