/**
 * What the graph index's walk (`GraphIndex.reach`, engine/graph_index.ts)
 * reads from the model, per model version: a plan per type and relation
 * number (its direct part, computed relations and tuple-to-usersets, or null
 * when the rewrite is not a plain union), and whether the type restrictions
 * admit a tuple, answered per user form (type, kind, userset relation)
 * without building strings.
 */
import type { Userset } from './model.ts';
import type { ParsedUser } from './tuple.ts';
import type { TypeSystem } from './typesystem.ts';
import { tupleReadable } from './validation.ts';

/** Kinds of an interned string used as a user. */
export const OBJECT = 0;
export const WILDCARD = 1;
export const USERSET = 2;

interface ModelState {
  plans: Map<string, Map<number, Plan | null>>;
  admitted: Map<string, Map<number, (boolean | undefined)[]>>;
}

export interface Plan {
  direct: boolean;
  /** The direct part admits userset users. */
  usersets: boolean;
  computed: number[];
  /** `computed from tupleset`, as relation numbers, and the computed relation's name. */
  ttu: { tupleset: number; computed: number; name: string }[];
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
  /** Per string number: its user form's number (see #shapeOf), computed on first use. */
  readonly #shape: number[] = [];
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
    p = this.#makePlan(ts, type, this.#relNames[relation]!);
    byRel.set(relation, p);
    return p;
  }

  #makePlan(ts: TypeSystem, type: string, relation: string): Plan | null {
    const rw = ts.rewrite(type, relation);
    if (rw === undefined) return null;
    const p: Plan = { direct: false, usersets: ts.restrictions(type, relation).some((r) => r.relation !== undefined), computed: [], ttu: [] };
    const stack: Userset[] = [rw];
    while (stack.length > 0) {
      const n = stack.pop()!;
      if ('this' in n) p.direct = true;
      else if ('computedUserset' in n) p.computed.push(this.#rel(n.computedUserset.relation ?? ''));
      else if ('tupleToUserset' in n) {
        const name = n.tupleToUserset.computedUserset.relation ?? '';
        p.ttu.push({ tupleset: this.#rel(n.tupleToUserset.tupleset.relation ?? ''), computed: this.#rel(name), name });
      } else if ('union' in n) stack.push(...n.union.child);
      else return null;
    }
    return p;
  }

  /** Whether the model admits tuple `type#relation@<user u>` with this condition (as the tuple reader filters). */
  admits(ts: TypeSystem, type: string, relation: number, u: number, condition: string | undefined): boolean {
    if (condition !== undefined) return this.#admitsSlow(ts, type, relation, u, condition);
    // Unconditioned tuples, the common case: by type, relation number and user shape, no key string built.
    const byType = this.#state(ts).admitted;
    let byRel = byType.get(type);
    if (byRel === undefined) byType.set(type, (byRel = new Map()));
    let byShape = byRel.get(relation);
    if (byShape === undefined) byRel.set(relation, (byShape = []));
    const shape = this.#shapeOf(u);
    let v = byShape[shape];
    if (v === undefined) v = byShape[shape] = this.#admitsSlow(ts, type, relation, u, undefined);
    return v;
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
    let s = this.#shape[u];
    if (s === undefined) {
      const k = `${this.#type[u]!}|${this.#kind[u]!}|${this.#usRelation[u]!}`;
      s = this.#shapes.get(k);
      if (s === undefined) this.#shapes.set(k, (s = this.#shapes.size));
      this.#shape[u] = s;
    }
    return s;
  }
}
