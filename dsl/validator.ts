/**
 * Semantic validation of a parsed model, with OpenFGA's rules, error types,
 * messages and stage order (openfga/language `validate-dsl.ts`):
 * 1. names: reserved `self`/`this`, and the name patterns;
 * 2. schema version: required, and only 1.1 or 1.2;
 * 3. references: undefined relations, types, type#relation, conditions, and
 *    the tupleset rules of `a from b`;
 * 4. duplicates (types, restrictions, operands) — only when 3 found nothing;
 * 5. entry points (no entrypoint / potential loop) — only when 1–4 found nothing;
 * 6. conditions: unused ones, and OpenFGA's API limits (at most 25 conditions
 *    of at most 25 parameters, expressions of at most 512 bytes, names
 *    matching `^[^:#@\s]{1,50}$`).
 * Stages 3–6 are skipped when stage 1 found a problem, as OpenFGA does.
 *
 * One deliberate difference: OpenFGA's JS validator crashes with a TypeError on
 * a tupleset restriction that carries a condition (`define parent: [folder with c]`
 * used by `viewer from parent`), because it looks the type up with the
 * condition still attached. The OpenFGA server accepts that model
 * (abac_tests.yaml `tuple_to_userset_with_condition`), so we strip the
 * condition and validate it normally. Pinned by test/dsl/differential.test.ts.
 */
import type { AuthorizationModel, RelationReference, TypeDefinition, Userset } from '../engine/model.ts';
import { LatchkeyError } from '../engine/errors.ts';
import { diagnostic, type DslDiagnostic, type SourceSpan } from './diagnostics.ts';
import { restrictionSpan, tokenSpan, userSetSpan, type SourceIndex } from './visitor.ts';

const TYPE_RULE = '^[^:#@\\*\\s]{1,254}$';
const RELATION_RULE = '^[^:#@\\*\\s]{1,50}$';
const TYPE_RE = new RegExp(TYPE_RULE);
const CONDITION_NAME_RULE = '^[^:#@\\s]{1,50}$';
const CONDITION_NAME_RE = new RegExp(CONDITION_NAME_RULE);
/** OpenFGA API limits on conditions. */
export const MAX_CONDITIONS = 25;
export const MAX_CONDITION_PARAMETERS = 25;
export const MAX_CONDITION_EXPRESSION_BYTES = 512;
const RELATION_RE = new RegExp(RELATION_RULE);

/** Where diagnostics of one type definition, relation or condition should point and which file they belong to. */
export type Locator = {
  source: SourceIndex | undefined;
  fileOf?: (obj: object) => string | undefined;
  /**
   * The text's lines (split at `\n`), for one model file: duplicates are
   * placed as OpenFGA's language validator places them, by searching these
   * lines (see {@link duplicateSpan}).
   */
  lines?: string[];
};

type Relations = Record<string, Userset>;

function relationsOf(td: TypeDefinition | undefined): Relations {
  return (td?.relations ?? {}) as Relations;
}

function restrictionsOf(td: TypeDefinition | undefined, relation: string): RelationReference[] {
  const meta = td?.metadata?.relations;
  if (!meta || !Object.hasOwn(meta, relation)) return [];
  return meta[relation]?.directly_related_user_types ?? [];
}

function restrictionKey(r: RelationReference): string {
  let s = r.type;
  if (r.wildcard) s += ':*';
  else if (r.relation) s += `#${r.relation}`;
  if (r.condition) s += ` with ${r.condition}`;
  return s;
}

function leafName(u: Userset): string | undefined {
  if ('computedUserset' in u) return u.computedUserset.relation || undefined;
  if ('tupleToUserset' in u) {
    return `${u.tupleToUserset.computedUserset.relation} from ${u.tupleToUserset.tupleset.relation}`;
  }
  return undefined;
}

/** Validates a model; returns every diagnostic found (empty when valid). */
export function validateModel(model: AuthorizationModel, loc: Locator = { source: undefined }): DslDiagnostic[] {
  const errors: DslDiagnostic[] = [];
  const src = loc.source;
  const fileOf = (o: object): string | undefined => loc.fileOf?.(o);
  const push = (kind: string, message: string, span: SourceSpan | undefined, owner: object): void => {
    errors.push(diagnostic(kind, message, span, fileOf(owner)));
  };
  const typeDefs = model.type_definitions ?? [];
  const relSpan = (td: TypeDefinition, rel: string): SourceSpan | undefined => tokenSpan(src?.relationName.get(td)?.get(rel));

  // 1. names
  for (const td of typeDefs) {
    const tSpan = tokenSpan(src?.typeName.get(td));
    if (td.type === 'self' || td.type === 'this') {
      push('reserved-type-keywords', "a type cannot be named 'self' or 'this'.", tSpan, td);
    }
    if (!TYPE_RE.test(td.type)) {
      push('invalid-name', `type '${td.type}' does not match naming rule: '${TYPE_RULE}'.`, tSpan, td);
    }
    for (const rel of Object.keys(relationsOf(td))) {
      const owner = relationOwner(td, rel);
      if (rel === 'self' || rel === 'this') {
        push('reserved-relation-keywords', "a relation cannot be named 'self' or 'this'.", relSpan(td, rel), owner);
      }
      if (!RELATION_RE.test(rel)) {
        push(
          'invalid-name',
          `relation '${rel}' of type '${td.type}' does not match naming rule: '${RELATION_RULE}'.`,
          relSpan(td, rel),
          owner,
        );
      }
    }
  }

  // 2. schema version
  const version = model.schema_version;
  if (!version) {
    errors.push(diagnostic('schema-version-required', 'schema version required', undefined));
    return errors;
  }
  if (version !== '1.1' && version !== '1.2') {
    errors.push(diagnostic('invalid-schema', `invalid schema ${version}`, tokenSpan(src?.schema)));
    return errors;
  }
  if (errors.length > 0) return errors;

  const typeMap = new Map<string, TypeDefinition>();
  const usedConditions = new Set<string>();
  for (const td of typeDefs) {
    typeMap.set(td.type, td);
    const meta = td.metadata?.relations;
    if (meta) {
      for (const rel of Object.keys(meta)) {
        for (const r of meta[rel]?.directly_related_user_types ?? []) if (r.condition) usedConditions.add(r.condition);
      }
    }
  }
  const conditions = model.conditions ?? {};

  // 3. references
  for (const td of typeDefs) {
    const current = typeMap.get(td.type) as TypeDefinition;
    for (const rel of Object.keys(relationsOf(td))) {
      checkReferences(current, rel);
    }
  }

  function checkReferences(td: TypeDefinition, rel: string): void {
    const relations = relationsOf(td);
    const root = relations[rel];
    if (!root) return;
    const owner = relationOwner(td, rel);
    const queue: Userset[] = [root];
    for (let qi = 0; qi < queue.length; qi++) {
      const u = queue[qi] as Userset;
      if ('union' in u && u.union.child.length) queue.push(...u.union.child);
      else if ('intersection' in u && u.intersection.child.length) queue.push(...u.intersection.child);
      else if ('difference' in u) queue.push(u.difference.base, u.difference.subtract);
      else if ('this' in u) checkDirect(td, rel, owner);
      else if ('computedUserset' in u) {
        const target = u.computedUserset.relation;
        if (target && !Object.hasOwn(relations, target)) {
          push('missing-definition', `the relation \`${target}\` does not exist.`, userSetSpan(src, u), owner);
        }
      } else if ('tupleToUserset' in u) checkTupleToUserset(td, u, owner);
    }
  }

  function checkDirect(td: TypeDefinition, rel: string, owner: object): void {
    const refs = restrictionsOf(td, rel);
    if (refs.length === 0) {
      push('assignable-relation-must-have-type', `assignable relation '${rel}' must have types`, relSpan(td, rel), owner);
    }
    for (const r of refs) {
      const target = typeMap.get(r.type);
      if (!target) {
        push('invalid-type', `\`${r.type}\` is not a valid type.`, tokenSpan(src?.restrictionType.get(r)), owner);
      }
      if (r.condition && !Object.hasOwn(conditions, r.condition)) {
        push(
          'condition-not-defined',
          `\`${r.condition}\` is not a defined condition in the model.`,
          tokenSpan(src?.restrictionCondition.get(r)),
          owner,
        );
      }
      if (r.wildcard && r.relation) {
        push(
          'type-wildcard-relation',
          `type restriction \`${restrictionKey(r)}\` cannot contain both wildcard and relation`,
          restrictionSpan(src, r),
          owner,
        );
      } else if (r.relation && (!target || !Object.hasOwn(relationsOf(target), r.relation))) {
        push('invalid-relation-type', `\`${r.relation}\` is not a valid relation for \`${r.type}\`.`, restrictionSpan(src, r), owner);
      }
    }
  }

  function checkTupleToUserset(td: TypeDefinition, u: Userset, owner: object): void {
    if (!('tupleToUserset' in u)) return;
    const from = u.tupleToUserset.tupleset.relation;
    const target = u.tupleToUserset.computedUserset.relation;
    if (!from || !target) return;
    const relations = relationsOf(td);
    const tuplesetSpan = tokenSpan(src?.tupleset.get(u));
    const fromDef = relations[from];
    if (!fromDef || !Object.hasOwn(relations, from)) {
      push('invalid-relation-type', `\`${from}\` is not a valid relation for \`${td.type}\`.`, userSetSpan(src, u), owner);
      return;
    }
    const refs = 'this' in fromDef ? restrictionsOf(td, from) : [];
    if (refs.length === 0) {
      push('tupleuserset-not-direct', `\`${from}\` relation used inside from allows only direct relation.`, tuplesetSpan, owner);
      return;
    }
    const missing: string[] = [];
    for (const r of refs) {
      if (r.wildcard || r.relation) {
        push('tupleuserset-not-direct', `\`${from}\` relation used inside from allows only direct relation.`, tuplesetSpan, owner);
      } else {
        const t = typeMap.get(r.type);
        if (!t || !Object.hasOwn(relationsOf(t), target)) missing.push(r.type);
      }
    }
    if (missing.length === refs.length) {
      for (const typeName of missing) {
        push(
          'invalid-relation-on-tupleset',
          `the \`${target}\` relation definition on type \`${td.type}\` is not valid: \`${target}\` does not exist on \`${from}\`, which is of type \`${typeName}\`.`,
          userSetSpan(src, u),
          owner,
        );
      }
    }
  }

  // 4. duplicates
  if (errors.length === 0) {
    const lines = loc.lines;
    const seenTypes = new Set<string>();
    for (const td of typeDefs) {
      if (seenTypes.has(td.type)) {
        const span = lines ? duplicateSpan(lines, typeLine(lines, td.type, 0), td.type) : tokenSpan(src?.typeName.get(td));
        push('duplicated-error', `the type \`${td.type}\` is a duplicate.`, span, td);
      }
      seenTypes.add(td.type);
      const meta = td.metadata?.relations;
      if (!meta) continue;
      for (const rel of Object.keys(meta)) {
        const owner = relationOwner(td, rel);
        const seen = new Set<string>();
        for (const r of meta[rel]?.directly_related_user_types ?? []) {
          const key = restrictionKey(r);
          if (seen.has(key)) {
            // OpenFGA looks for the relation after the line of the restriction's type, not of the relation's own type.
            const span = lines ? duplicateSpan(lines, relationLine(lines, rel, typeLine(lines, r.type, 0)), key) : restrictionSpan(src, r);
            push('duplicated-error', `the type restriction \`${key}\` is a duplicate in the relation \`${rel}\`.`, span, owner);
          }
          seen.add(key);
        }
        const def = relationsOf(td)[rel];
        if (!def) continue;
        const children = 'union' in def ? def.union.child : 'intersection' in def ? def.intersection.child : [];
        const names = new Set<string | undefined>();
        const partialSpan = (n: string, c: Userset): SourceSpan | undefined =>
          lines ? duplicateSpan(lines, relationLine(lines, rel, typeLine(lines, td.type, 0)), n) : userSetSpan(src, c);
        for (const c of children) {
          const n = leafName(c);
          if (n && names.has(n)) {
            push('duplicated-error', `the partial relation definition \`${n}\` is a duplicate in the relation \`${rel}\`.`, partialSpan(n, c), owner);
          }
          names.add(n);
        }
        if ('difference' in def) {
          const b = leafName(def.difference.base);
          if (b && b === leafName(def.difference.subtract)) {
            push('duplicated-error', `the partial relation definition \`${b}\` is a duplicate in the relation \`${rel}\`.`, partialSpan(b, def.difference.subtract), owner);
          }
        }
      }
    }
  }

  // 5. entry points
  if (errors.length === 0) {
    const budget = { steps: 0 };
    entries: for (const td of typeDefs) {
      const current = relationsOf(typeMap.get(td.type));
      for (const rel of Object.keys(relationsOf(td))) {
        const def = current[rel];
        if (!def) continue;
        let found: Entry;
        try {
          found = entryPoint(typeMap, td.type, rel, def, undefined, budget);
        } catch (err) {
          if (!(err instanceof TooComplex)) throw err;
          push(
            'model-too-complex',
            `the entry points of the model take more than ${MAX_ENTRY_POINT_STEPS} steps to check (at \`${rel}\` of \`${td.type}\`).`,
            relSpan(td, rel),
            relationOwner(td, rel),
          );
          break entries;
        }
        const { hasEntry, loop } = found;
        if (!hasEntry) {
          push(
            'relation-no-entry-point',
            `\`${rel}\` is an impossible relation for \`${td.type}\` (${loop ? 'potential loop' : 'no entrypoint'}).`,
            relSpan(td, rel),
            relationOwner(td, rel),
          );
        }
      }
    }
  }

  // 6. conditions
  const conditionEntries = Object.entries(conditions);
  for (const [index, [name, condition]] of conditionEntries.entries()) {
    // OpenFGA's API limits (openfga/api `authzmodel.proto`), enforced by the
    // server when the model is written; reported here so the DSL tools catch
    // them first. OpenFGA's JS validator does not check them.
    const nameSpan = tokenSpan(src?.conditionName.get(name));
    if (index === MAX_CONDITIONS) {
      push('condition-limit', `a model may have at most ${MAX_CONDITIONS} conditions; it has ${conditionEntries.length}.`, nameSpan, condition);
    }
    if (!CONDITION_NAME_RE.test(name)) {
      push('invalid-name', `condition '${name}' does not match naming rule: '${CONDITION_NAME_RULE}'.`, nameSpan, condition);
    }
    const paramCount = Object.keys(condition.parameters ?? {}).length;
    if (paramCount > MAX_CONDITION_PARAMETERS) {
      push('condition-limit', `condition \`${name}\` has ${paramCount} parameters; at most ${MAX_CONDITION_PARAMETERS} are allowed.`, nameSpan, condition);
    }
    const bytes = Buffer.byteLength(condition.expression, 'utf8');
    if (bytes > MAX_CONDITION_EXPRESSION_BYTES) {
      push('condition-limit', `condition \`${name}\` expression is ${bytes} bytes; at most ${MAX_CONDITION_EXPRESSION_BYTES} are allowed.`, nameSpan, condition);
    }

    if (name !== condition.name) {
      errors.push(
        diagnostic(
          'different-nested-condition-name',
          `condition key is \`${name}\` but nested name property is ${condition.name}`,
          undefined,
        ),
      );
    }
    if (!usedConditions.has(name)) {
      push('condition-not-used', `\`${name}\` condition is not used in the model.`, tokenSpan(src?.conditionName.get(name)), condition);
    }
  }
  return errors;
}

/**
 * A check of the JSON model beyond the DSL's own rules, run once the DSL is
 * valid: the one a store applies when the model is written, for example
 * `(model) => void new TypeSystem(model)` from `@latchkey/engine`, which also
 * compiles each condition in OpenFGA's CEL environment. It throws a
 * `LatchkeyError` with code `invalid_argument` to refuse the model; that
 * error becomes one diagnostic whose `kind` is the error's `reason` and
 * whose `message` is the error's, placed on the condition
 * (`details.condition`) or relation (`details.type`, `details.relation`) it
 * names. Anything else it throws is reported like a failure of the parser
 * (kind `internal`).
 */
export type ModelCheck = (model: AuthorizationModel) => void;

/** A model's refusal by a {@link ModelCheck}. */
export type ModelProblem = { kind: string; message: string; details: Readonly<Record<string, unknown>> | undefined };

/** Runs `check` on `model`; the refusal, or `undefined` when the model passes (or there is no check). */
export function runModelCheck(check: ModelCheck | undefined, model: AuthorizationModel): ModelProblem | undefined {
  if (check === undefined) return undefined;
  try {
    check(model);
    return undefined;
  } catch (err) {
    if (err instanceof LatchkeyError && err.code === 'invalid_argument') return { kind: err.reason ?? err.code, message: err.message, details: err.details };
    throw err;
  }
}

/**
 * Places `problem` on the condition (`details.condition`) or the relation
 * (`details.type` and `details.relation`) it names, in the file it belongs
 * to; anywhere else it is reported at line 0, column 0.
 */
export function placeModelProblem(model: AuthorizationModel, problem: ModelProblem, loc: Locator): DslDiagnostic {
  const details = problem.details ?? {};
  const conditions = model.conditions ?? {};
  const condition = typeof details['condition'] === 'string' && Object.hasOwn(conditions, details['condition']) ? details['condition'] : undefined;
  if (condition !== undefined) {
    const owner = conditions[condition] as object;
    return diagnostic(problem.kind, problem.message, tokenSpan(loc.source?.conditionName.get(condition)), loc.fileOf?.(owner));
  }
  const type = details['type'];
  const relation = details['relation'];
  const td = typeof type === 'string' ? (model.type_definitions ?? []).find((d) => d.type === type) : undefined;
  if (td !== undefined && typeof relation === 'string' && Object.hasOwn(relationsOf(td), relation)) {
    return diagnostic(problem.kind, problem.message, tokenSpan(loc.source?.relationName.get(td)?.get(relation)), loc.fileOf?.(relationOwner(td, relation)));
  }
  return diagnostic(problem.kind, problem.message, undefined);
}

/**
 * OpenFGA's language validator places duplicates by searching the text
 * (openfga/language `validate-dsl.ts` `getTypeLineNumber`,
 * `getRelationLineNumber`; `util/exceptions.ts` `constructValidationError`),
 * and its test data (`dsl-semantic-validation-cases.yaml`) pins the result:
 * a duplicated type at its first definition, a duplicated restriction or
 * operand at the first occurrence of its text on the relation's line. The
 * search is reproduced as it is, quirks included: the first line from
 * `from` that is `type <name>` (a trailing ` # comment` allowed); the first
 * line from there that is `define <name>` before a `:`; on it, the first
 * match of `\b<text>\b` built as a regular expression (so `user:*` matches
 * `user`), column 0 when none matches. A line that is not found gives the
 * diagnostic no better place (line 0, column 0).
 */
function duplicateSpan(lines: string[], line: number, text: string): SourceSpan | undefined {
  if (line < 0) return undefined;
  let column = -1;
  try {
    column = (lines[line] ?? '').search(new RegExp(`\\b${text}\\b`));
  } catch {
    // A name that is not a valid pattern: OpenFGA's search would throw; mark the line's start.
  }
  return { line, column: column < 0 ? 0 : column, length: text.length };
}

/** OpenFGA's `getTypeLineNumber` (see {@link duplicateSpan}). */
function typeLine(lines: string[], type: string, from: number): number {
  const prefix = `type ${type}`;
  for (let i = Math.max(from, 0); i < lines.length; i++) {
    const trimmed = (lines[i] as string).trim();
    if (trimmed.startsWith(prefix) && /^(\s+#.*)?$/.test(trimmed.slice(prefix.length))) return i;
  }
  return -1;
}

/** OpenFGA's `getRelationLineNumber` (see {@link duplicateSpan}); a `from` below 0 searches from the top. */
function relationLine(lines: string[], relation: string, from: number): number {
  const prefix = `define ${relation}`;
  for (let i = Math.max(from, 0); i < lines.length; i++) {
    const normalized = (lines[i] as string).trim().replace(/ {2,}/g, ' ');
    if (normalized.startsWith(prefix) && /^\s*:/.test(normalized.slice(prefix.length))) return i;
  }
  return -1;
}

/** The object that decides which file a relation's diagnostics belong to (its metadata when extended). */
function relationOwner(td: TypeDefinition, rel: string): object {
  const meta = td.metadata?.relations;
  const m = meta && Object.hasOwn(meta, rel) ? meta[rel] : undefined;
  return m?.source_info?.file ? m : td;
}

type Entry = { hasEntry: boolean; loop: boolean };

/**
 * Steps of the entry-point walk over one model. Not an OpenFGA rule: the
 * walk follows every path with a visited set, exponential in the worst case
 * (ten types whose relations all name each other, none with a way in, took
 * 50 s; the language validator hangs alike). Real models take a few
 * thousand steps at most (a 600-line model, 1,700).
 */
export const MAX_ENTRY_POINT_STEPS = 100_000;

/** Thrown when the entry-point walk runs past {@link MAX_ENTRY_POINT_STEPS}. */
class TooComplex extends Error {}
const NO: Entry = { hasEntry: false, loop: false };
const YES: Entry = { hasEntry: true, loop: false };
const LOOP: Entry = { hasEntry: false, loop: true };

/**
 * The relations visited on the current path, as an immutable linked list of
 * relation definitions (each type's relation has exactly one definition
 * object, so object identity stands for `type#relation`). Sharing tails
 * replaces the copy per call of OpenFGA's implementation with the same result.
 */
type Visited = { def: Userset; next: Visited } | undefined;

function seen(visited: Visited, def: Userset): boolean {
  for (let v = visited; v !== undefined; v = v.next) if (v.def === def) return true;
  return false;
}

/**
 * Whether a relation can be satisfied by some tuple, following OpenFGA's
 * `hasEntryPointOrLoop`: visited relations are tracked per path, a computed
 * userset that returns to a visited relation is a loop, and a difference
 * evaluates both sides from the caller's visited set.
 */
function entryPoint(
  types: Map<string, TypeDefinition>,
  type: string,
  relation: string,
  rewrite: Userset,
  visitedIn: Visited,
  budget: { steps: number },
): Entry {
  if (++budget.steps > MAX_ENTRY_POINT_STEPS) throw new TooComplex();
  const td = types.get(type);
  const relations = relationsOf(td);
  if (!Object.hasOwn(relations, relation)) return NO;
  const own = relations[relation] as Userset;
  const visited: Visited = { def: own, next: visitedIn };
  if ('this' in rewrite) {
    for (const r of restrictionsOf(td, relation)) {
      if (!r.relation || r.wildcard) return YES;
      const target = relationsOf(types.get(r.type));
      const next = Object.hasOwn(target, r.relation) ? target[r.relation] : undefined;
      if (!next) return NO;
      if (seen(visited, next)) continue;
      if (entryPoint(types, r.type, r.relation, next, visited, budget).hasEntry) return YES;
    }
    return NO;
  }
  if ('computedUserset' in rewrite) {
    const name = rewrite.computedUserset.relation;
    if (!name || !Object.hasOwn(relations, name)) return NO;
    const next = relations[name] as Userset;
    if (seen(visited, next)) return LOOP;
    return entryPoint(types, type, name, next, visited, budget);
  }
  if ('tupleToUserset' in rewrite) {
    const ts = rewrite.tupleToUserset.tupleset.relation;
    const name = rewrite.tupleToUserset.computedUserset.relation;
    if (!ts || !name || !Object.hasOwn(relations, ts)) return NO;
    for (const r of restrictionsOf(td, ts)) {
      // The restriction's condition is ignored here (see the module comment).
      const target = relationsOf(types.get(r.type));
      if (!Object.hasOwn(target, name)) continue;
      const next = target[name] as Userset;
      if (seen(visited, next)) continue;
      if (entryPoint(types, r.type, name, next, visited, budget).hasEntry) return YES;
    }
    return NO;
  }
  if ('union' in rewrite) {
    let loop = false;
    for (const c of rewrite.union.child) {
      const e = entryPoint(types, type, relation, c, visited, budget);
      if (e.hasEntry) return YES;
      loop ||= e.loop;
    }
    return loop ? LOOP : NO;
  }
  if ('intersection' in rewrite) {
    for (const c of rewrite.intersection.child) {
      const e = entryPoint(types, type, relation, c, visited, budget);
      if (!e.hasEntry) return e.loop ? LOOP : NO;
    }
    return YES;
  }
  if ('difference' in rewrite) {
    const base = entryPoint(types, type, relation, rewrite.difference.base, visitedIn, budget);
    if (!base.hasEntry) return base.loop ? LOOP : NO;
    const sub = entryPoint(types, type, relation, rewrite.difference.subtract, visitedIn, budget);
    if (!sub.hasEntry) return sub.loop ? LOOP : NO;
    return YES;
  }
  return NO;
}
