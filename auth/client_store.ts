/**
 * The OAuth client registry and the API keys on the SQL main database:
 * - `oauth_clients`: one row per registered client (RFC 7591 metadata names
 *   where one exists): its kind (`interactive` or `service_account`), how it
 *   authenticates, its exact redirect URIs, the grant types, scopes and
 *   audiences it may ask for, its token lifetimes, its public keys
 *   (`jwks` by value or `jwks_uri`), and its secret as a SHA-256 digest, with
 *   the previous digest kept until the end of a rotation's overlap.
 * - `api_keys`: one row per API key: the public prefix that names it, the
 *   SHA-256 digest of its secret part, the principal it acts for
 *   (`user:<id>` or `service_account:<client_id>`), its name, scopes,
 *   optional organization and expiry, when it was last used and revoked.
 *
 * Secrets here are 256-bit random values, so one SHA-256 is as strong as any
 * slow hash (a slow hash defends low-entropy passwords, which these are not)
 * and costs a microsecond: the token endpoint can authenticate hundreds of
 * clients a second per core.
 */
import { QueryTypes, type SqlDatabase } from '../engine/sql/sql_database.ts';
import { runMigrations, type Migration } from '../engine/sql/migrate.ts';
import { isUniqueViolation } from './sql_conflicts.ts';
import { tableOptions } from './sql_charset.ts';
import { LatchkeyError } from '../engine/errors.ts';

export const CLIENT_MIGRATIONS: readonly Migration[] = [
  {
    id: '0001_oauth_clients',
    async up({ sequelize, transaction, dialect }) {
      await sequelize.query(
        `CREATE TABLE oauth_clients (
          client_id VARCHAR(128) NOT NULL PRIMARY KEY,
          client_name VARCHAR(256) NOT NULL,
          kind VARCHAR(32) NOT NULL,
          application_type VARCHAR(16) NOT NULL,
          token_endpoint_auth_method VARCHAR(32) NOT NULL,
          redirect_uris TEXT NOT NULL,
          grant_types TEXT NOT NULL,
          scopes TEXT NOT NULL,
          audiences TEXT NOT NULL,
          roles TEXT NOT NULL,
          access_token_ttl INTEGER NULL,
          refresh_token_ttl INTEGER NULL,
          jwks TEXT NULL,
          jwks_uri VARCHAR(2048) NULL,
          secret_digest CHAR(64) NULL,
          previous_secret_digest CHAR(64) NULL,
          previous_secret_expires_at BIGINT NULL,
          disabled BOOLEAN NOT NULL,
          created_at BIGINT NOT NULL,
          updated_at BIGINT NOT NULL)${tableOptions(dialect)}`,
        { transaction },
      );
    },
  },
  {
    id: '0002_api_keys',
    async up({ sequelize, transaction, dialect }) {
      await sequelize.query(
        `CREATE TABLE api_keys (
          id VARCHAR(32) NOT NULL PRIMARY KEY,
          digest CHAR(64) NOT NULL,
          principal VARCHAR(200) NOT NULL,
          name VARCHAR(256) NOT NULL,
          scopes TEXT NOT NULL,
          organization_id VARCHAR(128) NULL,
          expires_at BIGINT NULL,
          last_used_at BIGINT NULL,
          revoked_at BIGINT NULL,
          created_at BIGINT NOT NULL)${tableOptions(dialect)}`,
        { transaction },
      );
      await sequelize.query('CREATE INDEX api_keys_principal ON api_keys (principal)', { transaction });
    },
  },
  {
    id: '0003_require_par',
    async up({ sequelize, transaction }) {
      await sequelize.query('ALTER TABLE oauth_clients ADD COLUMN require_pushed_authorization_requests BOOLEAN NOT NULL DEFAULT FALSE', { transaction });
    },
  },
  {
    id: '0004_registration_token',
    async up({ sequelize, transaction }) {
      await sequelize.query('ALTER TABLE oauth_clients ADD COLUMN registration_token_digest CHAR(64) NULL', { transaction });
    },
  },
  {
    id: '0005_backchannel_logout_uri',
    async up({ sequelize, transaction }) {
      await sequelize.query('ALTER TABLE oauth_clients ADD COLUMN backchannel_logout_uri VARCHAR(2048) NULL', { transaction });
    },
  },
  {
    id: '0006_require_consent',
    async up({ sequelize, transaction }) {
      await sequelize.query('ALTER TABLE oauth_clients ADD COLUMN require_consent BOOLEAN NOT NULL DEFAULT FALSE', { transaction });
    },
  },
];

/** The algorithms of client assertions (`private_key_jwt`): asymmetric only, so a client's key is never held by the server. */
export const CLIENT_ASSERTION_ALGORITHMS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA'] as const;

export type ClientKind = 'interactive' | 'service_account';
export type ApplicationType = 'web' | 'native' | 'spa';
export type ClientAuthMethod = 'client_secret_basic' | 'client_secret_post' | 'private_key_jwt' | 'none';

/** A registered client as stored (digests, never secrets). Times are unix seconds. */
export interface ClientRecord {
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
  secret_digest: string | null;
  previous_secret_digest: string | null;
  previous_secret_expires_at: number | null;
  disabled: boolean;
  /** RFC 9126 §6: `/authorize` accepts this client's requests only through a pushed request. */
  require_pushed_authorization_requests: boolean;
  /** RFC 7592: the SHA-256 digest of the registration access token of a dynamically registered client. */
  registration_token_digest: string | null;
  /** OpenID Connect Back-Channel Logout 1.0: where the client takes logout tokens. */
  backchannel_logout_uri: string | null;
  /** Not first-party: `/authorize` asks the user's consent to the scopes (remembered per user and client; auth/consent.ts). */
  require_consent: boolean;
  created_at: number;
  updated_at: number;
}

/** An API key as stored. `id` is its public prefix. */
export interface ApiKeyRecord {
  id: string;
  digest: string;
  principal: string;
  name: string;
  scopes: string[];
  organization_id: string | null;
  expires_at: number | null;
  last_used_at: number | null;
  revoked_at: number | null;
  created_at: number;
}

/** Where clients and API keys live. Every method is one statement, so each change is whole or not at all. */
export interface ClientStore {
  init(): Promise<void>;
  insertClient(c: ClientRecord): Promise<void>;
  getClient(clientId: string): Promise<ClientRecord | undefined>;
  listClients(page: { offset: number; limit: number }): Promise<{ clients: ClientRecord[]; total: number }>;
  /** Replaces the row (same client_id); false when it no longer exists. */
  updateClient(c: ClientRecord): Promise<boolean>;
  deleteClient(clientId: string): Promise<boolean>;
  insertApiKey(k: ApiKeyRecord): Promise<void>;
  getApiKey(id: string): Promise<ApiKeyRecord | undefined>;
  listApiKeys(principal: string): Promise<ApiKeyRecord[]>;
  /** Sets revoked_at on a live key of `principal`; false when none was revoked. */
  revokeApiKey(id: string, principal: string, now: number): Promise<boolean>;
  touchApiKey(id: string, now: number): Promise<void>;
  /** Revokes every live key of `principal` (its client or user is gone). */
  revokeAllOf(principal: string, now: number): Promise<void>;
}

const json = <T>(v: unknown, fallback: T): T => {
  if (v === null || v === undefined) return fallback;
  try {
    return JSON.parse(String(v)) as T;
  } catch {
    return fallback;
  }
};
const num = (v: unknown): number => (typeof v === 'number' ? v : Number(v));
const numOrNull = (v: unknown): number | null => (v === null || v === undefined ? null : num(v));
const strOrNull = (v: unknown): string | null => (v === null || v === undefined ? null : String(v));

function clientOf(r: Record<string, unknown>): ClientRecord {
  return {
    client_id: String(r['client_id']),
    client_name: String(r['client_name']),
    kind: String(r['kind']) as ClientKind,
    application_type: String(r['application_type']) as ApplicationType,
    token_endpoint_auth_method: String(r['token_endpoint_auth_method']) as ClientAuthMethod,
    redirect_uris: json(r['redirect_uris'], []),
    grant_types: json(r['grant_types'], []),
    scopes: json(r['scopes'], []),
    audiences: json(r['audiences'], []),
    roles: json(r['roles'], []),
    access_token_ttl: numOrNull(r['access_token_ttl']),
    refresh_token_ttl: numOrNull(r['refresh_token_ttl']),
    jwks: json(r['jwks'], null),
    jwks_uri: strOrNull(r['jwks_uri']),
    secret_digest: strOrNull(r['secret_digest']),
    previous_secret_digest: strOrNull(r['previous_secret_digest']),
    previous_secret_expires_at: numOrNull(r['previous_secret_expires_at']),
    disabled: r['disabled'] === true || r['disabled'] === 1 || r['disabled'] === '1',
    require_pushed_authorization_requests: r['require_pushed_authorization_requests'] === true || r['require_pushed_authorization_requests'] === 1 || r['require_pushed_authorization_requests'] === '1',
    registration_token_digest: strOrNull(r['registration_token_digest']),
    backchannel_logout_uri: strOrNull(r['backchannel_logout_uri']),
    require_consent: r['require_consent'] === true || r['require_consent'] === 1 || r['require_consent'] === '1',
    created_at: num(r['created_at']),
    updated_at: num(r['updated_at']),
  };
}

function apiKeyOf(r: Record<string, unknown>): ApiKeyRecord {
  return {
    id: String(r['id']),
    digest: String(r['digest']),
    principal: String(r['principal']),
    name: String(r['name']),
    scopes: json(r['scopes'], []),
    organization_id: strOrNull(r['organization_id']),
    expires_at: numOrNull(r['expires_at']),
    last_used_at: numOrNull(r['last_used_at']),
    revoked_at: numOrNull(r['revoked_at']),
    created_at: num(r['created_at']),
  };
}

const CLIENT_COLUMNS = [
  'client_id',
  'client_name',
  'kind',
  'application_type',
  'token_endpoint_auth_method',
  'redirect_uris',
  'grant_types',
  'scopes',
  'audiences',
  'roles',
  'access_token_ttl',
  'refresh_token_ttl',
  'jwks',
  'jwks_uri',
  'secret_digest',
  'previous_secret_digest',
  'previous_secret_expires_at',
  'disabled',
  'require_pushed_authorization_requests',
  'registration_token_digest',
  'backchannel_logout_uri',
  'require_consent',
  'created_at',
  'updated_at',
] as const;

function clientValues(c: ClientRecord): unknown[] {
  return CLIENT_COLUMNS.map((k) => {
    const v = c[k];
    if (k === 'disabled' || k === 'require_pushed_authorization_requests' || k === 'require_consent') return v === true;
    if (Array.isArray(v) || (k === 'jwks' && v !== null)) return JSON.stringify(v);
    return v;
  });
}

/** The {@link ClientStore} on SQL (component `auth_clients`). */
export class SqlClientStore implements ClientStore {
  readonly #db: SqlDatabase;

  constructor(options: { sequelize: SqlDatabase }) {
    this.#db = options.sequelize;
  }

  async init(): Promise<void> {
    await runMigrations(this.#db, 'auth_clients', CLIENT_MIGRATIONS);
  }

  async insertClient(c: ClientRecord): Promise<void> {
    try {
      await this.#db.query(`INSERT INTO oauth_clients (${CLIENT_COLUMNS.join(', ')}) VALUES (${CLIENT_COLUMNS.map(() => '?').join(', ')})`, {
        replacements: clientValues(c),
      });
    } catch (err) {
      if (isUniqueViolation(err)) throw new LatchkeyError('already_exists', `client ${c.client_id} already exists`, { reason: 'client_already_exists' });
      throw err;
    }
  }

  async getClient(clientId: string): Promise<ClientRecord | undefined> {
    const rows = await this.#db.query<Record<string, unknown>>('SELECT * FROM oauth_clients WHERE client_id = ?', { replacements: [clientId], type: QueryTypes.SELECT });
    return rows[0] === undefined ? undefined : clientOf(rows[0]);
  }

  async listClients(page: { offset: number; limit: number }): Promise<{ clients: ClientRecord[]; total: number }> {
    const rows = await this.#db.query<Record<string, unknown>>('SELECT * FROM oauth_clients ORDER BY created_at, client_id LIMIT ? OFFSET ?', {
      replacements: [page.limit, page.offset],
      type: QueryTypes.SELECT,
    });
    const count = await this.#db.query<Record<string, unknown>>('SELECT COUNT(*) AS n FROM oauth_clients', { type: QueryTypes.SELECT });
    return { clients: rows.map(clientOf), total: num(count[0]?.['n'] ?? 0) };
  }

  async updateClient(c: ClientRecord): Promise<boolean> {
    const cols = CLIENT_COLUMNS.filter((k) => k !== 'client_id' && k !== 'created_at');
    const values = clientValues(c);
    const byName = new Map(CLIENT_COLUMNS.map((k, i) => [k, values[i]]));
    const result = (await this.#db.query(`UPDATE oauth_clients SET ${cols.map((k) => `${k} = ?`).join(', ')} WHERE client_id = ?`, {
      replacements: [...cols.map((k) => byName.get(k)), c.client_id],
      type: QueryTypes.UPDATE,
    })) as unknown as [unknown, number];
    return Number(result[1]) === 1;
  }

  async deleteClient(clientId: string): Promise<boolean> {
    return Number(await this.#db.query('DELETE FROM oauth_clients WHERE client_id = ?', { replacements: [clientId], type: QueryTypes.BULKDELETE })) === 1;
  }

  async insertApiKey(k: ApiKeyRecord): Promise<void> {
    await this.#db.query(
      'INSERT INTO api_keys (id, digest, principal, name, scopes, organization_id, expires_at, last_used_at, revoked_at, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, NULL, NULL, ?)',
      { replacements: [k.id, k.digest, k.principal, k.name, JSON.stringify(k.scopes), k.organization_id, k.expires_at, k.created_at] },
    );
  }

  async getApiKey(id: string): Promise<ApiKeyRecord | undefined> {
    const rows = await this.#db.query<Record<string, unknown>>('SELECT * FROM api_keys WHERE id = ?', { replacements: [id], type: QueryTypes.SELECT });
    return rows[0] === undefined ? undefined : apiKeyOf(rows[0]);
  }

  async listApiKeys(principal: string): Promise<ApiKeyRecord[]> {
    const rows = await this.#db.query<Record<string, unknown>>('SELECT * FROM api_keys WHERE principal = ? ORDER BY created_at, id', {
      replacements: [principal],
      type: QueryTypes.SELECT,
    });
    return rows.map(apiKeyOf);
  }

  async revokeApiKey(id: string, principal: string, now: number): Promise<boolean> {
    const result = (await this.#db.query('UPDATE api_keys SET revoked_at = ? WHERE id = ? AND principal = ? AND revoked_at IS NULL', {
      replacements: [now, id, principal],
      type: QueryTypes.UPDATE,
    })) as unknown as [unknown, number];
    return Number(result[1]) === 1;
  }

  async touchApiKey(id: string, now: number): Promise<void> {
    await this.#db.query('UPDATE api_keys SET last_used_at = ? WHERE id = ?', { replacements: [now, id] });
  }

  async revokeAllOf(principal: string, now: number): Promise<void> {
    await this.#db.query('UPDATE api_keys SET revoked_at = ? WHERE principal = ? AND revoked_at IS NULL', { replacements: [now, principal] });
  }
}

/**
 * The {@link ClientStore} of a process without a SQL main database
 * (DynamoDB): it holds nothing and refuses writes, so the registry serves the
 * `--client-id` client alone, as before the registry existed.
 */
export class UnavailableClientStore implements ClientStore {
  #refuse(): never {
    throw new LatchkeyError('failed_precondition', 'the client registry and API keys need a SQL main database', { reason: 'client_registry_unavailable' });
  }
  async init(): Promise<void> {}
  async insertClient(): Promise<void> {
    this.#refuse();
  }
  async getClient(): Promise<ClientRecord | undefined> {
    return undefined;
  }
  async listClients(): Promise<{ clients: ClientRecord[]; total: number }> {
    return { clients: [], total: 0 };
  }
  async updateClient(): Promise<boolean> {
    this.#refuse();
  }
  async deleteClient(): Promise<boolean> {
    this.#refuse();
  }
  async insertApiKey(): Promise<void> {
    this.#refuse();
  }
  async getApiKey(): Promise<ApiKeyRecord | undefined> {
    return undefined;
  }
  async listApiKeys(): Promise<ApiKeyRecord[]> {
    return [];
  }
  async revokeApiKey(): Promise<boolean> {
    this.#refuse();
  }
  async touchApiKey(): Promise<void> {}
  async revokeAllOf(): Promise<void> {}
}
