// The dashboard's SSO and SCIM section: an organization's SAML / OpenID Connect connections (list, add,
// enable or disable, test, delete) and its SCIM tokens (create, shown once; list; revoke), through the
// super-admin REST operations. Runs after core.js, whose helpers it takes from window.latchkeyDashboard.
(() => {
  'use strict';
  const d = window.latchkeyDashboard;
  if (!d) return;
  const { loaders, t, api, el, clear, when, badge, say, guarded, confirmDialog } = d;
  const $ = (id) => document.getElementById(id);
  let orgId = '';

  async function loadConnections() {
    const body = await api('admin/sso_connections', { organization_id: orgId, pagination: { page: 1, limit: 100 } });
    const rows = $('sso-rows');
    clear(rows);
    for (const c of body.connections || []) {
      const toggle = el('button', { type: 'button', class: 'secondary', text: c.enabled ? t('disable') : t('enable'), onclick: () => guarded(async () => {
        await api('admin/update_sso_connection', { connection_id: c.id, enabled: !c.enabled });
        say($('sso-connections-box'), c.enabled ? t('connectionDisabled') : t('connectionEnabled'));
        await loadConnections();
      }, $('sso-connections-box')) });
      // The test runs the real flow in a new window; the identity provider's answer shows the claims there.
      const test = el('a', { class: 'button secondary', href: c.sign_in_url + '?test=1', target: '_blank', rel: 'noopener', text: t('test') });
      const del = el('button', { type: 'button', class: 'danger', text: t('deleteEllipsis'), onclick: () => guarded(async () => {
        if (!(await confirmDialog(t('confirmDeleteConnection', { name: c.name })))) return;
        await api('admin/delete_sso_connection', { connection_id: c.id });
        say($('sso-connections-box'), t('connectionDeleted'));
        await loadConnections();
      }, $('sso-connections-box')) });
      rows.append(el('tr', {},
        el('td', { text: c.name }),
        el('td', { text: c.type === 'saml' ? 'SAML 2.0' : 'OpenID Connect' }),
        el('td', { text: (c.domains || []).join(', ') }),
        el('td', {}, badge(c.enabled ? t('badgeEnabled') : t('badgeDisabled'), c.enabled ? 'ok' : '')),
        el('td', {}, el('code', { text: c.sign_in_url })),
        el('td', { class: 'actions' }, toggle, test, del)));
    }
  }

  async function loadTokens() {
    const body = await api('admin/scim_tokens', { organization_id: orgId, pagination: { page: 1, limit: 100 } });
    const rows = $('scim-rows');
    clear(rows);
    for (const tk of body.tokens || []) {
      const revoke = tk.revoked_at ? '' : el('button', { type: 'button', class: 'danger', text: t('revokeEllipsis'), onclick: () => guarded(async () => {
        if (!(await confirmDialog(t('confirmRevokeScim', { prefix: tk.prefix }), t('revoke')))) return;
        await api('admin/revoke_scim_token', { token_id: tk.id });
        say($('scim-box'), t('tokenRevoked'));
        await loadTokens();
      }, $('scim-box')) });
      rows.append(el('tr', {},
        el('td', {}, el('code', { text: tk.prefix })),
        el('td', { text: tk.description }),
        el('td', { text: when(tk.created_at) }),
        el('td', { text: when(tk.last_used_at) }),
        el('td', {}, badge(tk.revoked_at ? t('badgeRevoked') : t('badgeActive'), tk.revoked_at ? '' : 'ok')),
        el('td', {}, revoke)));
    }
  }

  async function open() {
    if (!orgId) return;
    $('sso-detail').hidden = false;
    $('scim-new').hidden = true;
    await loadConnections();
    await loadTokens();
  }

  $('sso-org').addEventListener('submit', (e) => {
    e.preventDefault();
    orgId = $('sso-org-id').value.trim();
    void guarded(open, $('sso-org'));
  });
  $('sso-type').addEventListener('change', () => {
    const saml = $('sso-type').value === 'saml';
    $('sso-saml-fields').hidden = !saml;
    $('sso-oidc-fields').hidden = saml;
  });
  $('sso-add').addEventListener('submit', (e) => {
    e.preventDefault();
    void guarded(async () => {
      const type = $('sso-type').value;
      const input = { organization_id: orgId, type, name: $('sso-name').value.trim() };
      const domains = $('sso-domains').value.split(',').map((x) => x.trim()).filter(Boolean);
      if (domains.length) input.domains = domains;
      if ($('sso-role').value.trim()) input.default_role = $('sso-role').value.trim();
      if (type === 'saml') {
        input.saml = {};
        if ($('sso-metadata-url').value.trim()) input.saml.idp_metadata_url = $('sso-metadata-url').value.trim();
        if ($('sso-metadata').value.trim()) input.saml.idp_metadata_xml = $('sso-metadata').value.trim();
      } else {
        input.oidc = { issuer: $('sso-issuer').value.trim(), client_id: $('sso-client-id').value.trim(), client_secret: $('sso-client-secret').value };
      }
      await api('admin/add_sso_connection', input);
      $('sso-add').reset();
      $('sso-type').dispatchEvent(new Event('change'));
      say($('sso-add'), t('connectionAdded'));
      await loadConnections();
    }, $('sso-add'));
  });
  $('scim-create').addEventListener('submit', (e) => {
    e.preventDefault();
    void guarded(async () => {
      const made = await api('admin/create_scim_token', { organization_id: orgId, description: $('scim-description').value.trim() });
      $('scim-new-token').textContent = made.token;
      $('scim-new').hidden = false;
      $('scim-description').value = '';
      await loadTokens();
    }, $('scim-create'));
  });
  loaders.sso = async () => { if (orgId) await open(); };
})();
