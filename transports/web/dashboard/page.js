// The admin dashboard's script (served inline by transports/web/dashboard/dashboard.ts, allowed by its SHA-256).
// It talks only to the server's own REST API with the service-admin cookie, and writes to the DOM only
// through createElement/textContent; the one HTML sink is the sandboxed mail preview frame (Trusted Types
// policy `dashboard-preview`).
'use strict';
(() => {
  const $ = (id) => document.getElementById(id);
  const base = location.pathname.replace(/\/dashboard\/?$/, '/');
  const DATA = JSON.parse($('dashboard-data').textContent || '{}');
  const DEFAULTS = DATA.templates || {};
  const ORGANIZATION = DATA.organization || { name: 'Latchkey', logo: '' };
  const previewPolicy = window.trustedTypes ? window.trustedTypes.createPolicy('dashboard-preview', { createHTML: (s) => s }) : { createHTML: (s) => s };
  let meta = null;

  // ------------------------------------------------------------ plumbing
  class ApiError extends Error {
    constructor(status, body) {
      super(typeof body.message === 'string' && body.message ? body.message : 'Request failed (' + status + ')');
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
        headers: method === 'POST' ? { 'content-type': 'application/json', accept: 'application/json' } : { accept: 'application/json' },
        body: method === 'POST' ? JSON.stringify(input || {}) : undefined,
      });
    } catch {
      throw new ApiError(0, { message: 'The server could not be reached. Try again.' });
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
      if (err instanceof ApiError && err.status === 401) signedOut('Your session has ended. Sign in again.');
      throw err;
    }
  }

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
  const when = (seconds) => (seconds ? new Date(seconds * 1000).toISOString().replace('T', ' ').slice(0, 19) : '');
  const badge = (text, kind) => el('span', { class: 'badge ' + (kind || ''), text });

  let toastTimer;
  function toast(text, bad) {
    const t = $('toast');
    t.textContent = text;
    t.className = bad ? 'bad' : '';
    t.setAttribute('role', bad ? 'alert' : 'status');
    t.hidden = false;
    clearTimeout(toastTimer);
    toastTimer = setTimeout(() => { t.hidden = true; }, bad ? 8000 : 4000);
  }
  /** Runs an action with the buttons of `scope` disabled; failures become an error toast. */
  async function guarded(action, scope) {
    const buttons = scope ? [...scope.querySelectorAll('button')] : [];
    for (const b of buttons) b.disabled = true;
    try { return await action(); } catch (err) {
      if (!(err instanceof ApiError && err.status === 401)) toast(err.message, true);
      return undefined;
    } finally { for (const b of buttons) b.disabled = false; }
  }
  function confirmDialog(text, okLabel) {
    const d = $('confirm');
    $('confirm-text').textContent = text;
    $('confirm-ok').textContent = okLabel || 'Delete';
    return new Promise((resolve) => {
      const finish = (value) => { d.close(); $('confirm-ok').removeEventListener('click', ok); $('confirm-cancel').removeEventListener('click', cancel); d.removeEventListener('cancel', cancel); resolve(value); };
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
    $(prefix + '-page').textContent = 'Page ' + state.page + ' of ' + pages + ' (' + state.total + ')';
    $(prefix + '-prev').disabled = state.page <= 1;
    $(prefix + '-next').disabled = state.page >= pages;
  }

  // ------------------------------------------------------------ session
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
      $('signin-error').textContent = err.status === 401 ? 'That admin secret is not right.' : err.message;
      $('signin-error').hidden = false;
      $('admin-secret').focus();
    } finally { $('signin-submit').disabled = false; }
  });
  $('logout').addEventListener('click', async () => {
    try { await request('POST', 'admin/logout', {}); } catch { /* signed out either way */ }
    signedOut('Signed out.');
  });
  async function enter() {
    meta = await api('admin/meta', undefined, 'GET');
    $('org').textContent = ORGANIZATION.name + ' dashboard';
    $('server-version').textContent = 'v' + meta.server_version;
    fillSelect($('webhook-event'), meta.webhook_events);
    fillSelect($('template-event'), meta.email_template_events);
    // Invitation links open the built-in login page unless another page is named.
    if (!$('invite-redirect').value) $('invite-redirect').value = new URL(base + 'app', location.origin).href;
    $('signin').hidden = true;
    $('app').hidden = false;
    route();
  }
  function fillSelect(select, values) {
    clear(select);
    for (const v of values || []) select.append(el('option', { value: v, text: v }));
  }

  // ------------------------------------------------------------ navigation
  const loaders = {};
  // Sections kept in their own scripts (sso.js) register their loaders through this.
  window.latchkeyDashboard = { loaders, api, el, clear, when, badge, guarded, toast, confirmDialog };
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
    void guarded(loaders[section]);
  }
  window.addEventListener('hashchange', () => { if (!$('app').hidden) route(); });

  // ------------------------------------------------------------ overview
  loaders.overview = async () => {
    const counts = $('counts');
    clear(counts);
    const total = async (path) => (await api(path, { pagination: { page: 1, limit: 1 } })).pagination.total;
    const items = [['Users', total('admin/users')], ['Webhooks', total('admin/webhooks')], ['Email templates', total('admin/email_templates')], ['Audit entries', total('admin/audit_logs')]];
    if (meta.is_fga_enabled) items.push(['Tuples (first page)', api('admin/fga/tuples/read', { page_size: 100 }).then((r) => r.tuples.length + (r.continuation_token ? '+' : ''))]);
    for (const [label, value] of items) {
      const card = el('div', { class: 'card' }, el('strong', { text: '…' }), el('span', { text: label }));
      counts.append(card);
      value.then((v) => { card.firstChild.textContent = String(v); }, () => { card.firstChild.textContent = '—'; });
    }
    const features = $('features');
    clear(features);
    features.append(el('li', { text: 'Server version ' + meta.server_version }));
    for (const [k, v] of Object.entries(meta)) {
      if (/^is_.*_enabled$/.test(k) && v === true) features.append(el('li', { text: k.replace(/^is_|_enabled$/g, '').replaceAll('_', ' ') }));
    }
    if (meta.roles && meta.roles.length) features.append(el('li', { text: 'Roles: ' + meta.roles.join(', ') }));
  };

  // ------------------------------------------------------------ users
  const users = { page: 1, limit: 10, total: 0, rows: [], filter: '', current: null };
  function userRow(u) {
    const name = [u.given_name, u.family_name].filter(Boolean).join(' ') || u.nickname || '';
    return el('tr', {},
      el('td', { text: u.email || u.phone_number || u.id }),
      el('td', { text: name }),
      el('td', { text: (u.roles || []).join(', ') }),
      el('td', {}, u.email_verified ? badge('email', 'ok') : badge('email unverified'), ' ', u.phone_number ? (u.phone_number_verified ? badge('phone', 'ok') : badge('phone unverified')) : ''),
      el('td', {}, u.revoked_timestamp ? badge('revoked', 'bad') : badge('active', 'ok')),
      el('td', {}, el('button', { type: 'button', text: 'Open', 'aria-label': 'Open ' + (u.email || u.id), onclick: () => openUser(u) })));
  }
  function renderUsers(list) {
    const body = $('user-rows');
    clear(body);
    for (const u of list) body.append(userRow(u));
    if (list.length === 0) body.append(el('tr', {}, el('td', { colspan: 6, class: 'muted', text: 'No users.' })));
    showPage('users', users);
  }
  async function loadUsers() {
    const out = await api('admin/users', { pagination: { page: users.page, limit: users.limit } });
    users.rows = out.users;
    users.total = out.pagination.total;
    const f = users.filter.toLowerCase();
    renderUsers(f ? users.rows.filter((u) => [u.email, u.given_name, u.family_name, u.nickname, u.phone_number, u.id].some((v) => v && String(v).toLowerCase().includes(f))) : users.rows);
  }
  loaders.users = loadUsers;
  pager('users', users, () => guarded(loadUsers));
  $('user-search').addEventListener('submit', (ev) => {
    ev.preventDefault();
    const q = $('user-query').value.trim();
    void guarded(async () => {
      users.filter = '';
      if (q.includes('@') || /^[0-9a-f-]{16,}$/i.test(q)) {
        try {
          const u = await api('admin/user', q.includes('@') ? { email: q } : { id: q });
          renderUsers([u]);
        } catch (err) {
          if (err.code === 'not_found') renderUsers([]); else throw err;
        }
        return;
      }
      users.filter = q;
      await loadUsers();
    });
  });
  $('user-search-clear').addEventListener('click', () => { $('user-query').value = ''; users.filter = ''; void guarded(loadUsers); });

  function openUser(u) {
    users.current = u;
    $('user-edit').hidden = false;
    $('edit-id').textContent = u.id;
    $('edit-email').value = u.email || '';
    $('edit-given').value = u.given_name || '';
    $('edit-family').value = u.family_name || '';
    $('edit-nickname').value = u.nickname || '';
    $('edit-phone').value = u.phone_number || '';
    $('edit-email-verified').checked = Boolean(u.email_verified);
    $('edit-phone-verified').checked = Boolean(u.phone_number_verified);
    $('edit-mfa').checked = Boolean(u.is_multi_factor_auth_enabled);
    $('edit-meta').textContent = 'Created ' + when(u.created_at) + ' · sign-up ' + (u.signup_methods || '') + (u.revoked_timestamp ? ' · access revoked ' + when(u.revoked_timestamp) : '');
    const roles = $('edit-roles');
    clear(roles);
    const all = [...new Set([...(meta.roles || []), ...(u.roles || [])])];
    for (const r of all) roles.append(el('label', { class: 'inline' }, el('input', { type: 'checkbox', value: r, checked: (u.roles || []).includes(r) }), r));
    void guarded(() => loadUserSessions(u));
    $('edit-access').textContent = u.revoked_timestamp ? 'Enable access' : 'Revoke access';
    $('edit-delete').disabled = !u.email;
    void guarded(() => loadPasskeys(u));
    $('edit-email').focus();
  }
  // A user's passkeys, each revocable (admin user_passkeys, revoke_user_passkey).
  async function loadPasskeys(u) {
    const list = $('edit-passkeys');
    clear(list);
    const out = await api('admin/user_passkeys', { user_id: u.id });
    if (users.current !== u) return;
    if (out.passkeys.length === 0) list.append(el('li', { class: 'muted', text: 'No passkeys.' }));
    for (const p of out.passkeys) {
      const label = p.name + ' · added ' + when(p.created_at) + (p.last_used_at ? ' · last used ' + when(p.last_used_at) : ' · never used') + (p.backup_eligible ? ' · synced' : '');
      const revoke = el('button', { type: 'button', class: 'danger', text: 'Revoke', 'aria-label': 'Revoke passkey ' + p.name, onclick: async () => {
        if (!(await confirmDialog('Revoke the passkey "' + p.name + '" of ' + (u.email || u.id) + '? It will no longer sign in.', 'Revoke'))) return;
        void guarded(async () => {
          const done = await api('admin/revoke_user_passkey', { user_id: u.id, id: p.id });
          toast(done.message || 'Passkey revoked.');
          await loadPasskeys(u);
        }, $('user-edit'));
      } });
      list.append(el('li', { class: 'passkey-row' }, el('span', { text: label }), revoke));
    }
  }
  /** The user's live sessions (`_list_sessions`), each with an "End" button (`_revoke_session`). */
  async function loadUserSessions(u) {
    const out = await api('admin/list_sessions', { user_id: u.id });
    if (users.current !== u) return;
    const rows = $('edit-sessions');
    clear(rows);
    if (out.sessions.length === 0) rows.append(el('tr', {}, el('td', { colspan: '5', class: 'muted', text: 'No live session.' })));
    for (const s of out.sessions) {
      const end = el('button', { type: 'button', text: 'End', 'aria-label': 'End session (' + s.browser + (s.ip ? ', ' + s.ip : '') + ')' });
      end.addEventListener('click', () => void guarded(async () => {
        await api('admin/revoke_session', { id: s.id });
        toast('Session ended.');
        await loadUserSessions(u);
      }, $('edit-sessions')));
      rows.append(el('tr', {}, el('td', { text: s.browser, title: s.user_agent }), el('td', { text: s.ip }), el('td', { text: when(s.first_seen_at) }), el('td', { text: when(s.last_seen_at) }), el('td', {}, end)));
    }
  }
  $('edit-close').addEventListener('click', () => { $('user-edit').hidden = true; users.current = null; });
  $('user-edit').addEventListener('submit', (ev) => {
    ev.preventDefault();
    const u = users.current;
    if (!u) return;
    void guarded(async () => {
      const change = { id: u.id };
      const text = { email: 'edit-email', given_name: 'edit-given', family_name: 'edit-family', nickname: 'edit-nickname', phone_number: 'edit-phone' };
      for (const [field, id] of Object.entries(text)) {
        const v = $(id).value.trim();
        if (v !== (u[field] || '') && !(v === '' && (field === 'email' || field === 'phone_number'))) change[field] = v;
      }
      const flags = { email_verified: 'edit-email-verified', phone_number_verified: 'edit-phone-verified', is_multi_factor_auth_enabled: 'edit-mfa' };
      for (const [field, id] of Object.entries(flags)) if ($(id).checked !== Boolean(u[field])) change[field] = $(id).checked;
      const roles = [...$('edit-roles').querySelectorAll('input:checked')].map((i) => i.value);
      if (roles.join(',') !== (u.roles || []).join(',')) change.roles = roles;
      const updated = await api('admin/update_user', change);
      toast('User saved.');
      openUser(updated);
      await loadUsers();
    }, $('user-edit'));
  });
  $('edit-access').addEventListener('click', () => {
    const u = users.current;
    if (!u) return;
    void guarded(async () => {
      const out = await api(u.revoked_timestamp ? 'admin/enable_access' : 'admin/revoke_access', { user_id: u.id });
      toast(out.message || 'Done.');
      openUser(await api('admin/user', { id: u.id }));
      await loadUsers();
    }, $('user-edit'));
  });
  $('edit-delete').addEventListener('click', async () => {
    const u = users.current;
    if (!u || !u.email) return;
    if (!(await confirmDialog('Delete ' + u.email + ' with their sessions and authorization tuples? This cannot be undone.'))) return;
    void guarded(async () => {
      const out = await api('admin/delete_user', { email: u.email });
      toast(out.message || 'User deleted.');
      $('user-edit').hidden = true;
      users.current = null;
      await loadUsers();
    });
  });
  $('invite-form').addEventListener('submit', (ev) => {
    ev.preventDefault();
    const emails = $('invite-emails').value.split(/[\s,;]+/).map((s) => s.trim()).filter(Boolean);
    const redirect = $('invite-redirect').value.trim();
    void guarded(async () => {
      const out = await api('admin/invite_members', redirect ? { emails, redirect_uri: redirect } : { emails });
      toast(out.message + (out.existing && out.existing.length ? ' Already members: ' + out.existing.join(', ') : ''));
      $('invite-emails').value = '';
      await loadUsers();
    }, $('invite-form'));
  });

  // ------------------------------------------------------------ webhooks
  const hooks = { page: 1, limit: 10, total: 0, byId: new Map() };
  const logs = { page: 1, limit: 10, total: 0, webhook: null };
  async function loadWebhooks() {
    const out = await api('admin/webhooks', { pagination: { page: hooks.page, limit: hooks.limit } });
    hooks.total = out.pagination.total;
    const body = $('webhook-rows');
    clear(body);
    for (const w of out.webhooks) {
      hooks.byId.set(w.id, w);
      body.append(el('tr', {},
        el('td', { text: w.event_name }),
        el('td', { text: w.endpoint }),
        el('td', {}, w.enabled ? badge('enabled', 'ok') : badge('disabled')),
        el('td', {},
          el('button', { type: 'button', text: 'Edit', 'aria-label': 'Edit webhook ' + w.event_name, onclick: () => editWebhook(w) }), ' ',
          el('button', { type: 'button', text: w.enabled ? 'Disable' : 'Enable', onclick: () => guarded(async () => { await api('admin/update_webhook', { id: w.id, enabled: !w.enabled }); await loadWebhooks(); }) }), ' ',
          el('button', { type: 'button', text: 'Deliveries', onclick: () => { logs.webhook = w; logs.page = 1; void guarded(loadLogs); } }), ' ',
          el('button', { type: 'button', class: 'danger', text: 'Delete', onclick: async () => {
            if (!(await confirmDialog('Delete the webhook for ' + w.event_name + ' at ' + w.endpoint + ' with its delivery log?'))) return;
            void guarded(async () => { await api('admin/delete_webhook', { id: w.id }); toast('Webhook deleted.'); if (logs.webhook && logs.webhook.id === w.id) $('webhook-logs').hidden = true; await loadWebhooks(); });
          } }))));
    }
    if (out.webhooks.length === 0) body.append(el('tr', {}, el('td', { colspan: 4, class: 'muted', text: 'No webhooks.' })));
    showPage('webhooks', hooks);
  }
  loaders.webhooks = loadWebhooks;
  pager('webhooks', hooks, () => guarded(loadWebhooks));
  function editWebhook(w) {
    $('webhook-form-title').textContent = w ? 'Edit the webhook' : 'Add a webhook';
    $('webhook-id').value = w ? w.id : '';
    $('webhook-event').value = w ? w.event_name : (meta.webhook_events || [])[0] || '';
    $('webhook-endpoint').value = w ? w.endpoint : '';
    $('webhook-description').value = w ? w.event_description || '' : '';
    $('webhook-headers').value = w && w.headers && Object.keys(w.headers).length ? JSON.stringify(w.headers) : '';
    $('webhook-enabled').checked = w ? w.enabled : true;
    clear($('webhook-test-result'));
    $('webhook-endpoint').focus();
  }
  function webhookHeaders() {
    const text = $('webhook-headers').value.trim();
    if (!text) return undefined;
    let h;
    try { h = JSON.parse(text); } catch { throw new Error('Headers must be a JSON object.'); }
    if (h === null || typeof h !== 'object' || Array.isArray(h)) throw new Error('Headers must be a JSON object.');
    return h;
  }
  $('webhook-cancel').addEventListener('click', () => editWebhook(null));
  $('webhook-form').addEventListener('submit', (ev) => {
    ev.preventDefault();
    void guarded(async () => {
      const input = { event_name: $('webhook-event').value, endpoint: $('webhook-endpoint').value.trim(), event_description: $('webhook-description').value, enabled: $('webhook-enabled').checked };
      const headers = webhookHeaders();
      if (headers) input.headers = headers;
      const id = $('webhook-id').value;
      const out = await api(id ? 'admin/update_webhook' : 'admin/add_webhook', id ? { id, ...input } : input);
      toast(out.message || 'Webhook saved.');
      editWebhook(null);
      await loadWebhooks();
    }, $('webhook-form'));
  });
  $('webhook-test').addEventListener('click', () => {
    const result = $('webhook-test-result');
    clear(result);
    void guarded(async () => {
      const input = { event_name: $('webhook-event').value, endpoint: $('webhook-endpoint').value.trim() };
      const headers = webhookHeaders();
      if (headers) input.headers = headers;
      try {
        const out = await api('admin/test_endpoint', input);
        const ok = out.http_status >= 200 && out.http_status < 300;
        result.append(el('p', { class: ok ? '' : 'error', text: 'Test event answered with HTTP ' + out.http_status + (ok ? '' : ' (failed)') }), el('pre', { text: out.response || '' }));
      } catch (err) {
        if (err.status === 401) throw err;
        result.append(el('p', { class: 'error', text: 'Test event failed: ' + err.message }));
      }
    }, $('webhook-form'));
  });
  async function loadLogs() {
    const w = logs.webhook;
    if (!w) return;
    $('webhook-logs').hidden = false;
    $('webhook-logs-title').textContent = w.event_name + ' → ' + w.endpoint;
    const out = await api('admin/webhook_logs', { webhook_id: w.id, pagination: { page: logs.page, limit: logs.limit } });
    logs.total = out.pagination.total;
    const body = $('webhook-log-rows');
    clear(body);
    for (const l of out.webhook_logs) {
      body.append(el('tr', {},
        el('td', { text: when(l.created_at) }),
        el('td', { text: l.event_name }),
        el('td', { text: String(l.attempt) }),
        el('td', { text: String(l.http_status || '') }),
        el('td', {}, badge(l.outcome, l.outcome === 'delivered' ? 'ok' : 'bad')),
        el('td', {}, el('pre', { text: (l.error ? l.error + '\n' : '') + (l.response || '') }))));
    }
    if (out.webhook_logs.length === 0) body.append(el('tr', {}, el('td', { colspan: 6, class: 'muted', text: 'No deliveries yet.' })));
    showPage('logs', logs);
  }
  pager('logs', logs, () => guarded(loadLogs));
  $('logs-refresh').addEventListener('click', () => guarded(loadLogs));

  // ------------------------------------------------------------ email templates
  const templates = { byEvent: new Map() };
  const SAMPLE = {
    user: { id: 'sample', email: 'sample@example.com', given_name: 'Sample', family_name: 'User' },
    organization: { name: ORGANIZATION.name, logo: ORGANIZATION.logo },
    verification_url: 'https://example.com/verify?token=sample',
    otp: '123456',
  };
  // The server's template syntax (admin/email_templates.ts): {{ path }} or {{ .path }}, values HTML-escaped.
  const PLACEHOLDER = /\{\{\s*\.?([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)\s*\}\}/g;
  const escapeHtml = (s) => s.replace(/[&<>"']/g, (c) => '&#' + c.charCodeAt(0) + ';');
  function lookup(path) {
    let cur = SAMPLE;
    for (const part of path.split('.')) {
      if (cur === null || typeof cur !== 'object' || !Object.hasOwn(cur, part)) return '';
      cur = cur[part];
    }
    return cur === null || cur === undefined || typeof cur === 'object' ? '' : String(cur);
  }
  const render = (text, html) => text.replace(PLACEHOLDER, (_m, path) => (html ? escapeHtml(lookup(path)) : lookup(path)));
  let previewTimer;
  function preview() {
    clearTimeout(previewTimer);
    previewTimer = setTimeout(() => {
      $('preview-subject').textContent = render($('template-subject').value, false);
      $('template-preview').srcdoc = previewPolicy.createHTML(render($('template-body').value, true));
    }, 120);
  }
  function showTemplate() {
    const event = $('template-event').value;
    const stored = templates.byEvent.get(event);
    const source = stored || DEFAULTS[event] || { subject: '', template: '' };
    $('template-subject').value = source.subject;
    $('template-body').value = source.template;
    $('template-state').textContent = stored ? 'Stored template, updated ' + when(stored.updated_at) : 'Built-in default (not stored)';
    $('template-delete').disabled = !stored;
    preview();
  }
  async function loadTemplates() {
    const out = await api('admin/email_templates', { pagination: { page: 1, limit: 100 } });
    templates.byEvent = new Map(out.email_templates.map((t) => [t.event_name, t]));
    showTemplate();
  }
  loaders.templates = loadTemplates;
  $('template-event').addEventListener('change', showTemplate);
  $('template-subject').addEventListener('input', preview);
  $('template-body').addEventListener('input', preview);
  $('template-form').addEventListener('submit', (ev) => {
    ev.preventDefault();
    void guarded(async () => {
      const event = $('template-event').value;
      const stored = templates.byEvent.get(event);
      const input = { subject: $('template-subject').value, template: $('template-body').value };
      const out = await api(stored ? 'admin/update_email_template' : 'admin/add_email_template', stored ? { id: stored.id, ...input } : { event_name: event, ...input });
      toast(out.message || 'Template saved.');
      await loadTemplates();
    }, $('template-form'));
  });
  $('template-delete').addEventListener('click', async () => {
    const stored = templates.byEvent.get($('template-event').value);
    if (!stored || !(await confirmDialog('Delete the stored template for ' + stored.event_name + '? The built-in default is used again.'))) return;
    void guarded(async () => { await api('admin/delete_email_template', { id: stored.id }); toast('Template deleted.'); await loadTemplates(); });
  });

  // ------------------------------------------------------------ audit log
  const audit = { page: 1, limit: 20, total: 0 };
  async function loadAudit() {
    const input = { pagination: { page: audit.page, limit: audit.limit } };
    for (const [field, id] of [['actor_id', 'audit-actor'], ['action', 'audit-action'], ['resource', 'audit-resource']]) {
      const v = $(id).value.trim();
      if (v) input[field] = v;
    }
    const out = await api('admin/audit_logs', input);
    audit.total = out.pagination.total;
    const body = $('audit-rows');
    clear(body);
    for (const a of out.audit_logs) {
      body.append(el('tr', {},
        el('td', { text: when(a.created_at) }),
        el('td', { text: (a.actor_type || '') + (a.actor_email ? ' ' + a.actor_email : a.actor_id ? ' ' + a.actor_id : '') }),
        el('td', { text: a.action }),
        el('td', { text: a.resource_type + (a.resource_id ? ':' + a.resource_id : '') }),
        el('td', { text: a.ip_address }),
        el('td', {}, el('details', {}, el('summary', { text: 'metadata' }), el('pre', { text: a.metadata || '' })))));
    }
    if (out.audit_logs.length === 0) body.append(el('tr', {}, el('td', { colspan: 6, class: 'muted', text: 'No entries.' })));
    showPage('audit', audit);
  }
  loaders.audit = loadAudit;
  pager('audit', audit, () => guarded(loadAudit));
  $('audit-filter').addEventListener('submit', (ev) => { ev.preventDefault(); audit.page = 1; void guarded(loadAudit); });

  // ------------------------------------------------------------ organizations
  const orgs = { page: 1, limit: 10, total: 0, current: null };
  async function loadOrgs() {
    const input = { pagination: { page: orgs.page, limit: orgs.limit } };
    const q = $('org-query').value.trim();
    if (q) input.search = q;
    const out = await api('admin/organizations', input);
    orgs.total = out.pagination.total;
    const body = $('org-rows');
    clear(body);
    for (const o of out.organizations) {
      body.append(el('tr', {},
        el('td', { text: o.name }),
        el('td', { text: o.slug }),
        el('td', { text: when(o.created_at) }),
        el('td', {}, el('button', { type: 'button', text: 'Open', 'aria-label': 'Open ' + o.name, onclick: () => guarded(() => openOrg(o)) }))));
    }
    if (out.organizations.length === 0) body.append(el('tr', {}, el('td', { colspan: 4, class: 'muted', text: 'No organizations.' })));
    showPage('orgs', orgs);
  }
  async function openOrg(o) {
    orgs.current = o;
    $('org-detail-name').textContent = o.name;
    $('org-detail-id').textContent = o.id;
    $('org-domain-record').textContent = '';
    $('org-detail').hidden = false;
    await loadOrgDetail();
  }
  async function loadOrgDetail() {
    const o = orgs.current;
    if (!o) return;
    const members = await api('admin/organization_members', { organization_id: o.id, pagination: { page: 1, limit: 100 } });
    const mbody = $('org-member-rows');
    clear(mbody);
    for (const m of members.members) {
      mbody.append(el('tr', {},
        el('td', { text: m.email || '' }),
        el('td', { text: m.user_id }),
        el('td', { text: m.role }),
        el('td', {}, el('button', { type: 'button', text: 'Remove', 'aria-label': 'Remove ' + (m.email || m.user_id), onclick: () => guarded(async () => {
          await api('admin/remove_organization_member', { organization_id: o.id, user_id: m.user_id });
          toast('Member removed.');
          await loadOrgDetail();
        }) }))));
    }
    if (members.members.length === 0) mbody.append(el('tr', {}, el('td', { colspan: 4, class: 'muted', text: 'No members.' })));
    const invitations = await api('admin/organization_invitations', { organization_id: o.id, pagination: { page: 1, limit: 100 } });
    const ibody = $('org-invitation-rows');
    clear(ibody);
    for (const i of invitations.invitations) {
      ibody.append(el('tr', {},
        el('td', { text: i.email }),
        el('td', { text: i.role }),
        el('td', {}, badge(i.status, i.status === 'accepted' ? 'ok' : i.status === 'pending' ? '' : 'bad')),
        el('td', { text: when(i.expires_at) }),
        el('td', {}, i.status === 'pending' ? el('button', { type: 'button', text: 'Revoke', 'aria-label': 'Revoke the invitation of ' + i.email, onclick: () => guarded(async () => {
          await api('admin/revoke_organization_invitation', { invitation_id: i.id });
          await loadOrgDetail();
        }) }) : '')));
    }
    if (invitations.invitations.length === 0) ibody.append(el('tr', {}, el('td', { colspan: 5, class: 'muted', text: 'No invitations.' })));
    // Teams and roles (organizations.js) follow the organization shown, and ask for a reload after a change.
    document.dispatchEvent(new CustomEvent('dashboard:organization', { detail: o }));
  }
  document.addEventListener('dashboard:organization-changed', () => void guarded(loadOrgDetail));
  loaders.orgs = loadOrgs;
  pager('orgs', orgs, () => guarded(loadOrgs));
  $('org-search').addEventListener('submit', (ev) => { ev.preventDefault(); orgs.page = 1; void guarded(loadOrgs); });
  $('org-create').addEventListener('submit', (ev) => {
    ev.preventDefault();
    void guarded(async () => {
      const input = { name: $('org-name').value.trim() };
      const slug = $('org-slug').value.trim();
      if (slug) input.slug = slug;
      const o = await api('admin/create_organization', input);
      $('org-name').value = '';
      $('org-slug').value = '';
      toast('Organization created.');
      await loadOrgs();
      await openOrg(o);
    }, $('org-create'));
  });
  $('org-invite').addEventListener('submit', (ev) => {
    ev.preventDefault();
    void guarded(async () => {
      const emails = $('org-invite-emails').value.split(/[\s,]+/).map((e) => e.trim()).filter(Boolean);
      const input = { organization_id: orgs.current.id, emails };
      const role = $('org-invite-role').value.trim();
      if (role) input.role = role;
      await api('admin/invite_organization_members', input);
      $('org-invite-emails').value = '';
      toast('Invitations created (mailed when a mail server is set up).');
      await loadOrgDetail();
    }, $('org-invite'));
  });
  const showRecord = (d) => {
    $('org-domain-record').textContent = d.verified ? d.domain + ' is verified.' : 'Publish TXT ' + d.txt_record_name + ' = ' + d.txt_record_value + ', then Verify.';
  };
  $('org-domain').addEventListener('submit', (ev) => {
    ev.preventDefault();
    void guarded(async () => showRecord(await api('admin/add_organization_domain', { organization_id: orgs.current.id, domain: $('org-domain-name').value.trim() })), $('org-domain'));
  });
  $('org-domain-verify').addEventListener('click', () => guarded(async () => showRecord(await api('admin/verify_organization_domain', { organization_id: orgs.current.id, domain: $('org-domain-name').value.trim() })), $('org-domain')));
  $('org-delete').addEventListener('click', async () => {
    const o = orgs.current;
    if (!o || !(await confirmDialog('Delete the organization ' + o.name + '? Its members, teams and every grant to it go.', 'Delete'))) return;
    await guarded(async () => {
      await api('admin/delete_organization', { organization_id: o.id });
      $('org-detail').hidden = true;
      orgs.current = null;
      toast('Organization deleted.');
      await loadOrgs();
    });
  });
  $('org-close').addEventListener('click', () => { $('org-detail').hidden = true; orgs.current = null; });

  // ------------------------------------------------------------ authorization
  const dsl = $('dsl');
  let dslErrors = [];
  let validateTimer;
  let validateSeq = 0;
  function paintGutter() {
    const lines = dsl.value.split('\n').length;
    const bad = new Set(dslErrors.map((e) => e.line));
    const gutter = $('dsl-gutter');
    clear(gutter);
    for (let i = 1; i <= lines; i++) gutter.append(el('span', { class: bad.has(i) ? 'err' : '', text: String(i) }));
    gutter.scrollTop = dsl.scrollTop;
  }
  function showDslErrors(errors) {
    dslErrors = errors;
    const list = $('dsl-errors');
    clear(list);
    for (const e of errors) {
      list.append(el('li', { tabindex: 0, 'data-line': e.line, 'data-column': e.column, text: 'line ' + e.line + ', column ' + e.column + ': ' + e.message, onclick: () => goTo(e), onkeydown: (k) => { if (k.key === 'Enter') goTo(e); } }));
    }
    $('dsl-status').textContent = errors.length ? errors.length + (errors.length === 1 ? ' problem' : ' problems') : 'The model is valid.';
    $('dsl-status').className = errors.length ? 'error' : '';
    paintGutter();
  }
  function goTo(e) {
    const lines = dsl.value.split('\n');
    let offset = 0;
    for (let i = 0; i < e.line - 1 && i < lines.length; i++) offset += lines[i].length + 1;
    offset += Math.max(0, e.column - 1);
    dsl.focus();
    dsl.setSelectionRange(offset, offset + 1);
  }
  async function validate() {
    const seq = ++validateSeq;
    if (!dsl.value.trim()) { showDslErrors([]); $('dsl-status').textContent = 'Empty model.'; return; }
    const out = await api('admin/fga/validate_model', { dsl: dsl.value });
    if (seq === validateSeq) showDslErrors(out.errors || []);
  }
  dsl.addEventListener('input', () => {
    paintGutter();
    clearTimeout(validateTimer);
    $('dsl-status').textContent = 'Checking…';
    validateTimer = setTimeout(() => void guarded(validate), 250);
  });
  dsl.addEventListener('scroll', () => { $('dsl-gutter').scrollTop = dsl.scrollTop; });
  $('dsl-save').addEventListener('click', () => guarded(async () => {
    try {
      const out = await api('admin/fga/model', { dsl: dsl.value });
      dsl.value = out.dsl;
      showDslErrors([]);
      toast('Model saved as version ' + out.id + '.');
      await loadModels(true);
    } catch (err) {
      if (err.reason === 'invalid_dsl' && err.details && Array.isArray(err.details.errors)) showDslErrors(err.details.errors);
      throw err;
    }
  }, $('fga-on')));
  $('dsl-reload').addEventListener('click', () => guarded(loadModel));
  async function loadModel() {
    const out = await api('admin/fga/model', undefined, 'GET');
    dsl.value = out.dsl;
    showDslErrors([]);
    if (!out.dsl) $('dsl-status').textContent = 'No model yet: write one and save it.';
  }
  const models = { token: '' };
  async function loadModels(reset) {
    if (reset) { models.token = ''; clear($('model-rows')); }
    const out = await api('admin/fga/models', { page_size: 10, ...(models.token ? { continuation_token: models.token } : {}) });
    models.token = out.continuation_token || '';
    for (const m of out.models) {
      $('model-rows').append(el('tr', {},
        el('td', {}, el('code', { text: m.id })),
        el('td', { text: when(m.created_at) }),
        el('td', {}, el('button', { type: 'button', text: 'Open in editor', onclick: () => { dsl.value = m.dsl; showDslErrors([]); dsl.focus(); } }))));
    }
    $('models-more').hidden = !models.token;
  }
  $('models-more').addEventListener('click', () => guarded(() => loadModels(false)));

  const tuples = { token: '', filter: {} };
  function tupleInput(t) { return t.condition ? { user: t.user, relation: t.relation, object: t.object, condition: t.condition } : { user: t.user, relation: t.relation, object: t.object }; }
  async function readTuples(reset) {
    if (reset) {
      tuples.token = '';
      tuples.filter = {};
      for (const [field, id] of [['user', 'tf-user'], ['relation', 'tf-relation'], ['object', 'tf-object']]) { const v = $(id).value.trim(); if (v) tuples.filter[field] = v; }
      clear($('tuple-rows'));
    }
    const out = await api('admin/fga/tuples/read', { ...tuples.filter, page_size: 20, ...(tuples.token ? { continuation_token: tuples.token } : {}) });
    tuples.token = out.continuation_token || '';
    for (const t of out.tuples) {
      const row = el('tr', {},
        el('td', { text: t.user }), el('td', { text: t.relation }), el('td', { text: t.object }),
        el('td', { text: t.condition ? t.condition.name : '' }),
        el('td', {}, el('button', { type: 'button', class: 'danger', text: 'Delete', 'aria-label': 'Delete ' + t.user + ' ' + t.relation + ' ' + t.object, onclick: async () => {
          if (!(await confirmDialog('Delete the tuple ' + t.object + '#' + t.relation + '@' + t.user + '?'))) return;
          void guarded(async () => { await api('admin/fga/tuples/delete', { tuples: [tupleInput(t)] }); row.remove(); toast('Tuple deleted.'); });
        } })));
      $('tuple-rows').append(row);
    }
    if (reset && out.tuples.length === 0) $('tuple-rows').append(el('tr', {}, el('td', { colspan: 5, class: 'muted', text: 'No tuples.' })));
    $('tuples-more').hidden = !tuples.token;
  }
  $('tuple-filter').addEventListener('submit', (ev) => { ev.preventDefault(); void guarded(() => readTuples(true), $('tuple-filter')); });
  $('tuples-more').addEventListener('click', () => guarded(() => readTuples(false)));
  $('tuple-write').addEventListener('submit', (ev) => {
    ev.preventDefault();
    void guarded(async () => {
      await api('admin/fga/tuples', { tuples: [{ user: $('tw-user').value.trim(), relation: $('tw-relation').value.trim(), object: $('tw-object').value.trim() }] });
      toast('Tuple written.');
      await readTuples(true);
    }, $('tuple-write'));
  });

  function treeNode(node) {
    if (!node || typeof node !== 'object') return el('li', { text: String(node) });
    const li = el('li', {}, el('span', { class: 'op', text: node.name || '' }));
    const sub = el('ul', {});
    if (node.leaf) {
      const leaf = node.leaf;
      if (leaf.users) sub.append(el('li', { text: 'users: ' + ((leaf.users.users || []).join(', ') || '(none)') }));
      else if (leaf.computed) sub.append(el('li', { text: 'computed: ' + leaf.computed.userset }));
      else if (leaf.tupleToUserset) sub.append(el('li', { text: 'from ' + leaf.tupleToUserset.tupleset + ': ' + (leaf.tupleToUserset.computed || []).map((c) => c.userset).join(', ') }));
      else sub.append(el('li', { text: JSON.stringify(leaf) }));
    }
    for (const op of ['union', 'intersection']) {
      if (node[op]) {
        const inner = el('ul', {});
        for (const n of node[op].nodes || []) inner.append(treeNode(n));
        sub.append(el('li', {}, el('span', { class: 'op', text: op }), inner));
      }
    }
    if (node.difference) {
      sub.append(el('li', {}, el('span', { class: 'op', text: 'base' }), el('ul', {}, treeNode(node.difference.base))));
      sub.append(el('li', {}, el('span', { class: 'op', text: 'but not' }), el('ul', {}, treeNode(node.difference.subtract))));
    }
    li.append(sub);
    return li;
  }
  async function expandTree(relation, object) {
    const out = await api('admin/fga/expand', { relation, object });
    const tree = JSON.parse(out.tree);
    return el('div', {}, el('h3', { text: 'Expand ' + object + '#' + relation }), el('ul', { class: 'tree', 'aria-label': 'Userset tree' }, treeNode(tree.root || tree)));
  }
  // The explanation of a check (_fga_explain): one witness path when allowed, the failed branches when denied, as nested lists.
  function explainLabel(node) {
    const parts = [];
    if (node.kind === 'relation') parts.push(node.object + '#' + node.relation + '@' + node.user);
    else if (node.kind === 'tuple') {
      parts.push('tuple ' + node.tuple.object + '#' + node.tuple.relation + '@' + node.tuple.user);
      const c = node.condition;
      if (c) {
        let text = 'with ' + c.name + ': ' + c.result;
        if (c.missing_parameters && c.missing_parameters.length) text += ', missing ' + c.missing_parameters.join(', ');
        if (c.context && Object.keys(c.context).length) text += ', context ' + JSON.stringify(c.context);
        parts.push('(' + text + ')');
      }
    } else if (node.kind === 'computed_userset') parts.push('computed ' + node.computed_relation);
    else if (node.kind === 'tuple_to_userset') parts.push(node.computed_relation + ' from ' + node.tupleset);
    else parts.push(node.kind === 'exclusion' ? 'but not' : node.kind);
    if (node.role) parts.unshift(node.role === 'base' ? 'base:' : 'subtracted:');
    return parts.join(' ');
  }
  function explainNode(node) {
    const kind = node.outcome === 'allowed' ? 'ok' : node.outcome === 'denied' ? '' : 'bad';
    const li = el('li', { 'data-outcome': node.outcome }, el('span', { class: 'op', text: explainLabel(node) }), ' ', badge(node.outcome, kind));
    const why = [node.because ? node.because.replace(/_/g, ' ') : '', node.cycle ? '(on this path only: a cycle was cut below)' : '', node.error ? node.error.message : ''].filter(Boolean).join(' ');
    if (why) li.append(' ', el('span', { class: 'muted', text: why }));
    if (node.children && node.children.length) li.append(el('ul', {}, ...node.children.map(explainNode)));
    return li;
  }
  async function explainTree(user, relation, object) {
    const out = await api('admin/fga/explain', { user, relation, object });
    const head = el('h3', { text: 'Why ' + user + (out.allowed ? ' is allowed ' : ' is not allowed ') + relation + ' on ' + object });
    const note = out.error ? el('p', { class: 'error', text: 'Check ended in an error: ' + out.error.message }) : null;
    return el('div', {}, head, note, el('ul', { class: 'tree', 'aria-label': 'Explanation' }, explainNode(out.tree)));
  }
  $('tester').addEventListener('submit', (ev) => {
    ev.preventDefault();
    const result = $('tester-result');
    clear(result);
    const kind = $('t-kind').value;
    const user = $('t-user').value.trim();
    const relation = $('t-relation').value.trim();
    const object = $('t-object').value.trim();
    void guarded(async () => {
      if (kind === 'check') {
        const out = await api('check_permissions', { checks: [{ relation, object }], user });
        const allowed = out.results[0].allowed;
        result.append(el('p', { id: 'check-answer', class: allowed ? '' : 'error', text: user + (allowed ? ' is allowed ' : ' is not allowed ') + relation + ' on ' + object }));
        const why = el('div', { id: 'explain' });
        const button = el('button', { type: 'button', id: 'explain-button', text: 'Why?' });
        button.addEventListener('click', () => {
          void guarded(async () => {
            clear(why);
            why.append(await explainTree(user, relation, object));
          }, button);
        });
        result.append(el('p', {}, button), why);
        result.append(await expandTree(relation, object));
      } else if (kind === 'list_objects') {
        const out = await api('list_permissions', { relation, object_type: object.split(':')[0], user });
        result.append(el('p', { text: out.objects.length + ' objects' + (out.truncated ? ' (truncated)' : '') }), el('ul', { id: 'list-answer' }, ...out.objects.map((o) => el('li', { text: o }))));
      } else if (kind === 'list_users') {
        const out = await api('admin/fga/list_users', { object, relation, user_type: $('t-user-type').value.trim() || 'user' });
        result.append(el('p', { text: out.users.length + ' users' }), el('ul', { id: 'list-answer' }, ...out.users.map((u) => el('li', { text: u }))));
      } else {
        result.append(await expandTree(relation, object));
      }
    }, $('tester'));
  });
  loaders.authz = async () => {
    const on = Boolean(meta.is_fga_enabled);
    $('fga-on').hidden = !on;
    $('fga-off').hidden = on;
    if (!on) return;
    await loadModel();
    await loadModels(true);
    await readTuples(true);
  };

  // ------------------------------------------------------------ start
  (async () => {
    try {
      await request('GET', 'admin/session');
      await enter();
    } catch (err) {
      signedOut(err.status === 401 || err.status === undefined ? '' : err.message);
    }
  })();
})();
