/**
 * Every HTTP endpoint outside the operations table, in one list the HTTP
 * adapter mounts: OpenID discovery and the JWKS, the OAuth provider, the
 * sign-in page `/app`, social login, and the dashboard; and the SCIM router
 * (`/scim/v2`) and the SSO router (`/sso/<id>`, `/saml/<id>/…`), mounted
 * before the CSRF guard. Each is built from the
 * services the composition root made; none exists when its service or flag
 * is off.
 *
 * The pages (sign-in, account center, consent, dashboard: their scripts,
 * styles and messages in every language) are modules of their own, loaded
 * and built at the first request to one of their paths.
 */
import { sessionCookieOf, type AuthService } from '../../auth/index.ts';
import { issuerOf, type Config, type HttpRoute, type HttpRouteRequest, type HttpRouteResponse, type Services } from '../../server/index.ts';
import type { UserLocaleOf } from './i18n.ts';
import { oauthRoutes } from './oauth.ts';
import { socialRoutes } from './social.ts';

export { scimRouter, SCIM_BASE } from './scim.ts';
export { ssoRouter } from './sso.ts';

/** OpenID discovery (both well-known names) and the JWKS, so other services can verify our tokens (cacheable for 5 minutes). */
function discoveryRoutes(auth: AuthService, c: Pick<Config, 'url' | 'host' | 'httpPort' | 'enablePkcePlain' | 'oauthRegistrationAccessToken'>): HttpRoute[] {
  const cache = { 'cache-control': 'public, max-age=300' };
  const discovery = async () => ({ body: auth.tokens.openidConfiguration(issuerOf(c), { roleClaim: auth.options.jwt.roleClaim, pkcePlain: c.enablePkcePlain, registration: Boolean(c.oauthRegistrationAccessToken) }), headers: cache });
  return [
    { path: '/.well-known/openid-configuration', handler: discovery },
    { path: '/.well-known/oauth-authorization-server', handler: discovery },
    { path: '/.well-known/jwks.json', handler: async () => ({ body: auth.tokens.jwks(), headers: cache }) },
    { path: '/.well-known/oauth-protected-resource', handler: async () => ({ body: auth.tokens.protectedResourceMetadata(issuerOf(c)), headers: cache }) },
  ];
}

/**
 * The saved language (`locale`) of the user a page request's session cookie
 * belongs to. The language is presentation only: a session store or
 * database that does not answer leaves the page to the browser's languages
 * rather than failing it (availability before convenience).
 */
function userLocaleOf(auth: AuthService): UserLocaleOf {
  return async (cookies) => {
    const cookie = sessionCookieOf(cookies);
    if (cookie === undefined) return undefined;
    try {
      const session = await auth.sessions.fromCookie(cookie);
      if (session === undefined) return undefined;
      return (await auth.users.findById(session.user_id))?.locale ?? undefined;
    } catch {
      return undefined;
    }
  };
}

/** A route's path and methods, known before its module is loaded. */
type RouteShape = Pick<HttpRoute, 'path' | 'methods'>;

/**
 * Routes whose handlers live in a module loaded at the first request to any
 * of them: `build` imports it and builds its routes (once; again after a
 * failure), which must be exactly `shapes`, the paths and methods mounted
 * now.
 */
export function onFirstRequest(shapes: readonly RouteShape[], build: () => Promise<HttpRoute[]>): HttpRoute[] {
  let built: Promise<Map<string, HttpRoute>> | undefined;
  const load = (): Promise<Map<string, HttpRoute>> =>
    (built ??= build().then(
      (routes) => {
        const same = routes.length === shapes.length && routes.every((r, i) => r.path === shapes[i]?.path && String(r.methods ?? ['GET']) === String(shapes[i]?.methods ?? ['GET']));
        if (!same) throw new Error(`the routes built (${routes.map((r) => r.path).join(', ')}) are not the routes mounted (${shapes.map((r) => r.path).join(', ')})`);
        return new Map(routes.map((r) => [r.path, r]));
      },
      (err: unknown) => {
        built = undefined;
        throw err;
      },
    ));
  return shapes.map((shape) => ({
    ...shape,
    handler: async (request: HttpRouteRequest): Promise<HttpRouteResponse> => (await load()).get(shape.path)!.handler(request),
  }));
}

/** The endpoints outside the operations table, for the HTTP adapter to mount (built once per server). */
export function webRoutes(services: Services): HttpRoute[] {
  const routes: HttpRoute[] = [];
  const { auth, config } = services;
  if (auth !== undefined) {
    const locale = userLocaleOf(auth);
    routes.push(...discoveryRoutes(auth, config), ...oauthRoutes(services));
    if (config.enableLoginPage) {
      routes.push(
        ...onFirstRequest([{ path: '/app' }, { path: '/app/' }, { path: '/app/reset-password' }], async () => (await import('./login_page.ts')).loginPageRoutes(config, locale)),
        ...onFirstRequest([{ path: '/app/account' }, { path: '/app/account/' }], async () => (await import('./account_page.ts')).accountPageRoutes(config, locale)),
      );
      if (services.consent !== undefined && services.oauth !== undefined) {
        routes.push(...onFirstRequest([{ path: '/app/consent', methods: ['GET', 'POST'] }], async () => (await import('./consent_page.ts')).consentPageRoutes(services, locale)));
      }
    }
    routes.push(...socialRoutes(services));
  }
  if (config.enableDashboard) {
    routes.push(...onFirstRequest([{ path: '/dashboard' }, { path: '/dashboard/' }], async () => (await import('./dashboard/dashboard.ts')).dashboardRoutes(config)));
  }
  return routes;
}
