/**
 * The AuthZEN Authorization API 1.0 information model on the wire (its
 * sections 5 to 8) and its mapping onto the FGA engine's questions, the same
 * mapping OpenFGA's AuthZEN endpoints use so that a policy enforcement point
 * can switch between the two:
 *
 * - `subject.type` + `subject.id` is the FGA user `type:id`;
 *   `resource.type` + `resource.id` the FGA object `type:id`;
 *   `action.name` the relation.
 * - `context` is the conditions' context; the entities' `properties` join it
 *   as `subject_<name>`, `resource_<name>` and `action_<name>` (an
 *   underscore, since a condition parameter cannot hold a dot), and a key of
 *   `context` wins over a property of the same name.
 *
 * Every refusal here is `invalid_argument` (HTTP 400) naming the field.
 */
import { createHash } from 'node:crypto';
import { LatchkeyError } from '../../engine/index.ts';

/** A JSON object as parsed. */
export type Json = Record<string, unknown>;

/** `invalid_argument` (400) with reason `invalid_authzen_request`. */
export const badRequest = (message: string, reason = 'invalid_authzen_request'): LatchkeyError => new LatchkeyError('invalid_argument', message, { reason });

/** Longest type, id and action name accepted (the engine's own bounds are tighter for types and relations). */
const MAX_ID = 512;

/** An AuthZEN Subject or Resource: `type` and (where the endpoint needs it) `id`, with optional `properties`. */
export interface Entity {
  type: string;
  id?: string;
  properties?: Json;
}

/** An AuthZEN Action: `name` with optional `properties`. */
export interface Action {
  name: string;
  properties?: Json;
}

export function isObject(v: unknown): v is Json {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

function nonEmpty(v: unknown, field: string): string {
  if (typeof v !== 'string' || v === '') throw badRequest(`${field} is required and must be a non-empty string`);
  if (v.length > MAX_ID) throw badRequest(`${field} must be at most ${MAX_ID} characters`);
  return v;
}

function properties(v: unknown, field: string): Json | undefined {
  if (v === undefined || v === null) return undefined;
  if (!isObject(v)) throw badRequest(`${field} must be a JSON object`);
  return v;
}

/** A Subject or Resource; `needId`: its `id` is required (else it is ignored, as the search endpoints say). */
export function entity(v: unknown, field: 'subject' | 'resource', needId: boolean): Entity {
  if (!isObject(v)) throw badRequest(`${field} is required and must be a JSON object`);
  const out: Entity = { type: nonEmpty(v['type'], `${field}.type`) };
  if (out.type.includes(':') || out.type.includes('#')) throw badRequest(`${field}.type must not contain ':' or '#'`);
  if (needId) out.id = nonEmpty(v['id'], `${field}.id`);
  const p = properties(v['properties'], `${field}.properties`);
  if (p !== undefined) out.properties = p;
  return out;
}

export function action(v: unknown): Action {
  if (!isObject(v)) throw badRequest('action is required and must be a JSON object');
  const out: Action = { name: nonEmpty(v['name'], 'action.name') };
  const p = properties(v['properties'], 'action.properties');
  if (p !== undefined) out.properties = p;
  return out;
}

export function requestContext(v: unknown): Json | undefined {
  if (v === undefined || v === null) return undefined;
  if (!isObject(v)) throw badRequest('context must be a JSON object');
  return v;
}

/** The FGA reference `type:id` of an entity with an id. */
export const fgaRef = (e: Entity): string => `${e.type}:${e.id as string}`;

/**
 * The conditions' context of a request: the entities' properties under
 * their prefixes, then `context` over them. `undefined` when all are empty.
 */
export function fgaContext(parts: { subject?: Entity | undefined; resource?: Entity | undefined; action?: Action | undefined; context?: Json | undefined }): Json | undefined {
  const out: Json = {};
  let any = false;
  const add = (prefix: string, p: Json | undefined): void => {
    if (p === undefined) return;
    for (const [k, v] of Object.entries(p)) {
      out[`${prefix}_${k}`] = v;
      any = true;
    }
  };
  add('subject', parts.subject?.properties);
  add('resource', parts.resource?.properties);
  add('action', parts.action?.properties);
  if (parts.context !== undefined) {
    for (const [k, v] of Object.entries(parts.context)) {
      out[k] = v;
      any = true;
    }
  }
  return any ? out : undefined;
}

/** An FGA reference `type:id` as an AuthZEN entity (the id may hold ':'; a wildcard's id is `*`). */
export function entityOf(ref: string): { type: string; id: string } {
  const i = ref.indexOf(':');
  return { type: ref.slice(0, i), id: ref.slice(i + 1) };
}

// ---------------------------------------------------------------- pages

/** Results per page when the request names no limit. */
export const DEFAULT_PAGE_LIMIT = 100;
/** The most results one page holds; a larger `limit` is served in pages of this size. */
export const MAX_PAGE_LIMIT = 1000;

/** A search request's `page`: its limit, and the token of the page before (or undefined for the first). */
export interface PageRequest {
  limit: number;
  token: string | undefined;
}

/**
 * The `page` object of a search (section 8.2): `limit` a non-negative
 * integer (0 or none: {@link DEFAULT_PAGE_LIMIT}; above
 * {@link MAX_PAGE_LIMIT}: that), `token` the `next_token` of the page before.
 * `next_token` is accepted in its place, as drafts before the final text
 * named the request's field.
 */
export function pageRequest(v: unknown): PageRequest {
  if (v === undefined || v === null) return { limit: DEFAULT_PAGE_LIMIT, token: undefined };
  if (!isObject(v)) throw badRequest('page must be a JSON object');
  const l = v['limit'];
  let limit = DEFAULT_PAGE_LIMIT;
  if (l !== undefined && l !== null) {
    if (typeof l !== 'number' || !Number.isInteger(l) || l < 0) throw badRequest('page.limit must be a non-negative integer', 'invalid_page_limit');
    if (l > 0) limit = Math.min(l, MAX_PAGE_LIMIT);
  }
  const t = v['token'] ?? v['next_token'];
  if (t !== undefined && t !== null && typeof t !== 'string') throw badRequest('page.token must be a string', 'invalid_page_token');
  return { limit, token: t === undefined || t === null || t === '' ? undefined : t };
}

/**
 * A search's page token: the query it belongs to (a digest, so a token is
 * never used for another question) and the position after the last result
 * returned. Opaque to callers; base64url of JSON.
 */
export interface PagePosition {
  /** Digest of the query. */
  q: string;
  /** The engine's cursor, when the engine pages the listing itself. */
  c?: string;
  /** The last result returned (a sort key), when the page was cut from a complete, sorted answer. */
  a?: string;
}

export function queryDigest(parts: unknown): string {
  return createHash('sha256').update(JSON.stringify(parts)).digest('base64url').slice(0, 22);
}

export function encodePosition(p: PagePosition): string {
  return Buffer.from(JSON.stringify(p), 'utf8').toString('base64url');
}

/** The position a token names, checked against the query's digest; `invalid_argument` (reason `invalid_page_token`) otherwise. */
export function decodePosition(token: string, digest: string): PagePosition {
  let p: unknown;
  try {
    p = JSON.parse(Buffer.from(token, 'base64url').toString('utf8'));
  } catch {
    p = undefined;
  }
  if (!isObject(p) || p['q'] !== digest || (p['c'] !== undefined && typeof p['c'] !== 'string') || (p['a'] !== undefined && typeof p['a'] !== 'string')) {
    throw badRequest('page.token is not a token of this search (it must be the next_token of the page before, with the same request)', 'invalid_page_token');
  }
  return p as unknown as PagePosition;
}
