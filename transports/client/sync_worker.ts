/**
 * The worker thread behind the synchronous clients: it holds one
 * asynchronous client and answers each request on the port, then wakes the
 * blocked caller through the shared counter (see `sync_bridge.ts`).
 */
import { workerData, type MessagePort } from 'node:worker_threads';
import { LatchkeyError } from '../../engine/errors.ts';
import { LatchkeyAdminClient, LatchkeyClient } from './client.ts';
import type { BridgeError, BridgeRequest, BridgeResponse, BridgeSetup } from './sync_bridge.ts';

const setup = workerData as BridgeSetup;
const port: MessagePort = setup.port;
const signal = new Int32Array(setup.signal);
const client: Record<string, unknown> = setup.admin
  ? (new LatchkeyAdminClient(setup.options as ConstructorParameters<typeof LatchkeyAdminClient>[0]) as unknown as Record<string, unknown>)
  : (new LatchkeyClient(setup.options as ConstructorParameters<typeof LatchkeyClient>[0]) as unknown as Record<string, unknown>);

function reply(msg: BridgeResponse): void {
  port.postMessage(msg);
  Atomics.add(signal, 0, 1);
  Atomics.notify(signal, 0);
}

function errorOf(err: unknown): BridgeError {
  const e = err instanceof LatchkeyError ? err : new LatchkeyError('internal', err instanceof Error ? err.message : String(err));
  return { code: e.code, message: e.message, ...(e.reason !== undefined ? { reason: e.reason } : {}), ...(e.details !== undefined ? { details: e.details } : {}) };
}

port.on('message', (req: BridgeRequest) => {
  const fn = client[req.method];
  let result: unknown;
  try {
    if (typeof fn !== 'function') throw new LatchkeyError('unimplemented', `no method ${req.method}`);
    result = (fn as (...a: unknown[]) => unknown).apply(client, req.args);
  } catch (err) {
    reply({ id: req.id, ok: false, error: errorOf(err) });
    return;
  }
  Promise.resolve(result).then(
    (value) => reply({ id: req.id, ok: true, value }),
    (err: unknown) => reply({ id: req.id, ok: false, error: errorOf(err) }),
  );
});
