/**
 * The protocol adapters: HTTP (REST, GraphQL, OpenFGA's API and the endpoints
 * of `web/`, all mounted by `http/app.ts`) and gRPC. Each iterates the
 * operations table and calls the pipeline; none holds business logic.
 */
export { createHttpApp } from './http/app.ts';
export { bindGrpc, createGrpcServer, shutdownGrpc, loadPackageDefinition } from './grpc/server.ts';
export { socialLoginOf, SOCIAL_STATE_COOKIE } from './web/social.ts';
export { webRoutes } from './web/routes.ts';
