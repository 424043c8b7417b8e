/**
 * The built-in login page at `GET /app` (`--enable-login-page`, default on):
 * where `/authorize` sends a browser without a session, with the whole
 * authorization request as the query. The page signs the user in by email
 * or phone number and password through `POST /v1/login` (and
 * `POST /v1/verify_otp` when the login answers an MFA challenge: a TOTP code,
 * with the key, its QR code and recovery codes shown at enrolment, or an
 * email or SMS code, which `POST /v1/resend_otp` sends again), then goes to
 * `/authorize?<the same query>` so the request resumes and the client
 * receives its answer. Without an authorization request in the query (no
 * `client_id`) it goes on to the account center (`/app/account`), unless it
 * has something to offer first: the user's organizations (or the one whose
 * invitation it accepted) or, with passkeys on, adding a passkey to an
 * account without one; it then stays, with a link to the account center.
 * Every text comes from the catalogues of login_messages.ts, in the language
 * i18n.ts picks. It also creates accounts
 * (`POST /v1/signup`, when sign-up is on), mails sign-in links
 * (`POST /v1/magic_link_login`, when magic links are on) and reset links
 * (`POST /v1/forgot_password`), and shows a link to `/oauth_login/<provider>`
 * for each social provider `GET /v1/meta` says is enabled, coming back to the
 * authorization request (or to the page). The organization's name and logo
 * (`--organization-name`, `--organization-logo`) head the page.
 *
 * It opens the email links (server/handlers/link_mail.ts `linkBase`):
 * `/app?token=…` (sign-up verification, magic link) posts
 * `POST /v1/verify_email` and signs in (through the code step when MFA
 * applies); `/app?token=…&type=invite_member` (an invitation) and
 * `/app/reset-password?token=…` ask for the new password twice and post
 * `POST /v1/reset_password`, then offer the sign-in form.
 * `/app?organization_invitation=…` (from `invite_organization_members`)
 * accepts the invitation once the user has signed in or up, and makes its
 * organization the session's active one; without one, a user of several
 * organizations is offered a button per organization that makes it active
 * (`switch_organization`).
 *
 * With passkeys on (`--enable-passkeys`, Meta's `is_passkey_enabled`) it
 * signs in with a passkey (`POST /v1/passkey_login_options`, then
 * `POST /v1/passkey_login`): from a button, usernameless or for the email
 * typed, and from the browser's autofill on the email field (conditional
 * mediation: `autocomplete="username webauthn"`); it creates accounts with a
 * passkey and no password (`passkey_signup_options`, `passkey_signup`),
 * answers a login's passkey challenge (`verify_passkey`), and once signed in
 * offers to add a passkey (`passkey_registration_options`, `add_passkey`).
 * The browser half of WebAuthn is `@simplewebauthn/browser`'s UMD build,
 * read from the installed package and inlined as a second script, allowed
 * by its hash like the page's own.
 *
 * One static document per configuration: nothing of the request is written
 * into it (the script reads `location.search` itself and writes only through
 * `textContent`). Its inline style and script are allowed by their SHA-256 in
 * a strict Content-Security-Policy (no other script, no inline handlers, no
 * framing, no native form submission, Trusted Types required for DOM sinks,
 * images inline or from the logo's origin only).
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type { Config, HttpRoute, HttpRouteRequest, HttpRouteResponse } from '../../server/index.ts';
import { LANGUAGE_COOKIE, LANGUAGE_NAMES, perLanguage, pickLanguage, type UserLocaleOf } from './i18n.ts';
import { LOGIN_MESSAGES, RTL_LANGUAGES } from './login_messages.ts';
import { DESIGN_CSS, escapeHtml } from './design.ts';
import { LOGIN_PAGE_SCRIPT } from './login_page_script.ts';

/** The flags the login page reads. */
export type LoginPageConfig = Pick<Config, 'enableLoginPage' | 'organizationName' | 'organizationLogo' | 'enablePasskeys'>;

/** `@simplewebauthn/browser`'s browser build (it defines `SimpleWebAuthnBrowser`), from the installed package. */
export const WEBAUTHN_SCRIPT = readFileSync(join(dirname(dirname(createRequire(import.meta.url).resolve('@simplewebauthn/browser'))), 'dist/bundle/index.umd.min.js'), 'utf8');

const STYLE = `${DESIGN_CSS}
body{display:grid;place-items:start center;padding:var(--s6) var(--s4)}
main{width:min(24rem,100%)}
@media (max-width:30rem){body{padding:var(--s4) var(--s3)}main.card{padding:var(--s4)}}
#enrol code{word-break:break-all}
#enrol img{display:block;margin:var(--s2) 0}
#logo{display:block;margin:0 auto var(--s2);max-width:100%}
#org{text-align:center;font-weight:600;margin:0 0 var(--s4)}
#orgs{display:grid;gap:var(--s2);margin-top:var(--s4)}
#after{display:grid;gap:var(--s2);margin-top:var(--s4)}
#social{display:grid;gap:var(--s2);margin-top:var(--s4);padding-top:var(--s4);border-top:1px solid var(--border)}
#social:empty,#social.off{display:none}
.links p{margin:var(--s1) 0}
#error{color:var(--danger)}
#notice,#signed-in{color:var(--ok)}
.language{margin-top:var(--s5);display:flex;align-items:center;gap:var(--s2);font-size:var(--text-sm)}
.language label{margin:0}
select{min-height:2.75rem;padding:var(--s1) var(--s2);font:inherit;color:var(--text);background:var(--surface);border:1px solid var(--muted);border-radius:var(--radius)}
.passkey{display:block;width:100%;margin-top:var(--s2)}
`;

const HTML_HEAD = `<!DOCTYPE html>
<html lang="{{lang}}" dir="{{dir}}">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="same-origin">
<title>{{signInTitle}}</title>
<style>${STYLE}</style>
</head>
<body>
<main class="card">
`;

const HTML_BODY = `<h1 id="title">{{signInTitle}}</h1>
<noscript>{{noscript}}</noscript>
<form id="login" method="post" autocomplete="on" hidden>
<label id="email-label" for="email">{{emailOrPhone}}</label>
<input id="email" name="email" type="text" inputmode="email" autocomplete="username webauthn" required>
<label for="password">{{password}}</label>
<input id="password" name="password" type="password" autocomplete="current-password" required>
<button id="submit" class="primary" type="submit">{{signInButton}}</button>
<button id="passkey-login" class="passkey" type="button" hidden>{{passkeyLogin}}</button>
<div class="links">
<p><button id="forgot" class="link" type="button">{{forgot}}</button></p>
<p><button id="magic" class="link" type="button" hidden>{{magic}}</button></p>
<p id="to-signup-p"><button id="to-signup" class="link" type="button">{{createAccount}}</button></p>
</div>
</form>
<form id="signup" method="post" autocomplete="on" hidden>
<label id="su-id-label" for="su-id">{{emailOrPhone}}</label>
<input id="su-id" name="username" type="text" inputmode="email" autocomplete="username" required>
<label for="su-given">{{nameOptional}}</label>
<input id="su-given" name="given-name" autocomplete="given-name">
<label for="su-password">{{password}}</label>
<input id="su-password" name="new-password" type="password" autocomplete="new-password" required>
<label for="su-confirm">{{confirmPassword}}</label>
<input id="su-confirm" name="confirm-password" type="password" autocomplete="new-password" required>
<button id="signup-submit" class="primary" type="submit">{{createAccountButton}}</button>
<button id="passkey-signup" class="passkey" type="button" hidden>{{passkeySignup}}</button>
<p><button id="to-login" class="link" type="button">{{haveAccount}}</button></p>
</form>
<form id="mfa" method="post" hidden>
<p id="mfa-prompt"></p>
<div id="enrol" hidden>
<p>{{addKey}}</p>
<img id="enrol-qr" alt="{{qrAlt}}" hidden>
<p><code id="enrol-secret"></code></p>
<p><code id="enrol-uri"></code></p>
<p>{{recoveryCodes}} <code id="enrol-codes"></code></p>
</div>
<div id="mfa-who" hidden>
<label for="mfa-email">{{email}}</label>
<input id="mfa-email" name="email" type="email" autocomplete="username">
</div>
<label for="otp">{{code}}</label>
<input id="otp" name="otp" inputmode="numeric" autocomplete="one-time-code" maxlength="16" required>
<button id="verify" class="primary" type="submit">{{verify}}</button>
<p><button id="resend" class="link" type="button" hidden>{{resendCode}}</button></p>
</form>
<form id="passkey-mfa" method="post" hidden>
<p id="passkey-prompt">{{passkeyPrompt}}</p>
<button id="passkey-verify" class="primary" type="submit">{{passkeyVerify}}</button>
</form>
<form id="reset" method="post" hidden>
<label for="new-password">{{newPassword}}</label>
<input id="new-password" name="new-password" type="password" autocomplete="new-password" required>
<label for="confirm-password">{{confirmNewPassword}}</label>
<input id="confirm-password" name="confirm-password" type="password" autocomplete="new-password" required>
<button id="reset-submit" class="primary" type="submit">{{setPassword}}</button>
</form>
<p id="signed-in" class="msg" role="status" hidden></p>
<div id="orgs" role="group" aria-label="{{chooseOrganization}}" hidden></div>
<div id="after" hidden>
<button id="add-passkey" class="passkey" type="button" hidden>{{addPasskey}}</button>
<a id="to-account" class="button primary">{{continueToAccount}}</a>
</div>
<p id="notice" class="msg" role="status" hidden></p>
<p id="error" class="msg" role="alert" hidden></p>
<nav id="social" aria-label="{{socialNav}}" hidden></nav>
<p class="language"><label for="lang">{{language}}</label><select id="lang">{{languageOptions}}</select></p>
</main>
<script type="application/json" id="messages">{{messagesJson}}</script>
<script>${LOGIN_PAGE_SCRIPT}</script>
</body>
</html>
`;


/**
 * The page for a configuration and a language: the organization's name (`--organization-name`) and logo
 * (`--organization-logo`, an http(s) URL) above the forms; with passkeys on, the WebAuthn browser
 * library before the page's script.
 */
function pageHtml(name: string, logo: string, lang: string, passkeys: boolean): string {
  const brand = [
    logo ? `<img id="logo" src="${escapeHtml(logo)}" alt="${escapeHtml(name)} logo" height="48">` : '',
    name ? `<p id="org">${escapeHtml(name)}</p>` : '',
  ].join('\n');
  const messages = LOGIN_MESSAGES[lang] ?? LOGIN_MESSAGES['en']!;
  const fill: Record<string, string> = {
    ...Object.fromEntries(Object.entries(messages).map(([k, v]) => [k, escapeHtml(v)])),
    lang,
    dir: RTL_LANGUAGES.has(lang) ? 'rtl' : 'ltr',
    languageOptions: Object.keys(LOGIN_MESSAGES)
      .map((l) => `<option value="${l}" lang="${l}"${l === lang ? ' selected' : ''}>${escapeHtml(LANGUAGE_NAMES[l] ?? l)}</option>`)
      .join(''),
    // A data block is not executed; `<` is escaped so that its text cannot close the element.
    messagesJson: JSON.stringify(messages).replace(/</g, '\\u003c'),
  };
  // Only the document's {{key}} slots are filled: the style and the script hold none (checked below), so their hashes hold for every language.
  const html = (HTML_HEAD + (brand.trim() ? `${brand.trim()}\n` : '') + HTML_BODY).replace(/\{\{(\w+)\}\}/g, (_, key: string) => {
    const value = fill[key];
    if (value === undefined) throw new Error(`login page: no text for {{${key}}}`);
    return value;
  });
  // The library is inserted after the slots are filled: its text is not scanned for them.
  return passkeys ? html.replace('<script>', () => `<script>${WEBAUTHN_SCRIPT}</script>\n<script>`) : html;
}

if (/\{\{\w+\}\}/.test(STYLE + LOGIN_PAGE_SCRIPT)) throw new Error('login page: the style or the script holds a {{key}} slot');

/** The languages the sign-in page is available in, English (the default) first. */
export const LOGIN_PAGE_LANGUAGES: readonly string[] = Object.freeze(Object.keys(LOGIN_MESSAGES));

/** The origin of an http(s) logo URL, allowed as an image source; undefined for anything else. */
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
 * The page's policy: only its own inline style and script (by hash; with passkeys, the WebAuthn
 * library's too), fetches to its own origin, images inline or from the logo's origin, no framing,
 * no native form posts.
 */
export function loginPageCsp(logo = '', passkeys = false): string {
  const origin = logoOrigin(logo);
  return [
    "default-src 'none'",
    `script-src ${passkeys ? `${hash(WEBAUTHN_SCRIPT)} ` : ''}${hash(LOGIN_PAGE_SCRIPT)}`,
    `style-src ${hash(STYLE)}`,
    `img-src data:${origin ? ` ${origin}` : ''}`,
    "connect-src 'self'",
    "form-action 'none'",
    "frame-ancestors 'none'",
    "base-uri 'none'",
    "require-trusted-types-for 'script'",
    'trusted-types',
  ].join('; ');
}

/** The policy of the page without a logo. */
export const LOGIN_PAGE_CSP = loginPageCsp();

/** The login page at `/app` (and `/app/`, and `/app/reset-password` for reset links) when `--enable-login-page` is on. */
export function loginPageRoutes(c: LoginPageConfig, userLocale?: UserLocaleOf): HttpRoute[] {
  if (!c.enableLoginPage) return [];
  // Only an http(s) logo is shown (the policy allows its origin); the name is text.
  const logo = logoOrigin(c.organizationLogo ?? '') ? (c.organizationLogo ?? '') : '';
  const headers = {
    'content-security-policy': loginPageCsp(logo, c.enablePasskeys),
    'cache-control': 'no-store',
    pragma: 'no-cache',
    'x-frame-options': 'DENY',
    'referrer-policy': 'same-origin',
    // The language follows these request headers; no cache may serve one reader's page to another.
    vary: 'Accept-Language, Cookie',
  };
  const page = perLanguage(LOGIN_PAGE_LANGUAGES, (lang): HttpRouteResponse => ({ html: pageHtml(c.organizationName ?? '', logo, lang, c.enablePasskeys), headers: { ...headers, 'content-language': lang } }));
  const handler = async (request: HttpRouteRequest): Promise<HttpRouteResponse> => {
    const lang = pickLanguage(LOGIN_PAGE_LANGUAGES, {
      uiLocales: request.query['ui_locales'],
      preferred: await userLocale?.(request.cookies),
      saved: request.cookies[LANGUAGE_COOKIE],
      acceptLanguage: request.acceptLanguage,
    });
    return page(lang);
  };
  return [{ path: '/app', handler }, { path: '/app/', handler }, { path: '/app/reset-password', handler }];
}
