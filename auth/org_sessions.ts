/**
 * What a session in an organization, and a token with an organization's
 * claims, must satisfy at each use (docs/organizations.md): the user is
 * still a member, with the roles the token names, of an organization that
 * still exists, and the organization's `session_lifetime` has not passed
 * since the session's sign-in. Each rule is read from the organization as
 * it is now, so that a change applies at the next use.
 *
 * Each rule has a full form, which reads through the organization service
 * and refuses with the precise error, and an "at once" form for the session
 * flows' fast paths: it answers only when the store can read without
 * waiting and the rule holds, and otherwise leaves the decision (refusals
 * included) to the full form.
 */
import { LatchkeyError } from '../engine/errors.ts';
import type { SessionManager, SessionRecord } from './sessions.ts';

/** What the session flows read of organization memberships (the organization service). */
export interface OrgMemberships {
  /** The user's live roles in the organization, with its session lifetime (seconds, 0 for none); undefined when not a member or the organization is gone. */
  rolesOf(orgId: string, userId: string): Promise<{ roles: string[]; settings: { session_lifetime: number } } | undefined>;
  /** The organization's `session_lifetime` in seconds (0: none, or the organization is gone). */
  sessionLifetimeOf(orgId: string): Promise<number>;
  /** {@link sessionLifetimeOf} at once, or undefined when it must be asked. */
  sessionLifetimeNow(orgId: string): number | undefined;
  /** {@link rolesOf} at once: null when not a member or the organization is gone, undefined when it must be asked. */
  rolesNow(orgId: string, userId: string): { roles: string[]; settings: { session_lifetime: number } } | null | undefined;
  /** The user's organizations (the `organizations` claim). */
  organizationsOf(userId: string): Promise<{ id: string; slug: string; name: string; roles: string[] }[]>;
}

/** The scope that asks for the `organizations` claim. */
export const ORGANIZATIONS_SCOPE = 'organizations';

/** `unauthenticated` (`organization_session_expired`): the session ended at its organization's session lifetime. */
export function orgSessionExpired(message = 'the organization\'s session lifetime has passed; sign in again'): LatchkeyError {
  return new LatchkeyError('unauthenticated', message, { reason: 'organization_session_expired' });
}

function staleOrganization(): LatchkeyError {
  return new LatchkeyError('permission_denied', 'the active organization of this session is no longer valid; switch organization again', { reason: 'stale_organization' });
}

/** Whether a token's `org_roles` claim names exactly the member's roles now (in any order). */
function sameRoles(claimed: unknown, now: readonly string[]): boolean {
  const a = Array.isArray(claimed) ? claimed.map(String).sort() : [];
  const b = [...now].sort();
  return a.length === b.length && a.every((r, i) => r === b[i]);
}

/** An organization's part of an answer (`validate_session`). */
export interface OrgPart {
  org_id: string;
  org_roles: string[];
}

export class OrgSessionRules {
  readonly #orgs: OrgMemberships | undefined;
  readonly #sessions: Pick<SessionManager, 'end'>;
  readonly #nowSeconds: () => number;

  constructor(deps: { organizations: OrgMemberships | undefined; sessions: Pick<SessionManager, 'end'>; nowSeconds: () => number }) {
    this.#orgs = deps.organizations;
    this.#sessions = deps.sessions;
    this.#nowSeconds = deps.nowSeconds;
  }

  /** Whether an organization's session lifetime (seconds; 0: none) has passed since the session's sign-in. */
  lifetimePassed(session: SessionRecord, lifetime: number): boolean {
    return lifetime > 0 && this.#nowSeconds() - session.auth_time > lifetime;
  }

  /**
   * Ends a session whose active organization's `session_lifetime` has passed
   * since its sign-in, read from the organization now (a lifetime set or
   * shortened after the switch counts), and refuses it (`unauthenticated`,
   * reason `organization_session_expired`): the whole session ends, as an
   * organization's session policy means, not only its organization.
   */
  async require(session: SessionRecord, message?: string): Promise<void> {
    const orgs = this.#orgs;
    if (session.org_id === undefined || session.org_id === '' || orgs === undefined) return;
    const lifetime = await orgs.sessionLifetimeOf(session.org_id);
    if (this.lifetimePassed(session, lifetime)) {
      await this.#sessions.end(session.sid);
      throw orgSessionExpired(message);
    }
  }

  /**
   * True when the session is in no organization, or its organization's
   * session lifetime, read at once, has not passed since its sign-in (as
   * {@link require} decides); false when that cannot be told at once or the
   * lifetime has passed: the full path then reads it, and ends the session
   * when it has.
   */
  holdsNow(session: SessionRecord): boolean {
    const orgs = this.#orgs;
    if (session.org_id === undefined || session.org_id === '' || orgs === undefined) return true;
    const lifetime = orgs.sessionLifetimeNow(session.org_id);
    return lifetime !== undefined && !this.lifetimePassed(session, lifetime);
  }

  /**
   * Refuses claims of an organization the user no longer belongs to, or with
   * roles that are not the member's roles now, or past the organization's
   * session lifetime (`permission_denied`, reason `stale_organization`);
   * undefined when `orgId` names none.
   */
  async check(orgId: unknown, orgRoles: unknown, userId: string, session: SessionRecord): Promise<OrgPart | undefined> {
    if (orgId === undefined || orgId === null || orgId === '') return undefined;
    const orgs = this.#orgs;
    if (orgs === undefined || typeof orgId !== 'string') throw staleOrganization();
    const m = await orgs.rolesOf(orgId, userId);
    if (m === undefined) throw staleOrganization();
    if (orgRoles !== undefined && !sameRoles(orgRoles, m.roles)) throw staleOrganization();
    if (this.lifetimePassed(session, m.settings.session_lifetime)) throw staleOrganization();
    return { org_id: orgId, org_roles: m.roles };
  }

  /**
   * {@link check} when it answers at once and accepts: undefined for no
   * organization, the organization's part of the answer, or null when the
   * membership cannot be read at once or the check would refuse (the full
   * path then decides, and refuses as it always does).
   */
  now(orgId: unknown, orgRoles: unknown, userId: string, session: SessionRecord): OrgPart | undefined | null {
    if (orgId === undefined || orgId === null || orgId === '') return undefined;
    const orgs = this.#orgs;
    if (orgs === undefined || typeof orgId !== 'string') return null;
    const m = orgs.rolesNow(orgId, userId);
    if (m === undefined || m === null) return null;
    if (orgRoles !== undefined && !sameRoles(orgRoles, m.roles)) return null;
    return this.lifetimePassed(session, m.settings.session_lifetime) ? null : { org_id: orgId, org_roles: m.roles };
  }
}
