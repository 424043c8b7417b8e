/**
 * Emails stored before width and invisible-character normalisation are
 * rewritten to their key at startup (SQL migration `auth 0005_email_key`, and
 * its DynamoDB counterpart), over the real server on SQLite, PostgreSQL,
 * MySQL/MariaDB and DynamoDB: a fullwidth or zero-width-space address with
 * no look-alike becomes the plain address and signs in under every spelling;
 * of two rows that now share a key, the one holding the claim keeps it (or
 * the first created), and the other keeps its address and its data, reached
 * by id but by no spelling of the address. Nothing is lost, nothing crashes,
 * and a second start changes nothing.
 */
import test from 'ava';
import { QueryTypes, type Sequelize } from 'sequelize';
import { DynamoDatabase } from '../../auth/index.ts';
import { openSequelize } from '../../engine/sql/sqlite_sequelize.ts';
import { parseFlags, startServer, type RunningServer } from '../../cmd/index.ts';
import { mainBackends, type MainBackend } from '../helpers/main_databases.ts';
import { TEST_ADMIN_SECRET, TEST_CLIENT_ID, TEST_CLIENT_SECRET, TEST_JWT_SECRET, startTestServer, type ServerDatabase } from '../helpers/server.ts';

const admin = { 'x-service-admin-secret': TEST_ADMIN_SECRET };
const PASSWORD = 'correct horse battery staple';
const fullwidth = (s: string): string => s.replace(/[\x21-\x7e]/g, (c) => String.fromCodePoint(c.charCodeAt(0) + 0xfee0));

/** A server on an existing database (the migrations run at its start). */
async function restart(database: ServerDatabase): Promise<RunningServer> {
  const flags = {
    ...database.flags,
    'admin-secret': TEST_ADMIN_SECRET,
    'client-id': TEST_CLIENT_ID,
    'client-secret': TEST_CLIENT_SECRET,
    'jwt-type': 'HS256',
    'jwt-secret': TEST_JWT_SECRET,
    host: '127.0.0.1',
    'http-port': 0,
    'grpc-port': 0,
    'metrics-port': 0,
    'log-level': 'silent',
    'enable-email-verification': false,
  };
  const parsed = parseFlags(Object.entries(flags).map(([k, v]) => `--${k}=${String(v)}`));
  if (!parsed.ok) throw new Error(parsed.problems.join('\n'));
  return startServer(parsed.config);
}

async function post(server: RunningServer, path: string, body: unknown, headers: Record<string, string> = {}): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`${server.httpUrl}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', origin: server.httpUrl, ...headers }, body: JSON.stringify(body) });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

/** Sets a user's stored email, claim and creation time as an older server would have left them. */
interface Tamper {
  (id: string, email: string, createdAt: number): Promise<void>;
  /** Marks the email rewrite as not yet run; closes the connection. */
  rewind(): Promise<void>;
}

function sqlTamper(sequelize: Sequelize): Tamper {
  const fn = (async (id: string, email: string, createdAt: number) => {
    await sequelize.query('UPDATE users SET email = ?, created_at = ? WHERE id = ?', { replacements: [email, createdAt, id] });
    await sequelize.query("UPDATE user_identifiers SET value = ? WHERE kind = 'email' AND user_id = ?", { replacements: [email, id] });
  }) as Tamper;
  fn.rewind = async () => {
    const [row] = await sequelize.query<{ n: number | string }>("SELECT COUNT(*) AS n FROM latchkey_migrations WHERE component = 'auth' AND id = '0005_email_key'", { type: QueryTypes.SELECT });
    if (Number(row?.n) !== 1) throw new Error('migration 0005_email_key was not recorded');
    await sequelize.query("DELETE FROM latchkey_migrations WHERE component = 'auth' AND id = '0005_email_key'");
    await sequelize.close();
  };
  return fn;
}

function dynamoTamper(database: ServerDatabase): Tamper {
  const db = DynamoDatabase.open({ region: 'us-east-1', endpoint: database.url, accessKeyId: 'test', secretAccessKey: 'test', tablePrefix: database.flags['cloud-table-prefix']! });
  const fn = (async (id: string, email: string, createdAt: number) => {
    const user = await db.get('users', id, '-');
    if (user === undefined) throw new Error('no user item');
    await db.delete('user_identifiers', `email#${String(user['email'])}`, '-');
    await db.put('user_identifiers', { pk: `email#${email}`, sk: '-', kind: 'email', value: email, user_id: id, created_at: createdAt });
    await db.update('users', id, '-', { set: { email, created_at: createdAt } });
  }) as Tamper;
  fn.rewind = async () => {
    const mark = await db.delete('user_identifiers', 'migration#0005_email_key', '-');
    if (mark === undefined) throw new Error('the email rewrite was not marked');
    db.close();
  };
  return fn;
}

for (const backend of mainBackends() as MainBackend[]) {
  test(`${backend}: stored look-alike emails are rewritten to their key at startup; colliding rows keep their data`, async (t) => {
    const first = await startTestServer({ 'enable-email-verification': false }, { backend });
    t.teardown(() => first.database.drop());
    const names = ['kate', 'dave', 'bob', 'carol', 'eve1', 'eve2'] as const;
    const ids = {} as Record<(typeof names)[number], string>;
    for (const name of names) {
      const r = await first.call('signup', { email: `${name}@migrate.test`, password: PASSWORD }, { protocol: 'rest' });
      if (r.error) throw new Error(`signup ${name}: ${r.error.code}`);
      ids[name] = (r.body!['user'] as { id: string }).id;
    }
    await first.server.close();

    const tamper = backend === 'dynamodb' ? dynamoTamper(first.database) : sqlTamper(openSequelize(first.database.url, { logging: false }));
    const wideKate = `${fullwidth('kate')}@migrate.test`;
    // dave: a fullwidth look-alike of kate made after her; bob, carol: look-alikes of nobody;
    // eve1 and eve2: two look-alikes of one address that nobody holds yet, eve1 the older.
    await tamper(ids['kate'], 'kate@migrate.test', 1_000);
    await tamper(ids['dave'], wideKate, 2_000);
    await tamper(ids['bob'], `${fullwidth('bob')}@migrate.test`, 3_000);
    await tamper(ids['carol'], 'ca\u200brol@migrate.test', 4_000);
    await tamper(ids['eve2'], 'e\u200bve@migrate.test', 6_000);
    await tamper(ids['eve1'], `${fullwidth('eve')}@migrate.test`, 5_000);
    await tamper.rewind();

    for (const round of [1, 2]) {
      const server = await restart(first.database);
      try {
        const login = async (email: string) => {
          const r = await post(server, '/v1/login', { email, password: PASSWORD });
          return r.status === 200 ? (r.body['user'] as { id: string; email: string }) : { id: `${r.status} ${String(r.body['code'])}`, email: '' };
        };
        const byId = async (id: string) => (await post(server, '/v1/admin/user', { id }, admin)).body['email'];
        // No look-alike: rewritten, and every spelling signs in.
        for (const [name, spellings] of [
          ['bob', ['bob@migrate.test', `${fullwidth('bob')}@migrate.test`]],
          ['carol', ['carol@migrate.test', `${fullwidth('carol')}@migrate.test`]],
        ] as const) {
          for (const spelling of spellings) t.is((await login(spelling)).id, ids[name], `round ${round}: ${spelling}`);
          t.is(await byId(ids[name]), `${name}@migrate.test`, `round ${round}`);
        }
        // kate held the address: she keeps it; dave keeps his stored address and everything else.
        t.is((await login(wideKate)).id, ids['kate']);
        t.is((await login('kate@migrate.test')).id, ids['kate']);
        t.is(await byId(ids['dave']), wideKate);
        t.is((await post(server, '/v1/signup', { email: wideKate, password: PASSWORD })).body['code'], 'already_exists');
        // Nobody held eve@: the older look-alike takes it, the other keeps its address.
        t.is((await login('eve@migrate.test')).id, ids['eve1']);
        t.is(await byId(ids['eve1']), 'eve@migrate.test');
        t.is(await byId(ids['eve2']), 'e\u200bve@migrate.test');
        // No user lost.
        const users = await post(server, '/v1/admin/users', { pagination: { limit: 100, page: 1 } }, admin);
        t.is((users.body['users'] as unknown[]).length, 6, `round ${round}`);
      } finally {
        await server.close();
      }
    }
  });
}
