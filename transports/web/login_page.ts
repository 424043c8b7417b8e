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
import { DESIGN_CSS, escapeHtml, PROVIDER_BRANDS } from './design.ts';

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

const SCRIPT = `
'use strict';
(() => {
  const $ = (id) => document.getElementById(id);
  // The page's words in its language (a JSON data block, not a script: the policy need not allow it).
  const M = JSON.parse($('messages').textContent);
  const t = (key, vars) => M[key].replace(/\\{(\\w+)\\}/g, (_, name) => String((vars || {})[name]));
  const query = location.search;
  const params = new URLSearchParams(query);
  const resetPath = /\\/app\\/reset-password\\/?$/.test(location.pathname);
  const base = location.pathname.replace(/\\/app(\\/reset-password)?\\/?$/, '/');
  const token = params.get('token');
  const invitation = params.get('type') === 'invite_member';
  const forms = ['login', 'signup', 'mfa', 'passkey-mfa', 'reset'];
  // Present when passkeys are on (the library's script precedes this one).
  const webauthn = window.SimpleWebAuthnBrowser;
  let passkeys = false;
  let passkeyOptions = null;
  let challenge = null;
  let viaLink = false;
  // Who the code step is for: {email} or {phone_number}, from the form that led there.
  let who = null;
  const show = (id, text) => { const el = $(id); el.textContent = text; el.hidden = text === ''; };
  const clear = () => { show('error', ''); show('notice', ''); };
  const busy = (on) => { for (const b of document.querySelectorAll('button')) b.disabled = on; };
  // The other ways to sign in go with the sign-in form only.
  const only = (id) => { for (const f of forms) $(f).hidden = f !== id; $('social').classList.toggle('off', id !== 'login'); };
  // An identifier with an @ is an email address; anything else is taken for a phone number.
  const identify = (value) => { const v = value.trim(); return v.includes('@') ? { email: v } : { phone_number: v }; };
  async function call(op, input, method) {
    let res;
    try {
      // The page's language, not the browser's: the server words its errors in it (a saved or chosen language can differ).
      const lang = document.documentElement.lang;
      res = await fetch(base + 'v1/' + op, method === 'GET'
        ? { credentials: 'same-origin', headers: { accept: 'application/json', 'accept-language': lang } }
        : { method: 'POST', credentials: 'same-origin', headers: { 'content-type': 'application/json', accept: 'application/json', 'accept-language': lang }, body: JSON.stringify(input) });
    } catch {
      throw new Error(t('unreachable'));
    }
    let body = {};
    try { body = await res.json(); } catch { body = {}; }
    if (!res.ok) throw new Error(typeof body.message === 'string' && body.message ? body.message : t('requestFailed', { status: res.status }));
    return body;
  }
  const orgInvitation = params.get('organization_invitation');
  // After sign-in: an organization invitation from the link is accepted and its organization made active;
  // otherwise the user's organizations are offered, one button each, to make one active.
  async function organizationsAfterSignIn() {
    if (orgInvitation) {
      const accepted = await call('accept_organization_invitation', { token: orgInvitation });
      history.replaceState(null, '', location.pathname);
      await call('switch_organization', { organization_id: accepted.organization.id });
      show('signed-in', t('signedInTo', { name: accepted.organization.name }));
      return true;
    }
    let list = [];
    try {
      const mine = await call('organizations', { pagination: { page: 1, limit: 100 } });
      list = Array.isArray(mine.organizations) ? mine.organizations : [];
    } catch { return false; }
    if (list.length === 0) return false;
    const box = $('orgs');
    box.replaceChildren();
    for (const o of list) {
      const b = document.createElement('button');
      b.type = 'button';
      b.className = 'org';
      b.textContent = o.name;
      b.addEventListener('click', async () => {
        clear(); busy(true);
        try {
          await call('switch_organization', { organization_id: o.id });
          box.hidden = true;
          show('signed-in', t('signedInTo', { name: o.name }));
        } catch (err) { show('error', err.message); }
        finally { busy(false); }
      });
      box.append(b);
    }
    box.hidden = false;
    return true;
  }
  function done() {
    if (params.has('client_id')) { location.assign(base + 'authorize' + query); return; }
    // A direct sign-in lands on the account center.
    only('');
    $('title').textContent = t('signedIn');
    show('signed-in', t('signedIn'));
    void afterSignIn();
  }
  // The account center is where a direct sign-in lands, unless this page has something to offer first:
  // the user's organizations (or the invitation just accepted), or adding a passkey when the account has none.
  async function afterSignIn() {
    let offer = false;
    try { offer = await organizationsAfterSignIn(); } catch (err) { show('error', err.message); offer = true; }
    await ready;
    if (passkeys) {
      try {
        const mine = await call('passkeys', {});
        if (Array.isArray(mine.passkeys) && mine.passkeys.length === 0) { $('add-passkey').hidden = false; offer = true; }
      } catch { /* the offer is optional */ }
    }
    if (!offer) { location.assign(base + 'app/account'); return; }
    $('to-account').href = base + 'app/account';
    $('after').hidden = false;
  }
  // A WebAuthn error names what happened in the browser (cancelled, timed out, not allowed).
  const passkeyError = (err) => (err && err.name === 'NotAllowedError' ? t('passkeyCancelled') : (err && err.message) || t('passkeyFailed'));
  // One passkey sign-in at a time: the autofill request and the button may both get an answer, and a second sign-in
  // would end the first one's session (a login never keeps a presented session) while the page moves on with it.
  let passkeySigningIn = false;
  async function passkeySignIn(email, conditional) {
    const input = email ? { email } : {};
    const begun = await call('passkey_login_options', input);
    let credential;
    try {
      credential = await webauthn.startAuthentication({ optionsJSON: begun.options, useBrowserAutofill: conditional });
    } catch (err) { throw new Error(passkeyError(err)); }
    if (passkeySigningIn) return undefined;
    passkeySigningIn = true;
    try {
      const body = await call('passkey_login', { ceremony_id: begun.ceremony_id, credential });
      done();
      return body;
    } finally {
      passkeySigningIn = false;
    }
  }
  async function autofill() {
    // Conditional mediation: the email field's autofill offers this site's passkeys while the form waits.
    try {
      if (!passkeys || !(await webauthn.browserSupportsWebAuthnAutofill())) return;
      await passkeySignIn('', true);
    } catch (err) {
      // Another ceremony (the passkey button) aborts this one: nothing to say then.
      if (err && err.message && !/abort/i.test(err.message) && !$('login').hidden) show('error', err.message);
    }
  }
  async function verifyPasskey() {
    clear(); busy(true);
    try {
      let credential;
      try {
        credential = await webauthn.startAuthentication({ optionsJSON: passkeyOptions });
      } catch (err) { throw new Error(passkeyError(err)); }
      await call('verify_passkey', { credential });
      done();
    } catch (err) { show('error', err.message); }
    finally { busy(false); }
  }
  function startChallenge(body) {
    if (body.should_show_passkey_screen && body.passkey_options) {
      passkeyOptions = body.passkey_options;
      only('passkey-mfa');
      $('title').textContent = t('verifyTitle');
      void verifyPasskey();
      return true;
    }
    const email = body.should_show_email_otp_screen;
    if (body.should_show_totp_screen) challenge = { is_totp: true, prompt: t('promptTotp') };
    else if (email) challenge = { is_totp: false, prompt: t('promptEmail') };
    else if (body.should_show_mobile_otp_screen) challenge = { is_totp: false, prompt: t('promptPhone') };
    else return false;
    only('mfa');
    $('title').textContent = t('verifyTitle');
    show('mfa-prompt', challenge.prompt);
    $('resend').hidden = challenge.is_totp;
    // After a link the login form was not filled: the code step names the account itself.
    $('mfa-who').hidden = !viaLink;
    $('mfa-email').required = viaLink;
    if (typeof body.authenticator_secret === 'string') {
      $('enrol').hidden = false;
      $('enrol-secret').textContent = body.authenticator_secret;
      $('enrol-uri').textContent = typeof body.authenticator_uri === 'string' ? body.authenticator_uri : '';
      const codes = Array.isArray(body.authenticator_recovery_codes) ? body.authenticator_recovery_codes : [];
      $('enrol-codes').textContent = codes.join(' ');
      const img = body.authenticator_scanner_image;
      if (typeof img === 'string' && img.startsWith('data:image/')) { $('enrol-qr').src = img; $('enrol-qr').hidden = false; }
    }
    (viaLink ? $('mfa-email') : $('otp')).focus();
    return true;
  }
  const codeFor = () => (viaLink ? { email: $('mfa-email').value.trim() } : who || {});
  // Home-realm discovery: an address whose domain an organization signs in through its identity provider goes there.
  let discovered = '';
  async function homeRealm() {
    const email = $('email').value.trim();
    if (!email.includes('@') || email === discovered) return false;
    discovered = email;
    let found;
    try { found = await call('discover_organization', { email }); } catch { return false; }
    if (!found || typeof found.sso_url !== 'string' || !found.sso_url) return false;
    const back = params.has('client_id') ? location.origin + base + 'authorize' + query : location.origin + location.pathname;
    show('notice', t('redirectingSso', { name: found.name || '' }));
    location.assign(found.sso_url + '?redirect_uri=' + encodeURIComponent(back));
    return true;
  }
  $('email').addEventListener('change', () => { void homeRealm(); });
  $('login').addEventListener('submit', async (e) => {
    e.preventDefault();
    clear(); busy(true);
    try {
      if (await homeRealm()) return;
      who = identify($('email').value);
      const body = await call('login', { ...who, password: $('password').value });
      if (!startChallenge(body)) done();
    } catch (err) { show('error', err.message); }
    finally { busy(false); }
  });
  $('mfa').addEventListener('submit', async (e) => {
    e.preventDefault();
    clear(); busy(true);
    try {
      await call('verify_otp', { ...codeFor(), otp: $('otp').value.trim(), is_totp: challenge.is_totp });
      done();
    } catch (err) { show('error', err.message); }
    finally { busy(false); }
  });
  $('resend').addEventListener('click', async () => {
    clear(); busy(true);
    try {
      const body = await call('resend_otp', codeFor());
      show('notice', typeof body.message === 'string' && body.message ? body.message : t('newCodeSent'));
      $('otp').value = '';
      $('otp').focus();
    } catch (err) { show('error', err.message); }
    finally { busy(false); }
  });
  const emailFirst = () => {
    const email = $('email').value.trim();
    if (!email.includes('@')) { show('error', t('emailFirst')); $('email').focus(); return ''; }
    return email;
  };
  $('forgot').addEventListener('click', async () => {
    clear();
    const email = emailFirst();
    if (!email) return;
    busy(true);
    try {
      const body = await call('forgot_password', { email });
      show('notice', typeof body.message === 'string' ? body.message : t('checkEmail'));
    } catch (err) { show('error', err.message); }
    finally { busy(false); }
  });
  $('magic').addEventListener('click', async () => {
    clear();
    const email = emailFirst();
    if (!email) return;
    busy(true);
    try {
      // Without a redirect_uri the mailed link opens the server's own /app (linkBase), this page.
      const input = { email };
      if (params.has('state')) input.state = params.get('state');
      const body = await call('magic_link_login', input);
      show('notice', typeof body.message === 'string' ? body.message : t('checkEmailLink'));
    } catch (err) { show('error', err.message); }
    finally { busy(false); }
  });
  $('passkey-mfa').addEventListener('submit', (e) => { e.preventDefault(); void verifyPasskey(); });
  $('passkey-login').addEventListener('click', async () => {
    clear(); busy(true);
    try {
      const typed = $('email').value.trim();
      await passkeySignIn(typed.includes('@') ? typed : '', false);
    } catch (err) { show('error', err.message); }
    finally { busy(false); }
  });
  $('passkey-signup').addEventListener('click', async () => {
    clear();
    const email = $('su-id').value.trim();
    if (!email.includes('@')) { show('error', t('emailFirst')); $('su-id').focus(); return; }
    busy(true);
    try {
      const input = { email };
      const given = $('su-given').value.trim();
      if (given) input.given_name = given;
      const begun = await call('passkey_signup_options', input);
      let credential;
      try {
        credential = await webauthn.startRegistration({ optionsJSON: begun.options });
      } catch (err) { throw new Error(passkeyError(err)); }
      const finish = { ceremony_id: begun.ceremony_id, credential };
      if (params.has('state')) finish.state = params.get('state');
      const body = await call('passkey_signup', finish);
      if (body.access_token) { done(); return; }
      signInForm();
      $('email').value = email;
      show('notice', t('checkInbox', { email }));
    } catch (err) { show('error', err.message); }
    finally { busy(false); }
  });
  $('add-passkey').addEventListener('click', async () => {
    clear(); busy(true);
    try {
      const begun = await call('passkey_registration_options', {});
      let credential;
      try {
        credential = await webauthn.startRegistration({ optionsJSON: begun.options });
      } catch (err) { throw new Error(passkeyError(err)); }
      await call('add_passkey', { ceremony_id: begun.ceremony_id, credential });
      show('notice', t('passkeyAdded'));
      $('add-passkey').hidden = true;
    } catch (err) { show('error', err.message); }
    finally { busy(false); }
  });
  function signInForm() {
    $('title').textContent = t('signInTitle');
    only('login');
  }
  function signUpForm() {
    clear();
    $('title').textContent = t('signUpTitle');
    only('signup');
    $('su-id').focus();
  }
  $('to-signup').addEventListener('click', signUpForm);
  $('to-login').addEventListener('click', () => { clear(); signInForm(); $('email').focus(); });
  $('signup').addEventListener('submit', async (e) => {
    e.preventDefault();
    clear();
    if ($('su-password').value !== $('su-confirm').value) { show('error', t('passwordsDiffer')); $('su-confirm').focus(); return; }
    busy(true);
    try {
      who = identify($('su-id').value);
      const input = { ...who, password: $('su-password').value, confirm_password: $('su-confirm').value };
      const given = $('su-given').value.trim();
      if (given) input.given_name = given;
      const body = await call('signup', input);
      if (startChallenge(body)) return;
      // Only tokens mean a session: with email verification on, the answer names the user but signs nobody in.
      if (body.access_token) { done(); return; }
      signInForm();
      if (who.email) $('email').value = who.email;
      show('notice', who.email ? t('checkInbox', { email: who.email }) : (typeof body.message === 'string' && body.message ? body.message : t('checkMessages')));
    } catch (err) { show('error', err.message); }
    finally { busy(false); }
  });
  $('reset').addEventListener('submit', async (e) => {
    e.preventDefault();
    clear();
    const password = $('new-password').value;
    const confirmPassword = $('confirm-password').value;
    if (password !== confirmPassword) { show('error', t('passwordsDiffer')); $('confirm-password').focus(); return; }
    busy(true);
    try {
      const body = await call('reset_password', { token, password, confirm_password: confirmPassword });
      $('new-password').value = '';
      $('confirm-password').value = '';
      history.replaceState(null, '', location.pathname);
      signInForm();
      show('notice', invitation ? t('passwordSet') : (typeof body.message === 'string' && body.message ? body.message : t('passwordChanged')) + ' ' + t('signInWithNew'));
      $('email').focus();
    } catch (err) { show('error', err.message); }
    finally { busy(false); }
  });
  async function openLink() {
    // The token is used up by this call: it leaves the address bar and the history.
    history.replaceState(null, '', location.pathname);
    viaLink = true;
    show('notice', t('checkingLink'));
    try {
      const body = await call('verify_email', { token });
      show('notice', '');
      if (!startChallenge(body)) done();
    } catch (err) {
      viaLink = false;
      show('notice', '');
      show('error', err.message);
      signInForm();
    }
  }
  const BRANDS = ${JSON.stringify(PROVIDER_BRANDS)};
  async function features() {
    let meta;
    try { meta = await call('meta', undefined, 'GET'); } catch { return; }
    $('to-signup-p').hidden = meta.is_sign_up_enabled === false;
    $('magic').hidden = meta.is_magic_link_login_enabled !== true;
    passkeys = meta.is_passkey_enabled === true && typeof webauthn === 'object' && webauthn.browserSupportsWebAuthn();
    $('passkey-login').hidden = !passkeys;
    $('passkey-signup').hidden = !passkeys || meta.is_sign_up_enabled === false;
    if (!$('signed-in').hidden) $('add-passkey').hidden = !passkeys;
    if (passkeys && !$('login').hidden) void autofill();
    if (meta.is_mobile_basic_authentication_enabled !== true) for (const id of ['email-label', 'su-id-label']) $(id).textContent = t('email');
    // A provider's sign-in comes back to the authorization request being resumed, else to this page.
    const back = params.has('client_id') ? location.origin + base + 'authorize' + query : location.origin + location.pathname;
    const list = $('social');
    for (const [key, on] of Object.entries(meta)) {
      const m = /^is_([a-z0-9]+)_login_enabled$/.exec(key);
      if (!m || on !== true || m[1] === 'magic') continue;
      const brand = BRANDS[m[1]] || { name: m[1], colour: '#4f5663', initial: m[1].slice(0, 1).toUpperCase() };
      const name = m[1] === 'oidc' && typeof meta.oidc_display_name === 'string' && meta.oidc_display_name ? meta.oidc_display_name : brand.name;
      const a = document.createElement('a');
      a.className = 'button provider social';
      a.href = base + 'oauth_login/' + m[1] + '?redirect_uri=' + encodeURIComponent(back);
      const mark = document.createElement('span');
      mark.className = 'mark';
      mark.setAttribute('aria-hidden', 'true');
      mark.style.background = brand.colour;
      mark.textContent = brand.initial;
      a.append(mark, document.createTextNode(t('continueWith', { name })));
      list.append(a);
    }
    list.hidden = list.childElementCount === 0;
  }
  // The language menu: the choice is kept (a cookie) and wins over the browser's languages; this request's ui_locales follows it.
  $('lang').addEventListener('change', () => {
    const lang = $('lang').value;
    document.cookie = 'latchkey_lang=' + encodeURIComponent(lang) + '; Path=/; Max-Age=31536000; SameSite=Lax';
    const next = new URLSearchParams(location.search);
    if (next.has('ui_locales')) next.set('ui_locales', lang);
    location.assign(location.pathname + (next.toString() ? '?' + next.toString() : '') + location.hash);
  });
  const ready = features();
  if (resetPath || (token && invitation)) {
    $('title').textContent = invitation ? t('invitationTitle') : t('newPasswordTitle');
    if (invitation) show('notice', t('choosePassword'));
    if (token) { only('reset'); $('new-password').focus(); }
    else { show('error', t('resetIncomplete')); signInForm(); }
  } else if (token && !params.has('client_id')) {
    void openLink();
  } else if (new URLSearchParams(location.hash.slice(1)).has('access_token')) {
    // Back from a social provider with this page as the redirect URI: the session cookie is set.
    done();
  } else {
    signInForm();
  }
})();
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
<script>${SCRIPT}</script>
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

if (/\{\{\w+\}\}/.test(STYLE + SCRIPT)) throw new Error('login page: the style or the script holds a {{key}} slot');

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
    `script-src ${passkeys ? `${hash(WEBAUTHN_SCRIPT)} ` : ''}${hash(SCRIPT)}`,
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
