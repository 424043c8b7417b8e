/**
 * The admin dashboard at /dashboard, driven in a real browser (Debian's
 * Chromium through playwright-core) against the real server on loopback, each
 * action's effect checked through the API: sign-in with the admin secret (a
 * wrong one refused), users (search, edit names and roles, revoke then the
 * user's token fails, enable, invite, delete with confirmation), webhooks
 * (create, a test event reaching a loopback receiver, a failing one shown as
 * failed, edit, disable, the delivery log of a real event), an email template
 * edited with its live preview, the audit log filtered by action, resource
 * and actor, the
 * authorization model (a DSL error marked at its line while typing, a valid
 * model saved as a version, versions listed and reopened), tuples written,
 * read page by page with the continuation token, and deleted, the tester
 * (check with its expand tree, list objects, list users), sign-out, and an
 * expired session sent back to sign-in; at phone width and by keyboard alone:
 * sign-in, sections, user pages, no sideways scrolling. No CSP or Trusted
 * Types violation, page error or dialog along the way. Plus the page's
 * headers and --enable-dashboard=false.
 */
import anyTest, { type ExecutionContext } from 'ava';
import type { Browser, Page } from 'playwright-core';
import { TEST_ADMIN_SECRET, startTestServer, type TestServer } from '../../helpers/server.ts';
import { startReceiver, type Receiver } from '../../admin/receiver.ts';
import { mailTo, startSmtp } from '../../admin/smtp.ts';
import type { Clock } from '../../../cmd/index.ts';
import { screenshot } from '../../helpers/screenshots.ts';
import { seriousViolations } from '../../helpers/accessibility.ts';
import { launchChromium, watchPage } from '../../helpers/loopback.ts';
import { needs } from '../../helpers/needs.ts';

const test = needs(anyTest.serial, 'chromium');

/** A screen the test has reached: its picture for docs/ui.md (when asked for) and no serious or critical accessibility violation. */
async function screen(t: ExecutionContext, page: Page, name: string): Promise<void> {
  await screenshot(page, name);
  t.deepEqual(await seriousViolations(page), [], `accessibility of ${name}`);
}
const WAIT = 30_000;
const PASSWORD = 'Correct-Horse-7-Battery';
const ADMIN = { 'x-service-admin-secret': TEST_ADMIN_SECRET };

let browser: Browser | undefined;

test.before(async () => {
  browser = await launchChromium();
});

test.after.always(async () => {
  await browser?.close();
});

/** A clock the test moves forward (session expiry) instead of sleeping. */
class TestClock implements Clock {
  offsetMs = 0;
  now(): Date {
    return new Date(Date.now() + this.offsetMs);
  }
}

async function start(t: ExecutionContext, extra: Record<string, string | number | boolean> = {}, clock?: Clock): Promise<TestServer> {
  const server = await startTestServer({ 'enable-email-verification': false, 'webhook-allow-private-networks': true, roles: 'user,editor,auditor', ...extra }, clock ? { clock } : {});
  t.teardown(() => server.close());
  return server;
}

async function receiverFor(t: ExecutionContext): Promise<Receiver> {
  const r = await startReceiver();
  t.teardown(() => r.close());
  return r;
}

async function openDashboard(t: ExecutionContext, server: TestServer): Promise<{ page: Page; problems: string[] }> {
  const context = await browser!.newContext();
  t.teardown(() => context.close());
  context.setDefaultTimeout(WAIT);
  const page = await context.newPage();
  const problems = watchPage(page);
  await page.goto(`${server.httpUrl}/dashboard`);
  return { page, problems };
}

async function signIn(page: Page, secret = TEST_ADMIN_SECRET): Promise<void> {
  await page.getByLabel('Admin secret').fill(secret);
  await page.getByRole('button', { name: 'Sign in' }).click();
}

/** Polls `probe` until it returns true (the server's effect of a browser action), failing after WAIT. */
async function until(probe: () => Promise<boolean>, what: string): Promise<void> {
  const deadline = Date.now() + WAIT;
  while (!(await probe())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

const admin = (server: TestServer, op: string, input: Record<string, unknown> = {}) => server.call(op, input, { protocol: 'rest', headers: ADMIN });

test('the page headers: strict CSP by hash with Trusted Types, no-store, no framing; 404 with --enable-dashboard=false', async (t) => {
  const server = await start(t);
  for (const path of ['/dashboard', '/dashboard/', '/dashboard?x=<script>']) {
    const res = await fetch(`${server.httpUrl}${path}`);
    t.is(res.status, 200, path);
    t.regex(res.headers.get('content-type') ?? '', /^text\/html/);
    t.is(res.headers.get('cache-control'), 'no-store');
    t.is(res.headers.get('x-frame-options'), 'DENY');
    const csp = res.headers.get('content-security-policy') ?? '';
    const directives = new Map(csp.split(';').map((d) => d.trim().split(/\s+/)).map(([name, ...values]) => [name, values]));
    t.deepEqual(directives.get('default-src'), ["'none'"]);
    t.deepEqual(directives.get('frame-ancestors'), ["'none'"]);
    t.deepEqual(directives.get('connect-src'), ["'self'"]);
    t.deepEqual(directives.get('form-action'), ["'none'"]);
    t.deepEqual(directives.get('base-uri'), ["'none'"]);
    t.deepEqual(directives.get('require-trusted-types-for'), ["'script'"]);
    t.deepEqual(directives.get('trusted-types'), ['dashboard-preview']);
    const scripts = directives.get('script-src') ?? [];
    // core.js and the eight section scripts, each by its hash and nothing else.
    t.is(scripts.length, 9);
    for (const h of scripts) t.regex(h, /^'sha256-[A-Za-z0-9+/]{43}='$/);
    t.regex((directives.get('style-src') ?? [])[0] ?? '', /^'sha256-/);
    t.false((await res.text()).includes('<script>x'), 'nothing of the request is written into the page');
  }
  const off = await start(t, { 'enable-dashboard': false });
  t.is((await fetch(`${off.httpUrl}/dashboard`)).status, 404);
});

test('sign-in: a wrong secret is refused, the right one opens the overview; sign-out; an expired session goes back to sign-in', async (t) => {
  const clock = new TestClock();
  const server = await start(t, {}, clock);
  const { page, problems } = await openDashboard(t, server);
  await signIn(page, 'not-the-secret');
  await page.getByRole('alert').filter({ hasText: 'That admin secret is not right.' }).waitFor();
  await screen(t, page, 'dashboard-sign-in');
  t.true(await page.locator('#app').isHidden());
  await signIn(page);
  await page.getByRole('heading', { name: 'Overview' }).waitFor();
  await page.locator('#features li', { hasText: 'Server version' }).waitFor();
  await page.locator('#counts .card', { hasText: 'Users' }).locator('strong', { hasText: /^\d+$/ }).waitFor();
  await screen(t, page, 'dashboard-overview');
  // A reload keeps the session (the cookie), then sign-out ends it on the server too.
  await page.reload();
  await page.getByRole('heading', { name: 'Overview' }).waitFor();
  const cookie = (await page.context().cookies()).find((c) => c.name === 'service-admin');
  t.truthy(cookie, 'the admin session cookie is set');
  t.true(cookie?.httpOnly);
  await page.getByRole('button', { name: 'Sign out' }).click();
  await page.getByLabel('Admin secret').waitFor();
  const after = await server.call('admin_session', {}, { protocol: 'rest', cookies: { 'service-admin': cookie!.value } });
  t.is(after.error?.code, 'unauthenticated');
  // Expiry: the server's clock passes the session's lifetime; the next action lands on the sign-in form.
  await signIn(page);
  await page.getByRole('heading', { name: 'Overview' }).waitFor();
  // Every call of the overview answered before the clock moves (else one of them ends the session first).
  await page.waitForLoadState('networkidle');
  clock.offsetMs = 2 * 3_600_000;
  await page.getByRole('link', { name: 'Users' }).click();
  await page.getByRole('alert').filter({ hasText: 'Your session has ended' }).waitFor();
  t.true(await page.getByLabel('Admin secret').isVisible());
  t.deepEqual(problems, []);
});

test('users: search, edit names and roles, revoke (the token fails) and enable, invite, delete with confirmation; the audit log shows it', async (t) => {
  const smtp = await startSmtp();
  t.teardown(() => smtp.close());
  const server = await start(t, { 'smtp-host': '127.0.0.1', 'smtp-port': smtp.port, 'smtp-sender-email': 'noreply@example.com' });
  const receiver = await receiverFor(t);
  const signup = await server.call('signup', { email: 'ann@example.com', password: PASSWORD }, { protocol: 'rest' });
  const token = String(signup.body?.['access_token']);
  const userId = String((signup.body?.['user'] as { id: string }).id);
  const bearer = { authorization: `Bearer ${token}` };
  t.is((await server.call('profile', {}, { protocol: 'rest', headers: bearer })).body?.['id'], userId);
  await admin(server, 'add_webhook', { event_name: 'user.deleted', endpoint: receiver.url });

  const { page, problems } = await openDashboard(t, server);
  await signIn(page);
  await page.getByRole('link', { name: 'Users' }).click();
  await page.getByLabel(/^Search/).fill('ann@example.com');
  await page.getByRole('button', { name: 'Search', exact: true }).click();
  await page.getByRole('button', { name: 'Open ann@example.com' }).click();
  await page.getByLabel('Given name').fill('Ann');
  await page.getByLabel('Family name').fill('Smith');
  await page.getByLabel('editor', { exact: true }).check();
  await page.getByRole('button', { name: 'Save', exact: true }).click();
  await page.locator('#user-edit-actions .msg', { hasText: 'User saved.' }).waitFor();
  await screen(t, page, 'dashboard-users');
  const edited = (await admin(server, 'user', { id: userId })).body!;
  t.is(edited['given_name'], 'Ann');
  t.is(edited['family_name'], 'Smith');
  t.true((edited['roles'] as string[]).includes('editor'));

  await page.getByRole('button', { name: 'Revoke access' }).click();
  await page.getByRole('button', { name: 'Enable access' }).waitFor();
  t.is((await server.call('profile', {}, { protocol: 'rest', headers: bearer })).error?.code, 'unauthenticated');
  t.truthy((await admin(server, 'user', { id: userId })).body?.['revoked_timestamp']);
  await page.getByRole('button', { name: 'Enable access' }).click();
  await page.getByRole('button', { name: 'Revoke access' }).waitFor();
  t.falsy((await admin(server, 'user', { id: userId })).body?.['revoked_timestamp']);

  await page.getByLabel(/^Emails/).fill('bob@example.com, cyd@example.com');
  await page.getByRole('button', { name: 'Send invitations' }).click();
  await page.getByRole('button', { name: 'Open bob@example.com' }).waitFor();
  t.is((await admin(server, 'user', { email: 'cyd@example.com' })).body?.['email'], 'cyd@example.com');
  t.regex(await mailTo(smtp, 'cyd@example.com'), new RegExp(`${server.httpUrl}/app\\?token=`));

  // Delete: the confirmation can be cancelled, then confirmed.
  await page.getByRole('button', { name: 'Open bob@example.com' }).click();
  await page.getByRole('button', { name: 'Delete…' }).click();
  await page.getByRole('dialog').getByRole('button', { name: 'Cancel' }).click();
  t.is((await admin(server, 'user', { email: 'bob@example.com' })).body?.['email'], 'bob@example.com');
  await page.getByRole('button', { name: 'Delete…' }).click();
  await page.getByRole('dialog').getByRole('button', { name: 'Delete' }).click();
  await page.locator('#user-search .msg', { hasText: /deleted/i }).waitFor();
  t.is((await admin(server, 'user', { email: 'bob@example.com' })).error?.code, 'not_found');
  await page.getByRole('button', { name: 'Open bob@example.com' }).waitFor({ state: 'detached' });

  // Paging: ann and cyd at 10 a page is one page.
  t.regex((await page.locator('#users-page').textContent()) ?? '', /Page 1 of 1 \(2\)/);

  await page.getByRole('link', { name: 'Audit log' }).click();
  await page.getByLabel('Action').fill('admin.user_deleted');
  await page.getByRole('button', { name: 'Filter' }).click();
  await page.locator('#audit-page', { hasText: '(1)' }).waitFor();
  await screen(t, page, 'dashboard-audit-log');
  t.is(await page.locator('#audit-rows tr', { hasText: 'admin.user_deleted' }).count(), 1);
  // By resource: the rows about ann (her revocation among them); by actor: her own sign-up.
  await page.getByLabel('Action').fill('');
  await page.getByLabel(/^Resource/).fill(`user:${userId}`);
  await page.getByRole('button', { name: 'Filter' }).click();
  await page.locator('#audit-rows tr', { hasText: 'revoke' }).first().waitFor();
  t.is(await page.locator('#audit-rows tr', { hasText: 'admin.user_deleted' }).count(), 0);
  await page.getByLabel(/^Resource/).fill('');
  await page.getByLabel('Actor id').fill(userId);
  await page.getByRole('button', { name: 'Filter' }).click();
  // The admin, not ann, revoked her access: those rows leave the table.
  await page.locator('#audit-rows tr', { hasText: 'revoke' }).first().waitFor({ state: 'detached' });
  t.true(await page.locator('#audit-rows tr', { hasText: 'user.signup' }).first().isVisible());
  t.deepEqual(problems, []);
});

test('users: a user\'s sessions with their devices; one ended from the dashboard is refused on its next call', async (t) => {
  const server = await start(t);
  const signup = await server.call('signup', { email: 'dee@example.com', password: PASSWORD }, { protocol: 'rest' });
  t.truthy(signup.body);
  const phone = await server.call('login', { email: 'dee@example.com', password: PASSWORD }, { protocol: 'rest', headers: { 'user-agent': 'Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0 Mobile Safari/537.36' } });
  const bearer = { authorization: `Bearer ${String(phone.body?.['access_token'])}` };
  const { page, problems } = await openDashboard(t, server);
  await signIn(page);
  await page.getByRole('link', { name: 'Users' }).click();
  await page.getByRole('button', { name: 'Open dee@example.com' }).click();
  const row = page.locator('#edit-sessions tr', { hasText: 'Chrome on Android' });
  await row.waitFor();
  t.is(await page.locator('#edit-sessions tr').count(), 2, 'the sign-up\'s session and the phone\'s');
  t.regex((await row.textContent()) ?? '', /127\.0\.0\.1/);
  t.deepEqual(await seriousViolations(page), []);
  await row.getByRole('button', { name: /^End session \(Chrome on Android/ }).click();
  await page.locator('#edit-sessions-box .msg', { hasText: 'Session ended.' }).waitFor();
  await page.locator('#edit-sessions tr', { hasText: 'Chrome on Android' }).waitFor({ state: 'detached' });
  t.is((await server.call('profile', {}, { protocol: 'rest', headers: bearer })).error?.code, 'unauthenticated');
  t.deepEqual(problems, []);
});

test('webhooks: create, a test event reaches the receiver, a failing endpoint is shown as failed, disable, the delivery log; email template with live preview', async (t) => {
  const server = await start(t, { 'organization-name': 'Acme & Co' });
  const receiver = await receiverFor(t);
  const { page, problems } = await openDashboard(t, server);
  await signIn(page);
  await page.getByRole('link', { name: 'Webhooks' }).click();
  await page.locator('#webhook-event').selectOption('user.signup');
  await page.getByLabel('Endpoint').fill(receiver.url);
  await page.getByLabel(/^Headers/).fill('{"x-team": "blue"}');
  await page.getByRole('button', { name: 'Send a test event' }).click();
  await page.locator('#webhook-test-result', { hasText: 'answered with HTTP 200' }).waitFor();
  t.is(receiver.received.length, 1);
  t.is(receiver.received[0]!.headers['x-team'], 'blue');
  receiver.handler = (_req, res) => {
    res.writeHead(500, { 'content-type': 'text/plain' });
    res.end('receiver broke');
  };
  await page.getByRole('button', { name: 'Send a test event' }).click();
  await page.locator('#webhook-test-result .error', { hasText: 'HTTP 500 (failed)' }).waitFor();
  await page.locator('#webhook-test-result pre', { hasText: 'receiver broke' }).waitFor();
  receiver.handler = (_req, res) => {
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.end('thanks');
  };
  await page.getByRole('button', { name: 'Save webhook' }).click();
  await page.getByRole('button', { name: 'Edit webhook user.signup' }).waitFor();
  const hooks = (await admin(server, 'webhooks')).body!['webhooks'] as Array<{ id: string; event_name: string; endpoint: string; enabled: boolean; headers: Record<string, string> }>;
  t.is(hooks.length, 1);
  t.like(hooks[0], { event_name: 'user.signup', endpoint: receiver.url, enabled: true });

  // A real event: its delivery shows in the log with the receiver's answer.
  await server.call('signup', { email: 'dan@example.com', password: PASSWORD }, { protocol: 'rest' });
  await until(async () => receiver.received.some((r) => r.body.includes('dan@example.com')), 'the user.signup delivery');
  await page.getByRole('button', { name: 'Deliveries' }).click();
  await until(async () => {
    if ((await page.locator('#webhook-log-rows tr', { hasText: 'delivered' }).count()) > 0) return true;
    await page.getByRole('button', { name: 'Refresh' }).click();
    return false;
  }, 'the delivery in the log');
  await page.locator('#webhook-log-rows pre', { hasText: 'thanks' }).waitFor();
  await screen(t, page, 'dashboard-webhooks');

  // Edit: the form takes the webhook; a new description is stored.
  await page.getByRole('button', { name: 'Edit webhook user.signup' }).click();
  t.is(await page.getByLabel('Endpoint').inputValue(), receiver.url);
  await page.getByLabel('Description').fill('new accounts');
  await page.getByRole('button', { name: 'Save webhook' }).click();
  await page.locator('#webhook-form-title', { hasText: 'Add a webhook' }).waitFor();
  t.is(((await admin(server, 'webhooks')).body!['webhooks'] as Array<{ event_description: string }>)[0]!.event_description, 'new accounts');

  await page.getByRole('button', { name: 'Disable' }).click();
  await page.getByRole('button', { name: 'Enable', exact: true }).waitFor();
  t.false(((await admin(server, 'webhooks')).body!['webhooks'] as Array<{ enabled: boolean }>)[0]!.enabled);

  await page.getByRole('button', { name: 'Delete', exact: true }).click();
  await page.getByRole('dialog').getByRole('button', { name: 'Delete' }).click();
  await page.locator('#webhook-rows', { hasText: 'No webhooks.' }).waitFor();
  t.is(((await admin(server, 'webhooks')).body!['webhooks'] as unknown[]).length, 0);

  // Email templates: the built-in default is shown; edits are previewed as typed, then stored.
  await page.getByRole('link', { name: 'Email templates' }).click();
  await page.locator('#template-event').selectOption('forgot_password');
  await page.locator('#template-state', { hasText: 'Built-in default' }).waitFor();
  const preview = page.frameLocator('#template-preview');
  await preview.getByText('Reset your password').waitFor();
  await preview.getByText('Acme & Co', { exact: true }).waitFor();
  t.is(await page.locator('#org').textContent(), 'Acme & Co dashboard');
  await page.getByLabel('Subject').fill('Reset for {{ user.given_name }}');
  await page.getByLabel(/^Template/).fill('<p>Hi {{ user.given_name }}, <a href="{{ verification_url }}">reset here</a> <script>parent.x=1</script></p>');
  await page.locator('#preview-subject', { hasText: 'Reset for Sample' }).waitFor();
  await preview.getByText('Hi Sample,').waitFor();
  await screen(t, page, 'dashboard-email-templates');
  t.is(await preview.getByRole('link', { name: 'reset here' }).getAttribute('href'), 'https://example.com/verify?token=sample');
  await page.getByRole('button', { name: 'Save template' }).click();
  await page.locator('#template-state', { hasText: 'Stored template' }).waitFor();
  const stored = (await admin(server, 'email_templates')).body!['email_templates'] as Array<{ event_name: string; subject: string }>;
  t.like(stored[0], { event_name: 'forgot_password', subject: 'Reset for {{ user.given_name }}' });
  t.false(await page.evaluate('"x" in window'), 'the preview frame runs no script');
  t.deepEqual(problems.filter((p) => !/Blocked script execution in 'about:srcdoc'/.test(p)), []);
});

test('authorization: a DSL error is marked at its line while typing, a valid model is saved as a version; tuples written, read, deleted; check with its expand tree and its explanation (Why?), list objects, list users', async (t) => {
  const server = await start(t);
  const { page, problems } = await openDashboard(t, server);
  await signIn(page);
  await page.getByRole('link', { name: 'Authorization' }).click();
  await page.locator('#dsl-status', { hasText: 'No model yet' }).waitFor();
  const editor = page.getByLabel('Authorization model (DSL)');
  await editor.fill('model\n  schema 1.1\ntype user\ntype doc\n  relations\n    define viewer: [usr]\n');
  const error = page.locator('#dsl-errors li').first();
  await error.waitFor();
  t.is(await error.getAttribute('data-line'), '6');
  t.regex((await error.textContent()) ?? '', /^line 6, column \d+: /);
  t.is(await page.locator('#dsl-gutter span.err').textContent(), '6');
  await screen(t, page, 'dashboard-authorization-model');
  t.is((await admin(server, 'fga_get_model')).body?.['dsl'], '', 'validation installs nothing');
  await editor.fill('model\n  schema 1.1\ntype user\ntype doc\n  relations\n    define owner: [user]\n    define viewer: [user] or owner\n');
  await page.locator('#dsl-status', { hasText: 'The model is valid.' }).waitFor();
  await page.getByRole('button', { name: 'Save as a new version' }).click();
  await page.locator('#model-rows tr').first().waitFor();
  t.regex(String((await admin(server, 'fga_get_model')).body?.['dsl']), /define viewer: \[user\] or owner/);

  const write = page.locator('#tuple-write');
  await write.getByLabel('User').fill('user:ann');
  await write.getByLabel('Relation').fill('owner');
  await write.getByLabel('Object').fill('doc:1');
  await page.getByRole('button', { name: 'Write tuple' }).click();
  await page.locator('#tuple-rows tr', { hasText: 'doc:1' }).waitFor();
  const read = (await admin(server, 'fga_read_tuples', {})).body!['tuples'] as Array<{ user: string; relation: string; object: string }>;
  t.like(read[0], { user: 'user:ann', relation: 'owner', object: 'doc:1' });

  const tester = page.locator('#tester');
  await tester.getByLabel('User', { exact: true }).fill('user:ann');
  await tester.getByLabel('Relation').fill('viewer');
  await tester.getByLabel(/^Object/).fill('doc:1');
  await page.getByRole('button', { name: 'Run' }).click();
  await page.locator('#check-answer', { hasText: 'user:ann is allowed viewer on doc:1' }).waitFor();
  const tree = page.getByRole('list', { name: 'Userset tree' });
  await tree.getByText('union').waitFor();
  await tree.getByText('computed: doc:1#owner').waitFor();
  // Why? shows the witness: the union's owner branch down to the owner tuple.
  await page.getByRole('button', { name: 'Why?' }).click();
  const why = page.getByRole('list', { name: 'Explanation' });
  await why.getByText('tuple doc:1#owner@user:ann').waitFor();
  await why.getByText('computed owner').waitFor();
  t.is(await why.locator('li').first().getAttribute('data-outcome'), 'allowed');
  t.is(await why.locator('li[data-outcome="denied"]').count(), 0, 'a witness lists no failed branch');
  await screen(t, page, 'dashboard-authorization-tester');
  // A denial lists the branches tried and why each failed.
  await tester.getByLabel('User', { exact: true }).fill('user:bob');
  await page.getByRole('button', { name: 'Run' }).click();
  await page.locator('#check-answer', { hasText: 'user:bob is not allowed viewer on doc:1' }).waitFor();
  await page.getByRole('button', { name: 'Why?' }).click();
  await why.getByText('tuple doc:1#owner@user:bob').waitFor();
  t.is(await why.locator('li').first().getAttribute('data-outcome'), 'denied');
  t.true((await why.locator('li[data-outcome="denied"]', { hasText: 'no tuple' }).count()) > 0);
  await tester.getByLabel('User', { exact: true }).fill('user:ann');
  await tester.getByLabel('Query').selectOption('list_objects');
  await tester.getByLabel(/^Object/).fill('doc');
  await page.getByRole('button', { name: 'Run' }).click();
  await page.locator('#list-answer li', { hasText: 'doc:1' }).waitFor();
  await tester.getByLabel('Query').selectOption('list_users');
  await tester.getByLabel(/^Object/).fill('doc:1');
  await page.getByRole('button', { name: 'Run' }).click();
  await page.locator('#list-answer li', { hasText: 'user:ann' }).waitFor();

  await page.getByRole('button', { name: 'Delete user:ann owner doc:1' }).click();
  await page.getByRole('dialog').getByRole('button', { name: 'Delete' }).click();
  await page.locator('#tuple-filter .msg', { hasText: 'Tuple deleted.' }).waitFor();
  t.is(((await admin(server, 'fga_read_tuples', {})).body!['tuples'] as unknown[]).length, 0);

  // Read with continuation: 25 tuples are 20 on the first page, the rest on the next.
  await admin(server, 'fga_write_tuples', { tuples: Array.from({ length: 25 }, (_, i) => ({ user: `user:u${i}`, relation: 'owner', object: 'doc:2' })) });
  await page.locator('#tf-object').fill('doc:2');
  await page.getByRole('button', { name: 'Read' }).click();
  await page.getByRole('button', { name: 'Next page' }).waitFor();
  t.is(await page.locator('#tuple-rows tr').count(), 20);
  await page.getByRole('button', { name: 'Next page' }).click();
  await page.getByRole('button', { name: 'Next page' }).waitFor({ state: 'hidden' });
  t.is(await page.locator('#tuple-rows tr').count(), 25);
  await admin(server, 'fga_delete_tuples', { tuples: Array.from({ length: 25 }, (_, i) => ({ user: `user:u${i}`, relation: 'owner', object: 'doc:2' })) });

  // A second version; both are listed, newest first, and an older one opens in the editor.
  await editor.fill('model\n  schema 1.1\ntype user\ntype doc\n  relations\n    define viewer: [user]\n');
  await page.getByRole('button', { name: 'Save as a new version' }).click();
  await page.locator('#model-rows tr').nth(1).waitFor();
  const versions = (await admin(server, 'fga_list_models', {})).body!['models'] as Array<{ id: string }>;
  t.is(versions.length, 2);
  t.is(await page.locator('#model-rows tr').first().locator('code').textContent(), versions[0]!.id);
  await page.locator('#model-rows tr').nth(1).getByRole('button', { name: 'Open in editor' }).click();
  t.regex(await editor.inputValue(), /or owner/);
  t.deepEqual(problems, []);
});

test('at phone width, by keyboard: sign in, move between sections, page through users', async (t) => {
  const server = await start(t);
  for (let i = 0; i < 12; i++) await server.call('signup', { email: `p${i}@example.com`, password: PASSWORD }, { protocol: 'rest' });
  const context = await browser!.newContext({ viewport: { width: 375, height: 740 } });
  t.teardown(() => context.close());
  context.setDefaultTimeout(WAIT);
  const page = await context.newPage();
  const problems = watchPage(page);
  await page.goto(`${server.httpUrl}/dashboard`);
  await page.getByLabel('Admin secret').waitFor();
  t.true(await page.getByLabel('Admin secret').evaluate((el) => el === el.ownerDocument.activeElement), 'the secret field has the focus');
  await page.keyboard.type(TEST_ADMIN_SECRET);
  await page.keyboard.press('Enter');
  await page.getByRole('heading', { name: 'Overview' }).waitFor();
  const users = page.getByRole('link', { name: 'Users' });
  await users.focus();
  await page.keyboard.press('Enter');
  await page.getByRole('heading', { name: 'Users' }).waitFor();
  t.is(await users.getAttribute('aria-current'), 'page');
  const width = await page.evaluate('document.documentElement.scrollWidth');
  t.true(Number(width) <= 375 + 1, `no sideways scrolling at phone width (${String(width)})`);
  await page.locator('#users-page', { hasText: 'Page 1 of 2 (12)' }).waitFor();
  await page.getByRole('button', { name: 'Next' }).focus();
  await page.keyboard.press('Enter');
  await page.locator('#users-page', { hasText: 'Page 2 of 2' }).waitFor();
  t.is(await page.locator('#user-rows tr').count(), 2);
  t.deepEqual(problems, []);
});
