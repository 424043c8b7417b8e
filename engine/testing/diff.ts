/**
 * The impact of a model change on generated stores: for each relation the
 * two models share, in how many stores and answers users gain or lose it,
 * with the smallest store that shows each change.
 */
import fc from 'fast-check';
import type { AuthorizationModel } from '../model.ts';
import type { GeneratedStore } from './arbitraries.ts';
import { storesOf } from './arbitraries.ts';
import { checkModelProperty, engineFor, type Counterexample, type PropertyRunOptions, type RelationName } from './properties.ts';
import { buildUniverse, objectsOf, type Slot } from './universe.ts';

/** How one relation's answers change from the old model to the new. */
export interface RelationImpact {
  relation: RelationName;
  /** Generated stores in which some user gains it on some object / loses it. */
  storesGaining: number;
  storesLosing: number;
  /** (user, object) answers that turn true / false, over all stores. */
  gained: number;
  lost: number;
  /** The smallest store found (shrunk) on which the answer changes, when one does. */
  example?: Counterexample;
}

/** The outcome of {@link diffModels}. */
export interface ModelImpact {
  /** Stores generated (valid for both models). */
  numRuns: number;
  seed: number;
  /** One entry per shared relation (or per relation asked for), in model order. */
  relations: RelationImpact[];
}

function names(m: AuthorizationModel): RelationName[] {
  return (m.type_definitions ?? []).flatMap((td) => Object.keys(td.relations ?? {}).map((r) => `${td.type}#${r}`));
}

/**
 * Compares `before` and `after` on `numRuns` generated stores valid for
 * both (tuples either model does not admit are never generated): every user
 * and object of each store, for `relations` (default: every relation both
 * models have). A changed relation comes with its smallest example, shrunk
 * by fast-check from the same seed.
 */
export async function diffModels(before: AuthorizationModel, after: AuthorizationModel, options: PropertyRunOptions & { relations?: readonly RelationName[] } = {}): Promise<ModelImpact> {
  const { relations: asked, ...run } = options;
  const numRuns = run.numRuns ?? 100;
  const seed = run.seed ?? (Date.now() ^ Math.floor(Math.random() * 0x100000000)) | 0;
  const afterNames = new Set(names(after));
  const relations = asked ?? names(before).filter((r) => afterNames.has(r));
  const universe = buildUniverse(before, run);
  const otherUniverse = buildUniverse(after, run);
  const slotKey = (s: Slot): string => `${s.object}#${s.relation}@${s.user}|${s.condition?.name ?? ''}`;
  const admitted = new Set(otherUniverse.slots.map(slotKey));
  const stores: GeneratedStore[] = fc.sample(storesOf(universe, run, (s) => admitted.has(slotKey(s))), { numRuns, seed });
  const impacts = new Map<RelationName, RelationImpact>(relations.map((r) => [r, { relation: r, storesGaining: 0, storesLosing: 0, gained: 0, lost: 0 }]));
  const withContext = (store: GeneratedStore): { context?: Record<string, unknown> } => (Object.keys(store.context).length > 0 ? { context: store.context } : {});
  const answer = async (engine: Awaited<ReturnType<typeof engineFor>>, user: string, relation: string, object: string, store: GeneratedStore): Promise<boolean | undefined> => {
    try {
      return (await engine.check({ user, relation, object, ...withContext(store) })).allowed;
    } catch {
      return undefined;
    }
  };
  for (const store of stores) {
    const a = await engineFor(before, store.tuples, run.engine);
    const b = await engineFor(after, store.tuples, run.engine);
    for (const r of relations) {
      const [type, relation] = r.split('#') as [string, string];
      const impact = impacts.get(r)!;
      let gained = 0;
      let lost = 0;
      for (const object of objectsOf(universe, type)) {
        for (const user of universe.users) {
          const x = await answer(a, user, relation, object, store);
          const y = await answer(b, user, relation, object, store);
          if (x === y) continue;
          if (y === true) gained++;
          else lost++;
        }
      }
      impact.gained += gained;
      impact.lost += lost;
      if (gained > 0) impact.storesGaining++;
      if (lost > 0) impact.storesLosing++;
    }
  }
  for (const impact of impacts.values()) {
    if (impact.gained + impact.lost === 0) continue;
    const result = await checkModelProperty(before, { kind: 'equivalent', model: after, relations: [impact.relation] }, { ...run, numRuns, seed });
    if (result.counterexample !== undefined) impact.example = result.counterexample;
  }
  return { numRuns: stores.length, seed, relations: [...impacts.values()] };
}
