/**
 * `latchkey fga …`: work with OpenFGA store files from the command line.
 *
 *   latchkey fga test FILE.fga.yaml [FILE…]   run the tests of OpenFGA CLI store files
 *   latchkey fga diff OLD NEW [--tuples FILE]  the answers a model change gains and loses
 *   latchkey fga bench FILE.fga.yaml          the engine's speed on the file's model (cmd/fga_bench.ts)
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
 * - `properties` (Latchkey's addition): each with `name`, `seed`, `runs`,
 *   `generate` and one of `implies`, `excludes`, `equivalent`, `monotonic`,
 *   `bounded`, `predicate`, checked on generated stores by
 *   `@latchkey/engine/testing` (docs/testing-models.md); a failing one
 *   prints its shrunk counterexample as a store-test case;
 * - `generate`: how stores are generated for every property (`ids`,
 *   `ids_per_type`, `max_tuples`, `link_bias`).
 *
 * Each test runs against a fresh in-memory engine holding the model, the
 * file's tuples and the test's tuples. Every failing assertion is printed
 * with its expected and actual value; a summary line `N passed, M failed`
 * ends the output. Exit status: 0 when everything passed, 1 when an
 * assertion failed or a file is invalid (the message names the file and the
 * problem), 2 for a usage error.
 *
 * Store files are read by cmd/fga_store_file.ts; `diff` and `bench` are
 * cmd/fga_diff_command.ts and cmd/fga_bench_command.ts. With those, it
 * imports only engine/ and dsl/ index files, the engine's testing entry
 * point, node builtins and yaml.
 */
import { dirname, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Engine, type AuthorizationModel, type TupleKey } from '../engine/index.ts';
import { checkModelProperty, describeFailure, type ModelProperty, type PropertyRunOptions, type StoreOptions } from '../engine/testing/index.ts';
import { benchCommand } from './fga_bench_command.ts';
import { runDiff } from './fga_diff_command.ts';
import { collectTuples, describeError, isObject, type Json, loadModel, modelFrom, parseArgs, parseYaml, readText, StoreFileError } from './fga_store_file.ts';

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
                                 and their properties on generated stores
      --seed N                   the seed of every property (to replay one)
      --runs N                   generated stores per property
  diff OLD NEW                   Which users gain or lose which relations when
                                 the model OLD becomes NEW (.fga, .json, fga.mod
                                 or a store file), on given and generated tuples
      --tuples FILE              the tuples to compare on (YAML, JSON, CSV or a
                                 store file; default: OLD's, if a store file)
      --must-not-change R[,R...] exit 1 if any of these type#relation changes
      --runs N                   generated stores (default 200; 0: none)
      --seed N                   the seed of the generated stores
      --examples N               examples printed per change (default 3)
  bench FILE.fga.yaml            Time Check (cold and warm), BatchCheck,
                                 ListObjects and ListUsers on the file's model,
                                 after verifying a sample of answers against
                                 the naive evaluation
      --scale N                  N copies of the file's tuples (default 1)
      --generate N               N generated tuples instead
      --ids-per-type N           ids per type of generated tuples
      --queries N                check queries (default 1000)
      --store URL                sqlite:PATH, postgres://... or mysql://...
                                 (default: the memory store)
      --against OTHER            a second model, side by side
      --json FILE                write the figures as JSON
      --seed N                   the workload's seed (default 1)
      --baseline FILE            figures of an earlier --json run (another
                                 engine version or commit), printed beside
      --max-slowdown R           with --baseline: exit 1 when an operation's
                                 throughput falls below the baseline's / R

Exit status: 0 all assertions and properties passed (diff: no guarded
relation changed), 1 an assertion or property failed, a guarded relation
changed, or a file is invalid, 2 usage error.
`;

function writer(out: Out): (text: string) => void {
  return typeof out === 'function' ? out : (text) => void out.write(text);
}

/** A problem with a store file: reported with the file name, exit status 1. */
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

// ------------------------------------------------------------------ properties

/** Overrides from the command line for every property: `--seed`, `--runs`. */
interface RunOverrides {
  seed?: number;
  runs?: number;
}

/** The kinds of property a store file may state, each under its own key. */
const PROPERTY_KINDS = ['implies', 'excludes', 'equivalent', 'monotonic', 'bounded', 'predicate'] as const;

function relationList(v: unknown, where: string, count?: number): string[] {
  const list = asList(v);
  if (list.length === 0 || list.some((x) => typeof x !== 'string') || (count !== undefined && list.length !== count)) {
    throw new StoreFileError(`${where}: give ${count === undefined ? 'one or more relations' : `${count} relations`} as type#relation`);
  }
  return list as string[];
}

/** `generate:` options (of the file, or of one property over the file's). */
function generateOptions(v: unknown, where: string, inherited: StoreOptions = {}): StoreOptions {
  if (v === undefined || v === null) return inherited;
  if (!isObject(v)) throw new StoreFileError(`${where}: 'generate' must be a map`);
  const out: StoreOptions = { ...inherited };
  for (const [k, value] of Object.entries(v)) {
    if (k === 'ids') {
      if (Array.isArray(value)) out.ids = value.map(String);
      else if (isObject(value)) out.ids = Object.fromEntries(Object.entries(value).map(([t, ids]) => [t, asList(ids).map(String)]));
      else throw new StoreFileError(`${where}: 'generate.ids' must be a list of ids, or a map of type to ids`);
    } else if (k === 'ids_per_type' || k === 'max_tuples') {
      if (typeof value !== 'number') throw new StoreFileError(`${where}: 'generate.${k}' must be a number`);
      if (k === 'ids_per_type') out.idsPerType = value;
      else out.maxTuples = value;
    } else if (k === 'link_bias') {
      if (typeof value !== 'number') throw new StoreFileError(`${where}: 'generate.link_bias' must be a number from 0 to 1`);
      out.linkBias = value;
    } else {
      throw new StoreFileError(`${where}: unknown key 'generate.${k}' (ids, ids_per_type, max_tuples, link_bias)`);
    }
  }
  return out;
}

async function parseProperty(raw: Json, kind: (typeof PROPERTY_KINDS)[number], base: string, where: string): Promise<ModelProperty> {
  const v = raw[kind];
  switch (kind) {
    case 'implies': {
      if (isObject(v)) return { kind, if: relationList(v['if'], where, 1)[0]!, then: relationList(v['then'], where, 1)[0]! };
      const [a, b] = relationList(v, `${where}: 'implies' is {if, then} or`, 2);
      return { kind, if: a!, then: b! };
    }
    case 'excludes': {
      const [a, b] = relationList(v, where, 2);
      return { kind, relations: [a!, b!] };
    }
    case 'equivalent': {
      if (Array.isArray(v)) {
        const [a, b] = relationList(v, where, 2);
        return { kind, relations: [a!, b!] };
      }
      if (!isObject(v)) throw new StoreFileError(`${where}: 'equivalent' is two relations, or {model | model_file, relations?}`);
      const other = modelFrom(v['model'], v['model_file'], base);
      return { kind, model: other, ...(v['relations'] === undefined ? {} : { relations: relationList(v['relations'], where) }) };
    }
    case 'monotonic': {
      if (!isObject(v)) throw new StoreFileError(`${where}: 'monotonic' is {adding, relations?}`);
      return { kind, adding: relationList(v['adding'], where), ...(v['relations'] === undefined ? {} : { relations: relationList(v['relations'], where) }) };
    }
    case 'bounded': {
      if (!isObject(v) || typeof v['pattern'] !== 'string') throw new StoreFileError(`${where}: 'bounded' is {relation, pattern, crossing?}`);
      return { kind, relation: relationList(v['relation'], where, 1)[0]!, pattern: v['pattern'], ...(v['crossing'] === undefined ? {} : { crossing: relationList(v['crossing'], where) }) };
    }
    case 'predicate': {
      const spec = typeof v === 'string' ? { file: v } : v;
      if (!isObject(spec) || typeof spec['file'] !== 'string') throw new StoreFileError(`${where}: 'predicate' is a JS file, or {file, export?}`);
      const exportName = typeof spec['export'] === 'string' ? spec['export'] : 'default';
      const file = resolve(base, spec['file']);
      let mod: Record<string, unknown>;
      try {
        mod = (await import(pathToFileURL(file).href)) as Record<string, unknown>;
      } catch (err) {
        throw new StoreFileError(`${where}: cannot load predicate file '${spec['file']}': ${err instanceof Error ? err.message.split('\n')[0] : String(err)}`);
      }
      const fn = mod[exportName];
      if (typeof fn !== 'function') throw new StoreFileError(`${where}: '${spec['file']}' has no function export '${exportName}'`);
      return { kind, predicate: fn as Extract<ModelProperty, { kind: 'predicate' }>['predicate'] };
    }
  }
}

async function runProperty(raw: unknown, index: number, model: AuthorizationModel, generate: StoreOptions, base: string, overrides: RunOverrides, out: (s: string) => void, counts: Counts): Promise<void> {
  if (!isObject(raw)) throw new StoreFileError(`property ${index + 1} must be a map`);
  const name = typeof raw['name'] === 'string' ? raw['name'] : `property ${index + 1}`;
  const where = `property '${name}'`;
  const kinds = PROPERTY_KINDS.filter((k) => k in raw);
  if (kinds.length !== 1) throw new StoreFileError(`${where}: give exactly one of ${PROPERTY_KINDS.join(', ')}`);
  const known = new Set<string>(['name', 'seed', 'runs', 'generate', kinds[0]!]);
  const unknown = Object.keys(raw).filter((k) => !known.has(k));
  if (unknown.length > 0) throw new StoreFileError(`${where}: unknown key${unknown.length === 1 ? '' : 's'} ${unknown.join(', ')}`);
  const property = await parseProperty(raw, kinds[0]!, base, where);
  const seed = overrides.seed ?? raw['seed'];
  const runs = overrides.runs ?? raw['runs'] ?? 100;
  if (seed !== undefined && (typeof seed !== 'number' || !Number.isSafeInteger(seed))) throw new StoreFileError(`${where}: 'seed' must be an integer`);
  if (typeof runs !== 'number' || !Number.isInteger(runs) || runs < 1) throw new StoreFileError(`${where}: 'runs' must be a positive integer`);
  const options: PropertyRunOptions = { ...generateOptions(raw['generate'], where, generate), numRuns: runs, ...(seed === undefined ? {} : { seed }) };
  let result;
  try {
    result = await checkModelProperty(model, property, options);
  } catch (err) {
    throw new StoreFileError(`${where}: ${describeError(err)}`);
  }
  if (result.ok) {
    counts.passed++;
    out(`ok   ${where}: held on ${result.numRuns} generated stores (seed ${result.seed})\n`);
  } else {
    counts.failed++;
    out(`FAIL ${describeFailure(result, name)}`);
  }
}

async function runStoreFile(path: string, out: (s: string) => void, counts: Counts, overrides: RunOverrides = {}): Promise<void> {
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
  const properties = store['properties'];
  if (properties !== undefined && properties !== null && !Array.isArray(properties)) throw new StoreFileError("'properties' must be a list");
  const hasProperties = Array.isArray(properties) && properties.length > 0;
  if ((!Array.isArray(tests) || tests.length === 0) && !hasProperties) throw new StoreFileError("the store file has no 'tests' and no 'properties'");
  if (tests !== undefined && tests !== null && !Array.isArray(tests)) throw new StoreFileError("'tests' must be a list");
  for (const [i, test] of (Array.isArray(tests) ? tests : []).entries()) {
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
  for (const [i, test] of (Array.isArray(tests) ? tests : []).entries()) {
    if (!isObject(test)) throw new StoreFileError(`test ${i + 1} must be a map`);
    await runTest(test, i, model, storeTuples, base, out, counts);
  }
  if (hasProperties) {
    const generate = generateOptions(store['generate'], 'store');
    for (const [i, property] of (properties as unknown[]).entries()) await runProperty(property, i, model, generate, base, overrides, out, counts);
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
  if (command === 'diff') return runDiff(rest, out, err, HELP);
  if (command === 'bench') return benchCommand(rest, out, err, HELP);
  if (command !== 'test') {
    err(`latchkey fga: unknown command '${command}'\n\n${HELP}`);
    return 2;
  }
  const parsed = parseArgs(rest, ['seed', 'runs']);
  if (typeof parsed === 'string') {
    err(`latchkey fga test: ${parsed}\n`);
    return 2;
  }
  const overrides: RunOverrides = {};
  for (const key of ['seed', 'runs'] as const) {
    const v = parsed.flags[key];
    if (v === undefined) continue;
    const n = Number(v);
    if (!Number.isSafeInteger(n) || (key === 'runs' && n < 1)) {
      err(`latchkey fga test: --${key} must be ${key === 'runs' ? 'a positive integer' : 'an integer'}\n`);
      return 2;
    }
    overrides[key] = n;
  }
  const files = parsed.positional;
  if (files.length === 0) {
    err(`latchkey fga test: give one or more store files (FILE.fga.yaml)\n`);
    return 2;
  }
  const counts: Counts = { passed: 0, failed: 0 };
  let invalid = false;
  for (const file of files) {
    try {
      await runStoreFile(resolve(file), out, counts, overrides);
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
