/**
 * A compact in-memory tuple graph: the memory store's index (engine/memory_store.ts).
 *
 * - **Interned.** Every object and user string is stored once and named by a
 *   number; a userset user `type:id#rel` also records its object's number and
 *   its relation's number. Relation names have their own small numbering.
 * - **Nodes.** `object#relation` is the number `object * REL_SLOTS + relation`;
 *   a node keeps its plain and wildcard users and its userset users apart
 *   (the split index of performance-anchors §2.3), each as user number →
 *   revision of the write that made the tuple, and the conditions of the
 *   tuples that have one.
 * - **Reverse.** Per relation number: user number → the objects holding that
 *   tuple, and apart the conditions of those tuples that have one, for
 *   ListObjects' reverse reads ({@link GraphIndex.reverseRead}). Keyed by
 *   relation first so every map key stays a small integer.
 * - **Bulk.** An index made with `bulk: true` (the graph mirror's load) stages
 *   its tuples as numbers and {@link GraphIndex.finishBulk} builds both
 *   directions at once as sorted runs of `Int32Array`s (engine/graph/staged_tuples.ts:
 *   outside the JS heap, no object per tuple). A later write to a node or a
 *   user's reverse entry first copies its run into a `Map` or `Set`.
 * - **Reach.** {@link GraphIndex.reach} answers a top-level check of a
 *   monotone relation (unions of direct grants, usersets, computed relations
 *   and tuple-to-userset only) by a plain object user as reachability: a
 *   synchronous walk with a visited set over numbers, no strings built
 *   (engine/graph/reach_walk.ts).
 *
 * Interned strings are kept when their last tuple is deleted (a store with
 * heavy churn of distinct ids grows by one string per id ever seen).
 */
import { LatchkeyError } from '../errors.ts';
import type { TupleCondition, TupleKey } from '../store.ts';
import type { TypeSystem } from '../typesystem.ts';
import { buildNodes, compactRuns, groupByUser, runIndex, StagedTuples } from './staged_tuples.ts';
import { OBJECT, ReachPlans, USERSET, WILDCARD } from './reach_plans.ts';
import { hasUser, ReachWalk, type ReachLimits } from './reach_walk.ts';

/** Most distinct relation names an index numbers. */
export const REL_SLOTS = 4096;


/** A node `object#relation`; read its users through {@link GraphIndex.revisionIn} and {@link GraphIndex.nodeTuples}. */
export interface GraphNode {
  /** Plain and wildcard users → revision, beside the bulk run. */
  users: Map<number, number> | undefined;
  /** Userset users → revision, beside the bulk run. */
  usersets: Map<number, number> | undefined;
  /** Conditions of the tuples on this node that have one, by user. */
  conds: Map<number, TupleCondition> | undefined;
  /** Bulk-loaded users (at the bulk revision), sorted, in the index's bulk array: plain and wildcard in [from, mid), usersets in [mid, to). */
  from: number;
  mid: number;
  to: number;
}

function emptyNode(): GraphNode {
  return { users: undefined, usersets: undefined, conds: undefined, from: 0, mid: 0, to: 0 };
}

export class GraphIndex {
  readonly #ids = new Map<string, number>();
  readonly #strings: string[] = [];
  /** Per string number: type name, kind, object number of a userset (else -1), relation number of a userset (else -1). */
  readonly #type: string[] = [];
  readonly #kind: number[] = [];
  readonly #usObject: number[] = [];
  readonly #typeNames = new Map<string, string>();
  readonly #usRelation: number[] = [];
  readonly #rels = new Map<string, number>();
  readonly #relNames: string[] = [];
  /** Per relation number: object number → node (every key a small integer, whatever the number of strings). */
  readonly #nodes: (Map<number, GraphNode> | undefined)[] = [];
  #nodeCount = 0;
  /** Per relation number: user → objects (undefined without a reverse index); a bulk run until a write changes it. */
  readonly #reverse: (Map<number, Set<number> | Int32Array> | undefined)[] | undefined;
  /** The tuples of an unfinished bulk load. */
  #staged: StagedTuples | undefined;
  /**
   * Users of the nodes' runs (see {@link GraphNode.from}), and the revision they were added at: one
   * revision for all (`#bulkRevision`, after a bulk load) or one each (`#bulkRevisions`, after {@link compact}).
   */
  #bulk = new Int32Array(0);
  #bulkRevision = 0;
  #bulkRevisions: Float64Array | undefined;
  /** Users held in nodes' maps rather than in runs. */
  #mapHeld = 0;
  /** Per relation number: user → object → condition, for the reverse tuples that have one. */
  readonly #reverseConds: (Map<number, Map<number, TupleCondition>> | undefined)[] = [];
  /** Per string number: the id part of an object `type:id`, computed on first use by a reverse read. */
  readonly #localIds: (string | undefined)[] = [];
  /** Walk plans and type-restriction answers per model version. */
  readonly #plans = new ReachPlans(this.#relNames, this.#kind, this.#type, this.#usRelation, (r) => this.rel(r));
  /** The walk of {@link GraphIndex.reach}, with its scratch state (engine/graph/reach_walk.ts). */
  readonly #walk = new ReachWalk(this.#nodes, this.#type, this.#kind, this.#usObject, this.#usRelation, this.#plans);
  /** Interned wildcard `type:*` by type. */
  readonly #wildcards = new Map<string, number>();
  /** Number of tuples. */
  size = 0;
  /**
   * Expiring tuples: node key `object * REL_SLOTS + relation` → user →
   * `expires_at` in ms. Apart from the nodes so that bulk runs, thawing and
   * compaction never see it; empty (and never read) while no tuple expires.
   */
  readonly #exp = new Map<number, Map<number, number>>();
  /** Number of tuples in {@link GraphIndex.#exp}. */
  #expiring = 0;
  /**
   * The expiry floor (`ExpiryFloor` in engine/check/cache_options.ts): lowered by every expiring tuple added,
   * raised only by a refresh. A cell, so that an answer cache reads it as a property and an owner that
   * replaces its index (the graph mirror's reload) keeps handing out the same one.
   */
  readonly floor: { value: number };
  /** Wall clock (ms) that decides expiry. */
  readonly #clock: () => number;

  /** Number of interned strings. */
  get strings(): number {
    return this.#strings.length;
  }

  /**
   * `reverse`: keep the reverse index (default true). `bulk`: stage added
   * tuples (all at one revision; `add` then answers true, repeats are dropped
   * when built) until {@link GraphIndex.finishBulk}; nothing can be read
   * before.
   */
  constructor(options: { reverse?: boolean; bulk?: boolean; now?: () => number; floor?: { value: number } } = {}) {
    this.#clock = options.now ?? Date.now;
    this.floor = options.floor ?? { value: Infinity };
    this.#reverse = options.reverse === false ? undefined : [];
    this.#staged = options.bulk === true ? new StagedTuples() : undefined;
  }

  // ---------------------------------------------------------------- strings

  /** The number of `s`, interning it. */
  intern(s: string): number {
    let id = this.#ids.get(s);
    if (id !== undefined) return id;
    id = this.#strings.length;
    // Kept as a copy of its own: `s` is often a slice of a longer string (a scanned row's whole key), which
    // the slice would keep alive for as long as the index lives. The JSON round trip copies any string exactly.
    s = JSON.parse(JSON.stringify(s)) as string;
    this.#ids.set(s, id);
    this.#strings.push(s);
    // Kept as long as #strings (a lazy write far past the end would turn the array into a dictionary).
    this.#localIds.push(undefined);
    const hash = s.indexOf('#');
    if (hash >= 0) {
      const obj = this.intern(s.slice(0, hash));
      this.#type[id] = this.#type[obj]!;
      this.#kind[id] = USERSET;
      this.#usObject[id] = obj;
      this.#usRelation[id] = this.rel(s.slice(hash + 1));
    } else {
      // One string per type name, shared by all its objects (compared per row by reverse reads).
      const type = s.slice(0, s.indexOf(':'));
      let shared = this.#typeNames.get(type);
      if (shared === undefined) this.#typeNames.set(type, (shared = type));
      this.#type[id] = shared;
      this.#kind[id] = s.endsWith(':*') ? WILDCARD : OBJECT;
      if (this.#kind[id] === WILDCARD) this.#wildcards.set(this.#type[id]!, id);
      this.#usObject[id] = -1;
      this.#usRelation[id] = -1;
    }
    return id;
  }

  /** The number of `s` if interned. */
  id(s: string): number | undefined {
    return this.#ids.get(s);
  }

  str(id: number): string {
    return this.#strings[id]!;
  }

  typeOf(id: number): string {
    return this.#type[id]!;
  }

  /** The number of relation `r`, numbering it. */
  rel(r: string): number {
    let id = this.#rels.get(r);
    if (id === undefined) {
      id = this.#relNames.length;
      if (id >= REL_SLOTS) throw new LatchkeyError('resource_exhausted', 'too many distinct relation names for the in-memory index', { reason: 'index_relations_exhausted' });
      this.#rels.set(r, id);
      this.#relNames.push(r);
    }
    return id;
  }

  relId(r: string): number | undefined {
    return this.#rels.get(r);
  }

  relName(id: number): string {
    return this.#relNames[id]!;
  }

  /** The node `object#relation`, or `undefined`. */
  node(object: string, relation: string): GraphNode | undefined {
    return this.lookup(object, relation)?.n;
  }

  /** The node `object#relation` with its object and relation numbers, or `undefined`. */
  lookup(object: string, relation: string): { o: number; r: number; n: GraphNode } | undefined {
    this.#checkBuilt();
    const o = this.#ids.get(object);
    const r = this.#rels.get(relation);
    if (o === undefined || r === undefined) return undefined;
    const n = this.#nodes[r]?.get(o);
    return n === undefined ? undefined : { o, r, n };
  }

  /** The node of object number `o` and relation number `r`, or `undefined`. */
  nodeAt(o: number, r: number): GraphNode | undefined {
    return this.#nodes[r]?.get(o);
  }

  /** Number of nodes (`object#relation` pairs holding at least one tuple). */
  get nodeCount(): number {
    return this.#nodeCount;
  }

  /** Every node as `[object number, relation number, node]`, in no particular order. */
  *nodeEntries(): Generator<[number, number, GraphNode]> {
    const all = this.#nodes;
    for (let r = 0; r < all.length; r++) {
      const byObject = all[r];
      if (byObject !== undefined) for (const [o, n] of byObject) yield [o, r, n];
    }
  }

  // ---------------------------------------------------------------- tuples

  /** The revision of tuple `object#relation@user`, or `undefined` when absent. */
  revisionOf(object: string, relation: string, user: string): number | undefined {
    const n = this.node(object, relation);
    const u = this.#ids.get(user);
    if (n === undefined || u === undefined) return undefined;
    return this.revisionIn(n, u);
  }

  /** The revision of user `u`'s tuple on node `n`, or `undefined` when absent. */
  revisionIn(n: GraphNode, u: number): number | undefined {
    const userset = this.#kind[u] === USERSET;
    const rev = (userset ? n.usersets : n.users)?.get(u);
    if (rev !== undefined || n.to === n.from) return rev;
    const at = userset ? runIndex(this.#bulk, n.mid, n.to, u) : runIndex(this.#bulk, n.from, n.mid, u);
    return at < 0 ? undefined : this.#runRevision(at);
  }

  /** The revision of the run entry at `i` of the bulk array. */
  #runRevision(i: number): number {
    return this.#bulkRevisions === undefined ? this.#bulkRevision : this.#bulkRevisions[i]!;
  }

  /** Appends the tuples of node `object#relation` (only userset users when `kind` is `usersets`), materialised. */
  nodeTuples(object: number, relation: number, n: GraphNode, kind: 'all' | 'usersets', out: (TupleKey & { revision: number })[]): void {
    if (this.#expiring > 0) {
      const exp = this.#exp.get(object * REL_SLOTS + relation);
      if (exp !== undefined) {
        const from = out.length;
        this.#nodeTuplesAll(object, relation, n, kind, out);
        const now = this.#clock();
        let w = from;
        for (let i = from; i < out.length; i++) {
          const e = exp.get(this.#ids.get(out[i]!.user)!);
          if (e === undefined || e > now) out[w++] = out[i]!;
        }
        out.length = w;
        return;
      }
    }
    this.#nodeTuplesAll(object, relation, n, kind, out);
  }

  #nodeTuplesAll(object: number, relation: number, n: GraphNode, kind: 'all' | 'usersets', out: (TupleKey & { revision: number })[]): void {
    const bulk = this.#bulk;
    for (let i = kind === 'all' ? n.from : n.mid; i < n.to; i++) out.push(this.tuple(object, relation, n, bulk[i]!, this.#runRevision(i)));
    if (kind === 'all' && n.users !== undefined) for (const [u, rev] of n.users) out.push(this.tuple(object, relation, n, u, rev));
    if (n.usersets !== undefined) for (const [u, rev] of n.usersets) out.push(this.tuple(object, relation, n, u, rev));
  }

  /** Moves the bulk run of node `n` into its maps (before a write changes it). */
  #thaw(n: GraphNode): void {
    const bulk = this.#bulk;
    for (let i = n.from; i < n.mid; i++) (n.users ??= new Map()).set(bulk[i]!, this.#runRevision(i));
    for (let i = n.mid; i < n.to; i++) (n.usersets ??= new Map()).set(bulk[i]!, this.#runRevision(i));
    this.#mapHeld += n.to - n.from;
    n.from = n.mid = n.to = 0;
  }

  /** Users held in nodes' maps (written since the last bulk load or {@link compact}). */
  get mapHeld(): number {
    return this.#mapHeld;
  }

  /**
   * Moves the users every node holds in maps into sorted runs of one new
   * array, with their revisions: a membership test is then a binary search
   * in a few adjacent integers instead of a hash-map probe, the layout a bulk
   * load builds. Answers and revisions do not change. Costs one pass over
   * every tuple, plus sorting the map-held users of each node; the caller
   * decides when (see `MemoryStore`: when as many users are in maps as in runs).
   */
  compact(): void {
    this.#checkBuilt();
    if (this.#mapHeld === 0) return;
    const { users, revisions } = compactRuns(this.#nodes, this.#bulk, this.#bulkRevisions, this.#bulkRevision);
    this.#bulk = users;
    this.#bulkRevisions = revisions;
    this.#mapHeld = 0;
  }

  #checkBuilt(): void {
    if (this.#staged !== undefined) throw new LatchkeyError('internal', 'the graph index is still loading', { reason: 'index_loading' });
  }

  /** Adds a tuple (its condition and context are kept as given: copy them first). Returns false when it was there. */
  add(t: TupleKey, revision: number): boolean {
    const o = this.intern(t.object);
    const r = this.rel(t.relation);
    const u = this.intern(t.user);
    const staged = this.#staged;
    if (staged !== undefined) {
      if (t.expires_at !== undefined) this.#setExpiry(o, r, u, t.expires_at);
      if (staged.length === 0) this.#bulkRevision = revision;
      else if (revision !== this.#bulkRevision) throw new LatchkeyError('internal', 'a bulk load adds every tuple at one revision', { reason: 'index_bulk_revision' });
      staged.push(o, r, u, t.condition);
      return true;
    }
    const byObject = (this.#nodes[r] ??= new Map());
    let n = byObject.get(o);
    if (n === undefined) {
      byObject.set(o, (n = emptyNode()));
      this.#nodeCount++;
    }
    else if (n.to > n.from) this.#thaw(n);
    const m = this.#kind[u] === USERSET ? (n.usersets ??= new Map()) : (n.users ??= new Map());
    if (m.has(u)) return false;
    m.set(u, revision);
    this.#mapHeld++;
    if (t.expires_at !== undefined) this.#setExpiry(o, r, u, t.expires_at);
    if (t.condition !== undefined) (n.conds ??= new Map()).set(u, t.condition);
    if (this.#reverse !== undefined) {
      this.#reverseObjects(r, u, true)!.add(o);
      if (t.condition !== undefined) this.#addReverseCond(r, u, o, t.condition);
    }
    this.size++;
    return true;
  }

  /** Removes a tuple; false when it was not there. */
  delete(t: TupleKey): boolean {
    this.#checkBuilt();
    const o = this.#ids.get(t.object);
    const r = this.#rels.get(t.relation);
    const u = this.#ids.get(t.user);
    if (o === undefined || r === undefined || u === undefined) return false;
    const byObject = this.#nodes[r];
    const n = byObject?.get(o);
    if (n === undefined) return false;
    if (n.to > n.from) this.#thaw(n);
    const m = this.#kind[u] === USERSET ? n.usersets : n.users;
    if (m === undefined || !m.delete(u)) return false;
    this.#mapHeld--;
    if (this.#expiring > 0) this.#clearExpiry(o, r, u);
    if (m.size === 0) {
      if (m === n.users) n.users = undefined;
      else n.usersets = undefined;
    }
    if (n.conds !== undefined) {
      n.conds.delete(u);
      if (n.conds.size === 0) n.conds = undefined;
    }
    if (n.users === undefined && n.usersets === undefined) {
      byObject!.delete(o);
      this.#nodeCount--;
    }
    if (this.#reverse !== undefined) {
      const objs = this.#reverseObjects(r, u, false);
      if (objs !== undefined) {
        objs.delete(o);
        if (objs.size === 0) this.#reverse[r]!.delete(u);
      }
      const conds = this.#reverseConds[r];
      const m = conds?.get(u);
      if (m !== undefined) {
        m.delete(o);
        if (m.size === 0) conds!.delete(u);
      }
    }
    this.size--;
    return true;
  }

  /** The tuple `object#relation@user` of node `n`, materialised. */
  tuple(object: number, relation: number, n: GraphNode, user: number, revision: number): TupleKey & { revision: number } {
    const out: TupleKey & { revision: number } = { object: this.#strings[object]!, relation: this.#relNames[relation]!, user: this.#strings[user]!, revision };
    const c = n.conds?.get(user);
    if (c !== undefined) out.condition = c;
    if (this.#expiring > 0) {
      const e = this.#exp.get(object * REL_SLOTS + relation)?.get(user);
      if (e !== undefined) out.expires_at = new Date(e).toISOString();
    }
    return out;
  }

  // ---------------------------------------------------------------- expiry

  #setExpiry(o: number, r: number, u: number, expiresAt: string): void {
    const ms = Date.parse(expiresAt);
    if (!Number.isFinite(ms)) throw new LatchkeyError('internal', `unreadable expires_at '${expiresAt}'`, { reason: 'invalid_expires_at' });
    const k = o * REL_SLOTS + r;
    let m = this.#exp.get(k);
    if (m === undefined) this.#exp.set(k, (m = new Map()));
    if (!m.has(u)) this.#expiring++;
    m.set(u, ms);
    if (ms < this.floor.value) this.floor.value = ms;
  }

  /** Recomputes {@link GraphIndex.floor} from the tuples held that expire after `now`. */
  refreshExpiryFloor(now: number): number {
    return (this.floor.value = this.#expiring === 0 ? Infinity : this.nextExpiry(now) ?? Infinity);
  }

  #clearExpiry(o: number, r: number, u: number): void {
    const k = o * REL_SLOTS + r;
    const m = this.#exp.get(k);
    if (m === undefined || !m.delete(u)) return;
    this.#expiring--;
    if (m.size === 0) this.#exp.delete(k);
  }

  /** Number of tuples with an `expires_at` (expired or not) held. */
  get expiring(): number {
    return this.#expiring;
  }

  /** True when tuple `o#r@u` has expired at `now` (it is then absent from every read). */
  expired(o: number, r: number, u: number, now: number): boolean {
    if (this.#expiring === 0) return false;
    const e = this.#exp.get(o * REL_SLOTS + r)?.get(u);
    return e !== undefined && e <= now;
  }

  /** The clock deciding expiry (ms). */
  now(): number {
    return this.#clock();
  }

  /** The earliest expiry after `now` among the held tuples, or `undefined`. */
  nextExpiry(now: number): number | undefined {
    let next: number | undefined;
    for (const m of this.#exp.values()) for (const e of m.values()) if (e > now && (next === undefined || e < next)) next = e;
    return next;
  }

  /** Up to `limit` held tuples expired at `now`, as keys. */
  expiredKeys(now: number, limit: number): TupleKey[] {
    const out: TupleKey[] = [];
    for (const [k, m] of this.#exp) {
      for (const [u, e] of m) {
        if (e > now) continue;
        out.push({ object: this.#strings[Math.floor(k / REL_SLOTS)]!, relation: this.#relNames[k % REL_SLOTS]!, user: this.#strings[u]! });
        if (out.length >= limit) return out;
      }
    }
    return out;
  }

  /** The reverse entry of user `u` for relation `r` as a `Set` (a bulk-built slice is copied into one); with `create`, made when missing. */
  #reverseObjects(r: number, u: number, create: boolean): Set<number> | undefined {
    const byUser = create ? (this.#reverse![r] ??= new Map()) : this.#reverse![r];
    const objs = byUser?.get(u);
    if (objs instanceof Set) return objs;
    if (objs === undefined && !create) return undefined;
    const set = new Set<number>(objs);
    byUser!.set(u, set);
    return set;
  }

  #addReverseCond(r: number, u: number, o: number, c: TupleCondition): void {
    const conds = (this.#reverseConds[r] ??= new Map());
    let m = conds.get(u);
    if (m === undefined) conds.set(u, (m = new Map()));
    m.set(o, c);
  }

  /**
   * Ends a bulk load (`bulk: true`): builds the nodes from the staged tuples
   * (a counting sort by node into one array of users, each node's run sorted
   * and without repeats), then the reverse index from the nodes. Peak: the
   * staged tuples plus the two arrays, 20 bytes per tuple outside the heap.
   */
  finishBulk(): void {
    const staged = this.#staged;
    if (staged === undefined) return;
    const { users: bulk, size } = buildNodes(staged, this.#kind, USERSET, this.#nodes, emptyNode);
    this.#nodeCount = 0;
    for (const byObject of this.#nodes) this.#nodeCount += byObject?.size ?? 0;
    this.size = size;
    this.#bulk = bulk;
    this.#bulkRevisions = undefined;
    this.#staged = undefined;
    const reverse = this.#reverse;
    if (reverse === undefined) return;
    const byRelation = groupByUser(REL_SLOTS, (emit) => {
      for (const [o, r, n] of this.nodeEntries()) for (let i = n.from; i < n.to; i++) emit(r, bulk[i]!, o);
    });
    for (const [r, byUser] of byRelation) reverse[r] = byUser;
    for (const [o, r, n] of this.nodeEntries()) if (n.conds !== undefined) for (const [u, c] of n.conds) this.#addReverseCond(r, u, o, c);
  }

  /** Objects holding `relation` for `user` (reverse index), as numbers. */
  objectsOf(user: string, relation: string): ReadonlySet<number> | undefined {
    const u = this.#ids.get(user);
    const r = this.#rels.get(relation);
    this.#checkBuilt();
    if (u === undefined || r === undefined || this.#reverse === undefined) return undefined;
    return this.#reverseObjects(r, u, false);
  }

  /**
   * Reverse read without tuple objects: for each `users[i]`, every object of
   * `objectType` holding `relation` for it, as `emit(i, objectId, condition)`
   * (the tuple's condition, or `undefined`). In no particular order; a user
   * listed twice is read twice. Cost: the rows found plus one lookup per user.
   */
  reverseRead(objectType: string, relation: string, users: readonly string[], emit: (user: number, objectId: string, condition: TupleCondition | undefined) => void): void {
    const r = this.#rels.get(relation);
    this.#checkBuilt();
    if (r === undefined || this.#reverse === undefined) return;
    const byUser = this.#reverse[r];
    // The shared type-name string: the per-row comparison then meets the same string.
    const type = this.#typeNames.get(objectType);
    if (byUser === undefined || type === undefined) return;
    const conds = this.#reverseConds[r];
    const types = this.#type;
    const local = this.#localIds;
    const now = this.#expiring > 0 ? this.#clock() : 0;
    for (let i = 0; i < users.length; i++) {
      const u = this.#ids.get(users[i]!);
      if (u === undefined) continue;
      const objs = byUser.get(u);
      if (objs === undefined) continue;
      const c = conds?.get(u);
      for (const o of objs) {
        if (types[o] !== type) continue;
        if (this.#expiring > 0 && this.expired(o, r, u, now)) continue;
        let id = local[o];
        if (id === undefined) {
          const s = this.#strings[o]!;
          id = local[o] = s.slice(s.indexOf(':') + 1);
        }
        emit(i, id, c?.get(o));
      }
    }
  }

  // ---------------------------------------------------------------- reach

  /**
   * Does `user` (a plain object `type:id`) hold `relation` on `type:id`,
   * with `relation` monotone? Answers as the evaluator does in its monotone
   * mode: true when some chain of admitted tuples (conditions met) within the
   * depth limit leads to the user; otherwise the first error met on the way
   * (depth limit, dispatch budget, a condition that cannot be evaluated) is
   * thrown; otherwise false. `undefined` when the rewrite is not a plain
   * union (the caller resolves it another way). `object` and `user`, when
   * given, are `objectType:objectId` and `userType:userId` as the caller had
   * them (saves building them again).
   */
  reach(ts: TypeSystem, objectType: string, objectId: string, relation: string, userType: string, userId: string, limits: ReachLimits, object?: string, user?: string): boolean | undefined {
    this.#checkBuilt();
    // Expiring tuples are read through the filtered reads: the walk leaves them to the evaluator.
    if (this.#expiring > 0) return undefined;
    // An object no tuple names is walked as number -1: its nodes are empty, its computed relations still count.
    const start = this.#ids.get(object ?? `${objectType}:${objectId}`) ?? -1;
    const startRel = this.#rels.get(relation) ?? this.rel(relation);
    const uid = this.#ids.get(user ?? `${userType}:${userId}`);
    const plan0 = this.#plans.plan(ts, objectType, startRel);
    if (plan0 === null) return undefined;
    // A direct grant on the object itself answers before anything is allocated.
    if (plan0.direct && uid !== undefined) {
      const n = this.#nodes[startRel]?.get(start);
      if (n !== undefined && n.conds === undefined && hasUser(n, this.#bulk, uid) && this.#plans.admitsIn(plan0.admitted, ts, objectType, startRel, uid, undefined)) return true;
    }
    const wid = this.#wildcards.get(userType);
    // Reach is synchronous; a walk started while one runs gets scratch state of its own.
    const walk = this.#walk.walking ? this.#walk.nested() : this.#walk;
    return walk.run(ts, objectType, start, startRel, uid, wid, limits, this.#bulk);
  }
}
