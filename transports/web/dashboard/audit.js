// The dashboard's audit log section (served inline after core.js, allowed by its own SHA-256): the
// entries newest first with paging, filtered by actor, action and resource.
'use strict';
(() => {
  const d = window.latchkeyDashboard;
  if (!d) return;
  const { loaders, t, api, el, clear, when, emptyRow, guarded, pager, showPage } = d;
  const $ = (id) => document.getElementById(id);
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
        el('td', {}, el('details', {}, el('summary', { text: t('metadata') }), el('pre', { text: a.metadata || '' })))));
    }
    if (out.audit_logs.length === 0) body.append(emptyRow(6, 'noEntries'));
    showPage('audit', audit);
  }
  loaders.audit = loadAudit;
  pager('audit', audit, () => guarded(loadAudit, $('audit')));
  $('audit-filter').addEventListener('submit', (ev) => { ev.preventDefault(); audit.page = 1; void guarded(loadAudit, $('audit-filter')); });
})();
