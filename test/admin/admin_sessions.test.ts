import test from 'ava';
import { openSequelize } from '../../engine/sql/sqlite_sequelize.ts';
import { createTestDatabase } from '../helpers/databases.ts';
import { AdminSessions, ADMIN_COOKIE, migrateAdminStore, openAdminStores } from '../../admin/index.ts';
import type { LatchkeyError } from '../../engine/errors.ts';
import { mainBackends, openTestMain } from '../helpers/main_databases.ts';

for (const backend of mainBackends()) {
  test(`admin sessions: login, verify, slide, expire, logout (${backend})`, async (t) => {
    const m = await openTestMain(backend);
    try {
      const { sessions: store } = await openAdminStores(m.database);
      let now = 1_700_000_000_000;
      const sessions = new AdminSessions({ store, adminSecret: 's3cret', ttlMs: 60_000, clock: () => now });
      const { token, expiresAt } = await sessions.login('s3cret', '10.1.1.1');
      t.is(expiresAt, now + 60_000);
      t.true(token.length >= 43);
      t.true(await sessions.verify(token));
      t.false(await sessions.verify(token + 'x'));
      const rows = m.sequelize ? (await m.sequelize.query('SELECT id_hash FROM admin_sessions'))[0] : await m.dynamo!.scan('admin_sessions');
      t.is((rows as unknown[]).length, 1);
      t.false(JSON.stringify(rows).includes(token), 'only a hash of the id is stored');
      now += 50_000;
      await sessions.refresh(token);
      now += 50_000;
      t.true(await sessions.verify(token), 'refresh slid the expiry');
      now += 11_000;
      t.false(await sessions.verify(token));
      const expired = await t.throwsAsync(sessions.refresh(token));
      t.is((expired as LatchkeyError).code, 'unauthenticated');
      const second = await sessions.login('s3cret', '10.1.1.1');
      t.is(await sessions.authenticate({ cookies: { [ADMIN_COOKIE]: second.token } }, '1.2.3.4', true), 'cookie');
      await sessions.logout(second.token);
      t.false(await sessions.verify(second.token));
      t.is(await sessions.authenticate({ cookies: { [ADMIN_COOKIE]: second.token } }, '1.2.3.4', false), undefined);
      const wrong = await t.throwsAsync(sessions.login('nope', '10.1.1.1'));
      t.is((wrong as LatchkeyError).code, 'unauthenticated');
      t.is((wrong as LatchkeyError).message, 'unauthorized');
      t.deepEqual(sessions.cookieAttributes(true), { httpOnly: true, secure: true, sameSite: 'Strict', path: '/', maxAgeSeconds: 60 });
    } finally {
      await m.close();
    }
  });
}

test('admin secret: the header is ignored when disabled; wrong secrets are rate limited per IP before comparing', async (t) => {
  const db = await createTestDatabase('sqlite');
  const sequelize = openSequelize(db.url, { logging: false });
  try {
    await migrateAdminStore(sequelize);
    let now = 0;
    const sessions = new AdminSessions({ sequelize, adminSecret: 'right', maxFailures: 3, windowMs: 60_000, clock: () => now });
    t.is(await sessions.authenticate({ adminSecret: 'right', cookies: {} }, 'a', false), 'header');
    t.is(await sessions.authenticate({ adminSecret: 'right', cookies: {} }, 'a', true), undefined);
    for (let i = 0; i < 3; i++) {
      const e = await t.throwsAsync(sessions.authenticate({ adminSecret: 'wrong', cookies: {} }, 'a', false));
      t.is((e as LatchkeyError).code, 'unauthenticated');
    }
    // Over the limit: refused even with the right secret, until the window passes.
    const limited = await t.throwsAsync(sessions.checkSecret('right', 'a'));
    t.is((limited as LatchkeyError).code, 'resource_exhausted');
    t.is((limited as LatchkeyError).reason, 'too_many_attempts');
    const limitedLogin = await t.throwsAsync(sessions.login('right', 'a'));
    t.is((limitedLogin as LatchkeyError).code, 'resource_exhausted');
    // Another IP is unaffected.
    await t.notThrowsAsync(sessions.checkSecret('right', 'b'));
    now += 60_001;
    await t.notThrowsAsync(sessions.checkSecret('right', 'a'));
  } finally {
    await sequelize.close();
    await db.drop();
  }
});
