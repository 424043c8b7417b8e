/**
 * Test helper: OpenFGA's own JS language package (`@openfga/syntax-transformer`,
 * a devDependency) as the oracle of differential tests, plus JSON normalisation.
 * Used only by tests and benchmarks, never by dsl/.
 */
import { createRequire } from 'node:module';
import { parseDsl, parseDslSyntax } from '../../dsl/index.ts';
import type { AuthorizationModel } from '../../engine/model.ts';

type Transformer = {
  validator: { validateDSL(dsl: string): void };
  transformer: {
    transformDSLToJSONObject(dsl: string): unknown;
    transformJSONToDSL(model: unknown): string;
    transformModuleFilesToModel(files: Array<{ name: string; contents: string }>, schemaVersion: string): unknown;
  };
};

/** The reference implementation (CommonJS). */
export const reference = createRequire(import.meta.url)('@openfga/syntax-transformer') as Transformer;

/** What the reference says about a DSL text. */
export type OracleResult =
  | { verdict: 'accepted'; model: unknown }
  | { verdict: 'rejected'; errors: Array<{ msg?: string }> }
  | { verdict: 'crashed'; error: string };

/** Validates (syntax + semantics) and transforms with the reference. */
export function oracle(text: string): OracleResult {
  try {
    reference.validator.validateDSL(text);
  } catch (e) {
    const err = e as { name?: string; errors?: Array<{ msg?: string }>; message?: string };
    if (Array.isArray(err.errors)) return { verdict: 'rejected', errors: err.errors };
    return { verdict: 'crashed', error: String(err.message ?? e) };
  }
  return { verdict: 'accepted', model: reference.transformer.transformDSLToJSONObject(text) };
}

/** Syntax-only transform with the reference (no semantic validation); undefined when it rejects. */
export function oracleSyntax(text: string): unknown {
  try {
    return reference.transformer.transformDSLToJSONObject(text);
  } catch {
    return undefined;
  }
}

/** JSON with sorted keys and `undefined` fields dropped, for comparing models. */
export function normalize(value: unknown): string {
  return JSON.stringify(value, (_k, v: unknown) =>
    v && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : v,
  );
}

/** True when a model has a tuple-to-userset whose tupleset restriction carries a condition (the reference crashes on those). */
export function hasConditionalTupleset(model: AuthorizationModel | unknown): boolean {
  const m = model as AuthorizationModel;
  for (const td of m.type_definitions ?? []) {
    const text = JSON.stringify(td.relations ?? {});
    for (const match of text.matchAll(/"tupleset":\{"relation":"([^"]+)"\}/g)) {
      const refs = td.metadata?.relations?.[match[1] as string]?.directly_related_user_types ?? [];
      if (refs.some((r) => r.condition)) return true;
    }
  }
  return false;
}

/**
 * True when a module file extends a type that ends up with no relations at
 * all (the type and every extension of it define none). The reference crashes
 * on those (it reads the relations metadata of an extension that has none);
 * OpenFGA's server merges them into a type without relations.
 */
export function extendsRelationlessType(files: ReadonlyArray<{ contents: string }>, model: AuthorizationModel | unknown): boolean {
  const m = model as AuthorizationModel;
  for (const f of files) {
    for (const match of f.contents.matchAll(/^\s*extend\s+type\s+(\S+)/gm)) {
      const td = m.type_definitions?.find((t) => t.type === match[1]);
      if (td !== undefined && Object.keys(td.relations ?? {}).length === 0) return true;
    }
  }
  return false;
}

/**
 * Compares our verdict and model with the reference's, both after the syntax
 * checks alone (OpenFGA's `transformDSLToJSONObject`, which also gives JSON
 * for semantically invalid models) and after full validation; returns a
 * description of any disagreement.
 */
export function disagreement(text: string): string | undefined {
  const refSyntax = oracleSyntax(text);
  const oursSyntax = parseDslSyntax(text).model;
  if ((refSyntax === undefined) !== (oursSyntax === undefined)) {
    return refSyntax === undefined ? 'reference rejects the syntax, we accept it' : 'reference accepts the syntax, we reject it';
  }
  if (refSyntax !== undefined && normalize(refSyntax) !== normalize(oursSyntax)) {
    return `syntax-only models differ:\n${normalize(oursSyntax)}\n${normalize(refSyntax)}`;
  }
  const ref = oracle(text);
  const ours = parseDsl(text);
  if (ref.verdict === 'crashed') {
    if (ours.model && hasConditionalTupleset(ours.model)) return undefined;
    if (!ours.model) return undefined;
    return `reference crashed (${ref.error}) on a model we accept without a conditional tupleset`;
  }
  if (ref.verdict === 'accepted') {
    if (!ours.model) return `reference accepts, we reject: ${JSON.stringify(ours.errors)}`;
    if (normalize(ours.model) !== normalize(ref.model)) return `models differ:\n${normalize(ours.model)}\n${normalize(ref.model)}`;
    return undefined;
  }
  if (ours.model) return `reference rejects (${JSON.stringify(ref.errors.map((e) => e.msg))}), we accept`;
  return undefined;
}


/** OpenFGA's server refusal of a relation: its type, relation and cause (`InvalidRelationError`). */
export type ServerRefusal = { type: string; relation: string; cause: 'invalid_userset_rewrite' | 'no_entrypoints' | 'no_entrypoints_loop' | 'cycle' };

type Rw = Record<string, unknown>;

/**
 * The relation rules that OpenFGA's server adds to the language validator's
 * when a model is written (openfga/openfga `pkg/typesystem/typesystem.go`,
 * `NewAndValidate` → `validateRelation`), for a model the language validator
 * accepts: over types and then relations in sorted order, the first relation
 * that names itself in its rewrite (`isUsersetRewriteValid`), has no entry
 * point (`hasEntrypoints`: "no entrypoints defined", or "potential loop") or
 * reaches a cycle of computed usersets (`HasCycle`). Transcribed statement by
 * statement from the Go source, Go's maps included: `maps.Clone` copies one
 * level, so the visited set of one type is shared by the calls below the one
 * that made it. `HasCycle` is the path walk itself (exponential; test models
 * are small). Independent of engine/typesystem.ts by design.
 */
export function serverRefusal(model: AuthorizationModel): ServerRefusal | undefined {
  const relations = new Map<string, Record<string, Rw>>();
  const restrictions = (type: string, relation: string): Array<{ type: string; relation?: string; wildcard?: unknown }> =>
    (model.type_definitions ?? []).find((td) => td.type === type)?.metadata?.relations?.[relation]?.directly_related_user_types ?? [];
  for (const td of model.type_definitions ?? []) relations.set(td.type, (td.relations ?? {}) as unknown as Record<string, Rw>);
  const get = (type: string, relation: string): Rw | undefined => {
    const rels = relations.get(type);
    return rels !== undefined && Object.hasOwn(rels, relation) ? rels[relation] : undefined;
  };
  const children = (rw: Rw): Rw[] => {
    if (rw['union']) return (rw['union'] as { child: Rw[] }).child;
    if (rw['intersection']) return (rw['intersection'] as { child: Rw[] }).child;
    if (rw['difference']) return [(rw['difference'] as { base: Rw }).base, (rw['difference'] as { subtract: Rw }).subtract];
    return [];
  };
  const computed = (rw: Rw): string | undefined => (rw['computedUserset'] as { relation?: string } | undefined)?.relation;

  const namesItself = (relation: string, rw: Rw): boolean => computed(rw) === relation || children(rw).some((c) => namesItself(relation, c));

  type Visited = Map<string, Map<string, boolean>>;
  const hasEntrypoints = (typeName: string, relationName: string, rewrite: Rw, visitedRelations: Visited): [boolean, boolean] => {
    const v: Visited = new Map(visitedRelations);
    const val = v.get(typeName);
    if (val !== undefined) val.set(relationName, false);
    else v.set(typeName, new Map([[relationName, false]]));
    if (rewrite['this']) {
      for (const assignable of restrictions(typeName, relationName)) {
        if (assignable.relation === undefined || assignable.wildcard !== undefined) {
          v.get(typeName)!.set(relationName, true);
          return [true, false];
        }
        const next = get(assignable.type, assignable.relation)!;
        if (v.get(assignable.type)?.has(assignable.relation)) continue;
        if (hasEntrypoints(assignable.type, assignable.relation, next, v)[0]) return [true, false];
      }
      return [false, false];
    }
    const cu = computed(rewrite);
    if (cu !== undefined) {
      const known = v.get(typeName)?.get(cu);
      if (known !== undefined) return [known, true];
      return hasEntrypoints(typeName, cu, get(typeName, cu)!, v);
    }
    const ttu = rewrite['tupleToUserset'] as { tupleset: { relation: string }; computedUserset: { relation: string } } | undefined;
    if (ttu !== undefined) {
      for (const assignable of restrictions(typeName, ttu.tupleset.relation)) {
        const next = get(assignable.type, ttu.computedUserset.relation);
        if (next === undefined) continue;
        const known = v.get(assignable.type)?.get(ttu.computedUserset.relation);
        if (known !== undefined) {
          if (known) return [true, false];
          continue;
        }
        if (hasEntrypoints(assignable.type, ttu.computedUserset.relation, next, v)[0]) return [true, false];
      }
      return [false, false];
    }
    if (rewrite['union']) {
      let loop = false;
      for (const child of children(rewrite)) {
        const [has, childLoop] = hasEntrypoints(typeName, relationName, child, visitedRelations);
        if (has) return [true, false];
        loop = loop || childLoop;
      }
      return [false, loop];
    }
    for (const child of children(rewrite)) {
      // intersection: every child; difference: base, then subtract
      const [has, childLoop] = hasEntrypoints(typeName, relationName, child, visitedRelations);
      if (!has) return [false, childLoop];
    }
    return [true, false];
  };

  const hasCycle = (objectType: string, relationName: string, rewrite: Rw, visited: Set<string>): boolean => {
    visited.add(`${objectType}#${relationName}`);
    const visitedCopy = new Set(visited);
    if (rewrite['this'] || rewrite['tupleToUserset']) return false;
    const cu = computed(rewrite);
    if (cu !== undefined) {
      if (visited.has(`${objectType}#${cu}`)) return true;
      return hasCycle(objectType, cu, get(objectType, cu)!, visitedCopy);
    }
    return children(rewrite).some((c) => hasCycle(objectType, relationName, c, visitedCopy));
  };

  for (const type of [...relations.keys()].sort()) {
    for (const relation of Object.keys(relations.get(type)!).sort()) {
      const rw = get(type, relation)!;
      if (namesItself(relation, rw)) return { type, relation, cause: 'invalid_userset_rewrite' };
      const [has, loop] = hasEntrypoints(type, relation, rw, new Map());
      if (!has) return { type, relation, cause: loop ? 'no_entrypoints_loop' : 'no_entrypoints' };
      if (hasCycle(type, relation, rw, new Set())) return { type, relation, cause: 'cycle' };
    }
  }
  return undefined;
}

/** OpenFGA's ANTLR-generated lexer and parser, as shipped in `@openfga/syntax-transformer`. */
type AntlrToken = { type: number; text: string | null; line: number; column: number; channel: number };
type AntlrListener = {
  syntaxError(r: unknown, symbol: AntlrToken | null, line: number, column: number, message: string): void;
  reportAmbiguity(): void;
  reportAttemptingFullContext(): void;
  reportContextSensitivity(): void;
};
type AntlrRecognizer = { removeErrorListeners(): void; addErrorListener(l: AntlrListener): void };
const requireCjs = createRequire(import.meta.url);
// The ANTLR runtime the package itself loads.
const antlr = createRequire(requireCjs.resolve('@openfga/syntax-transformer'))('antlr4') as { InputStream: new (text: string) => unknown; CommonTokenStream: new (lexer: unknown) => unknown };
const OpenFGALexer = (requireCjs('@openfga/syntax-transformer/dist/gen/OpenFGALexer.js') as { default: new (input: unknown) => AntlrRecognizer & { getAllTokens(): AntlrToken[] } }).default;
const OpenFGAParser = (requireCjs('@openfga/syntax-transformer/dist/gen/OpenFGAParser.js') as { default: new (tokens: unknown) => AntlrRecognizer & { main(): unknown } }).default;

/** One error as OpenFGA's language package reports it: message, 0-based line, columns (end exclusive: start + the token's length). */
export type ReferenceSyntaxError = [message: string, line: number, start: number, end: number];

function collector(out: ReferenceSyntaxError[]): AntlrListener {
  return {
    syntaxError: (_r, symbol, line, column, message) => out.push([message, line - 1, column, column + (symbol?.text?.length ?? 0)]),
    reportAmbiguity: () => undefined,
    reportAttemptingFullContext: () => undefined,
    reportContextSensitivity: () => undefined,
  };
}

/** The lexer and parser errors of OpenFGA's ANTLR parser for a text (already through the comment pass), in its order. */
export function referenceSyntaxErrors(text: string): ReferenceSyntaxError[] {
  const out: ReferenceSyntaxError[] = [];
  const lexer = new OpenFGALexer(new antlr.InputStream(text));
  lexer.removeErrorListeners();
  lexer.addErrorListener(collector(out));
  const parser = new OpenFGAParser(new antlr.CommonTokenStream(lexer));
  parser.removeErrorListeners();
  parser.addErrorListener(collector(out));
  parser.main();
  return out;
}

/**
 * Every error OpenFGA's transformer reports for a text, in its order: the lexer's and parser's, then (when the
 * parser built a tree, even past a lexer error) its listener's checks (a relation or condition defined twice…).
 * Undefined when it accepts the text or fails without a list of errors.
 */
export function referenceTransformErrors(text: string): ReferenceSyntaxError[] | undefined {
  try {
    reference.transformer.transformDSLToJSONObject(text);
    return undefined;
  } catch (e) {
    const errors = (e as { errors?: Array<{ msg?: string; line?: { start: number }; column?: { start: number; end: number } }> }).errors;
    if (!Array.isArray(errors)) return undefined;
    return errors.map((x): ReferenceSyntaxError => [x.msg ?? '', x.line?.start ?? -1, x.column?.start ?? -1, x.column?.end ?? -1]);
  }
}

/** OpenFGA's lexer's tokens ([type, text, line, column, hidden]) and errors for a text. */
export function referenceTokens(text: string): { tokens: Array<[number, string, number, number, boolean]>; errors: ReferenceSyntaxError[] } {
  const errors: ReferenceSyntaxError[] = [];
  const lexer = new OpenFGALexer(new antlr.InputStream(text));
  lexer.removeErrorListeners();
  lexer.addErrorListener(collector(errors));
  const tokens = lexer.getAllTokens().map((t): [number, string, number, number, boolean] => [t.type, t.text ?? '', t.line, t.column, t.channel !== 0]);
  return { tokens, errors };
}
