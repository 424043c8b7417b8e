/**
 * PostgreSQL LISTEN on the revision channel: every committed change of a
 * store is notified on {@link REVISION_CHANNEL} from inside its transaction
 * (engine/sql/sql_writer.ts), so PostgreSQL delivers it at commit and never
 * for a rollback. For its store, the listener hands each tuple write's
 * revision to `onRevision`, so a process's check cache and graph mirror catch
 * up with another process's write at once instead of at their next revision
 * poll; a model write (or reset) to `onModel`, so the latest model id is read
 * again; and a deletion of the store to `onRevision` (its last revision: the
 * layers re-read and find the store gone) then `onStoreDeleted`.
 *
 * The listener has a dedicated connection (a LISTEN holds its session), made
 * by sequelize's own connection manager from the same configuration as the
 * pool, so TLS and credentials are configured once. When that connection
 * fails it reconnects with exponential backoff (`minBackoffMs` doubling to
 * `maxBackoffMs`) and calls `onGap` once listening again: notifications sent
 * while it was down are lost, so the caller re-reads the revision. A lost
 * notification is therefore bounded by the caller's revision poll
 * (docs/caching.md), as on MySQL and SQLite, which have no NOTIFY.
 */
import type { SqlDatabase } from './sql_database.ts';
import { REVISION_CHANNEL } from './sql_writer.ts';

/** The pg.Client surface used here. */
interface ListenClient {
  query(sql: string): Promise<unknown>;
  on(event: 'notification', f: (msg: { channel: string; payload?: string }) => void): unknown;
  on(event: 'error' | 'end', f: (err?: unknown) => void): unknown;
  removeAllListeners(event?: string): unknown;
  end(): Promise<void>;
}

interface PgConnectionManager {
  connect(config: unknown): Promise<ListenClient>;
}

export interface RevisionListenerOptions {
  sequelize: SqlDatabase;
  storeId: string;
  /** A revision of the store that another (or this) process committed. */
  onRevision: (revision: number) => void;
  /** A model of the store was written, or its models were reset: its latest model may have changed. */
  onModel?: () => void;
  /** The store was deleted (called after `onRevision` with its last revision). */
  onStoreDeleted?: () => void;
  /** Called after a reconnect: notifications may have been lost while disconnected. */
  onGap?: () => void;
  /** Called with each connection failure (for logs). */
  onError?: (err: unknown) => void;
  minBackoffMs?: number;
  maxBackoffMs?: number;
}

/** A running LISTEN; {@link RevisionListener.close} stops it for good. */
export class RevisionListener {
  readonly #options: RevisionListenerOptions;
  readonly #min: number;
  readonly #max: number;
  #client: ListenClient | undefined;
  #closed = false;
  #backoff: number;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #connected = 0;

  private constructor(options: RevisionListenerOptions) {
    this.#options = options;
    this.#min = options.minBackoffMs ?? 100;
    this.#max = options.maxBackoffMs ?? 10_000;
    this.#backoff = this.#min;
  }

  /**
   * Starts listening; resolves once the first LISTEN is in place (or failed:
   * then it keeps retrying in the background). Returns undefined on a
   * database other than PostgreSQL.
   */
  static async start(options: RevisionListenerOptions): Promise<RevisionListener | undefined> {
    if (options.sequelize.getDialect() !== 'postgres') return undefined;
    const l = new RevisionListener(options);
    await l.#connect();
    return l;
  }

  /** True while the LISTEN connection is up. */
  get listening(): boolean {
    return this.#client !== undefined;
  }

  async #connect(): Promise<void> {
    if (this.#closed) return;
    const cm = (this.#options.sequelize as unknown as { connectionManager: PgConnectionManager }).connectionManager;
    let client: ListenClient | undefined;
    try {
      client = await cm.connect((this.#options.sequelize as unknown as { config: unknown }).config);
      if (this.#closed) {
        await client.end().catch(() => undefined);
        return;
      }
      client.on('notification', (msg) => this.#notified(msg));
      client.on('error', (err) => this.#lost(client!, err));
      client.on('end', () => this.#lost(client!, undefined));
      await client.query(`LISTEN ${REVISION_CHANNEL}`);
    } catch (err) {
      if (client !== undefined) {
        client.removeAllListeners();
        client.end().catch(() => undefined);
      }
      this.#options.onError?.(err);
      this.#retry();
      return;
    }
    this.#client = client;
    this.#backoff = this.#min;
    // Every connection after the first may have missed notifications.
    if (this.#connected++ > 0) this.#options.onGap?.();
  }

  #notified(msg: { channel: string; payload?: string }): void {
    if (msg.channel !== REVISION_CHANNEL || msg.payload === undefined) return;
    // `<revision> <store>`, `model <store>` or `<revision> <store> deleted`; anything else (a newer kind) is left to the poll.
    const [head, store, kind, ...rest] = msg.payload.split(' ');
    if (store !== this.#options.storeId || rest.length > 0) return;
    if (head === 'model') {
      if (kind === undefined) this.#options.onModel?.();
      return;
    }
    const revision = head !== undefined && /^\d+$/u.test(head) ? Number(head) : NaN;
    if (!Number.isSafeInteger(revision) || (kind !== undefined && kind !== 'deleted')) return;
    this.#options.onRevision(revision);
    if (kind === 'deleted') this.#options.onStoreDeleted?.();
  }

  #lost(client: ListenClient, err: unknown): void {
    if (this.#client !== client) return;
    this.#client = undefined;
    client.removeAllListeners();
    client.on('error', () => undefined);
    client.end().catch(() => undefined);
    if (this.#closed) return;
    if (err !== undefined) this.#options.onError?.(err);
    // The first retry is immediate after a drop; the backoff grows only while reconnects fail.
    this.#retry(0);
  }

  #retry(delay = this.#backoff): void {
    if (this.#closed || this.#timer !== undefined) return;
    if (delay > 0) this.#backoff = Math.min(this.#max, this.#backoff * 2);
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      void this.#connect();
    }, delay);
    this.#timer.unref();
  }

  /** Stops listening and closes the connection. */
  async close(): Promise<void> {
    this.#closed = true;
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
    const c = this.#client;
    this.#client = undefined;
    if (c !== undefined) {
      c.removeAllListeners();
      c.on('error', () => undefined);
      await c.end().catch(() => undefined);
    }
  }
}
