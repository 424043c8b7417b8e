/**
 * `latchkey fga test` properties (test/corpus/fga/properties/): those that
 * hold pass; each planted mistake (an exclusion that breaks an implication,
 * a tuple-to-userset that crosses tenants, a refactor that changes one
 * answer, a relation that takes access away as tuples are added, a
 * predicate's rule) is found on every seed tried, shrunk to the two tuples
 * that cause it, and printed as a store-test case that fails when run.
 */
import test from 'ava';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runFgaCommand } from '../../cmd/fga_command.ts';
import { REPO_ROOT } from '../helpers/shared.ts';

const DIR = join(REPO_ROOT, 'test', 'corpus', 'fga', 'properties');
const SEEDS = process.env['CI'] ? [1, 2, 3, 4, 5, 6] : [1, 2, 3];

async function run(...argv: string[]): Promise<{ status: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const status = await runFgaCommand(argv, { stdout: (s) => (stdout += s), stderr: (s) => (stderr += s) });
  return { status, stdout, stderr };
}

interface Failure {
  name: string;
  tuples: number;
  check: { user: string; relation: string; object: string; expected: string; actual: string };
  /** The store-test case as printed. */
  storeCase: string;
}

/** The failing properties of an output, with their printed cases. */
function failures(stdout: string): Failure[] {
  const out: Failure[] = [];
  const blocks = stdout.split(/^FAIL property /m).slice(1);
  for (const block of blocks) {
    const head = /^'(.*)' does not hold after \d+ stores? \(seed -?\d+, shrunk \d+ times to (\d+) tuples?\)/.exec(block);
    const check = /^ {2}check (\S+) (\S+) (\S+)\n {2}expected: (.*)\n {2}actual: {3}(.*)$/m.exec(block);
    const start = block.indexOf('\n\n', block.indexOf('as a store test')) + 2;
    const end = block.search(/^(ok {3}property|\d+ passed, \d+ failed$)/m);
    if (head === null || check === null) throw new Error(`unexpected failure output:\n${block}`);
    out.push({
      name: head[1]!,
      tuples: Number(head[2]),
      check: { user: check[1]!, relation: check[2]!, object: check[3]!, expected: check[4]!, actual: check[5]! },
      storeCase: block.slice(start, end < 0 ? undefined : end),
    });
  }
  return out;
}

/** Runs a printed case as a store file: it must fail on the reported check, with the same expected and actual answers. */
async function replays(t: import('ava').ExecutionContext, f: Failure): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'lk-case-'));
  try {
    const file = join(dir, 'case.fga.yaml');
    await writeFile(file, f.storeCase);
    const r = await run('test', file);
    t.is(r.stderr, '', `the printed case of '${f.name}' is a valid store file:\n${f.storeCase}`);
    t.is(r.status, 1, `the printed case of '${f.name}' fails`);
    t.true(
      r.stdout.includes(`FAIL ${f.name}: check ${f.check.user} ${f.check.relation} ${f.check.object}\n  expected: ${f.check.expected}\n  actual:   ${f.check.actual}\n`),
      `the case fails on the reported check:\n${r.stdout}`,
    );
    t.regex(r.stdout, /^0 passed, 1 failed$/m);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

test('properties that hold pass beside the assertions (implies, excludes, equivalent relations and models, monotonic, predicate file)', async (t) => {
  const r = await run('test', join(DIR, 'holds.fga.yaml'));
  t.is(r.stderr, '');
  t.is(r.status, 0);
  t.regex(r.stdout, /^8 passed, 0 failed$/m);
  for (const name of ['editors view', 'whoever may read views', 'the blocked cannot read', 'the refactored model answers alike', 'owners are editors (predicate file)']) {
    t.regex(r.stdout, new RegExp(`^ok {3}property '${name.replace(/[()]/g, '\\$&')}': held on \\d+ generated stores \\(seed \\d+\\)$`, 'm'));
  }
});

for (const [file, name, expected] of [
  ['planted.fga.yaml', 'editors view', { relation: 'viewer', expected: 'true', actual: 'false' }],
  ['tenants.fga.yaml', 'viewers stay in their tenant', { relation: 'viewer', expected: 'false', actual: 'true' }],
  ['refactor.fga.yaml', 'the new model answers as the old', { relation: 'can_share', expected: 'false', actual: 'true' }],
  ['monotonic.fga.yaml', 'blocking never takes reading away', { relation: 'can_read', expected: 'true', actual: 'false' }],
  ['predicate_fails.fga.yaml', 'owners are editors', { relation: 'editor', expected: 'true', actual: 'false' }],
] as const) {
  test(`${file}: '${name}' is found on every seed, shrunk to at most 2 tuples, and its printed case replays as a failing store test`, async (t) => {
    for (const seed of SEEDS) {
      const r = await run('test', '--seed', String(seed), '--runs', '500', join(DIR, file));
      t.is(r.stderr, '');
      t.is(r.status, 1);
      const found = failures(r.stdout);
      t.deepEqual(found.map((f) => f.name), [name], `seed ${seed}: only the planted mistake fails`);
      const f = found[0]!;
      t.true(f.tuples >= 1 && f.tuples <= 2, `seed ${seed}: shrunk to ${f.tuples} tuples`);
      t.like(f.check, expected, `seed ${seed}`);
      t.regex(f.storeCase, new RegExp(`^# replay: seed ${seed}, path "[\\d:]+"$`, 'm'));
      await replays(t, f);
    }
  });
}

test('the properties beside them in the same files still hold', async (t) => {
  const r = await run('test', join(DIR, 'tenants.fga.yaml'), join(DIR, 'monotonic.fga.yaml'));
  t.regex(r.stdout, /^ok {3}property 'internal viewers stay in their tenant': held on 200 generated stores/m);
  t.regex(r.stdout, /^ok {3}property 'more grants never take reading away': held on 200 generated stores/m);
  t.regex(r.stdout, /^2 passed, 2 failed$/m);
});

test('the same seed gives the same counterexample', async (t) => {
  const a = await run('test', join(DIR, 'planted.fga.yaml'));
  const b = await run('test', join(DIR, 'planted.fga.yaml'));
  t.is(a.stdout, b.stdout);
  t.regex(a.stdout, /seed 42/);
});

test('bad properties are reported with the file and exit 1; bad flags exit 2', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'lk-props-'));
  try {
    const model = 'model: |\n  model\n    schema 1.1\n  type user\n  type doc\n    relations\n      define viewer: [user]\n';
    const cases: [string, RegExp][] = [
      ['properties:\n  - name: two kinds\n    implies: [doc#viewer, doc#viewer]\n    excludes: [doc#viewer, doc#viewer]\n', /property 'two kinds': give exactly one of implies, excludes/],
      ['properties:\n  - name: typo\n    implies: [doc#viewer, doc#viewer]\n    rusn: 3\n', /property 'typo': unknown key rusn/],
      ['properties:\n  - name: ghost\n    implies: [doc#viewer, doc#editor]\n', /property 'ghost': implies: the model has no relation 'doc#editor'/],
      ['properties:\n  - name: no tenants\n    bounded: { relation: doc#viewer, pattern: "^([a-z]+)-" }\n', /property 'no tenants': bounded: no generated user or object id matches/],
      ['properties:\n  - name: missing file\n    predicate: ./nowhere.js\n', /property 'missing file': cannot load predicate file '\.\/nowhere\.js'/],
      ['generate:\n  max_tuple: 3\nproperties:\n  - implies: [doc#viewer, doc#viewer]\n', /unknown key 'generate\.max_tuple'/],
    ];
    for (const [i, [body, message]] of cases.entries()) {
      const file = join(dir, `bad${i}.fga.yaml`);
      await writeFile(file, model + body);
      const r = await run('test', file);
      t.is(r.status, 1, body);
      t.regex(r.stderr, message);
    }
    const good = join(dir, 'good.fga.yaml');
    await writeFile(good, `${model}properties:\n  - implies: [doc#viewer, doc#viewer]\n`);
    t.is((await run('test', '--runs', '0', good)).status, 2);
    t.is((await run('test', '--seed', 'x', good)).status, 2);
    t.is((await run('test', '--frobnicate', good)).status, 2);
    const ok = await run('test', '--runs', '5', good);
    t.is(ok.status, 0);
    t.regex(ok.stdout, /held on 5 generated stores/);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
