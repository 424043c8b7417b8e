/**
 * Parsing of OpenFGA object and user strings, following OpenFGA's server
 * parsers (`pkg/tuple/tuple.go`) and API patterns:
 *
 * - object: `type:id`, exactly one `:`, no `#`, no whitespace, id not `*`;
 * - user: an object, a wildcard `type:*`, or a userset `type:id#relation`.
 */
import { LatchkeyError } from './errors.ts';

/** A parsed user string. */
export type ParsedUser =
  | { kind: 'object'; type: string; id: string }
  | { kind: 'wildcard'; type: string }
  | { kind: 'userset'; type: string; id: string; relation: string };

/** A parsed object string. */
export interface ParsedObject {
  type: string;
  id: string;
}

// Whitespace and control characters are never allowed in ids.
// eslint-disable-next-line no-control-regex
const BAD_CHARS = /[\s\u0000-\u001f\u007f]/u;
const TYPE_NAME = /^[^:#@*\s]{1,254}$/u;
const RELATION_NAME = /^[^:#@*\s]{1,50}$/u;

/** OpenFGA's numeric code for a validation error. */
export const FGA_VALIDATION_ERROR = 2000;

/** A short, always-safe rendering of any value for an error message. */
export function show(v: unknown): string {
  if (typeof v === 'string') return v.length > 100 ? `${v.slice(0, 100)}…` : v;
  if (v === null || v === undefined || typeof v === 'number' || typeof v === 'boolean' || typeof v === 'bigint') return String(v);
  return `<${Array.isArray(v) ? 'list' : typeof v}>`;
}

/** What {@link fgaError} needs besides the message. */
export interface FgaErrorOptions {
  /** Our snake_case reason. */
  reason: string;
  /** OpenFGA's numeric error code, kept in `details.openfga_code`. */
  code: number;
  /** Extra JSON-safe details. */
  details?: Record<string, unknown>;
}

/** An `invalid_argument` error carrying OpenFGA's numeric code in `details.openfga_code`. */
export function fgaError(message: string, options: FgaErrorOptions): LatchkeyError {
  return new LatchkeyError('invalid_argument', message, { reason: options.reason, details: { openfga_code: options.code, ...options.details } });
}

/** True for a valid relation name. */
export function isRelationName(s: string): boolean {
  return RELATION_NAME.test(s);
}

/** True for a valid type name. */
export function isTypeName(s: string): boolean {
  return TYPE_NAME.test(s);
}

/** Parses `type:id`, or returns `undefined` when malformed. */
export function tryParseObject(s: string): ParsedObject | undefined {
  if (typeof s !== 'string' || s.length > 512 || BAD_CHARS.test(s)) return undefined;
  const i = s.indexOf(':');
  if (i <= 0) return undefined;
  const type = s.slice(0, i);
  const id = s.slice(i + 1);
  if (id === '' || id.includes(':') || id.includes('#') || type.includes('#') || type.includes('@')) return undefined;
  return { type, id };
}

/** Parses a user string, or returns `undefined` when malformed. */
export function tryParseUser(s: string): ParsedUser | undefined {
  if (typeof s !== 'string' || s.length > 512 || BAD_CHARS.test(s)) return undefined;
  const hash = s.indexOf('#');
  if (hash >= 0) {
    const obj = tryParseObject(s.slice(0, hash));
    const relation = s.slice(hash + 1);
    if (obj === undefined || obj.id === '*' || !RELATION_NAME.test(relation)) return undefined;
    return { kind: 'userset', type: obj.type, id: obj.id, relation };
  }
  const obj = tryParseObject(s);
  if (obj === undefined) return undefined;
  if (obj.id === '*') return { kind: 'wildcard', type: obj.type };
  return { kind: 'object', type: obj.type, id: obj.id };
}

/** Formats a parsed user back to its string form. */
export function formatUser(u: ParsedUser): string {
  switch (u.kind) {
    case 'object':
      return `${u.type}:${u.id}`;
    case 'wildcard':
      return `${u.type}:*`;
    case 'userset':
      return `${u.type}:${u.id}#${u.relation}`;
  }
}

/** The type of a user or object string (the part before the first `:`). */
export function typeOf(s: string): string {
  const i = s.indexOf(':');
  return i < 0 ? s : s.slice(0, i);
}

/** Parses `type:id`; `invalid_argument` (OpenFGA 2000) when malformed. */
export function parseObject(s: unknown, what = 'object'): ParsedObject {
  const parsed = typeof s === 'string' ? tryParseObject(s) : undefined;
  if (parsed === undefined) {
    throw fgaError(`invalid ${what} '${show(s)}': expected 'type:id'`, { reason: 'invalid_object', code: FGA_VALIDATION_ERROR });
  }
  return parsed;
}

/** Parses a user string; `invalid_argument` (OpenFGA 2000) when malformed. */
export function parseUser(s: unknown): ParsedUser {
  const parsed = typeof s === 'string' ? tryParseUser(s) : undefined;
  if (parsed === undefined) {
    throw fgaError(`invalid user '${show(s)}': expected 'type:id', 'type:*' or 'type:id#relation'`, { reason: 'invalid_user', code: FGA_VALIDATION_ERROR });
  }
  return parsed;
}
