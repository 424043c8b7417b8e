/**
 * Whether any connection, of this process or another, has committed to a
 * SQLite database in WAL mode since it was last asked: the header of the
 * file's wal-index (its `-shm` file), read with one `pread`.
 *
 * Why: a reader that keeps rows between requests (the user store's row
 * cache, auth/user_store.ts) must know at each use that nothing has changed
 * them. `PRAGMA data_version` tells, but it is a read transaction: two lock
 * calls on the `-shm` file and a statement, about 2.2 µs. Reading the header
 * is one system call (about 0.9 µs alone), and the cookie session check
 * costs the server about 6 % less CPU (docs/performance.md, "Sixteenth
 * round").
 *
 * What SQLite guarantees (its WAL file format): the wal-index begins with two
 * copies of a 48-byte header. A commit writes the second copy, then the
 * first, before it returns; the header's change counter (`iChange`) grows on
 * every commit, and a restarted log gets new salts, so the 48 bytes after a
 * commit are never those before it. A reader that finds both copies equal
 * holds a header that some commit wrote in full; SQLite's own readers test
 * it the same way, and its `data_version` moves when that header differs
 * from the one the connection saw last. Copies that differ (a commit writing
 * them at that instant) or a header not yet initialised answer "cannot
 * tell", and the caller asks SQLite.
 *
 * The descriptor: POSIX locks belong to a process and a file, and closing
 * any descriptor of a file drops every lock the process holds on it,
 * SQLite's included. So a descriptor opened here is never closed while its
 * file can still be reached by its name: each file (device and inode) is
 * opened once per thread and shared by the connections on it, and it is
 * closed only once the name leads elsewhere or nowhere (the database was
 * removed or replaced), when no new connection can meet the locks it held.
 * A server keeps one descriptor for its database; a process that makes and
 * removes many databases (the tests) keeps one for each live one.
 */
import { closeSync, fstatSync, openSync, readSync, statSync } from 'node:fs';

/** Both copies of the header (SQLite's `WalIndexHdr`, 48 bytes each). */
const HEADER = 48;
/** Offset of `isInit` in the header: 0 until the wal-index is built. */
const IS_INIT = 12;

interface OpenFile {
  readonly fd: number;
  readonly path: string;
  readonly dev: number;
  readonly ino: number;
  users: number;
}

/** The `-shm` files opened by this thread, by `dev:ino`. */
const files = new Map<string, OpenFile>();

/** Closes the files not in use whose name leads to another file or to none. */
function sweep(): void {
  for (const [key, f] of files) {
    if (f.users > 0) continue;
    const now = statSync(f.path, { throwIfNoEntry: false });
    if (now !== undefined && now.dev === f.dev && now.ino === f.ino) continue;
    files.delete(key);
    try {
      closeSync(f.fd);
    } catch {
      // Already closed: nothing held.
    }
  }
}

/** Watches one database's wal-index header for one connection. */
export class WalIndexWatch {
  readonly #file: OpenFile;
  /** Both copies as read last, and the header seen last. */
  readonly #read = Buffer.alloc(2 * HEADER);
  readonly #seen = Buffer.alloc(HEADER);
  #released = false;

  private constructor(file: OpenFile) {
    this.#file = file;
  }

  /**
   * A watch on the wal-index of the database file at `databasePath` (whose
   * connection is in WAL mode and has read from it, so that the `-shm` file
   * exists), or undefined when there is none to read. Its first
   * {@link changed} answers true.
   */
  static open(databasePath: string): WalIndexWatch | undefined {
    sweep();
    const path = `${databasePath}-shm`;
    const st = statSync(path, { throwIfNoEntry: false });
    if (st === undefined) return undefined;
    const key = `${st.dev}:${st.ino}`;
    let file = files.get(key);
    if (file === undefined) {
      let fd: number;
      try {
        fd = openSync(path, 'r');
      } catch {
        return undefined;
      }
      const opened = fstatSync(fd);
      const openedKey = `${opened.dev}:${opened.ino}`;
      // Kept like any other (never closed while its file can be reached), even when the name led elsewhere meanwhile.
      files.set(files.has(openedKey) ? `${openedKey}:${fd}` : openedKey, { fd, path, dev: opened.dev, ino: opened.ino, users: 0 });
      if (openedKey !== key) return undefined;
      file = files.get(key) as OpenFile;
    }
    file.users++;
    return new WalIndexWatch(file);
  }

  /**
   * True when a commit has been written since the last call (and on the
   * first), false when none has, undefined when the header cannot be read as
   * a whole now (the caller then asks SQLite).
   */
  changed(): boolean | undefined {
    if (this.#released) return undefined;
    const b = this.#read;
    let n: number;
    try {
      n = readSync(this.#file.fd, b, 0, 2 * HEADER, 0);
    } catch {
      return undefined;
    }
    if (n !== 2 * HEADER || b[IS_INIT] === 0 || b.compare(b, 0, HEADER, HEADER, 2 * HEADER) !== 0) return undefined;
    if (b.compare(this.#seen, 0, HEADER, 0, HEADER) === 0 && this.#seen[IS_INIT] !== 0) return false;
    b.copy(this.#seen, 0, 0, HEADER);
    return true;
  }

  /** Ends the watch (its connection closed); the descriptor stays open while its file can be reached. */
  release(): void {
    if (this.#released) return;
    this.#released = true;
    this.#file.users--;
  }
}
