/**
 * The SCIM resources of an organization's directory as documents: the User
 * and Group documents a directory sends, validated into what the service
 * stores, and the rows and teams the service holds, rendered as the
 * resources it answers (RFC 7643 §4), with their versions.
 *
 * Apart from auth/scim.ts, which decides what a change means (transactions,
 * memberships, tuples, sessions): these are the shapes in and out, pure but
 * for the one read that proves an address is on a verified domain of the
 * organization.
 */
import type { SqlOrgStore, TeamRecord } from './org_store.ts';
import { getCi } from './scim_filter.ts';
import type { ScimUserRow } from './scim_store.ts';
import { ATTRIBUTE_NAME, bad, boolOf, canonical, clone, READ_ONLY, SCIM_ENTERPRISE, SCIM_GROUP, SCIM_MAX_RESULTS, SCIM_USER, ScimError, setCi, strOf, withMeta, type Doc } from './scim_document.ts';
import { normalizeEmail, type UserRecord } from './user_store_types.ts';

/** The stored attributes of one user, as JSON, at most. */
const MAX_ATTRIBUTES = 16_384;
/** Members one Group holds at most. */
const MAX_MEMBERS = 10_000;

/** The validated form of a User document. */
export interface UserInput {
  userName: string;
  email: string;
  externalId: string | null;
  active: boolean;
  givenName: string | null;
  familyName: string | null;
  attributes: Doc;
}

/** The validated form of a Group document. */
export interface GroupInput {
  displayName: string;
  externalId: string | null;
  members: string[];
}

/** The ServiceProviderConfig resource (RFC 7643 §5): what this provider supports. */
export function serviceProviderConfig(baseUrl: string): Doc {
  return {
    schemas: ['urn:ietf:params:scim:schemas:core:2.0:ServiceProviderConfig'],
    documentationUri: 'https://github.com/latchkey/latchkey/blob/main/docs/scim.md',
    patch: { supported: true },
    bulk: { supported: false, maxOperations: 0, maxPayloadSize: 0 },
    filter: { supported: true, maxResults: SCIM_MAX_RESULTS },
    changePassword: { supported: false },
    sort: { supported: false },
    etag: { supported: true },
    authenticationSchemes: [{ type: 'oauthbearertoken', name: 'Bearer token', description: 'A SCIM token of the organization (create_scim_token)', primary: true }],
    meta: { resourceType: 'ServiceProviderConfig', location: `${baseUrl}/ServiceProviderConfig` },
  };
}

/** The SCIM User resource of a row, its account and the user's teams in the organization. */
export function userResource(baseUrl: string, row: ScimUserRow, user: UserRecord | undefined, teams: readonly TeamRecord[]): Doc {
  const groups = teams.map((t) => ({ value: t.id, display: t.name, $ref: `${baseUrl}/Groups/${t.id}` }));
  const ext = row.attributes[SCIM_ENTERPRISE];
  const resource: Doc = {
    schemas: ext === undefined ? [SCIM_USER] : [SCIM_USER, SCIM_ENTERPRISE],
    id: row.user_id,
    ...(row.external_id === null ? {} : { externalId: row.external_id }),
    ...row.attributes,
    userName: (row.attributes['userName'] as string | undefined) ?? row.user_name,
    // The directory's own state: an access revoked by a super-admin is not the directory's deactivation, and
    // answering it as one would make the directory's next PATCH deprovision the person.
    active: row.active && user !== undefined,
    ...(groups.length > 0 ? { groups } : {}),
  };
  return withMeta(resource, 'User', row.created_at, row.updated_at, `${baseUrl}/Users/${row.user_id}`);
}

/** A Group resource; its members carry `value`, `$ref` and `type` (no `display`: one read per member would not scale). */
export function groupResource(baseUrl: string, team: TeamRecord, members: readonly string[], side: { external_id: string | null; updated_at: number } | undefined): Doc {
  const out: Doc[] = members.map((uid) => ({ value: uid, $ref: `${baseUrl}/Users/${uid}`, type: 'User' }));
  const resource: Doc = {
    schemas: [SCIM_GROUP],
    id: team.id,
    ...(side?.external_id == null ? {} : { externalId: side.external_id }),
    displayName: team.name,
    members: out,
  };
  return withMeta(resource, 'Group', team.created_at, side?.updated_at ?? team.created_at, `${baseUrl}/Groups/${team.id}`);
}

/**
 * Validates a User document (POST, PUT, or the result of a PATCH) of the
 * organization `orgId`: its address must be on one of its verified domains.
 */
export async function userInput(body: unknown, orgId: string, orgStore: Pick<SqlOrgStore, 'organizationOfVerifiedDomain'>): Promise<UserInput> {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) throw bad('the body must be a User resource', 'invalidSyntax');
  const doc = clone(body as Doc);
  const userName = strOf(getCi(doc, 'userName'), 'userName', 320);
  if (userName === undefined || userName.trim() === '') throw bad('userName is required');
  const externalId = strOf(getCi(doc, 'externalId'), 'externalId', 256) ?? null;
  const activeRaw = getCi(doc, 'active');
  const active = activeRaw === undefined || activeRaw === null ? true : boolOf(activeRaw, 'active');
  const name = getCi(doc, 'name');
  if (name !== undefined && name !== null && (typeof name !== 'object' || Array.isArray(name))) throw bad('name must be an object');
  const givenName = strOf(getCi(name, 'givenName'), 'name.givenName', 256) ?? null;
  const familyName = strOf(getCi(name, 'familyName'), 'name.familyName', 256) ?? null;
  const emails = getCi(doc, 'emails');
  if (emails !== undefined && emails !== null && !Array.isArray(emails)) throw bad('emails must be a list');
  for (const e of (emails as unknown[] | undefined) ?? []) {
    if (e === null || typeof e !== 'object') throw bad('each email is an object');
    strOf(getCi(e, 'value'), 'emails.value', 320);
    const primary = getCi(e, 'primary');
    if (primary !== undefined) setCi(e as Doc, 'primary', boolOf(primary, 'emails.primary'));
  }
  // The account's email: the primary email, else the work one, else the first, else the userName.
  const list = ((emails as Doc[] | undefined) ?? []).filter((e) => typeof getCi(e, 'value') === 'string');
  const chosen = list.find((e) => getCi(e, 'primary') === true) ?? list.find((e) => String(getCi(e, 'type') ?? '').toLowerCase() === 'work') ?? list[0];
  const address = (chosen === undefined ? userName : (getCi(chosen, 'value') as string)).trim();
  let email: string | undefined;
  try {
    email = normalizeEmail(address);
  } catch {
    email = undefined;
  }
  const at = email?.lastIndexOf('@') ?? -1;
  if (email === undefined || at <= 0 || at === email.length - 1) throw bad('the user needs an email address (userName or emails)');
  const holder = await orgStore.organizationOfVerifiedDomain(email.slice(at + 1));
  if (holder?.id !== orgId) {
    throw bad(`the domain of ${email} is not a verified domain of this organization (add_organization_domain, verify_organization_domain)`);
  }
  const ext = getCi(doc, SCIM_ENTERPRISE);
  if (ext !== undefined && (ext === null || typeof ext !== 'object' || Array.isArray(ext))) throw bad(`${SCIM_ENTERPRISE} must be an object`);
  // Kept as sent, besides what the server answers itself and any password (never stored).
  const attributes: Doc = {};
  for (const [k, v] of Object.entries(doc)) {
    if (READ_ONLY.has(k.toLowerCase()) || k.toLowerCase() === 'externalid' || k.toLowerCase() === 'active') continue;
    if (k.toLowerCase() !== SCIM_ENTERPRISE.toLowerCase() && (!ATTRIBUTE_NAME.test(k) || k === 'constructor' || k === 'prototype')) throw bad(`unknown attribute ${JSON.stringify(k)}`, 'invalidSyntax');
    attributes[k.toLowerCase() === SCIM_ENTERPRISE.toLowerCase() ? SCIM_ENTERPRISE : canonical(k)] = v;
  }
  attributes['userName'] = userName.trim();
  if (JSON.stringify(attributes).length > MAX_ATTRIBUTES) throw bad(`a user's attributes are at most ${MAX_ATTRIBUTES} bytes of JSON`);
  return { userName: userName.trim(), email, externalId, active, givenName, familyName, attributes };
}

/** Validates a Group document: its name and member ids (that each is an active SCIM user of the organization is checked where they are written). */
export function groupInput(body: unknown): GroupInput {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) throw bad('the body must be a Group resource', 'invalidSyntax');
  const displayName = strOf(getCi(body, 'displayName'), 'displayName', 256)?.trim();
  if (displayName === undefined || displayName === '') throw bad('displayName is required');
  const externalId = strOf(getCi(body, 'externalId'), 'externalId', 256) ?? null;
  const raw = getCi(body, 'members') ?? [];
  if (!Array.isArray(raw)) throw bad('members must be a list');
  if (raw.length > MAX_MEMBERS) throw bad(`a group has at most ${MAX_MEMBERS} members`, 'tooMany');
  const members = new Set<string>();
  for (const m of raw) {
    const v = getCi(m, 'value');
    if (typeof v !== 'string' || v === '' || v.length > 64) throw bad('each member has a value, the id of a User');
    const type = getCi(m, 'type');
    if (type !== undefined && String(type).toLowerCase() !== 'user') throw bad('a member is a User (nested groups are not supported)');
    members.add(v);
  }
  return { displayName, externalId, members: [...members] };
}

/** Refuses a change whose `If-Match` names no current version of `resource` (RFC 7644 §3.14; `412`). */
export function checkVersion(resource: Doc, ifMatch: string | undefined): void {
  if (ifMatch === undefined || ifMatch.trim() === '*') return;
  const want = (resource['meta'] as Doc)['version'];
  if (!ifMatch.split(',').map((s) => s.trim()).includes(want as string)) throw new ScimError(412, 'the resource changed since that version (If-Match)', undefined);
}
