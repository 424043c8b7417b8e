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
 * Imports only engine/ and dsl/ index files, the engine's testing entry
 * point, node builtins and yaml.
 */
import { readFileSync } from 'node:fs';
import { basename, dirname, extname, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parse as parseYaml } from 'yaml';
import { Engine, LatchkeyError, type AuthorizationModel, type TupleKey } from '../engine/index.ts';
import { loadModularModel, transformDslToModel } from '../dsl/index.ts';
import { runBench, type BenchFigures, type BenchOptions } from './fga_bench.ts';
import { checkModelProperty, describeFailure, diffModels, type ModelProperty, type PropertyRunOptions, type StoreOptions } from '../engine/testing/index.ts';

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
  return modelFrom(store['model'], store['model_file'], base);
}

function modelFrom(inline: unknown, file: unknown, base: string): AuthorizationModel {
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

// ------------------------------------------------------------------ diff

/** `--name value` / `--name=value` for the named flags, the rest positional; a string is the usage error. */
function parseArgs(argv: string[], names: readonly string[]): { positional: string[]; flags: Record<string, string> } | string {
  const positional: string[] = [];
  const flags: Record<string, string> = {};
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '') continue;
    if (!a.startsWith('--')) {
      if (a.startsWith('-')) return `unknown option '${a}'`;
      positional.push(a);
      continue;
    }
    const eq = a.indexOf('=');
    const name = a.slice(2, eq < 0 ? undefined : eq);
    if (!names.includes(name)) return `unknown option '--${name}'`;
    const value = eq < 0 ? argv[++i] : a.slice(eq + 1);
    if (value === undefined || value === '') return `--${name} needs a value`;
    flags[name] = value;
  }
  return { positional, flags };
}

/** A model file (`.fga`, `.json`, `fga.mod`) or a store file (its model, and its tuples). */
function loadModelOrStore(path: string): { model: AuthorizationModel; tuples: TupleKey[] | undefined } {
  if (/\.ya?ml$/iu.test(path)) {
    let store: unknown;
    try {
      store = parseYaml(readText(path, 'store file'));
    } catch (err) {
      if (err instanceof StoreFileError) throw err;
      throw new StoreFileError(`not valid YAML: ${(err as Error).message.split('\n')[0]}`);
    }
    if (!isObject(store)) throw new StoreFileError('a store file must be a YAML map');
    return { model: loadModel(store, dirname(path)), tuples: collectTuples(store, dirname(path), 'store') };
  }
  return { model: modelFrom(undefined, basename(path), dirname(path)), tuples: undefined };
}

interface RelationChange {
  gained: string[];
  lost: string[];
}

function sharedRelations(a: AuthorizationModel, b: AuthorizationModel): { shared: string[]; onlyA: string[]; onlyB: string[] } {
  const names = (m: AuthorizationModel): string[] => (m.type_definitions ?? []).flatMap((td) => Object.keys(td.relations ?? {}).map((r) => `${td.type}#${r}`));
  const x = names(a);
  const y = new Set(names(b));
  return { shared: x.filter((r) => y.has(r)), onlyA: x.filter((r) => !y.has(r)), onlyB: [...y].filter((r) => !x.includes(r)) };
}

/** An engine of `model` on a memory store, for the given tuples. */
async function engineWithTuples(model: AuthorizationModel): Promise<Engine> {
  const engine = new Engine({ maxTuplesPerWrite: 1000, listObjectsMaxResults: 100_000 });
  await engine.writeModel(model);
  return engine;
}

/** Writes `tuples`, one by one after a refused batch; returns the tuples the model refused. */
async function writeAdmitted(engine: Engine, tuples: readonly TupleKey[]): Promise<TupleKey[]> {
  const refused: TupleKey[] = [];
  for (let i = 0; i < tuples.length; i += 1000) {
    const batch = tuples.slice(i, i + 1000);
    try {
      await engine.write({ writes: batch });
    } catch {
      for (const t of batch) await engine.write({ writes: [t] }).catch(() => refused.push(t));
    }
  }
  return refused;
}

async function runDiff(argv: string[], out: (s: string) => void, err: (s: string) => void): Promise<number> {
  const parsed = parseArgs(argv, ['tuples', 'must-not-change', 'seed', 'runs', 'examples']);
  if (typeof parsed === 'string' || parsed.positional.length !== 2) {
    err(`latchkey fga diff: ${typeof parsed === 'string' ? parsed : 'give two models: OLD NEW'}\n\n${HELP}`);
    return 2;
  }
  const num = (name: string, def: number | undefined, min: number): number | undefined | string => {
    const v = parsed.flags[name];
    if (v === undefined) return def;
    const n = Number(v);
    return Number.isSafeInteger(n) && n >= min ? n : `--${name} must be an integer of at least ${min}`;
  };
  const seed = num('seed', undefined, Number.MIN_SAFE_INTEGER);
  const runs = num('runs', 200, 0);
  const examples = num('examples', 3, 0);
  for (const v of [seed, runs, examples]) {
    if (typeof v === 'string') {
      err(`latchkey fga diff: ${v}\n`);
      return 2;
    }
  }
  const [oldPath, newPath] = parsed.positional.map((p) => resolve(p)) as [string, string];
  let oldModel: AuthorizationModel;
  let newModel: AuthorizationModel;
  let given: TupleKey[] | undefined;
  let at = oldPath;
  try {
    const o = loadModelOrStore(oldPath);
    at = newPath;
    const n = loadModelOrStore(newPath);
    oldModel = o.model;
    newModel = n.model;
    given = o.tuples;
    const tuplesFlag = parsed.flags['tuples'];
    if (tuplesFlag !== undefined) {
      at = resolve(tuplesFlag);
      given = /\.ya?ml$/iu.test(at) && !Array.isArray(parseYaml(readText(at, 'tuple file'))) ? loadModelOrStore(at).tuples : loadTupleFile(at);
    }
  } catch (e) {
    err(`${at}: ${e instanceof StoreFileError ? e.message : describeError(e)}\n`);
    return 1;
  }
  const { shared, onlyA, onlyB } = sharedRelations(oldModel, newModel);
  const mustNotChange = (parsed.flags['must-not-change'] ?? '').split(',').map((r) => r.trim()).filter((r) => r !== '');
  for (const r of mustNotChange) {
    if (!shared.includes(r)) {
      err(`latchkey fga diff: --must-not-change: '${r}' is not a relation of both models\n`);
      return 2;
    }
  }
  if (onlyA.length > 0) out(`only in the old model: ${onlyA.join(', ')}\n`);
  if (onlyB.length > 0) out(`only in the new model: ${onlyB.join(', ')}\n`);
  const broken = new Set<string>();
  const show = (changes: Map<string, RelationChange>, what: string): void => {
    const changed = shared.filter((r) => (changes.get(r)?.gained.length ?? 0) + (changes.get(r)?.lost.length ?? 0) > 0);
    out(`${what}: ${changed.length === 0 ? 'no answer changes' : `${changed.length} relation${changed.length === 1 ? '' : 's'} change`}\n`);
    for (const r of changed) {
      const c = changes.get(r)!;
      const guard = mustNotChange.includes(r);
      if (guard) broken.add(r);
      out(`  ${r}: ${c.gained.length} gained, ${c.lost.length} lost${guard ? '  (must not change)' : ''}\n`);
      for (const x of c.gained.slice(0, examples as number)) out(`    + ${x}\n`);
      for (const x of c.lost.slice(0, examples as number)) out(`    - ${x}\n`);
    }
  };

  try {
    if (given !== undefined) {
      const oldEngine = await engineWithTuples(oldModel);
      const newEngine = await engineWithTuples(newModel);
      const refusedOld = await writeAdmitted(oldEngine, given);
      const refusedNew = await writeAdmitted(newEngine, given);
      if (refusedOld.length > 0) out(`the old model does not admit ${refusedOld.length} of the tuples (left out), e.g. ${refusedOld[0]!.object}#${refusedOld[0]!.relation}@${refusedOld[0]!.user}\n`);
      if (refusedNew.length > 0) out(`the new model does not admit ${refusedNew.length} of the tuples (left out), e.g. ${refusedNew[0]!.object}#${refusedNew[0]!.relation}@${refusedNew[0]!.user}\n`);
      const users = [...new Set(given.map((t) => t.user).filter((u) => !u.includes('#') && !u.endsWith(':*')))].sort();
      const changes = new Map<string, RelationChange>();
      let undecided = 0;
      for (const r of shared) {
        const [type, relation] = r.split('#') as [string, string];
        const c: RelationChange = { gained: [], lost: [] };
        for (const user of users) {
          const list = async (engine: Engine): Promise<Set<string>> => {
            const res = await engine.listObjects({ user, relation, type, reportUndecided: true });
            undecided += res.undecided?.length ?? 0;
            return new Set(res.objects);
          };
          const before = await list(oldEngine);
          const after = await list(newEngine);
          for (const o of after) if (!before.has(o)) c.gained.push(`${user} ${relation} ${o}`);
          for (const o of before) if (!after.has(o)) c.lost.push(`${user} ${relation} ${o}`);
        }
        changes.set(r, c);
      }
      show(changes, `on the given ${given.length} tuples (${users.length} users)`);
      if (undecided > 0) out(`  (${undecided} answers left undecided: conditions without a request context)\n`);
    }

    if ((runs as number) > 0) {
      const impact = await diffModels(oldModel, newModel, { numRuns: runs as number, ...(seed === undefined ? {} : { seed: seed as number }) });
      const changed = impact.relations.filter((r) => r.gained + r.lost > 0);
      out(`on ${impact.numRuns} generated stores (seed ${impact.seed}): ${changed.length === 0 ? 'no answer changes' : `${changed.length} relation${changed.length === 1 ? '' : 's'} change`}\n`);
      for (const r of changed) {
        const guard = mustNotChange.includes(r.relation);
        if (guard) broken.add(r.relation);
        out(`  ${r.relation}: ${r.gained} gained in ${r.storesGaining} stores, ${r.lost} lost in ${r.storesLosing} stores${guard ? '  (must not change)' : ''}\n`);
        const ce = r.example;
        if (ce?.check !== undefined && (examples as number) > 0) {
          out(`    smallest example: ${ce.check.actual === true ? '+' : '-'} ${ce.check.user} ${ce.check.relation} ${ce.check.object} (old ${JSON.stringify(ce.check.expected)}, new ${JSON.stringify(ce.check.actual)}) with ${ce.tuples.length} tuple${ce.tuples.length === 1 ? '' : 's'}:\n`);
          for (const t of ce.tuples) out(`      ${t.object}#${t.relation}@${t.user}${t.condition === undefined ? '' : ` with ${t.condition.name}${t.condition.context === undefined ? '' : ` ${JSON.stringify(t.condition.context)}`}`}\n`);
          if (Object.keys(ce.context).length > 0) out(`      context ${JSON.stringify(ce.context)}\n`);
        }
      }
    }
  } catch (e) {
    err(`latchkey fga diff: ${describeError(e)}\n`);
    return 1;
  }
  if (broken.size > 0) {
    err(`latchkey fga diff: ${[...broken].join(', ')} must not change, and ${broken.size === 1 ? 'does' : 'do'}\n`);
    return 1;
  }
  return 0;
}

// ------------------------------------------------------------------ bench

/** The figures an earlier `latchkey fga bench --json` wrote. */
function readBaseline(path: string): BenchFigures {
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(path, 'utf8'));
  } catch (e) {
    throw new StoreFileError(`not a baseline written by \`latchkey fga bench --json\`: ${e instanceof Error ? e.message : String(e)}`);
  }
  const f = parsed as Partial<BenchFigures>;
  if (typeof f !== 'object' || f === null || typeof f.seed !== 'number' || typeof f.tuples !== 'number' || typeof f.queries !== 'number' || !Array.isArray(f.runs)) {
    throw new StoreFileError('not a baseline written by `latchkey fga bench --json` (seed, tuples, queries and runs expected)');
  }
  return f as BenchFigures;
}

async function benchCommand(argv: string[], out: (s: string) => void, err: (s: string) => void): Promise<number> {
  const parsed = parseArgs(argv, ['scale', 'generate', 'ids-per-type', 'queries', 'store', 'against', 'json', 'seed', 'baseline', 'max-slowdown']);
  if (typeof parsed === 'string' || parsed.positional.length !== 1) {
    err(`latchkey fga bench: ${typeof parsed === 'string' ? parsed : 'give one store file (FILE.fga.yaml)'}\n\n${HELP}`);
    return 2;
  }
  const options: BenchOptions = {};
  const numbers: [string, 'scale' | 'generate' | 'idsPerType' | 'queries' | 'seed', number][] = [['scale', 'scale', 1], ['generate', 'generate', 1], ['ids-per-type', 'idsPerType', 1], ['queries', 'queries', 1], ['seed', 'seed', 0]];
  for (const [flag, key, min] of numbers) {
    const v = parsed.flags[flag];
    if (v === undefined) continue;
    const n = Number(v);
    if (!Number.isSafeInteger(n) || n < min) {
      err(`latchkey fga bench: --${flag} must be an integer of at least ${min}\n`);
      return 2;
    }
    options[key] = n;
  }
  if (parsed.flags['store'] !== undefined) options.store = parsed.flags['store'];
  if (parsed.flags['json'] !== undefined) options.json = resolve(parsed.flags['json']);
  if (parsed.flags['max-slowdown'] !== undefined) {
    const r = Number(parsed.flags['max-slowdown']);
    if (!Number.isFinite(r) || r < 1 || parsed.flags['baseline'] === undefined) {
      err('latchkey fga bench: --max-slowdown takes a factor of at least 1, with --baseline\n');
      return 2;
    }
    options.maxSlowdown = r;
  }
  const file = resolve(parsed.positional[0]!);
  let at = file;
  try {
    if (parsed.flags['baseline'] !== undefined) {
      at = resolve(parsed.flags['baseline']);
      options.baseline = readBaseline(at);
      at = file;
    }
    const main = loadModelOrStore(file);
    let against: { name: string; model: AuthorizationModel } | undefined;
    if (parsed.flags['against'] !== undefined) {
      at = resolve(parsed.flags['against']);
      against = { name: basename(at), model: loadModelOrStore(at).model };
    }
    return await runBench({ name: basename(file), model: main.model }, main.tuples ?? [], against, options, out, err);
  } catch (e) {
    err(`${at}: ${e instanceof StoreFileError ? e.message : describeError(e)}\n`);
    return 1;
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
  if (command === 'diff') return runDiff(rest, out, err);
  if (command === 'bench') return benchCommand(rest, out, err);
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
