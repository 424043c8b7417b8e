/**
 * FGA administration over the engine: models (DSL in, DSL out), tuples,
 * ListUsers, Expand and reset. The engine enforces its own limits and
 * validation; this layer adds the DSL diagnostics with line and column, the
 * admin page-size rules and the wire shapes.
 */
import { LatchkeyError } from '../engine/errors.ts';
import { LISTING_DEADLINE_MS, TypeSystem, type AuthorizationModel, type CheckRequest, type Engine, type TupleCondition, type TupleKey } from '../engine/index.ts';

/** The DSL parser and printer, loaded on the first model operation (the grammar is the largest part of a server's startup). */
const dslModule = (): Promise<typeof import('../dsl/index.ts')> => import('../dsl/index.ts');

/** A relationship tuple as read, with its condition when it has one. */
export interface FgaTuple {
  user: string;
  relation: string;
  object: string;
  condition?: TupleCondition;
  /** When the tuple stops granting (RFC 3339, UTC); absent when it never does. */
  expires_at?: string;
}

/** A relationship tuple to write or delete (a deleted tuple's condition is ignored). */
export interface FgaTupleInput {
  user: string;
  relation: string;
  object: string;
  condition?: { name: string; context?: unknown } | undefined;
  /** RFC 3339 timestamp, in the future, at which the written tuple stops granting (ignored on deletes). */
  expires_at?: string | undefined;
}

/** The message of every FGA operation while FGA is not enabled (spec, Errors). */
export const FGA_DISABLED_MESSAGE = 'fga is not enabled on this server';

/** Largest `page_size` of `fga_read_tuples` (and its default). */
export const FGA_READ_PAGE_SIZE = 100;

/** Throws `failed_precondition` (reason `fga_disabled`) when no engine is configured. */
export function requireEngine(engine: Engine | undefined): Engine {
  if (!engine) throw new LatchkeyError('failed_precondition', FGA_DISABLED_MESSAGE, { reason: 'fga_disabled' });
  return engine;
}

/** `fga_get_model`: the latest model as `{id, dsl}`; `{id: '', dsl: ''}` for an empty store. */
export async function fgaGetModel(engine: Engine): Promise<{ id: string; dsl: string }> {
  const model = await engine.readModel();
  if (!model) return { id: '', dsl: '' };
  const { id, ...rest } = model;
  const { printModel } = await dslModule();
  return { id, dsl: printModel(rest) };
}

/** A DSL problem as the admin operations report it: 1-based line and column (as `latchkey dsl validate` prints them). */
export interface DslProblem {
  line: number;
  column: number;
  kind: string;
  message: string;
}

function problemsOf(errors: ReturnType<typeof import('../dsl/index.ts').parseDsl>['errors']): DslProblem[] {
  return errors.map((e) => ({ line: e.line.start + 1, column: e.column.start + 1, kind: e.kind, message: e.message }));
}

/**
 * The validation `Engine.writeModel` applies to a model before storing it
 * (the `TypeSystem` of a version being written: every condition compiled in
 * OpenFGA's CEL environment, the server's own rules); throws its
 * `invalid_argument` (reason `invalid_authorization_model`, OpenFGA code
 * 2056) for a model it refuses.
 */
function checkAsWritten(model: AuthorizationModel): void {
  new TypeSystem(model);
}

/**
 * `fga_validate_model`: parses and validates the DSL as `fga_write_model`
 * would, without installing anything; every problem with its 1-based line
 * and column. A model the DSL accepts but writing would refuse (a condition
 * that calls something outside OpenFGA's CEL environment, say) has one
 * problem whose `kind` is the write's reason (`invalid_authorization_model`)
 * and whose `message` is the write's message, placed on the condition or
 * relation it concerns. Needs no engine.
 */
export async function fgaValidateModel(dsl: string): Promise<{ valid: boolean; errors: DslProblem[] }> {
  const { parseDsl } = await dslModule();
  const parsed = parseDsl(dsl, { check: checkAsWritten });
  const errors = problemsOf(parsed.errors);
  return { valid: errors.length === 0 && parsed.model !== undefined, errors };
}

const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';

/** The creation time (unix seconds) a ULID carries in its first ten characters; 0 when the id is not a ULID. */
function ulidSeconds(id: string): number {
  if (!/^[0-9A-HJKMNP-TV-Z]{26}$/i.test(id)) return 0;
  let ms = 0;
  for (const c of id.slice(0, 10).toUpperCase()) ms = ms * 32 + CROCKFORD.indexOf(c);
  return Math.floor(ms / 1000);
}

/** Largest `page_size` of `fga_list_models` (and its default). */
export const FGA_MODELS_PAGE_SIZE = 50;

/**
 * `fga_list_models`: the model versions, newest first, each as DSL with its
 * creation time (from its ULID), a page at a time with a continuation token.
 */
export async function fgaListModels(
  engine: Engine,
  input: { page_size?: number | undefined; continuation_token?: string | undefined },
): Promise<{ models: Array<{ id: string; dsl: string; created_at: number }>; continuation_token: string }> {
  const { printModel } = await dslModule();
  const page = await engine.listModels({ pageSize: input.page_size ?? FGA_MODELS_PAGE_SIZE, ...(input.continuation_token ? { continuationToken: input.continuation_token } : {}) });
  return {
    models: page.models.map(({ id, ...rest }) => ({ id, dsl: printModel(rest), created_at: ulidSeconds(id) })),
    continuation_token: page.continuationToken,
  };
}

/**
 * `fga_write_model`: parses and validates the DSL and installs it as a new
 * version. Throws `invalid_argument` (reason `invalid_dsl`) whose message
 * names the first problem's 1-based line and column and whose
 * `details.errors` lists every problem with `line` and `column` (1-based).
 */
export async function fgaWriteModel(engine: Engine, dsl: string): Promise<{ id: string; dsl: string }> {
  const { parseDsl, printModel } = await dslModule();
  const parsed = parseDsl(dsl);
  if (parsed.errors.length > 0 || !parsed.model) {
    const errors = problemsOf(parsed.errors);
    const first = errors[0];
    throw new LatchkeyError(
      'invalid_argument',
      first ? `invalid model at line ${first.line}, column ${first.column}: ${first.message}` : 'invalid model',
      { reason: 'invalid_dsl', details: { errors } },
    );
  }
  const stored = await engine.writeModel(parsed.model);
  const { id, ...rest } = stored;
  return { id, dsl: printModel(rest) };
}

function checkTuples(tuples: readonly FgaTupleInput[], withConditions: boolean): TupleKey[] {
  if (!Array.isArray(tuples) || tuples.length === 0) {
    throw new LatchkeyError('invalid_argument', 'tuples must have at least one entry', { reason: 'invalid_write_input' });
  }
  return tuples.map((t) => {
    const out: TupleKey = { user: t.user, relation: t.relation, object: t.object };
    const c = t.condition;
    if (withConditions && c !== undefined && c !== null) {
      if (c.context !== undefined && c.context !== null && (typeof c.context !== 'object' || Array.isArray(c.context))) {
        throw new LatchkeyError('invalid_argument', 'a condition context must be a JSON object', { reason: 'invalid_context' });
      }
      out.condition = c.context === undefined || c.context === null ? { name: c.name } : { name: c.name, context: c.context as Record<string, unknown> };
    }
    if (withConditions && t.expires_at !== undefined && t.expires_at !== null) out.expires_at = t.expires_at;
    return out;
  });
}

/** A tuple as `fga_read_tuples` returns it: the condition only when there is one. */
export function wireTuple(t: TupleKey): FgaTuple {
  const out: FgaTuple = { user: t.user, relation: t.relation, object: t.object };
  if (t.condition !== undefined) out.condition = t.condition.context === undefined ? { name: t.condition.name } : { name: t.condition.name, context: t.condition.context };
  if (t.expires_at !== undefined) out.expires_at = t.expires_at;
  return out;
}

/** `fga_write_tuples`: all or nothing (engine limits and validation apply). */
export async function fgaWriteTuples(engine: Engine, tuples: readonly FgaTupleInput[]): Promise<{ revision: number }> {
  return engine.write({ writes: checkTuples(tuples, true) });
}

/** `fga_delete_tuples`: all or nothing. */
export async function fgaDeleteTuples(engine: Engine, tuples: readonly FgaTupleInput[]): Promise<{ revision: number }> {
  return engine.write({ deletes: checkTuples(tuples, false) });
}

/** `fga_read_tuples`: filtered, paginated by an opaque continuation token (page size 1..100, default 100). */
export async function fgaReadTuples(
  engine: Engine,
  input: { user?: string | undefined; relation?: string | undefined; object?: string | undefined; page_size?: number | undefined; continuation_token?: string | undefined },
): Promise<{ tuples: FgaTuple[]; continuation_token: string }> {
  const pageSize = input.page_size ?? FGA_READ_PAGE_SIZE;
  if (!Number.isSafeInteger(pageSize) || pageSize < 1 || pageSize > FGA_READ_PAGE_SIZE) {
    throw new LatchkeyError('invalid_argument', `page_size must be an integer from 1 to ${FGA_READ_PAGE_SIZE}`, { reason: 'invalid_page_size' });
  }
  const filter: { user?: string; relation?: string; object?: string } = {};
  if (input.user) filter.user = input.user;
  if (input.relation) filter.relation = input.relation;
  if (input.object) filter.object = input.object;
  const page = await engine.read(filter, {
    pageSize,
    ...(input.continuation_token ? { continuationToken: input.continuation_token } : {}),
  });
  return {
    tuples: page.tuples.map(wireTuple),
    continuation_token: page.continuationToken,
  };
}

/**
 * `fga_list_users`: `user_type` is `type` or `type#relation` (a userset
 * filter). With `page_size` or `continuation_token`, one page of the
 * engine's revision-pinned walk; without, the whole answer, or, beyond the
 * engine's list limit, its first 1000 users and the token that continues
 * them (`continuation_token` is empty when the answer is complete).
 */
export async function fgaListUsers(
  engine: Engine,
  input: { object: string; relation: string; user_type: string; page_size?: number | undefined; continuation_token?: string | undefined },
  options: { deadlineMs?: number } = {},
): Promise<{ users: string[]; continuation_token: string; deadline_exceeded: boolean }> {
  const [type, relation] = input.user_type.split('#', 2);
  if (!type) throw new LatchkeyError('invalid_argument', 'user_type must not be empty', { reason: 'invalid_user_type' });
  const req = { object: input.object, relation: input.relation, userFilters: [relation ? { type, relation } : { type }] };
  const paged = (input.page_size !== undefined && input.page_size !== 0) || (input.continuation_token !== undefined && input.continuation_token !== '');
  if (!paged) {
    const result = await engine.listUsers(req);
    if (!result.truncated) return { users: result.users, continuation_token: '', deadline_exceeded: false };
  }
  const page = await engine.listUsersPage(req, {
    pageSize: input.page_size === undefined || input.page_size === 0 ? 1000 : input.page_size,
    ...(input.continuation_token === undefined ? {} : { continuationToken: input.continuation_token }),
    deadlineMs: options.deadlineMs ?? LISTING_DEADLINE_MS,
  });
  // Stopped for the listing deadline: what was found in time (possibly nothing yet) and the token that continues.
  return { users: page.users, continuation_token: page.continuationToken, deadline_exceeded: page.deadlineExceeded === true };
}

/** The input of `fga_explain`. */
export interface FgaExplainInput {
  user: string;
  relation: string;
  object: string;
  contextual_tuples?: ReadonlyArray<{ user: string; relation: string; object: string; condition?: { name: string; context?: unknown } | undefined }> | undefined;
  context?: unknown;
  consistency_token?: string | undefined;
}

/**
 * `fga_explain`: Check's answer for any subject with its explanation
 * (`Engine.explain`). Errors: Check's, `resolution_too_complex` past the
 * limits, `invalid_argument` for a context that is not an object or a bad
 * consistency token.
 */
export async function fgaExplain(engine: Engine, input: FgaExplainInput): Promise<{ relation: string; object: string; allowed: boolean; tree: unknown; error?: { code: string; reason?: string; message: string } }> {
  const req: CheckRequest = { user: input.user, relation: input.relation, object: input.object };
  if (input.contextual_tuples !== undefined && input.contextual_tuples.length > 0) {
    req.contextualTuples = input.contextual_tuples.map((t) => {
      const out: TupleKey = { user: t.user, relation: t.relation, object: t.object };
      if (t.condition !== undefined && t.condition !== null) {
        const context = objectContext(t.condition.context);
        out.condition = context === undefined ? { name: t.condition.name } : { name: t.condition.name, context };
      }
      return out;
    });
  }
  const context = objectContext(input.context);
  if (context !== undefined) req.context = context;
  if (input.consistency_token !== undefined && input.consistency_token !== '') {
    if (!/^\d{1,15}$/u.test(input.consistency_token)) throw new LatchkeyError('invalid_argument', 'consistency_token must be the token an FGA write returned', { reason: 'invalid_consistency_token' });
    req.atLeastRevision = Number(input.consistency_token);
  }
  const r = await engine.explain(req);
  return { relation: input.relation, object: input.object, allowed: r.allowed, tree: r.tree, ...(r.error === undefined ? {} : { error: r.error }) };
}

function objectContext(context: unknown): Record<string, unknown> | undefined {
  if (context === undefined || context === null) return undefined;
  if (typeof context !== 'object' || Array.isArray(context)) throw new LatchkeyError('invalid_argument', 'context must be a JSON object', { reason: 'invalid_context' });
  return context as Record<string, unknown>;
}

/** `fga_expand`: the userset tree as a JSON string. */
export async function fgaExpand(engine: Engine, input: { relation: string; object: string }): Promise<{ tree: string }> {
  const result = await engine.expand({ relation: input.relation, object: input.object });
  return { tree: JSON.stringify(result.tree) };
}

