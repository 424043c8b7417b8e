/**
 * Validation of tuples against a model version, following OpenFGA
 * (`internal/validation/validation.go`): used for tuple writes, for
 * contextual tuples (failures become OpenFGA code 2027) and, in its
 * non-throwing form, to ignore stored tuples that the current model no
 * longer admits.
 */
import type { LatchkeyError } from './errors.ts';
import type { TupleKey } from './store.ts';
import { CONDITION_LIMITS } from './conditions/compiled_condition.ts';
import { type ParsedObject, type ParsedUser, fgaError, show, tryParseObject, tryParseUser } from './tuple.ts';
import type { TypeSystem } from './typesystem.ts';

/** OpenFGA's numeric codes. */
export const FGA_CODES = {
  validation_error: 2000,
  resolution_too_complex: 2002,
  type_not_found: 2021,
  relation_not_found: 2022,
  invalid_tuple: 2027,
  invalid_authorization_model: 2056,
} as const;

/** A tuple parsed and checked against a model. */
export interface ValidTuple {
  tuple: TupleKey;
  object: ParsedObject;
  user: ParsedUser;
}

/**
 * True when `user` fits one of the type restrictions of `type#relation`,
 * ignoring conditions (OpenFGA `validateTypeRestrictions`).
 */
export function userFitsRestrictions(ts: TypeSystem, type: string, relation: string, user: ParsedUser): boolean {
  for (const r of ts.restrictions(type, relation)) {
    if (r.type !== user.type) continue;
    if (user.kind === 'object' && r.relation === undefined && r.wildcard === undefined) return true;
    if (user.kind === 'wildcard' && r.wildcard !== undefined) return true;
    if (user.kind === 'userset' && r.relation === user.relation) return true;
  }
  return false;
}

/**
 * The condition rule: the tuple's condition (or its absence) must match a
 * restriction of exactly the user's form (`type`, `type:*` or
 * `type#relation`). OpenFGA's `validateCondition` compares only the type;
 * matching the form as well is what makes a wildcard tuple written without a
 * condition stop counting once the model requires `user:* with c`
 * (abac_tests.yaml `wildcard_with_condition`). Returns an error message, or
 * `undefined` when the condition is fine.
 */
function conditionProblem(ts: TypeSystem, type: string, relation: string, user: ParsedUser, conditionName: string | undefined): string | undefined {
  const wanted = conditionName ?? '';
  if (wanted !== '' && ts.condition(wanted) === undefined) return `undefined condition '${wanted}'`;
  for (const r of ts.restrictions(type, relation)) {
    if (r.type !== user.type || (r.condition ?? '') !== wanted) continue;
    if (user.kind === 'object' && r.relation === undefined && r.wildcard === undefined) return undefined;
    if (user.kind === 'wildcard' && r.wildcard !== undefined) return undefined;
    if (user.kind === 'userset' && r.relation === user.relation) return undefined;
  }
  return wanted === '' ? 'condition is missing' : `invalid condition '${wanted}' for the type restrictions of '${type}#${relation}'`;
}

/**
 * Validates `tuple` as a write (or a contextual tuple) against `ts`.
 * Returns the parsed tuple, or throws `invalid_argument` with OpenFGA code
 * `openfgaCode` (2000 for writes, 2027 for contextual tuples) and a reason
 * naming the rule: `invalid_tuple`, `type_not_found`, `relation_not_found`,
 * `tuple_type_mismatch`, `invalid_condition`, `invalid_condition_context`.
 */
export function validateTupleForWrite(ts: TypeSystem, tuple: TupleKey, openfgaCode: number): ValidTuple {
  const fail = (message: string, options: { reason: string }): LatchkeyError =>
    fgaError(`invalid tuple ${describe(tuple)}: ${message}`, { reason: options.reason, code: openfgaCode, details: { tuple: plain(tuple) } });
  if (tuple === null || typeof tuple !== 'object') throw fail('not an object', { reason: 'invalid_tuple' });
  const object = typeof tuple.object === 'string' ? tryParseObject(tuple.object) : undefined;
  if (object === undefined) throw fail(`invalid object '${show(tuple.object)}'`, { reason: 'invalid_tuple' });
  if (object.id === '*') throw fail('the object id cannot be a wildcard', { reason: 'invalid_tuple' });
  const user = typeof tuple.user === 'string' ? tryParseUser(tuple.user) : undefined;
  if (user === undefined) throw fail(`invalid user '${show(tuple.user)}'`, { reason: 'invalid_tuple' });
  if (typeof tuple.relation !== 'string' || tuple.relation === '') throw fail('missing relation', { reason: 'invalid_tuple' });
  if (!ts.hasType(object.type)) throw fail(`type '${object.type}' not found`, { reason: 'type_not_found' });
  if (ts.rewrite(object.type, tuple.relation) === undefined) {
    throw fail(`relation '${object.type}#${tuple.relation}' not found`, { reason: 'relation_not_found' });
  }
  if (!ts.hasType(user.type)) throw fail(`type '${user.type}' not found`, { reason: 'type_not_found' });
  if (user.kind === 'userset' && ts.rewrite(user.type, user.relation) === undefined) {
    throw fail(`relation '${user.type}#${user.relation}' not found`, { reason: 'relation_not_found' });
  }
  if (ts.isTupleset(object.type, tuple.relation) && user.kind !== 'object') {
    throw fail(`'${object.type}#${tuple.relation}' is a tupleset relation and admits neither wildcards nor usersets`, { reason: 'tuple_type_mismatch' });
  }
  if (!userFitsRestrictions(ts, object.type, tuple.relation, user)) {
    throw fail(`'${tuple.user}' is not an allowed type restriction for '${object.type}#${tuple.relation}'`, { reason: 'tuple_type_mismatch' });
  }
  const condition = tuple.condition;
  if (condition !== undefined && (condition === null || typeof condition !== 'object' || typeof condition.name !== 'string')) {
    throw fail('invalid condition', { reason: 'invalid_condition' });
  }
  const problem = conditionProblem(ts, object.type, tuple.relation, user, condition?.name);
  if (problem !== undefined) throw fail(problem, { reason: 'invalid_condition' });
  if (condition?.context !== undefined) {
    if (condition.context === null || typeof condition.context !== 'object' || Array.isArray(condition.context)) {
      throw fail('the condition context must be an object', { reason: 'invalid_condition_context' });
    }
    if (Buffer.byteLength(JSON.stringify(condition.context), 'utf8') > CONDITION_LIMITS.maxContextBytes) {
      throw fail(`the condition context is larger than ${CONDITION_LIMITS.maxContextBytes} bytes`, { reason: 'invalid_condition_context' });
    }
    try {
      ts.condition(condition.name)!.validateContext(condition.context, true);
    } catch (err) {
      throw fail((err as Error).message, { reason: 'invalid_condition_context' });
    }
  }
  return { tuple, object, user };
}

/**
 * True when a stored tuple on `type#relation` is admitted by the current
 * model (OpenFGA's `FilterInvalidTuples`): tuples written under an older
 * model whose user type or condition the current restrictions no longer
 * allow are ignored, not errors.
 */
export function tupleReadable(ts: TypeSystem, type: string, relation: string, user: ParsedUser, conditionName: string | undefined): boolean {
  return userFitsRestrictions(ts, type, relation, user) && conditionProblem(ts, type, relation, user, conditionName) === undefined;
}

function describe(t: TupleKey): string {
  if (t === null || typeof t !== 'object') return show(t);
  return `'${show(t.object)}#${show(t.relation)}@${show(t.user)}'`;
}

function plain(t: TupleKey): Record<string, unknown> {
  return { object: t.object, relation: t.relation, user: t.user };
}
