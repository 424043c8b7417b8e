import test from 'ava';
import { QueryTypes, Sequelize } from 'sequelize';
import { openSequelize } from '../../engine/sql/sqlite_sequelize.ts';
import { DynamoUserStore, SqlUserStore, USER_EXISTS_MESSAGE, type UserRecord, type UserStore } from '../../auth/index.ts';
import { rowToRecord } from '../../auth/user_store.ts';
import { createTestDatabase, sqlBackends, type SqlBackend } from '../helpers/databases.ts';
import { createTestDynamo } from '../helpers/dynamodb.ts';
import { mainBackends, openTestMain, type MainBackend } from '../helpers/main_databases.ts';

/** A fresh user store on any main-database backend. */
async function withAnyStore<T>(backend: MainBackend, fn: (store: UserStore) => Promise<T>): Promise<T> {
  if (backend !== 'dynamodb') return withStore(backend, (store) => fn(store));
  const m = await openTestMain(backend);
  try {
    const store = new DynamoUserStore({ db: m.dynamo! });
    await store.init();
    return await fn(store);
  } finally {
    await m.close();
  }
}

async function withStore<T>(backend: SqlBackend, fn: (store: UserStore, sequelize: Sequelize) => Promise<T>, before?: (s: Sequelize) => Promise<void>): Promise<T> {
  const db = await createTestDatabase(backend, 'lk_auth');
  const sequelize = openSequelize(db.url, { logging: false, pool: { max: 25 } });
  try {
    if (before) await before(sequelize);
    const store = new SqlUserStore({ sequelize });
    await store.init();
    return await fn(store, sequelize);
  } finally {
    await sequelize.close();
    await db.drop();
  }
}

for (const backend of mainBackends()) {
  test(`20 parallel creates with one email in mixed case and whitespace make exactly one user (${backend})`, async (t) => {
    await withAnyStore(backend, async (store) => {
      const variants = Array.from({ length: 20 }, (_, i) => `${i % 3 === 0 ? '  ' : ''}${i % 2 ? 'Race@Example.COM' : 'race@example.com'}${i % 4 === 0 ? ' ' : ''}`);
      const results = await Promise.allSettled(variants.map((email) => store.create({ email, roles: ['user'], signup_methods: 'basic_auth' })));
      const ok = results.filter((r) => r.status === 'fulfilled');
      const failed = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
      t.is(ok.length, 1);
      t.is(failed.length, 19);
      for (const f of failed) {
        t.is(f.reason.code, 'already_exists');
        t.is(f.reason.message, USER_EXISTS_MESSAGE);
      }
      t.is(await store.countByEmail('race@example.com'), 1);
    });
  });

  test(`racing creates whose email and phone claims cross still end with one winner and already_exists, never another error (${backend})`, async (t) => {
    await withAnyStore(backend, async (store) => {
      const results = await Promise.allSettled(
        Array.from({ length: 20 }, (_, i) =>
          store.create(i % 2 === 0 ? { email: `a${i}@example.com`, phone_number: '+4930123456' } : { email: 'shared@example.com', phone_number: `+49301234${String(i).padStart(2, '0')}` }),
        ),
      );
      const failed = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
      for (const f of failed) t.is(f.reason.code, 'already_exists');
      // One holder of the shared phone and one of the shared email (possibly the same user).
      t.true(results.length - failed.length >= 1 && results.length - failed.length <= 2);
      t.truthy(await store.findByPhone('+4930123456'));
      t.truthy(await store.findByEmail('shared@example.com'));
      t.is(await store.countByEmail('shared@example.com'), 1);
    });
  });

  test(`email and phone are optional; phone-only and email-only users coexist; phone is unique too (${backend})`, async (t) => {
    await withAnyStore(backend, async (store) => {
      const a = await store.create({ phone_number: '+1 555 0100', roles: ['user'] });
      const b = await store.create({ email: 'b@example.com', roles: ['user'] });
      const c = await store.create({ roles: [] });
      t.is(a.email, null);
      t.is(b.phone_number, null);
      t.truthy(c.id);
      const err = await t.throwsAsync(store.create({ phone_number: '+15550100' }));
      t.is((err as { code?: string }).code, 'already_exists');
      t.is((await store.findByPhone('+1-555-0100'))?.id, a.id);
      t.is((await store.findByEmail(' B@EXAMPLE.com '))?.id, b.id);
    });
  });

  test(`changing an email releases the old one and claims the new one (${backend})`, async (t) => {
    await withAnyStore(backend, async (store) => {
      const a = await store.create({ email: 'a@example.com' });
      const b = await store.create({ email: 'b@example.com' });
      const err = await t.throwsAsync(store.update(b.id, { email: 'A@example.com' }));
      t.is((err as { code?: string }).code, 'already_exists');
      await store.update(a.id, { email: 'a2@example.com', given_name: 'Ann', roles: ['user', 'admin'], app_data: { x: 1 } });
      const moved = await store.update(b.id, { email: 'a@example.com' });
      t.is(moved.email, 'a@example.com');
      const a2 = await store.findById(a.id);
      t.is(a2?.given_name, 'Ann');
      t.deepEqual(a2?.roles, ['user', 'admin']);
      t.deepEqual(a2?.app_data, { x: 1 });
      t.true(await store.delete(a.id));
      t.is(await store.findById(a.id), undefined);
      await store.create({ email: 'a2@example.com' });
      const page = await store.list({ offset: 0, limit: 10 });
      t.is(page.total, 2);
    });
  });

}

for (const backend of sqlBackends()) {
  test(`a v1 database's unique constraints and indexes on email and phone are dropped at startup (${backend})`, async (t) => {
    const v1 = async (s: Sequelize): Promise<void> => {
      await s.query(
        'CREATE TABLE users (id VARCHAR(36) NOT NULL PRIMARY KEY, email VARCHAR(256) UNIQUE, phone_number VARCHAR(30), password VARCHAR(255), signup_methods VARCHAR(255), roles VARCHAR(255), given_name VARCHAR(255), created_at BIGINT, updated_at BIGINT)',
      );
      await s.query('CREATE UNIQUE INDEX users_phone_unique ON users (phone_number)');
      await s.query("INSERT INTO users (id, email, phone_number, password, signup_methods, roles, created_at, updated_at) VALUES ('u1', 'Old@Example.com', '+4912345', NULL, 'basic_auth', 'user', 1, 1)");
    };
    await withStore(
      backend,
      async (store, sequelize) => {
        // The same address twice at the database level is now possible (no unique constraint left) ...
        await sequelize.query("INSERT INTO users (id, email, phone_number, signup_methods, roles, created_at, updated_at) VALUES ('u2', 'Old@Example.com', '+4912345', '', '', 2, 2)");
        await sequelize.query("DELETE FROM users WHERE id = 'u2'");
        // ... while the service still refuses it, because the existing row was claimed at migration.
        const err = await t.throwsAsync(store.create({ email: 'old@example.com' }));
        t.is((err as { code?: string }).code, 'already_exists');
        const err2 = await t.throwsAsync(store.create({ phone_number: '+4912345' }));
        t.is((err2 as { code?: string }).code, 'already_exists');
        const u1 = await store.findByEmail('old@example.com');
        t.is(u1?.id, 'u1');
        t.is(u1?.deactivated_at, null);
        // Running the startup path again is a no-op.
        await store.init();
      },
      v1,
    );
  });
}

test('DynamoDB: a create cut short by a crash holds its address only until it is stale, then a sign-up takes the address over', async (t) => {
  const d = await createTestDynamo();
  let now = 1_700_000_000;
  try {
    const store = new DynamoUserStore({ db: d.db, nowSeconds: () => now });
    await store.init();
    // What a process that died after writing the user item and its claim leaves behind.
    await d.db.put('users', { pk: 'dead', sk: '-', id: 'dead', email: 'cut@example.com', roles: '', signup_methods: 'basic_auth', created_at: now, updated_at: now, pending: 1 });
    await d.db.put('user_identifiers', { pk: 'email#cut@example.com', sk: '-', kind: 'email', value: 'cut@example.com', user_id: 'dead', created_at: now });
    t.is(await store.findByEmail('cut@example.com'), undefined, 'an unfinished user is invisible');
    t.is(await store.findById('dead'), undefined);
    t.is((await store.list({ offset: 0, limit: 10 })).total, 0);
    const early = await t.throwsAsync(store.create({ email: 'cut@example.com' }));
    t.is((early as { code?: string }).code, 'already_exists', 'while it may still be finishing, the address is taken');
    now += 61;
    const user = await store.create({ email: 'Cut@example.com' });
    t.is((await store.findByEmail('cut@example.com'))?.id, user.id);
    // A claim whose user is gone altogether is taken over at once.
    await d.db.put('user_identifiers', { pk: 'phone#+4911', sk: '-', kind: 'phone', value: '+4911', user_id: 'nobody', created_at: now });
    t.truthy(await store.create({ phone_number: '+49 11' }));
    // A failing step inside the create leaves nothing behind.
    await t.throwsAsync(store.create({ email: 'within@example.com' }, { within: async () => Promise.reject(new Error('boom')) }));
    t.is(await store.findByEmail('within@example.com'), undefined);
    t.truthy(await store.create({ email: 'within@example.com' }));
  } finally {
    await d.drop();
  }
});

test('SQLite: a user read as positional values is the record read as a row object, whatever the column order of the table (sqlite)', async (t) => {
  await withStore('sqlite', async (first, sequelize) => {
    let store = first;
    const full = await store.create({
      email: 'full@example.com',
      email_verified_at: 1_700_000_001,
      password: '$2b$10$abcdefghijklmnopqrstuv',
      signup_methods: 'basic_auth,magic_link_login',
      given_name: 'Given',
      family_name: 'Family',
      middle_name: 'Middle',
      nickname: 'Nick',
      gender: 'x',
      birthdate: '1990-01-02',
      phone_number: '+15555550100',
      phone_number_verified_at: 1_700_000_002,
      picture: 'https://example.com/p.png',
      roles: ['user', 'admin'],
      revoked_timestamp: 1_700_000_003,
      is_multi_factor_auth_enabled: true,
      app_data: { plan: 'pro', n: [1, 2] },
      deactivated_at: 1_700_000_004,
      locale: 'fr-CA',
    });
    const bare = await store.create({ phone_number: '+15555550101' });
    const viaSequelize = async (id: string): Promise<UserRecord> =>
      rowToRecord((await sequelize.query('SELECT * FROM users WHERE id = ?', { replacements: [id], type: QueryTypes.SELECT }))[0] as Record<string, unknown>);
    const check = async (label: string): Promise<void> => {
      for (const u of [full, bare]) {
        const expected = await viaSequelize(u.id);
        t.deepEqual(await store.findById(u.id), expected, `${label}: findById`);
        if (u.email !== null) t.deepEqual(await store.findByEmail(u.email), expected, `${label}: findByEmail`);
        t.deepEqual(await store.findByPhone(u.phone_number!), expected, `${label}: findByPhone`);
      }
      t.is((await store.findById(full.id))?.is_multi_factor_auth_enabled, true);
      t.deepEqual((await store.findById(full.id))?.app_data, { plan: 'pro', n: [1, 2] });
      t.is((await store.findById(bare.id))?.is_multi_factor_auth_enabled, null);
    };
    await check('columns in the order the store creates them');
    // A table whose columns stand in another order (an older release's, rebuilt by hand): `SELECT *` names them in that order.
    const columns = ((await sequelize.query('PRAGMA table_info(users)', { type: QueryTypes.SELECT })) as { name: string }[]).map((c) => c.name).reverse();
    await sequelize.query(`CREATE TABLE users_reversed AS SELECT ${columns.join(', ')} FROM users`);
    await sequelize.query('DROP TABLE users');
    await sequelize.query('ALTER TABLE users_reversed RENAME TO users');
    const [row] = (await sequelize.query('SELECT * FROM users LIMIT 1', { type: QueryTypes.SELECT })) as Record<string, unknown>[];
    t.is(Object.keys(row!)[0], columns[0]);
    store = new SqlUserStore({ sequelize });
    await check('columns in reverse order');
  });
});
