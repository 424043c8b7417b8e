/**
 * SCIM bearer tokens per organization (docs/scim.md), in the main SQL
 * database, migrated as the component `auth_scim`. A token is shown once when
 * created; the row keeps its public prefix (to find it and to show which
 * token is which) and the SHA-256 digest of the whole token: the secret is
 * 32 random bytes, so a fast hash is enough (nothing to guess a dictionary
 * word from), and a check costs one indexed read.
 */
import type { Transaction } from 'sequelize';
import { QueryTypes, isUniqueConstraintError, type SqlDatabase } from '../engine/sql/sql_database.ts';
import { LatchkeyError } from '../engine/errors.ts';
import { runMigrations, type Migration } from '../engine/sql/migrate.ts';
import { tableOptions } from './sql_charset.ts';
import type { StoreTransaction } from './main_database.ts';

export interface ScimTokenRecord {
  id: string;
  organization_id: string;
  /** The token's public part, e.g. `lks_1a2b3c4d5e6f7a8b` (unique). */
  prefix: string;
  description: string;
  created_at: number;
  created_by: string;
  last_used_at: number | null;
  revoked_at: number | null;
}

const SCIM_MIGRATIONS: Migration[] = [
  {
    id: '0001_create_scim_tokens',
    async up({ sequelize, transaction, dialect }) {
      const q = (sql: string) => sequelize.query(sql, { transaction });
      await q(`CREATE TABLE scim_tokens (
        id VARCHAR(36) NOT NULL PRIMARY KEY,
        organization_id VARCHAR(36) NOT NULL,
        prefix VARCHAR(32) NOT NULL,
        secret_hash VARCHAR(64) NOT NULL,
        description VARCHAR(256) NOT NULL,
        created_at BIGINT NOT NULL,
        created_by VARCHAR(64) NOT NULL,
        last_used_at BIGINT NULL,
        revoked_at BIGINT NULL)${tableOptions(dialect)}`);
      await q('CREATE UNIQUE INDEX scim_tokens_prefix ON scim_tokens (prefix)');
      await q('CREATE INDEX scim_tokens_org ON scim_tokens (organization_id, created_at)');
    },
  },
  {
    id: '0002_create_scim_resources',
    async up({ sequelize, transaction, dialect }) {
      const q = (sql: string) => sequelize.query(sql, { transaction });
      const opts = tableOptions(dialect);
      // A user provisioned (or linked) by an organization's directory: its SCIM attributes and its state there.
      await q(`CREATE TABLE scim_users (
        organization_id VARCHAR(36) NOT NULL,
        user_id VARCHAR(36) NOT NULL,
        user_name VARCHAR(320) NOT NULL,
        external_id VARCHAR(256) NULL,
        active SMALLINT NOT NULL,
        attributes TEXT NOT NULL,
        created_at BIGINT NOT NULL,
        updated_at BIGINT NOT NULL,
        PRIMARY KEY (organization_id, user_id))${opts}`);
      await q('CREATE UNIQUE INDEX scim_users_name ON scim_users (organization_id, user_name)');
      await q('CREATE INDEX scim_users_user ON scim_users (user_id)');
      // A team's SCIM side: its externalId and when the directory last changed it.
      await q(`CREATE TABLE scim_groups (
        team_id VARCHAR(36) NOT NULL PRIMARY KEY,
        organization_id VARCHAR(36) NOT NULL,
        external_id VARCHAR(256) NULL,
        updated_at BIGINT NOT NULL)${opts}`);
    },
  },
];

/** A user as the organization's directory sees it. */
export interface ScimUserRow {
  organization_id: string;
  user_id: string;
  /** Lower-cased (unique within the organization). */
  user_name: string;
  external_id: string | null;
  active: boolean;
  attributes: Record<string, unknown>;
  created_at: number;
  updated_at: number;
}

function scimUserOf(r: Record<string, unknown>): ScimUserRow {
  let attributes: Record<string, unknown> = {};
  try {
    attributes = JSON.parse(String(r['attributes'])) as Record<string, unknown>;
  } catch {
    attributes = {};
  }
  return {
    organization_id: String(r['organization_id']),
    user_id: String(r['user_id']),
    user_name: String(r['user_name']),
    external_id: r['external_id'] == null ? null : String(r['external_id']),
    active: Number(r['active']) === 1,
    attributes,
    created_at: Number(r['created_at']),
    updated_at: Number(r['updated_at']),
  };
}

const tx = (t: StoreTransaction | undefined): Transaction | undefined => t as Transaction | undefined;

function tokenOf(r: Record<string, unknown>): ScimTokenRecord & { secret_hash: string } {
  return {
    id: String(r['id']),
    organization_id: String(r['organization_id']),
    prefix: String(r['prefix']),
    secret_hash: String(r['secret_hash']),
    description: String(r['description']),
    created_at: Number(r['created_at']),
    created_by: String(r['created_by']),
    last_used_at: r['last_used_at'] == null ? null : Number(r['last_used_at']),
    revoked_at: r['revoked_at'] == null ? null : Number(r['revoked_at']),
  };
}

/** The SCIM token store on SQL. */
export class SqlScimStore {
  readonly #db: SqlDatabase;

  constructor(options: { sequelize: SqlDatabase }) {
    this.#db = options.sequelize;
  }

  /** Runs the migrations (component `auth_scim`). Idempotent. */
  async init(): Promise<void> {
    await runMigrations(this.#db, 'auth_scim', SCIM_MIGRATIONS);
  }

  async #select(sql: string, replacements: unknown[], t?: StoreTransaction): Promise<Record<string, unknown>[]> {
    const transaction = tx(t);
    return this.#db.query<Record<string, unknown>>(sql, { replacements, type: QueryTypes.SELECT, ...(transaction ? { transaction } : {}) });
  }

  async insertToken(r: ScimTokenRecord & { secret_hash: string }, t: StoreTransaction): Promise<void> {
    await this.#db.query(
      'INSERT INTO scim_tokens (id, organization_id, prefix, secret_hash, description, created_at, created_by, last_used_at, revoked_at) VALUES (?, ?, ?, ?, ?, ?, ?, NULL, NULL)',
      { replacements: [r.id, r.organization_id, r.prefix, r.secret_hash, r.description, r.created_at, r.created_by], transaction: tx(t)! },
    );
  }

  /** A token by its public prefix (revoked ones included). */
  async tokenByPrefix(prefix: string): Promise<(ScimTokenRecord & { secret_hash: string }) | undefined> {
    const [row] = await this.#select('SELECT * FROM scim_tokens WHERE prefix = ?', [prefix]);
    return row === undefined ? undefined : tokenOf(row);
  }

  async token(id: string, t?: StoreTransaction): Promise<ScimTokenRecord | undefined> {
    const [row] = await this.#select('SELECT * FROM scim_tokens WHERE id = ?', [id], t);
    return row === undefined ? undefined : tokenOf(row);
  }

  /** An organization's tokens, newest first (revoked ones included: they show when they stopped working). */
  async listTokens(q: { organizationId: string; offset: number; limit: number }): Promise<{ tokens: ScimTokenRecord[]; total: number }> {
    const [count] = await this.#select('SELECT COUNT(*) AS n FROM scim_tokens WHERE organization_id = ?', [q.organizationId]);
    const rows = await this.#select('SELECT * FROM scim_tokens WHERE organization_id = ? ORDER BY created_at DESC, id LIMIT ? OFFSET ?', [q.organizationId, q.limit, q.offset]);
    return { tokens: rows.map(tokenOf), total: Number(count?.['n'] ?? 0) };
  }

  /** Marks a live token revoked inside `t`; `false` when it was revoked already. */
  async revokeToken(id: string, now: number, t: StoreTransaction): Promise<boolean> {
    const result = (await this.#db.query('UPDATE scim_tokens SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL', {
      replacements: [now, id],
      transaction: tx(t)!,
      type: QueryTypes.UPDATE,
    })) as unknown as [unknown, number];
    return Number(result[1]) === 1;
  }

  /** Revokes every token of an organization inside `t` (its deletion). */
  async revokeOrganizationTokens(organizationId: string, now: number, t: StoreTransaction): Promise<void> {
    await this.#db.query('UPDATE scim_tokens SET revoked_at = ? WHERE organization_id = ? AND revoked_at IS NULL', { replacements: [now, organizationId], transaction: tx(t)! });
  }

  // ---------------------------------------------------------------- SCIM users and groups

  async scimUser(organizationId: string, userId: string, t?: StoreTransaction): Promise<ScimUserRow | undefined> {
    const [row] = await this.#select('SELECT * FROM scim_users WHERE organization_id = ? AND user_id = ?', [organizationId, userId], t);
    return row === undefined ? undefined : scimUserOf(row);
  }

  async scimUserByName(organizationId: string, userName: string, t?: StoreTransaction): Promise<ScimUserRow | undefined> {
    const [row] = await this.#select('SELECT * FROM scim_users WHERE organization_id = ? AND user_name = ?', [organizationId, userName], t);
    return row === undefined ? undefined : scimUserOf(row);
  }

  /** An organization's SCIM users, oldest first, `limit` of them from `offset`. */
  async scimUsers(organizationId: string, limit: number, offset = 0): Promise<ScimUserRow[]> {
    return (await this.#select('SELECT * FROM scim_users WHERE organization_id = ? ORDER BY created_at, user_id LIMIT ? OFFSET ?', [organizationId, limit, offset])).map(scimUserOf);
  }

  async countScimUsers(organizationId: string): Promise<number> {
    const [row] = await this.#select('SELECT COUNT(*) AS n FROM scim_users WHERE organization_id = ?', [organizationId]);
    return Number(row?.['n'] ?? 0);
  }

  /** Inserts or replaces a SCIM user row inside `t`. */
  async putScimUser(r: ScimUserRow, t: StoreTransaction): Promise<void> {
    const transaction = tx(t)!;
    await this.#db.query('DELETE FROM scim_users WHERE organization_id = ? AND user_id = ?', { replacements: [r.organization_id, r.user_id], transaction });
    try {
      await this.#db.query(
        'INSERT INTO scim_users (organization_id, user_id, user_name, external_id, active, attributes, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
        { replacements: [r.organization_id, r.user_id, r.user_name, r.external_id, r.active ? 1 : 0, JSON.stringify(r.attributes), r.created_at, r.updated_at], transaction },
      );
    } catch (err) {
      // Two requests creating one userName at once: the unique index lets one through.
      if (isUniqueConstraintError(err)) throw new LatchkeyError('already_exists', 'a user with this userName exists in the organization', { reason: 'scim_user_name_taken' });
      throw err;
    }
  }

  async deleteScimUser(organizationId: string, userId: string, t: StoreTransaction): Promise<void> {
    await this.#db.query('DELETE FROM scim_users WHERE organization_id = ? AND user_id = ?', { replacements: [organizationId, userId], transaction: tx(t)! });
  }

  /** Removes a user's SCIM rows in every organization (the user's deletion). */
  async deleteUserRows(userId: string, t: StoreTransaction): Promise<void> {
    await this.#db.query('DELETE FROM scim_users WHERE user_id = ?', { replacements: [userId], transaction: tx(t)! });
  }

  async scimGroup(teamId: string, t?: StoreTransaction): Promise<{ external_id: string | null; updated_at: number } | undefined> {
    const [row] = await this.#select('SELECT * FROM scim_groups WHERE team_id = ?', [teamId], t);
    return row === undefined ? undefined : { external_id: row['external_id'] == null ? null : String(row['external_id']), updated_at: Number(row['updated_at']) };
  }

  async scimGroups(organizationId: string): Promise<Map<string, { external_id: string | null; updated_at: number }>> {
    const rows = await this.#select('SELECT * FROM scim_groups WHERE organization_id = ?', [organizationId]);
    return new Map(rows.map((r) => [String(r['team_id']), { external_id: r['external_id'] == null ? null : String(r['external_id']), updated_at: Number(r['updated_at']) }]));
  }

  async putScimGroup(r: { team_id: string; organization_id: string; external_id: string | null; updated_at: number }, t: StoreTransaction): Promise<void> {
    const transaction = tx(t)!;
    await this.#db.query('DELETE FROM scim_groups WHERE team_id = ?', { replacements: [r.team_id], transaction });
    await this.#db.query('INSERT INTO scim_groups (team_id, organization_id, external_id, updated_at) VALUES (?, ?, ?, ?)', { replacements: [r.team_id, r.organization_id, r.external_id, r.updated_at], transaction });
  }

  async deleteScimGroup(teamId: string, t: StoreTransaction): Promise<void> {
    await this.#db.query('DELETE FROM scim_groups WHERE team_id = ?', { replacements: [teamId], transaction: tx(t)! });
  }

  /** Notes a use (at most once a minute per token, so that a busy directory does not write on every request). */
  async touch(id: string, now: number): Promise<void> {
    await this.#db.query('UPDATE scim_tokens SET last_used_at = ? WHERE id = ? AND (last_used_at IS NULL OR last_used_at < ?)', { replacements: [now, id, now - 60] });
  }
}
