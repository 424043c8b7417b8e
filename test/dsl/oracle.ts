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

