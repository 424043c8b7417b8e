/**
 * The synchronous clients: {@link LatchkeySyncClient} and
 * {@link LatchkeySyncAdminClient} have the methods of their asynchronous
 * twins, but each call blocks and returns the response (or throws the
 * {@link LatchkeyError}). The asynchronous client runs in a worker thread
 * (`sync_bridge.ts`), which also keeps the cookies. Options are checked, and
 * a method its protocol does not serve is refused, on the calling thread
 * before the worker is involved.
 *
 * Blocking stops the calling thread's event loop for the duration of the
 * call: use these in scripts, CLIs and synchronous code paths, not inside a
 * server that serves other requests on the same thread.
 */
import { LatchkeyError } from '../engine/errors.ts';
import { assertSupported, requestObject } from './caller.ts';
import { installMethods } from './client.ts';
import { resolveAdminOptions, resolveClientOptions } from './options.ts';
import { SyncBridge } from './sync_bridge.ts';
import {
  camelCase,
  type AdminClientOptions,
  type ClientOperation,
  type ClientOptions,
  type ClientProtocol,
  type RevokeTokenRequest,
  type SyncAdminMethods,
  type SyncUserMethods,
  type TokenRequest,
  type TokenResponse,
} from './types.ts';

function invoke(bridge: SyncBridge, protocol: ClientProtocol, op: ClientOperation, input: unknown): unknown {
  assertSupported(op, protocol);
  return bridge.call(camelCase(op.name), [requestObject(op, input)]);
}

/** The blocking user client; see `LatchkeyClient` for the behaviour. */
export class LatchkeySyncClient {
  readonly #bridge: SyncBridge;
  readonly #protocol: ClientProtocol;

  constructor(options: ClientOptions) {
    this.#protocol = resolveClientOptions(options).protocol;
    this.#bridge = new SyncBridge(false, { ...options });
  }

  static {
    installMethods(LatchkeySyncClient.prototype, false, (self, op, input) => {
      const c = self as LatchkeySyncClient;
      return invoke(c.#bridge, c.#protocol, op, input);
    });
  }

  get protocol(): ClientProtocol {
    return this.#protocol;
  }

  setAccessToken(token: string | undefined): void {
    if (token !== undefined && typeof token !== 'string')
      throw new LatchkeyError('invalid_argument', 'access token: must be a non-empty printable string', { reason: 'invalid_client_option' });
    this.#bridge.call('setAccessToken', [token]);
  }

  cookies(): Record<string, string> {
    return this.#bridge.call('cookies', []) as Record<string, string>;
  }

  setCookie(name: string, value: string): void {
    this.#bridge.call('setCookie', [name, value]);
  }

  clearCookies(): void {
    this.#bridge.call('clearCookies', []);
  }

  getToken(request: TokenRequest): TokenResponse {
    return this.#bridge.call('getToken', [request]) as TokenResponse;
  }

  revokeToken(request: RevokeTokenRequest): Record<string, unknown> {
    return this.#bridge.call('revokeToken', [request]) as Record<string, unknown>;
  }

  /** Stops the worker thread. */
  close(): void {
    this.#bridge.close();
  }
}

export interface LatchkeySyncClient extends SyncUserMethods {}

/** The blocking admin client; see `LatchkeyAdminClient` for the behaviour. */
export class LatchkeySyncAdminClient {
  readonly #bridge: SyncBridge;
  readonly #protocol: ClientProtocol;

  constructor(options: AdminClientOptions) {
    this.#protocol = resolveAdminOptions(options).protocol;
    this.#bridge = new SyncBridge(true, { ...options, ...(options.extra_headers ? { extra_headers: { ...options.extra_headers } } : {}) });
  }

  static {
    installMethods(LatchkeySyncAdminClient.prototype, true, (self, op, input) => {
      const c = self as LatchkeySyncAdminClient;
      return invoke(c.#bridge, c.#protocol, op, input);
    });
  }

  get protocol(): ClientProtocol {
    return this.#protocol;
  }

  cookies(): Record<string, string> {
    return this.#bridge.call('cookies', []) as Record<string, string>;
  }

  clearCookies(): void {
    this.#bridge.call('clearCookies', []);
  }

  /** Stops the worker thread. */
  close(): void {
    this.#bridge.close();
  }
}

export interface LatchkeySyncAdminClient extends SyncAdminMethods {}
