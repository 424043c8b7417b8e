/**
 * Test helper: OpenFGA's own JS language package (`@openfga/syntax-transformer`,
 * a devDependency) as the oracle of differential tests, plus JSON normalisation.
 * Used only by tests and benchmarks, never by dsl/.
 */
import { createRequire } from 'node:module';
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
