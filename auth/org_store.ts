/**
 * The organization store: organizations, their members and roles, teams and
 * team members, invitations and domains, in the main SQL database (SQLite,
 * PostgreSQL, MySQL/MariaDB through the one sequelize connection), migrated
 * as the component `auth_orgs`.
 *
 * Every change takes the caller's transaction, so that the organization
 * service writes these rows and their FGA tuples in one unit of work
 * (docs/organizations.md). Changes to one organization's members first touch
 * its row ({@link SqlOrgStore.lockOrganization}): on PostgreSQL and MySQL
 * that row lock puts them in a line, so that two concurrent removals of the
 * last two owners cannot both see another owner left; SQLite writes one
 * transaction at a time anyway.
 */
import type { Transaction } from 'sequelize';
import { QueryTypes, isUniqueConstraintError, type SqlDatabase } from '../engine/sql/sql_database.ts';
import { runMigrations } from '../engine/sql/migrate.ts';
import { ORG_MIGRATIONS } from './org_migrations.ts';
import { KeptUnderMark, SqliteStatements } from './sqlite_statements.ts';
import type { StoreTransaction } from './main_database.ts';

/** Per-organization settings (docs/organizations.md, "Settings"). */
export interface OrgSettings {
  /** Login methods a session must have used to enter the organization (empty: any). */
  allowed_sign_in_methods: string[];
  /** A session must have proven a second factor to enter the organization. */
  required_mfa: boolean;
  /** The role of members added without one (invitations, auto-join). */
  default_role: string;
  /** Seconds after sign-in past which the organization's claims are refused (0: the server's session lifetime). */
  session_lifetime: number;
  /** Users whose verified email is on a verified domain of the organization may join it with `switch_organization`. */
  auto_join_verified_domains: boolean;
}

export const DEFAULT_ORG_SETTINGS: Readonly<OrgSettings> = Object.freeze({
  allowed_sign_in_methods: [],
  required_mfa: false,
  default_role: 'member',
  session_lifetime: 0,
  auto_join_verified_domains: false,
});

export interface OrgRecord {
  id: string;
  slug: string;
  name: string;
  logo: string | null;
  metadata: Record<string, unknown>;
  settings: OrgSettings;
  created_at: number;
  updated_at: number;
  deleted_at: number | null;
}

export interface MemberRecord {
  organization_id: string;
  user_id: string;
  role: string;
  created_at: number;
  updated_at: number;
}

export interface TeamRecord {
  id: string;
  organization_id: string;
  name: string;
  created_at: number;
}

export type InvitationStatus = 'pending' | 'accepted' | 'expired' | 'revoked';

export interface InvitationRecord {
  id: string;
  organization_id: string;
  email: string;
  role: string;
  /** `pending` past its expiry reads as `expired`. */
  status: InvitationStatus;
  expires_at: number;
  created_at: number;
  updated_at: number;
  invited_by: string | null;
  accepted_by: string | null;
}

export interface DomainRecord {
  organization_id: string;
  domain: string;
  verification_token: string;
  verified_at: number | null;
  created_at: number;
}

const tx = (t: StoreTransaction | undefined): Transaction | undefined => t as Transaction | undefined;

function json<T>(text: unknown, fallback: T): T {
  if (typeof text !== 'string' || text === '') return fallback;
  try {
    return JSON.parse(text) as T;
  } catch {
    return fallback;
  }
}

function orgOf(r: Record<string, unknown>): OrgRecord {
  return {
    id: String(r['id']),
    slug: String(r['slug']),
    name: String(r['name']),
    logo: r['logo'] == null ? null : String(r['logo']),
    metadata: json<Record<string, unknown>>(r['metadata'], {}),
    settings: settingsOf(r['settings']),
    created_at: Number(r['created_at']),
    updated_at: Number(r['updated_at']),
    deleted_at: r['deleted_at'] == null ? null : Number(r['deleted_at']),
  };
}

/** An organization's stored settings (JSON text) over the defaults. */
function settingsOf(text: unknown): OrgSettings {
  return { ...DEFAULT_ORG_SETTINGS, ...json<Partial<OrgSettings>>(text, {}) };
}

function memberOf(r: Record<string, unknown>): MemberRecord {
  return {
    organization_id: String(r['organization_id']),
    user_id: String(r['user_id']),
    role: String(r['role']),
    created_at: Number(r['created_at']),
    updated_at: Number(r['updated_at']),
  };
}

function invitationOf(r: Record<string, unknown>, now: number): InvitationRecord {
  const status = String(r['status']) as InvitationStatus;
  const expires = Number(r['expires_at']);
  return {
    id: String(r['id']),
    organization_id: String(r['organization_id']),
    email: String(r['email']),
    role: String(r['role']),
    status: status === 'pending' && expires <= now ? 'expired' : status,
    expires_at: expires,
    created_at: Number(r['created_at']),
    updated_at: Number(r['updated_at']),
    invited_by: r['invited_by'] == null ? null : String(r['invited_by']),
    accepted_by: r['accepted_by'] == null ? null : String(r['accepted_by']),
  };
}

function domainOf(r: Record<string, unknown>): DomainRecord {
  return {
    organization_id: String(r['organization_id']),
    domain: String(r['domain']),
    verification_token: String(r['verification_token']),
    verified_at: r['verified_at'] == null ? null : Number(r['verified_at']),
    created_at: Number(r['created_at']),
  };
}

/** `%`, `_` and `!` escaped for `LIKE ? ESCAPE '!'`. */
function likeContaining(s: string): string {
  return `%${s.toLowerCase().replace(/[!%_]/g, (c) => `!${c}`)}%`;
}

/** How many organizations' session lifetimes {@link SqlOrgStore.sessionLifetimeNow} keeps (the oldest dropped first). */
const LIFETIME_CACHE_SIZE = 4096;
const LIFETIME_OF = 'SELECT settings FROM organizations WHERE id = ? AND deleted_at IS NULL';
/** How many memberships {@link SqlOrgStore.memberNow} keeps (the oldest dropped first). */
const MEMBER_CACHE_SIZE = 4096;
const MEMBER_OF =
  'SELECT m.role, o.settings FROM organization_members m JOIN organizations o ON o.id = m.organization_id WHERE m.organization_id = ? AND m.user_id = ? AND o.deleted_at IS NULL';

/** The organization store on SQL. */
export class SqlOrgStore {
  readonly #db: SqlDatabase;
  readonly #now: () => number;
  /** Bound statements on SQLite (undefined on other databases). */
  readonly #statements: SqliteStatements | undefined;
  /** SQLite: live organizations' session lifetimes by id, kept under the connection's change mark. */
  readonly #lifetimes: KeptUnderMark<number> | undefined;
  /** SQLite: members' roles in live organizations, with the organization's session lifetime, kept the same way. */
  readonly #members: KeptUnderMark<{ role: string; session_lifetime: number }> | undefined;

  constructor(options: { sequelize: SqlDatabase; nowSeconds: () => number }) {
    this.#db = options.sequelize;
    this.#now = options.nowSeconds;
    this.#statements = SqliteStatements.of(options.sequelize);
    this.#lifetimes = this.#statements === undefined ? undefined : new KeptUnderMark(this.#statements, LIFETIME_OF, (row) => settingsOf(row[0]).session_lifetime ?? 0, LIFETIME_CACHE_SIZE);
    this.#members =
      this.#statements === undefined
        ? undefined
        : new KeptUnderMark(this.#statements, MEMBER_OF, (row) => ({ role: String(row[0]), session_lifetime: settingsOf(row[1]).session_lifetime ?? 0 }), MEMBER_CACHE_SIZE);
  }

  /** The connection the rows live on (the organization service checks that the FGA store shares it). */
  get sequelize(): SqlDatabase {
    return this.#db;
  }

  /** Runs the migrations (component `auth_orgs`). Idempotent. */
  async init(): Promise<void> {
    await runMigrations(this.#db, 'auth_orgs', ORG_MIGRATIONS);
    // On SQLite, the connection that {@link sessionLifetimeNow} reads at once, opened now.
    await this.#statements?.values(LIFETIME_OF, ['']);
  }

  async #select(sql: string, replacements: unknown[], t?: StoreTransaction): Promise<Record<string, unknown>[]> {
    const transaction = tx(t);
    return this.#db.query<Record<string, unknown>>(sql, { replacements, type: QueryTypes.SELECT, ...(transaction ? { transaction } : {}) });
  }

  /** Runs a statement inside `t`; for an UPDATE, returns how many rows it changed (else 0). */
  async #run(sql: string, replacements: unknown[], t: StoreTransaction): Promise<number> {
    const transaction = tx(t)!;
    if (sql.startsWith('UPDATE')) {
      const result = (await this.#db.query(sql, { replacements, transaction, type: QueryTypes.UPDATE })) as unknown as [unknown, number];
      return Number(result[1]);
    }
    await this.#db.query(sql, { replacements, transaction });
    return 0;
  }

  // ---------------------------------------------------------------- organizations

  /** Inserts an organization; `false` when its slug is taken. */
  async insertOrganization(org: OrgRecord, t: StoreTransaction): Promise<boolean> {
    try {
      await this.#run(
        'INSERT INTO organizations (id, slug, name, logo, metadata, settings, created_at, updated_at, deleted_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, NULL)',
        [org.id, org.slug, org.name, org.logo, JSON.stringify(org.metadata), JSON.stringify(org.settings), org.created_at, org.updated_at],
        t,
      );
      return true;
    } catch (err) {
      if (isUniqueConstraintError(err)) return false;
      throw err;
    }
  }

  /** Writes the mutable fields of an organization; `false` when its new slug is taken. */
  async updateOrganization(org: OrgRecord, t: StoreTransaction): Promise<boolean> {
    try {
      await this.#run(
        'UPDATE organizations SET slug = ?, name = ?, logo = ?, metadata = ?, settings = ?, updated_at = ? WHERE id = ?',
        [org.slug, org.name, org.logo, JSON.stringify(org.metadata), JSON.stringify(org.settings), org.updated_at, org.id],
        t,
      );
      return true;
    } catch (err) {
      if (isUniqueConstraintError(err)) return false;
      throw err;
    }
  }

  /** Marks an organization deleted (soft delete: the row and its slug stay). */
  async softDeleteOrganization(id: string, t: StoreTransaction): Promise<void> {
    const now = this.#now();
    await this.#run('UPDATE organizations SET deleted_at = ?, updated_at = ? WHERE id = ? AND deleted_at IS NULL', [now, now, id], t);
  }

  /**
   * Touches a live organization's row inside `t` (the row lock that lines up
   * concurrent changes to its members); `false` when it is absent or deleted.
   */
  async lockOrganization(id: string, t: StoreTransaction): Promise<boolean> {
    return (await this.#run('UPDATE organizations SET updated_at = updated_at WHERE id = ? AND deleted_at IS NULL', [id], t)) > 0
      || (await this.#select('SELECT id FROM organizations WHERE id = ? AND deleted_at IS NULL', [id], t)).length > 0;
  }

  /**
   * The `session_lifetime` of a live organization (0: none, or the
   * organization is gone), at once: on SQLite, read without waiting when the
   * connection can answer, or kept from an earlier read while nothing can have
   * changed it (the connection's change mark, as for users' rows in
   * auth/user_store.ts); undefined when not at hand (then read
   * {@link organization}).
   *
   * Why: every use of a session in an organization compares its sign-in time
   * with that lifetime, read from the organization each time, and a query
   * through sequelize for it cost a permission check with such a session more
   * than the check itself.
   */
  sessionLifetimeNow(id: string): number | undefined {
    if (this.#lifetimes === undefined || typeof id !== 'string' || id.length === 0 || id.length > 36) return undefined;
    const lifetime = this.#lifetimes.valueNow(id);
    return lifetime === null ? 0 : lifetime;
  }

  /**
   * The user's role in a live organization and that organization's session
   * lifetime (seconds, 0 for none), read at once on SQLite and kept under the
   * connection's change mark as {@link sessionLifetimeNow}'s are: null when
   * the user is not a member or the organization is gone, undefined when it
   * cannot be told at once (another database, or statements waiting on the
   * connection). What validating a token or session in an organization
   * compares with on every call.
   */
  memberNow(organizationId: string, userId: string): { role: string; session_lifetime: number } | null | undefined {
    if (this.#members === undefined || typeof organizationId !== 'string' || typeof userId !== 'string') return undefined;
    if (organizationId.length === 0 || organizationId.length > 36 || userId.length === 0 || userId.length > 64) return undefined;
    // The organization's id with its length before it: no two pairs make one key.
    return this.#members.valueNow(`${organizationId.length}:${organizationId}${userId}`, [organizationId, userId]);
  }

  /** A live (not deleted) organization. */
  async organization(id: string, t?: StoreTransaction): Promise<OrgRecord | undefined> {
    const sql = 'SELECT * FROM organizations WHERE id = ? AND deleted_at IS NULL';
    // Outside a transaction on SQLite, a statement prepared once.
    const rows = t === undefined ? await this.#statements?.select(sql, [id]) : undefined;
    const [row] = rows ?? (await this.#select(sql, [id], t));
    return row === undefined ? undefined : orgOf(row);
  }

  /** Live organizations, by name, optionally only those `userId` belongs to and those whose name or slug contains `search`. */
  async listOrganizations(q: { userId?: string | undefined; search?: string | undefined; offset: number; limit: number }): Promise<{ organizations: (OrgRecord & { role?: string })[]; total: number }> {
    const where: string[] = ['o.deleted_at IS NULL'];
    const params: unknown[] = [];
    let from = 'organizations o';
    if (q.userId !== undefined) {
      from = 'organizations o JOIN organization_members m ON m.organization_id = o.id';
      where.push('m.user_id = ?');
      params.push(q.userId);
    }
    if (q.search !== undefined && q.search !== '') {
      where.push("(LOWER(o.name) LIKE ? ESCAPE '!' OR o.slug LIKE ? ESCAPE '!')");
      params.push(likeContaining(q.search), likeContaining(q.search));
    }
    const w = where.join(' AND ');
    const [count] = await this.#select(`SELECT COUNT(*) AS n FROM ${from} WHERE ${w}`, params);
    const cols = q.userId !== undefined ? 'o.*, m.role AS member_role' : 'o.*';
    const rows = await this.#select(`SELECT ${cols} FROM ${from} WHERE ${w} ORDER BY o.name, o.id LIMIT ? OFFSET ?`, [...params, q.limit, q.offset]);
    return {
      organizations: rows.map((r) => (r['member_role'] == null ? orgOf(r) : { ...orgOf(r), role: String(r['member_role']) })),
      total: Number(count?.['n'] ?? 0),
    };
  }

  // ---------------------------------------------------------------- members

  async member(organizationId: string, userId: string, t?: StoreTransaction): Promise<MemberRecord | undefined> {
    const [row] = await this.#select('SELECT * FROM organization_members WHERE organization_id = ? AND user_id = ?', [organizationId, userId], t);
    return row === undefined ? undefined : memberOf(row);
  }

  async insertMember(m: MemberRecord, t: StoreTransaction): Promise<void> {
    await this.#run('INSERT INTO organization_members (organization_id, user_id, role, created_at, updated_at) VALUES (?, ?, ?, ?, ?)', [m.organization_id, m.user_id, m.role, m.created_at, m.updated_at], t);
  }

  async updateMemberRole(organizationId: string, userId: string, role: string, t: StoreTransaction): Promise<void> {
    await this.#run('UPDATE organization_members SET role = ?, updated_at = ? WHERE organization_id = ? AND user_id = ?', [role, this.#now(), organizationId, userId], t);
  }

  async deleteMember(organizationId: string, userId: string, t: StoreTransaction): Promise<void> {
    await this.#run('DELETE FROM organization_members WHERE organization_id = ? AND user_id = ?', [organizationId, userId], t);
  }

  async countRole(organizationId: string, role: string, t: StoreTransaction): Promise<number> {
    const [row] = await this.#select('SELECT COUNT(*) AS n FROM organization_members WHERE organization_id = ? AND role = ?', [organizationId, role], t);
    return Number(row?.['n'] ?? 0);
  }

  /** Members of an organization, oldest first, optionally of one role. */
  async listMembers(q: { organizationId: string; role?: string | undefined; offset: number; limit: number }): Promise<{ members: MemberRecord[]; total: number }> {
    const params: unknown[] = [q.organizationId];
    let w = 'organization_id = ?';
    if (q.role !== undefined && q.role !== '') {
      w += ' AND role = ?';
      params.push(q.role);
    }
    const [count] = await this.#select(`SELECT COUNT(*) AS n FROM organization_members WHERE ${w}`, params);
    const rows = await this.#select(`SELECT * FROM organization_members WHERE ${w} ORDER BY created_at, user_id LIMIT ? OFFSET ?`, [...params, q.limit, q.offset]);
    return { members: rows.map(memberOf), total: Number(count?.['n'] ?? 0) };
  }

  /** Every member row of `organizationId` (for deleting the organization). */
  async allMembers(organizationId: string, t: StoreTransaction): Promise<MemberRecord[]> {
    return (await this.#select('SELECT * FROM organization_members WHERE organization_id = ?', [organizationId], t)).map(memberOf);
  }

  /** Every membership of a user (live organizations only). */
  async membershipsOf(userId: string): Promise<(MemberRecord & { slug: string; name: string })[]> {
    const rows = await this.#select(
      'SELECT m.*, o.slug, o.name FROM organization_members m JOIN organizations o ON o.id = m.organization_id WHERE m.user_id = ? AND o.deleted_at IS NULL ORDER BY o.name, o.id',
      [userId],
    );
    return rows.map((r) => ({ ...memberOf(r), slug: String(r['slug']), name: String(r['name']) }));
  }

  // ---------------------------------------------------------------- teams

  /** Inserts a team; `false` when its organization has a team of that name. */
  async insertTeam(team: TeamRecord, t: StoreTransaction): Promise<boolean> {
    try {
      await this.#run('INSERT INTO organization_teams (id, organization_id, name, created_at) VALUES (?, ?, ?, ?)', [team.id, team.organization_id, team.name, team.created_at], t);
      return true;
    } catch (err) {
      if (isUniqueConstraintError(err)) return false;
      throw err;
    }
  }

  async team(id: string, t?: StoreTransaction): Promise<TeamRecord | undefined> {
    const [row] = await this.#select('SELECT * FROM organization_teams WHERE id = ?', [id], t);
    return row === undefined ? undefined : { id: String(row['id']), organization_id: String(row['organization_id']), name: String(row['name']), created_at: Number(row['created_at']) };
  }

  async listTeams(q: { organizationId: string; offset: number; limit: number }): Promise<{ teams: (TeamRecord & { member_count: number })[]; total: number }> {
    const [count] = await this.#select('SELECT COUNT(*) AS n FROM organization_teams WHERE organization_id = ?', [q.organizationId]);
    const rows = await this.#select(
      `SELECT t.*, (SELECT COUNT(*) FROM organization_team_members tm WHERE tm.team_id = t.id) AS member_count
         FROM organization_teams t WHERE t.organization_id = ? ORDER BY t.name, t.id LIMIT ? OFFSET ?`,
      [q.organizationId, q.limit, q.offset],
    );
    return {
      teams: rows.map((r) => ({ id: String(r['id']), organization_id: String(r['organization_id']), name: String(r['name']), created_at: Number(r['created_at']), member_count: Number(r['member_count']) })),
      total: Number(count?.['n'] ?? 0),
    };
  }

  /** The ids of an organization's teams. */
  async teamIds(organizationId: string, t: StoreTransaction): Promise<string[]> {
    return (await this.#select('SELECT id FROM organization_teams WHERE organization_id = ?', [organizationId], t)).map((r) => String(r['id']));
  }

  async isTeamMember(teamId: string, userId: string, t?: StoreTransaction): Promise<boolean> {
    return (await this.#select('SELECT team_id FROM organization_team_members WHERE team_id = ? AND user_id = ?', [teamId, userId], t)).length > 0;
  }

  async insertTeamMember(teamId: string, userId: string, t: StoreTransaction): Promise<void> {
    await this.#run('INSERT INTO organization_team_members (team_id, user_id, created_at) VALUES (?, ?, ?)', [teamId, userId, this.#now()], t);
  }

  async deleteTeamMember(teamId: string, userId: string, t: StoreTransaction): Promise<void> {
    await this.#run('DELETE FROM organization_team_members WHERE team_id = ? AND user_id = ?', [teamId, userId], t);
  }

  /** The user ids of a team's members, oldest first. */
  async teamMembers(teamId: string, t?: StoreTransaction): Promise<string[]> {
    return (await this.#select('SELECT user_id FROM organization_team_members WHERE team_id = ? ORDER BY created_at, user_id', [teamId], t)).map((r) => String(r['user_id']));
  }

  /** Every team of an organization with its member ids (SCIM lists of Groups). */
  async teamsWithMembers(organizationId: string, t?: StoreTransaction): Promise<(TeamRecord & { members: string[] })[]> {
    const teams = await this.#select('SELECT * FROM organization_teams WHERE organization_id = ? ORDER BY created_at, id', [organizationId], t);
    const links = await this.#select(
      'SELECT tm.team_id, tm.user_id FROM organization_team_members tm JOIN organization_teams t ON t.id = tm.team_id WHERE t.organization_id = ? ORDER BY tm.created_at, tm.user_id',
      [organizationId],
      t,
    );
    const by = new Map<string, string[]>();
    for (const l of links) {
      const k = String(l['team_id']);
      if (!by.has(k)) by.set(k, []);
      by.get(k)!.push(String(l['user_id']));
    }
    return teams.map((r) => ({ id: String(r['id']), organization_id: String(r['organization_id']), name: String(r['name']), created_at: Number(r['created_at']), members: by.get(String(r['id'])) ?? [] }));
  }

  /** Renames a team; `false` when its organization has another team of that name. */
  async renameTeam(teamId: string, name: string, t: StoreTransaction): Promise<boolean> {
    try {
      await this.#run('UPDATE organization_teams SET name = ? WHERE id = ?', [name, teamId], t);
      return true;
    } catch (err) {
      if (isUniqueConstraintError(err)) return false;
      throw err;
    }
  }

  /** Deletes a team and its member rows (its tuples go through the caller). */
  async deleteTeam(teamId: string, t: StoreTransaction): Promise<void> {
    await this.#run('DELETE FROM organization_team_members WHERE team_id = ?', [teamId], t);
    await this.#run('DELETE FROM organization_teams WHERE id = ?', [teamId], t);
  }

  /** The teams of `organizationId` that `userId` is in. */
  async teamsOfMember(organizationId: string, userId: string, t: StoreTransaction): Promise<string[]> {
    const rows = await this.#select(
      'SELECT tm.team_id FROM organization_team_members tm JOIN organization_teams t ON t.id = tm.team_id WHERE t.organization_id = ? AND tm.user_id = ?',
      [organizationId, userId],
      t,
    );
    return rows.map((r) => String(r['team_id']));
  }

  /** Removes an organization's members, teams and team members, revokes its pending invitations and releases its domains (deletion). */
  async deleteOrganizationRows(organizationId: string, t: StoreTransaction): Promise<void> {
    const now = this.#now();
    await this.#run('DELETE FROM organization_team_members WHERE team_id IN (SELECT id FROM organization_teams WHERE organization_id = ?)', [organizationId], t);
    await this.#run('DELETE FROM organization_teams WHERE organization_id = ?', [organizationId], t);
    await this.#run('DELETE FROM organization_members WHERE organization_id = ?', [organizationId], t);
    await this.#run("UPDATE organization_invitations SET status = 'revoked', updated_at = ? WHERE organization_id = ? AND status = 'pending'", [now, organizationId], t);
    await this.#run('DELETE FROM organization_verified_domains WHERE organization_id = ?', [organizationId], t);
    await this.#run('DELETE FROM organization_domains WHERE organization_id = ?', [organizationId], t);
  }

  /** Removes a user's memberships and team memberships everywhere (user deletion). */
  async deleteUserRows(userId: string, t: StoreTransaction): Promise<void> {
    await this.#run('DELETE FROM organization_team_members WHERE user_id = ?', [userId], t);
    await this.#run('DELETE FROM organization_members WHERE user_id = ?', [userId], t);
  }

  // ---------------------------------------------------------------- invitations

  async insertInvitation(inv: InvitationRecord & { token_hash: string }, t: StoreTransaction): Promise<void> {
    await this.#run(
      'INSERT INTO organization_invitations (id, organization_id, email, role, token_hash, status, expires_at, created_at, updated_at, invited_by, accepted_by) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NULL)',
      [inv.id, inv.organization_id, inv.email, inv.role, inv.token_hash, 'pending', inv.expires_at, inv.created_at, inv.updated_at, inv.invited_by],
      t,
    );
  }

  async invitation(id: string, t?: StoreTransaction): Promise<InvitationRecord | undefined> {
    const [row] = await this.#select('SELECT * FROM organization_invitations WHERE id = ?', [id], t);
    return row === undefined ? undefined : invitationOf(row, this.#now());
  }

  async invitationByTokenHash(hash: string, t?: StoreTransaction): Promise<InvitationRecord | undefined> {
    const [row] = await this.#select('SELECT * FROM organization_invitations WHERE token_hash = ?', [hash], t);
    return row === undefined ? undefined : invitationOf(row, this.#now());
  }

  /**
   * Moves a pending, unexpired invitation to `status` inside `t`; `false`
   * when it was not pending any more or had expired (exactly one of
   * concurrent uses wins).
   */
  async finishInvitation(id: string, status: 'accepted' | 'revoked', acceptedBy: string | null, t: StoreTransaction): Promise<boolean> {
    const now = this.#now();
    const changed = await this.#run(
      "UPDATE organization_invitations SET status = ?, accepted_by = ?, updated_at = ? WHERE id = ? AND status = 'pending' AND expires_at > ?",
      [status, acceptedBy, now, id, now],
      t,
    );
    return changed === 1;
  }

  async listInvitations(q: { organizationId: string; status?: InvitationStatus | undefined; offset: number; limit: number }): Promise<{ invitations: InvitationRecord[]; total: number }> {
    const now = this.#now();
    const params: unknown[] = [q.organizationId];
    let w = 'organization_id = ?';
    if (q.status === 'pending') {
      w += " AND status = 'pending' AND expires_at > ?";
      params.push(now);
    } else if (q.status === 'expired') {
      w += " AND status = 'pending' AND expires_at <= ?";
      params.push(now);
    } else if (q.status !== undefined) {
      w += ' AND status = ?';
      params.push(q.status);
    }
    const [count] = await this.#select(`SELECT COUNT(*) AS n FROM organization_invitations WHERE ${w}`, params);
    const rows = await this.#select(`SELECT * FROM organization_invitations WHERE ${w} ORDER BY created_at DESC, id LIMIT ? OFFSET ?`, [...params, q.limit, q.offset]);
    return { invitations: rows.map((r) => invitationOf(r, now)), total: Number(count?.['n'] ?? 0) };
  }

  // ---------------------------------------------------------------- domains

  async domain(organizationId: string, domain: string, t?: StoreTransaction): Promise<DomainRecord | undefined> {
    const [row] = await this.#select('SELECT * FROM organization_domains WHERE organization_id = ? AND domain = ?', [organizationId, domain], t);
    return row === undefined ? undefined : domainOf(row);
  }

  async insertDomain(d: DomainRecord, t: StoreTransaction): Promise<void> {
    await this.#run('INSERT INTO organization_domains (organization_id, domain, verification_token, verified_at, created_at) VALUES (?, ?, ?, NULL, ?)', [d.organization_id, d.domain, d.verification_token, d.created_at], t);
  }

  /** Marks a domain verified and claims it for its organization; `false` when another organization holds it verified. */
  async verifyDomain(organizationId: string, domain: string, t: StoreTransaction): Promise<boolean> {
    const [holder] = await this.#select('SELECT organization_id FROM organization_verified_domains WHERE domain = ?', [domain], t);
    if (holder !== undefined) {
      if (String(holder['organization_id']) !== organizationId) return false;
    } else {
      try {
        await this.#run('INSERT INTO organization_verified_domains (domain, organization_id) VALUES (?, ?)', [domain, organizationId], t);
      } catch (err) {
        if (isUniqueConstraintError(err)) return false;
        throw err;
      }
    }
    await this.#run('UPDATE organization_domains SET verified_at = ? WHERE organization_id = ? AND domain = ? AND verified_at IS NULL', [this.#now(), organizationId, domain], t);
    return true;
  }

  /** The live organization that holds `domain` verified. */
  async organizationOfVerifiedDomain(domain: string): Promise<OrgRecord | undefined> {
    const [row] = await this.#select(
      'SELECT o.* FROM organization_verified_domains v JOIN organizations o ON o.id = v.organization_id WHERE v.domain = ? AND o.deleted_at IS NULL',
      [domain],
    );
    return row === undefined ? undefined : orgOf(row);
  }
}
