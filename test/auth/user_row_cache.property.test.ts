/**
 * The user store's rows kept on SQLite (auth/user_store.ts `findByIdNow`) are
 * never older than the file: after any sequence of changes made by the store,
 * by a statement on the store's own connection, by another connection (as
 * another process would make them, committed or rolled back), by a
 * transaction of the store's caller that fails, and by deletions, a read at
 * once answers what a fresh read from another connection finds.
 */
import test from 'ava';
import fc from 'fast-check';
import { DatabaseSync } from 'node:sqlite';
import { SqlUserStore } from '../../auth/index.ts';
import { openTestMain } from '../helpers/main_databases.ts';

const numRuns = process.env['CI'] ? 150 : 40;

type Step =
  | { kind: 'store_update' | 'own_connection' | 'other_commit' | 'other_rollback' | 'caller_rollback'; user: number; name: string }
  | { kind: 'revoke' | 'delete' | 'read'; user: number };

const user = fc.integer({ min: 0, max: 2 });
const name = fc.string({ maxLength: 8 });
const step: fc.Arbitrary<Step> = fc.oneof(
  fc.record({ kind: fc.constantFrom('store_update' as const, 'own_connection' as const, 'other_commit' as const, 'other_rollback' as const, 'caller_rollback' as const), user, name }),
  fc.record({ kind: fc.constantFrom('revoke' as const, 'delete' as const, 'read' as const), user }),
);

test('findByIdNow and findById answer what the file holds after any sequence of writes from anywhere', async (t) => {
  const m = await openTestMain('sqlite');
  const file = m.flags.find((f) => f.startsWith('--database-url=sqlite:'))!.slice('--database-url=sqlite:'.length);
  // Another connection, of this process: to SQLite it is what another process's would be.
  const other = new DatabaseSync(file, { timeout: 5000 });
  try {
    const sequelize = m.sequelize!;
    const store = new SqlUserStore({ sequelize });
    await store.init();
    let run = 0;
    await t.notThrowsAsync(
      fc.assert(
        fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 12 }), async (steps) => {
          run++;
          const ids: string[] = [];
          for (let i = 0; i < 3; i++) ids.push((await store.create({ email: `u${i}-${run}@example.com`, given_name: 'first' })).id);
          const truth = (id: string): { given_name: string | null; revoked_timestamp: number | null } | undefined =>
            other.prepare('SELECT given_name, revoked_timestamp FROM users WHERE id = ?').get(id) as never;
          const agrees = async (): Promise<boolean> => {
            for (const id of ids) {
              const held = truth(id);
              const now = store.findByIdNow(id);
              // The connection is idle here: a row that exists is answered at once.
              if (held === undefined ? now !== undefined : now === undefined) return false;
              if (now !== undefined && (now.given_name !== held!.given_name || now.revoked_timestamp !== held!.revoked_timestamp)) return false;
              const later = await store.findById(id);
              if (later?.given_name !== held?.given_name || later?.revoked_timestamp !== held?.revoked_timestamp) return false;
            }
            return true;
          };
          if (!(await agrees())) return false;
          for (const s of steps) {
            const id = ids[s.user]!;
            if (s.kind === 'store_update') await store.update(id, { given_name: s.name }).catch(() => undefined);
            else if (s.kind === 'own_connection') await sequelize.query('UPDATE users SET given_name = ? WHERE id = ?', { replacements: [s.name, id] });
            else if (s.kind === 'other_commit') other.prepare('UPDATE users SET given_name = ? WHERE id = ?').run(s.name, id);
            else if (s.kind === 'other_rollback') {
              other.exec('BEGIN IMMEDIATE');
              other.prepare('UPDATE users SET given_name = ? WHERE id = ?').run(s.name, id);
              // Not committed: not seen, by either read.
              const seen = store.findByIdNow(id);
              other.exec('ROLLBACK');
              if (seen !== undefined && seen.given_name === s.name && truth(id)?.given_name !== s.name) return false;
            } else if (s.kind === 'caller_rollback') {
              await sequelize
                .transaction(async (transaction) => {
                  await store.update(id, { given_name: s.name }, { transaction: transaction as never });
                  throw new Error('the caller fails after the update');
                })
                .catch(() => undefined);
            } else if (s.kind === 'revoke') await store.update(id, { revoked_timestamp: 1_700_000_000 }).catch(() => undefined);
            else if (s.kind === 'delete') await store.delete(id);
            if (!(await agrees())) return false;
          }
          return true;
        }),
        { numRuns },
      ),
    );
  } finally {
    other.close();
    await m.close();
  }
});
