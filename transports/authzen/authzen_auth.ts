/**
 * Who may query the AuthZEN endpoints (transports/authzen/authzen_api.ts):
 * policy enforcement points, which send a bearer credential and no cookie.
 *
 * - One of the OpenFGA API's preshared keys (`--openfga-preshared-keys`):
 *   every path, every store. Compared as SHA-256 digests in constant time,
 *   every key compared.
 * - For the identity server's own store only: an access token this server
 *   issued to its OAuth client by `client_credentials` (a service
 *   authenticating as itself), or the admin-secret header (a super-admin).
 *   Another store's paths take the OpenFGA API's keys only, as its other
 *   endpoints do.
 * - A valid token of a user is `forbidden` (403): a user asks about itself
 *   through `check_permissions`, never about others. Anything else is
 *   `unauthenticated` (401), one answer whatever the cause.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { LatchkeyError } from '../../engine/index.ts';
import { bearerToken, resolvePrincipal, type Services } from '../../server/index.ts';
import type { AuthzenCaller } from './authzen_api.ts';

const digest = (s: string): Buffer => createHash('sha256').update(s, 'utf8').digest();

/** The `authenticate` option of the AuthZEN API over the server's services. */
export function authzenAuthenticator(services: Pick<Services, 'auth' | 'authenticators'>, presharedKeys: readonly string[]): (req: IncomingMessage, store: string | undefined) => Promise<AuthzenCaller> {
  const keys = presharedKeys.map(digest);
  const isKey = (token: string): boolean => {
    const given = digest(token);
    let ok = false;
    for (const k of keys) ok = timingSafeEqual(k, given) || ok;
    return ok;
  };
  return async (req, store) => {
    const header = req.headers.authorization;
    const token = typeof header === 'string' ? bearerToken(header) : undefined;
    if (token !== undefined && keys.length > 0 && isKey(token)) return 'allowed';
    if (store !== undefined) return 'unauthenticated';
    const secret = req.headers['x-service-admin-secret'];
    if (typeof secret === 'string' && secret !== '') {
      try {
        const p = await resolvePrincipal(services.authenticators, 'super_admin', { adminSecret: secret, cookies: {} }, { requestId: '', clientIp: '', userAgent: '' });
        return p.kind === 'super_admin' ? 'allowed' : 'unauthenticated';
      } catch {
        return 'unauthenticated';
      }
    }
    const auth = services.auth;
    if (token === undefined || auth === undefined) return 'unauthenticated';
    let claims: Record<string, unknown>;
    try {
      claims = await auth.tokens.verify(token, 'access_token');
    } catch (err) {
      if (err instanceof LatchkeyError && err.code === 'unauthenticated') return 'unauthenticated';
      throw err;
    }
    if (claims['gty'] === 'client_credentials' && claims['sub'] === auth.options.clientId) return 'allowed';
    return 'forbidden';
  };
}
