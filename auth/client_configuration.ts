/**
 * Dynamic client registration's documents (RFC 7591 §2, §3.2.1) and the
 * client configuration endpoint (RFC 7592): the metadata a client sends
 * (read into the registry's {@link ClientInput}), the client information
 * answered, and reading, replacing and deleting a registration with its
 * registration access token at `registration_client_uri`
 * (`<issuer>/oauth/register?client_id=<id>`).
 *
 * Errors: `invalid_client_metadata`, `invalid_redirect_uri` (400),
 * `invalid_token` (401: an unknown client, or a missing or wrong token,
 * alike, §2.1).
 */
import { LatchkeyError } from '../engine/errors.ts';
import { GRANT_CLIENT_CREDENTIALS, type ClientInput, type ClientRegistry, type PublicClient } from './client_registry.ts';
import type { ClientRecord } from './client_store.ts';

const invalidMetadata = (message: string): LatchkeyError => new LatchkeyError('invalid_argument', message, { reason: 'invalid_client_metadata' });

/**
 * The registry input of a client metadata document. Only what registration
 * may set: roles, audiences and lifetimes are the admin API's. `jwks_uri`
 * must be https (the server fetches it, and open registration must not make
 * it fetch loopback or plain-text URLs).
 */
export function clientMetadataInput(body: Readonly<Record<string, unknown>>): ClientInput {
  const strings = (name: string): string[] | undefined => {
    const v = body[name];
    if (v === undefined || v === null) return undefined;
    if (!Array.isArray(v) || v.some((x) => typeof x !== 'string')) throw invalidMetadata(`${name} must be an array of strings`);
    return v as string[];
  };
  const text = (name: string): string | undefined => {
    const v = body[name];
    if (v === undefined || v === null) return undefined;
    if (typeof v !== 'string') throw invalidMetadata(`${name} must be a string`);
    return v;
  };
  const grantTypes = strings('grant_types');
  const jwksUri = text('jwks_uri');
  if (jwksUri !== undefined && !/^https:\/\//i.test(jwksUri)) throw invalidMetadata('jwks_uri must be an https URL');
  const scope = text('scope');
  const logoutUri = text('backchannel_logout_uri');
  if (logoutUri !== undefined && !/^https:\/\//i.test(logoutUri)) throw invalidMetadata('backchannel_logout_uri must be an https URL');
  const jwks = body['jwks'];
  if (jwks !== undefined && (jwks === null || typeof jwks !== 'object' || Array.isArray(jwks))) throw invalidMetadata('jwks must be a JWK Set');
  return {
    kind: grantTypes?.includes(GRANT_CLIENT_CREDENTIALS) ? 'service_account' : 'interactive',
    client_name: text('client_name'),
    application_type: text('application_type'),
    token_endpoint_auth_method: text('token_endpoint_auth_method'),
    redirect_uris: strings('redirect_uris'),
    grant_types: grantTypes,
    scopes: scope === undefined ? undefined : scope.split(' ').filter(Boolean),
    jwks: jwks ?? undefined,
    jwks_uri: jwksUri,
    ...(logoutUri === undefined ? {} : { backchannel_logout_uri: logoutUri }),
  };
}

/** The client information response (RFC 7591 §3.2.1) of a client. */
export function clientInformation(client: PublicClient | ClientRecord): Record<string, unknown> {
  return {
    client_id: client.client_id,
    client_id_issued_at: client.created_at,
    client_name: client.client_name,
    application_type: client.application_type,
    token_endpoint_auth_method: client.token_endpoint_auth_method,
    redirect_uris: client.redirect_uris,
    grant_types: client.grant_types,
    scope: client.scopes.join(' '),
    ...(client.jwks === null ? {} : { jwks: client.jwks }),
    ...(client.jwks_uri === null ? {} : { jwks_uri: client.jwks_uri }),
    ...(client.backchannel_logout_uri === null ? {} : { backchannel_logout_uri: client.backchannel_logout_uri, backchannel_logout_session_required: true }),
  };
}

/** The client configuration endpoint (RFC 7592) of a registry. */
export class ClientConfiguration {
  readonly #registry: ClientRegistry;
  readonly #issuer: string;
  readonly #defaultScopes: readonly string[];

  /** `defaultScopes`: an interactive client's scopes when its document names none. */
  constructor(registry: ClientRegistry, issuer: string, defaultScopes: readonly string[]) {
    this.#registry = registry;
    this.#issuer = issuer;
    this.#defaultScopes = defaultScopes;
  }

  /** Where a client reads, replaces and deletes its registration. */
  clientUri(clientId: string): string {
    return `${this.#issuer}/oauth/register?client_id=${encodeURIComponent(clientId)}`;
  }

  /** The registration answer of a newly registered client: its information, a registration access token and its configuration URI. */
  async registered(info: Record<string, unknown>, clientId: string): Promise<Record<string, unknown>> {
    const token = await this.#registry.issueRegistrationToken(clientId);
    return { ...info, registration_access_token: token, registration_client_uri: this.clientUri(clientId) };
  }

  /** `GET` (§2.1): the client's current information. */
  async read(clientId: string, authorization: string | undefined): Promise<Record<string, unknown>> {
    const record = await this.#registry.byRegistrationToken(clientId, bearerOf(authorization));
    return { ...clientInformation(record), registration_client_uri: this.clientUri(clientId) };
  }

  /**
   * `PUT` (§2.2): replaces the client's metadata with the document's. Fields
   * left out go back to their defaults (no redirect URIs, the kind's default
   * grant types and scopes, no keys, the client id as its name); `client_id`
   * must be the client's; a `client_secret` in the document must be the
   * current one (it is never changed here). The kind and the authentication
   * method family cannot change (`invalid_client_metadata`).
   */
  async update(clientId: string, authorization: string | undefined, body: Readonly<Record<string, unknown>>): Promise<Record<string, unknown>> {
    const record = await this.#registry.byRegistrationToken(clientId, bearerOf(authorization));
    if (body['client_id'] !== clientId) throw invalidMetadata('client_id must be the registered client\'s');
    if (body['client_secret'] !== undefined && !this.#registry.secretMatches(record, body['client_secret'])) throw invalidMetadata('client_secret does not match the client\'s');
    const input = clientMetadataInput(body);
    if (input.kind !== record.kind) throw invalidMetadata('grant_types cannot move a client between interactive and service account');
    const replaced: ClientInput = {
      client_name: input.client_name ?? clientId,
      redirect_uris: input.redirect_uris ?? [],
      grant_types: input.grant_types ?? (record.kind === 'service_account' ? [GRANT_CLIENT_CREDENTIALS] : ['authorization_code', 'refresh_token']),
      scopes: input.scopes ?? (record.kind === 'service_account' ? [] : [...this.#defaultScopes]),
      jwks: input.jwks ?? null,
      jwks_uri: input.jwks_uri ?? null,
      backchannel_logout_uri: input.backchannel_logout_uri ?? null,
      ...(input.application_type === undefined ? {} : { application_type: input.application_type }),
      ...(input.token_endpoint_auth_method === undefined ? {} : { token_endpoint_auth_method: input.token_endpoint_auth_method }),
    };
    const client = await this.#registry.update(clientId, replaced);
    return { ...clientInformation(client), registration_client_uri: this.clientUri(clientId) };
  }

  /** `DELETE` (§2.3): removes the client (its registration access token with it). */
  async delete(clientId: string, authorization: string | undefined): Promise<void> {
    await this.#registry.byRegistrationToken(clientId, bearerOf(authorization));
    await this.#registry.delete(clientId);
  }
}

function bearerOf(authorization: string | undefined): string | undefined {
  return authorization === undefined ? undefined : /^Bearer\s+(\S+)\s*$/i.exec(authorization)?.[1];
}
