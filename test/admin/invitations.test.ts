/**
 * Invitations end to end on the real server with a real SMTP server on
 * loopback: invite_members → the mail → the link's one-time token →
 * reset_password (on every protocol) → login; the pending requests in
 * verification_requests (never with a token), one use per token, and
 * delete_user removing a pending invitation. On every main-database backend (DynamoDB too).
 */
import test from 'ava';
import { PROTOCOLS, TEST_ADMIN_SECRET, startTestServer, type TestServer } from '../helpers/server.ts';
import { mainBackends } from '../helpers/main_databases.ts';
import { mailTo, startSmtp } from './smtp.ts';

// With --allowed-origins set, browser-style calls must name an allowed origin (CSRF guard).
const origin = { origin: 'https://app.example.com' };
const admin = { 'x-service-admin-secret': TEST_ADMIN_SECRET, ...origin };

async function pending(srv: TestServer): Promise<Array<Record<string, unknown>>> {
  const r = await srv.call('verification_requests', { pagination: { page: 1, limit: 100 } }, { protocol: 'rest', headers: admin });
  if (r.error) throw new Error(r.error.message);
  return r.body!['verification_requests'] as Array<Record<string, unknown>>;
}

for (const backend of mainBackends()) {
  test(`an invited user follows the mailed link, sets a password and logs in (${backend})`, async (t) => {
    const smtp = await startSmtp();
    const srv = await startTestServer(
      {
        'smtp-host': '127.0.0.1',
        'smtp-port': smtp.port,
        'smtp-sender-email': 'noreply@example.com',
        'allowed-origins': 'https://app.example.com',
        'enable-signup': false,
      },
      { backend },
    );
    try {
      const emails = PROTOCOLS.map((p) => `invitee-${p}@example.com`);
      const invited = await srv.call('invite_members', { emails: [...emails, 'gone@example.com'], redirect_uri: 'https://app.example.com/join' }, { protocol: 'rest', headers: admin });
      t.is(invited.error, undefined);

      const requests = await pending(srv);
      t.is(requests.length, 4);
      for (const r of requests) {
        t.is(r['identifier'], 'invite_member');
        t.is(r['token'] ?? null, null, 'no live token is ever listed');
        t.is(r['redirect_uri'], 'https://app.example.com/join');
        t.true((r['expires'] as number) > Date.now() / 1000 + 6 * 24 * 3600);
      }
      t.deepEqual(requests.map((r) => r['email']).sort(), [...emails, 'gone@example.com'].sort());

      for (const [i, protocol] of PROTOCOLS.entries()) {
        const email = emails[i]!;
        const mail = await mailTo(smtp, email);
        const link = /https:\/\/app\.example\.com\/join\?token=([A-Za-z0-9_-]+)/.exec(mail);
        t.truthy(link, `the mail to ${email} links to redirect_uri with a token`);
        const token = link![1]!;
        // The token appears nowhere but in the mail.
        t.false(JSON.stringify(await pending(srv)).includes(token));

        const before = await srv.call('login', { email, password: 'Correct horse 9 battery!' }, { protocol, headers: origin });
        t.is(before.error?.code, 'unauthenticated', 'no password yet');
        const mismatch = await srv.call('reset_password', { token, password: 'Correct horse 9 battery!', confirm_password: 'other' }, { protocol, headers: origin });
        t.is(mismatch.error?.code, 'invalid_argument');
        const set = await srv.call('reset_password', { token, password: 'Correct horse 9 battery!', confirm_password: 'Correct horse 9 battery!' }, { protocol, headers: origin });
        t.deepEqual(set.body, { message: 'Password updated successfully.' }, protocol);
        const again = await srv.call('reset_password', { token, password: 'Another horse 9 battery!' }, { protocol, headers: origin });
        t.is(again.error?.code, 'unauthenticated', 'a token works once');
        t.is(again.error?.message, 'invalid token');

        const login = await srv.call('login', { email, password: 'Correct horse 9 battery!' }, { protocol, headers: origin });
        t.is(login.error, undefined, protocol);
        t.truthy(login.body?.['access_token']);
        t.like(login.body?.['user'], { email, email_verified: true });
      }
      t.deepEqual((await pending(srv)).map((r) => r['email']), ['gone@example.com']);
      const audit = await srv.call('audit_logs', { action: 'user.password_reset' }, { protocol: 'rest', headers: admin });
      t.is((audit.body!['pagination'] as { total: number }).total, PROTOCOLS.length);

      // delete_user removes a pending invitation, and its link stops working.
      const goneMail = await mailTo(smtp, 'gone@example.com');
      const goneToken = /join\?token=([A-Za-z0-9_-]+)/.exec(goneMail)![1]!;
      t.is((await srv.call('delete_user', { email: 'gone@example.com' }, { protocol: 'rest', headers: admin })).error, undefined);
      t.deepEqual(await pending(srv), []);
      t.is((await srv.call('reset_password', { token: goneToken, password: 'Correct horse 9 battery!' }, { protocol: 'rest', headers: origin })).error?.code, 'unauthenticated');
      t.is((await srv.call('reset_password', { token: 'x'.repeat(43), password: 'Correct horse 9 battery!' }, { protocol: 'rest', headers: origin })).error?.message, 'invalid token');
    } finally {
      await srv.close();
      await smtp.close();
    }
  });
}

test('verification_requests pages newest first with the usual pagination', async (t) => {
  const smtp = await startSmtp();
  const srv = await startTestServer({ 'smtp-host': '127.0.0.1', 'smtp-port': smtp.port, 'smtp-sender-email': 'noreply@example.com', 'allowed-origins': 'https://app.example.com' });
  try {
    for (let i = 0; i < 12; i++) {
      const r = await srv.call('invite_members', { emails: [`p${i}@example.com`], redirect_uri: 'https://app.example.com/join' }, { protocol: 'rest', headers: admin });
      t.is(r.error, undefined);
    }
    for (const protocol of PROTOCOLS) {
      const first = await srv.call('verification_requests', {}, { protocol, headers: admin });
      t.like(first.body?.['pagination'], { page: 1, limit: 10, offset: 0, total: 12 }, protocol);
      t.is((first.body!['verification_requests'] as unknown[]).length, 10);
      const second = await srv.call('verification_requests', { pagination: { page: 2, limit: 10 } }, { protocol, headers: admin });
      t.is((second.body!['verification_requests'] as unknown[]).length, 2);
    }
    const all = (await pending(srv)).map((r) => r['created_at'] as number);
    t.deepEqual(all, [...all].sort((a, b) => b - a));
  } finally {
    await srv.close();
    await smtp.close();
  }
});
