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
 * - sign-in methods (`linked_identities`): unlink a provider
 *   (`unlink_identity`; the server refuses the last way in), connect another
 *   through `/oauth_login/<provider>`;
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
import { DESIGN_CSS, escapeHtml, PROVIDER_BRANDS } from './design.ts';
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
.badge{display:inline-block;margin-left:var(--s2);padding:0 var(--s2);border-radius:999px;border:1px solid var(--ok);color:var(--ok);font-size:var(--text-sm);font-weight:600}
.actions{display:flex;flex-wrap:wrap;gap:var(--s2);margin-top:var(--s3)}
#connect{display:grid;gap:var(--s2);margin-top:var(--s3)}
ul.codes{list-style:none;padding:0;margin:var(--s3) 0 0;display:grid;grid-template-columns:repeat(auto-fill,minmax(9rem,1fr));gap:var(--s2)}
ul.codes code{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:1rem}
`;

const SCRIPT = `
'use strict';
(() => {
  const $ = (id) => document.getElementById(id);
  // The page's words in its language (a JSON data block, not a script: the policy need not allow it).
  const M = JSON.parse($('messages').textContent);
  const t = (key, vars) => M[key].replace(/\\{(\\w+)\\}/g, (_, name) => String((vars || {})[name]));
  const base = location.pathname.replace(/\\/app\\/account\\/?$/, '/');
  const BRANDS = ${JSON.stringify(PROVIDER_BRANDS)};
  let me = null;
  let meta = {};
  const say = (id, text, kind) => { const el = $(id); el.textContent = text; el.className = 'msg' + (kind ? ' ' + kind : ''); };
  async function call(op, input, method) {
    let res;
    try {
      res = await fetch(base + 'v1/' + op, method === 'GET'
        ? { credentials: 'same-origin', headers: { accept: 'application/json' } }
        : { method: 'POST', credentials: 'same-origin', headers: { 'content-type': 'application/json', accept: 'application/json' }, body: JSON.stringify(input || {}) });
    } catch {
      throw new Error(t('unreachable'));
    }
    let body = {};
    try { body = await res.json(); } catch { body = {}; }
    // The session is gone (ended elsewhere, expired): back to the sign-in page. A wrong current password is another 401, answered here.
    if (res.status === 401 && body.reason === 'unauthenticated' && op !== 'login') { location.assign(base + 'app'); throw new Error(t('sessionOver')); }
    if (!res.ok) {
      const err = new Error(typeof body.message === 'string' && body.message ? body.message : t('requestFailed', { status: res.status }));
      err.reason = body.reason;
      throw err;
    }
    return body;
  }
  // Present when passkeys are on (the library's script precedes this one).
  const webauthn = window.SimpleWebAuthnBrowser;
  let passkeysOn = false;
  const passkeyError = (err) => (err && err.name === 'NotAllowedError' ? t('passkeyCancelled') : (err && err.message) || t('requestFailed', { status: 0 }));
  // A passkey holder's sensitive change (deleting the account, a new email or phone) needs a passkey step-up first:
  // asked for when the server answers step_up_required, then the change is sent again.
  async function withStepUp(op, input) {
    try { return await call(op, input); } catch (err) {
      if (err.reason !== 'step_up_required' || !passkeysOn) throw err;
    }
    const begun = await call('passkey_step_up_options', {});
    let credential;
    try { credential = await webauthn.startAuthentication({ optionsJSON: begun.options }); } catch (err) { throw new Error(passkeyError(err)); }
    await call('passkey_step_up', { ceremony_id: begun.ceremony_id, credential });
    return call(op, input);
  }
  // The account's passkeys: each renamed or deleted (never the last way in: the server refuses), and a new one added.
  async function loadPasskeys() {
    const body = await call('passkeys', {});
    const list = $('passkeys');
    list.replaceChildren();
    if (body.passkeys.length === 0) {
      const li = document.createElement('li');
      li.className = 'muted';
      li.textContent = t('noPasskeys');
      list.append(li);
    }
    for (const p of body.passkeys) {
      const li = document.createElement('li');
      const main = document.createElement('div');
      main.className = 'row-main';
      const label = document.createElement('label');
      label.className = 'visually-hidden';
      label.htmlFor = 'passkey-name-' + p.id;
      label.textContent = t('passkeyName');
      const name = document.createElement('input');
      name.id = 'passkey-name-' + p.id;
      name.value = p.name;
      name.maxLength = 64;
      const detail = document.createElement('span');
      detail.className = 'muted';
      detail.textContent = t('passkeyAddedOn', { date: when(p.created_at) });
      main.append(label, name, detail);
      const rename = document.createElement('button');
      rename.type = 'button';
      rename.className = 'secondary';
      rename.textContent = t('renamePasskey');
      rename.addEventListener('click', () => act('passkeys-msg', [rename, remove], async () => {
        await call('rename_passkey', { id: p.id, name: name.value.trim() });
        await loadPasskeys();
        return t('passkeyRenamed');
      }));
      const remove = document.createElement('button');
      remove.type = 'button';
      remove.className = 'danger';
      remove.textContent = t('deletePasskey');
      remove.addEventListener('click', () => act('passkeys-msg', [rename, remove], async () => {
        await call('delete_passkey', { id: p.id });
        await loadPasskeys();
        return t('passkeyDeleted');
      }));
      li.append(main, rename, remove);
      list.append(li);
    }
  }
  // The user's organizations with their role; the one chosen becomes the session's active organization (switch_organization).
  async function loadOrganizations() {
    let list = [];
    try {
      const body = await call('organizations', { pagination: { page: 1, limit: 100 } });
      list = Array.isArray(body.organizations) ? body.organizations : [];
    } catch { list = []; }
    const rows = $('organizations');
    rows.replaceChildren();
    for (const o of list) {
      const li = document.createElement('li');
      const main = document.createElement('div');
      main.className = 'row-main';
      const title = document.createElement('strong');
      title.textContent = o.name;
      const detail = document.createElement('span');
      detail.className = 'muted';
      detail.textContent = o.role ? t('roleIs', { role: o.role }) : o.slug;
      main.append(title, detail);
      const use = document.createElement('button');
      use.type = 'button';
      use.className = 'secondary';
      use.textContent = t('makeActive');
      use.setAttribute('aria-label', t('makeActiveOf', { name: o.name }));
      use.addEventListener('click', () => act('organizations-msg', [use], async () => {
        await call('switch_organization', { organization_id: o.id });
        return t('activeOrganization', { name: o.name });
      }));
      li.append(main, use);
      rows.append(li);
    }
    $('organizations-section').hidden = list.length === 0;
    $('organizations-link').hidden = list.length === 0;
  }
  $('add-passkey').addEventListener('click', () => act('passkeys-msg', [$('add-passkey')], async () => {
    const begun = await call('passkey_registration_options', {});
    let credential;
    try { credential = await webauthn.startRegistration({ optionsJSON: begun.options }); } catch (err) { throw new Error(passkeyError(err)); }
    await call('add_passkey', { ceremony_id: begun.ceremony_id, credential });
    await loadPasskeys();
    return t('passkeyAdded');
  }));
  // Runs one action of a form or button: its controls are disabled meanwhile, its message says how it went.
  async function act(msgId, controls, work) {
    say(msgId, '', '');
    for (const c of controls) c.disabled = true;
    try {
      const text = await work();
      if (text) say(msgId, text, 'ok');
    } catch (err) { say(msgId, err.message, 'error'); }
    finally { for (const c of controls) c.disabled = false; }
  }
  const formControls = (form) => Array.from(form.querySelectorAll('button'));
  const val = (id) => $(id).value.trim();
  const when = (seconds) => new Date(seconds * 1000).toLocaleString(document.documentElement.lang, { dateStyle: 'medium', timeStyle: 'short' });
  function mark(provider) {
    const b = BRANDS[provider] || { colour: '#4f5663', initial: provider.slice(0, 1).toUpperCase() };
    const m = document.createElement('span');
    m.className = 'mark';
    m.setAttribute('aria-hidden', 'true');
    m.style.background = b.colour;
    m.textContent = b.initial;
    return m;
  }
  const providerName = (p) => (p === 'oidc' && meta.oidc_display_name) ? meta.oidc_display_name : ((BRANDS[p] && BRANDS[p].name) || p);

  function showProfile() {
    const name = [me.given_name, me.family_name].filter(Boolean).join(' ');
    $('who-name').textContent = name || me.email || me.phone_number || t('title');
    $('account-email').textContent = me.email || me.phone_number || '';
    const pic = typeof me.picture === 'string' && /^https:\\/\\//.test(me.picture) ? me.picture : '';
    $('avatar').hidden = !pic;
    if (pic) $('avatar').src = pic;
    $('given').value = me.given_name || '';
    $('family').value = me.family_name || '';
    $('nickname').value = me.nickname || '';
    $('picture').value = me.picture || '';
    $('email').value = me.email || '';
    $('phone').value = me.phone_number || '';
    $('mfa-on').checked = me.is_multi_factor_auth_enabled === true;
    const saved = typeof me.locale === 'string' ? me.locale.toLowerCase().split('-')[0] : '';
    $('locale').value = Array.from($('locale').options).some((o) => o.value === saved) ? saved : '';
  }
  async function loadProfile() {
    me = await call('profile', undefined, 'GET');
    showProfile();
  }

  $('profile-form').addEventListener('submit', (e) => {
    e.preventDefault();
    void act('profile-msg', formControls(e.target), async () => {
      const input = { given_name: val('given'), family_name: val('family'), nickname: val('nickname') };
      if (val('picture') !== (me.picture || '')) input.picture = val('picture');
      const locale = $('locale').value;
      const before = typeof me.locale === 'string' ? me.locale.toLowerCase().split('-')[0] : '';
      if (locale !== before) input.locale = locale;
      await call('update_profile', input);
      if ('locale' in input) {
        // The saved language is the page's from now on (after ui_locales): this browser's choice follows it, and the page reloads in it.
        document.cookie = locale ? 'latchkey_lang=' + encodeURIComponent(locale) + '; Path=/; Max-Age=31536000; SameSite=Lax' : 'latchkey_lang=; Path=/; Max-Age=0; SameSite=Lax';
        location.reload();
        return t('profileSaved');
      }
      await loadProfile();
      return t('profileSaved');
    });
  });
  $('contact-form').addEventListener('submit', (e) => {
    e.preventDefault();
    void act('contact-msg', formControls(e.target), async () => {
      const input = { old_password: $('contact-password').value };
      if (val('email') !== (me.email || '')) input.email = val('email');
      if (val('phone') !== (me.phone_number || '')) input.phone_number = val('phone');
      if (!('email' in input) && !('phone_number' in input)) throw new Error(t('changeFirst'));
      const body = await withStepUp('update_profile', input);
      $('contact-password').value = '';
      await loadProfile();
      return typeof body.message === 'string' ? body.message : t('saved');
    });
  });
  $('password-form').addEventListener('submit', (e) => {
    e.preventDefault();
    void act('password-msg', formControls(e.target), async () => {
      if ($('new-password').value !== $('confirm-password').value) { $('confirm-password').focus(); throw new Error(t('passwordsDiffer')); }
      await call('update_profile', { old_password: $('old-password').value, new_password: $('new-password').value, confirm_new_password: $('confirm-password').value });
      for (const id of ['old-password', 'new-password', 'confirm-password']) $(id).value = '';
      await loadSessions();
      return t('passwordChanged');
    });
  });
  $('mfa-form').addEventListener('submit', (e) => {
    e.preventDefault();
    void act('mfa-msg', formControls(e.target), async () => {
      const on = $('mfa-on').checked;
      await call('update_profile', { is_multi_factor_auth_enabled: on });
      await loadProfile();
      return on ? t('mfaOn') : t('mfaOff');
    });
  });

  // The authenticator app: new recovery codes, or a reset; each proves the password again (or, without one, a code).
  const reauth = () => ($('totp-code-field').hidden ? { password: $('totp-password').value } : { otp: val('totp-code') });
  const clearReauth = () => { $('totp-password').value = ''; $('totp-code').value = ''; };
  $('totp-form').addEventListener('submit', (e) => {
    e.preventDefault();
    void act('totp-msg', formControls(e.target), async () => {
      const body = await withStepUp('regenerate_recovery_codes', reauth());
      clearReauth();
      const list = $('recovery-codes');
      list.replaceChildren();
      for (const c of body.recovery_codes) {
        const li = document.createElement('li');
        const code = document.createElement('code');
        code.textContent = c;
        li.append(code);
        list.append(li);
      }
      list.hidden = false;
      return t('recoveryCodesShown');
    });
  });
  $('reset-totp').addEventListener('click', () => act('totp-msg', formControls($('totp-form')), async () => {
    await withStepUp('reset_totp', reauth());
    clearReauth();
    $('recovery-codes').replaceChildren();
    $('recovery-codes').hidden = true;
    return t('appReset');
  }));

  // Applications that are not first-party and that the user allowed (consent): each access can be withdrawn.
  async function loadApps(keepShown) {
    const body = await call('consented_apps', {});
    const rows = $('apps');
    rows.replaceChildren();
    for (const a of body.apps) {
      const li = document.createElement('li');
      const main = document.createElement('div');
      main.className = 'row-main';
      const title = document.createElement('strong');
      title.textContent = a.client_name;
      const detail = document.createElement('span');
      detail.className = 'muted';
      detail.textContent = t('appScopes', { scopes: a.scopes.join(', ') });
      main.append(title, detail);
      const remove = document.createElement('button');
      remove.type = 'button';
      remove.className = 'secondary';
      remove.textContent = t('removeAccess');
      remove.setAttribute('aria-label', t('removeAccessOf', { name: a.client_name }));
      remove.addEventListener('click', () => act('apps-msg', [remove], async () => {
        await call('revoke_consent', { client_id: a.client_id });
        await loadApps(true);
        $('apps-title').focus();
        return t('accessRemoved', { name: a.client_name });
      }));
      li.append(main, remove);
      rows.append(li);
    }
    // After its last row is removed the section stays, for the message that says so.
    const shown = body.apps.length > 0 || keepShown === true;
    $('apps-section').hidden = !shown;
    $('apps-link').hidden = !shown;
  }

  async function loadSessions() {
    const body = await call('list_sessions', {});
    const list = $('sessions');
    list.replaceChildren();
    let others = 0;
    for (const s of body.sessions) {
      const li = document.createElement('li');
      const main = document.createElement('div');
      main.className = 'row-main';
      const title = document.createElement('strong');
      title.textContent = s.browser;
      if (s.current) { const b = document.createElement('span'); b.className = 'badge'; b.textContent = t('thisDevice'); title.append(b); }
      const detail = document.createElement('span');
      detail.className = 'muted';
      detail.textContent = (s.ip ? s.ip + ' · ' : '') + t('seen', { first: when(s.first_seen_at), last: when(s.last_seen_at) });
      main.append(title, detail);
      li.append(main);
      if (!s.current) {
        others++;
        const end = document.createElement('button');
        end.type = 'button';
        end.className = 'secondary';
        end.textContent = t('endSession');
        end.setAttribute('aria-label', t('endSessionOf', { name: s.browser + (s.ip ? ', ' + s.ip : '') }));
        end.addEventListener('click', () => act('sessions-msg', [end], async () => {
          await call('revoke_session', { id: s.id });
          await loadSessions();
          $('sessions-title').focus();
          return t('sessionEnded');
        }));
        li.append(end);
      }
      list.append(li);
    }
    $('end-others').hidden = others === 0;
  }
  $('end-others').addEventListener('click', () => act('sessions-msg', [$('end-others')], async () => {
    const body = await call('revoke_session', { all_others: true });
    await loadSessions();
    $('sessions-title').focus();
    return body.revoked === 1 ? t('oneOtherEnded') : t('othersEnded', { count: body.revoked });
  }));

  async function loadMethods() {
    const body = await call('linked_identities', {});
    const list = $('methods');
    list.replaceChildren();
    const rows = [];
    if (body.has_password) rows.push({ label: t('password'), provider: null });
    for (const i of body.identities) rows.push({ label: i.display_name, provider: i.provider });
    for (const r of rows) {
      const li = document.createElement('li');
      const main = document.createElement('div');
      main.className = 'row-main who';
      if (r.provider) main.append(mark(r.provider));
      const label = document.createElement('strong');
      label.textContent = r.label;
      main.append(label);
      li.append(main);
      if (r.provider) {
        const b = document.createElement('button');
        b.type = 'button';
        b.className = 'secondary';
        b.textContent = t('unlink');
        b.setAttribute('aria-label', t('unlinkOf', { name: r.label }));
        b.addEventListener('click', () => act('methods-msg', [b], async () => {
          const out = await call('unlink_identity', { provider: r.provider });
          await loadMethods();
          $('methods-title').focus();
          return out.message;
        }));
        li.append(b);
      }
      list.append(li);
    }
    const linked = new Set(body.identities.map((i) => i.provider));
    const connect = $('connect');
    connect.replaceChildren();
    for (const [key, on] of Object.entries(meta)) {
      const m = /^is_([a-z0-9]+)_login_enabled$/.exec(key);
      if (!m || on !== true || m[1] === 'magic' || linked.has(m[1])) continue;
      const a = document.createElement('a');
      a.className = 'button provider';
      a.href = base + 'oauth_login/' + m[1] + '?redirect_uri=' + encodeURIComponent(location.origin + location.pathname);
      a.append(mark(m[1]), document.createTextNode(t('connect', { name: providerName(m[1]) })));
      connect.append(a);
    }
    $('connect-help').hidden = connect.childElementCount === 0;
    $('totp-password-field').hidden = !body.has_password;
    $('totp-code-field').hidden = body.has_password;
    $('delete-password-field').hidden = !body.has_password;
    $('delete-password').required = body.has_password;
  }

  $('delete-form').addEventListener('submit', (e) => {
    e.preventDefault();
    void act('delete-msg', formControls(e.target), async () => {
      if (!$('delete-confirm').checked) { $('delete-confirm').focus(); throw new Error(t('tickToConfirm')); }
      // The current password, proven again by the server: a session left open on a shared computer is not enough to delete the account.
      const input = $('delete-password-field').hidden ? {} : { password: $('delete-password').value };
      try { await withStepUp('deactivate_account', input); }
      catch (err) { if (!$('delete-password-field').hidden) $('delete-password').focus(); throw err; }
      location.assign(base + 'app');
      return '';
    });
  });
  $('sign-out').addEventListener('click', () => act('top-msg', [$('sign-out')], async () => {
    await call('logout', {});
    location.assign(base + 'app');
    return '';
  }));

  (async () => {
    try {
      meta = await call('meta', undefined, 'GET').catch(() => ({}));
      await loadProfile();
      const factors = [meta.is_totp_mfa_enabled && t('factorApp'), meta.is_email_otp_mfa_enabled && t('factorEmail'), meta.is_sms_otp_mfa_enabled && t('factorSms')].filter(Boolean);
      $('mfa-help').textContent = t('askedFor', { factors: factors.join(t('or')) });
      $('mfa-form').hidden = meta.is_multi_factor_auth_enabled !== true || factors.length === 0;
      $('mfa-none').hidden = !$('mfa-form').hidden;
      $('totp-form').hidden = meta.is_totp_mfa_enabled !== true;
      passkeysOn = meta.is_passkey_enabled === true && typeof webauthn === 'object' && webauthn.browserSupportsWebAuthn();
      $('passkeys-box').hidden = !passkeysOn;
      await Promise.all([loadSessions(), loadMethods(), passkeysOn ? loadPasskeys() : null, loadOrganizations(), loadApps()]);
      $('content').removeAttribute('aria-busy');
    } catch (err) { say('top-msg', err.message, 'error'); }
  })();
})();
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
