import test from 'ava';
import { AuditLog, openAdminStores } from '../../admin/index.ts';
import { SqlUserStore } from '../../auth/index.ts';
import type { LatchkeyError } from '../../engine/errors.ts';
import { sqlBackends } from '../helpers/databases.ts';
import { mainBackends, openTestMain, type TestMain } from '../helpers/main_databases.ts';

/** The stored rows in position order (id and position), read under the store. */
async function storedRows(m: TestMain): Promise<Array<{ id: string; seq: number }>> {
  if (m.sequelize) {
    const [rows] = await m.sequelize.query('SELECT id, seq FROM audit_logs ORDER BY seq');
    return (rows as Array<{ id: string; seq: number | string }>).map((r) => ({ id: r.id, seq: Number(r.seq) }));
  }
  const items = await m.dynamo!.query('audit_logs', { pk: ['pk', 'chain'] });
  return items.map((r) => ({ id: String(r['id']), seq: Number(r['seq']) }));
}

const key = (seq: number): string => String(seq).padStart(16, '0');

/** Edits a row's action directly in the database, as an attacker with database access would. */
async function setAction(m: TestMain, row: { id: string; seq: number }, action: string): Promise<void> {
  if (m.sequelize) await m.sequelize.query(`UPDATE audit_logs SET action = '${action}' WHERE id = '${row.id}'`);
  else await m.dynamo!.update('audit_logs', 'chain', key(row.seq), { set: { action } });
}

async function removeRow(m: TestMain, row: { id: string; seq: number }): Promise<void> {
  if (m.sequelize) await m.sequelize.query(`DELETE FROM audit_logs WHERE id = '${row.id}'`);
  else await m.dynamo!.delete('audit_logs', 'chain', key(row.seq));
}

for (const backend of mainBackends()) {
  test(`audit log: filters, pagination, newest first, secrets never stored (${backend})`, async (t) => {
    const m = await openTestMain(backend);
    try {
      const { audit: store } = await openAdminStores(m.database);
      let now = 1_700_000_000_000;
      const log = new AuditLog({ store, clock: () => (now += 1000) });
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
      await m.close();
    }
  });

  test(`G2: concurrent writers keep one chain, and a row edited or removed in the DB is named (${backend})`, async (t) => {
    const m = await openTestMain(backend, { pool: { max: 5 } });
    try {
      // Two logs on two store instances: two processes writing one chain.
      const a = new AuditLog({ store: (await openAdminStores(m.database)).audit });
      const b = new AuditLog({ store: (await openAdminStores(m.database)).audit });
      await Promise.all(
        Array.from({ length: 20 }, (_, i) =>
          (i % 2 ? a : b).record({ actor_type: 'system', action: 'test.event', resource_type: 'thing', resource_id: String(i) }),
        ),
      );
      t.deepEqual(await a.verifyChain(), { ok: true, rows: 20 });
      const list = await storedRows(m);
      t.deepEqual(list.map((r) => r.seq), Array.from({ length: 20 }, (_, i) => i + 1));
      const target = list[7]!;
      await setAction(m, target, 'test.other');
      const broken = await a.verifyChain();
      t.false(broken.ok);
      t.like(broken, { broken_id: target.id, seq: 8 });
      await setAction(m, target, 'test.event');
      t.true((await a.verifyChain()).ok);
      await removeRow(m, list[3]!);
      t.like(await a.verifyChain(), { ok: false, broken_id: list[4]!.id });
    } finally {
      await m.close();
    }
  });
}

for (const backend of sqlBackends()) {
  test(`G2, E3: rows appended inside the transactions of concurrent user creates commit or roll back with them, and keep one chain beside appends outside any transaction (${backend})`, async (t) => {
    const m = await openTestMain(backend, { pool: { max: 10 } });
    try {
      const users = new SqlUserStore({ sequelize: m.sequelize! });
      await users.init();
      // Two logs on two store instances: two processes writing one chain.
      const a = new AuditLog({ store: (await openAdminStores(m.database)).audit });
      const b = new AuditLog({ store: (await openAdminStores(m.database)).audit });
      await users.create({ email: 'taken@audit.test' });
      const created = (i: number, email = `u${i}@audit.test`) => users.create({ email }, { within: (user, tx) => (i % 2 ? a : b).record({ actor_type: 'user', actor_id: user.id, action: 'user.signup', resource_type: 'user', resource_id: user.id }, tx).then(() => undefined) });
      const undone = (i: number) =>
        users.create({ email: `x${i}@audit.test` }, {
          within: async (user, tx) => {
            await a.record({ actor_type: 'user', actor_id: user.id, action: 'user.signup', resource_type: 'user', resource_id: user.id }, tx);
            throw new Error('a later step of the change failed');
          },
        });
      const outside = (i: number) => (i % 2 ? b : a).record({ actor_type: 'system', action: 'test.event', resource_type: 'thing', resource_id: String(i) });
      const results = await Promise.allSettled([
        ...Array.from({ length: 12 }, (_, i) => created(i)),
        ...Array.from({ length: 3 }, (_, i) => undone(i)),
        ...Array.from({ length: 12 }, (_, i) => outside(i)),
        created(12, 'taken@audit.test'), // the address is taken: the user is refused and its row never written
      ]);
      const stored = results.slice(0, 12).map((r) => (r.status === 'fulfilled' && 'id' in r.value ? r.value.id : undefined));
      const outcomes = results.map((r) => (r.status === 'fulfilled' ? 'stored' : String((r.reason as { code?: string; message?: string }).code ?? (r.reason as Error).message)));
      t.deepEqual(outcomes, [...Array(12).fill('stored'), ...Array(3).fill('a later step of the change failed'), ...Array(12).fill('stored'), 'already_exists']);
      t.deepEqual(await a.verifyChain(), { ok: true, rows: 24 });
      t.deepEqual((await storedRows(m)).map((r) => r.seq), Array.from({ length: 24 }, (_, i) => i + 1));
      const signups = (await a.list({ action: 'user.signup', pagination: { limit: 100 } })).audit_logs;
      t.deepEqual(signups.map((r) => r.resource_id).sort(), [...stored].sort(), 'one row per stored user, none of the users rolled back');
      t.is((await a.list({ action: 'test.event' })).pagination.total, 12);
    } finally {
      await m.close();
    }
  });
}
