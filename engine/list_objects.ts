/**
 * ListObjects: the objects of a type on which a user holds a relation.
 *
 * One reverse expansion from the user over the model graph read backwards
 * (see docs/list-objects.md), one batched reverse read
 * (`readStartingWithUsers`) per edge kind and graph level, with a visited
 * set so each `object#relation` is expanded once. Every reached node is
 * either
 * - **exact**: reached from the user along edges that sit only under unions
 *   in their relation's rewrite, over tuples whose conditions evaluated to
 *   true; Check answers true for it (union: true wins over everything), so
 *   it is returned without a Check when its level is below the depth limit;
 * - **a candidate**: reached through an intersection operand, the base of
 *   an exclusion, or a tuple whose condition failed to evaluate; it (and
 *   everything reached from it) is confirmed by Check, so Check's rules on
 *   intersections, exclusions, cycles and errors decide.
 * Tuples whose condition is false are not followed.
 *
 * Results are capped (1000 by default); `truncated` says more exist.
 * Errors of confirming Checks are returned only when fewer than the cap were
 * found, as OpenFGA does.
 */
import type { ReadTuple, TupleReader } from './reader.ts';
import type { ParsedUser } from './tuple.ts';
import { formatUser } from './tuple.ts';
import type { TypeSystem } from './typesystem.ts';
import { rewriteChildren } from './typesystem.ts';
import type { Userset } from './model.ts';
import { conditionOutcome, confirmCandidates } from './list_common.ts';

/** A relation reached backwards; `exact` when the edge sits only under unions in that relation's rewrite. */
interface Into {
  type: string;
  relation: string;
  exact: boolean;
}

/** A tuple-to-userset edge read backwards: `relation` on `type` is `target from tupleset`. */
interface TtuInto extends Into {
  tupleset: string;
}

/** How relations take in subjects, read backwards. */
export interface Ingress {
  /** `${type}` → relations that admit plain objects of that type. */
  direct: Map<string, Into[]>;
  /** `${type}` → relations that admit `type:*`. */
  wildcard: Map<string, Into[]>;
  /** `${type}#${relation}` → relations that admit the userset `type:id#relation`. */
  userset: Map<string, Into[]>;
  /** `${type}#${relation}` → relations of the same type that compute from it. */
  computed: Map<string, Into[]>;
  /** `${type}#${relation}` → relations that are `relation from tupleset` with a tupleset admitting `type`. */
  ttu: Map<string, TtuInto[]>;
}

const INGRESS = new WeakMap<TypeSystem, Ingress>();

/** Adds `v` to the list under `k`, merging with an equal edge (exact when either is). */
function add<V extends Into>(m: Map<string, V[]>, k: string, v: V, same: (a: V) => boolean): void {
  const l = m.get(k);
  if (l === undefined) {
    m.set(k, [v]);
    return;
  }
  const old = l.find(same);
  if (old === undefined) l.push(v);
  else old.exact ||= v.exact;
}

/** The reverse edges of a model, built once per model version. */
export function ingressOf(ts: TypeSystem): Ingress {
  let g = INGRESS.get(ts);
  if (g !== undefined) return g;
  g = { direct: new Map(), wildcard: new Map(), userset: new Map(), computed: new Map(), ttu: new Map() };
  for (const type of ts.types()) {
    for (const [relation, rw] of ts.relationsOf(type)) {
      const sameRel = (a: Into): boolean => a.type === type && a.relation === relation;
      const stack: { n: Userset; exact: boolean }[] = [{ n: rw, exact: true }];
      while (stack.length > 0) {
        const { n, exact } = stack.pop()!;
        if ('this' in n) {
          for (const r of ts.restrictions(type, relation)) {
            const into = { type, relation, exact };
            if (r.wildcard !== undefined) add(g.wildcard, r.type, into, sameRel);
            else if (r.relation !== undefined) add(g.userset, `${r.type}#${r.relation}`, into, sameRel);
            else add(g.direct, r.type, into, sameRel);
          }
        } else if ('computedUserset' in n) {
          add(g.computed, `${type}#${n.computedUserset.relation ?? ''}`, { type, relation, exact }, sameRel);
        } else if ('tupleToUserset' in n) {
          const tupleset = n.tupleToUserset.tupleset.relation ?? '';
          const target = n.tupleToUserset.computedUserset.relation ?? '';
          for (const r of ts.restrictions(type, tupleset)) {
            if (r.relation !== undefined || r.wildcard !== undefined) continue;
            add(g.ttu, `${r.type}#${target}`, { type, relation, exact, tupleset }, (a) => sameRel(a) && a.tupleset === tupleset);
          }
        } else if ('difference' in n) {
          stack.push({ n: n.difference.base, exact: false });
        } else if ('union' in n) {
          for (const c of rewriteChildren(n)) stack.push({ n: c, exact });
        } else {
          for (const c of rewriteChildren(n)) stack.push({ n: c, exact: false });
        }
      }
    }
  }
  INGRESS.set(ts, g);
  return g;
}

/** Settings of one ListObjects expansion. */
export interface ListObjectsOptions {
  /** Request context for conditions. */
  context: Record<string, unknown> | undefined;
  /** Check's depth limit: exact answers that Check would reach only at this depth or deeper are confirmed instead. */
  maxDepth: number;
  maxResults: number;
  /** Confirming Checks in flight at once. */
  concurrency: number;
  /** Check of one object id (true when allowed); throws Check's errors. */
  check: (id: string) => Promise<boolean>;
}

/** The result: object ids (sorted, at most `maxResults`) and whether more exist. */
export interface ListObjectsIds {
  ids: string[];
  truncated: boolean;
}

/** Node states in the visited map. */
const CANDIDATE = 1;
const EXACT = 2;

/** One batched reverse read of a level: tuples on `objectType#relation` whose user is a key of `users`. */
interface LevelRead {
  objectType: string;
  relation: string;
  /** User string → the relations reached on each object found, with the exactness of the step. */
  users: Map<string, { relation: string; exact: boolean }[]>;
}

/**
 * Object ids of `targetType` on which `user` holds `targetRelation`.
 */
export async function listObjectIds(
  ts: TypeSystem,
  reader: TupleReader,
  user: ParsedUser,
  targetType: string,
  targetRelation: string,
  options: ListObjectsOptions,
): Promise<ListObjectsIds> {
  const g = ingressOf(ts);
  const state = new Map<string, number>();
  const exactIds: string[] = [];
  const candidates = new Set<string>();
  let frontier: { type: string; id: string; relation: string; exact: boolean }[] = [];
  let level = 0;

  const reach = (type: string, id: string, relation: string, exact: boolean): void => {
    const k = `${type}:${id}#${relation}`;
    const s = state.get(k);
    const want = exact ? EXACT : CANDIDATE;
    if (s !== undefined && s >= want) return;
    state.set(k, want);
    frontier.push({ type, id, relation, exact });
    if (type === targetType && relation === targetRelation) {
      // Check finds the user `level` dispatches below the object; deeper
      // exact answers are confirmed, so Check's depth error is not hidden.
      if (exact && level + 1 < options.maxDepth) exactIds.push(id);
      else candidates.add(id);
    }
  };

  const reads = new Map<string, LevelRead>();
  const plan = (into: readonly Into[] | undefined, userString: string, exact: boolean, relationOf: (e: Into) => string = (e) => e.relation, readRelation: (e: Into) => string = (e) => e.relation): void => {
    if (into === undefined) return;
    for (const e of into) {
      const rr = readRelation(e);
      const key = `${e.type}#${rr}`;
      let r = reads.get(key);
      if (r === undefined) reads.set(key, (r = { objectType: e.type, relation: rr, users: new Map() }));
      let targets = r.users.get(userString);
      if (targets === undefined) r.users.set(userString, (targets = []));
      targets.push({ relation: relationOf(e), exact: exact && e.exact });
    }
  };
  const runReads = async (): Promise<void> => {
    const batch = [...reads.values()];
    reads.clear();
    const results = await Promise.all(batch.map((r) => reader.startingWithUsers(r.objectType, r.relation, [...r.users.keys()])));
    batch.forEach((r, i) => {
      for (const t of results[i]! as ReadTuple[]) {
        const targets = r.users.get(t.tuple.user);
        if (targets === undefined) continue;
        const outcome = conditionOutcome(ts, t.tuple, options.context);
        if (outcome === 'false') continue;
        for (const x of targets) reach(r.objectType, t.objectId, x.relation, x.exact && outcome === 'true');
      }
    });
  };

  // Level 0: the objects whose tuples name the user (or, for a userset user, the userset itself).
  if (user.kind === 'userset') {
    reach(user.type, user.id, user.relation, true);
  } else {
    const s = formatUser(user);
    if (user.kind === 'wildcard') plan(g.wildcard.get(user.type), s, true);
    else {
      plan(g.direct.get(user.type), s, true);
      plan(g.wildcard.get(user.type), `${user.type}:*`, true);
    }
    await runReads();
  }

  while (frontier.length > 0) {
    const nodes = frontier;
    frontier = [];
    level++;
    for (const n of nodes) {
      const k = `${n.type}#${n.relation}`;
      for (const e of g.computed.get(k) ?? []) reach(n.type, n.id, e.relation, n.exact && e.exact);
      plan(g.userset.get(k), `${n.type}:${n.id}#${n.relation}`, n.exact);
      const ttus = g.ttu.get(k);
      if (ttus !== undefined) plan(ttus, `${n.type}:${n.id}`, n.exact, (e) => e.relation, (e) => (e as TtuInto).tupleset);
    }
    if (reads.size > 0) await runReads();
  }

  const max = options.maxResults;
  if (exactIds.length > max) {
    exactIds.sort();
    return { ids: exactIds.slice(0, max), truncated: true };
  }
  const exactSet = new Set(exactIds);
  const toCheck = [...candidates].filter((id) => !exactSet.has(id));
  const { confirmed, error } = await confirmCandidates(toCheck, options.check, { concurrency: options.concurrency, max, known: exactIds.length });
  const found = exactIds.concat(confirmed);
  if (error !== undefined && found.length < max) throw error;
  found.sort();
  return { ids: found.slice(0, max), truncated: found.length > max };
}
