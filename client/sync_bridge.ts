/**
 * Blocking calls into an asynchronous client (the synchronous clients,
 * spec: "a synchronous and an asynchronous variant"). The client lives in a
 * worker thread; the calling thread posts the request on a MessagePort and
 * sleeps in `Atomics.wait` on a shared counter until the worker has posted the
 * answer and bumped the counter, then takes the answer with
 * `receiveMessageOnPort`. This is the technique of the `synckit` library,
 * written out with Node built-ins only.
 *
 * The worker is started on the first call and unref'd, so an unclosed client
 * never keeps a process alive; `close()` stops it.
 */
import { MessageChannel, Worker, receiveMessageOnPort, type MessagePort } from 'node:worker_threads';
import { extname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { LatchkeyError, type ErrorCode, type ErrorDetails } from '../engine/errors.ts';
import { CALL_TIMEOUT_MS } from './http_call.ts';

/** What the worker is started with. */
export interface BridgeSetup {
  admin: boolean;
  options: unknown;
  port: MessagePort;
  signal: SharedArrayBuffer;
}

export interface BridgeRequest {
  id: number;
  method: string;
  args: unknown[];
}

/** An error as it crosses the thread boundary. */
export interface BridgeError {
  code: ErrorCode;
  message: string;
  reason?: string;
  details?: ErrorDetails;
}

export interface BridgeResponse {
  id: number;
  ok: boolean;
  value?: unknown;
  error?: BridgeError;
}

/** The worker module: `.ts` when running from source, `.js` once built. */
const WORKER_URL = new URL(`./sync_worker${extname(fileURLToPath(import.meta.url))}`, import.meta.url);

/** Beyond the call timeout: time for the worker to start and to report the timeout itself. */
const WAIT_MS = CALL_TIMEOUT_MS + 10_000;

export class SyncBridge {
  readonly #admin: boolean;
  readonly #options: unknown;
  #worker: Worker | undefined;
  #port: MessagePort | undefined;
  #signal: Int32Array | undefined;
  #nextId = 1;

  constructor(admin: boolean, options: unknown) {
    this.#admin = admin;
    this.#options = options;
  }

  #start(): { port: MessagePort; signal: Int32Array } {
    if (this.#port && this.#signal) return { port: this.#port, signal: this.#signal };
    const shared = new SharedArrayBuffer(4);
    const { port1, port2 } = new MessageChannel();
    const setup: BridgeSetup = { admin: this.#admin, options: this.#options, port: port2, signal: shared };
    const worker = new Worker(WORKER_URL, { workerData: setup, transferList: [port2] });
    worker.unref();
    port1.unref();
    this.#worker = worker;
    this.#port = port1;
    this.#signal = new Int32Array(shared);
    return { port: port1, signal: this.#signal };
  }

  /** Calls `method(...args)` on the worker's client and blocks until it answers. */
  call(method: string, args: unknown[]): unknown {
    const { port, signal } = this.#start();
    const id = this.#nextId++;
    let seen = Atomics.load(signal, 0);
    port.postMessage({ id, method, args } satisfies BridgeRequest);
    const deadline = Date.now() + WAIT_MS;
    for (;;) {
      const got = receiveMessageOnPort(port);
      if (got) {
        const msg = got.message as BridgeResponse;
        if (msg.id !== id) continue;
        if (msg.ok) return msg.value;
        const e = msg.error ?? { code: 'internal' as const, message: 'internal client error' };
        throw new LatchkeyError(e.code, e.message, { ...(e.reason !== undefined ? { reason: e.reason } : {}), ...(e.details !== undefined ? { details: e.details } : {}) });
      }
      const left = deadline - Date.now();
      if (left <= 0) throw new LatchkeyError('deadline_exceeded', `${method}: no answer from the client worker in time`);
      Atomics.wait(signal, 0, seen, left);
      seen = Atomics.load(signal, 0);
    }
  }

  /** Stops the worker (closing its client first). */
  close(): void {
    if (!this.#worker) return;
    try {
      this.call('close', []);
    } finally {
      void this.#worker.terminate();
      this.#port?.close();
      this.#worker = undefined;
      this.#port = undefined;
      this.#signal = undefined;
    }
  }
}
