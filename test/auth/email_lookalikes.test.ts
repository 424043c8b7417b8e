/**
 * Look-alike email addresses over the real server, on every main database
 * (SQLite, PostgreSQL and MySQL/MariaDB when configured, DynamoDB on
 * dynalite): a fullwidth spelling of an address (`ｋａｔｅ@…`) is the same
 * address, one account, on sign-up, login, forgot password, magic link,
 * lookup, invitations, update_user and update_profile; an address holding an
 * invisible character (`ka\u200bte@…`) is refused with `invalid_argument`
 * (reason `invalid_email`) on each of them, and nothing is stored.
 */
import test from 'ava';
import { mailsTo, startSmtp } from '../admin/smtp.ts';
import { mainBackends } from '../helpers/main_databases.ts';
import { TEST_ADMIN_SECRET, startTestServer, type CallResult, type TestServer } from '../helpers/server.ts';

const admin = { 'x-service-admin-secret': TEST_ADMIN_SECRET };
const PASSWORD = 'correct horse battery staple';

/** Every printable ASCII character as its fullwidth form (U+FF01..U+FF5E). */
const fullwidth = (s: string): string => s.replace(/[\x21-\x7e]/g, (c) => String.fromCodePoint(c.charCodeAt(0) + 0xfee0));
/** `c` after the second character of `s`. */
const invisible = (s: string, c: string): string => `${s.slice(0, 2)}${c}${s.slice(2)}`;
/** Zero-width space, zero-width non-joiner and joiner, word joiner, BOM, soft hyphen, bidi override, variation selector. */
const INVISIBLES = ['\u200b', '\u200c', '\u200d', '\u2060', '\ufeff', '\u00ad', '\u202e', '\ufe0f'];

const outcome = (r: CallResult): string => (r.error ? `${r.error.code}/${r.error.reason ?? ''}` : 'ok');

async function userCount(server: TestServer): Promise<number> {
  const r = await server.call('users', { pagination: { limit: 100, page: 1 } }, { protocol: 'rest', headers: admin });
  if (r.error) throw new Error(`users: ${r.error.code} ${r.error.message}`);
  return (r.body!['users'] as unknown[]).length;
}

for (const backend of mainBackends()) {
  test(`${backend}: a fullwidth spelling of an email is the same account, and an email with an invisible character is refused, on every flow`, async (t) => {
    const smtp = await startSmtp();
    t.teardown(() => smtp.close());
    const server = await startTestServer(
      { 'enable-email-verification': false, 'smtp-host': '127.0.0.1', 'smtp-port': smtp.port, 'smtp-sender-email': 'noreply@example.com' },
      { backend },
    );
    t.teardown(() => server.close());
    const kate = `kate-${backend}@lookalike.test`;
    // `ｋａｔｅ-…@lookalike.test`, and the whole address in fullwidth (`＠`, `．` included).
    const wide = `${fullwidth(kate.split('@')[0]!)}@lookalike.test`;
    const wider = fullwidth(kate);
    t.not(wide, kate);

    const created = await server.call('signup', { email: kate, password: PASSWORD }, { protocol: 'rest' });
    t.is(created.error, undefined);
    const kateId = (created.body!['user'] as { id: string }).id;
    const before = await userCount(server);

    // Sign-up: the fullwidth spelling is the address already taken; the invisible ones are refused.
    t.is(outcome(await server.call('signup', { email: wide, password: PASSWORD }, { protocol: 'rest' })), 'already_exists/user_already_exists');
    t.is(outcome(await server.call('signup', { email: wider.toUpperCase(), password: PASSWORD }, { protocol: 'graphql' })), 'already_exists/user_already_exists');
    for (const c of INVISIBLES) {
      t.is(outcome(await server.call('signup', { email: invisible(kate, c), password: PASSWORD }, { protocol: 'rest' })), 'invalid_argument/invalid_email', `U+${c.codePointAt(0)!.toString(16)}`);
    }
    t.is(await userCount(server), before, 'no second account');

    // Login: the fullwidth spelling signs in to the same account; an invisible character is refused.
    for (const protocol of ['rest', 'graphql', 'grpc'] as const) {
      const login = await server.call('login', { email: protocol === 'grpc' ? wider : wide, password: PASSWORD }, { protocol });
      t.is(outcome(login), 'ok', protocol);
      t.is((login.body?.['user'] as { id: string; email: string } | undefined)?.id, kateId);
      t.is((login.body?.['user'] as { email: string } | undefined)?.email, kate, 'the address on record is the plain one');
      t.is(outcome(await server.call('login', { email: invisible(kate, '\u200b'), password: PASSWORD }, { protocol })), 'invalid_argument/invalid_email', protocol);
    }

    // Lookup.
    const found = await server.call('user', { email: wide }, { protocol: 'rest', headers: admin });
    t.is(found.body?.['id'], kateId);
    t.is(outcome(await server.call('user', { email: invisible(kate, '\u200b') }, { protocol: 'rest', headers: admin })), 'invalid_argument/invalid_email');

    // Forgot password and magic link: the fullwidth spelling is answered as the plain one; an invisible character is refused.
    for (const op of ['forgot_password', 'magic_link_login'] as const) {
      const plain = outcome(await server.call(op, { email: kate }, { protocol: 'rest' }));
      t.is(plain, 'ok', op);
      t.is(outcome(await server.call(op, { email: wide }, { protocol: 'rest' })), plain, op);
      t.is(outcome(await server.call(op, { email: invisible(kate, '\u200b') }, { protocol: 'rest' })), 'invalid_argument/invalid_email', op);
    }
    t.is(await userCount(server), before, 'no second account from a link flow');
    // Every mail went to the address on record, none to the spelling typed.
    await mailsTo(smtp, kate, 2);
    await new Promise((r) => setTimeout(r, 300));
    t.is((await mailsTo(smtp, kate, smtp.mails.length)).length, smtp.mails.length);

    // Invitations: the fullwidth spelling is the existing user; an invisible character is refused.
    const invited = await server.call('invite_members', { emails: [wide], redirect_uri: server.httpUrl }, { protocol: 'rest', headers: admin });
    t.is(outcome(invited), 'ok', JSON.stringify(invited.error));
    t.deepEqual(invited.body?.['users'], []);
    t.is(outcome(await server.call('invite_members', { emails: [invisible(kate, '\u2060')], redirect_uri: server.httpUrl }, { protocol: 'rest', headers: admin })), 'invalid_argument/invalid_email');
    t.is(await userCount(server), before, 'no second account from an invitation');

    // update_user: another account cannot take a look-alike of the address, nor an invisible variant.
    const other = await server.call('signup', { email: `other-${backend}@lookalike.test`, password: PASSWORD }, { protocol: 'rest' });
    const otherId = (other.body!['user'] as { id: string }).id;
    const otherToken = other.body!['access_token'] as string;
    t.is(outcome(await server.call('update_user', { id: otherId, email: wide }, { protocol: 'rest', headers: admin })), 'already_exists/user_already_exists');
    t.is(outcome(await server.call('update_user', { id: otherId, email: invisible(kate, '\u200b') }, { protocol: 'rest', headers: admin })), 'invalid_argument/invalid_email');
    // update_profile: the same.
    const bearer = { authorization: `Bearer ${otherToken}` };
    t.is(outcome(await server.call('update_profile', { email: wide, old_password: PASSWORD }, { protocol: 'rest', headers: bearer })), 'already_exists/user_already_exists');
    t.is(outcome(await server.call('update_profile', { email: invisible(kate, '\u200b'), old_password: PASSWORD }, { protocol: 'rest', headers: bearer })), 'invalid_argument/invalid_email');
    // Its own address in fullwidth is no change at all.
    const self = await server.call('update_user', { id: kateId, email: wide }, { protocol: 'rest', headers: admin });
    t.is(outcome(self), 'ok', JSON.stringify(self.error));
    t.is(self.body?.['email'], kate);
  });
}
