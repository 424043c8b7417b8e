/**
 * The server package's public surface: `startServer`, the command line, the
 * operations table and the pieces clients and tests drive it with.
 */
export { startServer, type RunningServer, type StartOptions } from './server.ts';
export { main, serve, type CliIo } from './cli.ts';
export { parseFlags, helpText, FLAGS, ADMIN_SECRET_FATAL, type Config, type FlagName } from '../server/index.ts';
export { OPERATIONS, ALL_PROTOCOLS, defineOperation, graphqlName, grpcService, META } from '../api/index.ts';
export { metaFromConfig, DEPRECATED_MESSAGES, defineServedOperation, type ServedOperation } from '../server/index.ts';
export type { AnyOperation, Operation, OperationAuth } from '../api/index.ts';
export { s, EMPTY, MESSAGE, validate, encodeOutput, type Infer, type Output, type Shape, type ObjectShape, type JsonValue } from '../api/index.ts';
export { CookieSink, ANONYMOUS, type Principal, type Credentials, type RequestContext, type Protocol, type Clock, type CookieOptions } from '../server/index.ts';
export type { Authenticator, AuthenticationInfo } from '../server/index.ts';
export { UNAUTHORIZED_MESSAGE, unauthenticated } from '../server/index.ts';
export type { Services } from '../server/index.ts';
export type { Logger } from '../server/index.ts';
export { graphqlDocument, selectionSet } from '../api/index.ts';
export { generateProto, PROTO_PACKAGE } from '../api/index.ts';
export { toWire, fromWire, LOADER_OPTIONS, ERROR_NAMES } from '../api/index.ts';
export { loadPackageDefinition } from '../transports/index.ts';
export { socialLoginOf, SOCIAL_STATE_COOKIE } from '../transports/index.ts';
