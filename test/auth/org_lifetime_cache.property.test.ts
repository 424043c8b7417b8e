/**
 * An organization's session lifetime read at once on SQLite
 * (auth/org_store.ts `sessionLifetimeNow`, what a permission check with a
 * session in that organization compares with) is never older than the file:
 * after any sequence of changes made through the store's transactions, by
 * another connection (as another process would make them, committed or
 * rolled back), by a transaction of the store's caller that fails, and by
 * deletions, it answers what a fresh read from another connection finds, and
 * what the store's own read answers. So does a member's role with its
 * organization's lifetime (`memberNow`, what validating a token or session
 * in an organization compares with).
 */
import test from 'ava';
import fc from 'fast-check';
import { randomUUID } from 'node:crypto';
import { DatabaseSync } from 'node:sqlite';
import { DEFAULT_ORG_SETTINGS, SqlOrgStore, type OrgRecord } from '../../auth/index.ts';
import { openTestMain } from '../helpers/main_databases.ts';

const numRuns = process.env['CI'] ? 150 : 40;

type Step =
  | { kind: 'store_update' | 'other_commit' | 'other_rollback' | 'caller_rollback'; org: number; lifetime: number }
  | { kind: 'store_delete' | 'other_delete' | 'read'; org: number };

const org = fc.integer({ min: 0, max: 2 });
const lifetime = fc.integer({ min: 0, max: 100_000 });
const step: fc.Arbitrary<Step> = fc.oneof(
  fc.record({ kind: fc.constantFrom('store_update' as const, 'other_commit' as const, 'other_rollback' as const, 'caller_rollback' as const), org, lifetime }),
  fc.record({ kind: fc.constantFrom('store_delete' as const, 'other_delete' as const, 'read' as const), org }),
);

/** An organization with this id and session lifetime, as the store inserts it. */
const record = (id: string, session_lifetime: number): OrgRecord => ({
  id, slug: `o-${id}`, name: 'Org', logo: null, metadata: {}, settings: { ...DEFAULT_ORG_SETTINGS, session_lifetime }, created_at: 1, updated_at: 1, deleted_at: null,
});

/** A SQLite main database with the organization store on it, and another connection to its file: to SQLite, what another process's would be. */
async function openStore() {
  const m = await openTestMain('sqlite');
  const file = m.flags.find((f) => f.startsWith('--database-url=sqlite:'))!.slice('--database-url=sqlite:'.length);
  const other = new DatabaseSync(file, { timeout: 5000 });
  const sequelize = m.sequelize!;
  const store = new SqlOrgStore({ sequelize, nowSeconds: () => Math.floor(Date.now() / 1000) });
  await store.init();
  return { m, other, sequelize, store };
}

test('sessionLifetimeNow answers what the file holds after any sequence of changes from anywhere', async (t) => {
  const { m, other, sequelize, store } = await openStore();
  try {
    const settingsWith = (session_lifetime: number): string => JSON.stringify({ ...DEFAULT_ORG_SETTINGS, session_lifetime });
    let failure = '';
    await t.notThrowsAsync(() => fc.assert(
        fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 12 }), async (steps) => {
          const ids = [randomUUID(), randomUUID(), randomUUID()];
          await sequelize.transaction(async (tx) => {
            for (const id of ids) await store.insertOrganization(record(id, 0), tx as never);
          });
          const truth = (id: string): number => {
            const row = other.prepare('SELECT settings FROM organizations WHERE id = ? AND deleted_at IS NULL').get(id) as { settings: string } | undefined;
            return row === undefined ? 0 : (JSON.parse(row.settings) as { session_lifetime: number }).session_lifetime;
          };
          const agrees = async (after: string): Promise<boolean> => {
            for (const id of ids) {
              const held = truth(id);
              // The connection is idle here: the lifetime is answered at once.
              const now = store.sessionLifetimeNow(id);
              const later = (await store.organization(id))?.settings.session_lifetime ?? 0;
              if (now !== held || later !== held) {
                failure = `after ${after}: the file holds ${held}, at once ${now}, read ${later}`;
                return false;
              }
            }
            return true;
          };
          if (!(await agrees('creation'))) return false;
          for (const s of steps) {
            const id = ids[s.org]!;
            if (s.kind === 'store_update') {
              const lifetimeNow = s.lifetime;
              await sequelize.transaction(async (tx) => {
                await store.updateOrganization(record(id, lifetimeNow), tx as never);
              });
            } else if (s.kind === 'other_commit') other.prepare('UPDATE organizations SET settings = ? WHERE id = ?').run(settingsWith(s.lifetime), id);
            else if (s.kind === 'other_rollback') {
              other.exec('BEGIN IMMEDIATE');
              other.prepare('UPDATE organizations SET settings = ? WHERE id = ?').run(settingsWith(s.lifetime), id);
              // Not committed: not seen.
              const seen = store.sessionLifetimeNow(id);
              other.exec('ROLLBACK');
              if (seen !== undefined && seen !== truth(id)) {
                failure = `an uncommitted change was seen (${seen})`;
                return false;
              }
            } else if (s.kind === 'caller_rollback') {
              const lifetimeNow = s.lifetime;
              await sequelize
                .transaction(async (tx) => {
                  await store.updateOrganization(record(id, lifetimeNow), tx as never);
                  throw new Error('the caller fails after the update');
                })
                .catch(() => undefined);
            } else if (s.kind === 'store_delete') {
              await sequelize.transaction(async (tx) => {
                await store.softDeleteOrganization(id, tx as never);
              });
            } else if (s.kind === 'other_delete') other.prepare('UPDATE organizations SET deleted_at = 5 WHERE id = ?').run(id);
            if (!(await agrees(s.kind))) return false;
          }
          return true;
        }),
        { numRuns },
      ),
    );
    t.is(failure, '', failure);
  } finally {
    other.close();
    await m.close();
  }
});

test('sessionLifetimeNow on another database answers undefined (the store is asked instead)', async (t) => {
  const m = await openTestMain('postgres');
  try {
    const store = new SqlOrgStore({ sequelize: m.sequelize!, nowSeconds: () => 0 });
    await store.init();
    t.is(store.sessionLifetimeNow(randomUUID()), undefined);
  } finally {
    await m.close();
  }
});

type MemberStep =
  | { kind: 'store_role' | 'other_role' | 'other_role_rollback' | 'caller_rollback'; org: number; user: number; role: string }
  | { kind: 'store_remove' | 'other_remove' | 'store_add' | 'other_org_delete' | 'other_org_restore' | 'read'; org: number; user: number };

const memberStep: fc.Arbitrary<MemberStep> = fc.oneof(
  fc.record({ kind: fc.constantFrom('store_role' as const, 'other_role' as const, 'other_role_rollback' as const, 'caller_rollback' as const), org: fc.integer({ min: 0, max: 1 }), user: fc.integer({ min: 0, max: 1 }), role: fc.constantFrom('member', 'admin', 'billing') }),
  fc.record({ kind: fc.constantFrom('store_remove' as const, 'other_remove' as const, 'store_add' as const, 'other_org_delete' as const, 'other_org_restore' as const, 'read' as const), org: fc.integer({ min: 0, max: 1 }), user: fc.integer({ min: 0, max: 1 }) }),
);

test('memberNow answers what the file holds after any sequence of membership and organization changes from anywhere', async (t) => {
  const { m, other, sequelize, store } = await openStore();
  try {
    let failure = '';
    await t.notThrowsAsync(() => fc.assert(
        fc.asyncProperty(fc.array(memberStep, { minLength: 1, maxLength: 12 }), async (steps) => {
          const orgs = [randomUUID(), randomUUID()];
          const users = [randomUUID(), randomUUID()];
          await sequelize.transaction(async (tx) => {
            for (const [i, id] of orgs.entries()) await store.insertOrganization(record(id, 100 * (i + 1)), tx as never);
            for (const o of orgs) for (const u of users) await store.insertMember({ organization_id: o, user_id: u, role: 'member', created_at: 1, updated_at: 1 }, tx as never);
          });
          const truth = (o: string, u: string): { role: string; session_lifetime: number } | null => {
            const row = other
              .prepare('SELECT m.role, o.settings FROM organization_members m JOIN organizations o ON o.id = m.organization_id WHERE m.organization_id = ? AND m.user_id = ? AND o.deleted_at IS NULL')
              .get(o, u) as { role: string; settings: string } | undefined;
            return row === undefined ? null : { role: row.role, session_lifetime: (JSON.parse(row.settings) as { session_lifetime: number }).session_lifetime };
          };
          const agrees = async (after: string): Promise<boolean> => {
            for (const o of orgs) {
              for (const u of users) {
                const held = truth(o, u);
                const now = store.memberNow(o, u);
                const read = (await store.organization(o)) === undefined ? undefined : (await store.member(o, u))?.role;
                if (JSON.stringify(now) !== JSON.stringify(held) || (read ?? null) !== (held?.role ?? null)) {
                  failure = `after ${after}: the file holds ${JSON.stringify(held)}, at once ${JSON.stringify(now)}, read ${String(read)}`;
                  return false;
                }
              }
            }
            return true;
          };
          if (!(await agrees('creation'))) return false;
          for (const s of steps) {
            const o = orgs[s.org]!;
            const u = users[s.user]!;
            switch (s.kind) {
              case 'store_role': {
                const role = s.role;
                await sequelize.transaction(async (tx) => store.updateMemberRole(o, u, role, tx as never));
                break;
              }
              case 'other_role':
                other.prepare('UPDATE organization_members SET role = ? WHERE organization_id = ? AND user_id = ?').run(s.role, o, u);
                break;
              case 'other_role_rollback': {
                other.exec('BEGIN IMMEDIATE');
                other.prepare('UPDATE organization_members SET role = ? WHERE organization_id = ? AND user_id = ?').run(`${s.role}-x`, o, u);
                const seen = store.memberNow(o, u);
                other.exec('ROLLBACK');
                if (seen !== undefined && JSON.stringify(seen) !== JSON.stringify(truth(o, u))) {
                  failure = `an uncommitted change was seen (${JSON.stringify(seen)})`;
                  return false;
                }
                break;
              }
              case 'caller_rollback': {
                const role = s.role;
                await sequelize
                  .transaction(async (tx) => {
                    await store.updateMemberRole(o, u, `${role}-y`, tx as never);
                    throw new Error('the caller fails after the update');
                  })
                  .catch(() => undefined);
                break;
              }
              case 'store_remove':
                await sequelize.transaction(async (tx) => store.deleteMember(o, u, tx as never));
                break;
              case 'other_remove':
                other.prepare('DELETE FROM organization_members WHERE organization_id = ? AND user_id = ?').run(o, u);
                break;
              case 'store_add':
                if (truth(o, u) === null && (await store.member(o, u)) === undefined) {
                  await sequelize.transaction(async (tx) => store.insertMember({ organization_id: o, user_id: u, role: 'member', created_at: 2, updated_at: 2 }, tx as never));
                }
                break;
              case 'other_org_delete':
                other.prepare('UPDATE organizations SET deleted_at = 5 WHERE id = ?').run(o);
                break;
              case 'other_org_restore':
                other.prepare('UPDATE organizations SET deleted_at = NULL WHERE id = ?').run(o);
                break;
              case 'read':
                break;
            }
            if (!(await agrees(s.kind))) return false;
          }
          return true;
        }),
        { numRuns },
      ),
    );
    t.is(failure, '', failure);
  } finally {
    other.close();
    await m.close();
  }
});
