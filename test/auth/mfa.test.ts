/**
 * The second factor in the identity service on a real database with an
 * injected clock: code expiry, challenge-session expiry, lockout and its
 * window, resend, single use under concurrency, TOTP replay, recovery codes,
 * and removal of the user's MFA rows on deactivation and deletion. Codes
 * reach the test through the delivery port the server wires to SMTP / SMS.
 * SQLite always; PostgreSQL and MySQL when configured.
 */
import test from 'ava';
import { randomBytes } from 'node:crypto';
import { generate } from 'otplib';
import { createTestDatabase, redisUrl } from '../helpers/databases.ts';
import { mainBackends } from '../helpers/main_databases.ts';
import { RedisMemoryStore, inTransaction, type AuthResult, type OtpDelivery, type UserRecord } from '../../auth/index.ts';
import { STRONG_PASSWORD, errorOf, makeService, manualClock, userRows, type ServiceFixture } from './fixtures.ts';

/** A delivery port that keeps the last code per address. */
function inbox(): { delivery: OtpDelivery; last: Map<string, string> } {
  const last = new Map<string, string>();
  return {
    last,
    delivery: {
      email: async (user: UserRecord, code: string) => void last.set(user.email ?? '', code),
      sms: async (phone: string, code: string) => void last.set(phone, code),
    },
  };
}

async function rowsOf(f: ServiceFixture, table: 'otps' | 'authenticators', userId: string): Promise<number> {
  return (await userRows(f, table, userId)).length;
}

const other = (code: string): string => (code === '000000' ? '000001' : '000000');

const mfaCookie = (r: AuthResult): string => {
  if (r.mfaSession === undefined) throw new Error('no MFA challenge');
  return r.mfaSession.token;
};

for (const backend of mainBackends()) {
  test(`email OTP: no tokens before the code; expiry after 1 minute; wrong, reused and resent-away codes refused (${backend})`, async (t) => {
    const clock = manualClock();
    const box = inbox();
    const f = await makeService({ enableMfa: true, enforceMfa: true, enableEmailOtp: true, now: clock.now }, { backend, otpDelivery: box.delivery });
    try {
      const email = 'otp@example.com';
      await f.auth.signup({ email, password: STRONG_PASSWORD });
      const login = await f.auth.login({ email, password: STRONG_PASSWORD });
      t.true(login.response.should_show_email_otp_screen);
      t.is(login.response.access_token, undefined);
      t.is(login.session, undefined);
      const first = box.last.get(email)!;
      t.regex(first, /^[0-9]{6}$/);
      const wrong = first === '000000' ? '000001' : '000000';
      t.is((await errorOf(f.auth.verifyOtp({ email, otp: wrong }, { mfaCookie: mfaCookie(login) }))).reason, 'invalid_otp');
      t.is((await errorOf(f.auth.verifyOtp({ email, otp: first }, {}))).reason, 'invalid_mfa_session');
      t.is((await errorOf(f.auth.verifyOtp({ email: 'other@example.com', otp: first }, { mfaCookie: mfaCookie(login) }))).reason, 'invalid_mfa_session');
      t.is((await errorOf(f.auth.verifyOtp({ email, otp: first, is_totp: true }, { mfaCookie: mfaCookie(login) }))).reason, 'mfa_method_mismatch');

      // Resend: new code and cookie; the old ones stop working.
      const resent = await f.auth.resendOtp({ email }, { mfaCookie: mfaCookie(login) });
      const second = box.last.get(email)!;
      t.is((await errorOf(f.auth.verifyOtp({ email, otp: second }, { mfaCookie: mfaCookie(login) }))).reason, 'invalid_mfa_session');
      if (second !== first) t.is((await errorOf(f.auth.verifyOtp({ email, otp: first }, { mfaCookie: mfaCookie(resent) }))).reason, 'invalid_otp');

      // Expired after 60 s (the challenge session lives 180 s).
      clock.advance(61_000);
      t.is((await errorOf(f.auth.verifyOtp({ email, otp: second }, { mfaCookie: mfaCookie(resent) }))).reason, 'expired_token');
      t.is(await rowsOf(f, 'otps', resent.record!.id), 0, 'the expired code is removed');

      const again = await f.auth.login({ email, password: STRONG_PASSWORD });
      const third = box.last.get(email)!;
      const ok = await f.auth.verifyOtp({ email, otp: third }, { mfaCookie: mfaCookie(again) });
      t.truthy(ok.response.access_token);
      t.truthy(ok.session?.token);
      t.is(ok.method, 'email_otp');
      const idClaims = (await f.auth.validateJwtToken({ token_type: 'id_token', token: ok.response.id_token! })).claims;
      t.deepEqual(idClaims['amr'], ['pwd', 'otp', 'mfa']);
      t.truthy(await f.auth.authenticate({ bearer: ok.response.access_token }));
      // Single use: the challenge is over, and the code is gone for a new one.
      t.is((await errorOf(f.auth.verifyOtp({ email, otp: third }, { mfaCookie: mfaCookie(again) }))).reason, 'invalid_mfa_session');
      const fourth = await f.auth.login({ email, password: STRONG_PASSWORD });
      if (box.last.get(email) !== third) t.is((await errorOf(f.auth.verifyOtp({ email, otp: third }, { mfaCookie: mfaCookie(fourth) }))).reason, 'invalid_otp');

      // The challenge session itself expires after 3 minutes.
      clock.advance(181_000);
      t.is((await errorOf(f.auth.verifyOtp({ email, otp: box.last.get(email)! }, { mfaCookie: mfaCookie(fourth) }))).reason, 'invalid_mfa_session');
    } finally {
      await f.close();
    }
  });

  test(`lockout: the 6th code within 15 minutes is refused even when right; the window ends (${backend})`, async (t) => {
    const clock = manualClock();
    const box = inbox();
    const f = await makeService({ enableMfa: true, enableSmsOtp: true, enableMobileBasicAuthentication: true, now: clock.now }, { backend, otpDelivery: box.delivery });
    try {
      const phone = '+15550002222';
      const signup = await f.auth.signup({ phone_number: phone, password: STRONG_PASSWORD });
      await f.auth.users.update(signup.response.user!.id, { is_multi_factor_auth_enabled: true });
      const login = await f.auth.login({ phone_number: phone, password: STRONG_PASSWORD });
      t.true(login.response.should_show_mobile_otp_screen);
      const code = box.last.get(phone)!;
      const wrong = code === '999999' ? '999998' : '999999';
      for (let i = 0; i < 5; i++) t.is((await errorOf(f.auth.verifyOtp({ phone_number: phone, otp: wrong }, { mfaCookie: mfaCookie(login) }))).reason, 'invalid_otp');
      const locked = await errorOf(f.auth.verifyOtp({ phone_number: phone, otp: code }, { mfaCookie: mfaCookie(login) }));
      t.is(locked.code, 'resource_exhausted');
      t.is(locked.reason, 'too_many_attempts');
      t.true(Number(locked.details?.['retry_after_seconds']) > 0);
      clock.advance(901_000);
      const later = await f.auth.login({ phone_number: phone, password: STRONG_PASSWORD });
      const ok = await f.auth.verifyOtp({ phone_number: phone, otp: box.last.get(phone)! }, { mfaCookie: mfaCookie(later) });
      t.truthy(ok.response.access_token);
    } finally {
      await f.close();
    }
  });

  test(`TOTP: enrolment, replayed code refused, recovery code once, rows removed on deactivation and deletion (${backend})`, async (t) => {
    const clock = manualClock();
    const f = await makeService({ enableMfa: true, enforceMfa: true, enableTotpLogin: true, now: clock.now }, { backend });
    try {
      const email = 'totp@example.com';
      const signup = await f.auth.signup({ email, password: STRONG_PASSWORD });
      const userId = signup.response.user!.id;
      const first = await f.auth.login({ email, password: STRONG_PASSWORD });
      t.true(first.response.should_show_totp_screen);
      t.is(first.response.access_token, undefined);
      const secret = first.response.authenticator_secret!;
      t.regex(first.response.authenticator_uri!, /^otpauth:\/\/totp\//);
      t.regex(first.response.authenticator_scanner_image!, /^data:image\/gif;base64,[A-Za-z0-9+/]+=*$/);
      const recovery = first.response.authenticator_recovery_codes!;
      t.is(recovery.length, 10);
      const epoch = () => Math.floor(clock.now() / 1000);
      // Before enrolment is confirmed, a recovery code is refused.
      t.is((await errorOf(f.auth.verifyOtp({ email, otp: recovery[0]!, is_totp: true }, { mfaCookie: mfaCookie(first) }))).reason, 'invalid_otp');
      const code = await generate({ secret, epoch: epoch() });
      const enrolled = await f.auth.verifyOtp({ email, otp: code, is_totp: true }, { mfaCookie: mfaCookie(first) });
      t.true(enrolled.enrolled);
      t.truthy(enrolled.response.access_token);

      const second = await f.auth.login({ email, password: STRONG_PASSWORD });
      t.is(second.response.authenticator_secret, undefined);
      // Security matrix A4: the same code again is refused; -2 steps refused; +1 step accepted once.
      t.is((await errorOf(f.auth.verifyOtp({ email, otp: code, is_totp: true }, { mfaCookie: mfaCookie(second) }))).reason, 'invalid_otp');
      clock.advance(90_000);
      t.is((await errorOf(f.auth.verifyOtp({ email, otp: await generate({ secret, epoch: epoch() - 60 }), is_totp: true }, { mfaCookie: mfaCookie(second) }))).reason, 'invalid_otp');
      const ahead = await generate({ secret, epoch: epoch() + 30 });
      const next = await f.auth.verifyOtp({ email, otp: ahead, is_totp: true }, { mfaCookie: mfaCookie(second) });
      t.false(next.enrolled);
      const replay = await f.auth.login({ email, password: STRONG_PASSWORD });
      t.is((await errorOf(f.auth.verifyOtp({ email, otp: ahead, is_totp: true }, { mfaCookie: mfaCookie(replay) }))).reason, 'invalid_otp');

      const third = await f.auth.login({ email, password: STRONG_PASSWORD });
      const viaRecovery = await f.auth.verifyOtp({ email, otp: recovery[3]!.toUpperCase(), is_totp: true }, { mfaCookie: mfaCookie(third) });
      t.true(viaRecovery.recoveryCodeUsed);
      const fourth = await f.auth.login({ email, password: STRONG_PASSWORD });
      t.is((await errorOf(f.auth.verifyOtp({ email, otp: recovery[3]!, is_totp: true }, { mfaCookie: mfaCookie(fourth) }))).reason, 'invalid_otp');

      t.is(await rowsOf(f, 'authenticators', userId), 1);
      await f.auth.deactivateAccount({ principal: (await f.auth.authenticate({ bearer: viaRecovery.response.access_token }))! });
      t.is(await rowsOf(f, 'authenticators', userId), 0);
    } finally {
      await f.close();
    }
  });

  test(`A3: 50 concurrent wrong codes for one challenge: at most 5 compared, then the right code is refused (${backend})`, async (t) => {
    const box = inbox();
    const f = await makeService({ enableMfa: true, enforceMfa: true, enableEmailOtp: true }, { backend, otpDelivery: box.delivery });
    try {
      const email = 'burst@example.com';
      await f.auth.signup({ email, password: STRONG_PASSWORD });
      const login = await f.auth.login({ email, password: STRONG_PASSWORD });
      const code = box.last.get(email)!;
      const results = await Promise.all(Array.from({ length: 50 }, () => errorOf(f.auth.verifyOtp({ email, otp: other(code) }, { mfaCookie: mfaCookie(login) }))));
      t.is(results.filter((r) => r.reason === 'invalid_otp').length, 5);
      t.is(results.filter((r) => r.reason === 'too_many_attempts').length, 45);
      t.is((await errorOf(f.auth.verifyOtp({ email, otp: code }, { mfaCookie: mfaCookie(login) }))).code, 'resource_exhausted');
    } finally {
      await f.close();
    }
  });

  test(`concurrent logins of one user: every challenge is answered, the last stored code works, one enrolment is handed out (${backend})`, async (t) => {
    const box = inbox();
    const f = await makeService({ enableMfa: true, enforceMfa: true, enableEmailOtp: true }, { backend, otpDelivery: box.delivery });
    const g = await makeService({ enableMfa: true, enforceMfa: true, enableTotpLogin: true }, { backend });
    try {
      await f.auth.signup({ email: 'twice@example.com', password: STRONG_PASSWORD });
      const logins = await Promise.all(Array.from({ length: 5 }, () => f.auth.login({ email: 'twice@example.com', password: STRONG_PASSWORD })));
      t.true(logins.every((l) => l.response.should_show_email_otp_screen === true));
      const user = (await f.auth.users.findByEmail('twice@example.com'))!;
      t.is(await rowsOf(f, 'otps', user.id), 1);

      await g.auth.signup({ email: 'enrol@example.com', password: STRONG_PASSWORD });
      const firsts = await Promise.all(Array.from({ length: 5 }, () => g.auth.login({ email: 'enrol@example.com', password: STRONG_PASSWORD })));
      t.true(firsts.every((l) => l.response.should_show_totp_screen === true));
      const enrolling = (await g.auth.users.findByEmail('enrol@example.com'))!;
      t.is(await rowsOf(g, 'authenticators', enrolling.id), 1);
    } finally {
      await f.close();
      await g.close();
    }
  });

  test(`concurrent verifications of one code: exactly one session; delete removes pending codes (${backend})`, async (t) => {
    const box = inbox();
    const f = await makeService({ enableMfa: true, enforceMfa: true, enableEmailOtp: true }, { backend, otpDelivery: box.delivery });
    try {
      const email = 'race@example.com';
      await f.auth.signup({ email, password: STRONG_PASSWORD });
      const login = await f.auth.login({ email, password: STRONG_PASSWORD });
      const code = box.last.get(email)!;
      const results = await Promise.allSettled(Array.from({ length: 4 }, () => f.auth.verifyOtp({ email, otp: code }, { mfaCookie: mfaCookie(login) })));
      t.is(results.filter((r) => r.status === 'fulfilled').length, 1);
      for (const r of results) if (r.status === 'rejected') t.is((r.reason as { code: string }).code, 'unauthenticated');

      const pending = await f.auth.login({ email, password: STRONG_PASSWORD });
      t.truthy(pending.mfaSession);
      const user = (await f.auth.users.findByEmail(email))!;
      t.is(await rowsOf(f, 'otps', user.id), 1);
      await inTransaction(f.database, async (transaction) => f.auth.deleteUserData(user, transaction));
      t.is(await rowsOf(f, 'otps', user.id), 0);
    } finally {
      await f.close();
    }
  });
}

const redis = redisUrl();
if (redis) {
  test('two instances sharing Redis share the MFA challenge and its lockout', async (t) => {
    const db = await createTestDatabase('sqlite', 'lk_auth');
    const prefix = `lk_test_${randomBytes(4).toString('hex')}:`;
    const box = inbox();
    const options = { enableMfa: true, enforceMfa: true, enableEmailOtp: true, mfaSecret: 'shared-client-secret' };
    const a = await makeService(options, { databaseUrl: db.url, store: new RedisMemoryStore({ url: redis, keyPrefix: prefix }), otpDelivery: box.delivery });
    const b = await makeService(options, { databaseUrl: db.url, store: new RedisMemoryStore({ url: redis, keyPrefix: prefix }), otpDelivery: box.delivery });
    try {
      for (const email of ['one@example.com', 'two@example.com']) await a.auth.signup({ email, password: STRONG_PASSWORD });
      const started = await a.auth.login({ email: 'one@example.com', password: STRONG_PASSWORD });
      const ok = await b.auth.verifyOtp({ email: 'one@example.com', otp: box.last.get('one@example.com')! }, { mfaCookie: mfaCookie(started) });
      t.truthy(ok.response.access_token);

      const login = await a.auth.login({ email: 'two@example.com', password: STRONG_PASSWORD });
      const code = box.last.get('two@example.com')!;
      for (const [svc, n] of [[a, 3], [b, 2]] as const) {
        for (let i = 0; i < n; i++) t.is((await errorOf(svc.auth.verifyOtp({ email: 'two@example.com', otp: other(code) }, { mfaCookie: mfaCookie(login) }))).reason, 'invalid_otp');
      }
      t.is((await errorOf(a.auth.verifyOtp({ email: 'two@example.com', otp: code }, { mfaCookie: mfaCookie(login) }))).reason, 'too_many_attempts');
    } finally {
      await a.store.close();
      await b.store.close();
      await a.close();
      await b.close();
      await db.drop();
    }
  });
}
