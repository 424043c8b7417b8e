/**
 * The GraphQL schema, derived from the operations table once at startup.
 *
 * Conventions: field names are the rows' snake_case names (admin rows `_`-prefixed);
 * an operation with request fields takes one argument (`params`, non-null,
 * unless the row's `graphqlArg` says otherwise); output types are the shapes'
 * names; input object types take the shape name, plus `Input` unless it ends
 * in `Request`/`Input`; a shape's `graphql` note overrides the type name and
 * field nullability, so that the schema speaks Authorizer 2.3.0's names
 * (test/features/authorizer_compat/authorizer_schema.test.ts compares the two). A required
 * field is non-null on input as on output. Errors carry `extensions.code`
 * (and `reason`) with the same snake_case code REST returns.
 */
import {
  GraphQLBoolean,
  GraphQLEnumType,
  GraphQLError,
  GraphQLFloat,
  GraphQLID,
  GraphQLInputObjectType,
  GraphQLList,
  GraphQLNonNull,
  GraphQLObjectType,
  GraphQLScalarType,
  GraphQLSchema,
  GraphQLString,
  Kind,
  type GraphQLFieldConfig,
  type GraphQLInputType,
  type GraphQLOutputType,
  type ValueNode,
} from 'graphql';
import type { LatchkeyError } from '../../engine/errors.ts';
import type { CallInfo, Pipeline } from '../../server/index.ts';
import { graphqlArg, graphqlName, inputTypeName, outputTypeName, type AnyOperation } from '../../api/index.ts';
import type { EnumShape, GraphqlNote, ObjectShape, OptionalShape, Shape } from '../../api/index.ts';

/** What each GraphQL request carries into the resolvers. */
export type GraphqlContext = {
  readonly info: CallInfo;
  /** Called after each operation so cookies reach the response. */
  readonly flushCookies: () => void;
};

function literalToJson(node: ValueNode): unknown {
  switch (node.kind) {
    case Kind.STRING:
    case Kind.ENUM:
      return node.value;
    case Kind.BOOLEAN:
      return node.value;
    case Kind.INT:
    case Kind.FLOAT:
      return Number(node.value);
    case Kind.NULL:
      return null;
    case Kind.LIST:
      return node.values.map(literalToJson);
    case Kind.OBJECT:
      return Object.fromEntries(node.fields.map((f) => [f.name.value, literalToJson(f.value)]));
    default:
      throw new GraphQLError('variables are not allowed inside JSON literals');
  }
}

/** Any JSON value. */
const JSON_SCALAR = new GraphQLScalarType({
  name: 'JSON',
  description: 'Any JSON value',
  serialize: (v) => v,
  parseValue: (v) => v,
  parseLiteral: (node) => literalToJson(node),
});

/** A JSON object (Authorizer's `Map`): headers (string values), app_data, token claims. */
const MAP_SCALAR = new GraphQLScalarType({
  name: 'Map',
  description: 'A JSON object (string values where the field says so)',
  serialize: (v) => v,
  parseValue: (v) => v,
  parseLiteral: (node) => literalToJson(node),
});

/** 64-bit-safe integers as JSON numbers (GraphQL's Int is 32-bit). */
const INT64_SCALAR = new GraphQLScalarType({
  name: 'Int64',
  description: 'An integer (up to 2^53), as a JSON number',
  serialize: (v) => v,
  parseValue: (v) => {
    if (typeof v !== 'number' || !Number.isSafeInteger(v)) throw new GraphQLError('Int64 must be an integer');
    return v;
  },
  parseLiteral: (node) => {
    if (node.kind !== Kind.INT) throw new GraphQLError('Int64 must be an integer');
    return Number(node.value);
  },
});

const ENUM_VALUE = /^[_A-Za-z][_0-9A-Za-z]*$/;

/** Whether field `key` of an object is non-null in GraphQL: the shape's required-ness, unless its note says otherwise. */
function nonNullField(note: GraphqlNote | undefined, key: string, field: Shape | OptionalShape): boolean {
  if (note?.nonNull?.includes(key)) return true;
  const nullable = note?.nullable;
  if (nullable !== undefined && (Array.isArray(nullable) ? nullable.includes(key) : !(nullable as { except: readonly string[] }).except.includes(key))) return false;
  return field.kind !== 'optional';
}

const NAMED_SCALARS = { ID: GraphQLID, Map: MAP_SCALAR } as const;

/**
 * Two shapes may take one GraphQL name (Authorizer's `WebhookRequest` serves
 * `_webhook` and `_delete_webhook`): then they must have the same fields.
 */
function sameFields(name: string, a: ObjectShape, b: ObjectShape): void {
  const ka = Object.keys(a.fields).join(',');
  const kb = Object.keys(b.fields).join(',');
  if (ka !== kb) throw new Error(`GraphQL type ${name} is given to shapes ${a.name} and ${b.name} with different fields`);
}

export class GraphqlTypes {
  readonly #outputs = new Map<string, { shape: ObjectShape; type: GraphQLObjectType }>();
  readonly #inputs = new Map<string, { shape: ObjectShape; type: GraphQLInputObjectType }>();
  readonly #enums = new Map<string, GraphQLEnumType>();

  #enum(sh: EnumShape): GraphQLEnumType | typeof GraphQLString {
    if (!sh.values.every((v) => ENUM_VALUE.test(v))) return GraphQLString;
    let t = this.#enums.get(sh.name);
    if (!t) {
      t = new GraphQLEnumType({
        name: sh.name,
        ...(sh.doc ? { description: sh.doc } : {}),
        values: Object.fromEntries(sh.values.map((v) => [v, { value: v }])),
      });
      this.#enums.set(sh.name, t);
    }
    return t;
  }

  /** The GraphQL type of a leaf shape: the same on input and output. */
  #leaf(sh: Extract<Shape, { kind: 'string' | 'int' | 'float' | 'bool' | 'enum' | 'json' | 'map' }>): GraphQLScalarType | GraphQLEnumType {
    switch (sh.kind) {
      case 'string':
        return GraphQLString;
      case 'int':
        return INT64_SCALAR;
      case 'float':
        return GraphQLFloat;
      case 'bool':
        return GraphQLBoolean;
      case 'enum':
        return this.#enum(sh);
      case 'json':
        return JSON_SCALAR;
      case 'map':
        return MAP_SCALAR;
    }
  }

  output(sh: Shape | OptionalShape): GraphQLOutputType {
    if (sh.kind === 'optional') return this.#nullableOutput(sh.inner);
    return new GraphQLNonNull(this.#nullableOutput(sh));
  }

  /** The type of field `key` of an output object, after the object's GraphQL note. */
  #outputField(note: GraphqlNote | undefined, key: string, f: Shape | OptionalShape): GraphQLOutputType {
    const inner = f.kind === 'optional' ? f.inner : f;
    let t: GraphQLOutputType;
    const scalar = note?.scalars?.[key];
    if (scalar !== undefined) t = NAMED_SCALARS[scalar];
    else if (inner.kind === 'list') {
      const item = this.#nullableOutput(inner.item);
      t = new GraphQLList(note?.nullableItems?.includes(key) ? item : new GraphQLNonNull(item));
    } else t = this.#nullableOutput(inner);
    return nonNullField(note, key, f) ? new GraphQLNonNull(t) : t;
  }

  #nullableOutput(sh: Shape): GraphQLOutputType {
    switch (sh.kind) {
      case 'string':
      case 'int':
      case 'float':
      case 'bool':
      case 'enum':
      case 'json':
      case 'map':
        return this.#leaf(sh);
      case 'list':
        return new GraphQLList(this.output(sh.item));
      case 'object': {
        const name = outputTypeName(sh);
        let entry = this.#outputs.get(name);
        if (!entry) {
          const shape = sh;
          const note = shape.graphql;
          entry = {
            shape,
            type: new GraphQLObjectType({
              name,
              ...(shape.doc ? { description: shape.doc } : {}),
              fields: () =>
                Object.fromEntries(
                  Object.entries(shape.fields).map(([k, f]) => [
                    k,
                    { type: this.#outputField(note, k, f), ...(docOf(f) ? { description: docOf(f) as string } : {}) },
                  ]),
                ),
            }),
          };
          this.#outputs.set(name, entry);
        } else if (entry.shape !== sh) sameFields(name, entry.shape, sh);
        return entry.type;
      }
    }
  }

  /**
   * Input types: a required field is non-null (as in Authorizer's schema,
   * which its clients' variable types must match), so GraphQL refuses a
   * request without it before anything runs, as any GraphQL server does; the
   * shared validator still checks every bound after authentication, exactly
   * as on REST and gRPC.
   */
  input(sh: Shape | OptionalShape): GraphQLInputType {
    if (sh.kind === 'optional') return this.nullableInput(sh.inner);
    return new GraphQLNonNull(this.nullableInput(sh));
  }

  /** The type of field `key` of an input object, after the object's GraphQL note. */
  #inputField(note: GraphqlNote | undefined, key: string, f: Shape | OptionalShape): GraphQLInputType {
    const inner = f.kind === 'optional' ? f.inner : f;
    let t: GraphQLInputType;
    const scalar = note?.scalars?.[key];
    if (scalar !== undefined) t = NAMED_SCALARS[scalar];
    else if (inner.kind === 'list') {
      const item = this.nullableInput(inner.item);
      t = new GraphQLList(note?.nullableItems?.includes(key) ? item : new GraphQLNonNull(item));
    } else t = this.nullableInput(inner);
    return nonNullField(note, key, f) ? new GraphQLNonNull(t) : t;
  }

  nullableInput(sh: Shape): GraphQLInputType {
    switch (sh.kind) {
      case 'string':
      case 'int':
      case 'float':
      case 'bool':
      case 'enum':
      case 'json':
      case 'map':
        return this.#leaf(sh);
      case 'list':
        return new GraphQLList(this.input(sh.item));
      case 'object': {
        const name = inputTypeName(sh);
        let entry = this.#inputs.get(name);
        if (!entry) {
          const shape = sh;
          const note = shape.graphql;
          entry = {
            shape,
            type: new GraphQLInputObjectType({
              name,
              ...(shape.doc ? { description: shape.doc } : {}),
              fields: () =>
                Object.fromEntries(
                  Object.entries(shape.fields).map(([k, f]) => {
                    const doc = [docOf(f), f.kind === 'optional' ? '' : 'Required.'].filter(Boolean).join(' ');
                    return [k, { type: this.#inputField(note, k, f), ...(doc ? { description: doc } : {}) }];
                  }),
                ),
            }),
          };
          this.#inputs.set(name, entry);
        } else if (entry.shape !== sh) sameFields(name, entry.shape, sh);
        return entry.type;
      }
    }
  }
}

function docOf(sh: Shape | OptionalShape): string | undefined {
  return sh.kind === 'optional' ? sh.inner.doc : sh.doc;
}

/** Converts an error to the GraphQL form: message plus `extensions.code` (and `reason`). */
export function toGraphqlError(err: LatchkeyError): GraphQLError {
  const extensions: Record<string, unknown> = { code: err.code };
  if (err.reason !== undefined) extensions.reason = err.reason;
  if (err.details !== undefined) extensions.details = err.details;
  return new GraphQLError(err.message, { extensions });
}

/** Builds the schema for `operations` (those that serve GraphQL). */
export function buildSchema(operations: readonly AnyOperation[], pipeline: Pipeline): GraphQLSchema {
  const types = new GraphqlTypes();
  const query: Record<string, GraphQLFieldConfig<unknown, GraphqlContext>> = {};
  const mutation: Record<string, GraphQLFieldConfig<unknown, GraphqlContext>> = {};
  for (const op of operations) {
    if (!op.protocols.includes('graphql')) continue;
    const hasParams = Object.keys(op.input.fields).length > 0;
    const arg = graphqlArg(op);
    const field: GraphQLFieldConfig<unknown, GraphqlContext> = {
      type: types.output(op.output),
      description: op.doc,
      ...(hasParams
        ? { args: { [arg.name]: { type: arg.nullable ? types.nullableInput(op.input) : types.input(op.input) } } }
        : {}),
      resolve: async (_root, args: Record<string, unknown>, gctx) => {
        try {
          return await pipeline.run(op, gctx.info, args[arg.name] ?? {});
        } catch (err) {
          throw toGraphqlError(err as LatchkeyError);
        } finally {
          gctx.flushCookies();
        }
      },
    };
    (op.kind === 'query' ? query : mutation)[graphqlName(op)] = field;
  }
  return new GraphQLSchema({
    query: new GraphQLObjectType({ name: 'Query', fields: query }),
    ...(Object.keys(mutation).length > 0 ? { mutation: new GraphQLObjectType({ name: 'Mutation', fields: mutation }) } : {}),
  });
}

export { graphqlDocument, inputTypeName, outputTypeName, selectionSet } from '../../api/index.ts';
