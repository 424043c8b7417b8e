/**
 * Server reflection (`grpc.reflection.v1` and `v1alpha`, what grpcurl and
 * other tools ask) registered at start but built on its first call. The
 * reflection library indexes every descriptor of the package twice (once per
 * version) when constructed, and loads protobufjs's descriptor extension: at
 * start that cost about a third of the gRPC adapter's start-up CPU and several
 * MiB of heap that a server which is never reflected on would hold for nothing
 * (docs/performance.md, "Server footprint"). The services are declared here
 * from the library's own `.proto` files (small), and the first stream loads
 * the library and hands itself to the library's handler; until then the
 * stream is not read, so none of its messages is lost.
 */
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';

/** The options the reflection library loads its own `.proto` files with (its `PROTO_LOADER_OPTS`). */
const REFLECTION_LOADER_OPTIONS: protoLoader.Options = { longs: String, enums: String, bytes: Array, defaults: true, oneofs: true };
const VERSIONS = ['v1', 'v1alpha'] as const;
type Version = (typeof VERSIONS)[number];
type Handlers = Record<Version, grpc.handleBidiStreamingCall<unknown, unknown>>;

function serviceOf(version: Version): grpc.ServiceDefinition {
  const root = dirname(createRequire(import.meta.url).resolve('@grpc/reflection/package.json'));
  const def = protoLoader.loadSync(join(root, 'build', 'proto', 'grpc', 'reflection', version, 'reflection.proto'), REFLECTION_LOADER_OPTIONS);
  const pkg = grpc.loadPackageDefinition(def) as unknown as { grpc: { reflection: Record<Version, { ServerReflection: { service: grpc.ServiceDefinition } }> } };
  return pkg.grpc.reflection[version].ServerReflection.service;
}

/** Adds both reflection services for `pkgDef` to `server`; the library is loaded by the first reflection call. */
export function addReflection(server: grpc.Server, pkgDef: protoLoader.PackageDefinition): void {
  let handlers: Promise<Handlers> | undefined;
  const load = (): Promise<Handlers> =>
    (handlers ??= import('@grpc/reflection').then(({ ReflectionService }) => {
      const found: Partial<Handlers> = {};
      // The library's own handlers, captured from the services it would add.
      new ReflectionService(pkgDef).addToServer({
        addService(service: grpc.ServiceDefinition, impl: grpc.UntypedServiceImplementation) {
          const path = Object.values(service)[0]?.path ?? '';
          const version = VERSIONS.find((v) => path.startsWith(`/grpc.reflection.${v}.`));
          if (version !== undefined) found[version] = impl['ServerReflectionInfo'] as grpc.handleBidiStreamingCall<unknown, unknown>;
        },
      });
      if (found.v1 === undefined || found.v1alpha === undefined) throw new Error('the reflection library declared no ServerReflectionInfo handler');
      return found as Handlers;
    }));
  for (const version of VERSIONS) {
    server.addService(serviceOf(version), {
      ServerReflectionInfo: (stream: grpc.ServerDuplexStream<unknown, unknown>) => {
        load().then(
          (h) => h[version](stream),
          () => stream.destroy(Object.assign(new Error('server reflection is unavailable'), { code: grpc.status.INTERNAL })),
        );
      },
    });
  }
}
