/**
 * The OpenFGA modeling language: parse, validate and print authorization
 * models, and combine modular models (`fga.mod`).
 *
 * Accepts exactly OpenFGA's DSL (schema 1.1 and 1.2) and produces OpenFGA's
 * JSON authorization model. Diagnostics use 0-based lines and columns with an
 * exclusive end column, like OpenFGA's language tools (see {@link DslDiagnostic}).
 *
 * @module
 */
import type { AuthorizationModel } from '../engine/model.ts';
import { LatchkeyError } from '../engine/errors.ts';
import type { DslDiagnostic } from './diagnostics.ts';
import { loadModules, parseModManifest, parseModules, type ModManifest, type ModuleFile } from './modules.ts';
import { parseSyntax, stripComments } from './syntax.ts';
import { placeModelProblem, runModelCheck, validateModel, type ModelCheck } from './validator.ts';

export type { DslDiagnostic } from './diagnostics.ts';
export type { ModelCheck } from './validator.ts';
export type { ModManifest, ModuleFile } from './modules.ts';
export { printModel, type PrintOptions } from './printer.ts';
export { parseModManifest, stripComments };

/** Result of {@link parseDsl}: the model when the text is valid, and every diagnostic. */
export type DslParseResult = { model: AuthorizationModel | undefined; errors: DslDiagnostic[] };

/** Options of {@link parseDsl}, {@link parseModularDsl} and {@link checkModularModel}: `check` also runs a {@link ModelCheck} on a model the DSL accepts. */
export type DslCheckOptions = { check?: ModelCheck | undefined };

function invalid(errors: DslDiagnostic[]): LatchkeyError {
  const first = errors[0];
  if (first?.kind === 'internal') {
    // A bug in the parser, not a problem of the model: surfaces as `internal`.
    return new LatchkeyError('internal', 'internal error while parsing the model');
  }
  return new LatchkeyError('invalid_argument', first ? first.message : 'invalid model', {
    reason: 'invalid_dsl',
    details: { errors },
  });
}

function guarded(run: () => DslParseResult): DslParseResult {
  try {
    return run();
  } catch (cause) {
    // Any failure inside the parser is a bug; report it as a diagnostic
    // instead of crashing the caller, since parseDsl promises never to throw.
    const message = cause instanceof Error ? `internal parser error: ${cause.message}` : 'internal parser error';
    return {
      model: undefined,
      errors: [{ kind: 'internal', message, line: { start: 0, end: 0 }, column: { start: 0, end: 0 } }],
    };
  }
}

/**
 * Parses and validates one DSL text (a `model` file). Never throws, on any
 * input. `model` is set only when there are no diagnostics. With
 * `options.check`, a model the DSL accepts must also pass that check (see
 * {@link ModelCheck}); its refusal is the one diagnostic.
 *
 * A `module` file parsed alone has no schema version and is reported with
 * `schema-version-required`; combine module files with
 * {@link transformModulesToModel} or {@link loadModularModel}.
 */
export function parseDsl(text: string, options: DslCheckOptions = {}): DslParseResult {
  return guarded(() => {
    const source = String(text);
    // Fast path: build and validate without positions; only an invalid model
    // is parsed again with positions to place its diagnostics.
    const { visited, errors } = parseSyntax(source, false);
    if (!visited || errors.length > 0) return { model: undefined, errors };
    if (validateModel(visited.model).length === 0) {
      const problem = runModelCheck(options.check, visited.model);
      if (problem === undefined) return { model: visited.model, errors: [] };
      const tracked = parseSyntax(source, true).visited;
      return { model: undefined, errors: [tracked ? placeModelProblem(tracked.model, problem, { source: tracked.source }) : placeModelProblem(visited.model, problem, { source: undefined })] };
    }
    const tracked = parseSyntax(source, true).visited;
    return { model: undefined, errors: tracked ? validateModel(tracked.model, { source: tracked.source, lines: source.split('\n') }) : [] };
  });
}

/**
 * Syntax only: turns DSL text into the JSON model without the semantic
 * validation (undefined types, entry points, ...), as OpenFGA's
 * `transformDSLToJSONObject` does. Never throws.
 */
export function parseDslSyntax(text: string): DslParseResult {
  return guarded(() => {
    const { visited, errors } = parseSyntax(String(text));
    if (!visited || errors.length > 0) return { model: undefined, errors };
    return { model: visited.model, errors: [] };
  });
}

/** All diagnostics of a DSL text; empty when the model is valid. Never throws. */
export function validateDsl(text: string): DslDiagnostic[] {
  return parseDsl(text).errors;
}

/**
 * DSL text → OpenFGA JSON authorization model.
 *
 * @throws LatchkeyError `invalid_argument`, reason `invalid_dsl`, with the first
 *   diagnostic's message and `details.errors` holding every {@link DslDiagnostic};
 *   `internal` only if the parser itself fails (a bug).
 */
export function transformDslToModel(text: string): AuthorizationModel {
  const { model, errors } = parseDsl(text);
  if (!model) throw invalid(errors);
  return model;
}

/**
 * Module files → one schema 1.2 model, as OpenFGA combines them. The
 * optional manifest (from {@link parseModManifest}) only orders and filters
 * the files: files it does not list are ignored.
 *
 * @throws LatchkeyError `invalid_argument`, reason `invalid_dsl`, with every
 *   diagnostic (each carrying its `file`) in `details.errors`.
 */
export function transformModulesToModel(files: ModuleFile[], manifest?: ModManifest): AuthorizationModel {
  const { model, errors } = parseModularDsl(files, manifest);
  if (!model) throw invalid(errors);
  return model;
}

/** Like {@link transformModulesToModel} but never throws: returns the model or the diagnostics (`options.check` as for {@link parseDsl}). */
export function parseModularDsl(files: ModuleFile[], manifest?: ModManifest, options: DslCheckOptions = {}): DslParseResult {
  return guarded(() => {
    let ordered = files;
    if (manifest) {
      const byName = new Map(files.map((f) => [f.name, f]));
      ordered = manifest.contents.flatMap((n) => {
        const f = byName.get(n);
        return f ? [f] : [];
      });
    }
    return parseModules(ordered, options.check);
  });
}

/**
 * Reads `fga.mod` at `fgaModPath`, then the `.fga` files it lists (relative to
 * its folder), and combines them.
 *
 * @throws LatchkeyError `not_found` (reason `fga_mod_not_found`) when the
 *   manifest cannot be read; `invalid_argument` (reason `invalid_dsl`) when the
 *   manifest or the modules are invalid, with every diagnostic in `details.errors`.
 */
export function loadModularModel(fgaModPath: string): AuthorizationModel {
  const { model, errors } = loadModules(fgaModPath);
  if (!model) throw invalid(errors);
  return model;
}

/** Like {@link loadModularModel} but returns diagnostics instead of throwing on invalid models (`options.check` as for {@link parseDsl}). */
export function checkModularModel(fgaModPath: string, options: DslCheckOptions = {}): DslParseResult {
  return loadModules(fgaModPath, options.check);
}
