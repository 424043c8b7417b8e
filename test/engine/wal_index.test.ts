/**
 * The change mark of a `node:sqlite` driver connection read from the file's
 * wal-index header (engine/sql/wal_index.ts): a mark that has not moved means
 * the rows have not changed, whatever other connections did in between
 * (commits, rollbacks, checkpoints of every kind, a log started afresh), and
 * the descriptor kept on the `-shm` file never costs the process its locks.
 */
import test from 'ava';
import fc from 'fast-check';
import { execFileSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { Database } from '../../engine/sql/node_sqlite_driver.ts';
import { WalIndexWatch } from '../../engine/sql/wal_index.ts';

const numRuns = process.env['CI'] ? 200 : 60;

async function withDir<T>(fn: (dir: string) => Promise<T>): Promise<T> {
  const dir = await mkdtemp(join(tmpdir(), 'lk_walidx-'));
  try {
    return await fn(dir);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

function open(file: string): Promise<Database> {
  return new Promise((resolve, reject) => {
    const db: Database = new Database(file, undefined, (err) => (err ? reject(err) : resolve(db)));
  });
}

function close(db: Database): Promise<void> {
  return new Promise((resolve, reject) => db.close((err) => (err ? reject(err) : resolve())));
}

function run(db: Database, sql: string, params: unknown[] = []): Promise<void> {
  return new Promise((resolve, reject) => db.run(sql, params, (err) => (err ? reject(err) : resolve())));
}

type Step =
  | { kind: 'commit'; id: number; v: string }
  | { kind: 'delete'; id: number }
  | { kind: 'rollback'; id: number; v: string }
  | { kind: 'own'; id: number; v: string }
  | { kind: 'checkpoint'; how: 'PASSIVE' | 'FULL' | 'RESTART' | 'TRUNCATE' }
  | { kind: 'read' };

const id = fc.integer({ min: 1, max: 4 });
const v = fc.string({ maxLength: 6 });
const step: fc.Arbitrary<Step> = fc.oneof(
  fc.record({ kind: fc.constant('commit' as const), id, v }),
  fc.record({ kind: fc.constant('delete' as const), id }),
  fc.record({ kind: fc.constant('rollback' as const), id, v }),
  fc.record({ kind: fc.constant('own' as const), id, v }),
  fc.record({ kind: fc.constant('checkpoint' as const), how: fc.constantFrom('PASSIVE' as const, 'FULL' as const, 'RESTART' as const, 'TRUNCATE' as const) }),
  fc.record({ kind: fc.constant('read' as const) }),
);

test('driver: an unmoved change mark means unchanged rows, after any sequence of commits, rollbacks and checkpoints elsewhere', async (t) => {
  await withDir(async (dir) => {
    const file = join(dir, 'prop.sqlite');
    const db = await open(file);
    // Another connection: to SQLite, what another process's would be (its commits move the header the watch reads).
    const other = new DatabaseSync(file, { timeout: 5000 });
    try {
      await run(db, 'CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)');
      const rows = (): unknown => db.arraysNow('SELECT id, v FROM t ORDER BY id', []);
      await t.notThrowsAsync(
        fc.assert(
          fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 16 }), async (steps) => {
            let mark = db.changeMarkNow();
            let seen = JSON.stringify(rows());
            for (const s of steps) {
              switch (s.kind) {
                case 'commit':
                  other.prepare('INSERT INTO t (id, v) VALUES (?, ?) ON CONFLICT (id) DO UPDATE SET v = excluded.v').run(s.id, s.v);
                  break;
                case 'delete':
                  other.prepare('DELETE FROM t WHERE id = ?').run(s.id);
                  break;
                case 'rollback':
                  other.exec('BEGIN IMMEDIATE');
                  other.prepare('INSERT INTO t (id, v) VALUES (?, ?) ON CONFLICT (id) DO UPDATE SET v = excluded.v').run(s.id, `${s.v}!`);
                  other.exec('ROLLBACK');
                  break;
                case 'own':
                  await run(db, 'INSERT INTO t (id, v) VALUES (?, ?) ON CONFLICT (id) DO UPDATE SET v = excluded.v', [s.id, s.v]);
                  break;
                case 'checkpoint':
                  other.exec(`PRAGMA wal_checkpoint(${s.how})`);
                  break;
                case 'read':
                  break;
              }
              const now = db.changeMarkNow();
              const held = JSON.stringify(rows());
              // The safety rule: the same mark, the same rows.
              if (now === mark && held !== seen) return false;
              mark = now;
              seen = held;
            }
            return true;
          }),
          { numRuns },
        ),
      );
    } finally {
      other.close();
      await close(db);
    }
  });
});

test('driver: the change mark stays between reads while nothing is committed, and moves on a commit made after the log was started afresh', async (t) => {
  await withDir(async (dir) => {
    const file = join(dir, 'restart.sqlite');
    const db = await open(file);
    const other = new DatabaseSync(file, { timeout: 5000 });
    try {
      await run(db, 'CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)');
      await run(db, "INSERT INTO t (id, v) VALUES (1, 'a')");
      const first = db.changeMarkNow();
      t.not(first, undefined);
      t.is(db.changeMarkNow(), first);
      // A checkpoint copies pages; what a SELECT reads is the same. Then the log restarts from its first frame.
      other.exec('PRAGMA wal_checkpoint(TRUNCATE)');
      const afterCheckpoint = db.changeMarkNow();
      t.deepEqual(db.arraysNow('SELECT v FROM t WHERE id = 1', []), [['a']]);
      other.prepare("UPDATE t SET v = 'b' WHERE id = 1").run();
      t.not(db.changeMarkNow(), afterCheckpoint);
      t.deepEqual(db.arraysNow('SELECT v FROM t WHERE id = 1', []), [['b']]);
      // Another process, once the log has been truncated again.
      other.exec('PRAGMA wal_checkpoint(TRUNCATE)');
      const before = db.changeMarkNow();
      const script = "const { DatabaseSync } = require('node:sqlite'); const d = new DatabaseSync(process.argv[1]); d.prepare(\"UPDATE t SET v = 'c' WHERE id = 1\").run(); d.close();";
      execFileSync(process.execPath, ['-e', script, file]);
      t.not(db.changeMarkNow(), before);
      t.deepEqual(db.arraysNow('SELECT v FROM t WHERE id = 1', []), [['c']]);
    } finally {
      other.close();
      await close(db);
    }
  });
});

test('driver: a database removed and made anew at the same path is watched anew', async (t) => {
  await withDir(async (dir) => {
    const file = join(dir, 'again.sqlite');
    for (const round of [1, 2, 3]) {
      const db = await open(file);
      const other = new DatabaseSync(file, { timeout: 5000 });
      try {
        await run(db, 'CREATE TABLE IF NOT EXISTS t (id INTEGER PRIMARY KEY, v TEXT)');
        await run(db, 'INSERT INTO t (id, v) VALUES (?, ?)', [round, 'a']);
        const before = db.changeMarkNow();
        t.is(db.changeMarkNow(), before);
        other.prepare("UPDATE t SET v = 'b' WHERE id = ?").run(round);
        t.not(db.changeMarkNow(), before, `round ${round}`);
        t.deepEqual(db.arraysNow('SELECT id, v FROM t', []), [[round, 'b']]);
      } finally {
        other.close();
        await close(db);
      }
      await rm(file, { force: true });
      await rm(`${file}-wal`, { force: true });
      await rm(`${file}-shm`, { force: true });
    }
  });
});

test('driver: closing a watched connection leaves the locks of the process’s other connections on the file in place', async (t) => {
  await withDir(async (dir) => {
    const file = join(dir, 'locks.sqlite');
    const a = await open(file);
    const b = await open(file);
    try {
      await run(a, 'CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)');
      await run(a, "INSERT INTO t (id, v) VALUES (1, 'a')");
      // Both connections watch the file's wal-index.
      t.not(a.changeMarkNow(), undefined);
      t.not(b.changeMarkNow(), undefined);
      // b holds a read transaction: a lock on one of the wal-index's read marks, which a checkpoint that truncates the
      // log must wait for. Then a commit, so that the log has frames the reader's snapshot does not include.
      await run(b, 'BEGIN');
      t.deepEqual(b.arraysNow('SELECT v FROM t', []), [['a']]);
      const writer = new DatabaseSync(file, { timeout: 5000 });
      writer.prepare("UPDATE t SET v = 'b' WHERE id = 1").run();
      writer.close();
      await close(a);
      // Another process: were the process's locks on the -shm file dropped when a closed, it would find no reader.
      const script =
        "const { DatabaseSync } = require('node:sqlite'); const d = new DatabaseSync(process.argv[1], { timeout: 0 }); const r = d.prepare('PRAGMA wal_checkpoint(TRUNCATE)').get(); process.stdout.write(JSON.stringify(r)); d.close();";
      const answer = JSON.parse(execFileSync(process.execPath, ['-e', script, file], { encoding: 'utf8' })) as { busy: number };
      t.is(answer.busy, 1, 'the checkpoint saw the open reader');
      t.deepEqual(b.arraysNow('SELECT v FROM t', []), [['a']]);
      await run(b, 'COMMIT');
      t.deepEqual(b.arraysNow('SELECT v FROM t', []), [['b']]);
    } finally {
      if (!a.closed) await close(a);
      await close(b);
    }
  });
});

test('wal-index: no watch without a -shm file, and none before the file has one', async (t) => {
  await withDir(async (dir) => {
    t.is(WalIndexWatch.open(join(dir, 'none.sqlite')), undefined);
    const file = join(dir, 'rollback.sqlite');
    const d = new DatabaseSync(file);
    d.exec('PRAGMA journal_mode = DELETE; CREATE TABLE t (x)');
    t.is(WalIndexWatch.open(file), undefined);
    d.close();
  });
});
