/**
 * ListObjects: the objects of a type on which a user holds a relation.
 *
 * Two phases (see docs/list-objects.md):
 * 1. **Reverse expansion** from the user over the model graph read
 *    backwards, using only reverse index reads (`readStartingWithUsers`),
 *    collects candidate objects: a superset of the answer, since
 *    intersections and exclusions are widened to "any operand but the
 *    subtracted one" and conditions are ignored.
 * 2. **Confirmation**: each candidate is checked with Check, sharing one
 *    memo, so the answer is by construction the set of objects that pass
 *    Check, with Check's cycle, condition and error rules.
 *
 * Results are capped (1000 by default); `truncated` says more exist.
 * Condition errors are returned only when fewer than the cap were found, as
 * OpenFGA does.
 */
import type { TupleReader } from './reader.ts';
import type { ParsedUser } from './tuple.ts';
import { formatUser } from './tuple.ts';
import type { TypeSystem } from './typesystem.ts';
import { rewriteChildren } from './typesystem.ts';
import type { Userset } from './model.ts';

/** How a relation can take in subjects, read backwards. */
interface Ingress {
  /** `${type}` → relations `(t2, r2)` that admit plain objects of that type. */
  direct: Map<string, { type: string; relation: string }[]>;
  /** `${type}` → relations that admit `type:*`. */
  wildcard: Map<string, { type: string; relation: string }[]>;
  /** `${type}#${relation}` → relations that admit the userset `type:id#relation`. */
  userset: Map<string, { type: string; relation: string }[]>;
  /** `${type}#${relation}` → relations `r2` of the same type that compute from it. */
  computed: Map<string, string[]>;
  /** `${type}#${relation}` → `(t2, tupleset, r2)`: `r2` on `t2` is `relation from tupleset` and the tupleset admits `type`. */
  ttu: Map<string, { type: string; tupleset: string; relation: string }[]>;
}

const INGRESS = new WeakMap<TypeSystem, Ingress>();

function push<V>(m: Map<string, V[]>, k: string, v: V): void {
  const l = m.get(k);
  if (l === undefined) m.set(k, [v]);
  else l.push(v);
}

/** The reverse edges of a model, built once per model version. */
export function ingressOf(ts: TypeSystem): Ingress {
  let g = INGRESS.get(ts);
  if (g !== undefined) return g;
  g = { direct: new Map(), wildcard: new Map(), userset: new Map(), computed: new Map(), ttu: new Map() };
  for (const type of ts.types()) {
    for (const [relation, rw] of ts.relationsOf(type)) {
      const stack: Userset[] = [rw];
      while (stack.length > 0) {
        const n = stack.pop()!;
        if ('this' in n) {
          for (const r of ts.restrictions(type, relation)) {
            if (r.wildcard !== undefined) push(g.wildcard, r.type, { type, relation });
            else if (r.relation !== undefined) push(g.userset, `${r.type}#${r.relation}`, { type, relation });
            else push(g.direct, r.type, { type, relation });
          }
        } else if ('computedUserset' in n) {
          push(g.computed, `${type}#${n.computedUserset.relation ?? ''}`, relation);
        } else if ('tupleToUserset' in n) {
          const tupleset = n.tupleToUserset.tupleset.relation ?? '';
          const target = n.tupleToUserset.computedUserset.relation ?? '';
          for (const r of ts.restrictions(type, tupleset)) push(g.ttu, `${r.type}#${target}`, { type, tupleset, relation });
        } else if ('difference' in n) {
          stack.push(n.difference.base);
        } else {
          stack.push(...rewriteChildren(n));
        }
      }
    }
  }
  INGRESS.set(ts, g);
  return g;
}

/**
 * Candidate object ids of `targetType` on which `user` may hold
 * `targetRelation`: a superset of the answer, sorted, without duplicates.
 */
export async function listObjectCandidates(
  ts: TypeSystem,
  reader: TupleReader,
  user: ParsedUser,
  targetType: string,
  targetRelation: string,
): Promise<string[]> {
  const g = ingressOf(ts);
  const seen = new Set<string>();
  const queue: { type: string; id: string; relation: string }[] = [];
  const candidates = new Set<string>();
  const reach = (type: string, id: string, relation: string): void => {
    const k = `${type}:${id}#${relation}`;
    if (seen.has(k)) return;
    seen.add(k);
    queue.push({ type, id, relation });
    if (type === targetType && relation === targetRelation) candidates.add(id);
  };
  const lookup = async (into: { type: string; relation: string }[] | undefined, subject: string): Promise<void> => {
    if (into === undefined) return;
    const found = await Promise.all(into.map((e) => reader.startingWithUsers(e.type, e.relation, [subject])));
    into.forEach((e, i) => {
      for (const t of found[i]!) reach(e.type, t.objectId, e.relation);
    });
  };

  if (user.kind === 'userset') {
    reach(user.type, user.id, user.relation);
  } else if (user.kind === 'wildcard') {
    await lookup(g.wildcard.get(user.type), formatUser(user));
  } else {
    await Promise.all([lookup(g.direct.get(user.type), formatUser(user)), lookup(g.wildcard.get(user.type), `${user.type}:*`)]);
  }

  while (queue.length > 0) {
    const level = queue.splice(0, queue.length);
    await Promise.all(
      level.map(async (n) => {
        for (const r2 of g.computed.get(`${n.type}#${n.relation}`) ?? []) reach(n.type, n.id, r2);
        const ttus = g.ttu.get(`${n.type}#${n.relation}`) ?? [];
        await Promise.all([
          lookup(g.userset.get(`${n.type}#${n.relation}`), `${n.type}:${n.id}#${n.relation}`),
          ...ttus.map(async (e) => {
            const parents = await reader.startingWithUsers(e.type, e.tupleset, [`${n.type}:${n.id}`]);
            for (const t of parents) reach(e.type, t.objectId, e.relation);
          }),
        ]);
      }),
    );
  }
  return [...candidates].sort();
}
