/**
 * SSO connections per organization (docs/sso.md) on every SQL backend: an
 * organization admin adds a SAML connection from IdP metadata, bound to a
 * verified domain; an unverified domain, a plain member and an admin of
 * another organization are refused; update, disable, list, delete; no
 * secret is ever answered; the super-admin variants act on any organization;
 * each change has its audit row.
 */
import test from 'ava';
import { sqlBackends } from '../../helpers/databases.ts';
import { startReceiver } from '../../admin/receiver.ts';
import { startSsoServer, TestSamlIdp } from '../../helpers/saml_idp.ts';
import { TEST_ADMIN_SECRET, type TestServer } from '../../helpers/server.ts';

const PASSWORD = 'a long enough passphrase';
const ADMIN = { 'x-service-admin-secret': TEST_ADMIN_SECRET };

async function signup(srv: TestServer, email: string): Promise<{ id: string; bearer: Record<string, string> }> {
  const r = await srv.call('signup', { email, password: PASSWORD }, { protocol: 'rest' });
  if (r.error !== undefined) throw new Error(JSON.stringify(r.error));
  return { id: (r.body!['user'] as { id: string }).id, bearer: { authorization: `Bearer ${r.body!['access_token'] as string}` } };
}

for (const backend of sqlBackends()) {
  test.serial(`SSO connections: added from metadata on verified domains, updated, listed, deleted, authorized per organization (${backend})`, async (t) => {
    const txt = new Map<string, string[][]>();
    const srv = await startSsoServer({ 'webhook-allow-private-networks': true }, { backend, resolveTxt: async (name) => txt.get(name) ?? [] });
    const idp = new TestSamlIdp('okta');
    const receiver = await startReceiver();
    try {
      const call = async (op: string, input: Record<string, unknown>, headers: Record<string, string>) => srv.call(op, input, { protocol: 'rest', headers });
      const ok = async (op: string, input: Record<string, unknown>, headers: Record<string, string>) => {
        const r = await call(op, input, headers);
        if (r.error !== undefined) throw new Error(`${op}: ${JSON.stringify(r.error)}`);
        return r.body!;
      };
      await ok('add_webhook', { event_name: 'sso_connection.changed', endpoint: `${receiver.url}/sso` }, ADMIN);
      const owner = await signup(srv, `owner-${backend}@owner.example.com`);
      const member = await signup(srv, `member-${backend}@owner.example.com`);
      const stranger = await signup(srv, `stranger-${backend}@elsewhere.example.com`);
      const org = await ok('create_organization', { name: 'Acme' }, owner.bearer);
      const other = await ok('create_organization', { name: 'Other' }, stranger.bearer);
      await ok('add_organization_member', { organization_id: org['id'], user_id: member.id }, owner.bearer);
      const domain = `acme-${backend}.example.com`;
      const d = await ok('add_organization_domain', { organization_id: org['id'], domain }, owner.bearer);
      txt.set(d['txt_record_name'] as string, [[d['txt_record_value'] as string]]);
      await ok('verify_organization_domain', { organization_id: org['id'], domain }, owner.bearer);
      await ok('add_organization_domain', { organization_id: org['id'], domain: 'unproven.example.com' }, owner.bearer);
      const team = await ok('create_team', { organization_id: org['id'], name: 'Engineering' }, owner.bearer);

      const input = {
        organization_id: org['id'],
        type: 'saml',
        name: 'Okta',
        domains: [domain],
        saml: { idp_metadata_xml: idp.metadata('https://okta.example/sso/saml') },
        group_mapping: [{ group: 'eng', team_id: team['id'] }, { group: 'admins', role: 'admin' }],
        default_role: 'member',
      };
      const added = await ok('add_sso_connection', input, owner.bearer);
      t.like(added, { organization_id: org['id'], type: 'saml', name: 'Okta', enabled: true, domains: [domain], default_role: 'member' });
      const saml = added['saml'] as Record<string, unknown>;
      t.is(saml['idp_entity_id'], idp.entityId, 'the entity id is read from the metadata');
      t.is(saml['idp_sso_url'], 'https://okta.example/sso/saml', 'the HTTP-Redirect SSO URL is read from the metadata');
      t.deepEqual(saml['idp_certificates'], [idp.certificateBody]);
      t.is(saml['sp_acs_url'], `${srv.httpUrl}/saml/${added['id'] as string}/acs`);
      t.is(added['sign_in_url'], `${srv.httpUrl}/sso/${added['id'] as string}`);
      t.like(added['attribute_mapping'], { email: 'email', groups: 'groups' });

      // Refusals: an unverified domain, bad settings, a plain member, an outsider.
      t.is((await call('add_sso_connection', { ...input, domains: ['unproven.example.com'] }, owner.bearer)).error?.reason, 'domain_not_verified');
      t.is((await call('add_sso_connection', { ...input, type: 'ldap' }, owner.bearer)).error?.code, 'invalid_argument');
      t.is((await call('add_sso_connection', { organization_id: org['id'], type: 'saml', saml: { idp_entity_id: 'x', idp_sso_url: 'https://x.example/sso' } }, owner.bearer)).error?.reason, 'invalid_sso_connection', 'no certificate: refused');
      t.is((await call('add_sso_connection', { ...input, saml: { idp_metadata_xml: '<nothing/>' } }, owner.bearer)).error?.reason, 'invalid_saml_metadata');
      t.is((await call('add_sso_connection', { ...input, group_mapping: [{ group: 'g', team_id: 'no-such-team' }] }, owner.bearer)).error?.reason, 'team_not_found');
      t.is((await call('add_sso_connection', { ...input, default_role: 'owner' }, owner.bearer)).error?.code, 'invalid_argument');
      t.is((await call('add_sso_connection', input, member.bearer)).error?.reason, 'organization_permission_denied');
      t.is((await call('sso_connections', { organization_id: org['id'] }, stranger.bearer)).error?.reason, 'organization_permission_denied');
      t.is((await call('sso_connection', { connection_id: added['id'] }, stranger.bearer)).error?.reason, 'organization_permission_denied');
      t.is((await call('delete_sso_connection', { connection_id: added['id'] }, member.bearer)).error?.reason, 'organization_permission_denied');
      t.is((await call('sso_connection', { connection_id: 'nope' }, owner.bearer)).error?.reason, 'sso_connection_not_found');

      // An OIDC connection: its secret is stored and never answered.
      const oidc = await ok('add_sso_connection', { organization_id: org['id'], type: 'oidc', domains: [domain], oidc: { issuer: 'https://login.example.com', client_id: 'abc', client_secret: 'very-secret-value' } }, owner.bearer);
      t.like(oidc['oidc'], { issuer: 'https://login.example.com', client_id: 'abc', client_secret_set: true, scopes: ['openid', 'email', 'profile'] });
      const listed = await ok('sso_connections', { organization_id: org['id'] }, owner.bearer);
      t.is((listed['connections'] as unknown[]).length, 2);
      t.like(listed['pagination'], { total: 2, page: 1 });
      t.false(JSON.stringify(listed).includes('very-secret-value'), 'the list never carries a secret');

      // Update: disable and rename; unset fields keep their value.
      const updated = await ok('update_sso_connection', { connection_id: added['id'], enabled: false, name: 'Okta (old)' }, owner.bearer);
      t.like(updated, { enabled: false, name: 'Okta (old)', domains: [domain], default_role: 'member' });
      t.is((await ok('sso_connection', { connection_id: added['id'] }, owner.bearer))['enabled'], false);
      t.is((await call('update_sso_connection', { connection_id: added['id'], oidc: { issuer: 'https://x.example' } }, owner.bearer)).error?.code, 'invalid_argument');
      // A disabled connection signs nobody in.
      t.is((await fetch(`${srv.httpUrl}/sso/${added['id'] as string}`, { redirect: 'manual' })).status, 404);

      // Delete.
      t.like(await ok('delete_sso_connection', { connection_id: oidc['id'] }, owner.bearer), { message: 'SSO connection deleted' });
      t.is((await call('sso_connection', { connection_id: oidc['id'] }, owner.bearer)).error?.reason, 'sso_connection_not_found');

      // The super-admin acts on any organization.
      const adminMade = await call('admin_add_sso_connection', { organization_id: other['id'], type: 'saml', saml: { idp_entity_id: idp.entityId, idp_sso_url: 'https://okta.example/sso', idp_certificate: idp.certificate } }, ADMIN);
      t.is(adminMade.error, undefined);
      t.is(((await call('admin_sso_connections', { organization_id: other['id'] }, ADMIN)).body!['connections'] as unknown[]).length, 1);
      t.is((await call('admin_delete_sso_connection', { connection_id: adminMade.body!['id'] }, ADMIN)).error, undefined);

      const audit = await ok('audit_logs', { action: 'organization.sso_connection_added' }, ADMIN);
      t.is((audit['pagination'] as { total: number }).total, 3);
      t.is(((await ok('audit_logs', { action: 'organization.sso_connection_updated' }, ADMIN))['pagination'] as { total: number }).total, 1);
      t.is(((await ok('audit_logs', { action: 'organization.sso_connection_deleted' }, ADMIN))['pagination'] as { total: number }).total, 2);
      // Each change is a webhook delivery (asynchronous: waited for up to 10 s).
      for (let i = 0; i < 100 && receiver.received.length < 6; i++) await new Promise((resolve) => setTimeout(resolve, 100));
      const changes = receiver.received.map((r) => (JSON.parse(r.body) as { data?: { change?: string }; change?: string }));
      const kinds = changes.map((c) => c.data?.change ?? c.change).sort();
      t.deepEqual(kinds, ['added', 'added', 'added', 'deleted', 'deleted', 'updated'], JSON.stringify(changes[0]));
    } finally {
      await receiver.close();
      await srv.close();
    }
  });
}
