/**
 * Adapts the FGA {@link Engine} to the narrow {@link PermissionEngine} the
 * identity service needs (check_permissions, list_permissions and the
 * `required_relations` of session and validation operations).
 */
import type { CheckRequest, Engine, TupleKey } from '../engine/index.ts';
import { checkContext, type PermissionCheck, type PermissionEngine, type WireTuple } from './permissions.ts';

/**
 * Wraps an engine. A check the engine cannot answer (invalid object, unknown
 * type or relation, resolution too complex) fails the call with the engine's
 * error rather than answering false, so that a caller never mistakes a
 * malformed question for a denial; authorization still fails closed because
 * nothing is allowed.
 */
export function engineAsPermissionEngine(engine: Engine): PermissionEngine {
  return {
    // Check answers one check as the batch would, its error thrown as the batch's item error is; an answer at hand
    // (a cache hit, a fresh mirror) comes without a promise.
    check(request) {
      const r = engine.checkAtHand(engineRequest(request));
      return r instanceof Promise ? r.then(allowedOf) : r.allowed;
    },
    async batchCheck(requests) {
      // One check (required_relations of one): answered by Check, without the batch's bookkeeping.
      if (requests.length === 1) return [(await engine.check(engineRequest(requests[0]!))).allowed];
      const out: boolean[] = [];
      // The engine's batch cap is 100 by default; larger inputs (never from the wire) are chunked.
      for (let i = 0; i < requests.length; i += 100) {
        const chunk = requests.slice(i, i + 100);
        const results = await engine.batchCheck(chunk.map(engineRequest));
        for (const r of results) {
          if (r.error !== undefined) throw r.error;
          out.push(r.allowed === true);
        }
      }
      return out;
    },
    async listObjects(request) {
      const res = await engine.listObjects({
        user: request.user,
        relation: request.relation,
        type: request.type,
        reportUndecided: true,
        ...(request.context === undefined ? {} : { context: request.context }),
        ...(request.atLeastRevision === undefined ? {} : { atLeastRevision: request.atLeastRevision }),
      });
      return { objects: res.objects.slice(0, request.limit), truncated: res.truncated || res.objects.length > request.limit, undecided: res.undecided ?? [] };
    },
    async explain(request) {
      const r = await engine.explain(engineRequest(request));
      return r.error === undefined ? { allowed: r.allowed, tree: r.tree } : { allowed: r.allowed, tree: r.tree, error: r.error };
    },
    async listRelations(request) {
      const res = await engine.listRelations({
        user: request.user,
        object: request.object,
        ...(request.context === undefined ? {} : { context: request.context }),
        ...(request.atLeastRevision === undefined ? {} : { atLeastRevision: request.atLeastRevision }),
      });
      return res;
    },
    async listObjectsPage(request) {
      const res = await engine.listObjectsPage(
        { user: request.user, relation: request.relation, type: request.type, reportUndecided: true, ...(request.context === undefined ? {} : { context: request.context }) },
        {
          pageSize: request.pageSize,
          continuationToken: request.continuationToken,
          ...(request.atRevision === undefined ? {} : { atRevision: request.atRevision }),
          ...(request.deadlineMs === undefined ? {} : { deadlineMs: request.deadlineMs }),
        },
      );
      const out = { objects: res.objects, continuationToken: res.continuationToken, revision: res.revision, undecided: res.undecided ?? [] };
      return res.deadlineExceeded === true ? { ...out, deadlineExceeded: true } : out;
    },
    async relationsByType() {
      const model = await engine.readModel();
      const out = new Map<string, string[]>();
      for (const td of model?.type_definitions ?? []) out.set(td.type, Object.keys(td.relations ?? {}));
      return out;
    },
  };
}

const allowedOf = (r: { readonly allowed: boolean }): boolean => r.allowed;

/** The engine's form of a permission check. */
function engineRequest(r: PermissionCheck): CheckRequest {
  const q: CheckRequest = { user: r.user, relation: r.relation, object: r.object };
  if (r.contextualTuples !== undefined && r.contextualTuples.length > 0) q.contextualTuples = r.contextualTuples.map(plain);
  if (r.context !== undefined) q.context = r.context;
  if (r.atLeastRevision !== undefined) q.atLeastRevision = r.atLeastRevision;
  return q;
}

function plain(t: WireTuple): TupleKey {
  const out: TupleKey = { user: t.user, relation: t.relation, object: t.object };
  if (t.condition !== undefined && t.condition !== null) {
    const context = checkContext(t.condition.context);
    out.condition = context === undefined ? { name: t.condition.name } : { name: t.condition.name, context };
  }
  return out;
}

/**
 * The FGA user strings that stand for a Latchkey user: the subject every
 * permission call and `required_relations` check uses (`user:<id>`). Deleting
 * a user removes every tuple whose user is one of these.
 */
export function fgaSubjectsOfUser(userId: string): string[] {
  return [`user:${userId}`];
}
