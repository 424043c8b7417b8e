/**
 * `latchkey fga diff OLD NEW`: which users gain or lose which relations, on
 * given tuples and on generated stores, with counts and examples; the exit
 * status guards the relations marked as "must not change".
 */
import test from 'ava';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runFgaCommand } from '../../cmd/fga_command.ts';
import { REPO_ROOT } from '../helpers/shared.ts';

const DIR = join(REPO_ROOT, 'test', 'corpus', 'fga', 'properties');
const OLD = join(DIR, 'docs.fga');
/** docs.fga with `can_share: owner and viewer` for `can_read and owner`: a blocked owner now shares. */
const CHANGED = join(DIR, 'docs_changed.fga');
/** docs.fga written another way, with the same answers. */
const REFACTORED = join(DIR, 'docs_refactored.fga');

async function run(...argv: string[]): Promise<{ status: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const status = await runFgaCommand(argv, { stdout: (s) => (stdout += s), stderr: (s) => (stderr += s) });
  return { status, stdout, stderr };
}

let dir = '';
test.before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'lk-diff-'));
  await writeFile(
    join(dir, 'tuples.yaml'),
    ['user:anne owner document:1', 'user:anne blocked document:1', 'user:bob owner document:2', 'user:carl viewer document:2']
      .map((l) => l.split(' '))
      .map(([user, relation, object]) => `- user: ${user}\n  relation: ${relation}\n  object: ${object}\n`)
      .join(''),
  );
  await writeFile(join(dir, 'store.fga.yaml'), `model_file: ${OLD}\ntuples:\n  - user: user:dora\n    relation: owner\n    object: document:9\n  - user: user:dora\n    relation: blocked\n    object: document:9\ntests: []\n`);
});
test.after.always(async () => {
  await rm(dir, { recursive: true, force: true });
});

test('a changed answer on the given tuples: the user, relation and object gained, counted', async (t) => {
  const r = await run('diff', OLD, CHANGED, '--tuples', join(dir, 'tuples.yaml'), '--runs', '0');
  t.is(r.stderr, '');
  t.is(r.status, 0, 'no relation was marked as must not change');
  t.regex(r.stdout, /^on the given 4 tuples \(3 users\): 1 relation change$/m);
  t.regex(r.stdout, /^ {2}document#can_share: 1 gained, 0 lost$/m);
  t.regex(r.stdout, /^ {4}\+ user:anne can_share document:1$/m);
  t.notRegex(r.stdout, /document#viewer/, 'the other relations do not change');
});

test('on generated stores: counts of stores and answers, and the smallest example, shrunk', async (t) => {
  const r = await run('diff', OLD, CHANGED, '--runs', '300', '--seed', '5');
  t.is(r.status, 0);
  t.regex(r.stdout, /^on 300 generated stores \(seed 5\): 1 relation change$/m);
  const m = /^ {2}document#can_share: (\d+) gained in (\d+) stores, 0 lost in 0 stores$/m.exec(r.stdout);
  t.truthy(m, r.stdout);
  t.true(Number(m![1]) >= Number(m![2]) && Number(m![2]) > 0);
  // The two tuples that make the difference: an owner who is blocked.
  const example = /smallest example: \+ (user:\d+) can_share (document:\d+) \(old false, new true\) with 2 tuples:\n {6}(\S+)\n {6}(\S+)\n/.exec(r.stdout);
  t.truthy(example, r.stdout);
  const [, user, object, a, b] = example!;
  t.deepEqual([a, b].sort(), [`${object}#blocked@${user}`, `${object}#owner@${user}`].sort());
});

test('a relation marked as must not change that changes exits 1; one that does not, 0', async (t) => {
  const guarded = await run('diff', OLD, CHANGED, '--tuples', join(dir, 'tuples.yaml'), '--runs', '0', '--must-not-change', 'document#viewer,document#can_share');
  t.is(guarded.status, 1);
  t.regex(guarded.stdout, /document#can_share: 1 gained, 0 lost {2}\(must not change\)/);
  t.regex(guarded.stderr, /document#can_share must not change, and does/);
  const fine = await run('diff', OLD, CHANGED, '--tuples', join(dir, 'tuples.yaml'), '--runs', '50', '--seed', '1', '--must-not-change', 'document#viewer');
  t.is(fine.status, 0);
});

test('a refactor with the same answers: no change on given or generated tuples', async (t) => {
  const r = await run('diff', OLD, REFACTORED, '--tuples', join(dir, 'tuples.yaml'), '--runs', '300', '--seed', '2', '--must-not-change', 'document#viewer,document#can_share,document#can_read');
  t.is(r.stderr, '');
  t.is(r.status, 0);
  t.regex(r.stdout, /^on the given 4 tuples \(3 users\): no answer changes$/m);
  t.regex(r.stdout, /^on 300 generated stores \(seed 2\): no answer changes$/m);
});

test('a store file as OLD brings its tuples', async (t) => {
  const r = await run('diff', join(dir, 'store.fga.yaml'), CHANGED, '--runs', '0');
  t.regex(r.stdout, /^ {4}\+ user:dora can_share document:9$/m);
});

test('usage errors exit 2, unreadable models 1', async (t) => {
  t.is((await run('diff', OLD)).status, 2);
  t.is((await run('diff', OLD, CHANGED, '--bogus', '1')).status, 2);
  t.is((await run('diff', OLD, CHANGED, '--runs', '-1')).status, 2);
  const unknown = await run('diff', OLD, CHANGED, '--must-not-change', 'document#nothing');
  t.is(unknown.status, 2);
  t.regex(unknown.stderr, /'document#nothing' is not a relation of both models/);
  const missing = await run('diff', OLD, join(dir, 'nowhere.fga'));
  t.is(missing.status, 1);
  t.regex(missing.stderr, /cannot read model file/);
});
