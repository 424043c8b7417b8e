/**
 * The OAuth client registry: many clients, each `interactive` (a web, native
 * or single-page application that sends users to `/authorize`) or a
 * `service_account` (a machine that authenticates as itself with
 * `client_credentials`). It validates registrations, issues and rotates
 * secrets (shown once, stored as SHA-256 digests, the previous one honoured
 * until the end of the rotation's overlap), authenticates clients at the
 * token, revocation and introspection endpoints (`client_secret_basic`,
 * `client_secret_post`, `private_key_jwt` per RFC 7523, `none`), matches
 * redirect URIs exactly (RFC 8252 §7.3: a native client's loopback URI with
 * any port). Its {@link ApiKeys} issue, list, revoke and resolve API keys.
 *
 * The `--client-id` / `--client-secret` client of the flags is the first
 * client: it is answered from the flags, never from the store, behaves as it
 * always did (its redirects follow `--allowed-origins`, it may authenticate
 * with the secret in either place or as a public client with PKCE), and it
 * cannot be changed or deleted through the registry.
 */
import { randomBytes } from 'node:crypto';
import type { JWK } from 'jose';
import { jose } from './jose.ts';
import { LatchkeyError } from '../engine/errors.ts';
import { ApiKeys } from './api_keys.ts';
import { ClientAuthenticator, type ResolvedClient } from './client_authentication.ts';
import { CLIENT_ASSERTION_ALGORITHMS, type ApplicationType, type ClientAuthMethod, type ClientKind, type ClientRecord, type ClientStore } from './client_store.ts';

export { CLIENT_ASSERTION_ALGORITHMS };
import type { MemoryStore } from './memory_store.ts';
import { GRANT_DEVICE_CODE } from './device_flow.ts';
import { safeEqual } from './oauth_common.ts';
import { digestEqual, digestOf, SCOPE_TOKEN } from './secret_digest.ts';

export type { ResolvedClient };

export const GRANT_CODE = 'authorization_code';
export const GRANT_REFRESH = 'refresh_token';
export const GRANT_CLIENT_CREDENTIALS = 'client_credentials';
export const GRANT_TOKEN_EXCHANGE = 'urn:ietf:params:oauth:grant-type:token-exchange';

const INTERACTIVE_GRANTS = [GRANT_CODE, GRANT_REFRESH, GRANT_TOKEN_EXCHANGE, GRANT_DEVICE_CODE] as const;
const SERVICE_GRANTS = [GRANT_CLIENT_CREDENTIALS, GRANT_TOKEN_EXCHANGE] as const;
export const CLIENT_AUTH_METHODS: readonly ClientAuthMethod[] = ['client_secret_basic', 'client_secret_post', 'private_key_jwt', 'none'];

const CLIENT_ID = /^[A-Za-z0-9._~-]{3,128}$/;
const ROLE = /^[A-Za-z0-9._:-]{1,128}$/;
const MAX_LIST = 100;
const MAX_OVERLAP = 30 * 86400;


/** The wire view of a client: everything but digests. */
export interface PublicClient {
  client_id: string;
  client_name: string;
  kind: ClientKind;
  application_type: ApplicationType;
  token_endpoint_auth_method: ClientAuthMethod;
  redirect_uris: string[];
  grant_types: string[];
  scopes: string[];
  audiences: string[];
  roles: string[];
  access_token_ttl: number | null;
  refresh_token_ttl: number | null;
  jwks: Record<string, unknown> | null;
  jwks_uri: string | null;
  disabled: boolean;
  require_pushed_authorization_requests: boolean;
  /** OpenID Connect Back-Channel Logout 1.0: where the client takes logout tokens, or null. */
  backchannel_logout_uri: string | null;
  require_consent: boolean;
  configured_by_flags: boolean;
  /** The FGA subject of a service account (`service_account:<client_id>`), else null. */
  subject: string | null;
  previous_secret_expires_at: number | null;
  created_at: number;
  updated_at: number;
}

/** What `add_client` and `update_client` take. Absent fields keep their value (update) or default (add). */
export interface ClientInput {
  client_id?: string | undefined;
  client_name?: string | undefined;
  kind?: string | undefined;
  application_type?: string | undefined;
  token_endpoint_auth_method?: string | undefined;
  redirect_uris?: readonly string[] | undefined;
  grant_types?: readonly string[] | undefined;
  scopes?: readonly string[] | undefined;
  audiences?: readonly string[] | undefined;
  roles?: readonly string[] | undefined;
  access_token_ttl?: number | null | undefined;
  refresh_token_ttl?: number | null | undefined;
  jwks?: unknown;
  jwks_uri?: string | null | undefined;
  disabled?: boolean | undefined;
  require_pushed_authorization_requests?: boolean | undefined;
  backchannel_logout_uri?: string | null | undefined;
  require_consent?: boolean | undefined;
}

export interface ClientRegistryOptions {
  store: ClientStore;
  memory: MemoryStore;
  nowSeconds: () => number;
  /** The issuer (the audience of client assertions, with the token endpoint). */
  issuer: string;
  flagClient: { clientId: string; clientSecret: string };
  /** The roles of the server (`--roles`): a service account may hold only these. */
  roles: readonly string[];
  /** The scopes an interactive client may be given. */
  supportedScopes: readonly string[];
}


const bad = (message: string, reason = 'invalid_client_metadata'): LatchkeyError => new LatchkeyError('invalid_argument', message, { reason });
const notFound = (): LatchkeyError => new LatchkeyError('not_found', 'client not found', { reason: 'client_not_found' });
const isLoopbackHost = (host: string): boolean => host === '127.0.0.1' || host === '[::1]' || host === 'localhost';

/** The service-account FGA subject of a client id. */
export const serviceAccountSubject = (clientId: string): string => `service_account:${clientId}`;


export class ClientRegistry {
  readonly #o: ClientRegistryOptions;

  /** The API keys of users and service accounts. */
  readonly apiKeys: ApiKeys;
  readonly #authenticator: ClientAuthenticator;

  constructor(options: ClientRegistryOptions) {
    this.#o = options;
    this.apiKeys = new ApiKeys(options.store, options.nowSeconds);
    this.#authenticator = new ClientAuthenticator((id) => this.find(id), options);
  }

  /**
   * Authenticates the client of a token, revocation or introspection request
   * (see {@link ClientAuthenticator.authenticate}).
   */
  authenticate(p: Map<string, string>, authorization: string | undefined): Promise<{ client: ResolvedClient; method: ClientAuthMethod }> {
    return this.#authenticator.authenticate(p, authorization);
  }

  get store(): ClientStore {
    return this.#o.store;
  }

  /** The `--client-id` client as a record. */
  #flagRecord(): ClientRecord {
    const f = this.#o.flagClient;
    return {
      client_id: f.clientId,
      client_name: 'Configured client (--client-id)',
      kind: 'interactive',
      application_type: 'web',
      token_endpoint_auth_method: 'client_secret_basic',
      redirect_uris: [],
      grant_types: [GRANT_CODE, 'implicit', GRANT_REFRESH, GRANT_CLIENT_CREDENTIALS],
      scopes: [...this.#o.supportedScopes],
      audiences: [],
      roles: [],
      access_token_ttl: null,
      refresh_token_ttl: null,
      jwks: null,
      jwks_uri: null,
      secret_digest: null,
      previous_secret_digest: null,
      previous_secret_expires_at: null,
      disabled: false,
      require_pushed_authorization_requests: false,
      registration_token_digest: null,
      backchannel_logout_uri: null,
      require_consent: false,
      created_at: 0,
      updated_at: 0,
    };
  }

  /** The client of `clientId` (the flags' one or a registered one), or undefined. */
  async find(clientId: string): Promise<ResolvedClient | undefined> {
    if (safeEqual(clientId, this.#o.flagClient.clientId)) return { record: this.#flagRecord(), fromFlags: true };
    if (!CLIENT_ID.test(clientId)) return undefined;
    const record = await this.#o.store.getClient(clientId);
    return record === undefined ? undefined : { record, fromFlags: false };
  }

  /** The wire view of a client. */
  view(c: ResolvedClient): PublicClient {
    const r = c.record;
    return {
      client_id: r.client_id,
      client_name: r.client_name,
      kind: r.kind,
      application_type: r.application_type,
      token_endpoint_auth_method: r.token_endpoint_auth_method,
      redirect_uris: r.redirect_uris,
      grant_types: r.grant_types,
      scopes: r.scopes,
      audiences: r.audiences,
      roles: r.roles,
      access_token_ttl: r.access_token_ttl,
      refresh_token_ttl: r.refresh_token_ttl,
      jwks: r.jwks,
      jwks_uri: r.jwks_uri,
      disabled: r.disabled,
      require_pushed_authorization_requests: r.require_pushed_authorization_requests,
      backchannel_logout_uri: r.backchannel_logout_uri,
      require_consent: r.require_consent,
      configured_by_flags: c.fromFlags,
      subject: r.kind === 'service_account' ? serviceAccountSubject(r.client_id) : null,
      previous_secret_expires_at: r.previous_secret_expires_at !== null && r.previous_secret_expires_at > this.#o.nowSeconds() ? r.previous_secret_expires_at : null,
      created_at: r.created_at,
      updated_at: r.updated_at,
    };
  }

  // ---------------------------------------------------------------- administration

  /** `add_client`: registers a client; answers it and, for a secret method, the secret (shown this once). */
  async add(input: ClientInput): Promise<{ client: PublicClient; client_secret: string | null }> {
    const now = this.#o.nowSeconds();
    const clientId = input.client_id ?? randomBytes(16).toString('base64url');
    if (!CLIENT_ID.test(clientId)) throw bad('client_id must be 3 to 128 characters of [A-Za-z0-9._~-]');
    if (safeEqual(clientId, this.#o.flagClient.clientId)) throw new LatchkeyError('already_exists', `client ${clientId} already exists`, { reason: 'client_already_exists' });
    const kind = input.kind ?? 'interactive';
    if (kind !== 'interactive' && kind !== 'service_account') throw bad('kind must be interactive or service_account');
    const appType = input.application_type ?? 'web';
    if (appType !== 'web' && appType !== 'native' && appType !== 'spa') throw bad('application_type must be web, native or spa');
    const method = input.token_endpoint_auth_method ?? (kind === 'interactive' && appType !== 'web' ? 'none' : input.jwks !== undefined || input.jwks_uri ? 'private_key_jwt' : 'client_secret_basic');
    if (!(CLIENT_AUTH_METHODS as readonly string[]).includes(method)) throw bad(`token_endpoint_auth_method must be one of ${CLIENT_AUTH_METHODS.join(', ')}`);
    const record: ClientRecord = {
      client_id: clientId,
      client_name: input.client_name ?? clientId,
      kind,
      application_type: kind === 'service_account' ? 'web' : appType,
      token_endpoint_auth_method: method as ClientAuthMethod,
      redirect_uris: [...(input.redirect_uris ?? [])],
      grant_types: [...(input.grant_types ?? (kind === 'service_account' ? [GRANT_CLIENT_CREDENTIALS] : [GRANT_CODE, GRANT_REFRESH]))],
      scopes: [...(input.scopes ?? (kind === 'service_account' ? [] : this.#o.supportedScopes))],
      audiences: [...(input.audiences ?? [])],
      roles: [...(input.roles ?? [])],
      access_token_ttl: input.access_token_ttl ?? null,
      refresh_token_ttl: input.refresh_token_ttl ?? null,
      jwks: (input.jwks as Record<string, unknown> | null | undefined) ?? null,
      jwks_uri: input.jwks_uri ?? null,
      secret_digest: null,
      previous_secret_digest: null,
      previous_secret_expires_at: null,
      disabled: input.disabled ?? false,
      require_pushed_authorization_requests: input.require_pushed_authorization_requests ?? false,
      registration_token_digest: null,
      backchannel_logout_uri: input.backchannel_logout_uri ?? null,
      require_consent: input.require_consent ?? false,
      created_at: now,
      updated_at: now,
    };
    await this.#validate(record);
    let secret: string | null = null;
    if (usesSecret(record.token_endpoint_auth_method)) {
      secret = newSecret();
      record.secret_digest = digestOf(secret);
    }
    await this.#o.store.insertClient(record);
    return { client: this.view({ record, fromFlags: false }), client_secret: secret };
  }

  /** `clients`: a page of the clients, the flags' client first. */
  async list(page: { offset: number; limit: number }): Promise<{ clients: PublicClient[]; total: number }> {
    const first = page.offset === 0 ? [this.view({ record: this.#flagRecord(), fromFlags: true })] : [];
    const offset = Math.max(0, page.offset - 1);
    const limit = Math.min(page.limit, MAX_LIST) - first.length;
    const { clients, total } = limit > 0 ? await this.#o.store.listClients({ offset, limit }) : { clients: [], total: (await this.#o.store.listClients({ offset: 0, limit: 1 })).total };
    return { clients: [...first, ...clients.map((record) => this.view({ record, fromFlags: false }))], total: total + 1 };
  }

  /** `client`: one client. */
  async get(clientId: string): Promise<PublicClient> {
    const c = await this.find(clientId);
    if (c === undefined) throw notFound();
    return this.view(c);
  }

  async #registered(clientId: string): Promise<ClientRecord> {
    const c = await this.find(clientId);
    if (c === undefined) throw notFound();
    if (c.fromFlags) throw new LatchkeyError('failed_precondition', 'this client is configured by --client-id and --client-secret; change the flags instead', { reason: 'client_configured_by_flags' });
    return c.record;
  }

  /**
   * `update_client`: changes the given fields. The authentication method may
   * move between `client_secret_basic` and `client_secret_post` only (the
   * credential stays the same); the kind never changes.
   */
  async update(clientId: string, input: ClientInput): Promise<PublicClient> {
    const current = await this.#registered(clientId);
    if (input.kind !== undefined && input.kind !== current.kind) throw bad('kind cannot be changed');
    if (input.application_type !== undefined && input.application_type !== current.application_type) throw bad('application_type cannot be changed');
    const next: ClientRecord = { ...current, updated_at: this.#o.nowSeconds() };
    if (input.token_endpoint_auth_method !== undefined && input.token_endpoint_auth_method !== current.token_endpoint_auth_method) {
      if (!(usesSecret(current.token_endpoint_auth_method) && usesSecret(input.token_endpoint_auth_method as ClientAuthMethod))) {
        throw bad('token_endpoint_auth_method may change only between client_secret_basic and client_secret_post; register a new client for another method');
      }
      next.token_endpoint_auth_method = input.token_endpoint_auth_method as ClientAuthMethod;
    }
    if (input.client_name !== undefined) next.client_name = input.client_name;
    if (input.redirect_uris !== undefined) next.redirect_uris = [...input.redirect_uris];
    if (input.grant_types !== undefined) next.grant_types = [...input.grant_types];
    if (input.scopes !== undefined) next.scopes = [...input.scopes];
    if (input.audiences !== undefined) next.audiences = [...input.audiences];
    if (input.roles !== undefined) next.roles = [...input.roles];
    if (input.access_token_ttl !== undefined) next.access_token_ttl = input.access_token_ttl;
    if (input.refresh_token_ttl !== undefined) next.refresh_token_ttl = input.refresh_token_ttl;
    if (input.jwks !== undefined) next.jwks = input.jwks as Record<string, unknown> | null;
    if (input.jwks_uri !== undefined) next.jwks_uri = input.jwks_uri;
    if (input.disabled !== undefined) next.disabled = input.disabled;
    if (input.require_pushed_authorization_requests !== undefined) next.require_pushed_authorization_requests = input.require_pushed_authorization_requests;
    if (input.backchannel_logout_uri !== undefined) next.backchannel_logout_uri = input.backchannel_logout_uri;
    if (input.require_consent !== undefined) next.require_consent = input.require_consent;
    await this.#validate(next);
    if (!(await this.#o.store.updateClient(next))) throw notFound();
    return this.view({ record: next, fromFlags: false });
  }

  /** True when `secret` is the client's current secret, or its previous one within the rotation's overlap. */
  secretMatches(record: ClientRecord, secret: unknown): boolean {
    if (typeof secret !== 'string') return false;
    if (digestEqual(secret, record.secret_digest)) return true;
    const overlap = record.previous_secret_expires_at;
    return overlap !== null && overlap > this.#o.nowSeconds() && digestEqual(secret, record.previous_secret_digest);
  }

  /**
   * RFC 7592: a new registration access token for a registered client (the
   * previous one stops working); answered this once, stored as its digest.
   */
  async issueRegistrationToken(clientId: string): Promise<string> {
    const current = await this.#registered(clientId);
    const token = newSecret();
    if (!(await this.#o.store.updateClient({ ...current, registration_token_digest: digestOf(token) }))) throw notFound();
    return token;
  }

  /**
   * RFC 7592 §2: the client a registration access token is for. An unknown
   * client, one without a token and a wrong token are refused alike
   * (`unauthenticated`, reason `invalid_token`).
   */
  async byRegistrationToken(clientId: string, token: string | undefined): Promise<ClientRecord> {
    const refused = (): LatchkeyError => new LatchkeyError('unauthenticated', 'a valid registration access token is required', { reason: 'invalid_token' });
    const c = token === undefined ? undefined : await this.find(clientId);
    if (c === undefined || c.fromFlags || c.record.registration_token_digest === null || !digestEqual(token ?? '', c.record.registration_token_digest)) throw refused();
    return c.record;
  }

  /** `delete_client`: removes the client and revokes its API keys. */
  async delete(clientId: string): Promise<void> {
    const current = await this.#registered(clientId);
    if (!(await this.#o.store.deleteClient(current.client_id))) throw notFound();
    await this.#o.store.revokeAllOf(serviceAccountSubject(current.client_id), this.#o.nowSeconds());
  }

  /**
   * `rotate_client_secret`: a new secret (answered once); the previous one
   * keeps working for `overlapSeconds` (default one day, at most 30 days; 0
   * ends it at once). A secret presented during the overlap is checked
   * against both digests.
   */
  async rotateSecret(clientId: string, overlapSeconds = 86400): Promise<{ client: PublicClient; client_secret: string }> {
    const current = await this.#registered(clientId);
    if (!usesSecret(current.token_endpoint_auth_method)) throw new LatchkeyError('failed_precondition', `a ${current.token_endpoint_auth_method} client has no secret`, { reason: 'client_has_no_secret' });
    if (!Number.isInteger(overlapSeconds) || overlapSeconds < 0 || overlapSeconds > MAX_OVERLAP) throw bad(`overlap_seconds must be an integer from 0 to ${MAX_OVERLAP}`, 'invalid_overlap');
    const now = this.#o.nowSeconds();
    const secret = newSecret();
    const next: ClientRecord = {
      ...current,
      secret_digest: digestOf(secret),
      previous_secret_digest: overlapSeconds > 0 ? current.secret_digest : null,
      previous_secret_expires_at: overlapSeconds > 0 ? now + overlapSeconds : null,
      updated_at: now,
    };
    if (!(await this.#o.store.updateClient(next))) throw notFound();
    return { client: this.view({ record: next, fromFlags: false }), client_secret: secret };
  }

  async #validate(r: ClientRecord): Promise<void> {
    if (r.client_name.length === 0 || r.client_name.length > 256) throw bad('client_name must be 1 to 256 characters');
    const allowedGrants: readonly string[] = r.kind === 'service_account' ? SERVICE_GRANTS : INTERACTIVE_GRANTS;
    if (r.grant_types.length === 0) throw bad('grant_types must not be empty');
    for (const g of r.grant_types) if (!allowedGrants.includes(g)) throw bad(`grant type ${g} is not allowed for a ${r.kind} client (allowed: ${allowedGrants.join(', ')})`);
    if (new Set(r.grant_types).size !== r.grant_types.length) throw bad('grant_types has a duplicate');
    if (r.kind === 'service_account') {
      if (r.token_endpoint_auth_method === 'none') throw bad('a service account must authenticate (client_secret_basic, client_secret_post or private_key_jwt)');
      if (r.redirect_uris.length > 0) throw bad('a service account has no redirect_uris');
    } else {
      if (r.roles.length > 0) throw bad('roles are held by service accounts only; an interactive client acts for its users');
      if (r.grant_types.includes(GRANT_CODE) && r.redirect_uris.length === 0 && !r.grant_types.includes(GRANT_DEVICE_CODE)) throw bad('redirect_uris must not be empty for the authorization_code grant');
      if (r.application_type !== 'web' && r.token_endpoint_auth_method !== 'none' && r.token_endpoint_auth_method !== 'private_key_jwt') {
        throw bad(`a ${r.application_type} application cannot keep a secret: use token_endpoint_auth_method none (with PKCE)`);
      }
    }
    if (r.redirect_uris.length > 20) throw bad('at most 20 redirect_uris');
    for (const uri of r.redirect_uris) checkRedirectUriShape(uri, r.application_type);
    if (r.scopes.length > 100) throw bad('at most 100 scopes');
    for (const s of r.scopes) if (!SCOPE_TOKEN.test(s)) throw bad(`scope ${JSON.stringify(s)} is not a valid scope token (RFC 6749 §3.3)`);
    if (r.kind === 'interactive') for (const s of r.scopes) if (!this.#o.supportedScopes.includes(s)) throw bad(`scope ${s} is not supported (supported: ${this.#o.supportedScopes.join(', ')})`);
    if (r.audiences.length > 20) throw bad('at most 20 audiences');
    for (const a of r.audiences) if (a.length === 0 || a.length > 512 || /[\s\u0000-\u001f]/.test(a)) throw bad('an audience must be 1 to 512 characters without spaces');
    if (r.roles.length > 100) throw bad('at most 100 roles');
    for (const role of r.roles) {
      if (!ROLE.test(role)) throw bad(`role ${JSON.stringify(role)} is not valid`);
      if (!this.#o.roles.includes(role)) throw bad(`role ${role} is not one of the server's roles (--roles)`, 'invalid_roles');
    }
    if (r.backchannel_logout_uri !== null) {
      let u: URL | undefined;
      try {
        u = new URL(r.backchannel_logout_uri);
      } catch {
        u = undefined;
      }
      // Back-Channel Logout 1.0 §2.2: an absolute URL without a fragment; the server POSTs to it, so https (http only on loopback).
      if (u === undefined || u.hash !== '' || r.backchannel_logout_uri.includes('#') || r.backchannel_logout_uri.length > 2048) throw bad('backchannel_logout_uri must be an absolute URL without a fragment');
      if (u.protocol !== 'https:' && !(u.protocol === 'http:' && isLoopbackHost(u.hostname))) throw bad('backchannel_logout_uri must be https (http only on a loopback address)');
      if (r.kind !== 'interactive') throw bad('backchannel_logout_uri applies to interactive clients only');
    }
    checkTtl('access_token_ttl', r.access_token_ttl, 60, 86400);
    checkTtl('refresh_token_ttl', r.refresh_token_ttl, 60, 365 * 86400);
    if (r.token_endpoint_auth_method === 'private_key_jwt') {
      if ((r.jwks === null) === (r.jwks_uri === null)) throw bad('a private_key_jwt client needs exactly one of jwks and jwks_uri');
    } else if (r.jwks !== null || r.jwks_uri !== null) throw bad('jwks and jwks_uri apply to private_key_jwt clients only');
    if (r.jwks !== null) await checkJwks(r.jwks);
    if (r.jwks_uri !== null) {
      let u: URL;
      try {
        u = new URL(r.jwks_uri);
      } catch {
        throw bad('jwks_uri must be an absolute URL');
      }
      if (u.protocol !== 'https:' && !(u.protocol === 'http:' && isLoopbackHost(u.hostname))) throw bad('jwks_uri must be https (http only on a loopback address)');
      if (u.hash !== '' || u.username !== '' || u.password !== '') throw bad('jwks_uri must have no fragment and no credentials');
    }
  }

  // ---------------------------------------------------------------- redirect URIs

  /**
   * True when `uri` is one of the client's redirect URIs, compared exactly
   * (RFC 6749 §3.1.2.3, OAuth 2.1); for a native client, a loopback http URI
   * (`127.0.0.1` or `[::1]`) matches a registered one whatever its port
   * (RFC 8252 §7.3). The flags' client is checked by the caller's rule.
   */
  redirectAllowed(client: ClientRecord, uri: string): boolean {
    if (client.redirect_uris.includes(uri)) return true;
    if (client.application_type !== 'native') return false;
    let u: URL;
    try {
      u = new URL(uri);
    } catch {
      return false;
    }
    if (u.protocol !== 'http:' || (u.hostname !== '127.0.0.1' && u.hostname !== '[::1]')) return false;
    const portless = (x: URL): string => `${x.protocol}//${x.hostname}${x.pathname}${x.search}`;
    // The port may vary; nothing else may (and the URL parser must not have changed the text but for the port).
    const written = uri.replace(/^(http:\/\/(?:127\.0\.0\.1|\[::1\])):\d{1,5}/, '$1');
    return client.redirect_uris.some((registered) => {
      try {
        const r = new URL(registered);
        return r.protocol === 'http:' && r.hostname === u.hostname && portless(r) === portless(u) && registered.replace(/^(http:\/\/(?:127\.0\.0\.1|\[::1\]))(:\d{1,5})?/, '$1') === written;
      } catch {
        return false;
      }
    });
  }

}

const usesSecret = (m: ClientAuthMethod): boolean => m === 'client_secret_basic' || m === 'client_secret_post';
const newSecret = (): string => randomBytes(32).toString('base64url');

function checkTtl(name: string, v: number | null, min: number, max: number): void {
  if (v === null) return;
  if (!Number.isInteger(v) || v < min || v > max) throw bad(`${name} must be an integer from ${min} to ${max} seconds`);
}

/** RFC 8252 §7 and OAuth 2.1 §2.3: absolute, no fragment; https, or http on loopback; a native app may use a private-use scheme. */
function checkRedirectUriShape(uri: string, appType: ApplicationType): void {
  let u: URL;
  try {
    u = new URL(uri);
  } catch {
    throw bad(`redirect URI ${JSON.stringify(uri)} is not an absolute URI`, 'invalid_redirect_uri');
  }
  if (uri.length > 2048) throw bad('a redirect URI is at most 2048 characters', 'invalid_redirect_uri');
  if (u.hash !== '' || uri.includes('#')) throw bad(`redirect URI ${uri} must not have a fragment`, 'invalid_redirect_uri');
  if (u.username !== '' || u.password !== '') throw bad(`redirect URI ${uri} must not carry credentials`, 'invalid_redirect_uri');
  if (u.protocol === 'https:') return;
  if (u.protocol === 'http:' && isLoopbackHost(u.hostname)) return;
  if (appType === 'native' && /^[a-z][a-z0-9+.-]*\.[a-z0-9+.-]+:$/.test(u.protocol) && !['javascript:', 'data:', 'file:', 'vbscript:'].includes(u.protocol)) return;
  throw bad(`redirect URI ${uri} must use https (http only on a loopback address; a native app may use a reverse-domain private scheme)`, 'invalid_redirect_uri');
}

/** A JWK Set of public keys only, each usable for one of the assertion algorithms. */
async function checkJwks(jwks: Record<string, unknown>): Promise<void> {
  const keys = jwks['keys'];
  if (typeof jwks !== 'object' || !Array.isArray(keys) || keys.length === 0 || keys.length > 20) throw bad('jwks must be a JWK Set {"keys": [...]} of 1 to 20 keys');
  for (const k of keys as Record<string, unknown>[]) {
    if (typeof k !== 'object' || k === null) throw bad('every key of jwks must be an object');
    for (const priv of ['d', 'p', 'q', 'dp', 'dq', 'qi', 'k']) if (priv in k) throw bad('jwks must hold public keys only');
    if (k['kty'] !== 'RSA' && k['kty'] !== 'EC' && k['kty'] !== 'OKP') throw bad('jwks keys must be RSA, EC or OKP public keys');
    const alg = typeof k['alg'] === 'string' ? k['alg'] : k['kty'] === 'RSA' ? 'RS256' : k['kty'] === 'OKP' ? 'EdDSA' : k['crv'] === 'P-384' ? 'ES384' : k['crv'] === 'P-521' ? 'ES512' : 'ES256';
    if (!(CLIENT_ASSERTION_ALGORITHMS as readonly string[]).includes(alg)) throw bad(`key algorithm ${alg} is not accepted`);
    try {
      await jose().importJWK(k as JWK, alg);
    } catch {
      throw bad('a key of jwks could not be read');
    }
  }
}

/** The `iss` of an assertion, unverified (only to find the client whose keys verify it). */