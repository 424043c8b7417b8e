/**
 * The asynchronous clients: {@link LatchkeyClient} (user operations) and
 * {@link LatchkeyAdminClient} (super-admin operations). Their operation
 * methods are installed from the clients' copy of the operations table, one
 * per row; see `types.ts` for their signatures.
 *
 *   const client = new LatchkeyClient({ client_id, service_url: 'https://auth.example.com' });
 *   await client.login({ email, password });   // the session cookie is kept
 *   const me = await client.profile();
 */
import { LatchkeyError } from '../engine/errors.ts';
import { Caller } from './caller.ts';
import { OPERATIONS as CLIENT_OPERATIONS } from '../api/index.ts';
import { resolveAdminOptions, resolveClientOptions } from './options.ts';
import {
  camelCase,
  type AdminClientOptions,
  type AdminMethods,
  type ClientOperation,
  type ClientOptions,
  type ClientProtocol,
  type RevokeTokenRequest,
  type TokenRequest,
  type TokenResponse,
  type UserMethods,
} from './types.ts';

/** The operations of one kind of client, keyed by method name. */
export function operationsFor(admin: boolean): ReadonlyMap<string, ClientOperation> {
  // Streamed rows are no request/response call (types.ts leaves them out too).
  return new Map(CLIENT_OPERATIONS.filter((op) => op.admin === admin && op.stream !== true).map((op) => [camelCase(op.name), op]));
}

/** Installs one method per operation on `proto`; a name a client already uses is a table error. */
export function installMethods(proto: object, admin: boolean, invoke: (self: object, op: ClientOperation, input: unknown) => unknown): void {
  for (const [method, op] of operationsFor(admin)) {
    if (method in proto) throw new Error(`operation ${op.name} would hide the client's own ${method}()`);
    Object.defineProperty(proto, method, {
      value: function (this: object, input?: unknown) {
        return invoke(this, op, input);
      },
      writable: true,
      configurable: true,
    });
  }
}

function tokenFields(clientId: string | undefined, req: TokenRequest): Record<string, string | undefined> {
  if (req === null || typeof req !== 'object') throw new LatchkeyError('invalid_argument', 'getToken: the request must be an object', { reason: 'invalid_field' });
  const grant = req.grant_type ?? 'authorization_code';
  if (grant !== 'authorization_code' && grant !== 'refresh_token')
    throw new LatchkeyError('invalid_argument', 'grant_type: must be authorization_code or refresh_token', { reason: 'invalid_field' });
  if (grant === 'refresh_token' && !req.refresh_token)
    throw new LatchkeyError('invalid_argument', 'refresh_token: is required for grant_type refresh_token', { reason: 'invalid_field' });
  if (grant === 'authorization_code' && !req.code)
    throw new LatchkeyError('invalid_argument', 'code: is required for grant_type authorization_code', { reason: 'invalid_field' });
  return {
    grant_type: grant,
    client_id: clientId,
    code: req.code,
    code_verifier: req.code_verifier,
    redirect_uri: req.redirect_uri,
    refresh_token: req.refresh_token,
  };
}

/**
 * The user client (spec, Client library behavior 1–3). Keeps the cookies the
 * service sets (the session cookie after login or signup) and sends them on
 * later calls; {@link setAccessToken} makes it send a bearer token instead or
 * as well. Errors are {@link LatchkeyError}s with the service's code, message
 * and reason, the same on every protocol.
 */
export class LatchkeyClient {
  readonly #caller: Caller;

  constructor(options: ClientOptions) {
    this.#caller = new Caller(resolveClientOptions(options));
  }

  static {
    installMethods(LatchkeyClient.prototype, false, (self, op, input) => (self as LatchkeyClient).#caller.call(op, input));
  }

  /** The protocol this client speaks. */
  get protocol(): ClientProtocol {
    return this.#caller.options.protocol;
  }

  /** Sends `Authorization: Bearer <token>` on later calls (gRPC: metadata); `undefined` stops it. */
  setAccessToken(token: string | undefined): void {
    if (token !== undefined && (typeof token !== 'string' || !/^[\x21-\x7e]+$/.test(token)))
      throw new LatchkeyError('invalid_argument', 'access token: must be a non-empty printable string', { reason: 'invalid_client_option' });
    this.#caller.accessToken = token;
  }

  /** The cookies the client holds, by name. */
  cookies(): Record<string, string> {
    return this.#caller.jar.entries();
  }

  /** Sets a cookie by hand, e.g. the session cookie a server-side app received from a browser. */
  setCookie(name: string, value: string): void {
    this.#caller.jar.set(name, value);
  }

  /** Forgets every cookie. */
  clearCookies(): void {
    this.#caller.jar.clear();
  }

  /** `POST /oauth/token` (always over HTTP): exchanges an authorization code or a refresh token. */
  async getToken(request: TokenRequest): Promise<TokenResponse> {
    const out = await this.#caller.oauth('/oauth/token', tokenFields(this.#caller.options.clientId, request));
    return out as TokenResponse;
  }

  /** `POST /oauth/revoke` (always over HTTP, RFC 7009): revokes a refresh token. */
  async revokeToken(request: RevokeTokenRequest): Promise<Record<string, unknown>> {
    if (request === null || typeof request !== 'object' || typeof request.refresh_token !== 'string' || request.refresh_token === '')
      throw new LatchkeyError('invalid_argument', 'refresh_token: is required', { reason: 'invalid_field' });
    return this.#caller.oauth('/oauth/revoke', {
      token: request.refresh_token,
      token_type_hint: 'refresh_token',
      client_id: this.#caller.options.clientId,
    });
  }

  /** Closes the gRPC channels (nothing to close for REST and GraphQL). */
  close(): Promise<void> {
    return this.#caller.close();
  }
}

export interface LatchkeyClient extends UserMethods {}

/**
 * The admin client (spec, Client library behavior 4–6). Sends the admin
 * secret (`x-service-admin-secret`) and `extra_headers` on every call, and
 * keeps the `service-admin` cookie that `adminLogin` sets, which is what a
 * server started with `--disable-admin-header-auth` accepts. A method whose
 * row does not serve the client's protocol fails before any request with
 * `unimplemented` (reason `protocol_not_supported`).
 */
export class LatchkeyAdminClient {
  readonly #caller: Caller;

  constructor(options: AdminClientOptions) {
    this.#caller = new Caller(resolveAdminOptions(options));
  }

  static {
    installMethods(LatchkeyAdminClient.prototype, true, (self, op, input) => (self as LatchkeyAdminClient).#caller.call(op, input));
  }

  /** The protocol this client speaks. */
  get protocol(): ClientProtocol {
    return this.#caller.options.protocol;
  }

  /** The cookies the client holds, by name. */
  cookies(): Record<string, string> {
    return this.#caller.jar.entries();
  }

  /** Forgets every cookie (e.g. the admin session cookie). */
  clearCookies(): void {
    this.#caller.jar.clear();
  }

  /** Closes the gRPC channels (nothing to close for REST and GraphQL). */
  close(): Promise<void> {
    return this.#caller.close();
  }
}

export interface LatchkeyAdminClient extends AdminMethods {}
