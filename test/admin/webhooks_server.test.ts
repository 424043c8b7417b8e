/**
 * Webhooks on the real server: every event, caused by the operation that
 * causes it, reaches a receiver on loopback signed and exactly once; and a
 * delivery that failed because the receiver was down survives a server
 * restart (a new process on the same database) and arrives exactly once
 * after the receiver recovers, every attempt logged. On every main-database
 * backend (DynamoDB too).
 */
import test from 'ava';
import { TEST_ADMIN_SECRET, TEST_CLIENT_SECRET, createServerDatabase, startTestServer, type TestServer } from '../helpers/server.ts';
import { mainBackends } from '../helpers/main_databases.ts';
import { WEBHOOK_EVENTS, verifyWebhook } from '../../admin/index.ts';
import { startReceiver } from './receiver.ts';
import { startSmtp } from './smtp.ts';
import { SoftwareAuthenticator, type Json } from '../helpers/software_authenticator.ts';
import { TestSamlIdp } from '../helpers/saml_idp.ts';

const origin = { origin: 'https://app.example.com' };
const admin = { 'x-service-admin-secret': TEST_ADMIN_SECRET, ...origin };

async function ok(srv: TestServer, op: string, input: Record<string, unknown> = {}, headers: Record<string, string> = admin): Promise<Record<string, unknown>> {
  const r = await srv.call(op, input, { protocol: 'rest', headers });
  if (r.error) throw new Error(`${op}: ${r.error.code} ${r.error.message}`);
  return r.body!;
}

async function until(what: string, cond: () => boolean | Promise<boolean>, ms = 30_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

for (const backend of mainBackends()) {
  test(`every event, caused by its operation, reaches the receiver signed and exactly once (${backend})`, async (t) => {
    const receiver = await startReceiver();
    const smtp = await startSmtp();
    const srv = await startTestServer({
      'webhook-allow-private-networks': true,
      'allowed-origins': 'https://app.example.com',
      'enable-passkeys': true,
      'webauthn-rp-id': 'example.com',
      'webauthn-origins': 'https://app.example.com',
      'smtp-host': '127.0.0.1',
      'smtp-port': smtp.port,
      'smtp-sender-email': 'noreply@example.com',
      'enable-email-verification': false,
    }, { backend });
    try {
      // Organizations live on SQL main databases only (docs/organizations.md), so DynamoDB has no organization events.
      const orgEvents: readonly string[] = ['organization.created', 'member.added', 'member.removed', 'member.role_changed', 'invitation.accepted', 'sso_connection.changed'];
      const events = backend === 'dynamodb' ? WEBHOOK_EVENTS.filter((e) => !orgEvents.includes(e)) : [...WEBHOOK_EVENTS];
      for (const event of events) await ok(srv, 'add_webhook', { event_name: event, endpoint: `${receiver.url}/${event}` });

      const signup = await ok(srv, 'signup', { email: 'ann@example.com', password: 'Correct horse 9 battery!' }, origin); // user.signup
      const id = (signup['user'] as { id: string }).id;
      const ann = { ...origin, authorization: `Bearer ${signup['access_token'] as string}` };
      const begun = await ok(srv, 'passkey_registration_options', {}, ann);
      const authenticator = new SoftwareAuthenticator({ origin: origin.origin, rpId: 'example.com' });
      const passkey = await ok(srv, 'add_passkey', { ceremony_id: begun['ceremony_id'], credential: authenticator.create(begun['options'] as Json) }, ann); // user.passkey_registered
      await ok(srv, 'delete_passkey', { id: passkey['id'] }, ann); // user.passkey_revoked
      const login = await ok(srv, 'login', { email: 'ann@example.com', password: 'Correct horse 9 battery!' }, origin); // user.login
      let extra = 0;
      if (backend !== 'dynamodb') {
        const ann = { ...origin, authorization: `Bearer ${login['access_token'] as string}` };
        const org = await ok(srv, 'create_organization', { name: 'Acme' }, ann); // organization.created
        const orgId = org['id'] as string;
        const invited = await ok(srv, 'invite_organization_members', { organization_id: orgId, emails: ['carl@example.com'] }, ann);
        const carl = await ok(srv, 'signup', { email: 'carl@example.com', password: 'Correct horse 9 battery!' }, origin); // user.signup
        const carlId = (carl['user'] as { id: string }).id;
        const token = (invited['invitations'] as { token: string }[])[0]!.token;
        await ok(srv, 'accept_organization_invitation', { token }, { ...origin, authorization: `Bearer ${carl['access_token'] as string}` }); // invitation.accepted, member.added
        await ok(srv, 'update_organization_member', { organization_id: orgId, user_id: carlId, role: 'admin' }, ann); // member.role_changed
        await ok(srv, 'remove_organization_member', { organization_id: orgId, user_id: carlId }, ann); // member.removed
        const idp = new TestSamlIdp(`webhooks-${backend}`);
        await ok(srv, 'add_sso_connection', { organization_id: orgId, type: 'saml', saml: { idp_metadata_xml: idp.metadata('https://idp.example.com/sso') } }, ann); // sso_connection.changed
        extra = 1; // carl's sign-up
      }
      await ok(srv, 'invite_members', { emails: ['bob@example.com'], redirect_uri: 'https://app.example.com/join' }); // user.created
      await ok(srv, 'revoke_access', { user_id: id }); // user.access_revoked
      await ok(srv, 'enable_access', { user_id: id }); // user.access_enabled
      const again = await ok(srv, 'login', { email: 'ann@example.com', password: 'Correct horse 9 battery!' }, origin); // user.login
      t.truthy(login['access_token']);
      await ok(srv, 'deactivate_account', {}, { ...origin, authorization: `Bearer ${again['access_token'] as string}` }); // user.deactivated
      await ok(srv, 'delete_user', { email: 'bob@example.com' }); // user.deleted

      const expected = events.length + 1 + extra; // two logins
      await until('every delivery', () => receiver.received.length >= expected);
      await new Promise((r) => setTimeout(r, 2500)); // a few more worker rounds: nothing arrives twice
      t.is(receiver.received.length, expected);
      const seen = new Set<string>();
      const received = receiver.received.map((r) => {
        verifyWebhook(TEST_CLIENT_SECRET, r.headers as Record<string, string>, r.body, { seen });
        const body = JSON.parse(r.body) as { event_name: string; user?: Record<string, unknown> };
        t.is(r.path, new URL(`${receiver.url}/${body.event_name}`).pathname, "each event goes to its own webhook");
        if (!orgEvents.includes(body.event_name)) t.false('password' in body.user!);
        return body.event_name;
      });
      t.deepEqual([...new Set(received)].sort(), [...events].sort());
      t.is(received.filter((e) => e === 'user.login').length, 2);
      t.is(seen.size, expected, 'every delivery has its own id');
    } finally {
      await srv.close();
      await smtp.close();
      await receiver.close();
    }
  });

  test(`a delivery to a receiver that is down survives a server restart and arrives exactly once after it recovers (${backend})`, async (t) => {
    const db = await createServerDatabase(backend);
    const shared = { ...db.flags, 'webhook-allow-private-networks': true };
    const receiver = await startReceiver();
    const port = receiver.port;
    receiver.down = true; // down: connections are reset
    let second: TestServer | undefined;
    const first = await startTestServer(shared);
    let firstClosed = false;
    try {
      const hdr = { 'x-service-admin-secret': TEST_ADMIN_SECRET };
      const hook = await ok(first, 'add_webhook', { event_name: 'user.signup', endpoint: `http://127.0.0.1:${port}/hook` }, hdr);
      t.truthy(hook);
      const hooks = (await ok(first, 'webhooks', {}, hdr))['webhooks'] as Array<{ id: string }>;
      const hookId = hooks[0]!.id;
      await ok(first, 'signup', { email: 'restart@example.com', password: 'Correct horse 9 battery!' }, {});
      const logs = async (srv: TestServer) => (await ok(srv, 'webhook_logs', { webhook_id: hookId }, hdr))['webhook_logs'] as Array<{ http_status: number }>;
      await until('the first failed attempt', async () => (await logs(first)).length >= 1);
      await first.close();
      firstClosed = true;

      receiver.down = false;
      second = await startTestServer(shared);
      await until('the delivery after the restart', () => receiver.received.length >= 1);
      await new Promise((r) => setTimeout(r, 2500));
      t.is(receiver.received.length, 1, 'exactly once');
      const body = JSON.parse(receiver.received[0]!.body) as { event_name: string; user: { email: string } };
      t.like(body, { event_name: 'user.signup', user: { email: 'restart@example.com' } });
      verifyWebhook(TEST_CLIENT_SECRET, receiver.received[0]!.headers as Record<string, string>, receiver.received[0]!.body);
      const all = await logs(second);
      t.true(all.length >= 2);
      t.is(all.filter((l) => l.http_status === 200).length, 1);
      t.true(all.some((l) => l.http_status === 0), 'the refused attempt is logged');
    } finally {
      if (!firstClosed) await first.close();
      await second?.close();
      await receiver.close();
      await db.drop();
    }
  });
}
