/**
 * Social login on the HTTP port, outside `/v1` and the operations table (as
 * the reference serves it): `GET /oauth_login/<provider>` and
 * `GET|POST /oauth_callback/<provider>` for each configured provider (the
 * ten of the spec, and `oidc` for any OpenID provider by discovery). The
 * logic is the identity service's {@link SocialLogin}; this file turns it
 * into HTTP: the state cookie, the session or MFA cookies, audit rows and
 * webhooks, and the redirects.
 *
 * - `/oauth_login/<provider>?redirect_uri=&state=&roles=&scope=` answers 302
 *   to the provider and sets `service-oauth-state` (HttpOnly, host-only,
 *   `Path=/oauth_callback/`, 10 minutes; SameSite None when Secure, so that
 *   Apple's cross-site form_post carries it, else Lax). A bad request is 400
 *   `{error, error_description}`.
 * - `/oauth_callback/<provider>` (CSRF-exempt: the provider's redirect or
 *   form post; the state cookie is its CSRF defence) clears the state cookie.
 *   A missing, mismatched, expired or replayed state is 400: nothing says
 *   where the browser may go. Otherwise the browser is sent to the login's
 *   redirect URI, after the session cookies are set, with the reference's
 *   fields `access_token`, `token_type=bearer`, `expires_in`, `state`,
 *   `id_token` and `refresh_token` (scope `offline_access`) in its fragment,
 *   not its query as the reference does: a fragment never reaches a server's
 *   logs nor a Referer (OAuth 2.0 Security BCP, RFC 9700 §2.1.2 and §4.3.2),
 *   and a page reads it from `location.hash` as it would the query. When MFA applies the `mfa` challenge cookie is set
 *   instead and the query says which screen to show
 *   (`should_show_email_otp_screen=true`, …) for `verify_otp`. A refusal
 *   appends `error` (`access_denied`, `server_error` or
 *   `temporarily_unavailable`), `error_description` (a clear message, in the
 *   reader's language when it is translated: the language menu's cookie,
 *   else `Accept-Language`) and `state`.
 *
 * - `POST /oauth_link/<provider>` (JSON `{redirect_uri}`, the account
 *   center's "Connect"; the CSRF origin rule applies) needs the browser's live
 *   session cookie (else 401): it starts the same authorization with a link
 *   intent bound to that session, sets `service-oauth-state` as above and
 *   answers `{location}` for the page to go to. Its callback sets no session
 *   cookie: it attaches the provider account to the session's user
 *   (auth/social_link.ts) and sends the browser to `redirect_uri?linked=<provider>`,
 *   or, refused, with `error`, `error_description` and `error_reason` (the
 *   reason, e.g. `identity_owned_by_another_account`). When the provider's
 *   cross-site redirect or form post reaches the callback of a pending link
 *   without the session cookie (`SameSite=Strict`, or Lax and a form post), a
 *   page of our own origin sends the browser on to the same callback once
 *   (`resumed=1`), which carries it.
 *
 * Audit: `oauth.login_initiated`, `oauth.link_initiated`, `user.identity_linked`, `user.signup` (new user) and
 * `user.login_success` (webhooks `user.signup` / `user.login`), or
 * `oauth.callback_failed` with the reason; each names the provider in its
 * metadata. `oauth.unverified_account_replaced` when an unverified account
 * was taken over. A new user's `user.signup` row and deliveries are written
 * in the transaction that stores it (SQL; security matrix E3), the other
 * events once the callback's outcome is known.
 */
import { dependencyError, LatchkeyError } from '../../engine/errors.ts';
import {
  SOCIAL_STATE_TTL_SECONDS,
  SocialLogin,
  sessionCookieOf,
  type AuthResult,
  type SignupRecorder,
  type UserRecord,
} from '../../auth/index.ts';
import type { AuditEntry, WebhookEvent } from '../../admin/index.ts';
import { CookieSink, adminEventRecorder, recordSessionDevice, setSessionCookiesOn, translatedMessage, type Config, type HttpRoute, type HttpRouteRequest, type HttpRouteResponse, type Services } from '../../server/index.ts';
import { LANGUAGE_COOKIE, LANGUAGE_NAMES, pickLanguage } from './i18n.ts';

/** The cookie binding a started social login to the browser. */
export const SOCIAL_STATE_COOKIE = 'service-oauth-state';
const STATE_COOKIE_PATH = '/oauth_callback/';
const NO_STORE = { 'cache-control': 'no-store', pragma: 'no-cache' };
const RESUME_PAGE_HEADERS = {
  ...NO_STORE,
  'content-security-policy': "default-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  'referrer-policy': 'no-referrer',
};
const escapeHtml = (v: string): string => v.replace(/[&<>"']/g, (ch) => `&#${ch.charCodeAt(0)};`);

/** The social login of a running server's services (tests point its providers at fakes through it). */
export function socialLoginOf(services: Services): SocialLogin | undefined {
  return services.social;
}

function stateCookieOptions(c: Config) {
  const secure = Boolean(c.appCookieSecure);
  return { path: STATE_COOKIE_PATH, httpOnly: true, secure, sameSite: secure ? ('None' as const) : ('Lax' as const) };
}

/** `uri` with `params` appended to its query. */
function withQuery(uri: string, params: Record<string, string | undefined>): string {
  const url = new URL(uri);
  for (const [k, v] of Object.entries(params)) if (v !== undefined) url.searchParams.set(k, v);
  return url.toString();
}

/** `uri` with `params` as its fragment (credentials: never in a query). */
function withFragment(uri: string, params: Record<string, string | undefined>): string {
  const url = new URL(uri);
  const fragment = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined) fragment.set(k, v);
  url.hash = fragment.toString();
  return url.toString();
}

/**
 * The `error_description` of a refusal in the reader's language: the page's
 * (the language menu's cookie), else `Accept-Language`; English when the
 * reason has no translation (server/error_messages.ts). Codes and reasons
 * (`error`, `error_reason`) stay as they are.
 */
function describe(request: HttpRouteRequest, err: LatchkeyError): string {
  const language = pickLanguage(Object.keys(LANGUAGE_NAMES), { saved: request.cookies[LANGUAGE_COOKIE], acceptLanguage: request.acceptLanguage });
  return translatedMessage(err, language) ?? err.message;
}

/** The login and callback endpoints of every configured provider of the social login (`services.social`). */
export function socialRoutes(services: Services): HttpRoute[] {
  const c = services.config;
  const sessionCookies = (sink: CookieSink, result: AuthResult): void => setSessionCookiesOn(sink, c, result);
  const social = services.social;
  if (social === undefined) return [];

  const entryOf = (request: HttpRouteRequest, action: string, o: { user?: UserRecord | undefined; metadata: Record<string, unknown> }): AuditEntry => {
    const userId = o.user?.id ?? '';
    return {
      actor_type: userId ? 'user' : 'anonymous',
      actor_id: userId,
      actor_email: o.user?.email ?? undefined,
      action,
      resource_type: 'user',
      resource_id: userId,
      ip_address: request.clientIp,
      user_agent: request.userAgent,
      metadata: { ...o.metadata, protocol: 'oauth' },
    };
  };
  const reportFailure = (request: HttpRouteRequest, action: string) => (err: unknown): void =>
    services.logger.error('social login event not recorded', { action, request_id: request.requestId, err });
  const record = async (request: HttpRouteRequest, action: string, o: { user?: UserRecord | undefined; webhook?: WebhookEvent; metadata: Record<string, unknown> }): Promise<void> => {
    const admin = services.admin;
    if (admin === undefined) return;
    await admin.userEvent(
      entryOf(request, action, o),
      o.webhook !== undefined && o.user !== undefined ? { event: o.webhook, user: o.user } : undefined,
      reportFailure(request, action),
    );
  };
  // The user.signup event of a user the callback creates: in the transaction that stores it (SQL), so
  // that a crash or an outage leaves the user with its audit row and deliveries or neither (security
  // matrix E3); on DynamoDB right after it, as the other events.
  const signupRecorder = (request: HttpRouteRequest, metadata: Record<string, unknown>): SignupRecorder | undefined =>
    adminEventRecorder(services.admin, {
      entry: (user) => entryOf(request, 'user.signup', { user, metadata }),
      webhook: 'user.signup',
      onError: reportFailure(request, 'user.signup'),
    });

  const badRequest = (request: HttpRouteRequest, thrown: unknown, cookies?: readonly string[]): HttpRouteResponse => {
    const err = dependencyError(thrown) ?? thrown;
    if (!(err instanceof LatchkeyError) || err.code === 'internal') {
      services.logger.error('unexpected social login error', { request_id: request.requestId, err: thrown });
      return { status: 500, body: { error: 'server_error', error_description: 'internal server error' }, headers: NO_STORE, ...(cookies ? { cookies } : {}) };
    }
    const status = err.code === 'unavailable' ? 503 : err.code === 'not_found' ? 404 : 400;
    return { status, body: { error: err.code === 'unavailable' ? 'temporarily_unavailable' : 'invalid_request', error_description: describe(request, err) }, headers: NO_STORE, ...(cookies ? { cookies } : {}) };
  };

  const routes: HttpRoute[] = [];
  for (const provider of social.providers) {
    const login = async (request: HttpRouteRequest): Promise<HttpRouteResponse> => {
      try {
        const out = await social.begin(provider, request.query);
        const sink = new CookieSink();
        sink.set(SOCIAL_STATE_COOKIE, out.state, { ...stateCookieOptions(c), maxAgeSeconds: SOCIAL_STATE_TTL_SECONDS });
        await record(request, 'oauth.login_initiated', { metadata: { provider } });
        return { status: 302, headers: { location: out.location, ...NO_STORE }, cookies: sink.headers() };
      } catch (err) {
        return badRequest(request, err);
      }
    };
    const link = async (request: HttpRouteRequest): Promise<HttpRouteResponse> => {
      try {
        if (request.bodyError !== undefined) throw request.bodyError;
        const cookie = sessionCookieOf(request.cookies);
        const session = cookie === undefined ? undefined : await services.auth?.sessions.fromCookie(cookie);
        if (session === undefined) {
          return { status: 401, body: { error: 'unauthenticated', reason: 'unauthenticated', error_description: 'sign in to connect a provider' }, headers: NO_STORE };
        }
        const out = await social.begin(provider, { redirect_uri: request.body['redirect_uri'] }, { sid: session.sid, user_id: session.user_id });
        const sink = new CookieSink();
        sink.set(SOCIAL_STATE_COOKIE, out.state, { ...stateCookieOptions(c), maxAgeSeconds: SOCIAL_STATE_TTL_SECONDS });
        const user = await services.auth?.users.findById(session.user_id);
        await record(request, 'oauth.link_initiated', { user, metadata: { provider } });
        return { status: 200, body: { location: out.location }, headers: NO_STORE, cookies: sink.headers() };
      } catch (err) {
        return badRequest(request, err);
      }
    };
    const callback = async (request: HttpRouteRequest): Promise<HttpRouteResponse> => {
      const params = request.method === 'POST' ? request.body : request.query;
      if (sessionCookieOf(request.cookies) === undefined && request.query['resumed'] === undefined && request.bodyError === undefined && (await social.isLink(params['state']).catch(() => false))) {
        // Sent on from our own origin, the browser presents its session cookie whatever its SameSite.
        const query = new URLSearchParams();
        for (const [k, v] of Object.entries(params)) if (typeof v === 'string') query.set(k, v);
        query.set('resumed', '1');
        const href = escapeHtml(`/oauth_callback/${provider}?${query.toString()}`);
        const html = `<!doctype html><html><head><meta charset="utf-8"><meta http-equiv="refresh" content="0;url=${href}"><title>Connecting</title></head><body><p><a href="${href}">Continue</a></p></body></html>`;
        return { status: 200, html, headers: RESUME_PAGE_HEADERS };
      }
      const sink = new CookieSink();
      sink.clear(SOCIAL_STATE_COOKIE, stateCookieOptions(c));
      try {
        if (request.bodyError !== undefined) throw request.bodyError;
        const metadata = { provider, login_method: provider };
        const out = await social.finish(provider, params, request.cookies[SOCIAL_STATE_COOKIE], sessionCookieOf(request.cookies), signupRecorder(request, metadata));
        if (out.error !== undefined || (out.result === undefined && out.linked !== true)) {
          const err = out.error ?? new LatchkeyError('internal', 'login failed');
          const outage = dependencyError(err);
          if (err.code === 'internal' && outage === undefined) services.logger.error('social login failed', { request_id: request.requestId, provider, err: err.cause ?? err });
          else if (err.code === 'unavailable' || outage !== undefined) services.logger.warn('social login provider or store unavailable', { request_id: request.requestId, provider, reason: (outage ?? err).reason });
          const linking = out.linked !== undefined;
          await record(request, 'oauth.callback_failed', { user: out.user, metadata: { provider, reason: err.reason ?? err.code, ...(linking ? { intent: 'link' } : {}) } });
          const error = outage !== undefined || err.code === 'unavailable' ? 'temporarily_unavailable' : err.code === 'internal' ? 'server_error' : 'access_denied';
          const description = describe(request, err.code === 'internal' && outage === undefined ? new LatchkeyError('internal', 'login failed', { reason: 'social_login_failed' }) : (outage ?? err));
          const reason = linking ? ((outage ?? err).reason ?? err.code) : undefined;
          return { status: 302, headers: { location: withQuery(out.redirectUri, { error, error_description: description, error_reason: reason, state: out.clientState }), ...NO_STORE }, cookies: sink.headers() };
        }
        if (out.linked === true || out.result === undefined) {
          // A link: the provider account is the signed-in user's now; no session is opened or ended.
          await record(request, 'user.identity_linked', { user: out.user, metadata: { provider } });
          return { status: 302, headers: { location: withQuery(out.redirectUri, { linked: provider, state: out.clientState }), ...NO_STORE }, cookies: sink.headers() };
        }
        const result = out.result;
        const user = out.user;
        sessionCookies(sink, result);
        await recordSessionDevice(services.auth, result, request, services.logger);
        if (out.replacedUnverified) await record(request, 'oauth.unverified_account_replaced', { user, metadata });
        const r = result.response;
        if (result.mfaSession !== undefined) {
          const flag = r.should_show_totp_screen ? 'should_show_totp_screen' : r.should_show_mobile_otp_screen ? 'should_show_mobile_otp_screen' : 'should_show_email_otp_screen';
          return { status: 302, headers: { location: withQuery(out.redirectUri, { [flag]: 'true', state: out.clientState }), ...NO_STORE }, cookies: sink.headers() };
        }
        await record(request, 'user.login_success', { user, webhook: 'user.login', metadata });
        const location = withFragment(out.redirectUri, {
          access_token: r.access_token,
          token_type: 'bearer',
          expires_in: r.expires_in === undefined ? undefined : String(r.expires_in),
          state: out.clientState,
          id_token: r.id_token,
          refresh_token: r.refresh_token,
        });
        return { status: 302, headers: { location, ...NO_STORE, 'referrer-policy': 'no-referrer' }, cookies: sink.headers() };
      } catch (err) {
        return badRequest(request, err, sink.headers());
      }
    };
    routes.push(
      { path: `/oauth_login/${provider}`, methods: ['GET'], handler: login },
      { path: `/oauth_link/${provider}`, methods: ['POST'], handler: link },
      { path: `/oauth_callback/${provider}`, methods: ['GET', 'POST'], handler: callback },
    );
  }
  return routes;
}
