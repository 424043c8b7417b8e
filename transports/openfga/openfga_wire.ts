/**
 * OpenFGA's JSON shapes (openfga-v1.swagger.json) to and from the engine's:
 * tuple keys with conditions, contextual tuples, consistency, stores, users
 * of ListUsers, timestamps (RFC 3339) and the ReadChanges position token.
 * Every function that reads a request throws {@link invalidRequest} (400
 * `validation_error`) for a shape OpenFGA's validation would refuse.
 */
import type { Assertion, Consistency, StoreRecord, TupleKey } from '../../engine/index.ts';
import { invalidRequest } from './openfga_errors.ts';

/** A JSON object of a request, or `{}` for an absent one. */
export type Json = Record<string, unknown>;

export function obj(v: unknown, what: string): Json {
  if (v === undefined || v === null) return {};
  if (typeof v !== 'object' || Array.isArray(v)) throw invalidRequest(`${what} must be an object`);
  return v as Json;
}

export function optString(v: unknown, what: string): string | undefined {
  if (v === undefined || v === null || v === '') return undefined;
  if (typeof v !== 'string') throw invalidRequest(`${what} must be a string`);
  return v;
}

export function reqString(v: unknown, what: string): string {
  const s = optString(v, what);
  if (s === undefined) throw invalidRequest(`${what} is required`);
  return s;
}

/** Field limits of OpenFGA's validation rules (openfga/api): object 256, relation 50, user 512 bytes. */
const MAX = { object: 256, relation: 50, user: 512 } as const;

function keyPart(v: unknown, field: 'object' | 'relation' | 'user', required: boolean): string | undefined {
  const s = required ? reqString(v, `tuple_key.${field}`) : optString(v, `tuple_key.${field}`);
  if (s !== undefined && Buffer.byteLength(s) > MAX[field]) throw invalidRequest(`tuple_key.${field} is longer than ${MAX[field]} bytes`);
  return s;
}

/** A context object (`google.protobuf.Struct`), or `undefined`. */
export function context(v: unknown, what = 'context'): Record<string, unknown> | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'object' || Array.isArray(v)) throw invalidRequest(`${what} must be an object`);
  return v as Record<string, unknown>;
}

/** A `TupleKey` (with an optional condition) of a request. */
export function tupleKey(v: unknown, withCondition = true): TupleKey {
  const t = obj(v, 'tuple_key');
  const out: TupleKey = { object: keyPart(t['object'], 'object', true)!, relation: keyPart(t['relation'], 'relation', true)!, user: keyPart(t['user'], 'user', true)! };
  if (withCondition && t['condition'] !== undefined && t['condition'] !== null) {
    const c = obj(t['condition'], 'condition');
    const name = reqString(c['name'], 'condition.name');
    const ctx = context(c['context'], 'condition.context');
    out.condition = ctx === undefined ? { name } : { name, context: ctx };
  }
  // Latchkey's addition to OpenFGA's TupleKey: when the tuple stops granting (RFC 3339; validated by the engine).
  if (withCondition && t['expires_at'] !== undefined && t['expires_at'] !== null) out.expires_at = reqString(t['expires_at'], 'expires_at');
  return out;
}

/** A list of tuple keys, or `[]`. */
export function tupleKeys(v: unknown, what: string, withCondition = true): TupleKey[] {
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v)) throw invalidRequest(`${what} must be a list`);
  return v.map((t) => tupleKey(t, withCondition));
}

/** `contextual_tuples: {tuple_keys: [...]}` (Check, BatchCheck, ListObjects, Expand). */
export function contextualTuples(v: unknown): TupleKey[] {
  return tupleKeys(obj(v, 'contextual_tuples')['tuple_keys'], 'contextual_tuples.tuple_keys');
}

/** A tuple key as OpenFGA returns it (the condition only when there is one). */
export function wireTupleKey(t: TupleKey): Json {
  const out: Json = { object: t.object, relation: t.relation, user: t.user };
  if (t.condition !== undefined) out['condition'] = { name: t.condition.name, context: t.condition.context ?? {} };
  if (t.expires_at !== undefined) out['expires_at'] = t.expires_at;
  return out;
}

/** `ConsistencyPreference`; `undefined` for UNSPECIFIED and MINIMIZE_LATENCY's default path. */
export function consistency(v: unknown): Consistency | undefined {
  if (v === undefined || v === null || v === 'UNSPECIFIED') return undefined;
  if (v === 'MINIMIZE_LATENCY') return 'minimize_latency';
  if (v === 'HIGHER_CONSISTENCY') return 'higher_consistency';
  throw invalidRequest(`invalid consistency preference '${String(v)}'`);
}

/** RFC 3339 with milliseconds, as OpenFGA's protojson timestamps. */
export function timestamp(ms: number): string {
  return new Date(ms).toISOString();
}

export function wireStore(s: StoreRecord): Json {
  return { id: s.id, name: s.name, created_at: timestamp(s.createdAt), updated_at: timestamp(s.updatedAt) };
}

/** A page size of 1..100 from a query string or body (OpenFGA: default 50 for Read, 25 for stores and changes). */
export function pageSize(v: unknown): number | undefined {
  if (v === undefined || v === null || v === '') return undefined;
  const n = typeof v === 'number' ? v : typeof v === 'string' && /^\d+$/u.test(v) ? Number(v) : NaN;
  if (!Number.isInteger(n) || n < 1 || n > 100) throw invalidRequest('page_size must be from 1 to 100', 'page_size_invalid');
  return n;
}

/** ListUsers' `User`: `{object}`, `{userset}` or `{wildcard}`. */
export function wireUser(user: string): Json {
  const hash = user.indexOf('#');
  const colon = user.indexOf(':');
  const type = user.slice(0, colon);
  if (hash >= 0) return { userset: { type, id: user.slice(colon + 1, hash), relation: user.slice(hash + 1) } };
  const id = user.slice(colon + 1);
  if (id === '*') return { wildcard: { type } };
  return { object: { type, id } };
}

/** An assertion of WriteAssertions' body. */
export function assertion(v: unknown): Assertion {
  const a = obj(v, 'assertion');
  const key = obj(a['tuple_key'], 'assertion.tuple_key');
  const out: Assertion = {
    tupleKey: { object: keyPart(key['object'], 'object', true)!, relation: keyPart(key['relation'], 'relation', true)!, user: keyPart(key['user'], 'user', true)! },
    expectation: a['expectation'] === true,
  };
  if (a['expectation'] !== undefined && typeof a['expectation'] !== 'boolean') throw invalidRequest('assertion.expectation must be a boolean');
  const ctx = tupleKeys(a['contextual_tuples'], 'assertion.contextual_tuples');
  if (ctx.length > 0) out.contextualTuples = ctx;
  const c = context(a['context'], 'assertion.context');
  if (c !== undefined) out.context = c;
  return out;
}

export function wireAssertion(a: Assertion): Json {
  return {
    tuple_key: { object: a.tupleKey.object, relation: a.tupleKey.relation, user: a.tupleKey.user },
    expectation: a.expectation,
    contextual_tuples: (a.contextualTuples ?? []).map(wireTupleKey),
    context: a.context ?? {},
  };
}

/**
 * ReadChanges' continuation token: the position after every change of a
 * revision up to `r` and the first `s` changes of the later ones, and the
 * type filter it was made for (OpenFGA refuses a token used with another type).
 */
export interface ChangesPosition {
  r: number;
  s: number;
  type: string;
}

export function encodePosition(p: ChangesPosition): string {
  return Buffer.from(JSON.stringify(p), 'utf8').toString('base64url');
}

export function decodePosition(token: string): ChangesPosition {
  try {
    const v = JSON.parse(Buffer.from(token, 'base64url').toString('utf8')) as Partial<ChangesPosition>;
    if (Number.isSafeInteger(v.r) && v.r! >= 0 && Number.isSafeInteger(v.s) && v.s! >= 0 && typeof v.type === 'string') return v as ChangesPosition;
  } catch {
    // fall through
  }
  throw invalidRequest('invalid continuation token', 'invalid_continuation_token');
}
