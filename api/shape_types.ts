/**
 * The types of the shape vocabulary (`shape.ts` builds and checks values of
 * them; `shape_compiled.ts` compiles them): kept apart so that both can use
 * them without importing each other.
 */

/** Any JSON value (the `json` kind, e.g. an FGA condition `context`). */
export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

export interface Documented {
  readonly doc?: string;
}

export interface StringShape extends Documented {
  readonly kind: 'string';
  readonly minLength?: number;
  /** Default (inputs): {@link DEFAULT_MAX_LENGTH}. */
  readonly maxLength?: number;
  /**
   * Multi-line free text (a DSL, an email template): tab, line feed and
   * carriage return are allowed. Every other input string is one line: no
   * control character at all (see {@link validate}).
   */
  readonly text?: boolean;
}
export interface IntShape extends Documented {
  readonly kind: 'int';
  readonly min?: number;
  readonly max?: number;
}
export interface FloatShape extends Documented {
  readonly kind: 'float';
}
export interface BoolShape extends Documented {
  readonly kind: 'bool';
}
export interface EnumShape<V extends string = string> extends Documented {
  readonly kind: 'enum';
  /** Name of the enumeration (GraphQL enum type, docs). */
  readonly name: string;
  readonly values: readonly V[];
}
export interface JsonShape extends Documented {
  readonly kind: 'json';
}
export interface MapShape extends Documented {
  readonly kind: 'map';
}
export interface ListShape<I extends Shape = Shape> extends Documented {
  readonly kind: 'list';
  readonly item: I;
  readonly minItems?: number;
  readonly maxItems?: number;
}
export interface OptionalShape<I extends Shape = Shape> {
  readonly kind: 'optional';
  readonly inner: I;
}
export type Fields = Readonly<Record<string, Shape | OptionalShape>>;

/**
 * How an object appears in the GraphQL schema where that differs from the
 * shape: the type name and field types Authorizer's schema gives it, so that
 * Authorizer's clients (its SDKs, code generators fed by introspection) find
 * the names and nullability they were written against. REST, gRPC and the
 * validator read the shape only; this note changes nothing there.
 */
export interface GraphqlNote {
  /** The GraphQL type name (default: the shape name; an input adds `Input` unless it ends in `Request` or `Input`). */
  readonly name?: string;
  /** Fields typed nullable though the shape always has them (`{except}`: every field but these). */
  readonly nullable?: readonly string[] | { readonly except: readonly string[] };
  /** Fields typed non-null (`!`) though optional in the shape (on an input: GraphQL refuses a request without them). */
  readonly nonNull?: readonly string[];
  /** List fields whose items are typed nullable (`[String]`). */
  readonly nullableItems?: readonly string[];
  /** Fields of another scalar: `ID` for an id string, `Map` for a JSON object. */
  readonly scalars?: Readonly<Record<string, 'ID' | 'Map'>>;
}

export interface ObjectShape<F extends Fields = Fields> extends Documented {
  readonly kind: 'object';
  /** PascalCase type name used by GraphQL, protobuf and the docs. */
  readonly name: string;
  readonly fields: F;
  /** GraphQL-only naming and nullability (see {@link GraphqlNote}). */
  readonly graphql?: GraphqlNote;
}

/** Every non-optional shape. */
export type Shape =
  | StringShape
  | IntShape
  | FloatShape
  | BoolShape
  | EnumShape
  | JsonShape
  | MapShape
  | ListShape
  | ObjectShape;

type Simplify<T> = { [K in keyof T]: T[K] } & {};

type RequiredKeys<F extends Fields> = { [K in keyof F]: F[K] extends OptionalShape ? never : K }[keyof F];
type OptionalKeys<F extends Fields> = { [K in keyof F]: F[K] extends OptionalShape ? K : never }[keyof F];

/** The TypeScript type of a value of shape `S`. */
export type Infer<S> = S extends StringShape
  ? string
  : S extends IntShape | FloatShape
    ? number
    : S extends BoolShape
      ? boolean
      : S extends EnumShape<infer V>
        ? V
        : S extends JsonShape
          ? JsonValue
          : S extends MapShape
            ? Record<string, string>
            : S extends ListShape<infer I>
              ? Infer<I>[]
              : S extends ObjectShape<infer F>
                ? Simplify<
                    { [K in RequiredKeys<F>]: Infer<F[K]> } & {
                      [K in OptionalKeys<F>]?: F[K] extends OptionalShape<infer I> ? Infer<I> | undefined : never;
                    }
                  >
                : never;

/**
 * The type a handler may return for shape `S`: like {@link Infer}, but optional
 * fields may also be `null`, extra fields are allowed (they are dropped by
 * the encoder, so a handler can never leak a field the shape does not declare),
 * and `json` fields take any JSON-serialisable value.
 */
export type Output<S> = S extends ObjectShape<infer F>
  ? { [K in RequiredKeys<F>]: Output<F[K]> } & {
      [K in OptionalKeys<F>]?: F[K] extends OptionalShape<infer I> ? Output<I> | null | undefined : never;
    }
  : S extends ListShape<infer I>
    ? readonly Output<I>[]
    : S extends JsonShape
      ? unknown
      : Infer<S>;

