// The load smoke (security matrix G3) runs on its own after the rest of `npm test`: its thresholds are about
// this server's throughput, which the other test files running beside it would measure instead.
import { readFileSync } from 'node:fs';

const base = JSON.parse(readFileSync(new URL('./package.json', import.meta.url), 'utf8')).ava;

export default { ...base, files: ['test/transports/load_smoke.test.ts'] };
