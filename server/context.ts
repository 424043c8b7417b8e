/**
 * The request context every operation handler receives, the caller's
 * principal, the neutral credentials shape the transports extract, the
 * response-cookie sink, the services the composition root builds, and the
 * shape of an HTTP endpoint outside the operations table. It imports no
 * other file of the server that imports it back: what both the composition
 * root and the handlers need lives here.
 */
import { randomUUID } from 'node:crypto';
import type { SqlDatabase } from '../engine/sql/sql_database.ts';
import type { AdminService } from '../admin/index.ts';
import type { AuthService, ConsentService, MainDatabase, MemoryStore, OAuthServer, OutboxMailQueue, SocialLogin, SsoLogin } from '../auth/index.ts';
import type { LatchkeyError } from '../engine/errors.ts';
import type { Engine } from '../engine/index.ts';
import type { SqlStore } from '../engine/sql/index.ts';
import type { Protocol } from '../api/index.ts';
import type { Config } from './flags.ts';
import type { Logger } from './logger.ts';

export type { Protocol };

/** Who is calling. Resolved once per request by `authenticate` (see `authenticate.ts`). */
export type Principal =
  | { readonly kind: 'anonymous' }
  | {
      readonly kind: 'user';
      readonly userId: string;
      /** The FGA subject, always `user:<userId>`. */
      readonly subject: string;
      readonly roles: readonly string[];
      readonly sessionId?: string;
      /** Decoded access-token claims, when the caller used a token. */
      readonly claims?: Readonly<Record<string, unknown>>;
    }
  | {
      /** A registered service account: by its client_credentials access token or an API key. */
      readonly kind: 'service_account';
      readonly clientId: string;
      /** The FGA subject, always `service_account:<clientId>`. */
      readonly subject: string;
      readonly roles: readonly string[];
      readonly claims?: Readonly<Record<string, unknown>>;
    }
  | {
      readonly kind: 'super_admin';
      /** How the super-admin proved itself. */
      readonly via: 'admin_secret_header' | 'admin_cookie';
    };

export const ANONYMOUS: Principal = Object.freeze({ kind: 'anonymous' });

/**
 * Credentials as the transports found them, in one neutral shape:
 * REST/GraphQL read them from headers, gRPC from metadata of the same names.
 */
export interface Credentials {
  /** The token of `Authorization: Bearer <token>`. */
  readonly bearer?: string;
  /** Request cookies by name (from the `cookie` header / metadata). */
  readonly cookies: Readonly<Record<string, string>>;
  /** The `x-service-admin-secret` header / metadata value. */
  readonly adminSecret?: string;
  /** The `x-api-key` header / metadata value. */
  readonly apiKey?: string;
  /**
   * Set when the token came as `Authorization: DPoP <token>` (RFC 9449 §7.1):
   * the `DPoP` proof header, and the request's method and path, which the
   * proof must name. Absent for `Bearer` and on gRPC.
   */
  readonly dpop?: { readonly proof: string | undefined; readonly method: string; readonly path: string };
}

/** Attributes of a cookie a handler sets. `path` defaults to `/`, `httpOnly` to true. */
export interface CookieOptions {
  maxAgeSeconds?: number;
  expires?: Date;
  domain?: string;
  path?: string;
  httpOnly?: boolean;
  secure?: boolean;
  sameSite?: 'Strict' | 'Lax' | 'None';
}

/**
 * Collects the cookies a handler sets or clears. REST and GraphQL turn them into
 * real `Set-Cookie` headers; gRPC returns them as `set-cookie` metadata.
 */
export class CookieSink {
  readonly #headers: string[] = [];

  /** Sets a cookie on the response. */
  set(name: string, value: string, options: CookieOptions = {}): void {
    this.#headers.push(serializeCookie(name, value, options));
  }

  /** Clears a cookie (empty value, `Max-Age=0`, same path/domain as when set). */
  clear(name: string, options: Omit<CookieOptions, 'maxAgeSeconds' | 'expires'> = {}): void {
    this.#headers.push(serializeCookie(name, '', { ...options, maxAgeSeconds: 0, expires: new Date(0) }));
  }

  /** The `Set-Cookie` header values collected so far. */
  headers(): readonly string[] {
    return this.#headers;
  }
}

const COOKIE_NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
const COOKIE_VALUE = /^[!#-+\--:<-[\]-~]*$/;

/** Serialises one `Set-Cookie` header value (RFC 6265). */
export function serializeCookie(name: string, value: string, o: CookieOptions = {}): string {
  if (!COOKIE_NAME.test(name)) throw new Error(`invalid cookie name ${name}`);
  if (!COOKIE_VALUE.test(value)) throw new Error(`invalid cookie value for ${name}`);
  let out = `${name}=${value}`;
  if (o.maxAgeSeconds !== undefined) out += `; Max-Age=${Math.floor(o.maxAgeSeconds)}`;
  if (o.expires !== undefined) out += `; Expires=${o.expires.toUTCString()}`;
  if (o.domain !== undefined) out += `; Domain=${o.domain}`;
  out += `; Path=${o.path ?? '/'}`;
  if (o.httpOnly ?? true) out += '; HttpOnly';
  if (o.secure) out += '; Secure';
  if (o.sameSite !== undefined) out += `; SameSite=${o.sameSite}`;
  return out;
}

/** Parses a `Cookie` request header into a name → value map (first occurrence wins). */
export function parseCookieHeader(header: string | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  if (!header) return out;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq < 0) continue;
    const name = part.slice(0, eq).trim();
    if (!name || Object.hasOwn(out, name)) continue;
    let value = part.slice(eq + 1).trim();
    if (value.startsWith('"') && value.endsWith('"') && value.length >= 2) value = value.slice(1, -1);
    // Without a `%` there is nothing to decode (decodeURIComponent would answer the same string, at a cost per cookie).
    if (value.indexOf('%') < 0) {
      out[name] = value;
      continue;
    }
    try {
      out[name] = decodeURIComponent(value);
    } catch {
      out[name] = value;
    }
  }
  return out;
}

const BEARER = /^Bearer\s+(\S+)\s*$/i;
const DPOP_SCHEME = /^DPoP\s+(\S+)\s*$/i;

/** The token of an `Authorization: Bearer …` header, or undefined when it is not of the Bearer scheme. */
export function bearerToken(authorization: string): string | undefined {
  return BEARER.exec(authorization)?.[1] || undefined;
}

/**
 * The token of an `Authorization: Bearer …` header, remembered for the
 * header it came from: a client sends the same header on every request of a
 * keep-alive connection, and comparing it with the last one costs far less
 * than matching the whole token again. One per connection.
 */
export class BearerMemo {
  #header: string | undefined;
  #token: string | undefined;

  /** The bearer token of `authorization`, or undefined when it is not of the Bearer scheme. */
  of(authorization: string): string | undefined {
    if (authorization === this.#header) return this.#token;
    const token = bearerToken(authorization);
    this.#header = authorization;
    this.#token = token;
    return token;
  }
}

/** Builds the neutral credentials from raw header values (shared by every transport). */
export function extractCredentials(
  headers: {
    authorization?: string | undefined;
    cookie?: string | undefined;
    adminSecret?: string | undefined;
    apiKey?: string | undefined;
    /** The `DPoP` header, method and path of an HTTP request; asked for only when the scheme is `DPoP`. */
    dpop?: (() => { proof: string | undefined; method: string; path: string }) | undefined;
  },
  memo?: BearerMemo,
): Credentials {
  const creds: { bearer?: string; cookies: Record<string, string>; adminSecret?: string; apiKey?: string; dpop?: NonNullable<Credentials['dpop']> } = {
    cookies: parseCookieHeader(headers.cookie),
  };
  const auth = headers.authorization;
  if (auth !== undefined) {
    const bearer = memo === undefined ? bearerToken(auth) : memo.of(auth);
    if (bearer !== undefined) creds.bearer = bearer;
    else if (headers.dpop !== undefined) {
      const bound = DPOP_SCHEME.exec(auth)?.[1];
      if (bound !== undefined) {
        creds.bearer = bound;
        creds.dpop = headers.dpop();
      }
    }
  }
  if (headers.adminSecret !== undefined) creds.adminSecret = headers.adminSecret;
  if (headers.apiKey !== undefined && headers.apiKey !== '') creds.apiKey = headers.apiKey;
  return creds;
}

/** A source of time, injected so that tests never sleep. */
/** What a client's own request id may be (`x-request-id`, echoed on the answer and in logs): anything else is replaced. */
const REQUEST_ID = /^[A-Za-z0-9._-]{1,64}$/;

/** The request id of a call: the client's `x-request-id` when it is well-formed, a new UUID otherwise. */
export function requestIdFrom(incoming: string | undefined): string {
  return incoming !== undefined && REQUEST_ID.test(incoming) ? incoming : randomUUID();
}

export interface Clock {
  now(): Date;
}

export const SYSTEM_CLOCK: Clock = Object.freeze({ now: () => new Date() });

/**
 * Milliseconds since the epoch by `clock`, as a function: `Date.now` itself
 * for the system clock (read on every authenticated call, where building a
 * `Date` to read its time was a measurable part of the cost).
 */
export function epochMsOf(clock: Clock): () => number {
  return clock === SYSTEM_CLOCK ? Date.now : () => clock.now().getTime();
}

/** What every handler receives besides its validated input. */
export interface RequestContext {
  /** Unique per request; echoed as `x-request-id` and in every log line of the request. */
  readonly requestId: string;
  readonly principal: Principal;
  readonly credentials: Credentials;
  /** The client's IP (socket address, or `X-Forwarded-For` from a trusted proxy). */
  readonly clientIp: string;
  readonly userAgent: string;
  /** The request's `Accept-Language` (gRPC: metadata), which picks the language of the mails it queues. */
  readonly acceptLanguage?: string | undefined;
  readonly protocol: Protocol;
  /** Aborted when the request's deadline passes or the client goes away. */
  readonly signal: AbortSignal;
  readonly clock: Clock;
  /** A logger bound to this request (carries the request id). */
  readonly logger: Logger;
  /** Response cookies. */
  readonly cookies: CookieSink;
  /** The composition root's services (config, database, domain services). */
  readonly services: Services;
}

/**
 * What a caller that changed the FGA tables outside the engine (delete_user,
 * in its own transaction) needs: the SQL store, when there is one, and a
 * refresh that makes the in-process mirror and answer cache current.
 */
export interface EngineHooks {
  /** The SQL store under the engine (undefined for the memory store). */
  readonly sqlStore?: SqlStore;
  /**
   * Brings the graph mirror up to the store's revision and empties the
   * answer cache, so no answer older than the call is served afterwards.
   */
  refresh(): Promise<void>;
}

/**
 * Everything a handler reaches through `ctx.services`: the frozen
 * configuration, the main database, and the domain services the composition
 * root (`server/compose/`) built, each with its own type.
 */
export interface Services {
  readonly config: Config;
  /** The main database: the one SQL connection or the DynamoDB client (every identity and admin store receives it). */
  readonly database: MainDatabase;
  /** The one SQL connection when the main database is SQL (every SQL store receives it); undefined on DynamoDB. */
  readonly sequelize: SqlDatabase | undefined;
  readonly logger: Logger;
  readonly clock: Clock;
  readonly version: string;
  /**
   * Credential → principal chain, tried in order (see `authenticate.ts`). The
   * admin-secret header check is first; auth and admin append theirs.
   */
  readonly authenticators: Authenticator[];
  /** The FGA engine; undefined when FGA is off (every permission operation then answers `failed_precondition`). */
  engine?: Engine;
  /** What callers that change the FGA tables outside the engine need (delete_user); set with `engine` by the composition root. */
  engineHooks?: EngineHooks;
  /** Identity, sessions and tokens. */
  auth?: AuthService;
  /** Where sessions, codes and OAuth state live (Redis, DynamoDB or this process); set with `auth`. */
  memoryStore?: MemoryStore;
  /** The OAuth 2.0 / OpenID provider on the identity service; set with `auth`. */
  oauth?: OAuthServer;
  /** Consent to the scopes of clients that are not first-party (`/authorize`, `/app/consent`, the account center); set with `oauth`. */
  consent?: ConsentService;
  /** Social login, when a provider is configured; set with `auth`. */
  social?: SocialLogin;
  /** Enterprise sign-in through organizations' SAML and OIDC connections; set with `auth` when organizations are on. */
  sso?: SsoLogin;
  /** Super-admin operations, the mail queue and webhooks. */
  admin?: AdminService;
  /** Text messages waiting in the outbox (channel `sms`), when the `--sms-*` flags configure the vendor; set with `admin`. */
  smsQueue?: OutboxMailQueue;
  /** Run at shutdown, last-registered first, before the database closes. */
  readonly closers: (() => Promise<void>)[];
  /** DNS TXT lookups of organization domain verification (default: the system resolver). */
  readonly resolveTxt?: (name: string) => Promise<string[][]>;
}

/**
 * An endpoint served on the HTTP port outside the operations table: a GET
 * document, or a GET/POST endpoint whose POST body is a form
 * (`application/x-www-form-urlencoded`) or JSON. Guards (CORS, rate limit,
 * CSRF) apply as to every path.
 */
export interface HttpRoute {
  readonly path: string;
  /** Default `['GET']`. `PUT` takes a body as `POST` does. */
  readonly methods?: readonly ('GET' | 'POST' | 'PUT' | 'DELETE')[];
  readonly handler: (request: HttpRouteRequest) => Promise<HttpRouteResponse>;
}

/** What an {@link HttpRoute} handler sees of the request. */
export interface HttpRouteRequest {
  readonly method: string;
  /** Query parameters: a string, or an array when repeated. */
  readonly query: Readonly<Record<string, unknown>>;
  /** The parsed form or JSON body (empty for GET or when there is none). */
  readonly body: Readonly<Record<string, unknown>>;
  /** Set when the body could not be read (malformed, too large, other media type); `body` is then empty. */
  readonly bodyError?: LatchkeyError | undefined;
  readonly authorization?: string | undefined;
  /** The `DPoP` header (RFC 9449): a proof of possession of the key a token is bound to. */
  readonly dpop?: string | undefined;
  readonly cookies: Readonly<Record<string, string>>;
  readonly requestId: string;
  readonly clientIp: string;
  readonly userAgent: string;
  /** The `Accept-Language` header, for pages shown in the reader's language. */
  readonly acceptLanguage?: string | undefined;
}

/** The answer of an {@link HttpRoute}: JSON `body`, an `html` page, or neither (e.g. a redirect). */
export interface HttpRouteResponse {
  /** Default 200. */
  readonly status?: number;
  readonly body?: unknown;
  readonly html?: string;
  readonly headers?: Readonly<Record<string, string>>;
  /** `Set-Cookie` header values, each sent as its own header. */
  readonly cookies?: readonly string[];
}

/** What an authenticator may know about the request besides its credentials. */
export interface AuthenticationInfo {
  readonly requestId: string;
  readonly clientIp: string;
  readonly userAgent: string;
}

/**
 * One link of the chain: returns a principal when it recognises the
 * credentials, `undefined` when they are not its kind, and throws (or
 * rejects with) `unauthenticated` when they are its kind but invalid. A link
 * that can decide at once answers without a promise (the chain then takes no
 * promise hop for it); one that must wait answers with a promise.
 */
export type Authenticator = (credentials: Credentials, info: AuthenticationInfo) => Principal | undefined | Promise<Principal | undefined>;
