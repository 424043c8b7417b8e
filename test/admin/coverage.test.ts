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
import { startReceiver } from './receiver.ts';
import { startSmtp } from './smtp.ts';

const origin = 'https://app.example.com';
const headers = { 'x-service-admin-secret': TEST_ADMIN_SECRET, origin };
const DSL = 'model\n  schema 1.1\ntype user\ntype doc\n  relations\n    define viewer: [user]\n';

type State = Record<string, string>;
type Step = [op: string, input: (s: State) => Record<string, unknown>, after?: (body: Record<string, unknown>, s: State) => void];

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
  ['fga_delete_tuples', () => ({ tuples: [{ user: 'user:ann', relation: 'viewer', object: 'doc:1' }] })],
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
      ...(backend === 'dynamodb' ? { 'fga-store': 'memory' } : {}),
    }, { backend });
    const driven = new Set<string>();
    try {
      for (const protocol of PROTOCOLS) {
        const state: State = { p: protocol, receiver: `${receiver.url}/${protocol}` };
        for (const [op, input, after] of STEPS) {
          const row = OPERATIONS.find((o) => o.name === op);
          t.truthy(row, `${op} is an operation`);
          if (!row || !row.protocols.includes(protocol)) continue;
          const r: CallResult = await srv.call(op, input(state), { protocol, headers });
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
