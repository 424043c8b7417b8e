/**
 * The transports' public surface: the server, the operations table and the
 * pieces clients and tests drive it with.
 */
export { startServer, type RunningServer, type StartOptions } from './server.ts';
export { main, serve, type CliIo } from './cli.ts';
export { parseFlags, helpText, FLAGS, ADMIN_SECRET_FATAL, type Config, type FlagName } from './flags.ts';
export { OPERATIONS, ALL_PROTOCOLS, defineOperation, graphqlName, grpcService, META, metaFromConfig, DEPRECATED_MESSAGES } from './operations/index.ts';
export type { AnyOperation, Operation, OperationAuth } from './operations/index.ts';
export { s, EMPTY, MESSAGE, validate, encodeOutput, type Infer, type Output, type Shape, type ObjectShape, type JsonValue } from './shape.ts';
export { CookieSink, ANONYMOUS, type Principal, type Credentials, type RequestContext, type Protocol, type Clock, type CookieOptions } from './context.ts';
export type { Authenticator, AuthenticationInfo } from './authenticate.ts';
export { UNAUTHORIZED_MESSAGE, unauthenticated } from './authenticate.ts';
export type { Services } from './services.ts';
export type { Logger } from './logger.ts';
export { graphqlDocument, selectionSet } from './graphql/schema.ts';
export { generateProto, PROTO_PACKAGE } from './grpc/proto.ts';
export { toWire, fromWire, LOADER_OPTIONS, ERROR_NAMES } from './grpc/codec.ts';
export { loadPackageDefinition } from './grpc/server.ts';
export { socialLoginOf, SOCIAL_STATE_COOKIE } from './operations/social.ts';
