/**
 * The grants of the token endpoint (`/oauth/token`, see {@link OAuthServer.token}
 * in oauth_server.ts, which authenticates the client and picks the grant):
 * `authorization_code` (RFC 6749 §4.1.3, PKCE RFC 7636), `refresh_token`
 * (§6), `client_credentials` (§4.4) and token exchange (RFC 8693); and the
 * answer's shape.
 */
import { createHash } from 'node:crypto';
import { LatchkeyError } from '../engine/errors.ts';
import type { AuthService } from './auth_service.ts';
import { issueTokens } from './issue_tokens.ts';
import type { AuthorizationCodes } from './oauth_codes.ts';
import { activeUser, invalidClient, invalidGrant, invalidRequest, safeEqual } from './oauth_common.ts';
import { GRANT_CLIENT_CREDENTIALS, GRANT_TOKEN_EXCHANGE, serviceAccountSubject, type ResolvedClient } from './client_registry.ts';
import { MAX_ACTORS } from './permissions.ts';
import { checkGrantKey } from './dpop.ts';
import { grantedResource, requestedResource } from './resource_indicators.ts';
import type { SessionRecord } from './sessions.ts';
import type { UserRecord } from './user_store_types.ts';

/**
 * A security-relevant fact for the audit log: tokens issued, refreshed or
 * revoked, or a spent code or rotated refresh token presented again.
 */
export interface OAuthEvent {
  action: 'token.issued' | 'token.refreshed' | 'token.revoked' | 'token.code_reuse' | 'token.refresh_token_reuse' | 'user.logout' | 'device.approved' | 'device.denied' | 'client.registered' | 'client.updated' | 'client.deleted';
  userId?: string | undefined;
  metadata?: Record<string, unknown>;
}

/** Receives {@link OAuthEvent}s; must not throw (failures are the sink's to log). */
export type OAuthEventSink = (event: OAuthEvent) => Promise<void>;

/** The body of a successful `/oauth/token` answer. */
export interface OAuthTokenResponse {
  access_token: string;
  /** `DPoP` for a token bound to a DPoP key (RFC 9449 §5). */
  token_type: 'Bearer' | 'DPoP';
  expires_in: number;
  scope: string;
  id_token?: string;
  refresh_token?: string;
  /** RFC 8693 §2.2.1: the type of a token issued by token exchange. */
  issued_token_type?: string;
}

/** RFC 8693 §3: the token type identifier of an access token (the only type exchanged and issued here). */
export const ACCESS_TOKEN_TYPE = 'urn:ietf:params:oauth:token-type:access_token';
export const JWT_TOKEN_TYPE = 'urn:ietf:params:oauth:token-type:jwt';

/** What the grants use of the provider. */
export interface GrantDeps {
  auth: AuthService;
  codes: AuthorizationCodes;
  /** `--enable-pkce-plain`: codes issued with `code_challenge_method=plain` may be redeemed. */
  allowPkcePlain: boolean;
}

/** PKCE code challenges and verifiers (RFC 7636 §4.1). */
export const PKCE_VALUE = /^[A-Za-z0-9._~-]{43,128}$/;

/**
 * A grant's own session, made from the one that authorized it: it says how its user authenticated (login
 * method, auth_time, and the amr of a second factor). `jkt`: the DPoP key the grant's tokens are bound to
 * (RFC 9449 §5); `resource`: the RFC 8707 target.
 */
export function childSession(auth: AuthService, user: UserRecord, from: Pick<SessionRecord, 'login_method' | 'auth_time' | 'amr'>, roles: string[], scope: string[], clientId?: string, jkt?: string, resource?: string): Promise<SessionRecord> {
  const amr = from.amr === undefined ? {} : { amr: from.amr };
  const client = clientId === undefined ? {} : { client_id: clientId };
  const bound = jkt === undefined ? {} : { jkt };
  const target = resource === undefined ? {} : { resource };
  return auth.sessions.create({ user_id: user.id, roles, scope, login_method: from.login_method, auth_time: from.auth_time, ...amr, ...client, ...bound, ...target }).then((c) => c.session);
}

/**
 * Token exchange (RFC 8693). The subject token is a live user access token
 * of this server (its session alive, its user active), possibly itself
 * exchanged. Without `actor_token` it is impersonation: a token for the
 * same user, its actor chain unchanged. With `actor_token` it is
 * delegation: the actor token must be the requesting service account's own
 * client_credentials token, and the new token's `act` names it, with the
 * subject token's own `act` nested inside (§4.1), at most five deep. Scope
 * and audience are only narrowed: the scope within the subject token's, the
 * audience (`audience` or `resource`, RFC 8707) within the subject token's
 * extra audiences, or, for a token that has none, within the client's
 * registered audiences (`invalid_target` otherwise). The new token never
 * outlives the subject token, and dies with its session. A check made with
 * a delegated token is allowed only when the user and every actor are
 * (see `Permissions`).
 */
export async function exchangeGrant(d: GrantDeps, p: Map<string, string>, client: ResolvedClient, withSecret: boolean, onEvent: OAuthEventSink): Promise<OAuthTokenResponse> {
  if (!withSecret) throw invalidClient('token exchange requires client authentication');
  const subjectToken = p.get('subject_token');
  if (subjectToken === undefined) throw invalidRequest('subject_token is required');
  const subjectType = p.get('subject_token_type');
  if (subjectType !== ACCESS_TOKEN_TYPE && subjectType !== JWT_TOKEN_TYPE) throw invalidRequest(`subject_token_type must be ${ACCESS_TOKEN_TYPE}`);
  const requestedType = p.get('requested_token_type');
  if (requestedType !== undefined && requestedType !== ACCESS_TOKEN_TYPE) throw invalidRequest(`requested_token_type must be ${ACCESS_TOKEN_TYPE}`);
  let claims: Record<string, unknown>;
  try {
    claims = await d.auth.tokens.verify(subjectToken, 'access_token');
  } catch (err) {
    throw invalidGrant('subject_token is not a valid access token', err);
  }
  const sid = claims['sid'];
  const session = typeof sid === 'string' ? await d.auth.sessions.get(sid) : undefined;
  if (session === undefined || session.user_id !== claims['sub']) throw invalidGrant('subject_token is not a live user access token');
  const user = await activeUser(d.auth, session.user_id);
  if (user === undefined) throw invalidGrant('subject_token is not a live user access token');

  let act = claims['act'] as Record<string, unknown> | undefined;
  const actorToken = p.get('actor_token');
  const actorType = p.get('actor_token_type');
  if (actorToken === undefined && actorType !== undefined) throw invalidRequest('actor_token_type without actor_token');
  if (actorToken !== undefined) {
    if (actorType !== ACCESS_TOKEN_TYPE && actorType !== JWT_TOKEN_TYPE) throw invalidRequest(`actor_token_type must be ${ACCESS_TOKEN_TYPE}`);
    let actor: Record<string, unknown>;
    try {
      actor = await d.auth.tokens.verify(actorToken, 'access_token');
    } catch (err) {
      throw invalidGrant('actor_token is not a valid access token', err);
    }
    if (client.fromFlags || client.record.kind !== 'service_account' || actor['gty'] !== GRANT_CLIENT_CREDENTIALS || actor['sub'] !== client.record.client_id) {
      throw invalidGrant("actor_token must be the requesting service account's own client_credentials token");
    }
    act = { sub: client.record.client_id, fga_subject: serviceAccountSubject(client.record.client_id), ...(act === undefined ? {} : { act }) };
    let depth = 0;
    for (let a: unknown = act; a !== undefined && a !== null; a = (a as Record<string, unknown>)['act']) depth++;
    if (depth > MAX_ACTORS) throw invalidRequest(`a delegation chain names at most ${MAX_ACTORS} actors`);
  }

  const subjectScope = Array.isArray(claims['scope']) ? claims['scope'].map(String) : [];
  const requested = [...new Set((p.get('scope') ?? '').split(' ').filter(Boolean))];
  const wider = requested.find((s) => !subjectScope.includes(s));
  if (wider !== undefined) throw new LatchkeyError('invalid_argument', `scope ${wider} is not in the subject token's scope`, { reason: 'invalid_scope' });
  const scope = requested.length > 0 ? requested : subjectScope;

  const audiences = Array.isArray(claims['aud']) ? claims['aud'].map(String) : [String(claims['aud'])];
  const subjectAudiences = audiences.filter((a) => a !== d.auth.options.clientId);
  const audienceParam = p.get('audience');
  const resource = p.get('resource');
  if (audienceParam !== undefined && resource !== undefined && audienceParam !== resource) throw invalidRequest('audience and resource name different targets');
  const target = audienceParam ?? resource;
  let audience = subjectAudiences;
  if (target !== undefined) {
    const allowed = subjectAudiences.length > 0 ? subjectAudiences : client.record.audiences;
    if (!allowed.includes(target)) throw new LatchkeyError('invalid_argument', `audience ${target} is not allowed`, { reason: 'invalid_target' });
    audience = [target];
  }

  const now = Math.floor(d.auth.options.now() / 1000);
  const remaining = Number(claims['exp']) - now;
  const ttl = Math.max(1, Math.min(remaining, client.record.access_token_ttl ?? d.auth.options.accessTokenTtl));
  const access = await d.auth.tokens.sign(
    'access_token',
    user.id,
    {
      sid: session.sid,
      roles: claims['roles'],
      scope,
      login_method: claims['login_method'],
      client_id: client.record.client_id,
      gty: GRANT_TOKEN_EXCHANGE,
      ...(act === undefined ? {} : { act }),
    },
    ttl,
    audience,
  );
  await onEvent({ action: 'token.issued', userId: user.id, metadata: { grant_type: GRANT_TOKEN_EXCHANGE, delegation: actorToken !== undefined, ...(act === undefined ? {} : { act }) } });
  return { access_token: access.token, issued_token_type: ACCESS_TOKEN_TYPE, token_type: 'Bearer', expires_in: ttl, scope: scope.join(' ') };
}

export async function codeGrant(d: GrantDeps, p: Map<string, string>, client: ResolvedClient, withSecret: boolean, onEvent: OAuthEventSink, jkt?: string): Promise<OAuthTokenResponse> {
  const code = p.get('code');
  if (code === undefined) throw invalidRequest('code is required');
  const redirectUri = p.get('redirect_uri');
  if (redirectUri === undefined) throw invalidRequest('redirect_uri is required');
  const r = await d.codes.redeem(code);
  if (r.kind === 'replayed') {
    await onEvent({ action: 'token.code_reuse' });
    throw invalidGrant('authorization code was already used; the tokens issued from it are revoked');
  }
  if (r.kind === 'unknown') throw invalidGrant('invalid authorization code');
  const g = r.grant;
  if (g.expires_ms <= d.auth.options.now()) throw invalidGrant('authorization code expired');
  if (!safeEqual(g.client_id, client.record.client_id)) throw invalidGrant('authorization code was issued to another client');
  // RFC 6749 §4.1.3: the same redirect_uri as in the authorization request, compared exactly.
  if (g.redirect_uri !== redirectUri) throw invalidGrant('redirect_uri does not match the authorization request');
  const verifier = p.get('code_verifier');
  if (g.code_challenge !== undefined) {
    // A plain code issued while --enable-pkce-plain was on is not redeemed once it is off.
    if (g.code_challenge_method !== 'S256' && !d.allowPkcePlain) throw invalidGrant('authorization code was issued with code_challenge_method plain, which is not allowed');
    if (verifier === undefined) throw invalidGrant('code_verifier is required');
    if (!PKCE_VALUE.test(verifier)) throw invalidGrant('code_verifier must be 43 to 128 characters of [A-Za-z0-9-._~]');
    const derived = g.code_challenge_method === 'S256' ? createHash('sha256').update(verifier, 'ascii').digest('base64url') : verifier;
    if (!safeEqual(derived, g.code_challenge)) throw invalidGrant('code_verifier does not match the code_challenge');
  } else {
    if (verifier !== undefined) throw invalidGrant('code_verifier given, but the authorization request had no code_challenge');
    // Without PKCE nothing but the client secret binds the code to the client that asked for it.
    if (!withSecret) throw invalidClient('client_secret is required for a code issued without code_challenge');
  }
  checkGrantKey(g.dpop_jkt, jkt, true);
  // RFC 8707 §2.2: the token request may name the resource the authorization request named, and no other.
  const resource = grantedResource(p, g.resource);
  if ((await d.auth.sessions.get(g.sid)) === undefined) throw invalidGrant('the session that authorized this code has ended');
  const user = await activeUser(d.auth, g.user_id);
  if (user === undefined) throw invalidGrant('invalid authorization code');
  const roles = g.roles.filter((role) => user.roles.includes(role));
  const session = await childSession(d.auth, user, g, roles, g.scope, client.fromFlags ? undefined : client.record.client_id, jkt, resource);
  if (!(await d.codes.bindSession(r.hash, session.sid))) {
    await d.auth.sessions.end(session.sid);
    await onEvent({ action: 'token.code_reuse', userId: user.id });
    throw invalidGrant('authorization code was already used; the tokens issued from it are revoked');
  }
  const out = await issueTokens(d.auth, user, session, '', 'new', g.nonce);
  await onEvent({ action: 'token.issued', userId: user.id, metadata: { grant_type: 'authorization_code', dpop: jkt !== undefined } });
  return tokenResponse(out, g.scope, jkt);
}

/**
 * `client_credentials` (RFC 6749 §4.4): the client, authenticated with its
 * secret, gets an access token about itself (`sub` = client id, `gty`
 * `client_credentials`) for resource servers that verify it by the JWKS or
 * by introspection. It has no session, so it opens none of the user
 * operations, and no refresh or id token (§4.4.3); it lives
 * `--access-token-expires-in` and cannot be revoked before. No scope is
 * defined for a client, so a requested one is `invalid_scope`.
 */
export async function clientGrant(d: GrantDeps, p: Map<string, string>, client: ResolvedClient, withSecret: boolean, onEvent: OAuthEventSink, jkt?: string): Promise<OAuthTokenResponse> {
  if (!withSecret) throw invalidClient('client_credentials requires the client secret');
  if (!client.fromFlags) return serviceAccountGrant(d, p, client.record, onEvent, jkt);
  if (jkt !== undefined) throw invalidRequest('DPoP-bound tokens are issued to registered service accounts only');
  requestedResource(p, []);
  const requested = (p.get('scope') ?? '').split(' ').filter(Boolean);
  if (requested.length > 0) throw new LatchkeyError('invalid_argument', 'client_credentials grants no scope', { reason: 'invalid_scope' });
  const clientId = d.auth.options.clientId;
  const access = await d.auth.tokens.sign('access_token', clientId, { client_id: clientId, gty: 'client_credentials', scope: [] });
  await onEvent({ action: 'token.issued', metadata: { grant_type: 'client_credentials' } });
  return { access_token: access.token, token_type: 'Bearer', expires_in: d.auth.options.accessTokenTtl, scope: '' };
}

/**
 * `client_credentials` of a registered service account: an access token
 * whose subject is the service account (`sub` its client id, FGA subject
 * `service_account:<client_id>`), with the roles it holds and the scopes
 * it asked for among those it was given (all of them when it asks for
 * none), living the client's `access_token_ttl` or the server's default.
 */
async function serviceAccountGrant(d: GrantDeps, p: Map<string, string>, r: ResolvedClient['record'], onEvent: OAuthEventSink, jkt?: string): Promise<OAuthTokenResponse> {
  const requested = [...new Set((p.get('scope') ?? '').split(' ').filter(Boolean))];
  const wider = requested.find((s) => !r.scopes.includes(s));
  if (wider !== undefined) throw new LatchkeyError('invalid_argument', `scope ${wider} is not allowed for this client`, { reason: 'invalid_scope' });
  const scope = requested.length > 0 ? requested : r.scopes;
  const resource = requestedResource(p, r.audiences);
  const ttl = r.access_token_ttl ?? d.auth.options.accessTokenTtl;
  const access = await d.auth.tokens.sign(
    'access_token',
    r.client_id,
    { client_id: r.client_id, gty: GRANT_CLIENT_CREDENTIALS, scope, roles: r.roles, fga_subject: serviceAccountSubject(r.client_id), ...(jkt === undefined ? {} : { cnf: { jkt } }) },
    ttl,
    resource === undefined ? [] : [resource],
  );
  await onEvent({ action: 'token.issued', metadata: { grant_type: GRANT_CLIENT_CREDENTIALS, subject: serviceAccountSubject(r.client_id), dpop: jkt !== undefined } });
  return { access_token: access.token, token_type: jkt === undefined ? 'Bearer' : 'DPoP', expires_in: ttl, scope: scope.join(' ') };
}

/**
 * `refresh_token` (RFC 6749 §6). DPoP (RFC 9449 §5): a grant whose tokens
 * are bound needs a proof; a public client's by the same key (its refresh
 * token is bound), a confidential client's by any key (its refresh token
 * is bound to its authentication), which the new tokens are then bound
 * to. A proof on an unbound grant binds it from then on.
 */
export async function refreshGrant(d: GrantDeps, p: Map<string, string>, client: ResolvedClient, onEvent: OAuthEventSink, jkt: string | undefined, publicClient: boolean): Promise<OAuthTokenResponse> {
  const refreshToken = p.get('refresh_token');
  if (refreshToken === undefined) throw invalidRequest('refresh_token is required');
  let scope: string[];
  let userId: string;
  let sid: unknown;
  try {
    const claims = await d.auth.tokens.verify(refreshToken, 'refresh_token');
    scope = Array.isArray(claims['scope']) ? claims['scope'].map(String) : [];
    userId = claims.sub;
    sid = claims['sid'];
    // A refresh token issued to a registered client is redeemed by that client only.
    const owner = typeof claims['client_id'] === 'string' ? claims['client_id'] : d.auth.options.clientId;
    if (!safeEqual(owner, client.record.client_id)) throw invalidGrant('the refresh token was issued to another client');
  } catch (err) {
    throw invalidGrant('invalid refresh token', err);
  }
  // RFC 6749 §6: a refresh may not widen the scope (narrowing is not offered: the session keeps its scope).
  const requested = (p.get('scope') ?? '').split(' ').filter(Boolean);
  const wider = requested.find((s) => !scope.includes(s));
  if (wider !== undefined) throw new LatchkeyError('invalid_argument', `scope ${wider} was not granted`, { reason: 'invalid_scope' });
  // Checked before the rotation, so that a refused proof does not spend the refresh token.
  const grant = typeof sid === 'string' ? await d.auth.sessions.get(sid) : undefined;
  checkGrantKey(grant?.jkt, jkt, publicClient);
  grantedResource(p, grant?.resource);
  let out: Awaited<ReturnType<AuthService['refresh']>>;
  try {
    out = await d.auth.refresh(refreshToken, jkt);
  } catch (err) {
    if (err instanceof LatchkeyError && err.reason === 'refresh_token_reused') await onEvent({ action: 'token.refresh_token_reuse', userId });
    if (err instanceof LatchkeyError && err.code === 'unauthenticated') throw invalidGrant('invalid refresh token', err);
    throw err;
  }
  await onEvent({ action: 'token.refreshed', userId, metadata: { dpop: jkt !== undefined } });
  return tokenResponse(out, scope, jkt);
}

export function tokenResponse(out: { access_token?: string | undefined; id_token?: string | undefined; refresh_token?: string | undefined; expires_in?: number | undefined }, scope: readonly string[], jkt?: string): OAuthTokenResponse {
  const body: OAuthTokenResponse = { access_token: out.access_token ?? '', token_type: jkt === undefined ? 'Bearer' : 'DPoP', expires_in: out.expires_in ?? 0, scope: scope.join(' ') };
  if (scope.includes('openid') && out.id_token !== undefined) body.id_token = out.id_token;
  if (out.refresh_token !== undefined) body.refresh_token = out.refresh_token;
  return body;
}
