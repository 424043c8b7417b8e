/**
 * `npm test`: every phase of the test run, each even when an earlier one
 * failed, then one summary. The phases are the package.json scripts
 * `typecheck`, `test:quick` (the ava run) and `test:load` (the tests that
 * measure time, on their own: ava.load.config.mjs). Exits 1 when any phase
 * failed.
 *
 * The summary ends with what this machine lacks (test/helpers/needs.ts), one
 * line per missing thing: outside CI the tests that need it were skipped, or
 * their PostgreSQL, MySQL or Redis variants left out; with `CI` set (.ci/run)
 * they failed instead.
 */
import { spawnSync } from 'node:child_process';
import { absent } from './helpers/needs.ts';

const PHASES = ['typecheck', 'test:quick', 'test:load'] as const;

// Under `npm test` npm names itself in npm_execpath; run the scripts with the same npm and the same Node.
const npm = process.env['npm_execpath'];
const results: { phase: string; status: number; seconds: number }[] = [];
for (const phase of PHASES) {
  const started = performance.now();
  const r = npm === undefined
    ? spawnSync('npm', ['run', phase], { stdio: 'inherit' })
    : spawnSync(process.execPath, [npm, 'run', phase], { stdio: 'inherit' });
  results.push({ phase, status: r.status ?? 1, seconds: Math.round((performance.now() - started) / 1000) });
}

console.log('\nnpm test:');
for (const { phase, status, seconds } of results) console.log(`  ${phase}: ${status === 0 ? 'passed' : `FAILED (exit ${status})`}, ${seconds} s`);
const missingHere = absent();
if (missingHere.length > 0) {
  console.log(process.env['CI']
    ? '\nMissing here, and required with CI set (the tests that need it failed):'
    : '\nNot on this machine (the tests that need it were skipped, or their variants on that database left out):');
  for (const { reason } of missingHere) console.log(`  - ${reason}`);
}
process.exitCode = results.every((r) => r.status === 0) ? 0 : 1;
