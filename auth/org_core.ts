/**
 * What the organization services share (docs/organizations.md): the
 * options, the roles, the model fragment's installation, the one
 * transaction that writes rows and tuples together, the engine check that
 * authorizes each call, the input checks, and adding a member (done by
 * `add_organization_member`, an accepted invitation and a verified domain's
 * auto-join alike). Internal to auth/: the public face is
 * `OrganizationService` (auth/organizations.ts), which composes this with
 * the invitation, domain and SCIM token services.
 */
import { createHash } from 'node:crypto';
import { LatchkeyError } from '../engine/errors.ts';
import type { Engine, TupleKey } from '../engine/index.ts';
import { inTransaction, type MainDatabase, type StoreTransaction } from './main_database.ts';
import { BUILTIN_ORG_ROLES, mergeOrgFragment, ROLE_PATTERN } from './org_model.ts';
import type { MemberRecord, OrgRecord, OrgSettings, SqlOrgStore } from './org_store.ts';
import type { SqlScimStore } from './scim_store.ts';
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

const SLUG = /^[a-z0-9](?:[a-z0-9-]{0,62}[a-z0-9])?$/;
const MAX_PAGE = 100;

export const invalid = (message: string, reason: string): LatchkeyError => new LatchkeyError('invalid_argument', message, { reason });
export const denied = (): LatchkeyError => new LatchkeyError('permission_denied', 'you may not do this in this organization', { reason: 'organization_permission_denied' });
export const orgNotFound = (): LatchkeyError => new LatchkeyError('not_found', 'organization not found', { reason: 'organization_not_found' });

/** The SHA-256 digest of a token, in hex (invitation and SCIM tokens are stored only as it). */
export function digest(token: string): string {
  return createHash('sha256').update(token).digest('hex');
}

/** The public form of an organization. */
export function publicOrg(o: OrgRecord & { role?: string }): PublicOrganization {
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

/** `{page, limit}` checked, with its offset. */
export function page(p: { page?: number | undefined; limit?: number | undefined } | undefined): { page: number; limit: number; offset: number } {
  const pageNo = p?.page ?? 1;
  const limit = p?.limit ?? 10;
  if (!Number.isInteger(pageNo) || pageNo < 1) throw invalid('page must be at least 1', 'invalid_pagination');
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_PAGE) throw invalid(`limit must be 1 to ${MAX_PAGE}`, 'invalid_pagination');
  return { page: pageNo, limit, offset: (pageNo - 1) * limit };
}

export const roleTuple = (orgId: string, role: string, userId: string): TupleKey => ({ object: `organization:${orgId}`, relation: role, user: `user:${userId}` });
export const teamTuple = (teamId: string, userId: string): TupleKey => ({ object: `team:${teamId}`, relation: 'member', user: `user:${userId}` });

/** Settings input (every field optional: unset fields keep their value). */
export type OrgSettingsInput = Partial<OrgSettings>;

/** The shared plumbing of the organization services (one per server). */
export class OrgCore {
  readonly o: OrganizationServiceOptions;
  /** The roles a member may hold: owner, admin, member and the server's custom roles. */
  readonly roles: readonly string[];
  /** Whether the model fragment was installed since startup. */
  modelReady = false;
  /** The relations of the model's `organization` type (a role is written only when the model defines it). */
  #modelRoles = new Set<string>();

  constructor(options: OrganizationServiceOptions) {
    for (const r of options.customRoles) {
      if (!ROLE_PATTERN.test(r) || (BUILTIN_ORG_ROLES as readonly string[]).includes(r) || r.startsWith('can_') || r === 'organization') {
        throw invalid(`invalid custom organization role: ${r}`, 'invalid_organization_role');
      }
    }
    this.o = options;
    this.roles = [...BUILTIN_ORG_ROLES, ...options.customRoles];
  }

  /** The engine; `failed_precondition` (`fga_disabled`) when FGA is off. */
  engine(): Engine {
    const e = this.o.engine();
    if (e === undefined) throw new LatchkeyError('failed_precondition', 'fga is not enabled on this server', { reason: 'fga_disabled' });
    return e;
  }

  /** The tuple writer; `failed_precondition` (`organizations_unavailable`) when the FGA store is elsewhere. */
  tuples(): OrgTuples {
    const t = this.o.tuples();
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
    const engine = this.engine();
    const latest = await engine.readModel();
    const merged = mergeOrgFragment(latest, this.o.customRoles);
    if (merged !== undefined) await engine.writeModel(merged);
    const org = (merged ?? latest)?.type_definitions?.find((t) => t.type === 'organization');
    this.#modelRoles = new Set(Object.keys(org?.relations ?? {}));
    this.modelReady = true;
  }

  /** Runs `fn` in one transaction on the main database, then brings the engine's caches up to it. */
  async change<T>(fn: (tx: StoreTransaction, tuples: OrgTuples) => Promise<T>): Promise<T> {
    const tuples = this.tuples();
    if (!this.modelReady) await this.ensureModel();
    const out = await inTransaction(this.o.database, (tx) => fn(tx, tuples));
    await tuples.refresh();
    return out;
  }

  /** Throws `permission_denied` unless the actor holds `relation` on `organization:<orgId>` (super-admins hold every one). */
  async require(call: OrgCall, orgId: string, relation: string): Promise<void> {
    if (!this.modelReady) await this.ensureModel();
    if (call.actor.kind === 'super_admin') return;
    // Read from the store, past every cache and the mirror: another instance may have removed this admin a moment
    // ago, and a management call is rare enough that a correct answer is worth the round trip (conventions §0).
    const request = { user: `user:${call.actor.userId}`, relation, object: `organization:${orgId}`, consistency: 'higher_consistency' as const };
    let allowed: boolean;
    try {
      allowed = (await this.engine().check(request)).allowed;
    } catch (err) {
      // A model installed since without the fragment: merged back in once, then asked again. A check the engine
      // still cannot answer fails the call with its error, never an allow (fail closed).
      if (!(err instanceof LatchkeyError) || err.code !== 'invalid_argument') throw err;
      await this.ensureModel();
      allowed = (await this.engine().check(request)).allowed;
    }
    if (!allowed) throw denied();
  }

  /** The live organization (`not_found` when unknown or deleted). */
  async live(orgId: string, tx?: StoreTransaction): Promise<OrgRecord> {
    if (typeof orgId !== 'string' || orgId === '') throw invalid('organization_id is required', 'missing_organization_id');
    const org = await this.o.store.organization(orgId, tx);
    if (org === undefined) throw orgNotFound();
    return org;
  }

  /** A role given (or `fallback`): one of the server's roles, defined by the model. */
  role(role: string | undefined, fallback: string): string {
    const r = role === undefined || role === '' ? fallback : role;
    if (!this.roles.includes(r)) throw invalid(`unknown organization role ${JSON.stringify(r)}; roles are ${this.roles.join(', ')}`, 'invalid_organization_role');
    // An operator's own organization type without this role: its tuple would mean nothing to the engine.
    if (this.modelReady && !this.#modelRoles.has(r)) {
      throw new LatchkeyError('failed_precondition', `the model's organization type does not define the role ${r}`, { reason: 'role_not_in_model' });
    }
    return r;
  }

  /** `input` over `base`, checked. */
  settings(base: OrgSettings, input: OrgSettingsInput | undefined): OrgSettings {
    const s: OrgSettings = { ...base, ...(input ?? {}) };
    if (!Array.isArray(s.allowed_sign_in_methods) || s.allowed_sign_in_methods.some((m) => typeof m !== 'string' || m === '' || m.length > 64)) {
      throw invalid('allowed_sign_in_methods must be a list of login method names', 'invalid_organization_settings');
    }
    s.allowed_sign_in_methods = [...new Set(s.allowed_sign_in_methods)];
    if (typeof s.required_mfa !== 'boolean' || typeof s.auto_join_verified_domains !== 'boolean') throw invalid('required_mfa and auto_join_verified_domains are booleans', 'invalid_organization_settings');
    if (!Number.isInteger(s.session_lifetime) || s.session_lifetime < 0 || s.session_lifetime > 366 * 86400) {
      throw invalid('session_lifetime must be 0 to 31622400 seconds', 'invalid_organization_settings');
    }
    s.default_role = this.role(s.default_role, 'member');
    if (s.default_role === 'owner') throw invalid('default_role cannot be owner', 'invalid_organization_settings');
    return s;
  }

  slug(slug: string): string {
    const s = slug.trim().toLowerCase();
    if (!SLUG.test(s)) throw invalid('slug must be 1 to 64 lower-case letters, digits and inner hyphens', 'invalid_organization_slug');
    return s;
  }

  name(name: string): string {
    const n = name.trim();
    if (n === '' || n.length > 256) throw invalid('name must be 1 to 256 characters', 'invalid_organization_name');
    return n;
  }

  /** Records the call's event inside `tx` (its audit row and webhook). */
  async record(call: OrgCall, tx: StoreTransaction, event: OrgEvent): Promise<void> {
    if (call.record !== undefined) await call.record(tx, event);
  }

  /** The user named by `user_id` or `email` (`not_found` when none). */
  async userOf(input: { user_id?: string | undefined; email?: string | undefined }): Promise<UserRecord> {
    let user: UserRecord | undefined;
    if (input.user_id !== undefined && input.user_id !== '') user = await this.o.users.findById(input.user_id);
    else if (input.email !== undefined && input.email !== '') user = await this.o.users.findByEmail(normalizeEmail(input.email) ?? '');
    else throw invalid('user_id or email is required', 'missing_user');
    if (user === undefined) throw new LatchkeyError('not_found', 'user not found', { reason: 'user_not_found' });
    return user;
  }

  /**
   * Adds `userId` with `role` inside `tx` (rows and tuple); the caller holds
   * the organization's row lock. `already_exists` when a member already.
   */
  async addMember(call: OrgCall, tx: StoreTransaction, tuples: OrgTuples, org: OrgRecord, userId: string, role: string, via: string): Promise<MemberRecord> {
    if ((await this.o.store.member(org.id, userId, tx)) !== undefined) throw new LatchkeyError('already_exists', 'the user is a member of this organization already', { reason: 'already_member' });
    const now = this.o.nowSeconds();
    const m: MemberRecord = { organization_id: org.id, user_id: userId, role, created_at: now, updated_at: now };
    await this.o.store.insertMember(m, tx);
    await tuples.ensure([], [roleTuple(org.id, role, userId)], tx);
    await this.record(call, tx, { action: 'organization.member_added', webhook: 'member.added', resourceType: 'organization', resourceId: org.id, data: { organization_id: org.id, user_id: userId, role, via } });
    return m;
  }
}
