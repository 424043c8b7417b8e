/**
 * The tokens of a session: access and id tokens, and a refresh token when
 * the session's scope has `offline_access` (its lineage recorded so a
 * replay is detected).
 */
import type { ResolvedAuthOptions } from './options.ts';
import { toPublicUser, type AuthResponse } from './public_user.ts';
import type { SessionManager, SessionRecord } from './sessions.ts';
import type { TokenService } from './tokens.ts';
import type { TokenScript } from './token_script.ts';
import { LatchkeyError } from '../engine/errors.ts';
import type { UserRecord } from './user_store_types.ts';

/** The `amr` value (RFC 8176) of a login method: `pwd` for a password login, else the method's own name. */
export function firstFactorAmr(loginMethod: string): string {
  return loginMethod === 'basic_auth' || loginMethod === 'mobile_basic_auth' ? 'pwd' : loginMethod;
}

/** The claims of a session's refresh token (issued or rotated): its session, scope, roles and client. */
export function refreshClaims(session: SessionRecord): Record<string, unknown> {
  return { sid: session.sid, scope: session.scope, roles: session.roles, ...(session.client_id === undefined ? {} : { client_id: session.client_id }) };
}

/**
 * Signs access + id (+ refresh with `offline_access`) tokens for a session and
 * records the refresh lineage. `nonce` (OpenID Connect Core §3.1.2.1, from an
 * authorization request) goes into the access and id tokens; `idTokenClaims`
 * adds claims to the id token only (e.g. `c_hash` in a hybrid response).
 */
export async function issueTokens(
  d: {
    tokens: TokenService;
    sessions: SessionManager;
    options: ResolvedAuthOptions;
    tokenScript?: TokenScript | undefined;
    /** Claims of the session's active organization (`org_id`, `org_roles`, `organizations`), in the access and the id token. */
    orgClaims?: Readonly<Record<string, unknown>> | undefined;
  },
  user: UserRecord,
  session: SessionRecord,
  message: string,
  refresh: { token: string } | 'new' = 'new',
  nonce?: string,
  idTokenClaims: Readonly<Record<string, unknown>> = {},
): Promise<AuthResponse> {
  const common = {
    sid: session.sid,
    roles: session.roles,
    scope: session.scope,
    login_method: session.login_method,
    allowed_roles: user.roles,
    ...(nonce === undefined ? {} : { nonce }),
    ...d.orgClaims,
    ...(session.client_id === undefined ? {} : { client_id: session.client_id }),
  };
  const pub = toPublicUser(user);
  // --custom-access-token-script: its claims go into the access and the id token, or no token is issued.
  let custom: Record<string, unknown> = {};
  if (d.tokenScript !== undefined) {
    custom = await d.tokenScript.claims(pub as unknown as Record<string, unknown>, { sub: user.id, token_type: 'access_token', ...common });
    if (d.options.jwt.roleClaim in custom) {
      throw new LatchkeyError('failed_precondition', 'the custom access token script failed (it returned a reserved claim); no token was issued', { reason: 'token_script_failed' });
    }
  }
  // RFC 9449 §6: a DPoP-bound session's access tokens name the key (`cnf.jkt`).
  const access = await d.tokens.sign('access_token', user.id, { ...custom, ...common, ...(session.jkt === undefined ? {} : { cnf: { jkt: session.jkt } }) }, undefined, session.resource === undefined ? [] : [session.resource]);
  const { id: _id, created_at, updated_at, app_data, revoked_timestamp: _r, ...profile } = pub;
  const id = await d.tokens.sign('id_token', user.id, {
    ...custom,
    ...profile,
    app_data,
    created_at,
    updated_at,
    [d.options.jwt.roleClaim]: session.roles,
    sid: session.sid,
    scope: session.scope,
    login_method: session.login_method,
    allowed_roles: user.roles,
    roles: session.roles,
    auth_time: session.auth_time,
    amr: session.amr ?? [firstFactorAmr(session.login_method)],
    acr: '0',
    at_hash: d.tokens.atHash(access.token),
    ...d.orgClaims,
    ...(nonce === undefined ? {} : { nonce }),
    ...(session.client_id === undefined ? {} : { azp: session.client_id }),
    ...idTokenClaims,
    // OpenID Connect Core §2: a registered client is an audience of its id token (azp names it as the party it was issued to).
  }, undefined, session.client_id === undefined ? [] : [session.client_id]);
  const response: AuthResponse = {
    message,
    access_token: access.token,
    id_token: id.token,
    expires_in: d.options.accessTokenTtl,
    user: pub,
  };
  if (refresh !== 'new') {
    response.refresh_token = refresh.token;
  } else if (session.scope.includes('offline_access')) {
    const next = await d.tokens.sign('refresh_token', user.id, refreshClaims(session));
    await d.sessions.setRefresh(session.sid, next.jti);
    response.refresh_token = next.token;
  }
  return response;
}
