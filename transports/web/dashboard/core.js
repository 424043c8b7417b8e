// The admin dashboard's shared core (served inline first by transports/web/dashboard/dashboard.ts, allowed
// by its SHA-256): the page's words (`t`, from the JSON data block in the reader's language), requests to the
// server's own REST API with the service-admin cookie, DOM building through createElement/textContent only,
// messages next to the control they concern, the confirmation dialog, paging, sign-in and sign-out, and the
// navigation between sections. Each section's script runs after this one and takes what it needs from
// `window.latchkeyDashboard`, registering its loader in `loaders` (and what to do on entering in `onEnter`).
'use strict';
(() => {
  const $ = (id) => document.getElementById(id);
  const base = location.pathname.replace(/\/dashboard\/?$/, '/');
  const DATA = JSON.parse($('dashboard-data').textContent || '{}');
  const M = DATA.messages || {};
  const LANG = document.documentElement.lang || 'en';

  /** The message `key` in the page's language, its `{name}` slots filled from `vars`. */
  function t(key, vars) {
    const text = M[key];
    if (typeof text !== 'string') throw new Error('no message ' + key);
    return text.replace(/\{(\w+)\}/g, (_m, name) => String((vars || {})[name] ?? ''));
  }

  // ------------------------------------------------------------ requests
  class ApiError extends Error {
    constructor(status, body) {
      super(typeof body.message === 'string' && body.message ? body.message : t('requestFailed', { status }));
      this.status = status;
      this.code = body.code;
      this.reason = body.reason;
      this.details = body.details;
    }
  }

  async function request(method, path, input) {
    let res;
    try {
      res = await fetch(base + 'v1/' + path, {
        method,
        credentials: 'same-origin',
        cache: 'no-store',
        headers: method === 'POST' ? { 'content-type': 'application/json', accept: 'application/json', 'accept-language': LANG } : { accept: 'application/json', 'accept-language': LANG },
        body: method === 'POST' ? JSON.stringify(input || {}) : undefined,
      });
    } catch {
      throw new ApiError(0, { message: t('unreachable') });
    }
    let body = {};
    try { body = await res.json(); } catch { body = {}; }
    if (!res.ok) throw new ApiError(res.status, body || {});
    return body;
  }

  /** An admin call: a refused session (expired, signed out elsewhere) goes back to the sign-in form. */
  async function api(path, input, method = 'POST') {
    try {
      return await request(method, path, input);
    } catch (err) {
      if (err instanceof ApiError && err.status === 401) signedOut(t('sessionEnded'));
      throw err;
    }
  }

  // ------------------------------------------------------------ DOM
  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k === 'class') node.className = v;
      else if (k === 'text') node.textContent = v;
      else if (k.startsWith('on')) node.addEventListener(k.slice(2), v);
      else node.setAttribute(k, v === true ? '' : String(v));
    }
    for (const c of children) if (c !== undefined && c !== null) node.append(c);
    return node;
  }
  const clear = (node) => node.replaceChildren();
  const dateFormat = new Intl.DateTimeFormat(LANG, { dateStyle: 'medium', timeStyle: 'short' });
  const when = (seconds) => (seconds ? dateFormat.format(new Date(seconds * 1000)) : '');
  const badge = (text, kind) => el('span', { class: 'badge ' + (kind || ''), text });
  /** A table row saying the table is empty. */
  const emptyRow = (columns, key) => el('tr', {}, el('td', { colspan: columns, class: 'muted', text: t(key) }));

  // ------------------------------------------------------------ messages
  let toastTimer;
  /** A short message in the corner (a live region, so screen readers announce it). */
  function toast(text, bad) {
    const box = $('toast');
    box.textContent = text;
    box.className = bad ? 'bad' : '';
    box.hidden = false;
    clearTimeout(toastTimer);
    toastTimer = setTimeout(() => { box.hidden = true; }, bad ? 8000 : 4000);
  }
  /**
   * The message line of a control: a live region placed right after it (inside a form, at its end),
   * made once and kept, so the text lands next to what it concerns and is announced.
   */
  function messageLine(scope) {
    const inside = scope.tagName === 'FORM' || scope.tagName === 'SECTION' || (scope.tagName === 'DIV' && !scope.classList.contains('row'));
    const holder = inside ? scope : scope.parentElement;
    if (!holder) return null;
    let line = inside ? holder.querySelector(':scope > .msg[data-auto]') : scope.nextElementSibling;
    if (!line || !line.matches('.msg[data-auto]')) {
      line = el('p', { class: 'msg', 'data-auto': '', 'aria-live': 'polite' });
      if (inside) scope.append(line); else scope.after(line);
    }
    return line;
  }
  /** Shows `text` next to `scope` (an error when `bad`), or in the corner when there is no scope. */
  function say(scope, text, bad) {
    const line = scope && scope.tagName !== 'TBODY' && scope.tagName !== 'TR' ? messageLine(scope) : null;
    if (!line) { toast(text, bad); return; }
    line.textContent = text;
    line.className = 'msg ' + (bad ? 'error' : 'ok');
    line.setAttribute('role', bad ? 'alert' : 'status');
  }
  /**
   * Runs an action with the buttons of `scope` disabled; a failure is shown next to `scope` (or in the
   * corner), a session that ended sends back to the sign-in form instead.
   */
  async function guarded(action, scope) {
    const buttons = scope ? [...scope.querySelectorAll('button')] : [];
    for (const b of buttons) b.disabled = true;
    const line = scope && scope.tagName !== 'TBODY' && scope.tagName !== 'TR' ? messageLine(scope) : null;
    if (line && line.classList.contains('error')) line.textContent = '';
    try { return await action(); } catch (err) {
      if (!(err instanceof ApiError && err.status === 401)) say(scope, err.message, true);
      return undefined;
    } finally { for (const b of buttons) b.disabled = false; }
  }
  function confirmDialog(text, okLabel) {
    const d = $('confirm');
    $('confirm-text').textContent = text;
    $('confirm-ok').textContent = okLabel || t('delete');
    return new Promise((resolve) => {
      const back = document.activeElement;
      const finish = (value) => {
        d.close();
        $('confirm-ok').removeEventListener('click', ok);
        $('confirm-cancel').removeEventListener('click', cancel);
        d.removeEventListener('cancel', cancel);
        if (back && back.isConnected && typeof back.focus === 'function') back.focus();
        resolve(value);
      };
      const ok = () => finish(true);
      const cancel = () => finish(false);
      $('confirm-ok').addEventListener('click', ok);
      $('confirm-cancel').addEventListener('click', cancel);
      d.addEventListener('cancel', cancel);
      d.showModal();
      $('confirm-cancel').focus();
    });
  }
  function pager(prefix, state, load) {
    $(prefix + '-prev').addEventListener('click', () => { if (state.page > 1) { state.page--; void load(); } });
    $(prefix + '-next').addEventListener('click', () => { if (state.page * state.limit < state.total) { state.page++; void load(); } });
  }
  function showPage(prefix, state) {
    const pages = Math.max(1, Math.ceil(state.total / state.limit));
    $(prefix + '-page').textContent = t('pageOf', { page: state.page, pages, total: state.total });
    $(prefix + '-prev').disabled = state.page <= 1;
    $(prefix + '-next').disabled = state.page >= pages;
  }
  function fillSelect(select, values) {
    clear(select);
    for (const v of values || []) select.append(el('option', { value: v, text: v }));
  }

  // ------------------------------------------------------------ session
  const loaders = {};
  const onEnter = [];
  const D = { loaders, onEnter, meta: null, data: DATA, t, api, el, clear, when, badge, emptyRow, toast, say, guarded, confirmDialog, pager, showPage, fillSelect };
  window.latchkeyDashboard = D;

  function signedOut(message) {
    $('app').hidden = true;
    $('signin').hidden = false;
    const e = $('signin-error');
    e.textContent = message || '';
    e.hidden = !message;
    $('admin-secret').value = '';
    $('admin-secret').focus();
  }
  $('signin-form').addEventListener('submit', async (ev) => {
    ev.preventDefault();
    $('signin-error').hidden = true;
    $('signin-submit').disabled = true;
    try {
      await request('POST', 'admin/login', { admin_secret: $('admin-secret').value });
      $('admin-secret').value = '';
      await enter();
    } catch (err) {
      $('signin-error').textContent = err.status === 401 ? t('wrongSecret') : err.message;
      $('signin-error').hidden = false;
      $('admin-secret').focus();
    } finally { $('signin-submit').disabled = false; }
  });
  $('logout').addEventListener('click', async () => {
    try { await request('POST', 'admin/logout', {}); } catch { /* signed out either way */ }
    signedOut(t('signedOut'));
  });
  async function enter() {
    D.meta = await api('admin/meta', undefined, 'GET');
    $('server-version').textContent = 'v' + D.meta.server_version;
    for (const f of onEnter) f(D.meta);
    $('signin').hidden = true;
    $('app').hidden = false;
    route();
  }

  // ------------------------------------------------------------ navigation
  function route() {
    const name = location.hash.replace(/^#/, '') || 'overview';
    const section = loaders[name] ? name : 'overview';
    for (const s of document.querySelectorAll('[data-view]')) s.hidden = s.id !== section;
    for (const a of document.querySelectorAll('nav a')) {
      if (a.dataset.section === section) a.setAttribute('aria-current', 'page');
      else a.removeAttribute('aria-current');
    }
    // Opening a section slides the session (admin_session extends it); an ended one shows the sign-in form.
    void api('admin/session', undefined, 'GET').catch(() => {});
    void guarded(loaders[section], $(section));
  }
  window.addEventListener('hashchange', () => { if (!$('app').hidden) route(); });

  // ------------------------------------------------------------ overview
  loaders.overview = async () => {
    const meta = D.meta;
    const counts = $('counts');
    const total = async (path) => (await api(path, { pagination: { page: 1, limit: 1 } })).pagination.total;
    const items = [['countUsers', total('admin/users')], ['countWebhooks', total('admin/webhooks')], ['countTemplates', total('admin/email_templates')], ['countAudit', total('admin/audit_logs')]];
    if (meta.is_fga_enabled) items.push(['countTuples', api('admin/fga/tuples/read', { page_size: 100 }).then((r) => r.tuples.length + (r.continuation_token ? '+' : ''))]);
    // The cards keep their place while their numbers load (no layout shift): each starts with a placeholder.
    clear(counts);
    for (const [key, value] of items) {
      const card = el('div', { class: 'card' }, el('strong', { text: '…' }), el('span', { text: t(key) }));
      counts.append(card);
      value.then((v) => { card.firstChild.textContent = String(v); }, () => { card.firstChild.textContent = '—'; });
    }
    const features = $('features');
    clear(features);
    features.append(el('li', { text: t('serverVersion', { version: meta.server_version }) }));
    for (const [k, v] of Object.entries(meta)) {
      if (/^is_.*_enabled$/.test(k) && v === true) features.append(el('li', {}, el('code', { text: k })));
    }
    if (meta.roles && meta.roles.length) features.append(el('li', { text: t('rolesList', { roles: meta.roles.join(', ') }) }));
  };

  // ------------------------------------------------------------ start (after every section's script has registered)
  document.addEventListener('DOMContentLoaded', async () => {
    try {
      await request('GET', 'admin/session');
      await enter();
    } catch (err) {
      signedOut(err.status === 401 || err.status === undefined ? '' : err.message);
    }
  });
})();
