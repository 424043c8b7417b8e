// The dashboard's OAuth client registry section (served inline by transports/web/dashboard/dashboard.ts
// after page.js, allowed by its own SHA-256): lists the clients, registers one, rotates a secret and
// deletes a client through the REST admin API with the service-admin cookie. A new secret is shown once.
// It writes to the DOM through createElement/textContent only, and never opens a native dialog.
'use strict';
(() => {
  const $ = (id) => document.getElementById(id);
  const base = location.pathname.replace(/\/dashboard\/?$/, '/');
  const section = $('clients');
  if (!section) return;

  async function call(op, input) {
    let res;
    try {
      res = await fetch(base + 'v1/admin/' + op, {
        method: 'POST',
        credentials: 'same-origin',
        cache: 'no-store',
        headers: { 'content-type': 'application/json', accept: 'application/json' },
        body: JSON.stringify(input || {}),
      });
    } catch {
      throw new Error('The server could not be reached. Try again.');
    }
    let body = {};
    try { body = await res.json(); } catch { body = {}; }
    if (!res.ok) throw new Error(typeof body.message === 'string' && body.message ? body.message : 'Request failed (' + res.status + ')');
    return body;
  }

  function cell(row, text) {
    const td = document.createElement('td');
    td.textContent = text;
    row.append(td);
    return td;
  }
  function button(text, onClick) {
    const b = document.createElement('button');
    b.type = 'button';
    b.textContent = text;
    b.addEventListener('click', onClick);
    return b;
  }
  function status(text, isError) {
    const s = $('clients-status');
    s.textContent = text;
    s.className = isError ? 'error' : 'muted';
  }
  // A secret is shown this once, with the client it belongs to; it is gone on the next action.
  function showSecret(clientId, secret) {
    $('client-secret-id').textContent = clientId;
    $('client-secret-value').textContent = secret;
    $('client-secret').hidden = false;
  }
  function hideSecret() {
    $('client-secret-value').textContent = '';
    $('client-secret').hidden = true;
  }

  async function load() {
    const rows = $('client-rows');
    try {
      const out = await call('clients', { pagination: { limit: 100 } });
      rows.replaceChildren();
      for (const c of out.clients || []) {
        const tr = document.createElement('tr');
        tr.dataset.clientId = c.client_id;
        cell(tr, c.client_id);
        cell(tr, c.client_name);
        cell(tr, c.kind === 'service_account' ? 'service account' : c.application_type);
        cell(tr, c.token_endpoint_auth_method);
        cell(tr, (c.redirect_uris || []).join(' '));
        const actions = cell(tr, c.configured_by_flags ? 'set by flags' : '');
        if (!c.configured_by_flags) {
          if (c.token_endpoint_auth_method === 'client_secret_basic' || c.token_endpoint_auth_method === 'client_secret_post') {
            actions.append(button('Rotate secret', () => void rotate(c.client_id)));
          }
          const del = button('Delete', () => {
            // Two steps instead of a native confirm(): the first click asks, the second deletes.
            if (del.dataset.armed !== 'yes') {
              del.dataset.armed = 'yes';
              del.textContent = 'Confirm delete';
              return;
            }
            void remove(c.client_id);
          });
          actions.append(' ', del);
        }
        rows.append(tr);
      }
      status((out.clients || []).length + ' clients', false);
    } catch (err) {
      status(err.message, true);
    }
  }

  async function rotate(clientId) {
    hideSecret();
    try {
      const out = await call('rotate_client_secret', { client_id: clientId });
      showSecret(clientId, out.client_secret || '');
      status('Secret of ' + clientId + ' rotated; the previous one works until the overlap ends.', false);
    } catch (err) {
      status(err.message, true);
    }
  }

  async function remove(clientId) {
    hideSecret();
    try {
      await call('delete_client', { client_id: clientId });
      await load();
      status('Client ' + clientId + ' deleted.', false);
    } catch (err) {
      status(err.message, true);
    }
  }

  $('client-form').addEventListener('submit', (event) => {
    event.preventDefault();
    hideSecret();
    const input = { client_name: $('client-name').value || undefined, kind: $('client-kind').value };
    const id = $('client-id').value.trim();
    if (id) input.client_id = id;
    if (input.kind === 'interactive') {
      input.application_type = $('client-app-type').value;
      input.redirect_uris = $('client-redirects').value.split(/\s+/).filter(Boolean);
    }
    const scopes = $('client-scopes').value.split(/\s+/).filter(Boolean);
    if (scopes.length > 0) input.scopes = scopes;
    void (async () => {
      try {
        const out = await call('add_client', input);
        if (out.client_secret) showSecret(out.client.client_id, out.client_secret);
        $('client-form').reset();
        await load();
        status('Client ' + out.client.client_id + ' registered.', false);
      } catch (err) {
        status(err.message, true);
      }
    })();
  });

  // page.js shows the sections it knows; this one is shown here, after it, when the address names it.
  function route() {
    const shown = location.hash === '#clients' && !$('app').hidden;
    if (shown) {
      for (const s of document.querySelectorAll('[data-view]')) s.hidden = true;
      for (const a of document.querySelectorAll('nav a')) {
        if (a.dataset.section === 'clients') a.setAttribute('aria-current', 'page');
        else a.removeAttribute('aria-current');
      }
    }
    if (section.hidden !== !shown) {
      section.hidden = !shown;
      if (shown) void load();
      else hideSecret();
    }
  }
  window.addEventListener('hashchange', route);
  new MutationObserver(route).observe($('app'), { attributes: true, attributeFilter: ['hidden'] });
  route();
})();
