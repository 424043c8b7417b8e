/**
 * Changing the email address under verification, end to end on the real
 * server with a real SMTP server on loopback: update_profile mails an
 * `update_email` link to the new address and keeps the old one as the login
 * until the link is used; verify_email switches the address (once), and an
 * address another account holds, or takes meanwhile, is refused without
 * changing anything. SQLite and PostgreSQL.
 */
import test from 'ava';
import { mailTo, startSmtp } from '../admin/smtp.ts';
import type { MainBackend } from '../helpers/main_databases.ts';
import { startTestServer } from '../helpers/server.ts';
import { needs } from '../helpers/needs.ts';

const PASSWORD = 'Correct horse 9 battery!';
const APP = 'https://app.example.com';

const tokenIn = (mail: string): string => {
  const m = /[?&]token=([A-Za-z0-9_-]+)/.exec(mail);
  if (m === null) throw new Error('no link in the mail');
  return m[1]!;
};

for (const backend of ['sqlite', 'postgres', 'dynamodb'] as MainBackend[]) {
  needs(test, ...(backend === 'postgres' ? (['postgres'] as const) : []))(`${backend}: a new email takes effect once confirmed from the new mailbox; the old one stays the login until then`, async (t) => {
    const smtp = await startSmtp();
    t.teardown(() => smtp.close());
    const server = await startTestServer(
      { 'smtp-host': '127.0.0.1', 'smtp-port': smtp.port, 'smtp-sender-email': 'noreply@example.com', 'allowed-origins': APP, 'enable-email-verification': true },
      { backend },
    );
    t.teardown(() => server.close());
    const headers = { origin: APP };
    const call = (op: string, input: Record<string, unknown>, extra: Record<string, string> = {}) => server.call(op, input, { protocol: 'rest', headers: { ...headers, ...extra } });

    // Ada signs up and verifies her first address.
    const old = `ada-${backend}@old.example.com`;
    await call('signup', { email: old, password: PASSWORD, confirm_password: PASSWORD });
    const verified = await call('verify_email', { token: tokenIn(await mailTo(smtp, old)) });
    const bearer = { authorization: `Bearer ${String(verified.body?.['access_token'])}` };
    // Bob holds another address.
    const bobs = `bob-${backend}@example.com`;
    await call('signup', { email: bobs, password: PASSWORD, confirm_password: PASSWORD });
    await call('verify_email', { token: tokenIn(await mailTo(smtp, bobs)) });

    const taken = await call('update_profile', { email: bobs, old_password: PASSWORD }, bearer);
    t.is(taken.error?.code, 'already_exists');
    t.is(taken.error?.message, 'user with given email already exists');

    const fresh = `ada-${backend}@new.example.com`;
    const changed = await call('update_profile', { email: fresh, old_password: PASSWORD, given_name: 'Ada' }, bearer);
    t.is(changed.error, undefined);
    t.regex(String(changed.body?.['message']), /once confirmed/);
    const mail = await mailTo(smtp, fresh);
    t.regex(mail, /Confirm your new email address|[Cc]onfirm/);

    // Until the link is used: the old address is the login, the new one is nobody's; other fields did change.
    const before = await call('profile', {}, bearer);
    t.is(before.body?.['email'], old);
    t.is(before.body?.['given_name'], 'Ada');
    t.truthy((await call('login', { email: old, password: PASSWORD })).body?.['access_token']);
    t.is((await call('login', { email: fresh, password: PASSWORD })).error?.code, 'unauthenticated');

    const token = tokenIn(mail);
    const confirmed = await call('verify_email', { token });
    t.is(confirmed.error, undefined);
    const user = confirmed.body?.['user'] as { email: string; email_verified: boolean };
    t.is(user.email, fresh);
    t.true(user.email_verified);
    t.truthy((await call('login', { email: fresh, password: PASSWORD })).body?.['access_token']);
    t.is((await call('login', { email: old, password: PASSWORD })).error?.code, 'unauthenticated');
    t.is((await call('verify_email', { token })).error?.code, 'unauthenticated', 'the link works once');
  });
}

test('an address taken by another account between the request and the confirmation is refused, and nothing changes', async (t) => {
  const smtp = await startSmtp();
  t.teardown(() => smtp.close());
  const server = await startTestServer({ 'smtp-host': '127.0.0.1', 'smtp-port': smtp.port, 'smtp-sender-email': 'noreply@example.com', 'allowed-origins': APP, 'enable-email-verification': true });
  t.teardown(() => server.close());
  const call = (op: string, input: Record<string, unknown>, extra: Record<string, string> = {}) => server.call(op, input, { protocol: 'rest', headers: { origin: APP, ...extra } });
  await call('signup', { email: 'carl@old.example.com', password: PASSWORD, confirm_password: PASSWORD });
  const carl = await call('verify_email', { token: tokenIn(await mailTo(smtp, 'carl@old.example.com')) });
  const bearer = { authorization: `Bearer ${String(carl.body?.['access_token'])}` };
  t.is((await call('update_profile', { email: 'wanted@example.com', old_password: PASSWORD }, bearer)).error, undefined);
  const link = tokenIn(await mailTo(smtp, 'wanted@example.com'));
  // Someone signs up with the address before Carl confirms it.
  t.is((await call('signup', { email: 'wanted@example.com', password: PASSWORD, confirm_password: PASSWORD })).error, undefined);
  const late = await call('verify_email', { token: link });
  t.is(late.error?.code, 'already_exists');
  t.is((await call('profile', {}, bearer)).body?.['email'], 'carl@old.example.com');
});
