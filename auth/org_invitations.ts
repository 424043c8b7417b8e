/**
 * Invitations to an organization (docs/organizations.md, "Invitations"): an
 * email address invited with a role, stored with only its token's SHA-256
 * digest; `pending` until accepted or revoked, `expired` past its expiry,
 * and single-use: its acceptance and the membership (row and tuple) commit
 * in one transaction, and exactly one of concurrent acceptances wins.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { LatchkeyError } from '../engine/errors.ts';
import { digest, invalid, orgNotFound, page, publicOrg, type OrgCall, type OrgCore, type PublicOrganization } from './org_core.ts';
import type { InvitationRecord, InvitationStatus, OrgRecord } from './org_store.ts';
import { normalizeEmail } from './user_store_types.ts';

export interface PublicInvitation {
  id: string;
  organization_id: string;
  email: string;
  role: string;
  status: InvitationStatus;
  expires_at: number;
  created_at: number;
  invited_by?: string;
  accepted_by?: string;
  token?: string;
}

export function publicInvitation(i: InvitationRecord): PublicInvitation {
  return {
    id: i.id,
    organization_id: i.organization_id,
    email: i.email,
    role: i.role,
    status: i.status,
    expires_at: i.expires_at,
    created_at: i.created_at,
    ...(i.invited_by === null ? {} : { invited_by: i.invited_by }),
    ...(i.accepted_by === null ? {} : { accepted_by: i.accepted_by }),
  };
}

/** The invitation operations. */
export class OrgInvitations {
  readonly #c: OrgCore;

  constructor(core: OrgCore) {
    this.#c = core;
  }

  /**
   * `invite_organization_members` (`can_manage_members`; owners invited only
   * by an owner). Each invitation's token is returned once (only its digest
   * is stored) for the caller to deliver; `deliver` mails it when mail is set up.
   */
  async invite(
    call: OrgCall,
    input: { organization_id: string; emails: readonly string[]; role?: string | undefined },
    deliver?: (invitation: InvitationRecord, token: string, org: OrgRecord) => void | Promise<void>,
  ): Promise<{ message: string; invitations: PublicInvitation[] }> {
    const org = await this.#c.live(input.organization_id);
    await this.#c.require(call, org.id, 'can_manage_members');
    const role = this.#c.role(input.role, org.settings.default_role);
    if (role === 'owner') await this.#c.require(call, org.id, 'can_manage_owners');
    const emails = [...new Set(input.emails.map((e) => normalizeEmail(e) ?? ''))];
    if (emails.length === 0 || emails.some((e) => !/^[^@\s]+@[^@\s]+$/.test(e))) throw invalid('emails must be email addresses', 'invalid_email');
    const now = this.#c.o.nowSeconds();
    const issued = emails.map((email) => {
      const token = randomBytes(32).toString('base64url');
      const inv: InvitationRecord & { token_hash: string } = {
        id: randomUUID(), organization_id: org.id, email, role, status: 'pending', expires_at: now + this.#c.o.invitationTtlSeconds, created_at: now, updated_at: now,
        invited_by: call.actor.kind === 'user' ? call.actor.userId : 'super_admin', accepted_by: null, token_hash: digest(token),
      };
      return { inv, token };
    });
    await this.#c.change(async (tx) => {
      if (!(await this.#c.o.store.lockOrganization(org.id, tx))) throw orgNotFound();
      for (const { inv } of issued) await this.#c.o.store.insertInvitation(inv, tx);
      await this.#c.record(call, tx, { action: 'organization.members_invited', resourceType: 'organization', resourceId: org.id, data: { organization_id: org.id, emails, role } });
    });
    for (const { inv, token } of issued) await deliver?.(inv, token, org);
    return { message: 'invitations created', invitations: issued.map(({ inv, token }) => ({ ...publicInvitation(inv), token })) };
  }

  /** `organization_invitations` (`can_manage_members`), optionally of one status. */
  async invitations(call: OrgCall, input: { organization_id: string; status?: string | undefined; pagination?: { page?: number | undefined; limit?: number | undefined } | undefined }) {
    const org = await this.#c.live(input.organization_id);
    await this.#c.require(call, org.id, 'can_manage_members');
    const status = input.status === undefined || input.status === '' ? undefined : input.status;
    if (status !== undefined && !['pending', 'accepted', 'expired', 'revoked'].includes(status)) throw invalid('status is pending, accepted, expired or revoked', 'invalid_invitation_status');
    const p = page(input.pagination);
    const r = await this.#c.o.store.listInvitations({ organizationId: org.id, status: status as InvitationStatus | undefined, offset: p.offset, limit: p.limit });
    return { invitations: r.invitations.map(publicInvitation), pagination: { ...p, total: r.total } };
  }

  /** `revoke_organization_invitation` (`can_manage_members`): only a pending invitation (`failed_precondition`, `invitation_not_pending`). */
  async revokeInvitation(call: OrgCall, invitationId: string): Promise<{ message: string }> {
    const inv = await this.#c.o.store.invitation(invitationId);
    if (inv === undefined) throw new LatchkeyError('not_found', 'invitation not found', { reason: 'invitation_not_found' });
    await this.#c.require(call, inv.organization_id, 'can_manage_members');
    await this.#c.change(async (tx) => {
      if (!(await this.#c.o.store.finishInvitation(inv.id, 'revoked', null, tx))) throw new LatchkeyError('failed_precondition', 'the invitation is not pending', { reason: 'invitation_not_pending' });
      await this.#c.record(call, tx, { action: 'organization.invitation_revoked', resourceType: 'invitation', resourceId: inv.id, data: { organization_id: inv.organization_id, invitation_id: inv.id } });
    });
    return { message: 'invitation revoked' };
  }

  /**
   * `accept_organization_invitation`: the signed-in user whose email is the
   * invitation's joins with its role. Single use: exactly one acceptance
   * wins, in the transaction that adds the membership. Refusals:
   * `not_found` (`invitation_not_found`), `failed_precondition`
   * (`invitation_expired`, `invitation_not_pending`), `permission_denied`
   * (`invitation_email_mismatch`).
   */
  async acceptInvitation(call: OrgCall, token: string): Promise<{ message: string; organization: PublicOrganization; role: string }> {
    if (call.actor.kind !== 'user') throw new LatchkeyError('permission_denied', 'an invitation is accepted by its invitee', { reason: 'user_required' });
    const userId = call.actor.userId;
    if (typeof token !== 'string' || token === '' || token.length > 512) throw new LatchkeyError('not_found', 'invitation not found', { reason: 'invitation_not_found' });
    const inv = await this.#c.o.store.invitationByTokenHash(digest(token));
    if (inv === undefined) throw new LatchkeyError('not_found', 'invitation not found', { reason: 'invitation_not_found' });
    if (inv.status === 'expired') throw new LatchkeyError('failed_precondition', 'the invitation has expired', { reason: 'invitation_expired' });
    if (inv.status !== 'pending') throw new LatchkeyError('failed_precondition', `the invitation is ${inv.status}`, { reason: 'invitation_not_pending' });
    const user = await this.#c.o.users.findById(userId);
    if (user === undefined || user.email === null || user.email === undefined || normalizeEmail(user.email) !== inv.email) {
      throw new LatchkeyError('permission_denied', 'the invitation was sent to another email address', { reason: 'invitation_email_mismatch' });
    }
    // The address must be proven: else whoever signed up with it first would take the invitation.
    if (user.email_verified_at === null || user.email_verified_at === undefined) {
      throw new LatchkeyError('permission_denied', 'verify your email address before accepting the invitation', { reason: 'email_not_verified' });
    }
    // A custom role dropped from --organization-roles since the invitation was sent is not written.
    this.#c.role(inv.role, '');
    const org = await this.#c.live(inv.organization_id);
    let role = inv.role;
    await this.#c.change(async (tx, tuples) => {
      if (!(await this.#c.o.store.lockOrganization(org.id, tx))) throw orgNotFound();
      if (!(await this.#c.o.store.finishInvitation(inv.id, 'accepted', userId, tx))) {
        const again = await this.#c.o.store.invitation(inv.id, tx);
        if (again?.status === 'expired') throw new LatchkeyError('failed_precondition', 'the invitation has expired', { reason: 'invitation_expired' });
        throw new LatchkeyError('failed_precondition', 'the invitation is not pending', { reason: 'invitation_not_pending' });
      }
      const existing = await this.#c.o.store.member(org.id, userId, tx);
      if (existing === undefined) await this.#c.addMember(call, tx, tuples, org, userId, inv.role, 'invitation');
      else role = existing.role;
      await this.#c.record(call, tx, { action: 'organization.invitation_accepted', webhook: 'invitation.accepted', resourceType: 'invitation', resourceId: inv.id, data: { organization_id: org.id, invitation_id: inv.id, user_id: userId, role } });
    });
    return { message: 'invitation accepted', organization: publicOrg(org), role };
  }
}
