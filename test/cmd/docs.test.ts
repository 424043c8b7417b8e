/**
 * Generated files are in step with their sources: docs/flags.md (flags
 * table), docs/api.md and the .proto (operations table), docs/errors.md
 * (error table and reasons). Run `npm run docs` to regenerate.
 */
import test from 'ava';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ERROR_STATUS } from '../../engine/errors.ts';
import { OPERATIONS, graphqlName } from '../../cmd/index.ts';
import { collectReasons, generatedFiles } from '../../cmd/docs_gen.ts';
import { REPO_ROOT } from '../helpers/shared.ts';

for (const [file, expected] of Object.entries(generatedFiles(REPO_ROOT))) {
  test(`${file} is up to date (npm run docs)`, (t) => {
    let actual = '';
    try {
      actual = readFileSync(join(REPO_ROOT, file), 'utf8');
    } catch {
      return t.fail(`${file} is missing; run npm run docs`);
    }
    t.is(actual, expected, `${file} is stale; run npm run docs`);
  });
}

test('errors.md lists every code and every reason thrown in the sources, and nothing else', (t) => {
  const doc = readFileSync(join(REPO_ROOT, 'docs/errors.md'), 'utf8');
  const documentedCodes = new Set([...doc.split('## Reasons')[0]!.matchAll(/^\| `([a-z_]+)` \|/gm)].map((m) => m[1]));
  t.deepEqual([...documentedCodes].sort(), Object.keys(ERROR_STATUS).sort());
  const documentedReasons = new Set([...(doc.split('## Reasons')[1] ?? '').matchAll(/^\| `([a-z0-9_]+)` \|/gm)].map((m) => m[1]));
  t.deepEqual([...documentedReasons].sort(), [...collectReasons(REPO_ROOT).keys()].sort());
});

test('api.md documents every operation', (t) => {
  const doc = readFileSync(join(REPO_ROOT, 'docs/api.md'), 'utf8');
  for (const op of OPERATIONS) {
    t.true(doc.includes(`### ${op.name}\n`), op.name);
    if (op.protocols.includes('graphql')) t.true(doc.includes(graphqlName(op)), op.name);
  }
});

test('the committed .proto loads with @grpc/proto-loader and declares both services', async (t) => {
  const loader = await import('@grpc/proto-loader');
  const def = loader.loadSync(join(REPO_ROOT, 'api/latchkey.proto'), { keepCase: true });
  t.truthy(def['latchkey.v1.Latchkey']);
  t.truthy(def['latchkey.v1.LatchkeyAdmin']);
  t.truthy(def['latchkey.v1.Meta']);
});
