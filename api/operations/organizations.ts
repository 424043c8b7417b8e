/**
 * Organizations (docs/organizations.md): organizations, members and roles,
 * teams, invitations, verified domains and the active organization. Each
 * management row has a super-admin variant: GraphQL `_<name>`, REST
 * `/v1/admin/<name>`, the `LatchkeyAdmin` gRPC service, the admin client's
 * `admin<Name>` method. A user row is authorized by FGA checks on the
 * organization's tuples; its super-admin variant acts on any organization.
 */
import { MESSAGE, s } from '../shape.ts';
import { AUTH_RESPONSE, STR, STRINGS, row } from './auth.ts';
import { PAGINATION, PAGINATION_INPUT } from './admin_shapes.ts';
import { defineOperation } from './types.ts';
import { userRow, withAdminVariants } from './org_rows.ts';

const ID = (doc: string) => s.string({ minLength: 1, maxLength: 64, doc });
const ORG_ID = ID('The organization id');
const USER_ID = ID('The user id');
const TEAM_ID = ID('The team id');
const ROLE = (doc: string) => s.string({ minLength: 1, maxLength: 64, doc });

export const ORGANIZATION_SETTINGS = s.object('OrganizationSettings', {
  allowed_sign_in_methods: s.list(s.string(), { doc: 'Login methods a session must have used to enter the organization (empty: any)' }),
  required_mfa: s.bool({ doc: 'A session must have proven a second factor to enter the organization' }),
  default_role: s.string({ doc: 'The role of members added without one' }),
  session_lifetime: s.int({ doc: 'Seconds after sign-in past which a session in the organization ends (0: no limit of its own)' }),
  auto_join_verified_domains: s.bool({ doc: 'Users whose verified email is on a verified domain may join with switch_organization' }),
});

const SETTINGS_INPUT = s.object('OrganizationSettingsInput', {
  allowed_sign_in_methods: s.optional(s.list(s.string({ minLength: 1, maxLength: 64 }), { maxItems: 20 })),
  required_mfa: s.optional(s.bool()),
  default_role: s.optional(ROLE('The role of members added without one (not owner)')),
  session_lifetime: s.optional(s.int({ min: 0, max: 31_622_400 })),
  auto_join_verified_domains: s.optional(s.bool()),
});

export const ORGANIZATION = s.object('Organization', {
  id: s.string(),
  slug: s.string({ doc: 'Unique across the server' }),
  name: s.string(),
  logo: s.optional(s.string()),
  metadata: s.json({ doc: 'Free-form JSON object' }),
  settings: ORGANIZATION_SETTINGS,
  created_at: s.int({ doc: 'Unix seconds' }),
  updated_at: s.int({ doc: 'Unix seconds' }),
  role: s.optional(s.string({ doc: 'The caller\'s role (organizations listed for a user)' })),
});

const MEMBER = s.object('OrganizationMember', {
  user_id: s.string(),
  role: s.string(),
  created_at: s.int({ doc: 'Unix seconds' }),
  email: s.optional(s.string()),
  given_name: s.optional(s.string()),
});

const TEAM = s.object('Team', {
  id: s.string(),
  organization_id: s.string(),
  name: s.string(),
  created_at: s.int({ doc: 'Unix seconds' }),
  member_count: s.int(),
});

const INVITATION = s.object('OrganizationInvitation', {
  id: s.string(),
  organization_id: s.string(),
  email: s.string(),
  role: s.string(),
  status: s.string({ doc: 'pending, accepted, expired or revoked' }),
  expires_at: s.int({ doc: 'Unix seconds' }),
  created_at: s.int({ doc: 'Unix seconds' }),
  invited_by: s.optional(s.string()),
  accepted_by: s.optional(s.string()),
  token: s.optional(s.string({ doc: 'The invitation token, returned once by invite_organization_members (only its digest is stored)' })),
});

const DOMAIN = s.object('OrganizationDomain', {
  organization_id: s.string(),
  domain: s.string(),
  verified: s.bool(),
  verified_at: s.optional(s.int({ doc: 'Unix seconds' })),
  txt_record_name: s.string({ doc: 'Where to publish the TXT record' }),
  txt_record_value: s.string({ doc: 'The TXT record to publish' }),
});

const SCIM_TOKEN = s.object('ScimToken', {
  id: s.string(),
  organization_id: s.string(),
  prefix: s.string({ doc: 'The token\'s public start, to tell tokens apart' }),
  description: s.string(),
  created_at: s.int({ doc: 'Unix seconds' }),
  created_by: s.string({ doc: 'The user id of its creator, or super_admin' }),
  last_used_at: s.optional(s.int({ doc: 'Unix seconds (to the minute)' })),
  revoked_at: s.optional(s.int({ doc: 'Unix seconds' })),
});

const PAGE = s.optional(PAGINATION_INPUT);
const MUTABLE = {
  name: s.optional(s.string({ minLength: 1, maxLength: 256 })),
  slug: s.optional(s.string({ minLength: 1, maxLength: 64, doc: 'Lower-case letters, digits and inner hyphens; unique across the server' })),
  logo: s.optional(s.string({ maxLength: 2048, doc: 'Logo URL (empty: none)' })),
  metadata: s.optional(s.json()),
  settings: s.optional(SETTINGS_INPUT),
};

/** A user row's REST/gRPC/GraphQL placement: `/v1/<name>`, the `Latchkey` service. */
const user = userRow;

/** The management rows (each also gets a super-admin variant). */
const MANAGEMENT = [
  defineOperation({
    ...user('create_organization', 'CreateOrganization'),
    kind: 'mutation',
    input: s.object('CreateOrganizationRequest', {
      ...MUTABLE,
      name: s.string({ minLength: 1, maxLength: 256 }),
      owner_user_id: s.optional(s.string({ maxLength: 64, doc: 'The first owner (super-admin only; a user creating an organization becomes its owner)' })),
    }),
    output: ORGANIZATION,
    doc: 'Creates an organization (slug from the name unless given); the calling user becomes its owner. Webhook organization.created.',
  }),
  defineOperation({
    ...user('organization', 'Organization'),
    kind: 'query',
    input: s.object('OrganizationRequest', { organization_id: ORG_ID }),
    output: ORGANIZATION,
    doc: 'An organization (members: check can_read).',
  }),
  defineOperation({
    ...user('organizations', 'Organizations'),
    kind: 'query',
    input: s.object('OrganizationsRequest', { pagination: PAGE, search: STR(256) }),
    output: s.object('OrganizationsResponse', { organizations: s.list(ORGANIZATION), pagination: PAGINATION }),
    doc: 'The caller\'s organizations with their role (super-admin: every organization), by name; search matches name or slug.',
  }),
  defineOperation({
    ...user('update_organization', 'UpdateOrganization'),
    kind: 'mutation',
    input: s.object('UpdateOrganizationRequest', { organization_id: ORG_ID, ...MUTABLE }),
    output: ORGANIZATION,
    doc: 'Changes name, slug, logo, metadata or settings (check can_update: admins).',
  }),
  defineOperation({
    ...user('delete_organization', 'DeleteOrganization'),
    kind: 'mutation',
    input: s.object('DeleteOrganizationRequest', { organization_id: ORG_ID }),
    output: MESSAGE,
    doc: 'Soft-deletes an organization (check can_delete: owners): its members, teams, domains and every tuple about it or its teams go in the same transaction.',
  }),
  defineOperation({
    ...user('organization_members', 'OrganizationMembers'),
    kind: 'query',
    input: s.object('OrganizationMembersRequest', { organization_id: ORG_ID, role: STR(64), pagination: PAGE }),
    output: s.object('OrganizationMembersResponse', { members: s.list(MEMBER), pagination: PAGINATION }),
    doc: 'Members, oldest first, optionally of one role (check can_read).',
  }),
  defineOperation({
    ...user('add_organization_member', 'AddOrganizationMember'),
    kind: 'mutation',
    input: s.object('AddOrganizationMemberRequest', { organization_id: ORG_ID, user_id: STR(64), email: STR(320), role: STR(64) }),
    output: s.object('OrganizationMembership', { user_id: s.string(), role: s.string(), created_at: s.int() }),
    doc: 'Adds a user (by id; by email only for a super-admin: users invite addresses) with a role (default: the organization\'s default_role); writes organization:<id>#<role>@user:<id> in the same transaction (check can_manage_members; owners only by owners). Webhook member.added.',
  }),
  defineOperation({
    ...user('update_organization_member', 'UpdateOrganizationMember'),
    kind: 'mutation',
    input: s.object('UpdateOrganizationMemberRequest', { organization_id: ORG_ID, user_id: USER_ID, role: ROLE('The new role') }),
    output: s.object('OrganizationMemberRole', { user_id: s.string(), role: s.string() }),
    doc: 'Changes a member\'s role and its tuple together (check can_manage_members; to or from owner only by owners; never the last owner). Webhook member.role_changed.',
  }),
  defineOperation({
    ...user('remove_organization_member', 'RemoveOrganizationMember'),
    kind: 'mutation',
    input: s.object('RemoveOrganizationMemberRequest', { organization_id: ORG_ID, user_id: USER_ID }),
    output: MESSAGE,
    doc: 'Removes a member, its role tuple and its teams in the organization (check can_manage_members, or the member leaving; never the last owner). Webhook member.removed.',
  }),
  defineOperation({
    ...user('create_team', 'CreateTeam'),
    kind: 'mutation',
    input: s.object('CreateTeamRequest', { organization_id: ORG_ID, name: s.string({ minLength: 1, maxLength: 256 }) }),
    output: TEAM,
    doc: 'Creates a team (check can_manage_teams); writes team:<id>#organization@organization:<id>.',
  }),
  defineOperation({
    ...user('teams', 'Teams'),
    kind: 'query',
    input: s.object('TeamsRequest', { organization_id: ORG_ID, pagination: PAGE }),
    output: s.object('TeamsResponse', { teams: s.list(TEAM), pagination: PAGINATION }),
    doc: 'The organization\'s teams, by name (check can_read).',
  }),
  defineOperation({
    ...user('delete_team', 'DeleteTeam'),
    kind: 'mutation',
    input: s.object('DeleteTeamRequest', { team_id: TEAM_ID }),
    output: MESSAGE,
    doc: 'Deletes a team with its members and every tuple about it or naming it, such as document:1#viewer@team:<id>#member (check can_manage_teams).',
  }),
  defineOperation({
    ...user('add_team_member', 'AddTeamMember'),
    kind: 'mutation',
    input: s.object('AddTeamMemberRequest', { team_id: TEAM_ID, user_id: USER_ID }),
    output: MESSAGE,
    doc: 'Adds a member of the organization to a team; writes team:<id>#member@user:<id> in the same transaction (check can_manage_teams).',
  }),
  defineOperation({
    ...user('remove_team_member', 'RemoveTeamMember'),
    kind: 'mutation',
    input: s.object('RemoveTeamMemberRequest', { team_id: TEAM_ID, user_id: USER_ID }),
    output: MESSAGE,
    doc: 'Removes a user from a team with its tuple (check can_manage_teams).',
  }),
  defineOperation({
    ...user('invite_organization_members', 'InviteOrganizationMembers'),
    kind: 'mutation',
    input: s.object('InviteOrganizationMembersRequest', {
      organization_id: ORG_ID,
      emails: s.list(s.string({ minLength: 3, maxLength: 320 }), { minItems: 1, maxItems: 100 }),
      role: STR(64),
      redirect_uri: STR(2048),
    }),
    output: s.object('InviteOrganizationMembersResponse', { message: s.string(), invitations: s.list(INVITATION) }),
    doc: 'Invites emails with a role (check can_manage_members); each token is returned once and mailed (link to redirect_uri, else /app) when mail is set up. Single use, expires after --organization-invitation-ttl.',
  }),
  defineOperation({
    ...user('organization_invitations', 'OrganizationInvitations'),
    kind: 'query',
    input: s.object('OrganizationInvitationsRequest', { organization_id: ORG_ID, status: STR(16), pagination: PAGE }),
    output: s.object('OrganizationInvitationsResponse', { invitations: s.list(INVITATION), pagination: PAGINATION }),
    doc: 'Invitations, newest first, optionally of one status: pending, accepted, expired, revoked (check can_manage_members).',
  }),
  defineOperation({
    ...user('revoke_organization_invitation', 'RevokeOrganizationInvitation'),
    kind: 'mutation',
    input: s.object('RevokeOrganizationInvitationRequest', { invitation_id: ID('The invitation id') }),
    output: MESSAGE,
    doc: 'Revokes a pending invitation (check can_manage_members).',
  }),
  defineOperation({
    ...user('add_organization_domain', 'AddOrganizationDomain'),
    kind: 'mutation',
    input: s.object('AddOrganizationDomainRequest', { organization_id: ORG_ID, domain: s.string({ minLength: 3, maxLength: 253 }) }),
    output: DOMAIN,
    doc: 'Adds a domain to prove (check can_update): publish the TXT record it answers, then call verify_organization_domain.',
  }),
  defineOperation({
    ...user('verify_organization_domain', 'VerifyOrganizationDomain'),
    kind: 'mutation',
    input: s.object('VerifyOrganizationDomainRequest', { organization_id: ORG_ID, domain: s.string({ minLength: 3, maxLength: 253 }) }),
    output: DOMAIN,
    doc: 'Looks up the domain\'s TXT record and marks it verified when it holds the token (check can_update); a domain is verified by one organization at most.',
  }),
  defineOperation({
    ...user('create_scim_token', 'CreateScimToken'),
    kind: 'mutation',
    input: s.object('CreateScimTokenRequest', { organization_id: ORG_ID, description: STR(256) }),
    output: s.object('CreateScimTokenResponse', {
      ...SCIM_TOKEN.fields,
      token: s.string({ doc: 'The bearer token for /scim/v2, returned once (only its digest is stored)' }),
    }),
    doc: 'Creates a bearer token for the organization\'s SCIM 2.0 endpoint /scim/v2 (check can_update: admins); shown once.',
  }),
  defineOperation({
    ...user('scim_tokens', 'ScimTokens'),
    kind: 'query',
    input: s.object('ScimTokensRequest', { organization_id: ORG_ID, pagination: PAGE }),
    output: s.object('ScimTokensResponse', { tokens: s.list(SCIM_TOKEN), pagination: PAGINATION }),
    doc: 'The organization\'s SCIM tokens, newest first, revoked ones included; never their secrets (check can_update).',
  }),
  defineOperation({
    ...user('revoke_scim_token', 'RevokeScimToken'),
    kind: 'mutation',
    input: s.object('RevokeScimTokenRequest', { token_id: ID('The SCIM token id') }),
    output: MESSAGE,
    doc: 'Revokes a SCIM token: the next request with it is refused with 401 (check can_update on its organization).',
  }),
] as const;

export const ORGANIZATION_OPERATIONS = [
  ...withAdminVariants(MANAGEMENT),
  defineOperation({
    ...user('accept_organization_invitation', 'AcceptOrganizationInvitation'),
    kind: 'mutation',
    input: s.object('AcceptOrganizationInvitationRequest', { token: s.string({ minLength: 1, maxLength: 512 }) }),
    output: s.object('AcceptOrganizationInvitationResponse', { message: s.string(), organization: ORGANIZATION, role: s.string() }),
    doc: 'The signed-in invitee (same email) joins with the invitation\'s role; single use. Webhook invitation.accepted.',
  }),
  defineOperation({
    ...row('discover_organization', 'POST', 'DiscoverOrganization'),
    kind: 'query',
    auth: 'public',
    input: s.object('DiscoverOrganizationRequest', { email: s.string({ minLength: 3, maxLength: 320 }) }),
    output: s.object('DiscoverOrganizationResponse', {
      found: s.bool(),
      organization_id: s.optional(s.string()),
      slug: s.optional(s.string()),
      name: s.optional(s.string()),
      logo: s.optional(s.string()),
      allowed_sign_in_methods: s.list(s.string()),
      required_mfa: s.bool(),
      auto_join: s.bool(),
      sso_connection_id: s.optional(s.string({ doc: 'The enabled SSO connection bound to the email\'s domain, if any' })),
      sso_url: s.optional(s.string({ doc: 'Where to send the browser to sign in with it (/sso/<id>)' })),
    }),
    doc: 'Home-realm discovery: the organization that verified the email\'s domain, the sign-in methods it accepts, and the SSO connection that signs its addresses in.',
  }),
  defineOperation({
    ...user('switch_organization', 'SwitchOrganization'),
    kind: 'mutation',
    input: s.object('SwitchOrganizationRequest', {
      organization_id: s.optional(s.string({ maxLength: 64, doc: 'The organization to make active (empty: none)' })),
      scope: STRINGS('Token scopes; with organizations the tokens carry the organizations claim'),
    }),
    output: AUTH_RESPONSE,
    doc: 'Makes an organization the session\'s active one and issues its tokens again with org_id and org_roles (sets the session cookies).',
  }),
] as const;
