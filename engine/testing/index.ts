/**
 * `@latchkey/engine/testing`: property-based tests of one's own
 * authorization model, with no server. fast-check arbitraries generate
 * stores valid for a model (types, relations, type restrictions with
 * usersets and wildcards, tuple-to-userset parents, conditions with context
 * values of their parameter types), biased toward deep and cyclic graphs;
 * properties over every user and object of a store are checked with the
 * engine, and a failing store is shrunk to the few tuples that cause it and
 * printed as a store-test case.
 *
 * Works from any test runner (node:test, ava, vitest, jest): a failing
 * {@link assertModelProperty} throws an `Error` whose message is the
 * counterexample. fast-check is a peer dependency: install it beside the
 * engine (`npm install --save-dev fast-check`).
 *
 * ```ts
 * import { assertModelProperty } from '@latchkey/engine/testing';
 * await assertModelProperty(dslText, { kind: 'implies', if: 'doc#editor', then: 'doc#viewer' }, { numRuns: 200 });
 * ```
 *
 * @module
 */
import type { AuthorizationModel } from '../model.ts';
import { transformDslToModel } from '../../dsl/index.ts';
import { checkModelProperty as checkCompiledModelProperty, type ModelProperty, type PropertyResult, type PropertyRunOptions } from './properties.ts';
import { describeFailure } from './store_case.ts';

export { buildUniverse, objectsOf, type IdsOption, type Slot, type Universe, type UniverseOptions } from './universe.ts';
export { parameterValue, sampleContexts, storeArbitrary, storesOf, tupleSetArbitrary, type GeneratedStore, type StoreOptions } from './arbitraries.ts';
export {
  engineFor,
  type Counterexample,
  type FailingCheck,
  type ModelProbe,
  type ModelProperty,
  type PredicateOutcome,
  type PropertyResult,
  type PropertyRunOptions,
  type RelationName,
} from './properties.ts';
export { describeFailure, storeTestCase } from './store_case.ts';
export { NaiveEvaluator } from './naive.ts';
export { diffModels, type ModelImpact, type RelationImpact } from './diff.ts';

/** A model given as OpenFGA JSON or as DSL text (parsed, `invalid_argument` with the DSL's diagnostics when invalid). */
export function toModel(model: AuthorizationModel | string): AuthorizationModel {
  return typeof model === 'string' ? transformDslToModel(model) : model;
}

/** Thrown by {@link assertModelProperty}: the message is the counterexample; `result` holds it as data. */
export class ModelPropertyError extends Error {
  readonly result: PropertyResult;
  constructor(message: string, result: PropertyResult) {
    super(message);
    this.name = 'ModelPropertyError';
    this.result = result;
  }
}

/**
 * Checks `property` of `model` (JSON or DSL) on `numRuns` generated stores;
 * on failure, shrinks the store to the fewest tuples that still fail and
 * returns it as the counterexample. Never throws for a failing property;
 * `invalid_argument` for a model, property or options that do not fit.
 */
export function checkModelProperty(model: AuthorizationModel | string, property: ModelProperty, options: PropertyRunOptions = {}): Promise<PropertyResult> {
  return checkCompiledModelProperty(toModel(model), property, options);
}

/**
 * Checks `property` of `model` (JSON or DSL) and throws a
 * {@link ModelPropertyError} when a generated store breaks it: the message
 * names the failing check with its expected and actual answer, the seed to
 * replay it, and the shrunk store as a store-test case. Resolves to the
 * result when the property holds.
 */
export async function assertModelProperty(model: AuthorizationModel | string, property: ModelProperty, options: PropertyRunOptions & { name?: string } = {}): Promise<PropertyResult> {
  const { name, ...runOptions } = options;
  const result = await checkModelProperty(model, property, runOptions);
  if (!result.ok) throw new ModelPropertyError(describeFailure(result, name ?? property.kind), result);
  return result;
}
