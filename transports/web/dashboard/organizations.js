// The dashboard's organizations section (served inline after core.js, allowed by its own SHA-256): the
// organizations with search and paging, one created, and an organization's detail: members and their
// roles (owner, admin, member and the server's --organization-roles), invitations, domains and their DNS
// proof, teams and team membership, and deletion. Each control's error is shown next to it.
'use strict';
(() => {
  const d = window.latchkeyDashboard;
  if (!d) return;
  const { loaders, t, api, el, clear, when, badge, emptyRow, say, guarded, confirmDialog, pager, showPage } = d;
  const $ = (id) => document.getElementById(id);
  const ROLES = Array.isArray(d.data.organization_roles) && d.data.organization_roles.length > 0 ? d.data.organization_roles : ['owner', 'admin', 'member'];
  const orgs = { page: 1, limit: 10, total: 0, current: null };
  const option = (value, text) => el('option', { value, text });

  // ------------------------------------------------------------ list
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
        el('td', {}, el('button', { type: 'button', class: 'secondary', text: t('open'), 'aria-label': t('openNamed', { name: o.name }), onclick: () => guarded(() => openOrg(o), $('org-search')) }))));
    }
    if (out.organizations.length === 0) body.append(emptyRow(4, 'noOrganizations'));
    showPage('orgs', orgs);
  }
  loaders.orgs = loadOrgs;
  pager('orgs', orgs, () => guarded(loadOrgs, $('org-search')));
  $('org-search').addEventListener('submit', (ev) => { ev.preventDefault(); orgs.page = 1; void guarded(loadOrgs, $('org-search')); });
  $('org-create').addEventListener('submit', (ev) => {
    ev.preventDefault();
    void guarded(async () => {
      const input = { name: $('org-name').value.trim() };
      const slug = $('org-slug').value.trim();
      if (slug) input.slug = slug;
      const o = await api('admin/create_organization', input);
      $('org-name').value = '';
      $('org-slug').value = '';
      say($('org-create'), t('organizationCreated'));
      await loadOrgs();
      await openOrg(o);
    }, $('org-create'));
  });

  // ------------------------------------------------------------ detail
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
        el('td', {}, el('button', { type: 'button', class: 'secondary', text: t('remove'), 'aria-label': t('removeNamed', { name: m.email || m.user_id }), onclick: () => guarded(async () => {
          await api('admin/remove_organization_member', { organization_id: o.id, user_id: m.user_id });
          say($('org-members-box'), t('memberRemoved'));
          await loadOrgDetail();
        }, $('org-members-box')) }))));
    }
    if (members.members.length === 0) mbody.append(emptyRow(4, 'noMembers'));
    const invitations = await api('admin/organization_invitations', { organization_id: o.id, pagination: { page: 1, limit: 100 } });
    const ibody = $('org-invitation-rows');
    clear(ibody);
    for (const i of invitations.invitations) {
      ibody.append(el('tr', {},
        el('td', { text: i.email }),
        el('td', { text: i.role }),
        el('td', {}, badge(i.status, i.status === 'accepted' ? 'ok' : i.status === 'pending' ? '' : 'bad')),
        el('td', { text: when(i.expires_at) }),
        el('td', {}, i.status === 'pending' ? el('button', { type: 'button', class: 'secondary', text: t('revoke'), 'aria-label': t('revokeInvitationOf', { email: i.email }), onclick: () => guarded(async () => {
          await api('admin/revoke_organization_invitation', { invitation_id: i.id });
          await loadOrgDetail();
        }, $('org-invitations-box')) }) : '')));
    }
    if (invitations.invitations.length === 0) ibody.append(emptyRow(5, 'noInvitations'));
    await loadTeams();
  }
  $('org-invite').addEventListener('submit', (ev) => {
    ev.preventDefault();
    void guarded(async () => {
      const emails = $('org-invite-emails').value.split(/[\s,]+/).map((e) => e.trim()).filter(Boolean);
      const input = { organization_id: orgs.current.id, emails };
      const role = $('org-invite-role').value.trim();
      if (role) input.role = role;
      await api('admin/invite_organization_members', input);
      $('org-invite-emails').value = '';
      say($('org-invite'), t('orgInvitationsCreated'));
      await loadOrgDetail();
    }, $('org-invite'));
  });
  const showRecord = (x) => {
    $('org-domain-record').textContent = x.verified ? t('domainVerified', { domain: x.domain }) : t('domainPublish', { name: x.txt_record_name, value: x.txt_record_value });
  };
  $('org-domain').addEventListener('submit', (ev) => {
    ev.preventDefault();
    void guarded(async () => showRecord(await api('admin/add_organization_domain', { organization_id: orgs.current.id, domain: $('org-domain-name').value.trim() })), $('org-domain'));
  });
  $('org-domain-verify').addEventListener('click', () => guarded(async () => showRecord(await api('admin/verify_organization_domain', { organization_id: orgs.current.id, domain: $('org-domain-name').value.trim() })), $('org-domain')));
  $('org-delete').addEventListener('click', async () => {
    const o = orgs.current;
    if (!o || !(await confirmDialog(t('confirmDeleteOrganization', { name: o.name })))) return;
    await guarded(async () => {
      await api('admin/delete_organization', { organization_id: o.id });
      $('org-detail').hidden = true;
      orgs.current = null;
      say($('org-search'), t('organizationDeleted'));
      await loadOrgs();
    }, $('org-actions'));
  });
  $('org-close').addEventListener('click', () => { $('org-detail').hidden = true; orgs.current = null; });

  // ------------------------------------------------------------ roles and teams
  const roleMember = $('org-role-member');
  const roleValue = $('org-role-value');
  roleValue.replaceChildren(...ROLES.map((r) => option(r, r)));
  const memberTeam = $('org-team-member-team');
  const memberUser = $('org-team-member-user');
  async function loadTeams() {
    const o = orgs.current;
    if (!o) return;
    const [members, teams] = await Promise.all([
      api('admin/organization_members', { organization_id: o.id, pagination: { page: 1, limit: 100 } }),
      api('admin/teams', { organization_id: o.id, pagination: { page: 1, limit: 100 } }),
    ]);
    if (orgs.current !== o) return;
    const label = (m) => (m.email || m.user_id) + ' (' + m.role + ')';
    const keep = (select, options) => { const v = select.value; select.replaceChildren(...options); if (v) select.value = v; };
    keep(roleMember, members.members.map((m) => option(m.user_id, label(m))));
    keep(memberUser, members.members.map((m) => option(m.user_id, label(m))));
    keep(memberTeam, teams.teams.map((x) => option(x.id, x.name)));
    const rows = $('org-team-rows');
    rows.replaceChildren(...teams.teams.map((x) => el('tr', {},
      el('td', { text: x.name }),
      el('td', { text: String(x.member_count) }),
      el('td', {}, el('code', { text: x.id })),
      el('td', {}, el('button', { type: 'button', class: 'danger', text: t('delete'), 'aria-label': t('deleteTeamNamed', { name: x.name }), onclick: () => guarded(async () => {
        await api('admin/delete_team', { team_id: x.id });
        await loadTeams();
      }, $('org-teams-box')) })))));
    if (teams.teams.length === 0) rows.append(emptyRow(4, 'noTeams'));
  }
  $('org-role').addEventListener('submit', (ev) => {
    ev.preventDefault();
    if (!orgs.current) return;
    void guarded(async () => {
      if (!roleMember.value) throw new Error(t('chooseMember'));
      await api('admin/update_organization_member', { organization_id: orgs.current.id, user_id: roleMember.value, role: roleValue.value });
      await loadOrgDetail();
      say($('org-role'), t('roleChanged'));
    }, $('org-role'));
  });
  $('org-team-create').addEventListener('submit', (ev) => {
    ev.preventDefault();
    if (!orgs.current) return;
    void guarded(async () => {
      const team = await api('admin/create_team', { organization_id: orgs.current.id, name: $('org-team-name').value.trim() });
      $('org-team-name').value = '';
      await loadTeams();
      memberTeam.value = team.id;
    }, $('org-team-create'));
  });
  const membership = (op) => guarded(async () => {
    if (!memberTeam.value) throw new Error(t('createTeamFirst'));
    if (!memberUser.value) throw new Error(t('chooseMember'));
    await api(op, { team_id: memberTeam.value, user_id: memberUser.value });
    await loadTeams();
  }, $('org-team-member'));
  $('org-team-member').addEventListener('submit', (ev) => { ev.preventDefault(); if (orgs.current) void membership('admin/add_team_member'); });
  $('org-team-member-remove').addEventListener('click', () => { if (orgs.current) void membership('admin/remove_team_member'); });
})();
