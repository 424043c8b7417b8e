/**
 * The reference dataset of performance-anchors §2.3, generated from a seeded
 * mulberry32 so every run (and every backend, and SpiceDB) sees the same tuples.
 *
 * Shape at scale 1 (about 1.03 M tuples):
 * - 10 k users, each a member of 5 distinct random leaf groups;
 * - 1,000 groups nested 3 deep: 700 leaves, 240 mid groups with 3 leaf
 *   subgroups each, 60 top groups with 4 mid groups each;
 * - 7,810 folders in 5 levels (10 / 50 / 250 / 1,250 / 6,250), each with 20
 *   user viewers and 2 `group#member` viewers;
 * - 100 k documents, each with one leaf-folder parent and 7 user viewers;
 * - plus 100 "deep" users, each a viewer on one root folder only (the 5-hop
 *   query set), and "nobody" users with no tuples at all (the negatives).
 *
 * Scale 0.3 / 1 / 3 multiplies every count but keeps the shape (depth,
 * fan-out), which is what the growth target P4 compares.
 *
 * Expected answers are computed here from the generator's own structures, not
 * by any evaluator, so they can check every evaluator including the baseline.
 */
import { mulberry32, randInt, type Rng } from './prng.ts';

/** One relationship tuple, in OpenFGA string form. */
export interface BenchTuple {
  object: string;
  relation: string;
  user: string;
}

/** The §2.3 model in OpenFGA DSL. */
export const REFERENCE_MODEL_DSL = `model
  schema 1.1
type user
type group
  relations
    define member: [user, group#member]
type folder
  relations
    define parent: [folder]
    define viewer: [user, group#member] or viewer from parent
type document
  relations
    define parent: [folder]
    define viewer: [user] or viewer from parent
`;

const direct = (types: Array<{ type: string; relation?: string }>) => ({
  directly_related_user_types: types,
});

/** The §2.3 model as OpenFGA JSON (schema 1.1). */
export const REFERENCE_MODEL = {
  schema_version: '1.1',
  type_definitions: [
    { type: 'user' },
    {
      type: 'group',
      relations: { member: { this: {} } },
      metadata: { relations: { member: direct([{ type: 'user' }, { type: 'group', relation: 'member' }]) } },
    },
    {
      type: 'folder',
      relations: {
        parent: { this: {} },
        viewer: {
          union: {
            child: [
              { this: {} },
              { tupleToUserset: { tupleset: { relation: 'parent' }, computedUserset: { relation: 'viewer' } } },
            ],
          },
        },
      },
      metadata: {
        relations: {
          parent: direct([{ type: 'folder' }]),
          viewer: direct([{ type: 'user' }, { type: 'group', relation: 'member' }]),
        },
      },
    },
    {
      type: 'document',
      relations: {
        parent: { this: {} },
        viewer: {
          union: {
            child: [
              { this: {} },
              { tupleToUserset: { tupleset: { relation: 'parent' }, computedUserset: { relation: 'viewer' } } },
            ],
          },
        },
      },
      metadata: {
        relations: { parent: direct([{ type: 'folder' }]), viewer: direct([{ type: 'user' }]) },
      },
    },
  ],
} as const;

export const FOLDER_LEVELS = 5;
export const DEEP_USERS = 100;

function distinct(rng: Rng, n: number, k: number): number[] {
  const out = new Set<number>();
  while (out.size < Math.min(k, n)) out.add(randInt(rng, n));
  return [...out];
}

/** The generated dataset with the structures needed to compute expected answers. */
export class ReferenceDataset {
  readonly scale: number;
  readonly users: number;
  readonly topGroups: number;
  readonly midGroups: number;
  readonly leafGroups: number;
  readonly roots: number;
  readonly documents: number;
  /** Folder count per level (level 0 = roots). */
  readonly levelSizes: number[];
  /** userGroups[u] = leaf group indexes of user u. */
  readonly userLeaves: number[][] = [];
  /** midChildren[m] = leaf group indexes of mid group m. */
  readonly midChildren: number[][] = [];
  /** folderUsers[level][j] = user indexes (deep users are users + i). */
  readonly folderUsers: number[][][] = [];
  /** folderGroups[level][j] = global group indexes. */
  readonly folderGroups: number[][][] = [];
  readonly docFolder: Int32Array;
  readonly docUsers: Int32Array;
  /** Number of distinct tuples (after removing duplicates the generator drew). */
  readonly tupleCount: number;

  constructor(scale = 1, seed = 12345) {
    const rng = mulberry32(seed);
    this.scale = scale;
    this.users = Math.round(10_000 * scale);
    this.topGroups = Math.max(1, Math.round(60 * scale));
    this.midGroups = this.topGroups * 4;
    this.leafGroups = Math.max(3, Math.round(700 * scale));
    this.roots = Math.max(1, Math.round(10 * scale));
    this.documents = Math.round(100_000 * scale);
    this.levelSizes = [];
    for (let l = 0; l < FOLDER_LEVELS; l++) this.levelSizes.push(this.roots * 5 ** l);
    for (let u = 0; u < this.users; u++) this.userLeaves.push(distinct(rng, this.leafGroups, 5));
    for (let m = 0; m < this.midGroups; m++) this.midChildren.push(distinct(rng, this.leafGroups, 3));
    const groupCount = this.groupCount;
    for (let l = 0; l < FOLDER_LEVELS; l++) {
      const users: number[][] = [];
      const groups: number[][] = [];
      for (let j = 0; j < (this.levelSizes[l] as number); j++) {
        users.push(distinct(rng, this.users, 20));
        groups.push(distinct(rng, groupCount, 2));
      }
      this.folderUsers.push(users);
      this.folderGroups.push(groups);
    }
    for (let i = 0; i < DEEP_USERS; i++) (this.folderUsers[0]?.[i % this.roots] as number[]).push(this.users + i);
    const leafFolders = this.levelSizes[FOLDER_LEVELS - 1] as number;
    this.docFolder = new Int32Array(this.documents);
    this.docUsers = new Int32Array(this.documents * 7);
    for (let d = 0; d < this.documents; d++) {
      this.docFolder[d] = randInt(rng, leafFolders);
      const vs = distinct(rng, this.users, 7);
      for (let k = 0; k < 7; k++) this.docUsers[d * 7 + k] = vs[k] as number;
    }
    let n = 0;
    this.forEachTuple(() => n++);
    this.tupleCount = n;
  }

  get groupCount(): number {
    return this.topGroups + this.midGroups + this.leafGroups;
  }

  /** Global group index layout: tops, then mids, then leaves. */
  groupId(g: number): string {
    return `group:g${g}`;
  }
  leafGroup(i: number): number {
    return this.topGroups + this.midGroups + i;
  }
  midGroup(i: number): number {
    return this.topGroups + i;
  }
  userId(u: number): string {
    return u < this.users ? `user:u${u}` : `user:deep${u - this.users}`;
  }
  folderId(level: number, j: number): string {
    return `folder:f${level}_${j}`;
  }
  documentId(d: number): string {
    return `document:d${d}`;
  }

  /** Calls `fn` for every distinct tuple, in a fixed order. */
  forEachTuple(fn: (object: string, relation: string, user: string) => void): void {
    for (let u = 0; u < this.users; u++) {
      for (const leaf of this.userLeaves[u] as number[]) fn(this.groupId(this.leafGroup(leaf)), 'member', this.userId(u));
    }
    for (let m = 0; m < this.midGroups; m++) {
      for (const leaf of this.midChildren[m] as number[]) {
        fn(this.groupId(this.midGroup(m)), 'member', `${this.groupId(this.leafGroup(leaf))}#member`);
      }
    }
    for (let t = 0; t < this.topGroups; t++) {
      for (let k = 0; k < 4; k++) fn(this.groupId(t), 'member', `${this.groupId(this.midGroup(t * 4 + k))}#member`);
    }
    for (let l = 0; l < FOLDER_LEVELS; l++) {
      const size = this.levelSizes[l] as number;
      for (let j = 0; j < size; j++) {
        const f = this.folderId(l, j);
        if (l > 0) fn(f, 'parent', this.folderId(l - 1, Math.floor(j / 5)));
        for (const u of this.folderUsers[l]?.[j] as number[]) fn(f, 'viewer', this.userId(u));
        for (const g of this.folderGroups[l]?.[j] as number[]) fn(f, 'viewer', `${this.groupId(g)}#member`);
      }
    }
    for (let d = 0; d < this.documents; d++) {
      const doc = this.documentId(d);
      fn(doc, 'parent', this.folderId(FOLDER_LEVELS - 1, this.docFolder[d] as number));
      for (let k = 0; k < 7; k++) fn(doc, 'viewer', this.userId(this.docUsers[d * 7 + k] as number));
    }
  }

  /** All tuples as objects (for loaders that take arrays). */
  tuples(): BenchTuple[] {
    const out: BenchTuple[] = [];
    this.forEachTuple((object, relation, user) => out.push({ object, relation, user }));
    return out;
  }

  /** Global indexes of every group user `u` is (transitively) a member of. */
  groupsOf(u: number): Set<number> {
    const out = new Set<number>();
    if (u >= this.users) return out;
    const leaves = new Set(this.userLeaves[u]);
    for (const leaf of leaves) out.add(this.leafGroup(leaf));
    for (let m = 0; m < this.midGroups; m++) {
      if ((this.midChildren[m] as number[]).some((leaf) => leaves.has(leaf))) {
        out.add(this.midGroup(m));
        out.add(Math.floor(m / 4));
      }
    }
    return out;
  }

  /** The expected answer of `document:d#viewer@user:u`, from the generator's structures. */
  expectedViewer(u: number, d: number, groups: Set<number> = this.groupsOf(u)): boolean {
    for (let k = 0; k < 7; k++) if (this.docUsers[d * 7 + k] === u) return true;
    let j = this.docFolder[d] as number;
    for (let l = FOLDER_LEVELS - 1; l >= 0; l--) {
      if ((this.folderUsers[l]?.[j] as number[]).includes(u)) return true;
      if ((this.folderGroups[l]?.[j] as number[]).some((g) => groups.has(g))) return true;
      j = Math.floor(j / 5);
    }
    return false;
  }

  /** Documents whose folder chain ends at root `r`. */
  documentUnderRoot(rng: Rng, r: number): number {
    const per = 5 ** (FOLDER_LEVELS - 1);
    for (;;) {
      const d = randInt(rng, this.documents);
      if (Math.floor((this.docFolder[d] as number) / per) === r) return d;
    }
  }

  /** Root folder of deep user i. */
  deepRoot(i: number): number {
    return i % this.roots;
  }
}

/**
 * Writes every tuple of `ds` to `store` in batches of `batch` (one `write`
 * call per batch, in order); returns the seconds it took.
 */
export async function writeDataset(
  store: { write(deletes: readonly BenchTuple[], writes: readonly BenchTuple[]): Promise<unknown> },
  ds: ReferenceDataset,
  batch: number,
): Promise<number> {
  const t0 = performance.now();
  const chunks: BenchTuple[][] = [];
  let pending: BenchTuple[] = [];
  ds.forEachTuple((object, relation, user) => {
    pending.push({ object, relation, user });
    if (pending.length === batch) {
      chunks.push(pending);
      pending = [];
    }
  });
  if (pending.length > 0) chunks.push(pending);
  for (const c of chunks) await store.write([], c);
  return (performance.now() - t0) / 1000;
}
