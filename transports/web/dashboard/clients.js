// The dashboard's OAuth client registry section (served inline after core.js, allowed by its own SHA-256):
// lists the clients, registers one, rotates a secret and deletes a client through the REST admin API with
// the service-admin cookie, using core.js's helpers from window.latchkeyDashboard. A new secret is shown
// once. A delete asks in the page's own dialog, never a native one.
'use strict';
(() => {
  const d = window.latchkeyDashboard;
  if (!d) return;
  const { loaders, t, api, el, clear, say, guarded, confirmDialog } = d;
  const $ = (id) => document.getElementById(id);

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
  const status = (text) => { $('clients-status').textContent = text; };

  async function load() {
    const out = await api('admin/clients', { pagination: { limit: 100 } });
    const rows = $('client-rows');
    clear(rows);
    for (const c of out.clients || []) {
      const actions = el('td', { class: 'actions', text: c.configured_by_flags ? t('setByFlags') : '' });
      if (!c.configured_by_flags) {
        if (c.token_endpoint_auth_method === 'client_secret_basic' || c.token_endpoint_auth_method === 'client_secret_post') {
          actions.append(el('button', { type: 'button', class: 'secondary', text: t('rotateSecret'), 'aria-label': t('rotateSecretOf', { id: c.client_id }), onclick: () => void rotate(c.client_id) }));
        }
        actions.append(el('button', { type: 'button', class: 'danger', text: t('delete'), 'aria-label': t('deleteClientNamed', { id: c.client_id }), onclick: async () => {
          if (!(await confirmDialog(t('confirmDeleteClient', { id: c.client_id })))) return;
          void remove(c.client_id);
        } }));
      }
      rows.append(el('tr', { 'data-client-id': c.client_id },
        el('td', { text: c.client_id }),
        el('td', { text: c.client_name }),
        el('td', { text: c.kind === 'service_account' ? t('kindServiceAccount') : c.application_type }),
        el('td', {}, el('code', { text: c.token_endpoint_auth_method })),
        el('td', { text: (c.redirect_uris || []).join(' ') }),
        actions));
    }
    status(t('clientsCount', { count: (out.clients || []).length }));
  }
  loaders.clients = load;

  const rotate = (clientId) => guarded(async () => {
    hideSecret();
    const out = await api('admin/rotate_client_secret', { client_id: clientId });
    showSecret(clientId, out.client_secret || '');
    say($('clients-table'), t('secretRotated', { id: clientId }));
  }, $('clients-table'));

  const remove = (clientId) => guarded(async () => {
    hideSecret();
    await api('admin/delete_client', { client_id: clientId });
    await load();
    say($('clients-table'), t('clientDeleted', { id: clientId }));
  }, $('clients-table'));

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
    void guarded(async () => {
      const out = await api('admin/add_client', input);
      if (out.client_secret) showSecret(out.client.client_id, out.client_secret);
      $('client-form').reset();
      await load();
      say($('client-form'), t('clientRegistered', { id: out.client.client_id }));
    }, $('client-form'));
  });
})();
