// The dashboard's webhooks section (served inline after core.js, allowed by its own SHA-256): the
// webhooks with paging, one added or edited (event, endpoint, headers), a test event sent to an endpoint,
// enabled and disabled, deleted, and the delivery log of one webhook.
'use strict';
(() => {
  const d = window.latchkeyDashboard;
  if (!d) return;
  const { loaders, onEnter, t, api, el, clear, when, badge, emptyRow, say, guarded, confirmDialog, pager, showPage, fillSelect } = d;
  const $ = (id) => document.getElementById(id);
  const hooks = { page: 1, limit: 10, total: 0 };
  const logs = { page: 1, limit: 10, total: 0, webhook: null };

  async function loadWebhooks() {
    const out = await api('admin/webhooks', { pagination: { page: hooks.page, limit: hooks.limit } });
    hooks.total = out.pagination.total;
    const body = $('webhook-rows');
    clear(body);
    for (const w of out.webhooks) {
      body.append(el('tr', {},
        el('td', { text: w.event_name }),
        el('td', { text: w.endpoint }),
        el('td', {}, w.enabled ? badge(t('badgeEnabled'), 'ok') : badge(t('badgeDisabled'))),
        el('td', { class: 'actions' },
          el('button', { type: 'button', class: 'secondary', text: t('edit'), 'aria-label': t('editWebhookNamed', { event: w.event_name }), onclick: () => editWebhook(w) }),
          el('button', { type: 'button', class: 'secondary', text: w.enabled ? t('disable') : t('enable'), onclick: () => guarded(async () => { await api('admin/update_webhook', { id: w.id, enabled: !w.enabled }); await loadWebhooks(); }, $('webhooks-table')) }),
          el('button', { type: 'button', class: 'secondary', text: t('deliveries'), onclick: () => { logs.webhook = w; logs.page = 1; void guarded(loadLogs, $('webhook-logs')); } }),
          el('button', { type: 'button', class: 'danger', text: t('delete'), onclick: async () => {
            if (!(await confirmDialog(t('confirmDeleteWebhook', { event: w.event_name, endpoint: w.endpoint })))) return;
            void guarded(async () => {
              await api('admin/delete_webhook', { id: w.id });
              say($('webhooks-table'), t('webhookDeleted'));
              if (logs.webhook && logs.webhook.id === w.id) $('webhook-logs').hidden = true;
              await loadWebhooks();
            }, $('webhooks-table'));
          } }))));
    }
    if (out.webhooks.length === 0) body.append(emptyRow(4, 'noWebhooks'));
    showPage('webhooks', hooks);
  }
  loaders.webhooks = loadWebhooks;
  onEnter.push((meta) => fillSelect($('webhook-event'), meta.webhook_events));
  pager('webhooks', hooks, () => guarded(loadWebhooks, $('webhooks-table')));

  function editWebhook(w) {
    $('webhook-form-title').textContent = w ? t('editWebhook') : t('addWebhook');
    $('webhook-id').value = w ? w.id : '';
    $('webhook-event').value = w ? w.event_name : (d.meta.webhook_events || [])[0] || '';
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
    try { h = JSON.parse(text); } catch { throw new Error(t('headersJson')); }
    if (h === null || typeof h !== 'object' || Array.isArray(h)) throw new Error(t('headersJson'));
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
      await api(id ? 'admin/update_webhook' : 'admin/add_webhook', id ? { id, ...input } : input);
      editWebhook(null);
      say($('webhook-form'), t('webhookSaved'));
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
        result.append(el('p', { class: ok ? 'msg ok' : 'msg error', text: ok ? t('testAnswered', { status: out.http_status }) : t('testAnsweredFailed', { status: out.http_status }) }), el('pre', { text: out.response || '' }));
      } catch (err) {
        if (err.status === 401) throw err;
        result.append(el('p', { class: 'msg error', text: t('testFailed', { message: err.message }) }));
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
    if (out.webhook_logs.length === 0) body.append(emptyRow(6, 'noDeliveries'));
    showPage('logs', logs);
  }
  pager('logs', logs, () => guarded(loadLogs, $('webhook-logs')));
  $('logs-refresh').addEventListener('click', () => guarded(loadLogs, $('webhook-logs')));
})();
