/**
 * The universe a generated store draws from: for each type of a model a few
 * object ids, and every tuple the model's type restrictions admit over them
 * (direct users, wildcards, usersets, tuple-to-userset parents, conditions),
 * each a "slot" the store arbitrary may fill.
 */
import type { AuthorizationModel, Condition, ConditionParamTypeRef, RelationReference, TypeDefinition, Userset } from '../model.ts';
import { LatchkeyError } from '../errors.ts';

/** Object ids to generate: the same list for every type, or a list per type (types not named get the default). */
export type IdsOption = readonly string[] | Readonly<Record<string, readonly string[]>>;

/** How a universe is laid out. */
export interface UniverseOptions {
  /** Object ids per type; default `['0', '1', '2']` (see {@link UniverseOptions.idsPerType}). */
  ids?: IdsOption;
  /** Number of default ids per type when `ids` is not given (ids `'0'`, `'1'`, …). Default 3, 1..20. */
  idsPerType?: number;
}

/** A tuple the model admits over the universe. */
export interface Slot {
  object: string;
  relation: string;
  user: string;
  /** The condition the restriction names (`user with c`), with its declared parameters. */
  condition?: { name: string; parameters: Record<string, ConditionParamTypeRef> };
  /**
   * True when the slot links an object to another object (a userset such as
   * `group:1#member`, or a parent such as `folder:2`): these make the graph
   * deep and, between objects of one type, cyclic.
   */
  link: boolean;
  /** True when the link goes from id i to id i+1 (or the last back to the first) of the same type: the chains and cycles. */
  chain: boolean;
  /** The greater of the object's and the user's position in their types' id lists (0 for a wildcard): stores focused on the first ids draw only slots below their focus. */
  rank: number;
}

/** The universe of a model. */
export interface Universe {
  model: AuthorizationModel;
  /** `type` → its object ids (without the `type:` prefix). */
  ids: ReadonlyMap<string, readonly string[]>;
  /** Every admitted tuple. */
  slots: readonly Slot[];
  /**
   * `type:id` of every type that appears as a plain or wildcard restriction
   * of a relation other than a tupleset (the `parent` of `viewer from
   * parent`): the users a property asks about.
   */
  users: readonly string[];
  /** Parameters the request context carries (name → type); parameters whose name two conditions declare with different types are left to tuples. */
  requestParameters: ReadonlyMap<string, ConditionParamTypeRef>;
}

function badOption(message: string, option: string): LatchkeyError {
  return new LatchkeyError('invalid_argument', message, { reason: 'invalid_option', details: { option } });
}

function idsOf(type: string, options: UniverseOptions): readonly string[] {
  const ids = options.ids;
  const perType = options.idsPerType ?? 3;
  if (!Number.isInteger(perType) || perType < 1 || perType > 20) throw badOption('idsPerType must be an integer from 1 to 20', 'idsPerType');
  let list: readonly string[] | undefined;
  if (Array.isArray(ids)) list = ids as readonly string[];
  else if (ids !== undefined) list = (ids as Readonly<Record<string, readonly string[]>>)[type];
  if (list === undefined) return Array.from({ length: perType }, (_, i) => String(i));
  if (list.length === 0 || list.some((id) => typeof id !== 'string' || !/^[^\s#:*]+$/u.test(id))) {
    throw badOption(`ids of '${type}' must be a non-empty list of ids without spaces, '#', ':' or '*'`, 'ids');
  }
  return [...new Set(list)];
}

function restrictionsOf(td: TypeDefinition, relation: string): RelationReference[] {
  return td.metadata?.relations?.[relation]?.directly_related_user_types ?? [];
}

/** Lays out the universe of `model`. `invalid_argument` (reason `invalid_option`) for bad options. */
export function buildUniverse(model: AuthorizationModel, options: UniverseOptions = {}): Universe {
  const types = model.type_definitions ?? [];
  const ids = new Map<string, readonly string[]>();
  for (const td of types) ids.set(td.type, idsOf(td.type, options));
  const conditions: Record<string, Condition> = model.conditions ?? {};
  const userTypes = new Set<string>();
  const tuplesets = new Set<string>();
  const findTuplesets = (type: string, u: Userset): void => {
    if ('tupleToUserset' in u) tuplesets.add(`${type}#${u.tupleToUserset.tupleset.relation ?? ''}`);
    const children = 'union' in u ? u.union.child : 'intersection' in u ? u.intersection.child : 'difference' in u ? [u.difference.base, u.difference.subtract] : [];
    for (const c of children) findTuplesets(type, c);
  };
  for (const td of types) for (const u of Object.values(td.relations ?? {})) findTuplesets(td.type, u);
  const hasRelations = new Set(types.filter((t) => Object.keys(t.relations ?? {}).length > 0).map((t) => t.type));
  const slots: Slot[] = [];
  for (const td of types) {
    const objectIds = ids.get(td.type)!;
    for (const relation of Object.keys(td.relations ?? {})) {
      for (const r of restrictionsOf(td, relation)) {
        const targetIds = ids.get(r.type);
        if (targetIds === undefined) continue;
        const cond = r.condition === undefined ? undefined : conditions[r.condition];
        const condition = cond === undefined ? undefined : { name: cond.name ?? r.condition!, parameters: cond.parameters ?? {} };
        if (r.condition !== undefined && condition === undefined) continue;
        if (r.relation === undefined && !tuplesets.has(`${td.type}#${relation}`)) userTypes.add(r.type);
        objectIds.forEach((id, i) => {
          const object = `${td.type}:${id}`;
          const push = (user: string, link: boolean, chain: boolean, rank: number): void => {
            slots.push({ object, relation, user, link, chain, rank, ...(condition === undefined ? {} : { condition }) });
          };
          if (r.wildcard !== undefined) {
            push(`${r.type}:*`, false, false, i);
            return;
          }
          const linksObjects = r.relation !== undefined || hasRelations.has(r.type);
          targetIds.forEach((target, j) => {
            const user = r.relation === undefined ? `${r.type}:${target}` : `${r.type}:${target}#${r.relation}`;
            const chain = r.type === td.type && targetIds.length > 1 && j === (i + 1) % targetIds.length;
            push(user, linksObjects, chain, Math.max(i, j));
          });
        });
      }
    }
  }
  const declared = new Map<string, ConditionParamTypeRef | null>();
  for (const c of Object.values(conditions)) {
    for (const [name, type] of Object.entries(c.parameters ?? {})) {
      const seen = declared.get(name);
      if (seen === undefined) declared.set(name, type);
      else if (seen !== null && JSON.stringify(seen) !== JSON.stringify(type)) declared.set(name, null);
    }
  }
  const requestParameters = new Map<string, ConditionParamTypeRef>();
  for (const [name, type] of declared) if (type !== null) requestParameters.set(name, type);
  const users = [...userTypes].sort().flatMap((t) => (ids.get(t) ?? []).map((id) => `${t}:${id}`));
  return { model, ids, slots, users, requestParameters };
}

/** The object ids of a universe's type as `type:id`. */
export function objectsOf(universe: Universe, type: string): string[] {
  return (universe.ids.get(type) ?? []).map((id) => `${type}:${id}`);
}
