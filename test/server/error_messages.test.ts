/**
 * The messages a sign-in or sign-up form shows, in the caller's language on
 * every protocol (Accept-Language; gRPC metadata): the code and reason stay
 * the same, English without a preference or for a language without a
 * catalogue; a super-admin operation's message stays English. The
 * catalogue itself: test/server/error_catalogue.test.ts.
 */
import anyTest from 'ava';
import { PROTOCOLS, TEST_ADMIN_SECRET, startTestServer, type TestServer } from '../helpers/server.ts';

const test = anyTest.serial;
const PASSWORD = 'correct horse battery staple';
let server: TestServer;

test.before(async () => {
  server = await startTestServer({ 'enable-email-verification': false });
  // One account per protocol: wrong passwords count towards each account's lockout.
  for (const protocol of PROTOCOLS) await server.call('signup', { email: `taken-${protocol}@example.com`, password: PASSWORD }, { protocol: 'rest' });
});
test.after.always(async () => {
  await server?.close();
});

for (const protocol of PROTOCOLS) {
  test(`${protocol}: a wrong password and a taken address in the caller's language, codes unchanged`, async (t) => {
    const email = `taken-${protocol}@example.com`;
    const wrong = (lang?: string) => server.call('login', { email, password: 'not the password' }, { protocol, headers: lang === undefined ? {} : { 'accept-language': lang } });
    const de = await wrong('de-CH, de;q=0.9');
    t.deepEqual([de.error?.code, de.error?.reason, de.error?.message], ['unauthenticated', 'invalid_credentials', 'Ungültige Anmeldedaten']);
    t.is((await wrong()).error?.message, 'invalid credentials');
    t.is((await wrong('nl')).error?.message, 'invalid credentials', 'no catalogue: English');
    const taken = await server.call('signup', { email, password: PASSWORD }, { protocol, headers: { 'accept-language': 'ja' } });
    t.deepEqual([taken.error?.code, taken.error?.reason, taken.error?.message], ['already_exists', 'user_already_exists', 'このアドレスまたは電話番号のアカウントはすでに存在します']);
    const mismatch = await server.call('signup', { email: 'new@example.com', password: PASSWORD, confirm_password: 'something else' }, { protocol, headers: { 'accept-language': 'ar' } });
    t.deepEqual([mismatch.error?.reason, mismatch.error?.message], ['password_mismatch', 'كلمة المرور وتأكيدها غير متطابقين']);
  });
}

test("rest: a refusal before the operation runs (CSRF) in the caller's language on a user-facing path, English on a super-admin one", async (t) => {
  const refused = async (path: string, contentType: string) => {
    const res = await fetch(`${server.httpUrl}${path}`, { method: 'POST', headers: { origin: 'https://elsewhere.example', 'content-type': contentType, 'accept-language': 'de' }, body: '{}' });
    return { status: res.status, body: (await res.json()) as { code?: string; reason?: string; message?: string } };
  };
  // The fast path (plain JSON) and express's (another media type parameter) answer alike.
  for (const contentType of ['application/json', 'application/json; foo=bar']) {
    const r = await refused('/v1/login', contentType);
    t.deepEqual([r.status, r.body.code, r.body.reason, r.body.message], [403, 'permission_denied', 'csrf_origin', 'Diese Anfrage kommt von einer fremden Seite und wurde abgelehnt'], contentType);
  }
  const admin = await refused('/v1/admin/delete_user', 'application/json');
  t.deepEqual([admin.status, admin.body.reason], [403, 'csrf_origin']);
  t.regex(admin.body.message ?? '', /^[\x20-\x7e]+$/);
});

test("a super-admin operation's message stays English", async (t) => {
  const r = await server.call('delete_user', { email: 'nobody@example.com' }, { protocol: 'rest', headers: { 'x-service-admin-secret': TEST_ADMIN_SECRET, 'accept-language': 'de' } });
  t.is(r.error?.code, 'not_found');
  t.regex(r.error?.message ?? '', /^[\x20-\x7e]+$/);
});

for (const protocol of PROTOCOLS) {
  test(`${protocol}: a too-short password, a too-long field and a missing session in the caller's language, codes unchanged`, async (t) => {
    const short = await server.call('signup', { email: `short-${protocol}@example.com`, password: 'short' }, { protocol, headers: { 'accept-language': 'de' } });
    t.deepEqual([short.error?.code, short.error?.reason, short.error?.message], ['invalid_argument', 'invalid_password', 'Das Passwort muss mindestens 8 Zeichen lang sein']);
    const english = await server.call('signup', { email: `short-${protocol}@example.com`, password: 'short' }, { protocol });
    t.is(english.error?.message, 'password must be at least 8 characters');
    const long = await server.call('login', { email: `${'x'.repeat(320)}@example.com`, password: PASSWORD }, { protocol, headers: { 'accept-language': 'es-MX, es;q=0.9' } });
    t.deepEqual([long.error?.code, long.error?.reason, long.error?.message], ['invalid_argument', 'invalid_field', 'El campo email admite como máximo 320 caracteres']);
    const anonymous = await server.call('update_profile', { given_name: 'Ada' }, { protocol, headers: { 'accept-language': 'fr' } });
    t.deepEqual([anonymous.error?.code, anonymous.error?.reason, anonymous.error?.message], ['unauthenticated', 'unauthenticated', 'Vous n’êtes pas connecté ; connectez-vous']);
  });
}
