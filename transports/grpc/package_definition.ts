/**
 * The generated `.proto` text loaded as a package definition (what the gRPC
 * adapter serves, and what tests and benchmarks build their clients from).
 * Apart from the adapter so that the transports' entry point can offer it
 * without loading gRPC: @grpc/proto-loader (and protobufjs with it) is
 * required on the first call, and the adapter itself is imported by
 * `loadGrpcAdapter` when a server starts gRPC (docs/performance.md, "Server
 * footprint").
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type * as ProtoLoader from '@grpc/proto-loader';
import { LOADER_OPTIONS } from '../../api/index.ts';

let protoLoader: typeof ProtoLoader | undefined;

/** Loads the generated `.proto` text as a package definition. */
export function loadPackageDefinition(protoText: string): ProtoLoader.PackageDefinition {
  protoLoader ??= createRequire(import.meta.url)('@grpc/proto-loader') as typeof ProtoLoader;
  const dir = mkdtempSync(join(tmpdir(), 'latchkey-proto-'));
  try {
    const file = join(dir, 'latchkey.proto');
    writeFileSync(file, protoText);
    return protoLoader.loadSync(file, LOADER_OPTIONS);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
