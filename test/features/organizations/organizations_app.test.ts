/**
 * The organization invitation in Chromium against the real server and the
 * real SMTP test server on loopback: the super-admin creates an organization
 * and invites an address from the dashboard; the mailed link opens /app; the invitee signs up on the page and
 * lands in the organization (a member, the session's active organization);
 * a user of several organizations is offered a button per organization
 * after signing in, and the one clicked becomes the session's active one;
 * the account center, reached from there, lists them with the role and makes
 * another one active. In the dashboard the super-admin then creates a team,
 * puts the invitee in it, gives her a custom role (`--organization-roles`)
 * and deletes another team; the engine then allows the invitee on a document
 * shared with the team, and the errors of refused changes are shown next to
 * their control.
 * No CSP or Trusted Types violation, page error or dialog along the way.
 */
import anyTest, { type ExecutionContext } from 'ava';
import type { Browser, Page } from 'playwright-core';
import { launchChromium, watchPage } from '../../helpers/loopback.ts';
import { needs } from '../../helpers/needs.ts';
import { TEST_ADMIN_SECRET, startTestServer } from '../../helpers/server.ts';
import { orgModelFragmentDsl } from '../../../auth/index.ts';
import { mailsTo, startSmtp } from '../../admin/smtp.ts';

const test = needs(anyTest.serial, 'chromium');
const PASSWORD = 'Correct-Horse-7-Battery';
const ADMIN = { 'x-service-admin-secret': TEST_ADMIN_SECRET };

let browser: Browser | undefined;
test.before(async () => {
  browser = await launchChromium();
});
test.after.always(async () => {
  await browser?.close();
});

async function pageFor(t: ExecutionContext): Promise<{ page: Page; problems: string[]; cookie: () => Promise<string | undefined> }> {
  const context = await browser!.newContext();
  t.teardown(() => context.close());
  context.setDefaultTimeout(30_000);
  const page = await context.newPage();
  const cookie = async () => (await context.cookies()).find((c) => c.name === 'cookie_session')?.value;
  return { page, problems: watchPage(page), cookie };
}

test('an invitee opens the mailed link, signs up in /app and lands in the organization; the picker switches organizations', async (t) => {
  const smtp = await startSmtp();
  t.teardown(() => smtp.close());
  const server = await startTestServer({
    'enable-email-verification': false,
    'app-cookie-secure': false,
    'smtp-host': '127.0.0.1',
    'smtp-port': smtp.port,
    'smtp-sender-email': 'noreply@example.com',
    'organization-roles': 'billing',
  });
  t.teardown(() => server.close());
  const rest = (op: string, input: Record<string, unknown>, headers: Record<string, string>) => server.call(op, input, { protocol: 'rest', headers });

  const owner = await rest('signup', { email: 'owner@example.com', password: PASSWORD }, {});
  const bearer = { authorization: `Bearer ${owner.body!['access_token'] as string}` };

  // The dashboard: sign in, create Acme, make the owner its owner, invite an admin.
  const dash = await pageFor(t);
  await dash.page.goto(`${server.httpUrl}/dashboard`);
  await dash.page.getByLabel('Admin secret').fill(TEST_ADMIN_SECRET);
  await dash.page.getByRole('button', { name: 'Sign in' }).click();
  await dash.page.getByRole('link', { name: 'Organizations' }).click();
  await dash.page.fill('#org-name', 'Acme');
  await dash.page.click('#org-create button[type=submit]');
  await dash.page.locator('#org-detail-name', { hasText: 'Acme' }).waitFor();
  const orgId = (await dash.page.textContent('#org-detail-id'))!;
  t.is((await rest('admin_add_organization_member', { organization_id: orgId, email: 'owner@example.com', role: 'owner' }, ADMIN)).error, undefined);
  await dash.page.fill('#org-invite-emails', 'invitee@example.com');
  await dash.page.fill('#org-invite-role', 'admin');
  await dash.page.click('#org-invite button[type=submit]');
  await dash.page.locator('#org-invitation-rows td', { hasText: 'invitee@example.com' }).waitFor();
  t.is(await dash.page.locator('#org-invitation-rows tr').first().locator('.badge').textContent(), 'pending');
  const [mail] = await mailsTo(smtp, 'invitee@example.com', 1);
  // The mail links to the server's /app (its --url; the test server's listens on a port chosen at start).
  const m = /\/app\?organization_invitation=([A-Za-z0-9_-]+)/.exec(mail!);
  t.truthy(m, 'the mail links to /app with the invitation');

  const { page, problems, cookie } = await pageFor(t);
  await page.goto(`${server.httpUrl}/app?organization_invitation=${m![1]!}`);
  await page.click('#to-signup');
  await page.fill('#su-id', 'invitee@example.com');
  await page.fill('#su-password', PASSWORD);
  await page.fill('#su-confirm', PASSWORD);
  await page.click('#signup-submit');
  await page.locator('#signed-in', { hasText: 'Signed in to Acme' }).waitFor();
  t.false(page.url().includes('organization_invitation'), 'the used token leaves the address bar');
  const session = await rest('validate_session', { cookie: (await cookie())! }, {});
  t.is(session.body?.['org_id'], orgId, 'the session\'s active organization is the invitation\'s');
  t.deepEqual(session.body?.['org_roles'], ['admin']);
  const members = await rest('admin_organization_members', { organization_id: orgId }, ADMIN);
  t.deepEqual((members.body!['members'] as { email: string; role: string }[]).map((x) => [x.email, x.role]).sort(), [['invitee@example.com', 'admin'], ['owner@example.com', 'owner']]);
  // The dashboard shows the member and the accepted invitation.
  await dash.page.getByRole('button', { name: 'Open Acme' }).click();
  await dash.page.locator('#org-member-rows td', { hasText: 'invitee@example.com' }).waitFor();
  await dash.page.locator('#org-invitation-rows .badge', { hasText: 'accepted' }).waitFor();

  // Teams and roles in the dashboard: a team, the invitee in it, a custom role, another team deleted.
  const invitee = (members.body!['members'] as { email: string; user_id: string }[]).find((x) => x.email === 'invitee@example.com')!.user_id;
  await dash.page.fill('#org-team-name', 'Engineering');
  await dash.page.click('#org-team-create button[type=submit]');
  await dash.page.locator('#org-team-rows td', { hasText: 'Engineering' }).waitFor();
  await dash.page.fill('#org-team-name', 'Engineering');
  await dash.page.click('#org-team-create button[type=submit]');
  await dash.page.locator('#org-team-create-error', { hasText: 'team of this name' }).waitFor();
  t.true(await dash.page.locator('#org-team-create-error').isVisible(), 'the refusal is shown next to the form');
  await dash.page.selectOption('#org-team-member-team', { label: 'Engineering' });
  await dash.page.selectOption('#org-team-member-user', invitee);
  await dash.page.getByRole('button', { name: 'Add to team' }).click();
  await dash.page.locator('#org-team-rows tr', { hasText: 'Engineering' }).locator('td', { hasText: /^1$/ }).waitFor();
  await dash.page.getByRole('button', { name: 'Add to team' }).click();
  await dash.page.locator('#org-team-member-error', { hasText: 'in this team already' }).waitFor();
  const teams = await rest('admin_teams', { organization_id: orgId }, ADMIN);
  const team = (teams.body!['teams'] as { id: string; name: string; member_count: number }[]).find((x) => x.name === 'Engineering')!;
  t.is(team.member_count, 1);
  t.deepEqual(await dash.page.locator('#org-role-value option').allTextContents(), ['owner', 'admin', 'member', 'billing'], 'the custom roles are offered');
  await dash.page.selectOption('#org-role-member', invitee);
  await dash.page.selectOption('#org-role-value', 'billing');
  await dash.page.getByRole('button', { name: 'Change role' }).click();
  await dash.page.locator('#org-member-rows tr', { hasText: 'invitee@example.com' }).locator('td', { hasText: /^billing$/ }).waitFor();
  const ownerId = (members.body!['members'] as { email: string; user_id: string }[]).find((x) => x.email === 'owner@example.com')!.user_id;
  await dash.page.selectOption('#org-role-member', ownerId);
  await dash.page.selectOption('#org-role-value', 'member');
  await dash.page.getByRole('button', { name: 'Change role' }).click();
  await dash.page.locator('#org-role-error', { hasText: 'last owner' }).waitFor();
  await dash.page.fill('#org-team-name', 'Temporary');
  await dash.page.click('#org-team-create button[type=submit]');
  await dash.page.locator('#org-team-rows td', { hasText: 'Temporary' }).waitFor();
  await dash.page.getByRole('button', { name: 'Delete the team Temporary' }).click();
  await dash.page.locator('#org-team-rows td', { hasText: 'Temporary' }).waitFor({ state: 'detached' });

  // The resulting tuples, through the engine: the invitee's checks on the custom role, the team, and a document
  // shared with the team (the model is the fragment plus a document type).
  const dsl = `model\n  schema 1.1\n${orgModelFragmentDsl(['billing'])}type document\n  relations\n    define viewer: [user, team#member]\n`;
  t.is((await rest('fga_write_model', { dsl }, ADMIN)).error, undefined);
  t.is((await rest('fga_write_tuples', { tuples: [{ user: `team:${team.id}#member`, relation: 'viewer', object: 'document:roadmap' }] }, ADMIN)).error, undefined);
  const asInvitee = { cookie: `cookie_session=${(await cookie())!}` };
  const allowed = async (relation: string, object: string): Promise<boolean> => {
    const r = await rest('check_permissions', { checks: [{ relation, object }] }, asInvitee);
    if (r.error !== undefined) throw new Error(JSON.stringify(r.error));
    return (r.body!['results'] as { allowed: boolean }[])[0]!.allowed;
  };
  t.true(await allowed('billing', `organization:${orgId}`), 'the custom role is a tuple');
  t.false(await allowed('admin', `organization:${orgId}`), 'the former role is gone');
  t.true(await allowed('member', `team:${team.id}`), 'the team membership is a tuple');
  t.true(await allowed('viewer', 'document:roadmap'), 'a document shared with the team');
  await dash.page.selectOption('#org-team-member-team', { label: 'Engineering' });
  await dash.page.selectOption('#org-team-member-user', invitee);
  await dash.page.getByRole('button', { name: 'Remove from team' }).click();
  await dash.page.locator('#org-team-rows tr', { hasText: 'Engineering' }).locator('td', { hasText: /^0$/ }).waitFor();
  t.false(await allowed('viewer', 'document:roadmap'), 'denied once out of the team');

  // A second organization: signing in offers both; the one clicked becomes active.
  await rest('create_organization', { name: 'Globex' }, bearer);
  const second = await pageFor(t);
  await second.page.goto(`${server.httpUrl}/app`);
  await second.page.fill('#email', 'owner@example.com');
  await second.page.fill('#password', PASSWORD);
  await second.page.click('#submit');
  await second.page.locator('#orgs button', { hasText: 'Globex' }).waitFor();
  t.deepEqual(await second.page.locator('#orgs button').allTextContents(), ['Acme', 'Globex']);
  await second.page.click('#orgs button:has-text("Acme")');
  await second.page.locator('#signed-in', { hasText: 'Signed in to Acme' }).waitFor();
  const active = await rest('validate_session', { cookie: (await second.cookie())! }, {});
  t.is(active.body?.['org_id'], orgId);
  // The way on to the account center, which lists both organizations with the role and switches the active one.
  await second.page.click('#to-account');
  await second.page.waitForURL((url) => url.pathname === '/app/account');
  await second.page.locator('#organizations li', { hasText: 'Globex' }).waitFor();
  t.deepEqual(await second.page.locator('#organizations li strong').allTextContents(), ['Acme', 'Globex']);
  await second.page.getByRole('button', { name: 'Make Globex the active organization' }).click();
  await second.page.locator('#organizations-msg', { hasText: 'Active organization: Globex' }).waitFor();
  const switched = await rest('validate_session', { cookie: (await second.cookie())! }, {});
  t.not(switched.body?.['org_id'], orgId, 'the other organization is active now');
  t.truthy(switched.body?.['org_id']);
  t.deepEqual([...dash.problems, ...problems, ...second.problems], []);
});
