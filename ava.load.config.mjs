// The tests that measure time run on their own after the rest of `npm test`: the load smoke (security matrix G3),
// whose thresholds are about this server's throughput, and the enumeration timing bands (A6), which compare two
// paths' medians. Beside the other test files they would measure those files instead.
import { readFileSync } from 'node:fs';

const base = JSON.parse(readFileSync(new URL('./package.json', import.meta.url), 'utf8')).ava;

// One file at a time, one test at a time: each measures with the machine to itself. The load smoke runs the
// matrix's 60 s phases here (three phases and the set-up take about three and a half minutes).
export default {
  ...base,
  files: ['test/features/load/load_smoke.test.ts', 'test/auth/enumeration.test.ts'],
  concurrency: 1,
  serial: true,
  timeout: '10m',
  environmentVariables: { ...base.environmentVariables, LATCHKEY_LOAD_PHASE_SECONDS: process.env.LATCHKEY_LOAD_PHASE_SECONDS ?? '60' },
};
