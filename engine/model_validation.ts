/**
 * The validation of an authorization model version, and the index of a
 * valid one that its `TypeSystem` (engine/typesystem.ts) answers from.
 *
 * Validation follows OpenFGA's server rules (`pkg/typesystem/typesystem.go`,
 * `NewAndValidate`), its entry-point walk and cycle rule included; see
 * docs/engine.md. Every failure is `invalid_argument` with reason
 * `invalid_authorization_model` and OpenFGA's code 2056 in `details`; a
 * refusal of one relation also has `details.type`, `details.relation` and
 * `details.cause`. Pinned by test/dsl/validation.property.test.ts, which
 * compares it with a transcription of the server's rules.
 */
import { CONDITION_LIMITS, CompiledCondition } from './conditions/compiled_condition.ts';
import { UndeclaredReference } from './conditions/cel_allowlist.ts';
import type { LatchkeyError } from './errors.ts';
import type { AuthorizationModel, RelationReference, Userset } from './model.ts';
import { fgaError, isRelationName, show, isTypeName } from './tuple.ts';
import { rewriteChildren, rewriteKind } from './rewrites.ts';

/** Limits on models, from OpenFGA's defaults. */
export const MODEL_LIMITS = {
  maxTypes: 100,
  maxSizeBytes: 256 * 1024,
  /** Nesting of rewrite operators inside one relation. Not an OpenFGA limit: it bounds recursion over rewrites. */
  maxRewriteDepth: 64,
  /**
   * Steps of OpenFGA's entry-point walk over one model. Not an OpenFGA limit:
   * the walk follows every path with a visited set, which is exponential in
   * the worst case (types whose relations all name each other and none has a
   * way in: thirty such types reach the bound in about 2 s). The largest
   * model of OpenFGA's conformance data takes about 400 steps, a 600-line
   * model 1,700.
   */
  maxEntrypointSteps: 100_000,
} as const;

function modelError(message: string, extra: Record<string, unknown> = {}): LatchkeyError {
  return fgaError(message, { reason: 'invalid_authorization_model', code: 2056, details: extra });
}

/**
 * A refusal of one relation, with OpenFGA's cause (`InvalidRelationError`)
 * in `details.cause`: `invalid_userset_rewrite` (a relation naming itself),
 * `no_entrypoints`, `no_entrypoints_loop`, `cycle`. The message is OpenFGA's.
 * `details.type` and `details.relation` let the DSL tools place it on the
 * relation's name.
 */
function relationError(type: string, relation: string, cause: string, what: string): LatchkeyError {
  return modelError(`the definition of relation '${relation}' in object type '${type}' is invalid: ${what}`, { type, relation, cause });
}

/** Go's `sort.Strings` order (bytes of UTF-8, which is code-point order). */
function byCodePoint(a: string, b: string): number {
  const x = [...a].map((c) => c.codePointAt(0)!);
  const y = [...b].map((c) => c.codePointAt(0)!);
  for (let i = 0; i < Math.min(x.length, y.length); i++) if (x[i] !== y[i]) return x[i]! - y[i]!;
  return x.length - y.length;
}

/**
 * For one type's relations, those from which a cycle of computed usersets
 * (followed under union, intersection and exclusion; `this` and
 * tuple-to-usersets end a path) can be reached: the relations on a cycle
 * (strongly connected components with more than one relation, or a relation
 * naming itself) and every relation with a path to one.
 */
function computedCycleReach(rels: Map<string, Userset>): Set<string> {
  const edges = new Map<string, string[]>();
  for (const [name, rw] of rels) {
    const out: string[] = [];
    const stack = [rw];
    while (stack.length > 0) {
      const n = stack.pop()!;
      if ('computedUserset' in n) {
        if (typeof n.computedUserset.relation === 'string' && rels.has(n.computedUserset.relation)) out.push(n.computedUserset.relation);
      } else stack.push(...rewriteChildren(n));
    }
    edges.set(name, out);
  }
  // Tarjan's strongly connected components, iteratively.
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const onStack = new Set<string>();
  const sccStack: string[] = [];
  const onCycle = new Set<string>();
  let counter = 0;
  for (const root of rels.keys()) {
    if (index.has(root)) continue;
    const work: { node: string; next: number }[] = [{ node: root, next: 0 }];
    index.set(root, counter);
    low.set(root, counter++);
    sccStack.push(root);
    onStack.add(root);
    while (work.length > 0) {
      const top = work.at(-1)!;
      const outs = edges.get(top.node)!;
      if (top.next < outs.length) {
        const n = outs[top.next++]!;
        if (!index.has(n)) {
          index.set(n, counter);
          low.set(n, counter++);
          sccStack.push(n);
          onStack.add(n);
          work.push({ node: n, next: 0 });
        } else if (onStack.has(n)) low.set(top.node, Math.min(low.get(top.node)!, index.get(n)!));
        continue;
      }
      work.pop();
      const parent = work.at(-1);
      if (parent !== undefined) low.set(parent.node, Math.min(low.get(parent.node)!, low.get(top.node)!));
      if (low.get(top.node) === index.get(top.node)) {
        const component: string[] = [];
        let n: string;
        do {
          n = sccStack.pop()!;
          onStack.delete(n);
          component.push(n);
        } while (n !== top.node);
        if (component.length > 1 || edges.get(top.node)!.includes(top.node)) for (const c of component) onCycle.add(c);
      }
    }
  }
  // Every relation with a path to a relation on a cycle.
  const reach = new Set(onCycle);
  let changed = true;
  while (changed) {
    changed = false;
    for (const [name, outs] of edges) {
      if (!reach.has(name) && outs.some((o) => reach.has(o))) {
        reach.add(name);
        changed = true;
      }
    }
  }
  return reach;
}

/**
 * The shape of one rewrite (well-formed nodes, operators with their operands,
 * nesting at most {@link MODEL_LIMITS.maxRewriteDepth}), checked for every
 * relation before the entry-point walk, which follows rewrites of relations
 * not yet validated.
 */
function checkShape(where: string, rw: Userset): void {
  const stack: { node: Userset; depth: number }[] = [{ node: rw, depth: 1 }];
  while (stack.length > 0) {
    const { node, depth } = stack.pop()!;
    if (depth > MODEL_LIMITS.maxRewriteDepth) throw modelError(`the rewrite of '${where}' is nested too deeply`);
    const kind = rewriteKind(node);
    if (kind === 'union' || kind === 'intersection') {
      const child = (node as { union?: { child?: Userset[] }; intersection?: { child?: Userset[] } })[kind]?.child;
      if (!Array.isArray(child) || child.length < 2) throw modelError(`${kind} in '${where}' needs at least two operands`);
      for (const c of child) stack.push({ node: c, depth: depth + 1 });
    } else if (kind === 'difference') {
      const d = (node as { difference?: { base?: Userset; subtract?: Userset } }).difference;
      if (d?.base === undefined || d.subtract === undefined) throw modelError(`invalid difference in '${where}'`);
      stack.push({ node: d.base, depth: depth + 1 }, { node: d.subtract, depth: depth + 1 });
    } else if (kind === undefined) throw modelError(`invalid rewrite in '${where}'`);
  }
}

/** The index of a valid model version: what a `TypeSystem` answers from. */
export interface ModelIndex {
  /** Rewrites by type, then relation. */
  relations: Map<string, Map<string, Userset>>;
  /** Directly related user types by `type#relation`. */
  restrictions: Map<string, RelationReference[]>;
  /** Compiled conditions by name. */
  conditions: Map<string, CompiledCondition>;
  /** `type#relation` of every relation used as a tupleset. */
  tuplesetRelations: Set<string>;
}

/**
 * Validates `model` and indexes it; the errors are those of the
 * `TypeSystem` constructor, which documents `conditionCostLimit` and
 * `stored`.
 */
export function validateModel(model: AuthorizationModel, conditionCostLimit: number, stored: boolean): ModelIndex {
  return new ModelValidator(model, conditionCostLimit, stored).index();
}

/** One validation of one model: the index it builds, and what the rules remember on the way. */
class ModelValidator {
  readonly model: AuthorizationModel;
  readonly #relations = new Map<string, Map<string, Userset>>();
  readonly #restrictions = new Map<string, RelationReference[]>();
  readonly #conditions = new Map<string, CompiledCondition>();
  readonly #tuplesetRelations = new Set<string>();
  /** Per type, the relations from which a cycle of computed usersets can be reached (OpenFGA's ErrCycle). */
  readonly #cycleReach = new Map<string, Set<string>>();
  readonly #conditionCostLimit: number;
  readonly #stored: boolean;

  constructor(model: AuthorizationModel, conditionCostLimit: number, stored: boolean) {
    this.model = model;
    this.#conditionCostLimit = conditionCostLimit;
    this.#stored = stored;
  }

  /** Validates the model (in OpenFGA's order) and returns its index. */
  index(): ModelIndex {
    this.#validateAndIndex();
    return { relations: this.#relations, restrictions: this.#restrictions, conditions: this.#conditions, tuplesetRelations: this.#tuplesetRelations };
  }

  /** The rewrite of `type#relation`, or `undefined`. */
  rewrite(type: string, relation: string): Userset | undefined {
    return this.#relations.get(type)?.get(relation);
  }

  /** The directly related user types of `type#relation` (empty when none). */
  restrictions(type: string, relation: string): RelationReference[] {
    return this.#restrictions.get(`${type}#${relation}`) ?? [];
  }

  #validateAndIndex(): void {
    const model = this.model;
    if (model === null || typeof model !== 'object') throw modelError('the model must be an object');
    let size: number;
    try {
      size = Buffer.byteLength(JSON.stringify(model), 'utf8');
    } catch {
      throw modelError('the model is not JSON-serialisable');
    }
    if (size > MODEL_LIMITS.maxSizeBytes) throw modelError(`the model is larger than ${MODEL_LIMITS.maxSizeBytes} bytes`);
    if (model.schema_version !== '1.1' && model.schema_version !== '1.2') {
      throw modelError(`invalid schema version '${show(model.schema_version)}': only 1.1 and 1.2 are supported`);
    }
    const typeDefs = model.type_definitions ?? [];
    if (!Array.isArray(typeDefs)) throw modelError('type_definitions must be a list');
    if (typeDefs.length > MODEL_LIMITS.maxTypes) throw modelError(`the model has more than ${MODEL_LIMITS.maxTypes} types`);

    // Conditions first: restrictions refer to them.
    const conditions = model.conditions ?? {};
    if (conditions === null || typeof conditions !== 'object') throw modelError('conditions must be a map');
    if (Object.keys(conditions).length > CONDITION_LIMITS.maxConditions) {
      throw modelError(`the model has more than ${CONDITION_LIMITS.maxConditions} conditions`);
    }
    for (const [key, cond] of Object.entries(conditions)) {
      if (cond === null || typeof cond !== 'object' || cond.name !== key) {
        throw modelError(`condition key '${key}' does not match its name`);
      }
      try {
        this.#conditions.set(key, new CompiledCondition(cond, this.#conditionCostLimit, { stored: this.#stored }));
      } catch (err) {
        throw modelError((err as Error).message, { condition: key, ...(err instanceof UndeclaredReference ? { reference: err.reference } : {}) });
      }
    }

    for (const td of typeDefs) {
      if (td === null || typeof td !== 'object' || typeof td.type !== 'string') throw modelError('a type definition has no type');
      if (!isTypeName(td.type) || td.type === 'self' || td.type === 'this') throw modelError(`invalid type name '${td.type}'`);
      if (this.#relations.has(td.type)) throw modelError(`duplicate type '${td.type}'`);
      const rels = new Map<string, Userset>();
      for (const [name, rw] of Object.entries(td.relations ?? {})) {
        if (!isRelationName(name) || name === 'self' || name === 'this') {
          throw modelError(`invalid relation name '${name}' on type '${td.type}'`);
        }
        rels.set(name, rw);
      }
      this.#relations.set(td.type, rels);
      const meta = td.metadata?.relations ?? {};
      for (const name of rels.keys()) {
        const refs = meta?.[name]?.directly_related_user_types ?? [];
        if (!Array.isArray(refs)) throw modelError(`invalid type restrictions on '${td.type}#${name}'`);
        this.#restrictions.set(`${td.type}#${name}`, refs);
      }
    }

    // OpenFGA's order (`NewAndValidate`, `validateRelation`): types, then
    // relations, each in sorted order; per relation its rewrite and
    // restrictions, then its entry points, then computed-userset cycles. The
    // first relation that fails names the error, so a model with several
    // problems is refused for the same one OpenFGA names.
    for (const [type, rels] of this.#relations) for (const [name, rw] of rels) checkShape(`${type}#${name}`, rw);
    const budget = { calls: 0 };
    let stored: Set<string> | undefined;
    for (const type of [...this.#relations.keys()].sort(byCodePoint)) {
      const rels = this.#relations.get(type)!;
      for (const name of [...rels.keys()].sort(byCodePoint)) {
        const rw = rels.get(name)!;
        this.#validateRelation(type, name, rw);
        let entry: boolean;
        let loop: boolean;
        try {
          [entry, loop] = this.#hasEntrypoints(type, name, rw, new Map(), budget);
        } catch (err) {
          if (!(err instanceof RangeError)) throw err;
          throw modelError(`the model is too complex to validate: the entry-point check of '${type}#${name}' nests too deeply`, { type, relation: name, cause: 'too_complex' });
        }
        // A version read back from a store was accepted by the least-fixpoint
        // entry-point rule of earlier releases; it keeps loading when that
        // rule finds an entry the walk prunes away (availability).
        if (!entry && this.#stored) entry = (stored ??= this.#entryFixpoint()).has(`${type}#${name}`);
        if (!entry) throw relationError(type, name, loop ? 'no_entrypoints_loop' : 'no_entrypoints', loop ? 'potential loop' : 'no entrypoints defined');
        if (this.#reachesComputedCycle(type, name)) throw relationError(type, name, 'cycle', 'an authorization model cannot contain a cycle');
      }
    }
  }

  #validateRelation(type: string, relation: string, rw: Userset): void {
    const where = `${type}#${relation}`;
    let assignable = false;
    // Iterative walk: rewrites are bounded in depth so later recursive evaluation stays shallow.
    const stack: { node: Userset; depth: number }[] = [{ node: rw, depth: 1 }];
    while (stack.length > 0) {
      const { node, depth } = stack.pop()!;
      if (depth > MODEL_LIMITS.maxRewriteDepth) throw modelError(`the rewrite of '${where}' is nested too deeply`);
      const kind = rewriteKind(node);
      switch (kind) {
        case undefined:
          throw modelError(`invalid rewrite in '${where}'`);
        case 'this':
          assignable = true;
          break;
        case 'computed': {
          const target = (node as { computedUserset: { relation?: string } }).computedUserset?.relation;
          if (typeof target !== 'string' || !this.#relations.get(type)!.has(target)) {
            throw modelError(`relation '${show(target)}' referenced in '${where}' is not defined on type '${type}'`);
          }
          // OpenFGA's `isUsersetRewriteValid` refuses the relation's own name anywhere in its rewrite (`define a: [user] or a` too).
          if (target === relation) throw relationError(type, relation, 'invalid_userset_rewrite', 'invalid userset rewrite definition');
          break;
        }
        case 'ttu': {
          const ttu = (node as { tupleToUserset: { tupleset?: { relation?: string }; computedUserset?: { relation?: string } } }).tupleToUserset;
          const ts = ttu?.tupleset?.relation;
          const target = ttu?.computedUserset?.relation;
          if (typeof ts !== 'string' || typeof target !== 'string') throw modelError(`invalid tuple-to-userset in '${where}'`);
          const tsRewrite = this.#relations.get(type)!.get(ts);
          if (tsRewrite === undefined) throw modelError(`tupleset relation '${ts}' in '${where}' is not defined on type '${type}'`);
          if (rewriteKind(tsRewrite) !== 'this') {
            throw modelError(`tupleset relation '${type}#${ts}' used in '${where}' must be directly assignable only`);
          }
          const tsRefs = this.restrictions(type, ts);
          if (tsRefs.some((r) => r.wildcard !== undefined || r.relation !== undefined)) {
            throw modelError(`tupleset relation '${type}#${ts}' used in '${where}' cannot admit wildcards or usersets`);
          }
          if (!tsRefs.some((r) => this.#relations.get(r.type)?.has(target))) {
            throw modelError(`relation '${target}' in '${where}' is not defined on any type of '${type}#${ts}'`);
          }
          this.#tuplesetRelations.add(`${type}#${ts}`);
          break;
        }
        case 'union':
        case 'intersection': {
          const child = (node as { union?: { child?: Userset[] }; intersection?: { child?: Userset[] } })[kind]?.child;
          if (!Array.isArray(child) || child.length < 2) throw modelError(`${kind} in '${where}' needs at least two operands`);
          for (const c of child) stack.push({ node: c, depth: depth + 1 });
          break;
        }
        case 'difference': {
          const d = (node as { difference?: { base?: Userset; subtract?: Userset } }).difference;
          if (d?.base === undefined || d.subtract === undefined) throw modelError(`invalid difference in '${where}'`);
          stack.push({ node: d.base, depth: depth + 1 }, { node: d.subtract, depth: depth + 1 });
          break;
        }
      }
    }
    const refs = this.restrictions(type, relation);
    if (assignable && refs.length === 0) throw modelError(`assignable relation '${where}' must have at least one type restriction`);
    if (!assignable && refs.length > 0) throw modelError(`relation '${where}' is not assignable but has type restrictions`);
    const seen = new Set<string>();
    for (const r of refs) {
      if (r === null || typeof r !== 'object' || typeof r.type !== 'string') throw modelError(`invalid type restriction on '${where}'`);
      if (!this.#relations.has(r.type)) throw modelError(`type '${r.type}' in the restrictions of '${where}' is not defined`);
      if (r.relation !== undefined && r.wildcard !== undefined) {
        throw modelError(`restriction '${r.type}' on '${where}' cannot be both a wildcard and a userset`);
      }
      if (r.relation !== undefined && !this.#relations.get(r.type)!.has(r.relation)) {
        throw modelError(`relation '${r.type}#${r.relation}' in the restrictions of '${where}' is not defined`);
      }
      if (r.condition !== undefined && r.condition !== '' && !this.#conditions.has(r.condition)) {
        throw modelError(`condition '${r.condition}' in the restrictions of '${where}' is not defined`);
      }
      const key = `${r.type}|${r.relation ?? ''}|${r.wildcard === undefined ? '' : '*'}|${r.condition ?? ''}`;
      if (seen.has(key)) throw modelError(`duplicate type restriction on '${where}'`);
      seen.add(key);
    }
  }

  /**
   * OpenFGA's `HasCycle` (ErrCycle): whether `type#relation` can reach,
   * through computed usersets inside its type (under any operator, but not
   * through `this` or tuple-to-usersets), a relation that lies on a cycle of
   * computed usersets. OpenFGA walks every path with a visited set; a walk
   * finds a repeated relation exactly when some relation it can reach is on a
   * cycle, which is what is computed here, once per type, without the walk's
   * exponential cost. A cycle through unions is refused even when each of its
   * relations has an entry point (`define x: [user] or y`, `define y: [user] or x`;
   * openfga/openfga `TestHasCycle` union_1 to union_4, and
   * `write_authzmodel_test.go` `fail_if_cycle`).
   */
  #reachesComputedCycle(type: string, relation: string): boolean {
    let byRelation = this.#cycleReach.get(type);
    if (byRelation === undefined) {
      byRelation = computedCycleReach(this.#relations.get(type)!);
      this.#cycleReach.set(type, byRelation);
    }
    return byRelation.has(relation);
  }

  /**
   * OpenFGA's `hasEntrypoints` (`pkg/typesystem/typesystem.go`), transcribed
   * rule for rule: whether some path through `rewrite` (of `type#relation`)
   * ends at a concrete type or a wildcard, and whether a path that found none
   * came back to a relation already visited (`[entry, loop]`). It is a walk
   * with a visited set rather than a fixpoint, and its answers differ from a
   * fixpoint's where a visited relation prunes the only way in; OpenFGA
   * refuses those relations, so the walk is kept as it is, including this
   * detail of its Go maps: `visited` is copied per call one level deep, so the
   * set of one type, once made, is shared by every call below and the marks
   * made there stay after they return. Operators pass the caller's set (not
   * the copy) to their operands. `budget` bounds the walk over the whole
   * model (OpenFGA's is unbounded): past it the model is refused.
   */
  #hasEntrypoints(
    type: string,
    relation: string,
    rewrite: Userset,
    visitedIn: Map<string, Map<string, boolean>>,
    budget: { calls: number },
  ): [boolean, boolean] {
    if (++budget.calls > MODEL_LIMITS.maxEntrypointSteps) {
      throw modelError(`the model is too complex to validate: the entry-point check of '${type}#${relation}' took more than ${MODEL_LIMITS.maxEntrypointSteps} steps`, { type, relation, cause: 'too_complex' });
    }
    const visited = new Map(visitedIn);
    const own = visited.get(type);
    if (own !== undefined) own.set(relation, false);
    else visited.set(type, new Map([[relation, false]]));
    const lookup = (t: string, r: string): Userset => {
      const rw = this.rewrite(t, r);
      if (rw === undefined) throw modelError(`undefined type definition for '${t}#${r}'`, { type, relation });
      return rw;
    };
    if ('this' in rewrite) {
      for (const ref of this.restrictions(type, relation)) {
        if (ref.relation === undefined || ref.wildcard !== undefined) {
          visited.get(type)!.set(relation, true);
          return [true, false];
        }
        const next = lookup(ref.type, ref.relation);
        if (visited.get(ref.type)?.has(ref.relation) === true) continue;
        if (this.#hasEntrypoints(ref.type, ref.relation, next, visited, budget)[0]) return [true, false];
      }
      return [false, false];
    }
    if ('computedUserset' in rewrite) {
      const name = rewrite.computedUserset.relation ?? '';
      const next = lookup(type, name);
      const known = visited.get(type)?.get(name);
      if (known !== undefined) return [known, true];
      return this.#hasEntrypoints(type, name, next, visited, budget);
    }
    if ('tupleToUserset' in rewrite) {
      const tupleset = rewrite.tupleToUserset.tupleset.relation ?? '';
      const name = rewrite.tupleToUserset.computedUserset.relation ?? '';
      lookup(type, tupleset);
      for (const ref of this.restrictions(type, tupleset)) {
        const next = this.rewrite(ref.type, name);
        if (next === undefined) continue;
        const known = visited.get(ref.type)?.get(name);
        if (known !== undefined) {
          if (known) return [true, false];
          continue;
        }
        if (this.#hasEntrypoints(ref.type, name, next, visited, budget)[0]) return [true, false];
      }
      return [false, false];
    }
    if ('union' in rewrite) {
      let loop = false;
      for (const child of rewrite.union.child) {
        const [entry, childLoop] = this.#hasEntrypoints(type, relation, child, visitedIn, budget);
        if (entry) return [true, false];
        loop ||= childLoop;
      }
      return [false, loop];
    }
    if ('intersection' in rewrite) {
      for (const child of rewrite.intersection.child) {
        const [entry, childLoop] = this.#hasEntrypoints(type, relation, child, visitedIn, budget);
        if (!entry) return [false, childLoop];
      }
      return [true, false];
    }
    if ('difference' in rewrite) {
      for (const side of [rewrite.difference.base, rewrite.difference.subtract]) {
        const [entry, loop] = this.#hasEntrypoints(type, relation, side, visitedIn, budget);
        if (!entry) return [false, loop];
      }
      return [true, false];
    }
    throw modelError(`invalid rewrite in '${type}#${relation}'`, { type, relation });
  }

  /**
   * The relations that some tuples can satisfy, as a least fixpoint: a
   * relation is in once its rewrite can be satisfied using only relations
   * already in. This was the entry-point rule before OpenFGA's walk
   * (`#hasEntrypoints`) replaced it; it only keeps stored versions loading.
   */
  #entryFixpoint(): Set<string> {
    const has = new Set<string>();
    const evalRw = (type: string, relation: string, rw: Userset): boolean => {
      if ('this' in rw) {
        return this.restrictions(type, relation).some((r) => r.relation === undefined || has.has(`${r.type}#${r.relation}`));
      }
      if ('computedUserset' in rw) return has.has(`${type}#${rw.computedUserset.relation ?? ''}`);
      if ('tupleToUserset' in rw) {
        const target = rw.tupleToUserset.computedUserset.relation ?? '';
        return this.restrictions(type, rw.tupleToUserset.tupleset.relation ?? '').some((r) => has.has(`${r.type}#${target}`));
      }
      if ('union' in rw) return rw.union.child.some((c) => evalRw(type, relation, c));
      if ('intersection' in rw) return rw.intersection.child.every((c) => evalRw(type, relation, c));
      if ('difference' in rw) return evalRw(type, relation, rw.difference.base) && evalRw(type, relation, rw.difference.subtract);
      return false;
    };
    let changed = true;
    while (changed) {
      changed = false;
      for (const [type, rels] of this.#relations) {
        for (const [name, rw] of rels) {
          const key = `${type}#${name}`;
          if (!has.has(key) && evalRw(type, name, rw)) {
            has.add(key);
            changed = true;
          }
        }
      }
    }
    return has;
  }
}
