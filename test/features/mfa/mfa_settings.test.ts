/**
 * A signed-in user's own authenticator settings through the user client on
 * GraphQL, REST and gRPC: regenerate_recovery_codes and reset_totp need the
 * current password again (missing and wrong refused, nothing changed); new
 * recovery codes replace the old ones at once; a reset key's codes are
 * refused at once and the next sign-in enrols a new key; both are audited.
 */
import anyTest from 'ava';
import { generate } from 'otplib';
import { LatchkeyClient } from '../../../client/index.ts';
import { LatchkeyError } from '../../../engine/errors.ts';
import { PROTOCOLS, TEST_ADMIN_SECRET, TEST_CLIENT_ID, startTestServer, type TestServer } from '../../helpers/server.ts';

// Serial: every login costs a bcrypt compare on a shared machine.
const test = anyTest.serial;
const PASSWORD = 'correct horse battery';
const admin = { 'x-service-admin-secret': TEST_ADMIN_SECRET };

let srv: TestServer;
test.before(async () => {
  srv = await startTestServer({ 'enable-mfa': true, 'enforce-mfa': true, 'enable-totp-login': true, 'enable-email-verification': false });
});
test.after.always(async () => {
  await srv?.close();
});

async function refusal(p: Promise<unknown>): Promise<{ code: string; reason: string | undefined }> {
  try {
    await p;
  } catch (err) {
    if (err instanceof LatchkeyError) return { code: err.code, reason: err.reason };
    throw err;
  }
  throw new Error('the call was not refused');
}

/** A TOTP code of `secret` one time step after `step` seconds from now (each code is accepted once). */
const codeOf = (secret: string, offset = 0) => generate({ secret, epoch: Math.floor(Date.now() / 1000) + offset });

for (const protocol of PROTOCOLS) {
  test(`${protocol}: recovery codes regenerated and TOTP reset after the password, each audited`, async (t) => {
    const email = `settings-${protocol}@example.com`;
    const client = new LatchkeyClient({ client_id: TEST_CLIENT_ID, service_url: srv.httpUrl, protocol, grpc_endpoint: srv.grpcAddress });
    const signup = await client.signup({ email, password: PASSWORD, confirm_password: PASSWORD });
    t.true(signup.should_show_totp_screen === true);
    const secret = String(signup.authenticator_secret);
    const oldCodes = signup.authenticator_recovery_codes as string[];
    t.is(oldCodes.length, 10);
    const signedIn = await client.verifyOtp({ email, otp: await codeOf(secret), is_totp: true });
    t.truthy(signedIn.access_token, 'the enrolment is confirmed and a session opened');

    // Re-authentication: missing and wrong passwords change nothing.
    t.deepEqual(await refusal(client.regenerateRecoveryCodes({})), { code: 'invalid_argument', reason: 'missing_password' });
    t.deepEqual(await refusal(client.regenerateRecoveryCodes({ password: 'not the password' })), { code: 'unauthenticated', reason: 'invalid_credentials' });
    t.deepEqual(await refusal(client.resetTotp({ password: 'not the password' })), { code: 'unauthenticated', reason: 'invalid_credentials' });

    const fresh = await client.regenerateRecoveryCodes({ password: PASSWORD });
    t.is(fresh.recovery_codes.length, 10);
    t.is(new Set(fresh.recovery_codes).size, 10);
    for (const c of fresh.recovery_codes) t.false(oldCodes.includes(c));

    // A second client signs in: an old recovery code is refused at once, a new one works once.
    const other = new LatchkeyClient({ client_id: TEST_CLIENT_ID, service_url: srv.httpUrl, protocol, grpc_endpoint: srv.grpcAddress });
    t.true((await other.login({ email, password: PASSWORD })).should_show_totp_screen === true);
    t.is((await refusal(other.verifyOtp({ email, otp: oldCodes[1]!, is_totp: true }))).reason, 'invalid_otp', 'the old recovery codes stopped working');
    t.truthy((await other.verifyOtp({ email, otp: fresh.recovery_codes[0]!, is_totp: true })).access_token, 'a new recovery code works');

    // Reset: the old key's codes are refused at once, and the next sign-in enrols a new key.
    t.regex((await client.resetTotp({ password: PASSWORD })).message, /Authenticator app removed/);
    t.deepEqual(await refusal(client.resetTotp({ password: PASSWORD })), { code: 'failed_precondition', reason: 'totp_not_enrolled' });
    t.deepEqual(await refusal(client.regenerateRecoveryCodes({ password: PASSWORD })), { code: 'failed_precondition', reason: 'totp_not_enrolled' });
    const again = await other.login({ email, password: PASSWORD });
    const newSecret = String(again.authenticator_secret);
    t.truthy(again.authenticator_secret, 'the next sign-in enrols a new key');
    t.not(newSecret, secret);
    t.is((await refusal(other.verifyOtp({ email, otp: await codeOf(secret, 30), is_totp: true }))).reason, 'invalid_otp', "the old key's codes stopped working");
    t.is((await refusal(other.verifyOtp({ email, otp: fresh.recovery_codes[1]!, is_totp: true }))).reason, 'invalid_otp', 'so did its recovery codes');
    t.truthy((await other.verifyOtp({ email, otp: await codeOf(newSecret), is_totp: true })).access_token, 'the new key signs in');
  });
}

test('each change is audited once per protocol, and a signed-out caller is refused', async (t) => {
  const total = async (action: string) => ((await srv.call('audit_logs', { action }, { protocol: 'rest', headers: admin })).body!['pagination'] as { total: number }).total;
  t.is(await total('user.recovery_codes_regenerated'), PROTOCOLS.length);
  t.is(await total('user.totp_reset'), PROTOCOLS.length);
  for (const protocol of PROTOCOLS) {
    t.is((await srv.call('reset_totp', { password: PASSWORD }, { protocol })).error?.code, 'unauthenticated', protocol);
    t.is((await srv.call('regenerate_recovery_codes', { password: PASSWORD }, { protocol })).error?.code, 'unauthenticated', protocol);
  }
});
