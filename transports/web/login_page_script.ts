/**
 * The sign-in page's script (transports/web/login_page.ts serves it inline,
 * allowed by its SHA-256): sign-in, sign-up, the second-factor steps,
 * passkeys, magic links and password resets through the public API, written
 * to the page only through `textContent` and DOM nodes. Its words come from
 * the page's JSON data block of messages (transports/web/login_messages.ts).
 */
import { PROVIDER_BRANDS } from './design.ts';

export const LOGIN_PAGE_SCRIPT = `
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
