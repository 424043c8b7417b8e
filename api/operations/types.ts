/**
 * The row type of the operations table. Each API operation is declared once,
 * as one {@link Operation}; the REST routes, the GraphQL schema, the gRPC
 * services, the `.proto`, input validation, the clients' methods and
 * `docs/api.md` are all derived from the rows. A row is the contract only:
 * the function that answers it lives in `server/handlers/`, bound by the
 * row's name, so the client and the docs load no server code.
 */
import type { ObjectShape } from '../shape.ts';

/** The wire protocols that serve operations. */
export type Protocol = 'graphql' | 'rest' | 'grpc';

/** Who may call an operation. `user` rows also accept a super-admin. */
export type OperationAuth = 'public' | 'user' | 'super_admin';

export interface Operation<N extends string = string, I extends ObjectShape = ObjectShape, O extends ObjectShape = ObjectShape, A extends boolean = boolean, S extends boolean = boolean> {
  /** The spec's snake_case wire name, e.g. `check_permissions`. Unique. */
  readonly name: N;
  readonly kind: 'query' | 'mutation';
  readonly auth: OperationAuth;
  /**
   * An administrative operation: its GraphQL field is `_<name>` and it lives on
   * the `LatchkeyAdmin` gRPC service.
   */
  readonly admin: A;
  /** Request fields (a flat object). Use `EMPTY` for none. */
  readonly input: I;
  /** Response object, returned bare on every protocol. */
  readonly output: O;
  /** REST route; required when `protocols` has `rest`. Paths start with `/v1/`. */
  readonly rest?: { readonly method: 'GET' | 'POST'; readonly path: string };
  /** gRPC method (PascalCase); required when `protocols` has `grpc`. */
  readonly grpc?: { readonly method: string };
  /** GraphQL field name; defaults to `name`, or `_<name>` for admin rows. */
  readonly graphql?: string;
  /**
   * The GraphQL argument that carries the request fields: `params` and
   * non-null (`params: SignUpRequest!`) unless said otherwise, as in
   * Authorizer's schema (`_revoke_access(param: …)`, `session(params: …)`).
   */
  readonly graphqlArg?: { readonly name?: string; readonly nullable?: boolean };
  /** The protocols that serve this operation. */
  readonly protocols: readonly Protocol[];
  /**
   * A server-streamed operation: its handler answers with an async iterable,
   * each item one `output` message, until the client goes away. On gRPC a
   * server-streaming method (`returns (stream Output)`); on REST a `GET`
   * answered as Server-Sent Events (`text/event-stream`, one `data:` line of
   * the message's JSON per event, `id:` the message's `token` field when it
   * has one), its input fields read from the query string. Not served over
   * GraphQL, and not a method of the client libraries (they make
   * request/response calls only).
   */
  readonly stream?: S;
  /** One line for the docs. */
  readonly doc: string;
}

/** Any row of the table (its name and shapes erased to the common type). */
export type AnyOperation = Operation<string, ObjectShape, ObjectShape>;

export const ALL_PROTOCOLS: readonly Protocol[] = Object.freeze(['graphql', 'rest', 'grpc'] as const);

/** Declares a row, keeping its name and shapes in its type (the handler's input and output types come from them). */
export function defineOperation<const N extends string, const I extends ObjectShape, const O extends ObjectShape, const A extends boolean, const S extends boolean = false>(op: Operation<N, I, O, A, S>): Operation<N, I, O, A, S> {
  return Object.freeze(op);
}

/** The GraphQL field name of a row. */
export function graphqlName(op: AnyOperation): string {
  return op.graphql ?? (op.admin ? `_${op.name}` : op.name);
}

/** The GraphQL argument of a row that has request fields: its name and whether it may be omitted. */
export function graphqlArg(op: AnyOperation): { name: string; nullable: boolean } {
  return { name: op.graphqlArg?.name ?? 'params', nullable: op.graphqlArg?.nullable ?? false };
}

/** The gRPC service of a row (`Latchkey` or `LatchkeyAdmin`). */
export function grpcService(op: AnyOperation): 'Latchkey' | 'LatchkeyAdmin' {
  return op.admin ? 'LatchkeyAdmin' : 'Latchkey';
}

/**
 * Checks the table's invariants: unique names, REST routes, GraphQL fields and
 * gRPC methods; routes and methods present exactly for the protocols served.
 * Throws on the first violation (a programming error caught by the tests).
 */
export function checkTable<T extends AnyOperation>(ops: readonly T[]): readonly T[] {
  const seen = new Set<string>();
  const claim = (key: string): void => {
    if (seen.has(key)) throw new Error(`operations table: duplicate ${key}`);
    seen.add(key);
  };
  for (const op of ops) {
    if (!/^[a-z][a-z0-9_]*$/.test(op.name)) throw new Error(`operations table: ${op.name} is not snake_case`);
    if (op.stream === true && op.protocols.includes('graphql')) throw new Error(`operations table: streamed ${op.name} cannot serve graphql`);
    claim(`name ${op.name}`);
    if (op.protocols.includes('graphql')) claim(`graphql ${graphqlName(op)}`);
    if (op.protocols.includes('rest')) {
      if (!op.rest) throw new Error(`operations table: ${op.name} serves rest but has no route`);
      if (!op.rest.path.startsWith('/v1/')) throw new Error(`operations table: ${op.name} path must start with /v1/`);
      claim(`rest ${op.rest.method} ${op.rest.path}`);
      if (op.rest.method === 'GET' && Object.keys(op.input.fields).length > 0 && op.stream !== true)
        throw new Error(`operations table: GET ${op.rest.path} cannot take a request body`);
      if (op.stream === true && op.rest.method !== 'GET') throw new Error(`operations table: streamed ${op.name} must be a GET (Server-Sent Events)`);
    } else if (op.rest) throw new Error(`operations table: ${op.name} has a route but does not serve rest`);
    if (op.protocols.includes('grpc')) {
      if (!op.grpc) throw new Error(`operations table: ${op.name} serves grpc but has no method`);
      if (!/^[A-Z][A-Za-z0-9]*$/.test(op.grpc.method)) throw new Error(`operations table: ${op.grpc.method} is not PascalCase`);
      claim(`grpc ${grpcService(op)}.${op.grpc.method}`);
    } else if (op.grpc) throw new Error(`operations table: ${op.name} has a gRPC method but does not serve grpc`);
  }
  return Object.freeze([...ops]);
}
