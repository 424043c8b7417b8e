/**
 * Where one authentication step hands over to the next, in the identity
 * service with an injected clock: a pending MFA challenge after the admin
 * revokes access or after every session of the user ended (password reset),
 * email links issued before access was revoked, the amr claim of a magic-link login completed with a second
 * factor, and the amr of tokens that an OAuth grant issues from a session
 * opened with a second factor. SQLite always; PostgreSQL and MySQL when
 * configured.
 */
import test from 'ava';
import { createHash, randomBytes } from 'node:crypto';
import { generate } from 'otplib';
import { mainBackends } from '../helpers/main_databases.ts';
import { OAuthServer, type AuthResult, type LinkDelivery, type OtpDelivery, type UserRecord } from '../../auth/index.ts';
import { CLIENT_ID, ISSUER, STRONG_PASSWORD, errorOf, makeService, manualClock, userRows, type ServiceFixture } from './fixtures.ts';

/** A delivery port that counts the codes it was given and keeps the last per address. */
function inbox(): { delivery: OtpDelivery; last: Map<string, string>; sent: () => number } {
  const last = new Map<string, string>();
  let n = 0;
  const keep = (to: string, code: string): void => {
    n++;
    last.set(to, code);
  };
  return {
    last,
    sent: () => n,
    delivery: {
      email: async (user: UserRecord, code: string) => keep(user.email ?? '', code),
      sms: async (phone: string, code: string) => keep(phone, code),
    },
  };
}

const mfaCookie = (r: AuthResult): string => {
  if (r.mfaSession === undefined) throw new Error('no MFA challenge');
  return r.mfaSession.token;
};

async function amrOf(f: ServiceFixture, idToken: string | undefined): Promise<unknown> {
  return (await f.auth.validateJwtToken({ token_type: 'id_token', token: idToken ?? '' })).claims['amr'];
}

for (const backend of mainBackends()) {
  test(`revoke_access ends a pending email-OTP challenge: resend_otp sends no code and verify_otp opens no session (${backend})`, async (t) => {
    const clock = manualClock();
    const box = inbox();
    const f = await makeService({ enableMfa: true, enforceMfa: true, enableEmailOtp: true, now: clock.now }, { backend, otpDelivery: box.delivery });
    try {
      const email = 'revoked-otp@example.com';
      const userId = (await f.auth.signup({ email, password: STRONG_PASSWORD })).response.user!.id;
      const login = await f.auth.login({ email, password: STRONG_PASSWORD });
      const code = box.last.get(email)!;
      const before = box.sent();
      await f.auth.revokeAccess(userId);
      t.is((await errorOf(f.auth.resendOtp({ email }, { mfaCookie: mfaCookie(login) }))).reason, 'invalid_mfa_session');
      t.is(box.sent(), before, 'no code goes to a revoked user');
      t.is((await errorOf(f.auth.verifyOtp({ email, otp: code }, { mfaCookie: mfaCookie(login) }))).reason, 'invalid_mfa_session');
      const live = await Promise.all((await f.store.members(`user_sessions:${userId}`)).map((sid) => f.auth.sessions.get(sid)));
      t.deepEqual(live.filter(Boolean), [], 'no session was opened');
    } finally {
      await f.close();
    }
  });

  test(`a pending challenge dies when every session of its user ends: password reset, revoke then re-enable (${backend})`, async (t) => {
    const clock = manualClock();
    const box = inbox();
    const f = await makeService({ enableMfa: true, enforceMfa: true, enableEmailOtp: true, now: clock.now }, { backend, otpDelivery: box.delivery });
    try {
      const email = 'ended-otp@example.com';
      const userId = (await f.auth.signup({ email, password: STRONG_PASSWORD })).response.user!.id;
      const NEW_PASSWORD = 'another horse battery staple';

      // A challenge opened with the old password does not survive the reset.
      const before = await f.auth.login({ email, password: STRONG_PASSWORD });
      clock.advance(1000);
      await f.auth.setPassword(userId, NEW_PASSWORD);
      clock.advance(1000);
      t.is((await errorOf(f.auth.resendOtp({ email }, { mfaCookie: mfaCookie(before) }))).reason, 'invalid_mfa_session');
      t.is((await errorOf(f.auth.verifyOtp({ email, otp: box.last.get(email)! }, { mfaCookie: mfaCookie(before) }))).reason, 'invalid_mfa_session');

      // Nor does one opened before access was revoked, once access is enabled again.
      const revoked = await f.auth.login({ email, password: NEW_PASSWORD });
      clock.advance(1000);
      await f.auth.revokeAccess(userId);
      await f.auth.enableAccess(userId);
      clock.advance(1000);
      t.is((await errorOf(f.auth.verifyOtp({ email, otp: box.last.get(email)! }, { mfaCookie: mfaCookie(revoked) }))).reason, 'invalid_mfa_session');

      // A challenge opened afterwards completes.
      const after = await f.auth.login({ email, password: NEW_PASSWORD });
      const ok = await f.auth.verifyOtp({ email, otp: box.last.get(email)! }, { mfaCookie: mfaCookie(after) });
      t.truthy(ok.response.access_token);
    } finally {
      await f.close();
    }
  });

  test(`revoke_access ends a pending TOTP enrolment: a valid code neither logs in nor confirms the enrolment (${backend})`, async (t) => {
    const clock = manualClock();
    const f = await makeService({ enableMfa: true, enforceMfa: true, enableTotpLogin: true, now: clock.now }, { backend });
    try {
      const email = 'revoked-totp@example.com';
      const userId = (await f.auth.signup({ email, password: STRONG_PASSWORD })).response.user!.id;
      const login = await f.auth.login({ email, password: STRONG_PASSWORD });
      const secret = login.response.authenticator_secret!;
      await f.auth.revokeAccess(userId);
      const code = await generate({ secret, epoch: Math.floor(clock.now() / 1000) });
      t.is((await errorOf(f.auth.verifyOtp({ email, otp: code, is_totp: true }, { mfaCookie: mfaCookie(login) }))).reason, 'invalid_mfa_session');
      const rows = await userRows(f, 'authenticators', userId);
      t.is(rows.length, 1);
      t.is(rows[0]?.verified_at, null, 'the enrolment stays unconfirmed');
      t.is(rows[0]?.last_time_step, null, 'the code was not spent');
    } finally {
      await f.close();
    }
  });

  test(`a magic-link login completed with an email code: amr names the link, not a password (${backend})`, async (t) => {
    const clock = manualClock();
    const box = inbox();
    const f = await makeService(
      { enableMfa: true, enforceMfa: true, enableEmailOtp: true, enableMagicLinkLogin: true, now: clock.now },
      { backend, otpDelivery: box.delivery },
    );
    try {
      const email = 'magic-mfa@example.com';
      const links: string[] = [];
      const delivery = (): LinkDelivery => ({ base: 'https://app.example.com/link', send: async (_e, _u, url) => void links.push(url), onError: (err) => t.fail(String(err)) });
      f.auth.email.magicLinkLogin({ email }, delivery);
      await f.auth.email.settled();
      const token = new URL(links[0]!).searchParams.get('token')!;
      const challenged = await f.auth.email.verifyEmail({ token });
      t.true(challenged.mfaChallenged);
      const done = await f.auth.verifyOtp({ email, otp: box.last.get(email)! }, { mfaCookie: mfaCookie(challenged.result) });
      t.deepEqual(await amrOf(f, done.response.id_token), ['magic_link_login', 'otp', 'mfa']);
      // A password login of an MFA user still says pwd.
      await f.auth.users.update(done.record!.id, { password: await f.auth.passwords.hash(STRONG_PASSWORD) });
      const login = await f.auth.login({ email, password: STRONG_PASSWORD });
      const pwd = await f.auth.verifyOtp({ email, otp: box.last.get(email)! }, { mfaCookie: mfaCookie(login) });
      t.deepEqual(await amrOf(f, pwd.response.id_token), ['pwd', 'otp', 'mfa']);
    } finally {
      await f.close();
    }
  });

  test(`a magic link or sign-up link issued before revoke_access does not log in once access is enabled again (${backend})`, async (t) => {
    const clock = manualClock();
    const f = await makeService({ enableMagicLinkLogin: true, enableEmailVerification: true, now: clock.now }, { backend });
    try {
      const links: string[] = [];
      const delivery = (): LinkDelivery => ({ base: 'https://app.example.com/link', send: async (_e, _u, url) => void links.push(url), onError: (err) => t.fail(String(err)) });
      const tokenOf = (url: string | undefined): string => new URL(url ?? 'x:').searchParams.get('token') ?? '';
      const email = 'stale-link@example.com';
      await f.auth.signup({ email, password: STRONG_PASSWORD });
      const user = (await f.auth.users.findByEmail(email))!;
      await f.auth.email.sendSignupVerification(user, delivery());
      const signupLink = tokenOf(links.at(-1));
      f.auth.email.magicLinkLogin({ email }, delivery);
      await f.auth.email.settled();
      const magicLink = tokenOf(links.at(-1));
      clock.advance(1000);
      await f.auth.revokeAccess(user.id);
      await f.auth.enableAccess(user.id);
      clock.advance(1000);
      t.is((await errorOf(f.auth.email.verifyEmail({ token: magicLink }))).reason, 'invalid_token');
      t.is((await errorOf(f.auth.email.verifyEmail({ token: signupLink }))).reason, 'invalid_token');
      // A link asked for afterwards works.
      f.auth.email.magicLinkLogin({ email }, delivery);
      await f.auth.email.settled();
      const fresh = await f.auth.email.verifyEmail({ token: tokenOf(links.at(-1)) });
      t.truthy(fresh.result.response.access_token);
    } finally {
      await f.close();
    }
  });

  test(`OAuth code and implicit grants from a session opened with a second factor keep its amr (${backend})`, async (t) => {
    const clock = manualClock();
    const box = inbox();
    const f = await makeService({ enableMfa: true, enforceMfa: true, enableEmailOtp: true, now: clock.now }, { backend, otpDelivery: box.delivery });
    try {
      const email = 'oauth-mfa@example.com';
      await f.auth.signup({ email, password: STRONG_PASSWORD });
      const login = await f.auth.login({ email, password: STRONG_PASSWORD });
      const done = await f.auth.verifyOtp({ email, otp: box.last.get(email)! }, { mfaCookie: mfaCookie(login) });
      const cookie = done.session!.token;
      const oauth = new OAuthServer({ auth: f.auth, store: f.store, clientSecret: 'secret', checkRedirectUri: (u) => new URL(u) });
      const callback = `${ISSUER}/callback`;
      const verifier = randomBytes(32).toString('base64url');
      const challenge = createHash('sha256').update(verifier).digest('base64url');
      const out = await oauth.authorize({ response_type: 'code', client_id: CLIENT_ID, redirect_uri: callback, scope: 'openid', code_challenge: challenge, code_challenge_method: 'S256' }, cookie);
      if (out.kind !== 'redirect') throw new Error(`authorize answered ${out.kind}`);
      const code = new URL(out.location).searchParams.get('code')!;
      const tokens = await oauth.token({ grant_type: 'authorization_code', code, redirect_uri: callback, code_verifier: verifier, client_id: CLIENT_ID }, undefined);
      t.deepEqual(await amrOf(f, tokens.id_token), ['pwd', 'otp', 'mfa']);
      const implicit = await oauth.authorize({ response_type: 'id_token', client_id: CLIENT_ID, redirect_uri: callback, nonce: 'n' }, cookie);
      if (implicit.kind !== 'redirect') throw new Error(`authorize answered ${implicit.kind}`);
      t.deepEqual(await amrOf(f, new URLSearchParams(new URL(implicit.location).hash.slice(1)).get('id_token') ?? ''), ['pwd', 'otp', 'mfa']);
    } finally {
      await f.close();
    }
  });
}
