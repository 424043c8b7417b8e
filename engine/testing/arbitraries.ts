/**
 * fast-check arbitraries of stores valid for a model: tuple sets drawn from
 * the model's universe (universe.ts), biased toward links between objects
 * and toward chains that close into cycles, with condition contexts of the
 * declared parameter types, and the request context that completes them.
 */
import fc from 'fast-check';
import type { AuthorizationModel, ConditionParamTypeRef } from '../model.ts';
import type { TupleKey } from '../store.ts';
import { LatchkeyError } from '../errors.ts';
import { buildUniverse, type Slot, type Universe, type UniverseOptions } from './universe.ts';

/** A generated store: the tuples, and the request context every check of a property sends. */
export interface GeneratedStore {
  tuples: TupleKey[];
  /** Values for the condition parameters tuples leave out (empty when the model has no conditions). */
  context: Record<string, unknown>;
}

/** How stores are generated. */
export interface StoreOptions extends UniverseOptions {
  /** At most this many tuples per store. Default 16, 1..1000. */
  maxTuples?: number;
  /**
   * Share of draws (0..1) that pick a link between objects (usersets and
   * parents) rather than any admitted tuple; half of those follow a chain
   * `i → i+1` that closes into a cycle. Default 0.6.
   */
  linkBias?: number;
}

const STRINGS = ['', 'a', 'b', 'admin', 'eu', 'us'];

/**
 * JSON values of a condition parameter type, as a request or a tuple context
 * carries them (durations as Go duration strings, timestamps as RFC 3339,
 * IP addresses as text). Values stay small and near the edges conditions
 * usually test (0, ±1, short strings), so comparisons flip often.
 */
export function parameterValue(type: ConditionParamTypeRef): fc.Arbitrary<unknown> {
  const inner = (): fc.Arbitrary<unknown> => parameterValue(type.generic_types?.[0] ?? { type_name: 'TYPE_NAME_STRING' });
  switch (type.type_name) {
    case 'TYPE_NAME_BOOL':
      return fc.boolean();
    case 'TYPE_NAME_STRING':
      return fc.oneof(fc.constantFrom(...STRINGS), fc.string({ maxLength: 4 }));
    case 'TYPE_NAME_INT':
      return fc.oneof(fc.integer({ min: -3, max: 12 }), fc.integer({ min: -1000, max: 1000 }));
    case 'TYPE_NAME_UINT':
      return fc.oneof(fc.integer({ min: 0, max: 12 }), fc.integer({ min: 0, max: 1000 }));
    case 'TYPE_NAME_DOUBLE':
      return fc.oneof(fc.integer({ min: -3, max: 12 }), fc.double({ min: -100, max: 100, noNaN: true, noDefaultInfinity: true }));
    case 'TYPE_NAME_DURATION':
      return fc.tuple(fc.integer({ min: 0, max: 90 }), fc.constantFrom('s', 'm', 'h')).map(([n, unit]) => `${n}${unit}`);
    case 'TYPE_NAME_TIMESTAMP':
      // 2020-01-01 to 2030-12-31, whole seconds.
      return fc.integer({ min: 1_577_836_800, max: 1_924_991_999 }).map((s) => new Date(s * 1000).toISOString().replace('.000Z', 'Z'));
    case 'TYPE_NAME_IPADDRESS':
      return fc.tuple(fc.constantFrom('10.0.0', '10.1.2', '192.168.1', '172.16.0'), fc.integer({ min: 0, max: 255 })).map(([net, host]) => `${net}.${host}`);
    case 'TYPE_NAME_LIST':
      return fc.array(inner(), { maxLength: 3 });
    case 'TYPE_NAME_MAP':
      return fc.dictionary(fc.constantFrom('a', 'b', 'k'), inner(), { maxKeys: 3 });
    case 'TYPE_NAME_ANY':
    case 'TYPE_NAME_UNSPECIFIED':
      return fc.oneof(fc.boolean(), fc.integer({ min: -3, max: 12 }), fc.constantFrom(...STRINGS));
  }
}

/**
 * `count` contexts with a value for each of `parameters` (name → type),
 * drawn with `seed`: for workloads built outside a property (benchmarks).
 */
export function sampleContexts(parameters: ReadonlyMap<string, ConditionParamTypeRef> | Record<string, ConditionParamTypeRef>, count: number, seed: number): Record<string, unknown>[] {
  return fc.sample(contextOf(parameters), { numRuns: count, seed });
}

/** Values for each named parameter. */
function contextOf(parameters: ReadonlyMap<string, ConditionParamTypeRef> | Record<string, ConditionParamTypeRef>): fc.Arbitrary<Record<string, unknown>> {
  const entries = parameters instanceof Map ? [...parameters] : Object.entries(parameters);
  const record: Record<string, fc.Arbitrary<unknown>> = {};
  for (const [name, type] of entries) record[name] = parameterValue(type);
  return fc.record(record);
}

/** A tuple of `slot`; a conditional one carries values for a subset of its parameters (always those the request cannot carry). */
function tupleOf(slot: Slot, universe: Universe): fc.Arbitrary<TupleKey> {
  const base = { object: slot.object, relation: slot.relation, user: slot.user };
  const cond = slot.condition;
  if (cond === undefined) return fc.constant(base);
  const names = Object.keys(cond.parameters);
  const required = names.filter((n) => !universe.requestParameters.has(n));
  const optional = names.filter((n) => universe.requestParameters.has(n));
  return fc.tuple(contextOf(cond.parameters), fc.subarray(optional)).map(([values, chosen]) => {
    const keep = new Set([...required, ...chosen]);
    const context: Record<string, unknown> = {};
    for (const n of names) if (keep.has(n)) context[n] = values[n];
    return { ...base, condition: Object.keys(context).length === 0 ? { name: cond.name } : { name: cond.name, context } };
  });
}

function badOption(message: string, option: string): LatchkeyError {
  return new LatchkeyError('invalid_argument', message, { reason: 'invalid_option', details: { option } });
}

/**
 * Stores valid for the universe's model: up to `maxTuples` distinct tuples
 * (by object, relation and user) and a request context. Shrinking removes
 * tuples and simplifies condition values, so a failing store shrinks to the
 * few tuples that make it fail.
 */
export function storesOf(universe: Universe, options: StoreOptions = {}, slotFilter?: (slot: Slot) => boolean): fc.Arbitrary<GeneratedStore> {
  const maxTuples = options.maxTuples ?? 16;
  if (!Number.isInteger(maxTuples) || maxTuples < 1 || maxTuples > 1000) throw badOption('maxTuples must be an integer from 1 to 1000', 'maxTuples');
  const bias = options.linkBias ?? 0.6;
  if (typeof bias !== 'number' || !(bias >= 0 && bias <= 1)) throw badOption('linkBias must be from 0 to 1', 'linkBias');
  const all = slotFilter === undefined ? universe.slots : universe.slots.filter(slotFilter);
  const context = contextOf(universe.requestParameters);
  if (all.length === 0) return context.map((c) => ({ tuples: [], context: c }));
  const tuplesOf = (slots: readonly Slot[]): fc.Arbitrary<TupleKey[]> => {
    const pickFrom = (list: readonly Slot[]): fc.Arbitrary<Slot> => fc.integer({ min: 0, max: list.length - 1 }).map((i) => list[i]!);
    const links = slots.filter((s) => s.link);
    const chains = slots.filter((s) => s.chain);
    const weight = (w: number): number => Math.round(w * 100);
    const choices: { weight: number; arbitrary: fc.Arbitrary<Slot> }[] = [{ weight: Math.max(1, weight(1 - bias)), arbitrary: pickFrom(slots) }];
    if (links.length > 0 && bias > 0) choices.push({ weight: Math.max(1, weight(bias / 2)), arbitrary: pickFrom(links) });
    if (chains.length > 0 && bias > 0) choices.push({ weight: Math.max(1, weight(bias / 2)), arbitrary: pickFrom(chains) });
    // Some draws are pairs of tuples between one user and one object under two relations (an owner
    // who is also blocked): the combinations exclusions and intersections turn on.
    const byPair = new Map<string, Slot[]>();
    for (const s of slots) byPair.set(`${s.object}|${s.user}`, [...(byPair.get(`${s.object}|${s.user}`) ?? []), s]);
    const pairs = [...byPair.values()].filter((g) => g.length >= 2);
    const single = fc.oneof(...choices).chain((s) => tupleOf(s, universe).map((t) => [t]));
    const element =
      pairs.length === 0
        ? single
        : fc.oneof(
            { weight: 3, arbitrary: single },
            {
              weight: 1,
              arbitrary: fc
                .integer({ min: 0, max: pairs.length - 1 })
                .chain((i) => fc.shuffledSubarray(pairs[i]!, { minLength: 2, maxLength: 2 }))
                .chain(([a, b]) => fc.tuple(tupleOf(a!, universe), tupleOf(b!, universe))),
            },
          );
    const cap = Math.min(maxTuples, slots.length);
    return fc.array(element, { maxLength: cap }).map((groups) => {
      const seen = new Set<string>();
      const out: TupleKey[] = [];
      for (const t of groups.flat()) {
        const k = `${t.object}#${t.relation}@${t.user}`;
        if (seen.has(k) || out.length >= cap) continue;
        seen.add(k);
        out.push(t);
      }
      return out;
    });
  };
  // A third of the stores focus on the first two ids of each type, so that tuples meet on the same
  // users and objects (an owner who is also blocked) far more often than across the whole universe.
  const maxRank = Math.max(...all.map((s) => s.rank));
  const focused = all.filter((s) => s.rank <= 1);
  const tuples = maxRank <= 1 || focused.length === 0 ? tuplesOf(all) : fc.oneof({ weight: 2, arbitrary: tuplesOf(all) }, { weight: 1, arbitrary: tuplesOf(focused) });
  return fc.record({ tuples, context });
}

/**
 * Stores valid for `model` (OpenFGA JSON): the arbitrary to use in one's
 * own fast-check properties. `invalid_argument` (reason `invalid_option`)
 * for bad options.
 *
 * ```ts
 * fc.assert(fc.asyncProperty(storeArbitrary(model), async (store) => { … }));
 * ```
 */
export function storeArbitrary(model: AuthorizationModel, options: StoreOptions = {}): fc.Arbitrary<GeneratedStore> {
  return storesOf(buildUniverse(model, options), options);
}

/** Tuple sets valid for `model`, without the request context: {@link storeArbitrary}'s tuples. */
export function tupleSetArbitrary(model: AuthorizationModel, options: StoreOptions = {}): fc.Arbitrary<TupleKey[]> {
  return storeArbitrary(model, options).map((s) => s.tuples);
}
