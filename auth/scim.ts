/**
 * The SCIM 2.0 service provider (RFC 7643, RFC 7644; docs/scim.md) of one
 * organization, known from the bearer token of the request. It speaks SCIM
 * resources in and out and leaves HTTP to its adapter
 * (transports/web/scim.ts), the documents' own mechanics (schemas,
 * projection, PATCH, errors) to auth/scim_document.ts, and the validation
 * and rendering of User and Group resources to auth/scim_resources.ts.
 *
 * What a directory's change means here:
 *
 * | SCIM | Latchkey, in one transaction |
 * |---|---|
 * | create a User | a user (email on a verified domain of the organization, proven by it) and a membership with the organization's default role (`organization:O#<role>@user:U`) |
 * | a Group | a team of the organization (`team:T#organization@organization:O`) |
 * | a Group's member | `team:T#member@user:U` |
 * | `active: false` | sign-in refused (`revoked_timestamp`), the membership and its team memberships and their tuples removed; every session and refresh token ends right after the commit |
 * | `active: true` again | sign-in restored and the default-role membership, never the old teams or role |
 * | delete a User | the user, every tuple about it and its sessions |
 *
 * A directory manages only addresses on the organization's verified domains:
 * otherwise one organization could create, claim or switch off an account it
 * does not own. Passwords sent by a directory are never stored.
 */
import { randomUUID } from 'node:crypto';
import { LatchkeyError } from '../engine/errors.ts';
import type { StoreTransaction } from './main_database.ts';
import type { OrgEvent, OrganizationService, OrgTuples } from './organizations.ts';
import type { OrgRecord, SqlOrgStore, TeamRecord } from './org_store.ts';
import { getCi, matches } from './scim_filter.ts';
import type { ScimUserRow, SqlScimStore } from './scim_store.ts';
import { applyPatch, bad, caseExact, clone, equalityOf, listBody, listParam, notFound, pageOf, parseFilterParam, patchOperations, project, resourceTypes, schemas, SCIM_GROUP, SCIM_USER, ScimError, LIST, type Doc } from './scim_document.ts';
import { checkVersion, groupInput, groupResource, serviceProviderConfig, userInput, userResource, type UserInput } from './scim_resources.ts';
import { normalizeEmail, type UserRecord, type UserStore } from './user_store_types.ts';

/** Resources a filter is evaluated over at most; a larger organization must filter by `userName`, `externalId`, `id` or `displayName` `eq`. */
const SCAN_LIMIT = 10_000;

/** One request's caller: the organization of its token, where resources live, and where its events go. */
export interface ScimCall {
  org: OrgRecord;
  tokenId: string;
  /** The absolute base URL, `https://issuer/scim/v2`. */
  baseUrl: string;
  record?: ((tx: StoreTransaction, event: OrgEvent) => Promise<void>) | undefined;
}

export interface ScimRequest {
  method: string;
  /** The path below `/scim/v2`, split on `/` (e.g. `['Users', '<id>']`). */
  segments: readonly string[];
  query: Readonly<Record<string, unknown>>;
  body: unknown;
  /** `If-Match` (RFC 7644 §3.14). */
  ifMatch?: string | undefined;
}

export interface ScimResponse {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
}

export interface ScimServiceOptions {
  organizations: OrganizationService;
  orgStore: SqlOrgStore;
  scim: SqlScimStore;
  users: UserStore;
  /** The user's owned data besides its row (verification, MFA, memberships), inside the deletion's transaction. */
  deleteUserData: (user: UserRecord, tx: StoreTransaction) => Promise<void>;
  /** Ends every session and refresh token of a user. */
  endAllSessions: (userId: string) => Promise<number>;
  nowSeconds: () => number;
}

// ---------------------------------------------------------------- the service

export class ScimService {
  readonly #o: ScimServiceOptions;

  constructor(options: ScimServiceOptions) {
    this.#o = options;
  }

  /** Answers one SCIM request; every refusal is a {@link ScimError} in the SCIM error schema. */
  async handle(call: ScimCall, req: ScimRequest): Promise<ScimResponse> {
    try {
      return await this.#route(call, req);
    } catch (err) {
      if (err instanceof ScimError) return { status: err.status, body: err.body };
      if (err instanceof LatchkeyError) {
        const status = { invalid_argument: 400, not_found: 404, already_exists: 409, failed_precondition: 400, permission_denied: 403, resource_exhausted: 429 }[err.code as string];
        if (status !== undefined) {
          const scimType = err.code === 'already_exists' ? 'uniqueness' : err.code === 'invalid_argument' ? 'invalidValue' : undefined;
          return { status, body: new ScimError(status, err.message, scimType).body };
        }
      }
      throw err;
    }
  }

  async #route(call: ScimCall, req: ScimRequest): Promise<ScimResponse> {
    const [kind, id, more] = req.segments;
    if (more !== undefined) throw notFound('resource');
    const m = req.method;
    switch (kind) {
      case 'ServiceProviderConfig':
        if (id !== undefined || m !== 'GET') throw new ScimError(id === undefined ? 405 : 404, id === undefined ? 'method not allowed' : 'resource not found');
        return { status: 200, body: serviceProviderConfig(call.baseUrl) };
      case 'ResourceTypes':
      case 'Schemas': {
        if (m !== 'GET') throw new ScimError(405, 'method not allowed');
        const all = kind === 'Schemas' ? schemas(call.baseUrl) : resourceTypes(call.baseUrl);
        if (id !== undefined) {
          const one = all.find((r) => r['id'] === id);
          if (one === undefined) throw notFound(kind === 'Schemas' ? 'schema' : 'resource type');
          return { status: 200, body: one };
        }
        return { status: 200, body: { schemas: [LIST], totalResults: all.length, startIndex: 1, itemsPerPage: all.length, Resources: all } };
      }
      case 'Users':
        if (id === undefined) {
          if (m === 'GET') return this.#listUsers(call, req.query);
          if (m === 'POST') return this.#createUser(call, req.body);
          throw new ScimError(405, 'method not allowed');
        }
        if (m === 'GET') return this.#getUser(call, id, req.query);
        if (m === 'PUT') return this.#replaceUser(call, id, req.body, req.ifMatch);
        if (m === 'PATCH') return this.#patchUser(call, id, req.body, req.ifMatch);
        if (m === 'DELETE') return this.#deleteUser(call, id, req.ifMatch);
        throw new ScimError(405, 'method not allowed');
      case 'Groups':
        if (id === undefined) {
          if (m === 'GET') return this.#listGroups(call, req.query);
          if (m === 'POST') return this.#createGroup(call, req.body);
          throw new ScimError(405, 'method not allowed');
        }
        if (m === 'GET') return this.#getGroup(call, id, req.query);
        if (m === 'PUT') return this.#replaceGroup(call, id, req.body, req.ifMatch);
        if (m === 'PATCH') return this.#patchGroup(call, id, req.body, req.ifMatch);
        if (m === 'DELETE') return this.#deleteGroup(call, id, req.ifMatch);
        throw new ScimError(405, 'method not allowed');
      case 'Bulk':
      case '.search':
        throw new ScimError(501, `${kind} is not supported`);
      default:
        throw notFound('endpoint');
    }
  }

  // ---------------------------------------------------------------- users

  /** The SCIM User resource of a row and its account (see {@link userResource}); the user's teams are read unless given. */
  async #userResource(call: ScimCall, row: ScimUserRow, user: UserRecord | undefined, teams?: TeamRecord[]): Promise<Doc> {
    return userResource(call.baseUrl, row, user, teams ?? (await this.#teamsOf(call.org.id, row.user_id)));
  }

  async #teamsOf(orgId: string, userId: string): Promise<TeamRecord[]> {
    const all = await this.#o.orgStore.teamsWithMembers(orgId);
    return all.filter((t) => t.members.includes(userId));
  }

  async #row(call: ScimCall, id: string): Promise<ScimUserRow> {
    const row = id.length <= 64 ? await this.#o.scim.scimUser(call.org.id, id) : undefined;
    if (row === undefined) throw notFound('User');
    return row;
  }

  async #getUser(call: ScimCall, id: string, query: Readonly<Record<string, unknown>>): Promise<ScimResponse> {
    const row = await this.#row(call, id);
    const resource = await this.#userResource(call, row, await this.#o.users.findById(row.user_id));
    return { status: 200, body: project(resource, listParam(query, 'attributes'), listParam(query, 'excludedAttributes'), SCIM_USER), headers: { etag: (resource['meta'] as Doc)['version'] as string } };
  }

  async #listUsers(call: ScimCall, query: Readonly<Record<string, unknown>>): Promise<ScimResponse> {
    const filter = parseFilterParam(query);
    const { start, count } = pageOf(query);
    let rows: ScimUserRow[];
    const byName = equalityOf(filter, 'userName');
    const byId = equalityOf(filter, 'id');
    if (byName !== undefined) {
      const r = await this.#o.scim.scimUserByName(call.org.id, byName.toLowerCase());
      rows = r === undefined ? [] : [r];
    } else if (byId !== undefined) {
      const r = byId.length <= 64 ? await this.#o.scim.scimUser(call.org.id, byId) : undefined;
      rows = r === undefined ? [] : [r];
    } else {
      if (filter !== undefined && (await this.#o.scim.countScimUsers(call.org.id)) > SCAN_LIMIT) {
        throw bad(`this organization has more than ${SCAN_LIMIT} users: filter by userName, id or externalId eq`, 'tooMany');
      }
      if (filter === undefined) {
        // No filter: one page read from the database, however far it starts.
        const total = await this.#o.scim.countScimUsers(call.org.id);
        return this.#userList(call, query, count === 0 ? [] : await this.#o.scim.scimUsers(call.org.id, count, start - 1), total, start);
      }
      rows = await this.#o.scim.scimUsers(call.org.id, SCAN_LIMIT);
    }
    const teams = await this.#o.orgStore.teamsWithMembers(call.org.id);
    const resources: Doc[] = [];
    for (const r of rows) {
      const res = await this.#userResource(call, r, await this.#o.users.findById(r.user_id), teams.filter((t) => t.members.includes(r.user_id)));
      if (filter === undefined || matches(filter, res, SCIM_USER, caseExact)) resources.push(res);
    }
    const page = resources.slice(start - 1, start - 1 + count);
    return { status: 200, body: listBody(page.map((r) => project(r, listParam(query, 'attributes'), listParam(query, 'excludedAttributes'), SCIM_USER)), resources.length, start) };
  }

  async #userList(call: ScimCall, query: Readonly<Record<string, unknown>>, rows: ScimUserRow[], total: number, start: number): Promise<ScimResponse> {
    const teams = await this.#o.orgStore.teamsWithMembers(call.org.id);
    const out: Doc[] = [];
    for (const r of rows) {
      const res = await this.#userResource(call, r, await this.#o.users.findById(r.user_id), teams.filter((t) => t.members.includes(r.user_id)));
      out.push(project(res, listParam(query, 'attributes'), listParam(query, 'excludedAttributes'), SCIM_USER));
    }
    return { status: 200, body: listBody(out, total, start) };
  }

  async #event(call: ScimCall, tx: StoreTransaction, event: OrgEvent): Promise<void> {
    if (call.record !== undefined) await call.record(tx, { ...event, data: { ...event.data, scim_token_id: call.tokenId } });
  }

  /** Adds the membership with the default role unless the user is a member (inside `tx`). */
  async #join(call: ScimCall, tx: StoreTransaction, tuples: OrgTuples, userId: string): Promise<void> {
    if ((await this.#o.orgStore.member(call.org.id, userId, tx)) !== undefined) return;
    const role = this.#o.organizations.defaultRole(call.org);
    const now = this.#o.nowSeconds();
    await this.#o.orgStore.insertMember({ organization_id: call.org.id, user_id: userId, role, created_at: now, updated_at: now }, tx);
    await tuples.ensure([], [{ object: `organization:${call.org.id}`, relation: role, user: `user:${userId}` }], tx);
    await this.#event(call, tx, { action: 'organization.member_added', webhook: 'member.added', resourceType: 'organization', resourceId: call.org.id, data: { organization_id: call.org.id, user_id: userId, role, via: 'scim' } });
  }

  /** Removes the membership, its teams in the organization and their tuples (inside `tx`). */
  async #leave(call: ScimCall, tx: StoreTransaction, tuples: OrgTuples, userId: string): Promise<void> {
    const m = await this.#o.orgStore.member(call.org.id, userId, tx);
    const teams = await this.#o.orgStore.teamsOfMember(call.org.id, userId, tx);
    if (m !== undefined && m.role === 'owner' && (await this.#o.orgStore.countRole(call.org.id, 'owner', tx)) <= 1) {
      throw bad('the last owner of the organization cannot be deprovisioned', 'mutability');
    }
    const deletes = [
      ...(m === undefined ? [] : [{ object: `organization:${call.org.id}`, relation: m.role, user: `user:${userId}` }]),
      ...teams.map((t) => ({ object: `team:${t}`, relation: 'member', user: `user:${userId}` })),
    ];
    if (deletes.length > 0) await tuples.ensure(deletes, [], tx);
    for (const t of teams) await this.#o.orgStore.deleteTeamMember(t, userId, tx);
    if (m !== undefined) {
      await this.#o.orgStore.deleteMember(call.org.id, userId, tx);
      await this.#event(call, tx, { action: 'organization.member_removed', webhook: 'member.removed', resourceType: 'organization', resourceId: call.org.id, data: { organization_id: call.org.id, user_id: userId, role: m.role, via: 'scim' } });
    }
  }

  async #createUser(call: ScimCall, body: unknown): Promise<ScimResponse> {
    const input = await userInput(body, call.org.id, this.#o.orgStore);
    const key = input.userName.toLowerCase();
    if ((await this.#o.scim.scimUserByName(call.org.id, key)) !== undefined) throw new ScimError(409, `a user with userName ${input.userName} exists`, 'uniqueness');
    const tuples = await this.#o.organizations.preparedTuples();
    const now = this.#o.nowSeconds();
    const row = (userId: string): ScimUserRow => ({ organization_id: call.org.id, user_id: userId, user_name: key, external_id: input.externalId, active: input.active, attributes: input.attributes, created_at: now, updated_at: now });
    const within = async (userId: string, tx: StoreTransaction): Promise<void> => {
      if ((await this.#o.scim.scimUserByName(call.org.id, key, tx)) !== undefined) throw new ScimError(409, `a user with userName ${input.userName} exists`, 'uniqueness');
      await this.#o.scim.putScimUser(row(userId), tx);
      if (input.active) await this.#join(call, tx, tuples, userId);
      await this.#event(call, tx, { action: 'organization.scim_user_created', resourceType: 'user', resourceId: userId, data: { organization_id: call.org.id, user_id: userId, user_name: input.userName } });
    };
    const existing = await this.#o.users.findByEmail(input.email);
    let userId: string;
    if (existing !== undefined) {
      // An account on the organization's verified domain: the directory takes it over (its address is the organization's).
      const other = await this.#o.scim.scimUser(call.org.id, existing.id);
      if (other !== undefined) throw new ScimError(409, `the account of ${input.email} is provisioned as another userName`, 'uniqueness');
      userId = existing.id;
      await this.#o.organizations.changeInTransaction(async (tx) => {
        await within(userId, tx);
        await this.#o.users.update(userId, { given_name: input.givenName ?? existing.given_name, family_name: input.familyName ?? existing.family_name, ...(input.active ? {} : { revoked_timestamp: now }) }, { transaction: tx });
      });
    } else {
      try {
        const user = await this.#o.users.create(
          { email: input.email, email_verified_at: now, signup_methods: 'scim', given_name: input.givenName, family_name: input.familyName, roles: [], ...(input.active ? {} : { revoked_timestamp: now }) },
          { within: async (u, tx) => within(u.id, tx) },
        );
        userId = user.id;
      } catch (err) {
        if (err instanceof LatchkeyError && err.code === 'already_exists') throw new ScimError(409, `an account with the email ${input.email} exists`, 'uniqueness');
        throw err;
      }
      await tuples.refresh();
    }
    if (!input.active) await this.#o.endAllSessions(userId);
    const stored = await this.#row(call, userId);
    const resource = await this.#userResource(call, stored, await this.#o.users.findById(userId));
    return { status: 201, body: resource, headers: { etag: (resource['meta'] as Doc)['version'] as string, location: `${call.baseUrl}/Users/${userId}` } };
  }

  /** Writes a User's new state: its row, account, membership and sessions (PUT and PATCH). */
  async #writeUser(call: ScimCall, row: ScimUserRow, input: UserInput): Promise<ScimResponse> {
    const key = input.userName.toLowerCase();
    if (key !== row.user_name) {
      const taken = await this.#o.scim.scimUserByName(call.org.id, key);
      if (taken !== undefined && taken.user_id !== row.user_id) throw new ScimError(409, `a user with userName ${input.userName} exists`, 'uniqueness');
    }
    const user = await this.#o.users.findById(row.user_id);
    if (user === undefined) throw notFound('User');
    const now = this.#o.nowSeconds();
    const deactivating = row.active && !input.active;
    const reactivating = !row.active && input.active;
    try {
      await this.#o.organizations.changeInTransaction(async (tx, tuples) => {
        await this.#o.scim.putScimUser({ ...row, user_name: key, external_id: input.externalId, active: input.active, attributes: input.attributes, updated_at: now }, tx);
        await this.#o.users.update(
          row.user_id,
          {
            ...(normalizeEmail(user.email) === input.email ? {} : { email: input.email, email_verified_at: now }),
            given_name: input.givenName,
            family_name: input.familyName,
            ...(deactivating ? { revoked_timestamp: now } : reactivating ? { revoked_timestamp: null } : {}),
          },
          { transaction: tx },
        );
        if (deactivating) await this.#leave(call, tx, tuples, row.user_id);
        if (reactivating) await this.#join(call, tx, tuples, row.user_id);
        const action = deactivating ? 'organization.scim_user_deactivated' : reactivating ? 'organization.scim_user_reactivated' : 'organization.scim_user_updated';
        await this.#event(call, tx, { action, resourceType: 'user', resourceId: row.user_id, data: { organization_id: call.org.id, user_id: row.user_id, user_name: input.userName } });
      });
    } catch (err) {
      if (err instanceof LatchkeyError && err.code === 'already_exists') throw new ScimError(409, `an account with the email ${input.email} exists`, 'uniqueness');
      throw err;
    }
    // Every session and refresh token ends now: a deactivated person is out on the very next request.
    if (deactivating) await this.#o.endAllSessions(row.user_id);
    const stored = await this.#row(call, row.user_id);
    const resource = await this.#userResource(call, stored, await this.#o.users.findById(row.user_id));
    return { status: 200, body: resource, headers: { etag: (resource['meta'] as Doc)['version'] as string } };
  }

  async #replaceUser(call: ScimCall, id: string, body: unknown, ifMatch: string | undefined): Promise<ScimResponse> {
    const row = await this.#row(call, id);
    checkVersion(await this.#userResource(call, row, await this.#o.users.findById(row.user_id)), ifMatch);
    const bodyId = getCi(body, 'id');
    if (bodyId !== undefined && bodyId !== id) throw bad('id cannot be changed', 'mutability');
    return this.#writeUser(call, row, await userInput(body, call.org.id, this.#o.orgStore));
  }

  async #patchUser(call: ScimCall, id: string, body: unknown, ifMatch: string | undefined): Promise<ScimResponse> {
    const ops = patchOperations(body);
    const row = await this.#row(call, id);
    const current = await this.#userResource(call, row, await this.#o.users.findById(row.user_id));
    checkVersion(current, ifMatch);
    const doc = clone(current);
    delete doc['meta'];
    delete doc['groups'];
    for (const o of ops) applyPatch(doc, o, SCIM_USER);
    return this.#writeUser(call, row, await userInput(doc, call.org.id, this.#o.orgStore));
  }

  /**
   * DELETE a User: the account, every tuple about it, its owned data and its
   * sessions, in one transaction (its sessions end right after the commit).
   */
  async #deleteUser(call: ScimCall, id: string, ifMatch: string | undefined): Promise<ScimResponse> {
    const row = await this.#row(call, id);
    const user = await this.#o.users.findById(row.user_id);
    if (user === undefined) throw notFound('User');
    checkVersion(await this.#userResource(call, row, user), ifMatch);
    const m = await this.#o.orgStore.member(call.org.id, row.user_id);
    if (m?.role === 'owner') throw bad('an owner of the organization is not deleted by its directory', 'mutability');
    await this.#o.organizations.changeInTransaction(async (tx, tuples) => {
      await this.#leave(call, tx, tuples, row.user_id);
      await tuples.deleteObjects([`user:${row.user_id}`], tx);
      await this.#o.deleteUserData(user, tx);
      await this.#o.users.delete(row.user_id, { transaction: tx });
      await this.#event(call, tx, { action: 'organization.scim_user_deleted', resourceType: 'user', resourceId: row.user_id, data: { organization_id: call.org.id, user_id: row.user_id, user_name: row.user_name } });
    });
    await this.#o.endAllSessions(row.user_id);
    return { status: 204 };
  }

  // ---------------------------------------------------------------- groups

  async #team(call: ScimCall, id: string): Promise<TeamRecord> {
    const team = id.length <= 64 ? await this.#o.orgStore.team(id) : undefined;
    if (team === undefined || team.organization_id !== call.org.id) throw notFound('Group');
    return team;
  }

  async #getGroup(call: ScimCall, id: string, query: Readonly<Record<string, unknown>>): Promise<ScimResponse> {
    const team = await this.#team(call, id);
    const resource = groupResource(call.baseUrl, team, await this.#o.orgStore.teamMembers(team.id), await this.#o.scim.scimGroup(team.id));
    return { status: 200, body: project(resource, listParam(query, 'attributes'), listParam(query, 'excludedAttributes'), SCIM_GROUP), headers: { etag: (resource['meta'] as Doc)['version'] as string } };
  }

  async #listGroups(call: ScimCall, query: Readonly<Record<string, unknown>>): Promise<ScimResponse> {
    const filter = parseFilterParam(query);
    const { start, count } = pageOf(query);
    const sides = await this.#o.scim.scimGroups(call.org.id);
    const teams = await this.#o.orgStore.teamsWithMembers(call.org.id);
    if (teams.length > SCAN_LIMIT) throw bad(`this organization has more than ${SCAN_LIMIT} groups`, 'tooMany');
    const excluded = listParam(query, 'excludedAttributes');
    const attributes = listParam(query, 'attributes');
    const byName = equalityOf(filter, 'displayName');
    const resources: Doc[] = [];
    for (const t of teams) {
      if (byName !== undefined && t.name.toLowerCase() !== byName.toLowerCase()) continue;
      const res = groupResource(call.baseUrl, t, t.members, sides.get(t.id));
      if (filter === undefined || matches(filter, res, SCIM_GROUP, caseExact)) resources.push(res);
    }
    const page = resources.slice(start - 1, start - 1 + count);
    return { status: 200, body: listBody(page.map((r) => project(r, attributes, excluded, SCIM_GROUP)), resources.length, start) };
  }

  /** Every new member must be an active SCIM user of the organization (a member of it). */
  async #checkMembers(call: ScimCall, ids: string[], tx: StoreTransaction): Promise<void> {
    for (const id of ids) {
      const row = await this.#o.scim.scimUser(call.org.id, id, tx);
      if (row === undefined) throw bad(`member ${id} is not a User of this organization`);
      if (!row.active || (await this.#o.orgStore.member(call.org.id, id, tx)) === undefined) throw bad(`member ${id} is not active in this organization`);
    }
  }

  async #createGroup(call: ScimCall, body: unknown): Promise<ScimResponse> {
    const input = groupInput(body);
    const now = this.#o.nowSeconds();
    const team: TeamRecord = { id: randomUUID(), organization_id: call.org.id, name: input.displayName, created_at: now };
    await this.#o.organizations.changeInTransaction(async (tx, tuples) => {
      if (!(await this.#o.orgStore.lockOrganization(call.org.id, tx))) throw notFound('organization');
      if (!(await this.#o.orgStore.insertTeam(team, tx))) throw new ScimError(409, `a group named ${input.displayName} exists`, 'uniqueness');
      await this.#o.scim.putScimGroup({ team_id: team.id, organization_id: call.org.id, external_id: input.externalId, updated_at: now }, tx);
      await this.#checkMembers(call, input.members, tx);
      for (const uid of input.members) await this.#o.orgStore.insertTeamMember(team.id, uid, tx);
      await tuples.ensure([], [{ object: `team:${team.id}`, relation: 'organization', user: `organization:${call.org.id}` }, ...input.members.map((uid) => ({ object: `team:${team.id}`, relation: 'member', user: `user:${uid}` }))], tx);
      await this.#event(call, tx, { action: 'organization.team_created', resourceType: 'team', resourceId: team.id, data: { organization_id: call.org.id, team_id: team.id, name: team.name, members: input.members, via: 'scim' } });
    });
    const resource = groupResource(call.baseUrl, team, input.members, await this.#o.scim.scimGroup(team.id));
    return { status: 201, body: resource, headers: { etag: (resource['meta'] as Doc)['version'] as string, location: `${call.baseUrl}/Groups/${team.id}` } };
  }

  /** Writes a Group's new state: name, externalId, and the member tuples that differ (PUT and PATCH). */
  async #writeGroup(call: ScimCall, team: TeamRecord, before: string[], input: { displayName: string; externalId: string | null; members: string[] }): Promise<ScimResponse> {
    const now = this.#o.nowSeconds();
    const added = input.members.filter((m) => !before.includes(m));
    const removed = before.filter((m) => !input.members.includes(m));
    await this.#o.organizations.changeInTransaction(async (tx, tuples) => {
      if (!(await this.#o.orgStore.lockOrganization(call.org.id, tx))) throw notFound('organization');
      if (input.displayName !== team.name && !(await this.#o.orgStore.renameTeam(team.id, input.displayName, tx))) throw new ScimError(409, `a group named ${input.displayName} exists`, 'uniqueness');
      await this.#o.scim.putScimGroup({ team_id: team.id, organization_id: call.org.id, external_id: input.externalId, updated_at: now }, tx);
      await this.#checkMembers(call, added, tx);
      for (const uid of added) await this.#o.orgStore.insertTeamMember(team.id, uid, tx);
      for (const uid of removed) await this.#o.orgStore.deleteTeamMember(team.id, uid, tx);
      const tuple = (uid: string) => ({ object: `team:${team.id}`, relation: 'member', user: `user:${uid}` });
      await tuples.ensure(removed.map(tuple), added.map(tuple), tx);
      await this.#event(call, tx, { action: 'organization.team_updated', resourceType: 'team', resourceId: team.id, data: { organization_id: call.org.id, team_id: team.id, name: input.displayName, added, removed, via: 'scim' } });
    });
    const after = await this.#team(call, team.id);
    const resource = groupResource(call.baseUrl, after, await this.#o.orgStore.teamMembers(team.id), await this.#o.scim.scimGroup(team.id));
    return { status: 200, body: resource, headers: { etag: (resource['meta'] as Doc)['version'] as string } };
  }

  async #replaceGroup(call: ScimCall, id: string, body: unknown, ifMatch: string | undefined): Promise<ScimResponse> {
    const team = await this.#team(call, id);
    const before = await this.#o.orgStore.teamMembers(team.id);
    checkVersion(groupResource(call.baseUrl, team, before, await this.#o.scim.scimGroup(team.id)), ifMatch);
    return this.#writeGroup(call, team, before, groupInput(body));
  }

  async #patchGroup(call: ScimCall, id: string, body: unknown, ifMatch: string | undefined): Promise<ScimResponse> {
    const ops = patchOperations(body);
    const team = await this.#team(call, id);
    const before = await this.#o.orgStore.teamMembers(team.id);
    const current = groupResource(call.baseUrl, team, before, await this.#o.scim.scimGroup(team.id));
    checkVersion(current, ifMatch);
    const doc = clone(current);
    delete doc['meta'];
    for (const o of ops) {
      // Okta and Entra ID remove members by a value list: {"op":"remove","path":"members","value":[{"value":"<id>"}]}.
      if (o.op === 'remove' && o.path?.kind === 'attr' && o.path.path.name.toLowerCase() === 'members' && o.path.path.sub === undefined && Array.isArray(o.value)) {
        const gone = new Set(o.value.map((v) => String(getCi(v, 'value'))));
        doc['members'] = ((doc['members'] as Doc[] | undefined) ?? []).filter((m) => !gone.has(String(m['value'])));
        continue;
      }
      applyPatch(doc, o, SCIM_GROUP);
    }
    return this.#writeGroup(call, team, before, groupInput(doc));
  }

  async #deleteGroup(call: ScimCall, id: string, ifMatch: string | undefined): Promise<ScimResponse> {
    const team = await this.#team(call, id);
    const members = await this.#o.orgStore.teamMembers(team.id);
    checkVersion(groupResource(call.baseUrl, team, members, await this.#o.scim.scimGroup(team.id)), ifMatch);
    await this.#o.organizations.changeInTransaction(async (tx, tuples) => {
      // Every tuple about the team or naming it (document:1#viewer@team:T#member): no grant outlives the group.
      await tuples.deleteObjects([`team:${team.id}`], tx);
      await this.#o.orgStore.deleteTeam(team.id, tx);
      await this.#o.scim.deleteScimGroup(team.id, tx);
      await this.#event(call, tx, { action: 'organization.team_deleted', resourceType: 'team', resourceId: team.id, data: { organization_id: call.org.id, team_id: team.id, name: team.name, via: 'scim' } });
    });
    return { status: 204 };
  }
}
