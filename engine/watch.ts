/**
 * The watch: a store's changelog as an endless, resumable stream of changes,
 * in commit order, each with a token that names it exactly.
 *
 * Order and tokens. A change is identified by `(revision, seq)`: the revision
 * of the write call that made it and its place in that call
 * ({@link TupleChange.seq}). Revisions are allocated under the store's
 * revision lock, which each write holds until it commits (memory: one write
 * at a time; SQL: the row lock of `UPDATE fga_store SET revision = …`, taken
 * first and released at commit), so revisions commit in increasing order and
 * a read that sees revision `R` sees every revision below it. A watcher that
 * has delivered `(R, s)` therefore never later finds a change ordered before
 * it: no change is skipped for committing late, and resuming after the last
 * delivered token repeats none.
 *
 * Tokens are `R.s` (after change `s` of revision `R`) or `R` (after every
 * change of revision `R`; `0` is the beginning of the changelog). A token is
 * valid on every process that serves the same store, which is what lets a
 * client resume on another replica or after a restart.
 *
 * Waking. Between reads a watcher waits for a {@link ChangeSignal} (the
 * engine fires it after its own writes; a server fires it on another
 * process's committed write, e.g. from PostgreSQL notifications) or for
 * `pollMs`, whichever comes first: the poll bounds how late a change is seen
 * when no signal arrives (another process on SQLite or MySQL).
 *
 * @module
 */
import { LatchkeyError } from './errors.ts';
import type { TupleChange, TupleKey, TupleStore } from './store.ts';

/** One change of the watch. */
export interface WatchEvent {
  /** Resume after this change: pass it as `after` (or `Last-Event-ID`). */
  token: string;
  revision: number;
  /** Place of the change in its revision, from 0. */
  seq: number;
  operation: 'write' | 'delete';
  tuple: TupleKey;
  /** Milliseconds since the epoch at which the change was committed. */
  timestamp: number;
}

/** Options of {@link Engine.watch}. */
export interface WatchOptions {
  /** Start after this token; omitted: start now (after the current revision). */
  after?: string | undefined;
  /** Only changes on objects of this type (`doc`). */
  objectType?: string | undefined;
  /** Ends the stream (the iterator returns) once aborted. */
  signal?: AbortSignal | undefined;
  /** Longest wait between two reads of the changelog when no signal arrives (ms, 10..60,000; default 1,000). */
  pollMs?: number | undefined;
  /** Changes read per query (1..1,000; default 100). */
  batch?: number | undefined;
}

/** A started watch: its starting token, and the changes after it. */
export interface Watch extends AsyncIterable<WatchEvent> {
  /** The token the stream starts after (the resolved "now" when `after` was omitted). */
  readonly start: string;
}

/**
 * A wake-up for watchers: {@link ChangeSignal.notify} calls every listener
 * subscribed at the time and moves {@link ChangeSignal.generation} on, so a
 * watcher that notes the generation before a read knows, after it, whether
 * something was committed meanwhile.
 */
export class ChangeSignal {
  #generation = 0;
  readonly #listeners = new Set<() => void>();

  /** Moves on at every notify. */
  get generation(): number {
    return this.#generation;
  }

  /** Calls `f` at the next notify; returns the unsubscribe. */
  subscribe(f: () => void): () => void {
    this.#listeners.add(f);
    return () => this.#listeners.delete(f);
  }

  /** Something may have been committed: wake every waiter. */
  notify(): void {
    this.#generation++;
    const listeners = [...this.#listeners];
    this.#listeners.clear();
    for (const f of listeners) f();
  }
}

const TOKEN = /^(0|[1-9][0-9]{0,14})(?:\.(0|[1-9][0-9]{0,8}))?$/u;

function badToken(message: string, token: string): LatchkeyError {
  return new LatchkeyError('invalid_argument', message, { reason: 'invalid_watch_token', details: { token: token.slice(0, 64) } });
}

/** The position a token names; `invalid_argument` (reason `invalid_watch_token`) when it is not one. */
export function parseWatchToken(token: string): { revision: number; seq: number | undefined } {
  const m = typeof token === 'string' ? TOKEN.exec(token) : null;
  if (m === null) throw badToken("a watch token is 'R' or 'R.S' (decimal revision and place in it)", String(token));
  return { revision: Number(m[1]), seq: m[2] === undefined ? undefined : Number(m[2]) };
}

/** The token after change `seq` of `revision` (or after all of `revision` when `seq` is omitted). */
export function watchToken(revision: number, seq?: number): string {
  return seq === undefined ? String(revision) : `${revision}.${seq}`;
}

function option(name: string, v: number | undefined, min: number, max: number, def: number): number {
  if (v === undefined) return def;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max) {
    throw new LatchkeyError('invalid_argument', `watch option '${name}' must be an integer from ${min} to ${max}`, { reason: 'invalid_option', details: { option: name } });
  }
  return v;
}

/** Resolves after `ms`, at `signal`'s next notify, or at abort, whichever is first. */
function pause(ms: number, signal: ChangeSignal, abort: AbortSignal | undefined): Promise<void> {
  return new Promise<void>((resolve) => {
    const done = (): void => {
      clearTimeout(timer);
      abort?.removeEventListener('abort', done);
      unsubscribe();
      resolve();
    };
    const timer = setTimeout(done, ms);
    const unsubscribe = signal.subscribe(done);
    abort?.addEventListener('abort', done, { once: true });
  });
}

/**
 * Starts a watch of `store` (see the module doc). Validates the options and
 * the token first: a malformed token, or one past the store's current
 * revision (made by another store or database), is `invalid_argument` with
 * reason `invalid_watch_token`; bad options are reason `invalid_option`.
 */
export async function startWatch(store: TupleStore, signal: ChangeSignal, options: WatchOptions = {}): Promise<Watch> {
  if (options === null || typeof options !== 'object') throw new LatchkeyError('invalid_argument', 'watch options must be an object', { reason: 'invalid_option' });
  const pollMs = option('pollMs', options.pollMs, 10, 60_000, 1000);
  const limit = option('batch', options.batch, 1, 1000, 100);
  const objectType = options.objectType;
  if (objectType !== undefined && (typeof objectType !== 'string' || objectType === '' || objectType.includes(':'))) {
    throw new LatchkeyError('invalid_argument', 'watch object type must be a type name (no colon)', { reason: 'invalid_option', details: { option: 'objectType' } });
  }
  const current = await store.revision();
  let cursor: { revision: number; seq: number | undefined };
  if (options.after === undefined) cursor = { revision: current, seq: undefined };
  else {
    cursor = parseWatchToken(options.after);
    if (cursor.revision > current) throw badToken(`the watch token names revision ${cursor.revision}, after this store's current revision ${current}`, options.after);
  }
  const start = watchToken(cursor.revision, cursor.seq);
  const abort = options.signal;
  async function* changes(): AsyncGenerator<WatchEvent> {
    const stopped = (): boolean => abort?.aborted === true;
    while (!stopped()) {
      // Noted before the read: a write notified during the read skips the wait that follows it.
      const generation = signal.generation;
      const q = { afterRevision: cursor.revision, limit, ...(cursor.seq === undefined ? {} : { afterSeq: cursor.seq }), ...(objectType === undefined ? {} : { objectType }) };
      const batch: TupleChange[] = await store.readChanges(q);
      for (const c of batch) {
        cursor = { revision: c.revision, seq: c.seq };
        yield { token: watchToken(c.revision, c.seq), revision: c.revision, seq: c.seq, operation: c.operation, tuple: c.tuple, timestamp: c.timestamp };
        if (stopped()) return;
      }
      if (batch.length < limit && signal.generation === generation) await pause(pollMs, signal, abort);
    }
  }
  const iterable = changes();
  return { start, [Symbol.asyncIterator]: () => iterable };
}
