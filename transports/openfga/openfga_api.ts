/**
 * OpenFGA's HTTP API (v1) over the engine: the paths, bodies, status codes
 * and error codes of `openfga-v1.swagger.json`, so that OpenFGA's SDKs, the
 * `fga` CLI and the Playground can use this server (docs/openfga.md).
 *
 * - **Authentication.** OpenFGA's preshared keys: `Authorization: Bearer
 *   <key>` with one of the `--openfga-preshared-keys`, compared in constant
 *   time; none configured means the API is not mounted at all. Refused
 *   requests count against the per-IP rate limit; authenticated ones do not.
 * - **Stores.** `/stores/{store_id}/…` is served by an engine for that store
 *   ({@link Engine.forStore}); the default store (the one the identity
 *   server's own permission checks use) is served by the server's engine,
 *   with its check cache and graph mirror, so writes made here are seen by
 *   those checks at once. Other stores are answered without a cache, so no
 *   cached answer can cross stores.
 * - **AuthZEN.** `/stores/{id}/access/v1/…` and
 *   `/.well-known/authzen-configuration/…` are the AuthZEN API's
 *   (transports/authzen), mounted before this router; what reaches this
 *   router under those prefixes answers 404 `undefined_endpoint`, as OpenFGA
 *   does for a path it does not have.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import express, { type NextFunction, type Request, type Response, type Router } from 'express';
import { DEFAULT_STORE_ID, Engine, LISTING_DEADLINE_MS, LatchkeyError, STORE_ID_PATTERN, type CheckRequest, type ListObjectsRequest, type StoredAuthorizationModel, type TupleKey } from '../../engine/index.ts';
import { bearerToken } from '../../server/index.ts';
import { parseJsonBody } from '../http/rest_fast.ts';
import { headersNow, sendJson, type HttpLocals } from '../http/guards.ts';
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

/** Options of {@link openfgaRouter}. */
export interface OpenfgaApiOptions {
  /** The server's engine (the default store); `undefined` while FGA is off, when every path answers 404. */
  engine: () => Engine | undefined;
  /** Bearer tokens accepted (OpenFGA preshared keys); at least one. */
  presharedKeys: readonly string[];
  /** Largest request body in bytes. */
  bodyLimit: number;
  /** Checks per BatchCheck (OpenFGA's `maxChecksPerBatchCheck`, default 50). */
  maxChecksPerBatchCheck?: number;
  /** Logs an unexpected error with the request's id. */
  logError: (message: string, fields: Record<string, unknown>) => void;
  /** Counts a request (operation name, error code or `ok`, seconds). */
  observe?: (op: string, code: string, seconds: number) => void;
  /**
   * Called for a request without a valid key; resolves to the seconds to
   * wait when the caller's failures are over their limit (429), else
   * `undefined`. Key guessing is thus held to the per-IP rate limit, while
   * authenticated calls are never limited.
   */
  limitFailure?: (req: Request, res: Response) => Promise<number | undefined>;
}

/** What a handler reads of a request: express's `Request` has it, and so does the fast path's. */
interface ApiRequest {
  readonly body: unknown;
  readonly params: Record<string, string | undefined>;
  readonly query: Record<string, unknown>;
}

type Handler = (engine: Engine, req: ApiRequest, res: ServerResponse) => Promise<Json | undefined | typeof STREAMED>;

/** The API: the express router, and the fast path for its POST endpoints under a store. */
export interface OpenfgaApi {
  router: Router;
  /**
   * Serves `POST /stores/{store_id}/{action}` without express when the answer
   * could not differ from the router's (see {@link openfgaApi}); returns false,
   * touching nothing, otherwise. `begin` runs the guards the express stack runs
   * before the router (request id, security and CORS headers).
   */
  fast(req: IncomingMessage, res: ServerResponse, begin: (req: IncomingMessage, res: ServerResponse) => void): boolean;
  /** Counts kept as plain integers: `fastServed`, the requests `fast` took (returned true for) since the API was made. */
  readonly stats: { readonly fastServed: number };
}

/** A handler's result when it has written the response itself. */
const STREAMED = Symbol('streamed');

const digest = (s: string): Buffer => createHash('sha256').update(s, 'utf8').digest();

/** `ListObjects`' stream line as OpenFGA's grpc-gateway writes it. */
const streamLine = (object: string): string => `${JSON.stringify({ result: { object } })}\n`;

/**
 * The OpenFGA API as an express router, to mount at the root. Paths other
 * than `/stores…` fall through to the next handler.
 */
export function openfgaRouter(options: OpenfgaApiOptions): Router {
  return openfgaApi(options).router;
}

/** Media types the fast path parses as body-parser's JSON parser would (UTF-8, or no charset). */
const FAST_MEDIA_TYPE = /^application\/json(?:\s*;\s*charset="?utf-8"?)?\s*$/i;
/** `/stores/{store_id}/{action}`, as the router matches it (case-sensitive; a trailing slash is the router's). */
const STORE_ACTION = /^\/stores\/([^/?#]+)\/([a-z-]+)$/;

/**
 * The OpenFGA API: an express router to mount at the root (paths other than
 * `/stores…` fall through to the next handler), and a fast path that serves
 * the POST endpoints under a store — check, batch check, expand, list objects
 * and users, read, write — straight from node's request and response, the
 * hot path of every SDK. express's router, `express.json` and their request
 * wrappers cost as much CPU per request as a cached check itself.
 *
 * A request takes the fast path only when the router would answer it the same
 * way: an exact path, `POST`, a valid preshared key (a refusal is the
 * router's, with its failure limit), a `Content-Length` body within the limit
 * with no `Content-Encoding`, and no media type or JSON in UTF-8. The handler,
 * the metrics and the answers are the router's own (one `serve` function).
 */
/** The HTTP adapter's locals of a response (express's `res.locals`; set by the fast path too). */
const localsOf = (res: ServerResponse): HttpLocals | undefined => (res as ServerResponse & { locals?: HttpLocals }).locals;
/** Writes the headers the fast path deferred, before an answer that is not `sendJson`'s. */
const headersNowOf = (res: ServerResponse): void => {
  const l = localsOf(res);
  if (l !== undefined) headersNow(res, l);
};

export function openfgaApi(options: OpenfgaApiOptions): OpenfgaApi {
  if (options.presharedKeys.length === 0) throw new Error('the OpenFGA API needs at least one preshared key');
  const keys = options.presharedKeys.map(digest);
  const maxChecks = options.maxChecksPerBatchCheck ?? 50;
  const router = express.Router({ caseSensitive: true, strict: false });
  /** Stores known to exist, and until when (ms); a store deleted in this process leaves at once. */
  const known = new Map<string, number>();
  const KNOWN_MS = 5_000;

  const send = (res: ServerResponse, status: number, body: unknown): void => {
    if (res.headersSent) return;
    const l = localsOf(res);
    // The fast path defers the request id, security and CORS headers to the answer (http/guards.ts).
    if (status === 200 && l?.deferred === true) return sendJson(res, l, JSON.stringify(body));
    headersNowOf(res);
    res.statusCode = status;
    res.setHeader('content-type', 'application/json; charset=utf-8');
    res.end(JSON.stringify(body));
  };

  /** The bearer token of an `Authorization` header (the parse every transport uses), or undefined. */
  const bearer = (header: string | undefined): string | undefined => (typeof header === 'string' ? bearerToken(header) : undefined);
  /**
   * The `Authorization` header last accepted on each connection. An SDK sends
   * the same header on every call of a keep-alive connection; comparing it
   * with the one this connection already proved tells the caller nothing of
   * the keys, and saves hashing it again.
   */
  const accepted = new WeakMap<object, string>();
  /** Whether a bearer token is one of the keys: every key compared, each in constant time. */
  const validKey = (token: string, header: string, connection: object): boolean => {
    if (accepted.get(connection) === header) return true;
    const given = digest(token);
    let ok = false;
    for (const k of keys) ok = timingSafeEqual(k, given) || ok;
    if (ok) accepted.set(connection, header);
    return ok;
  };

  // Authentication before anything, body parsing included.
  router.use('/stores', (req, res, next) => {
    const header = req.headers.authorization;
    const token = bearer(header);
    const ok = token !== undefined && validKey(token, header as string, req.socket);
    if (ok) return next();
    const refuse = (): void =>
      token === undefined ? send(res, 401, { code: 'bearer_token_missing', message: 'missing bearer token' }) : send(res, 401, { code: 'unauthenticated', message: 'unauthenticated' });
    if (options.limitFailure === undefined) return refuse();
    options.limitFailure(req, res).then(
      (wait) => {
        if (wait === undefined) return refuse();
        res.setHeader('retry-after', String(wait));
        send(res, 429, { code: 'resource_exhausted', message: 'too many requests' });
      },
      () => refuse(),
    );
  });
  router.use('/stores', express.json({ limit: options.bodyLimit, strict: true, type: () => true }));

  /**
   * The engine of a store: at once for the default store and for a store
   * known to exist, else a promise after reading it (`not_found` when it is
   * not there). Throws `validation_error` for an id that is not a ULID.
   */
  const storeEngine = (root: Engine, id: string): Engine | Promise<Engine> => {
    if (!STORE_ID_PATTERN.test(id)) throw invalidRequest(`invalid store id '${id}': a store id is a ULID`);
    if (id !== DEFAULT_STORE_ID) {
      const until = known.get(id);
      if (until === undefined || until < Date.now()) {
        return root.readStore(id).then((store) => {
          if (store === undefined) {
            known.delete(id);
            throw new LatchkeyError('not_found', `store '${id}' not found`, { reason: 'store_not_found' });
          }
          if (known.size >= 10_000) known.clear();
          known.set(id, Date.now() + KNOWN_MS);
          return root.forStore(id);
        });
      }
    }
    return root.forStore(id);
  };

  /** POST endpoints under a store, by action (the last path segment), for the fast path. */
  const storeActions = new Map<string, (req: ApiRequest, res: ServerResponse) => void>();

  const route = (method: 'get' | 'post' | 'put' | 'delete', path: string, op: string, status: number, handler: Handler, perStore = true): void => {
    const serve = (req: ApiRequest, res: ServerResponse): Promise<void> => {
      const started = performance.now();
      const done = (code: string): void => options.observe?.(`openfga_${op}`, code, (performance.now() - started) / 1000);
      const root = options.engine();
      if (root === undefined) {
        done('undefined_endpoint');
        send(res, 404, { code: 'undefined_endpoint', message: 'fga is not enabled on this server' });
        return Promise.resolve();
      }
      const storeId = req.params['store_id'];
      let answer: Promise<Json | undefined | typeof STREAMED>;
      try {
        const engine = perStore && storeId !== undefined ? storeEngine(root, storeId) : root;
        answer = engine instanceof Promise ? engine.then((e) => handler(e, req, res)) : handler(engine, req, res);
      } catch (err) {
        answer = Promise.reject(err);
      }
      return answer
        .then(
          (body) => {
            done('ok');
            if (body === STREAMED) return;
            if (status === 204) {
              headersNowOf(res);
              res.statusCode = 204;
              res.end();
              return;
            }
            send(res, status, body ?? {});
          },
          (err: unknown) => {
            const out = toOpenfga(err);
            if (out.status >= 500) options.logError('openfga api error', { op, err });
            done(out.body.code);
            send(res, out.status, out.body);
          },
        );
    };
    router[method](path, (req: Request, res: Response, next: NextFunction) => {
      serve(req as ApiRequest, res).catch(next);
    });
    const action = /^\/stores\/:store_id\/([a-z-]+)$/.exec(path)?.[1];
    if (method === 'post' && action !== undefined) {
      storeActions.set(action, (req, res) => {
        serve(req, res).catch((err: unknown) => {
          options.logError('openfga api error', { op, err });
          send(res, 500, { code: 'internal_error', message: 'Internal Server Error' });
        });
      });
    }
  };

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
    known.delete(id);
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
    if (items.length > maxChecks) throw invalidRequest(`batchCheck received ${items.length} checks, the maximum allowed is ${maxChecks}`);
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
    headersNowOf(res);
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
        if (e.status >= 500) options.logError('openfga api error', { op: 'streamed_list_objects', err });
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

  // Anything else under /stores: OpenFGA's answer for an unknown path.
  router.use('/stores', (_req, res) => send(res, 404, { code: 'undefined_endpoint', message: 'Endpoint not enabled' }));
  router.use('/.well-known/authzen-configuration', (_req, res) => send(res, 404, { code: 'undefined_endpoint', message: 'Endpoint not enabled' }));
  // Body parse errors (and anything thrown synchronously) in OpenFGA's shape.
  router.use('/stores', (err: unknown, _req: Request, res: Response, _next: NextFunction) => {
    void _next;
    const e = err as { type?: string; status?: number };
    if (e?.type === 'entity.too.large') return send(res, 413, { code: 'validation_error', message: 'request body too large' });
    if (e?.type === 'entity.parse.failed' || e?.status === 400) return send(res, 400, { code: 'validation_error', message: 'invalid JSON body' });
    options.logError('openfga api error', { err });
    send(res, 500, { code: 'internal_error', message: 'Internal Server Error' });
  });

  const stats = { fastServed: 0 };
  const fast = (req: IncomingMessage, res: ServerResponse, begin: (req: IncomingMessage, res: ServerResponse) => void): boolean => {
    if (req.method !== 'POST') return false;
    const m = STORE_ACTION.exec(req.url ?? '');
    if (m === null) return false;
    const serve = storeActions.get(m[2]!);
    if (serve === undefined) return false;
    const h = req.headers;
    const length = h['content-length'];
    if (length === undefined || h['transfer-encoding'] !== undefined || h['content-encoding'] !== undefined) return false;
    const type = h['content-type'];
    if (type !== undefined && !FAST_MEDIA_TYPE.test(type)) return false;
    const n = Number(length);
    if (!Number.isSafeInteger(n) || n < 0 || n > options.bodyLimit) return false;
    const header = h.authorization;
    // The header this connection already proved needs no parsing either.
    if (typeof header !== 'string' || accepted.get(req.socket) !== header) {
      const key = bearer(header);
      if (key === undefined || !validKey(key, header as string, req.socket)) return false;
    }
    let storeId: string;
    try {
      storeId = decodeURIComponent(m[1]!);
    } catch {
      return false;
    }

    stats.fastServed++;
    begin(req, res);
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.once('end', () => {
      let body: unknown;
      try {
        body = parseJsonBody((chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks)).toString('utf8'));
      } catch {
        return send(res, 400, { code: 'validation_error', message: 'invalid JSON body' });
      }
      serve({ body, params: { store_id: storeId }, query: {} }, res);
    });
    // A client that goes away mid-body gets no answer (it could not read one).
    req.once('error', () => undefined);
    return true;
  };
  return { router, fast, stats };
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
