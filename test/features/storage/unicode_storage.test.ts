/**
 * Text outside the Basic Multilingual Plane (emoji, supplementary CJK) is
 * stored and answered the same on SQLite, PostgreSQL and MySQL/MariaDB:
 * names, the local part of an email address, an email template's subject and
 * body (and the mail rendered from it), a webhook's payload and its delivery
 * log. On MySQL the database is created with a `latin1` default, as a server
 * left at its defaults may have it, so the tables' own utf8mb4 character set
 * is what holds the text. Addresses are compared as on the other backends:
 * `josé@` and `jose@` are two accounts, `JOSÉ@` is `josé@`.
 *
 * And the conversion (migrations `auth 0004_utf8mb4`, `auth_verification
 * 0002_utf8mb4`, `auth_mfa 0002_utf8mb4`, `admin 0003_utf8mb4`, internal
 * migration runner): tables made before in latin1 become utf8mb4 /
 * utf8mb4_bin with their text kept.
 */
import test from 'ava';
import { randomBytes } from 'node:crypto';
import mysql from 'mysql2/promise';
import { QueryTypes } from 'sequelize';
import { AUTH_MIGRATIONS, MFA_MIGRATIONS, SqlMfaStore, SqlUserStore, SqlVerificationStore, VERIFICATION_MIGRATIONS } from '../../../auth/index.ts';
import { ADMIN_MIGRATIONS, migrateAdminStore } from '../../../admin/index.ts';
import { runMigrations, type Migration } from '../../../engine/sql/migrate.ts';
import { openSequelize } from '../../../engine/sql/sqlite_sequelize.ts';
import { mysqlUrl, sqlBackends, type SqlBackend } from '../../helpers/databases.ts';
import { TEST_ADMIN_SECRET, startTestServer, type TestServer } from '../../helpers/server.ts';
import { startReceiver } from '../../admin/receiver.ts';
import { startSmtp } from '../../admin/smtp.ts';

const ORIGIN = 'https://app.example.com';
const PASSWORD = 'Correct horse 9 battery!';
const CJK = '𠀋𡈽𪚲'; // U+2000B, U+2123D, U+2A6B2: outside the BMP, four bytes each in UTF-8
const EMOJI = '😀🧑‍💻🇯🇵';
const LOCAL = `${EMOJI}.${CJK}`;

/** A MySQL database whose default character set is latin1; dropped by the returned function. */
async function latin1Database(): Promise<{ url: string; drop: () => Promise<void> }> {
  const admin = mysqlUrl();
  if (!admin) throw new Error('MySQL is not configured (LATCHKEY_TEST_MYSQL_URL)');
  const name = `lk_latin1_${Date.now().toString(36)}_${randomBytes(4).toString('hex')}`;
  const conn = await mysql.createConnection(admin);
  try {
    await conn.query(`CREATE DATABASE \`${name}\` CHARACTER SET latin1 COLLATE latin1_swedish_ci`);
  } finally {
    await conn.end();
  }
  const url = new URL(admin);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    drop: async () => {
      const c = await mysql.createConnection(admin);
      try {
        await c.query(`DROP DATABASE IF EXISTS \`${name}\``);
      } finally {
        await c.end();
      }
    },
  };
}

/** The decoded subject and text parts of a raw MIME mail (quoted-printable and base64 parts, encoded words). */
function mailText(raw: string): { subject: string; body: string } {
  const unfolded = raw.replace(/\r\n[ \t]+/g, ' ');
  const subjectLine = /^Subject: (.*)$/m.exec(unfolded)?.[1] ?? '';
  const subject = subjectLine
    .replace(/=\?UTF-8\?([BQ])\?([^?]*)\?=\s*/gi, (_m, enc: string, text: string) =>
      enc.toUpperCase() === 'B' ? Buffer.from(text, 'base64').toString('utf8') : qp(text.replace(/_/g, ' ')),
    )
    .trim();
  const parts = raw.split(/\r?\n--[^\r\n]+\r?\n/);
  const body = parts
    .map((part) => {
      const split = part.search(/\r?\n\r?\n/);
      if (split < 0) return '';
      const headers = part.slice(0, split);
      const content = part.slice(split).trim();
      if (/Content-Transfer-Encoding: base64/i.test(headers)) return Buffer.from(content.replace(/\s+/g, ''), 'base64').toString('utf8');
      if (/Content-Transfer-Encoding: quoted-printable/i.test(headers)) return qp(content);
      return content;
    })
    .join('\n');
  return { subject, body };
}

function qp(text: string): string {
  const bytes: number[] = [];
  const s = text.replace(/=\r?\n/g, '');
  for (let i = 0; i < s.length; i++) {
    if (s[i] === '=' && /^[0-9A-F]{2}$/i.test(s.slice(i + 1, i + 3))) {
      bytes.push(parseInt(s.slice(i + 1, i + 3), 16));
      i += 2;
    } else {
      bytes.push(...Buffer.from(s[i]!, 'utf8'));
    }
  }
  return Buffer.from(bytes).toString('utf8');
}

/** The identity and admin tables. */
const TABLES = ['users', 'user_identifiers', 'verification_requests', 'otps', 'authenticators', 'webhooks', 'webhook_deliveries', 'webhook_logs', 'email_templates', 'audit_logs', 'admin_sessions', 'mail_outbox'];

async function until(what: string, cond: () => boolean, ms = 20_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Runs the same requests on one backend and returns what they answered (ids and times left out). */
async function transcript(backend: SqlBackend): Promise<Record<string, unknown>> {
  const receiver = await startReceiver();
  const smtp = await startSmtp();
  const latin1 = backend === 'mysql' ? await latin1Database() : undefined;
  let srv: TestServer | undefined;
  try {
    srv = await startTestServer(
      {
        'webhook-allow-private-networks': true,
        'allowed-origins': ORIGIN,
        'smtp-host': '127.0.0.1',
        'smtp-port': smtp.port,
        'smtp-sender-email': 'noreply@example.com',
        'enable-email-verification': false,
        ...(latin1 === undefined ? {} : { 'database-url': latin1.url }),
      },
      { backend },
    );
    const server = srv;
    const call = async (op: string, input: Record<string, unknown>, admin = false) => {
      const headers: Record<string, string> = { origin: ORIGIN, ...(admin ? { 'x-service-admin-secret': TEST_ADMIN_SECRET } : {}) };
      const r = await server.call(op, input, { protocol: 'rest', headers });
      return r.error ? { error: r.error.code } : (r.body ?? {});
    };
    const userOf = (r: Record<string, unknown>) => {
      const u = r['user'] as Record<string, unknown> | undefined;
      return u === undefined ? r : { email: u['email'], given_name: u['given_name'], family_name: u['family_name'], nickname: u['nickname'], app_data: u['app_data'] };
    };
    const out: Record<string, unknown> = {};

    const hook = (await call('add_webhook', { event_name: 'user.signup', endpoint: `${receiver.url}/signup` }, true)) as { id?: string };
    out['template'] = await call(
      'add_email_template',
      { event_name: 'forgot_password', subject: `${EMOJI} reset ${CJK}`, template: `<p>${CJK} {{ user.given_name }} ${EMOJI}</p><a href="{{ verification_url }}">reset</a>` },
      true,
    ).then((r) => ('error' in r ? r : { ok: true }));

    const email = `${LOCAL}@example.com`;
    out['signup'] = userOf(
      await call('signup', { email, password: PASSWORD, given_name: CJK, family_name: EMOJI, nickname: `${CJK}${EMOJI}`, app_data: { motto: `${EMOJI} ${CJK}` } }),
    );
    out['login'] = userOf(await call('login', { email: email.toUpperCase(), password: PASSWORD }));
    out['accented'] = [
      await call('signup', { email: 'josé@example.com', password: PASSWORD }).then(userOf),
      await call('signup', { email: 'jose@example.com', password: PASSWORD }).then(userOf),
      await call('signup', { email: 'JOSÉ@example.com', password: PASSWORD }).then(userOf),
      await call('signup', { email: `${LOCAL}@EXAMPLE.com`, password: PASSWORD }).then(userOf),
    ];
    out['admin_user'] = await call('user', { email }, true).then((r) => ({ given_name: r['given_name'], family_name: r['family_name'], nickname: r['nickname'] }));
    out['stored_template'] = await call('email_templates', {}, true).then((r) =>
      ((r['email_templates'] as Array<Record<string, unknown>> | undefined) ?? []).map((x) => ({ event_name: x['event_name'], subject: x['subject'], template: x['template'] })),
    );

    // The reset mail is rendered from the stored template and queued in the outbox.
    out['forgot'] = await call('forgot_password', { email });
    await until('the reset mail', () => smtp.mails.length > 0);
    const mail = mailText(smtp.mails[0]!);
    out['mail'] = { subject: mail.subject, has_body: mail.body.includes(`${CJK} ${CJK} ${EMOJI}`) };

    // The webhook's payload carries the names, and so does its delivery log.
    await until('the user.signup deliveries', () => receiver.received.length >= 3);
    const payloads = receiver.received.map((r) => JSON.parse(r.body) as { event_name: string; user: Record<string, unknown> });
    out['webhook'] = payloads
      .map((p) => ({ event: p.event_name, email: p.user['email'], given_name: p.user['given_name'], family_name: p.user['family_name'] }))
      .sort((a, b) => (String(a.email) < String(b.email) ? -1 : 1));
    const logs = (await call('webhook_logs', { webhook_id: hook.id }, true)) as { webhook_logs?: Array<{ request: string; outcome: string }> };
    out['webhook_logs'] = (logs.webhook_logs ?? []).map((l) => ({ outcome: l.outcome, names: l.request.includes(CJK) && l.request.includes(EMOJI) })).filter((l) => l.names);
    return out;
  } finally {
    await srv?.close();
    await latin1?.drop();
    await smtp.close();
    await receiver.close();
  }
}

test('4-byte characters in names, email local parts, templates, mails and webhook payloads: stored and answered alike on every SQL backend (MySQL in a latin1 database)', async (t) => {
  const answers = new Map<SqlBackend, Record<string, unknown>>();
  for (const backend of sqlBackends()) answers.set(backend, await transcript(backend));
  const sqlite = answers.get('sqlite')!;
  t.like(sqlite, {
    template: { ok: true },
    signup: { email: `${LOCAL}@example.com`, given_name: CJK, family_name: EMOJI, nickname: `${CJK}${EMOJI}`, app_data: { motto: `${EMOJI} ${CJK}` } },
    login: { email: `${LOCAL}@example.com`, given_name: CJK },
    admin_user: { given_name: CJK, family_name: EMOJI, nickname: `${CJK}${EMOJI}` },
    mail: { subject: `${EMOJI} reset ${CJK}`, has_body: true },
  });
  t.deepEqual(
    (sqlite['accented'] as Array<Record<string, unknown>>).map((r) => r['email'] ?? r['error']),
    ['josé@example.com', 'jose@example.com', 'already_exists', 'already_exists'],
    'josé and jose are two accounts; JOSÉ is josé',
  );
  t.deepEqual(sqlite['stored_template'], [{ event_name: 'forgot_password', subject: `${EMOJI} reset ${CJK}`, template: `<p>${CJK} {{ user.given_name }} ${EMOJI}</p><a href="{{ verification_url }}">reset</a>` }]);
  t.is((sqlite['webhook'] as unknown[]).length, 3);
  t.like((sqlite['webhook'] as Array<{ email: string }>).find((w) => w.email === `${LOCAL}@example.com`), { event: 'user.signup', given_name: CJK, family_name: EMOJI });
  t.is((sqlite['webhook_logs'] as unknown[]).length, 1, 'the delivery log keeps the payload');
  for (const [backend, answer] of answers) t.deepEqual(answer, sqlite, `${backend} answers as SQLite`);
  t.deepEqual([...answers.keys()], sqlBackends());
});

// MySQL only (configured in CI, where a missing URL fails in sqlBackends()).
if (sqlBackends().includes('mysql')) test('MySQL: identity and admin tables made in latin1 are converted to utf8mb4 / utf8mb4_bin with their text kept (internal migration runner)', async (t) => {
  const db = await latin1Database();
  t.teardown(() => db.drop());
  const sequelize = openSequelize(db.url, { logging: false });
  t.teardown(() => sequelize.close());
  // The schema as it was before the conversion: the migrations before it, each table then in the
  // database's latin1 default (as tables created without table options were).
  const before = (migrations: readonly Migration[]): Migration[] => migrations.filter((m) => !m.id.endsWith('_utf8mb4'));
  await runMigrations(sequelize, 'auth', before(AUTH_MIGRATIONS));
  await runMigrations(sequelize, 'auth_verification', before(VERIFICATION_MIGRATIONS));
  await runMigrations(sequelize, 'auth_mfa', before(MFA_MIGRATIONS));
  await runMigrations(sequelize, 'admin', before(ADMIN_MIGRATIONS));
  for (const table of TABLES) await sequelize.query(`ALTER TABLE ${table} CONVERT TO CHARACTER SET latin1 COLLATE latin1_swedish_ci`);
  await sequelize.query("INSERT INTO users (id, email, given_name, signup_methods, roles, created_at, updated_at) VALUES ('u1', 'zoe@example.com', 'Zoë Ångström', 'basic_auth', 'user', 1, 1)");
  await sequelize.query("INSERT INTO user_identifiers (kind, value, user_id, created_at) VALUES ('email', 'zoe@example.com', 'u1', 1)");
  await sequelize.query("INSERT INTO email_templates (id, event_name, subject, template, design, created_at, updated_at) VALUES ('t1', 'forgot_password', 'Café', '<p>Crème brûlée</p>', '', 1, 1)");
  const latin1Columns = await sequelize.query<{ n: number | string }>(
    "SELECT COUNT(*) AS n FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND CHARACTER_SET_NAME = 'latin1' AND TABLE_NAME IN ('users', 'email_templates')",
    { type: QueryTypes.SELECT },
  );
  t.true(Number(latin1Columns[0]?.n) > 0, 'the old tables are latin1');
  await t.throwsAsync(sequelize.query(`UPDATE users SET nickname = '${EMOJI}' WHERE id = 'u1'`), undefined, 'a latin1 column refuses an emoji');

  // Startup: the stores' migrations convert.
  const users = new SqlUserStore({ sequelize });
  await users.init();
  await new SqlVerificationStore({ sequelize, nowSeconds: () => 1 }).init();
  await new SqlMfaStore({ sequelize, nowSeconds: () => 1 }).init();
  await migrateAdminStore(sequelize);
  const tables = TABLES;
  const columns = await sequelize.query<{ table_name: string; column_name: string; cs: string; co: string }>(
    `SELECT TABLE_NAME AS table_name, COLUMN_NAME AS column_name, CHARACTER_SET_NAME AS cs, COLLATION_NAME AS co FROM information_schema.COLUMNS
      WHERE TABLE_SCHEMA = DATABASE() AND CHARACTER_SET_NAME IS NOT NULL AND TABLE_NAME IN (${tables.map(() => '?').join(', ')})`,
    { replacements: tables, type: QueryTypes.SELECT },
  );
  t.deepEqual([...new Set(columns.map((c) => c.table_name))].sort(), [...tables].sort());
  t.deepEqual(
    columns.filter((c) => c.cs !== 'utf8mb4' || c.co !== 'utf8mb4_bin').map((c) => `${c.table_name}.${c.column_name}: ${c.cs}/${c.co}`),
    [],
  );
  t.like(await users.findByEmail('zoe@example.com'), { id: 'u1', given_name: 'Zoë Ångström' });
  const [template] = await sequelize.query<{ subject: string; template: string }>("SELECT subject, template FROM email_templates WHERE id = 't1'", { type: QueryTypes.SELECT });
  t.deepEqual(template, { subject: 'Café', template: '<p>Crème brûlée</p>' });
  const updated = await users.update('u1', { nickname: EMOJI, given_name: CJK });
  t.like(updated, { nickname: EMOJI, given_name: CJK });
  // A new table of the next migration run would take the database default: the stores' tables do not depend on it.
  const [dbDefault] = await sequelize.query<{ cs: string }>('SELECT @@character_set_database AS cs', { type: QueryTypes.SELECT });
  t.is(dbDefault?.cs, 'latin1');
});
