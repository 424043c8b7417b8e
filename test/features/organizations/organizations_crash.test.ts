/**
 * Adding a member is one transaction: the membership row, its tuple
 * `organization:<id>#<role>@user:<id>`, its webhook delivery and its audit
 * row. The server process is killed with SIGKILL while that transaction is
 * held open at a fault point (a trigger stalls the next insert into a
 * table): after the tuple is inserted, before its changelog row (SQLite,
 * MySQL; PostgreSQL writes both in one statement), and after the row, the
 * tuple and the delivery, before the audit row. After a restart on the same
 * database, neither the row nor the tuple is there; the retried call adds
 * both.
 */
import test from 'ava';
import { openSequelize } from '../../../engine/sql/sqlite_sequelize.ts';
import { createTestDatabase, sqlBackends } from '../../helpers/databases.ts';
import { startSmtp } from '../../admin/smtp.ts';
import { PASSWORD, count, exited, post, serverFlags, stallOf, startCrashServer } from '../../helpers/crash.ts';

for (const backend of sqlBackends()) {
  test(`SIGKILL in the middle of adding a member leaves both the row and the tuple or neither (${backend})`, async (t) => {
    const db = await createTestDatabase(backend);
    t.teardown(() => db.drop());
    const smtp = await startSmtp();
    t.teardown(() => smtp.close());
    const server = await startCrashServer((port) => serverFlags(backend, db.url, port, smtp.port));
    t.teardown(() => void server.child.kill('SIGKILL'));

    const org = await post(server.url, '/v1/admin/create_organization', { name: 'Crash Corp' }, true);
    t.is(org.status, 200, JSON.stringify(org.body));
    const orgId = org.body['id'] as string;
    // Stores the webhook deliveries of member.added, so that a delivery row is part of the transaction.
    t.is((await post(server.url, '/v1/admin/add_webhook', { event_name: 'member.added', endpoint: 'http://127.0.0.1:9/hook' }, true)).status, 200);
    const sequelize = openSequelize(db.url, { logging: false });
    t.teardown(() => sequelize.close());
    const stall = stallOf(backend, sequelize, db.url);
    const state = async (userId: string) => ({
      rows: await count(sequelize, 'SELECT COUNT(*) AS n FROM organization_members WHERE organization_id = ? AND user_id = ?', [orgId, userId]),
      tuples: await count(sequelize, "SELECT COUNT(*) AS n FROM fga_tuple WHERE object_type = 'organization' AND object_id = ? AND _user = ?", [orgId, `user:${userId}`]),
    });

    const tables = backend === 'postgres' ? ['audit_logs'] : ['fga_changelog', 'audit_logs'];
    for (const table of tables) {
      const email = `member-${table.replace('_', '-')}@crash.test`;
      t.is((await post(server.url, '/v1/signup', { email, password: PASSWORD })).status, 200);
      const user = await post(server.url, '/v1/admin/user', { email }, true);
      const userId = user.body['id'] as string;
      await stall.install(table);
      const answer = post(server.url, '/v1/admin/add_organization_member', { organization_id: orgId, user_id: userId }, true).then(
        (r) => r.status,
        () => 'connection lost',
      );
      await stall.stalled(table);
      server.child.kill('SIGKILL');
      await exited(server.child);
      t.is(await answer, 'connection lost', `the call cut before its ${table} row got no answer`);
      await stall.endOrphan();
      const nothing = { rows: 0, tuples: 0 };
      const until = Date.now() + 10_000;
      while (JSON.stringify(await state(userId)) !== JSON.stringify(nothing) && Date.now() < until) await new Promise((r) => setTimeout(r, 100));
      t.deepEqual(await state(userId), nothing, `killed before its ${table} row: neither the membership nor its tuple`);
      await stall.remove(table);

      await server.restart();
      const retry = await post(server.url, '/v1/admin/add_organization_member', { organization_id: orgId, user_id: userId }, true);
      t.is(retry.status, 200, JSON.stringify(retry.body));
      t.deepEqual(await state(userId), { rows: 1, tuples: 1 }, 'the retried call stored both');
      const check = await post(server.url, '/v1/admin/fga/tuples/read', { object: `organization:${orgId}`, relation: 'member', user: `user:${userId}` }, true);
      t.is((check.body['tuples'] as unknown[]).length, 1, 'the engine reads the tuple after the restart');
    }
    server.child.kill('SIGTERM');
    await exited(server.child);
  });
}
