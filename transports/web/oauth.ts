/**
 * The OAuth 2.0 / OpenID Connect endpoints on the HTTP port, outside `/v1`
 * and outside the operations table (spec, "Other HTTP endpoints"):
 * `GET|POST /authorize`, `POST /oauth/token`, `POST /oauth/revoke`,
 * `GET|POST /userinfo`, `POST /oauth/introspect` and `GET|POST /logout`. The
 * logic is the identity service's {@link OAuthServer}; this file turns its
 * answers into HTTP.
 *
 * Wire rules: token and revoke bodies are forms (RFC 6749 §4.1.3, RFC 7009
 * §2.1) or JSON; errors are `{error, error_description}` (RFC 6749 §5.2) with
 * 400, or 401 plus `WWW-Authenticate` for `invalid_client`; token answers
 * carry `Cache-Control: no-store` (§5.1). Token, revoke and introspect are
 * CSRF-exempt (the client authenticates itself), as is `/authorize` (a
 * top-level navigation); `/logout` is not (its POST is the confirmation
 * form of its own page), so relying parties send users there with GET.
 * `/userinfo` answers bearer-token errors with `WWW-Authenticate: Bearer`
 * (RFC 6750 §3). Every path is rate limited like every other.
 */
import { dependencyError, ERROR_STATUS, LatchkeyError } from '../../engine/errors.ts';
import { DPOP_ALGORITHMS, sessionCookieOf, type OAuthEventSink } from '../../auth/index.ts';
import { CookieSink, clearSessionCookiesOn, type HttpRoute, type HttpRouteRequest, type HttpRouteResponse, type Services } from '../../server/index.ts';
import { escapeHtml } from './design.ts';

/** The RFC 6749 / OpenID Connect error codes the provider sends as `error`. */
const OAUTH_ERRORS = new Set([
  'invalid_request',
  'invalid_client',
  'invalid_grant',
  'invalid_scope',
  'unauthorized_client',
  'unsupported_grant_type',
  'unsupported_response_type',
  'login_required',
  'invalid_token',
  'insufficient_scope',
  'invalid_target',
  'invalid_dpop_proof',
  'use_dpop_nonce',
  'authorization_pending',
  'slow_down',
  'access_denied',
  'expired_token',
  'invalid_client_metadata',
  'invalid_redirect_uri',
]);

const NO_STORE = { 'cache-control': 'no-store', pragma: 'no-cache' };

/**
 * `{error, error_description}` for an error: our OAuth reasons as they are;
 * a store outage as `temporarily_unavailable`; anything unexpected as
 * `server_error` with a generic description (the cause is logged).
 */
function errorResponse(services: Services, request: HttpRouteRequest, thrown: unknown): HttpRouteResponse {
  const outage = dependencyError(thrown);
  const err = outage ?? thrown;
  if (outage !== undefined && outage !== thrown) services.logger.warn('dependency unavailable', { request_id: request.requestId, reason: outage.reason });
  if (!(err instanceof LatchkeyError) || err.code === 'internal' || err.code === 'unknown' || err.code === 'data_loss') {
    services.logger.error('unexpected oauth error', { request_id: request.requestId, err });
    return { status: 500, body: { error: 'server_error', error_description: 'internal server error' }, headers: NO_STORE };
  }
  const status = ERROR_STATUS[err.code].http;
  const error =
    err.reason !== undefined && OAUTH_ERRORS.has(err.reason) ? err.reason : err.code === 'unavailable' ? 'temporarily_unavailable' : 'invalid_request';
  const headers: Record<string, string> = { ...NO_STORE };
  const wait = err.details?.['retry_after_seconds'];
  if ((err.code === 'unavailable' || err.code === 'resource_exhausted') && typeof wait === 'number') headers['retry-after'] = String(wait);
  if (error === 'invalid_dpop_proof' && status === 401) {
    headers['www-authenticate'] = `DPoP error="invalid_dpop_proof", algs="${DPOP_ALGORITHMS.join(' ')}"`;
  } else if (error === 'invalid_token' || error === 'insufficient_scope') {
    headers['www-authenticate'] = `Bearer error="${error}", error_description="${err.message.replace(/["\\]/g, '')}"`;
  } else if (status === 401) headers['www-authenticate'] = 'Basic realm="oauth", charset="UTF-8"';
  return { status, body: { error, error_description: err.message }, headers };
}

/**
 * Headers of the `/logout` and `/app/device` pages: nothing but their own form, no framing, no
 * caching. The referrer policy is `same-origin`, not `no-referrer`: under `no-referrer` a browser
 * sends `Origin: null` with the form's POST, which the CSRF guard rightly refuses.
 */
const LOGOUT_PAGE_HEADERS = {
  'content-security-policy': "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
  'x-frame-options': 'DENY',
  'referrer-policy': 'same-origin',
  ...NO_STORE,
};

function logoutPage(title: string, body: string): string {
  return `<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>${escapeHtml(title)}</title><style>body{font-family:system-ui,sans-serif;max-width:28rem;margin:4rem auto;padding:0 1rem}button{font-size:1rem;padding:.5rem 1rem}</style></head><body><h1>${escapeHtml(title)}</h1>${body}</body></html>`;
}

/** The bearer token of a `/userinfo` request: the Authorization header (RFC 6750 §2.1) or, on POST, the form field (§2.2). */
function bearerOf(request: HttpRouteRequest): string | undefined {
  const header = request.authorization === undefined ? undefined : /^Bearer\s+([A-Za-z0-9\-._~+/]+=*)\s*$/i.exec(request.authorization);
  if (header) return header[1];
  const field = request.method === 'POST' ? request.body['access_token'] : undefined;
  return typeof field === 'string' && request.authorization === undefined ? field : undefined;
}

/**
 * The audit sink of one request: OAuth events become audit rows (actor: the
 * token's user) through the admin service, when it is plugged in. Never throws.
 */
function auditSink(services: Services, request: HttpRouteRequest): OAuthEventSink {
  return async (event) => {
    const admin = services.admin;
    if (admin === undefined) return;
    const userId = event.userId ?? '';
    await admin.userEvent(
      {
        actor_type: userId ? 'user' : 'anonymous',
        actor_id: userId,
        action: event.action,
        resource_type: 'user',
        resource_id: userId,
        ip_address: request.clientIp,
        user_agent: request.userAgent,
        metadata: { ...event.metadata, protocol: 'oauth' },
      },
      undefined,
      (err) => services.logger.error('oauth event not recorded', { action: event.action, request_id: request.requestId, err }),
    );
  };
}


/** The OAuth 2.0 Form Post Response Mode page: a form that submits itself to the client. */
function formPostPage(action: string, fields: Record<string, string>): string {
  const inputs = Object.entries(fields)
    .map(([k, v]) => `<input type="hidden" name="${escapeHtml(k)}" value="${escapeHtml(v)}">`)
    .join('');
  return `<!DOCTYPE html><html><head><meta charset="utf-8"><title>Submit</title></head><body onload="document.forms[0].submit()"><form method="post" action="${escapeHtml(action)}">${inputs}<noscript><button type="submit">Continue</button></noscript></form></body></html>`;
}

/**
 * The endpoints of the OAuth provider (`services.oauth`): `/authorize`, `/oauth/token`, `/oauth/revoke`,
 * `/oauth/introspect`, `/userinfo` and `/logout`.
 */
export function oauthRoutes(services: Services): HttpRoute[] {
  const oauth = services.oauth;
  if (oauth === undefined) return [];
  const clearSessionCookies = (sink: CookieSink): void => clearSessionCookiesOn(sink, services.config);
  const authorize = async (request: HttpRouteRequest): Promise<HttpRouteResponse> => {
    try {
      if (request.bodyError !== undefined) throw new LatchkeyError(request.bodyError.code, request.bodyError.message, { reason: 'invalid_request' });
      const out = await oauth.authorize(request.method === 'POST' ? request.body : request.query, sessionCookieOf(request.cookies), auditSink(services, request));
      if (out.kind === 'redirect') return { status: 302, headers: { location: out.location } };
      if (out.kind === 'form_post') return { html: formPostPage(out.action, out.fields) };
      return errorResponse(services, request, out.error);
    } catch (err) {
      return errorResponse(services, request, err);
    }
  };
  // RFC 9449 §5: at the authorization server a refused proof is an error response (400) like any other;
  // the 401 with a DPoP challenge is a resource's answer (§7.1, /userinfo).
  const refusal = (request: HttpRouteRequest, err: unknown): HttpRouteResponse =>
    errorResponse(services, request, err instanceof LatchkeyError && err.reason === 'invalid_dpop_proof' ? new LatchkeyError('invalid_argument', err.message, { reason: 'invalid_dpop_proof' }) : err);
  // RFC 9449 §8: a request that carried a DPoP proof is answered with the current server nonce, its refusal included.
  const withNonce = async (request: HttpRouteRequest, response: HttpRouteResponse): Promise<HttpRouteResponse> => {
    if (request.dpop === undefined) return response;
    try {
      return { ...response, headers: { ...response.headers, 'dpop-nonce': await oauth.dpop.nonce() } };
    } catch (err) {
      return errorResponse(services, request, err);
    }
  };
  const endpoint =
    (handle: (params: Readonly<Record<string, unknown>>, authorization: string | undefined, onEvent: OAuthEventSink, dpop: string | undefined) => Promise<unknown>) =>
    async (request: HttpRouteRequest): Promise<HttpRouteResponse> => {
      try {
        if (request.bodyError !== undefined) throw new LatchkeyError(request.bodyError.code, request.bodyError.message, { reason: 'invalid_request' });
        return await withNonce(request, { body: await handle(request.body, request.authorization, auditSink(services, request), request.dpop), headers: NO_STORE });
      } catch (err) {
        return withNonce(request, refusal(request, err));
      }
    };
  // RFC 8628 §3.3: where the user enters the code shown on the device, signed in, and approves or denies.
  const device = async (request: HttpRouteRequest): Promise<HttpRouteResponse> => {
    try {
      const params = request.method === 'POST' ? request.body : request.query;
      const code = typeof params['user_code'] === 'string' ? params['user_code'].slice(0, 32) : '';
      const form = (message: string): HttpRouteResponse => ({
        html: logoutPage(
          'Connect a device',
          `${message}<form method="post" action="/app/device"><label>Code shown on the device <input name="user_code" value="${escapeHtml(code)}" autocomplete="off" autocapitalize="characters" required></label><p><button type="submit" name="decision" value="approve">Approve</button> <button type="submit" name="decision" value="deny">Deny</button></p></form>`,
        ),
        headers: LOGOUT_PAGE_HEADERS,
      });
      if (request.method !== 'POST') return form('<p>Enter the code your device shows, then approve it to let the device act for you.</p>');
      if (request.bodyError !== undefined) return form('<p>The form could not be read.</p>');
      const decision = params['decision'];
      const out = await oauth.decideDevice(code, decision === 'approve', sessionCookieOf(request.cookies));
      if (out === undefined) return form('<p>Sign in first (<a href="/app">sign in</a>), then come back to this page.</p>');
      if (!out.done) return form('<p>This code is unknown, expired or already used.</p>');
      await auditSink(services, request)({ action: decision === 'approve' ? 'device.approved' : 'device.denied', userId: out.userId, metadata: { client_id: out.clientId } });
      return { html: logoutPage(decision === 'approve' ? 'Device connected' : 'Device refused', `<p>${decision === 'approve' ? 'You can return to your device.' : 'The device was not connected.'}</p>`), headers: LOGOUT_PAGE_HEADERS };
    } catch (err) {
      return errorResponse(services, request, err);
    }
  };
  // RFC 7591 §3.2.1: 201 with the client's metadata.
  const register = async (request: HttpRouteRequest): Promise<HttpRouteResponse> => {
    try {
      if (request.bodyError !== undefined) throw new LatchkeyError(request.bodyError.code, request.bodyError.message, { reason: 'invalid_client_metadata' });
      const body = await oauth.register(request.body, request.authorization);
      await auditSink(services, request)({ action: 'client.registered', metadata: { client_id: body['client_id'] } });
      return { status: 201, body, headers: NO_STORE };
    } catch (err) {
      return errorResponse(services, request, err);
    }
  };
  // RFC 7592: the registration of `?client_id=` read (GET), replaced (PUT) or deleted (DELETE, 204) with its registration access token.
  const configure = async (request: HttpRouteRequest): Promise<HttpRouteResponse> => {
    try {
      const clientId = typeof request.query['client_id'] === 'string' ? request.query['client_id'] : '';
      if (request.method === 'POST') return await register(request);
      if (request.bodyError !== undefined) throw new LatchkeyError(request.bodyError.code, request.bodyError.message, { reason: 'invalid_client_metadata' });
      if (request.method === 'GET') return { body: await oauth.configuration.read(clientId, request.authorization), headers: NO_STORE };
      if (request.method === 'PUT') {
        const body = await oauth.configuration.update(clientId, request.authorization, request.body);
        await auditSink(services, request)({ action: 'client.updated', metadata: { client_id: clientId } });
        return { body, headers: NO_STORE };
      }
      await oauth.configuration.delete(clientId, request.authorization);
      await auditSink(services, request)({ action: 'client.deleted', metadata: { client_id: clientId } });
      return { status: 204, headers: NO_STORE };
    } catch (err) {
      return errorResponse(services, request, err);
    }
  };
  // RFC 9126 §2.2: 201 with the request_uri.
  const par = async (request: HttpRouteRequest): Promise<HttpRouteResponse> => {
    try {
      if (request.bodyError !== undefined) throw new LatchkeyError(request.bodyError.code, request.bodyError.message, { reason: 'invalid_request' });
      return await withNonce(request, { status: 201, body: await oauth.pushAuthorizationRequest(request.body, request.authorization, request.dpop), headers: NO_STORE });
    } catch (err) {
      return withNonce(request, refusal(request, err));
    }
  };
  const userinfo = async (request: HttpRouteRequest): Promise<HttpRouteResponse> => {
    try {
      if (request.bodyError !== undefined) throw new LatchkeyError(request.bodyError.code, request.bodyError.message, { reason: 'invalid_request' });
      const bound = request.authorization === undefined ? undefined : /^DPoP\s+([A-Za-z0-9\-._~+/]+=*)\s*$/i.exec(request.authorization)?.[1];
      if (bound !== undefined) return { body: await oauth.userinfo(bound, { proof: request.dpop, method: request.method }), headers: NO_STORE };
      return { body: await oauth.userinfo(bearerOf(request)), headers: NO_STORE };
    } catch (err) {
      return errorResponse(services, request, err);
    }
  };
  const logout = async (request: HttpRouteRequest): Promise<HttpRouteResponse> => {
    try {
      if (request.bodyError !== undefined) throw new LatchkeyError(request.bodyError.code, request.bodyError.message, { reason: 'invalid_request' });
      const params = request.method === 'POST' ? request.body : request.query;
      const out = await oauth.endSession(params, sessionCookieOf(request.cookies), request.method === 'POST' && params['confirm'] === 'yes');
      if (out.kind === 'confirm') {
        const fields = Object.entries({ ...out.params, confirm: 'yes' })
          .map(([k, v]) => `<input type="hidden" name="${escapeHtml(k)}" value="${escapeHtml(v)}">`)
          .join('');
        return {
          html: logoutPage('Sign out', `<p>Do you want to sign out?</p><form method="post" action="/logout">${fields}<button type="submit">Sign out</button></form>`),
          headers: LOGOUT_PAGE_HEADERS,
        };
      }
      if (out.userId !== undefined) await auditSink(services, request)({ action: 'user.logout', userId: out.userId, metadata: { endpoint: 'end_session' } });
      const sink = new CookieSink();
      clearSessionCookies(sink);
      if (out.redirect !== undefined) return { status: 302, headers: { location: out.redirect, ...NO_STORE }, cookies: sink.headers() };
      return { html: logoutPage('Signed out', '<p>You are signed out.</p>'), headers: LOGOUT_PAGE_HEADERS, cookies: sink.headers() };
    } catch (err) {
      return errorResponse(services, request, err);
    }
  };
  return [
    { path: '/authorize', methods: ['GET', 'POST'], handler: authorize },
    { path: '/oauth/token', methods: ['POST'], handler: endpoint((p, a, e, d) => oauth.token(p, a, e, d)) },
    { path: '/oauth/revoke', methods: ['POST'], handler: endpoint((p, a, e) => oauth.revoke(p, a, e)) },
    { path: '/oauth/par', methods: ['POST'], handler: par },
    ...(oauth.registrationEnabled ? [{ path: '/oauth/register', methods: ['POST' as const, 'GET' as const, 'PUT' as const, 'DELETE' as const], handler: configure }] : []),
    { path: '/oauth/device_authorization', methods: ['POST'], handler: endpoint((p, a) => oauth.deviceAuthorization(p, a)) },
    { path: '/app/device', methods: ['GET', 'POST'], handler: device },
    { path: '/oauth/introspect', methods: ['POST'], handler: endpoint((p, a) => oauth.introspect(p, a)) },
    { path: '/userinfo', methods: ['GET', 'POST'], handler: userinfo },
    { path: '/logout', methods: ['GET', 'POST'], handler: logout },
  ];
}
