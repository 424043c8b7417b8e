/**
 * The endpoints of OpenFGA's HTTP API (v1), each a handler over the engine of
 * its store: stores, authorization models, tuples and changes, the queries
 * (check, batch check, expand, list objects and users, streamed list
 * objects) and assertions. transports/openfga/openfga_api.ts mounts them on
 * its router and fast path, with authentication, metrics and errors.
 */
import type { ServerResponse } from 'node:http';
import { DEFAULT_STORE_ID, LISTING_DEADLINE_MS, LatchkeyError, STORE_ID_PATTERN, type CheckRequest, type Engine, type ListObjectsRequest, type StoredAuthorizationModel, type TupleKey } from '../../engine/index.ts';
import { invalidRequest, toOpenfga } from './openfga_errors.ts';
import {
  assertion,
  consistency,
  context,
  contextualTuples,
  decodePosition,
  encodePosition,
  obj,
  optString,
  pageSize,
  reqString,
  timestamp,
  tupleKey,
  tupleKeys,
  wireAssertion,
  wireStore,
  wireTupleKey,
  wireUser,
  type Json,
} from './openfga_wire.ts';

/** A handler's result when it has written the response itself. */
export const STREAMED = Symbol('streamed');

/** What a handler reads of a request: express's `Request` has it, and so does the fast path's. */
export interface ApiRequest {
  readonly body: unknown;
  readonly params: Record<string, string | undefined>;
  readonly query: Record<string, unknown>;
}

export type Handler = (engine: Engine, req: ApiRequest, res: ServerResponse) => Promise<Json | undefined | typeof STREAMED>;

/** Mounts a handler: its method, path, operation name (metrics), success status, and whether it is served by the store's engine. */
export type Route = (method: 'get' | 'post' | 'put' | 'delete', path: string, op: string, status: number, handler: Handler, perStore?: boolean) => void;

/** What the handlers need of the API beside the engine. */
export interface RouteContext {
  /** Checks per BatchCheck. */
  maxChecks: number;
  /** Forgets a deleted store (the API's cache of stores known to exist). */
  forget(storeId: string): void;
  /** Writes the headers the fast path deferred, before a streamed answer. */
  headersNow(res: ServerResponse): void;
  /** Logs an unexpected error. */
  logError(message: string, fields: Record<string, unknown>): void;
}

/** `ListObjects`' stream line as OpenFGA's grpc-gateway writes it. */
const streamLine = (object: string): string => `${JSON.stringify({ result: { object } })}\n`;

/** Mounts every endpoint of the API with `route`. */
export function mountOpenfgaRoutes(route: Route, ctx: RouteContext): void {
  // ------------------------------------------------------------ stores

  route('post', '/stores', 'create_store', 201, async (engine, req) => {
    const body = obj(req.body, 'body');
    const name = body['name'];
    if (typeof name !== 'string' || !/^[^\u0000-\u001f\u007f]{3,64}$/u.test(name)) {
      throw invalidRequest('invalid CreateStoreRequest.Name: value does not match regex pattern "^[^\\x00-\\x1F\\x7F]{3,64}$"');
    }
    return wireStore(await engine.createStore({ name }));
  }, false);

  route('get', '/stores', 'list_stores', 200, async (engine, req) => {
    const q = req.query as Record<string, unknown>;
    const size = pageSize(q['page_size']) ?? 50;
    const token = optString(q['continuation_token'], 'continuation_token');
    const name = optString(q['name'], 'name');
    const page = await engine.listStores({ pageSize: size, ...(token === undefined ? {} : { continuationToken: token }), ...(name === undefined ? {} : { name }) });
    return { stores: page.stores.map(wireStore), continuation_token: page.continuationToken };
  }, false);

  route('get', '/stores/:store_id', 'get_store', 200, async (engine, req) => {
    const id = req.params['store_id'] as string;
    if (!STORE_ID_PATTERN.test(id)) throw invalidRequest(`invalid store id '${id}': a store id is a ULID`);
    const store = await engine.readStore(id);
    if (store === undefined) throw new LatchkeyError('not_found', `store '${id}' not found`, { reason: 'store_not_found' });
    return wireStore(store);
  }, false);

  route('delete', '/stores/:store_id', 'delete_store', 204, async (engine, req) => {
    const id = req.params['store_id'] as string;
    if (!STORE_ID_PATTERN.test(id)) throw invalidRequest(`invalid store id '${id}': a store id is a ULID`);
    if (id === DEFAULT_STORE_ID) throw invalidRequest('the default store, which this server\'s own permission checks use, cannot be deleted');
    ctx.forget(id);
    await engine.deleteStore(id);
    return undefined;
  }, false);

  // ------------------------------------------------------------ models

  route('post', '/stores/:store_id/authorization-models', 'write_authorization_model', 201, async (engine, req) => {
    const body = obj(req.body, 'body');
    const model = {
      schema_version: body['schema_version'],
      type_definitions: body['type_definitions'],
      ...(body['conditions'] === undefined || body['conditions'] === null ? {} : { conditions: body['conditions'] }),
    };
    if (!Array.isArray(model.type_definitions) || model.type_definitions.length === 0) {
      throw invalidRequest('invalid WriteAuthorizationModelRequest.TypeDefinitions: value must contain at least 1 item(s)', 'type_definitions_too_few_items');
    }
    const stored = await engine.writeModel(model as Parameters<Engine['writeModel']>[0]);
    return { authorization_model_id: stored.id };
  });

  route('get', '/stores/:store_id/authorization-models', 'read_authorization_models', 200, async (engine, req) => {
    const q = req.query as Record<string, unknown>;
    const size = pageSize(q['page_size']) ?? 50;
    const token = optString(q['continuation_token'], 'continuation_token');
    const page = await engine.listModels({ pageSize: size, ...(token === undefined ? {} : { continuationToken: token }) });
    return { authorization_models: page.models.map(wireModel), continuation_token: page.continuationToken };
  });

  route('get', '/stores/:store_id/authorization-models/:id', 'read_authorization_model', 200, async (engine, req) => {
    const id = req.params['id'] as string;
    if (!STORE_ID_PATTERN.test(id)) throw invalidRequest(`invalid authorization model id '${id}'`);
    const model = await engine.readModel(id);
    if (model === undefined) throw new LatchkeyError('not_found', `authorization model '${id}' not found`, { reason: 'model_not_found', details: { openfga_code: 2001 } });
    return { authorization_model: wireModel(model) };
  });

  // ------------------------------------------------------------ tuples

  route('post', '/stores/:store_id/write', 'write', 200, async (engine, req) => {
    const body = obj(req.body, 'body');
    const writesIn = obj(body['writes'], 'writes');
    const deletesIn = obj(body['deletes'], 'deletes');
    let writes = tupleKeys(writesIn['tuple_keys'], 'writes.tuple_keys');
    let deletes = tupleKeys(deletesIn['tuple_keys'], 'deletes.tuple_keys', false);
    const onDuplicate = optString(writesIn['on_duplicate'], 'writes.on_duplicate') ?? 'error';
    const onMissing = optString(deletesIn['on_missing'], 'deletes.on_missing') ?? 'error';
    if (onDuplicate !== 'error' && onDuplicate !== 'ignore') throw invalidRequest(`invalid on_duplicate '${onDuplicate}'`);
    if (onMissing !== 'error' && onMissing !== 'ignore') throw invalidRequest(`invalid on_missing '${onMissing}'`);
    if (writes.length + deletes.length === 0) {
      throw invalidRequest('Invalid input. Make sure you provide at least one write or delete', 'invalid_write_input');
    }
    const modelId = optString(body['authorization_model_id'], 'authorization_model_id');
    // The options apply to tuples that are exactly as asked (a tuple present with another condition is still an error).
    if (onDuplicate === 'ignore' && writes.length > 0) {
      const present = await engine.store.readUserTuples(writes.map(userKey));
      writes = writes.filter((t, i) => {
        const p = present[i];
        if (p === undefined) return true;
        if (JSON.stringify(p.condition ?? null) !== JSON.stringify(t.condition ?? null)) return true;
        return false;
      });
    }
    if (onMissing === 'ignore' && deletes.length > 0) {
      const present = await engine.store.readUserTuples(deletes.map(userKey));
      deletes = deletes.filter((_, i) => present[i] !== undefined);
    }
    // Latchkey's extension: the store revision the write committed, as a consistency token that a later
    // Check, ListObjects or ListUsers may pass back (`consistency_token`) to read at least this write.
    if (writes.length + deletes.length > 0) {
      const { revision } = await engine.write({ writes, deletes, ...(modelId === undefined ? {} : { modelId }) });
      return { consistency_token: String(revision) };
    }
    return {};
  });

  route('post', '/stores/:store_id/read', 'read', 200, async (engine, req) => {
    const body = obj(req.body, 'body');
    consistency(body['consistency']);
    const key = obj(body['tuple_key'], 'tuple_key');
    const filter: { user?: string; relation?: string; object?: string } = {};
    const user = optString(key['user'], 'tuple_key.user');
    const relation = optString(key['relation'], 'tuple_key.relation');
    const object = optString(key['object'], 'tuple_key.object');
    if (user !== undefined) filter.user = user;
    if (relation !== undefined) filter.relation = relation;
    if (object !== undefined) filter.object = object;
    // OpenFGA's rules for a partial key: an object type (with or without id) whenever a user or relation is given.
    if (object === undefined && (user !== undefined || relation !== undefined)) {
      throw invalidRequest('the \'object\' field is required when \'user\' or \'relation\' is set', 'validation_error');
    }
    if (object !== undefined && object.endsWith(':') && user === undefined) {
      throw invalidRequest('the \'user\' field must be set when the object is a type with no id', 'validation_error');
    }
    const size = pageSize(body['page_size']);
    const token = optString(body['continuation_token'], 'continuation_token');
    const page = await engine.read(filter, { writtenAt: true, ...(size === undefined ? {} : { pageSize: size }), ...(token === undefined ? {} : { continuationToken: token }) });
    const now = Date.now();
    return {
      tuples: page.tuples.map((t, i) => ({ key: wireTupleKey(t), timestamp: timestamp(page.writtenAt?.[i] || now) })),
      continuation_token: page.continuationToken,
    };
  });

  route('get', '/stores/:store_id/changes', 'read_changes', 200, async (engine, req) => {
    const q = req.query as Record<string, unknown>;
    const type = optString(q['type'], 'type') ?? '';
    const size = pageSize(q['page_size']) ?? 50;
    const token = optString(q['continuation_token'], 'continuation_token');
    const startRaw = optString(q['start_time'], 'start_time');
    let start: number | undefined;
    if (startRaw !== undefined) {
      start = Date.parse(startRaw);
      if (Number.isNaN(start)) throw invalidRequest(`invalid start_time '${startRaw}'`, 'invalid_start_time');
    }
    let pos = token === undefined ? { r: 0, s: 0, type } : decodePosition(token);
    if (pos.type !== type) throw invalidRequest('the continuation token was made for another type', 'query_string_type_continuation_token_mismatch');
    const objectType = type === '' ? {} : { objectType: type };
    // A start time without a token: skip the changes made before it.
    if (token === undefined && start !== undefined) {
      for (;;) {
        const batch = await engine.readChanges({ afterRevision: pos.r, limit: 1000, ...objectType });
        const first = batch.findIndex((c) => c.timestamp >= start!);
        if (first >= 0) {
          const rev = batch[first]!.revision;
          pos = { r: rev - 1, s: batch.slice(0, first).filter((c) => c.revision === rev).length, type };
          break;
        }
        if (batch.length < 1000) {
          pos = { r: batch.at(-1)?.revision ?? pos.r, s: 0, type };
          break;
        }
        pos = { r: batch.at(-1)!.revision - 1, s: 0, type };
        // A revision of over 1000 changes before the start: step past it.
        if (batch.every((c) => c.revision === batch[0]!.revision)) pos = { r: batch[0]!.revision, s: 0, type };
      }
    }
    const fetched = await engine.readChanges({ afterRevision: pos.r, limit: Math.min(1000, pos.s + size), ...objectType });
    const page = fetched.slice(pos.s, pos.s + size);
    const last = page.at(-1);
    if (last === undefined) return { changes: [], continuation_token: token ?? (start === undefined ? '' : encodePosition(pos)) };
    const next = { r: last.revision - 1, s: fetched.slice(0, pos.s + page.length).filter((c) => c.revision === last.revision).length, type };
    return {
      changes: page.map((c) => ({
        tuple_key: wireTupleKey(c.tuple),
        operation: c.operation === 'write' ? 'TUPLE_OPERATION_WRITE' : 'TUPLE_OPERATION_DELETE',
        timestamp: timestamp(c.timestamp),
      })),
      continuation_token: encodePosition(next),
    };
  });

  // ------------------------------------------------------------ queries

  route('post', '/stores/:store_id/check', 'check', 200, async (engine, req) => {
    const r = checkRequest(obj(req.body, 'body'));
    const { allowed } = await engine.check(r);
    return { allowed, resolution: '' };
  });

  route('post', '/stores/:store_id/batch-check', 'batch_check', 200, async (engine, req) => {
    const body = obj(req.body, 'body');
    const items = body['checks'];
    if (!Array.isArray(items) || items.length === 0) throw invalidRequest('invalid BatchCheckRequest.Checks: value must contain at least 1 item(s)');
    if (items.length > ctx.maxChecks) throw invalidRequest(`batchCheck received ${items.length} checks, the maximum allowed is ${ctx.maxChecks}`);
    const modelId = optString(body['authorization_model_id'], 'authorization_model_id');
    const level = consistency(body['consistency']);
    const ids: string[] = [];
    const seen = new Set<string>();
    const checks: CheckRequest[] = items.map((item: unknown) => {
      const c = obj(item, 'check');
      const id = c['correlation_id'];
      if (typeof id !== 'string' || id === '' || id.length > 36) throw invalidRequest('invalid BatchCheckItem.CorrelationId: value length must be between 1 and 36 runes');
      if (seen.has(id)) throw invalidRequest(`duplicate correlation_id provided: ${id}`);
      seen.add(id);
      ids.push(id);
      const key = tupleKey(c['tuple_key'], false);
      const out: CheckRequest = { user: key.user, relation: key.relation, object: key.object };
      const ctxTuples = contextualTuples(c['contextual_tuples']);
      if (ctxTuples.length > 0) out.contextualTuples = ctxTuples;
      const ctx = context(c['context']);
      if (ctx !== undefined) out.context = ctx;
      if (level !== undefined) out.consistency = level;
      return out;
    });
    const results = await engine.batchCheck(checks, modelId === undefined ? {} : { modelId });
    const result: Json = {};
    results.forEach((r, i) => {
      if (r.error === undefined) result[ids[i]!] = { allowed: r.allowed };
      else {
        const e = toOpenfga(r.error);
        result[ids[i]!] = { allowed: false, error: e.status >= 500 ? { internal_error: e.body.code, message: e.body.message } : { input_error: e.body.code, message: e.body.message } };
      }
    });
    return { result };
  });

  route('post', '/stores/:store_id/expand', 'expand', 200, async (engine, req) => {
    const body = obj(req.body, 'body');
    const key = obj(body['tuple_key'], 'tuple_key');
    const object = reqString(key['object'], 'tuple_key.object');
    const relation = reqString(key['relation'], 'tuple_key.relation');
    consistency(body['consistency']);
    const modelId = optString(body['authorization_model_id'], 'authorization_model_id');
    const ctxTuples = contextualTuples(body['contextual_tuples']);
    const { tree } = await engine.expand({ object, relation, ...(modelId === undefined ? {} : { modelId }), ...(ctxTuples.length > 0 ? { contextualTuples: ctxTuples } : {}) });
    return { tree };
  });

  const listObjectsRequest = (body: Json): ListObjectsRequest => {
    const type = reqString(body['type'], 'type');
    const relation = reqString(body['relation'], 'relation');
    const user = reqString(body['user'], 'user');
    return { type, relation, user, ...queryOptions(body) };
  };

  // Latchkey's extension: with `page_size` or `continuation_token`, one page of a walk pinned to its first page's
  // revision, answered with `continuation_token` (empty on the last page); without them, OpenFGA's answer.
  route('post', '/stores/:store_id/list-objects', 'list_objects', 200, async (engine, req) => {
    const body = obj(req.body, 'body');
    const r = listObjectsRequest(body);
    const page = listPage(body);
    if (page === undefined) return { objects: (await engine.listObjects(r)).objects };
    const out = await engine.listObjectsPage(r, page);
    // Past the listing deadline: what was found in time, and the token that continues (`deadline_exceeded`, ours too).
    return out.deadlineExceeded === true ? { objects: out.objects, continuation_token: out.continuationToken, deadline_exceeded: true } : { objects: out.objects, continuation_token: out.continuationToken };
  });

  // Every result, streamed page by page from one walk (at one revision), so the stream is not cut at the list limit.
  route('post', '/stores/:store_id/streamed-list-objects', 'streamed_list_objects', 200, async (engine, req, res) => {
    const r = listObjectsRequest(obj(req.body, 'body'));
    // The first page before the headers: its errors are answered with their status.
    let page = await engine.listObjectsPage(r, { pageSize: 1000 });
    ctx.headersNow(res);
    res.statusCode = 200;
    res.setHeader('content-type', 'application/json');
    for (;;) {
      for (const o of page.objects) res.write(streamLine(o));
      if (page.continuationToken === '') break;
      try {
        page = await engine.listObjectsPage(r, { pageSize: 1000, continuationToken: page.continuationToken });
      } catch (err) {
        // Mid-stream, as grpc-gateway ends a failed stream: one error line.
        const e = toOpenfga(err);
        if (e.status >= 500) ctx.logError('openfga api error', { op: 'streamed_list_objects', err });
        res.write(`${JSON.stringify({ error: { code: e.status === 400 ? 3 : 13, message: e.body.message } })}\n`);
        break;
      }
    }
    res.end();
    return STREAMED;
  });

  route('post', '/stores/:store_id/list-users', 'list_users', 200, async (engine, req) => {
    const body = obj(req.body, 'body');
    const object = obj(body['object'], 'object');
    const objectType = reqString(object['type'], 'object.type');
    const objectId = reqString(object['id'], 'object.id');
    const relation = reqString(body['relation'], 'relation');
    const filters = body['user_filters'];
    if (!Array.isArray(filters) || filters.length !== 1) throw invalidRequest('invalid ListUsersRequest.UserFilters: value must contain exactly 1 item(s)');
    const f = obj(filters[0], 'user_filters[0]');
    const filterType = reqString(f['type'], 'user_filters[0].type');
    const filterRelation = optString(f['relation'], 'user_filters[0].relation');
    const ctxTuples = tupleKeys(body['contextual_tuples'], 'contextual_tuples');
    const modelId = optString(body['authorization_model_id'], 'authorization_model_id');
    const ctx = context(body['context']);
    const level = consistency(body['consistency']);
    const request = {
      object: `${objectType}:${objectId}`,
      relation,
      userFilters: [filterRelation === undefined ? { type: filterType } : { type: filterType, relation: filterRelation }],
      ...(ctxTuples.length > 0 ? { contextualTuples: ctxTuples } : {}),
      ...(modelId === undefined ? {} : { modelId }),
      ...(ctx === undefined ? {} : { context: ctx }),
      ...(level === undefined ? {} : { consistency: level }),
    };
    const page = listPage(body);
    if (page === undefined) return { users: (await engine.listUsers(request)).users.map(wireUser) };
    const out = await engine.listUsersPage(request, page);
    const users = out.users.map(wireUser);
    return out.deadlineExceeded === true ? { users, continuation_token: out.continuationToken, deadline_exceeded: true } : { users, continuation_token: out.continuationToken };
  });

  // ------------------------------------------------------------ assertions

  route('put', '/stores/:store_id/assertions/:model_id', 'write_assertions', 204, async (engine, req) => {
    const body = obj(req.body, 'body');
    const list = body['assertions'];
    if (list !== undefined && list !== null && !Array.isArray(list)) throw invalidRequest('assertions must be a list');
    const modelId = req.params['model_id'] as string;
    if (!STORE_ID_PATTERN.test(modelId)) throw invalidRequest(`invalid authorization model id '${modelId}'`);
    await engine.writeAssertions(modelId, ((list as unknown[] | undefined) ?? []).map(assertion));
    return undefined;
  });

  route('get', '/stores/:store_id/assertions/:model_id', 'read_assertions', 200, async (engine, req) => {
    const modelId = req.params['model_id'] as string;
    if (!STORE_ID_PATTERN.test(modelId)) throw invalidRequest(`invalid authorization model id '${modelId}'`);
    const assertions = await engine.readAssertions(modelId);
    return { authorization_model_id: modelId, assertions: assertions.map(wireAssertion) };
  });
}

/** The optional `page_size` and `continuation_token` of a list request (Latchkey's extension), or undefined when neither is given. */
function listPage(body: Json): { pageSize?: number; continuationToken?: string; deadlineMs: number } | undefined {
  const size = body['page_size'];
  const token = optString(body['continuation_token'], 'continuation_token');
  if ((size === undefined || size === null) && (token === undefined || token === '')) return undefined;
  if (size !== undefined && size !== null && (typeof size !== 'number' || !Number.isInteger(size) || size < 1 || size > 1000)) {
    throw invalidRequest('invalid page_size: value must be inside range [1, 1000]', 'page_size_invalid');
  }
  return { ...(typeof size === 'number' ? { pageSize: size } : {}), ...(token === undefined ? {} : { continuationToken: token }), deadlineMs: LISTING_DEADLINE_MS };
}

function userKey(t: TupleKey): { objectType: string; objectId: string; relation: string; user: string } {
  const i = t.object.indexOf(':');
  if (i <= 0) throw invalidRequest(`invalid object '${t.object}'`, 'invalid_object_format');
  return { objectType: t.object.slice(0, i), objectId: t.object.slice(i + 1), relation: t.relation, user: t.user };
}

/** contextual tuples, context, model id and consistency of a query. */
function queryOptions(body: Json): Pick<CheckRequest, 'contextualTuples' | 'context' | 'modelId' | 'consistency' | 'atLeastRevision'> {
  const out: Pick<CheckRequest, 'contextualTuples' | 'context' | 'modelId' | 'consistency' | 'atLeastRevision'> = {};
  // Latchkey's extension (see the write route): answered at least as fresh as that write.
  const token = optString(body['consistency_token'], 'consistency_token');
  if (token !== undefined && token !== '') {
    if (!/^\d{1,15}$/u.test(token)) throw invalidRequest('consistency_token must be the token a write returned');
    out.atLeastRevision = Number(token);
  }
  const ctxTuples = contextualTuples(body['contextual_tuples']);
  if (ctxTuples.length > 0) out.contextualTuples = ctxTuples;
  const ctx = context(body['context']);
  if (ctx !== undefined) out.context = ctx;
  const modelId = optString(body['authorization_model_id'], 'authorization_model_id');
  if (modelId !== undefined) out.modelId = modelId;
  const level = consistency(body['consistency']);
  if (level !== undefined) out.consistency = level;
  return out;
}

function checkRequest(body: Json): CheckRequest {
  const key = tupleKey(body['tuple_key'], false);
  return { user: key.user, relation: key.relation, object: key.object, ...queryOptions(body) };
}

function wireModel(m: StoredAuthorizationModel): Json {
  return { id: m.id, schema_version: m.schema_version, type_definitions: m.type_definitions, conditions: m.conditions ?? {} };
}
