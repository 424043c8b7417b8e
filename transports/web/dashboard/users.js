// The dashboard's users section (served inline after core.js, allowed by its own SHA-256): the user list
// with search and paging, a user's details (names, roles, verification flags, multi-factor), their live
// sessions (`_list_sessions`, each ended with `_revoke_session`), their passkeys, access revoked and
// enabled, deletion, and invitations.
'use strict';
(() => {
  const d = window.latchkeyDashboard;
  if (!d) return;
  const { loaders, onEnter, t, api, el, clear, when, badge, emptyRow, say, guarded, confirmDialog, pager, showPage } = d;
  const $ = (id) => document.getElementById(id);
  const base = location.pathname.replace(/\/dashboard\/?$/, '/');
  const users = { page: 1, limit: 10, total: 0, rows: [], filter: '', current: null };

  function userRow(u) {
    const name = [u.given_name, u.family_name].filter(Boolean).join(' ') || u.nickname || '';
    const who = u.email || u.phone_number || u.id;
    return el('tr', {},
      el('td', { text: who }),
      el('td', { text: name }),
      el('td', { text: (u.roles || []).join(', ') }),
      el('td', {}, u.email_verified ? badge(t('badgeEmail'), 'ok') : badge(t('badgeEmailUnverified')), ' ', u.phone_number ? (u.phone_number_verified ? badge(t('badgePhone'), 'ok') : badge(t('badgePhoneUnverified'))) : ''),
      el('td', {}, u.revoked_timestamp ? badge(t('badgeRevoked'), 'bad') : badge(t('badgeActive'), 'ok')),
      el('td', {}, el('button', { type: 'button', class: 'secondary', text: t('open'), 'aria-label': t('openNamed', { name: u.email || u.id }), onclick: () => openUser(u) })));
  }
  function renderUsers(list) {
    const body = $('user-rows');
    clear(body);
    for (const u of list) body.append(userRow(u));
    if (list.length === 0) body.append(emptyRow(6, 'noUsers'));
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
  onEnter.push(() => {
    // Invitation links open the built-in login page unless another page is named.
    if (!$('invite-redirect').value) $('invite-redirect').value = new URL(base + 'app', location.origin).href;
  });
  pager('users', users, () => guarded(loadUsers, $('users')));
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
    }, $('user-search'));
  });
  $('user-search-clear').addEventListener('click', () => { $('user-query').value = ''; users.filter = ''; void guarded(loadUsers, $('user-search')); });

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
    $('edit-meta').textContent = t('userMeta', { created: when(u.created_at), methods: u.signup_methods || '' }) + (u.revoked_timestamp ? ' · ' + t('accessRevokedAt', { when: when(u.revoked_timestamp) }) : '');
    const roles = $('edit-roles');
    clear(roles);
    const all = [...new Set([...(d.meta.roles || []), ...(u.roles || [])])];
    for (const r of all) roles.append(el('label', { class: 'check' }, el('input', { type: 'checkbox', value: r, checked: (u.roles || []).includes(r) }), r));
    void guarded(() => loadUserSessions(u), $('edit-sessions-box'));
    $('edit-access').textContent = u.revoked_timestamp ? t('enableAccess') : t('revokeAccess');
    $('edit-delete').disabled = !u.email;
    void guarded(() => loadPasskeys(u), $('edit-passkeys-box'));
    $('edit-email').focus();
  }
  // A user's passkeys, each revocable (admin user_passkeys, revoke_user_passkey).
  async function loadPasskeys(u) {
    const list = $('edit-passkeys');
    const out = await api('admin/user_passkeys', { user_id: u.id });
    if (users.current !== u) return;
    clear(list);
    if (out.passkeys.length === 0) list.append(el('li', { class: 'muted', text: t('noPasskeys') }));
    for (const p of out.passkeys) {
      const label = t('passkeyAdded', { name: p.name, when: when(p.created_at) }) + ' · ' + (p.last_used_at ? t('lastUsed', { when: when(p.last_used_at) }) : t('neverUsed')) + (p.backup_eligible ? ' · ' + t('synced') : '');
      const revoke = el('button', { type: 'button', class: 'danger', text: t('revoke'), 'aria-label': t('revokePasskeyNamed', { name: p.name }), onclick: async () => {
        if (!(await confirmDialog(t('confirmRevokePasskey', { name: p.name, user: u.email || u.id }), t('revoke')))) return;
        void guarded(async () => {
          await api('admin/revoke_user_passkey', { user_id: u.id, id: p.id });
          say($('edit-passkeys-box'), t('passkeyRevoked'));
          await loadPasskeys(u);
        }, $('edit-passkeys-box'));
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
    if (out.sessions.length === 0) rows.append(emptyRow(5, 'noSessions'));
    for (const s of out.sessions) {
      const end = el('button', { type: 'button', class: 'secondary', text: t('endSession'), 'aria-label': t('endSessionNamed', { browser: s.browser, ip: s.ip || '—' }) });
      end.addEventListener('click', () => void guarded(async () => {
        await api('admin/revoke_session', { id: s.id });
        // The list first, then the word: the confirmation is announced with the session already gone from it.
        await loadUserSessions(u);
        say($('edit-sessions-box'), t('sessionEndedOk'));
      }, $('edit-sessions-box')));
      rows.append(el('tr', {},
        el('td', { text: s.browser, title: s.user_agent, 'data-label': t('colBrowser') }),
        el('td', { text: s.ip, 'data-label': t('colIp') }),
        el('td', { text: when(s.first_seen_at), 'data-label': t('colSignedIn') }),
        el('td', { text: when(s.last_seen_at), 'data-label': t('colLastSeen') }),
        el('td', {}, end)));
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
      openUser(updated);
      say($('user-edit-actions'), t('userSaved'));
      await loadUsers();
    }, $('user-edit-actions'));
  });
  $('edit-access').addEventListener('click', () => {
    const u = users.current;
    if (!u) return;
    void guarded(async () => {
      await api(u.revoked_timestamp ? 'admin/enable_access' : 'admin/revoke_access', { user_id: u.id });
      openUser(await api('admin/user', { id: u.id }));
      say($('user-edit-actions'), u.revoked_timestamp ? t('accessEnabled') : t('accessRevoked'));
      $('edit-access').focus();
      await loadUsers();
    }, $('user-edit-actions'));
  });
  $('edit-delete').addEventListener('click', async () => {
    const u = users.current;
    if (!u || !u.email) return;
    if (!(await confirmDialog(t('confirmDeleteUser', { email: u.email })))) return;
    void guarded(async () => {
      await api('admin/delete_user', { email: u.email });
      $('user-edit').hidden = true;
      users.current = null;
      say($('user-search'), t('userDeleted'));
      await loadUsers();
    }, $('user-edit-actions'));
  });
  $('invite-form').addEventListener('submit', (ev) => {
    ev.preventDefault();
    const emails = $('invite-emails').value.split(/[\s,;]+/).map((s) => s.trim()).filter(Boolean);
    const redirect = $('invite-redirect').value.trim();
    void guarded(async () => {
      const out = await api('admin/invite_members', redirect ? { emails, redirect_uri: redirect } : { emails });
      const existing = out.existing && out.existing.length ? ' ' + t('alreadyMembers', { emails: out.existing.join(', ') }) : '';
      say($('invite-form'), t('invitationsSent', { count: emails.length - (out.existing || []).length }) + existing);
      $('invite-emails').value = '';
      await loadUsers();
    }, $('invite-form'));
  });
})();
