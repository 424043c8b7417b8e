/**
 * The `node:sqlite` driver for sequelize (engine/sql/node_sqlite_driver.ts):
 * value types, lastID/changes, transactions through sequelize, lock waits
 * that never block the event loop, and closing with work pending.
 */
import test from 'ava';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execFileSync } from 'node:child_process';
import { DataTypes, Transaction, UniqueConstraintError, type Sequelize } from 'sequelize';
import { Database, nodeSqliteDriver, Statement } from '../../engine/sql/node_sqlite_driver.ts';
import { sqliteSequelize } from '../../engine/sql/sqlite_sequelize.ts';

async function withFile<T>(fn: (file: string) => Promise<T>): Promise<T> {
  const dir = await mkdtemp(join(tmpdir(), 'lk_nsq-'));
  try {
    return await fn(join(dir, 'db.sqlite'));
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

function open(file: string, mode = nodeSqliteDriver.OPEN_READWRITE | nodeSqliteDriver.OPEN_CREATE): Promise<Database> {
  return new Promise((resolve, reject) => {
    const db: Database = new Database(file, mode, (err) => (err ? reject(err) : resolve(db)));
  });
}

function run(db: Database, sql: string, params: unknown[] = []): Promise<Statement> {
  return new Promise((resolve, reject) => db.run(sql, params, function (err) { if (err) reject(err); else resolve(this); }));
}

function all(db: Database, sql: string, params: unknown[] = []): Promise<Record<string, unknown>[]> {
  return new Promise((resolve, reject) => db.all(sql, params, (err, rows) => (err ? reject(err) : resolve(rows as Record<string, unknown>[]))));
}

function exec(db: Database, sql: string): Promise<void> {
  return new Promise((resolve, reject) => db.exec(sql, (err) => (err ? reject(err) : resolve())));
}

function close(db: Database): Promise<void> {
  return new Promise((resolve, reject) => db.close((err) => (err ? reject(err) : resolve())));
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

test('driver: values round-trip through a sequelize model as with sqlite3', async (t) => {
  await withFile(async (file) => {
    const sequelize = sqliteSequelize(file, { logging: false });
    try {
      const Row = sequelize.define('row', {
        int: DataTypes.INTEGER, big: DataTypes.BIGINT, str: DataTypes.STRING, text: DataTypes.TEXT, bool: DataTypes.BOOLEAN,
        date: DataTypes.DATE, blob: DataTypes.BLOB, real: DataTypes.FLOAT, json: DataTypes.JSON, nothing: DataTypes.STRING,
      });
      await sequelize.sync();
      const date = new Date('2026-01-02T03:04:05.678Z');
      const blob = Buffer.from([0, 1, 2, 255]);
      const created = await Row.create({ int: 42, big: '9007199254740991', str: 'é ✓', text: 'x'.repeat(5000), bool: true, date, blob, real: 1.5, json: { a: [1, 'b'] }, nothing: null });
      t.is(created.get('id'), 1);
      await Row.create({ int: -1, bool: false });
      const [a, b] = await Row.findAll({ order: [['id', 'ASC']] });
      t.is(a!.get('int'), 42);
      t.is(String(a!.get('big')), '9007199254740991');
      t.is(a!.get('str'), 'é ✓');
      t.is((a!.get('text') as string).length, 5000);
      t.is(a!.get('bool'), true);
      t.is(b!.get('bool'), false);
      t.deepEqual(a!.get('date'), date);
      t.true(Buffer.isBuffer(a!.get('blob')));
      t.deepEqual(a!.get('blob'), blob);
      t.is(a!.get('real'), 1.5);
      t.deepEqual(a!.get('json'), { a: [1, 'b'] });
      t.is(a!.get('nothing'), null);
      // Booleans are stored as 0/1 and dates as text, as sqlite3 stores them.
      const [raw] = (await sequelize.query('SELECT bool, typeof(date) AS dt, typeof(blob) AS bt FROM rows WHERE id = 1', { raw: true }))[0] as Record<string, unknown>[];
      t.deepEqual({ ...raw }, { bool: 1, dt: 'text', bt: 'blob' });
      // Bind parameters (sequelize's $n) and replacements.
      const [bound] = await sequelize.query('SELECT $1 AS a, $2 AS b', { bind: [7, 'x'], raw: true });
      t.deepEqual({ ...(bound as Record<string, unknown>[])[0] }, { a: 7, b: 'x' });
      const [named] = await sequelize.query('SELECT $n AS n', { bind: { n: 3, unused: 4 }, raw: true });
      t.deepEqual({ ...(named as Record<string, unknown>[])[0] }, { n: 3 });
    } finally {
      await sequelize.close();
    }
  });
});

test('driver: lastID and changes, as sqlite3 reports them', async (t) => {
  await withFile(async (file) => {
    const db = await open(file);
    await run(db, 'CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)');
    const ins = await run(db, 'INSERT INTO t (v) VALUES (?), (?)', ['a', 'b']);
    t.true(ins instanceof Statement);
    t.is(ins.lastID, 2);
    t.is(ins.changes, 2);
    const upd = await run(db, 'UPDATE t SET v = ? WHERE id >= ?', ['c', 1]);
    t.is(upd.changes, 2);
    t.is((await run(db, 'DELETE FROM t WHERE id = ?', [99])).changes, 0);
    t.deepEqual(await all(db, 'SELECT id, v FROM t ORDER BY id'), [{ id: 1, v: 'c' }, { id: 2, v: 'c' }]);
    // Integers beyond 2^53 read back as numbers (rounded), BigInt binds, booleans bind as 0/1, undefined as NULL.
    t.deepEqual(await all(db, 'SELECT 9007199254740993 AS big, ? AS b, ? AS t, ? AS u', [12n, true, undefined]), [{ big: 9007199254740992, b: 12, t: 1, u: null }]);
    // Errors carry sqlite3's codes.
    const err = await t.throwsAsync(run(db, 'INSERT INTO t (id, v) VALUES (1, ?)', ['x']));
    t.is((err as { code?: string }).code, 'SQLITE_CONSTRAINT');
    t.regex(err!.message, /^SQLITE_CONSTRAINT: UNIQUE constraint failed: t\.id/u);
    t.is(((await t.throwsAsync(all(db, 'SELECT * FROM missing'))) as { code?: string }).code, 'SQLITE_ERROR');
    // A statement of only a comment does nothing.
    t.deepEqual(await all(db, '-- nothing'), []);
    await close(db);
    await t.throwsAsync(run(db, 'SELECT 1'), { message: /SQLITE_MISUSE/u });
  });
});

test('driver: opening without OPEN_CREATE fails on a missing file; read-only refuses writes', async (t) => {
  await withFile(async (file) => {
    const err = await t.throwsAsync(open(file, nodeSqliteDriver.OPEN_READWRITE));
    t.is((err as { code?: string }).code, 'SQLITE_CANTOPEN');
    const db = await open(file);
    await run(db, 'CREATE TABLE t (v)');
    await close(db);
    const ro = await open(file, nodeSqliteDriver.OPEN_READONLY);
    t.is(((await t.throwsAsync(run(ro, 'INSERT INTO t VALUES (1)'))) as { code?: string }).code, 'SQLITE_READONLY');
    await close(ro);
  });
});

async function counterDb(file: string): Promise<{ sequelize: Sequelize; read: () => Promise<number> }> {
  const sequelize = sqliteSequelize(file, { logging: false, pool: { max: 1, min: 0 } });
  await sequelize.query('PRAGMA journal_mode = WAL');
  await sequelize.query('CREATE TABLE counter (id INTEGER PRIMARY KEY, n INTEGER NOT NULL)');
  await sequelize.query('INSERT INTO counter (id, n) VALUES (1, 0)');
  const read = async () => Number(((await sequelize.query('SELECT n FROM counter WHERE id = 1', { plain: true })) as { n: number }).n);
  return { sequelize, read };
}

test('driver: sequelize transactions commit and roll back; an error inside one rolls it back', async (t) => {
  await withFile(async (file) => {
    const { sequelize, read } = await counterDb(file);
    try {
      await sequelize.transaction(async (tx) => {
        await sequelize.query('UPDATE counter SET n = n + 1', { transaction: tx });
      });
      t.is(await read(), 1);
      const tx = await sequelize.transaction();
      await sequelize.query('UPDATE counter SET n = n + 10', { transaction: tx });
      await tx.rollback();
      t.is(await read(), 1);
      await t.throwsAsync(
        sequelize.transaction(async (tx2) => {
          await sequelize.query('UPDATE counter SET n = n + 100', { transaction: tx2 });
          await sequelize.query('INSERT INTO counter (id, n) VALUES (1, 0)', { transaction: tx2 });
        }),
        { instanceOf: UniqueConstraintError },
      );
      t.is(await read(), 1);
    } finally {
      await sequelize.close();
    }
  });
});

test('driver: concurrent transactions are serialised without blocking the event loop', async (t) => {
  await withFile(async (file) => {
    const { sequelize, read } = await counterDb(file);
    try {
      let ticks = 0;
      const ticker = setInterval(() => ticks++, 1);
      const n = 12;
      await Promise.all(
        Array.from({ length: n }, (_, i) =>
          sequelize.transaction({ type: i % 2 === 0 ? Transaction.TYPES.IMMEDIATE : Transaction.TYPES.EXCLUSIVE }, async (tx) => {
            const cur = Number(((await sequelize.query('SELECT n FROM counter WHERE id = 1', { plain: true, transaction: tx })) as { n: number }).n);
            await sleep(3); // the write lock is held across awaits
            await sequelize.query('UPDATE counter SET n = ?', { replacements: [cur + 1], transaction: tx });
          }),
        ),
      );
      clearInterval(ticker);
      t.is(await read(), n);
      t.true(ticks > 5, `timers kept firing while transactions waited (${ticks})`);
      // A write outside any transaction waits for the one holding the lock, then runs.
      const tx = await sequelize.transaction({ type: Transaction.TYPES.IMMEDIATE });
      await sequelize.query('UPDATE counter SET n = n + 1', { transaction: tx });
      const outside = sequelize.query('UPDATE counter SET n = n + 1');
      await sleep(20);
      await tx.commit();
      await outside;
      t.is(await read(), n + 2);
    } finally {
      await sequelize.close();
    }
  });
});

test('driver: deferred sequelize transactions that write first wait for each other instead of failing', async (t) => {
  await withFile(async (file) => {
    const { sequelize, read } = await counterDb(file);
    try {
      await Promise.all(
        Array.from({ length: 6 }, () =>
          sequelize.transaction({ type: Transaction.TYPES.DEFERRED }, async (tx) => {
            await sequelize.query('UPDATE counter SET n = n + 1', { transaction: tx });
            await sleep(3);
            await sequelize.query('UPDATE counter SET n = n + 1', { transaction: tx });
          }),
        ),
      );
      t.is(await read(), 12);
    } finally {
      await sequelize.close();
    }
  });
});

test('driver: a lock held too long fails with SQLITE_BUSY after the busy timeout; a transaction that read before another one committed cannot write', async (t) => {
  await withFile(async (file) => {
    const a = await open(file);
    const b = await open(file);
    await run(a, 'CREATE TABLE t (v)');
    await run(a, 'BEGIN IMMEDIATE');
    await run(b, 'PRAGMA busy_timeout = 80');
    let ticks = 0;
    const ticker = setInterval(() => ticks++, 1);
    const started = Date.now();
    const err = await t.throwsAsync(run(b, 'INSERT INTO t VALUES (1)'));
    const waited = Date.now() - started;
    clearInterval(ticker);
    t.is((err as { code?: string }).code, 'SQLITE_BUSY');
    t.true(waited >= 70 && waited < 4000, `waited ${waited} ms`);
    t.true(ticks > 0, 'timers fired while the statement waited');
    // b read in a transaction, then wants to write while a holds the write lock: b waits, and fails at once
    // when a commits (its snapshot is older than a's commit: SQLITE_BUSY_SNAPSHOT), so it can roll back and retry.
    b.configure('busyTimeout', 5000);
    await run(b, 'BEGIN');
    await all(b, 'SELECT * FROM t');
    const blocked = run(b, 'INSERT INTO t VALUES (2)');
    await sleep(20);
    await run(a, 'INSERT INTO t VALUES (3)');
    const t0 = Date.now();
    await run(a, 'COMMIT');
    t.is(((await t.throwsAsync(blocked)) as { code?: string }).code, 'SQLITE_BUSY');
    t.true(Date.now() - t0 < 3000, 'not held until the 5 s busy timeout');
    await run(b, 'ROLLBACK');
    t.deepEqual(await all(b, 'SELECT v FROM t'), [{ v: 3 }]);
    await close(a);
    await close(b);
  });
});

test('driver: close waits for statements waiting on a lock, then refuses new ones', async (t) => {
  await withFile(async (file) => {
    const a = await open(file);
    const b = await open(file);
    await run(a, 'CREATE TABLE t (v)');
    await run(a, 'BEGIN IMMEDIATE');
    const order: string[] = [];
    const waiting = run(b, 'INSERT INTO t VALUES (1)').then(() => order.push('insert'));
    const closed = close(b).then(() => order.push('close'));
    await sleep(15);
    t.deepEqual(order, []);
    await run(a, 'COMMIT');
    await Promise.all([waiting, closed]);
    t.deepEqual(order, ['insert', 'close']);
    t.deepEqual(await all(a, 'SELECT v FROM t'), [{ v: 1 }]);
    await t.throwsAsync(all(b, 'SELECT 1'), { message: /SQLITE_MISUSE/u });
    await close(a);
  });
});

test('driver: sequelize on :memory: keeps one connection', async (t) => {
  const sequelize = sqliteSequelize(':memory:', { logging: false });
  try {
    await sequelize.query('CREATE TABLE t (v)');
    await sequelize.query('INSERT INTO t VALUES (1)');
    t.deepEqual({ ...((await sequelize.query('SELECT v FROM t', { plain: true })) as object) }, { v: 1 });
  } finally {
    await sequelize.close();
  }
});

test('driver: the change mark stays while only SELECTs run, and moves with a write on the connection, a commit elsewhere, or a new connection', async (t) => {
  await withFile(async (file) => {
    const db = await open(file);
    const other = await open(file);
    try {
      await run(db, 'CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)');
      await run(db, "INSERT INTO t (id, v) VALUES (1, 'a')");
      const first = db.changeMarkNow();
      t.is(typeof first, 'number');
      t.deepEqual(db.arraysNow('SELECT v FROM t WHERE id = ?', [1]), [['a']]);
      t.deepEqual(db.allNow('  select v from t', []), [{ v: 'a' }]);
      await all(db, 'SELECT * FROM t');
      t.is(db.changeMarkNow(), first, 'reads, at once or through the queue, leave it');

      await run(db, "UPDATE t SET v = 'b' WHERE id = 1");
      const afterRun = db.changeMarkNow();
      t.not(afterRun, first, 'a write through run');
      await exec(db, "UPDATE t SET v = 'c' WHERE id = 1");
      const afterExec = db.changeMarkNow();
      t.not(afterExec, afterRun, 'a write through exec');
      db.allNow("UPDATE t SET v = 'd' WHERE id = 1 RETURNING v", []);
      const afterNow = db.changeMarkNow();
      t.not(afterNow, afterExec, 'a statement run at once that is not a SELECT');

      // Another connection's commit (another process's is seen the same way: SQLite's data_version).
      await run(other, "UPDATE t SET v = 'e' WHERE id = 1");
      const afterOther = db.changeMarkNow();
      t.not(afterOther, afterNow, 'a commit of another connection');
      t.is(db.changeMarkNow(), afterOther, 'and only once');
      t.deepEqual(db.arraysNow('SELECT v FROM t WHERE id = ?', [1]), [['e']]);

      // Uncommitted work of another connection is not seen, and does not move the mark; its commit does.
      await exec(other, 'BEGIN IMMEDIATE');
      await run(other, "UPDATE t SET v = 'f' WHERE id = 1");
      t.is(db.changeMarkNow(), afterOther);
      await exec(other, 'COMMIT');
      t.not(db.changeMarkNow(), afterOther);

      // A rolled-back transaction on the connection itself: the rows read inside it are not kept past it.
      await exec(db, 'BEGIN');
      await run(db, "UPDATE t SET v = 'g' WHERE id = 1");
      const inside = db.changeMarkNow();
      await exec(db, 'ROLLBACK');
      t.not(db.changeMarkNow(), inside);
      t.deepEqual(db.arraysNow('SELECT v FROM t WHERE id = ?', [1]), [['f']]);

      // A new connection never repeats a mark another one gave.
      const marks = new Set([first, afterRun, afterExec, afterNow, afterOther, inside, db.changeMarkNow(), other.changeMarkNow()]);
      const third = await open(file);
      t.false(marks.has(third.changeMarkNow()));
      await close(third);
      t.is(third.changeMarkNow(), undefined, 'a closed connection cannot tell');
    } finally {
      await close(db);
      await close(other);
    }
  });
});

test('driver: the change mark moves when another process commits to the file', async (t) => {
  await withFile(async (file) => {
    const db = await open(file);
    try {
      await run(db, 'CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)');
      await run(db, "INSERT INTO t (id, v) VALUES (1, 'a')");
      const before = db.changeMarkNow();
      t.is(db.changeMarkNow(), before);
      const script = "const { DatabaseSync } = require('node:sqlite'); const d = new DatabaseSync(process.argv[1]); d.prepare(\"UPDATE t SET v = 'b' WHERE id = 1\").run(); d.close();";
      execFileSync(process.execPath, ['-e', script, file]);
      t.not(db.changeMarkNow(), before);
      t.deepEqual(db.arraysNow('SELECT v FROM t WHERE id = ?', [1]), [['b']]);
    } finally {
      await close(db);
    }
  });
});
