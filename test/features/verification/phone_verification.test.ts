/**
 * Phone verification by texted code (`--enable-phone-verification`), on the
 * real server over GraphQL, REST and gRPC, with a local HTTP server acting as
 * the SMS vendor: a phone sign-up gets a code and the `mfa` cookie instead of
 * a session; `verify_otp` with the code marks the number verified and opens
 * the session; a login before verification texts a new code rather than
 * shutting the account out; wrong codes and wrong passwords get nothing.
 */
import anyTest from 'ava';
import { PROTOCOLS, startTestServer, type CallResult } from '../../helpers/server.ts';
import { lastCodeTo, smsFlags, startSmsVendor, type SmsVendor } from '../../helpers/sms_vendor.ts';

const test = anyTest.serial;
const PASSWORD = 'correct horse battery';

function mfaCookie(r: CallResult): string {
  const line = r.setCookies.find((c) => c.startsWith('mfa=') && !/max-age=0/i.test(c));
  if (line === undefined) throw new Error(`no mfa cookie: ${JSON.stringify(r.error ?? r.body)}`);
  return line.slice('mfa='.length, line.indexOf(';'));
}

test('a phone sign-up is verified by a texted code before it gets a session, over every protocol', async (t) => {
  const vendor = await startSmsVendor();
  t.teardown(() => vendor.close());
  const server = await startTestServer({ 'enable-mobile-basic-authentication': true, 'enable-phone-verification': true, ...smsFlags(vendor) });
  t.teardown(() => server.close());

  for (const [i, protocol] of PROTOCOLS.entries()) {
    const phone = `+1555020${i}111`;
    const signup = await server.call('signup', { phone_number: phone, password: PASSWORD }, { protocol });
    t.is(signup.error, undefined, protocol);
    t.is(signup.body?.['should_show_mobile_otp_screen'], true, protocol);
    t.falsy(signup.body?.['access_token'], `${protocol}: no token before the number is verified`);
    t.false(signup.setCookies.some((c) => c.startsWith('cookie_session=')), `${protocol}: no session cookie`);
    const firstCode = lastCodeTo(vendor, phone);
    t.regex(firstCode ?? '', /^[0-9]{6}$/, `${protocol}: a code was texted to the number`);
    let cookie = mfaCookie(signup);

    // A wrong code opens nothing.
    const wrong = await server.call('verify_otp', { phone_number: phone, otp: firstCode === '000000' ? '000001' : '000000' }, { protocol, cookies: { mfa: cookie } });
    t.is(wrong.error?.code, 'unauthenticated', protocol);

    // resend_otp texts a new code; the old one stops working.
    const resent = await server.call('resend_otp', { phone_number: phone }, { protocol, cookies: { mfa: cookie } });
    t.is(resent.error, undefined, protocol);
    cookie = mfaCookie(resent);
    const code = lastCodeTo(vendor, phone);
    t.not(code, undefined);

    const verified = await server.call('verify_otp', { phone_number: phone, otp: code }, { protocol, cookies: { mfa: cookie } });
    t.is(verified.error, undefined, protocol);
    t.truthy(verified.body?.['access_token'], `${protocol}: the session opens with the code`);
    const user = verified.body?.['user'] as { phone_number: string; phone_number_verified: boolean };
    t.is(user.phone_number, phone);
    t.true(user.phone_number_verified, `${protocol}: the number is verified`);

    // Later logins need no code.
    const sent = vendor.messages.length;
    const login = await server.call('login', { phone_number: phone, password: PASSWORD }, { protocol });
    t.truthy(login.body?.['access_token'], protocol);
    t.is(vendor.messages.length, sent, `${protocol}: no code for a verified number`);
  }
});

test('a login before verification texts a new code instead of shutting the account out; a wrong password texts nothing', async (t) => {
  const vendor = await startSmsVendor();
  t.teardown(() => vendor.close());
  const server = await startTestServer({ 'enable-mobile-basic-authentication': true, 'enable-phone-verification': true, ...smsFlags(vendor) });
  t.teardown(() => server.close());
  const phone = '+15550209999';
  t.is((await server.call('signup', { phone_number: phone, password: PASSWORD }, { protocol: 'rest' })).body?.['should_show_mobile_otp_screen'], true);
  const afterSignup = vendor.messages.length;

  const wrongPassword = await server.call('login', { phone_number: phone, password: 'not the password' }, { protocol: 'rest' });
  t.is(wrongPassword.error?.code, 'unauthenticated');
  t.is(vendor.messages.length, afterSignup, 'no code for a wrong password');

  // The sign-up's code is lost (the user closed the page): the next login texts another.
  const login = await server.call('login', { phone_number: phone, password: PASSWORD }, { protocol: 'rest' });
  t.is(login.error, undefined);
  t.is(login.body?.['should_show_mobile_otp_screen'], true);
  t.falsy(login.body?.['access_token']);
  t.is(vendor.messages.length, afterSignup + 1);
  const verified = await server.call('verify_otp', { phone_number: phone, otp: lastCodeTo(vendor, phone) }, { protocol: 'rest', cookies: { mfa: mfaCookie(login) } });
  t.truthy(verified.body?.['access_token']);
  const claims = await server.call('validate_jwt_token', { token_type: 'access_token', token: String(verified.body?.['access_token']) }, { protocol: 'rest' });
  t.is((claims.body?.['claims'] as { login_method: string }).login_method, 'mobile_basic_auth');
});

test('without phone verification a phone sign-up opens its session at once and texts nothing', async (t) => {
  const vendor = await startSmsVendor();
  t.teardown(() => vendor.close());
  const server = await startTestServer({ 'enable-mobile-basic-authentication': true, ...smsFlags(vendor) });
  t.teardown(() => server.close());
  const signup = await server.call('signup', { phone_number: '+15550208888', password: PASSWORD }, { protocol: 'rest' });
  t.truthy(signup.body?.['access_token']);
  t.is(vendor.messages.length, 0);
});

/** Waits (bounded) until the vendor has texted `phone` a code other than `previous`. */
async function nextCodeTo(vendor: SmsVendor, phone: string, previous?: string): Promise<string> {
  for (let i = 0; i < 200; i++) {
    const code = lastCodeTo(vendor, phone);
    if (code !== undefined && code !== previous) return code;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`no code texted to ${phone}`);
}

test('forgot_password by phone texts a code; reset_password with otp and phone_number sets the password once and ends every session', async (t) => {
  const vendor = await startSmsVendor();
  t.teardown(() => vendor.close());
  const server = await startTestServer({ 'enable-mobile-basic-authentication': true, ...smsFlags(vendor) });
  t.teardown(() => server.close());
  const phone = '+15550207777';
  const signup = await server.call('signup', { phone_number: phone, password: PASSWORD }, { protocol: 'rest' });
  const oldToken = String(signup.body?.['access_token']);

  for (const protocol of PROTOCOLS) {
    const unknown = await server.call('forgot_password', { phone_number: '+15550200000' }, { protocol });
    const known = await server.call('forgot_password', { phone_number: phone }, { protocol });
    t.deepEqual(unknown.body, known.body, `${protocol}: the same answer whether or not the number has an account`);
    t.is(known.body?.['should_show_mobile_otp_screen'], true, protocol);
  }
  // One code per request, each replacing the one before: the last texted is the live one.
  for (let i = 0; i < 200 && vendor.messages.filter((m) => m.form.get('To') === phone).length < PROTOCOLS.length; i++) await new Promise((r) => setTimeout(r, 25));
  t.is(vendor.messages.filter((m) => m.form.get('To') === phone).length, PROTOCOLS.length);
  const code = await nextCodeTo(vendor, phone);
  t.is(lastCodeTo(vendor, '+15550200000'), undefined, 'nothing texted to a number without an account');

  const missing = await server.call('reset_password', { password: 'a new password 123', confirm_password: 'a new password 123' }, { protocol: 'rest' });
  t.is(missing.error?.reason, 'missing_reset_proof');
  const wrong = await server.call('reset_password', { otp: code === '000000' ? '000001' : '000000', phone_number: phone, password: 'a new password 123' }, { protocol: 'graphql' });
  t.is(wrong.error?.code, 'unauthenticated');
  t.is(wrong.error?.reason, 'invalid_otp');
  const foreign = await server.call('reset_password', { otp: code, phone_number: '+15550200000', password: 'a new password 123' }, { protocol: 'rest' });
  t.is(foreign.error?.reason, 'invalid_otp', 'a number without an account answers as a wrong code');

  const reset = await server.call('reset_password', { otp: code, phone_number: phone, password: 'a new password 123', confirm_password: 'a new password 123' }, { protocol: 'grpc' });
  t.is(reset.error, undefined);
  t.is(reset.body?.['message'], 'Password updated successfully.');
  t.is((await server.call('reset_password', { otp: code, phone_number: phone, password: 'another password 456' }, { protocol: 'rest' })).error?.reason, 'invalid_otp', 'a code works once');

  t.is((await server.call('validate_jwt_token', { token_type: 'access_token', token: oldToken }, { protocol: 'rest' })).error?.code, 'unauthenticated', 'sessions before the reset are over');
  t.is((await server.call('login', { phone_number: phone, password: PASSWORD }, { protocol: 'rest' })).error?.code, 'unauthenticated');
  t.truthy((await server.call('login', { phone_number: phone, password: 'a new password 123' }, { protocol: 'rest' })).body?.['access_token']);
});

test('a texted reset code is not a second factor, nor a login code a reset code', async (t) => {
  const vendor = await startSmsVendor();
  t.teardown(() => vendor.close());
  const server = await startTestServer({ 'enable-mobile-basic-authentication': true, 'enable-mfa': true, 'enforce-mfa': true, 'enable-sms-otp': true, ...smsFlags(vendor) });
  t.teardown(() => server.close());
  const phone = '+15550206666';
  await server.call('signup', { phone_number: phone, password: PASSWORD }, { protocol: 'rest' });
  const login = await server.call('login', { phone_number: phone, password: PASSWORD }, { protocol: 'rest' });
  t.is(login.body?.['should_show_mobile_otp_screen'], true);
  const loginCode = await nextCodeTo(vendor, phone);
  t.is((await server.call('reset_password', { otp: loginCode, phone_number: phone, password: 'a new password 123' }, { protocol: 'rest' })).error?.reason, 'invalid_otp');

  await server.call('forgot_password', { phone_number: phone }, { protocol: 'rest' });
  const resetCode = await nextCodeTo(vendor, phone, loginCode);
  const again = await server.call('login', { phone_number: phone, password: PASSWORD }, { protocol: 'rest' });
  const latest = await nextCodeTo(vendor, phone, resetCode);
  t.not(latest, undefined);
  // The login's challenge takes only its own code: the reset code (already replaced) never opens a session.
  t.is((await server.call('verify_otp', { phone_number: phone, otp: resetCode }, { protocol: 'rest', cookies: { mfa: mfaCookie(again) } })).error?.code, 'unauthenticated');
});
