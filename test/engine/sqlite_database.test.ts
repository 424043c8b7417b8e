/**
 * The SQLite main database without sequelize (engine/sql/sqlite_database.ts)
 * against sequelize on SQLite (engine/sql/sqlite_sequelize.ts), statement for
 * statement on two files: the same rows, value types, result shapes,
 * transactions and errors, for every query shape the stores use. Values and
 * replacements are drawn by fast-check, so each property holds for any
 * value, not for a list of examples.
 */
import test from 'ava';
import fc from 'fast-check';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Sequelize } from 'sequelize';
import { SqliteDatabase } from '../../engine/sql/sqlite_database.ts';
import { sqliteSequelize } from '../../engine/sql/sqlite_sequelize.ts';
import { QueryTypes, TransactionTypes, type SqlDatabase } from '../../engine/sql/sql_database.ts';
import { runMigrations, type Migration } from '../../engine/sql/migrate.ts';

interface Pair {
  ours: SqliteDatabase;
  theirs: Sequelize;
}

async function withPair(fn: (p: Pair, dir: string) => Promise<void>): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'lk_sqdb-'));
  const ours = new SqliteDatabase(join(dir, 'ours.sqlite'));
  const theirs = sqliteSequelize(join(dir, 'theirs.sqlite'), { logging: false, retry: { max: 1 } });
  try {
    await fn({ ours, theirs }, dir);
  } finally {
    await ours.close();
    await theirs.close();
    await rm(dir, { recursive: true, force: true });
  }
}

/** Runs `fn` on both databases and returns both outcomes: the value, or the error's name, message and driver code. */
async function both<T>(p: Pair, fn: (db: SqlDatabase) => Promise<T>): Promise<[unknown, unknown]> {
  const settle = (db: SqlDatabase) =>
    fn(db).then(
      (value) => ({ value }),
      (err: { name?: string; message?: string; parent?: { code?: string }; fields?: unknown }) => ({ error: { name: err.name, message: err.message, code: err.parent?.code, fields: err.fields } }),
    );
  return [await settle(p.ours), await settle(p.theirs as unknown as SqlDatabase)];
}

const TABLE = 'CREATE TABLE vals (id INTEGER PRIMARY KEY, t TEXT, i INTEGER, r REAL, b BLOB, u, uniq VARCHAR(64) UNIQUE)';

/** A replacement value of any kind the stores bind. */
const scalar = fc.oneof(
  fc.string({ unit: 'grapheme', maxLength: 12 }),
  fc.constantFrom("it's", "''", '?', ':name', '-- ', '/*', '`'),
  fc.integer({ min: -(2 ** 40), max: 2 ** 40 }),
  fc.double({ noNaN: true, noDefaultInfinity: true, min: -1e6, max: 1e6 }),
  fc.maxSafeInteger(),
  fc.boolean(),
  fc.constant(null),
  fc.bigInt({ min: -(2n ** 62n), max: 2n ** 62n }),
  fc.uint8Array({ maxLength: 6 }).map((a) => Buffer.from(a)),
);

test('rows, value types and result shapes match sequelize for any values', async (t) => {
  t.timeout(120_000);
  await withPair(async (p) => {
    for (const db of [p.ours, p.theirs]) await db.query(TABLE);
    await fc.assert(
      fc.asyncProperty(fc.tuple(scalar, scalar, scalar, scalar, scalar), async (values) => {
        const insert = await both(p, (db) => db.query('INSERT INTO vals (t, i, r, b, u) VALUES (?, ?, ?, ?, ?)', { replacements: values }).then(([rows, meta]) => [rows, (meta as { changes: number }).changes]));
        t.deepEqual(insert[0], insert[1], 'a raw INSERT');
        const select = await both(p, (db) =>
          db.query('SELECT t, typeof(t) tt, i, typeof(i) ti, r, typeof(r) tr, b, typeof(b) tb, u, typeof(u) tu FROM vals ORDER BY id DESC LIMIT 1', { type: QueryTypes.SELECT }),
        );
        t.deepEqual(select[0], select[1], `a SELECT after inserting ${String(values)}`);
        const plain = await both(p, (db) => db.query('SELECT COUNT(*) AS n FROM vals WHERE u = ? OR t = ?', { replacements: [values[4], values[0]], type: QueryTypes.SELECT, plain: true }));
        t.deepEqual(plain[0], plain[1], 'a plain SELECT');
        const update = await both(p, (db) => db.query('UPDATE vals SET u = ? WHERE i = ? OR i IS NULL', { replacements: [values[0], values[2]], type: QueryTypes.UPDATE }));
        t.deepEqual(update[0], update[1], 'an UPDATE');
      }),
      { numRuns: 60 },
    );
    const remove = await both(p, (db) => db.query('DELETE FROM vals WHERE id % 2 = 0', { type: QueryTypes.BULKDELETE }));
    t.deepEqual(remove[0], remove[1], 'a BULKDELETE');
    t.true(typeof (remove[0] as { value?: unknown }).value === 'number');
  });
});

test('array, named and misplaced replacements are found where sequelize finds them', async (t) => {
  await withPair(async (p) => {
    for (const db of [p.ours, p.theirs]) {
      await db.query(TABLE);
      await db.query("INSERT INTO vals (t, i) VALUES ('a?b', 1), ('c', 2), ('d', 3), (':x', 4)");
    }
    await fc.assert(
      fc.asyncProperty(fc.array(fc.integer({ min: 0, max: 5 }), { maxLength: 5 }), fc.string({ maxLength: 4 }), async (ids, s) => {
        const cases: [string, unknown][] = [
          ['SELECT i FROM vals WHERE i IN (?) ORDER BY i', [ids.length === 0 ? [-1] : ids]],
          ['SELECT i FROM vals WHERE i IN (:ids) AND t <> :s ORDER BY i', { ids: ids.length === 0 ? [-1] : ids, s }],
          ["SELECT i, t FROM vals WHERE t = 'a?b' OR t = ? ORDER BY i", [s]],
          ["SELECT i FROM vals WHERE t = ':x' AND i = :i -- ? :i\n ORDER BY i", { i: ids[0] ?? 4 }],
          ['SELECT i FROM vals /* ? */ WHERE i = ?', [ids[0] ?? 1]],
          ['SELECT (?) AS a, ? AS b', [[1, [2, 3]], s]],
        ];
        for (const [sql, replacements] of cases) {
          const r = await both(p, (db) => db.query(sql, { replacements: replacements as never, type: QueryTypes.SELECT }));
          t.deepEqual(r[0], r[1], sql);
        }
      }),
      { numRuns: 30 },
    );
    const missing = await both(p, (db) => db.query('SELECT ? AS a, ? AS b', { replacements: [1], type: QueryTypes.SELECT }));
    t.deepEqual(missing[0], missing[1], 'a missing positional replacement');
    const unnamed = await both(p, (db) => db.query('SELECT :a AS a', { replacements: { b: 1 }, type: QueryTypes.SELECT }));
    t.deepEqual(unnamed[0], unnamed[1], 'a missing named replacement');
  });
});

test('a date replacement is written as sequelize writes it', async (t) => {
  await withPair(async (p) => {
    await fc.assert(
      fc.asyncProperty(fc.date({ min: new Date(0), max: new Date(4e12), noInvalidDate: true }), async (d) => {
        const r = await both(p, (db) => db.query('SELECT ? AS d', { replacements: [d], type: QueryTypes.SELECT }));
        t.deepEqual(r[0], r[1]);
      }),
      { numRuns: 40 },
    );
  });
});

test('constraint, syntax and missing-table errors have sequelize\'s names, messages, codes and fields', async (t) => {
  await withPair(async (p) => {
    for (const db of [p.ours, p.theirs]) {
      await db.query(TABLE);
      await db.query('CREATE TABLE parent (id INTEGER PRIMARY KEY)');
      await db.query('CREATE TABLE child (id INTEGER PRIMARY KEY, parent_id INTEGER NOT NULL REFERENCES parent(id))');
      await db.query("INSERT INTO vals (uniq) VALUES ('taken')");
    }
    const statements: [string, unknown[]][] = [
      ['INSERT INTO vals (uniq) VALUES (?)', ['taken']],
      ['INSERT INTO vals (id) VALUES (?)', [1]],
      ['INSERT INTO child (parent_id) VALUES (?)', [42]],
      ['INSERT INTO child (parent_id) VALUES (?)', [null]],
      ['SELEC 1', []],
      ['SELECT * FROM nowhere WHERE a = ?', [1]],
    ];
    for (const [sql, replacements] of statements) {
      const r = await both(p, (db) => db.query(sql, { replacements }));
      t.true('error' in (r[0] as object), sql);
      t.deepEqual(r[0], r[1], sql);
    }
  });
});

test('transactions commit, roll back, run afterCommit hooks once committed, and refuse statements once finished', async (t) => {
  await withPair(async (p) => {
    for (const db of [p.ours, p.theirs]) await db.query(TABLE);
    const flow = async (db: SqlDatabase): Promise<unknown[]> => {
      const seen: unknown[] = [];
      const committed = await db.transaction(async (tx) => {
        tx.afterCommit(() => void seen.push('after commit'));
        await db.query("INSERT INTO vals (t) VALUES ('kept')", { transaction: tx });
        seen.push(((await db.query('SELECT COUNT(*) AS n FROM vals', { type: QueryTypes.SELECT, plain: true })) as { n: number } | null)?.n);
        return 'done';
      });
      seen.push(committed);
      const failed = await db
        .transaction({ type: TransactionTypes.IMMEDIATE }, async (tx) => {
          tx.afterCommit(() => void seen.push('never'));
          await db.query("INSERT INTO vals (t) VALUES ('dropped')", { transaction: tx });
          throw new Error('abandoned');
        })
        .catch((err: Error) => err.message);
      seen.push(failed);
      let kept: unknown;
      await db.transaction(async (tx) => {
        kept = tx;
      });
      seen.push(await db.query('SELECT 1 AS one', { transaction: kept as never, type: QueryTypes.SELECT }).then(() => 'ran', (err: Error) => err.message.replace(/\(.*?\)/u, '(id)')));
      seen.push(await db.query('SELECT t FROM vals ORDER BY id', { type: QueryTypes.SELECT }));
      return seen;
    };
    const [ours, theirs] = await both(p, flow);
    t.deepEqual(ours, theirs);
    t.deepEqual((ours as { value: unknown[] }).value.slice(0, 4), [0, 'after commit', 'done', 'abandoned'], 'the uncommitted row is not seen outside, the hook runs after the commit');
  });
});

test('migrations run and describe tables the same way on both', async (t) => {
  await withPair(async (p) => {
    const migrations: Migration[] = [
      { id: '0001_create', up: async (ctx) => void (await ctx.sequelize.query("CREATE TABLE m (a INTEGER PRIMARY KEY, b TEXT NOT NULL DEFAULT 'x', c REAL UNIQUE, d INTEGER REFERENCES m(a))", { transaction: ctx.transaction })) },
      {
        id: '0002_describe',
        up: async (ctx) => {
          const desc = await ctx.queryInterface.describeTable('m', { transaction: ctx.transaction } as never);
          await ctx.sequelize.query('CREATE TABLE described (cols TEXT)', { transaction: ctx.transaction });
          await ctx.sequelize.query('INSERT INTO described (cols) VALUES (?)', { replacements: [JSON.stringify(desc)], transaction: ctx.transaction });
        },
      },
    ];
    const [first, second] = await both(p, (db) => runMigrations(db as never, 'test', migrations));
    t.deepEqual(first, second);
    t.deepEqual((first as { value: string[] }).value, ['0001_create', '0002_describe']);
    const [again] = await both(p, (db) => runMigrations(db as never, 'test', migrations));
    t.deepEqual((again as { value: string[] }).value, [], 'running them again is a no-op');
    const described = await both(p, (db) => db.query('SELECT cols FROM described', { type: QueryTypes.SELECT }));
    t.deepEqual(described[0], described[1]);
  });
});

test('an in-memory database keeps one connection: a transaction sees and keeps what was written outside it', async (t) => {
  const db = new SqliteDatabase(':memory:');
  try {
    await db.query('CREATE TABLE m (a INTEGER)');
    await db.transaction(async (tx) => {
      await db.query('INSERT INTO m (a) VALUES (?)', { replacements: [1], transaction: tx });
    });
    t.deepEqual(await db.query('SELECT a FROM m', { type: QueryTypes.SELECT }), [{ a: 1 }]);
  } finally {
    await db.close();
  }
});

test('a file that cannot be opened is a connection error naming the cause', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'lk_sqdb-'));
  const db = new SqliteDatabase(join(dir, 'x.sqlite', 'in', 'a', 'file'));
  try {
    await rm(dir, { recursive: true, force: true });
    const { writeFile, mkdir } = await import('node:fs/promises');
    await mkdir(dir);
    await writeFile(join(dir, 'x.sqlite'), 'a file, not a directory');
    const err = await t.throwsAsync(db.authenticate());
    t.is(err?.name, 'SequelizeConnectionError');
  } finally {
    await db.close();
    await rm(dir, { recursive: true, force: true });
  }
});
