import test from 'ava';
import { join } from 'node:path';
import { runFgaCommand } from '../../cmd/fga_command.ts';
import { CONFORMANCE_DIR, REPO_ROOT } from '../helpers/shared.ts';
import { needs } from '../helpers/needs.ts';

const CORPUS = join(REPO_ROOT, 'test', 'corpus', 'fga');

async function run(...argv: string[]): Promise<{ status: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const status = await runFgaCommand(argv, { stdout: (s) => (stdout += s), stderr: { write: (s: string) => (stderr += s) } });
  return { status, stdout, stderr };
}

test('fga test: a passing store file exits 0 with a summary', async (t) => {
  const r = await run('test', join(CORPUS, 'passing.fga.yaml'));
  t.is(r.stderr, '');
  t.regex(r.stdout, /^13 passed, 0 failed$/m);
  t.notRegex(r.stdout, /FAIL/);
  t.is(r.status, 0);
});

test('fga test: failing assertions print expected and actual, and exit 1', async (t) => {
  const r = await run('test', join(CORPUS, 'failing.fga.yaml'));
  t.is(r.status, 1);
  t.regex(r.stdout, /FAIL wrong expectations: check user:anne viewer document:1\n {2}expected: false\n {2}actual: {3}true/);
  t.regex(r.stdout, /FAIL wrong expectations: list_objects user:anne viewer document\n {2}expected: \["document:1","document:2"\]\n {2}actual: {3}\["document:1"\]/);
  t.regex(r.stdout, /^2 passed, 2 failed$/m);
});

test('fga test: a condition error is a failed assertion showing the error', async (t) => {
  const r = await run('test', join(CORPUS, 'missing_context.fga.yaml'));
  t.is(r.status, 1);
  t.regex(r.stdout, /actual: {3}"error: .*missing context parameters: hour/);
  t.regex(r.stdout, /^0 passed, 1 failed$/m);
});

test('fga test: an invalid model is reported with the file name and exits 1', async (t) => {
  const r = await run('test', join(CORPUS, 'invalid_model.fga.yaml'));
  t.is(r.status, 1);
  t.regex(r.stderr, /invalid_model\.fga\.yaml: invalid model: .*usr/);
});

test('fga test: a tuple the model does not admit is reported and exits 1', async (t) => {
  const r = await run('test', join(CORPUS, 'invalid_tuple.fga.yaml'));
  t.is(r.status, 1);
  t.regex(r.stderr, /invalid_tuple\.fga\.yaml: test 'never runs': invalid tuples: .*document#owner/);
});

test('fga test: a store file without tests, a missing file and bad YAML are invalid', async (t) => {
  const none = await run('test', join(CORPUS, 'no_tests.fga.yaml'));
  t.is(none.status, 1);
  t.regex(none.stderr, /has no 'tests'/);
  const missing = await run('test', join(CORPUS, 'does_not_exist.fga.yaml'));
  t.is(missing.status, 1);
  t.regex(missing.stderr, /cannot read store file .*ENOENT/);
  const notYaml = await run('test', join(CORPUS, 'tuples.csv'));
  t.is(notYaml.status, 1);
});

test('fga test: a modular model through fga.mod', async (t) => {
  const r = await run('test', join(CORPUS, 'modular', 'store.fga.yaml'));
  t.is(r.stderr, '');
  t.regex(r.stdout, /^1 passed, 0 failed$/m);
  t.is(r.status, 0);
});

test('fga test: several files add up, and any failure makes the status 1', async (t) => {
  const r = await run('test', join(CORPUS, 'passing.fga.yaml'), join(CORPUS, 'failing.fga.yaml'));
  t.regex(r.stdout, /^15 passed, 2 failed$/m);
  t.is(r.status, 1);
});

test('fga: usage errors exit 2', async (t) => {
  t.is((await run()).status, 2);
  t.is((await run('frobnicate')).status, 2);
  t.is((await run('test')).status, 2);
  const help = await run('--help');
  t.is(help.status, 0);
  t.regex(help.stdout, /latchkey fga/);
});

needs(test, 'shared')('fga test: a file that is not a store test file says so, without a 0 passed, 0 failed summary', async (t) => {
  const misspelled = await run('test', join(CORPUS, 'no_assertions.fga.yaml'));
  t.is(misspelled.status, 1);
  t.regex(misspelled.stderr, /no_assertions\.fga\.yaml: not a store test file: test 'misspelled key' has no check, list_objects, list_users \(its keys: name, checks\)/);
  t.notRegex(misspelled.stdout, /0 passed, 0 failed/);
  const conformance = await run('test', join(CONFORMANCE_DIR, 'openfga', 'abac_tests.yaml'));
  t.is(conformance.status, 1);
  t.regex(conformance.stderr, /abac_tests\.yaml: not a store test file: its tests have stages/);
  t.is(conformance.stdout, '');
  // Beside a file that ran, the summary still counts what ran.
  const mixed = await run('test', join(CORPUS, 'passing.fga.yaml'), join(CORPUS, 'no_assertions.fga.yaml'));
  t.is(mixed.status, 1);
  t.regex(mixed.stdout, /^13 passed, 0 failed$/m);
});
