/**
 * The SQLite store's checkpoints run on a thread of their own
 * (engine/sql/sqlite_checkpointer.ts): the writer connection never
 * checkpoints inside a commit, yet committed writes reach the database file
 * and the log is started afresh while writes keep coming.
 */
import test from 'ava';
import { copyFileSync, existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { openSqlStore } from './sql_helpers.ts';
import type { TupleKey } from '../../engine/index.ts';

/** Tuples in the database file alone (a copy without its `-wal`), or undefined if the copy was taken mid-checkpoint. */
function tuplesInMainFile(file: string): number | undefined {
  const dir = mkdtempSync(join(tmpdir(), 'lk-ckpt-'));
  try {
    const copy = join(dir, 'copy.sqlite');
    copyFileSync(file, copy);
    const db = new DatabaseSync(copy, { readOnly: true });
    try {
      return Number((db.prepare('SELECT count(*) AS n FROM fga_tuple').get() as { n: number }).n);
    } finally {
      db.close();
    }
  } catch {
    return undefined;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const sqliteFile = (url: string): string => url.replace(/^sqlite:/u, '');

test('sql sqlite: committed writes are copied into the database file by the checkpoint thread', async (t) => {
  const { store, db, teardown } = await openSqlStore('sqlite');
  try {
    const file = sqliteFile(db.url);
    for (let b = 0; b < 5; b++) {
      const writes: TupleKey[] = Array.from({ length: 100 }, (_, i) => ({ object: `doc:${b}_${i}`, relation: 'viewer', user: `user:${(i * 7919) % 1000}` }));
      await store.write([], writes);
    }
    // The writer never checkpoints (wal_autocheckpoint = 0) and nothing else writes: only the thread can copy the log.
    let found: number | undefined;
    for (let i = 0; i < 100 && found !== 500; i++) {
      await new Promise((r) => setTimeout(r, 20));
      found = tuplesInMainFile(file);
    }
    t.is(found, 500);
  } finally {
    await teardown();
  }
});

test('sql sqlite: the log is started afresh while writes keep coming', async (t) => {
  const { store, db, teardown } = await openSqlStore('sqlite');
  try {
    const file = sqliteFile(db.url);
    // Without the restart, these writes took the log past 400 MiB; the threshold is 32,000 frames (about 128 MiB).
    let maxWal = 0;
    for (let b = 0; b < 400; b++) {
      const writes: TupleKey[] = Array.from({ length: 100 }, (_, i) => ({ object: `doc:${(i * 104729 + b * 7) % 1_000_003}_${b}`, relation: 'viewer', user: `user:${(b * 100 + i) * 2654435761 % 100_000}` }));
      await store.write([], writes);
      if (existsSync(`${file}-wal`)) maxWal = Math.max(maxWal, statSync(`${file}-wal`).size);
    }
    t.true(maxWal > 0);
    t.true(maxWal < 200 * 2 ** 20, `the log reached ${maxWal} bytes`);
    t.is((await store.readPage({}, { pageSize: 1 })).items.length, 1);
    t.is(await store.revision(), 400);
  } finally {
    await teardown();
  }
});

test('internal: the checkpoint thread reports a failure when it cannot open its file, and creates none', async (t) => {
  const { SqliteCheckpointer } = await import('../../engine/sql/sqlite_checkpointer.ts');
  const dir = mkdtempSync(join(tmpdir(), 'lk-ckpt-'));
  const checkpointer = new SqliteCheckpointer(join(dir, 'missing.sqlite'));
  try {
    t.false(checkpointer.failed);
    checkpointer.wrote();
    for (let i = 0; i < 200 && !checkpointer.failed; i++) await new Promise((r) => setTimeout(r, 10));
    t.true(checkpointer.failed);
    // Opened read-write without creating: the failed thread left no empty database behind.
    t.false(existsSync(join(dir, 'missing.sqlite')));
  } finally {
    await checkpointer.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
