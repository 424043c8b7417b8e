/**
 * Multi-factor login end to end on the real server, over GraphQL, REST and
 * gRPC: email OTP through a real SMTP server on loopback, SMS OTP through a
 * local HTTP server acting as the SMS vendor, TOTP codes computed here from
 * the enrolment secret. No tokens before the second factor, from a login or
 * (with --enforce-mfa) a sign-up; wrong, reused and
 * resent-away codes refused; lockout after 5 failures; recovery codes once;
 * delete_user removes the user's MFA rows. SQLite always, PostgreSQL and
 * MySQL when configured. (Code expiry needs a clock: test/auth/mfa.test.ts.)
 */
import anyTest from 'ava';
import { generate } from 'otplib';
import { QueryTypes } from 'sequelize';
import { openSequelize } from '../../../engine/sql/sqlite_sequelize.ts';
import { PROTOCOLS, TEST_ADMIN_SECRET, startTestServer, type CallResult, type TestServer } from '../../helpers/server.ts';
import { sqlBackends } from '../../helpers/databases.ts';
import { mailsTo, startSmtp } from '../../admin/smtp.ts';
import { startSmsVendor as startVendor } from '../../helpers/sms_vendor.ts';

// Serial: every login costs a bcrypt compare at cost 10 on a shared machine.
const test = anyTest.serial;
const PASSWORD = 'correct horse battery';
const admin = { 'x-service-admin-secret': TEST_ADMIN_SECRET };

/** name → value of each Set-Cookie (an expired cookie has the value ''). */
function cookiesOf(r: CallResult): Map<string, string> {
  const out = new Map<string, string>();
  for (const line of r.setCookies) {
    const pair = line.split(';')[0]!.trim();
    const eq = pair.indexOf('=');
    out.set(pair.slice(0, eq), line.toLowerCase().includes('max-age=0') ? '' : pair.slice(eq + 1));
  }
  return out;
}

function mfaOf(r: CallResult): string {
  const v = cookiesOf(r).get('mfa');
  if (!v) throw new Error(`no mfa cookie: ${JSON.stringify(r.error ?? r.body)}`);
  return v;
}

const codeIn = (mail: string): string => /code is <strong>([0-9]{6})<\/strong>/.exec(mail)?.[1] ?? '';
const other = (code: string): string => (code === '000000' ? '000001' : '000000');

async function rowsOf(srv: TestServer, table: string, userId: string): Promise<number> {
  const sequelize = openSequelize(srv.database.url, { logging: false });
  try {
    const rows = await sequelize.query<{ n: number | string }>(`SELECT COUNT(*) AS n FROM ${table} WHERE user_id = ?`, { replacements: [userId], type: QueryTypes.SELECT });
    return Number(rows[0]?.n ?? 0);
  } finally {
    await sequelize.close();
  }
}

const MFA = { 'enable-mfa': true, 'enforce-mfa': true };

for (const backend of sqlBackends()) {
  test(`email OTP over every protocol: challenge without tokens, resend, single use, lockout (${backend})`, async (t) => {
    const smtp = await startSmtp();
    const srv = await startTestServer({ ...MFA, 'enable-email-otp': true, 'enable-email-verification': false, 'smtp-host': '127.0.0.1', 'smtp-port': smtp.port, 'smtp-sender-email': 'noreply@example.com' }, { backend });
    try {
      for (const protocol of PROTOCOLS) {
        const email = `otp-${protocol}-${backend}@example.com`;
        const call = (op: string, input: Record<string, unknown>, mfa?: string) => srv.call(op, input, { protocol, ...(mfa === undefined ? {} : { cookies: { mfa } }) });
        // --enforce-mfa: the sign-up answers the challenge as a login does, and verify_otp opens its session.
        const signup = await call('signup', { email, password: PASSWORD });
        t.is(signup.error, undefined, protocol);
        t.true(signup.body?.['should_show_email_otp_screen'] as boolean, `${protocol}: the sign-up is challenged`);
        for (const field of ['access_token', 'id_token', 'refresh_token']) t.falsy(signup.body?.[field], `${protocol}: no ${field} from the sign-up before the second factor`);
        t.false(cookiesOf(signup).has('cookie_session'), `${protocol}: no session from the sign-up before the second factor`);
        const signedUp = await call('verify_otp', { email, otp: codeIn((await mailsTo(smtp, email, 1))[0]!) }, mfaOf(signup));
        t.is(signedUp.error, undefined, protocol);
        t.truthy(signedUp.body?.['access_token'], `${protocol}: the sign-up's session after the second factor`);

        const login = await call('login', { email, password: PASSWORD });
        t.is(login.error, undefined, protocol);
        t.true(login.body?.['should_show_email_otp_screen'] as boolean, protocol);
        for (const field of ['access_token', 'id_token', 'refresh_token', 'user']) t.falsy(login.body?.[field], `${protocol}: no ${field} before the second factor`);
        t.false(cookiesOf(login).has('cookie_session'));
        const m1 = mfaOf(login);
        const mail1 = (await mailsTo(smtp, email, 2))[1];
        const code1 = codeIn(mail1!);
        t.regex(code1, /^[0-9]{6}$/);

        t.is((await call('verify_otp', { email, otp: code1 })).error?.reason, 'invalid_mfa_session', `${protocol}: the mfa cookie is required`);
        const wrong = await call('verify_otp', { email, otp: other(code1) }, m1);
        t.is(wrong.error?.code, 'unauthenticated');
        t.is(wrong.error?.reason, 'invalid_otp');

        const resent = await call('resend_otp', { email }, m1);
        t.is(resent.error, undefined, protocol);
        const m2 = mfaOf(resent);
        const code2 = codeIn((await mailsTo(smtp, email, 3))[2]!);
        t.is((await call('verify_otp', { email, otp: code2 }, m1)).error?.reason, 'invalid_mfa_session', `${protocol}: the old cookie stops working`);
        if (code1 !== code2) t.is((await call('verify_otp', { email, otp: code1 }, m2)).error?.reason, 'invalid_otp', `${protocol}: the old code stops working`);

        const ok = await call('verify_otp', { email, otp: code2 }, m2);
        t.is(ok.error, undefined, protocol);
        t.truthy(ok.body?.['access_token']);
        t.is((ok.body?.['user'] as Record<string, unknown>)['email'], email);
        t.truthy(cookiesOf(ok).get('cookie_session'));
        t.is(cookiesOf(ok).get('mfa'), '', `${protocol}: the mfa cookie is cleared`);
        const profile = await srv.call('profile', {}, { protocol, headers: { authorization: `Bearer ${String(ok.body?.['access_token'])}` } });
        t.is(profile.body?.['email'], email);
        t.is((await call('verify_otp', { email, otp: code2 }, m2)).error?.reason, 'invalid_mfa_session', `${protocol}: a challenge is used once`);

        // A used code does not work for the next login; after 5 failures even the right code is refused.
        const next = await call('login', { email, password: PASSWORD });
        const m3 = mfaOf(next);
        const code3 = codeIn((await mailsTo(smtp, email, 4))[3]!);
        const stale = code2 === code3 ? other(code3) : code2;
        t.is((await call('verify_otp', { email, otp: stale }, m3)).error?.reason, 'invalid_otp');
        for (let i = 0; i < 4; i++) t.is((await call('verify_otp', { email, otp: other(code3) }, m3)).error?.reason, 'invalid_otp');
        const locked = await call('verify_otp', { email, otp: code3 }, m3);
        t.is(locked.error?.code, 'resource_exhausted', protocol);
        t.is(locked.error?.reason, 'too_many_attempts');
      }
      const audit = async (action: string) => ((await srv.call('audit_logs', { action }, { protocol: 'rest', headers: admin })).body!['pagination'] as { total: number }).total;
      t.is(await audit('user.otp_resent'), PROTOCOLS.length);
      t.true((await audit('user.login_failed')) >= PROTOCOLS.length * 7);
    } finally {
      await srv.close();
      await smtp.close();
    }
  });

  test(`SMS OTP over every protocol through the vendor's HTTP API; a refused message is retried from the outbox with the same Idempotency-Key (${backend})`, async (t) => {
    const vendor = await startVendor();
    const srv = await startTestServer(
      {
        ...MFA,
        'enable-sms-otp': true,
        'enable-mobile-basic-authentication': true,
        'sms-api-url': vendor.url,
        'sms-account-sid': 'AC123',
        'sms-api-key': 'SK456',
        'sms-api-secret': 'vendor-secret',
        'sms-sender': '+15550000000',
      },
      { backend },
    );
    try {
      for (const [i, protocol] of PROTOCOLS.entries()) {
        const phone = `+1555010${i}${backend.length}00`;
        const signup = await srv.call('signup', { phone_number: phone, password: PASSWORD }, { protocol });
        t.true(signup.body?.['should_show_mobile_otp_screen'] as boolean, `${protocol}: the sign-up is challenged`);
        t.falsy(signup.body?.['access_token'], `${protocol}: no tokens from the sign-up before the second factor`);
        const login = await srv.call('login', { phone_number: phone, password: PASSWORD }, { protocol });
        t.true(login.body?.['should_show_mobile_otp_screen'] as boolean, protocol);
        t.falsy(login.body?.['access_token']);
        const sms = vendor.messages.at(-1)!;
        t.is(sms.path, '/2010-04-01/Accounts/AC123/Messages.json');
        t.is(sms.authorization, `Basic ${Buffer.from('SK456:vendor-secret').toString('base64')}`);
        t.is(sms.form.get('To'), phone);
        t.is(sms.form.get('From'), '+15550000000');
        const code = /([0-9]{6})/.exec(sms.form.get('Body') ?? '')?.[1] ?? '';
        const ok = await srv.call('verify_otp', { phone_number: phone, otp: code }, { protocol, cookies: { mfa: mfaOf(login) } });
        t.is(ok.error, undefined, protocol);
        t.truthy(ok.body?.['access_token']);
      }
      const phone = '+15550109999';
      await srv.call('signup', { phone_number: phone, password: PASSWORD }, { protocol: 'rest' });
      // The vendor refuses: the login still answers the challenge (the message waits in the outbox), and the retry carries the same key.
      vendor.status = 500;
      const before = vendor.messages.length;
      const down = await srv.call('login', { phone_number: phone, password: PASSWORD }, { protocol: 'rest' });
      t.is(down.error, undefined);
      t.true(down.body?.['should_show_mobile_otp_screen'] as boolean);
      t.is(vendor.messages.length, before + 1, 'the first attempt was made within the request');
      const refused = vendor.messages.at(-1)!;
      t.regex(refused.key, /^[0-9a-f-]{36}$/u, 'each message carries its outbox id as Idempotency-Key');
      vendor.status = 201;
      const until = Date.now() + 15_000;
      while (vendor.messages.length < before + 2 && Date.now() < until) await new Promise((r) => setTimeout(r, 100));
      const retried = vendor.messages.at(-1)!;
      t.is(vendor.messages.length, before + 2, 'retried once the vendor accepts');
      t.is(retried.key, refused.key, 'the retry carries the same Idempotency-Key');
      t.is(retried.form.get('Body'), refused.form.get('Body'), 'the same message');
      const code = /([0-9]{6})/.exec(retried.form.get('Body') ?? '')?.[1] ?? '';
      const ok = await srv.call('verify_otp', { phone_number: phone, otp: code }, { protocol: 'rest', cookies: { mfa: mfaOf(down) } });
      t.is(ok.error, undefined, 'the retried code signs in');
    } finally {
      await srv.close();
      await vendor.close();
    }
  });

  test(`TOTP over every protocol: enrolment, codes, recovery codes once; delete_user removes the enrolment (${backend})`, async (t) => {
    const srv = await startTestServer({ ...MFA, 'enable-totp-login': true }, { backend });
    try {
      for (const protocol of PROTOCOLS) {
        const email = `totp-${protocol}-${backend}@example.com`;
        const signup = await srv.call('signup', { email, password: PASSWORD }, { protocol });
        t.true(signup.body?.['should_show_totp_screen'] as boolean, `${protocol}: the sign-up is challenged`);
        t.falsy(signup.body?.['access_token'], `${protocol}: no tokens from the sign-up before the second factor`);
        const userId = String((signup.body?.['user'] as Record<string, unknown>)['id']);
        const login = async () => {
          const r = await srv.call('login', { email, password: PASSWORD }, { protocol });
          t.true(r.body?.['should_show_totp_screen'] as boolean, protocol);
          t.falsy(r.body?.['access_token']);
          return r;
        };
        const verify = (otp: string, mfa: string, isTotp = true) => srv.call('verify_otp', { email, otp, is_totp: isTotp }, { protocol, cookies: { mfa } });

        const first = await login();
        const secret = String(first.body?.['authenticator_secret']);
        t.regex(String(first.body?.['authenticator_uri']), /^otpauth:\/\/totp\/.*secret=/);
        t.regex(String(first.body?.['authenticator_scanner_image']), /^data:image\/gif;base64,/);
        const recovery = first.body?.['authenticator_recovery_codes'] as string[];
        t.is(recovery.length, 10);
        t.is((await verify(await generate({ secret }), mfaOf(first), false)).error?.reason, 'mfa_method_mismatch');
        const enrolled = await verify(await generate({ secret }), mfaOf(first));
        t.is(enrolled.error, undefined, protocol);
        t.truthy(enrolled.body?.['access_token']);

        const second = await login();
        t.falsy(second.body?.['authenticator_secret'], `${protocol}: the secret is shown at enrolment only`);
        const byRecovery = await verify(recovery[0]!, mfaOf(second));
        t.is(byRecovery.error, undefined, protocol);
        t.truthy(byRecovery.body?.['access_token']);

        const third = await login();
        t.is((await verify(recovery[0]!, mfaOf(third))).error?.reason, 'invalid_otp', `${protocol}: a recovery code works once`);
        // The next time step (within the ±1 step drift window) is a new code.
        const ok = await verify(await generate({ secret, epoch: Math.floor(Date.now() / 1000) + 30 }), mfaOf(third));
        t.is(ok.error, undefined, protocol);

        t.is(await rowsOf(srv, 'authenticators', userId), 1);
        t.is((await srv.call('delete_user', { email }, { protocol: 'rest', headers: admin })).error, undefined);
        t.is(await rowsOf(srv, 'authenticators', userId), 0);
      }
      const enabled = await srv.call('audit_logs', { action: 'user.mfa_enabled' }, { protocol: 'rest', headers: admin });
      t.is((enabled.body!['pagination'] as { total: number }).total, PROTOCOLS.length);
    } finally {
      await srv.close();
    }
  });
}
