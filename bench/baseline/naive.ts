/**
 * Evaluator B of performance-anchors §2.3: the naive yardstick.
 *
 * The store is `Map<"type:id#relation", {direct users, usersets}>`, split when
 * loading, and each check keeps a visited set of `object#relation` so a
 * negative answer explores each node once. It knows only unions of direct
 * grants and tuple-to-userset (the reference model needs nothing else): no
 * conditions, wildcards, intersections or contextual tuples. It is kept here,
 * outside the engine, as the measure of "near the hardware's limit"; the
 * engine's cold checks must stay within 2× of it (target P1).
 */

interface Entry {
  direct: Set<string>;
  usersets: string[];
}

/** `type → relation → tupleset relation` for the `X from tupleset` rewrites. */
export type TtuTable = Record<string, Record<string, { tupleset: string; computed: string }>>;

/** The rewrites of the reference model. */
export const REFERENCE_TTU: TtuTable = {
  folder: { viewer: { tupleset: 'parent', computed: 'viewer' } },
  document: { viewer: { tupleset: 'parent', computed: 'viewer' } },
};

export class NaiveEvaluator {
  readonly #store = new Map<string, Entry>();
  readonly #ttu: TtuTable;

  constructor(ttu: TtuTable = REFERENCE_TTU) {
    this.#ttu = ttu;
  }

  add(object: string, relation: string, user: string): void {
    const key = `${object}#${relation}`;
    let e = this.#store.get(key);
    if (!e) {
      e = { direct: new Set(), usersets: [] };
      this.#store.set(key, e);
    }
    if (user.includes('#')) e.usersets.push(user);
    else e.direct.add(user);
  }

  get size(): number {
    return this.#store.size;
  }

  check(object: string, relation: string, user: string): boolean {
    return this.#check(object, relation, user, new Set());
  }

  #check(object: string, relation: string, user: string, visited: Set<string>): boolean {
    const key = `${object}#${relation}`;
    if (visited.has(key)) return false;
    visited.add(key);
    const e = this.#store.get(key);
    if (e) {
      if (e.direct.has(user)) return true;
      for (const us of e.usersets) {
        const i = us.indexOf('#');
        if (this.#check(us.slice(0, i), us.slice(i + 1), user, visited)) return true;
      }
    }
    const type = object.slice(0, object.indexOf(':'));
    const rw = this.#ttu[type]?.[relation];
    if (rw) {
      const parents = this.#store.get(`${object}#${rw.tupleset}`);
      if (parents) {
        for (const p of parents.direct) if (this.#check(p, rw.computed, user, visited)) return true;
      }
    }
    return false;
  }
}
