/**
 * The admin dashboard at `GET /dashboard` (`--enable-dashboard`, default on):
 * one static page (page.html with the design system of design.ts plus
 * page.css, and one script per section from this folder, inlined at startup)
 * that signs in with the admin secret through `admin_login` and then drives
 * the server's own REST admin API with the `service-admin` cookie. core.js
 * holds what every section shares (requests, DOM building, messages next to
 * their control, the confirmation dialog, sign-in, navigation, the
 * overview); users.js (users, their sessions and passkeys, invitations),
 * webhooks.js, templates.js (email templates with a live preview),
 * organizations.js (organizations, members, teams, domains), sso.js (SSO
 * connections and SCIM tokens), audit.js, authz.js (the authorization model,
 * tuples and the tester) and clients.js (the OAuth client registry) each
 * register their section with core.js. An answer of 401 (the session expired
 * or was ended) brings the sign-in form back. There is no build step: the
 * files are served as written.
 *
 * Every word of the page comes from the catalogues of messages/ in the
 * reader's language: the reader's saved choice (the `latchkey_lang` cookie
 * the sign-in page's language menu sets), else the best of `Accept-Language`,
 * else English; Arabic is laid out right to left. The page is rendered once
 * per language, on that language's first request: page.html's `{{key}}` slots are filled with the
 * escaped message, and the scripts' words travel in the JSON data block.
 *
 * Nothing of the request is written into the page. Its inline style and
 * scripts are allowed by their SHA-256 in a strict Content-Security-Policy
 * (the same for every language: the data block is not a script): no other
 * script, no inline handlers, fetches to its own origin only, no framing, no
 * native form submission, Trusted Types required for DOM sinks (the one
 * policy, `dashboard-preview`, feeds the sandboxed, script-less frame that
 * previews a rendered mail). Mail templates may carry `style` attributes and
 * https images, so the preview frame, which inherits this policy, allows
 * those two and nothing else.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { EMAIL_LANGUAGES, EMAIL_TEMPLATE_EVENTS, defaultTemplate } from '../../../admin/index.ts';
import type { Config, HttpRoute, HttpRouteResponse } from '../../../server/index.ts';
import { DESIGN_CSS, escapeHtml } from '../design.ts';
import { LANGUAGE_COOKIE, perLanguage, pickLanguage } from '../i18n.ts';
import { DASHBOARD_MESSAGES, DASHBOARD_RTL_LANGUAGES } from './messages/index.ts';

/** The flags the dashboard page reads. */
export type DashboardConfig = Pick<Config, 'enableDashboard' | 'organizationName' | 'organizationLogo'> & Partial<Pick<Config, 'organizationRoles'>>;

const read = (name: string): string => readFileSync(new URL(name, import.meta.url), 'utf8');

const STYLE = `${DESIGN_CSS}${read('./page.css')}`;
/** The section scripts in the order they run (core.js first: the others register with it). */
export const DASHBOARD_SCRIPT_FILES = ['core.js', 'users.js', 'webhooks.js', 'templates.js', 'organizations.js', 'sso.js', 'audit.js', 'authz.js', 'clients.js'] as const;
const SCRIPTS: ReadonlyMap<string, string> = new Map(DASHBOARD_SCRIPT_FILES.map((f) => [f, read(`./${f}`)]));
const PAGE_HTML = read('./page.html');

/** Each language's name in itself, for the email template's language menu. */
const LANGUAGE_NAMES: Readonly<Record<string, string>> = { en: 'English', de: 'Deutsch', fr: 'Français', es: 'Español', ja: '日本語', ar: 'العربية' };
/**
 * The built-in mail templates by language (`''`, every language, is English) and event: what the template section
 * shows for an event and language without a stored template. Built with the first page rendered, not at start.
 */
let defaultTemplates: Record<string, Record<string, unknown>> | undefined;
const builtInTemplates = (): Record<string, Record<string, unknown>> =>
  (defaultTemplates ??= Object.fromEntries(
    ['', ...EMAIL_LANGUAGES].map((lang) => [lang, Object.fromEntries(EMAIL_TEMPLATE_EVENTS.map((event) => [event, defaultTemplate(event, lang || 'en')]))]),
  ));
const TEMPLATE_LANGUAGES = EMAIL_LANGUAGES.map((code) => ({ code, name: LANGUAGE_NAMES[code] ?? code }));

/** The languages the dashboard is shown in, English (the default) first. */
export const DASHBOARD_LANGUAGES: readonly string[] = Object.freeze(Object.keys(DASHBOARD_MESSAGES));

/**
 * The page for a configuration in a language. Its data block holds the page's words, the organization
 * (`--organization-name`, `--organization-logo`: the header and the mail preview's `organization.*`), the
 * built-in mail templates in each language, shown (and previewed) for an event and language without a
 * stored one, the languages a template may be stored for, and the roles an
 * organization member may hold (owner, admin, member and `--organization-roles`). A JSON data block is not
 * executed, so the policy need not allow it; `<` is escaped so the text cannot close the element.
 */
function pageHtml(organization: { name: string; logo: string }, organizationRoles: readonly string[], lang: string): string {
  const messages = DASHBOARD_MESSAGES[lang] ?? DASHBOARD_MESSAGES['en']!;
  const data = JSON.stringify({ organization, templates: builtInTemplates(), template_languages: TEMPLATE_LANGUAGES, organization_roles: ['owner', 'admin', 'member', ...organizationRoles], messages }).replace(/</g, '\\u003c');
  // A logo is shown only from https or as inline data (the policy's img-src); it is decoration, named by the heading next to it.
  const logo = /^(https:|data:image\/)/.test(organization.logo) ? `<img class="logo" src="${escapeHtml(organization.logo)}" alt="" height="32">` : '';
  const slots: Record<string, string> = { lang, dir: DASHBOARD_RTL_LANGUAGES.has(lang) ? 'rtl' : 'ltr', logo };
  const html = PAGE_HTML.replace(/\{\{([A-Za-z]+)\}\}/g, (_m, key: string) => {
    if (Object.hasOwn(slots, key)) return slots[key]!;
    const text = (messages as Record<string, string>)[key];
    if (text === undefined) throw new Error(`page.html names the message ${key}, which the catalogue lacks`);
    return escapeHtml(text.replace('{name}', organization.name));
  });
  let out = html.replace('<style>/*STYLE*/</style>', () => `<style>${STYLE}</style>`);
  out = out.replace('<script>/*core.js*/</script>', () => `<script type="application/json" id="dashboard-data">${data}</script>\n<script>/*core.js*/</script>`);
  for (const [file, text] of SCRIPTS) out = out.replace(`<script>/*${file}*/</script>`, () => `<script>${text}</script>`);
  return out;
}

const hash = (text: string): string => `'sha256-${createHash('sha256').update(text, 'utf8').digest('base64')}'`;

/** The dashboard's policy: its own inline style and scripts (by hash), fetches to its own origin, no framing, no native form posts. */
export const DASHBOARD_CSP = [
  "default-src 'none'",
  `script-src ${[...SCRIPTS.values()].map(hash).join(' ')}`,
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

/** The dashboard at `/dashboard` (and `/dashboard/`) when `--enable-dashboard` is on, in the reader's language. */
export function dashboardRoutes(c: DashboardConfig): HttpRoute[] {
  if (!c.enableDashboard) return [];
  const headers = {
    'content-security-policy': DASHBOARD_CSP,
    'cache-control': 'no-store',
    pragma: 'no-cache',
    'x-frame-options': 'DENY',
    'x-content-type-options': 'nosniff',
    'referrer-policy': 'same-origin',
    vary: 'accept-language, cookie',
  };
  const organization = { name: c.organizationName ?? 'Latchkey', logo: c.organizationLogo ?? '' };
  const page = perLanguage(DASHBOARD_LANGUAGES, (lang): HttpRouteResponse => ({ html: pageHtml(organization, c.organizationRoles ?? [], lang), headers: { ...headers, 'content-language': lang } }));
  const handler = async (request: { cookies: Readonly<Record<string, string>>; acceptLanguage?: string | undefined }): Promise<HttpRouteResponse> =>
    page(pickLanguage(DASHBOARD_LANGUAGES, { saved: request.cookies[LANGUAGE_COOKIE], acceptLanguage: request.acceptLanguage }));
  return [{ path: '/dashboard', handler }, { path: '/dashboard/', handler }];
}
