/**
 * The dashboard's SSO and SCIM section in Chromium: an organization opened by
 * id; a SAML connection added from IdP metadata, listed, disabled and enabled
 * again; its test button runs the flow against the identity provider and
 * shows the claims received, signing nobody in; a SCIM token created (shown
 * once), listed and revoked; the connection deleted. No console error, no
 * serious accessibility violation.
 */
import anyTest from 'ava';
import type { Browser } from 'playwright-core';
import { seriousViolations } from '../../helpers/accessibility.ts';
import { launchChromium, watchPage } from '../../helpers/loopback.ts';
import { needs } from '../../helpers/needs.ts';
import { startSsoServer, TestSamlIdp } from '../../helpers/saml_idp.ts';
import { TEST_ADMIN_SECRET } from '../../helpers/server.ts';

const test = needs(anyTest.serial, 'chromium');
const WAIT = 30_000;
const ADMIN = { 'x-service-admin-secret': TEST_ADMIN_SECRET };

test('dashboard: SSO connections (add from metadata, disable, test shows the claims, delete) and SCIM tokens (shown once, revoke)', async (t) => {
  const txt = new Map<string, string[][]>();
  const srv = await startSsoServer({ 'enable-email-verification': false }, { backend: 'sqlite', resolveTxt: async (name) => txt.get(name) ?? [] });
  t.teardown(() => srv.close());
  const idp = new TestSamlIdp('okta');
  await idp.start();
  t.teardown(() => idp.close());
  const admin = async (op: string, input: Record<string, unknown>) => {
    const r = await srv.call(op, input, { protocol: 'rest', headers: ADMIN });
    if (r.error !== undefined) throw new Error(`${op}: ${JSON.stringify(r.error)}`);
    return r.body!;
  };
  const org = await admin('admin_create_organization', { name: 'Acme' });
  const orgId = org['id'] as string;
  const d = await admin('admin_add_organization_domain', { organization_id: orgId, domain: 'acme.example.com' });
  txt.set(d['txt_record_name'] as string, [[d['txt_record_value'] as string]]);
  await admin('admin_verify_organization_domain', { organization_id: orgId, domain: 'acme.example.com' });

  const browser: Browser = await launchChromium();
  t.teardown(() => browser.close());
  const context = await browser.newContext();
  context.setDefaultTimeout(WAIT);
  const page = await context.newPage();
  const problems = watchPage(page);
  await page.goto(`${srv.httpUrl}/dashboard#sso`);
  await page.getByLabel('Admin secret').fill(TEST_ADMIN_SECRET);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('link', { name: 'SSO and SCIM' }).click();
  await page.getByLabel('Organization id').fill(orgId);
  await page.getByRole('button', { name: 'Open' }).click();
  await page.getByLabel('Connection name').fill('Okta');
  await page.getByLabel('Verified domains (comma separated)').fill('acme.example.com');
  await page.getByLabel('or IdP metadata XML').fill(idp.metadata());
  await page.getByRole('button', { name: 'Add connection' }).click();
  const row = page.locator('#sso-rows tr', { hasText: 'Okta' });
  await row.waitFor();
  t.true((await row.textContent())!.includes('enabled'));
  const listed = await admin('admin_sso_connections', { organization_id: orgId });
  const conn = (listed['connections'] as { id: string; enabled: boolean; saml: { sp_acs_url: string; sp_entity_id: string } }[])[0]!;
  t.is((listed['connections'] as unknown[]).length, 1);

  await row.getByRole('button', { name: 'Disable' }).click();
  await row.getByRole('button', { name: 'Enable' }).waitFor();
  t.false(((await admin('admin_sso_connection', { connection_id: conn.id }))['enabled']) as boolean);
  await row.getByRole('button', { name: 'Enable' }).click();
  await row.getByRole('button', { name: 'Disable' }).waitFor();

  // The test button: the real flow in a new window, the claims shown, nobody signed in.
  idp.user = { email: 'tester@acme.example.com', groups: ['eng'] };
  const [popup] = await Promise.all([context.waitForEvent('page'), row.getByRole('link', { name: 'Test' }).click()]);
  await popup.waitForSelector('#claims', { timeout: WAIT });
  const claims = (await popup.textContent('#claims')) ?? '';
  t.true(claims.includes('tester@acme.example.com') && claims.includes('eng'), claims);
  t.falsy((await context.cookies(srv.httpUrl)).find((c) => c.name === 'cookie_session'), 'a test signs nobody in');
  await popup.close();

  // SCIM tokens.
  await page.getByLabel('What the SCIM token is for').fill('Okta provisioning');
  await page.getByRole('button', { name: 'Create token' }).click();
  await page.locator('#scim-new:not([hidden])').waitFor();
  const token = (await page.textContent('#scim-new-token')) ?? '';
  t.regex(token, /^lks_[0-9a-f]{16}_/);
  const tokenRow = page.locator('#scim-rows tr', { hasText: 'Okta provisioning' });
  await tokenRow.waitFor();
  t.false((await tokenRow.textContent())!.includes(token.slice(22)), 'the list never shows the secret');
  t.deepEqual(await seriousViolations(page), [], 'accessibility of the SSO section');
  await tokenRow.getByRole('button', { name: 'Revoke…' }).click();
  await page.locator('#confirm-ok').click();
  await tokenRow.getByText('revoked').waitFor();
  t.is((await fetch(`${srv.httpUrl}/scim/v2/Users`, { headers: { authorization: `Bearer ${token}` } })).status, 401);

  await row.getByRole('button', { name: 'Delete…' }).click();
  await page.locator('#confirm-ok').click();
  await row.waitFor({ state: 'detached' });
  t.is(((await admin('admin_sso_connections', { organization_id: orgId }))['connections'] as unknown[]).length, 0);
  t.deepEqual(problems, []);
});
