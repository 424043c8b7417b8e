/**
 * Organizations as relationships (docs/organizations.md): organizations,
 * members and roles, teams, invitations and verified domains, whose
 * membership, roles and teams are FGA tuples written by the same database
 * transaction as their rows:
 *
 * | row | tuple |
 * |---|---|
 * | member of `O` with role `r` | `organization:O#r@user:U` |
 * | team `T` of `O` | `team:T#organization@organization:O` |
 * | member of team `T` | `team:T#member@user:U` |
 *
 * The API authorizes itself by engine checks on those tuples
 * ({@link ORG_PERMISSIONS}), read from the store at the highest
 * consistency (no cache, no mirror): a user acts on an organization only when the
 * check allows it (`permission_denied` otherwise), so an admin of one
 * organization cannot touch another's; a super-admin acts on any. The last
 * owner of an organization can never be removed or demoted.
 *
 * This module holds organizations, members, teams and the active
 * organization; invitations (auth/org_invitations.ts), domains and
 * discovery (auth/org_domains.ts) and SCIM tokens (auth/org_scim_tokens.ts)
 * are their own services over the shared plumbing of auth/org_core.ts, and
 * this class answers for all of them.
 *
 * Writes need the FGA store to share the main SQL connection (the server's
 * default): otherwise every organization operation answers
 * `failed_precondition` (reason `organizations_unavailable`) rather than
 * write rows and tuples apart.
 */
import { randomUUID } from 'node:crypto';
import { LatchkeyError } from '../engine/errors.ts';
import type { StoreTransaction } from './main_database.ts';
import {
  OrgCore,
  invalid,
  orgNotFound,
  page,
  publicOrg,
  roleTuple,
  teamTuple,
  type OrgCall,
  type OrgEvent,
  type OrganizationServiceOptions,
  type OrgSettingsInput,
  type OrgTuples,
  type PublicOrganization,
} from './org_core.ts';
import { OrgDomains } from './org_domains.ts';
import { OrgInvitations, type PublicInvitation } from './org_invitations.ts';
import { OrgScimTokens, type PublicScimToken } from './org_scim_tokens.ts';
import { DEFAULT_ORG_SETTINGS, type InvitationRecord, type OrgRecord, type OrgSettings, type SqlOrgStore, type TeamRecord } from './org_store.ts';
import type { SqlScimStore } from './scim_store.ts';

export type { OrgActor, OrgCall, OrgEvent, OrgTuples, OrganizationServiceOptions, OrgSettingsInput, PublicOrganization, TxtResolver } from './org_core.ts';
export type { PublicInvitation } from './org_invitations.ts';
export type { PublicScimToken } from './org_scim_tokens.ts';

/** The organization service. */
export class OrganizationService {
  readonly #c: OrgCore;
  readonly #invitations: OrgInvitations;
  readonly #domains: OrgDomains;
  readonly #scim: OrgScimTokens;

  constructor(options: OrganizationServiceOptions) {
    this.#c = new OrgCore(options);
    this.#invitations = new OrgInvitations(this.#c);
    this.#domains = new OrgDomains(this.#c);
    this.#scim = new OrgScimTokens(this.#c);
  }

  /** The roles a member may hold: owner, admin, member and the server's custom roles. */
  get roles(): readonly string[] {
    return this.#c.roles;
  }

  /** The store (its memberships answer token validation). */
  get store(): SqlOrgStore {
    return this.#c.o.store;
  }

  /**
   * Installs the model fragment when the store's latest model lacks it (a
   * new model version with the fragment's missing types added). Run at
   * startup, and again before an operation when the model was replaced.
   */
  ensureModel(): Promise<void> {
    return this.#c.ensureModel();
  }

  // ---------------------------------------------------------------- organizations

  /** `create_organization`: a user becomes its owner; a super-admin names the owner (`owner_user_id`) or creates it ownerless. */
  async create(
    call: OrgCall,
    input: { name: string; slug?: string | undefined; logo?: string | undefined; metadata?: Record<string, unknown> | undefined; settings?: OrgSettingsInput | undefined; owner_user_id?: string | undefined },
  ): Promise<PublicOrganization> {
    const name = this.#c.name(input.name);
    const slug = this.#c.slug(input.slug ?? name.toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-+|-+$/g, '').slice(0, 64));
    const settings = this.#c.settings(DEFAULT_ORG_SETTINGS, input.settings);
    const ownerId = call.actor.kind === 'user' ? call.actor.userId : input.owner_user_id;
    if (ownerId !== undefined && ownerId !== '' && (await this.#c.o.users.findById(ownerId)) === undefined) throw new LatchkeyError('not_found', 'user not found', { reason: 'user_not_found' });
    const now = this.#c.o.nowSeconds();
    const org: OrgRecord = { id: randomUUID(), slug, name, logo: input.logo ?? null, metadata: input.metadata ?? {}, settings, created_at: now, updated_at: now, deleted_at: null };
    await this.#c.change(async (tx, tuples) => {
      if (!(await this.#c.o.store.insertOrganization(org, tx))) throw new LatchkeyError('already_exists', 'an organization with this slug exists', { reason: 'organization_slug_taken' });
      if (ownerId !== undefined && ownerId !== '') {
        await this.#c.o.store.insertMember({ organization_id: org.id, user_id: ownerId, role: 'owner', created_at: now, updated_at: now }, tx);
        await tuples.ensure([], [roleTuple(org.id, 'owner', ownerId)], tx);
      }
      await this.#c.record(call, tx, { action: 'organization.created', webhook: 'organization.created', resourceType: 'organization', resourceId: org.id, data: { organization: publicOrg(org), ...(ownerId ? { owner_user_id: ownerId } : {}) } });
    });
    return publicOrg(org);
  }

  /** `organization`: members read their organization. */
  async get(call: OrgCall, orgId: string): Promise<PublicOrganization> {
    const org = await this.#c.live(orgId);
    await this.#c.require(call, org.id, 'can_read');
    return publicOrg(org);
  }

  /** `organizations`: a user's own organizations (with their role); every organization for a super-admin. */
  async list(call: OrgCall, input: { pagination?: { page?: number | undefined; limit?: number | undefined } | undefined; search?: string | undefined }): Promise<{ organizations: PublicOrganization[]; pagination: { page: number; limit: number; offset: number; total: number } }> {
    const p = page(input.pagination);
    const r = await this.#c.o.store.listOrganizations({ userId: call.actor.kind === 'user' ? call.actor.userId : undefined, search: input.search, offset: p.offset, limit: p.limit });
    return { organizations: r.organizations.map(publicOrg), pagination: { ...p, total: r.total } };
  }

  /** `update_organization` (`can_update`). */
  async update(
    call: OrgCall,
    input: { organization_id: string; name?: string | undefined; slug?: string | undefined; logo?: string | undefined; metadata?: Record<string, unknown> | undefined; settings?: OrgSettingsInput | undefined },
  ): Promise<PublicOrganization> {
    const org = await this.#c.live(input.organization_id);
    await this.#c.require(call, org.id, 'can_update');
    const next: OrgRecord = {
      ...org,
      name: input.name === undefined ? org.name : this.#c.name(input.name),
      slug: input.slug === undefined ? org.slug : this.#c.slug(input.slug),
      logo: input.logo === undefined ? org.logo : input.logo === '' ? null : input.logo,
      metadata: input.metadata ?? org.metadata,
      settings: this.#c.settings(org.settings, input.settings),
      updated_at: this.#c.o.nowSeconds(),
    };
    await this.#c.change(async (tx) => {
      if (!(await this.#c.o.store.lockOrganization(org.id, tx))) throw orgNotFound();
      if (!(await this.#c.o.store.updateOrganization(next, tx))) throw new LatchkeyError('already_exists', 'an organization with this slug exists', { reason: 'organization_slug_taken' });
      await this.#c.record(call, tx, { action: 'organization.updated', resourceType: 'organization', resourceId: org.id, data: { organization: publicOrg(next) } });
    });
    return publicOrg(next);
  }

  /**
   * `delete_organization` (`can_delete`): a soft delete. In one transaction
   * the row is marked deleted, its members, teams and domains go, its
   * pending invitations are revoked, and every tuple about the organization
   * or its teams (or naming them as user, such as `document:1#viewer@team:T#member`)
   * is deleted: no grant outlives it.
   */
  async delete(call: OrgCall, orgId: string): Promise<{ message: string }> {
    const org = await this.#c.live(orgId);
    await this.#c.require(call, org.id, 'can_delete');
    await this.#c.change(async (tx, tuples) => {
      if (!(await this.#c.o.store.lockOrganization(org.id, tx))) throw orgNotFound();
      const teams = await this.#c.o.store.teamIds(org.id, tx);
      await tuples.deleteObjects([`organization:${org.id}`, ...teams.map((t) => `team:${t}`)], tx);
      await this.#c.o.store.deleteOrganizationRows(org.id, tx);
      await this.#c.o.store.softDeleteOrganization(org.id, tx);
      await this.#c.o.scim.revokeOrganizationTokens(org.id, this.#c.o.nowSeconds(), tx);
      await this.#c.record(call, tx, { action: 'organization.deleted', resourceType: 'organization', resourceId: org.id, data: { organization: publicOrg(org) } });
    });
    return { message: 'organization deleted' };
  }

  // ---------------------------------------------------------------- members

  /** `organization_members` (`can_read`), optionally of one role. */
  async members(call: OrgCall, input: { organization_id: string; role?: string | undefined; pagination?: { page?: number | undefined; limit?: number | undefined } | undefined }) {
    const org = await this.#c.live(input.organization_id);
    await this.#c.require(call, org.id, 'can_read');
    const p = page(input.pagination);
    const r = await this.#c.o.store.listMembers({ organizationId: org.id, role: input.role, offset: p.offset, limit: p.limit });
    const members = [];
    for (const m of r.members) {
      const u = await this.#c.o.users.findById(m.user_id);
      members.push({ user_id: m.user_id, role: m.role, created_at: m.created_at, ...(u?.email ? { email: u.email } : {}), ...(u?.given_name ? { given_name: u.given_name } : {}) });
    }
    return { members, pagination: { ...p, total: r.total } };
  }

  /** `add_organization_member` (`can_manage_members`; an owner is added only by an owner). */
  async addMember(call: OrgCall, input: { organization_id: string; user_id?: string | undefined; email?: string | undefined; role?: string | undefined }): Promise<{ user_id: string; role: string; created_at: number }> {
    const org = await this.#c.live(input.organization_id);
    await this.#c.require(call, org.id, 'can_manage_members');
    const role = this.#c.role(input.role, org.settings.default_role);
    if (role === 'owner') await this.#c.require(call, org.id, 'can_manage_owners');
    // Anyone may create an organization and so manage its members: looking users up by email would tell
    // them which addresses have accounts. A user adds by id, or invites the address; a super-admin may do both.
    if (call.actor.kind === 'user' && (input.user_id === undefined || input.user_id === '') && input.email !== undefined && input.email !== '') {
      throw new LatchkeyError('permission_denied', 'add a user by user_id, or invite the email address', { reason: 'email_lookup_refused' });
    }
    const user = await this.#c.userOf(input);
    const m = await this.#c.change(async (tx, tuples) => {
      if (!(await this.#c.o.store.lockOrganization(org.id, tx))) throw orgNotFound();
      return this.#c.addMember(call, tx, tuples, org, user.id, role, 'add_organization_member');
    });
    return { user_id: m.user_id, role: m.role, created_at: m.created_at };
  }

  /** `update_organization_member` (`can_manage_members`; to or from owner only by an owner; never the last owner). */
  async updateMember(call: OrgCall, input: { organization_id: string; user_id: string; role: string }): Promise<{ user_id: string; role: string }> {
    const org = await this.#c.live(input.organization_id);
    await this.#c.require(call, org.id, 'can_manage_members');
    const role = this.#c.role(input.role, '');
    const current = await this.#c.o.store.member(org.id, input.user_id);
    if (current === undefined) throw new LatchkeyError('not_found', 'the user is not a member of this organization', { reason: 'member_not_found' });
    if (role === 'owner' || current.role === 'owner') await this.#c.require(call, org.id, 'can_manage_owners');
    await this.#c.change(async (tx, tuples) => {
      if (!(await this.#c.o.store.lockOrganization(org.id, tx))) throw orgNotFound();
      const m = await this.#c.o.store.member(org.id, input.user_id, tx);
      if (m === undefined) throw new LatchkeyError('not_found', 'the user is not a member of this organization', { reason: 'member_not_found' });
      if (m.role === role) return;
      if (m.role === 'owner' && (await this.#c.o.store.countRole(org.id, 'owner', tx)) <= 1) throw lastOwner();
      await this.#c.o.store.updateMemberRole(org.id, m.user_id, role, tx);
      await tuples.ensure([roleTuple(org.id, m.role, m.user_id)], [roleTuple(org.id, role, m.user_id)], tx);
      await this.#c.record(call, tx, { action: 'organization.member_role_changed', webhook: 'member.role_changed', resourceType: 'organization', resourceId: org.id, data: { organization_id: org.id, user_id: m.user_id, role, previous_role: m.role } });
    });
    return { user_id: input.user_id, role };
  }

  /**
   * `remove_organization_member` (`can_manage_members`, or the member
   * leaving; an owner only by an owner or themself): the membership, its
   * role tuple and the member's teams in the organization go together.
   * The last owner is never removed (`failed_precondition`, `last_owner`).
   */
  async removeMember(call: OrgCall, input: { organization_id: string; user_id: string }): Promise<{ message: string }> {
    const org = await this.#c.live(input.organization_id);
    const self = call.actor.kind === 'user' && call.actor.userId === input.user_id;
    if (!self) await this.#c.require(call, org.id, 'can_manage_members');
    const current = await this.#c.o.store.member(org.id, input.user_id);
    if (current === undefined) throw new LatchkeyError('not_found', 'the user is not a member of this organization', { reason: 'member_not_found' });
    if (current.role === 'owner' && !self) await this.#c.require(call, org.id, 'can_manage_owners');
    await this.#c.change(async (tx, tuples) => {
      if (!(await this.#c.o.store.lockOrganization(org.id, tx))) throw orgNotFound();
      const m = await this.#c.o.store.member(org.id, input.user_id, tx);
      if (m === undefined) throw new LatchkeyError('not_found', 'the user is not a member of this organization', { reason: 'member_not_found' });
      if (m.role === 'owner' && (await this.#c.o.store.countRole(org.id, 'owner', tx)) <= 1) throw lastOwner();
      const teams = await this.#c.o.store.teamsOfMember(org.id, m.user_id, tx);
      for (const t of teams) await this.#c.o.store.deleteTeamMember(t, m.user_id, tx);
      await this.#c.o.store.deleteMember(org.id, m.user_id, tx);
      await tuples.ensure([roleTuple(org.id, m.role, m.user_id), ...teams.map((t) => teamTuple(t, m.user_id))], [], tx);
      await this.#c.record(call, tx, { action: 'organization.member_removed', webhook: 'member.removed', resourceType: 'organization', resourceId: org.id, data: { organization_id: org.id, user_id: m.user_id, role: m.role } });
    });
    return { message: 'member removed' };
  }

  // ---------------------------------------------------------------- teams

  /** `create_team` (`can_manage_teams`); writes `team:T#organization@organization:O`. */
  async createTeam(call: OrgCall, input: { organization_id: string; name: string }): Promise<{ id: string; organization_id: string; name: string; created_at: number; member_count: number }> {
    const org = await this.#c.live(input.organization_id);
    await this.#c.require(call, org.id, 'can_manage_teams');
    const name = input.name.trim();
    if (name === '' || name.length > 256) throw invalid('name must be 1 to 256 characters', 'invalid_team_name');
    const team: TeamRecord = { id: randomUUID(), organization_id: org.id, name, created_at: this.#c.o.nowSeconds() };
    await this.#c.change(async (tx, tuples) => {
      if (!(await this.#c.o.store.lockOrganization(org.id, tx))) throw orgNotFound();
      if (!(await this.#c.o.store.insertTeam(team, tx))) throw new LatchkeyError('already_exists', 'the organization has a team of this name', { reason: 'team_name_taken' });
      await tuples.ensure([], [{ object: `team:${team.id}`, relation: 'organization', user: `organization:${org.id}` }], tx);
      await this.#c.record(call, tx, { action: 'organization.team_created', resourceType: 'team', resourceId: team.id, data: { organization_id: org.id, team_id: team.id, name } });
    });
    return { ...team, member_count: 0 };
  }

  /** `teams` (`can_read`). */
  async teams(call: OrgCall, input: { organization_id: string; pagination?: { page?: number | undefined; limit?: number | undefined } | undefined }) {
    const org = await this.#c.live(input.organization_id);
    await this.#c.require(call, org.id, 'can_read');
    const p = page(input.pagination);
    const r = await this.#c.o.store.listTeams({ organizationId: org.id, offset: p.offset, limit: p.limit });
    return { teams: r.teams, pagination: { ...p, total: r.total } };
  }

  async #team(teamId: string): Promise<{ team: TeamRecord; org: OrgRecord }> {
    if (typeof teamId !== 'string' || teamId === '') throw invalid('team_id is required', 'missing_team_id');
    const team = await this.#c.o.store.team(teamId);
    if (team === undefined) throw new LatchkeyError('not_found', 'team not found', { reason: 'team_not_found' });
    const org = await this.#c.o.store.organization(team.organization_id);
    if (org === undefined) throw new LatchkeyError('not_found', 'team not found', { reason: 'team_not_found' });
    return { team, org };
  }

  /**
   * `delete_team` (`can_manage_teams` on the team's organization): the team,
   * its member rows and every tuple about the team or naming it as user
   * (`document:1#viewer@team:T#member`) go in one transaction.
   */
  async deleteTeam(call: OrgCall, input: { team_id: string }): Promise<{ message: string }> {
    const { team, org } = await this.#team(input.team_id);
    await this.#c.require(call, org.id, 'can_manage_teams');
    await this.#c.change(async (tx, tuples) => {
      if (!(await this.#c.o.store.lockOrganization(org.id, tx))) throw orgNotFound();
      if ((await this.#c.o.store.team(team.id, tx)) === undefined) throw new LatchkeyError('not_found', 'team not found', { reason: 'team_not_found' });
      await tuples.deleteObjects([`team:${team.id}`], tx);
      await this.#c.o.store.deleteTeam(team.id, tx);
      await this.#c.o.scim.deleteScimGroup(team.id, tx);
      await this.#c.record(call, tx, { action: 'organization.team_deleted', resourceType: 'team', resourceId: team.id, data: { organization_id: org.id, team_id: team.id, name: team.name } });
    });
    return { message: 'team deleted' };
  }

  /** `add_team_member` (`can_manage_teams` on the team's organization); the user must be a member of it. */
  async addTeamMember(call: OrgCall, input: { team_id: string; user_id: string }): Promise<{ message: string }> {
    const { team, org } = await this.#team(input.team_id);
    await this.#c.require(call, org.id, 'can_manage_teams');
    await this.#c.change(async (tx, tuples) => {
      if (!(await this.#c.o.store.lockOrganization(org.id, tx))) throw orgNotFound();
      if ((await this.#c.o.store.member(org.id, input.user_id, tx)) === undefined) {
        throw new LatchkeyError('failed_precondition', 'the user is not a member of the team\'s organization', { reason: 'not_organization_member' });
      }
      if (await this.#c.o.store.isTeamMember(team.id, input.user_id, tx)) throw new LatchkeyError('already_exists', 'the user is in this team already', { reason: 'already_team_member' });
      await this.#c.o.store.insertTeamMember(team.id, input.user_id, tx);
      await tuples.ensure([], [teamTuple(team.id, input.user_id)], tx);
      await this.#c.record(call, tx, { action: 'organization.team_member_added', resourceType: 'team', resourceId: team.id, data: { organization_id: org.id, team_id: team.id, user_id: input.user_id } });
    });
    return { message: 'team member added' };
  }

  /** `remove_team_member` (`can_manage_teams`). */
  async removeTeamMember(call: OrgCall, input: { team_id: string; user_id: string }): Promise<{ message: string }> {
    const { team, org } = await this.#team(input.team_id);
    await this.#c.require(call, org.id, 'can_manage_teams');
    await this.#c.change(async (tx, tuples) => {
      if (!(await this.#c.o.store.lockOrganization(org.id, tx))) throw orgNotFound();
      if (!(await this.#c.o.store.isTeamMember(team.id, input.user_id, tx))) throw new LatchkeyError('not_found', 'the user is not in this team', { reason: 'team_member_not_found' });
      await this.#c.o.store.deleteTeamMember(team.id, input.user_id, tx);
      await tuples.ensure([teamTuple(team.id, input.user_id)], [], tx);
      await this.#c.record(call, tx, { action: 'organization.team_member_removed', resourceType: 'team', resourceId: team.id, data: { organization_id: org.id, team_id: team.id, user_id: input.user_id } });
    });
    return { message: 'team member removed' };
  }

  // ---------------------------------------------------------------- invitations, domains, SCIM tokens

  /** `invite_organization_members` (auth/org_invitations.ts). */
  invite(call: OrgCall, input: { organization_id: string; emails: readonly string[]; role?: string | undefined }, deliver?: (invitation: InvitationRecord, token: string, org: OrgRecord) => void | Promise<void>): Promise<{ message: string; invitations: PublicInvitation[] }> {
    return this.#invitations.invite(call, input, deliver);
  }

  /** `organization_invitations`. */
  invitations(call: OrgCall, input: { organization_id: string; status?: string | undefined; pagination?: { page?: number | undefined; limit?: number | undefined } | undefined }) {
    return this.#invitations.invitations(call, input);
  }

  /** `revoke_organization_invitation`. */
  revokeInvitation(call: OrgCall, invitationId: string): Promise<{ message: string }> {
    return this.#invitations.revokeInvitation(call, invitationId);
  }

  /** `accept_organization_invitation`. */
  acceptInvitation(call: OrgCall, token: string): Promise<{ message: string; organization: PublicOrganization; role: string }> {
    return this.#invitations.acceptInvitation(call, token);
  }

  /** `add_organization_domain` (auth/org_domains.ts). */
  addDomain(call: OrgCall, input: { organization_id: string; domain: string }) {
    return this.#domains.addDomain(call, input);
  }

  /** `verify_organization_domain`. */
  verifyDomain(call: OrgCall, input: { organization_id: string; domain: string }) {
    return this.#domains.verifyDomain(call, input);
  }

  /** `discover_organization`. */
  discover(email: string): Promise<Record<string, unknown>> {
    return this.#domains.discover(email);
  }

  /** `create_scim_token` (auth/org_scim_tokens.ts). */
  createScimToken(call: OrgCall, input: { organization_id: string; description?: string | undefined }): Promise<PublicScimToken & { token: string }> {
    return this.#scim.createScimToken(call, input);
  }

  /** `scim_tokens`. */
  scimTokens(call: OrgCall, input: { organization_id: string; pagination?: { page?: number | undefined; limit?: number | undefined } | undefined }) {
    return this.#scim.scimTokens(call, input);
  }

  /** `revoke_scim_token`. */
  revokeScimToken(call: OrgCall, input: { token_id: string }): Promise<{ message: string }> {
    return this.#scim.revokeScimToken(call, input);
  }

  /** The live organization of a SCIM bearer token (undefined for any token that is not one). */
  authenticateScimToken(token: string): Promise<{ org: OrgRecord; tokenId: string } | undefined> {
    return this.#scim.authenticateScimToken(token);
  }

  // ---------------------------------------------------------------- the active organization

  /**
   * The membership `switch_organization` enters: the member's row, or (with
   * `auto_join_verified_domains`) a new membership with the default role for
   * a user whose verified email is on a verified domain of the organization.
   * `permission_denied` (`not_organization_member`) otherwise; the
   * organization's `allowed_sign_in_methods` and `required_mfa` must hold for
   * the session (`permission_denied`, `sign_in_method_not_allowed`,
   * `organization_mfa_required`).
   */
  async enter(call: OrgCall, orgId: string, session: { login_method: string; amr?: string[] | undefined }): Promise<{ org: OrgRecord; roles: string[] }> {
    if (call.actor.kind !== 'user') throw new LatchkeyError('permission_denied', 'only a user has an active organization', { reason: 'user_required' });
    const userId = call.actor.userId;
    const org = await this.#c.live(orgId);
    let m = await this.#c.o.store.member(org.id, userId);
    if (m === undefined && org.settings.auto_join_verified_domains) {
      const user = await this.#c.o.users.findById(userId);
      const email = user?.email ?? '';
      const verified = user !== undefined && user.email_verified_at !== null && user.email_verified_at !== undefined;
      const holder = verified && email.includes('@') ? await this.#c.o.store.organizationOfVerifiedDomain(email.slice(email.lastIndexOf('@') + 1)) : undefined;
      if (holder?.id === org.id) {
        m = await this.#c.change(async (tx, tuples) => {
          if (!(await this.#c.o.store.lockOrganization(org.id, tx))) throw orgNotFound();
          const again = await this.#c.o.store.member(org.id, userId, tx);
          return again ?? (await this.#c.addMember(call, tx, tuples, org, userId, org.settings.default_role, 'verified_domain'));
        });
      }
    }
    if (m === undefined) throw new LatchkeyError('permission_denied', 'you are not a member of this organization', { reason: 'not_organization_member' });
    checkSessionFits(org, session);
    return { org, roles: [m.role] };
  }

  /** The user's live roles in `orgId` (undefined when not a member, or the organization is gone): what token validation compares with. */
  async rolesOf(orgId: string, userId: string): Promise<{ roles: string[]; settings: OrgSettings } | undefined> {
    const org = await this.#c.o.store.organization(orgId);
    if (org === undefined) return undefined;
    const m = await this.#c.o.store.member(orgId, userId);
    return m === undefined ? undefined : { roles: [m.role], settings: org.settings };
  }

  /** The organization's `session_lifetime` (0: none, or the organization is gone): what every use of a session in it compares with. */
  async sessionLifetimeOf(orgId: string): Promise<number> {
    return (await this.#c.o.store.organization(orgId))?.settings.session_lifetime ?? 0;
  }

  /** {@link sessionLifetimeOf} at once when the store can answer without waiting; undefined otherwise. */
  sessionLifetimeNow(orgId: string): number | undefined {
    return this.#c.o.store.sessionLifetimeNow(orgId);
  }

  /** {@link rolesOf} at once when the store can answer without waiting: null when not a member or the organization is gone, undefined when it must be asked. */
  rolesNow(orgId: string, userId: string): { roles: string[]; settings: { session_lifetime: number } } | null | undefined {
    const m = this.#c.o.store.memberNow(orgId, userId);
    return m === null || m === undefined ? m : { roles: [m.role], settings: { session_lifetime: m.session_lifetime } };
  }

  /** The user's organizations, for the `organizations` claim. */
  async organizationsOf(userId: string): Promise<{ id: string; slug: string; name: string; roles: string[] }[]> {
    return (await this.#c.o.store.membershipsOf(userId)).map((m) => ({ id: m.organization_id, slug: m.slug, name: m.name, roles: [m.role] }));
  }

  /** Removes a user's memberships, team memberships and SCIM rows inside `tx` (user deletion; its tuples go with the user's own). */
  async deleteUserRows(userId: string, tx: StoreTransaction): Promise<void> {
    await this.#c.o.store.deleteUserRows(userId, tx);
    await this.#c.o.scim.deleteUserRows(userId, tx);
  }

  /** The SCIM token store. */
  get scimStore(): SqlScimStore {
    return this.#c.o.scim;
  }

  /**
   * For the SCIM service (auth/scim.ts): runs `fn` in one transaction on the
   * main database with the tuple writer, then brings the engine's caches up
   * to it; `organizations_unavailable` when the FGA store is elsewhere.
   */
  async changeInTransaction<T>(fn: (tx: StoreTransaction, tuples: OrgTuples) => Promise<T>): Promise<T> {
    return this.#c.change(fn);
  }

  /** The tuple writer, with the model fragment installed (for changes made inside another store's transaction). */
  async preparedTuples(): Promise<OrgTuples> {
    const tuples = this.#c.tuples();
    if (!this.#c.modelReady) await this.#c.ensureModel();
    return tuples;
  }

  /**
   * For services that manage an organization's parts (auth/sso_connections.ts):
   * the live organization (`not_found`), then `permission_denied` unless the
   * actor holds `relation` on it, checked as this service checks its own calls.
   */
  async authorize(call: OrgCall, orgId: string, relation: string): Promise<OrgRecord> {
    const org = await this.#c.live(orgId);
    await this.#c.require(call, org.id, relation);
    return org;
  }

  /** Records an event of a change made through {@link changeInTransaction} (its audit row and webhook, inside `tx`). */
  async recordEvent(call: OrgCall, tx: StoreTransaction, event: OrgEvent): Promise<void> {
    await this.#c.record(call, tx, event);
  }

  /** A role name checked against the roles and the model (`invalid_argument`, `failed_precondition`). */
  checkRole(role: string): string {
    return this.#c.role(role, 'member');
  }

  /** The role a member added without one gets in `org` (checked against the roles and the model). */
  defaultRole(org: OrgRecord): string {
    return this.#c.role(org.settings.default_role, 'member');
  }
}

/** The organization's sign-in rules against a session: `permission_denied` when it may not enter. */
export function checkSessionFits(org: OrgRecord, session: { login_method: string; amr?: string[] | undefined }): void {
  const allowed = org.settings.allowed_sign_in_methods;
  if (allowed.length > 0 && !allowed.includes(session.login_method)) {
    throw new LatchkeyError('permission_denied', 'this organization does not accept the way this session signed in', { reason: 'sign_in_method_not_allowed' });
  }
  if (org.settings.required_mfa && !(session.amr ?? []).includes('mfa')) {
    throw new LatchkeyError('permission_denied', 'this organization requires a second factor', { reason: 'organization_mfa_required' });
  }
}

function lastOwner(): LatchkeyError {
  return new LatchkeyError('failed_precondition', 'the last owner of an organization cannot be removed or demoted', { reason: 'last_owner' });
}
