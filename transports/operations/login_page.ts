/**
 * The built-in login page at `GET /app` (`--enable-login-page`, default on):
 * where `/authorize` sends a browser without a session, with the whole
 * authorization request as the query. The page signs the user in through
 * `POST /v1/login` (and `POST /v1/verify_otp` when the login answers an MFA
 * challenge), then goes to `/authorize?<the same query>` so the request
 * resumes and the client receives its answer. Without an authorization
 * request in the query (no `client_id`) it shows "Signed in".
 * `POST /v1/forgot_password` sends a reset link.
 *
 * It also opens the email links (transports/operations/link_mail.ts
 * `linkBase`): `/app?token=…` (sign-up verification, magic link) posts
 * `POST /v1/verify_email` and signs in (through the code step when MFA
 * applies); `/app/reset-password?token=…` asks for the new password twice
 * and posts `POST /v1/reset_password`, then offers the sign-in form.
 *
 * One static document: nothing of the request is written into it (the script
 * reads `location.search` itself and writes only through `textContent`). Its
 * inline style and script are allowed by their SHA-256 in a strict
 * Content-Security-Policy (no other script, no inline handlers, no framing,
 * no native form submission, Trusted Types required for DOM sinks).
 */
import { createHash } from 'node:crypto';
import type { HttpRouteResponse, Services } from '../services.ts';

const STYLE = `
:root{color-scheme:light dark;font-family:system-ui,sans-serif}
body{margin:0;min-height:100vh;display:grid;place-items:center;background:Canvas;color:CanvasText}
main{width:min(22rem,90vw);padding:2rem;border:1px solid GrayText;border-radius:.5rem}
h1{font-size:1.4rem;margin:0 0 1rem}
label{display:block;margin:.75rem 0 .25rem}
input{box-sizing:border-box;width:100%;padding:.5rem;font:inherit}
button{margin-top:1rem;padding:.5rem 1rem;font:inherit;cursor:pointer}
.link{background:none;border:none;padding:0;color:LinkText;text-decoration:underline}
[hidden]{display:none!important}
#error{color:#c62828;margin-top:1rem}
#notice{margin-top:1rem}
#enrol code{word-break:break-all}
#enrol img{display:block;margin:.5rem 0}
`;

const SCRIPT = `
'use strict';
(() => {
  const $ = (id) => document.getElementById(id);
  const query = location.search;
  const params = new URLSearchParams(query);
  const resetPath = /\\/app\\/reset-password\\/?$/.test(location.pathname);
  const base = location.pathname.replace(/\\/app(\\/reset-password)?\\/?$/, '/');
  const token = params.get('token');
  let challenge = null;
  let viaLink = false;
  const show = (id, text) => { const el = $(id); el.textContent = text; el.hidden = text === ''; };
  const clear = () => { show('error', ''); show('notice', ''); };
  const busy = (on) => { for (const b of document.querySelectorAll('button')) b.disabled = on; };
  async function call(op, input) {
    let res;
    try {
      res = await fetch(base + 'v1/' + op, {
        method: 'POST',
        credentials: 'same-origin',
        headers: { 'content-type': 'application/json', accept: 'application/json' },
        body: JSON.stringify(input),
      });
    } catch {
      throw new Error('The server could not be reached. Try again.');
    }
    let body = {};
    try { body = await res.json(); } catch { body = {}; }
    if (!res.ok) throw new Error(typeof body.message === 'string' && body.message ? body.message : 'Request failed (' + res.status + ')');
    return body;
  }
  function done() {
    if (params.has('client_id')) { location.assign(base + 'authorize' + query); return; }
    $('login').hidden = true;
    $('reset').hidden = true;
    $('mfa').hidden = true;
    show('signed-in', 'Signed in');
  }
  function startChallenge(body) {
    if (body.should_show_totp_screen) challenge = { is_totp: true, prompt: 'Enter the code from your authenticator app.' };
    else if (body.should_show_email_otp_screen) challenge = { is_totp: false, prompt: 'Enter the code sent to your email.' };
    else if (body.should_show_mobile_otp_screen) challenge = { is_totp: false, prompt: 'Enter the code sent to your phone.' };
    else return false;
    $('login').hidden = true;
    $('mfa').hidden = false;
    show('mfa-prompt', challenge.prompt);
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
  $('login').addEventListener('submit', async (e) => {
    e.preventDefault();
    clear(); busy(true);
    try {
      const body = await call('login', { email: $('email').value.trim(), password: $('password').value });
      if (!startChallenge(body)) done();
    } catch (err) { show('error', err.message); }
    finally { busy(false); }
  });
  $('mfa').addEventListener('submit', async (e) => {
    e.preventDefault();
    clear(); busy(true);
    try {
      await call('verify_otp', { email: (viaLink ? $('mfa-email') : $('email')).value.trim(), otp: $('otp').value.trim(), is_totp: challenge.is_totp });
      done();
    } catch (err) { show('error', err.message); }
    finally { busy(false); }
  });
  $('forgot').addEventListener('click', async () => {
    clear();
    const email = $('email').value.trim();
    if (!email) { show('error', 'Enter your email first.'); $('email').focus(); return; }
    busy(true);
    try {
      const body = await call('forgot_password', { email });
      show('notice', typeof body.message === 'string' ? body.message : 'Check your email.');
    } catch (err) { show('error', err.message); }
    finally { busy(false); }
  });
  function signInForm() {
    $('title').textContent = 'Sign in';
    $('reset').hidden = true;
    $('login').hidden = false;
  }
  $('reset').addEventListener('submit', async (e) => {
    e.preventDefault();
    clear();
    const password = $('new-password').value;
    const confirmPassword = $('confirm-password').value;
    if (password !== confirmPassword) { show('error', 'The two passwords differ.'); $('confirm-password').focus(); return; }
    busy(true);
    try {
      const body = await call('reset_password', { token, password, confirm_password: confirmPassword });
      $('new-password').value = '';
      $('confirm-password').value = '';
      history.replaceState(null, '', location.pathname);
      signInForm();
      show('notice', (typeof body.message === 'string' && body.message ? body.message : 'Password changed.') + ' Sign in with the new password.');
      $('email').focus();
    } catch (err) { show('error', err.message); }
    finally { busy(false); }
  });
  async function openLink() {
    // The token is used up by this call: it leaves the address bar and the history.
    history.replaceState(null, '', location.pathname);
    viaLink = true;
    show('notice', 'Checking your link…');
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
  if (resetPath) {
    $('title').textContent = 'Set a new password';
    if (token) { $('reset').hidden = false; $('new-password').focus(); }
    else { show('error', 'This password reset link is incomplete: open the whole link from the email, or ask for a new one.'); signInForm(); }
  } else if (token && !params.has('client_id')) {
    void openLink();
  } else {
    signInForm();
  }
})();
`;

const HTML = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="same-origin">
<title>Sign in</title>
<style>${STYLE}</style>
</head>
<body>
<main>
<h1 id="title">Sign in</h1>
<noscript>This page needs JavaScript.</noscript>
<form id="login" method="post" autocomplete="on" hidden>
<label for="email">Email</label>
<input id="email" name="email" type="email" autocomplete="username" required>
<label for="password">Password</label>
<input id="password" name="password" type="password" autocomplete="current-password" required>
<button id="submit" type="submit">Sign in</button>
<p><button id="forgot" class="link" type="button">Forgot password?</button></p>
</form>
<form id="mfa" method="post" hidden>
<p id="mfa-prompt"></p>
<div id="enrol" hidden>
<p>Add this key to your authenticator app:</p>
<img id="enrol-qr" alt="QR code of the key" hidden>
<p><code id="enrol-secret"></code></p>
<p><code id="enrol-uri"></code></p>
<p>Recovery codes (shown once, keep them safe): <code id="enrol-codes"></code></p>
</div>
<div id="mfa-who" hidden>
<label for="mfa-email">Email</label>
<input id="mfa-email" name="email" type="email" autocomplete="username">
</div>
<label for="otp">Code</label>
<input id="otp" name="otp" inputmode="numeric" autocomplete="one-time-code" maxlength="16" required>
<button id="verify" type="submit">Verify</button>
</form>
<form id="reset" method="post" hidden>
<label for="new-password">New password</label>
<input id="new-password" name="new-password" type="password" autocomplete="new-password" required>
<label for="confirm-password">Confirm the new password</label>
<input id="confirm-password" name="confirm-password" type="password" autocomplete="new-password" required>
<button id="reset-submit" type="submit">Set password</button>
</form>
<p id="signed-in" role="status" hidden></p>
<p id="notice" role="status" hidden></p>
<p id="error" role="alert" hidden></p>
</main>
<script>${SCRIPT}</script>
</body>
</html>
`;

const hash = (text: string): string => `'sha256-${createHash('sha256').update(text, 'utf8').digest('base64')}'`;

/** The page's policy: only its own inline style and script (by hash), fetches to its own origin, no framing, no native form posts. */
export const LOGIN_PAGE_CSP = [
  "default-src 'none'",
  `script-src ${hash(SCRIPT)}`,
  `style-src ${hash(STYLE)}`,
  'img-src data:',
  "connect-src 'self'",
  "form-action 'none'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
  "require-trusted-types-for 'script'",
  'trusted-types',
].join('; ');

const PAGE: HttpRouteResponse = {
  html: HTML,
  headers: {
    'content-security-policy': LOGIN_PAGE_CSP,
    'cache-control': 'no-store',
    pragma: 'no-cache',
    'x-frame-options': 'DENY',
    'referrer-policy': 'same-origin',
  },
};

/** Serves the login page at `/app` (and `/app/`, and `/app/reset-password` for reset links) when `--enable-login-page` is on. Called by `plugOAuth`. */
export function plugLoginPage(services: Services): void {
  if (!services.config.enableLoginPage) return;
  const handler = async (): Promise<HttpRouteResponse> => PAGE;
  (services.httpRoutes ??= []).push({ path: '/app', handler }, { path: '/app/', handler }, { path: '/app/reset-password', handler });
}
