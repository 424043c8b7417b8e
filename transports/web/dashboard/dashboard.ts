/**
 * The admin dashboard at `GET /dashboard` (`--enable-dashboard`, default on):
 * one static page (page.html with page.css, page.js and organizations.js from
 * this folder, inlined at startup) that signs in with the admin secret
 * through `admin_login` and then drives the server's own REST admin API with
 * the `service-admin` cookie: users, webhooks, email templates, the audit
 * log, organizations (their teams and members' roles in organizations.js),
 * SSO connections and SCIM tokens (sso.js), the authorization model and
 * tuples, the OAuth client registry (clients.js: list, register, rotate a
 * secret, delete), and an overview from
 * `admin_meta`. An answer of 401 (the session expired or was ended) brings
 * the sign-in form back. There is no build step: the files are served as
 * written.
 *
 * Nothing of the request is written into the page. Its inline style and
 * script are allowed by their SHA-256 in a strict Content-Security-Policy:
 * no other script, no inline handlers, fetches to its own origin only, no
 * framing, no native form submission, Trusted Types required for DOM sinks
 * (the one policy, `dashboard-preview`, feeds the sandboxed, script-less
 * frame that previews a rendered mail). Mail templates may carry `style`
 * attributes and https images, so the preview frame, which inherits this
 * policy, allows those two and nothing else.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { DEFAULT_EMAIL_TEMPLATES } from '../../../admin/index.ts';
import type { Config, HttpRoute, HttpRouteResponse } from '../../../server/index.ts';

/** The flags the dashboard page reads. */
export type DashboardConfig = Pick<Config, 'enableDashboard' | 'organizationName' | 'organizationLogo'> & Partial<Pick<Config, 'organizationRoles'>>;

const read = (name: string): string => readFileSync(new URL(name, import.meta.url), 'utf8');

const STYLE = read('./page.css');
const SCRIPT = read('./page.js');
/** The organization section's teams and roles, a second inline script with its own hash. */
const ORGANIZATIONS_SCRIPT = read('./organizations.js');
/** The SSO and SCIM section (its own file; it registers its loader with page.js). */
const SSO_SCRIPT = read('./sso.js');
/** The OAuth client registry section's script (its own file, after page.js). */
const CLIENTS_SCRIPT = read('./clients.js');
const PAGE_HTML = read('./page.html');

/**
 * The page for a configuration. Its data block holds the organization (`--organization-name`,
 * `--organization-logo`: the header and the mail preview's `organization.*`) and the built-in mail
 * templates, shown (and previewed) for events without a stored one, and the roles an organization member
 * may hold (owner, admin, member and `--organization-roles`). A JSON data block is not executed,
 * so the policy need not allow it; `<` is escaped so the text cannot close the element.
 */
function pageHtml(organization: { name: string; logo: string }, organizationRoles: readonly string[]): string {
  const data = JSON.stringify({ organization, templates: DEFAULT_EMAIL_TEMPLATES, organization_roles: ['owner', 'admin', 'member', ...organizationRoles] }).replace(/</g, '\\u003c');
  return PAGE_HTML.replace('<style>/*STYLE*/</style>', () => `<style>${STYLE}</style>`)
    .replace('<script>/*SCRIPT*/</script>', () => `<script type="application/json" id="dashboard-data">${data}</script>\n<script>${SCRIPT}</script>`)
    .replace('<script>/*ORGANIZATIONS*/</script>', () => `<script>${ORGANIZATIONS_SCRIPT}</script>`)
    .replace('<script>/*SSO_SCRIPT*/</script>', () => `<script>${SSO_SCRIPT}</script>`)
    .replace('<script>/*CLIENTS_SCRIPT*/</script>', () => `<script>${CLIENTS_SCRIPT}</script>`);
}

const hash = (text: string): string => `'sha256-${createHash('sha256').update(text, 'utf8').digest('base64')}'`;

/** The dashboard's policy: its own inline style and script (by hash), fetches to its own origin, no framing, no native form posts. */
export const DASHBOARD_CSP = [
  "default-src 'none'",
  `script-src ${hash(SCRIPT)} ${hash(ORGANIZATIONS_SCRIPT)} ${hash(SSO_SCRIPT)} ${hash(CLIENTS_SCRIPT)}`,
  `style-src ${hash(STYLE)}`,
  "style-src-attr 'unsafe-inline'",
  'img-src data: https:',
  "connect-src 'self'",
  "form-action 'none'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
  "require-trusted-types-for 'script'",
  'trusted-types dashboard-preview',
].join('; ');

/** The dashboard at `/dashboard` (and `/dashboard/`) when `--enable-dashboard` is on. */
export function dashboardRoutes(c: DashboardConfig): HttpRoute[] {
  if (!c.enableDashboard) return [];
  const page: HttpRouteResponse = {
    html: pageHtml({ name: c.organizationName ?? 'Latchkey', logo: c.organizationLogo ?? '' }, c.organizationRoles ?? []),
    headers: {
      'content-security-policy': DASHBOARD_CSP,
      'cache-control': 'no-store',
      pragma: 'no-cache',
      'x-frame-options': 'DENY',
      'x-content-type-options': 'nosniff',
      'referrer-policy': 'same-origin',
    },
  };
  const handler = async (): Promise<HttpRouteResponse> => page;
  return [{ path: '/dashboard', handler }, { path: '/dashboard/', handler }];
}
