/**
 * Modular models (schema 1.2): `module` files combined through an `fga.mod`
 * manifest, following OpenFGA's `modules-to-model.ts` and `mod-to-json.ts`
 * (openfga/language). Each file is parsed on its own; types keep their
 * module and source file in metadata; `extend type X` adds relations to a
 * type defined in another file; the combined model is validated as a whole
 * and each diagnostic names its file.
 */
import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import type { AuthorizationModel, Condition, TypeDefinition } from '../engine/model.ts';
import { LatchkeyError } from '../engine/errors.ts';
import { diagnostic, type DslDiagnostic, type SourceSpan } from './diagnostics.ts';
import { parseSyntax } from './syntax.ts';
import { placeModelProblem, runModelCheck, validateModel, type Locator, type ModelCheck } from './validator.ts';
import { emptySourceIndex, setOwn, tokenSpan, type SourceIndex } from './visitor.ts';

/** One module file: its name as listed in `fga.mod` and its text. */
export type ModuleFile = { name: string; contents: string };

/** The parsed `fga.mod` manifest. */
export type ModManifest = { schema: string; contents: string[] };

/** Result of combining module files; `model` is undefined when there are errors. */
export type ModularParseResult = { model: AuthorizationModel | undefined; errors: DslDiagnostic[] };

function unquote(s: string): string {
  const t = s.trim();
  if ((t.startsWith("'") && t.endsWith("'")) || (t.startsWith('"') && t.endsWith('"'))) return t.slice(1, -1);
  return t;
}

/**
 * Parses an `fga.mod` manifest: `schema: '1.2'` and `contents:` as a block
 * list (`- a.fga`) or a flow list (`[a.fga, b.fga]`). Only the subset of
 * YAML these two keys need is read; `#` comments are ignored. Errors are
 * OpenFGA's: `missing schema field`, `unsupported schema version, fga.mod only
 * supported in version \`1.2\``, `missing contents field`, non-`.fga` entries,
 * and paths that leave the manifest's folder.
 */
export function parseModManifest(text: string): { manifest: ModManifest | undefined; errors: DslDiagnostic[] } {
  const errors: DslDiagnostic[] = [];
  const lines = text.split('\n');
  let schema: { value: string; span: SourceSpan } | undefined;
  let contents: Array<{ value: string; span: SourceSpan }> | undefined;
  let inContents = false;
  for (let i = 0; i < lines.length; i++) {
    const raw = (lines[i] as string).replace(/\s+#.*$/, '').replace(/\r$/, '');
    if (raw.trim() === '' || raw.trim().startsWith('#')) continue;
    const key = /^([A-Za-z_]+)\s*:\s*(.*)$/.exec(raw);
    if (key) {
      inContents = false;
      const [, name, rest = ''] = key;
      const span = { line: i, column: raw.indexOf(rest), length: rest.length };
      if (name === 'schema') schema = { value: unquote(rest), span };
      else if (name === 'contents') {
        contents = [];
        if (rest.trim().startsWith('[')) {
          for (const item of rest.trim().replace(/^\[|\]$/g, '').split(',')) {
            if (item.trim() !== '') contents.push({ value: unquote(item), span });
          }
        } else inContents = true;
      }
      continue;
    }
    const item = /^\s*-\s*(.*)$/.exec(raw);
    if (item && inContents && contents) {
      const value = item[1] ?? '';
      contents.push({ value: unquote(value), span: { line: i, column: raw.indexOf(value), length: value.length } });
    }
  }
  if (!schema) errors.push(diagnostic('fga-mod', 'missing schema field', undefined));
  else if (schema.value !== '1.2') {
    errors.push(diagnostic('fga-mod', 'unsupported schema version, fga.mod only supported in version `1.2`', schema.span));
  }
  if (!contents) errors.push(diagnostic('fga-mod', 'missing contents field', undefined));
  const files: string[] = [];
  for (const c of contents ?? []) {
    const name = c.value.replace(/%2e/gi, '.').replace(/%2f/gi, '/').replace(/%5c/gi, '\\');
    if (name.includes('../') || name.includes('..\\') || name.startsWith('/')) {
      errors.push(diagnostic('fga-mod', `invalid contents item ${c.value}`, c.span));
    } else if (!name.endsWith('.fga')) {
      errors.push(diagnostic('fga-mod', `contents items should use fga file extension, got ${c.value}`, c.span));
    } else files.push(name);
  }
  if (errors.length > 0 || !schema) return { manifest: undefined, errors };
  return { manifest: { schema: schema.value, contents: files }, errors };
}

/**
 * Combines module files into one schema 1.2 model. Never throws on model
 * errors; returns all diagnostics, each with its `file`. A model without
 * them must also pass `check` (see `ModelCheck`); its refusal is the one
 * diagnostic.
 */
export function parseModules(files: ModuleFile[], check?: ModelCheck): ModularParseResult {
  const errors: DslDiagnostic[] = [];
  const typeDefs: TypeDefinition[] = [];
  const conditions = new Map<string, Condition>();
  const extensions: Array<{ file: string; td: TypeDefinition; source: SourceIndex }> = [];
  const sources = new Map<string, SourceIndex>();
  const fileOfObject = new WeakMap<object, string>();

  for (const { name, contents } of files) {
    const { visited, errors: syntaxErrors } = parseSyntax(contents);
    for (const e of syntaxErrors) errors.push({ ...e, file: name });
    if (!visited || syntaxErrors.length > 0) continue;
    if (!visited.isModule) {
      errors.push(diagnostic('module', 'file is not a module', undefined, name));
      continue;
    }
    sources.set(name, visited.source);
    for (const td of visited.model.type_definitions ?? []) {
      if (visited.extensions.has(td)) {
        extensions.push({ file: name, td, source: visited.source });
        continue;
      }
      td.metadata = { ...td.metadata, source_info: { file: name } };
      fileOfObject.set(td, name);
      typeDefs.push(td);
    }
    for (const [cname, condition] of Object.entries(visited.model.conditions ?? {})) {
      if (conditions.has(cname)) {
        errors.push(diagnostic('module', `duplicate condition ${cname}`, tokenSpan(visited.source.conditionName.get(cname)), name));
        continue;
      }
      condition.metadata = { ...condition.metadata, source_info: { file: name } };
      fileOfObject.set(condition, name);
      conditions.set(cname, condition);
    }
  }

  for (const { file, td, source } of extensions) {
    const original = typeDefs.find((t) => t.type === td.type);
    if (!original) {
      errors.push(diagnostic('module', `extended type ${td.type} does not exist`, tokenSpan(source.typeName.get(td)), file));
      continue;
    }
    const relNames = source.relationName.get(td);
    original.relations ??= {};
    original.metadata ??= {};
    original.metadata.relations ??= {};
    for (const [rel, def] of Object.entries(td.relations ?? {})) {
      if (Object.hasOwn(original.relations, rel)) {
        errors.push(diagnostic('module', `relation ${rel} already exists on type ${td.type}`, tokenSpan(relNames?.get(rel)), file));
        continue;
      }
      const meta = { ...td.metadata?.relations?.[rel], source_info: { file } };
      fileOfObject.set(meta, file);
      setOwn(original.relations, rel, def);
      setOwn(original.metadata.relations, rel, meta);
      // Diagnostics about this relation point into the extending file.
      const origSpans = sources.get(fileOfObject.get(original) ?? '')?.relationName.get(original);
      const span = relNames?.get(rel);
      if (origSpans && span) origSpans.set(rel, span);
    }
  }

  const model: AuthorizationModel = {
    schema_version: '1.2',
    type_definitions: typeDefs,
    conditions: {},
  };
  for (const [name, c] of conditions) setOwn(model.conditions as Record<string, Condition>, name, c);
  const loc = combinedLocator(sources, extensions, fileOfObject, model);
  errors.push(...validateModel(model, loc));
  if (errors.length > 0) return { model: undefined, errors };
  const problem = runModelCheck(check, model);
  return problem === undefined ? { model, errors } : { model: undefined, errors: [placeModelProblem(model, problem, loc)] };
}

/** Where diagnostics of the combined model point: positions from every file's source index, and each object's file. */
function combinedLocator(
  sources: Map<string, SourceIndex>,
  extensions: Array<{ file: string; td: TypeDefinition; source: SourceIndex }>,
  fileOfObject: WeakMap<object, string>,
  model: AuthorizationModel,
): Locator {
  const merged = emptySourceIndex();
  // Look spans up across all files' indexes.
  const all = [...sources.values(), ...extensions.map((e) => e.source)];
  const lookup = <K extends object, V>(pick: (s: SourceIndex) => Map<K, V>) => ({
    get: (k: K): V | undefined => {
      for (const s of all) {
        const v = pick(s).get(k);
        if (v !== undefined) return v;
      }
      return undefined;
    },
  });
  const view = {
    ...merged,
    node: lookup((s) => s.node),
    tupleset: lookup((s) => s.tupleset),
    restrictionType: lookup((s) => s.restrictionType),
    restrictionEnd: lookup((s) => s.restrictionEnd),
    restrictionCondition: lookup((s) => s.restrictionCondition),
    typeName: lookup((s) => s.typeName),
    relationName: lookup((s) => s.relationName),
  } as unknown as SourceIndex;
  for (const [name, c] of Object.entries(model.conditions ?? {})) {
    const span = sources.get(fileOfObject.get(c) ?? '')?.conditionName.get(name);
    if (span) view.conditionName.set(name, span);
  }
  return { source: view, fileOf: (o) => fileOfObject.get(o) };
}

/** Reads an `fga.mod` manifest and its files from disk and combines them (`check` as for `parseModules`). Never throws on model errors. */
export function loadModules(fgaModPath: string, check?: ModelCheck): ModularParseResult {
  let manifestText: string;
  try {
    manifestText = readFileSync(fgaModPath, 'utf8');
  } catch (cause) {
    throw new LatchkeyError('not_found', `cannot read ${fgaModPath}`, { reason: 'fga_mod_not_found', cause });
  }
  const { manifest, errors } = parseModManifest(manifestText);
  if (!manifest) return { model: undefined, errors: errors.map((e) => ({ ...e, file: 'fga.mod' })) };
  const base = dirname(resolve(fgaModPath));
  const files: ModuleFile[] = [];
  const readErrors: DslDiagnostic[] = [];
  for (const name of manifest.contents) {
    try {
      files.push({ name, contents: readFileSync(resolve(base, name), 'utf8') });
    } catch {
      readErrors.push(diagnostic('fga-mod', `cannot read module file ${name}`, undefined, 'fga.mod'));
    }
  }
  if (readErrors.length > 0) return { model: undefined, errors: readErrors };
  return parseModules(files, check);
}
