// The dashboard's authorization section (served inline after core.js, allowed by its own SHA-256): the
// model in DSL with its problems marked at their line while typing, saved as a new version, versions
// listed and reopened; tuples read page by page, written and deleted; and the tester (check with its
// expand tree and its explanation, list objects, list users, expand). Relation names, objects and
// operators of the trees are the model's own words and stay as written.
'use strict';
(() => {
  const d = window.latchkeyDashboard;
  if (!d) return;
  const { loaders, t, api, el, clear, when, badge, emptyRow, say, guarded, confirmDialog } = d;
  const $ = (id) => document.getElementById(id);
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
      list.append(el('li', { tabindex: 0, 'data-line': e.line, 'data-column': e.column, text: t('dslProblemAt', { line: e.line, column: e.column, message: e.message }), onclick: () => goTo(e), onkeydown: (k) => { if (k.key === 'Enter') goTo(e); } }));
    }
    $('dsl-status').textContent = errors.length ? t(errors.length === 1 ? 'dslOneProblem' : 'dslProblems', { count: errors.length }) : t('dslValid');
    $('dsl-status').className = errors.length ? 'msg error' : 'msg ok';
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
    if (!dsl.value.trim()) { showDslErrors([]); $('dsl-status').textContent = t('dslEmpty'); return; }
    const out = await api('admin/fga/validate_model', { dsl: dsl.value });
    if (seq === validateSeq) showDslErrors(out.errors || []);
  }
  dsl.addEventListener('input', () => {
    paintGutter();
    clearTimeout(validateTimer);
    $('dsl-status').textContent = t('dslChecking');
    validateTimer = setTimeout(() => void guarded(validate, $('dsl-actions')), 250);
  });
  dsl.addEventListener('scroll', () => { $('dsl-gutter').scrollTop = dsl.scrollTop; });
  $('dsl-save').addEventListener('click', () => guarded(async () => {
    try {
      const out = await api('admin/fga/model', { dsl: dsl.value });
      dsl.value = out.dsl;
      showDslErrors([]);
      say($('dsl-actions'), t('modelSaved', { id: out.id }));
      await loadModels(true);
    } catch (err) {
      if (err.reason === 'invalid_dsl' && err.details && Array.isArray(err.details.errors)) showDslErrors(err.details.errors);
      throw err;
    }
  }, $('dsl-actions')));
  $('dsl-reload').addEventListener('click', () => guarded(loadModel, $('dsl-actions')));
  async function loadModel() {
    const out = await api('admin/fga/model', undefined, 'GET');
    dsl.value = out.dsl;
    showDslErrors([]);
    if (!out.dsl) $('dsl-status').textContent = t('dslNoModel');
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
        el('td', {}, el('button', { type: 'button', class: 'secondary', text: t('openInEditor'), onclick: () => { dsl.value = m.dsl; showDslErrors([]); dsl.focus(); } }))));
    }
    $('models-more').hidden = !models.token;
  }
  $('models-more').addEventListener('click', () => guarded(() => loadModels(false), $('models-box')));

  const tuples = { token: '', filter: {} };
  function tupleInput(x) { return x.condition ? { user: x.user, relation: x.relation, object: x.object, condition: x.condition } : { user: x.user, relation: x.relation, object: x.object }; }
  async function readTuples(reset) {
    if (reset) {
      tuples.token = '';
      tuples.filter = {};
      for (const [field, id] of [['user', 'tf-user'], ['relation', 'tf-relation'], ['object', 'tf-object']]) { const v = $(id).value.trim(); if (v) tuples.filter[field] = v; }
      clear($('tuple-rows'));
    }
    const out = await api('admin/fga/tuples/read', { ...tuples.filter, page_size: 20, ...(tuples.token ? { continuation_token: tuples.token } : {}) });
    tuples.token = out.continuation_token || '';
    for (const x of out.tuples) {
      const row = el('tr', {},
        el('td', { text: x.user }), el('td', { text: x.relation }), el('td', { text: x.object }),
        el('td', { text: x.condition ? x.condition.name : '' }),
        el('td', {}, el('button', { type: 'button', class: 'danger', text: t('delete'), 'aria-label': t('deleteTupleNamed', { user: x.user, relation: x.relation, object: x.object }), onclick: async () => {
          if (!(await confirmDialog(t('confirmDeleteTuple', { tuple: x.object + '#' + x.relation + '@' + x.user })))) return;
          void guarded(async () => { await api('admin/fga/tuples/delete', { tuples: [tupleInput(x)] }); row.remove(); say($('tuple-filter'), t('tupleDeleted')); }, $('tuple-filter'));
        } })));
      $('tuple-rows').append(row);
    }
    if (reset && out.tuples.length === 0) $('tuple-rows').append(emptyRow(5, 'noTuples'));
    $('tuples-more').hidden = !tuples.token;
  }
  $('tuple-filter').addEventListener('submit', (ev) => { ev.preventDefault(); void guarded(() => readTuples(true), $('tuple-filter')); });
  $('tuples-more').addEventListener('click', () => guarded(() => readTuples(false), $('tuple-filter')));
  $('tuple-write').addEventListener('submit', (ev) => {
    ev.preventDefault();
    void guarded(async () => {
      await api('admin/fga/tuples', { tuples: [{ user: $('tw-user').value.trim(), relation: $('tw-relation').value.trim(), object: $('tw-object').value.trim() }] });
      say($('tuple-write'), t('tupleWritten'));
      await readTuples(true);
    }, $('tuple-write'));
  });

  function treeNode(node) {
    if (!node || typeof node !== 'object') return el('li', { text: String(node) });
    const li = el('li', {}, el('span', { class: 'op', text: node.name || '' }));
    const sub = el('ul', {});
    if (node.leaf) {
      const leaf = node.leaf;
      if (leaf.users) sub.append(el('li', { text: 'users: ' + ((leaf.users.users || []).join(', ') || '∅') }));
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
    return el('div', {}, el('h3', { text: t('expandOf', { target: object + '#' + relation }) }), el('ul', { class: 'tree', 'aria-label': t('usersetTree') }, treeNode(tree.root || tree)));
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
    const why = [node.because ? node.because.replace(/_/g, ' ') : '', node.cycle ? t('cycleCut') : '', node.error ? node.error.message : ''].filter(Boolean).join(' ');
    if (why) li.append(' ', el('span', { class: 'muted', text: why }));
    if (node.children && node.children.length) li.append(el('ul', {}, ...node.children.map(explainNode)));
    return li;
  }
  async function explainTree(user, relation, object) {
    const out = await api('admin/fga/explain', { user, relation, object });
    const head = el('h3', { text: t(out.allowed ? 'whyAllowed' : 'whyNotAllowed', { user, relation, object }) });
    const note = out.error ? el('p', { class: 'msg error', text: t('checkError', { message: out.error.message }) }) : null;
    return el('div', {}, head, note, el('ul', { class: 'tree', 'aria-label': t('explanation') }, explainNode(out.tree)));
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
        result.append(el('p', { id: 'check-answer', class: allowed ? 'msg ok' : 'msg error', text: t(allowed ? 'isAllowed' : 'isNotAllowed', { user, relation, object }) }));
        const why = el('div', { id: 'explain' });
        const button = el('button', { type: 'button', id: 'explain-button', class: 'secondary', text: t('why') });
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
        result.append(el('p', { text: t(out.truncated ? 'objectsTruncated' : 'objectsCount', { count: out.objects.length }) }), el('ul', { id: 'list-answer' }, ...out.objects.map((o) => el('li', { text: o }))));
      } else if (kind === 'list_users') {
        const out = await api('admin/fga/list_users', { object, relation, user_type: $('t-user-type').value.trim() || 'user' });
        result.append(el('p', { text: t('usersCount', { count: out.users.length }) }), el('ul', { id: 'list-answer' }, ...out.users.map((u) => el('li', { text: u }))));
      } else {
        result.append(await expandTree(relation, object));
      }
    }, $('tester'));
  });
  loaders.authz = async () => {
    const on = Boolean(d.meta.is_fga_enabled);
    $('fga-on').hidden = !on;
    $('fga-off').hidden = on;
    if (!on) return;
    await loadModel();
    await loadModels(true);
    await readTuples(true);
  };
})();
