/**
 * Properties of an authorization model, checked on generated stores with
 * the engine: each is a statement over every user and object of a store
 * (`implies`, `excludes`, `equivalent`, `monotonic`, `bounded`, or a
 * predicate), and a failing store is shrunk by fast-check to the few tuples
 * that make it fail.
 */
import fc from 'fast-check';
import { Engine } from '../index.ts';
import { LatchkeyError } from '../errors.ts';
import type { AuthorizationModel } from '../model.ts';
import type { TupleKey } from '../store.ts';
import { storesOf, type GeneratedStore, type StoreOptions } from './arbitraries.ts';
import { buildUniverse, objectsOf, type Slot, type Universe } from './universe.ts';

/** `type#relation`, as in `document#viewer`. */
export type RelationName = string;

/** What a predicate sees of one generated store. */
export interface ModelProbe {
  /** The store's tuples. */
  readonly tuples: readonly TupleKey[];
  /** The request context every check sends. */
  readonly context: Readonly<Record<string, unknown>>;
  /** Every user (`type:id`) the universe holds. */
  readonly users: readonly string[];
  /** The objects (`type:id`) of `type`. */
  objects(type: string): string[];
  /** The engine's answer; a check that fails with an error rejects with it. */
  check(user: string, relation: string, object: string): Promise<boolean>;
}

/**
 * What a predicate returns: `true` or nothing when the store keeps the
 * property; `false` or a reason when it does not; or the check that shows it
 * (`{ user, relation, object, expected }`), which makes the counterexample a
 * store-test case that fails.
 */
export type PredicateOutcome = boolean | string | void | undefined | { user: string; relation: string; object: string; expected: boolean; reason?: string };

/** A property of a model. Relation names are `type#relation`. */
export type ModelProperty =
  /** Every user with `if` on an object has `then` on it. */
  | { kind: 'implies'; if: RelationName; then: RelationName }
  /** No user has both relations on one object. */
  | { kind: 'excludes'; relations: readonly [RelationName, RelationName] }
  /**
   * The same answers: two relations of the model, or (with `model`) this
   * model and another on every store valid for both, for `relations`
   * (default: every relation the two models share).
   */
  | { kind: 'equivalent'; relations: readonly [RelationName, RelationName] }
  | { kind: 'equivalent'; model: AuthorizationModel; relations?: readonly RelationName[] }
  /** Adding tuples of the `adding` relations never takes away any of `relations` (default: every relation). */
  | { kind: 'monotonic'; adding: readonly RelationName[]; relations?: readonly RelationName[] }
  /**
   * `relation` never reaches across an attribute of the ids: wherever both
   * the user's id and the object's id match `pattern`, their first capture
   * group (or the whole match) is the same, as a tenant prefix is. The
   * generated tuples themselves stay within the attribute (as writes
   * checked by the application do), except those of the `crossing`
   * relations, which may link any two ids (a partner organization, a shared
   * folder).
   */
  | { kind: 'bounded'; relation: RelationName; pattern: string | RegExp; crossing?: readonly RelationName[] }
  /** Anything else, as a function of a generated store. */
  | { kind: 'predicate'; predicate: (probe: ModelProbe) => PredicateOutcome | Promise<PredicateOutcome> };

/** The check a counterexample fails. */
export interface FailingCheck {
  user: string;
  relation: string;
  object: string;
  /** What the property requires. */
  expected: boolean;
  /** What the engine answered (`error: …` when it failed). */
  actual: boolean | string;
}

/** A store on which a property does not hold, shrunk. */
export interface Counterexample {
  /** The model the failing check runs on (for `equivalent` of two models, the second one). */
  model: AuthorizationModel;
  tuples: TupleKey[];
  /** The request context of the checks (empty without conditions). */
  context: Record<string, unknown>;
  /** Why the property fails, in words. */
  reason: string;
  /** The check that shows it, when there is one (always, except for a predicate that names none). */
  check?: FailingCheck;
}

/** Options of {@link checkModelProperty}. */
export interface PropertyRunOptions extends StoreOptions {
  /** Generated stores to try. Default 100. */
  numRuns?: number;
  /** The seed (a run with the same seed, options and model tries the same stores). Default: a new one. */
  seed?: number;
  /** fast-check's replay path, to go straight to a known counterexample. */
  path?: string;
  /** Engine limits for the checks (`maxResolutionDepth`, …). */
  engine?: { maxResolutionDepth?: number; maxDispatchesPerCheck?: number; conditionCostLimit?: number };
}

/** The outcome of {@link checkModelProperty}. */
export interface PropertyResult {
  ok: boolean;
  /** Stores tried. */
  numRuns: number;
  /** Give it back as `seed` to replay this run. */
  seed: number;
  /** fast-check's path of the counterexample, when one was found. */
  path?: string;
  /** Shrinking steps taken. */
  numShrinks: number;
  counterexample?: Counterexample;
}

type Ask = (user: string, relation: string, object: string) => Promise<boolean | string>;

function badProperty(message: string): LatchkeyError {
  return new LatchkeyError('invalid_argument', message, { reason: 'invalid_property' });
}

/** Splits `type#relation`, checking that the model has it. */
function relationOf(model: AuthorizationModel, name: RelationName, what: string): { type: string; relation: string } {
  const i = typeof name === 'string' ? name.indexOf('#') : -1;
  if (i <= 0 || i === name.length - 1) throw badProperty(`${what}: '${String(name)}' is not of the form type#relation`);
  const type = name.slice(0, i);
  const relation = name.slice(i + 1);
  const td = (model.type_definitions ?? []).find((t) => t.type === type);
  if (td === undefined) throw badProperty(`${what}: the model has no type '${type}'`);
  if (td.relations?.[relation] === undefined) throw badProperty(`${what}: the model has no relation '${type}#${relation}'`);
  return { type, relation };
}

function allRelations(model: AuthorizationModel): RelationName[] {
  return (model.type_definitions ?? []).flatMap((td) => Object.keys(td.relations ?? {}).map((r) => `${td.type}#${r}`));
}

/**
 * An engine on a fresh memory store holding `model` and `tuples`. A tuple
 * the model does not admit fails with the engine's `invalid_argument`.
 */
export async function engineFor(model: AuthorizationModel, tuples: readonly TupleKey[], limits: PropertyRunOptions['engine'] = {}): Promise<Engine> {
  const engine = new Engine({ ...limits, maxTuplesPerWrite: 1000 });
  await engine.writeModel(model);
  for (let i = 0; i < tuples.length; i += 1000) await engine.write({ writes: tuples.slice(i, i + 1000) });
  return engine;
}

function asker(engine: Engine, context: Record<string, unknown>): Ask {
  const withContext = Object.keys(context).length > 0;
  return async (user, relation, object) => {
    try {
      return (await engine.check({ user, relation, object, ...(withContext ? { context } : {}) })).allowed;
    } catch (err) {
      return `error: ${err instanceof Error ? err.message : String(err)}`;
    }
  };
}

/** A compiled property: an arbitrary of inputs, and the evaluation of one input (undefined when it holds). */
interface Compiled<T> {
  arbitrary: fc.Arbitrary<T>;
  evaluate(input: T): Promise<Counterexample | undefined>;
}

function key(t: TupleKey): string {
  return `${t.object}#${t.relation}@${t.user}`;
}

function attribute(pattern: RegExp, ref: string): string | undefined {
  const afterType = ref.slice(ref.indexOf(':') + 1);
  const id = afterType.includes('#') ? afterType.slice(0, afterType.indexOf('#')) : afterType;
  const m = pattern.exec(id);
  if (m === null) return undefined;
  const groups = m.groups === undefined ? [] : Object.values(m.groups);
  return groups.find((g) => g !== undefined) ?? m.slice(1).find((g) => g !== undefined) ?? m[0];
}

function compile(model: AuthorizationModel, property: ModelProperty, options: PropertyRunOptions): Compiled<unknown> {
  if (property === null || typeof property !== 'object') throw badProperty('a property must be an object');
  const universe = buildUniverse(model, options);
  const limits = options.engine ?? {};
  const onStore = (evaluate: (ask: Ask, store: GeneratedStore, u: Universe) => Promise<Omit<Counterexample, 'model' | 'tuples' | 'context'> | undefined>, u = universe, m = model): Compiled<unknown> => ({
    arbitrary: storesOf(u, options),
    async evaluate(input) {
      const store = input as GeneratedStore;
      const engine = await engineFor(m, store.tuples, limits);
      const found = await evaluate(asker(engine, store.context), store, u);
      return found === undefined ? undefined : { model: m, tuples: store.tuples, context: store.context, ...found };
    },
  });
  const failing = (user: string, relation: string, object: string, expected: boolean, actual: boolean | string, reason: string): Omit<Counterexample, 'model' | 'tuples' | 'context'> => ({
    reason,
    check: { user, relation, object, expected, actual },
  });

  switch (property.kind) {
    case 'implies': {
      const a = relationOf(model, property.if, 'implies');
      const b = relationOf(model, property.then, 'implies');
      if (a.type !== b.type) throw badProperty(`implies: '${property.if}' and '${property.then}' must be relations of one type`);
      return onStore(async (ask) => {
        for (const object of objectsOf(universe, a.type)) {
          for (const user of universe.users) {
            const has = await ask(user, a.relation, object);
            if (typeof has === 'string') return failing(user, a.relation, object, true, has, `checking ${a.type}#${a.relation} failed`);
            if (!has) continue;
            const then = await ask(user, b.relation, object);
            if (then !== true) return failing(user, b.relation, object, true, then, `${user} has ${a.relation} on ${object} but not ${b.relation}`);
          }
        }
        return undefined;
      });
    }
    case 'excludes': {
      if (!Array.isArray(property.relations) || property.relations.length !== 2) throw badProperty('excludes: give two relations');
      const a = relationOf(model, property.relations[0], 'excludes');
      const b = relationOf(model, property.relations[1], 'excludes');
      if (a.type !== b.type) throw badProperty('excludes: the two relations must be of one type');
      return onStore(async (ask) => {
        for (const object of objectsOf(universe, a.type)) {
          for (const user of universe.users) {
            const has = await ask(user, a.relation, object);
            if (typeof has === 'string') return failing(user, a.relation, object, false, has, `checking ${a.type}#${a.relation} failed`);
            if (!has) continue;
            const other = await ask(user, b.relation, object);
            if (other !== false) return failing(user, b.relation, object, false, other, `${user} has both ${a.relation} and ${b.relation} on ${object}`);
          }
        }
        return undefined;
      });
    }
    case 'equivalent': {
      if ('model' in property && property.model !== undefined) return compileTwoModels(model, property.model, property.relations, options);
      const rels = (property as { relations?: readonly RelationName[] }).relations;
      if (!Array.isArray(rels) || rels.length !== 2) throw badProperty('equivalent: give two relations, or another model');
      const a = relationOf(model, rels[0]!, 'equivalent');
      const b = relationOf(model, rels[1]!, 'equivalent');
      if (a.type !== b.type) throw badProperty('equivalent: the two relations must be of one type');
      return onStore(async (ask) => {
        for (const object of objectsOf(universe, a.type)) {
          for (const user of universe.users) {
            const x = await ask(user, a.relation, object);
            if (typeof x === 'string') return failing(user, a.relation, object, false, x, `checking ${a.type}#${a.relation} failed`);
            const y = await ask(user, b.relation, object);
            if (y !== x) return failing(user, b.relation, object, x, y, `${user} ${x ? 'has' : 'lacks'} ${a.relation} on ${object} but ${y === true ? 'has' : y === false ? 'lacks' : 'fails to check'} ${b.relation}`);
          }
        }
        return undefined;
      });
    }
    case 'monotonic': {
      if (!Array.isArray(property.adding) || property.adding.length === 0) throw badProperty('monotonic: give the relations whose tuples are added');
      const adding = new Set(property.adding.map((r) => {
        const x = relationOf(model, r, 'monotonic');
        return `${x.type}#${x.relation}`;
      }));
      const watched = (property.relations ?? allRelations(model)).map((r) => relationOf(model, r, 'monotonic'));
      const extra = storesOf(universe, { ...options, maxTuples: Math.min(4, options.maxTuples ?? 4) }, (s: Slot) => adding.has(`${s.object.slice(0, s.object.indexOf(':'))}#${s.relation}`));
      const arbitrary = fc.tuple(storesOf(universe, options), extra);
      return {
        arbitrary,
        async evaluate(input) {
          const [store, more] = input as [GeneratedStore, GeneratedStore];
          const seen = new Set(store.tuples.map(key));
          const added = more.tuples.filter((t) => !seen.has(key(t)));
          if (added.length === 0) return undefined;
          const after = [...store.tuples, ...added];
          const before = asker(await engineFor(model, store.tuples, limits), store.context);
          const later = asker(await engineFor(model, after, limits), store.context);
          for (const { type, relation } of watched) {
            for (const object of objectsOf(universe, type)) {
              for (const user of universe.users) {
                if ((await before(user, relation, object)) !== true) continue;
                const now = await later(user, relation, object);
                if (now !== true) {
                  return {
                    model,
                    tuples: after,
                    context: store.context,
                    reason: `adding ${added.map(key).join(', ')} takes ${relation} on ${object} away from ${user}`,
                    check: { user, relation, object, expected: true, actual: now },
                  };
                }
              }
            }
          }
          return undefined;
        },
      };
    }
    case 'bounded': {
      const r = relationOf(model, property.relation, 'bounded');
      let pattern: RegExp;
      try {
        pattern = typeof property.pattern === 'string' ? new RegExp(property.pattern, 'u') : property.pattern;
      } catch (err) {
        throw badProperty(`bounded: invalid pattern: ${(err as Error).message}`);
      }
      const objects = objectsOf(universe, r.type);
      if (!objects.some((o) => attribute(pattern, o) !== undefined) || !universe.users.some((u) => attribute(pattern, u) !== undefined)) {
        throw badProperty(`bounded: no generated user or object id matches ${String(pattern)}; give ids that do (the 'ids' option)`);
      }
      const crossing = new Set((property.crossing ?? []).map((c) => {
        const x = relationOf(model, c, 'bounded');
        return `${x.type}#${x.relation}`;
      }));
      const within = (slot: Slot): boolean => {
        if (crossing.has(`${slot.object.slice(0, slot.object.indexOf(':'))}#${slot.relation}`)) return true;
        const a = attribute(pattern, slot.object);
        const b = attribute(pattern, slot.user);
        return a === undefined || b === undefined || a === b;
      };
      return {
        arbitrary: storesOf(universe, options, within),
        async evaluate(input) {
          const store = input as GeneratedStore;
          const ask = asker(await engineFor(model, store.tuples, limits), store.context);
          for (const object of objects) {
            const own = attribute(pattern, object);
            if (own === undefined) continue;
            for (const user of universe.users) {
              const theirs = attribute(pattern, user);
              if (theirs === undefined || theirs === own) continue;
              const has = await ask(user, r.relation, object);
              if (has !== false) {
                return { model, tuples: store.tuples, context: store.context, ...failing(user, r.relation, object, false, has, `${user} (${theirs}) has ${r.relation} on ${object} (${own})`) };
              }
            }
          }
          return undefined;
        },
      };
    }
    case 'predicate': {
      if (typeof property.predicate !== 'function') throw badProperty('predicate: give a function');
      const predicate = property.predicate;
      return onStore(async (ask, store) => {
        const probe: ModelProbe = {
          tuples: store.tuples,
          context: store.context,
          users: universe.users,
          objects: (type) => objectsOf(universe, type),
          async check(user, relation, object) {
            const r = await ask(user, relation, object);
            if (typeof r === 'string') throw new Error(`check ${user} ${relation} ${object}: ${r}`);
            return r;
          },
        };
        let outcome: PredicateOutcome;
        try {
          outcome = await predicate(probe);
        } catch (err) {
          return { reason: `the predicate threw: ${err instanceof Error ? err.message : String(err)}` };
        }
        if (outcome === true || outcome === undefined) return undefined;
        if (outcome === false) return { reason: 'the predicate returned false' };
        if (typeof outcome === 'string') return { reason: outcome };
        if (outcome !== null && typeof outcome === 'object') {
          const actual = await ask(outcome.user, outcome.relation, outcome.object);
          return failing(outcome.user, outcome.relation, outcome.object, outcome.expected, actual, outcome.reason ?? `the predicate expects ${outcome.user} ${outcome.relation} ${outcome.object} to be ${outcome.expected}`);
        }
        return { reason: `the predicate returned ${String(outcome)}` };
      });
    }
    default:
      throw badProperty(`unknown property kind '${String((property as { kind?: unknown }).kind)}'`);
  }
}

/** `equivalent` of two models: every store valid for both, every relation compared, the case on the second model. */
function compileTwoModels(model: AuthorizationModel, other: AuthorizationModel, relations: readonly RelationName[] | undefined, options: PropertyRunOptions): Compiled<unknown> {
  const universe = buildUniverse(model, options);
  const otherUniverse = buildUniverse(other, options);
  const slotKey = (s: Slot): string => `${s.object}#${s.relation}@${s.user}|${s.condition?.name ?? ''}`;
  const admitted = new Set(otherUniverse.slots.map(slotKey));
  const shared = relations ?? allRelations(model).filter((r) => allRelations(other).includes(r));
  const compared = shared.map((r) => {
    relationOf(other, r, 'equivalent');
    return relationOf(model, r, 'equivalent');
  });
  if (compared.length === 0) throw badProperty('equivalent: the two models share no relation');
  const limits = options.engine ?? {};
  return {
    arbitrary: storesOf(universe, options, (s) => admitted.has(slotKey(s))),
    async evaluate(input) {
      const store = input as GeneratedStore;
      const a = asker(await engineFor(model, store.tuples, limits), store.context);
      const b = asker(await engineFor(other, store.tuples, limits), store.context);
      for (const { type, relation } of compared) {
        for (const object of objectsOf(universe, type)) {
          for (const user of universe.users) {
            const x = await a(user, relation, object);
            const y = await b(user, relation, object);
            if (x === y) continue;
            return {
              model: other,
              tuples: store.tuples,
              context: store.context,
              reason: `the first model answers ${String(x)} for ${user} ${relation} ${object}, the second ${String(y)}`,
              check: { user, relation, object, expected: typeof x === 'boolean' ? x : !y, actual: y },
            };
          }
        }
      }
      return undefined;
    },
  };
}

/** The tuple lists of a property's input: one store's, or a store's and the tuples added to it. */
function tupleLists(input: unknown): TupleKey[][] {
  return Array.isArray(input) ? (input as GeneratedStore[]).map((s) => s.tuples) : [(input as GeneratedStore).tuples];
}

function withLists(input: unknown, lists: TupleKey[][]): unknown {
  return Array.isArray(input) ? (input as GeneratedStore[]).map((s, i) => ({ ...s, tuples: lists[i]! })) : { ...(input as GeneratedStore), tuples: lists[0]! };
}

/**
 * Checks `property` of `model` on `numRuns` generated stores; on failure,
 * shrinks the store to the fewest tuples that still fail and returns it as
 * the counterexample. Never throws for a failing property;
 * `invalid_argument` (reason `invalid_property` or `invalid_option`) for a
 * property or options that do not fit the model.
 */
export async function checkModelProperty(model: AuthorizationModel, property: ModelProperty, options: PropertyRunOptions = {}): Promise<PropertyResult> {
  const compiled = compile(model, property, options);
  const numRuns = options.numRuns ?? 100;
  if (!Number.isInteger(numRuns) || numRuns < 1) throw new LatchkeyError('invalid_argument', 'numRuns must be a positive integer', { reason: 'invalid_option', details: { option: 'numRuns' } });
  const seed = options.seed ?? (Date.now() ^ Math.floor(Math.random() * 0x100000000)) | 0;
  const params: fc.Parameters<[unknown]> = { numRuns, seed };
  if (options.path !== undefined) params.path = options.path;
  const details = await fc.check(
    fc.asyncProperty(compiled.arbitrary, async (input) => (await compiled.evaluate(input)) === undefined),
    params,
  );
  if (!details.failed || details.counterexample === null) return { ok: !details.failed, numRuns: details.numRuns, seed: details.seed, numShrinks: details.numShrinks };
  const evaluate = (input: unknown): Promise<Counterexample | undefined> => compiled.evaluate(input);
  let input: unknown = details.counterexample[0];
  let found = await evaluate(input).catch((err: unknown): Counterexample => ({
    model,
    tuples: [],
    context: {},
    reason: `the property failed with an error: ${err instanceof Error ? err.message : String(err)}`,
  }));
  // fast-check shrinks by the generator's structure (a pair of tuples drawn together stays together);
  // dropping one tuple at a time until none can go makes the store 1-minimal: every tuple left is needed.
  let extraShrinks = 0;
  for (let progress = found !== undefined; progress; ) {
    progress = false;
    const lists = tupleLists(input);
    search: for (const [li, list] of lists.entries()) {
      for (let ti = 0; ti < list.length; ti++) {
        const candidate = withLists(input, lists.map((l, j) => (j === li ? l.filter((_, k) => k !== ti) : l)));
        const smaller = await evaluate(candidate).catch(() => undefined);
        if (smaller === undefined) continue;
        input = candidate;
        found = smaller;
        extraShrinks++;
        progress = true;
        break search;
      }
    }
  }
  const counterexample: Counterexample = found ?? {
    model,
    tuples: [],
    context: {},
    reason: `the property failed with an error: ${details.errorInstance instanceof Error ? details.errorInstance.message : String(details.errorInstance)}`,
  };
  return {
    ok: false,
    numRuns: details.numRuns,
    seed: details.seed,
    ...(details.counterexamplePath === null ? {} : { path: details.counterexamplePath }),
    numShrinks: details.numShrinks + extraShrinks,
    counterexample,
  };
}
