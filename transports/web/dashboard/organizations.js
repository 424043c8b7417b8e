// The dashboard's teams and roles of an organization (served inline after page.js by
// transports/web/dashboard/dashboard.ts, allowed by its own SHA-256). It fills #org-teams in the
// organization's detail card: a member's role (owner, admin, member and the server's
// --organization-roles), the organization's teams (create, delete) and team membership (add, remove).
// page.js announces the organization it shows with the `dashboard:organization` event and reloads the
// detail on `dashboard:organization-changed`. Like page.js, it calls only the server's own REST admin
// API with the service-admin cookie and writes to the DOM through createElement/textContent only.
// Each control's error is shown next to it.
'use strict';
(() => {
  const $ = (id) => document.getElementById(id);
  const root = $('org-teams');
  if (!root) return;
  const base = location.pathname.replace(/\/dashboard\/?$/, '/');
  const DATA = JSON.parse(($('dashboard-data') || {}).textContent || '{}');
  const ROLES = Array.isArray(DATA.organization_roles) && DATA.organization_roles.length > 0 ? DATA.organization_roles : ['owner', 'admin', 'member'];

  async function api(path, input) {
    let res;
    try {
      res = await fetch(base + 'v1/admin/' + path, {
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
    if (res.status === 401) throw new Error('Your session has ended. Sign in again.');
    if (!res.ok) throw new Error(body && typeof body.message === 'string' && body.message ? body.message : 'Request failed (' + res.status + ')');
    return body;
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
  const option = (value, text) => el('option', { value, text });
  const errorFor = (id) => el('p', { id, class: 'error', role: 'alert', hidden: true });

  /** Runs `action` with the buttons of `scope` disabled; its error is shown in `error` (next to the control). */
  async function run(scope, error, action) {
    const buttons = [...scope.querySelectorAll('button')];
    for (const b of buttons) b.disabled = true;
    error.hidden = true;
    error.textContent = '';
    try {
      await action();
    } catch (err) {
      error.textContent = err instanceof Error ? err.message : String(err);
      error.hidden = false;
    } finally {
      for (const b of buttons) b.disabled = false;
    }
  }

  // ------------------------------------------------------------ the controls
  const roleMember = el('select', { id: 'org-role-member' });
  const roleValue = el('select', { id: 'org-role-value' }, ...ROLES.map((r) => option(r, r)));
  const roleForm = el('form', { id: 'org-role', class: 'row', method: 'post' },
    el('div', {}, el('label', { for: 'org-role-member', text: 'Member' }), roleMember),
    el('div', {}, el('label', { for: 'org-role-value', text: 'New role' }), roleValue),
    el('button', { type: 'submit', text: 'Change role' }));
  const roleError = errorFor('org-role-error');

  const teamRows = el('tbody', { id: 'org-team-rows' });
  const teamsError = errorFor('org-teams-error');
  const teamName = el('input', { id: 'org-team-name', maxlength: 256, required: true });
  const teamForm = el('form', { id: 'org-team-create', class: 'row', method: 'post' },
    el('div', {}, el('label', { for: 'org-team-name', text: 'Team name' }), teamName),
    el('button', { type: 'submit', text: 'Create team' }));
  const teamError = errorFor('org-team-create-error');

  const memberTeam = el('select', { id: 'org-team-member-team' });
  const memberUser = el('select', { id: 'org-team-member-user' });
  const addButton = el('button', { type: 'submit', text: 'Add to team' });
  const removeButton = el('button', { type: 'button', text: 'Remove from team' });
  const memberForm = el('form', { id: 'org-team-member', class: 'row', method: 'post' },
    el('div', {}, el('label', { for: 'org-team-member-team', text: 'Team' }), memberTeam),
    el('div', {}, el('label', { for: 'org-team-member-user', text: 'Organization member' }), memberUser),
    addButton, removeButton);
  const memberError = errorFor('org-team-member-error');

  root.replaceChildren(
    el('h4', { text: 'Change a member\'s role' }), roleForm, roleError,
    el('h4', { text: 'Teams' }),
    el('table', {}, el('thead', {}, el('tr', {}, el('th', { text: 'Team' }), el('th', { text: 'Members' }), el('th', { text: 'Team id' }), el('th', {}))), teamRows),
    teamsError, teamForm, teamError,
    el('h4', { text: 'Team membership' }), memberForm, memberError);

  // ------------------------------------------------------------ loading
  let current = null;
  async function load() {
    if (!current) return;
    const orgId = current.id;
    const [members, teams] = await Promise.all([
      api('organization_members', { organization_id: orgId, pagination: { page: 1, limit: 100 } }),
      api('teams', { organization_id: orgId, pagination: { page: 1, limit: 100 } }),
    ]);
    if (!current || current.id !== orgId) return;
    const label = (m) => (m.email || m.user_id) + ' (' + m.role + ')';
    const keepMember = roleMember.value;
    roleMember.replaceChildren(...members.members.map((m) => option(m.user_id, label(m))));
    if (keepMember) roleMember.value = keepMember;
    const keepUser = memberUser.value;
    memberUser.replaceChildren(...members.members.map((m) => option(m.user_id, label(m))));
    if (keepUser) memberUser.value = keepUser;
    const keepTeam = memberTeam.value;
    memberTeam.replaceChildren(...teams.teams.map((t) => option(t.id, t.name)));
    if (keepTeam) memberTeam.value = keepTeam;
    teamRows.replaceChildren(...teams.teams.map((t) => el('tr', {},
      el('td', { text: t.name }),
      el('td', { text: String(t.member_count) }),
      el('td', {}, el('code', { text: t.id })),
      el('td', {}, el('button', { type: 'button', class: 'danger', text: 'Delete', 'aria-label': 'Delete the team ' + t.name, onclick: (ev) => run(ev.currentTarget.closest('tr'), teamsError, async () => {
        await api('delete_team', { team_id: t.id });
        await load();
      }) })))));
    if (teams.teams.length === 0) teamRows.append(el('tr', {}, el('td', { colspan: 4, class: 'muted', text: 'No teams.' })));
  }

  document.addEventListener('dashboard:organization', (ev) => {
    current = ev.detail || null;
    for (const e of [roleError, teamsError, teamError, memberError]) e.hidden = true;
    if (current) void run(root, teamsError, load);
  });

  roleForm.addEventListener('submit', (ev) => {
    ev.preventDefault();
    if (!current) return;
    void run(roleForm, roleError, async () => {
      if (!roleMember.value) throw new Error('Choose a member.');
      await api('update_organization_member', { organization_id: current.id, user_id: roleMember.value, role: roleValue.value });
      // page.js reloads the members table, and announces the organization again (which reloads this part).
      document.dispatchEvent(new CustomEvent('dashboard:organization-changed'));
    });
  });
  teamForm.addEventListener('submit', (ev) => {
    ev.preventDefault();
    if (!current) return;
    void run(teamForm, teamError, async () => {
      const team = await api('create_team', { organization_id: current.id, name: teamName.value.trim() });
      teamName.value = '';
      await load();
      memberTeam.value = team.id;
    });
  });
  const membership = (op) => run(memberForm, memberError, async () => {
    if (!memberTeam.value) throw new Error('Create a team first.');
    if (!memberUser.value) throw new Error('Choose a member.');
    await api(op, { team_id: memberTeam.value, user_id: memberUser.value });
    await load();
  });
  memberForm.addEventListener('submit', (ev) => {
    ev.preventDefault();
    if (current) void membership('add_team_member');
  });
  removeButton.addEventListener('click', () => {
    if (current) void membership('remove_team_member');
  });
})();
