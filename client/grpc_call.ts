/**
 * gRPC calls. This module is the clients' "optional extra" (spec, Client
 * library behavior 2): it is imported only when a client's protocol is
 * `grpc`, so @grpc/grpc-js and @grpc/proto-loader are loaded by nobody else.
 * The service definition is the committed `.proto`
 * (`api/latchkey.proto`), read with the server's loader options
 * and converted with the server's codec, so values come back exactly as REST
 * and GraphQL return them.
 */
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { fileURLToPath } from 'node:url';
import { LatchkeyError } from '../engine/errors.ts';
import { grpcService, LOADER_OPTIONS, fromWire, toWire } from '../api/index.ts';
import type { ObjectShape } from '../api/index.ts';
import { CALL_TIMEOUT_MS, type Session } from './http_call.ts';
import type { ResolvedOptions } from './options.ts';
import type { ClientOperation } from './types.ts';
import { codeOfGrpcStatus, transportError, wireError } from './wire_error.ts';

/** The committed `.proto`, beside the server's gRPC adapter. */
export const PROTO_FILE = fileURLToPath(new URL('../api/latchkey.proto', import.meta.url));

type ClientCtor = new (address: string, creds: grpc.ChannelCredentials) => grpc.Client;
type UnaryMethod = (
  request: unknown,
  metadata: grpc.Metadata,
  options: grpc.CallOptions,
  callback: (err: grpc.ServiceError | null, response: unknown) => void,
) => grpc.ClientUnaryCall;

let definition: Promise<Record<string, ClientCtor>> | undefined;

/** Loads the `.proto` once per process. */
function services(): Promise<Record<string, ClientCtor>> {
  definition ??= protoLoader.load(PROTO_FILE, LOADER_OPTIONS).then((def) => {
    const pkg = grpc.loadPackageDefinition(def) as unknown as { latchkey?: { v1?: Record<string, ClientCtor> } };
    const ns = pkg.latchkey?.v1;
    if (!ns) throw new Error(`package latchkey.v1 missing from ${PROTO_FILE}`);
    return ns;
  });
  return definition;
}

function first(md: grpc.Metadata | undefined, key: string): string | undefined {
  const v = md?.get(key)[0];
  return v === undefined ? undefined : typeof v === 'string' ? v : v.toString('utf8');
}

/** One gRPC channel per service (`Latchkey`, `LatchkeyAdmin`) for one client. */
export class GrpcCaller {
  readonly #options: ResolvedOptions;
  readonly #clients = new Map<string, grpc.Client>();

  constructor(options: ResolvedOptions) {
    this.#options = options;
  }

  async #client(service: string): Promise<grpc.Client> {
    let c = this.#clients.get(service);
    if (!c) {
      const Ctor = (await services())[service];
      if (!Ctor) throw new LatchkeyError('unimplemented', `service latchkey.v1.${service} is not in ${PROTO_FILE}`);
      const creds = this.#options.grpcTls ? grpc.credentials.createSsl() : grpc.credentials.createInsecure();
      c = new Ctor(this.#options.grpcEndpoint, creds);
      this.#clients.set(service, c);
    }
    return c;
  }

  /** Calls `op` with `input`; cookies from the answer's metadata go into the session's jar. */
  async call(session: Session, op: ClientOperation, input: object): Promise<unknown> {
    if (op.grpc === undefined) throw new LatchkeyError('unimplemented', `${op.name} has no gRPC method`);
    const service = grpcService(op);
    const client = await this.#client(service);
    const fn = (client as unknown as Record<string, UnaryMethod | undefined>)[op.grpc.method];
    if (!fn) throw new LatchkeyError('unimplemented', `${service}/${op.grpc.method} is not in ${PROTO_FILE}`);
    const md = new grpc.Metadata();
    for (const [k, v] of Object.entries(this.#options.headers)) if (k !== 'origin') md.set(k, v);
    if (session.accessToken !== undefined) md.set('authorization', `Bearer ${session.accessToken}`);
    const cookie = session.jar.header();
    if (cookie !== undefined) md.set('cookie', cookie);
    const target = this.#options.grpcEndpoint;
    return new Promise((resolve, reject) => {
      const call = fn.call(
        client,
        toWire(op.input as ObjectShape, input) ?? {},
        md,
        { deadline: Date.now() + CALL_TIMEOUT_MS },
        (err, res) => {
          if (!err) return resolve(fromWire(op.output as ObjectShape, res, true));
          session.jar.store((err.metadata?.get('set-cookie') ?? []).map(String));
          const code = first(err.metadata, 'x-error-code');
          if (code === undefined && (err.code === grpc.status.UNAVAILABLE || err.code === grpc.status.DEADLINE_EXCEEDED))
            return reject(err.code === grpc.status.UNAVAILABLE ? transportError(target, new Error(err.details)) : transportError(target, { name: 'TimeoutError' }));
          reject(wireError(code, err.details, first(err.metadata, 'x-error-reason'), undefined, codeOfGrpcStatus(err.code)));
        },
      );
      call.on('metadata', (m: grpc.Metadata) => session.jar.store(m.get('set-cookie').map(String)));
    });
  }

  close(): void {
    for (const c of this.#clients.values()) c.close();
    this.#clients.clear();
  }
}
