/**
 * Resource indicators (RFC 8707) on the code, refresh and client_credentials
 * grants: the `resource` parameter names the one resource server a token is
 * for. It must be an absolute URI without a fragment (§2) and one of the
 * client's registered `audiences`; the access token then names it in `aud`
 * after this server's own audience. Anything else is `invalid_target`. One
 * resource per request (a repeated parameter is `invalid_request`, as every
 * repeated parameter is).
 */
import { LatchkeyError } from '../engine/errors.ts';

/** `invalid_target` (RFC 8707 §2). */
export const invalidTarget = (message: string): LatchkeyError => new LatchkeyError('invalid_argument', message, { reason: 'invalid_target' });

/** True when `value` is an absolute URI without a fragment. */
function absoluteUri(value: string): boolean {
  if (value.includes('#')) return false;
  try {
    return new URL(value).protocol.length > 1;
  } catch {
    return false;
  }
}

/**
 * The `resource` of a request, checked against the audiences the client may
 * ask for; undefined when absent. Throws `invalid_target`.
 */
export function requestedResource(p: ReadonlyMap<string, string>, allowed: readonly string[]): string | undefined {
  const resource = p.get('resource');
  if (resource === undefined) return undefined;
  if (!absoluteUri(resource)) throw invalidTarget('resource must be an absolute URI without a fragment');
  if (!allowed.includes(resource)) throw invalidTarget(`resource ${resource} is not one of this client's audiences`);
  return resource;
}

/**
 * The resource of a token request of a grant made for `granted` (or for
 * none): the same resource, or none named. Throws `invalid_target`.
 */
export function grantedResource(p: ReadonlyMap<string, string>, granted: string | undefined): string | undefined {
  const resource = p.get('resource');
  if (resource === undefined || resource === granted) return granted;
  throw invalidTarget(granted === undefined ? `the grant was not made for resource ${resource}` : `the grant was made for resource ${granted}, not ${resource}`);
}
