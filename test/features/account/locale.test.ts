/**
 * The user's saved language (`locale`, the OpenID Connect claim): set by
 * `update_profile` on every protocol and returned by `profile`, refused when
 * it is no language tag, cleared by an empty string; it picks the language
 * of /app, /app/account and the consent page after `ui_locales` and before
 * the browser's; and the mails and texts a user is sent follow it (the
 * built-in link mails, the one-time code by email and by SMS, the
 * organization invitation), else the request's Accept-Language. Through a
 * real SMTP sink and an SMS vendor on loopback.
 */
import anyTest from 'ava';
import { mailsTo, startSmtp, type Smtp } from '../../admin/smtp.ts';
import { mainBackends } from '../../helpers/main_databases.ts';
import { PROTOCOLS, startTestServer, type TestServer } from '../../helpers/server.ts';
import { smsFlags, startSmsVendor, type SmsVendor } from '../../helpers/sms_vendor.ts';

const test = anyTest.serial;
const PASSWORD = 'correct horse battery staple';

let smtp: Smtp;
let vendor: SmsVendor;
let server: TestServer;

test.before(async () => {
  smtp = await startSmtp();
  vendor = await startSmsVendor();
  server = await startTestServer({
    'enable-login-page': true,
    'app-cookie-secure': false,
    'enable-email-verification': false,
    'enable-magic-link-login': true,
    'enable-mfa': true,
    'enable-email-otp': true,
    'enable-sms-otp': true,
    'enable-mobile-basic-authentication': true,
    'smtp-host': '127.0.0.1',
    'smtp-port': smtp.port,
    'smtp-sender-email': 'noreply@example.com',
    ...smsFlags(vendor),
  });
});
test.after.always(async () => {
  await server?.close();
  await smtp?.close();
  await vendor?.close();
});

/** Quoted-printable (or an RFC 2047 Q word) to UTF-8 text. */
const qp = (text: string, word = false): string =>
  Buffer.from((word ? text.replace(/_/g, ' ') : text.replace(/=\r?\n/g, '')).replace(/=([0-9A-F]{2})/gi, (_m, h: string) => String.fromCharCode(parseInt(h, 16))), 'latin1').toString('utf8');

/** The raw mails to `email` as the SMTP sink received them. */
const rawTo = (email: string): string[] => smtp.mails.filter((m) => new RegExp(`^To: .*${email.replace(/[.+]/g, (c) => `\\${c}`)}`, 'mi').test(m));

/** The decoded subjects of the mails to `email`, once `count` have arrived. */
async function subjectsTo(email: string, count: number): Promise<string[]> {
  await mailsTo(smtp, email, count);
  return rawTo(email).map((raw) => {
    const header = /^Subject: (.*(?:\r?\n[ \t].*)*)/m.exec(raw)?.[1] ?? '';
    return header
      .replace(/\r?\n[ \t]/g, ' ')
      .replace(/=\?utf-8\?([bq])\?([^?]*)\?=\s*/gi, (_m, enc: string, text: string) => (enc.toLowerCase() === 'b' ? Buffer.from(text, 'base64').toString('utf8') : qp(text, true)))
      .trim();
  });
}

/** Signs up `email` (no second factor yet) and returns its bearer headers and session cookie. */
async function account(email: string): Promise<{ bearer: Record<string, string>; cookie: string }> {
  const r = await server.call('signup', { email, password: PASSWORD }, { protocol: 'rest' });
  const token = r.body?.['access_token'];
  if (typeof token !== 'string') throw new Error(`signup of ${email}: ${JSON.stringify(r.error)}`);
  const cookie = r.setCookies.map((c) => /^cookie_session=([^;]+)/.exec(c)?.[1]).find((v) => v !== undefined);
  if (cookie === undefined) throw new Error('no session cookie');
  return { bearer: { authorization: `Bearer ${token}` }, cookie };
}

for (const protocol of PROTOCOLS) {
  test(`${protocol}: update_profile saves the locale, profile returns it, a bad tag is invalid_locale, '' clears it`, async (t) => {
    const { bearer } = await account(`saved-${protocol}@example.com`);
    const set = await server.call('update_profile', { locale: 'pt-br' }, { protocol, headers: bearer });
    t.is(set.error, undefined);
    t.is((await server.call('profile', {}, { protocol, headers: bearer })).body?.['locale'], 'pt-br');
    for (const bad of ['english!', 'e', 'de_DE', 'de--at', 'de-toolongsub']) {
      const r = await server.call('update_profile', { locale: bad }, { protocol, headers: bearer });
      t.is(r.error?.code, 'invalid_argument', bad);
      t.is(r.error?.reason, 'invalid_locale', bad);
    }
    t.is((await server.call('update_profile', { locale: 'x'.repeat(36) }, { protocol, headers: bearer })).error?.code, 'invalid_argument', 'longer than the field');
    t.is((await server.call('profile', {}, { protocol, headers: bearer })).body?.['locale'], 'pt-br', 'a refused change changed nothing');
    await server.call('update_profile', { locale: 'DE-at' }, { protocol, headers: bearer });
    t.is((await server.call('profile', {}, { protocol, headers: bearer })).body?.['locale'], 'de-at');
    await server.call('update_profile', { locale: '' }, { protocol, headers: bearer });
    t.is((await server.call('profile', {}, { protocol, headers: bearer })).body?.['locale'] ?? null, null);
  });
}

for (const backend of mainBackends()) {
  test(`${backend}: the locale column is there (migration 0006) and keeps what update_profile saves`, async (t) => {
    const srv = await startTestServer({ 'enable-email-verification': false }, { backend });
    try {
      const r = await srv.call('signup', { email: 'stored@example.com', password: PASSWORD }, { protocol: 'rest' });
      const headers = { authorization: `Bearer ${String(r.body?.['access_token'])}` };
      t.is(((r.body?.['user'] as Record<string, unknown>)['locale'] ?? null), null);
      t.is((await srv.call('update_profile', { locale: 'zh-Hant-TW' }, { protocol: 'rest', headers })).error, undefined);
      t.is((await srv.call('profile', {}, { protocol: 'grpc', headers })).body?.['locale'], 'zh-Hant-TW');
    } finally {
      await srv.close();
    }
  });
}

test('the pages: ui_locales, then the saved language, then the browser choice and Accept-Language', async (t) => {
  const { bearer, cookie } = await account('pages@example.com');
  const lang = async (path: string, headers: Record<string, string>) => (await fetch(`${server.httpUrl}${path}`, { headers })).headers.get('content-language');
  const signedIn = { cookie: `cookie_session=${cookie}; latchkey_lang=fr`, 'accept-language': 'de' };
  t.is(await lang('/app/account', signedIn), 'fr', 'nothing saved: the browser choice');
  await server.call('update_profile', { locale: 'es-MX' }, { protocol: 'rest', headers: bearer });
  t.is(await lang('/app/account', signedIn), 'es', 'the saved language before the browser choice');
  t.is(await lang('/app', signedIn), 'es');
  t.is(await lang('/app/account?ui_locales=ja%20en', signedIn), 'ja', 'ui_locales first');
  t.is(await lang('/app/account', { 'accept-language': 'de', cookie: 'cookie_session=not-a-session' }), 'de', 'no session: Accept-Language');
  // The account center's language menu offers the languages, the saved one selected by its script.
  const html = await (await fetch(`${server.httpUrl}/app/account`, { headers: signedIn })).text();
  t.regex(html, /<select id="locale" name="language"><option value="">El de mi navegador<\/option><option value="en" lang="en">English<\/option>/);
});

test('mails and texts follow the saved language, else the request: magic link, email and SMS codes', async (t) => {
  const email = 'mails@example.com';
  const { bearer } = await account(email);
  await server.call('magic_link_login', { email }, { protocol: 'rest', headers: { 'accept-language': 'es' } });
  t.is((await subjectsTo(email, 1))[0], 'Tu enlace de inicio de sesión', 'nothing saved: the request');
  await server.call('update_profile', { locale: 'fr-CA', is_multi_factor_auth_enabled: true }, { protocol: 'rest', headers: bearer });
  await server.call('magic_link_login', { email }, { protocol: 'graphql', headers: { 'accept-language': 'de' } });
  t.is((await subjectsTo(email, 2))[1], 'Votre lien de connexion', 'the saved language before the request');
  const login = await server.call('login', { email, password: PASSWORD }, { protocol: 'grpc', headers: { 'accept-language': 'de' } });
  t.true(login.body?.['should_show_email_otp_screen'] as boolean);
  t.is((await subjectsTo(email, 3))[2], 'Votre code à usage unique', 'the email code');
  await server.call('update_profile', { locale: '' }, { protocol: 'rest', headers: bearer });
  await server.call('login', { email, password: PASSWORD }, { protocol: 'rest', headers: { 'accept-language': 'ja' } });
  t.is((await subjectsTo(email, 4))[3], 'ワンタイムコード', 'nothing saved: the email code in the request language');

  const phone = '+15550109001';
  const signup = await server.call('signup', { phone_number: phone, password: PASSWORD }, { protocol: 'rest' });
  const phoneBearer = { authorization: `Bearer ${String(signup.body?.['access_token'])}` };
  t.is((await server.call('update_profile', { is_multi_factor_auth_enabled: true }, { protocol: 'rest', headers: phoneBearer })).error, undefined);
  const texts = () => vendor.messages.filter((m) => m.form.get('To') === phone).map((m) => m.form.get('Body') ?? '');
  const sms = await server.call('login', { phone_number: phone, password: PASSWORD }, { protocol: 'rest', headers: { 'accept-language': 'de' } });
  t.true(sms.body?.['should_show_mobile_otp_screen'] as boolean);
  t.regex(texts().at(-1) ?? '', /^[0-9]{6} ist Ihr Bestätigungscode für Latchkey\./, 'the request language');
  await server.call('update_profile', { locale: 'ar' }, { protocol: 'rest', headers: phoneBearer });
  await server.call('login', { phone_number: phone, password: PASSWORD }, { protocol: 'grpc', headers: { 'accept-language': 'de' } });
  t.regex(texts().at(-1) ?? '', /^[0-9]{6} هو رمز التحقق الخاص بك في Latchkey\./, 'the saved language');
  await server.call('update_profile', { locale: '' }, { protocol: 'rest', headers: phoneBearer });
  await server.call('login', { phone_number: phone, password: PASSWORD }, { protocol: 'graphql', headers: { 'accept-language': 'xx' } });
  t.regex(texts().at(-1) ?? '', /^[0-9]{6} is your Latchkey verification code\./, 'a language without texts: English');
});

test('the organization invitation: the invitee account’s saved language, else the inviting request’s', async (t) => {
  const owner = await account('owner@example.com');
  const invitee = await account('invitee@example.com');
  await server.call('update_profile', { locale: 'ja' }, { protocol: 'rest', headers: invitee.bearer });
  const org = await server.call('create_organization', { name: 'Acme <Labs>' }, { protocol: 'rest', headers: owner.bearer });
  t.is(org.error, undefined);
  const id = (org.body?.['organization'] as { id: string } | undefined)?.id ?? (org.body?.['id'] as string);
  const inv = await server.call('invite_organization_members', { organization_id: id, emails: ['invitee@example.com', 'stranger@example.com'] }, { protocol: 'rest', headers: { ...owner.bearer, 'accept-language': 'es' } });
  t.is(inv.error, undefined);
  t.deepEqual(await subjectsTo('invitee@example.com', 1), ['Acme <Labs> への招待']);
  t.deepEqual(await subjectsTo('stranger@example.com', 1), ['Invitación a Acme <Labs>']);
  const raw = qp(rawTo('stranger@example.com')[0]!);
  t.true(raw.includes('<b>Acme &#60;Labs&#62;</b>'), 'the name is escaped in the HTML');
});
