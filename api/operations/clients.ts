/**
 * The OAuth client registry (super-admin: `add_client`, `clients`, `client`,
 * `update_client`, `delete_client`, `rotate_client_secret`) and API keys
 * (`create_api_key`, `api_keys`, `revoke_api_key` for the caller, and their
 * `_`-prefixed admin twins for any principal).
 */
import { EMPTY, MESSAGE, s } from '../shape.ts';
import { PAGINATED, PAGINATION, PAGINATION_INPUT } from './admin_shapes.ts';
import { ALL_PROTOCOLS, defineOperation } from './types.ts';

const admin = <const N extends string>(name: N, path: string, grpcMethod: string) =>
  ({ name, auth: 'super_admin' as const, admin: true, protocols: ALL_PROTOCOLS, rest: { method: 'POST' as const, path }, grpc: { method: grpcMethod } }) as const;

const own = <const N extends string>(name: N, method: 'GET' | 'POST', grpcMethod: string) =>
  ({ name, auth: 'user' as const, admin: false, protocols: ALL_PROTOCOLS, rest: { method, path: `/v1/${name}` }, grpc: { method: grpcMethod } }) as const;

const STRINGS = (max: number, item = 2048) => s.optional(s.list(s.string({ maxLength: item }), { maxItems: max }));

/** A registered OAuth client (never its secret). */
export const CLIENT = s.object(
  'Client',
  {
    client_id: s.string(),
    client_name: s.string(),
    kind: s.string({ doc: 'interactive or service_account' }),
    application_type: s.string({ doc: 'web, native or spa (interactive clients)' }),
    token_endpoint_auth_method: s.string({ doc: 'client_secret_basic, client_secret_post, private_key_jwt or none' }),
    redirect_uris: s.list(s.string()),
    grant_types: s.list(s.string()),
    scopes: s.list(s.string()),
    audiences: s.list(s.string()),
    roles: s.list(s.string({ doc: 'Roles a service account holds' })),
    access_token_ttl: s.optional(s.int({ doc: 'Seconds; absent: the server default' })),
    refresh_token_ttl: s.optional(s.int({ doc: 'Seconds; absent: the server default' })),
    jwks: s.optional(s.json({ doc: 'The public keys of a private_key_jwt client, by value' })),
    jwks_uri: s.optional(s.string({ doc: 'Where the public keys of a private_key_jwt client are published' })),
    disabled: s.bool(),
    require_pushed_authorization_requests: s.bool({ doc: 'RFC 9126: /authorize accepts this client only through /oauth/par' }),
    backchannel_logout_uri: s.optional(s.string({ doc: 'OpenID Connect Back-Channel Logout 1.0: where the client takes logout tokens when a session of its ends' })),
    require_consent: s.bool({ doc: 'Not first-party: /authorize asks the user to allow the scopes (remembered per user and client, revocable in the account center)' }),
    configured_by_flags: s.bool({ doc: 'True for the --client-id client (changed through the flags only)' }),
    subject: s.optional(s.string({ doc: 'The FGA subject of a service account: service_account:<client_id>' })),
    previous_secret_expires_at: s.optional(s.int({ doc: 'Unix seconds until which the secret before the last rotation is still accepted' })),
    created_at: s.int({ doc: 'Unix seconds' }),
    updated_at: s.int({ doc: 'Unix seconds' }),
  },
  { doc: 'An OAuth client of the registry' },
);

const CLIENT_WITH_SECRET = s.object('ClientWithSecret', {
  client: CLIENT,
  client_secret: s.optional(s.string({ doc: 'Shown this once (secret-authenticated clients); only its digest is kept' })),
});

const CLIENT_FIELDS = {
  client_name: s.optional(s.string({ minLength: 1, maxLength: 256 })),
  redirect_uris: STRINGS(20),
  grant_types: STRINGS(10, 128),
  scopes: STRINGS(100, 128),
  audiences: STRINGS(20, 512),
  roles: STRINGS(100, 128),
  access_token_ttl: s.optional(s.int({ min: 60, max: 86400 })),
  refresh_token_ttl: s.optional(s.int({ min: 60, max: 365 * 86400 })),
  jwks: s.optional(s.json({ doc: 'A JWK Set of public keys: {"keys": [...]}' })),
  jwks_uri: s.optional(s.string({ maxLength: 2048 })),
  disabled: s.optional(s.bool()),
  require_pushed_authorization_requests: s.optional(s.bool()),
  backchannel_logout_uri: s.optional(s.string({ maxLength: 2048 })),
  require_consent: s.optional(s.bool()),
  token_endpoint_auth_method: s.optional(s.string({ maxLength: 32 })),
} as const;

const CLIENT_ID_INPUT = s.string({ minLength: 1, maxLength: 128 });

/** An API key (never its secret). */
export const API_KEY = s.object(
  'ApiKey',
  {
    id: s.string({ doc: 'The public prefix that names the key' }),
    prefix: s.string({ doc: 'How the key begins: lk_<id>' }),
    name: s.string(),
    principal: s.string({ doc: 'user:<id> or service_account:<client_id>' }),
    scopes: s.list(s.string()),
    organization_id: s.optional(s.string()),
    expires_at: s.optional(s.int({ doc: 'Unix seconds' })),
    last_used_at: s.optional(s.int({ doc: 'Unix seconds (recorded at most once a minute)' })),
    revoked_at: s.optional(s.int({ doc: 'Unix seconds' })),
    created_at: s.int({ doc: 'Unix seconds' }),
  },
  { doc: 'An API key' },
);

const NEW_API_KEY = s.object('NewApiKey', {
  api_key: s.string({ doc: 'The key, shown this once: send it as Authorization: Bearer <key> or x-api-key: <key>' }),
  key: API_KEY,
});

const API_KEY_FIELDS = {
  name: s.string({ minLength: 1, maxLength: 256 }),
  scopes: STRINGS(100, 128),
  expires_at: s.optional(s.int({ min: 0, doc: 'Unix seconds; absent: never' })),
  organization_id: s.optional(s.string({ maxLength: 128 })),
} as const;

const API_KEYS = s.object('ApiKeys', { api_keys: s.list(API_KEY) });

export const REGISTRY_OPERATIONS = [
  defineOperation({
    ...admin('add_client', '/v1/admin/add_client', 'AddClient'),
    kind: 'mutation',
    input: s.object('AddClientRequest', {
      client_id: s.optional(s.string({ minLength: 3, maxLength: 128, doc: 'Default: a random id' })),
      kind: s.optional(s.string({ maxLength: 32, doc: 'interactive (default) or service_account' })),
      application_type: s.optional(s.string({ maxLength: 16, doc: 'web (default), native or spa' })),
      ...CLIENT_FIELDS,
    }),
    output: CLIENT_WITH_SECRET,
    doc: 'Registers an OAuth client; a secret-authenticated client\'s secret is answered this once.',
  }),
  defineOperation({
    ...admin('clients', '/v1/admin/clients', 'Clients'),
    graphqlArg: { nullable: true },
    kind: 'query',
    input: s.object('ClientsRequest', { pagination: s.optional(PAGINATION_INPUT) }, PAGINATED),
    output: s.object('Clients', { clients: s.list(CLIENT), pagination: PAGINATION }),
    doc: 'The OAuth clients, the --client-id client first, then the registered ones oldest first, paginated.',
  }),
  defineOperation({
    ...admin('client', '/v1/admin/client', 'Client'),
    kind: 'query',
    input: s.object('ClientRequest', { client_id: CLIENT_ID_INPUT }),
    output: CLIENT,
    doc: 'One OAuth client.',
  }),
  defineOperation({
    ...admin('update_client', '/v1/admin/update_client', 'UpdateClient'),
    kind: 'mutation',
    input: s.object('UpdateClientRequest', { client_id: CLIENT_ID_INPUT, ...CLIENT_FIELDS }),
    output: CLIENT,
    doc: 'Changes a registered client (not its kind or application type; the authentication method only between client_secret_basic and client_secret_post).',
  }),
  defineOperation({
    ...admin('delete_client', '/v1/admin/delete_client', 'DeleteClient'),
    kind: 'mutation',
    input: s.object('DeleteClientRequest', { client_id: CLIENT_ID_INPUT }),
    output: MESSAGE,
    doc: 'Deletes a registered client; its service account\'s API keys are revoked and its tokens stop working at once.',
  }),
  defineOperation({
    ...admin('rotate_client_secret', '/v1/admin/rotate_client_secret', 'RotateClientSecret'),
    kind: 'mutation',
    input: s.object('RotateClientSecretRequest', {
      client_id: CLIENT_ID_INPUT,
      overlap_seconds: s.optional(s.int({ min: 0, max: 30 * 86400, doc: 'How long the previous secret keeps working (default 86400)' })),
    }),
    output: CLIENT_WITH_SECRET,
    doc: 'A new secret for a secret-authenticated client, answered this once; the previous one keeps working for the overlap.',
  }),
  defineOperation({
    ...own('create_api_key', 'POST', 'CreateApiKey'),
    kind: 'mutation',
    input: s.object('CreateApiKeyRequest', API_KEY_FIELDS),
    output: NEW_API_KEY,
    doc: 'An API key for the caller (a user or a service account), answered this once.',
  }),
  defineOperation({
    ...own('api_keys', 'GET', 'ApiKeys'),
    kind: 'query',
    input: EMPTY,
    output: API_KEYS,
    doc: 'The caller\'s API keys, revoked ones included.',
  }),
  defineOperation({
    ...own('revoke_api_key', 'POST', 'RevokeApiKey'),
    kind: 'mutation',
    input: s.object('RevokeApiKeyRequest', { id: s.string({ minLength: 1, maxLength: 128 }) }),
    output: MESSAGE,
    doc: 'Revokes one of the caller\'s API keys: refused from the next call on.',
  }),
  defineOperation({
    ...admin('admin_create_api_key', '/v1/admin/create_api_key', 'CreateApiKey'),
    graphql: '_create_api_key',
    kind: 'mutation',
    input: s.object('AdminCreateApiKeyRequest', { principal: s.string({ minLength: 1, maxLength: 200, doc: 'user:<id> or service_account:<client_id>' }), ...API_KEY_FIELDS }),
    output: NEW_API_KEY,
    doc: 'An API key for any user or service account, answered this once.',
  }),
  defineOperation({
    ...admin('admin_api_keys', '/v1/admin/api_keys', 'ApiKeys'),
    graphql: '_api_keys',
    kind: 'query',
    input: s.object('AdminApiKeysRequest', { principal: s.string({ minLength: 1, maxLength: 200 }) }),
    output: API_KEYS,
    doc: 'The API keys of a user or service account.',
  }),
  defineOperation({
    ...admin('admin_revoke_api_key', '/v1/admin/revoke_api_key', 'RevokeApiKey'),
    graphql: '_revoke_api_key',
    kind: 'mutation',
    input: s.object('AdminRevokeApiKeyRequest', { id: s.string({ minLength: 1, maxLength: 128 }) }),
    output: MESSAGE,
    doc: 'Revokes any API key.',
  }),
] as const;
