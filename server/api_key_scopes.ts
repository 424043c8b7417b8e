/**
 * What an API key's scopes let it call. The vocabulary is the operations
 * table's own:
 *
 * - an operation's wire name (`check_permissions`, `fga_write_tuples`, …):
 *   that operation;
 * - `read`: every query operation (those that change nothing);
 * - `*`: every operation.
 *
 * A key without scopes may call every operation its principal may (as keys
 * did before scopes were enforced); a key with scopes only those they name
 * (public operations, which anyone may call, are not restricted),
 * and anything else is refused with `permission_denied` (reason
 * `insufficient_scope`) before the operation runs. The principal's own
 * authority still applies on top (roles, FGA checks, super-admin rows).
 * A key created with a key may not reach further than the key it was
 * created with.
 */
import { LatchkeyError } from '../engine/errors.ts';
import { OPERATIONS, type AnyOperation } from '../api/index.ts';
import type { Principal } from './context.ts';

/** Every operation. */
export const SCOPE_ALL = '*';
/** Every query operation. */
export const SCOPE_READ = 'read';

const OPERATION_KINDS: ReadonlyMap<string, AnyOperation['kind']> = new Map(OPERATIONS.map((op) => [op.name, op.kind]));

/** The scopes of an API key's principal, or undefined when the principal did not come from an API key (or its key has none). */
function keyScopes(principal: Principal): readonly string[] | undefined {
  const claims = principal.kind === 'user' || principal.kind === 'service_account' ? principal.claims : undefined;
  if (claims === undefined || claims['api_key_id'] === undefined) return undefined;
  const scope = claims['scope'];
  // A key's scopes are always a list; anything else is refused rather than read as "no restriction".
  if (!Array.isArray(scope)) return [];
  return scope.length === 0 ? undefined : (scope as string[]);
}

/** True when `scopes` let a key call operation `name` of `kind`. */
function allows(scopes: readonly string[], name: string, kind: AnyOperation['kind'] | undefined): boolean {
  return scopes.includes(SCOPE_ALL) || scopes.includes(name) || (kind === 'query' && scopes.includes(SCOPE_READ));
}

/** Refuses an operation the caller's API key has no scope for (`permission_denied`, reason `insufficient_scope`). */
export function refuseOutOfScope(op: Pick<AnyOperation, 'name' | 'kind' | 'auth'>, principal: Principal): void {
  // What anyone may call is not restricted (a key sent with it grants nothing there).
  if (op.auth === 'public') return;
  const scopes = keyScopes(principal);
  if (scopes === undefined || allows(scopes, op.name, op.kind)) return;
  const needs = op.kind === 'query' ? `${op.name}, ${SCOPE_READ} or ${SCOPE_ALL}` : `${op.name} or ${SCOPE_ALL}`;
  throw new LatchkeyError('permission_denied', `this API key's scopes (${scopes.join(' ')}) do not allow ${op.name}; it needs the scope ${needs}`, { reason: 'insufficient_scope' });
}

/**
 * Checks the scopes asked for a new key: each must be `*`, `read` or an
 * operation's name (`invalid_argument`, reason `invalid_api_key`). When the
 * caller is itself an API key with scopes, the new key may reach no further:
 * no scopes means the caller's, and each scope asked must be within them
 * (`permission_denied`, reason `insufficient_scope`). Answers the scopes to store.
 */
export function apiKeyScopesFor(requested: readonly string[] | undefined, caller: Principal | undefined): string[] {
  const asked = [...new Set(requested ?? [])];
  for (const s of asked) {
    if (s !== SCOPE_ALL && s !== SCOPE_READ && !OPERATION_KINDS.has(s)) {
      throw new LatchkeyError('invalid_argument', `scope ${JSON.stringify(s)} is not an operation name, ${SCOPE_READ} or ${SCOPE_ALL}`, { reason: 'invalid_api_key' });
    }
  }
  const limit = caller === undefined ? undefined : keyScopes(caller);
  if (limit === undefined) return asked;
  if (asked.length === 0) return [...limit];
  const wider = asked.find((s) =>
    s === SCOPE_ALL ? !limit.includes(SCOPE_ALL) : s === SCOPE_READ ? !limit.includes(SCOPE_ALL) && !limit.includes(SCOPE_READ) : !allows(limit, s, OPERATION_KINDS.get(s)),
  );
  if (wider !== undefined) throw new LatchkeyError('permission_denied', `a key created with an API key may not have the scope ${wider}, which the calling key's scopes (${limit.join(' ')}) do not cover`, { reason: 'insufficient_scope' });
  return asked;
}
