import test from 'ava';
import { mainBackends } from '../helpers/main_databases.ts';
import { INVALID_CREDENTIALS_MESSAGE, USER_EXISTS_MESSAGE } from '../../auth/index.ts';
import { DirectTupleEngine, STRONG_PASSWORD, errorOf, makeService, manualClock } from './fixtures.ts';

test('signup opens a session: tokens, user and a cookie token that authenticate the caller', async (t) => {
  const f = await makeService();
  try {
    const r = await f.auth.signup({ email: ' Alice@Example.com ', password: STRONG_PASSWORD, given_name: 'Alice' });
    t.truthy(r.response.access_token);
    t.truthy(r.response.id_token);
    t.truthy(r.response.refresh_token);
    t.is(r.response.expires_in, 1800);
    t.is(r.response.user?.email, 'alice@example.com');
    t.deepEqual(r.response.user?.roles, ['user']);
    t.truthy(r.session?.token);
    const viaBearer = await f.auth.authenticate({ bearer: r.response.access_token });
    const viaCookie = await f.auth.authenticate({ cookies: { cookie_session: r.session!.token } });
    t.is(viaBearer?.userId, r.response.user?.id);
    t.is(viaBearer?.subject, `user:${r.response.user?.id}`);
    t.is(viaCookie?.userId, r.response.user?.id);
    const profile = await f.auth.profile({ principal: viaBearer! });
    t.is(profile.given_name, 'Alice');
    t.false('password' in profile);
  } finally {
    await f.close();
  }
});

test('signup honours --enable-signup, basic-auth switches, roles, default and protected roles', async (t) => {
  const f = await makeService({ enableSignup: false });
  try {
    t.is((await errorOf(f.auth.signup({ email: 'a@example.com', password: STRONG_PASSWORD }))).reason, 'signup_disabled');
  } finally {
    await f.close();
  }
  const g = await makeService({ enableBasicAuthentication: false, enableMobileBasicAuthentication: true });
  try {
    t.is((await errorOf(g.auth.signup({ email: 'a@example.com', password: STRONG_PASSWORD }))).reason, 'basic_authentication_disabled');
    const phone = await g.auth.signup({ phone_number: '+15550001111', password: STRONG_PASSWORD });
    t.is(phone.response.user?.phone_number, '+15550001111');
    t.is(phone.response.user?.email, null);
    t.is((await errorOf(g.auth.signup({ phone_number: '+1 555 000 1111', password: STRONG_PASSWORD }))).message, USER_EXISTS_MESSAGE);
  } finally {
    await g.close();
  }
  const h = await makeService({ enableMobileBasicAuthentication: false });
  try {
    t.is((await errorOf(h.auth.signup({ phone_number: '+15550001111', password: STRONG_PASSWORD }))).reason, 'mobile_basic_authentication_disabled');
    t.is((await errorOf(h.auth.signup({ email: 'p@example.com', password: STRONG_PASSWORD, roles: ['admin'] }))).reason, 'protected_role');
    t.is((await errorOf(h.auth.signup({ email: 'p@example.com', password: STRONG_PASSWORD, roles: ['owner'] }))).reason, 'invalid_roles');
    const ok = await h.auth.signup({ email: 'p@example.com', password: STRONG_PASSWORD, roles: ['editor'] });
    t.deepEqual(ok.response.user?.roles, ['editor']);
    t.is((await errorOf(h.auth.signup({ email: 'q@example.com', password: STRONG_PASSWORD, confirm_password: 'other thing' }))).reason, 'password_mismatch');
    t.is((await errorOf(h.auth.signup({ email: 'not-an-email', password: STRONG_PASSWORD }))).reason, 'invalid_email');
  } finally {
    await h.close();
  }
});

test('A5: password policy — <8 refused, 8 and 64 accepted, 200 refused, no truncation past 72 bytes, common passwords refused', async (t) => {
  const f = await makeService();
  try {
    const code = async (email: string, password: string) => (await errorOf(f.auth.signup({ email, password }))).reason;
    t.is(await code('a7@example.com', 'Abcdef7'), 'invalid_password');
    t.truthy((await f.auth.signup({ email: 'a8@example.com', password: 'Abcdefg8' })).response.access_token);
    t.truthy((await f.auth.signup({ email: 'a64@example.com', password: 'x'.repeat(63) + 'Y' })).response.access_token);
    t.is(await code('a200@example.com', 'z'.repeat(200)), 'invalid_password');
    t.is(await code('common@example.com', 'password123'), 'invalid_password');
    t.is(await code('common2@example.com', 'Qwerty123'), 'invalid_password');
    // A 72-byte password is the longest accepted; 73 bytes is refused rather than silently truncated.
    const p72 = 'k'.repeat(71) + 'A';
    await f.auth.signup({ email: 'long@example.com', password: p72 });
    t.is(await code('long2@example.com', p72 + 'B'), 'invalid_password');
    // Multi-byte characters count in bytes: 25 × 3-byte chars = 75 bytes.
    t.is(await code('utf@example.com', '€'.repeat(25)), 'invalid_password');
    // Logging in with the stored 72-byte prefix plus a different 73rd byte must fail.
    const err = await errorOf(f.auth.login({ email: 'long@example.com', password: p72 + 'Z' }));
    t.is(err.code, 'unauthenticated');
    t.is(err.message, INVALID_CREDENTIALS_MESSAGE);
    t.truthy((await f.auth.login({ email: 'long@example.com', password: p72 })).response.access_token);
  } finally {
    await f.close();
  }
});

test('weak-password mode still refuses over-long passwords but allows short common ones of 6+ characters', async (t) => {
  const f = await makeService({ enableStrongPassword: false });
  try {
    t.truthy((await f.auth.signup({ email: 'w@example.com', password: 'abcdef' })).response.access_token);
    t.is((await errorOf(f.auth.signup({ email: 'w2@example.com', password: 'abcde' }))).reason, 'invalid_password');
    t.is((await errorOf(f.auth.signup({ email: 'w3@example.com', password: 'y'.repeat(73) }))).reason, 'invalid_password');
  } finally {
    await f.close();
  }
});

for (const backend of mainBackends()) {
  test(`E1: 20 parallel sign-ups with one email (case and whitespace variants) make exactly one user, the rest already_exists (${backend})`, async (t) => {
    const f = await makeService({}, { backend });
    try {
      const emails = Array.from({ length: 20 }, (_, i) => [' dup@example.com', 'DUP@example.com ', 'Dup@Example.Com', 'dup@example.com'][i % 4]!);
      const results = await Promise.allSettled(emails.map((email) => f.auth.signup({ email, password: STRONG_PASSWORD })));
      const ok = results.filter((r) => r.status === 'fulfilled');
      const bad = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
      t.is(ok.length, 1);
      t.is(bad.length, 19);
      for (const b of bad) {
        t.is(b.reason.code, 'already_exists');
        t.is(b.reason.message, USER_EXISTS_MESSAGE);
      }
      t.is(await f.auth.users.countByEmail('dup@example.com'), 1);
    } finally {
      await f.close();
    }
  });
}

test.serial('A1: unknown email, wrong password and unverified account give the same error and similar timing', async (t) => {
  const f = await makeService({ bcryptCost: 10, enableEmailVerification: true, maxLoginAttempts: 1000 });
  try {
    // A verified user (verification flag set directly), and an unverified one.
    const known = await f.auth.signup({ email: 'known@example.com', password: STRONG_PASSWORD });
    await f.auth.users.update(known.response.user!.id, { email_verified_at: 1 });
    await f.auth.signup({ email: 'unverified@example.com', password: STRONG_PASSWORD });
    const cases = {
      unknown: () => f.auth.login({ email: 'nobody@example.com', password: STRONG_PASSWORD }),
      wrong: () => f.auth.login({ email: 'known@example.com', password: 'wrong password here' }),
      unverified: () => f.auth.login({ email: 'unverified@example.com', password: STRONG_PASSWORD }),
    };
    const bodies = new Set<string>();
    // Machine noise only ever adds time, so each case is summarised by its fastest run, and a real
    // difference (e.g. a miss path without the dummy hash: ~0 ms against ~50 ms) fails every attempt;
    // a noisy neighbour may still spoil one, so up to three measurements are taken and the test
    // passes when one of them shows the fastest runs within 20% of each other.
    const attempts: Array<Record<string, number>> = [];
    for (let attempt = 0; attempt < 3; attempt++) {
      const times: Record<string, number[]> = { unknown: [], wrong: [], unverified: [] };
      // Interleaved rounds, run serially, so that machine noise hits every case alike.
      for (let round = 0; round < 11; round++) {
        for (const [name, run] of Object.entries(cases)) {
          const start = process.hrtime.bigint();
          const err = await errorOf(run());
          times[name]!.push(Number(process.hrtime.bigint() - start) / 1e6);
          bodies.add(JSON.stringify({ code: err.code, reason: err.reason, message: err.message }));
        }
      }
      const m = Object.fromEntries(Object.entries(times).map(([k, v]) => [k, Math.min(...v)]));
      attempts.push(m);
      const max = Math.max(...Object.values(m));
      const min = Math.min(...Object.values(m));
      if ((max - min) / max < 0.2) break;
    }
    t.is(bodies.size, 1);
    t.deepEqual(JSON.parse([...bodies][0]!), { code: 'unauthenticated', reason: 'invalid_credentials', message: INVALID_CREDENTIALS_MESSAGE });
    const last = attempts[attempts.length - 1]!;
    const spread = (Math.max(...Object.values(last)) - Math.min(...Object.values(last))) / Math.max(...Object.values(last));
    t.true(spread < 0.2, `fastest runs differ by more than 20% in every attempt: ${JSON.stringify(attempts)}`);
  } finally {
    await f.close();
  }
});

test('A2: five wrong passwords, then the sixth and the correct one are locked out with retry_after; after the window login works', async (t) => {
  const clock = manualClock();
  const f = await makeService({ now: clock.now });
  try {
    await f.auth.signup({ email: 'lock@example.com', password: STRONG_PASSWORD });
    for (let i = 0; i < 5; i++) t.is((await errorOf(f.auth.login({ email: 'lock@example.com', password: 'nope nope nope' }))).reason, 'invalid_credentials');
    const sixth = await errorOf(f.auth.login({ email: 'lock@example.com', password: 'nope nope nope' }));
    t.is(sixth.code, 'resource_exhausted');
    t.is(sixth.reason, 'too_many_attempts');
    t.true(Number(sixth.details?.['retry_after_seconds']) > 0);
    const correct = await errorOf(f.auth.login({ email: 'lock@example.com', password: STRONG_PASSWORD }));
    t.is(correct.reason, 'too_many_attempts');
    clock.advance(901_000);
    t.truthy((await f.auth.login({ email: 'lock@example.com', password: STRONG_PASSWORD })).response.access_token);
  } finally {
    await f.close();
  }
});

test('A3-style: 30 concurrent wrong passwords are compared at most 5 times (the budget is reserved before the compare)', async (t) => {
  const f = await makeService();
  try {
    await f.auth.signup({ email: 'burst@example.com', password: STRONG_PASSWORD });
    const results = await Promise.all(Array.from({ length: 30 }, () => errorOf(f.auth.login({ email: 'burst@example.com', password: 'guess guess guess' }))));
    t.is(results.filter((r) => r.reason === 'invalid_credentials').length, 5);
    t.is(results.filter((r) => r.reason === 'too_many_attempts').length, 25);
  } finally {
    await f.close();
  }
});

test('login by phone, with roles subset and MFA challenge flags instead of tokens', async (t) => {
  const f = await makeService({ enableMfa: true, enableTotpLogin: true });
  try {
    await f.auth.signup({ phone_number: '+4915112345678', password: STRONG_PASSWORD, roles: ['user', 'editor'] });
    const r = await f.auth.login({ phone_number: '+49 151 1234 5678', password: STRONG_PASSWORD, roles: ['editor'] });
    t.truthy(r.response.access_token);
    const principal = await f.auth.authenticate({ bearer: r.response.access_token });
    t.deepEqual(principal?.roles, ['editor']);
    t.is((await errorOf(f.auth.login({ phone_number: '+4915112345678', password: STRONG_PASSWORD, roles: ['admin'] }))).code, 'permission_denied');
    await f.auth.users.update(principal!.userId, { is_multi_factor_auth_enabled: true });
    const mfa = await f.auth.login({ phone_number: '+4915112345678', password: STRONG_PASSWORD });
    t.true(mfa.response.should_show_totp_screen);
    t.is(mfa.response.access_token, undefined);
    t.is(mfa.session, undefined);
  } finally {
    await f.close();
  }
});

test('B4: logging in with a pre-existing session cookie issues a new session and kills the old one', async (t) => {
  const f = await makeService();
  try {
    const first = await f.auth.signup({ email: 'fix@example.com', password: STRONG_PASSWORD });
    const oldCookie = first.session!.token;
    const second = await f.auth.login({ email: 'fix@example.com', password: STRONG_PASSWORD }, { sessionCookie: oldCookie });
    t.not(second.session!.token, oldCookie);
    t.is((await errorOf(f.auth.authenticate({ cookies: { cookie_session: oldCookie } }))).code, 'unauthenticated');
    t.is((await errorOf(f.auth.authenticate({ bearer: first.response.access_token }))).code, 'unauthenticated');
    t.truthy(await f.auth.authenticate({ cookies: { cookie_session_domain: second.session!.token } }));
  } finally {
    await f.close();
  }
});

test('session refreshes from the cookie: the cookie rotates, new tokens work, the old cookie stops working', async (t) => {
  const f = await makeService();
  try {
    const s = await f.auth.signup({ email: 'sess@example.com', password: STRONG_PASSWORD });
    const r = await f.auth.session({}, { sessionCookie: s.session!.token });
    t.truthy(r.response.access_token);
    t.not(r.session!.token, s.session!.token);
    t.is(await f.auth.sessions.fromCookie(s.session!.token), undefined);
    t.truthy(await f.auth.authenticate({ bearer: r.response.access_token }));
    // The earlier refresh token was superseded by the session refresh.
    t.is((await errorOf(f.auth.validateJwtToken({ token_type: 'refresh_token', token: s.response.refresh_token! }))).code, 'unauthenticated');
    t.is((await errorOf(f.auth.session({}, {}))).code, 'unauthenticated');
  } finally {
    await f.close();
  }
});

test('B2: refresh rotation — RT1 gives RT2; RT1 replayed within the grace is refused without harm; after the grace the whole family dies', async (t) => {
  const clock = manualClock();
  const f = await makeService({ now: clock.now });
  try {
    const s = await f.auth.signup({ email: 'rt@example.com', password: STRONG_PASSWORD });
    const rt1 = s.response.refresh_token!;
    const r2 = await f.auth.refresh(rt1);
    const rt2 = r2.refresh_token!;
    t.not(rt2, rt1);
    clock.advance(5_000);
    t.is((await errorOf(f.auth.refresh(rt1))).reason, 'refresh_token_reused');
    t.truthy((await f.auth.validateJwtToken({ token_type: 'refresh_token', token: rt2 })).is_valid);
    clock.advance(6_000);
    t.is((await errorOf(f.auth.refresh(rt1))).reason, 'refresh_token_reused');
    // RT2, its access token and the session are gone.
    t.is((await errorOf(f.auth.refresh(rt2))).code, 'unauthenticated');
    t.is((await errorOf(f.auth.authenticate({ bearer: r2.access_token }))).code, 'unauthenticated');
    t.is((await errorOf(f.auth.authenticate({ cookies: { cookie_session: s.session!.token } }))).code, 'unauthenticated');
  } finally {
    await f.close();
  }
});

test('B3: 20 concurrent refreshes with one refresh token produce exactly one new lineage', async (t) => {
  const f = await makeService();
  try {
    const s = await f.auth.signup({ email: 'race-rt@example.com', password: STRONG_PASSWORD });
    const results = await Promise.allSettled(Array.from({ length: 20 }, () => f.auth.refresh(s.response.refresh_token!)));
    const ok = results.filter((r): r is PromiseFulfilledResult<Awaited<ReturnType<typeof f.auth.refresh>>> => r.status === 'fulfilled');
    t.is(ok.length, 1);
    for (const r of results) if (r.status === 'rejected') t.is(r.reason.code, 'unauthenticated');
    t.truthy((await f.auth.validateJwtToken({ token_type: 'refresh_token', token: ok[0]!.value.refresh_token! })).is_valid);
  } finally {
    await f.close();
  }
});

test('B6: logout, password change, access revocation and deactivation each kill tokens and sessions', async (t) => {
  const clock = manualClock();
  const f = await makeService({ now: clock.now });
  try {
    const tick = () => clock.advance(1000);
    // logout
    const a = await f.auth.signup({ email: 'b6@example.com', password: STRONG_PASSWORD });
    const pa = await f.auth.authenticate({ bearer: a.response.access_token });
    t.deepEqual(await f.auth.logout({ principal: pa! }), { message: 'Logged out successfully' });
    t.is((await errorOf(f.auth.authenticate({ bearer: a.response.access_token }))).code, 'unauthenticated');
    t.is((await errorOf(f.auth.refresh(a.response.refresh_token!))).code, 'unauthenticated');
    t.is((await errorOf(f.auth.validateSession({ cookie: a.session!.token }))).code, 'unauthenticated');
    // password change ends the other sessions, keeps the current one
    tick();
    const l1 = await f.auth.login({ email: 'b6@example.com', password: STRONG_PASSWORD });
    const l2 = await f.auth.login({ email: 'b6@example.com', password: STRONG_PASSWORD });
    const p2 = await f.auth.authenticate({ bearer: l2.response.access_token });
    t.is((await errorOf(f.auth.updateProfile({ new_password: 'another good phrase' }, { principal: p2! }))).reason, 'missing_old_password');
    t.is((await errorOf(f.auth.updateProfile({ old_password: 'wrong one!!', new_password: 'another good phrase' }, { principal: p2! }))).reason, 'invalid_credentials');
    await f.auth.updateProfile({ old_password: STRONG_PASSWORD, new_password: 'another good phrase', confirm_new_password: 'another good phrase' }, { principal: p2! });
    t.is((await errorOf(f.auth.authenticate({ bearer: l1.response.access_token }))).code, 'unauthenticated');
    t.truthy(await f.auth.authenticate({ bearer: l2.response.access_token }));
    t.is((await errorOf(f.auth.login({ email: 'b6@example.com', password: STRONG_PASSWORD }))).reason, 'invalid_credentials');
    // access revocation
    tick();
    const l3 = await f.auth.login({ email: 'b6@example.com', password: 'another good phrase' });
    await f.auth.revokeAccess(p2!.userId);
    for (const token of [l2.response.access_token!, l3.response.access_token!]) t.is((await errorOf(f.auth.authenticate({ bearer: token }))).code, 'unauthenticated');
    t.is((await errorOf(f.auth.validateJwtToken({ token_type: 'id_token', token: l3.response.id_token! }))).code, 'unauthenticated');
    t.is((await errorOf(f.auth.refresh(l3.response.refresh_token!))).code, 'unauthenticated');
    t.is((await errorOf(f.auth.login({ email: 'b6@example.com', password: 'another good phrase' }))).reason, 'access_revoked');
    tick();
    await f.auth.enableAccess(p2!.userId);
    const l4 = await f.auth.login({ email: 'b6@example.com', password: 'another good phrase' });
    const p4 = await f.auth.authenticate({ bearer: l4.response.access_token });
    // deactivation
    t.deepEqual(await f.auth.deactivateAccount({ principal: p4! }), { message: 'Account deactivated successfully' });
    t.is((await errorOf(f.auth.authenticate({ bearer: l4.response.access_token }))).code, 'unauthenticated');
    t.is((await errorOf(f.auth.login({ email: 'b6@example.com', password: 'another good phrase' }))).reason, 'invalid_credentials');
    t.is((await errorOf(f.auth.profile({ principal: p4! }))).code, 'unauthenticated');
  } finally {
    await f.close();
  }
});

test('revoke ends a refresh token family; unknown tokens answer the same', async (t) => {
  const f = await makeService();
  try {
    const s = await f.auth.signup({ email: 'rev@example.com', password: STRONG_PASSWORD });
    t.deepEqual(await f.auth.revoke({ refresh_token: s.response.refresh_token! }), { message: 'Token revoked successfully' });
    t.is((await errorOf(f.auth.refresh(s.response.refresh_token!))).code, 'unauthenticated');
    t.is((await errorOf(f.auth.authenticate({ bearer: s.response.access_token }))).code, 'unauthenticated');
    t.deepEqual(await f.auth.revoke({ refresh_token: 'garbage' }), { message: 'Token revoked successfully' });
  } finally {
    await f.close();
  }
});

test('update_profile changes fields; changing the email needs the password and keeps uniqueness with the spec message', async (t) => {
  const f = await makeService();
  try {
    await f.auth.signup({ email: 'taken@example.com', password: STRONG_PASSWORD });
    const s = await f.auth.signup({ email: 'me@example.com', password: STRONG_PASSWORD });
    const p = await f.auth.authenticate({ bearer: s.response.access_token });
    await f.auth.updateProfile({ given_name: 'Me', nickname: 'm', app_data: { theme: 'dark' } }, { principal: p! });
    const prof = await f.auth.profile({ principal: p! });
    t.is(prof.given_name, 'Me');
    t.deepEqual(prof.app_data, { theme: 'dark' });
    // Changing the email or phone needs the password (re-authentication, ASVS v5 7.5.1).
    t.is((await errorOf(f.auth.updateProfile({ email: 'new@example.com' }, { principal: p! }))).reason, 'missing_old_password');
    t.is((await errorOf(f.auth.updateProfile({ phone_number: '+15550009999' }, { principal: p! }))).reason, 'missing_old_password');
    t.is((await errorOf(f.auth.updateProfile({ email: 'new@example.com', old_password: 'not it at all' }, { principal: p! }))).reason, 'invalid_credentials');
    const err = await errorOf(f.auth.updateProfile({ email: 'TAKEN@example.com', old_password: STRONG_PASSWORD }, { principal: p! }));
    t.is(err.code, 'already_exists');
    t.is(err.message, USER_EXISTS_MESSAGE);
    await f.auth.updateProfile({ email: ' New@Example.com', old_password: STRONG_PASSWORD }, { principal: p! });
    t.is((await f.auth.profile({ principal: p! })).email, 'new@example.com');
    // The old address is free again.
    t.truthy((await f.auth.signup({ email: 'me@example.com', password: STRONG_PASSWORD })).response.access_token);
    t.is((await errorOf(f.auth.updateProfile({}, { principal: p! }))).reason, 'nothing_to_update');
  } finally {
    await f.close();
  }
});

test('validate_jwt_token: claims for each token type, roles, bad type; validate_session: user for a live cookie', async (t) => {
  const engine = new DirectTupleEngine();
  const f = await makeService({}, { engine });
  try {
    const s = await f.auth.signup({ email: 'v@example.com', password: STRONG_PASSWORD, roles: ['user', 'editor'] });
    const uid = s.response.user!.id;
    for (const [type, token] of [
      ['access_token', s.response.access_token!],
      ['id_token', s.response.id_token!],
      ['refresh_token', s.response.refresh_token!],
    ] as const) {
      const v = await f.auth.validateJwtToken({ token_type: type, token });
      t.true(v.is_valid);
      t.is(v.claims['sub'], uid);
      t.is(v.claims['token_type'], type);
    }
    const id = await f.auth.validateJwtToken({ token_type: 'id_token', token: s.response.id_token! });
    t.deepEqual(id.claims['role'], ['user', 'editor']);
    t.is(id.claims['email'], 'v@example.com');
    t.truthy(await f.auth.validateJwtToken({ token_type: 'access_token', token: s.response.access_token!, roles: ['editor'] }));
    t.is((await errorOf(f.auth.validateJwtToken({ token_type: 'access_token', token: s.response.access_token!, roles: ['admin'] }))).reason, 'missing_role');
    t.is((await errorOf(f.auth.validateJwtToken({ token_type: 'bearer', token: s.response.access_token! }))).reason, 'invalid_token_type');
    // An id token is not an access token (B1) and vice versa.
    t.is((await errorOf(f.auth.validateJwtToken({ token_type: 'access_token', token: s.response.id_token! }))).reason, 'invalid_token');
    t.is((await errorOf(f.auth.authenticate({ bearer: s.response.id_token! }))).code, 'unauthenticated');
    t.is((await errorOf(f.auth.authenticate({ bearer: s.response.refresh_token! }))).code, 'unauthenticated');
    // required_relations through the engine, AND semantics.
    engine.add(`user:${uid}`, 'viewer', 'document:1');
    t.truthy(await f.auth.validateJwtToken({ token_type: 'access_token', token: s.response.access_token!, required_relations: [{ relation: 'viewer', object: 'document:1' }] }));
    t.is(
      (await errorOf(f.auth.validateJwtToken({ token_type: 'access_token', token: s.response.access_token!, required_relations: [{ relation: 'viewer', object: 'document:1' }, { relation: 'editor', object: 'document:1' }] }))).reason,
      'relation_denied',
    );
    const vs = await f.auth.validateSession({ cookie: s.session!.token, required_relations: [{ relation: 'viewer', object: 'document:1' }] });
    t.true(vs.is_valid);
    t.is(vs.user.id, uid);
    t.is((await errorOf(f.auth.validateSession({ cookie: 'nope' }))).code, 'unauthenticated');
    t.is((await errorOf(f.auth.validateSession({}))).code, 'invalid_argument');
    // An access token verified before, its session alive in process: the same answer, without a promise;
    // a missing role is still refused (as a rejection), and once the session ends the full path refuses it.
    const now = f.auth.validateJwtToken({ token_type: 'access_token', token: s.response.access_token! });
    t.false(now instanceof Promise);
    t.deepEqual(now, await f.auth.validateJwtToken({ token_type: 'access_token', token: s.response.access_token!, required_relations: [{ relation: 'viewer', object: 'document:1' }] }));
    const refused = f.auth.validateJwtToken({ token_type: 'access_token', token: s.response.access_token!, roles: ['admin'] });
    t.true(refused instanceof Promise);
    t.is((await errorOf(refused)).reason, 'missing_role');
    await f.auth.logout({ sessionCookie: s.session!.token });
    t.is((await errorOf(f.auth.validateJwtToken({ token_type: 'access_token', token: s.response.access_token! }))).reason, 'invalid_token');
  } finally {
    await f.close();
  }
});

test('required relations without FGA fail with failed_precondition and the spec message', async (t) => {
  const f = await makeService();
  try {
    const s = await f.auth.signup({ email: 'nofga@example.com', password: STRONG_PASSWORD });
    const err = await errorOf(f.auth.validateJwtToken({ token_type: 'access_token', token: s.response.access_token!, required_relations: [{ relation: 'viewer', object: 'document:1' }] }));
    t.is(err.code, 'failed_precondition');
    t.is(err.message, 'fga is not enabled on this server');
  } finally {
    await f.close();
  }
});

test.serial('A6: sign-up with a taken email still spends a full bcrypt hash before answering (the answer follows the spec rule)', async (t) => {
  const f = await makeService({ bcryptCost: 10 });
  try {
    await f.auth.signup({ email: 'taken-a6@example.com', password: STRONG_PASSWORD });
    // As in A1: fastest runs compared (noise only adds time), up to three measurements, so that a noisy neighbour cannot fail the test alone;
    // a path that skipped the hash (~1 ms against ~50 ms) fails all three.
    const attempts: Array<[number, number]> = [];
    for (let attempt = 0; attempt < 3; attempt++) {
      const taken: number[] = [];
      const hash: number[] = [];
      for (let i = 0; i < 9; i++) {
        let start = process.hrtime.bigint();
        const err = await errorOf(f.auth.signup({ email: 'TAKEN-a6@example.com', password: STRONG_PASSWORD }));
        taken.push(Number(process.hrtime.bigint() - start) / 1e6);
        t.is(err.code, 'already_exists');
        start = process.hrtime.bigint();
        await f.auth.passwords.hash(STRONG_PASSWORD);
        hash.push(Number(process.hrtime.bigint() - start) / 1e6);
      }
      attempts.push([Math.min(...taken), Math.min(...hash)]);
      if (Math.min(...taken) >= 0.8 * Math.min(...hash)) break;
    }
    const [a, b] = attempts[attempts.length - 1]!;
    // The spec makes the answer differ (rule 1), so parity is about cost: probing for taken
    // addresses is as expensive as signing up.
    t.true(a >= 0.8 * b, `taken vs one bcrypt hash (ms), per attempt: ${JSON.stringify(attempts)}`);
  } finally {
    await f.close();
  }
});

test('hooks for other flows: openSessionFor issues a full session; setPassword checks the policy and ends every session', async (t) => {
  const clock = manualClock();
  const f = await makeService({ now: clock.now });
  try {
    const s = await f.auth.signup({ email: 'hook@example.com', password: STRONG_PASSWORD, roles: ['user', 'editor'] });
    const uid = s.response.user!.id;
    clock.advance(1000);
    const o = await f.auth.openSessionFor(uid, { loginMethod: 'magic_link_login', roles: ['editor'] });
    const p = await f.auth.authenticate({ bearer: o.response.access_token });
    t.deepEqual(p?.roles, ['editor']);
    t.truthy(o.session?.token);
    t.is((await errorOf(f.auth.openSessionFor(uid, { loginMethod: 'otp', roles: ['admin'] }))).code, 'permission_denied');
    t.is((await errorOf(f.auth.setPassword(uid, 'short'))).reason, 'invalid_password');
    clock.advance(1000);
    await f.auth.setPassword(uid, 'a completely new phrase');
    t.is((await errorOf(f.auth.authenticate({ bearer: o.response.access_token }))).code, 'unauthenticated');
    t.is((await errorOf(f.auth.authenticate({ bearer: s.response.access_token }))).code, 'unauthenticated');
    clock.advance(1000);
    t.truthy((await f.auth.login({ email: 'hook@example.com', password: 'a completely new phrase' })).response.access_token);
    t.is((await errorOf(f.auth.setPassword('no-such-user', 'a completely new phrase'))).code, 'not_found');
    t.is((await errorOf(f.auth.openSessionFor('no-such-user', { loginMethod: 'otp' }))).code, 'unauthenticated');
  } finally {
    await f.close();
  }
});
