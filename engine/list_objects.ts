/**
 * ListObjects: the objects of a type on which a user holds a relation.
 *
 * One reverse expansion from the user over the model graph read backwards
 * (see docs/list-objects.md), one batched reverse read
 * (`readStartingWithUsers`, or the store's synchronous, unordered
 * `readStartingWithUsersSync` when it has one) per edge kind and graph
 * level, with a visited
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
import type { TupleReader } from './reader.ts';
import type { ParsedUser } from './tuple.ts';
import { formatUser } from './tuple.ts';
import type { TypeSystem } from './typesystem.ts';
import { rewriteChildren } from './rewrites.ts';
import type { Userset } from './model.ts';
import { conditionOutcome, confirmCandidates } from './list_common.ts';

/** A relation of a type, a node of the model graph. */
interface RelNode {
  /** Position in {@link Ingress.nodes}: per-request state is kept in arrays by it. */
  index: number;
  type: string;
  relation: string;
  /** Relations of the same object that compute from this one. */
  computed: Edge[];
  /** Relations that admit this one as a userset `type:id#relation`: read with that userset as the user. */
  userset: Edge[];
  /** Relations that are `relation from tupleset`, the tupleset admitting this type: read with `type:id` as the user. */
  ttu: Edge[];
  /** True when any edge leaves this node (otherwise reaching it ends the walk there). */
  out: boolean;
}

/** An edge read backwards into `to`; `exact` when it sits only under unions in `to`'s rewrite. */
interface Edge {
  to: RelNode;
  exact: boolean;
  /** The reverse read that follows it: tuples on `readType#readRelation`. */
  readType: string;
  readRelation: string;
  readKey: string;
}

/** The model graph read backwards. */
export interface Ingress {
  nodes: RelNode[];
  byKey: Map<string, RelNode>;
  /** `${type}` → edges from plain objects of that type (direct tuples). */
  direct: Map<string, Edge[]>;
  /** `${type}` → edges from `type:*` tuples. */
  wildcard: Map<string, Edge[]>;
}

const INGRESS = new WeakMap<TypeSystem, Ingress>();

/** Adds an edge, merging it with an equal one (exact when either is). */
function addEdge(list: Edge[], e: Omit<Edge, 'readKey'>): void {
  const old = list.find((x) => x.to === e.to && x.readType === e.readType && x.readRelation === e.readRelation);
  if (old !== undefined) old.exact ||= e.exact;
  else list.push({ ...e, readKey: `${e.readType}#${e.readRelation}` });
}

function listOf(m: Map<string, Edge[]>, k: string): Edge[] {
  let l = m.get(k);
  if (l === undefined) m.set(k, (l = []));
  return l;
}

/** The reverse edges of a model, built once per model version. */
export function ingressOf(ts: TypeSystem): Ingress {
  let g = INGRESS.get(ts);
  if (g !== undefined) return g;
  const nodes: RelNode[] = [];
  const byKey = new Map<string, RelNode>();
  for (const type of ts.types()) {
    for (const relation of ts.relationsOf(type).keys()) {
      const n: RelNode = { index: nodes.length, type, relation, computed: [], userset: [], ttu: [], out: false };
      nodes.push(n);
      byKey.set(`${type}#${relation}`, n);
    }
  }
  g = { nodes, byKey, direct: new Map(), wildcard: new Map() };
  for (const type of ts.types()) {
    for (const [relation, rw] of ts.relationsOf(type)) {
      const to = byKey.get(`${type}#${relation}`)!;
      const stack: { n: Userset; exact: boolean }[] = [{ n: rw, exact: true }];
      while (stack.length > 0) {
        const { n, exact } = stack.pop()!;
        if ('this' in n) {
          for (const r of ts.restrictions(type, relation)) {
            const e = { to, exact, readType: type, readRelation: relation };
            if (r.wildcard !== undefined) addEdge(listOf(g.wildcard, r.type), e);
            else if (r.relation === undefined) addEdge(listOf(g.direct, r.type), e);
            else {
              const from = byKey.get(`${r.type}#${r.relation}`);
              if (from !== undefined) addEdge(from.userset, e);
            }
          }
        } else if ('computedUserset' in n) {
          const from = byKey.get(`${type}#${n.computedUserset.relation ?? ''}`);
          if (from !== undefined) addEdge(from.computed, { to, exact, readType: '', readRelation: '' });
        } else if ('tupleToUserset' in n) {
          const tupleset = n.tupleToUserset.tupleset.relation ?? '';
          const target = n.tupleToUserset.computedUserset.relation ?? '';
          for (const r of ts.restrictions(type, tupleset)) {
            if (r.relation !== undefined || r.wildcard !== undefined) continue;
            const from = byKey.get(`${r.type}#${target}`);
            if (from !== undefined) addEdge(from.ttu, { to, exact, readType: type, readRelation: tupleset });
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
  for (const n of nodes) n.out = n.computed.length + n.userset.length + n.ttu.length > 0;
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
  /** Takes a confirming Check's error for `id` instead of failing the call when it returns true (`id` is then not listed). */
  absorb?: (id: string, err: unknown) => boolean;
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
  /** User string → the nodes reached on each object found, with the exactness of the step. */
  users: Map<string, { to: RelNode; exact: boolean }[]>;
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
  const target = g.byKey.get(`${targetType}#${targetRelation}`);
  if (target === undefined) return { ids: [], truncated: false };
  /** Per node: object id → CANDIDATE or EXACT. */
  const states: (Map<string, number> | undefined)[] = new Array<Map<string, number> | undefined>(g.nodes.length);
  const exactIds: string[] = [];
  const candidates = new Set<string>();
  let nodes: RelNode[] = [];
  let ids: string[] = [];
  let exacts: boolean[] = [];
  let level = 0;

  const reach = (node: RelNode, id: string, exact: boolean): void => {
    let m = states[node.index];
    if (m === undefined) states[node.index] = m = new Map();
    const s = m.get(id);
    const want = exact ? EXACT : CANDIDATE;
    if (s !== undefined && s >= want) return;
    m.set(id, want);
    if (node.out) {
      nodes.push(node);
      ids.push(id);
      exacts.push(exact);
    }
    if (node === target) {
      // Check finds the user `level` dispatches below the object; deeper
      // exact answers are confirmed, so Check's depth error is not hidden.
      if (exact && level + 1 < options.maxDepth) exactIds.push(id);
      else candidates.add(id);
    }
  };

  const reads = new Map<string, LevelRead>();
  const plan = (edges: readonly Edge[] | undefined, userString: string, exact: boolean): void => {
    if (edges === undefined) return;
    for (const e of edges) {
      let r = reads.get(e.readKey);
      if (r === undefined) reads.set(e.readKey, (r = { objectType: e.readType, relation: e.readRelation, users: new Map() }));
      const step = { to: e.to, exact: exact && e.exact };
      const targets = r.users.get(userString);
      if (targets === undefined) r.users.set(userString, [step]);
      else targets.push(step);
    }
  };
  // With a synchronous reverse read (the memory store), rows come as object ids with their condition, unordered.
  const runReadsSync = (): void => {
    const batch = [...reads.values()];
    reads.clear();
    for (const r of batch) {
      const users = [...r.users.keys()];
      const targets = [...r.users.values()];
      reader.startingWithUsersSync(r.objectType, r.relation, users, (i, objectId, condition) => {
        const outcome = condition === undefined ? 'true' : conditionOutcome(ts, { object: '', relation: r.relation, user: '', condition }, options.context);
        if (outcome === 'false') return;
        for (const x of targets[i]!) reach(x.to, objectId, x.exact && outcome === 'true');
      });
    }
  };
  const runReads = async (): Promise<void> => {
    if (reader.reverseSync) return runReadsSync();
    const batch = [...reads.values()];
    reads.clear();
    const results = await Promise.all(batch.map((r) => reader.startingWithUsers(r.objectType, r.relation, [...r.users.keys()])));
    for (let i = 0; i < batch.length; i++) {
      const users = batch[i]!.users;
      for (const t of results[i]!) {
        const targets = users.get(t.tuple.user);
        if (targets === undefined) continue;
        const outcome = t.tuple.condition === undefined ? 'true' : conditionOutcome(ts, t.tuple, options.context);
        if (outcome === 'false') continue;
        for (const x of targets) reach(x.to, t.objectId, x.exact && outcome === 'true');
      }
    }
  };

  // Level 0: the objects whose tuples name the user (or, for a userset user, the userset itself).
  if (user.kind === 'userset') {
    const start = g.byKey.get(`${user.type}#${user.relation}`);
    if (start !== undefined) reach(start, user.id, true);
  } else {
    const s = formatUser(user);
    if (user.kind === 'wildcard') plan(g.wildcard.get(user.type), s, true);
    else {
      plan(g.direct.get(user.type), s, true);
      plan(g.wildcard.get(user.type), `${user.type}:*`, true);
    }
    await runReads();
  }

  while (nodes.length > 0) {
    const levelNodes = nodes;
    const levelIds = ids;
    const levelExact = exacts;
    nodes = [];
    ids = [];
    exacts = [];
    level++;
    for (let i = 0; i < levelNodes.length; i++) {
      const n = levelNodes[i]!;
      const id = levelIds[i]!;
      const exact = levelExact[i]!;
      for (const e of n.computed) reach(e.to, id, exact && e.exact);
      if (n.userset.length > 0) plan(n.userset, `${n.type}:${id}#${n.relation}`, exact);
      if (n.ttu.length > 0) plan(n.ttu, `${n.type}:${id}`, exact);
    }
    if (reads.size > 0) await runReads();
  }

  const max = options.maxResults;
  if (exactIds.length > max) {
    exactIds.sort();
    return { ids: exactIds.slice(0, max), truncated: true };
  }
  if (candidates.size === 0) {
    exactIds.sort();
    return { ids: exactIds, truncated: false };
  }
  const exactSet = new Set(exactIds);
  const toCheck = [...candidates].filter((id) => !exactSet.has(id));
  const { confirmed, error } = await confirmCandidates(toCheck, options.check, { concurrency: options.concurrency, max, known: exactIds.length, absorb: options.absorb });
  const found = exactIds.concat(confirmed);
  if (error !== undefined && found.length < max) throw error;
  found.sort();
  return { ids: found.slice(0, max), truncated: found.length > max };
}
