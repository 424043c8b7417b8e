// The dashboard's email templates section (served inline after core.js, allowed by its own SHA-256): the
// template of a mail event in a language, or for every language (the stored one, else the built-in default
// in that language), edited with a live preview in a
// sandboxed, script-less frame (the page's one HTML sink, through the Trusted Types policy
// `dashboard-preview`), saved, or deleted to fall back to the default.
'use strict';
(() => {
  const d = window.latchkeyDashboard;
  if (!d) return;
  const { loaders, onEnter, t, api, el, when, say, guarded, confirmDialog, fillSelect } = d;
  const $ = (id) => document.getElementById(id);
  const DEFAULTS = d.data.templates || {};
  const ORGANIZATION = d.data.organization || { name: 'Latchkey', logo: '' };
  const previewPolicy = window.trustedTypes ? window.trustedTypes.createPolicy('dashboard-preview', { createHTML: (s) => s }) : { createHTML: (s) => s };
  const templates = { byKey: new Map() };
  const key = (event, language) => event + '|' + (language || '');
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
    const language = $('template-language').value;
    const stored = templates.byKey.get(key(event, language));
    const source = stored || (DEFAULTS[language] || DEFAULTS[''] || {})[event] || { subject: '', template: '' };
    $('template-subject').value = source.subject;
    $('template-body').value = source.template;
    $('template-state').textContent = stored ? t('templateStored', { when: when(stored.updated_at) }) : t('templateDefault');
    $('template-delete').disabled = !stored;
    preview();
  }
  async function loadTemplates() {
    const out = await api('admin/email_templates', { pagination: { page: 1, limit: 100 } });
    templates.byKey = new Map(out.email_templates.map((x) => [key(x.event_name, x.language), x]));
    showTemplate();
  }
  loaders.templates = loadTemplates;
  onEnter.push((meta) => fillSelect($('template-event'), meta.email_template_events));
  // The languages a template may be stored for: every language (the template used when the recipient's has none), then each one.
  $('template-language').replaceChildren(el('option', { value: '', text: t('everyLanguage') }), ...(d.data.template_languages || []).map((l) => el('option', { value: l.code, lang: l.code, text: l.name + ' (' + l.code + ')' })));
  $('template-event').addEventListener('change', showTemplate);
  $('template-language').addEventListener('change', showTemplate);
  $('template-subject').addEventListener('input', preview);
  $('template-body').addEventListener('input', preview);
  $('template-form').addEventListener('submit', (ev) => {
    ev.preventDefault();
    void guarded(async () => {
      const event = $('template-event').value;
      const language = $('template-language').value;
      const stored = templates.byKey.get(key(event, language));
      const input = { subject: $('template-subject').value, template: $('template-body').value };
      await api(stored ? 'admin/update_email_template' : 'admin/add_email_template', stored ? { id: stored.id, ...input } : { event_name: event, ...(language ? { language } : {}), ...input });
      await loadTemplates();
      say($('template-actions'), t('templateSaved'));
    }, $('template-actions'));
  });
  $('template-delete').addEventListener('click', async () => {
    const stored = templates.byKey.get(key($('template-event').value, $('template-language').value));
    if (!stored || !(await confirmDialog(t('confirmDeleteTemplate', { event: stored.event_name })))) return;
    void guarded(async () => {
      await api('admin/delete_email_template', { id: stored.id });
      await loadTemplates();
      say($('template-actions'), t('templateDeleted'));
    }, $('template-actions'));
  });
})();
