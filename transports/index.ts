/**
 * The protocol adapters: HTTP (REST, GraphQL, OpenFGA's API and the endpoints
 * of `web/`, all mounted by `http/app.ts`) and gRPC. Each iterates the
 * operations table and calls the pipeline; none holds business logic.
 */
export { createHttpApp } from './http/app.ts';
export { CapturingRequest, collectBody, type PendingBody } from './http/body_capture.ts';
export { endInBatch } from './http/end_batch.ts';
export { loadPackageDefinition } from './grpc/package_definition.ts';
export type { GrpcServerHandle, GrpcServerOptions } from './grpc/server.ts';

/**
 * The gRPC adapter (`createGrpcServer`, `bindGrpc`, `shutdownGrpc`), imported when a server starts gRPC: grpc-js,
 * protobufjs and the proto loader are a fifth of a start's CPU, and the server opens its HTTP listener before it
 * loads them (docs/performance.md, "Server footprint"). Each library is loaded in a step of its own, with
 * `between()` awaited after each, so that requests arriving meanwhile wait for one step rather than for all.
 */
export async function loadGrpcAdapter(between: () => Promise<void> = async () => undefined): Promise<typeof import('./grpc/server.ts')> {
  await import('@grpc/grpc-js');
  await between();
  await import('@grpc/proto-loader');
  await between();
  return import('./grpc/server.ts');
}
export { socialLoginOf, SOCIAL_STATE_COOKIE } from './web/social.ts';
export { webRoutes } from './web/routes.ts';
