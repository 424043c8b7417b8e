/**
 * A naive evaluator of a model over a tuple set: the rewrite rules read
 * straight from the model (direct users, wildcards, usersets, computed
 * usersets, tuple-to-usersets, union, intersection, exclusion) by recursion
 * over maps of the tuples, with none of the engine's machinery (no
 * dispatch, batching, cache, graph index or level-at-a-time reads). It is
 * the yardstick `latchkey fga bench` verifies a sample of the engine's
 * answers against before timing anything.
 *
 * A cycle is cut as false on the path that meets it: for unions,
 * intersections and tuple-to-usersets that is the least fixpoint (a fact
 * that holds has a derivation in which no `object#relation` repeats on a
 * path). It does not decide everything: an answer that meets a conditional
 * tuple (it evaluates no CEL), a cycle cut inside the subtracted side of a
 * `but not` (where the cut is no longer safe), a path of more than 100
 * `object#relation` steps or more than 100,000 steps in all is
 * `undefined`, and such queries are left out of a comparison rather than
 * guessed.
 */
import type { AuthorizationModel, Userset } from '../model.ts';
import type { TupleKey } from '../store.ts';

const TOO_MANY_STEPS = Symbol('too many steps');

/** The tuples of a store, indexed for the naive evaluator. */
export class NaiveEvaluator {
  readonly #rewrites = new Map<string, Userset>();
  /** `object#relation` → its tuples' users (with whether the tuple is conditional). */
  readonly #users = new Map<string, { user: string; conditional: boolean }[]>();

  constructor(model: AuthorizationModel, tuples: readonly TupleKey[]) {
    for (const td of model.type_definitions ?? []) {
      for (const [relation, rewrite] of Object.entries(td.relations ?? {})) this.#rewrites.set(`${td.type}#${relation}`, rewrite);
    }
    for (const t of tuples) {
      const k = `${t.object}#${t.relation}`;
      const list = this.#users.get(k) ?? [];
      list.push({ user: t.user, conditional: t.condition !== undefined });
      this.#users.set(k, list);
    }
  }

  #cuts = 0;
  #steps = 0;

  /** Does `user` (`type:id`) hold `relation` on `object`? `undefined` when it cannot say (see the module's doc). */
  check(user: string, relation: string, object: string): boolean | undefined {
    this.#steps = 0;
    try {
      return this.#check(user, relation, object, new Set());
    } catch (err) {
      if (err === TOO_MANY_STEPS) return undefined;
      throw err;
    }
  }

  #check(user: string, relation: string, object: string, active: Set<string>): boolean | undefined {
    if (++this.#steps > 100_000 || active.size > 100) throw TOO_MANY_STEPS;
    const key = `${object}#${relation}`;
    if (active.has(key)) {
      this.#cuts++;
      return false;
    }
    const rewrite = this.#rewrites.get(`${object.slice(0, object.indexOf(':'))}#${relation}`);
    if (rewrite === undefined) return false;
    active.add(key);
    try {
      return this.#rewrite(rewrite, user, relation, object, active);
    } finally {
      active.delete(key);
    }
  }

  #rewrite(u: Userset, user: string, relation: string, object: string, active: Set<string>): boolean | undefined {
    if ('this' in u) {
      let unknown = false;
      const userType = user.slice(0, user.indexOf(':'));
      for (const t of this.#users.get(`${object}#${relation}`) ?? []) {
        let hit: boolean | undefined;
        const hash = t.user.indexOf('#');
        if (hash < 0) hit = t.user === user || t.user === `${userType}:*`;
        else hit = this.#check(user, t.user.slice(hash + 1), t.user.slice(0, hash), active);
        if (hit === true && !t.conditional) return true;
        if (hit !== false) unknown = true;
      }
      return unknown ? undefined : false;
    }
    if ('computedUserset' in u) return this.#check(user, u.computedUserset.relation ?? '', object, active);
    if ('tupleToUserset' in u) {
      let unknown = false;
      for (const t of this.#users.get(`${object}#${u.tupleToUserset.tupleset.relation ?? ''}`) ?? []) {
        if (t.user.includes('#')) continue;
        const hit = this.#check(user, u.tupleToUserset.computedUserset.relation ?? '', t.user, active);
        if (hit === true && !t.conditional) return true;
        if (hit !== false) unknown = true;
      }
      return unknown ? undefined : false;
    }
    if ('union' in u) {
      let unknown = false;
      for (const c of u.union.child) {
        const r = this.#rewrite(c, user, relation, object, active);
        if (r === true) return true;
        if (r === undefined) unknown = true;
      }
      return unknown ? undefined : false;
    }
    if ('intersection' in u) {
      let unknown = false;
      for (const c of u.intersection.child) {
        const r = this.#rewrite(c, user, relation, object, active);
        if (r === false) return false;
        if (r === undefined) unknown = true;
      }
      return unknown ? undefined : true;
    }
    const base = this.#rewrite(u.difference.base, user, relation, object, active);
    if (base === false) return false;
    const cuts = this.#cuts;
    const subtract = this.#rewrite(u.difference.subtract, user, relation, object, active);
    if (this.#cuts !== cuts) return undefined;
    if (subtract === true) return false;
    if (base === undefined || subtract === undefined) return undefined;
    return true;
  }
}
