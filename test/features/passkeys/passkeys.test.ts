/**
 * Passkeys end to end on the real server, with a software authenticator
 * (test/helpers/software_authenticator.ts: keys made here, attestation
 * `none`): sign-up without a password, usernameless sign-in and sign-in
 * with an email over GraphQL, REST and gRPC; every refusal of the relying
 * party (wrong origin, wrong RP ID, replayed and expired challenge, unknown
 * credential, bad signature, counter regression, user verification missing
 * when required) with its error code and nothing stored; a passkey as the
 * second factor of a password login; adding, listing, renaming and deleting
 * one's passkeys (the last sign-in method kept); an admin's list and revoke;
 * the audit log; the user and admin clients. SQLite always, PostgreSQL and
 * MySQL when configured.
 */
import anyTest from 'ava';
import { QueryTypes } from 'sequelize';
import { openSequelize } from '../../../engine/sql/sqlite_sequelize.ts';
import { sqlBackends, type SqlBackend } from '../../helpers/databases.ts';
import { TestClock } from '../../helpers/oauth.ts';
import { PROTOCOLS, TEST_ADMIN_SECRET, TEST_CLIENT_ID, startTestServer, type CallResult, type TestServer } from '../../helpers/server.ts';
import { SoftwareAuthenticator, type Json, type Spoil } from '../../helpers/software_authenticator.ts';
import { mailsTo, startSmtp } from '../../admin/smtp.ts';
import { LatchkeyAdminClient, LatchkeyClient } from '../../../client/index.ts';

const test = anyTest.serial;
const ORIGIN = 'https://app.example.com';
const RP_ID = 'example.com';
const FLAGS = { 'enable-passkeys': true, 'webauthn-rp-id': RP_ID, 'webauthn-origins': ORIGIN, 'enable-email-verification': false };
const PASSWORD = 'correct horse battery';
const admin = { 'x-service-admin-secret': TEST_ADMIN_SECRET };

function cookiesOf(r: CallResult): Map<string, string> {
  const out = new Map<string, string>();
  for (const line of r.setCookies) {
    const pair = line.split(';')[0]!.trim();
    const eq = pair.indexOf('=');
    out.set(pair.slice(0, eq), line.toLowerCase().includes('max-age=0') ? '' : pair.slice(eq + 1));
  }
  return out;
}

async function count(srv: TestServer, sql: string, replacements: unknown[] = []): Promise<number> {
  const sequelize = openSequelize(srv.database.url, { logging: false });
  try {
    const rows = await sequelize.query<{ n: number | string }>(sql, { replacements, type: QueryTypes.SELECT });
    return Number(rows[0]?.n ?? 0);
  } finally {
    await sequelize.close();
  }
}

const passkeyRows = (srv: TestServer): Promise<number> => count(srv, 'SELECT COUNT(*) AS n FROM passkeys');
const userRows = (srv: TestServer): Promise<number> => count(srv, 'SELECT COUNT(*) AS n FROM users');
const bearer = (r: CallResult): Record<string, string> => ({ authorization: `Bearer ${String(r.body?.['access_token'])}` });

async function start(backend: SqlBackend, extra: Record<string, string | boolean | number> = {}, clock?: TestClock): Promise<TestServer> {
  return startTestServer({ ...FLAGS, ...extra }, { backend, ...(clock ? { clock } : {}) });
}

/** Signs up `email` with a new passkey of `auth` over `protocol`; returns the sign-up's answer. */
async function passkeySignup(srv: TestServer, auth: SoftwareAuthenticator, email: string, protocol: 'graphql' | 'rest' | 'grpc' = 'rest', spoil: Spoil = {}): Promise<CallResult> {
  const begun = await srv.call('passkey_signup_options', { email }, { protocol });
  if (begun.error) throw new Error(`passkey_signup_options: ${JSON.stringify(begun.error)}`);
  const credential = auth.create(begun.body!['options'] as Json, spoil);
  return srv.call('passkey_signup', { ceremony_id: begun.body!['ceremony_id'], credential, name: 'Laptop' }, { protocol });
}

async function passkeyLogin(srv: TestServer, auth: SoftwareAuthenticator, o: { email?: string; protocol?: 'graphql' | 'rest' | 'grpc'; spoil?: Spoil } = {}): Promise<CallResult> {
  const protocol = o.protocol ?? 'rest';
  const begun = await srv.call('passkey_login_options', o.email === undefined ? {} : { email: o.email }, { protocol });
  if (begun.error) throw new Error(`passkey_login_options: ${JSON.stringify(begun.error)}`);
  const credential = auth.get(begun.body!['options'] as Json, o.spoil ?? {});
  return srv.call('passkey_login', { ceremony_id: begun.body!['ceremony_id'], credential }, { protocol });
}

const auditTotal = async (srv: TestServer, action: string): Promise<number> =>
  ((await srv.call('audit_logs', { action }, { protocol: 'rest', headers: admin })).body!['pagination'] as { total: number }).total;

for (const backend of sqlBackends()) {
  test(`sign-up without a password, usernameless sign-in and sign-in with an email, over every protocol (${backend})`, async (t) => {
    const srv = await start(backend);
    try {
      t.true((await srv.call('meta', {}, { protocol: 'rest' })).body?.['is_passkey_enabled'] as boolean, 'Meta advertises passkeys');
      for (const protocol of PROTOCOLS) {
        const auth = new SoftwareAuthenticator({ origin: ORIGIN, rpId: RP_ID });
        const email = `pk-${protocol}-${backend}@example.com`;
        const signup = await passkeySignup(srv, auth, email, protocol);
        t.is(signup.error, undefined, protocol);
        t.truthy(signup.body?.['access_token'], `${protocol}: the sign-up opens a session`);
        t.truthy(cookiesOf(signup).get('cookie_session'), `${protocol}: with its cookie`);
        const profile = await srv.call('profile', {}, { protocol, headers: bearer(signup) });
        t.is(profile.body?.['email'], email);
        t.is(profile.body?.['signup_methods'], 'passkey');

        const usernameless = await passkeyLogin(srv, auth, { protocol });
        t.is(usernameless.error, undefined, `${protocol}: usernameless sign-in`);
        t.is((usernameless.body?.['user'] as Json)['email'], email);
        t.truthy(cookiesOf(usernameless).get('cookie_session'));
        const named = await passkeyLogin(srv, auth, { email, protocol });
        t.is(named.error, undefined, `${protocol}: sign-in with the email`);
        const check = await srv.call('validate_session', { cookie: cookiesOf(named).get('cookie_session')! }, { protocol });
        t.true(check.body?.['is_valid'] as boolean, `${protocol}: the session is valid`);

        const list = await srv.call('passkeys', {}, { protocol, headers: bearer(named) });
        const passkeys = list.body?.['passkeys'] as Json[];
        t.is(passkeys.length, 1);
        t.is(passkeys[0]!['name'], 'Laptop');
        t.is(passkeys[0]!['credential_id'], auth.credentialIds[0]);
        t.truthy(passkeys[0]!['last_used_at'], `${protocol}: the last use is recorded`);
        t.true(passkeys[0]!['backup_eligible'] as boolean);
      }
      t.is(await auditTotal(srv, 'passkey.registered'), PROTOCOLS.length);
      t.true((await auditTotal(srv, 'user.login_success')) >= PROTOCOLS.length * 3);
    } finally {
      await srv.close();
    }
  });

  test(`every refusal of a registration has its code and stores nothing (${backend})`, async (t) => {
    const clock = new TestClock();
    const srv = await start(backend, {}, clock);
    try {
      const auth = new SoftwareAuthenticator({ origin: ORIGIN, rpId: RP_ID });
      const cases: Array<[string, Spoil, string]> = [
        ['wrong origin', { origin: 'https://evil.example.net' }, 'passkey_origin_mismatch'],
        ['wrong RP ID', { rpId: 'evil.example.net' }, 'passkey_rp_id_mismatch'],
        ['another challenge', { challenge: 'AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA' }, 'passkey_challenge_invalid'],
      ];
      for (const [name, spoil, reason] of cases) {
        const r = await passkeySignup(srv, auth, `refused-${reason}@example.com`, 'rest', spoil);
        t.is(r.error?.code, 'unauthenticated', name);
        t.is(r.error?.reason, reason, name);
      }
      // A ceremony answered once (even wrongly) cannot be answered again.
      const begun = await srv.call('passkey_signup_options', { email: 'replay@example.com' }, { protocol: 'rest' });
      const ceremony_id = begun.body!['ceremony_id'];
      const first = await srv.call('passkey_signup', { ceremony_id, credential: auth.create(begun.body!['options'] as Json, { origin: 'https://evil.example.net' }) }, { protocol: 'rest' });
      t.is(first.error?.reason, 'passkey_origin_mismatch');
      const replay = await srv.call('passkey_signup', { ceremony_id, credential: auth.create(begun.body!['options'] as Json) }, { protocol: 'rest' });
      t.is(replay.error?.reason, 'passkey_challenge_invalid', 'a replayed ceremony is refused');
      // Expired: the service's clock moves past the 5 minutes.
      const late = await srv.call('passkey_signup_options', { email: 'late@example.com' }, { protocol: 'rest' });
      clock.offsetMs += 301_000;
      const expired = await srv.call('passkey_signup', { ceremony_id: late.body!['ceremony_id'], credential: auth.create(late.body!['options'] as Json) }, { protocol: 'rest' });
      t.is(expired.error?.code, 'unauthenticated');
      t.is(expired.error?.reason, 'passkey_challenge_expired');
      const malformed = await srv.call('passkey_signup', { ceremony_id: 'x', credential: { id: 'abc' } }, { protocol: 'rest' });
      t.is(malformed.error?.reason, 'passkey_challenge_invalid', 'an unknown ceremony is refused before its answer is read');
      t.is(await passkeyRows(srv), 0, 'no passkey stored');
      t.is(await userRows(srv), 0, 'no user stored');
    } finally {
      await srv.close();
    }
  });

  test(`every refusal of a sign-in has its code, changes nothing and is audited (${backend})`, async (t) => {
    const clock = new TestClock();
    const srv = await start(backend, {}, clock);
    try {
      const auth = new SoftwareAuthenticator({ origin: ORIGIN, rpId: RP_ID });
      const email = `signin-${backend}@example.com`;
      t.is((await passkeySignup(srv, auth, email)).error, undefined);
      t.is((await passkeyLogin(srv, auth)).error, undefined, 'counter 1 accepted');
      const stranger = new SoftwareAuthenticator({ origin: ORIGIN, rpId: RP_ID });
      const strangerOptions = (await srv.call('passkey_signup_options', { email: 'stranger@example.com' }, { protocol: 'rest' })).body!['options'] as Json;
      stranger.create(strangerOptions);
      const cases: Array<[string, Spoil | 'stranger', string]> = [
        ['wrong origin', { origin: 'https://app.example.com.evil.net' }, 'passkey_origin_mismatch'],
        ['wrong RP ID', { rpId: 'other.example' }, 'passkey_rp_id_mismatch'],
        ['another challenge', { challenge: 'AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA' }, 'passkey_challenge_invalid'],
        ['bad signature', { badSignature: true }, 'passkey_invalid_signature'],
        ['counter regression', { counter: 1 }, 'passkey_counter_regression'],
        ['unknown credential', 'stranger', 'passkey_unknown_credential'],
      ];
      const before = await count(srv, 'SELECT sign_count AS n FROM passkeys');
      for (const [name, spoil, reason] of cases) {
        const r = spoil === 'stranger' ? await passkeyLogin(srv, stranger) : await passkeyLogin(srv, auth, { spoil });
        t.is(r.error?.code, 'unauthenticated', name);
        t.is(r.error?.reason, reason, name);
        t.false(cookiesOf(r).has('cookie_session'), `${name}: no session`);
      }
      t.is(await count(srv, 'SELECT sign_count AS n FROM passkeys'), before, 'the counter did not move');
      // A passkey of this account answering a sign-in that named another address is not that account's.
      const other = await passkeyLogin(srv, auth, { email: 'nobody@example.com', spoil: { ignoreAllowList: true } });
      t.is(other.error?.reason, 'passkey_unknown_credential');

      const begun = await srv.call('passkey_login_options', {}, { protocol: 'rest' });
      const answer = auth.get(begun.body!['options'] as Json);
      t.is((await srv.call('passkey_login', { ceremony_id: begun.body!['ceremony_id'], credential: answer }, { protocol: 'rest' })).error, undefined);
      const replayed = await srv.call('passkey_login', { ceremony_id: begun.body!['ceremony_id'], credential: answer }, { protocol: 'rest' });
      t.is(replayed.error?.reason, 'passkey_challenge_invalid', 'a replayed answer is refused');

      const late = await srv.call('passkey_login_options', {}, { protocol: 'rest' });
      clock.offsetMs += 301_000;
      const expired = await srv.call('passkey_login', { ceremony_id: late.body!['ceremony_id'], credential: auth.get(late.body!['options'] as Json) }, { protocol: 'rest' });
      t.is(expired.error?.reason, 'passkey_challenge_expired');

      // A revoked account: the right passkey is refused, and its counter does not move.
      const userId = String(((await srv.call('users', { pagination: { page: 1, limit: 10 } }, { protocol: 'rest', headers: admin })).body!['users'] as Json[]).find((u) => u['email'] === email)!['id']);
      t.is((await srv.call('revoke_access', { user_id: userId }, { protocol: 'rest', headers: admin })).error, undefined);
      const counted = await count(srv, 'SELECT sign_count AS n FROM passkeys WHERE user_id = ?', [userId]);
      const revoked = await passkeyLogin(srv, auth);
      t.is(revoked.error?.code, 'permission_denied');
      t.is(revoked.error?.reason, 'access_revoked');
      t.is(await count(srv, 'SELECT sign_count AS n FROM passkeys WHERE user_id = ?', [userId]), counted, 'a refused sign-in leaves the counter');

      // The counter regression is in the audit log with its reason.
      const logs = await srv.call('audit_logs', { action: 'user.login_failed' }, { protocol: 'rest', headers: admin });
      const entries = JSON.stringify(logs.body);
      t.true(entries.includes('passkey_counter_regression'), 'the counter regression is audited');
      t.true(entries.includes('passkey_invalid_signature'));
    } finally {
      await srv.close();
    }
  });

  test(`--webauthn-require-user-verification refuses an answer without user verification (${backend})`, async (t) => {
    const srv = await start(backend, { 'webauthn-require-user-verification': true });
    try {
      const options = (await srv.call('passkey_signup_options', { email: 'uv@example.com' }, { protocol: 'rest' })).body!['options'] as Json;
      t.is((options['authenticatorSelection'] as Json)['userVerification'], 'required');
      const presenceOnly = new SoftwareAuthenticator({ origin: ORIGIN, rpId: RP_ID, userVerifying: false });
      const r = await passkeySignup(srv, presenceOnly, 'uv-missing@example.com');
      t.is(r.error?.code, 'unauthenticated');
      t.is(r.error?.reason, 'passkey_user_verification_required');
      t.is(await passkeyRows(srv), 0);
      const verifying = new SoftwareAuthenticator({ origin: ORIGIN, rpId: RP_ID });
      t.is((await passkeySignup(srv, verifying, 'uv-ok@example.com')).error, undefined);
      const noUv = await passkeyLogin(srv, verifying, { spoil: { uv: false } });
      t.is(noUv.error?.reason, 'passkey_user_verification_required');
      t.is((await passkeyLogin(srv, verifying)).error, undefined);
    } finally {
      await srv.close();
    }
  });

  test(`a password user adds a passkey, which becomes the second factor; list, rename, delete, admin revoke (${backend})`, async (t) => {
    const srv = await start(backend, { 'enable-mfa': true, 'enable-totp-login': true });
    try {
      const email = `mfa-${backend}@example.com`;
      const signup = await srv.call('signup', { email, password: PASSWORD }, { protocol: 'rest' });
      t.is(signup.error, undefined);
      const headers = bearer(signup);
      const auth = new SoftwareAuthenticator({ origin: ORIGIN, rpId: RP_ID });
      const begun = await srv.call('passkey_registration_options', {}, { protocol: 'rest', headers });
      t.is(begun.error, undefined);
      const added = await srv.call('add_passkey', { ceremony_id: begun.body!['ceremony_id'], credential: auth.create(begun.body!['options'] as Json), name: 'Phone' }, { protocol: 'graphql', headers });
      t.is(added.error, undefined);
      t.is(added.body?.['name'], 'Phone');
      const dup = await srv.call('passkey_registration_options', {}, { protocol: 'rest', headers });
      t.deepEqual((dup.body!['options'] as { excludeCredentials: Array<{ id: string }> }).excludeCredentials.map((c) => c.id), auth.credentialIds, 'existing passkeys are excluded');
      t.is((await srv.call('update_profile', { is_multi_factor_auth_enabled: true }, { protocol: 'rest', headers })).error, undefined);

      for (const protocol of PROTOCOLS) {
        const login = await srv.call('login', { email, password: PASSWORD }, { protocol });
        t.is(login.error, undefined, protocol);
        t.true(login.body?.['should_show_passkey_screen'] as boolean, `${protocol}: the passkey is asked for`);
        t.falsy(login.body?.['access_token'], `${protocol}: no tokens before the second factor`);
        const mfa = cookiesOf(login).get('mfa')!;
        t.truthy(mfa);
        const credential = auth.get(login.body!['passkey_options'] as Json);
        t.is((await srv.call('verify_passkey', { credential }, { protocol })).error?.reason, 'passkey_challenge_invalid', `${protocol}: the mfa cookie is required`);
        const ok = await srv.call('verify_passkey', { credential }, { protocol, cookies: { mfa } });
        t.is(ok.error, undefined, protocol);
        t.truthy(ok.body?.['access_token']);
        t.truthy(cookiesOf(ok).get('cookie_session'));
        t.is(cookiesOf(ok).get('mfa'), '', `${protocol}: the mfa cookie is cleared`);
        t.is((await srv.call('verify_passkey', { credential }, { protocol, cookies: { mfa } })).error?.reason, 'passkey_challenge_invalid', `${protocol}: used once`);
      }

      const list = (await srv.call('passkeys', {}, { protocol: 'rest', headers })).body!['passkeys'] as Json[];
      const id = String(list[0]!['id']);
      const renamed = await srv.call('rename_passkey', { id, name: 'Work phone' }, { protocol: 'grpc', headers });
      t.is(renamed.body?.['name'], 'Work phone');
      t.is((await srv.call('rename_passkey', { id: 'nope', name: 'x' }, { protocol: 'rest', headers })).error?.reason, 'passkey_not_found');
      // A password user may delete the last passkey; a passkey-only user may not.
      const second = await srv.call('passkey_registration_options', {}, { protocol: 'rest', headers });
      t.is((await srv.call('add_passkey', { ceremony_id: second.body!['ceremony_id'], credential: auth.create(second.body!['options'] as Json) }, { protocol: 'rest', headers })).error, undefined);
      t.is((await srv.call('delete_passkey', { id }, { protocol: 'rest', headers })).error, undefined);

      const only = new SoftwareAuthenticator({ origin: ORIGIN, rpId: RP_ID });
      const onlyUser = await passkeySignup(srv, only, `only-${backend}@example.com`);
      const onlyHeaders = bearer(onlyUser);
      const onlyId = String(((await srv.call('passkeys', {}, { protocol: 'rest', headers: onlyHeaders })).body!['passkeys'] as Json[])[0]!['id']);
      const last = await srv.call('delete_passkey', { id: onlyId }, { protocol: 'rest', headers: onlyHeaders });
      t.is(last.error?.code, 'failed_precondition');
      t.is(last.error?.reason, 'last_sign_in_method');
      t.is(await count(srv, 'SELECT COUNT(*) AS n FROM passkeys WHERE id = ?', [onlyId]), 1, 'the last passkey stays');

      // The admin lists and revokes; the revoked passkey no longer signs in.
      const userId = String((onlyUser.body!['user'] as Json)['id']);
      const adminList = await srv.call('user_passkeys', { user_id: userId }, { protocol: 'graphql', headers: admin });
      t.is((adminList.body!['passkeys'] as Json[]).length, 1);
      t.is((await srv.call('user_passkeys', { user_id: userId }, { protocol: 'rest', headers: onlyHeaders })).error?.code, 'unauthenticated', 'a user is not an admin');
      t.is((await srv.call('revoke_user_passkey', { user_id: userId, id: onlyId }, { protocol: 'grpc', headers: admin })).error, undefined);
      t.is((await passkeyLogin(srv, only)).error?.reason, 'passkey_unknown_credential');
      t.is(await auditTotal(srv, 'passkey.revoked'), 1);
      t.is(await auditTotal(srv, 'passkey.deleted'), 1);
    } finally {
      await srv.close();
    }
  });

  test(`with email verification, a passkey sign-up mails the link and opens no session; the passkey signs in once the address is verified (${backend})`, async (t) => {
    const smtp = await startSmtp();
    const srv = await start(backend, { 'enable-email-verification': true, 'smtp-host': '127.0.0.1', 'smtp-port': smtp.port, 'smtp-sender-email': 'noreply@example.com' });
    try {
      const auth = new SoftwareAuthenticator({ origin: ORIGIN, rpId: RP_ID });
      const email = `verify-${backend}@example.com`;
      const signup = await passkeySignup(srv, auth, email);
      t.is(signup.error, undefined);
      t.falsy(signup.body?.['access_token'], 'no session before the address is verified');
      t.false(cookiesOf(signup).has('cookie_session'));
      t.is(await passkeyRows(srv), 1, 'the passkey is stored with the account');
      const early = await passkeyLogin(srv, auth);
      t.is(early.error?.code, 'unauthenticated', 'an unverified address does not sign in');
      const [mail] = await mailsTo(smtp, email, 1);
      const token = /token=([A-Za-z0-9_-]+)/.exec(mail!)?.[1];
      t.truthy(token, 'the mail holds the verification link');
      const verified = await srv.call('verify_email', { token: token! }, { protocol: 'rest' });
      t.is(verified.error, undefined);
      t.truthy(verified.body?.['access_token'], 'the link signs in');
      t.is((await passkeyLogin(srv, auth)).error, undefined, 'then the passkey signs in');
    } finally {
      await srv.close();
      await smtp.close();
    }
  });

  test(`--webauthn-attestation=direct asks for attestation and refuses an answer without one (${backend})`, async (t) => {
    const srv = await start(backend, { 'webauthn-attestation': 'direct' });
    try {
      const options = (await srv.call('passkey_signup_options', { email: 'att@example.com' }, { protocol: 'rest' })).body!['options'] as Json;
      t.is(options['attestation'], 'direct');
      const r = await passkeySignup(srv, new SoftwareAuthenticator({ origin: ORIGIN, rpId: RP_ID }), 'att-none@example.com');
      t.is(r.error?.code, 'unauthenticated');
      t.is(r.error?.reason, 'passkey_attestation_required');
      t.is(await passkeyRows(srv), 0);
      t.is(await userRows(srv), 0);
    } finally {
      await srv.close();
    }
  });

  test(`step-up: a passkey holder's email change and account deletion need a fresh passkey proof of the same session, used once (${backend})`, async (t) => {
    const srv = await start(backend);
    try {
      const auth = new SoftwareAuthenticator({ origin: ORIGIN, rpId: RP_ID });
      const signup = await passkeySignup(srv, auth, `stepup-${backend}@example.com`);
      const headers = bearer(signup);
      const other = bearer(await passkeyLogin(srv, auth));
      const stepUp = async (h: Record<string, string>, from = h): Promise<CallResult> => {
        const begun = await srv.call('passkey_step_up_options', {}, { protocol: 'rest', headers: from });
        t.is(begun.error, undefined);
        return srv.call('passkey_step_up', { ceremony_id: begun.body!['ceremony_id'], credential: auth.get(begun.body!['options'] as Json) }, { protocol: 'rest', headers: h });
      };
      const change = (email: string) => srv.call('update_profile', { email }, { protocol: 'rest', headers });
      const refused = await change(`changed-${backend}@example.com`);
      t.is(refused.error?.code, 'permission_denied');
      t.is(refused.error?.reason, 'step_up_required');
      t.is((await srv.call('deactivate_account', {}, { protocol: 'rest', headers })).error?.reason, 'step_up_required');
      t.is((await stepUp(headers, other)).error?.reason, 'passkey_challenge_invalid', 'a step-up opened by another session does not count');
      t.is((await stepUp(other)).error, undefined);
      t.is((await change(`changed-${backend}@example.com`)).error?.reason, 'step_up_required', 'another session\'s step-up does not count');
      t.is((await stepUp(headers)).error, undefined);
      t.is((await change(`changed-${backend}@example.com`)).error, undefined, 'the step-up lets the change through');
      t.is((await change(`again-${backend}@example.com`)).error?.reason, 'step_up_required', 'once');
      t.is((await stepUp(headers)).error, undefined);
      t.is((await srv.call('deactivate_account', {}, { protocol: 'rest', headers })).error, undefined);
      t.is(await passkeyRows(srv), 0, 'the deactivated account\'s passkeys are gone');
    } finally {
      await srv.close();
    }
  });

  test(`passkeys off: the ceremonies are refused and Meta says so (${backend})`, async (t) => {
    const srv = await startTestServer({ 'enable-email-verification': false }, { backend });
    try {
      t.false((await srv.call('meta', {}, { protocol: 'rest' })).body?.['is_passkey_enabled'] as boolean);
      const r = await srv.call('passkey_login_options', {}, { protocol: 'rest' });
      t.is(r.error?.code, 'failed_precondition');
      t.is(r.error?.reason, 'passkeys_disabled');
    } finally {
      await srv.close();
    }
  });
}

test('the user and admin clients drive the passkey operations on every protocol', async (t) => {
  const srv = await start('sqlite');
  try {
    for (const protocol of PROTOCOLS) {
      const client = new LatchkeyClient({ client_id: TEST_CLIENT_ID, service_url: srv.httpUrl, protocol, grpc_endpoint: srv.grpcAddress });
      const admin = new LatchkeyAdminClient({ service_url: srv.httpUrl, admin_secret: TEST_ADMIN_SECRET, protocol, grpc_endpoint: srv.grpcAddress });
      const auth = new SoftwareAuthenticator({ origin: ORIGIN, rpId: RP_ID });
      const email = `client-${protocol}@example.com`;
      const begun = await client.passkeySignupOptions({ email });
      const signedUp = await client.passkeySignup({ ceremony_id: begun.ceremony_id, credential: auth.create(begun.options as Json) as never, name: 'Client' });
      t.truthy(signedUp.access_token, protocol);
      const mine = await client.passkeys();
      t.deepEqual(mine.passkeys.map((p) => p.name), ['Client'], `${protocol}: the client's session lists its passkey`);
      const login = await client.passkeyLoginOptions({});
      const signedIn = await client.passkeyLogin({ ceremony_id: login.ceremony_id, credential: auth.get(login.options as Json) as never });
      t.is(signedIn.user?.email, email, protocol);
      const listed = await admin.userPasskeys({ user_id: String(signedIn.user?.id) });
      t.is(listed.passkeys.length, 1, `${protocol}: the admin client lists it`);
    }
  } finally {
    await srv.close();
  }
});
