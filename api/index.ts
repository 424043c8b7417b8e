/**
 * The wire contract, with no server in it: the shape vocabulary (validation
 * and encoding), the operations table (rows without handlers), the gRPC JSON
 * codec and `.proto` generator, and the GraphQL document of each row. The
 * server implements it (`server/handlers/`), the transports serve it and the
 * client is built from it; it imports nothing but the error class.
 */
export * from './shape.ts';
export * from './operations/index.ts';
export { graphqlDocument, inputTypeName, outputTypeName, selectionSet } from './graphql_document.ts';
export { LOADER_OPTIONS, toWire, toWireEncoded, carriesJson, encodeJsonValue, fromWire, ERROR_NAMES } from './grpc_codec.ts';
export { PROTO_PACKAGE, generateProto, type GenerateProtoOptions } from './proto.ts';
