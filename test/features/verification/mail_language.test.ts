/**
 * The language of the mails a request queues, through the real SMTP sink on
 * loopback: the built-in verification, magic-link and password-reset
 * templates follow the request's Accept-Language (REST and GraphQL headers,
 * gRPC metadata); a language without templates, or none, is English; a
 * template the admin stored for the event is used for every language.
 */
import anyTest from 'ava';
import { mailsTo, startSmtp, type Smtp } from '../../admin/smtp.ts';
import { TEST_ADMIN_SECRET, startTestServer, type TestServer } from '../../helpers/server.ts';

const test = anyTest.serial;
const PASSWORD = 'correct horse battery staple';
const ADMIN = { 'x-service-admin-secret': TEST_ADMIN_SECRET };

let smtp: Smtp;
let server: TestServer;

test.before(async () => {
  smtp = await startSmtp();
  server = await startTestServer({
    'enable-email-verification': true,
    'enable-magic-link-login': true,
    'smtp-host': '127.0.0.1',
    'smtp-port': smtp.port,
    'smtp-sender-email': 'noreply@example.com',
  });
});
test.after.always(async () => {
  await server?.close();
  await smtp?.close();
});

/** Quoted-printable (or an RFC 2047 Q word) to UTF-8 text. */
const qp = (text: string, word = false): string =>
  Buffer.from((word ? text.replace(/_/g, ' ') : text.replace(/=\r?\n/g, '')).replace(/=([0-9A-F]{2})/gi, (_m, h: string) => String.fromCharCode(parseInt(h, 16))), 'latin1').toString('utf8');

/** The raw mails to `email` once `count` have arrived, each as its decoded subject and body. */
async function mailsOf(email: string, count: number): Promise<{ subject: string; body: string }[]> {
  await mailsTo(smtp, email, count);
  return smtp.mails
    .filter((m) => new RegExp(`^To: .*${email.replace(/[.+]/g, (c) => `\\${c}`)}`, 'mi').test(m))
    .map((raw) => {
      const header = /^Subject: (.*(?:\r?\n[ \t].*)*)/m.exec(raw)?.[1] ?? '';
      const subject = header
        .replace(/\r?\n[ \t]/g, ' ')
        .replace(/=\?utf-8\?([bq])\?([^?]*)\?=\s*/gi, (_m, enc: string, text: string) => (enc.toLowerCase() === 'b' ? Buffer.from(text, 'base64').toString('utf8') : qp(text, true)))
        .trim();
      return { subject, body: qp(raw) };
    });
}

test('the sign-up verification mail follows Accept-Language on every protocol; English otherwise', async (t) => {
  const cases = [
    { protocol: 'rest', lang: 'de-DE,de;q=0.9,en;q=0.5', subject: 'Bestätigen Sie Ihre E-Mail-Adresse', body: 'E-Mail bestätigen' },
    { protocol: 'graphql', lang: 'fr', subject: 'Confirmez votre adresse e-mail', body: 'confirmer l’adresse' },
    { protocol: 'grpc', lang: 'ja', subject: 'メールアドレスの確認', body: 'メールを確認' },
    { protocol: 'rest', lang: 'nl-NL, es;q=0.8', subject: 'Verifica tu dirección de correo', body: 'verificar correo' },
    { protocol: 'rest', lang: 'nl', subject: 'Verify your email address', body: 'verify email' },
    { protocol: 'grpc', lang: undefined, subject: 'Verify your email address', body: 'verify email' },
  ] as const;
  for (const [i, c] of cases.entries()) {
    const email = `lang${i}@example.com`;
    const r = await server.call('signup', { email, password: PASSWORD }, { protocol: c.protocol, headers: c.lang === undefined ? {} : { 'accept-language': c.lang } });
    t.is(r.error, undefined, `${c.protocol} ${c.lang}`);
    const [mail] = await mailsOf(email, 1);
    t.is(mail?.subject, c.subject, `${c.protocol} ${c.lang}`);
    t.true(mail?.body.includes(c.body), `${c.protocol} ${c.lang}: the body`);
  }
});

test('the magic-link and password-reset mails follow the request that asks for them; a stored template is used for every language', async (t) => {
  const email = 'lang-links@example.com';
  await server.call('signup', { email, password: PASSWORD }, { protocol: 'rest' });
  await server.call('magic_link_login', { email }, { protocol: 'graphql', headers: { 'accept-language': 'ar' } });
  await server.call('forgot_password', { email }, { protocol: 'grpc', headers: { 'accept-language': 'es' } });
  const subjects = (await mailsOf(email, 3)).map((m) => m.subject);
  t.true(subjects.includes('رابط تسجيل الدخول'), subjects.join(' | '));
  t.true(subjects.includes('Restablece tu contraseña'), subjects.join(' | '));
  t.true((await mailsOf(email, 3)).some((m) => m.body.includes('Restablecer la contraseña')));

  const stored = await server.call('add_email_template', { event_name: 'forgot_password', subject: 'Company reset', template: '<p>Reset: <a href="{{ verification_url }}">here</a></p>' }, { protocol: 'rest', headers: ADMIN });
  t.is(stored.error, undefined);
  await server.call('forgot_password', { email }, { protocol: 'rest', headers: { 'accept-language': 'de' } });
  t.true((await mailsOf(email, 4)).some((m) => m.subject === 'Company reset'));
});
