/**
 * Enterprise sign-in on the HTTP port (docs/sso.md): an express router for
 * the paths that carry a connection id, mounted before the CSRF guard
 * (transports/http/app.ts). The logic is {@link SsoLogin}'s; this file turns
 * it into HTTP.
 *
 * - `GET /sso/<id>?redirect_uri=&state=&test=1` answers 302 to the IdP with
 *   the AuthnRequest (HTTP-Redirect binding) and sets `service-sso-state`
 *   (HttpOnly, `Path=/saml/`, 10 minutes; SameSite None when Secure, so that
 *   the IdP's cross-site form POST carries it, else Lax).
 * - `GET /saml/<id>/metadata`: the SP metadata (`application/samlmetadata+xml`).
 * - `POST /saml/<id>/acs` (HTTP-POST binding, SP- and IdP-initiated): the
 *   IdP's form POST comes from its own site, so the browser CSRF rule cannot
 *   apply: the signed, single-use assertion, its `InResponseTo` bound to the
 *   browser's state cookie, is the protection. On success the session
 *   cookies are set and the browser is sent to the redirect URI with the
 *   tokens in its fragment (as after social login) by a page of our own
 *   origin, so that a session cookie with `SameSite=Strict` is sent on the
 *   next request too (a redirect chain begun by another site would not send
 *   it). A refusal is a 400 page naming the reason; it sets no cookie.
 *   A test run (`test=1` at the start) answers a page with the claims
 *   received, and signs nobody in.
 *
 * Audit: `sso.login_initiated`, `user.signup` (webhook `user.signup`) and
 * `user.login_success` (webhook `user.login`), or `sso.login_failed` with
 * the reason, each naming the connection and the organization; provisioning
 * writes its `organization.*` rows in its own transaction.
 */
import express, { type Request, type Response, type Router } from 'express';
import { dependencyError, LatchkeyError } from '../../engine/errors.ts';
import { sessionCookieOf, type OrgEvent, type SsoFinish, type StoreTransaction, type UserRecord } from '../../auth/index.ts';
import type { WebhookEvent } from '../../admin/index.ts';
import { CookieSink, recordSessionDevice, setSessionCookiesOn, type Config, type Services } from '../../server/index.ts';

export const SSO_STATE_COOKIE = 'service-sso-state';
const STATE_COOKIE_PATH = '/saml/';
const NO_STORE = { 'cache-control': 'no-store', pragma: 'no-cache' };
const ID = '[0-9a-f-]{36}';

const escapeHtml = (s: string): string => s.replace(/[&<>"']/g, (ch) => `&#${ch.charCodeAt(0)};`);

function stateCookieOptions(c: Config, path = STATE_COOKIE_PATH) {
  const secure = Boolean(c.appCookieSecure);
  return { path, httpOnly: true, secure, sameSite: secure ? ('None' as const) : ('Lax' as const) };
}

function withFragment(uri: string, params: Record<string, string | undefined>): string {
  const url = new URL(uri);
  const fragment = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined) fragment.set(k, v);
  url.hash = fragment.toString();
  return url.toString();
}

function withQuery(uri: string, params: Record<string, string | undefined>): string {
  const url = new URL(uri);
  for (const [k, v] of Object.entries(params)) if (v !== undefined) url.searchParams.set(k, v);
  return url.toString();
}

function cookiesOf(req: Request): Record<string, string> {
  const out: Record<string, string> = {};
  for (const part of (req.headers.cookie ?? '').split(';')) {
    const i = part.indexOf('=');
    if (i <= 0) continue;
    const k = part.slice(0, i).trim();
    if (!(k in out)) out[k] = part.slice(i + 1).trim();
  }
  return out;
}

const PAGE_CSP = "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

function page(title: string, body: string, extraHead = ''): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width"><meta name="referrer" content="no-referrer">${extraHead}<title>${escapeHtml(title)}</title><style>body{font:16px system-ui,sans-serif;max-width:40rem;margin:3rem auto;padding:0 1rem}pre{background:#f4f4f4;padding:1rem;overflow:auto}</style></head><body>${body}</body></html>`;
}

/** The `/sso/<id>` and `/saml/<id>/…` router; undefined when organizations are off. */
export function ssoRouter(services: Services): Router | undefined {
  const sso = services.sso;
  if (sso === undefined) return undefined;
  const c = services.config;
  const router = express.Router({ caseSensitive: true, strict: false });
  const form = express.urlencoded({ extended: false, limit: c.httpBodyLimit, parameterLimit: 10 });

  const send = (res: Response, status: number, html: string, headers: Record<string, string> = {}, cookies: readonly string[] = []): void => {
    res.statusCode = status;
    for (const [k, v] of Object.entries({ ...NO_STORE, 'content-security-policy': PAGE_CSP, 'x-frame-options': 'DENY', ...headers })) res.setHeader(k, v);
    for (const cookie of cookies) res.append('set-cookie', cookie);
    res.setHeader('content-type', 'text/html; charset=utf-8');
    res.end(html);
  };
  const refusal = (res: Response, thrown: unknown, cookies: readonly string[] = []): void => {
    const err = dependencyError(thrown) ?? thrown;
    if (!(err instanceof LatchkeyError) || err.code === 'internal') {
      services.logger.error('unexpected SSO error', { request_id: (res.locals as { requestId?: string }).requestId, err: thrown });
      send(res, 500, page('Sign-in failed', '<h1>Sign-in failed</h1><p>internal error</p>'), {}, cookies);
      return;
    }
    const status = err.code === 'not_found' ? 404 : err.code === 'unavailable' ? 503 : err.code === 'unimplemented' ? 501 : 400;
    send(res, status, page('Sign-in failed', `<h1>Sign-in failed</h1><p>${escapeHtml(err.message)}</p><p><code>${escapeHtml(err.reason ?? err.code)}</code></p>`), {}, cookies);
  };
  const requestOf = (req: Request, res: Response) => ({
    requestId: (res.locals as { requestId?: string }).requestId ?? '',
    clientIp: (res.locals as { clientIp?: string }).clientIp ?? '',
    userAgent: req.headers['user-agent'] ?? '',
  });
  const audit = async (req: Request, res: Response, action: string, o: { user?: UserRecord | undefined; webhook?: WebhookEvent; metadata: Record<string, unknown> }): Promise<void> => {
    const admin = services.admin;
    if (admin === undefined) return;
    const r = requestOf(req, res);
    const userId = o.user?.id ?? '';
    await admin.userEvent(
      {
        actor_type: userId ? 'user' : 'anonymous',
        actor_id: userId,
        actor_email: o.user?.email ?? undefined,
        action,
        resource_type: 'user',
        resource_id: userId,
        ip_address: r.clientIp,
        user_agent: r.userAgent,
        metadata: { ...o.metadata, protocol: 'sso' },
      },
      o.webhook !== undefined && o.user !== undefined ? { event: o.webhook, user: o.user } : undefined,
      (err) => services.logger.error('SSO event not recorded', { action, request_id: r.requestId, err }),
    );
  };
  /** Provisioning's events, in its transaction: the connection is the actor. */
  const recorder = (req: Request, res: Response, connectionId: string) => {
    const admin = services.admin;
    if (admin === undefined) return undefined;
    const r = requestOf(req, res);
    return async (tx: StoreTransaction, event: OrgEvent) => {
      if (event.webhook !== undefined) await admin.webhooks.emit(event.webhook, event.data, tx);
      await admin.audit.record(
        {
          actor_type: 'system',
          actor_id: `sso_connection:${connectionId}`,
          action: event.action,
          resource_type: event.resourceType,
          resource_id: event.resourceId,
          ip_address: r.clientIp,
          user_agent: r.userAgent,
          metadata: { ...event.data, protocol: 'sso', request_id: r.requestId },
        },
        tx,
      );
    };
  };

  const signedIn = async (req: Request, res: Response, sink: CookieSink, out: SsoFinish, metadata: Record<string, unknown>): Promise<void> => {
    const result = out.result!;
    setSessionCookiesOn(sink, c, result);
    await recordSessionDevice(services.auth, result, requestOf(req, res), services.logger);
    if (out.created === true) await audit(req, res, 'user.signup', { user: out.user, webhook: 'user.signup', metadata });
    const r = result.response;
    let location: string;
    if (result.mfaSession !== undefined) {
      const flag = r.should_show_totp_screen ? 'should_show_totp_screen' : r.should_show_mobile_otp_screen ? 'should_show_mobile_otp_screen' : 'should_show_email_otp_screen';
      location = withQuery(out.redirectUri, { [flag]: 'true', state: out.clientState });
    } else {
      await audit(req, res, 'user.login_success', { user: out.user, webhook: 'user.login', metadata });
      location = withFragment(out.redirectUri, {
        access_token: r.access_token,
        token_type: 'bearer',
        expires_in: r.expires_in === undefined ? undefined : String(r.expires_in),
        state: out.clientState,
        id_token: r.id_token,
      });
    }
    // A page of our origin moves on: the navigation it starts is same-site, so every session cookie goes with it.
    const href = escapeHtml(location);
    send(res, 200, page('Signing in', `<p>Signing in… <a id="continue" href="${href}">Continue</a></p>`, `<meta http-equiv="refresh" content="0;url=${href}">`), { 'referrer-policy': 'no-referrer' }, sink.headers());
  };

  router.get(new RegExp(`^/sso/(${ID})/?$`), (req, res) => {
    const id = String((req.params as Record<string, string>)['0']);
    void (async () => {
      const out = await sso.begin(id, req.query as Record<string, unknown>);
      const sink = new CookieSink();
      sink.set(SSO_STATE_COOKIE, out.state, { ...stateCookieOptions(c, out.cookiePath), maxAgeSeconds: 600 });
      await audit(req, res, 'sso.login_initiated', { metadata: { connection_id: id } });
      res.statusCode = 302;
      for (const [k, v] of Object.entries({ location: out.location, ...NO_STORE })) res.setHeader(k, v);
      for (const cookie of sink.headers()) res.append('set-cookie', cookie);
      res.end();
    })().catch((err: unknown) => refusal(res, err));
  });

  router.get(new RegExp(`^/saml/(${ID})/metadata/?$`), (req, res) => {
    const id = String((req.params as Record<string, string>)['0']);
    sso.metadata(id).then(
      (xml) => {
        res.setHeader('content-type', 'application/samlmetadata+xml; charset=utf-8');
        res.setHeader('cache-control', 'public, max-age=300');
        res.end(xml);
      },
      (err: unknown) => refusal(res, err),
    );
  });

  router.post(new RegExp(`^/saml/(${ID})/acs/?$`), form, (req, res) => {
    const id = String((req.params as Record<string, string>)['0']);
    const sink = new CookieSink();
    sink.clear(SSO_STATE_COOKIE, stateCookieOptions(c));
    void (async () => {
      const cookies = cookiesOf(req);
      const body = (req.body ?? {}) as Record<string, unknown>;
      const out = await sso.finishSaml(id, body, cookies[SSO_STATE_COOKIE], sessionCookieOf(cookies), { actor: { kind: 'super_admin' }, record: recorder(req, res, id) });
      const metadata = { connection_id: id, organization_id: out.connection.organization_id, login_method: 'saml' };
      if (out.error !== undefined) {
        await audit(req, res, 'sso.login_failed', { user: out.user, metadata: { ...metadata, reason: out.error.reason ?? out.error.code } });
        return refusal(res, out.error, sink.headers());
      }
      if (out.claims !== undefined) {
        await audit(req, res, 'sso.connection_tested', { metadata });
        return send(res, 200, page('Connection test', `<h1>The connection works</h1><p>The identity provider sent:</p><pre id="claims">${escapeHtml(JSON.stringify(out.claims, null, 2))}</pre><p>Nobody was signed in.</p>`), {}, sink.headers());
      }
      await signedIn(req, res, sink, out, metadata);
    })().catch((err: unknown) => refusal(res, err, sink.headers()));
  });

  // Single Logout from the IdP (HTTP-Redirect): the signed LogoutRequest ends the person's sessions here.
  router.get(new RegExp(`^/saml/(${ID})/slo/?$`), (req, res) => {
    const id = String((req.params as Record<string, string>)['0']);
    const original = req.originalUrl.includes('?') ? req.originalUrl.slice(req.originalUrl.indexOf('?') + 1) : '';
    void (async () => {
      const out = await sso.logout(id, req.query as Record<string, unknown>, original);
      await audit(req, res, 'sso.logout', { metadata: { connection_id: id, user_id: out.userId ?? null, sessions_ended: out.ended } });
      if (out.responseUrl !== undefined) {
        res.statusCode = 302;
        for (const [k, v] of Object.entries({ location: out.responseUrl, ...NO_STORE })) res.setHeader(k, v);
        res.end();
        return;
      }
      send(res, 200, page('Signed out', '<h1>Signed out</h1>'));
    })().catch((err: unknown) => refusal(res, err));
  });

  router.get(new RegExp(`^/sso/(${ID})/callback/?$`), (req, res) => {
    const id = String((req.params as Record<string, string>)['0']);
    const sink = new CookieSink();
    sink.clear(SSO_STATE_COOKIE, stateCookieOptions(c, '/sso/'));
    void (async () => {
      const cookies = cookiesOf(req);
      const out = await sso.finishOidc(id, req.query as Record<string, unknown>, cookies[SSO_STATE_COOKIE], sessionCookieOf(cookies), { actor: { kind: 'super_admin' }, record: recorder(req, res, id) });
      const metadata = { connection_id: id, organization_id: out.connection.organization_id, login_method: 'sso_oidc' };
      if (out.error !== undefined) {
        await audit(req, res, 'sso.login_failed', { user: out.user, metadata: { ...metadata, reason: out.error.reason ?? out.error.code } });
        return refusal(res, out.error, sink.headers());
      }
      if (out.claims !== undefined) {
        await audit(req, res, 'sso.connection_tested', { metadata });
        return send(res, 200, page('Connection test', `<h1>The connection works</h1><p>The identity provider sent:</p><pre id="claims">${escapeHtml(JSON.stringify(out.claims, null, 2))}</pre><p>Nobody was signed in.</p>`), {}, sink.headers());
      }
      await signedIn(req, res, sink, out, metadata);
    })().catch((err: unknown) => refusal(res, err, sink.headers()));
  });

  return router;
}
