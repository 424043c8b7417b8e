/**
 * The account center at `GET /app/account` (with `--enable-login-page`):
 * where a direct sign-in on `/app` lands, and where a signed-in user manages
 * their account through the public API with the session cookie:
 * - profile: names and picture (`update_profile`);
 * - email and phone number, and the password, each re-authenticated with the
 *   current password (`update_profile` with `old_password`: the server
 *   refuses the change without it, ASVS v5 7.5.1);
 * - the second factor on or off (`update_profile`
 *   `is_multi_factor_auth_enabled`; which factor applies follows the server's
 *   flags from `meta`, a TOTP app being enrolled at the next sign-in); with
 *   TOTP on, new recovery codes (`regenerate_recovery_codes`, shown once)
 *   or a reset of the authenticator app (`reset_totp`), each with the
 *   current password again (or, for an account without one, a code);
 * - sessions and devices (`list_sessions`): each with its browser, IP, first
 *   and last seen, the current one marked; end one or all the others
 *   (`revoke_session`);
 * - sign-in methods (`linked_identities`, with the provider account's
 *   address): disconnect a provider (`unlink_identity`; the server refuses
 *   the last way in), connect another (`POST /oauth_link/<provider>`, then
 *   the provider, back here with `linked` or `error_reason`);
 * - with passkeys on, the account's passkeys (`passkeys`): add one
 *   (`passkey_registration_options`, `add_passkey`), rename or delete one
 *   (`rename_passkey`, `delete_passkey`); a passkey holder's sensitive change
 *   first confirms with a passkey (`passkey_step_up_options`,
 *   `passkey_step_up`) when the server asks for it (`step_up_required`);
 * - connected apps (`consented_apps`): the clients that are not first-party
 *   the user allowed, with the scopes; "Remove access" (`revoke_consent`)
 *   makes the next request of that client ask again;
 * - the user's organizations with their role (`organizations`), one made the
 *   session's active organization (`switch_organization`);
 * - delete the account (`deactivate_account` with the current password,
 *   which the server checks again), and sign out (`logout`).
 * Without a session the page goes to `/app`.
 *
 * Like `/app`, one static document per configuration: the script reads the
 * API's answers and writes them only through `textContent` and DOM nodes.
 * Its inline style and script are allowed by their SHA-256 in a strict
 * Content-Security-Policy with Trusted Types required. Every status or error
 * message sits next to the control it concerns, in a live region that
 * screen readers announce.
 */
import { createHash } from 'node:crypto';
import type { HttpRoute, HttpRouteRequest, HttpRouteResponse } from '../../server/index.ts';
import { ACCOUNT_MESSAGES } from './account_messages.ts';
import { ACCOUNT_PAGE_BODY } from './account_page_body.ts';
import { LANGUAGE_COOKIE, LANGUAGE_NAMES, perLanguage, pickLanguage, type UserLocaleOf } from './i18n.ts';
import { RTL_LANGUAGES } from './login_messages.ts';
import { DESIGN_CSS, escapeHtml } from './design.ts';
import { ACCOUNT_PAGE_SCRIPT as SCRIPT } from './account_page_script.ts';
import { WEBAUTHN_SCRIPT, type LoginPageConfig } from './login_page.ts';

const STYLE = `${DESIGN_CSS}
.page{width:min(44rem,100%);margin:0 auto;padding:var(--s4)}
select{display:block;width:100%;min-height:2.75rem;padding:var(--s2) var(--s3);font:inherit;color:var(--text);background:var(--surface);border:1px solid var(--muted);border-radius:var(--radius)}
header.top{display:flex;flex-wrap:wrap;align-items:center;justify-content:space-between;gap:var(--s3);margin:var(--s4) 0}
header.top h1{margin:0}
#logo{display:block;max-height:48px;max-width:100%}
#org{font-weight:600;margin:0}
nav.toc ul{display:flex;flex-wrap:wrap;gap:var(--s2) var(--s4);list-style:none;padding:0;margin:0 0 var(--s4)}
section.card{margin:0 0 var(--s4)}
.who{display:flex;align-items:center;gap:var(--s3);min-height:3rem;min-width:0;flex:1 1 12rem}
.who>div{min-width:0}
#who-name,#account-email{overflow-wrap:anywhere}
#avatar{width:3rem;height:3rem;border-radius:50%;object-fit:cover;background:var(--border)}
.grid2{display:grid;grid-template-columns:1fr;gap:0 var(--s4)}
@media (min-width:40rem){.grid2{grid-template-columns:1fr 1fr}}
form button.primary{width:auto}
ul.rows{list-style:none;padding:0;margin:0}
ul.rows li{display:flex;flex-wrap:wrap;align-items:center;justify-content:space-between;gap:var(--s2) var(--s4);padding:var(--s3) 0;border-top:1px solid var(--border)}
ul.rows li:first-child{border-top:none}
.row-main{min-width:0;flex:1 1 16rem}
.row-main strong{display:block;overflow-wrap:anywhere}
.row-main .muted{overflow-wrap:anywhere}
.badge{display:inline-block;margin-left:var(--s2);padding:0 var(--s2);border-radius:999px;border:1px solid var(--ok);color:var(--ok);font-size:var(--text-sm);font-weight:600}
.actions{display:flex;flex-wrap:wrap;gap:var(--s2);margin-top:var(--s3)}
#connect{display:grid;gap:var(--s2);margin-top:var(--s3)}
ul.codes{list-style:none;padding:0;margin:var(--s3) 0 0;display:grid;grid-template-columns:repeat(auto-fill,minmax(9rem,1fr));gap:var(--s2)}
ul.codes code{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:1rem}
`;

const HTML_HEAD = `<!DOCTYPE html>
<html lang="{{lang}}" dir="{{dir}}">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="same-origin">
<title>{{title}}</title>
<style>${STYLE}</style>
</head>
<body>
<div class="page">
`;


const HTML_TAIL = `<script>${SCRIPT}</script>
</body>
</html>
`;


function logoOrigin(logo: string): string | undefined {
  try {
    const url = new URL(logo);
    return url.protocol === 'https:' || url.protocol === 'http:' ? url.origin : undefined;
  } catch {
    return undefined;
  }
}

const hash = (text: string): string => `'sha256-${createHash('sha256').update(text, 'utf8').digest('base64')}'`;

/**
 * The account center's policy: its own inline style and script (by hash),
 * fetches to its own origin, pictures from https origins (a profile picture
 * is any https URL the user chose) or inline, no framing, no native form
 * posts, Trusted Types required.
 */
export function accountPageCsp(passkeys = false): string {
  return [
    "default-src 'none'",
    `script-src ${passkeys ? `${hash(WEBAUTHN_SCRIPT)} ` : ''}${hash(SCRIPT)}`,
    `style-src ${hash(STYLE)}`,
    // The marks' colours are set through the CSSOM (element.style), which style-src does not govern.
    'img-src data: https:',
    "connect-src 'self'",
    "form-action 'none'",
    "frame-ancestors 'none'",
    "base-uri 'none'",
    "require-trusted-types-for 'script'",
    'trusted-types',
  ].join('; ');
}

/** The page for a configuration: the organization's name and logo above the account. */
function pageHtml(name: string, logo: string, lang: string, passkeys: boolean): string {
  const brand = [
    logo ? `<img id="logo" src="${escapeHtml(logo)}" alt="${escapeHtml(name || 'Organization')} logo" height="48">` : '',
    name ? `<p id="org">${escapeHtml(name)}</p>` : '',
  ].filter(Boolean).join('\n');
  const messages = ACCOUNT_MESSAGES[lang] ?? ACCOUNT_MESSAGES['en']!;
  const fill: Record<string, string> = {
    ...Object.fromEntries(Object.entries(messages).map(([k, v]) => [k, escapeHtml(v)])),
    lang,
    dir: RTL_LANGUAGES.has(lang) ? 'rtl' : 'ltr',
    // A data block is not executed; `<` is escaped so that its text cannot close the element.
    messagesJson: JSON.stringify(messages).replace(/</g, '\\u003c'),
    // The languages the saved preference (the profile's locale) may name, each in its own words; the script selects the saved one.
    languageOptions: Object.keys(ACCOUNT_MESSAGES)
      .map((l) => `<option value="${l}" lang="${l}">${escapeHtml(LANGUAGE_NAMES[l] ?? l)}</option>`)
      .join(''),
  };
  // Only the document's {{key}} slots are filled: the style and the script hold none (checked below), so their hashes hold for every language.
  const html = (HTML_HEAD + (brand ? `${brand}\n` : '') + ACCOUNT_PAGE_BODY + HTML_TAIL).replace(/\{\{(\w+)\}\}/g, (_, key: string) => {
    const value = fill[key];
    if (value === undefined) throw new Error(`account page: no text for {{${key}}}`);
    return value;
  });
  // With passkeys on, the WebAuthn browser library precedes the page's script (inserted after the slots are filled).
  return passkeys ? html.replace('<script>', () => `<script>${WEBAUTHN_SCRIPT}</script>\n<script>`) : html;
}

if (/\{\{\w+\}\}/.test(STYLE + SCRIPT)) throw new Error('account page: the style or the script holds a {{key}} slot');

/** The account center at `/app/account` when `--enable-login-page` is on. */
export function accountPageRoutes(c: LoginPageConfig, userLocale?: UserLocaleOf): HttpRoute[] {
  if (!c.enableLoginPage) return [];
  const logo = logoOrigin(c.organizationLogo ?? '') ? (c.organizationLogo ?? '') : '';
  const headers = {
    'content-security-policy': accountPageCsp(c.enablePasskeys),
    'cache-control': 'no-store',
    pragma: 'no-cache',
    'x-frame-options': 'DENY',
    'referrer-policy': 'same-origin',
    vary: 'Accept-Language, Cookie',
  };
  const languages = Object.keys(ACCOUNT_MESSAGES);
  const page = perLanguage(languages, (lang): HttpRouteResponse => ({ html: pageHtml(c.organizationName ?? '', logo, lang, c.enablePasskeys), headers: { ...headers, 'content-language': lang } }));
  // The language as on the sign-in page: ui_locales, the user's saved preference, this browser's choice, Accept-Language.
  const handler = async (request: HttpRouteRequest): Promise<HttpRouteResponse> =>
    page(
      pickLanguage(languages, {
        uiLocales: request.query['ui_locales'],
        preferred: await userLocale?.(request.cookies),
        saved: request.cookies[LANGUAGE_COOKIE],
        acceptLanguage: request.acceptLanguage,
      }),
    );
  return [{ path: '/app/account', handler }, { path: '/app/account/', handler }];
}
