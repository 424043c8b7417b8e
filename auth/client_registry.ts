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
 * any port), and issues, lists, revokes and resolves API keys.
 *
 * The `--client-id` / `--client-secret` client of the flags is the first
 * client: it is answered from the flags, never from the store, behaves as it
 * always did (its redirects follow `--allowed-origins`, it may authenticate
 * with the secret in either place or as a public client with PKCE), and it
 * cannot be changed or deleted through the registry.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { createLocalJWKSet, createRemoteJWKSet, importJWK, jwtVerify, type JWK, type JWTVerifyGetKey } from 'jose';
import { LatchkeyError } from '../engine/errors.ts';
import { CLIENT_ASSERTION_ALGORITHMS, type ApiKeyRecord, type ApplicationType, type ClientAuthMethod, type ClientKind, type ClientRecord, type ClientStore } from './client_store.ts';

export { CLIENT_ASSERTION_ALGORITHMS };
import type { MemoryStore } from './memory_store.ts';
import { GRANT_DEVICE_CODE } from './device_flow.ts';
import { invalidClient, invalidRequest, safeEqual } from './oauth_common.ts';

export const GRANT_CODE = 'authorization_code';
export const GRANT_REFRESH = 'refresh_token';
export const GRANT_CLIENT_CREDENTIALS = 'client_credentials';
export const GRANT_TOKEN_EXCHANGE = 'urn:ietf:params:oauth:grant-type:token-exchange';
const JWT_BEARER_ASSERTION = 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer';

const INTERACTIVE_GRANTS = [GRANT_CODE, GRANT_REFRESH, GRANT_TOKEN_EXCHANGE, GRANT_DEVICE_CODE] as const;
const SERVICE_GRANTS = [GRANT_CLIENT_CREDENTIALS, GRANT_TOKEN_EXCHANGE] as const;
export const CLIENT_AUTH_METHODS: readonly ClientAuthMethod[] = ['client_secret_basic', 'client_secret_post', 'private_key_jwt', 'none'];

const CLIENT_ID = /^[A-Za-z0-9._~-]{3,128}$/;
const SCOPE_TOKEN = /^[\x21\x23-\x5B\x5D-\x7E]{1,128}$/;
const ROLE = /^[A-Za-z0-9._:-]{1,128}$/;
const MAX_LIST = 100;
const MAX_OVERLAP = 30 * 86400;
/** Failed client authentications allowed per client and window before the client is refused for the rest of it. */
const FAILURE_BUDGET = { max: 20, windowSeconds: 60 };
/** How far ahead a client assertion's `exp` may be (RFC 7523 §3: short-lived). */
const MAX_ASSERTION_LIFETIME = 600;

/** The client behind a request, registered or the flags' own. */
export interface ResolvedClient {
  readonly record: ClientRecord;
  /** True for the `--client-id` client of the flags. */
  readonly fromFlags: boolean;
}

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

/** An API key's wire view (never its secret). */
export interface PublicApiKey {
  id: string;
  prefix: string;
  name: string;
  principal: string;
  scopes: string[];
  organization_id: string | null;
  expires_at: number | null;
  last_used_at: number | null;
  revoked_at: number | null;
  created_at: number;
}

/** Who an API key acts for, once resolved. */
export interface ApiKeyPrincipal {
  kind: 'user' | 'service_account';
  /** The user id, or the client id of the service account. */
  id: string;
  key: ApiKeyRecord;
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

export const digestOf = (secret: string): string => createHash('sha256').update(secret, 'utf8').digest('hex');

function digestEqual(secret: string, digest: string | null): boolean {
  if (digest === null) return false;
  const a = Buffer.from(digestOf(secret), 'hex');
  const b = Buffer.from(digest, 'hex');
  return a.length === b.length && timingSafeEqual(a, b);
}

const bad = (message: string, reason = 'invalid_client_metadata'): LatchkeyError => new LatchkeyError('invalid_argument', message, { reason });
const notFound = (): LatchkeyError => new LatchkeyError('not_found', 'client not found', { reason: 'client_not_found' });
const isLoopbackHost = (host: string): boolean => host === '127.0.0.1' || host === '[::1]' || host === 'localhost';

/** The service-account FGA subject of a client id. */
export const serviceAccountSubject = (clientId: string): string => `service_account:${clientId}`;

/** The API key format: `lk_<prefix>_<secret>`; the prefix is public (it names the key), the secret is 256 random bits. */
const API_KEY = /^lk_([A-Za-z0-9]{16})_([A-Za-z0-9_-]{43})$/;

export class ClientRegistry {
  readonly #o: ClientRegistryOptions;
  readonly #remoteSets = new Map<string, JWTVerifyGetKey>();
  readonly #localSets = new Map<string, { at: number; set: JWTVerifyGetKey }>();

  constructor(options: ClientRegistryOptions) {
    this.#o = options;
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

  // ---------------------------------------------------------------- client authentication

  /**
   * Authenticates the client of a token, revocation or introspection request
   * (RFC 6749 §2.3): HTTP Basic, `client_secret` in the body, a
   * `client_assertion` (RFC 7523 §2.2, `private_key_jwt`), or `client_id`
   * alone (a public client). One method per request; a registered client
   * must use the method it registered. Failures are counted per client id and
   * refused for the rest of the window past the budget (`resource_exhausted`,
   * reason `too_many_attempts`), before any comparison. Errors:
   * `invalid_client` (one message whatever the cause), `invalid_request`.
   */
  async authenticate(p: Map<string, string>, authorization: string | undefined): Promise<{ client: ResolvedClient; method: ClientAuthMethod }> {
    let id = p.get('client_id');
    let secret = p.get('client_secret');
    const assertion = p.get('client_assertion');
    const assertionType = p.get('client_assertion_type');
    let method: ClientAuthMethod = 'none';
    const basic = authorization === undefined ? undefined : /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(authorization);
    if (basic) {
      if (secret !== undefined || assertion !== undefined) throw invalidRequest('use one client authentication method');
      const decoded = Buffer.from(basic[1] ?? '', 'base64').toString('utf8');
      const colon = decoded.indexOf(':');
      if (colon < 0) throw invalidClient();
      let basicId: string;
      try {
        basicId = decodeURIComponent(decoded.slice(0, colon).replace(/\+/g, ' '));
        secret = decodeURIComponent(decoded.slice(colon + 1).replace(/\+/g, ' '));
      } catch {
        throw invalidClient();
      }
      if (id !== undefined && id !== basicId) throw invalidRequest('client_id differs from the Authorization header');
      id = basicId;
      method = 'client_secret_basic';
    } else if (assertion !== undefined || assertionType !== undefined) {
      if (secret !== undefined) throw invalidRequest('use one client authentication method');
      if (assertionType !== JWT_BEARER_ASSERTION) throw invalidRequest(`client_assertion_type must be ${JWT_BEARER_ASSERTION}`);
      if (assertion === undefined) throw invalidRequest('client_assertion is required with client_assertion_type');
      const issuer = unverifiedIssuer(assertion);
      if (id !== undefined && id !== issuer) throw invalidClient();
      id = issuer;
      method = 'private_key_jwt';
    } else if (secret !== undefined) method = 'client_secret_post';
    if (id === undefined || id === '') throw invalidClient('client_id is required');

    const failures = `client_auth_failures:${digestOf(id).slice(0, 32)}`;
    const seen = Number((await this.#o.memory.get(failures)) ?? '0');
    if (seen >= FAILURE_BUDGET.max) {
      const retry = Math.max(1, await this.#o.memory.ttl(failures));
      throw new LatchkeyError('resource_exhausted', 'too many failed client authentications; try again later', { reason: 'too_many_attempts', details: { retry_after_seconds: retry } });
    }
    const fail = async (): Promise<never> => {
      await this.#o.memory.incr(failures, FAILURE_BUDGET.windowSeconds);
      throw invalidClient();
    };

    const client = await this.find(id);
    if (client === undefined || client.record.disabled) return fail();
    const r = client.record;
    if (client.fromFlags) {
      // The flags' client, as it always was: its secret in either place, or none (a public client with PKCE).
      if (method === 'private_key_jwt') return fail();
      if (secret !== undefined && !safeEqual(secret, this.#o.flagClient.clientSecret)) return fail();
      return { client, method };
    }
    if (method !== r.token_endpoint_auth_method) return fail();
    if (method === 'client_secret_basic' || method === 'client_secret_post') {
      const s = secret ?? '';
      const current = digestEqual(s, r.secret_digest);
      const previous = r.previous_secret_expires_at !== null && r.previous_secret_expires_at > this.#o.nowSeconds() && digestEqual(s, r.previous_secret_digest);
      if (!current && !previous) return fail();
    } else if (method === 'private_key_jwt') {
      if (!(await this.#assertionValid(r, assertion ?? ''))) return fail();
    }
    return { client, method };
  }

  /** RFC 7523 §3: signed by one of the client's keys, iss = sub = client_id, aud this issuer or its token endpoint, short-lived, never replayed. */
  async #assertionValid(r: ClientRecord, assertion: string): Promise<boolean> {
    const keys = this.#keySet(r);
    const now = this.#o.nowSeconds();
    let payload: Record<string, unknown>;
    try {
      ({ payload } = await jwtVerify(assertion, keys, {
        algorithms: [...CLIENT_ASSERTION_ALGORITHMS],
        issuer: r.client_id,
        subject: r.client_id,
        audience: [this.#o.issuer, `${this.#o.issuer}/oauth/token`],
        requiredClaims: ['exp', 'jti'],
        clockTolerance: 30,
        currentDate: new Date(now * 1000),
      }));
    } catch {
      return false;
    }
    const exp = Number(payload['exp']);
    const jti = payload['jti'];
    if (typeof jti !== 'string' || jti.length === 0 || jti.length > 256) return false;
    if (exp - now > MAX_ASSERTION_LIFETIME) return false;
    // A replayed assertion is refused: its jti is remembered until it expires (shared across processes with Redis).
    return this.#o.memory.setIfAbsent(`client_assertion:${digestOf(`${r.client_id}\n${jti}`)}`, '1', Math.max(1, exp - now + 31));
  }

  #keySet(r: ClientRecord): JWTVerifyGetKey {
    if (r.jwks_uri !== null) {
      let set = this.#remoteSets.get(r.jwks_uri);
      if (set === undefined) {
        set = createRemoteJWKSet(new URL(r.jwks_uri), { timeoutDuration: 3000, cooldownDuration: 30_000, cacheMaxAge: 600_000 });
        if (this.#remoteSets.size > 1000) this.#remoteSets.clear();
        this.#remoteSets.set(r.jwks_uri, set);
      }
      return set;
    }
    const cached = this.#localSets.get(r.client_id);
    if (cached !== undefined && cached.at === r.updated_at) return cached.set;
    const set = createLocalJWKSet(r.jwks as unknown as { keys: JWK[] });
    if (this.#localSets.size > 1000) this.#localSets.clear();
    this.#localSets.set(r.client_id, { at: r.updated_at, set });
    return set;
  }

  // ---------------------------------------------------------------- API keys

  /**
   * `create_api_key`: a key for `principal` (`user:<id>` or
   * `service_account:<client_id>`), answered once as `lk_<prefix>_<secret>`;
   * only the digest of the secret is stored, under the public prefix.
   */
  async createApiKey(principal: string, input: { name: string; scopes?: readonly string[] | undefined; expires_at?: number | null | undefined; organization_id?: string | null | undefined }): Promise<{ api_key: string; key: PublicApiKey }> {
    const now = this.#o.nowSeconds();
    const name = input.name.trim();
    if (name.length === 0 || name.length > 256) throw bad('name must be 1 to 256 characters', 'invalid_api_key');
    const scopes = [...new Set(input.scopes ?? [])];
    for (const s of scopes) if (!SCOPE_TOKEN.test(s)) throw bad(`scope ${JSON.stringify(s)} is not a valid scope token`, 'invalid_api_key');
    if (scopes.length > 100) throw bad('at most 100 scopes', 'invalid_api_key');
    const expires = input.expires_at ?? null;
    if (expires !== null && (!Number.isInteger(expires) || expires <= now)) throw bad('expires_at must be a unix time in the future', 'invalid_api_key');
    const org = input.organization_id ?? null;
    if (org !== null && !/^[A-Za-z0-9._:-]{1,128}$/.test(org)) throw bad('organization_id is not valid', 'invalid_api_key');
    const keys = await this.#o.store.listApiKeys(principal);
    if (keys.filter((k) => k.revoked_at === null).length >= 100) throw new LatchkeyError('resource_exhausted', 'at most 100 live API keys per principal', { reason: 'too_many_api_keys' });
    const prefix = alnum(16);
    const secret = randomBytes(32).toString('base64url');
    const record: ApiKeyRecord = { id: prefix, digest: digestOf(secret), principal, name, scopes, organization_id: org, expires_at: expires, last_used_at: null, revoked_at: null, created_at: now };
    await this.#o.store.insertApiKey(record);
    return { api_key: `lk_${prefix}_${secret}`, key: apiKeyView(record) };
  }

  /** `api_keys`: the keys of `principal`, revoked ones included. */
  async listApiKeys(principal: string): Promise<PublicApiKey[]> {
    return (await this.#o.store.listApiKeys(principal)).map(apiKeyView);
  }

  /** `revoke_api_key`: refused from the next call on. `not_found` for a key that is not the principal's or already revoked. */
  async revokeApiKey(principal: string, id: string): Promise<void> {
    const prefix = id.startsWith('lk_') ? id.slice(3, 19) : id;
    if (!(await this.#o.store.revokeApiKey(prefix, principal, this.#o.nowSeconds()))) throw new LatchkeyError('not_found', 'API key not found', { reason: 'api_key_not_found' });
  }

  /** True when `value` has the shape of an API key (so a bearer credential is tried as one). */
  static looksLikeApiKey(value: string): boolean {
    return API_KEY.test(value);
  }

  /**
   * The principal of an API key: live (not revoked, not expired), its secret
   * matching, its service account still registered and enabled. Records the
   * use (at most once a minute per key). Undefined for anything else.
   */
  async resolveApiKey(value: string): Promise<ApiKeyPrincipal | undefined> {
    const m = API_KEY.exec(value);
    if (!m) return undefined;
    const key = await this.#o.store.getApiKey(m[1] ?? '');
    const ok = key !== undefined && digestEqual(m[2] ?? '', key.digest);
    const now = this.#o.nowSeconds();
    if (!ok || key.revoked_at !== null || (key.expires_at !== null && key.expires_at <= now)) return undefined;
    let kind: 'user' | 'service_account';
    let id: string;
    if (key.principal.startsWith('user:')) {
      kind = 'user';
      id = key.principal.slice(5);
    } else if (key.principal.startsWith('service_account:')) {
      kind = 'service_account';
      id = key.principal.slice(16);
      const client = await this.#o.store.getClient(id);
      if (client === undefined || client.disabled || client.kind !== 'service_account') return undefined;
    } else return undefined;
    if (key.last_used_at === null || now - key.last_used_at >= 60) await this.#o.store.touchApiKey(key.id, now);
    return { kind, id, key };
  }
}

function apiKeyView(k: ApiKeyRecord): PublicApiKey {
  return {
    id: k.id,
    prefix: `lk_${k.id}`,
    name: k.name,
    principal: k.principal,
    scopes: k.scopes,
    organization_id: k.organization_id,
    expires_at: k.expires_at,
    last_used_at: k.last_used_at,
    revoked_at: k.revoked_at,
    created_at: k.created_at,
  };
}

const usesSecret = (m: ClientAuthMethod): boolean => m === 'client_secret_basic' || m === 'client_secret_post';
const newSecret = (): string => randomBytes(32).toString('base64url');

function alnum(n: number): string {
  const chars = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
  const out: string[] = [];
  while (out.length < n) {
    for (const b of randomBytes(n * 2)) {
      if (b < 248 && out.length < n) out.push(chars[b % 62] as string);
    }
  }
  return out.join('');
}

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
      await importJWK(k as JWK, alg);
    } catch {
      throw bad('a key of jwks could not be read');
    }
  }
}

/** The `iss` of an assertion, unverified (only to find the client whose keys verify it). */
function unverifiedIssuer(assertion: string): string {
  const parts = assertion.split('.');
  if (parts.length !== 3 || assertion.length > 16384) throw invalidClient();
  try {
    const payload = JSON.parse(Buffer.from(parts[1] ?? '', 'base64url').toString('utf8')) as Record<string, unknown>;
    if (typeof payload['iss'] !== 'string' || payload['iss'] === '') throw invalidClient();
    return payload['iss'];
  } catch {
    throw invalidClient();
  }
}
