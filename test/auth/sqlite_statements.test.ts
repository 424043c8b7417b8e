import test from 'ava';
import { QueryTypes } from '../../engine/sql/sql_database.ts';
import { SqliteStatements } from '../../auth/index.ts';
import { isDependencyFailure } from '../../engine/errors.ts';
import { openTestMain } from '../helpers/main_databases.ts';

test('SQLite statements answer as sequelize does: the same rows, a unique violation and a held lock as errors named as its classes', async (t) => {
  const m = await openTestMain('sqlite');
  try {
    const sequelize = m.sequelize!;
    await sequelize.query('CREATE TABLE things (id TEXT PRIMARY KEY, n BIGINT NOT NULL, note TEXT)');
    const statements = SqliteStatements.of(sequelize)!;
    t.is(await statements.run('INSERT INTO things (id, n, note) VALUES (?, ?, ?)', ['a', 1_700_000_000_123, null]), 1);
    await sequelize.query("INSERT INTO things (id, n, note) VALUES ('b', 2, 'it''s')");
    const sql = 'SELECT * FROM things WHERE id = ? OR note = ? ORDER BY id';
    const ours = await statements.select(sql, ['a', "it's"]);
    const theirs = await sequelize.query(sql, { replacements: ['a', "it's"], type: QueryTypes.SELECT });
    t.deepEqual(ours, theirs);
    t.deepEqual(ours, [{ id: 'a', n: 1_700_000_000_123, note: null }, { id: 'b', n: 2, note: "it's" }]);
    const [typed] = await sequelize.query("SELECT typeof(n) AS t FROM things WHERE id = 'a'", { type: QueryTypes.SELECT });
    t.deepEqual(typed, { t: 'integer' }, 'a bound number lands in a BIGINT column as an integer, as the formatted one did');

    const taken = await t.throwsAsync(statements.run('INSERT INTO things (id, n) VALUES (?, ?)', ['a', 3]));
    t.is((taken as Error).name, 'SequelizeUniqueConstraintError');
    t.deepEqual((taken as Error & { fields?: string[] }).fields, ['id'], 'the column SQLite names');

    // Another connection holds the write lock past the busy timeout: an outage, as through sequelize.
    await sequelize.query('PRAGMA busy_timeout = 50');
    await sequelize.transaction(async (tx) => {
      await sequelize.query("INSERT INTO things (id, n) VALUES ('c', 4)", { transaction: tx });
      const busy = await t.throwsAsync(statements.run('INSERT INTO things (id, n) VALUES (?, ?)', ['d', 5]));
      t.is((busy as Error).name, 'SequelizeTimeoutError', String(busy));
      t.true(isDependencyFailure(busy));
    });
    t.deepEqual((await statements.select('SELECT id FROM things ORDER BY id', []))!.map((r) => r['id']), ['a', 'b', 'c']);

    // Rows as values in the order selected: the same values as the row objects, at once and through the promise.
    const picked = 'SELECT note, n, id FROM things WHERE id <= ? ORDER BY id';
    const objects = (await statements.select(picked, ['b']))!;
    t.deepEqual(await statements.values(picked, ['b']), objects.map((r) => [r['note'], r['n'], r['id']]));
    t.deepEqual(statements.valuesNow(picked, ['b']), [[null, 1_700_000_000_123, 'a'], ["it's", 2, 'b']]);
    t.is(statements.valuesNow('SELECT nothing FROM nowhere', []), undefined, 'a failing statement is not answered at once');
    await t.throwsAsync(statements.values('SELECT nothing FROM nowhere', []), { name: 'SequelizeDatabaseError' });
  } finally {
    await m.close();
  }
});

test('SQLite statements are only for SQLite: other dialects stay on sequelize', async (t) => {
  const m = await openTestMain('sqlite');
  try {
    t.truthy(SqliteStatements.of(m.sequelize!));
    t.is(SqliteStatements.of({ getDialect: () => 'postgres' } as never), undefined);
  } finally {
    await m.close();
  }
});
