/**
 * Page tokens of the paged listings (Engine.listObjectsPage,
 * Engine.listUsersPage): the revision and model version a walk is pinned to,
 * a digest of its question, and the last result returned. Opaque to callers
 * (base64url of JSON); a token is valid only for the question it was made
 * for (`invalid_argument`, reason `invalid_continuation_token`).
 */
import { createHash } from 'node:crypto';
import { LatchkeyError } from './errors.ts';

/** What a listing page token holds. */
export interface ListPosition {
  /** The store revision every page of the walk reads at. */
  r: number;
  /** The model version every page of the walk uses. */
  m: string;
  /** Digest of the question. */
  q: string;
  /** The last result returned (or, after a candidate scan, the last object examined). */
  a: string;
  /** True when the pages come from the whole walk (the candidate scan gave way to it; see engine/list_scan.ts). */
  w?: boolean;
}

/**
 * How long one page of a listing may take on the server's listing surfaces
 * (`list_permissions`, `fga_list_users`, the OpenFGA API's paged
 * ListObjects and ListUsers, the AuthZEN searches): past it a page answers
 * what it has, says so, and carries the token that continues it.
 */
export const LISTING_DEADLINE_MS = 10_000;

/** Results per listing page when the caller names no size; and the most a page may hold. */
export const DEFAULT_LIST_PAGE_SIZE = 100;
export const MAX_LIST_PAGE_SIZE = 1000;

const invalidToken = (): LatchkeyError =>
  new LatchkeyError('invalid_argument', 'invalid continuation token: it must be the continuation_token of the page before, for the same question', {
    reason: 'invalid_continuation_token',
    details: { openfga_code: 2007 },
  });

/** A digest of a listing's question (its kind and every field that changes the answer). */
export function questionDigest(parts: unknown): string {
  return createHash('sha256').update(JSON.stringify(parts)).digest('base64url').slice(0, 22);
}

export function encodeListPosition(p: ListPosition): string {
  return Buffer.from(JSON.stringify(p.w === true ? [p.r, p.m, p.q, p.a, 1] : [p.r, p.m, p.q, p.a]), 'utf8').toString('base64url');
}

/** The position a token names, for the question of `digest`. */
export function decodeListPosition(token: unknown, digest: string): ListPosition {
  if (typeof token !== 'string' || token.length > 4096) throw invalidToken();
  let v: unknown;
  try {
    v = JSON.parse(Buffer.from(token, 'base64url').toString('utf8'));
  } catch {
    throw invalidToken();
  }
  if (!Array.isArray(v) || (v.length !== 4 && v.length !== 5)) throw invalidToken();
  const [r, m, q, a, w] = v as unknown[];
  if (typeof r !== 'number' || !Number.isSafeInteger(r) || r < 0 || typeof m !== 'string' || typeof a !== 'string' || q !== digest) throw invalidToken();
  if (v.length === 5 && w !== 1) throw invalidToken();
  return v.length === 5 ? { r, m, q, a, w: true } : { r, m, q, a };
}

/** A listing page size: 1 to {@link MAX_LIST_PAGE_SIZE}, {@link DEFAULT_LIST_PAGE_SIZE} when omitted or 0. */
export function listPageSize(v: unknown): number {
  if (v === undefined || v === null || v === 0) return DEFAULT_LIST_PAGE_SIZE;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 1 || v > MAX_LIST_PAGE_SIZE) {
    throw new LatchkeyError('invalid_argument', `page size must be an integer from 1 to ${MAX_LIST_PAGE_SIZE}`, { reason: 'invalid_page_size', details: { openfga_code: 2039 } });
  }
  return v;
}

/** Code-unit order, the order of every listing. */
export const byCodeUnits = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/** The index of the first of `sorted` after `after`. */
export function indexAfter(sorted: readonly string[], after: string): number {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (byCodeUnits(sorted[mid]!, after) <= 0) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
