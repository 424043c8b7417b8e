/**
 * The pieces of a bulk load of the graph index (engine/graph/graph_index.ts) that
 * work on numbers only: tuples staged as numbers in growable `Int32Array`s,
 * sorted unique runs in one array, the same layout built again from the
 * nodes' maps (compaction), and the reverse index's grouping.
 *
 * Why typed arrays: a million tuples held as a `Map` per node and a `Set` per
 * user are millions of small objects that all survive the young generation,
 * which then grows to its maximum, and whose promotion leaves the old space
 * fragmented; the process kept about 480 MiB of RSS for 146 MiB of live heap.
 * Typed arrays live outside the JS heap and are returned to the system when
 * dropped.
 */
import type { TupleCondition } from '../store.ts';

/** Tuples as (object, relation, user) numbers, in the order added; conditions apart by position. */
export class StagedTuples {
  objects = new Int32Array(4096);
  relations = new Int32Array(4096);
  users = new Int32Array(4096);
  length = 0;
  readonly conds = new Map<number, TupleCondition>();

  push(o: number, r: number, u: number, condition: TupleCondition | undefined): void {
    if (this.length === this.objects.length) {
      this.objects = grown(this.objects);
      this.relations = grown(this.relations);
      this.users = grown(this.users);
    }
    const i = this.length++;
    this.objects[i] = o;
    this.relations[i] = r;
    this.users[i] = u;
    if (condition !== undefined) this.conds.set(i, condition);
  }
}

function grown(a: Int32Array<ArrayBuffer>): Int32Array<ArrayBuffer> {
  const b = new Int32Array(a.length * 2);
  b.set(a);
  return b;
}

/** The fields of a graph node that a bulk build fills (`GraphNode`, engine/graph/graph_index.ts). */
interface BulkNode {
  conds: Map<number, TupleCondition> | undefined;
  from: number;
  mid: number;
  to: number;
}

/**
 * Builds the nodes of staged tuples: a counting sort by node into one array
 * of users, each node's plain and wildcard users in [from, mid) and its
 * userset users (`kind[u] === userset`) in [mid, to), each run sorted and
 * without repeats; conditions into the node's `conds`. `nodes` (per
 * relation number: object number → node) must hold none of these nodes yet; `make` makes an empty one. Returns the array and
 * the number of distinct tuples.
 */
export function buildNodes<N extends BulkNode>(staged: StagedTuples, kind: readonly number[], userset: number, nodes: (Map<number, N> | undefined)[], make: () => N): { users: Int32Array<ArrayBuffer>; size: number } {
  const { objects, relations, users, conds } = staged;
  const nodeAt = (i: number): N => nodes[relations[i]!]!.get(objects[i]!)!;
  // Count plain users into `mid` and usersets into `to`, then turn the counts into write positions.
  for (let i = 0; i < staged.length; i++) {
    const byObject = (nodes[relations[i]!] ??= new Map());
    let n = byObject.get(objects[i]!);
    if (n === undefined) byObject.set(objects[i]!, (n = make()));
    if (kind[users[i]!] === userset) n.to++;
    else n.mid++;
  }
  const all = function* (): Generator<N> {
    for (const byObject of nodes) if (byObject !== undefined) yield* byObject.values();
  };
  let total = 0;
  for (const n of all()) {
    const plain = n.mid;
    const sets = n.to;
    n.from = n.mid = total;
    n.to = total + plain;
    total += plain + sets;
  }
  const bulk = new Int32Array(total);
  for (let i = 0; i < staged.length; i++) {
    const n = nodeAt(i);
    const u = users[i]!;
    if (kind[u] === userset) bulk[n.to++] = u;
    else bulk[n.mid++] = u;
    // A tuple staged twice keeps the last one's condition.
    const c = conds.get(i);
    if (c !== undefined) (n.conds ??= new Map()).set(u, c);
    else n.conds?.delete(u);
  }
  let size = 0;
  for (const n of all()) {
    const plainEnd = sortUnique(bulk, n.from, n.mid);
    if (plainEnd < n.mid) {
      bulk.copyWithin(plainEnd, n.mid, n.to);
      n.to -= n.mid - plainEnd;
      n.mid = plainEnd;
    }
    n.to = sortUnique(bulk, n.mid, n.to);
    size += n.to - n.from;
  }
  return { users: bulk, size };
}

/** The fields of a graph node that compaction moves from its maps into runs (`GraphNode`, engine/graph/graph_index.ts). */
interface RunNode extends BulkNode {
  users: Map<number, number> | undefined;
  usersets: Map<number, number> | undefined;
}

/**
 * Moves the users every node holds in maps into sorted runs of one new
 * array, with their revisions (see `GraphIndex.compact`). `old` holds the
 * nodes' runs so far, added at `revisions[i]`, or all at `revision` when
 * `revisions` is undefined. Returns the new array and its revisions.
 */
export function compactRuns<N extends RunNode>(nodes: readonly (Map<number, N> | undefined)[], old: Int32Array, revisions: Float64Array | undefined, revision: number): { users: Int32Array<ArrayBuffer>; revisions: Float64Array<ArrayBuffer> } {
  let total = 0;
  for (const byObject of nodes) if (byObject !== undefined) for (const n of byObject.values()) total += n.to - n.from + (n.users?.size ?? 0) + (n.usersets?.size ?? 0);
  const bulk = new Int32Array(total);
  const out = new Float64Array(total);
  let at = 0;
  const fromMap = (m: Map<number, number>): void => {
    const users = Int32Array.from(m.keys()).sort();
    for (let i = 0; i < users.length; i++, at++) {
      bulk[at] = users[i]!;
      out[at] = m.get(users[i]!)!;
    }
  };
  for (const byObject of nodes) {
    if (byObject === undefined) continue;
    for (const n of byObject.values()) {
      // A node's users are either in its runs (not written since) or in its maps (thawed on a write): never both.
      if (n.to > n.from) {
        bulk.set(old.subarray(n.from, n.to), at);
        for (let i = n.from; i < n.to; i++) out[at + i - n.from] = revisions === undefined ? revision : revisions[i]!;
        const shift = at - n.from;
        at += n.to - n.from;
        n.from += shift;
        n.mid += shift;
        n.to += shift;
        continue;
      }
      n.from = at;
      if (n.users !== undefined) fromMap(n.users);
      n.mid = at;
      if (n.usersets !== undefined) fromMap(n.usersets);
      n.to = at;
      n.users = n.usersets = undefined;
    }
  }
  return { users: bulk, revisions: out };
}

/** Sorts `a[from, to)` and removes repeats; returns the run's new end. */
export function sortUnique(a: Int32Array, from: number, to: number): number {
  if (to - from < 2) return to;
  if (to - from <= 16) {
    for (let i = from + 1; i < to; i++) {
      const x = a[i]!;
      let j = i - 1;
      while (j >= from && a[j]! > x) {
        a[j + 1] = a[j]!;
        j--;
      }
      a[j + 1] = x;
    }
  } else {
    a.subarray(from, to).sort();
  }
  let end = from + 1;
  for (let i = from + 1; i < to; i++) if (a[i] !== a[end - 1]) a[end++] = a[i]!;
  return end;
}

/** Whether the sorted run `a[from, to)` holds `x` (binary search). */
/** The position of `x` in the sorted run `a[from, to)`, or -1. */
export function runIndex(a: Int32Array, from: number, to: number, x: number): number {
  let lo = from;
  let hi = to - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >>> 1;
    const v = a[mid]!;
    if (v === x) return mid;
    if (v < x) lo = mid + 1;
    else hi = mid - 1;
  }
  return -1;
}

export function runHas(a: Int32Array, from: number, to: number, x: number): boolean {
  let lo = from;
  let hi = to - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >>> 1;
    const v = a[mid]!;
    if (v === x) return true;
    if (v < x) lo = mid + 1;
    else hi = mid - 1;
  }
  return false;
}

/**
 * Groups (relation, user, object) triples by relation and user: `visit` is
 * called twice and must emit the same triples both times (a counting sort:
 * once to size the groups, once to fill them). Returns per relation, user →
 * its objects as a slice of one `Int32Array`.
 */
export function groupByUser(relSlots: number, visit: (emit: (r: number, u: number, o: number) => void) => void): Map<number, Map<number, Int32Array>> {
  const groups = new Map<number, number>();
  let counts = new Int32Array(1024);
  visit((r, u) => {
    const k = u * relSlots + r;
    let g = groups.get(k);
    if (g === undefined) {
      g = groups.size;
      groups.set(k, g);
      if (g === counts.length) counts = grown(counts);
    }
    counts[g]!++;
  });
  const next = new Int32Array(groups.size);
  let total = 0;
  for (let g = 0; g < groups.size; g++) {
    next[g] = total;
    total += counts[g]!;
  }
  const objects = new Int32Array(total);
  visit((r, u, o) => {
    objects[next[groups.get(u * relSlots + r)!]!++] = o;
  });
  const out = new Map<number, Map<number, Int32Array>>();
  for (const [k, g] of groups) {
    const r = k % relSlots;
    const end = next[g]!;
    let byUser = out.get(r);
    if (byUser === undefined) out.set(r, (byUser = new Map()));
    byUser.set((k - r) / relSlots, objects.subarray(end - counts[g]!, end));
  }
  return out;
}
