/**
 * Enterprise sign-in connections (docs/sso.md) in the main SQL database,
 * migrated as the component `auth_sso`: one row per SAML 2.0 or OpenID
 * Connect connection of an organization, its mappings and its protocol
 * settings as JSON (they are read whole, never queried by part).
 */
import type { Transaction } from 'sequelize';
import { QueryTypes, type SqlDatabase } from '../engine/sql/sql_database.ts';
import { runMigrations, type Migration } from '../engine/sql/migrate.ts';
import { tableOptions } from './sql_charset.ts';
import type { StoreTransaction } from './main_database.ts';

export type SsoConnectionType = 'saml' | 'oidc';

/** Where the user's attributes are read from in an assertion or ID token (attribute or claim names). */
export interface SsoAttributeMapping {
  email: string;
  given_name: string;
  family_name: string;
  groups: string;
}

/** A group the identity provider sends, and what it means here: membership of a team, a role, or both. */
export interface SsoGroupRule {
  group: string;
  team_id?: string | undefined;
  role?: string | undefined;
}

/** A SAML 2.0 identity provider (docs/sso.md). */
export interface SamlSettings {
  /** The IdP's metadata, as given (XML), or fetched from `idp_metadata_url`. */
  idp_metadata_xml: string | null;
  idp_metadata_url: string | null;
  idp_entity_id: string;
  /** The IdP's SingleSignOnService (HTTP-Redirect binding). */
  idp_sso_url: string;
  /** The IdP's SingleLogoutService, when it has one. */
  idp_slo_url: string | null;
  /** The IdP's signing certificates, PEM or base64 DER (a rollover may list two). */
  idp_certificates: string[];
  /** Sign the AuthnRequests we send (with the connection's own key). */
  sign_requests: boolean;
  /** The connection's SP key pair (PEM), made when it is created: signs AuthnRequests when `sign_requests`. */
  sp_private_key: string;
  sp_certificate: string;
}

/** An OpenID Connect provider of one organization. */
export interface OidcSettings {
  issuer: string;
  client_id: string;
  client_secret: string;
  scopes: string[];
}

export interface SsoConnectionRecord {
  id: string;
  organization_id: string;
  type: SsoConnectionType;
  name: string;
  enabled: boolean;
  /** Verified domains of the organization whose addresses this connection signs in (lower case). */
  domains: string[];
  /** The role of a member this connection creates (null: the organization's default role). */
  default_role: string | null;
  attribute_mapping: SsoAttributeMapping;
  group_mapping: SsoGroupRule[];
  saml: SamlSettings | null;
  oidc: OidcSettings | null;
  created_at: number;
  updated_at: number;
}

const SSO_MIGRATIONS: Migration[] = [
  {
    id: '0001_create_sso_connections',
    async up({ sequelize, transaction, dialect }) {
      const q = (sql: string) => sequelize.query(sql, { transaction });
      await q(`CREATE TABLE sso_connections (
        id VARCHAR(36) NOT NULL PRIMARY KEY,
        organization_id VARCHAR(36) NOT NULL,
        type VARCHAR(8) NOT NULL,
        name VARCHAR(256) NOT NULL,
        enabled SMALLINT NOT NULL,
        domains TEXT NOT NULL,
        default_role VARCHAR(64) NULL,
        attribute_mapping TEXT NOT NULL,
        group_mapping TEXT NOT NULL,
        settings TEXT NOT NULL,
        created_at BIGINT NOT NULL,
        updated_at BIGINT NOT NULL)${tableOptions(dialect)}`);
      await q('CREATE INDEX sso_connections_org ON sso_connections (organization_id, created_at)');
    },
  },
];

const tx = (t: StoreTransaction | undefined): Transaction | undefined => t as Transaction | undefined;

function json<T>(v: unknown, fallback: T): T {
  try {
    return JSON.parse(String(v)) as T;
  } catch {
    return fallback;
  }
}

function connectionOf(r: Record<string, unknown>): SsoConnectionRecord {
  const type = String(r['type']) === 'oidc' ? 'oidc' : 'saml';
  const settings = json<Record<string, unknown>>(r['settings'], {});
  return {
    id: String(r['id']),
    organization_id: String(r['organization_id']),
    type,
    name: String(r['name']),
    enabled: Number(r['enabled']) === 1,
    domains: json<string[]>(r['domains'], []),
    default_role: r['default_role'] == null ? null : String(r['default_role']),
    attribute_mapping: json<SsoAttributeMapping>(r['attribute_mapping'], { email: '', given_name: '', family_name: '', groups: '' }),
    group_mapping: json<SsoGroupRule[]>(r['group_mapping'], []),
    saml: type === 'saml' ? (settings as unknown as SamlSettings) : null,
    oidc: type === 'oidc' ? (settings as unknown as OidcSettings) : null,
    created_at: Number(r['created_at']),
    updated_at: Number(r['updated_at']),
  };
}

function valuesOf(c: SsoConnectionRecord): unknown[] {
  return [
    c.organization_id, c.type, c.name, c.enabled ? 1 : 0, JSON.stringify(c.domains), c.default_role,
    JSON.stringify(c.attribute_mapping), JSON.stringify(c.group_mapping), JSON.stringify(c.type === 'saml' ? c.saml : c.oidc),
    c.created_at, c.updated_at,
  ];
}

/** The connection store on SQL. */
export class SqlSsoStore {
  readonly #db: SqlDatabase;

  constructor(options: { sequelize: SqlDatabase }) {
    this.#db = options.sequelize;
  }

  /** Runs the migrations (component `auth_sso`). Idempotent. */
  async init(): Promise<void> {
    await runMigrations(this.#db, 'auth_sso', SSO_MIGRATIONS);
  }

  async #select(sql: string, replacements: unknown[], t?: StoreTransaction): Promise<Record<string, unknown>[]> {
    const transaction = tx(t);
    return this.#db.query<Record<string, unknown>>(sql, { replacements, type: QueryTypes.SELECT, ...(transaction ? { transaction } : {}) });
  }

  async insert(c: SsoConnectionRecord, t: StoreTransaction): Promise<void> {
    await this.#db.query(
      'INSERT INTO sso_connections (id, organization_id, type, name, enabled, domains, default_role, attribute_mapping, group_mapping, settings, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
      { replacements: [c.id, ...valuesOf(c)], transaction: tx(t)! },
    );
  }

  /** Replaces a connection's row inside `t`; `false` when it is gone. */
  async update(c: SsoConnectionRecord, t: StoreTransaction): Promise<boolean> {
    const result = (await this.#db.query(
      'UPDATE sso_connections SET organization_id = ?, type = ?, name = ?, enabled = ?, domains = ?, default_role = ?, attribute_mapping = ?, group_mapping = ?, settings = ?, created_at = ?, updated_at = ? WHERE id = ?',
      { replacements: [...valuesOf(c), c.id], transaction: tx(t)!, type: QueryTypes.UPDATE },
    )) as unknown as [unknown, number];
    return Number(result[1]) === 1;
  }

  async connection(id: string, t?: StoreTransaction): Promise<SsoConnectionRecord | undefined> {
    const [row] = await this.#select('SELECT * FROM sso_connections WHERE id = ?', [id], t);
    return row === undefined ? undefined : connectionOf(row);
  }

  /** An organization's connections, oldest first. */
  async list(q: { organizationId: string; offset: number; limit: number }): Promise<{ connections: SsoConnectionRecord[]; total: number }> {
    const [count] = await this.#select('SELECT COUNT(*) AS n FROM sso_connections WHERE organization_id = ?', [q.organizationId]);
    const rows = await this.#select('SELECT * FROM sso_connections WHERE organization_id = ? ORDER BY created_at, id LIMIT ? OFFSET ?', [q.organizationId, q.limit, q.offset]);
    return { connections: rows.map(connectionOf), total: Number(count?.['n'] ?? 0) };
  }

  /** Every connection of an organization (a small set: discovery and domain checks read it whole). */
  async ofOrganization(organizationId: string, t?: StoreTransaction): Promise<SsoConnectionRecord[]> {
    return (await this.#select('SELECT * FROM sso_connections WHERE organization_id = ? ORDER BY created_at, id', [organizationId], t)).map(connectionOf);
  }

  /** Deletes a connection inside `t`; `false` when it was gone already. */
  async delete(id: string, t: StoreTransaction): Promise<boolean> {
    if ((await this.connection(id, t)) === undefined) return false;
    await this.#db.query('DELETE FROM sso_connections WHERE id = ?', { replacements: [id], transaction: tx(t)! });
    return true;
  }

  /** Removes an organization's connections inside `t` (its deletion). */
  async deleteOrganization(organizationId: string, t: StoreTransaction): Promise<void> {
    await this.#db.query('DELETE FROM sso_connections WHERE organization_id = ?', { replacements: [organizationId], transaction: tx(t)! });
  }
}
