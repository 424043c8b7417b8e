/**
 * What the graph index's walk (`GraphIndex.reach`, engine/graph/graph_index.ts)
 * reads from the model, per model version: a plan per type and relation
 * number (its direct part, computed relations and tuple-to-usersets, or null
 * when the rewrite is not a plain union), and whether the type restrictions
 * admit a tuple, answered per user form (type, kind, userset relation)
 * without building strings.
 */
import type { Userset } from '../model.ts';
import type { ParsedUser } from '../tuple.ts';
import type { TypeSystem } from '../typesystem.ts';
import { tupleReadable } from '../validation.ts';

/** Kinds of an interned string used as a user. */
export const OBJECT = 0;
export const WILDCARD = 1;
export const USERSET = 2;

/** Whether the type restrictions of one `type#relation` admit an unconditioned tuple, by user form (filled on use). */
export type Admitted = (boolean | undefined)[];

interface ModelState {
  plans: Map<string, Map<number, Plan | null>>;
  admitted: Map<string, Map<number, Admitted>>;
}

export interface Plan {
  direct: boolean;
  /** The direct part admits userset users. */
  usersets: boolean;
  /** What the direct part admits (see {@link ReachPlans.admitsIn}). */
  admitted: Admitted;
  computed: number[];
  /** `computed from tupleset`, as relation numbers, the computed relation's name, and what the tupleset admits. */
  ttu: { tupleset: number; computed: number; name: string; admitted: Admitted }[];
}

export class ReachPlans {
  readonly #relNames: readonly string[];
  readonly #kind: readonly number[];
  readonly #type: readonly string[];
  readonly #usRelation: readonly number[];
  readonly #rel: (name: string) => number;
  /** Per model version: plans by type and relation number, and type-restriction answers by type, relation number and user form. */
  readonly #perModel = new WeakMap<TypeSystem, ModelState>();
  #lastTs: TypeSystem | undefined;
  #lastState: ModelState | undefined;
  /** Per string number: 1 + its user form's number (see #shapeOf), 0 until first used; grown on use. */
  #shape = new Int32Array(1024);
  readonly #shapes = new Map<string, number>();

  /** The index's own arrays (read as they grow) and its relation numbering. */
  constructor(relNames: readonly string[], kind: readonly number[], type: readonly string[], usRelation: readonly number[], rel: (name: string) => number) {
    this.#relNames = relNames;
    this.#kind = kind;
    this.#type = type;
    this.#usRelation = usRelation;
    this.#rel = rel;
  }

  #state(ts: TypeSystem): ModelState {
    if (ts === this.#lastTs) return this.#lastState!;
    let st = this.#perModel.get(ts);
    if (st === undefined) this.#perModel.set(ts, (st = { plans: new Map(), admitted: new Map() }));
    this.#lastTs = ts;
    this.#lastState = st;
    return st;
  }

  plan(ts: TypeSystem, type: string, relation: number): Plan | null {
    const byType = this.#state(ts).plans;
    let byRel = byType.get(type);
    if (byRel === undefined) byType.set(type, (byRel = new Map()));
    let p = byRel.get(relation);
    if (p !== undefined) return p;
    p = this.#makePlan(ts, type, relation);
    byRel.set(relation, p);
    return p;
  }

  #makePlan(ts: TypeSystem, type: string, relNumber: number): Plan | null {
    const relation = this.#relNames[relNumber]!;
    const rw = ts.rewrite(type, relation);
    if (rw === undefined) return null;
    const usersets = ts.restrictions(type, relation).some((r) => r.relation !== undefined);
    const p: Plan = { direct: false, usersets, admitted: this.#admittedFor(ts, type, relNumber), computed: [], ttu: [] };
    const stack: Userset[] = [rw];
    while (stack.length > 0) {
      const n = stack.pop()!;
      if ('this' in n) p.direct = true;
      else if ('computedUserset' in n) p.computed.push(this.#rel(n.computedUserset.relation ?? ''));
      else if ('tupleToUserset' in n) {
        const name = n.tupleToUserset.computedUserset.relation ?? '';
        const tupleset = this.#rel(n.tupleToUserset.tupleset.relation ?? '');
        p.ttu.push({ tupleset, computed: this.#rel(name), name, admitted: this.#admittedFor(ts, type, tupleset) });
      } else if ('union' in n) stack.push(...n.union.child);
      else return null;
    }
    return p;
  }

  /**
   * Whether the model admits tuple `type#relation@<user u>` with this
   * condition (as the tuple reader filters); `admitted` holds the answers of
   * `type#relation` for unconditioned tuples (from a plan).
   */
  admitsIn(admitted: Admitted, ts: TypeSystem, type: string, relation: number, u: number, condition: string | undefined): boolean {
    // Unconditioned tuples, the common case: by user form, no key string built.
    if (condition !== undefined) return this.#admitsSlow(ts, type, relation, u, condition);
    const shape = this.#shapeOf(u);
    return admitted[shape] ?? (admitted[shape] = this.#admitsSlow(ts, type, relation, u, undefined));
  }

  /** The answers for unconditioned tuples on `type#relation` under `ts`. */
  #admittedFor(ts: TypeSystem, type: string, relation: number): Admitted {
    const byType = this.#state(ts).admitted;
    let byRel = byType.get(type);
    if (byRel === undefined) byType.set(type, (byRel = new Map()));
    let byShape = byRel.get(relation);
    if (byShape === undefined) byRel.set(relation, (byShape = []));
    return byShape;
  }

  #admitsSlow(ts: TypeSystem, type: string, relation: number, u: number, condition: string | undefined): boolean {
    const kind = this.#kind[u]!;
    const utype = this.#type[u]!;
    const usRel = kind === USERSET ? this.#relNames[this.#usRelation[u]!]! : '';
    const user: ParsedUser = kind === OBJECT ? { kind: 'object', type: utype, id: 'x' } : kind === WILDCARD ? { kind: 'wildcard', type: utype } : { kind: 'userset', type: utype, id: 'x', relation: usRel };
    return tupleReadable(ts, type, this.#relNames[relation]!, user, condition);
  }

  /** A small number per user form (type, kind, userset relation): what type restrictions look at. */
  #shapeOf(u: number): number {
    if (u < this.#shape.length) {
      const s = this.#shape[u]!;
      if (s !== 0) return s - 1;
    } else {
      const grown = new Int32Array(Math.max(u + 1, this.#shape.length * 2));
      grown.set(this.#shape);
      this.#shape = grown;
    }
    const k = `${this.#type[u]!}|${this.#kind[u]!}|${this.#usRelation[u]!}`;
    let s = this.#shapes.get(k);
    if (s === undefined) this.#shapes.set(k, (s = this.#shapes.size));
    this.#shape[u] = s + 1;
    return s;
  }
}
