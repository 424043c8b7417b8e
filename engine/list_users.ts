/**
 * ListUsers: the users of a given type (or usersets `type#relation`, or
 * typed wildcards) that hold a relation on an object.
 *
 * A forward expansion from `object#relation` (see docs/list-objects.md), one
 * level at a time: the reads of a level are issued together, and the
 * reader coalesces them into one batched store call. Each `object#relation`
 * is expanded once. Every reached node, and every user found in it, is
 * either
 * - **exact**: reached along parts of rewrites that sit only under unions,
 *   over tuples whose conditions evaluated to true; Check answers true for
 *   such a user (union: true wins), so it is listed without a Check when it
 *   lies above the depth limit;
 * - **a candidate**: reached through an intersection operand or the base of
 *   an exclusion; it is confirmed by Check, so Check's rules decide (an
 *   excluded user is never returned, even next to a wildcard, the case
 *   behind GHSA-g3pg-frfm-pr2m).
 * Tuples whose condition is false are not followed. A condition that
 * cannot be evaluated on any traversed tuple fails the request, as
 * OpenFGA's ListUsers does (abac_tests.yaml
 * `relation_through_ttu_with_condition`).
 */
import type { ReadTuple, TupleReader } from './reader.ts';
import type { TypeSystem } from './typesystem.ts';
import { rewriteChildren } from './rewrites.ts';
import type { Userset } from './model.ts';
import { conditionOutcome, confirmCandidates } from './list_common.ts';

/** One user filter: a type, optionally with a relation (`group#member`). */
export interface UserFilter {
  type: string;
  relation?: string;
}

/** Settings of one ListUsers expansion. */
export interface ListUsersOptions {
  /** Request context for conditions. */
  context: Record<string, unknown> | undefined;
  /** Check's depth limit: exact users Check would reach only at this depth or deeper are confirmed instead. */
  maxDepth: number;
  maxResults: number;
  /** Confirming Checks in flight at once. */
  concurrency: number;
  /** Check of one user (`user:1`, `user:*`, `group:a#member`); throws Check's errors. */
  check: (user: string) => Promise<boolean>;
}

const CANDIDATE = 1;
const EXACT = 2;

interface Node {
  type: string;
  id: string;
  relation: string;
  exact: boolean;
  /** Dispatches Check needs from the request's object to this node. */
  level: number;
}

/** Users (`user:1`, `user:*`, `group:a#member`) holding `relation` on `objectType:objectId`, sorted, at most `maxResults`. */
export async function listUsers(
  ts: TypeSystem,
  reader: TupleReader,
  objectType: string,
  objectId: string,
  relation: string,
  filter: UserFilter,
  options: ListUsersOptions,
): Promise<{ users: string[]; truncated: boolean }> {
  let error: unknown;
  const onError = (err: unknown): void => {
    error ??= err;
  };
  let state = new Map<string, number>();
  /**
   * Second pass only: every relation reachable, subtracted sides included,
   * all candidates, conditions ignored (see the end of this function).
   */
  let wide = false;
  const userState = new Map<string, number>();
  const exactUsers: string[] = [];
  const candidates = new Set<string>();
  let frontier: Node[] = [];

  // Check reads a node's tuples at the node's depth; exact answers it would
  // reach only near the depth limit are confirmed, so its error is not hidden.
  const found = (user: string, exact: boolean, level: number): void => {
    if (wide) {
      if (!userState.has(user)) candidates.add(user);
      return;
    }
    const want = exact && level + 1 < options.maxDepth ? EXACT : CANDIDATE;
    const s = userState.get(user);
    if (s !== undefined && s >= want) return;
    userState.set(user, want);
    if (want === EXACT) exactUsers.push(user);
    else candidates.add(user);
  };
  const reach = (type: string, id: string, rel: string, exact: boolean, level: number): void => {
    const k = `${type}:${id}#${rel}`;
    const s = state.get(k);
    const want = exact ? EXACT : CANDIDATE;
    if (s !== undefined && s >= want) return;
    state.set(k, want);
    frontier.push({ type, id, relation: rel, exact, level });
    if (filter.relation !== undefined && type === filter.type && rel === filter.relation) found(k, exact, level);
  };

  /** Tuples read for one node, with what to do with them once the level's reads are back. */
  const pending: { reads: Promise<ReadTuple[]>; apply: (tuples: ReadTuple[]) => void }[] = [];
  const expand = (n: Node): void => {
    const rw = ts.rewrite(n.type, n.relation);
    if (rw === undefined) return;
    const stack: { u: Userset; exact: boolean }[] = [{ u: rw, exact: n.exact }];
    while (stack.length > 0) {
      const { u, exact } = stack.pop()!;
      if ('this' in u) {
        pending.push({
          reads: reader.objectRelation(n.type, n.id, n.relation, 'all'),
          apply: (tuples) => {
            for (const t of tuples) {
              if (!wide && conditionOutcome(ts, t.tuple, options.context, onError) !== 'true') continue;
              const user = t.user;
              if (user.kind === 'userset') reach(user.type, user.id, user.relation, exact, n.level + 1);
              else if (filter.relation === undefined && user.type === filter.type) found(user.kind === 'wildcard' ? `${user.type}:*` : `${user.type}:${user.id}`, exact, n.level);
            }
          },
        });
      } else if ('computedUserset' in u) {
        reach(n.type, n.id, u.computedUserset.relation ?? '', exact, n.level + 1);
      } else if ('tupleToUserset' in u) {
        const target = u.tupleToUserset.computedUserset.relation ?? '';
        pending.push({
          reads: reader.objectRelation(n.type, n.id, u.tupleToUserset.tupleset.relation ?? '', 'all'),
          apply: (tuples) => {
            for (const t of tuples) {
              if (!wide && conditionOutcome(ts, t.tuple, options.context, onError) !== 'true') continue;
              if (t.user.kind === 'object' && ts.rewrite(t.user.type, target) !== undefined) reach(t.user.type, t.user.id, target, exact, n.level + 1);
            }
          },
        });
      } else if ('difference' in u) {
        stack.push({ u: u.difference.base, exact: false });
        if (wide) stack.push({ u: u.difference.subtract, exact: false });
      } else if ('union' in u) {
        for (const c of rewriteChildren(u)) stack.push({ u: c, exact });
      } else {
        for (const c of rewriteChildren(u)) stack.push({ u: c, exact: false });
      }
    }
  };

  const walk = async (): Promise<void> => {
    reach(objectType, objectId, relation, !wide, 0);
    while (frontier.length > 0) {
      const nodes = frontier;
      frontier = [];
      for (const n of nodes) expand(n);
      const batch = pending.splice(0, pending.length);
      const results = await Promise.all(batch.map((p) => p.reads));
      batch.forEach((p, i) => p.apply(results[i]!));
    }
  };
  await walk();
  if (error !== undefined) throw error;
  // A wildcard that is only a candidate (under an intersection or an
  // exclusion) does not stand for every user: a user named on a subtracted
  // side (or behind a cycle there) can be allowed where `type:*` is not. Such
  // users appear in some tuple reachable from the object, so a second walk
  // over every reachable relation makes each of them a candidate for Check.
  const wildcard = `${filter.type}:*`;
  if (filter.relation === undefined && candidates.has(wildcard) && userState.get(wildcard) !== EXACT) {
    wide = true;
    state = new Map();
    await walk();
  }

  const max = options.maxResults;
  if (exactUsers.length > max) {
    exactUsers.sort();
    return { users: exactUsers.slice(0, max), truncated: true };
  }
  const exactSet = new Set(exactUsers);
  const toCheck = [...candidates].filter((u) => !exactSet.has(u)).sort();
  const { confirmed, error: checkError } = await confirmCandidates(toCheck, options.check, { concurrency: options.concurrency, max, known: exactUsers.length });
  const all = exactUsers.concat(confirmed);
  if (checkError !== undefined && all.length < max) throw checkError;
  all.sort();
  return { users: all.slice(0, max), truncated: all.length > max };
}
