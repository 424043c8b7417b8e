/**
 * Every admin operation of the table succeeds on every protocol that serves
 * it, on the real server. The script below names each operation once; the
 * test fails if an admin row exists that the script does not drive on one of
 * its protocols, so a new admin operation cannot go untested. (Refusals on
 * the other protocols: transport.test.ts.)
 */
import test from 'ava';
import { PROTOCOLS, TEST_ADMIN_SECRET, startTestServer, type CallResult, type TestServer } from '../helpers/server.ts';
import { DEPRECATED_MESSAGES, OPERATIONS, type Protocol } from '../../cmd/index.ts';
import { ORGANIZATION_OPERATIONS, REGISTRY_OPERATIONS, SSO_OPERATIONS } from '../../api/index.ts';
import { startReceiver } from './receiver.ts';
import { startSmtp } from './smtp.ts';
import { TestSamlIdp } from '../helpers/saml_idp.ts';
import { SoftwareAuthenticator, type Json } from '../helpers/software_authenticator.ts';

const origin = 'https://app.example.com';
const headers = { 'x-service-admin-secret': TEST_ADMIN_SECRET, origin };
const DSL = 'model\n  schema 1.1\ntype user\ntype doc\n  relations\n    define viewer: [user]\n';

type State = Record<string, string>;
type Step = [op: string, input: (s: State) => Record<string, unknown>, after?: (body: Record<string, unknown>, s: State) => void];

/** The DNS TXT records the organization domain steps publish (the server's injected resolver reads them). */
const TXT = new Map<string, string[][]>();
const resolveTxt = async (name: string): Promise<string[][]> => TXT.get(name) ?? [];
/** The SAML identity provider whose metadata the SSO connection steps read. */
const SAML_IDP = new TestSamlIdp('coverage');

const STEPS: Step[] = [
  ['admin_login', () => ({ admin_secret: TEST_ADMIN_SECRET })],
  ['admin_session', () => ({})],
  ['admin_meta', () => ({})],
  ['env', () => ({})],
  ['invite_members', (s) => ({ emails: [`${s['p']}-a@example.com`, `${s['p']}-b@example.com`], redirect_uri: `${origin}/join` }), (b, s) => {
    s['user'] = ((b['users'] as Array<{ id: string }>)[0]!).id;
  }],
  ['users', () => ({ pagination: { page: 1, limit: 10 } })],
  ['user', (s) => ({ id: s['user']! })],
  ['update_user', (s) => ({ id: s['user']!, given_name: 'Ann' })],
  ['verification_requests', () => ({})],
  ['revoke_access', (s) => ({ user_id: s['user']! })],
  ['enable_access', (s) => ({ user_id: s['user']! })],
  ['delete_user', (s) => ({ email: `${s['p']}-b@example.com` })],
  // Organizations: created without an owner, so that the one member can be demoted and removed; deleted last,
  // which takes every tuple of it (fga_reset below needs an empty store).
  ['admin_create_organization', (s) => ({ name: `Org ${s['p']}`, slug: `org-${s['p']}` }), (b, s) => {
    s['org'] = b['id'] as string;
  }],
  ['admin_organization', (s) => ({ organization_id: s['org'] ?? 'none' })],
  ['admin_organizations', () => ({ search: 'org' })],
  ['admin_update_organization', (s) => ({ organization_id: s['org'] ?? 'none', name: 'Renamed' })],
  ['admin_add_organization_member', (s) => ({ organization_id: s['org'] ?? 'none', user_id: s['user']!, role: 'admin' })],
  ['admin_update_organization_member', (s) => ({ organization_id: s['org'] ?? 'none', user_id: s['user']!, role: 'member' })],
  ['admin_organization_members', (s) => ({ organization_id: s['org'] ?? 'none' })],
  ['admin_create_team', (s) => ({ organization_id: s['org'] ?? 'none', name: 'Team' }), (b, s) => {
    s['team'] = b['id'] as string;
  }],
  ['admin_teams', (s) => ({ organization_id: s['org'] ?? 'none' })],
  ['admin_add_team_member', (s) => ({ team_id: s['team'] ?? 'none', user_id: s['user']! })],
  ['admin_remove_team_member', (s) => ({ team_id: s['team'] ?? 'none', user_id: s['user']! })],
  ['admin_delete_team', (s) => ({ team_id: s['team'] ?? 'none' })],
  ['admin_remove_organization_member', (s) => ({ organization_id: s['org'] ?? 'none', user_id: s['user']! })],
  ['admin_invite_organization_members', (s) => ({ organization_id: s['org'] ?? 'none', emails: [`${s['p']}-d@example.com`] }), (b, s) => {
    s['invitation'] = (b['invitations'] as Array<{ id: string }>)[0]!.id;
  }],
  ['admin_organization_invitations', (s) => ({ organization_id: s['org'] ?? 'none' })],
  ['admin_revoke_organization_invitation', (s) => ({ invitation_id: s['invitation'] ?? 'none' })],
  ['admin_add_organization_domain', (s) => ({ organization_id: s['org'] ?? 'none', domain: `${s['p']}.example.com` }), (b) => {
    TXT.set(b['txt_record_name'] as string, [[b['txt_record_value'] as string]]);
  }],
  ['admin_verify_organization_domain', (s) => ({ organization_id: s['org'] ?? 'none', domain: `${s['p']}.example.com` })],
  ['admin_create_scim_token', (s) => ({ organization_id: s['org'] ?? 'none', description: 'Directory' }), (b, s) => {
    s['scim_token'] = b['id'] as string;
  }],
  ['admin_scim_tokens', (s) => ({ organization_id: s['org'] ?? 'none' })],
  ['admin_revoke_scim_token', (s) => ({ token_id: s['scim_token'] ?? 'none' })],
  ['admin_add_sso_connection', (s) => ({ organization_id: s['org'] ?? 'none', type: 'saml', domains: [`${s['p']}.example.com`], saml: { idp_metadata_xml: SAML_IDP.metadata('https://idp.example.com/sso') } }), (b, s) => {
    s['sso_connection'] = b['id'] as string;
  }],
  ['admin_sso_connections', (s) => ({ organization_id: s['org'] ?? 'none' })],
  ['admin_sso_connection', (s) => ({ connection_id: s['sso_connection'] ?? 'none' })],
  ['admin_update_sso_connection', (s) => ({ connection_id: s['sso_connection'] ?? 'none', enabled: false })],
  ['admin_delete_sso_connection', (s) => ({ connection_id: s['sso_connection'] ?? 'none' })],
  ['admin_delete_organization', (s) => ({ organization_id: s['org'] ?? 'none' })],
  // The client registry: a service account, its API key, then the client deleted.
  ['add_client', (s) => ({ client_id: `svc-${s['p']}`, kind: 'service_account', client_name: 'Billing bot' }), (b, s) => {
    s['client'] = (b['client'] as { client_id: string }).client_id;
  }],
  ['clients', () => ({ pagination: { page: 1, limit: 10 } })],
  ['client', (s) => ({ client_id: s['client'] ?? 'none' })],
  ['update_client', (s) => ({ client_id: s['client'] ?? 'none', client_name: 'Billing robot' })],
  ['rotate_client_secret', (s) => ({ client_id: s['client'] ?? 'none', overlap_seconds: 0 })],
  ['admin_create_api_key', (s) => ({ principal: `service_account:${s['client'] ?? 'none'}`, name: 'ci' }), (b, s) => {
    s['api_key'] = (b['key'] as { id: string }).id;
  }],
  ['admin_api_keys', (s) => ({ principal: `service_account:${s['client'] ?? 'none'}` })],
  ['admin_revoke_api_key', (s) => ({ id: s['api_key'] ?? 'none' })],
  ['delete_client', (s) => ({ client_id: s['client'] ?? 'none' })],
  ['user_passkeys', (s) => ({ user_id: s['user']! })],
  ['revoke_user_passkey', (s) => ({ user_id: s['passkey_user']!, id: s['passkey']! })],
  // A user with a live session for the session rows (sign-up opens one: this server does not verify addresses).
  ['signup', (s) => ({ email: `${s['p']}-c@example.com`, password: 'correct horse battery staple' }), (b, s) => {
    s['session_user'] = (b['user'] as { id: string } | undefined)?.id ?? '';
  }],
  ['admin_list_sessions', (s) => ({ user_id: s['session_user']! }), (b, s) => {
    s['session'] = (b['sessions'] as Array<{ id: string }>)[0]?.id ?? '';
  }],
  ['admin_revoke_session', (s) => ({ id: s['session']! })],
  ['add_webhook', (s) => ({ event_name: 'user.deleted', endpoint: s['receiver']! })],
  ['webhooks', () => ({})],
  ['get_webhook', (s) => ({ id: s['webhook']! })],
  ['update_webhook', (s) => ({ id: s['webhook']!, enabled: false })],
  ['webhook_logs', (s) => ({ webhook_id: s['webhook']! })],
  ['test_endpoint', (s) => ({ event_name: 'user.login', endpoint: s['receiver']! })],
  ['delete_webhook', (s) => ({ id: s['webhook']! })],
  ['add_email_template', () => ({ event_name: 'forgot_password', subject: 'Reset', template: '<a href="{{ verification_url }}">reset</a>' })],
  ['email_templates', () => ({})],
  ['update_email_template', (s) => ({ id: s['template']!, subject: 'Reset now' })],
  ['delete_email_template', (s) => ({ id: s['template']! })],
  ['audit_logs', () => ({ action: 'admin.user_deleted' })],
  ['fga_write_model', () => ({ dsl: DSL })],
  ['fga_get_model', () => ({})],
  ['fga_validate_model', () => ({ dsl: DSL })],
  ['fga_list_models', () => ({ page_size: 5 })],
  ['fga_write_tuples', () => ({ tuples: [{ user: 'user:ann', relation: 'viewer', object: 'doc:1' }] })],
  ['fga_read_tuples', () => ({ page_size: 10 })],
  ['fga_list_users', () => ({ object: 'doc:1', relation: 'viewer', user_type: 'user' })],
  ['fga_expand', () => ({ object: 'doc:1', relation: 'viewer' })],
  ['fga_explain', () => ({ user: 'user:ann', object: 'doc:1', relation: 'viewer' })],
  // A streamed row: its first message is the opening heartbeat, carrying the start token.
  ['watch_fga', () => ({ start_token: '0', object_type: 'doc' }), (b) => {
    if (b['kind'] !== 'heartbeat' || b['token'] !== '0') throw new Error(`watch_fga opened with ${JSON.stringify(b)}`);
  }],
  ['fga_delete_tuples', () => ({ tuples: [{ user: 'user:ann', relation: 'viewer', object: 'doc:1' }] })],
  ['fga_delete_tuples_by_filter', () => ({ object_type: 'doc', relation: 'viewer' })],
  ['fga_reset', () => ({})],
  ['admin_logout', () => ({})],
];

/** Values later steps need, read from the answers. */
async function remember(srv: TestServer, protocol: Protocol, op: string, s: State): Promise<void> {
  const call = (name: string, input: Record<string, unknown> = {}) => srv.call(name, input, { protocol, headers });
  if (op === 'add_webhook') {
    const list = (await call('webhooks')).body!['webhooks'] as Array<{ id: string; endpoint: string }>;
    s['webhook'] = list.find((w) => w.endpoint === s['receiver'])!.id;
  }
  if (op === 'user_passkeys') {
    // A user with a passkey (signed up with a software authenticator), for revoke_user_passkey.
    const auth = new SoftwareAuthenticator({ origin, rpId: 'example.com' });
    const begun = await srv.call('passkey_signup_options', { email: `${s['p']}-pk@example.com` }, { protocol, headers: { origin } });
    const signup = await srv.call('passkey_signup', { ceremony_id: begun.body!['ceremony_id'], credential: auth.create(begun.body!['options'] as Json) }, { protocol, headers: { origin } });
    s['passkey_user'] = String((signup.body!['user'] as { id: string }).id);
    const list = (await call('user_passkeys', { user_id: s['passkey_user'] })).body!['passkeys'] as Array<{ id: string }>;
    s['passkey'] = list[0]!.id;
  }
  if (op === 'add_email_template') {
    const list = (await call('email_templates')).body!['email_templates'] as Array<{ id: string }>;
    s['template'] = list[0]!.id;
  }
}

// SQLite, and DynamoDB with the memory FGA store (FGA is off on a NoSQL main database otherwise, Versioning §7).
for (const backend of ['sqlite', 'dynamodb'] as const) {
  test(`every admin operation succeeds on every protocol that serves it (${backend})`, async (t) => {
    const receiver = await startReceiver();
    const smtp = await startSmtp();
    const srv = await startTestServer({
      'webhook-allow-private-networks': true,
      'enable-email-verification': false,
      'allowed-origins': origin,
      'smtp-host': '127.0.0.1',
      'smtp-port': smtp.port,
      'smtp-sender-email': 'noreply@example.com',
      'enable-passkeys': true,
      'webauthn-rp-id': 'example.com',
      'webauthn-origins': origin,
      ...(backend === 'dynamodb' ? { 'fga-store': 'memory' } : {}),
    }, { backend, resolveTxt });
    const driven = new Set<string>();
    try {
      for (const protocol of PROTOCOLS) {
        const state: State = { p: protocol, receiver: `${receiver.url}/${protocol}` };
        for (const [op, input, after] of STEPS) {
          const row = OPERATIONS.find((o) => o.name === op);
          t.truthy(row, `${op} is an operation`);
          if (!row || !row.protocols.includes(protocol)) continue;
          const r: CallResult = await srv.call(op, input(state), { protocol, headers });
          // Organizations live on SQL main databases only (docs/organizations.md, "DynamoDB").
          if (backend === 'dynamodb' && [...ORGANIZATION_OPERATIONS, ...SSO_OPERATIONS].some((o) => o.name === op)) {
            t.is(r.error?.reason, 'organizations_unavailable', `${op} over ${protocol}`);
            driven.add(`${op}/${protocol}`);
            continue;
          }
          // So does the client registry (docs/oauth.md): what needs it is refused, the lists show the --client-id client.
          if (backend === 'dynamodb' && REGISTRY_OPERATIONS.some((o) => o.name === op) && r.error !== undefined) {
            // (What names the service account that could not be added there finds no such client.)
            t.regex(String(r.error.reason), /^(client_registry_unavailable|client_not_found|principal_not_found|api_key_not_found)$/, `${op} over ${protocol}`);
            driven.add(`${op}/${protocol}`);
            continue;
          }
          t.is(r.error, undefined, `${op} over ${protocol}: ${JSON.stringify(r.error)}`);
          if (r.error) continue;
          after?.(r.body ?? {}, state);
          await remember(srv, protocol, op, state);
          driven.add(`${op}/${protocol}`);
        }
      }
      // The removed v1 operations answer their deprecation message and do nothing.
      for (const [name, message] of Object.entries(DEPRECATED_MESSAGES)) {
        const row = OPERATIONS.find((o) => o.name === name)!;
        for (const protocol of row.protocols) {
          const r = await srv.call(name, {}, { protocol, headers });
          t.like(r.error, { code: 'failed_precondition', message }, `${name} over ${protocol}`);
          driven.add(`${name}/${protocol}`);
        }
      }
      const expected = OPERATIONS.filter((o) => o.admin).flatMap((o) => o.protocols.map((p) => `${o.name}/${p}`));
      t.deepEqual(expected.filter((k) => !driven.has(k)), [], 'every admin operation on every protocol that serves it was driven');
    } finally {
      await srv.close();
      await smtp.close();
      await receiver.close();
    }
  });
}
