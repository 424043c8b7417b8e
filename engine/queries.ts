/**
 * The Engine's queries besides Check: ListObjects, ListUsers (and their
 * pages), ListRelations, Explain and Expand, each validated against the model (OpenFGA's error
 * codes) and handed to its algorithm (engine/list_objects.ts,
 * engine/list_users.ts, engine/explain.ts, engine/expand.ts) with the check
 * path's reads, context and limits.
 *
 * Apart from engine/index.ts so that the `Engine` class keeps its public
 * surface and the state it owns (store, check path, views, watchers), while
 * what each query does with a request is here, as functions that take the
 * check path, resolver and limits they read. Check itself stays in the class:
 * it is the hot path, and its steps live in engine/check/check_path.ts.
 */
import { type CheckOutcome, type ExplainResult, explainCheck } from './explain.ts';
import { expandRewrite } from './expand.ts';
import { LatchkeyError } from './errors.ts';
import { listObjectIds } from './list_objects.ts';
import { byCodeUnits } from './list_pages.ts';
import { type ListPager, type PageScan, scanBudget } from './list_paging.ts';
import { scanObjectsPage } from './list_scan.ts';
import { type UserFilter, listUsers } from './list_users.ts';
import type { TupleReader } from './reader.ts';
import type { TypeSystem } from './typesystem.ts';
import { FGA_CODES } from './validation.ts';
import { type ParsedUser, parseObject, show, tryParseUser } from './tuple.ts';
import { type CheckResolver, type ResolutionContext, Scope } from './check/check_resolver.ts';
import { type CheckPath, invalid } from './check/check_path.ts';
import type { BatchCheckResult, CheckRequest, CheckResult, ExpandRequest, ExpandResult, Limits, ListObjectsPage, ListObjectsRequest, ListObjectsResult, ListPageOptions, ListRelationsRequest, ListRelationsResult, ListUsersPage, ListUsersRequest, ListUsersResult, QueryOptions, UndecidedObject } from './engine_types.ts';

/** What ListRelations and the page scan ask of the engine: its batched Check, with its consistency rules. */
export interface BatchChecker {
  batchCheck(checks: CheckRequest[], options: { modelId?: string }): Promise<BatchCheckResult[]>;
}

/** The reasons of a condition's errors (compiled_condition.ts), which Explain shows rather than throws. */
const CONDITION_REASONS: ReadonlySet<string> = new Set(['missing_condition_parameters', 'condition_evaluation_failed', 'condition_cost_exceeded', 'invalid_condition_context']);

/** What ListObjects reads before its walk, with its validation: the model, type, relation, user, context and contextual tuples. */
export async function listObjectsInput(path: CheckPath, req: ListObjectsRequest): Promise<{ ts: TypeSystem; reader: TupleReader; user: ParsedUser; ctx: ResolutionContext }> {
  const prepared = await path.prepare(req);
  const ts = prepared.ts;
  // Full consistency reads the store itself, never a store's in-memory synchronous reads (the graph mirror).
  const reader = req.consistency === 'higher_consistency' ? prepared.reader.direct() : prepared.reader;
  if (typeof req.type !== 'string' || !ts.hasType(req.type)) throw invalid(`type '${show(req.type)}' not found`, { reason: 'type_not_found', code: FGA_CODES.type_not_found });
  if (typeof req.relation !== 'string' || ts.rewrite(req.type, req.relation) === undefined) {
    throw invalid(`relation '${req.type}#${show(req.relation)}' not found`, { reason: 'relation_not_found', code: FGA_CODES.relation_not_found });
  }
  const user = path.parseCheckUser(ts, req.user, FGA_CODES.validation_error);
  const ctx = path.context(ts, reader, req.context, req.consistency);
  return { ts, reader, user, ctx };
}

/** `Engine.listObjects` for a request already made fresher (see there; a request that is not an object is passed as it is). */
export async function answerListObjects(path: CheckPath, resolver: CheckResolver, limits: Limits, req: ListObjectsRequest): Promise<ListObjectsResult> {
  if (req === null || typeof req !== 'object') throw invalid('list objects request must be an object', { reason: 'invalid_list_objects_input' });
  const { ts, reader, user, ctx } = await listObjectsInput(path, req);
  const undecided: UndecidedObject[] | undefined = req.reportUndecided === true ? [] : undefined;
  const { ids, truncated } = await listObjectIds(ts, reader, user, req.type, req.relation, {
    context: req.context,
    maxDepth: limits.maxResolutionDepth,
    maxResults: limits.listObjectsMaxResults,
    concurrency: limits.maxConcurrentChecks,
    check: async (id) => {
      const r = await resolver.resolveCheck(
        { objectType: req.type, objectId: id, relation: req.relation, user, depth: 0, path: undefined, scope: new Scope() },
        path.topLevel(ctx, ts, req.type, req.relation),
      );
      return r.allowed && !r.cycle;
    },
    // Only a missing parameter leaves an object undecided; any other error (a bad context value, the depth) still fails.
    ...(undecided === undefined
      ? {}
      : {
          absorb: (id: string, err: unknown): boolean => {
            if (!(err instanceof LatchkeyError) || err.reason !== 'missing_condition_parameters') return false;
            const missing = (err.details as { missing?: unknown } | undefined)?.missing;
            undecided.push({ object: `${req.type}:${id}`, missingParameters: Array.isArray(missing) ? missing.map(String) : [] });
            return true;
          },
        }),
  });
  const objects = ids.map((id) => `${req.type}:${id}`);
  if (undecided === undefined) return { objects, truncated };
  undecided.sort((a, b) => (a.object < b.object ? -1 : a.object > b.object ? 1 : 0));
  return { objects, truncated, undecided };
}

/** What a page of ListObjects or ListUsers asks of the view it is computed on (an `Engine`). */
export interface ListingView extends BatchChecker {
  listObjects(req: ListObjectsRequest): Promise<ListObjectsResult>;
  listUsers(req: ListUsersRequest): Promise<ListUsersResult>;
}

/**
 * `Engine.listObjectsPage` (see there), its pages computed on views of
 * `pager`; `validate` answers a request's errors on a view as ListObjects
 * would, before a scan.
 */
export async function answerListObjectsPage<V extends ListingView>(pager: ListPager<V>, chunk: number, validate: (view: V, req: ListObjectsRequest) => Promise<unknown>, req: ListObjectsRequest, page: ListPageOptions): Promise<ListObjectsPage> {
  if (req === null || typeof req !== 'object') throw invalid('list objects request must be an object', { reason: 'invalid_list_objects_input' });
  const question = ['objects', req.user, req.relation, req.type, req.context ?? null, req.contextualTuples ?? null, req.reportUndecided === true];
  // The candidate scan serves pages without undecided objects (those are reported on a walk's first page, whole).
  const scan = objectsPageScan(req, chunk, validate);
  const out = await pager.page(
    question,
    req.modelId,
    page,
    (view, modelId) => view.listObjects({ ...req, modelId, consistency: 'higher_consistency' }).then((r) => ({ items: r.objects, truncated: r.truncated, undecided: r.undecided })),
    scan,
  );
  const result: ListObjectsPage = { objects: out.items, continuationToken: out.continuationToken, revision: out.revision };
  if (out.total !== undefined) result.total = out.total;
  if (out.deadlineExceeded) result.deadlineExceeded = true;
  if (req.reportUndecided === true) result.undecided = out.undecided ?? [];
  return result;
}

/** `Engine.listUsersPage` (see there), its pages computed on views of `pager`. */
export async function answerListUsersPage<V extends ListingView>(pager: ListPager<V>, req: ListUsersRequest, page: ListPageOptions): Promise<ListUsersPage> {
  if (req === null || typeof req !== 'object') throw invalid('list users request must be an object', { reason: 'invalid_list_users_input' });
  const question = ['users', req.object, req.relation, req.userFilters ?? null, req.context ?? null, req.contextualTuples ?? null];
  const out = await pager.page(question, req.modelId, page, (view, modelId) =>
    view.listUsers({ ...req, modelId, consistency: 'higher_consistency' }).then((r) => ({ items: r.users, truncated: r.truncated, undecided: undefined })),
  );
  const result: ListUsersPage = { users: out.items, continuationToken: out.continuationToken, revision: out.revision };
  if (out.total !== undefined) result.total = out.total;
  if (out.deadlineExceeded) result.deadlineExceeded = true;
  return result;
}

/**
 * The candidate scan that serves the pages of `Engine.listObjectsPage`
 * (engine/list_scan.ts), or `undefined` for a request that reports undecided
 * objects (those come from a walk's first page, whole). `validate` answers
 * the request's errors on a view as ListObjects would.
 */
function objectsPageScan<V extends BatchChecker>(req: ListObjectsRequest, chunk: number, validate: (view: V, req: ListObjectsRequest) => Promise<unknown>): PageScan<V> | undefined {
  if (req.reportUndecided === true) return undefined;
  return async (view, snapshot, modelId, after, size, deadlineAt) => {
    // The request's errors first, as ListObjects answers them (a type with no objects is still unknown).
    await validate(view, { ...req, modelId, consistency: 'higher_consistency' });
    const prefix = `${String(req.type)}:`;
    const extra = Array.isArray(req.contextualTuples)
      ? [...new Set(req.contextualTuples.map((t) => (typeof t?.object === 'string' && t.object.startsWith(prefix) ? t.object.slice(prefix.length) : '')).filter((id) => id !== ''))].sort(byCodeUnits)
      : [];
    return scanObjectsPage({
      store: snapshot,
      type: String(req.type),
      after,
      size,
      extra,
      budget: scanBudget(size),
      chunk,
      deadlineAt,
      confirm: async (objects) => {
        const checks = objects.map((object) => {
          const c: CheckRequest = { user: req.user, relation: req.relation, object, consistency: 'higher_consistency' };
          if (req.context !== undefined) c.context = req.context;
          if (req.contextualTuples !== undefined) c.contextualTuples = req.contextualTuples;
          return c;
        });
        const rs = await view.batchCheck(checks, { modelId });
        return rs.map((r) => (r.error !== undefined ? 'error' : r.allowed));
      },
    });
  };
}

/** `Engine.listRelations`, its checks batched through `engine` (see there). */
export async function answerListRelations(path: CheckPath, engine: BatchChecker, maxChecksPerBatch: number, req: ListRelationsRequest): Promise<ListRelationsResult> {
  if (req === null || typeof req !== 'object') throw invalid('list relations request must be an object', { reason: 'invalid_list_relations_input' });
  const ts = await path.typesystem(req.modelId);
  const object = parseObject(req.object);
  if (!ts.hasType(object.type)) throw invalid(`type '${object.type}' not found`, { reason: 'type_not_found', code: FGA_CODES.type_not_found });
  const all = [...ts.relationsOf(object.type).keys()];
  let wanted = all;
  if (req.relations !== undefined) {
    if (!Array.isArray(req.relations)) throw invalid('relations must be a list', { reason: 'invalid_list_relations_input' });
    for (const r of req.relations) {
      if (typeof r !== 'string' || ts.rewrite(object.type, r) === undefined) {
        throw invalid(`relation '${object.type}#${show(r)}' not found`, { reason: 'relation_not_found', code: FGA_CODES.relation_not_found });
      }
    }
    const asked = new Set(req.relations);
    wanted = all.filter((r) => asked.has(r));
  }
  const base: QueryOptions = {};
  if (req.contextualTuples !== undefined) base.contextualTuples = req.contextualTuples;
  if (req.context !== undefined) base.context = req.context;
  if (req.consistency !== undefined) base.consistency = req.consistency;
  if (req.atLeastRevision !== undefined) base.atLeastRevision = req.atLeastRevision;
  const relations: string[] = [];
  const undecided: ListRelationsResult['undecided'] = [];
  const step = maxChecksPerBatch;
  for (let i = 0; i < wanted.length; i += step) {
    const chunk = wanted.slice(i, i + step);
    const results = await engine.batchCheck(chunk.map((relation) => ({ ...base, user: req.user, relation, object: req.object })), { modelId: ts.id });
    for (const [j, r] of results.entries()) {
      const relation = chunk[j]!;
      if (r.error === undefined) {
        if (r.allowed) relations.push(relation);
      } else if (r.error.reason === 'missing_condition_parameters') {
        const missing = (r.error.details as { missing?: unknown } | undefined)?.missing;
        undecided.push({ relation, missingParameters: Array.isArray(missing) ? missing.map(String) : [] });
      } else {
        throw r.error;
      }
    }
  }
  return { relations, undecided };
}

/** `Engine.listUsers` for a request already made fresher (see there; a request that is not an object is passed as it is). */
export async function answerListUsers(path: CheckPath, resolver: CheckResolver, limits: Limits, req: ListUsersRequest): Promise<ListUsersResult> {
  if (req === null || typeof req !== 'object') throw invalid('list users request must be an object', { reason: 'invalid_list_users_input' });
  const { ts, reader } = await path.prepare(req);
  const object = parseObject(req.object);
  if (!ts.hasType(object.type)) throw invalid(`type '${object.type}' not found`, { reason: 'type_not_found', code: FGA_CODES.type_not_found });
  if (typeof req.relation !== 'string' || ts.rewrite(object.type, req.relation) === undefined) {
    throw invalid(`relation '${object.type}#${show(req.relation)}' not found`, { reason: 'relation_not_found', code: FGA_CODES.relation_not_found });
  }
  if (!Array.isArray(req.userFilters) || req.userFilters.length !== 1) throw invalid('exactly one user filter is required', { reason: 'invalid_user_filter' });
  const filter = req.userFilters[0]!;
  if (filter === null || typeof filter !== 'object' || typeof filter.type !== 'string' || !ts.hasType(filter.type)) {
    throw invalid(`type '${show(filter?.type)}' not found`, { reason: 'type_not_found', code: FGA_CODES.type_not_found });
  }
  if (filter.relation !== undefined && filter.relation !== '' && ts.rewrite(filter.type, filter.relation) === undefined) {
    throw invalid(`relation '${filter.type}#${filter.relation}' not found`, { reason: 'relation_not_found', code: FGA_CODES.relation_not_found });
  }
  const f: UserFilter = filter.relation === undefined || filter.relation === '' ? { type: filter.type } : { type: filter.type, relation: filter.relation };
  const ctx = path.context(ts, reader, req.context, req.consistency);
  return listUsers(ts, reader, object.type, object.id, req.relation, f, {
    context: req.context,
    maxDepth: limits.maxResolutionDepth,
    maxResults: limits.listUsersMaxResults,
    concurrency: limits.maxConcurrentChecks,
    check: async (candidate) => {
      const r = await resolver.resolveCheck(
        { objectType: object.type, objectId: object.id, relation: req.relation, user: tryParseUser(candidate)!, depth: 0, path: undefined, scope: new Scope() },
        path.topLevel(ctx, ts, object.type, req.relation),
      );
      return r.allowed && !r.cycle;
    },
  });
}

/** Check's answer to `req` as Explain takes it: a condition's error is an outcome to explain; any other error is thrown. */
export async function checkOutcome(engine: { check(req: CheckRequest): Promise<CheckResult> }, req: CheckRequest): Promise<CheckOutcome> {
  try {
    return { allowed: (await engine.check(req)).allowed };
  } catch (err) {
    // Only a condition's error is explained; invalid input and the resolution limits are the caller's answer.
    if (!(err instanceof LatchkeyError) || !CONDITION_REASONS.has(err.reason ?? '')) throw err;
    return { allowed: false, error: err };
  }
}

/** `Engine.explain` for a request already made fresher, with Check's `outcome` (see `Engine.explain`). */
export async function answerExplain(path: CheckPath, limits: Limits, req: CheckRequest, outcome: CheckOutcome): Promise<ExplainResult> {
  const { ts, reader } = await path.prepare(req);
  const object = parseObject(req.object);
  const user = path.parseCheckUser(ts, req.user, FGA_CODES.validation_error);
  const ctx = {
    ts,
    // Full consistency reads the store itself, as Check does (never a memory layer's copy).
    reader: req.consistency === 'higher_consistency' ? reader.direct() : reader,
    context: req.context,
    maxDepth: limits.maxResolutionDepth,
    maxDispatches: limits.maxDispatchesPerCheck,
  };
  return explainCheck(ctx, object.type, object.id, req.relation, user, outcome);
}

/** `Engine.expand` (see there). */
export async function answerExpand(path: CheckPath, req: ExpandRequest): Promise<ExpandResult> {
  if (req === null || typeof req !== 'object' || typeof req.object !== 'string' || req.object === '' || typeof req.relation !== 'string' || req.relation === '') {
    throw invalid('expand needs an object and a relation', { reason: 'invalid_expand_input', code: 2010 });
  }
  const { ts, reader } = await path.prepare(req);
  const object = parseObject(req.object);
  if (!ts.hasType(object.type)) throw invalid(`type '${object.type}' not found`, { reason: 'type_not_found', code: FGA_CODES.type_not_found });
  const rw = ts.rewrite(object.type, req.relation);
  if (rw === undefined) throw invalid(`relation '${object.type}#${req.relation}' not found`, { reason: 'relation_not_found', code: FGA_CODES.relation_not_found });
  return { tree: { root: await expandRewrite(reader, object.type, object.id, req.relation, rw) } };
}
