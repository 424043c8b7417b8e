/**
 * Every HTTP endpoint outside the operations table, in one list the HTTP
 * adapter mounts: OpenID discovery and the JWKS, the OAuth provider, the
 * sign-in page `/app`, social login, and the dashboard; and the SCIM router
 * (`/scim/v2`) and the SSO router (`/sso/<id>`, `/saml/<id>/…`), mounted
 * before the CSRF guard. Each is built from the
 * services the composition root made; none exists when its service or flag
 * is off.
 */
import { sessionCookieOf, type AuthService } from '../../auth/index.ts';
import { issuerOf, type Config, type HttpRoute, type Services } from '../../server/index.ts';
import { dashboardRoutes } from './dashboard/dashboard.ts';
import { accountPageRoutes } from './account_page.ts';
import { consentPageRoutes } from './consent_page.ts';
import type { UserLocaleOf } from './i18n.ts';
import { loginPageRoutes } from './login_page.ts';
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

/** The endpoints outside the operations table, for the HTTP adapter to mount (built once per server). */
export function webRoutes(services: Services): HttpRoute[] {
  const routes: HttpRoute[] = [];
  const { auth, config } = services;
  if (auth !== undefined) {
    const locale = userLocaleOf(auth);
    routes.push(...discoveryRoutes(auth, config), ...oauthRoutes(services), ...loginPageRoutes(config, locale), ...accountPageRoutes(config, locale), ...consentPageRoutes(services, locale), ...socialRoutes(services));
  }
  routes.push(...dashboardRoutes(config));
  return routes;
}
