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
 * Writes need the FGA store to share the main SQL connection (the server's
 * default): otherwise every organization operation answers
 * `failed_precondition` (reason `organizations_unavailable`) rather than
 * write rows and tuples apart.
 */
import { createHash, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import { LatchkeyError } from '../engine/errors.ts';
import type { Engine, TupleKey } from '../engine/index.ts';
import { inTransaction, type MainDatabase, type StoreTransaction } from './main_database.ts';
import { BUILTIN_ORG_ROLES, mergeOrgFragment, ROLE_PATTERN } from './org_model.ts';
import {
  DEFAULT_ORG_SETTINGS,
  type DomainRecord,
  type InvitationRecord,
  type InvitationStatus,
  type MemberRecord,
  type OrgRecord,
  type OrgSettings,
  type SqlOrgStore,
  type TeamRecord,
} from './org_store.ts';
import type { ScimTokenRecord, SqlScimStore } from './scim_store.ts';
import { normalizeEmail, type UserRecord, type UserStore } from './user_store_types.ts';

/** How the service writes tuples inside its transactions (the FGA store on the main connection). */
export interface OrgTuples {
  /** Makes `deletes` absent and `writes` present inside `tx`. */
  ensure(deletes: readonly TupleKey[], writes: readonly TupleKey[], tx: StoreTransaction): Promise<void>;
  /** Deletes every tuple about `objects` or naming them (or their usersets) as user, inside `tx`. */
  deleteObjects(objects: readonly string[], tx: StoreTransaction): Promise<void>;
  /** After a commit: the in-process mirror and answer cache catch up, so the next check sees the change. */
  refresh(): Promise<void>;
}

/** Who calls. */
export type OrgActor = { readonly kind: 'user'; readonly userId: string } | { readonly kind: 'super_admin' };

/** An event of the organization API: its audit row and (when named) its webhook, recorded inside the change's transaction. */
export interface OrgEvent {
  /** Audit action, e.g. `organization.created`. */
  action: string;
  /** Webhook event, when the change has one. */
  webhook?: 'organization.created' | 'member.added' | 'member.removed' | 'member.role_changed' | 'invitation.accepted' | 'sso_connection.changed';
  resourceType: 'organization' | 'team' | 'invitation' | 'domain' | 'scim_token' | 'sso_connection' | 'user';
  resourceId: string;
  data: Record<string, unknown>;
}

/** One call: its actor and where its events go (inside the transaction; a failure rolls the change back). */
export interface OrgCall {
  actor: OrgActor;
  record?: ((tx: StoreTransaction, event: OrgEvent) => Promise<void>) | undefined;
}

/** Resolves a name's DNS TXT records (`node:dns/promises` `resolveTxt` by default; tests pass their own). */
export type TxtResolver = (name: string) => Promise<string[][]>;

export interface OrganizationServiceOptions {
  database: MainDatabase;
  store: SqlOrgStore;
  /** SCIM tokens (docs/scim.md). */
  scim: SqlScimStore;
  users: UserStore;
  /** The engine (checks, the model); undefined: FGA is off, and so are organizations. */
  engine: () => Engine | undefined;
  /** The tuple writer; undefined when the FGA store does not share the main connection. */
  tuples: () => OrgTuples | undefined;
  /** `--organization-roles`: custom roles, besides owner, admin and member. */
  customRoles: readonly string[];
  /** Seconds an invitation stays usable (`--organization-invitation-ttl`). */
  invitationTtlSeconds: number;
  resolveTxt: TxtResolver;
  nowSeconds: () => number;
}

/** The public form of an organization. */
export interface PublicOrganization {
  id: string;
  slug: string;
  name: string;
  logo?: string | undefined;
  metadata: Record<string, unknown>;
  settings: OrgSettings;
  created_at: number;
  updated_at: number;
  /** The caller's role (lists of the caller's own organizations). */
  role?: string | undefined;
}

const TXT_PREFIX = '_latchkey-verification';
const TXT_VALUE_PREFIX = 'latchkey-verification=';
const SLUG = /^[a-z0-9](?:[a-z0-9-]{0,62}[a-z0-9])?$/;
const DOMAIN = /^(?=.{1,253}$)(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z][a-z0-9-]{0,61}[a-z0-9]$/;
const MAX_PAGE = 100;

const invalid = (message: string, reason: string): LatchkeyError => new LatchkeyError('invalid_argument', message, { reason });
const denied = (): LatchkeyError => new LatchkeyError('permission_denied', 'you may not do this in this organization', { reason: 'organization_permission_denied' });
const orgNotFound = (): LatchkeyError => new LatchkeyError('not_found', 'organization not found', { reason: 'organization_not_found' });

function digest(token: string): string {
  return createHash('sha256').update(token).digest('hex');
}

function publicOrg(o: OrgRecord & { role?: string }): PublicOrganization {
  return {
    id: o.id,
    slug: o.slug,
    name: o.name,
    ...(o.logo === null ? {} : { logo: o.logo }),
    metadata: o.metadata,
    settings: o.settings,
    created_at: o.created_at,
    updated_at: o.updated_at,
    ...(o.role === undefined ? {} : { role: o.role }),
  };
}

/** The public form of an invitation (never its token's digest). */
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

function publicInvitation(i: InvitationRecord): PublicInvitation {
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

const SCIM_TOKEN_PREFIX = 'lks_';
/** `lks_<16 hex>_<43 base64url>`: the public prefix, then the 32-byte secret. */
const SCIM_TOKEN = /^(lks_[0-9a-f]{16})_[A-Za-z0-9_-]{43}$/;

/** The public form of a SCIM token (never its secret or digest). */
export interface PublicScimToken {
  id: string;
  organization_id: string;
  prefix: string;
  description: string;
  created_at: number;
  created_by: string;
  last_used_at?: number;
  revoked_at?: number;
}

function publicScimToken(r: ScimTokenRecord): PublicScimToken {
  return {
    id: r.id,
    organization_id: r.organization_id,
    prefix: r.prefix,
    description: r.description,
    created_at: r.created_at,
    created_by: r.created_by,
    ...(r.last_used_at === null ? {} : { last_used_at: r.last_used_at }),
    ...(r.revoked_at === null ? {} : { revoked_at: r.revoked_at }),
  };
}

function page(p: { page?: number | undefined; limit?: number | undefined } | undefined): { page: number; limit: number; offset: number } {
  const pageNo = p?.page ?? 1;
  const limit = p?.limit ?? 10;
  if (!Number.isInteger(pageNo) || pageNo < 1) throw invalid('page must be at least 1', 'invalid_pagination');
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_PAGE) throw invalid(`limit must be 1 to ${MAX_PAGE}`, 'invalid_pagination');
  return { page: pageNo, limit, offset: (pageNo - 1) * limit };
}

const roleTuple = (orgId: string, role: string, userId: string): TupleKey => ({ object: `organization:${orgId}`, relation: role, user: `user:${userId}` });
const teamTuple = (teamId: string, userId: string): TupleKey => ({ object: `team:${teamId}`, relation: 'member', user: `user:${userId}` });

/** Settings input (every field optional: unset fields keep their value). */
export type OrgSettingsInput = Partial<OrgSettings>;

/** The organization service. */
export class OrganizationService {
  readonly #o: OrganizationServiceOptions;
  readonly #roles: readonly string[];
  #modelReady = false;
  /** The relations of the model's `organization` type (a role is written only when the model defines it). */
  #modelRoles = new Set<string>();

  constructor(options: OrganizationServiceOptions) {
    for (const r of options.customRoles) {
      if (!ROLE_PATTERN.test(r) || (BUILTIN_ORG_ROLES as readonly string[]).includes(r) || r.startsWith('can_') || r === 'organization') {
        throw invalid(`invalid custom organization role: ${r}`, 'invalid_organization_role');
      }
    }
    this.#o = options;
    this.#roles = [...BUILTIN_ORG_ROLES, ...options.customRoles];
  }

  /** The roles a member may hold: owner, admin, member and the server's custom roles. */
  get roles(): readonly string[] {
    return this.#roles;
  }

  /** The store (its memberships answer token validation). */
  get store(): SqlOrgStore {
    return this.#o.store;
  }

  // ---------------------------------------------------------------- plumbing

  #engine(): Engine {
    const e = this.#o.engine();
    if (e === undefined) throw new LatchkeyError('failed_precondition', 'fga is not enabled on this server', { reason: 'fga_disabled' });
    return e;
  }

  #tuples(): OrgTuples {
    const t = this.#o.tuples();
    if (t === undefined) {
      throw new LatchkeyError('failed_precondition', 'organizations need the FGA store on the main SQL database', { reason: 'organizations_unavailable' });
    }
    return t;
  }

  /**
   * Installs the model fragment when the store's latest model lacks it (a
   * new model version with the fragment's missing types added). Run at
   * startup, and again before an operation when the model was replaced.
   */
  async ensureModel(): Promise<void> {
    const engine = this.#engine();
    const latest = await engine.readModel();
    const merged = mergeOrgFragment(latest, this.#o.customRoles);
    if (merged !== undefined) await engine.writeModel(merged);
    const org = (merged ?? latest)?.type_definitions?.find((t) => t.type === 'organization');
    this.#modelRoles = new Set(Object.keys(org?.relations ?? {}));
    this.#modelReady = true;
  }

  /** Runs `fn` in one transaction on the main database, then brings the engine's caches up to it. */
  async #change<T>(fn: (tx: StoreTransaction, tuples: OrgTuples) => Promise<T>): Promise<T> {
    const tuples = this.#tuples();
    if (!this.#modelReady) await this.ensureModel();
    const out = await inTransaction(this.#o.database, (tx) => fn(tx, tuples));
    await tuples.refresh();
    return out;
  }

  /** Throws `permission_denied` unless the actor holds `relation` on `organization:<orgId>` (super-admins hold every one). */
  async #require(call: OrgCall, orgId: string, relation: string): Promise<void> {
    if (!this.#modelReady) await this.ensureModel();
    if (call.actor.kind === 'super_admin') return;
    // Read from the store, past every cache and the mirror: another instance may have removed this admin a moment
    // ago, and a management call is rare enough that a correct answer is worth the round trip (conventions §0).
    const request = { user: `user:${call.actor.userId}`, relation, object: `organization:${orgId}`, consistency: 'higher_consistency' as const };
    let allowed: boolean;
    try {
      allowed = (await this.#engine().check(request)).allowed;
    } catch (err) {
      // A model installed since without the fragment: merged back in once, then asked again. A check the engine
      // still cannot answer fails the call with its error, never an allow (fail closed).
      if (!(err instanceof LatchkeyError) || err.code !== 'invalid_argument') throw err;
      await this.ensureModel();
      allowed = (await this.#engine().check(request)).allowed;
    }
    if (!allowed) throw denied();
  }

  async #live(orgId: string, tx?: StoreTransaction): Promise<OrgRecord> {
    if (typeof orgId !== 'string' || orgId === '') throw invalid('organization_id is required', 'missing_organization_id');
    const org = await this.#o.store.organization(orgId, tx);
    if (org === undefined) throw orgNotFound();
    return org;
  }

  #role(role: string | undefined, fallback: string): string {
    const r = role === undefined || role === '' ? fallback : role;
    if (!this.#roles.includes(r)) throw invalid(`unknown organization role ${JSON.stringify(r)}; roles are ${this.#roles.join(', ')}`, 'invalid_organization_role');
    // An operator's own organization type without this role: its tuple would mean nothing to the engine.
    if (this.#modelReady && !this.#modelRoles.has(r)) {
      throw new LatchkeyError('failed_precondition', `the model's organization type does not define the role ${r}`, { reason: 'role_not_in_model' });
    }
    return r;
  }

  #settings(base: OrgSettings, input: OrgSettingsInput | undefined): OrgSettings {
    const s: OrgSettings = { ...base, ...(input ?? {}) };
    if (!Array.isArray(s.allowed_sign_in_methods) || s.allowed_sign_in_methods.some((m) => typeof m !== 'string' || m === '' || m.length > 64)) {
      throw invalid('allowed_sign_in_methods must be a list of login method names', 'invalid_organization_settings');
    }
    s.allowed_sign_in_methods = [...new Set(s.allowed_sign_in_methods)];
    if (typeof s.required_mfa !== 'boolean' || typeof s.auto_join_verified_domains !== 'boolean') throw invalid('required_mfa and auto_join_verified_domains are booleans', 'invalid_organization_settings');
    if (!Number.isInteger(s.session_lifetime) || s.session_lifetime < 0 || s.session_lifetime > 366 * 86400) {
      throw invalid('session_lifetime must be 0 to 31622400 seconds', 'invalid_organization_settings');
    }
    s.default_role = this.#role(s.default_role, 'member');
    if (s.default_role === 'owner') throw invalid('default_role cannot be owner', 'invalid_organization_settings');
    return s;
  }

  #slug(slug: string): string {
    const s = slug.trim().toLowerCase();
    if (!SLUG.test(s)) throw invalid('slug must be 1 to 64 lower-case letters, digits and inner hyphens', 'invalid_organization_slug');
    return s;
  }

  #name(name: string): string {
    const n = name.trim();
    if (n === '' || n.length > 256) throw invalid('name must be 1 to 256 characters', 'invalid_organization_name');
    return n;
  }

  async #record(call: OrgCall, tx: StoreTransaction, event: OrgEvent): Promise<void> {
    if (call.record !== undefined) await call.record(tx, event);
  }

  async #userOf(input: { user_id?: string | undefined; email?: string | undefined }): Promise<UserRecord> {
    let user: UserRecord | undefined;
    if (input.user_id !== undefined && input.user_id !== '') user = await this.#o.users.findById(input.user_id);
    else if (input.email !== undefined && input.email !== '') user = await this.#o.users.findByEmail(normalizeEmail(input.email) ?? '');
    else throw invalid('user_id or email is required', 'missing_user');
    if (user === undefined) throw new LatchkeyError('not_found', 'user not found', { reason: 'user_not_found' });
    return user;
  }

  // ---------------------------------------------------------------- organizations

  /** `create_organization`: a user becomes its owner; a super-admin names the owner (`owner_user_id`) or creates it ownerless. */
  async create(
    call: OrgCall,
    input: { name: string; slug?: string | undefined; logo?: string | undefined; metadata?: Record<string, unknown> | undefined; settings?: OrgSettingsInput | undefined; owner_user_id?: string | undefined },
  ): Promise<PublicOrganization> {
    const name = this.#name(input.name);
    const slug = this.#slug(input.slug ?? name.toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-+|-+$/g, '').slice(0, 64));
    const settings = this.#settings(DEFAULT_ORG_SETTINGS, input.settings);
    const ownerId = call.actor.kind === 'user' ? call.actor.userId : input.owner_user_id;
    if (ownerId !== undefined && ownerId !== '' && (await this.#o.users.findById(ownerId)) === undefined) throw new LatchkeyError('not_found', 'user not found', { reason: 'user_not_found' });
    const now = this.#o.nowSeconds();
    const org: OrgRecord = { id: randomUUID(), slug, name, logo: input.logo ?? null, metadata: input.metadata ?? {}, settings, created_at: now, updated_at: now, deleted_at: null };
    await this.#change(async (tx, tuples) => {
      if (!(await this.#o.store.insertOrganization(org, tx))) throw new LatchkeyError('already_exists', 'an organization with this slug exists', { reason: 'organization_slug_taken' });
      if (ownerId !== undefined && ownerId !== '') {
        await this.#o.store.insertMember({ organization_id: org.id, user_id: ownerId, role: 'owner', created_at: now, updated_at: now }, tx);
        await tuples.ensure([], [roleTuple(org.id, 'owner', ownerId)], tx);
      }
      await this.#record(call, tx, { action: 'organization.created', webhook: 'organization.created', resourceType: 'organization', resourceId: org.id, data: { organization: publicOrg(org), ...(ownerId ? { owner_user_id: ownerId } : {}) } });
    });
    return publicOrg(org);
  }

  /** `organization`: members read their organization. */
  async get(call: OrgCall, orgId: string): Promise<PublicOrganization> {
    const org = await this.#live(orgId);
    await this.#require(call, org.id, 'can_read');
    return publicOrg(org);
  }

  /** `organizations`: a user's own organizations (with their role); every organization for a super-admin. */
  async list(call: OrgCall, input: { pagination?: { page?: number | undefined; limit?: number | undefined } | undefined; search?: string | undefined }): Promise<{ organizations: PublicOrganization[]; pagination: { page: number; limit: number; offset: number; total: number } }> {
    const p = page(input.pagination);
    const r = await this.#o.store.listOrganizations({ userId: call.actor.kind === 'user' ? call.actor.userId : undefined, search: input.search, offset: p.offset, limit: p.limit });
    return { organizations: r.organizations.map(publicOrg), pagination: { ...p, total: r.total } };
  }

  /** `update_organization` (`can_update`). */
  async update(
    call: OrgCall,
    input: { organization_id: string; name?: string | undefined; slug?: string | undefined; logo?: string | undefined; metadata?: Record<string, unknown> | undefined; settings?: OrgSettingsInput | undefined },
  ): Promise<PublicOrganization> {
    const org = await this.#live(input.organization_id);
    await this.#require(call, org.id, 'can_update');
    const next: OrgRecord = {
      ...org,
      name: input.name === undefined ? org.name : this.#name(input.name),
      slug: input.slug === undefined ? org.slug : this.#slug(input.slug),
      logo: input.logo === undefined ? org.logo : input.logo === '' ? null : input.logo,
      metadata: input.metadata ?? org.metadata,
      settings: this.#settings(org.settings, input.settings),
      updated_at: this.#o.nowSeconds(),
    };
    await this.#change(async (tx) => {
      if (!(await this.#o.store.lockOrganization(org.id, tx))) throw orgNotFound();
      if (!(await this.#o.store.updateOrganization(next, tx))) throw new LatchkeyError('already_exists', 'an organization with this slug exists', { reason: 'organization_slug_taken' });
      await this.#record(call, tx, { action: 'organization.updated', resourceType: 'organization', resourceId: org.id, data: { organization: publicOrg(next) } });
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
    const org = await this.#live(orgId);
    await this.#require(call, org.id, 'can_delete');
    await this.#change(async (tx, tuples) => {
      if (!(await this.#o.store.lockOrganization(org.id, tx))) throw orgNotFound();
      const teams = await this.#o.store.teamIds(org.id, tx);
      await tuples.deleteObjects([`organization:${org.id}`, ...teams.map((t) => `team:${t}`)], tx);
      await this.#o.store.deleteOrganizationRows(org.id, tx);
      await this.#o.store.softDeleteOrganization(org.id, tx);
      await this.#o.scim.revokeOrganizationTokens(org.id, this.#o.nowSeconds(), tx);
      await this.#record(call, tx, { action: 'organization.deleted', resourceType: 'organization', resourceId: org.id, data: { organization: publicOrg(org) } });
    });
    return { message: 'organization deleted' };
  }

  // ---------------------------------------------------------------- members

  /** `organization_members` (`can_read`), optionally of one role. */
  async members(call: OrgCall, input: { organization_id: string; role?: string | undefined; pagination?: { page?: number | undefined; limit?: number | undefined } | undefined }) {
    const org = await this.#live(input.organization_id);
    await this.#require(call, org.id, 'can_read');
    const p = page(input.pagination);
    const r = await this.#o.store.listMembers({ organizationId: org.id, role: input.role, offset: p.offset, limit: p.limit });
    const members = [];
    for (const m of r.members) {
      const u = await this.#o.users.findById(m.user_id);
      members.push({ user_id: m.user_id, role: m.role, created_at: m.created_at, ...(u?.email ? { email: u.email } : {}), ...(u?.given_name ? { given_name: u.given_name } : {}) });
    }
    return { members, pagination: { ...p, total: r.total } };
  }

  /**
   * Adds `userId` with `role` inside `tx` (rows and tuple); the caller holds
   * the organization's row lock. `already_exists` when a member already.
   */
  async #addMember(call: OrgCall, tx: StoreTransaction, tuples: OrgTuples, org: OrgRecord, userId: string, role: string, via: string): Promise<MemberRecord> {
    if ((await this.#o.store.member(org.id, userId, tx)) !== undefined) throw new LatchkeyError('already_exists', 'the user is a member of this organization already', { reason: 'already_member' });
    const now = this.#o.nowSeconds();
    const m: MemberRecord = { organization_id: org.id, user_id: userId, role, created_at: now, updated_at: now };
    await this.#o.store.insertMember(m, tx);
    await tuples.ensure([], [roleTuple(org.id, role, userId)], tx);
    await this.#record(call, tx, { action: 'organization.member_added', webhook: 'member.added', resourceType: 'organization', resourceId: org.id, data: { organization_id: org.id, user_id: userId, role, via } });
    return m;
  }

  /** `add_organization_member` (`can_manage_members`; an owner is added only by an owner). */
  async addMember(call: OrgCall, input: { organization_id: string; user_id?: string | undefined; email?: string | undefined; role?: string | undefined }): Promise<{ user_id: string; role: string; created_at: number }> {
    const org = await this.#live(input.organization_id);
    await this.#require(call, org.id, 'can_manage_members');
    const role = this.#role(input.role, org.settings.default_role);
    if (role === 'owner') await this.#require(call, org.id, 'can_manage_owners');
    // Anyone may create an organization and so manage its members: looking users up by email would tell
    // them which addresses have accounts. A user adds by id, or invites the address; a super-admin may do both.
    if (call.actor.kind === 'user' && (input.user_id === undefined || input.user_id === '') && input.email !== undefined && input.email !== '') {
      throw new LatchkeyError('permission_denied', 'add a user by user_id, or invite the email address', { reason: 'email_lookup_refused' });
    }
    const user = await this.#userOf(input);
    const m = await this.#change(async (tx, tuples) => {
      if (!(await this.#o.store.lockOrganization(org.id, tx))) throw orgNotFound();
      return this.#addMember(call, tx, tuples, org, user.id, role, 'add_organization_member');
    });
    return { user_id: m.user_id, role: m.role, created_at: m.created_at };
  }

  /** `update_organization_member` (`can_manage_members`; to or from owner only by an owner; never the last owner). */
  async updateMember(call: OrgCall, input: { organization_id: string; user_id: string; role: string }): Promise<{ user_id: string; role: string }> {
    const org = await this.#live(input.organization_id);
    await this.#require(call, org.id, 'can_manage_members');
    const role = this.#role(input.role, '');
    const current = await this.#o.store.member(org.id, input.user_id);
    if (current === undefined) throw new LatchkeyError('not_found', 'the user is not a member of this organization', { reason: 'member_not_found' });
    if (role === 'owner' || current.role === 'owner') await this.#require(call, org.id, 'can_manage_owners');
    await this.#change(async (tx, tuples) => {
      if (!(await this.#o.store.lockOrganization(org.id, tx))) throw orgNotFound();
      const m = await this.#o.store.member(org.id, input.user_id, tx);
      if (m === undefined) throw new LatchkeyError('not_found', 'the user is not a member of this organization', { reason: 'member_not_found' });
      if (m.role === role) return;
      if (m.role === 'owner' && (await this.#o.store.countRole(org.id, 'owner', tx)) <= 1) throw lastOwner();
      await this.#o.store.updateMemberRole(org.id, m.user_id, role, tx);
      await tuples.ensure([roleTuple(org.id, m.role, m.user_id)], [roleTuple(org.id, role, m.user_id)], tx);
      await this.#record(call, tx, { action: 'organization.member_role_changed', webhook: 'member.role_changed', resourceType: 'organization', resourceId: org.id, data: { organization_id: org.id, user_id: m.user_id, role, previous_role: m.role } });
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
    const org = await this.#live(input.organization_id);
    const self = call.actor.kind === 'user' && call.actor.userId === input.user_id;
    if (!self) await this.#require(call, org.id, 'can_manage_members');
    const current = await this.#o.store.member(org.id, input.user_id);
    if (current === undefined) throw new LatchkeyError('not_found', 'the user is not a member of this organization', { reason: 'member_not_found' });
    if (current.role === 'owner' && !self) await this.#require(call, org.id, 'can_manage_owners');
    await this.#change(async (tx, tuples) => {
      if (!(await this.#o.store.lockOrganization(org.id, tx))) throw orgNotFound();
      const m = await this.#o.store.member(org.id, input.user_id, tx);
      if (m === undefined) throw new LatchkeyError('not_found', 'the user is not a member of this organization', { reason: 'member_not_found' });
      if (m.role === 'owner' && (await this.#o.store.countRole(org.id, 'owner', tx)) <= 1) throw lastOwner();
      const teams = await this.#o.store.teamsOfMember(org.id, m.user_id, tx);
      for (const t of teams) await this.#o.store.deleteTeamMember(t, m.user_id, tx);
      await this.#o.store.deleteMember(org.id, m.user_id, tx);
      await tuples.ensure([roleTuple(org.id, m.role, m.user_id), ...teams.map((t) => teamTuple(t, m.user_id))], [], tx);
      await this.#record(call, tx, { action: 'organization.member_removed', webhook: 'member.removed', resourceType: 'organization', resourceId: org.id, data: { organization_id: org.id, user_id: m.user_id, role: m.role } });
    });
    return { message: 'member removed' };
  }

  // ---------------------------------------------------------------- teams

  /** `create_team` (`can_manage_teams`); writes `team:T#organization@organization:O`. */
  async createTeam(call: OrgCall, input: { organization_id: string; name: string }): Promise<{ id: string; organization_id: string; name: string; created_at: number; member_count: number }> {
    const org = await this.#live(input.organization_id);
    await this.#require(call, org.id, 'can_manage_teams');
    const name = input.name.trim();
    if (name === '' || name.length > 256) throw invalid('name must be 1 to 256 characters', 'invalid_team_name');
    const team: TeamRecord = { id: randomUUID(), organization_id: org.id, name, created_at: this.#o.nowSeconds() };
    await this.#change(async (tx, tuples) => {
      if (!(await this.#o.store.lockOrganization(org.id, tx))) throw orgNotFound();
      if (!(await this.#o.store.insertTeam(team, tx))) throw new LatchkeyError('already_exists', 'the organization has a team of this name', { reason: 'team_name_taken' });
      await tuples.ensure([], [{ object: `team:${team.id}`, relation: 'organization', user: `organization:${org.id}` }], tx);
      await this.#record(call, tx, { action: 'organization.team_created', resourceType: 'team', resourceId: team.id, data: { organization_id: org.id, team_id: team.id, name } });
    });
    return { ...team, member_count: 0 };
  }

  /** `teams` (`can_read`). */
  async teams(call: OrgCall, input: { organization_id: string; pagination?: { page?: number | undefined; limit?: number | undefined } | undefined }) {
    const org = await this.#live(input.organization_id);
    await this.#require(call, org.id, 'can_read');
    const p = page(input.pagination);
    const r = await this.#o.store.listTeams({ organizationId: org.id, offset: p.offset, limit: p.limit });
    return { teams: r.teams, pagination: { ...p, total: r.total } };
  }

  async #team(teamId: string): Promise<{ team: TeamRecord; org: OrgRecord }> {
    if (typeof teamId !== 'string' || teamId === '') throw invalid('team_id is required', 'missing_team_id');
    const team = await this.#o.store.team(teamId);
    if (team === undefined) throw new LatchkeyError('not_found', 'team not found', { reason: 'team_not_found' });
    const org = await this.#o.store.organization(team.organization_id);
    if (org === undefined) throw new LatchkeyError('not_found', 'team not found', { reason: 'team_not_found' });
    return { team, org };
  }

  /** `add_team_member` (`can_manage_teams` on the team's organization); the user must be a member of it. */
  async addTeamMember(call: OrgCall, input: { team_id: string; user_id: string }): Promise<{ message: string }> {
    const { team, org } = await this.#team(input.team_id);
    await this.#require(call, org.id, 'can_manage_teams');
    await this.#change(async (tx, tuples) => {
      if (!(await this.#o.store.lockOrganization(org.id, tx))) throw orgNotFound();
      if ((await this.#o.store.member(org.id, input.user_id, tx)) === undefined) {
        throw new LatchkeyError('failed_precondition', 'the user is not a member of the team\'s organization', { reason: 'not_organization_member' });
      }
      if (await this.#o.store.isTeamMember(team.id, input.user_id, tx)) throw new LatchkeyError('already_exists', 'the user is in this team already', { reason: 'already_team_member' });
      await this.#o.store.insertTeamMember(team.id, input.user_id, tx);
      await tuples.ensure([], [teamTuple(team.id, input.user_id)], tx);
      await this.#record(call, tx, { action: 'organization.team_member_added', resourceType: 'team', resourceId: team.id, data: { organization_id: org.id, team_id: team.id, user_id: input.user_id } });
    });
    return { message: 'team member added' };
  }

  /** `remove_team_member` (`can_manage_teams`). */
  async removeTeamMember(call: OrgCall, input: { team_id: string; user_id: string }): Promise<{ message: string }> {
    const { team, org } = await this.#team(input.team_id);
    await this.#require(call, org.id, 'can_manage_teams');
    await this.#change(async (tx, tuples) => {
      if (!(await this.#o.store.lockOrganization(org.id, tx))) throw orgNotFound();
      if (!(await this.#o.store.isTeamMember(team.id, input.user_id, tx))) throw new LatchkeyError('not_found', 'the user is not in this team', { reason: 'team_member_not_found' });
      await this.#o.store.deleteTeamMember(team.id, input.user_id, tx);
      await tuples.ensure([teamTuple(team.id, input.user_id)], [], tx);
      await this.#record(call, tx, { action: 'organization.team_member_removed', resourceType: 'team', resourceId: team.id, data: { organization_id: org.id, team_id: team.id, user_id: input.user_id } });
    });
    return { message: 'team member removed' };
  }

  // ---------------------------------------------------------------- invitations

  /**
   * `invite_organization_members` (`can_manage_members`; owners invited only
   * by an owner). Each invitation's token is returned once (only its digest
   * is stored) for the caller to deliver; `deliver` mails it when mail is set up.
   */
  async invite(
    call: OrgCall,
    input: { organization_id: string; emails: readonly string[]; role?: string | undefined },
    deliver?: (invitation: InvitationRecord, token: string, org: OrgRecord) => void,
  ): Promise<{ message: string; invitations: PublicInvitation[] }> {
    const org = await this.#live(input.organization_id);
    await this.#require(call, org.id, 'can_manage_members');
    const role = this.#role(input.role, org.settings.default_role);
    if (role === 'owner') await this.#require(call, org.id, 'can_manage_owners');
    const emails = [...new Set(input.emails.map((e) => normalizeEmail(e) ?? ''))];
    if (emails.length === 0 || emails.some((e) => !/^[^@\s]+@[^@\s]+$/.test(e))) throw invalid('emails must be email addresses', 'invalid_email');
    const now = this.#o.nowSeconds();
    const issued = emails.map((email) => {
      const token = randomBytes(32).toString('base64url');
      const inv: InvitationRecord & { token_hash: string } = {
        id: randomUUID(), organization_id: org.id, email, role, status: 'pending', expires_at: now + this.#o.invitationTtlSeconds, created_at: now, updated_at: now,
        invited_by: call.actor.kind === 'user' ? call.actor.userId : 'super_admin', accepted_by: null, token_hash: digest(token),
      };
      return { inv, token };
    });
    await this.#change(async (tx) => {
      if (!(await this.#o.store.lockOrganization(org.id, tx))) throw orgNotFound();
      for (const { inv } of issued) await this.#o.store.insertInvitation(inv, tx);
      await this.#record(call, tx, { action: 'organization.members_invited', resourceType: 'organization', resourceId: org.id, data: { organization_id: org.id, emails, role } });
    });
    for (const { inv, token } of issued) deliver?.(inv, token, org);
    return { message: 'invitations created', invitations: issued.map(({ inv, token }) => ({ ...publicInvitation(inv), token })) };
  }

  /** `organization_invitations` (`can_manage_members`), optionally of one status. */
  async invitations(call: OrgCall, input: { organization_id: string; status?: string | undefined; pagination?: { page?: number | undefined; limit?: number | undefined } | undefined }) {
    const org = await this.#live(input.organization_id);
    await this.#require(call, org.id, 'can_manage_members');
    const status = input.status === undefined || input.status === '' ? undefined : input.status;
    if (status !== undefined && !['pending', 'accepted', 'expired', 'revoked'].includes(status)) throw invalid('status is pending, accepted, expired or revoked', 'invalid_invitation_status');
    const p = page(input.pagination);
    const r = await this.#o.store.listInvitations({ organizationId: org.id, status: status as InvitationStatus | undefined, offset: p.offset, limit: p.limit });
    return { invitations: r.invitations.map(publicInvitation), pagination: { ...p, total: r.total } };
  }

  /** `revoke_organization_invitation` (`can_manage_members`): only a pending invitation (`failed_precondition`, `invitation_not_pending`). */
  async revokeInvitation(call: OrgCall, invitationId: string): Promise<{ message: string }> {
    const inv = await this.#o.store.invitation(invitationId);
    if (inv === undefined) throw new LatchkeyError('not_found', 'invitation not found', { reason: 'invitation_not_found' });
    await this.#require(call, inv.organization_id, 'can_manage_members');
    await this.#change(async (tx) => {
      if (!(await this.#o.store.finishInvitation(inv.id, 'revoked', null, tx))) throw new LatchkeyError('failed_precondition', 'the invitation is not pending', { reason: 'invitation_not_pending' });
      await this.#record(call, tx, { action: 'organization.invitation_revoked', resourceType: 'invitation', resourceId: inv.id, data: { organization_id: inv.organization_id, invitation_id: inv.id } });
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
    const inv = await this.#o.store.invitationByTokenHash(digest(token));
    if (inv === undefined) throw new LatchkeyError('not_found', 'invitation not found', { reason: 'invitation_not_found' });
    if (inv.status === 'expired') throw new LatchkeyError('failed_precondition', 'the invitation has expired', { reason: 'invitation_expired' });
    if (inv.status !== 'pending') throw new LatchkeyError('failed_precondition', `the invitation is ${inv.status}`, { reason: 'invitation_not_pending' });
    const user = await this.#o.users.findById(userId);
    if (user === undefined || user.email === null || user.email === undefined || normalizeEmail(user.email) !== inv.email) {
      throw new LatchkeyError('permission_denied', 'the invitation was sent to another email address', { reason: 'invitation_email_mismatch' });
    }
    // The address must be proven: else whoever signed up with it first would take the invitation.
    if (user.email_verified_at === null || user.email_verified_at === undefined) {
      throw new LatchkeyError('permission_denied', 'verify your email address before accepting the invitation', { reason: 'email_not_verified' });
    }
    // A custom role dropped from --organization-roles since the invitation was sent is not written.
    this.#role(inv.role, '');
    const org = await this.#live(inv.organization_id);
    let role = inv.role;
    await this.#change(async (tx, tuples) => {
      if (!(await this.#o.store.lockOrganization(org.id, tx))) throw orgNotFound();
      if (!(await this.#o.store.finishInvitation(inv.id, 'accepted', userId, tx))) {
        const again = await this.#o.store.invitation(inv.id, tx);
        if (again?.status === 'expired') throw new LatchkeyError('failed_precondition', 'the invitation has expired', { reason: 'invitation_expired' });
        throw new LatchkeyError('failed_precondition', 'the invitation is not pending', { reason: 'invitation_not_pending' });
      }
      const existing = await this.#o.store.member(org.id, userId, tx);
      if (existing === undefined) await this.#addMember(call, tx, tuples, org, userId, inv.role, 'invitation');
      else role = existing.role;
      await this.#record(call, tx, { action: 'organization.invitation_accepted', webhook: 'invitation.accepted', resourceType: 'invitation', resourceId: inv.id, data: { organization_id: org.id, invitation_id: inv.id, user_id: userId, role } });
    });
    return { message: 'invitation accepted', organization: publicOrg(org), role };
  }

  // ---------------------------------------------------------------- domains

  #domain(domain: string): string {
    const d = domain.trim().toLowerCase().replace(/\.$/, '');
    if (!DOMAIN.test(d)) throw invalid('not a domain name', 'invalid_domain');
    return d;
  }

  #publicDomain(d: DomainRecord) {
    return {
      organization_id: d.organization_id,
      domain: d.domain,
      verified: d.verified_at !== null,
      ...(d.verified_at === null ? {} : { verified_at: d.verified_at }),
      txt_record_name: `${TXT_PREFIX}.${d.domain}`,
      txt_record_value: `${TXT_VALUE_PREFIX}${d.verification_token}`,
    };
  }

  /** `add_organization_domain` (`can_update`): the TXT record to publish; adding a known domain again answers its record. */
  async addDomain(call: OrgCall, input: { organization_id: string; domain: string }) {
    const org = await this.#live(input.organization_id);
    await this.#require(call, org.id, 'can_update');
    const domain = this.#domain(input.domain);
    const known = await this.#o.store.domain(org.id, domain);
    if (known !== undefined) return this.#publicDomain(known);
    const d: DomainRecord = { organization_id: org.id, domain, verification_token: randomBytes(24).toString('hex'), verified_at: null, created_at: this.#o.nowSeconds() };
    await this.#change(async (tx) => {
      if (!(await this.#o.store.lockOrganization(org.id, tx))) throw orgNotFound();
      await this.#o.store.insertDomain(d, tx);
      await this.#record(call, tx, { action: 'organization.domain_added', resourceType: 'domain', resourceId: domain, data: { organization_id: org.id, domain } });
    });
    return this.#publicDomain(d);
  }

  /**
   * `verify_organization_domain` (`can_update`): looks up the TXT records of
   * `_latchkey-verification.<domain>`; one equal to the expected value
   * verifies the domain (`failed_precondition`, `domain_not_verified`,
   * otherwise). A domain verified by another organization: `already_exists`
   * (`domain_taken`).
   */
  async verifyDomain(call: OrgCall, input: { organization_id: string; domain: string }) {
    const org = await this.#live(input.organization_id);
    await this.#require(call, org.id, 'can_update');
    const domain = this.#domain(input.domain);
    const d = await this.#o.store.domain(org.id, domain);
    if (d === undefined) throw new LatchkeyError('not_found', 'the domain was not added to this organization', { reason: 'domain_not_found' });
    if (d.verified_at !== null) return this.#publicDomain(d);
    let records: string[][];
    try {
      records = await this.#o.resolveTxt(`${TXT_PREFIX}.${domain}`);
    } catch (err) {
      const code = (err as { code?: string }).code;
      if (code === 'ENOTFOUND' || code === 'ENODATA') records = [];
      else throw new LatchkeyError('unavailable', 'the DNS lookup failed; try again', { reason: 'dns_unavailable', cause: err });
    }
    const expected = `${TXT_VALUE_PREFIX}${d.verification_token}`;
    if (!records.some((chunks) => chunks.join('') === expected)) {
      throw new LatchkeyError('failed_precondition', `no TXT record ${expected} at ${TXT_PREFIX}.${domain}`, { reason: 'domain_not_verified' });
    }
    await this.#change(async (tx) => {
      if (!(await this.#o.store.lockOrganization(org.id, tx))) throw orgNotFound();
      if (!(await this.#o.store.verifyDomain(org.id, domain, tx))) throw new LatchkeyError('already_exists', 'another organization has verified this domain', { reason: 'domain_taken' });
      await this.#record(call, tx, { action: 'organization.domain_verified', resourceType: 'domain', resourceId: domain, data: { organization_id: org.id, domain } });
    });
    return this.#publicDomain({ ...d, verified_at: this.#o.nowSeconds() });
  }

  /**
   * `discover_organization` (home-realm discovery): the organization that
   * verified the email's domain, with the sign-in methods it accepts.
   */
  async discover(email: string): Promise<Record<string, unknown>> {
    const e = normalizeEmail(email) ?? '';
    const at = e.lastIndexOf('@');
    if (at <= 0) throw invalid('not an email address', 'invalid_email');
    const org = await this.#o.store.organizationOfVerifiedDomain(e.slice(at + 1));
    if (org === undefined) return { found: false, allowed_sign_in_methods: [], required_mfa: false, auto_join: false };
    return {
      found: true,
      organization_id: org.id,
      slug: org.slug,
      name: org.name,
      ...(org.logo === null ? {} : { logo: org.logo }),
      allowed_sign_in_methods: org.settings.allowed_sign_in_methods,
      required_mfa: org.settings.required_mfa,
      auto_join: org.settings.auto_join_verified_domains,
    };
  }

  // ---------------------------------------------------------------- SCIM tokens

  /**
   * `create_scim_token` (`can_update`): a bearer token for the organization's
   * SCIM endpoint (`/scim/v2`), answered once; only its prefix and digest are
   * kept.
   */
  async createScimToken(call: OrgCall, input: { organization_id: string; description?: string | undefined }): Promise<PublicScimToken & { token: string }> {
    const org = await this.#live(input.organization_id);
    await this.#require(call, org.id, 'can_update');
    const description = (input.description ?? '').trim();
    if (description.length > 256) throw invalid('description must be at most 256 characters', 'invalid_description');
    const prefix = `${SCIM_TOKEN_PREFIX}${randomBytes(8).toString('hex')}`;
    const token = `${prefix}_${randomBytes(32).toString('base64url')}`;
    const rec: ScimTokenRecord & { secret_hash: string } = {
      id: randomUUID(), organization_id: org.id, prefix, secret_hash: digest(token), description,
      created_at: this.#o.nowSeconds(), created_by: call.actor.kind === 'user' ? call.actor.userId : 'super_admin', last_used_at: null, revoked_at: null,
    };
    await this.#change(async (tx) => {
      if (!(await this.#o.store.lockOrganization(org.id, tx))) throw orgNotFound();
      await this.#o.scim.insertToken(rec, tx);
      await this.#record(call, tx, { action: 'organization.scim_token_created', resourceType: 'scim_token', resourceId: rec.id, data: { organization_id: org.id, token_id: rec.id, prefix } });
    });
    return { ...publicScimToken(rec), token };
  }

  /** `scim_tokens` (`can_update`): the organization's tokens, newest first, revoked ones included (never a secret). */
  async scimTokens(call: OrgCall, input: { organization_id: string; pagination?: { page?: number | undefined; limit?: number | undefined } | undefined }) {
    const org = await this.#live(input.organization_id);
    await this.#require(call, org.id, 'can_update');
    const p = page(input.pagination);
    const r = await this.#o.scim.listTokens({ organizationId: org.id, offset: p.offset, limit: p.limit });
    return { tokens: r.tokens.map(publicScimToken), pagination: { ...p, total: r.total } };
  }

  /** `revoke_scim_token` (`can_update` on the token's organization): the next SCIM request with it is refused. */
  async revokeScimToken(call: OrgCall, input: { token_id: string }): Promise<{ message: string }> {
    const rec = typeof input.token_id === 'string' && input.token_id !== '' ? await this.#o.scim.token(input.token_id) : undefined;
    if (rec === undefined) throw new LatchkeyError('not_found', 'SCIM token not found', { reason: 'scim_token_not_found' });
    await this.#require(call, rec.organization_id, 'can_update');
    await this.#change(async (tx) => {
      if (!(await this.#o.scim.revokeToken(rec.id, this.#o.nowSeconds(), tx))) throw new LatchkeyError('failed_precondition', 'the SCIM token is revoked already', { reason: 'scim_token_revoked' });
      await this.#record(call, tx, { action: 'organization.scim_token_revoked', resourceType: 'scim_token', resourceId: rec.id, data: { organization_id: rec.organization_id, token_id: rec.id, prefix: rec.prefix } });
    });
    return { message: 'SCIM token revoked' };
  }

  /**
   * The live organization a SCIM bearer token belongs to, or undefined for a
   * token that is malformed, unknown, revoked, or of a deleted organization
   * (the caller answers 401 alike, telling none from another).
   */
  async authenticateScimToken(token: string): Promise<{ org: OrgRecord; tokenId: string } | undefined> {
    const m = SCIM_TOKEN.exec(token);
    if (m === null) return undefined;
    const rec = await this.#o.scim.tokenByPrefix(m[1]!);
    if (rec === undefined || rec.revoked_at !== null) return undefined;
    const want = Buffer.from(rec.secret_hash, 'hex');
    const got = createHash('sha256').update(token).digest();
    if (want.length !== got.length || !timingSafeEqual(want, got)) return undefined;
    const org = await this.#o.store.organization(rec.organization_id);
    if (org === undefined) return undefined;
    await this.#o.scim.touch(rec.id, this.#o.nowSeconds());
    return { org, tokenId: rec.id };
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
    const org = await this.#live(orgId);
    let m = await this.#o.store.member(org.id, userId);
    if (m === undefined && org.settings.auto_join_verified_domains) {
      const user = await this.#o.users.findById(userId);
      const email = user?.email ?? '';
      const verified = user !== undefined && user.email_verified_at !== null && user.email_verified_at !== undefined;
      const holder = verified && email.includes('@') ? await this.#o.store.organizationOfVerifiedDomain(email.slice(email.lastIndexOf('@') + 1)) : undefined;
      if (holder?.id === org.id) {
        m = await this.#change(async (tx, tuples) => {
          if (!(await this.#o.store.lockOrganization(org.id, tx))) throw orgNotFound();
          const again = await this.#o.store.member(org.id, userId, tx);
          return again ?? (await this.#addMember(call, tx, tuples, org, userId, org.settings.default_role, 'verified_domain'));
        });
      }
    }
    if (m === undefined) throw new LatchkeyError('permission_denied', 'you are not a member of this organization', { reason: 'not_organization_member' });
    checkSessionFits(org, session);
    return { org, roles: [m.role] };
  }

  /** The user's live roles in `orgId` (undefined when not a member, or the organization is gone): what token validation compares with. */
  async rolesOf(orgId: string, userId: string): Promise<{ roles: string[]; settings: OrgSettings } | undefined> {
    const org = await this.#o.store.organization(orgId);
    if (org === undefined) return undefined;
    const m = await this.#o.store.member(orgId, userId);
    return m === undefined ? undefined : { roles: [m.role], settings: org.settings };
  }

  /** The user's organizations, for the `organizations` claim. */
  async organizationsOf(userId: string): Promise<{ id: string; slug: string; name: string; roles: string[] }[]> {
    return (await this.#o.store.membershipsOf(userId)).map((m) => ({ id: m.organization_id, slug: m.slug, name: m.name, roles: [m.role] }));
  }

  /** Removes a user's memberships, team memberships and SCIM rows inside `tx` (user deletion; its tuples go with the user's own). */
  async deleteUserRows(userId: string, tx: StoreTransaction): Promise<void> {
    await this.#o.store.deleteUserRows(userId, tx);
    await this.#o.scim.deleteUserRows(userId, tx);
  }

  /** The SCIM token store. */
  get scimStore(): SqlScimStore {
    return this.#o.scim;
  }

  /**
   * For the SCIM service (auth/scim.ts): runs `fn` in one transaction on the
   * main database with the tuple writer, then brings the engine's caches up
   * to it; `organizations_unavailable` when the FGA store is elsewhere.
   */
  async changeInTransaction<T>(fn: (tx: StoreTransaction, tuples: OrgTuples) => Promise<T>): Promise<T> {
    return this.#change(fn);
  }

  /** The tuple writer, with the model fragment installed (for changes made inside another store's transaction). */
  async preparedTuples(): Promise<OrgTuples> {
    const tuples = this.#tuples();
    if (!this.#modelReady) await this.ensureModel();
    return tuples;
  }

  /**
   * For services that manage an organization's parts (auth/sso_connections.ts):
   * the live organization (`not_found`), then `permission_denied` unless the
   * actor holds `relation` on it, checked as this service checks its own calls.
   */
  async authorize(call: OrgCall, orgId: string, relation: string): Promise<OrgRecord> {
    const org = await this.#live(orgId);
    await this.#require(call, org.id, relation);
    return org;
  }

  /** Records an event of a change made through {@link changeInTransaction} (its audit row and webhook, inside `tx`). */
  async recordEvent(call: OrgCall, tx: StoreTransaction, event: OrgEvent): Promise<void> {
    await this.#record(call, tx, event);
  }

  /** A role name checked against the roles and the model (`invalid_argument`, `failed_precondition`). */
  checkRole(role: string): string {
    return this.#role(role, 'member');
  }

  /** The role a member added without one gets in `org` (checked against the roles and the model). */
  defaultRole(org: OrgRecord): string {
    return this.#role(org.settings.default_role, 'member');
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
