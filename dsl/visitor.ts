/**
 * CST → OpenFGA JSON model. Builds exactly the JSON that OpenFGA's DSL
 * transformer builds (openfga/language `dsltojson.ts`), and records where
 * each piece came from so the validator can position its diagnostics.
 *
 * The listener-level checks of OpenFGA's transformer live here too and are
 * reported as syntax errors, as OpenFGA does: a relation defined twice in a
 * type, a condition defined twice, a parameter defined twice, `extend`
 * outside a module, and a type extended twice in one file.
 */
import type { CstNode, IToken } from 'chevrotain';
import type {
  AuthorizationModel,
  Condition,
  ConditionParamTypeRef,
  ConditionTypeName,
  RelationReference,
  TypeDefinition,
  Userset,
} from '../engine/model.ts';
import { diagnostic, joinSpans, type DslDiagnostic, type SourceSpan } from './diagnostics.ts';

/**
 * Where the parts of a parsed model came from: the tokens, keyed by the
 * model's own objects. Spans are computed from tokens only when a diagnostic
 * needs one (see `userSetSpan`, `restrictionSpan`), so a valid parse
 * allocates nothing for positions. Maps rather than WeakMaps: they live no
 * longer than the parse, and Map lookups are several times cheaper.
 */
export type SourceIndex = {
  /** First token of a leaf rewrite (computed userset name, or the target of `a from b`). */
  node: Map<object, IToken>;
  /** The tupleset name of a tuple-to-userset rewrite. */
  tupleset: Map<object, IToken>;
  /** The type name of a type restriction. */
  restrictionType: Map<RelationReference, IToken>;
  /** The last token of a type restriction's `type`, `type:*` or `type#relation` part. */
  restrictionEnd: Map<RelationReference, IToken>;
  /** The condition name of a type restriction. */
  restrictionCondition: Map<RelationReference, IToken>;
  /** The type name of a type definition. */
  typeName: Map<TypeDefinition, IToken>;
  /** Relation name tokens per type definition. */
  relationName: Map<TypeDefinition, Map<string, IToken>>;
  /** Condition name tokens. */
  conditionName: Map<string, IToken>;
  /** The schema version token. */
  schema: IToken | undefined;
};

/** An empty index. */
export function emptySourceIndex(): SourceIndex {
  return {
    node: new Map(),
    tupleset: new Map(),
    restrictionType: new Map(),
    restrictionEnd: new Map(),
    restrictionCondition: new Map(),
    typeName: new Map(),
    relationName: new Map(),
    conditionName: new Map(),
    schema: undefined,
  };
}

/** Span of a leaf rewrite: the name, or `a from b` as a whole. */
export function userSetSpan(src: SourceIndex | undefined, u: object): SourceSpan | undefined {
  const first = src?.node.get(u);
  if (!first) return undefined;
  const ts = src?.tupleset.get(u);
  return ts ? joinSpans(spanOf(first), spanOf(ts)) : spanOf(first);
}

/** Span of a type restriction's `type`, `type:*` or `type#relation` part. */
export function restrictionSpan(src: SourceIndex | undefined, r: RelationReference): SourceSpan | undefined {
  const first = src?.restrictionType.get(r);
  if (!first) return undefined;
  const last = src?.restrictionEnd.get(r);
  return last ? joinSpans(spanOf(first), spanOf(last)) : spanOf(first);
}

/** Span of a single token, if known. */
export function tokenSpan(t: IToken | undefined): SourceSpan | undefined {
  return t ? spanOf(t) : undefined;
}

/** The result of turning one file's CST into a model. */
export type VisitedFile = {
  model: AuthorizationModel;
  /** True for a `module` file (schema 1.2 modular model). */
  isModule: boolean;
  moduleName: string | undefined;
  /** Type definitions written as `extend type X`. */
  extensions: Set<TypeDefinition>;
  source: SourceIndex;
  errors: DslDiagnostic[];
};

type Children = Record<string, Array<CstNode | IToken> | undefined>;

function kids(node: CstNode): Children {
  return node.children as Children;
}

function sub(node: CstNode, key: string, i = 0): CstNode | undefined {
  return kids(node)[key]?.[i] as CstNode | undefined;
}

function subs(node: CstNode, key: string): CstNode[] {
  return (kids(node)[key] ?? []) as CstNode[];
}

function tok(node: CstNode, key: string, i = 0): IToken | undefined {
  return kids(node)[key]?.[i] as IToken | undefined;
}

/**
 * Sets an own, enumerable property. Plain assignment of the key `__proto__`
 * would replace the object's prototype instead (a valid relation, parameter
 * or condition name would silently vanish from the model).
 */
export function setOwn<V>(obj: Record<string, V>, key: string, value: V): void {
  if (key === '__proto__') Object.defineProperty(obj, key, { value, enumerable: true, writable: true, configurable: true });
  else obj[key] = value;
}

/** 0-based span of a token. */
export function spanOf(t: IToken): SourceSpan {
  return { line: (t.startLine ?? 1) - 1, column: (t.startColumn ?? 1) - 1, length: t.image.length };
}

/**
 * Builds the model of one parsed file. With `track` false no positions are
 * recorded (the source index stays empty): a valid model then costs no
 * position bookkeeping, and callers visit again with `track` true only when
 * they need to position diagnostics.
 */
export function visitFile(cst: CstNode, track = true): VisitedFile {
  const source = emptySourceIndex();
  const src = track ? source : undefined;
  const errors: DslDiagnostic[] = [];
  // A module file has no schema version: the key is left out, as OpenFGA does.
  const model = {} as AuthorizationModel;
  let isModule = false;
  let moduleName: string | undefined;

  const modelHeader = sub(cst, 'modelHeader');
  const moduleHeader = sub(cst, 'moduleHeader');
  if (modelHeader) {
    const v = tok(modelHeader, 'SCHEMA_VERSION');
    if (v) {
      model.schema_version = v.image;
      source.schema = v;
    }
  } else if (moduleHeader) {
    const id = tok(moduleHeader, 'Ident');
    if (id) {
      isModule = true;
      moduleName = id.image;
    }
  }

  const extensions = new Set<TypeDefinition>();
  const extendedNames = new Set<string>();
  const typeDefs: TypeDefinition[] = [];
  for (const td of subs(cst, 'typeDef')) {
    const nameTok = tok(td, 'Name');
    if (!nameTok) continue;
    const isExtend = tok(td, 'EXTEND') !== undefined;
    if (isExtend && !isModule) {
      errors.push(diagnostic('syntax', 'extend can only be used in a modular model', spanOf(nameTok)));
    }
    const relations: Record<string, Userset> = {};
    const metaRelations: Record<string, { directly_related_user_types: RelationReference[]; module?: string }> = {};
    const typeDef: TypeDefinition = { type: nameTok.image, relations };
    const relationNames = new Map<string, IToken>();
    let relationCount = 0;
    if (track) {
      source.typeName.set(typeDef, nameTok);
      source.relationName.set(typeDef, relationNames);
    }

    const declarations = subs(td, 'relationDeclaration') as unknown as Array<Node<DeclarationC>>;
    for (let i = 0; i < declarations.length; i++) {
      const rd = (declarations[i] as Node<DeclarationC>).children;
      const relTok = rd.Name[0] as IToken;
      const direct: RelationReference[] = [];
      const rewrite = buildRelationDef(rd.relationDef[0] as Node<RelationDefC>, direct, src);
      relationCount++;
      if (Object.hasOwn(relations, relTok.image)) {
        errors.push(diagnostic('syntax', `'${relTok.image}' is already defined in '${typeDef.type}'`, spanOf(relTok)));
      }
      setOwn(relations, relTok.image, rewrite);
      const meta: { directly_related_user_types: RelationReference[]; module?: string } = {
        directly_related_user_types: direct,
      };
      if (isModule && isExtend && moduleName !== undefined) meta.module = moduleName;
      setOwn(metaRelations, relTok.image, meta);
      if (track) relationNames.set(relTok.image, relTok);
    }

    const hasRelations = relationCount > 0;
    if (isModule) {
      typeDef.metadata = hasRelations ? { relations: metaRelations } : {};
      if (moduleName !== undefined) typeDef.metadata.module = moduleName;
    } else {
      typeDef.metadata = hasRelations ? { relations: metaRelations } : null;
    }
    typeDefs.push(typeDef);
    if (isExtend && isModule) {
      if (extendedNames.has(typeDef.type)) {
        errors.push(diagnostic('syntax', `'${typeDef.type}' is already extended in file.`, spanOf(nameTok)));
      } else {
        extendedNames.add(typeDef.type);
        extensions.add(typeDef);
      }
    }
  }
  if (typeDefs.length > 0) model.type_definitions = typeDefs;

  const conditionNodes = subs(cst, 'condition');
  if (conditionNodes.length > 0) model.conditions = {};
  for (const cn of conditionNodes) {
    const nameTok = tok(cn, 'IDENTIFIER');
    if (!nameTok || !model.conditions) continue;
    const name = nameTok.image;
    if (Object.hasOwn(model.conditions, name)) {
      errors.push(diagnostic('syntax', `condition '${name}' is already defined in the model`, spanOf(nameTok)));
    }
    const parameters: Record<string, ConditionParamTypeRef> = {};
    for (const pn of subs(cn, 'conditionParameter')) {
      const pTok = tok(pn, 'IDENTIFIER');
      if (!pTok) continue;
      if (Object.hasOwn(parameters, pTok.image)) {
        errors.push(
          diagnostic('syntax', `parameter '${pTok.image}' is already defined in the condition '${name}'`, spanOf(pTok)),
        );
      }
      const container = tok(pn, 'CONDITION_PARAM_CONTAINER');
      const scalar = tok(pn, 'CONDITION_PARAM_TYPE');
      if (container) {
        const ref: ConditionParamTypeRef = { type_name: typeName(container.image) };
        if (scalar) ref.generic_types = [{ type_name: typeName(scalar.image) }];
        setOwn(parameters, pTok.image, ref);
      } else if (scalar) {
        setOwn(parameters, pTok.image, { type_name: typeName(scalar.image) });
      }
    }
    let expression = '';
    for (const t of (kids(cn)['ExprToken'] ?? []) as IToken[]) expression += t.image;
    const condition: Condition = { name, expression: expression.trim(), parameters };
    if (isModule && moduleName !== undefined) condition.metadata = { module: moduleName };
    setOwn(model.conditions, name, condition);
    source.conditionName.set(name, nameTok);
  }

  return { model, isModule, moduleName, extensions, source, errors };
}

function typeName(word: string): ConditionTypeName {
  return `TYPE_NAME_${word.toUpperCase()}` as ConditionTypeName;
}

// The builders below read each rule's children through typed, direct
// property accesses rather than one generic helper: every access site then
// sees only the few object shapes of its own rule, which keeps V8's inline
// caches monomorphic; the generic form made the visitor the slowest stage
// (bench/dsl_parse.ts).
type Node<C> = { children: C };
type Tokens = IToken[] | undefined;
type DeclarationC = { Name: IToken[]; relationDef: Array<Node<RelationDefC>> };
type RelationDefC = {
  directAssignment?: Array<Node<DirectC>>;
  groupFirst?: Array<Node<{ relationDef: Array<Node<RelationDefC>> }>>;
  rewrite?: Array<Node<RewriteC>>;
  partials?: Array<Node<PartialsC>>;
};
type NoDirectC = { operand: Array<Node<OperandC>>; partials?: Array<Node<PartialsC>> };
type OperandC = {
  groupNoDirect?: Array<Node<{ relationDefNoDirect: Array<Node<NoDirectC>> }>>;
  rewrite?: Array<Node<RewriteC>>;
};
type PartialsC = { operand: Array<Node<OperandC>>; OR_OP?: Tokens; AND_OP?: Tokens };
type RewriteC = { Name: IToken[] };
type DirectC = { typeRestriction: Array<Node<RestrictionC>> };
type RestrictionC = { Name: IToken[]; IDENTIFIER?: Tokens; STAR?: Tokens };

/** First operand (direct, group or rewrite) plus the operator tail. */
function buildRelationDef(node: Node<RelationDefC>, direct: RelationReference[], source: SourceIndex | undefined): Userset {
  const c = node.children;
  let first: Userset;
  if (c.directAssignment !== undefined) {
    const restrictions = (c.directAssignment[0] as Node<DirectC>).children.typeRestriction;
    for (let i = 0; i < restrictions.length; i++) direct.push(buildRestriction(restrictions[i] as Node<RestrictionC>, source));
    first = { this: {} };
  } else if (c.groupFirst !== undefined) {
    first = buildRelationDef((c.groupFirst[0] as Node<{ relationDef: Array<Node<RelationDefC>> }>).children.relationDef[0] as Node<RelationDefC>, direct, source);
  } else {
    first = buildRewrite((c.rewrite as Array<Node<RewriteC>>)[0] as Node<RewriteC>, source);
  }
  return c.partials === undefined ? first : applyPartials(first, c.partials[0] as Node<PartialsC>, source);
}

function buildNoDirect(node: Node<NoDirectC>, source: SourceIndex | undefined): Userset {
  const c = node.children;
  const first = buildOperand(c.operand[0] as Node<OperandC>, source);
  return c.partials === undefined ? first : applyPartials(first, c.partials[0] as Node<PartialsC>, source);
}

function buildOperand(node: Node<OperandC>, source: SourceIndex | undefined): Userset {
  const c = node.children;
  if (c.groupNoDirect !== undefined) {
    const g = c.groupNoDirect[0] as Node<{ relationDefNoDirect: Array<Node<NoDirectC>> }>;
    return buildNoDirect(g.children.relationDefNoDirect[0] as Node<NoDirectC>, source);
  }
  return buildRewrite((c.rewrite as Array<Node<RewriteC>>)[0] as Node<RewriteC>, source);
}

function applyPartials(first: Userset, node: Node<PartialsC>, source: SourceIndex | undefined): Userset {
  const c = node.children;
  const list: Userset[] = [first];
  for (let i = 0; i < c.operand.length; i++) list.push(buildOperand(c.operand[i] as Node<OperandC>, source));
  if (c.OR_OP !== undefined) return { union: { child: list } };
  if (c.AND_OP !== undefined) return { intersection: { child: list } };
  return { difference: { base: first, subtract: list[1] as Userset } };
}

function buildRewrite(node: Node<RewriteC>, source: SourceIndex | undefined): Userset {
  const names = node.children.Name;
  const target = names[0] as IToken;
  const ts = names[1];
  if (ts === undefined) {
    const u: Userset = { computedUserset: { relation: target.image } };
    source?.node.set(u, target);
    return u;
  }
  const u: Userset = {
    tupleToUserset: { computedUserset: { relation: target.image }, tupleset: { relation: ts.image } },
  };
  source?.node.set(u, target);
  source?.tupleset.set(u, ts);
  return u;
}

function buildRestriction(node: Node<RestrictionC>, source: SourceIndex | undefined): RelationReference {
  const c = node.children;
  const typeTok = c.Name[0] as IToken;
  const ref: RelationReference = { type: typeTok.image };
  const cond = c.IDENTIFIER?.[0];
  if (cond !== undefined) {
    ref.condition = cond.image;
    source?.restrictionCondition.set(ref, cond);
  }
  let end: IToken | undefined;
  const relTok = c.Name[1];
  if (relTok !== undefined) {
    ref.relation = relTok.image;
    end = relTok;
  }
  if (c.STAR !== undefined) {
    ref.wildcard = {};
    end = c.STAR[0];
  }
  source?.restrictionType.set(ref, typeTok);
  if (end !== undefined) source?.restrictionEnd.set(ref, end);
  return ref;
}
