/**
 * The worker thread behind the synchronous clients: it holds one
 * asynchronous client and answers each request on the port, then wakes the
 * blocked caller through the shared counter (see `sync_bridge.ts`). The
 * client module is imported here, inside a try, so that a failure to load it
 * is answered as an error instead of leaving the caller waiting.
 */
import { workerData, type MessagePort } from 'node:worker_threads';
import { LatchkeyError } from '../engine/errors.ts';
import type { BridgeError, BridgeRequest, BridgeResponse, BridgeSetup } from './sync_bridge.ts';

const setup = workerData as BridgeSetup;
const port: MessagePort = setup.port;
const signal = new Int32Array(setup.signal);

function reply(msg: BridgeResponse): void {
  port.postMessage(msg);
  Atomics.add(signal, 0, 1);
  Atomics.notify(signal, 0);
}

function errorOf(err: unknown): BridgeError {
  const e = err instanceof LatchkeyError ? err : new LatchkeyError('internal', err instanceof Error ? err.message : String(err));
  return { code: e.code, message: e.message, ...(e.reason !== undefined ? { reason: e.reason } : {}), ...(e.details !== undefined ? { details: e.details } : {}) };
}

type AnyClient = Record<string, unknown>;

const client: Promise<AnyClient> = import('./client.ts').then((m) =>
  setup.admin
    ? (new m.LatchkeyAdminClient(setup.options as ConstructorParameters<typeof m.LatchkeyAdminClient>[0]) as unknown as AnyClient)
    : (new m.LatchkeyClient(setup.options as ConstructorParameters<typeof m.LatchkeyClient>[0]) as unknown as AnyClient),
);

port.on('message', (req: BridgeRequest) => {
  client
    .then((c) => {
      const fn = c[req.method];
      if (typeof fn !== 'function') throw new LatchkeyError('unimplemented', `no method ${req.method}`);
      return (fn as (...a: unknown[]) => unknown).apply(c, req.args);
    })
    .then(
      (value) => reply({ id: req.id, ok: true, value }),
      (err: unknown) => reply({ id: req.id, ok: false, error: errorOf(err) }),
    );
});
