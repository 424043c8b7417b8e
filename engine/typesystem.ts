/**
 * The typesystem: a validated, indexed view of one authorization model
 * version. Built once per model version (models are immutable) and shared by
 * every request that uses that version.
 *
 * Validation (OpenFGA's server rules) is in engine/model_validation.ts, which
 * builds the index the lookups here answer from.
 */
import { type CompiledCondition, DEFAULT_CONDITION_COST_LIMIT } from './conditions/compiled_condition.ts';
import type { AuthorizationModel, RelationReference, Userset } from './model.ts';
import { rewriteChildren } from './rewrites.ts';
import { validateModel } from './model_validation.ts';

/** What `restrictions` answers for a relation without any (one shared list: callers only read it). */
const NO_RESTRICTIONS: readonly RelationReference[] = Object.freeze([]);

/** A validated model version. */
export class TypeSystem {
  /** The model version id (empty for a model that was never stored). */
  readonly id: string;
  readonly model: AuthorizationModel;
  readonly #relations: Map<string, Map<string, Userset>>;
  /** The directly related user types by type, then relation (no key string built per call: every tuple written asks). */
  readonly #restrictions = new Map<string, Map<string, RelationReference[]>>();
  readonly #conditions: Map<string, CompiledCondition>;
  /** The relations used as a tupleset, by type. */
  readonly #tuplesetRelations = new Map<string, Set<string>>();
  /** isMonotone answers by type, then relation (no key string built per call: Check asks on every request). */
  readonly #monotone = new Map<string, Map<string, boolean>>();
  #unsafeCycles: boolean | undefined;

  /**
   * Validates `model` and indexes it. Throws `invalid_argument` (reason
   * `invalid_authorization_model`) naming the first problem found; for a
   * condition that calls a function, macro or namespace outside OpenFGA's CEL
   * environment (`substring`, `math.greatest`, `cel.bind`, …) the message is
   * cel-go's "undeclared reference to '…'" and `details` has `condition` and
   * `reference`. `conditionCostLimit` is the cel-go runtime cost above which a
   * condition's evaluation is `condition_cost_exceeded` (OpenFGA's
   * `maxConditionEvaluationCost`, default 100). `stored: true` is for a
   * version read back from a store, which was validated when written: its
   * conditions may use every function of the CEL library, so versions
   * written before the others were refused keep loading and answering.
   */
  constructor(model: AuthorizationModel, id = '', options: { conditionCostLimit?: number; stored?: boolean } = {}) {
    this.id = id;
    this.model = model;
    const index = validateModel(model, options.conditionCostLimit ?? DEFAULT_CONDITION_COST_LIMIT, options.stored === true);
    this.#relations = index.relations;
    this.#conditions = index.conditions;
    for (const [type, byRelation] of index.relations) {
      const refs = new Map<string, RelationReference[]>();
      for (const relation of byRelation.keys()) {
        const r = index.restrictions.get(`${type}#${relation}`);
        if (r !== undefined) refs.set(relation, r);
      }
      this.#restrictions.set(type, refs);
    }
    for (const key of index.tuplesetRelations) {
      const at = key.indexOf('#');
      const type = key.slice(0, at);
      let relations = this.#tuplesetRelations.get(type);
      if (relations === undefined) this.#tuplesetRelations.set(type, (relations = new Set()));
      relations.add(key.slice(at + 1));
    }
  }

  /** True when the model defines `type`. */
  hasType(type: string): boolean {
    return this.#relations.has(type);
  }

  /** The types the model defines. */
  types(): string[] {
    return [...this.#relations.keys()];
  }

  /** The relations of `type` (empty when the type is unknown). */
  relationsOf(type: string): Map<string, Userset> {
    return this.#relations.get(type) ?? new Map();
  }

  /** The rewrite of `type#relation`, or `undefined`. */
  rewrite(type: string, relation: string): Userset | undefined {
    return this.#relations.get(type)?.get(relation);
  }

  /** The directly related user types of `type#relation` (empty when none). */
  restrictions(type: string, relation: string): readonly RelationReference[] {
    return this.#restrictions.get(type)?.get(relation) ?? NO_RESTRICTIONS;
  }

  /** The compiled condition `name`, or `undefined`. */
  condition(name: string): CompiledCondition | undefined {
    return this.#conditions.get(name);
  }

  /** True when `type#relation` is used as a tupleset (the `b` in `a from b`) somewhere. */
  isTupleset(type: string, relation: string): boolean {
    return this.#tuplesetRelations.get(type)?.has(relation) === true;
  }

  /**
   * True when no relation reachable from `type#relation` (through computed
   * usersets, tuple-to-usersets and userset restrictions) uses intersection
   * or exclusion. For such relations cycles cannot change an answer, so Check
   * may resolve them as plain reachability (each sub-problem once).
   */
  isMonotone(type: string, relation: string): boolean {
    let byRelation = this.#monotone.get(type);
    let m = byRelation?.get(relation);
    if (m !== undefined) return m;
    const key = `${type}#${relation}`;
    m = true;
    const seen = new Set([key]);
    const queue: [string, string][] = [[type, relation]];
    while (queue.length > 0 && m) {
      const [t, r] = queue.pop()!;
      const rw = this.rewrite(t, r);
      if (rw === undefined) continue;
      const visit = (nt: string, nr: string): void => {
        const k = `${nt}#${nr}`;
        if (!seen.has(k) && this.rewrite(nt, nr) !== undefined) {
          seen.add(k);
          queue.push([nt, nr]);
        }
      };
      const stack: Userset[] = [rw];
      while (stack.length > 0) {
        const n = stack.pop()!;
        if ('intersection' in n || 'difference' in n) {
          m = false;
          break;
        }
        if ('this' in n) {
          for (const ref of this.restrictions(t, r)) if (ref.relation !== undefined) visit(ref.type, ref.relation);
        } else if ('computedUserset' in n) {
          visit(t, n.computedUserset.relation ?? '');
        } else if ('tupleToUserset' in n) {
          const target = n.tupleToUserset.computedUserset.relation ?? '';
          for (const ref of this.restrictions(t, n.tupleToUserset.tupleset.relation ?? '')) visit(ref.type, target);
        } else {
          stack.push(...rewriteChildren(n));
        }
      }
    }
    if (byRelation === undefined) this.#monotone.set(type, (byRelation = new Map()));
    byRelation.set(relation, m);
    return m;
  }

  /**
   * True when some relation can reach itself through tuples (computed
   * usersets, tuple-to-usersets, userset restrictions) along an edge that
   * sits under an intersection or an exclusion. OpenFGA answers such cycles
   * per resolution path (a cycle reached on the subtracted side makes `but
   * not` false), and its weighted graph flags them ("operands AND or BUT NOT
   * cannot be involved in a cycle"). For these models answers are not reused
   * across paths: no memo, no cache.
   */
  get hasCyclesThroughAndOrButNot(): boolean {
    if (this.#unsafeCycles !== undefined) return this.#unsafeCycles;
    const edges = new Map<string, { to: string; sensitive: boolean }[]>();
    for (const type of this.types()) {
      for (const [relation, rw] of this.relationsOf(type)) {
        const out: { to: string; sensitive: boolean }[] = [];
        const stack: { n: Userset; sensitive: boolean }[] = [{ n: rw, sensitive: false }];
        while (stack.length > 0) {
          const { n, sensitive } = stack.pop()!;
          if ('this' in n) {
            for (const ref of this.restrictions(type, relation)) if (ref.relation !== undefined) out.push({ to: `${ref.type}#${ref.relation}`, sensitive });
          } else if ('computedUserset' in n) {
            out.push({ to: `${type}#${n.computedUserset.relation ?? ''}`, sensitive });
          } else if ('tupleToUserset' in n) {
            const target = n.tupleToUserset.computedUserset.relation ?? '';
            for (const ref of this.restrictions(type, n.tupleToUserset.tupleset.relation ?? '')) out.push({ to: `${ref.type}#${target}`, sensitive });
          } else {
            const op = 'intersection' in n || 'difference' in n;
            for (const c of rewriteChildren(n)) stack.push({ n: c, sensitive: sensitive || op });
          }
        }
        edges.set(`${type}#${relation}`, out);
      }
    }
    const reaches = (from: string, to: string): boolean => {
      const seen = new Set([from]);
      const queue = [from];
      while (queue.length > 0) {
        const k = queue.pop()!;
        if (k === to) return true;
        for (const e of edges.get(k) ?? []) {
          if (!seen.has(e.to)) {
            seen.add(e.to);
            queue.push(e.to);
          }
        }
      }
      return false;
    };
    let unsafe = false;
    for (const [from, out] of edges) {
      for (const e of out) {
        if (e.sensitive && reaches(e.to, from)) {
          unsafe = true;
          break;
        }
      }
      if (unsafe) break;
    }
    this.#unsafeCycles = unsafe;
    return unsafe;
  }

  /** True when `type#relation` admits `userType:*`. */
  allowsWildcard(type: string, relation: string, userType: string): boolean {
    return this.restrictions(type, relation).some((r) => r.type === userType && r.wildcard !== undefined);
  }
}
