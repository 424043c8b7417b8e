/**
 * MFA fails closed on the real server: when MFA applies to a user (enforced,
 * or the user enabled it) but no enabled second factor can reach them, the
 * login (password, or a magic link through verify_email) is refused with
 * `failed_precondition` `mfa_method_unavailable`: no tokens, no session or
 * challenge cookie, an audit row, and for a link nothing used up; and
 * update_profile cannot turn MFA on for a user no second factor reaches; a
 * sign-up that no second factor would reach is refused before anything is
 * stored. Over
 * GraphQL, REST and gRPC; SQLite always, PostgreSQL and MySQL when configured.
 */
import anyTest from 'ava';
import { PROTOCOLS, TEST_ADMIN_SECRET, createServerDatabase, startTestServer, type CallResult, type TestServer } from '../../helpers/server.ts';
import { sqlBackends } from '../../helpers/databases.ts';
import { mailsTo, startSmtp } from '../../admin/smtp.ts';

// Serial: every login costs a bcrypt compare on a shared machine.
const test = anyTest.serial;
const PASSWORD = 'correct horse battery';
const admin = { 'x-service-admin-secret': TEST_ADMIN_SECRET };

async function failedLogins(srv: TestServer, userId: string): Promise<string[]> {
  const r = await srv.call('audit_logs', { action: 'user.login_failed' }, { protocol: 'rest', headers: admin });
  const rows = (r.body?.['audit_logs'] ?? []) as Array<{ actor_id: string; metadata: string }>;
  return rows.filter((row) => row.actor_id === userId).map((row) => String((JSON.parse(row.metadata || '{}') as { reason?: unknown }).reason));
}

function assertRefused(t: { is: (a: unknown, b: unknown, m?: string) => void; false: (a: boolean, m?: string) => void }, r: CallResult, label: string): void {
  t.is(r.error?.code, 'failed_precondition', label);
  t.is(r.error?.reason, 'mfa_method_unavailable', label);
  t.is(r.body?.['access_token'] ?? undefined, undefined, `${label}: no tokens`);
  t.false(r.setCookies.some((c) => /^(cookie_session|cookie_session_domain|mfa)=[^;]/.test(c) && !/max-age=0/i.test(c)), `${label}: no session and no challenge cookie`);
}

for (const backend of sqlBackends()) {
  test(`enforced MFA with email codes only: a phone-only user's password login is refused and audited, an email user is challenged (${backend})`, async (t) => {
    const smtp = await startSmtp();
    const database = await createServerDatabase(backend);
    // Phone-only users from before MFA was enforced: under --enforce-mfa their sign-up is refused (below).
    const before = await startTestServer({ 'enable-email-verification': false, 'enable-mobile-basic-authentication': true }, { database });
    const userIds: string[] = [];
    try {
      for (const [i, protocol] of PROTOCOLS.entries()) {
        const signup = await before.call('signup', { phone_number: `+1555000333${i}`, password: PASSWORD }, { protocol });
        t.is(signup.error, undefined, protocol);
        userIds.push(String((signup.body?.['user'] as Record<string, unknown>)['id']));
      }
    } finally {
      await before.close();
    }
    const srv = await startTestServer(
      {
        'enable-mfa': true,
        'enforce-mfa': true,
        'enable-email-otp': true,
        'enable-email-verification': false,
        'enable-mobile-basic-authentication': true,
        'smtp-host': '127.0.0.1',
        'smtp-port': smtp.port,
        'smtp-sender-email': 'noreply@example.com',
      },
      { database },
    );
    try {
      for (const [i, protocol] of PROTOCOLS.entries()) {
        const refused = await srv.call('signup', { phone_number: `+1555000444${i}`, password: PASSWORD }, { protocol });
        assertRefused(t, refused, `${protocol}: a phone-only sign-up`);
        t.is((await srv.call('login', { phone_number: `+1555000444${i}`, password: PASSWORD }, { protocol })).error?.code, 'unauthenticated', `${protocol}: the refused sign-up stored nothing`);

        const phone = `+1555000333${i}`;
        const userId = userIds[i]!;
        const login = await srv.call('login', { phone_number: phone, password: PASSWORD }, { protocol });
        assertRefused(t, login, protocol);
        t.deepEqual(await failedLogins(srv, userId), ['mfa_method_unavailable'], `${protocol}: audited with the reason`);
        // A wrong password still answers the one invalid-credentials error: nothing is revealed before the password.
        t.is((await srv.call('login', { phone_number: phone, password: 'wrong horse battery' }, { protocol })).error?.code, 'unauthenticated');

        const email = `reachable-${protocol}-${backend}@example.com`;
        const signedUp = await srv.call('signup', { email, password: PASSWORD }, { protocol });
        t.true(signedUp.body?.['should_show_email_otp_screen'] as boolean, `${protocol}: a reachable user's sign-up gets the challenge`);
        const challenged = await srv.call('login', { email, password: PASSWORD }, { protocol });
        t.is(challenged.error, undefined, protocol);
        t.true(challenged.body?.['should_show_email_otp_screen'] as boolean, `${protocol}: a reachable user gets the challenge`);
        await mailsTo(smtp, email, 2);
      }
    } finally {
      await srv.close();
      await database.drop();
      await smtp.close();
    }
  });
}

test('a user with MFA on where only SMS codes are on and no phone: a magic link is refused without being used up, and works once MFA is turned off for them; update_profile cannot turn it on', async (t) => {
  const smtp = await startSmtp();
  const srv = await startTestServer({
    'enable-mfa': true,
    'enable-sms-otp': true,
    'sms-api-url': 'http://127.0.0.1:9',
    'sms-account-sid': 'AC123',
    'sms-api-key': 'SK456',
    'sms-api-secret': 'vendor-secret',
    'sms-sender': '+15550000000',
    'smtp-host': '127.0.0.1',
    'smtp-port': smtp.port,
    'smtp-sender-email': 'noreply@example.com',
  });
  try {
    let mails = 0;
    const linkFor = async (email: string, protocol: (typeof PROTOCOLS)[number]): Promise<string> => {
      t.is((await srv.call('magic_link_login', { email }, { protocol })).error, undefined);
      const mail = (await mailsTo(smtp, email, ++mails)).at(-1)!;
      return /token=([A-Za-z0-9_-]+)/.exec(mail)![1]!;
    };
    for (const protocol of PROTOCOLS) {
      mails = 0;
      const email = `sms-only-${protocol}@example.com`;
      const first = await srv.call('verify_email', { token: await linkFor(email, protocol) }, { protocol });
      t.truthy(first.body?.['access_token'], `${protocol}: MFA does not apply yet`);
      const userId = String((first.body?.['user'] as Record<string, unknown>)['id']);
      const bearer = { authorization: `Bearer ${String(first.body?.['access_token'])}` };
      // The user cannot lock themselves out: turning MFA on is refused while no second factor reaches them.
      t.like((await srv.call('update_profile', { is_multi_factor_auth_enabled: true }, { protocol, headers: bearer })).error, { code: 'failed_precondition', reason: 'mfa_method_unavailable' });
      const profile = await srv.call('profile', {}, { protocol, headers: bearer });
      t.not(profile.body?.['is_multi_factor_auth_enabled'], true, `${protocol}: nothing was changed`);
      // An administrator can still set it (say, before a phone number is added).
      t.is((await srv.call('update_user', { id: userId, is_multi_factor_auth_enabled: true }, { protocol: 'rest', headers: admin })).error, undefined);

      const token = await linkFor(email, protocol);
      const refused = await srv.call('verify_email', { token }, { protocol });
      assertRefused(t, refused, protocol);
      t.deepEqual(await failedLogins(srv, userId), ['mfa_method_unavailable'], `${protocol}: audited with the reason`);

      t.is((await srv.call('update_user', { id: userId, is_multi_factor_auth_enabled: false }, { protocol: 'rest', headers: admin })).error, undefined);
      const later = await srv.call('verify_email', { token }, { protocol });
      t.is(later.error, undefined, `${protocol}: the refused link was not used up`);
      t.truthy(later.body?.['access_token']);
    }
  } finally {
    await srv.close();
    await smtp.close();
  }
});
