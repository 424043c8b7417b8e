/**
 * The organization operations (api/operations/organizations.ts) and their
 * super-admin variants, which share a handler: the organization service
 * (auth/organizations.ts) tells a user from a super-admin by the call's
 * actor. Each change records its audit row and webhook in its own
 * transaction through the admin service (`organization.*` audit actions;
 * webhooks `organization.created`, `member.added`, `member.removed`,
 * `member.role_changed`, `invitation.accepted`), so that the rows, the
 * tuples, the audit row and the deliveries commit together or not at all.
 */
import { LatchkeyError } from '../../engine/errors.ts';
import type { InvitationRecord, OrgCall, OrganizationService, OrgEvent, OrgRecord, OrgSettingsInput, StoreTransaction } from '../../auth/index.ts';
import { checkRedirectUri, invitationMail, userMailLanguage } from '../../admin/index.ts';
import { ORGANIZATION_OPERATIONS } from '../../api/index.ts';
import type { RequestContext } from '../context.ts';
import { issuerOf } from '../flags.ts';
import { authOf, callContext } from './services_of.ts';
import { setSessionCookies } from './auth.ts';
import type { HandlersOf } from './types.ts';

/** The organization service; `failed_precondition` (`organizations_unavailable`) on a DynamoDB main database. */
function orgsOf(ctx: RequestContext): OrganizationService {
  const o = authOf(ctx).organizations;
  if (o === undefined) throw new LatchkeyError('failed_precondition', 'organizations need a SQL main database', { reason: 'organizations_unavailable' });
  return o;
}

/** Where an organization change's events go: the admin service's audit log and webhooks, in the change's transaction. */
function recorder(ctx: RequestContext): OrgCall['record'] {
  const admin = ctx.services.admin;
  if (admin === undefined) return undefined;
  const p = ctx.principal;
  return async (tx: StoreTransaction, event: OrgEvent) => {
    if (event.webhook !== undefined) await admin.webhooks.emit(event.webhook, event.data, tx);
    await admin.audit.record(
      {
        actor_type: p.kind === 'super_admin' ? 'admin' : 'user',
        actor_id: p.kind === 'user' ? p.userId : p.kind === 'super_admin' ? 'super_admin' : '',
        action: event.action,
        resource_type: event.resourceType,
        resource_id: event.resourceId,
        ip_address: ctx.clientIp,
        user_agent: ctx.userAgent,
        metadata: { ...event.data, protocol: ctx.protocol },
      },
      tx,
    );
  };
}

/** The call of the request: its actor (the user, or the super-admin) and its event recorder. */
export function orgCall(ctx: RequestContext): OrgCall {
  const p = ctx.principal;
  if (p.kind === 'user') return { actor: { kind: 'user', userId: p.userId }, record: recorder(ctx) };
  if (p.kind === 'super_admin') return { actor: { kind: 'super_admin' }, record: recorder(ctx) };
  throw new LatchkeyError('unauthenticated', 'unauthorized', { reason: 'unauthenticated' });
}

const settingsOf = (s: Record<string, unknown> | undefined): OrgSettingsInput | undefined => s as OrgSettingsInput | undefined;

function metadataOf(m: unknown): Record<string, unknown> | undefined {
  if (m === undefined || m === null) return undefined;
  if (typeof m !== 'object' || Array.isArray(m)) throw new LatchkeyError('invalid_argument', 'metadata must be a JSON object', { reason: 'invalid_metadata' });
  if (JSON.stringify(m).length > 16_384) throw new LatchkeyError('invalid_argument', 'metadata must be at most 16 KiB of JSON', { reason: 'invalid_metadata' });
  return m as Record<string, unknown>;
}

/** Mails each invitation's link when mail is set up (after the commit; a mail that fails is logged, the invitation stands). */
function invitationMailer(ctx: RequestContext, redirectUri: string | undefined): ((inv: InvitationRecord, token: string, org: OrgRecord) => Promise<void>) | undefined {
  const mail = ctx.services.admin?.mail;
  if (mail === undefined) return undefined;
  const c = ctx.services.config;
  const issuer = issuerOf(c);
  const base = redirectUri ? checkRedirectUri(redirectUri, c.allowedOrigins, issuer).toString() : `${issuer}/app`;
  const users = ctx.services.auth?.users;
  return async (inv, token, org) => {
    const url = new URL(base);
    url.searchParams.set('organization_invitation', token);
    // In the invitee's saved language when the address has an account, else the inviting request's.
    try {
      const invitee = await users?.findByEmail(inv.email).catch(() => undefined);
      const { subject, html } = invitationMail(userMailLanguage(invitee?.locale, ctx.acceptLanguage), { org: org.name, role: inv.role, url: url.toString() });
      mail.enqueue({ to: inv.email, subject, html });
    } catch (err) {
      ctx.logger.warn('organization invitation not mailed', { err, invitation_id: inv.id });
    }
  };
}

const USER_HANDLERS = {
  create_organization: (ctx: RequestContext, input: { name: string; slug?: string | undefined; logo?: string | undefined; metadata?: unknown; settings?: Record<string, unknown> | undefined; owner_user_id?: string | undefined }) => {
    const call = orgCall(ctx);
    if (call.actor.kind === 'user' && input.owner_user_id !== undefined && input.owner_user_id !== '' && input.owner_user_id !== call.actor.userId) {
      throw new LatchkeyError('permission_denied', 'only a super-admin names another owner', { reason: 'owner_not_caller' });
    }
    return orgsOf(ctx).create(call, { ...input, metadata: metadataOf(input.metadata), settings: settingsOf(input.settings) });
  },
  organization: (ctx: RequestContext, input: { organization_id: string }) => orgsOf(ctx).get(orgCall(ctx), input.organization_id),
  organizations: (ctx: RequestContext, input: { pagination?: { page?: number | undefined; limit?: number | undefined } | undefined; search?: string | undefined }) => orgsOf(ctx).list(orgCall(ctx), input),
  update_organization: (ctx: RequestContext, input: { organization_id: string; name?: string | undefined; slug?: string | undefined; logo?: string | undefined; metadata?: unknown; settings?: Record<string, unknown> | undefined }) =>
    orgsOf(ctx).update(orgCall(ctx), { ...input, metadata: metadataOf(input.metadata), settings: settingsOf(input.settings) }),
  delete_organization: (ctx: RequestContext, input: { organization_id: string }) => orgsOf(ctx).delete(orgCall(ctx), input.organization_id),
  organization_members: (ctx: RequestContext, input: { organization_id: string; role?: string | undefined; pagination?: { page?: number | undefined; limit?: number | undefined } | undefined }) =>
    orgsOf(ctx).members(orgCall(ctx), input),
  add_organization_member: (ctx: RequestContext, input: { organization_id: string; user_id?: string | undefined; email?: string | undefined; role?: string | undefined }) => orgsOf(ctx).addMember(orgCall(ctx), input),
  update_organization_member: (ctx: RequestContext, input: { organization_id: string; user_id: string; role: string }) => orgsOf(ctx).updateMember(orgCall(ctx), input),
  remove_organization_member: (ctx: RequestContext, input: { organization_id: string; user_id: string }) => orgsOf(ctx).removeMember(orgCall(ctx), input),
  create_team: (ctx: RequestContext, input: { organization_id: string; name: string }) => orgsOf(ctx).createTeam(orgCall(ctx), input),
  teams: (ctx: RequestContext, input: { organization_id: string; pagination?: { page?: number | undefined; limit?: number | undefined } | undefined }) => orgsOf(ctx).teams(orgCall(ctx), input),
  delete_team: (ctx: RequestContext, input: { team_id: string }) => orgsOf(ctx).deleteTeam(orgCall(ctx), input),
  add_team_member: (ctx: RequestContext, input: { team_id: string; user_id: string }) => orgsOf(ctx).addTeamMember(orgCall(ctx), input),
  remove_team_member: (ctx: RequestContext, input: { team_id: string; user_id: string }) => orgsOf(ctx).removeTeamMember(orgCall(ctx), input),
  invite_organization_members: (ctx: RequestContext, input: { organization_id: string; emails: readonly string[]; role?: string | undefined; redirect_uri?: string | undefined }) =>
    orgsOf(ctx).invite(orgCall(ctx), input, invitationMailer(ctx, input.redirect_uri)),
  organization_invitations: (ctx: RequestContext, input: { organization_id: string; status?: string | undefined; pagination?: { page?: number | undefined; limit?: number | undefined } | undefined }) =>
    orgsOf(ctx).invitations(orgCall(ctx), input),
  revoke_organization_invitation: (ctx: RequestContext, input: { invitation_id: string }) => orgsOf(ctx).revokeInvitation(orgCall(ctx), input.invitation_id),
  add_organization_domain: (ctx: RequestContext, input: { organization_id: string; domain: string }) => orgsOf(ctx).addDomain(orgCall(ctx), input),
  verify_organization_domain: (ctx: RequestContext, input: { organization_id: string; domain: string }) => orgsOf(ctx).verifyDomain(orgCall(ctx), input),
  create_scim_token: (ctx: RequestContext, input: { organization_id: string; description?: string | undefined }) => orgsOf(ctx).createScimToken(orgCall(ctx), input),
  scim_tokens: (ctx: RequestContext, input: { organization_id: string; pagination?: { page?: number | undefined; limit?: number | undefined } | undefined }) => orgsOf(ctx).scimTokens(orgCall(ctx), input),
  revoke_scim_token: (ctx: RequestContext, input: { token_id: string }) => orgsOf(ctx).revokeScimToken(orgCall(ctx), input),
};

type UserName = keyof typeof USER_HANDLERS;

const ADMIN_HANDLERS = Object.fromEntries(Object.entries(USER_HANDLERS).map(([name, h]) => [`admin_${name}`, h])) as { [K in UserName as `admin_${K}`]: (typeof USER_HANDLERS)[K] };

export const ORGANIZATION_HANDLERS: HandlersOf<typeof ORGANIZATION_OPERATIONS> = {
  ...USER_HANDLERS,
  ...ADMIN_HANDLERS,
  accept_organization_invitation: (ctx, input) => orgsOf(ctx).acceptInvitation(orgCall(ctx), input.token),
  discover_organization: async (ctx, input) => {
    const found = await orgsOf(ctx).discover(input.email);
    const sso = ctx.services.sso;
    if (found['found'] !== true || sso === undefined) return found as never;
    // Home-realm discovery: an enabled connection bound to the address's domain signs it in.
    const connection = await sso.connections.forEmail(String(found['organization_id']), input.email.trim());
    if (connection === undefined) return found as never;
    return { ...found, sso_connection_id: connection.id, sso_url: `${sso.connections.publicUrl}/sso/${connection.id}` } as never;
  },
  switch_organization: async (ctx, input) => {
    const result = await authOf(ctx).switchOrganization(input, callContext(ctx), { record: recorder(ctx) });
    setSessionCookies(ctx, result);
    return result.response as never;
  },
};
