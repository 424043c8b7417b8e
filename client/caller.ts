/**
 * The one call path every client shares: the early protocol check, then the
 * REST, GraphQL or gRPC call. The gRPC module is imported on the first gRPC
 * call only.
 */
import { LatchkeyError } from '../engine/errors.ts';
import { validate, type ObjectShape } from '../api/index.ts';
import { CookieJar } from './cookie_jar.ts';
import { callGraphql, callRest, postOAuthForm, type Session } from './http_call.ts';
import type { GrpcCaller } from './grpc_call.ts';
import type { ResolvedOptions } from './options.ts';
import { OPERATIONS as CLIENT_OPERATIONS } from '../api/index.ts';
import { camelCase, type ClientOperation, type ClientProtocol } from './types.ts';

/**
 * The protocols of every client method, from the rows: `{ fgaGetModel:
 * ['rest', 'grpc'], … }` (spec, Client library behavior 6).
 */
export const PROTOCOL_SUPPORT: Readonly<Record<string, readonly ClientProtocol[]>> = Object.freeze(
  // Streamed rows are no client method (client.ts).
  Object.fromEntries(CLIENT_OPERATIONS.filter((op) => op.stream !== true).map((op) => [camelCase(op.name), Object.freeze([...op.protocols])])),
);

/**
 * Refuses, before any request, a method its row does not serve over
 * `protocol` (spec, Client library behavior 5): `unimplemented`, reason
 * `protocol_not_supported`, naming the protocols that do serve it.
 */
export function assertSupported(op: ClientOperation, protocol: ClientProtocol): void {
  if ((op.protocols as readonly string[]).includes(protocol)) return;
  const method = camelCase(op.name);
  throw new LatchkeyError('unimplemented', `${method} is not available over ${protocol}; use ${op.protocols.join(' or ')}`, {
    reason: 'protocol_not_supported',
    details: { method, protocol, protocols: [...op.protocols] },
  });
}

/**
 * Validates a request against the row's input shape with the service's own
 * validator, before anything is sent: a malformed request fails with the same
 * `invalid_argument` message on every protocol (GraphQL would otherwise word
 * its own variable errors, and protobuf would refuse some values outright).
 * Returns the request holding only the declared fields.
 */
export function requestObject(op: ClientOperation, input: unknown): object {
  return validate(op.input as unknown as ObjectShape, input ?? {}) as object;
}

/**
 * gRPC's libraries are optional peers of the client package: when one is not
 * installed, a `grpc` client's first call fails with `failed_precondition`
 * (reason `missing_dependency`) naming what to install.
 */
function missingGrpcPeer(err: unknown): LatchkeyError | undefined {
  const e = err as { code?: unknown; message?: unknown };
  const missing = ['@grpc/grpc-js', '@grpc/proto-loader'].find((name) => String(e.message).includes(`'${name}'`));
  if (e.code !== 'ERR_MODULE_NOT_FOUND' || missing === undefined) return undefined;
  return new LatchkeyError(
    'failed_precondition',
    `protocol 'grpc' needs the optional peer dependencies @grpc/grpc-js and @grpc/proto-loader: npm install @grpc/grpc-js @grpc/proto-loader`,
    { reason: 'missing_dependency', details: { package: missing }, cause: err },
  );
}

export class Caller implements Session {
  readonly options: ResolvedOptions;
  readonly jar = new CookieJar();
  accessToken: string | undefined;
  #grpc: Promise<GrpcCaller> | undefined;
  #closed = false;

  constructor(options: ResolvedOptions) {
    this.options = options;
  }

  async call(op: ClientOperation, input: unknown): Promise<unknown> {
    assertSupported(op, this.options.protocol);
    const request = requestObject(op, input);
    if (this.#closed) throw new LatchkeyError('failed_precondition', 'the client is closed', { reason: 'client_closed' });
    switch (this.options.protocol) {
      case 'rest':
        return callRest(this.options, this, op, request);
      case 'graphql':
        return callGraphql(this.options, this, op, request);
      case 'grpc':
        this.#grpc ??= import('./grpc_call.ts').then(
          (m) => new m.GrpcCaller(this.options),
          (err: unknown) => {
            throw missingGrpcPeer(err) ?? err;
          },
        );
        return (await this.#grpc).call(this, op, request);
    }
  }

  /** An OAuth endpoint: always REST, whatever the protocol (spec, Client library behavior 3). */
  oauth(path: '/oauth/token' | '/oauth/revoke', fields: Record<string, string | undefined>): Promise<Record<string, unknown>> {
    if (this.#closed) return Promise.reject(new LatchkeyError('failed_precondition', 'the client is closed', { reason: 'client_closed' }));
    return postOAuthForm(this.options, this, path, fields);
  }

  /** Closes gRPC channels; later calls fail with `failed_precondition`. */
  async close(): Promise<void> {
    this.#closed = true;
    const g = this.#grpc;
    this.#grpc = undefined;
    if (g) (await g.catch(() => undefined))?.close();
  }
}
