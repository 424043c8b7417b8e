/**
 * Checkpoints of a SQLite file in WAL mode on a thread of their own, so that
 * the store's writer never runs one on the event loop.
 *
 * Why: in WAL mode a commit appends its pages to the `-wal` file; a
 * checkpoint copies them back into the database file and syncs both (with
 * `synchronous = NORMAL`, the only syncs there are). SQLite runs one inside
 * the commit that takes the log past `wal_autocheckpoint` pages (1,000 by
 * default): with node:sqlite that is the thread that runs JavaScript. At
 * 0.9 M tuples a 100-tuple write dirties about 170 pages (140 of them in the
 * reverse index, one random leaf per tuple), so every sixth commit
 * checkpointed some 4 MiB and waited for the disk: commits averaged 8–15 ms
 * and the longest took 200–360 ms, during which no request was served.
 * With the checkpoints here, commits averaged 2–4 ms and writes ran 2.1–2.5×
 * faster in the same run (docs/performance.md, "Writes").
 *
 * How: the writer connection sets `wal_autocheckpoint = 0`; after each commit
 * it calls {@link SqliteCheckpointer.wrote}, and the thread runs a PASSIVE
 * checkpoint a few milliseconds later on a connection of its own (PASSIVE
 * never waits for readers or writers; a frame appended meanwhile is left for
 * the next one). SQLite starts the log afresh at the first write of a
 * transaction that began with every frame copied. While writes keep coming,
 * that moment may not arrive: once the log holds {@link RESTART_FRAMES}
 * frames, {@link SqliteCheckpointer.beforeWrite} tells the writer to run a
 * PASSIVE checkpoint itself before its next transaction (the thread has copied
 * all but the last few commits, so this one is short), so the log stays
 * bounded (about 128 MiB). Each such checkpoint waits for the disk, so the
 * threshold sets how often a write waits: Engine.write of 0.5 M tuples, two
 * thresholds interleaved in one process, ran 24.7 k tuples/s at 4,000 frames
 * against 31.5 k at 16,000; 32.3 k at 16,000 against 37.3 k at 64,000; 34.7 k
 * at 32,000 against 34.9 k at 64,000.
 *
 * Durability is unchanged: a checkpoint syncs the log before copying and the
 * database after, on whichever connection runs it. If the thread fails, the
 * writer goes back to SQLite's automatic checkpoints ({@link
 * SqliteCheckpointer.failed}).
 */
import { pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';

/** Frames in the log after which the writer checkpoints before its next transaction. */
export const RESTART_FRAMES = 32_000;

/** Milliseconds the thread waits after a commit before checkpointing (commits in between are copied together). */
const DELAY_MS = 3;

/**
 * The thread: a CommonJS script (evaluated, so it needs no file next to the
 * compiled module). Messages in: `1` (a commit happened), `0` (stop). Out:
 * `{ log, done }` after each checkpoint (frames in the log, frames copied).
 */
const THREAD = `
const { DatabaseSync } = require('node:sqlite');
const { parentPort, workerData } = require('node:worker_threads');
let db;
let checkpoint;
let timer;
let again = false;
const run = () => {
  timer = undefined;
  if (db === undefined) {
    // Opened at the first commit, read-write without creating: a file removed meanwhile fails the thread, never comes back empty.
    db = new DatabaseSync(new URL(workerData.url), { timeout: 0 });
    db.exec('PRAGMA synchronous = NORMAL');
    checkpoint = db.prepare('PRAGMA wal_checkpoint(PASSIVE)');
  }
  let r;
  try {
    r = checkpoint.get();
  } catch {
    // Another connection is checkpointing (SQLITE_BUSY), or the file is gone: the next commit tries again.
  }
  if (r !== undefined) {
    parentPort.postMessage({ log: Number(r.log), done: Number(r.checkpointed) });
    // Frames appended while copying: copy them too, after the same short wait.
    if (Number(r.checkpointed) < Number(r.log)) again = true;
  }
  if (again) {
    again = false;
    timer = setTimeout(run, workerData.delay);
  }
};
parentPort.on('message', (m) => {
  if (m === 0) {
    if (timer !== undefined) clearTimeout(timer);
    db?.close();
    parentPort.close();
    return;
  }
  if (timer === undefined) timer = setTimeout(run, workerData.delay);
  else again = true;
});
`;

export class SqliteCheckpointer {
  readonly #worker: Worker;
  /** Frames in the log at the thread's last checkpoint (0 after the writer's own). */
  #log = 0;
  #failed = false;
  #closed = false;
  readonly #exited: Promise<void>;

  /** Starts the thread for the SQLite file `file` (in WAL mode). */
  constructor(file: string) {
    const url = pathToFileURL(file);
    url.searchParams.set('mode', 'rw');
    this.#worker = new Worker(THREAD, { eval: true, workerData: { url: url.href, delay: DELAY_MS } });
    this.#worker.on('message', (m: { log: number; done: number }) => {
      this.#log = m.log;
    });
    this.#exited = new Promise((resolve) => {
      this.#worker.once('error', () => {
        this.#failed = true;
      });
      this.#worker.once('exit', () => {
        if (!this.#closed) this.#failed = true;
        resolve();
      });
    });
    // After the listeners (adding one refs the worker again): the thread never keeps the process alive; a process
    // that exits without close() leaves the log to SQLite's next opener, as before.
    this.#worker.unref();
  }

  /** True once the thread has failed or exited on its own: the writer must checkpoint as SQLite does by default. */
  get failed(): boolean {
    return this.#failed;
  }

  /** Tells the thread a transaction committed. */
  wrote(): void {
    if (!this.#failed && !this.#closed) this.#worker.postMessage(1);
  }

  /**
   * True when the writer should run `PRAGMA wal_checkpoint(PASSIVE)` before
   * its next transaction, so that the transaction starts the log afresh.
   */
  beforeWrite(): boolean {
    if (this.#log < RESTART_FRAMES) return false;
    this.#log = 0;
    return true;
  }

  /** Stops the thread and waits until its connection is closed. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    if (!this.#failed) {
      // Held open until the thread has closed its connection, so that the file can be removed after close().
      this.#worker.ref();
      this.#worker.postMessage(0);
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([this.#exited, new Promise<void>((resolve) => (timer = setTimeout(resolve, 2000)))]);
      clearTimeout(timer);
    }
    await this.#worker.terminate();
  }
}
