/**
 * deactivate_account with re-authentication, on every protocol: with a
 * wrong password nothing changes (unauthenticated invalid_credentials, the
 * session and the login still work); with the current one the account is
 * deactivated; without one it behaves as the spec's deactivate_account
 * (Authorizer clients send none); an account without a password cannot
 * prove one.
 */
import test from 'ava';
import { PROTOCOLS, startTestServer, type TestServer } from '../../helpers/server.ts';

const PASSWORD = 'correct horse battery staple';
let server: TestServer;
test.before(async () => {
  server = await startTestServer({ 'enable-email-verification': false });
});
test.after.always(async () => {
  await server?.close();
});

async function signedUp(email: string): Promise<string> {
  const r = await server.call('signup', { email, password: PASSWORD }, { protocol: 'rest' });
  if (r.body === undefined) throw new Error(`signup failed: ${JSON.stringify(r.error)}`);
  return r.body['access_token'] as string;
}

for (const protocol of PROTOCOLS) {
  test(`${protocol}: a wrong password deactivates nothing; the current one deactivates the account`, async (t) => {
    const email = `deactivate-${protocol}@example.com`;
    const token = await signedUp(email);
    const as = { protocol, headers: { authorization: `Bearer ${token}` } };
    const wrong = await server.call('deactivate_account', { password: 'not the password' }, as);
    t.is(wrong.error?.code, 'unauthenticated');
    t.is(wrong.error?.reason, 'invalid_credentials');
    t.is(wrong.error?.message, 'invalid credentials');
    t.is((await server.call('profile', {}, as)).error, undefined, 'the session goes on');
    t.is((await server.call('login', { email, password: PASSWORD }, { protocol: 'rest' })).error, undefined, 'the account is active');
    const tooLong = await server.call('deactivate_account', { password: 'x'.repeat(1025) }, as);
    t.is(tooLong.error?.code, 'invalid_argument');
    t.is((await server.call('deactivate_account', { password: PASSWORD }, as)).error, undefined);
    t.is((await server.call('profile', {}, as)).error?.code, 'unauthenticated');
    t.is((await server.call('login', { email, password: PASSWORD }, { protocol: 'rest' })).error?.code, 'unauthenticated');
  });

  test(`${protocol}: without a password deactivate_account works as before`, async (t) => {
    const token = await signedUp(`deactivate-plain-${protocol}@example.com`);
    const as = { protocol, headers: { authorization: `Bearer ${token}` } };
    t.is((await server.call('deactivate_account', {}, as)).error, undefined);
    t.is((await server.call('profile', {}, as)).error?.code, 'unauthenticated');
  });
}
