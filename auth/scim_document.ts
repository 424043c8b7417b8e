/**
 * The documents of SCIM 2.0 (RFC 7643/7644) apart from what they provision: the message schemas, the
 * error with its `scimType`, ETags and `meta`, `attributes`/`excludedAttributes` projection, list paging
 * parameters, PATCH operations applied to a document, and the discovery documents (`Schemas`,
 * `ResourceTypes`). `auth/scim.ts` provisions users and teams with them.
 */
import { createHash } from 'node:crypto';
import { getCi, matches, parseFilter, parsePatchPath, ScimFilterError, type Filter, type PatchPath } from './scim_filter.ts';

export const SCIM_USER = 'urn:ietf:params:scim:schemas:core:2.0:User';
export const SCIM_GROUP = 'urn:ietf:params:scim:schemas:core:2.0:Group';
export const SCIM_ENTERPRISE = 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User';
export const LIST = 'urn:ietf:params:scim:api:messages:2.0:ListResponse';
export const PATCH_OP = 'urn:ietf:params:scim:api:messages:2.0:PatchOp';
export const ERROR = 'urn:ietf:params:scim:api:messages:2.0:Error';

/** Results a list answers at most (`count` above it is lowered, RFC 7644 §3.4.2.4). */
export const SCIM_MAX_RESULTS = 200;

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

export const bad = (detail: string, scimType = 'invalidValue') => new ScimError(400, detail, scimType);
export const notFound = (what: string) => new ScimError(404, `${what} not found`);

export type Doc = Record<string, unknown>;

export const USER_CASE_EXACT = new Set(['id', 'externalid']);
export const caseExact = (p: string) => USER_CASE_EXACT.has(p) || p === 'members.value' || p === 'groups.value';

/** A core attribute's name (RFC 7643 §2.1 ATTRNAME); an extension other than the enterprise one is refused. */
export const ATTRIBUTE_NAME = /^[A-Za-z][A-Za-z0-9_$-]{0,63}$/;

/** The attributes a client may not write (answered by the server). */
export const READ_ONLY = new Set(['id', 'meta', 'groups', 'schemas', 'password']);

export const iso = (seconds: number) => new Date(seconds * 1000).toISOString();

export function etagOf(resource: Doc): string {
  const { meta: _meta, ...rest } = resource;
  return `W/"${createHash('sha256').update(JSON.stringify(rest)).digest('hex').slice(0, 20)}"`;
}

export function withMeta(resource: Doc, type: 'User' | 'Group', created: number, updated: number, location: string): Doc {
  const out: Doc = { ...resource, meta: { resourceType: type, created: iso(created), lastModified: iso(updated), location } };
  (out['meta'] as Doc)['version'] = etagOf(out);
  return out;
}

/** A string-or-boolean from a directory (`"False"` from Entra ID) as a boolean. */
export function boolOf(v: unknown, what: string): boolean {
  if (typeof v === 'boolean') return v;
  if (typeof v === 'string' && /^(true|false)$/i.test(v)) return v.toLowerCase() === 'true';
  throw bad(`${what} must be a boolean`);
}

export function strOf(v: unknown, what: string, max: number): string | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'string') throw bad(`${what} must be a string`);
  if (v.length > max) throw bad(`${what} is at most ${max} characters`);
  return v;
}

/** Sets `name` in `obj`, replacing a key that differs only in case. */
export function setCi(obj: Doc, name: string, value: unknown): void {
  const lower = name.toLowerCase();
  for (const k of Object.keys(obj)) if (k.toLowerCase() === lower && k !== name) delete obj[k];
  obj[canonical(name)] = value;
}

export function deleteCi(obj: Doc, name: string): void {
  const lower = name.toLowerCase();
  for (const k of Object.keys(obj)) if (k.toLowerCase() === lower) delete obj[k];
}

export const CANONICAL = new Map(
  [
    'userName', 'name', 'displayName', 'nickName', 'profileUrl', 'title', 'userType', 'preferredLanguage', 'locale', 'timezone', 'active', 'emails', 'phoneNumbers',
    'addresses', 'externalId', 'members', 'givenName', 'familyName', 'middleName', 'formatted', 'honorificPrefix', 'honorificSuffix', 'value', 'type', 'primary', 'display',
    'employeeNumber', 'costCenter', 'organization', 'division', 'department', 'manager', SCIM_ENTERPRISE,
  ].map((n) => [n.toLowerCase(), n]),
);
export const canonical = (name: string) => CANONICAL.get(name.toLowerCase()) ?? name;

/** The JSON copy of a document (no shared references between the stored and the patched one). */
export const clone = <T>(v: T): T => JSON.parse(JSON.stringify(v)) as T;

export function pageOf(query: Readonly<Record<string, unknown>>): { start: number; count: number } {
  const num = (v: unknown, fallback: number): number => {
    if (v === undefined) return fallback;
    const n = Number(Array.isArray(v) ? v[0] : v);
    if (!Number.isFinite(n)) throw bad('startIndex and count are integers');
    return Math.trunc(n);
  };
  // RFC 7644 §3.4.2.4: a startIndex below 1 is 1; a negative count is 0.
  return { start: Math.max(1, num(query['startIndex'], 1)), count: Math.min(SCIM_MAX_RESULTS, Math.max(0, num(query['count'], 100))) };
}

export function listParam(query: Readonly<Record<string, unknown>>, name: string): string[] {
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
export function project(resource: Doc, attributes: string[], excluded: string[], coreSchema: string): Doc {
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

export function patchOperations(body: unknown): PatchOperation[] {
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
export function containerFor(doc: Doc, uri: string | undefined, coreSchema: string, create: boolean): Doc | undefined {
  if (uri === undefined || uri.toLowerCase() === coreSchema.toLowerCase()) return doc;
  if (uri.toLowerCase() !== SCIM_ENTERPRISE.toLowerCase()) throw bad(`unknown schema ${uri}`, 'invalidPath');
  let ext = getCi(doc, SCIM_ENTERPRISE) as Doc | undefined;
  if (ext === undefined && create) setCi(doc, SCIM_ENTERPRISE, (ext = {}));
  return ext;
}

/** The equality conditions of a value filter (`type eq "work"`), to make the value an `add` targets when none matches. */
export function equalities(f: Filter): Doc {
  if (f.kind === 'compare' && f.op === 'eq') return { [canonical(f.path.name)]: f.value };
  if (f.kind === 'and') return { ...equalities(f.left), ...equalities(f.right) };
  return {};
}

/** Applies one PATCH operation to a resource document (RFC 7644 §3.5.2), in place. */
export function applyPatch(doc: Doc, o: PatchOperation, coreSchema: string): void {
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

export function matchesValuePath(f: Filter, item: Doc, parent: string): boolean {
  return matches({ kind: 'valuePath', path: { name: parent }, filter: f }, { [parent]: [item] }, '', caseExact);
}

export function parseFilterParam(query: Readonly<Record<string, unknown>>): Filter | undefined {
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
export function equalityOf(f: Filter | undefined, name: string): string | undefined {
  if (f === undefined) return undefined;
  if (f.kind === 'compare' && f.op === 'eq' && f.path.sub === undefined && f.path.name.toLowerCase() === name.toLowerCase() && typeof f.value === 'string') return f.value;
  if (f.kind === 'and') return equalityOf(f.left, name) ?? equalityOf(f.right, name);
  return undefined;
}

export function listBody(resources: Doc[], total: number, start: number): Doc {
  return { schemas: [LIST], totalResults: total, startIndex: start, itemsPerPage: resources.length, Resources: resources };
}

export const attr = (name: string, type: string, extra: Doc = {}): Doc => ({
  name, type, multiValued: false, required: false, caseExact: false, mutability: 'readWrite', returned: 'default', uniqueness: 'none', ...extra,
});

export function schemas(base: string): Doc[] {
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

export function resourceTypes(base: string): Doc[] {
  const rt = 'urn:ietf:params:scim:schemas:core:2.0:ResourceType';
  return [
    { schemas: [rt], id: 'User', name: 'User', endpoint: '/Users', description: 'User Account', schema: SCIM_USER, schemaExtensions: [{ schema: SCIM_ENTERPRISE, required: false }], meta: { resourceType: 'ResourceType', location: `${base}/ResourceTypes/User` } },
    { schemas: [rt], id: 'Group', name: 'Group', endpoint: '/Groups', description: 'Group', schema: SCIM_GROUP, meta: { resourceType: 'ResourceType', location: `${base}/ResourceTypes/Group` } },
  ];
}
