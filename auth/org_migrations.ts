/**
 * The migrations of the organization store's tables on the main SQL
 * database (SQLite, PostgreSQL, MySQL/MariaDB), run by auth/org_store.ts at
 * startup (component `auth_orgs`): organizations, their members, teams,
 * invitations and domains. A released migration keeps its meaning; a change
 * is a new migration.
 */
import type { Migration } from '../engine/sql/migrate.ts';
import { tableOptions } from './sql_charset.ts';

export const ORG_MIGRATIONS: Migration[] = [
  {
    id: '0001_create_organizations',
    async up({ sequelize, transaction, dialect }) {
      const q = (sql: string) => sequelize.query(sql, { transaction });
      const opts = tableOptions(dialect);
      await q(`CREATE TABLE organizations (
        id VARCHAR(36) NOT NULL PRIMARY KEY,
        slug VARCHAR(64) NOT NULL,
        name VARCHAR(256) NOT NULL,
        logo TEXT NULL,
        metadata TEXT NULL,
        settings TEXT NOT NULL,
        created_at BIGINT NOT NULL,
        updated_at BIGINT NOT NULL,
        deleted_at BIGINT NULL)${opts}`);
      // A slug is unique across the server, deleted organizations included (a slug never names two organizations).
      await q('CREATE UNIQUE INDEX organizations_slug ON organizations (slug)');
      await q(`CREATE TABLE organization_members (
        organization_id VARCHAR(36) NOT NULL,
        user_id VARCHAR(36) NOT NULL,
        role VARCHAR(64) NOT NULL,
        created_at BIGINT NOT NULL,
        updated_at BIGINT NOT NULL,
        PRIMARY KEY (organization_id, user_id))${opts}`);
      await q('CREATE INDEX organization_members_user ON organization_members (user_id)');
      await q(`CREATE TABLE organization_teams (
        id VARCHAR(36) NOT NULL PRIMARY KEY,
        organization_id VARCHAR(36) NOT NULL,
        name VARCHAR(256) NOT NULL,
        created_at BIGINT NOT NULL)${opts}`);
      await q('CREATE UNIQUE INDEX organization_teams_name ON organization_teams (organization_id, name)');
      await q(`CREATE TABLE organization_team_members (
        team_id VARCHAR(36) NOT NULL,
        user_id VARCHAR(36) NOT NULL,
        created_at BIGINT NOT NULL,
        PRIMARY KEY (team_id, user_id))${opts}`);
      await q('CREATE INDEX organization_team_members_user ON organization_team_members (user_id)');
      await q(`CREATE TABLE organization_invitations (
        id VARCHAR(36) NOT NULL PRIMARY KEY,
        organization_id VARCHAR(36) NOT NULL,
        email VARCHAR(320) NOT NULL,
        role VARCHAR(64) NOT NULL,
        token_hash VARCHAR(64) NOT NULL,
        status VARCHAR(16) NOT NULL,
        expires_at BIGINT NOT NULL,
        created_at BIGINT NOT NULL,
        updated_at BIGINT NOT NULL,
        invited_by VARCHAR(64) NULL,
        accepted_by VARCHAR(36) NULL)${opts}`);
      await q('CREATE UNIQUE INDEX organization_invitations_token ON organization_invitations (token_hash)');
      await q('CREATE INDEX organization_invitations_org ON organization_invitations (organization_id, created_at)');
      await q(`CREATE TABLE organization_domains (
        organization_id VARCHAR(36) NOT NULL,
        domain VARCHAR(253) NOT NULL,
        verification_token VARCHAR(64) NOT NULL,
        verified_at BIGINT NULL,
        created_at BIGINT NOT NULL,
        PRIMARY KEY (organization_id, domain))${opts}`);
      // A verified domain belongs to one organization: its claim row is the guard, as user_identifiers is for emails.
      await q(`CREATE TABLE organization_verified_domains (
        domain VARCHAR(253) NOT NULL PRIMARY KEY,
        organization_id VARCHAR(36) NOT NULL)${opts}`);
    },
  },
];
