/** `latchkey dsl …`, called as a function and, when bin/latchkey.js exists, as a process. */
import test from 'ava';
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { runDslCommand } from '../../cmd/dsl_command.ts';
import { REPO_ROOT } from '../helpers/shared.ts';

const VALID = 'model\n  schema 1.1\ntype user\ntype doc\n  relations\n    define viewer: [user]\n';
const INVALID = 'model\n  schema 1.1\ntype user\ntype doc\n  relations\n    define viewer: [user] or ghost\n';

async function run(argv: string[], stdin = ''): Promise<{ status: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const status = await runDslCommand(argv, {
    stdin: Readable.from([stdin]),
    stdout: (t) => void (stdout += t),
    stderr: (t) => void (stderr += t),
  });
  return { status, stdout, stderr };
}

test('to-json converts DSL from stdin', async (t) => {
  const r = await run(['to-json', '-'], VALID);
  t.is(r.status, 0);
  t.is((JSON.parse(r.stdout) as { schema_version: string }).schema_version, '1.1');
});

test('to-json fails with status 1 and positioned errors on an invalid model', async (t) => {
  const r = await run(['to-json'], INVALID);
  t.is(r.status, 1);
  t.regex(r.stderr, /<stdin>:6:30: error \[missing-definition\]/);
});

test('to-json --no-validate converts a model that parses but does not validate, as OpenFGA\'s transformer does', async (t) => {
  const r = await run(['to-json', '--no-validate'], INVALID);
  t.is(r.status, 0, r.stderr);
  const model = JSON.parse(r.stdout) as { type_definitions: { type: string; relations?: Record<string, unknown> }[] };
  t.deepEqual(model.type_definitions.map((d) => d.type), ['user', 'doc']);
  t.truthy(model.type_definitions[1]?.relations?.['viewer']);
  // A syntax error still fails, with its position.
  const broken = await run(['to-json', '--no-validate'], 'model\n  schema 1.1\ntype doc\n  relations\n    define viewer: [user\n');
  t.is(broken.status, 1);
  t.regex(broken.stderr, /<stdin>:\d+:\d+: syntax error/);
  // Only for to-json of one file.
  t.is((await run(['validate', '--no-validate'], VALID)).status, 2);
});

test('to-dsl prints JSON as DSL that converts back', async (t) => {
  const json = (await run(['to-json'], VALID)).stdout;
  const r = await run(['to-dsl', '-'], json);
  t.is(r.status, 0);
  t.is((await run(['to-json'], r.stdout)).stdout, json);
});

test('validate --format json prints one object per error and exits 1; 0 and [] when valid', async (t) => {
  const bad = await run(['validate', '--format', 'json'], INVALID);
  t.is(bad.status, 1);
  const errors = JSON.parse(bad.stdout) as Array<Record<string, unknown>>;
  t.is(errors.length, 1);
  t.deepEqual(Object.keys(errors[0] ?? {}).sort(), ['column', 'kind', 'line', 'message']);
  const good = await run(['validate', '--format=json'], VALID);
  t.is(good.status, 0);
  t.deepEqual(JSON.parse(good.stdout), []);
});

/** A model the DSL accepts whose condition `c` (line 7, column 11) has `expression` as its body. */
function withCondition(expression: string): string {
  return `model\n  schema 1.1\ntype user\ntype doc\n  relations\n    define viewer: [user with c]\ncondition c(s: string) {\n  ${expression}\n}\n`;
}

test('validate refuses a condition outside OpenFGA\'s CEL environment as writing the model does: exit 1, the write\'s reason and message at the condition', async (t) => {
  const model = withCondition('"ab".substring(1) == "b"');
  // The DSL alone accepts it (to-json converts it) ...
  t.is((await run(['to-json'], model)).status, 0);
  // ... but writing it is refused with this error, so validate reports it.
  const { Engine } = await import('../../engine/index.ts');
  const write = await new Engine().writeModel({ dsl: model }).then(() => undefined, (e: unknown) => e as { reason?: string; message: string; details?: Record<string, unknown> });
  t.is(write?.reason, 'invalid_authorization_model');
  t.is(write?.details?.['openfga_code'], 2056);
  const message = "condition 'c' does not compile: undeclared reference to 'substring': OpenFGA's conditions have CEL's standard library and ipaddress only";
  t.is(write?.message, message);

  const text = await run(['validate'], model);
  t.is(text.status, 1);
  t.is(text.stdout, '');
  t.is(text.stderr, `<stdin>:7:11: error [invalid_authorization_model]: ${message}\n`);
  const json = await run(['validate', '--format', 'json'], model);
  t.is(json.status, 1);
  t.deepEqual(JSON.parse(json.stdout), [{ kind: 'invalid_authorization_model', message, line: { start: 6, end: 6 }, column: { start: 10, end: 11 } }]);
  // A condition that does not type-check is refused the same way.
  const mistyped = await run(['validate'], withCondition('s + 1 == 2'));
  t.is(mistyped.status, 1);
  t.regex(mistyped.stderr, /^<stdin>:7:11: error \[invalid_authorization_model\]: condition 'c' does not compile: /);
  // A condition within the environment validates.
  const allowed = await run(['validate'], withCondition('s.startsWith("a") && size(s) == 2'));
  t.is(allowed.status, 0, allowed.stderr);
  t.is(allowed.stdout, '<stdin>: valid\n');
});

test('validate of a modular model refuses a condition outside OpenFGA\'s CEL environment in the module file that declares it', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'dsl-cli-'));
  writeFileSync(join(dir, 'fga.mod'), "schema: '1.2'\ncontents:\n  - a.fga\n  - b.fga\n");
  writeFileSync(join(dir, 'a.fga'), 'module a\n\ntype user\ntype doc\n  relations\n    define viewer: [user with c]\n');
  writeFileSync(join(dir, 'b.fga'), 'module b\n\ncondition c(s: string) {\n  math.greatest(1, 2) == 2\n}\n');
  const r = await run(['validate', join(dir, 'fga.mod'), '--format', 'json']);
  t.is(r.status, 1);
  t.deepEqual(JSON.parse(r.stdout), [{
    kind: 'invalid_authorization_model',
    message: "condition 'c' does not compile: undeclared reference to 'math.greatest': OpenFGA's conditions have CEL's standard library and ipaddress only",
    line: { start: 2, end: 2 },
    column: { start: 10, end: 11 },
    file: 'b.fga',
  }]);
  writeFileSync(join(dir, 'b.fga'), 'module b\n\ncondition c(s: string) {\n  s == "x"\n}\n');
  const ok = await run(['validate', join(dir, 'fga.mod')]);
  t.is(ok.status, 0, ok.stderr);
});

test('validate reads a modular model through fga.mod', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'dsl-cli-'));
  writeFileSync(join(dir, 'fga.mod'), "schema: '1.2'\ncontents:\n  - a.fga\n");
  writeFileSync(join(dir, 'a.fga'), 'module a\n\ntype user\ntype doc\n  relations\n    define v: [user] or nope\n');
  const r = await run(['validate', join(dir, 'fga.mod'), '--format', 'json']);
  t.is(r.status, 1);
  t.is((JSON.parse(r.stdout) as Array<{ file: string }>)[0]?.file, 'a.fga');
  writeFileSync(join(dir, 'a.fga'), 'module a\n\ntype user\n');
  const ok = await run(['to-json', join(dir, 'fga.mod')]);
  t.is(ok.status, 0);
  t.is((JSON.parse(ok.stdout) as { schema_version: string }).schema_version, '1.2');
});

test('to-dsl --source-info marks modules and files of a modular model', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'dsl-cli-'));
  writeFileSync(join(dir, 'fga.mod'), "schema: '1.2'\ncontents:\n  - a.fga\n  - b.fga\n");
  writeFileSync(join(dir, 'a.fga'), 'module a\n\ntype user\n');
  writeFileSync(join(dir, 'b.fga'), 'module b\n\nextend type user\n  relations\n    define friend: [user]\n');
  const json = (await run(['to-json', join(dir, 'fga.mod')])).stdout;
  const r = await run(['to-dsl', '--source-info'], json);
  t.is(r.status, 0);
  t.is(
    r.stdout,
    'model\n  schema 1.2\n\ntype user # module: a, file: a.fga\n  relations\n    define friend: [user] # extended by: module: b, file: b.fga\n',
  );
});

test('usage errors exit 2; --help exits 0', async (t) => {
  t.is((await run(['frobnicate'])).status, 2);
  t.is((await run(['validate', '--format', 'xml'])).status, 2);
  t.is((await run([])).status, 2);
  const help = await run(['--help']);
  t.is(help.status, 0);
  t.regex(help.stdout, /to-json/);
});

test('a missing file is reported with status 1', async (t) => {
  const r = await run(['validate', '/nonexistent/model.fga']);
  t.is(r.status, 1);
  t.regex(r.stderr, /cannot read/);
});

const BIN = join(REPO_ROOT, 'bin', 'latchkey.js');
test('through bin/latchkey.js: validate exits 1 on an invalid model and 0 on a valid one', (t) => {
  if (!existsSync(BIN)) {
    t.pass('bin/latchkey.js not present in this tree');
    return;
  }
  const bad = spawnSync(process.execPath, [BIN, 'dsl', 'validate', '--format', 'json'], { input: INVALID, encoding: 'utf8' });
  t.is(bad.status, 1, bad.stderr);
  t.is((JSON.parse(bad.stdout) as unknown[]).length, 1);
  const refused = spawnSync(process.execPath, [BIN, 'dsl', 'validate'], { input: withCondition('"ab".substring(1) == "b"'), encoding: 'utf8' });
  t.is(refused.status, 1, refused.stderr);
  t.regex(refused.stderr, /^<stdin>:7:11: error \[invalid_authorization_model\]: condition 'c' does not compile: undeclared reference to 'substring'/);
  const out = execFileSync(process.execPath, [BIN, 'dsl', 'to-json'], { input: VALID, encoding: 'utf8' });
  t.is((JSON.parse(out) as { schema_version: string }).schema_version, '1.1');
});
