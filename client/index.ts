/**
 * The client libraries (`@latchkey/client`): a user client and an admin
 * client, each asynchronous (Promises) and synchronous (blocking), over
 * GraphQL (default), REST or gRPC. Their methods come from the operations
 * table, one per operation (snake_case name in camelCase). Errors are
 * {@link LatchkeyError}s carrying the service's `code`, `message` and
 * `reason`, the same on all three protocols. See docs/clients.md.
 */
export { LatchkeyClient, LatchkeyAdminClient } from './client.ts';
export { LatchkeySyncClient, LatchkeySyncAdminClient } from './sync_client.ts';
export { PROTOCOL_SUPPORT } from './caller.ts';
export { DEFAULT_GRPC_PORT } from './options.ts';
export { OPERATIONS as CLIENT_OPERATIONS } from '../api/index.ts';
export { LatchkeyError, type ErrorCode } from '../engine/errors.ts';
export type {
  AdminClientOptions,
  AdminMethods,
  ClientOperation,
  ClientOptions,
  ClientProtocol,
  RequestOf,
  ResponseOf,
  Returned,
  RevokeTokenRequest,
  SyncAdminMethods,
  SyncUserMethods,
  TokenRequest,
  TokenResponse,
  UserMethods,
} from './types.ts';
