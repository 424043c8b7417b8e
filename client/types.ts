/**
 * The client libraries' types: options, and the method signatures derived
 * from the operations table (`operations.ts`, generated) — one method per
 * operation, its snake_case name in camelCase (`fga_get_model` →
 * `fgaGetModel`), taking the request fields and resolving to the response
 * object, both typed from the row's shapes.
 */
import type { Infer, JsonValue, OperationRow } from '../api/index.ts';

/** The wire protocol a client speaks. */
export type ClientProtocol = 'graphql' | 'rest' | 'grpc';

/** Options of the user clients (spec, Client library behavior 1–3). */
export interface ClientOptions {
  /** The client id of the service instance (sent to `/oauth/token` and `/oauth/revoke`). */
  client_id: string;
  /** The service address, e.g. `https://auth.example.com` (a path prefix is kept; trailing slashes are dropped). */
  service_url: string;
  /** `graphql` (default), `rest` or `grpc`. */
  protocol?: ClientProtocol;
  /** gRPC target `host:port`; defaults to the host of `service_url` with port 9091. */
  grpc_endpoint?: string;
}

/** Options of the admin clients (spec, Client library behavior 4). */
export interface AdminClientOptions {
  /** The service address, e.g. `https://auth.example.com` (no trailing slash). */
  service_url: string;
  /** The admin secret; sent on every call as `x-service-admin-secret` (gRPC: metadata of that name). */
  admin_secret: string;
  /** Extra headers (gRPC: metadata) sent on every admin request. */
  extra_headers?: Record<string, string>;
  /** `graphql` (default), `rest` or `grpc`. */
  protocol?: ClientProtocol;
  /** gRPC target `host:port`; defaults to the host of `service_url` with port 9091. */
  grpc_endpoint?: string;
}

/** One row of the clients' copy of the operations table. */
/** An operation as the clients call it: a row of the contract (`api/`), which loads no server code. */
export type ClientOperation = OperationRow;

/** `fga_get_model` → `fgaGetModel`. */
export type CamelCase<S extends string> = S extends `${infer H}_${infer T}` ? `${H}${Capitalize<CamelCase<T>>}` : S;

/** The runtime form of {@link CamelCase}. */
export function camelCase(name: string): string {
  return name.replace(/_([a-z0-9])/g, (_m, c: string) => c.toUpperCase());
}

/**
 * The type of a response value of shape `S`: as the server sends it on every
 * protocol, optional fields present with `null` when they have no value.
 */
export type Returned<S> = S extends { readonly kind: 'optional'; readonly inner: infer I }
  ? Returned<I> | null
  : S extends { readonly kind: 'string' }
    ? string
    : S extends { readonly kind: 'int' | 'float' }
      ? number
      : S extends { readonly kind: 'bool' }
        ? boolean
        : S extends { readonly kind: 'enum'; readonly values: readonly (infer V)[] }
          ? V
          : S extends { readonly kind: 'json' }
            ? JsonValue
            : S extends { readonly kind: 'map' }
              ? Record<string, string>
              : S extends { readonly kind: 'list'; readonly item: infer I }
                ? Returned<I>[]
                : S extends { readonly kind: 'object'; readonly fields: infer F }
                  ? { -readonly [K in keyof F]: Returned<F[K]> }
                  : never;

/** The request type of an operation. */
export type RequestOf<O extends ClientOperation> = Infer<O['input']>;
/** The response type of an operation. */
export type ResponseOf<O extends ClientOperation> = Returned<O['output']>;

type AsyncMethod<O extends ClientOperation> = {} extends RequestOf<O>
  ? (input?: RequestOf<O>) => Promise<ResponseOf<O>>
  : (input: RequestOf<O>) => Promise<ResponseOf<O>>;

type SyncMethod<O extends ClientOperation> = {} extends RequestOf<O>
  ? (input?: RequestOf<O>) => ResponseOf<O>
  : (input: RequestOf<O>) => ResponseOf<O>;

// Streamed rows (`stream`) are no request/response method: the clients leave them out.
type UserOperation = Exclude<Extract<ClientOperation, { readonly admin: false }>, { readonly stream?: true }>;
type AdminOperation = Exclude<Extract<ClientOperation, { readonly admin: true }>, { readonly stream?: true }>;

/** The user clients' operation methods (every non-admin row). */
export type UserMethods = { [O in UserOperation as CamelCase<O['name']>]: AsyncMethod<O> };
/** The admin clients' operation methods (every admin row). */
export type AdminMethods = { [O in AdminOperation as CamelCase<O['name']>]: AsyncMethod<O> };
/** {@link UserMethods}, blocking. */
export type SyncUserMethods = { [O in UserOperation as CamelCase<O['name']>]: SyncMethod<O> };
/** {@link AdminMethods}, blocking. */
export type SyncAdminMethods = { [O in AdminOperation as CamelCase<O['name']>]: SyncMethod<O> };

/** Request of `POST /oauth/token` (RFC 6749 §4.1.3, §6). */
export interface TokenRequest {
  /** `authorization_code` (default) or `refresh_token`. */
  grant_type?: 'authorization_code' | 'refresh_token';
  code?: string;
  code_verifier?: string;
  redirect_uri?: string;
  refresh_token?: string;
}

/** Response of `POST /oauth/token`. */
export interface TokenResponse {
  access_token: string;
  token_type: string;
  expires_in?: number;
  id_token?: string;
  refresh_token?: string;
  scope?: string;
  [field: string]: unknown;
}

/** Request of `POST /oauth/revoke` (RFC 7009). */
export interface RevokeTokenRequest {
  refresh_token: string;
}
