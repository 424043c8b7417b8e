/**
 * REST and GraphQL calls over `fetch`, and the OAuth endpoints, which are
 * always called over HTTP whatever protocol a client speaks (spec, Client
 * library behavior 3).
 *
 * Every request carries `Origin` (the service's own origin: server-side
 * clients set it explicitly for the CSRF check, spec Authentication/CSRF),
 * the client's headers, its cookies and its bearer token; every response's
 * `Set-Cookie` goes into the client's jar.
 */
import { LatchkeyError } from '../engine/errors.ts';
import type { CookieJar } from './cookie_jar.ts';
import type { ResolvedOptions } from './options.ts';
import type { ClientOperation } from './types.ts';
import { graphqlDocument, graphqlName, type AnyOperation } from '../api/index.ts';
import { codeOfHttpStatus, transportError, wireError } from './wire_error.ts';

/** Each row's GraphQL document, built from the contract once per row. */
const DOCUMENTS = new WeakMap<AnyOperation, string>();
function documentOf(op: AnyOperation): string {
  let doc = DOCUMENTS.get(op);
  if (doc === undefined) DOCUMENTS.set(op, (doc = graphqlDocument(op)));
  return doc;
}

/** How long one call may take before it fails with `deadline_exceeded`. */
export const CALL_TIMEOUT_MS = 30_000;

/** The per-client state every call reads: cookies and the bearer token. */
export interface Session {
  readonly jar: CookieJar;
  accessToken: string | undefined;
}

function requestHeaders(options: ResolvedOptions, session: Session): Record<string, string> {
  const h: Record<string, string> = { origin: options.origin, accept: 'application/json', ...options.headers };
  if (session.accessToken !== undefined) h.authorization = `Bearer ${session.accessToken}`;
  const cookie = session.jar.header();
  if (cookie !== undefined) h.cookie = cookie;
  return h;
}

async function send(url: string, init: RequestInit, session: Session): Promise<{ status: number; json: unknown }> {
  let res: Response;
  let text: string;
  try {
    res = await fetch(url, { ...init, signal: AbortSignal.timeout(CALL_TIMEOUT_MS), redirect: 'manual' });
    text = await res.text();
  } catch (err) {
    throw transportError(url, err);
  }
  session.jar.store(res.headers.getSetCookie());
  let json: unknown;
  try {
    json = text === '' ? undefined : JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.status, json };
}

function envelopeError(status: number, json: unknown): LatchkeyError {
  const e = (json !== null && typeof json === 'object' ? json : {}) as Record<string, unknown>;
  return wireError(e.code, e.message, e.reason, e.details, codeOfHttpStatus(status));
}

/** Calls `op` over REST. */
export async function callRest(options: ResolvedOptions, session: Session, op: ClientOperation, input: object): Promise<unknown> {
  if (op.rest === undefined) throw new LatchkeyError('unimplemented', `${op.name} has no REST route`);
  const headers = requestHeaders(options, session);
  const init: RequestInit = { method: op.rest.method, headers };
  if (op.rest.method !== 'GET') {
    headers['content-type'] = 'application/json';
    init.body = JSON.stringify(input);
  }
  const r = await send(`${options.serviceUrl}${op.rest.path}`, init, session);
  if (r.status === 200 && r.json !== null && typeof r.json === 'object') return r.json;
  throw envelopeError(r.status === 200 ? 502 : r.status, r.json);
}

/** Calls `op` over GraphQL (`POST /graphql`, the row's generated document). */
export async function callGraphql(options: ResolvedOptions, session: Session, op: ClientOperation, input: object): Promise<unknown> {
  if (!op.protocols.includes('graphql')) throw new LatchkeyError('unimplemented', `${op.name} has no GraphQL field`);
  const headers = { ...requestHeaders(options, session), 'content-type': 'application/json' };
  const hasParams = Object.keys(op.input.fields).length > 0;
  const body = JSON.stringify({ query: documentOf(op), ...(hasParams ? { variables: { params: input } } : {}) });
  const r = await send(`${options.serviceUrl}/graphql`, { method: 'POST', headers, body }, session);
  const json = (r.json ?? {}) as { data?: Record<string, unknown> | null; errors?: { message?: unknown; extensions?: Record<string, unknown> }[] };
  const first = Array.isArray(json.errors) ? json.errors[0] : undefined;
  if (first) {
    const ext = first.extensions ?? {};
    // Errors the GraphQL layer raises itself (a malformed document or variable) carry no code.
    throw wireError(ext.code, first.message, ext.reason, ext.details, r.status === 200 ? 'invalid_argument' : codeOfHttpStatus(r.status));
  }
  const value = json.data?.[graphqlName(op)];
  if (r.status !== 200 || value === null || value === undefined) throw envelopeError(r.status === 200 ? 502 : r.status, r.json);
  return value;
}

/**
 * POSTs an OAuth form (`application/x-www-form-urlencoded`, RFC 6749 §4.1.3,
 * RFC 7009 §2.1) to `path` and returns the JSON answer. OAuth errors
 * (`{error, error_description}`) become a LatchkeyError with the code of the
 * HTTP status and the OAuth error as `reason`.
 */
export async function postOAuthForm(options: ResolvedOptions, session: Session, path: string, fields: Record<string, string | undefined>): Promise<Record<string, unknown>> {
  const form = new URLSearchParams();
  for (const [k, v] of Object.entries(fields)) if (v !== undefined) form.set(k, v);
  const headers = { ...requestHeaders(options, session), 'content-type': 'application/x-www-form-urlencoded' };
  const r = await send(`${options.serviceUrl}${path}`, { method: 'POST', headers, body: form.toString() }, session);
  const json = (r.json !== null && typeof r.json === 'object' ? r.json : {}) as Record<string, unknown>;
  if (r.status === 200) return json;
  if (typeof json.error === 'string') {
    const reason = /^[a-z][a-z0-9_]*$/.test(json.error) ? json.error : undefined;
    throw wireError(codeOfHttpStatus(r.status), json.error_description ?? json.error, reason);
  }
  throw envelopeError(r.status, r.json);
}
