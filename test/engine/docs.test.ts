import test from 'ava';
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { REPO_ROOT } from '../helpers/shared.ts';

const run = promisify(execFile);

test('the library example in docs/engine.md runs and prints what the doc says', async (t) => {
  const doc = readFileSync(join(REPO_ROOT, 'docs', 'engine.md'), 'utf8');
  const code = /```ts\n([\s\S]*?)```/u.exec(doc)?.[1];
  const expected = /Running it prints:\n\n```\n([\s\S]*?)```/u.exec(doc)?.[1];
  t.truthy(code);
  t.truthy(expected);
  // Run from the repository root so `latchkey/engine` resolves through the package's own exports map.
  const { stdout } = await run(process.execPath, ['--input-type=module-typescript', '-e', code ?? ''], { cwd: REPO_ROOT });
  t.is(stdout, expected ?? '');
});
