/**
 * OpenFGA's JSON authorization model, as produced by the DSL transformer and
 * accepted by OpenFGA's `WriteAuthorizationModel` API. Field names and casing
 * are OpenFGA's wire names (`type_definitions`, `computedUserset`, ...), so a
 * model exported from OpenFGA can be used unchanged.
 *
 * These types are shared by `dsl/` (which produces them) and `engine/` (which
 * evaluates them); they carry no behaviour.
 */

/** `{ object?, relation }` as in OpenFGA's `ObjectRelation`. */
export interface ObjectRelation {
  object?: string;
  relation?: string;
}

/** The direct-assignment rewrite (`[user, group#member]` in the DSL). */
export interface ThisUserset {
  this: Record<string, never>;
}
/** `define viewer: editor` */
export interface ComputedUserset {
  computedUserset: ObjectRelation;
}
/** `define viewer: viewer from parent` */
export interface TupleToUserset {
  tupleToUserset: { tupleset: ObjectRelation; computedUserset: ObjectRelation };
}
/** `a or b or c` */
export interface UnionUserset {
  union: { child: Userset[] };
}
/** `a and b` */
export interface IntersectionUserset {
  intersection: { child: Userset[] };
}
/** `a but not b` */
export interface DifferenceUserset {
  difference: { base: Userset; subtract: Userset };
}

/** A relation rewrite. Exactly one of the keys is present. */
export type Userset =
  | ThisUserset
  | ComputedUserset
  | TupleToUserset
  | UnionUserset
  | IntersectionUserset
  | DifferenceUserset;

/** One entry of a directly-related-user-types list: `user`, `user:*`, `group#member`, `user with cond`. */
export interface RelationReference {
  type: string;
  relation?: string;
  wildcard?: Record<string, never>;
  condition?: string;
}

/** Where a definition came from, for modular models (schema 1.2). */
export interface SourceInfo {
  file?: string;
}

export interface RelationMetadata {
  directly_related_user_types?: RelationReference[];
  module?: string;
  source_info?: SourceInfo;
}

export interface TypeMetadata {
  relations?: Record<string, RelationMetadata> | null;
  module?: string;
  source_info?: SourceInfo;
}

export interface TypeDefinition {
  type: string;
  relations?: Record<string, Userset>;
  metadata?: TypeMetadata | null;
}

/** CEL parameter type names, as in OpenFGA's `ConditionParamTypeRef.TypeName`. */
export type ConditionTypeName =
  | 'TYPE_NAME_UNSPECIFIED'
  | 'TYPE_NAME_ANY'
  | 'TYPE_NAME_BOOL'
  | 'TYPE_NAME_STRING'
  | 'TYPE_NAME_INT'
  | 'TYPE_NAME_UINT'
  | 'TYPE_NAME_DOUBLE'
  | 'TYPE_NAME_DURATION'
  | 'TYPE_NAME_TIMESTAMP'
  | 'TYPE_NAME_MAP'
  | 'TYPE_NAME_LIST'
  | 'TYPE_NAME_IPADDRESS';

export interface ConditionParamTypeRef {
  type_name: ConditionTypeName;
  generic_types?: ConditionParamTypeRef[];
}

export interface ConditionMetadata {
  module?: string;
  source_info?: SourceInfo;
}

export interface Condition {
  name: string;
  expression: string;
  parameters?: Record<string, ConditionParamTypeRef>;
  metadata?: ConditionMetadata;
}

/** An OpenFGA authorization model (without its id). */
export interface AuthorizationModel {
  schema_version: string;
  type_definitions?: TypeDefinition[];
  conditions?: Record<string, Condition>;
}

/** A stored, immutable model version. */
export interface StoredAuthorizationModel extends AuthorizationModel {
  /** ULID of this version; later versions sort after earlier ones. */
  id: string;
}
