/**
 * The email-link flows of the identity service (auth/email_flows.ts) with an
 * injected clock: expired links, tampered tokens (property), resends, and the
 * cases where no mail may go out. Mails are collected by the delivery port the
 * transports otherwise fill with the template renderer and the mail queue
 * (that path runs end to end in email_flows.test.ts).
 */
import test from 'ava';
import fc from 'fast-check';
import { LatchkeyError } from '../../engine/errors.ts';
import type { LinkDelivery, UserRecord } from '../../auth/index.ts';
import { STRONG_PASSWORD, makeService, manualClock } from './fixtures.ts';

interface Sent {
  event: string;
  email: string | null;
  url: string;
}

function collector(base = 'https://app.example.com/link'): { sent: Sent[]; delivery: () => LinkDelivery; errors: unknown[] } {
  const sent: Sent[] = [];
  const errors: unknown[] = [];
  return {
    sent,
    errors,
    delivery: () => ({
      base,
      send: async (event, user: UserRecord, url) => {
        sent.push({ event, email: user.email, url });
      },
      onError: (err) => errors.push(err),
    }),
  };
}

const tokenOf = (url: string): string => new URL(url).searchParams.get('token') ?? '';

async function errorOf(p: Promise<unknown>): Promise<LatchkeyError> {
  try {
    await p;
  } catch (err) {
    if (err instanceof LatchkeyError) return err;
    throw err;
  }
  throw new Error('expected an error');
}

test('A4: a magic link used after 30 minutes answers expired_token, its request is gone and the user unchanged', async (t) => {
  const clock = manualClock();
  const f = await makeService({ now: clock.now, enableMagicLinkLogin: true });
  try {
    const mail = collector();
    f.auth.email.magicLinkLogin({ email: 'late@example.com' }, mail.delivery);
    await f.auth.email.settled();
    const token = tokenOf(mail.sent[0]!.url);
    const before = await f.auth.users.findByEmail('late@example.com');
    clock.advance(30 * 60 * 1000 + 1000);
    const err = await errorOf(f.auth.email.verifyEmail({ token }));
    t.is(err.code, 'unauthenticated');
    t.is(err.reason, 'expired_token');
    t.is((await f.auth.verification.listVerificationRequests({ offset: 0, limit: 10 })).total, 0);
    t.deepEqual(await f.auth.users.findByEmail('late@example.com'), before);
    t.is((await errorOf(f.auth.email.verifyEmail({ token }))).reason, 'invalid_token', 'the row is gone');
  } finally {
    await f.close();
  }
});

test('a tampered verification token is refused with invalid_token (property)', async (t) => {
  const f = await makeService({ enableEmailVerification: true });
  try {
    const signup = await f.auth.signup({ email: 'tamper@example.com', password: STRONG_PASSWORD });
    const user = (await f.auth.users.findById(signup.response.user!.id))!;
    const mail = collector();
    await f.auth.email.sendSignupVerification(user, mail.delivery());
    const token = tokenOf(mail.sent[0]!.url);
    await fc.assert(
      fc.asyncProperty(fc.nat({ max: token.length - 1 }), fc.constantFrom(...'ABCabc012-_'), async (i, c) => {
        fc.pre(token[i] !== c);
        const tampered = token.slice(0, i) + c + token.slice(i + 1);
        const err = await errorOf(f.auth.email.verifyEmail({ token: tampered }));
        return err.code === 'unauthenticated' && err.reason === 'invalid_token';
      }),
      { numRuns: 25 },
    );
    t.is((await f.auth.email.verifyEmail({ token })).result.response.message, 'Email verified successfully.', 'the real token still works');
  } finally {
    await f.close();
  }
});

test('resending a magic link keeps the roles and scope asked for; the old link dies', async (t) => {
  const f = await makeService({ enableMagicLinkLogin: true });
  try {
    const mail = collector();
    f.auth.email.magicLinkLogin({ email: 'editor@example.com', roles: ['editor'], scope: ['openid'] }, mail.delivery);
    await f.auth.email.settled();
    const user = await f.auth.users.findByEmail('editor@example.com');
    t.deepEqual(user?.roles, ['editor'], 'a new user gets the requested (allowed, unprotected) roles');
    f.auth.email.resendVerifyEmail({ email: 'editor@example.com', identifier: 'magic_link_login' }, mail.delivery);
    await f.auth.email.settled();
    t.is(mail.sent.length, 2);
    t.is((await errorOf(f.auth.email.verifyEmail({ token: tokenOf(mail.sent[0]!.url) }))).reason, 'invalid_token');
    const out = await f.auth.email.verifyEmail({ token: tokenOf(mail.sent[1]!.url) });
    t.is(out.identifier, 'magic_link_login');
    t.true(out.firstVerification);
    const claims = await f.auth.tokens.verify(out.result.response.access_token!, 'access_token');
    t.deepEqual(claims['roles'], ['editor']);
    t.deepEqual(claims['scope'], ['openid']);
  } finally {
    await f.close();
  }
});

test('no mail goes out for unknown, deactivated or (sign-up disabled) new accounts, nor on resend for verified or passwordless ones', async (t) => {
  const f = await makeService({ enableMagicLinkLogin: true, enableEmailVerification: true, enableSignup: false });
  try {
    const mail = collector();
    f.auth.email.magicLinkLogin({ email: 'new@example.com' }, mail.delivery);
    // The answer is built before any account lookup: a plain object, not a promise of the lookup's outcome.
    const answer: unknown = f.auth.email.forgotPassword({ email: 'nobody@example.com' }, mail.delivery);
    t.false(answer instanceof Promise);
    t.deepEqual(answer, { message: 'Please check your inbox! We have sent a password reset link.' });
    f.auth.email.resendVerifyEmail({ email: 'nobody@example.com', identifier: 'basic_auth_signup' }, mail.delivery);
    await f.auth.email.settled();
    t.deepEqual(mail.sent, []);
    t.is(await f.auth.users.findByEmail('new@example.com'), undefined, 'sign-up disabled: no user is created');

    const gone = await f.auth.users.create({ email: 'gone@example.com', roles: ['user'], signup_methods: 'basic_auth', deactivated_at: 1 });
    const verified = await f.auth.users.create({ email: 'ok@example.com', roles: ['user'], signup_methods: 'basic_auth', email_verified_at: 1 });
    f.auth.email.forgotPassword({ email: gone.email! }, mail.delivery);
    f.auth.email.magicLinkLogin({ email: gone.email! }, mail.delivery);
    f.auth.email.resendVerifyEmail({ email: verified.email!, identifier: 'basic_auth_signup' }, mail.delivery);
    const invited = await f.auth.users.create({ email: 'invited@example.com', roles: ['user'], signup_methods: 'basic_auth' });
    f.auth.email.resendVerifyEmail({ email: invited.email!, identifier: 'basic_auth_signup' }, mail.delivery);
    await f.auth.email.settled();
    t.deepEqual(mail.sent, []);
    t.deepEqual(mail.errors, []);

    f.auth.email.forgotPassword({ email: verified.email! }, mail.delivery);
    await f.auth.email.settled();
    t.deepEqual(mail.sent.map((m) => [m.event, m.email]), [['forgot_password', 'ok@example.com']]);
    t.is((await errorOf(f.auth.email.verifyEmail({ token: tokenOf(mail.sent[0]!.url) }))).reason, 'invalid_token', 'a reset token is not an email-verification token');
  } finally {
    await f.close();
  }
});

test('an address gets at most 5 unauthenticated link mails per 15 minutes, across forgot_password, magic links and resends; the answers do not change', async (t) => {
  const f = await makeService({ enableMagicLinkLogin: true });
  try {
    const signup = await f.auth.signup({ email: 'bombed@example.com', password: STRONG_PASSWORD });
    t.truthy(signup.response.user);
    const mail = collector();
    const answers: unknown[] = [];
    for (let i = 0; i < 4; i++) answers.push(f.auth.email.forgotPassword({ email: 'bombed@example.com' }, mail.delivery));
    answers.push(f.auth.email.magicLinkLogin({ email: 'bombed@example.com' }, mail.delivery));
    await f.auth.email.settled();
    t.is(mail.sent.length, 5, 'five mails go out');
    t.is(mail.errors.length, 0);
    answers.push(f.auth.email.forgotPassword({ email: 'bombed@example.com' }, mail.delivery));
    answers.push(f.auth.email.magicLinkLogin({ email: 'bombed@example.com' }, mail.delivery));
    await f.auth.email.settled();
    t.is(mail.sent.length, 5, 'the sixth and seventh are not sent');
    t.is(mail.errors.length, 2);
    for (const err of mail.errors) t.is((err as LatchkeyError).reason, 'too_many_link_mails');
    // The answers are the ones any address gets.
    t.deepEqual(answers[5], answers[0]);
    t.deepEqual(answers[6], answers[4]);
    // Another address has its own budget.
    f.auth.email.forgotPassword({ email: 'other@example.com' }, mail.delivery);
    await f.auth.email.settled();
    t.is(mail.errors.length, 2);
  } finally {
    await f.close();
  }
});
