/**
 * The query sets of performance-anchors §4 over the reference dataset, each
 * query with its expected answer (computed from the generator, never by an
 * evaluator). Seeded separately from the data so a query set can change
 * without changing the tuples.
 */
import { DEEP_USERS, type ReferenceDataset } from './dataset.ts';
import { mulberry32, randInt } from './prng.ts';

export interface CheckQuery {
  object: string;
  relation: string;
  user: string;
  expected: boolean;
}

export type QuerySetName = 'direct' | 'deep5' | 'negative' | 'random' | 'nested_groups';

export const QUERY_SETS: readonly QuerySetName[] = ['direct', 'deep5', 'negative', 'random', 'nested_groups'];

/** Builds `n` queries of the named set. */
export function buildQueries(ds: ReferenceDataset, set: QuerySetName, n: number, seed = 777): CheckQuery[] {
  const rng = mulberry32(seed + QUERY_SETS.indexOf(set));
  const out: CheckQuery[] = [];
  const groupsCache = new Map<number, Set<number>>();
  const groupsOf = (u: number): Set<number> => {
    let g = groupsCache.get(u);
    if (!g) {
      g = ds.groupsOf(u);
      groupsCache.set(u, g);
    }
    return g;
  };
  for (let i = 0; i < n; i++) {
    switch (set) {
      case 'direct': {
        const d = randInt(rng, ds.documents);
        const u = ds.docUsers[d * 7 + randInt(rng, 7)] as number;
        out.push({ object: ds.documentId(d), relation: 'viewer', user: ds.userId(u), expected: true });
        break;
      }
      case 'deep5': {
        const k = randInt(rng, DEEP_USERS);
        const d = ds.documentUnderRoot(rng, ds.deepRoot(k));
        out.push({ object: ds.documentId(d), relation: 'viewer', user: ds.userId(ds.users + k), expected: true });
        break;
      }
      case 'negative': {
        const d = randInt(rng, ds.documents);
        out.push({ object: ds.documentId(d), relation: 'viewer', user: `user:nobody${randInt(rng, 1000)}`, expected: false });
        break;
      }
      case 'random': {
        const d = randInt(rng, ds.documents);
        const u = randInt(rng, ds.users);
        out.push({
          object: ds.documentId(d),
          relation: 'viewer',
          user: ds.userId(u),
          expected: ds.expectedViewer(u, d, groupsOf(u)),
        });
        break;
      }
      case 'nested_groups': {
        const u = randInt(rng, ds.users);
        const g = randInt(rng, ds.topGroups);
        out.push({ object: ds.groupId(g), relation: 'member', user: ds.userId(u), expected: groupsOf(u).has(g) });
        break;
      }
    }
  }
  return out;
}
