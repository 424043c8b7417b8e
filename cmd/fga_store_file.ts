/**
 * Reading OpenFGA CLI store files and the files they name, for the
 * `latchkey fga` subcommands (cmd/fga_command.ts, cmd/fga_diff_command.ts,
 * cmd/fga_bench_command.ts): tuples (YAML, JSON, CSV), models (inline DSL,
 * `.fga`, `.json`, `fga.mod`), the subcommands' flags, and the messages of
 * what they refuse.
 */
import { readFileSync } from 'node:fs';
import { basename, dirname, extname, resolve } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { LatchkeyError, type AuthorizationModel, type TupleKey } from '../engine/index.ts';
import { loadModularModel, transformDslToModel } from '../dsl/index.ts';

/** YAML 1.2, as the OpenFGA CLI reads it; the one module of `latchkey fga` that imports the library. */
export { parseYaml };

export class StoreFileError extends Error {}

export type Json = Record<string, unknown>;

export function isObject(v: unknown): v is Json {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

export function readText(path: string, what: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (err) {
    throw new StoreFileError(`cannot read ${what} '${path}': ${(err as NodeJS.ErrnoException).code ?? String(err)}`);
  }
}

export function describeError(err: unknown): string {
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

export function tupleFromRecord(v: unknown, where: string): TupleKey {
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

export function splitCsvLine(line: string): string[] {
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
export function tuplesFromCsv(text: string, where: string): TupleKey[] {
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

export function loadTupleFile(path: string): TupleKey[] {
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

export function collectTuples(node: Json, base: string, where: string): TupleKey[] {
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

export function loadModel(store: Json, base: string): AuthorizationModel {
  return modelFrom(store['model'], store['model_file'], base);
}

export function modelFrom(inline: unknown, file: unknown, base: string): AuthorizationModel {
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

/** `--name value` / `--name=value` for the named flags, the rest positional; a string is the usage error. */
export function parseArgs(argv: string[], names: readonly string[]): { positional: string[]; flags: Record<string, string> } | string {
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
export function loadModelOrStore(path: string): { model: AuthorizationModel; tuples: TupleKey[] | undefined } {
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
