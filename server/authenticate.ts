/**
 * Turns credentials into a principal, in one place for every transport.
 *
 * The chain of {@link Authenticator}s lives on `services.authenticators`; the
 * first one that recognises the credentials wins. The built-in first link
 * checks the `x-service-admin-secret` header; the identity and admin services
 * add theirs (bearer token, session cookie, admin cookie) in `services.ts`.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { LatchkeyError } from '../engine/errors.ts';
import { ANONYMOUS, type AuthenticationInfo, type Authenticator, type Credentials, type Principal } from './context.ts';
import type { OperationAuth } from '../api/index.ts';

export type { AuthenticationInfo, Authenticator };


/** The one message of every authentication failure, whatever the cause (no enumeration). */
export const UNAUTHORIZED_MESSAGE = 'unauthorized';

export function unauthenticated(): LatchkeyError {
  return new LatchkeyError('unauthenticated', UNAUTHORIZED_MESSAGE, { reason: 'unauthenticated' });
}

const digest = (s: string): Buffer => createHash('sha256').update(s, 'utf8').digest();

/**
 * The admin-secret header check. Compares SHA-256 digests in constant time so
 * neither the secret's content nor its length leaks through timing. When
 * `disabled` (`--disable-admin-header-auth`), the header is ignored.
 */
export function adminSecretAuthenticator(adminSecret: string, disabled: boolean): Authenticator {
  const expected = digest(adminSecret);
  const superAdmin: Principal = Object.freeze({ kind: 'super_admin', via: 'admin_secret_header' });
  return (credentials) => {
    if (disabled || credentials.adminSecret === undefined) return undefined;
    if (timingSafeEqual(digest(credentials.adminSecret), expected)) return superAdmin;
    throw unauthenticated();
  };
}

/** True when the request carries any credential (bearer token, cookie or admin secret). */
export function hasCredentials(c: Credentials): boolean {
  if (c.bearer !== undefined || c.adminSecret !== undefined || c.apiKey !== undefined) return true;
  for (const _ in c.cookies) return true;
  return false;
}

/**
 * Resolves the principal for a call of a row with the given `auth`:
 * - `public`: credentials are optional; invalid ones are ignored (anonymous).
 * - `user`: a user or a super-admin, else `unauthenticated`.
 * - `super_admin`: a super-admin, else `unauthenticated`.
 *
 * Answers without a promise when every link asked answered without one (a
 * refusal is then thrown); otherwise with a promise from the first link that
 * had to wait (a refusal is then a rejection). Either way the links are asked
 * in order and the first principal wins.
 */
export function resolvePrincipal(
  chain: readonly Authenticator[],
  auth: OperationAuth,
  credentials: Credentials,
  info: AuthenticationInfo,
): Principal | Promise<Principal> {
  if (!hasCredentials(credentials)) return admit(auth, ANONYMOUS);
  for (let i = 0; i < chain.length; i++) {
    let p: Principal | undefined | Promise<Principal | undefined>;
    try {
      p = (chain[i] as Authenticator)(credentials, info);
    } catch (err) {
      if (auth !== 'public') throw err;
      return admit(auth, ANONYMOUS);
    }
    if (p instanceof Promise) return resolveRest(chain, i, p, auth, credentials, info);
    if (p) return admit(auth, p);
  }
  return admit(auth, ANONYMOUS);
}

/** {@link resolvePrincipal} from link `i`, whose answer is the promise `pending`, on. */
async function resolveRest(
  chain: readonly Authenticator[],
  i: number,
  pending: Promise<Principal | undefined>,
  auth: OperationAuth,
  credentials: Credentials,
  info: AuthenticationInfo,
): Promise<Principal> {
  let principal: Principal = ANONYMOUS;
  try {
    let p = await pending;
    while (!p && ++i < chain.length) p = await (chain[i] as Authenticator)(credentials, info);
    if (p) principal = p;
  } catch (err) {
    if (auth !== 'public') throw err;
  }
  return admit(auth, principal);
}

/** The principal of a call of a row with the given `auth`, or the `unauthenticated` refusal. */
function admit(auth: OperationAuth, principal: Principal): Principal {
  if (auth === 'user' && principal.kind === 'anonymous') throw unauthenticated();
  if (auth === 'super_admin' && principal.kind !== 'super_admin') throw unauthenticated();
  return principal;
}
