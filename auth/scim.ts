/**
 * The SCIM 2.0 service provider (RFC 7643, RFC 7644; docs/scim.md) of one
 * organization, known from the bearer token of the request. It speaks SCIM
 * resources in and out and leaves HTTP to its adapter
 * (transports/web/scim.ts).
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
import { createHash, randomUUID } from 'node:crypto';
import { LatchkeyError } from '../engine/errors.ts';
import type { StoreTransaction } from './main_database.ts';
import type { OrgEvent, OrganizationService, OrgTuples } from './organizations.ts';
import type { OrgRecord, SqlOrgStore, TeamRecord } from './org_store.ts';
import { getCi, matches, parseFilter, parsePatchPath, ScimFilterError, type Filter, type PatchPath } from './scim_filter.ts';
import type { ScimUserRow, SqlScimStore } from './scim_store.ts';
import { normalizeEmail, type UserRecord, type UserStore } from './user_store_types.ts';

export const SCIM_USER = 'urn:ietf:params:scim:schemas:core:2.0:User';
export const SCIM_GROUP = 'urn:ietf:params:scim:schemas:core:2.0:Group';
export const SCIM_ENTERPRISE = 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User';
const LIST = 'urn:ietf:params:scim:api:messages:2.0:ListResponse';
const PATCH_OP = 'urn:ietf:params:scim:api:messages:2.0:PatchOp';
const ERROR = 'urn:ietf:params:scim:api:messages:2.0:Error';

/** Results a list answers at most (`count` above it is lowered, RFC 7644 §3.4.2.4). */
export const SCIM_MAX_RESULTS = 200;
/** Resources a filter is evaluated over at most; a larger organization must filter by `userName`, `externalId`, `id` or `displayName` `eq`. */
const SCAN_LIMIT = 10_000;
/** The stored attributes of one user, as JSON, at most. */
const MAX_ATTRIBUTES = 16_384;
/** Members one Group holds at most. */
const MAX_MEMBERS = 10_000;

/** A SCIM error: its HTTP status and `scimType` (RFC 7644 §3.12). */
export class ScimError extends Error {
  readonly status: number;
  readonly scimType: string | undefined;
  constructor(status: number, detail: string, scimType?: string) {
    super(detail);
    this.status = status;
    this.scimType = scimType;
  }

  /** The body in the SCIM error schema. */
  get body(): Record<string, unknown> {
    return { schemas: [ERROR], status: String(this.status), ...(this.scimType === undefined ? {} : { scimType: this.scimType }), detail: this.message };
  }
}

const bad = (detail: string, scimType = 'invalidValue') => new ScimError(400, detail, scimType);
const notFound = (what: string) => new ScimError(404, `${what} not found`);

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

type Doc = Record<string, unknown>;

const USER_CASE_EXACT = new Set(['id', 'externalid']);
const caseExact = (p: string) => USER_CASE_EXACT.has(p) || p === 'members.value' || p === 'groups.value';

/** A core attribute's name (RFC 7643 §2.1 ATTRNAME); an extension other than the enterprise one is refused. */
const ATTRIBUTE_NAME = /^[A-Za-z][A-Za-z0-9_$-]{0,63}$/;

/** The attributes a client may not write (answered by the server). */
const READ_ONLY = new Set(['id', 'meta', 'groups', 'schemas', 'password']);

const iso = (seconds: number) => new Date(seconds * 1000).toISOString();

function etagOf(resource: Doc): string {
  const { meta: _meta, ...rest } = resource;
  return `W/"${createHash('sha256').update(JSON.stringify(rest)).digest('hex').slice(0, 20)}"`;
}

function withMeta(resource: Doc, type: 'User' | 'Group', created: number, updated: number, location: string): Doc {
  const out: Doc = { ...resource, meta: { resourceType: type, created: iso(created), lastModified: iso(updated), location } };
  (out['meta'] as Doc)['version'] = etagOf(out);
  return out;
}

/** A string-or-boolean from a directory (`"False"` from Entra ID) as a boolean. */
function boolOf(v: unknown, what: string): boolean {
  if (typeof v === 'boolean') return v;
  if (typeof v === 'string' && /^(true|false)$/i.test(v)) return v.toLowerCase() === 'true';
  throw bad(`${what} must be a boolean`);
}

function strOf(v: unknown, what: string, max: number): string | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'string') throw bad(`${what} must be a string`);
  if (v.length > max) throw bad(`${what} is at most ${max} characters`);
  return v;
}

/** Sets `name` in `obj`, replacing a key that differs only in case. */
function setCi(obj: Doc, name: string, value: unknown): void {
  const lower = name.toLowerCase();
  for (const k of Object.keys(obj)) if (k.toLowerCase() === lower && k !== name) delete obj[k];
  obj[canonical(name)] = value;
}

function deleteCi(obj: Doc, name: string): void {
  const lower = name.toLowerCase();
  for (const k of Object.keys(obj)) if (k.toLowerCase() === lower) delete obj[k];
}

const CANONICAL = new Map(
  [
    'userName', 'name', 'displayName', 'nickName', 'profileUrl', 'title', 'userType', 'preferredLanguage', 'locale', 'timezone', 'active', 'emails', 'phoneNumbers',
    'addresses', 'externalId', 'members', 'givenName', 'familyName', 'middleName', 'formatted', 'honorificPrefix', 'honorificSuffix', 'value', 'type', 'primary', 'display',
    'employeeNumber', 'costCenter', 'organization', 'division', 'department', 'manager', SCIM_ENTERPRISE,
  ].map((n) => [n.toLowerCase(), n]),
);
const canonical = (name: string) => CANONICAL.get(name.toLowerCase()) ?? name;

/** The JSON copy of a document (no shared references between the stored and the patched one). */
const clone = <T>(v: T): T => JSON.parse(JSON.stringify(v)) as T;

function pageOf(query: Readonly<Record<string, unknown>>): { start: number; count: number } {
  const num = (v: unknown, fallback: number): number => {
    if (v === undefined) return fallback;
    const n = Number(Array.isArray(v) ? v[0] : v);
    if (!Number.isFinite(n)) throw bad('startIndex and count are integers');
    return Math.trunc(n);
  };
  // RFC 7644 §3.4.2.4: a startIndex below 1 is 1; a negative count is 0.
  return { start: Math.max(1, num(query['startIndex'], 1)), count: Math.min(SCIM_MAX_RESULTS, Math.max(0, num(query['count'], 100))) };
}

function listParam(query: Readonly<Record<string, unknown>>, name: string): string[] {
  const v = query[name];
  if (v === undefined) return [];
  if (typeof v !== 'string') throw bad(`${name} is a comma-separated list`);
  return v.split(',').map((s) => s.trim()).filter((s) => s !== '');
}

/**
 * `attributes` / `excludedAttributes` (RFC 7644 §3.4.2.5): `id`, `schemas`
 * and `meta` always stay; sub-attributes (`name.givenName`) and extension
 * attributes (`urn:...:User:department`) are understood.
 */
function project(resource: Doc, attributes: string[], excluded: string[], coreSchema: string): Doc {
  const split = (a: string): { container: string | undefined; path: string[] } => {
    const colon = a.lastIndexOf(':');
    if (colon >= 0) {
      const uri = a.slice(0, colon);
      const path = a.slice(colon + 1).split('.');
      return { container: uri.toLowerCase() === coreSchema.toLowerCase() ? undefined : uri, path };
    }
    return { container: undefined, path: a.split('.') };
  };
  const always = new Set(['id', 'schemas', 'meta']);
  if (attributes.length > 0) {
    const out: Doc = {};
    for (const k of Object.keys(resource)) if (always.has(k)) out[k] = resource[k];
    for (const a of attributes) {
      const { container, path } = split(a);
      const src = container === undefined ? resource : (getCi(resource, container) as Doc | undefined);
      if (src === undefined) continue;
      const dst = container === undefined ? out : ((out[container] as Doc | undefined) ?? (out[container] = {}) as Doc);
      const top = Object.keys(src).find((k) => k.toLowerCase() === path[0]!.toLowerCase());
      if (top === undefined) continue;
      if (path.length === 1 || src[top] === null || typeof src[top] !== 'object') {
        dst[top] = src[top];
      } else if (Array.isArray(src[top])) {
        dst[top] = (src[top] as Doc[]).map((item) => ({ ...(item[path[1]!] === undefined ? {} : { [path[1]!]: getCi(item, path[1]!) }) }));
      } else {
        const sub = Object.keys(src[top] as Doc).find((k) => k.toLowerCase() === path[1]!.toLowerCase());
        if (sub !== undefined) dst[top] = { ...((dst[top] as Doc | undefined) ?? {}), [sub]: (src[top] as Doc)[sub] };
      }
    }
    return out;
  }
  if (excluded.length > 0) {
    const out = clone(resource);
    for (const a of excluded) {
      const { container, path } = split(a);
      const target = container === undefined ? out : (getCi(out, container) as Doc | undefined);
      if (target === undefined || always.has(path[0]!)) continue;
      if (path.length === 1) deleteCi(target, path[0]!);
      else {
        const inner = getCi(target, path[0]!);
        if (inner !== null && typeof inner === 'object' && !Array.isArray(inner)) deleteCi(inner as Doc, path[1]!);
      }
    }
    return out;
  }
  return resource;
}

// ---------------------------------------------------------------- PATCH

interface PatchOperation {
  op: 'add' | 'remove' | 'replace';
  path: PatchPath | undefined;
  value: unknown;
}

function patchOperations(body: unknown): PatchOperation[] {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) throw bad('the body must be a PatchOp message', 'invalidSyntax');
  const schemas = getCi(body, 'schemas');
  if (!Array.isArray(schemas) || !schemas.includes(PATCH_OP)) throw bad(`the schemas of a PATCH body must include ${PATCH_OP}`, 'invalidSyntax');
  const ops = getCi(body, 'Operations');
  if (!Array.isArray(ops) || ops.length === 0) throw bad('Operations must be a non-empty list', 'invalidSyntax');
  if (ops.length > 1000) throw bad('a PATCH carries at most 1000 operations', 'tooMany');
  return ops.map((o: unknown) => {
    if (o === null || typeof o !== 'object') throw bad('each operation is an object', 'invalidSyntax');
    const op = String(getCi(o, 'op') ?? '').toLowerCase();
    if (op !== 'add' && op !== 'remove' && op !== 'replace') throw bad(`op must be add, remove or replace, not ${JSON.stringify(getCi(o, 'op'))}`, 'invalidSyntax');
    const rawPath = getCi(o, 'path');
    let path: PatchPath | undefined;
    if (rawPath !== undefined && rawPath !== null && rawPath !== '') {
      if (typeof rawPath !== 'string') throw bad('path must be a string', 'invalidPath');
      try {
        path = parsePatchPath(rawPath);
      } catch (err) {
        if (err instanceof ScimFilterError) throw bad(err.message, 'invalidPath');
        throw err;
      }
    }
    if (op === 'remove' && path === undefined) throw bad('remove needs a path', 'noTarget');
    const value = getCi(o, 'value');
    if (op !== 'remove' && value === undefined) throw bad(`${op} needs a value`, 'invalidSyntax');
    return { op, path, value };
  });
}

/** The object holding a path's attribute: the resource, or its extension object (made when `create`). */
function containerFor(doc: Doc, uri: string | undefined, coreSchema: string, create: boolean): Doc | undefined {
  if (uri === undefined || uri.toLowerCase() === coreSchema.toLowerCase()) return doc;
  if (uri.toLowerCase() !== SCIM_ENTERPRISE.toLowerCase()) throw bad(`unknown schema ${uri}`, 'invalidPath');
  let ext = getCi(doc, SCIM_ENTERPRISE) as Doc | undefined;
  if (ext === undefined && create) setCi(doc, SCIM_ENTERPRISE, (ext = {}));
  return ext;
}

/** The equality conditions of a value filter (`type eq "work"`), to make the value an `add` targets when none matches. */
function equalities(f: Filter): Doc {
  if (f.kind === 'compare' && f.op === 'eq') return { [canonical(f.path.name)]: f.value };
  if (f.kind === 'and') return { ...equalities(f.left), ...equalities(f.right) };
  return {};
}

/** Applies one PATCH operation to a resource document (RFC 7644 §3.5.2), in place. */
function applyPatch(doc: Doc, o: PatchOperation, coreSchema: string): void {
  if (o.path === undefined) {
    // No path: the value is an object of attributes (Okta, Entra ID: {"op":"replace","value":{"active":false}}).
    if (o.value === null || typeof o.value !== 'object' || Array.isArray(o.value)) throw bad(`${o.op} without a path needs an object value`, 'invalidValue');
    for (const [k, v] of Object.entries(o.value as Doc)) {
      if (k.toLowerCase() === SCIM_ENTERPRISE.toLowerCase() && v !== null && typeof v === 'object' && !Array.isArray(v)) {
        for (const [ek, ev] of Object.entries(v as Doc)) applyPatch(doc, { op: o.op, path: { kind: 'attr', path: { uri: SCIM_ENTERPRISE, name: ek } }, value: ev }, coreSchema);
        continue;
      }
      let path: PatchPath;
      try {
        path = parsePatchPath(k);
      } catch (err) {
        if (err instanceof ScimFilterError) throw bad(err.message, 'invalidPath');
        throw err;
      }
      applyPatch(doc, { op: o.op, path, value: v }, coreSchema);
    }
    return;
  }
  const p = o.path;
  if (READ_ONLY.has(p.path.name.toLowerCase()) && p.path.uri === undefined) throw bad(`${p.path.name} cannot be changed`, 'mutability');
  const container = containerFor(doc, p.path.uri, coreSchema, o.op !== 'remove');
  if (container === undefined) return;
  if (p.kind === 'attr') {
    const { name, sub } = p.path;
    if (sub !== undefined) {
      let inner = getCi(container, name);
      if (o.op === 'remove') {
        if (inner !== null && typeof inner === 'object' && !Array.isArray(inner)) deleteCi(inner as Doc, sub);
        return;
      }
      if (inner === undefined || inner === null || typeof inner !== 'object' || Array.isArray(inner)) setCi(container, name, (inner = {}));
      setCi(inner as Doc, sub, o.value);
      return;
    }
    if (o.op === 'remove') {
      deleteCi(container, name);
      return;
    }
    const current = getCi(container, name);
    if (o.op === 'add' && Array.isArray(current)) {
      const more = Array.isArray(o.value) ? o.value : [o.value];
      const seen = new Set(current.map((c) => JSON.stringify(c)));
      setCi(container, name, [...current, ...more.filter((m) => !seen.has(JSON.stringify(m)))]);
    } else if (o.op === 'add' && current !== null && typeof current === 'object' && o.value !== null && typeof o.value === 'object' && !Array.isArray(o.value)) {
      setCi(container, name, { ...(current as Doc), ...(o.value as Doc) });
    } else {
      setCi(container, name, o.value);
    }
    return;
  }
  // A value path: emails[type eq "work"](.value), members[value eq "..."].
  const list = getCi(container, p.path.name);
  const items = Array.isArray(list) ? (list as Doc[]) : [];
  const hit = (item: unknown) => item !== null && typeof item === 'object' && matchesValuePath(p.filter, item as Doc, p.path.name);
  if (o.op === 'remove') {
    if (p.sub === undefined) setCi(container, p.path.name, items.filter((i) => !hit(i)));
    else for (const i of items) if (hit(i)) deleteCi(i, p.sub);
    return;
  }
  const targets = items.filter(hit);
  if (targets.length === 0) {
    // Entra ID adds `emails[type eq "work"].value` to a user with no work email: the value it names is made.
    const made: Doc = { ...equalities(p.filter), ...(p.sub === undefined ? (typeof o.value === 'object' && o.value !== null ? (o.value as Doc) : { value: o.value }) : { [canonical(p.sub)]: o.value }) };
    setCi(container, p.path.name, [...items, made]);
    return;
  }
  for (const t of targets) {
    if (p.sub !== undefined) setCi(t, p.sub, o.value);
    else if (o.value !== null && typeof o.value === 'object' && !Array.isArray(o.value)) Object.assign(t, o.value);
    else throw bad(`a value of ${p.path.name} is an object`, 'invalidValue');
  }
}

function matchesValuePath(f: Filter, item: Doc, parent: string): boolean {
  return matches({ kind: 'valuePath', path: { name: parent }, filter: f }, { [parent]: [item] }, '', caseExact);
}

function parseFilterParam(query: Readonly<Record<string, unknown>>): Filter | undefined {
  const f = query['filter'];
  if (f === undefined || f === '') return undefined;
  if (typeof f !== 'string') throw bad('filter is one string', 'invalidFilter');
  try {
    return parseFilter(f);
  } catch (err) {
    if (err instanceof ScimFilterError) throw bad(err.message, 'invalidFilter');
    throw err;
  }
}

/** `attr eq "value"` at the top of a filter (or inside an `and`), for an indexed read. */
function equalityOf(f: Filter | undefined, name: string): string | undefined {
  if (f === undefined) return undefined;
  if (f.kind === 'compare' && f.op === 'eq' && f.path.sub === undefined && f.path.name.toLowerCase() === name.toLowerCase() && typeof f.value === 'string') return f.value;
  if (f.kind === 'and') return equalityOf(f.left, name) ?? equalityOf(f.right, name);
  return undefined;
}

// ---------------------------------------------------------------- the service

/** The validated form of a User document. */
interface UserInput {
  userName: string;
  email: string;
  externalId: string | null;
  active: boolean;
  givenName: string | null;
  familyName: string | null;
  attributes: Doc;
}

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
        return { status: 200, body: this.#serviceProviderConfig(call) };
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

  #serviceProviderConfig(call: ScimCall): Doc {
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
      meta: { resourceType: 'ServiceProviderConfig', location: `${call.baseUrl}/ServiceProviderConfig` },
    };
  }

  // ---------------------------------------------------------------- users

  /** The SCIM User resource of a row and its account. */
  async #userResource(call: ScimCall, row: ScimUserRow, user: UserRecord | undefined, teams?: TeamRecord[]): Promise<Doc> {
    const groups = (teams ?? (await this.#teamsOf(call.org.id, row.user_id))).map((t) => ({ value: t.id, display: t.name, $ref: `${call.baseUrl}/Groups/${t.id}` }));
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
    return withMeta(resource, 'User', row.created_at, row.updated_at, `${call.baseUrl}/Users/${row.user_id}`);
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

  /** Validates a User document (POST, PUT, or the result of a PATCH). */
  async #userInput(call: ScimCall, body: unknown): Promise<UserInput> {
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
    const holder = await this.#o.orgStore.organizationOfVerifiedDomain(email.slice(at + 1));
    if (holder?.id !== call.org.id) {
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
    const input = await this.#userInput(call, body);
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

  #checkVersion(resource: Doc, ifMatch: string | undefined): void {
    if (ifMatch === undefined || ifMatch.trim() === '*') return;
    const want = (resource['meta'] as Doc)['version'];
    if (!ifMatch.split(',').map((s) => s.trim()).includes(want as string)) throw new ScimError(412, 'the resource changed since that version (If-Match)', undefined);
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
    this.#checkVersion(await this.#userResource(call, row, await this.#o.users.findById(row.user_id)), ifMatch);
    const bodyId = getCi(body, 'id');
    if (bodyId !== undefined && bodyId !== id) throw bad('id cannot be changed', 'mutability');
    return this.#writeUser(call, row, await this.#userInput(call, body));
  }

  async #patchUser(call: ScimCall, id: string, body: unknown, ifMatch: string | undefined): Promise<ScimResponse> {
    const ops = patchOperations(body);
    const row = await this.#row(call, id);
    const current = await this.#userResource(call, row, await this.#o.users.findById(row.user_id));
    this.#checkVersion(current, ifMatch);
    const doc = clone(current);
    delete doc['meta'];
    delete doc['groups'];
    for (const o of ops) applyPatch(doc, o, SCIM_USER);
    return this.#writeUser(call, row, await this.#userInput(call, doc));
  }

  /**
   * DELETE a User: the account, every tuple about it, its owned data and its
   * sessions, in one transaction (its sessions end right after the commit).
   */
  async #deleteUser(call: ScimCall, id: string, ifMatch: string | undefined): Promise<ScimResponse> {
    const row = await this.#row(call, id);
    const user = await this.#o.users.findById(row.user_id);
    if (user === undefined) throw notFound('User');
    this.#checkVersion(await this.#userResource(call, row, user), ifMatch);
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

  /** A Group resource; its members carry `value`, `$ref` and `type` (no `display`: one read per member would not scale). */
  async #groupResource(call: ScimCall, team: TeamRecord, members: string[], side: { external_id: string | null; updated_at: number } | undefined): Promise<Doc> {
    const out: Doc[] = members.map((uid) => ({ value: uid, $ref: `${call.baseUrl}/Users/${uid}`, type: 'User' }));
    const resource: Doc = {
      schemas: [SCIM_GROUP],
      id: team.id,
      ...(side?.external_id == null ? {} : { externalId: side.external_id }),
      displayName: team.name,
      members: out,
    };
    return withMeta(resource, 'Group', team.created_at, side?.updated_at ?? team.created_at, `${call.baseUrl}/Groups/${team.id}`);
  }

  async #team(call: ScimCall, id: string): Promise<TeamRecord> {
    const team = id.length <= 64 ? await this.#o.orgStore.team(id) : undefined;
    if (team === undefined || team.organization_id !== call.org.id) throw notFound('Group');
    return team;
  }

  async #getGroup(call: ScimCall, id: string, query: Readonly<Record<string, unknown>>): Promise<ScimResponse> {
    const team = await this.#team(call, id);
    const resource = await this.#groupResource(call, team, await this.#o.orgStore.teamMembers(team.id), await this.#o.scim.scimGroup(team.id));
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
      const res = await this.#groupResource(call, t, t.members, sides.get(t.id));
      if (filter === undefined || matches(filter, res, SCIM_GROUP, caseExact)) resources.push(res);
    }
    const page = resources.slice(start - 1, start - 1 + count);
    return { status: 200, body: listBody(page.map((r) => project(r, attributes, excluded, SCIM_GROUP)), resources.length, start) };
  }

  /** Validates a Group document: its name and member ids (each an active SCIM user of the organization). */
  async #groupInput(body: unknown): Promise<{ displayName: string; externalId: string | null; members: string[] }> {
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

  /** Every new member must be an active SCIM user of the organization (a member of it). */
  async #checkMembers(call: ScimCall, ids: string[], tx: StoreTransaction): Promise<void> {
    for (const id of ids) {
      const row = await this.#o.scim.scimUser(call.org.id, id, tx);
      if (row === undefined) throw bad(`member ${id} is not a User of this organization`);
      if (!row.active || (await this.#o.orgStore.member(call.org.id, id, tx)) === undefined) throw bad(`member ${id} is not active in this organization`);
    }
  }

  async #createGroup(call: ScimCall, body: unknown): Promise<ScimResponse> {
    const input = await this.#groupInput(body);
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
    const resource = await this.#groupResource(call, team, input.members, await this.#o.scim.scimGroup(team.id));
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
    const resource = await this.#groupResource(call, after, await this.#o.orgStore.teamMembers(team.id), await this.#o.scim.scimGroup(team.id));
    return { status: 200, body: resource, headers: { etag: (resource['meta'] as Doc)['version'] as string } };
  }

  async #replaceGroup(call: ScimCall, id: string, body: unknown, ifMatch: string | undefined): Promise<ScimResponse> {
    const team = await this.#team(call, id);
    const before = await this.#o.orgStore.teamMembers(team.id);
    this.#checkVersion(await this.#groupResource(call, team, before, await this.#o.scim.scimGroup(team.id)), ifMatch);
    return this.#writeGroup(call, team, before, await this.#groupInput(body));
  }

  async #patchGroup(call: ScimCall, id: string, body: unknown, ifMatch: string | undefined): Promise<ScimResponse> {
    const ops = patchOperations(body);
    const team = await this.#team(call, id);
    const before = await this.#o.orgStore.teamMembers(team.id);
    const current = await this.#groupResource(call, team, before, await this.#o.scim.scimGroup(team.id));
    this.#checkVersion(current, ifMatch);
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
    return this.#writeGroup(call, team, before, await this.#groupInput(doc));
  }

  async #deleteGroup(call: ScimCall, id: string, ifMatch: string | undefined): Promise<ScimResponse> {
    const team = await this.#team(call, id);
    const members = await this.#o.orgStore.teamMembers(team.id);
    this.#checkVersion(await this.#groupResource(call, team, members, await this.#o.scim.scimGroup(team.id)), ifMatch);
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

function listBody(resources: Doc[], total: number, start: number): Doc {
  return { schemas: [LIST], totalResults: total, startIndex: start, itemsPerPage: resources.length, Resources: resources };
}

const attr = (name: string, type: string, extra: Doc = {}): Doc => ({
  name, type, multiValued: false, required: false, caseExact: false, mutability: 'readWrite', returned: 'default', uniqueness: 'none', ...extra,
});

function schemas(base: string): Doc[] {
  const multi = (name: string, subs: Doc[]) => attr(name, 'complex', { multiValued: true, subAttributes: subs });
  const user: Doc = {
    schemas: ['urn:ietf:params:scim:schemas:core:2.0:Schema'],
    id: SCIM_USER,
    name: 'User',
    description: 'User Account',
    attributes: [
      attr('userName', 'string', { required: true, uniqueness: 'server' }),
      attr('name', 'complex', { subAttributes: ['formatted', 'familyName', 'givenName', 'middleName', 'honorificPrefix', 'honorificSuffix'].map((n) => attr(n, 'string')) }),
      ...['displayName', 'nickName', 'profileUrl', 'title', 'userType', 'preferredLanguage', 'locale', 'timezone'].map((n) => attr(n, 'string')),
      attr('active', 'boolean'),
      attr('password', 'string', { mutability: 'writeOnly', returned: 'never' }),
      multi('emails', [attr('value', 'string'), attr('display', 'string'), attr('type', 'string'), attr('primary', 'boolean')]),
      multi('phoneNumbers', [attr('value', 'string'), attr('type', 'string'), attr('primary', 'boolean')]),
      multi('groups', [attr('value', 'string', { mutability: 'readOnly' }), attr('$ref', 'reference', { mutability: 'readOnly' }), attr('display', 'string', { mutability: 'readOnly' })]),
    ],
    meta: { resourceType: 'Schema', location: `${base}/Schemas/${SCIM_USER}` },
  };
  const group: Doc = {
    schemas: ['urn:ietf:params:scim:schemas:core:2.0:Schema'],
    id: SCIM_GROUP,
    name: 'Group',
    description: 'Group (a team of the organization)',
    attributes: [
      attr('displayName', 'string', { required: true, uniqueness: 'server' }),
      multi('members', [attr('value', 'string', { mutability: 'immutable', caseExact: true }), attr('$ref', 'reference', { mutability: 'immutable' }), attr('type', 'string', { mutability: 'immutable', canonicalValues: ['User'] })]),
    ],
    meta: { resourceType: 'Schema', location: `${base}/Schemas/${SCIM_GROUP}` },
  };
  const enterprise: Doc = {
    schemas: ['urn:ietf:params:scim:schemas:core:2.0:Schema'],
    id: SCIM_ENTERPRISE,
    name: 'EnterpriseUser',
    description: 'Enterprise User',
    attributes: [
      ...['employeeNumber', 'costCenter', 'organization', 'division', 'department'].map((n) => attr(n, 'string')),
      attr('manager', 'complex', { subAttributes: [attr('value', 'string'), attr('$ref', 'reference'), attr('displayName', 'string', { mutability: 'readOnly' })] }),
    ],
    meta: { resourceType: 'Schema', location: `${base}/Schemas/${SCIM_ENTERPRISE}` },
  };
  return [user, group, enterprise];
}

function resourceTypes(base: string): Doc[] {
  const rt = 'urn:ietf:params:scim:schemas:core:2.0:ResourceType';
  return [
    { schemas: [rt], id: 'User', name: 'User', endpoint: '/Users', description: 'User Account', schema: SCIM_USER, schemaExtensions: [{ schema: SCIM_ENTERPRISE, required: false }], meta: { resourceType: 'ResourceType', location: `${base}/ResourceTypes/User` } },
    { schemas: [rt], id: 'Group', name: 'Group', endpoint: '/Groups', description: 'Group', schema: SCIM_GROUP, meta: { resourceType: 'ResourceType', location: `${base}/ResourceTypes/Group` } },
  ];
}
