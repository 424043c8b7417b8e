/**
 * ListUsers: the users of a given type (or usersets `type#relation`, or
 * typed wildcards) that hold a relation on an object.
 *
 * Like ListObjects, two phases: a forward expansion from the object collects
 * candidates matching the user filter (ignoring conditions and treating
 * intersections and exclusions as "any operand but the subtracted one"),
 * then each candidate is confirmed with Check, so ListUsers and Check agree
 * by construction (including the wildcard-with-exclusion case behind
 * GHSA-g3pg-frfm-pr2m: an excluded user is never returned).
 */
import type { TupleReader } from './reader.ts';
import type { TypeSystem } from './typesystem.ts';
import { rewriteChildren } from './typesystem.ts';
import type { Userset } from './model.ts';

/** One user filter: a type, optionally with a relation (`group#member`). */
export interface UserFilter {
  type: string;
  relation?: string;
}

/** Candidate users (`user:1`, `user:*`, `group:a#member`) for `object#relation`, sorted. */
export async function listUserCandidates(
  ts: TypeSystem,
  reader: TupleReader,
  objectType: string,
  objectId: string,
  relation: string,
  filter: UserFilter,
  context: Record<string, unknown> | undefined,
): Promise<string[]> {
  // OpenFGA's ListUsers fails when a condition on any traversed tuple cannot
  // be evaluated, even if another path reaches the same user
  // (abac_tests.yaml relation_through_ttu_with_condition); tuples whose
  // condition is false are not followed.
  let error: unknown;
  const passes = (t: { condition?: { name: string; context?: Record<string, unknown> } }): boolean => {
    const c = t.condition;
    if (c === undefined || c.name === '') return true;
    const compiled = ts.condition(c.name);
    if (compiled === undefined) return false;
    try {
      return compiled.evaluate(c.context, context);
    } catch (err) {
      error ??= err;
      return false;
    }
  };
  const seen = new Set<string>();
  const candidates = new Set<string>();
  let queue: { type: string; id: string; relation: string }[] = [];
  const reach = (type: string, id: string, rel: string): void => {
    const k = `${type}:${id}#${rel}`;
    if (seen.has(k)) return;
    seen.add(k);
    queue.push({ type, id, relation: rel });
    if (filter.relation !== undefined && type === filter.type && rel === filter.relation) candidates.add(k);
  };
  reach(objectType, objectId, relation);
  while (queue.length > 0) {
    const level = queue;
    queue = [];
    await Promise.all(
      level.map(async (n) => {
        const rw = ts.rewrite(n.type, n.relation);
        if (rw === undefined) return;
        const stack: Userset[] = [rw];
        const reads: Promise<void>[] = [];
        while (stack.length > 0) {
          const node = stack.pop()!;
          if ('this' in node) {
            reads.push(
              reader.objectRelation(n.type, n.id, n.relation, 'all').then((tuples) => {
                for (const t of tuples) {
                  if (!passes(t.tuple)) continue;
                  const u = t.user;
                  if (u.kind === 'userset') reach(u.type, u.id, u.relation);
                  else if (filter.relation === undefined && u.type === filter.type) {
                    candidates.add(u.kind === 'wildcard' ? `${u.type}:*` : `${u.type}:${u.id}`);
                  }
                }
              }),
            );
          } else if ('computedUserset' in node) {
            reach(n.type, n.id, node.computedUserset.relation ?? '');
          } else if ('tupleToUserset' in node) {
            const target = node.tupleToUserset.computedUserset.relation ?? '';
            reads.push(
              reader.objectRelation(n.type, n.id, node.tupleToUserset.tupleset.relation ?? '', 'all').then((tuples) => {
                for (const t of tuples) {
                  if (!passes(t.tuple)) continue;
                  if (t.user.kind === 'object' && ts.rewrite(t.user.type, target) !== undefined) reach(t.user.type, t.user.id, target);
                }
              }),
            );
          } else if ('difference' in node) {
            stack.push(node.difference.base);
          } else {
            stack.push(...rewriteChildren(node));
          }
        }
        await Promise.all(reads);
      }),
    );
  }
  if (error !== undefined) throw error;
  return [...candidates].sort();
}
