/**
 * What `Engine.writeModel` takes in before it validates and stores a model
 * version: the input read as OpenFGA JSON or as DSL text (through
 * `@latchkey/engine/dsl`, loaded on first use), reduced to the model's own
 * fields and copied, and the new version's ULID id.
 *
 * Apart from engine/index.ts so that the DSL's lazy import and the id
 * rule live with the one call that needs them, outside the `Engine` class.
 */
import { decodeTime, monotonicFactory } from 'ulid';
import type { AuthorizationModel } from './model.ts';
import type { TupleStore } from './store.ts';
import { invalid } from './check/check_path.ts';
import type { ModelInput } from './engine_types.ts';

const nextModelId = monotonicFactory();

/**
 * The model of `input` (OpenFGA JSON, or `{ dsl }` text), its own fields
 * only, as a copy the caller owns. `invalid_argument` with reason
 * `invalid_authorization_model` for a non-object, `invalid_dsl` for bad DSL.
 */
export async function modelOf(input: ModelInput): Promise<AuthorizationModel> {
  if (input === null || typeof input !== 'object') throw invalid('the model must be an object', { reason: 'invalid_authorization_model', code: 2056 });
  let model: AuthorizationModel;
  if ('dsl' in input && !('schema_version' in input)) {
    if (typeof input.dsl !== 'string') throw invalid('dsl must be a string', { reason: 'invalid_dsl' });
    model = await dslToModel(input.dsl);
  } else {
    model = input as AuthorizationModel;
  }
  const clean: AuthorizationModel = { schema_version: model.schema_version, type_definitions: model.type_definitions ?? [] };
  if (model.conditions !== undefined && Object.keys(model.conditions).length > 0) clean.conditions = model.conditions;
  return structuredClone(clean);
}

/**
 * A new model id. Model ids must increase: monotonic within this process,
 * and above the latest stored id even if another writer's clock ran ahead.
 */
export async function newModelId(store: Pick<TupleStore, 'latestModelId'>): Promise<string> {
  let id = nextModelId();
  const latest = await store.latestModelId();
  if (latest !== undefined && id <= latest) id = nextModelId(decodeTime(latest) + 1);
  return id;
}

/** DSL text → model through `@latchkey/engine/dsl` (loaded on first use, so JSON-only users never load the parser). */
async function dslToModel(text: string): Promise<AuthorizationModel> {
  const { transformDslToModel } = await import('../dsl/index.ts');
  return transformDslToModel(text);
}
