/**
 * The validation of the Engine's request input outside the queries: the
 * changes of a write, a read filter, a change feed read, a model version's
 * assertions, page options, and store names and ids, each checked against
 * OpenFGA's rules (and the model, where a tuple must fit it) and turned into
 * the clean form the store takes.
 *
 * Apart from engine/index.ts because it is the parsing of one kind of input
 * with no state: the `Engine` class keeps the order of the steps (validate,
 * read the model, write, tell the watchers).
 */
import { monotonicFactory } from 'ulid';
import { LatchkeyError } from './errors.ts';
import { validateExpiry } from './expiry.ts';
import { STORE_ID_PATTERN, type Assertion, type ReadFilter, type StoreRecord, type TupleKey } from './store.ts';
import { show, tryParseObject, tryParseUser } from './tuple.ts';
import type { TypeSystem } from './typesystem.ts';
import { FGA_CODES, validateTupleForWrite } from './validation.ts';
import { invalid, plainTuple } from './check/check_path.ts';
import type { ReadRequest, WriteRequest } from './engine_types.ts';

/**
 * The writes and deletes of a write request, checked for shape and number
 * before anything is read (`invalid_argument`, reasons `invalid_write_input`
 * and `too_many_tuples`, OpenFGA 2003).
 */
export function writeChanges(req: WriteRequest, maxTuplesPerWrite: number): { writes: readonly TupleKey[]; deletes: readonly TupleKey[] } {
  if (req === null || typeof req !== 'object') throw invalid('write input must be an object', { reason: 'invalid_write_input' });
  const writes = req.writes ?? [];
  const deletes = req.deletes ?? [];
  if (!Array.isArray(writes) || !Array.isArray(deletes)) throw invalid('writes and deletes must be lists', { reason: 'invalid_write_input' });
  if (writes.length + deletes.length === 0) throw invalid('nothing to write or delete', { reason: 'invalid_write_input' });
  if (writes.length + deletes.length > maxTuplesPerWrite) {
    throw new LatchkeyError('invalid_argument', `at most ${maxTuplesPerWrite} tuples may be written or deleted in one call`, {
      reason: 'too_many_tuples',
      details: { openfga_code: 2003, limit: maxTuplesPerWrite },
    });
  }
  return { writes, deletes };
}

/**
 * The changes of a write in the store's form: each write valid for the model
 * `ts` (given when there are writes), its `expires_at` in the future at
 * `now`; each delete a well-formed key; no tuple twice (`duplicate_tuple`,
 * OpenFGA 2004).
 */
export function cleanChanges(ts: TypeSystem | undefined, writes: readonly TupleKey[], deletes: readonly TupleKey[], now: number): { writes: TupleKey[]; deletes: TupleKey[] } {
  const seen = new Set<string>();
  const key = (t: TupleKey): string => `${t.object}\u0000${t.relation}\u0000${t.user}`;
  const cleanWrites = writes.map((t) => {
    validateTupleForWrite(ts!, t, FGA_CODES.validation_error);
    const k = key(t);
    if (seen.has(k)) throw invalid(`duplicate tuple '${t.object}#${t.relation}@${t.user}' in one write`, { reason: 'duplicate_tuple', code: 2004 });
    seen.add(k);
    const clean = plainTuple(t);
    if (t.expires_at !== undefined) clean.expires_at = validateExpiry(t.expires_at, now, `tuple '${t.object}#${t.relation}@${t.user}'`)!;
    return clean;
  });
  const cleanDeletes = deletes.map((t) => {
    if (t === null || typeof t !== 'object' || tryParseObject(t.object) === undefined || tryParseUser(t.user) === undefined || typeof t.relation !== 'string' || t.relation === '') {
      throw invalid(`invalid tuple to delete`, { reason: 'invalid_tuple' });
    }
    const k = key(t);
    if (seen.has(k)) throw invalid(`duplicate tuple '${t.object}#${t.relation}@${t.user}' in one write`, { reason: 'duplicate_tuple', code: 2004 });
    seen.add(k);
    return { object: t.object, relation: t.relation, user: t.user };
  });
  return { writes: cleanWrites, deletes: cleanDeletes };
}

/** The store's filter for a read request (`invalid_argument`, reasons `invalid_read_input`, `invalid_object`, `invalid_user`). */
export function readFilterOf(filter: ReadRequest, options: object): ReadFilter {
  if (filter === null || typeof filter !== 'object') throw invalid('the read filter must be an object', { reason: 'invalid_read_input' });
  if (options === null || typeof options !== 'object') throw invalid('read options must be an object', { reason: 'invalid_read_input' });
  for (const key of ['user', 'relation', 'object'] as const) {
    if (filter[key] !== undefined && typeof filter[key] !== 'string') throw invalid(`read filter '${key}' must be a string`, { reason: 'invalid_read_input' });
  }
  const f: ReadFilter = {};
  if (filter.object !== undefined && filter.object !== '') {
    const i = filter.object.indexOf(':');
    if (i <= 0) throw invalid(`invalid object filter '${filter.object}': expected 'type:id' or 'type:'`, { reason: 'invalid_object' });
    f.objectType = filter.object.slice(0, i);
    const id = filter.object.slice(i + 1);
    if (id !== '') {
      if (tryParseObject(filter.object) === undefined) throw invalid(`invalid object filter '${filter.object}'`, { reason: 'invalid_object' });
      f.objectId = id;
    }
  }
  if (filter.relation !== undefined && filter.relation !== '') f.relation = filter.relation;
  if (filter.user !== undefined && filter.user !== '') {
    if (tryParseUser(filter.user) === undefined) throw invalid(`invalid user filter '${filter.user}'`, { reason: 'invalid_user' });
    f.user = filter.user;
  }
  return f;
}

/**
 * The assertions of model `ts` in the store's form: each a tuple valid for
 * the model (conditions aside) with a boolean expectation, its contextual
 * tuples valid too (`invalid_argument`, reason `invalid_assertion`, or the
 * tuple's own).
 */
export function cleanAssertions(ts: TypeSystem, assertions: readonly Assertion[]): Assertion[] {
  return assertions.map((a: Assertion) => {
    if (a === null || typeof a !== 'object' || typeof a.expectation !== 'boolean' || a.tupleKey === null || typeof a.tupleKey !== 'object') {
      throw invalid('an assertion has a tuple key and a boolean expectation', { reason: 'invalid_assertion' });
    }
    const key = { object: a.tupleKey.object, relation: a.tupleKey.relation, user: a.tupleKey.user };
    validateTupleForWrite(ts, key, FGA_CODES.validation_error);
    const out: Assertion = { tupleKey: key, expectation: a.expectation };
    if (a.contextualTuples !== undefined && a.contextualTuples.length > 0) {
      out.contextualTuples = a.contextualTuples.map((t: TupleKey) => {
        validateTupleForWrite(ts, t, FGA_CODES.validation_error);
        return plainTuple(t);
      });
    }
    if (a.context !== undefined && a.context !== null && Object.keys(a.context).length > 0) out.context = structuredClone(a.context);
    return out;
  });
}

/** The store's query for a change feed read: `limit` 1..1,000 (default 100; `invalid_page_size` otherwise), from `afterRevision` (default 0). */
export function changesQuery(options: { afterRevision?: number; limit?: number; objectType?: string }): { afterRevision: number; limit: number; objectType?: string } {
  const limit = options.limit ?? 100;
  if (!Number.isInteger(limit) || limit < 1 || limit > 1000) throw invalid('limit must be from 1 to 1000', { reason: 'invalid_page_size' });
  const q: { afterRevision: number; limit: number; objectType?: string } = { afterRevision: options.afterRevision ?? 0, limit };
  if (options.objectType !== undefined) q.objectType = options.objectType;
  return q;
}

/** The page size of a listing: `defaultPageSize` when omitted or 0, else 1..100 (`invalid_page_size`). */
export function pageSizeOf(v: number | undefined, defaultPageSize: number): number {
  if (v === undefined || v === 0) return defaultPageSize;
  if (typeof v !== 'number') throw invalid('page size must be a number from 1 to 100', { reason: 'invalid_page_size' });
  if (!Number.isInteger(v) || v < 1 || v > 100) throw invalid('page size must be from 1 to 100', { reason: 'invalid_page_size' });
  return v;
}

/** A continuation token as the store takes it: `undefined` for none or `''` (`invalid_continuation_token` for a non-string). */
export function emptyToUndefined(s: string | undefined): string | undefined {
  if (s !== undefined && typeof s !== 'string') throw invalid('invalid continuation token', { reason: 'invalid_continuation_token' });
  return s === undefined || s === '' ? undefined : s;
}

const nextStoreId = monotonicFactory();

/** The record of a new store named `name` (1 to 256 characters, no control characters; else `invalid_store_name`), with a new ULID id. */
export function newStoreRecord(input: { name: string }): StoreRecord {
  if (input === null || typeof input !== 'object' || typeof input.name !== 'string' || !/^[^\u0000-\u001f\u007f]{1,256}$/u.test(input.name)) {
    throw invalid('a store name is 1 to 256 characters without control characters', { reason: 'invalid_store_name' });
  }
  const now = Date.now();
  return { id: nextStoreId(), name: input.name, createdAt: now, updatedAt: now };
}

/** Refuses an id that is not a store id (a ULID) as an unknown store: `not_found`, reason `store_not_found`. */
export function assertStoreId(id: string): void {
  if (typeof id !== 'string' || !STORE_ID_PATTERN.test(id)) throw new LatchkeyError('not_found', `store '${show(id)}' not found`, { reason: 'store_not_found' });
}
