/**
 * The transports' public surface: the server, the operations table and the
 * pieces clients and tests drive it with.
 */
export { startServer, type RunningServer, type StartOptions } from './server.ts';
export { main, serve, type CliIo } from './cli.ts';
export { parseFlags, helpText, FLAGS, ADMIN_SECRET_FATAL, type Config, type FlagName } from '../server/flags.ts';
export { OPERATIONS, ALL_PROTOCOLS, defineOperation, graphqlName, grpcService, META, metaFromConfig, DEPRECATED_MESSAGES } from '../api/operations/index.ts';
export type { AnyOperation, Operation, OperationAuth } from '../api/operations/index.ts';
export { s, EMPTY, MESSAGE, validate, encodeOutput, type Infer, type Output, type Shape, type ObjectShape, type JsonValue } from '../api/shape.ts';
export { CookieSink, ANONYMOUS, type Principal, type Credentials, type RequestContext, type Protocol, type Clock, type CookieOptions } from '../server/context.ts';
export type { Authenticator, AuthenticationInfo } from '../server/authenticate.ts';
export { UNAUTHORIZED_MESSAGE, unauthenticated } from '../server/authenticate.ts';
export type { Services } from '../server/compose/services.ts';
export type { Logger } from '../server/logger.ts';
export { graphqlDocument, selectionSet } from '../transports/graphql/schema.ts';
export { generateProto, PROTO_PACKAGE } from '../api/proto.ts';
export { toWire, fromWire, LOADER_OPTIONS, ERROR_NAMES } from '../api/grpc_codec.ts';
export { loadPackageDefinition } from '../transports/grpc/server.ts';
export { socialLoginOf, SOCIAL_STATE_COOKIE } from '../transports/web/social.ts';
