/**
 * `latchkey fga …`: work with OpenFGA store files from the command line.
 *
 *   latchkey fga test FILE.fga.yaml [FILE…]   run the tests of OpenFGA CLI store files
 *
 * A store file (the format of the OpenFGA CLI's `fga model test`) holds:
 * - `name`;
 * - `model` (inline DSL) or `model_file` (a `.fga` file, or an `fga.mod`
 *   manifest of a modular model), relative to the store file;
 * - `tuples` and/or `tuple_file` / `tuple_files` (YAML, JSON or CSV);
 * - `tests`: each with `name`, optional `tuples` / `tuple_file(s)` added for
 *   that test only, and
 *   - `check`: `{ user | users, object | objects, context?, assertions: { relation: bool } }`
 *   - `list_objects`: `{ user, type, context?, assertions: { relation: [objects] } }`
 *   - `list_users`: `{ object, user_filter: [{ type, relation? }], context?, assertions: { relation: { users: [...] } } }`
 *
 * Each test runs against a fresh in-memory engine holding the model, the
 * file's tuples and the test's tuples. Every failing assertion is printed
 * with its expected and actual value; a summary line `N passed, M failed`
 * ends the output. Exit status: 0 when everything passed, 1 when an
 * assertion failed or a file is invalid (the message names the file and the
 * problem), 2 for a usage error.
 *
 * Imports only engine/ and dsl/ index files, node builtins and yaml.
 */
import { readFileSync } from 'node:fs';
import { basename, dirname, extname, resolve } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { Engine, LatchkeyError, type AuthorizationModel, type TupleKey } from '../engine/index.ts';
import { loadModularModel, transformDslToModel } from '../dsl/index.ts';

type Out = { write(text: string): unknown } | ((text: string) => void);

/** Where the command reads and writes. */
export interface FgaCommandIo {
  stdin?: unknown;
  stdout: Out;
  stderr: Out;
}

const HELP = `Usage: latchkey fga <command> [options]

Commands:
  test FILE.fga.yaml [FILE...]   Run the tests of OpenFGA CLI store files
                                 (check, list_objects and list_users assertions)

Exit status: 0 all assertions passed, 1 an assertion failed or a file is
invalid, 2 usage error.
`;

function writer(out: Out): (text: string) => void {
  return typeof out === 'function' ? out : (text) => void out.write(text);
}

/** A problem with a store file: reported with the file name, exit status 1. */
class StoreFileError extends Error {}

type Json = Record<string, unknown>;

function isObject(v: unknown): v is Json {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

function readText(path: string, what: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (err) {
    throw new StoreFileError(`cannot read ${what} '${path}': ${(err as NodeJS.ErrnoException).code ?? String(err)}`);
  }
}

function describeError(err: unknown): string {
  if (err instanceof LatchkeyError) {
    const errors = err.details?.['errors'];
    if (Array.isArray(errors) && errors.length > 0) {
      return errors
        .map((e: unknown) => {
          if (!isObject(e)) return String(e);
          const line = typeof e['line'] === 'number' ? `line ${e['line']}` : '';
          const col = typeof e['column'] === 'number' ? `:${e['column']}` : '';
          const file = typeof e['file'] === 'string' ? `${e['file']} ` : '';
          return `${file}${line}${col}${line === '' ? '' : ': '}${String(e['message'] ?? '')}`;
        })
        .join('; ');
    }
    return err.message;
  }
  return err instanceof Error ? err.message : String(err);
}

// ------------------------------------------------------------------ tuples

function tupleFromRecord(v: unknown, where: string): TupleKey {
  if (!isObject(v)) throw new StoreFileError(`${where}: a tuple must be a map with user, relation and object`);
  const { user, relation, object, condition } = v;
  if (typeof user !== 'string' || typeof relation !== 'string' || typeof object !== 'string') {
    throw new StoreFileError(`${where}: a tuple needs string fields user, relation and object`);
  }
  const t: TupleKey = { user, relation, object };
  if (condition !== undefined && condition !== null) {
    if (!isObject(condition) || typeof condition['name'] !== 'string') throw new StoreFileError(`${where}: a tuple condition needs a name`);
    const context = condition['context'];
    if (context !== undefined && context !== null && !isObject(context)) throw new StoreFileError(`${where}: a condition context must be a map`);
    t.condition = isObject(context) ? { name: condition['name'], context } : { name: condition['name'] };
  }
  return t;
}

function splitCsvLine(line: string): string[] {
  const out: string[] = [];
  let cur = '';
  let quoted = false;
  for (let i = 0; i < line.length; i++) {
    const c = line[i]!;
    if (quoted) {
      if (c === '"' && line[i + 1] === '"') {
        cur += '"';
        i++;
      } else if (c === '"') quoted = false;
      else cur += c;
    } else if (c === '"') quoted = true;
    else if (c === ',') {
      out.push(cur);
      cur = '';
    } else cur += c;
  }
  out.push(cur);
  return out.map((s) => s.trim());
}

/**
 * CSV as the OpenFGA CLI writes it: a header naming `user_type, user_id,
 * user_relation, relation, object_type, object_id, condition_name,
 * condition_context` (or the short `user, relation, object`).
 */
function tuplesFromCsv(text: string, where: string): TupleKey[] {
  const lines = text.split(/\r?\n/u).filter((l) => l.trim() !== '');
  if (lines.length === 0) return [];
  const header = splitCsvLine(lines[0]!);
  const col = (name: string): number => header.indexOf(name);
  const long = col('user_type') >= 0 && col('object_type') >= 0;
  if (!long && !(col('user') >= 0 && col('relation') >= 0 && col('object') >= 0)) {
    throw new StoreFileError(`${where}: the CSV header must name user_type,user_id,user_relation,relation,object_type,object_id (or user,relation,object)`);
  }
  return lines.slice(1).map((line, i) => {
    const cells = splitCsvLine(line);
    const get = (name: string): string => (col(name) >= 0 ? (cells[col(name)] ?? '') : '');
    const at = `${where} line ${i + 2}`;
    let t: TupleKey;
    if (long) {
      const userRel = get('user_relation');
      t = {
        user: `${get('user_type')}:${get('user_id')}${userRel === '' ? '' : `#${userRel}`}`,
        relation: get('relation'),
        object: `${get('object_type')}:${get('object_id')}`,
      };
    } else {
      t = { user: get('user'), relation: get('relation'), object: get('object') };
    }
    const condName = get('condition_name');
    if (condName !== '') {
      const ctxText = get('condition_context');
      let context: unknown;
      if (ctxText !== '') {
        try {
          context = JSON.parse(ctxText);
        } catch {
          throw new StoreFileError(`${at}: condition_context is not JSON`);
        }
        if (!isObject(context)) throw new StoreFileError(`${at}: condition_context must be a JSON object`);
      }
      t.condition = isObject(context) ? { name: condName, context } : { name: condName };
    }
    return t;
  });
}

function loadTupleFile(path: string): TupleKey[] {
  const text = readText(path, 'tuple file');
  const ext = extname(path).toLowerCase();
  const where = basename(path);
  if (ext === '.csv') return tuplesFromCsv(text, where);
  let data: unknown;
  try {
    data = ext === '.json' ? JSON.parse(text) : parseYaml(text);
  } catch (err) {
    throw new StoreFileError(`${where}: not valid ${ext === '.json' ? 'JSON' : 'YAML'}: ${(err as Error).message.split('\n')[0]}`);
  }
  if (data === null || data === undefined) return [];
  if (!Array.isArray(data)) throw new StoreFileError(`${where}: a tuple file must hold a list of tuples`);
  return data.map((v, i) => tupleFromRecord(v, `${where} tuple ${i + 1}`));
}

function collectTuples(node: Json, base: string, where: string): TupleKey[] {
  const out: TupleKey[] = [];
  const inline = node['tuples'];
  if (inline !== undefined && inline !== null) {
    if (!Array.isArray(inline)) throw new StoreFileError(`${where}: 'tuples' must be a list`);
    inline.forEach((v, i) => out.push(tupleFromRecord(v, `${where} tuple ${i + 1}`)));
  }
  const files: unknown[] = [];
  if (node['tuple_file'] !== undefined) files.push(node['tuple_file']);
  if (node['tuple_files'] !== undefined) {
    if (!Array.isArray(node['tuple_files'])) throw new StoreFileError(`${where}: 'tuple_files' must be a list of paths`);
    files.push(...(node['tuple_files'] as unknown[]));
  }
  for (const f of files) {
    if (typeof f !== 'string') throw new StoreFileError(`${where}: tuple file paths must be strings`);
    out.push(...loadTupleFile(resolve(base, f)));
  }
  return out;
}

// ------------------------------------------------------------------ models

function loadModel(store: Json, base: string): AuthorizationModel {
  const inline = store['model'];
  const file = store['model_file'];
  if (inline !== undefined && file !== undefined) throw new StoreFileError("give either 'model' or 'model_file', not both");
  try {
    if (typeof inline === 'string') return transformDslToModel(inline);
    if (typeof file === 'string') {
      const path = resolve(base, file);
      if (basename(path) === 'fga.mod') return loadModularModel(path);
      const text = readText(path, 'model file');
      if (extname(path).toLowerCase() === '.json') return JSON.parse(text) as AuthorizationModel;
      return transformDslToModel(text);
    }
  } catch (err) {
    if (err instanceof StoreFileError) throw err;
    throw new StoreFileError(`invalid model: ${describeError(err)}`);
  }
  throw new StoreFileError("the store file needs 'model' (inline DSL) or 'model_file'");
}

// ------------------------------------------------------------------ running

/** The keys of a store-file test that hold assertions; a test with none of them is not a store test. */
const ASSERTION_KEYS = ['check', 'list_objects', 'list_users'] as const;

interface Counts {
  passed: number;
  failed: number;
}

function asList(v: unknown): unknown[] {
  return Array.isArray(v) ? v : v === undefined || v === null ? [] : [v];
}

function optionalContext(v: Json, where: string): Record<string, unknown> | undefined {
  const c = v['context'];
  if (c === undefined || c === null) return undefined;
  if (!isObject(c)) throw new StoreFileError(`${where}: 'context' must be a map`);
  return c;
}

function sameSet(a: readonly string[], b: readonly string[]): boolean {
  const x = [...new Set(a)].sort();
  const y = [...new Set(b)].sort();
  return x.length === y.length && x.every((v, i) => v === y[i]);
}

async function runTest(test: Json, index: number, model: AuthorizationModel, storeTuples: TupleKey[], base: string, out: (s: string) => void, counts: Counts): Promise<void> {
  const name = typeof test['name'] === 'string' ? test['name'] : `test ${index + 1}`;
  const engine = new Engine();
  try {
    await engine.writeModel(model);
  } catch (err) {
    throw new StoreFileError(`invalid model: ${describeError(err)}`);
  }
  const tuples = [...storeTuples, ...collectTuples(test, base, `test '${name}'`)];
  for (let i = 0; i < tuples.length; i += 100) {
    try {
      await engine.write({ writes: tuples.slice(i, i + 100) });
    } catch (err) {
      throw new StoreFileError(`test '${name}': invalid tuples: ${describeError(err)}`);
    }
  }
  const fail = (what: string, expected: unknown, actual: unknown): void => {
    counts.failed++;
    out(`FAIL ${name}: ${what}\n  expected: ${JSON.stringify(expected)}\n  actual:   ${JSON.stringify(actual)}\n`);
  };
  const pass = (): void => {
    counts.passed++;
  };

  for (const [ci, raw] of asList(test['check']).entries()) {
    const where = `test '${name}' check ${ci + 1}`;
    if (!isObject(raw)) throw new StoreFileError(`${where}: must be a map`);
    const users = asList(raw['users'] ?? raw['user']);
    const objects = asList(raw['objects'] ?? raw['object']);
    if (users.length === 0 || objects.length === 0) throw new StoreFileError(`${where}: needs 'user' (or 'users') and 'object' (or 'objects')`);
    if (!isObject(raw['assertions'])) throw new StoreFileError(`${where}: needs 'assertions' mapping relations to true or false`);
    const context = optionalContext(raw, where);
    for (const user of users) {
      for (const object of objects) {
        for (const [relation, expected] of Object.entries(raw['assertions'])) {
          if (typeof expected !== 'boolean') throw new StoreFileError(`${where}: assertion '${relation}' must be true or false`);
          const what = `check ${String(user)} ${relation} ${String(object)}`;
          try {
            const { allowed } = await engine.check({ user: String(user), relation, object: String(object), ...(context === undefined ? {} : { context }) });
            if (allowed === expected) pass();
            else fail(what, expected, allowed);
          } catch (err) {
            fail(what, expected, `error: ${describeError(err)}`);
          }
        }
      }
    }
  }

  for (const [li, raw] of asList(test['list_objects']).entries()) {
    const where = `test '${name}' list_objects ${li + 1}`;
    if (!isObject(raw) || typeof raw['user'] !== 'string' || typeof raw['type'] !== 'string' || !isObject(raw['assertions'])) {
      throw new StoreFileError(`${where}: needs 'user', 'type' and 'assertions'`);
    }
    const context = optionalContext(raw, where);
    for (const [relation, expectedRaw] of Object.entries(raw['assertions'])) {
      const expected = asList(expectedRaw).map(String);
      const what = `list_objects ${raw['user']} ${relation} ${raw['type']}`;
      try {
        const { objects } = await engine.listObjects({ user: raw['user'], relation, type: raw['type'], ...(context === undefined ? {} : { context }) });
        if (sameSet(objects, expected)) pass();
        else fail(what, [...expected].sort(), objects);
      } catch (err) {
        fail(what, expected, `error: ${describeError(err)}`);
      }
    }
  }

  for (const [li, raw] of asList(test['list_users']).entries()) {
    const where = `test '${name}' list_users ${li + 1}`;
    if (!isObject(raw) || typeof raw['object'] !== 'string' || !isObject(raw['assertions'])) {
      throw new StoreFileError(`${where}: needs 'object', 'user_filter' and 'assertions'`);
    }
    const filters = asList(raw['user_filter']);
    if (filters.length !== 1 || !isObject(filters[0]) || typeof filters[0]['type'] !== 'string') {
      throw new StoreFileError(`${where}: 'user_filter' must be a list of exactly one {type, relation?}`);
    }
    const f = filters[0];
    const filter = typeof f['relation'] === 'string' && f['relation'] !== '' ? { type: f['type'] as string, relation: f['relation'] } : { type: f['type'] as string };
    const context = optionalContext(raw, where);
    for (const [relation, expectedRaw] of Object.entries(raw['assertions'])) {
      const expected = asList(isObject(expectedRaw) ? expectedRaw['users'] : expectedRaw).map(String);
      const what = `list_users ${raw['object']} ${relation} ${filter.type}${'relation' in filter ? `#${filter.relation}` : ''}`;
      try {
        const { users } = await engine.listUsers({ object: raw['object'], relation, userFilters: [filter], ...(context === undefined ? {} : { context }) });
        if (sameSet(users, expected)) pass();
        else fail(what, [...expected].sort(), users);
      } catch (err) {
        fail(what, expected, `error: ${describeError(err)}`);
      }
    }
  }
}

async function runStoreFile(path: string, out: (s: string) => void, counts: Counts): Promise<void> {
  const text = readText(path, 'store file');
  let store: unknown;
  try {
    store = parseYaml(text);
  } catch (err) {
    throw new StoreFileError(`not valid YAML: ${(err as Error).message.split('\n')[0]}`);
  }
  if (!isObject(store)) throw new StoreFileError('a store file must be a YAML map');
  const base = dirname(path);
  const tests = store['tests'];
  if (Array.isArray(tests) && tests.some((x) => isObject(x) && 'stages' in x)) {
    throw new StoreFileError('not a store test file: its tests have stages, as OpenFGA\'s conformance suites do; `latchkey fga test` runs OpenFGA CLI store files (`fga model test`)');
  }
  if (!Array.isArray(tests) || tests.length === 0) throw new StoreFileError("the store file has no 'tests'");
  for (const [i, test] of tests.entries()) {
    if (isObject(test) && !ASSERTION_KEYS.some((k) => k in test)) {
      const name = typeof test['name'] === 'string' ? `'${test['name']}'` : `${i + 1}`;
      throw new StoreFileError(
        `not a store test file: test ${name} has no ${ASSERTION_KEYS.join(', ')} (its keys: ${Object.keys(test).join(', ') || 'none'}); \`latchkey fga test\` runs OpenFGA CLI store files (\`fga model test\`)`,
      );
    }
  }
  const model = loadModel(store, base);
  const storeTuples = collectTuples(store, base, 'store');
  if (typeof store['name'] === 'string') out(`# ${store['name']}\n`);
  for (const [i, test] of tests.entries()) {
    if (!isObject(test)) throw new StoreFileError(`test ${i + 1} must be a map`);
    await runTest(test, i, model, storeTuples, base, out, counts);
  }
}

/**
 * Runs `latchkey fga <argv…>`; resolves to the exit status (0 ok, 1 failed
 * or invalid, 2 usage).
 */
export async function runFgaCommand(argv: string[], io: FgaCommandIo): Promise<number> {
  const out = writer(io.stdout);
  const err = writer(io.stderr);
  const [command, ...rest] = argv;
  if (command === undefined || command === '--help' || command === '-h' || command === 'help') {
    (command === undefined ? err : out)(HELP);
    return command === undefined ? 2 : 0;
  }
  if (command !== 'test') {
    err(`latchkey fga: unknown command '${command}'\n\n${HELP}`);
    return 2;
  }
  const files = rest.filter((a) => a !== '');
  if (files.length === 0 || files.some((f) => f.startsWith('-'))) {
    err(`latchkey fga test: give one or more store files (FILE.fga.yaml)\n`);
    return 2;
  }
  const counts: Counts = { passed: 0, failed: 0 };
  let invalid = false;
  for (const file of files) {
    try {
      await runStoreFile(resolve(file), out, counts);
    } catch (e) {
      invalid = true;
      if (e instanceof StoreFileError) err(`${file}: ${e.message}\n`);
      else err(`${file}: ${describeError(e)}\n`);
    }
  }
  // Nothing ran and a file was refused: the refusal says it all, a "0 passed, 0 failed" would read as a pass.
  if (!invalid || counts.passed + counts.failed > 0) out(`${counts.passed} passed, ${counts.failed} failed\n`);
  return invalid || counts.failed > 0 ? 1 : 0;
}
