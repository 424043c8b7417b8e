/**
 * The account center's script (transports/web/account_page.ts serves it
 * inline, allowed by its SHA-256): it reads the public API's answers with
 * the session cookie and writes them only through `textContent` and DOM
 * nodes. Its words come from the page's JSON data block of messages
 * (transports/web/account_messages.ts); it holds no `{{key}}` slot, so its
 * hash is the same in every language.
 */
import { PROVIDER_BRANDS } from './design.ts';

export const ACCOUNT_PAGE_SCRIPT = `
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
  // A button of the page: its words, its class, and the fuller name a screen reader gives it when the words alone are ambiguous.
  const button = (text, kind, label) => {
    const b = document.createElement('button');
    b.type = 'button';
    b.className = kind;
    b.textContent = text;
    if (label) b.setAttribute('aria-label', label);
    return b;
  };
  const say = (id, text, kind) => { const el = $(id); el.textContent = text; el.className = 'msg' + (kind ? ' ' + kind : ''); };
  async function call(op, input, method) {
    let res;
    try {
      // The page's language, not the browser's: the server words its errors in it (a saved or chosen language can differ).
      const lang = document.documentElement.lang;
      res = await fetch(base + 'v1/' + op, method === 'GET'
        ? { credentials: 'same-origin', headers: { accept: 'application/json', 'accept-language': lang } }
        : { method: 'POST', credentials: 'same-origin', headers: { 'content-type': 'application/json', accept: 'application/json', 'accept-language': lang }, body: JSON.stringify(input || {}) });
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
      const rename = button(t('renamePasskey'), 'secondary');
      rename.addEventListener('click', () => act('passkeys-msg', [rename, remove], async () => {
        await call('rename_passkey', { id: p.id, name: name.value.trim() });
        await loadPasskeys();
        return t('passkeyRenamed');
      }));
      const remove = button(t('deletePasskey'), 'danger');
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
      const use = button(t('makeActive'), 'secondary', t('makeActiveOf', { name: o.name }));
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
      const remove = button(t('removeAccess'), 'secondary', t('removeAccessOf', { name: a.client_name }));
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
        const end = button(t('endSession'), 'secondary', t('endSessionOf', { name: s.browser + (s.ip ? ', ' + s.ip : '') }));
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
    for (const i of body.identities) rows.push({ label: i.display_name, provider: i.provider, email: i.email });
    for (const r of rows) {
      const li = document.createElement('li');
      const main = document.createElement('div');
      main.className = 'row-main who';
      if (r.provider) main.append(mark(r.provider));
      const label = document.createElement('strong');
      label.textContent = r.label;
      // The provider account's address (it may differ from the account's), under the provider's name.
      const text = document.createElement('div');
      text.append(label);
      if (r.email) {
        const email = document.createElement('span');
        email.className = 'muted';
        email.textContent = r.email;
        text.append(email);
      }
      main.append(text);
      li.append(main);
      if (r.provider) {
        const b = button(t('unlink'), 'secondary', t('unlinkOf', { name: r.label }));
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
      // The link is bound to this session: the server starts the provider's authorization and the page goes there.
      const b = document.createElement('button');
      b.type = 'button';
      b.className = 'provider';
      b.append(mark(m[1]), document.createTextNode(t('connect', { name: providerName(m[1]) })));
      b.addEventListener('click', () => act('methods-msg', [b], async () => {
        let res;
        try {
          res = await fetch(base + 'oauth_link/' + m[1], { method: 'POST', credentials: 'same-origin', headers: { 'content-type': 'application/json', accept: 'application/json' }, body: JSON.stringify({ redirect_uri: location.origin + location.pathname }) });
        } catch { throw new Error(t('unreachable')); }
        let out = {};
        try { out = await res.json(); } catch { out = {}; }
        if (res.status === 401) { location.assign(base + 'app'); throw new Error(t('sessionOver')); }
        if (!res.ok || typeof out.location !== 'string') throw new Error(t('linkFailed', { reason: out.error_description || res.status }));
        location.assign(out.location);
        return '';
      }));
      connect.append(b);
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

  // Back from a provider after "Connect": the outcome is in the query, shown once and then taken out of the address.
  function linkOutcome() {
    const q = new URLSearchParams(location.search);
    const linked = q.get('linked');
    const reason = q.get('error_reason');
    if (!linked && !q.get('error')) return;
    history.replaceState(null, '', location.pathname);
    if (linked) return say('methods-msg', t('linkedOk', { name: providerName(linked) }), 'ok');
    say('methods-msg', reason === 'identity_owned_by_another_account' ? t('linkOwnedElsewhere') : reason === 'link_session_mismatch' ? t('linkSessionLost') : t('linkFailed', { reason: q.get('error_description') || q.get('error') }), 'error');
  }

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
      linkOutcome();
      $('content').removeAttribute('aria-busy');
    } catch (err) { say('top-msg', err.message, 'error'); }
  })();
})();
`;
