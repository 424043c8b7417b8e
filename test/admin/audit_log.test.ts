import test from 'ava';
import { openSequelize } from '../../engine/sql/sqlite_sequelize.ts';
import { createTestDatabase, sqlBackends } from '../helpers/databases.ts';
import { AuditLog, migrateAdminStore } from '../../admin/index.ts';
import type { LatchkeyError } from '../../engine/errors.ts';

for (const backend of sqlBackends()) {
  test(`audit log: filters, pagination, newest first, secrets never stored (${backend})`, async (t) => {
    const db = await createTestDatabase(backend);
    const sequelize = openSequelize(db.url, { logging: false });
    try {
      await migrateAdminStore(sequelize);
      let now = 1_700_000_000_000;
      const log = new AuditLog({ sequelize, clock: () => (now += 1000) });
      await log.record({
        actor_type: 'user',
        actor_id: 'u1',
        action: 'user.login_success',
        resource_type: 'user',
        resource_id: 'u1',
        ip_address: '127.0.0.1',
        user_agent: 'ua/1',
        metadata: { password: 'hunter2', access_token: 'eyJ', nested: { admin_secret: 's', ok: 1 }, otp: '123456', method: 'basic_auth' },
      });
      for (let i = 0; i < 12; i++) {
        await log.record({ actor_type: 'admin', actor_id: 'admin', action: 'admin.webhook_created', resource_type: 'webhook', resource_id: `w${i}` });
      }
      await log.record({ actor_type: 'admin', action: 'admin.access_revoked', resource_type: 'user', resource_id: 'u1' });
      const all = await log.list();
      t.is(all.pagination.total, 14);
      t.is(all.audit_logs.length, 10);
      t.is(all.audit_logs[0]!.action, 'admin.access_revoked');
      const login = (await log.list({ action: 'user.login_success' })).audit_logs[0]!;
      t.deepEqual(JSON.parse(login.metadata), { nested: { ok: 1 }, method: 'basic_auth' });
      t.is(login.ip_address, '127.0.0.1');
      t.is(login.user_agent, 'ua/1');
      t.is(login.created_at, 1_700_000_001);
      t.false(JSON.stringify(await log.list({ pagination: { limit: 100 } })).includes('hunter2'));
      t.is((await log.list({ actor_id: 'u1' })).pagination.total, 1);
      t.is((await log.list({ resource: 'user' })).pagination.total, 2);
      t.is((await log.list({ resource: 'user:u1', action: 'admin.access_revoked' })).pagination.total, 1);
      t.is((await log.list({ resource: 'webhook:w3' })).pagination.total, 1);
      const page2 = await log.list({ action: 'admin.webhook_created', pagination: { page: 2, limit: 5 } });
      t.deepEqual(page2.pagination, { page: 2, limit: 5, offset: 5, total: 12 });
      t.deepEqual(page2.audit_logs.map((r) => r.resource_id), ['w6', 'w5', 'w4', 'w3', 'w2']);
      t.is((await log.list({ from_timestamp: 1_700_000_013, to_timestamp: 1_700_000_014 })).pagination.total, 2);
      const bad = await t.throwsAsync(log.list({ pagination: { page: 0 } }));
      t.is((bad as LatchkeyError).code, 'invalid_argument');
      // Append-only: the API has no way to edit or delete rows.
      const methods = Object.getOwnPropertyNames(AuditLog.prototype).sort();
      t.deepEqual(methods, ['constructor', 'list', 'record', 'verifyChain']);
    } finally {
      await sequelize.close();
      await db.drop();
    }
  });

  test(`G2: concurrent writers keep one chain, and a row edited or removed in the DB is named (${backend})`, async (t) => {
    const db = await createTestDatabase(backend);
    const sequelize = openSequelize(db.url, { logging: false, pool: { max: 5 } });
    try {
      await migrateAdminStore(sequelize);
      const a = new AuditLog({ sequelize });
      const b = new AuditLog({ sequelize });
      await Promise.all(
        Array.from({ length: 20 }, (_, i) =>
          (i % 2 ? a : b).record({ actor_type: 'system', action: 'test.event', resource_type: 'thing', resource_id: String(i) }),
        ),
      );
      t.deepEqual(await a.verifyChain(), { ok: true, rows: 20 });
      const [rows] = await sequelize.query('SELECT id, seq FROM audit_logs ORDER BY seq');
      const list = rows as Array<{ id: string; seq: number | string }>;
      const target = list[7]!;
      await sequelize.query(`UPDATE audit_logs SET action = 'test.other' WHERE id = '${target.id}'`);
      const broken = await a.verifyChain();
      t.false(broken.ok);
      t.like(broken, { broken_id: target.id, seq: 8 });
      await sequelize.query(`UPDATE audit_logs SET action = 'test.event' WHERE id = '${target.id}'`);
      t.true((await a.verifyChain()).ok);
      await sequelize.query(`DELETE FROM audit_logs WHERE id = '${list[3]!.id}'`);
      t.like(await a.verifyChain(), { ok: false, broken_id: list[4]!.id });
    } finally {
      await sequelize.close();
      await db.drop();
    }
  });
}
