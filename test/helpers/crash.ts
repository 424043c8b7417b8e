/**
 * Test helper for the crash tests (security matrix E3): the server as a child
 * process (`bin/latchkey.js serve`) on a test database, killed with SIGKILL
 * and started again on the same database; REST calls; the `user.signup`
 * webhook deliveries stored and received; and the fault point: a trigger
 * that stalls the next insert into a table, so that a kill lands while the
 * transaction before it is held (PostgreSQL `pg_sleep`, MySQL/MariaDB
 * `SLEEP`, SQLite a long recursive query).
 */
import type { ExecutionContext } from 'ava';
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { QueryTypes, type Sequelize } from 'sequelize';
import type { SqlBackend } from './databases.ts';
import { killOnExit } from './instances.ts';
import { onFreePort, ready, watchStart } from './started.ts';
import type { Receiver } from '../admin/receiver.ts';
export const ADMIN = 'crash-admin-secret';
export const PASSWORD = 'correct horse battery staple';
export const BIN = join(import.meta.dirname, '..', '..', 'bin', 'latchkey.js');
export const DSL = 'model\n  schema 1.1\ntype user\ntype doc\n  relations\n    define viewer: [user]\n';

function launch(flags: string[]): ChildProcess {
  const child = spawn(process.execPath, [BIN, 'serve', ...flags], { stdio: ['ignore', 'pipe', 'pipe'] });
  killOnExit(child);
  watchStart(child);
  return child;
}

/**
 * A first start migrates a fresh database: on MariaDB, with the rest of the suite creating and
 * dropping databases beside it, that took over 30 s once (about 3 s on a quiet machine), so the
 * wait for readiness ({@link ready}) is generous.
 */
const READY_MS = 90_000;

/**
 * The server of a crash test, a child process on a loopback port that its flags name
 * (`--http-port`, and `--url` through which callbacks and links reach it). The port is found free
 * by `freePort()` before the server binds it, and again free between a kill and the restart:
 * another process may take it in either gap. A start that exits because of that is tried again on
 * a fresh port, with the flags of that port.
 */
export interface CrashServer {
  /** `http://127.0.0.1:<port>`: another one after a start moved to a fresh port. */
  readonly url: string;
  readonly port: number;
  /** The running process (the last one started). */
  readonly child: ChildProcess;
  /** Starts the server again once the test has stopped it: on the same port unless another process took it; resolves once ready. */
  restart(): Promise<void>;
}

/**
 * Starts the server with the flags `flagsFor(port)` gives for its port (called again for each
 * fresh port; it may start what must know the server's URL first, such as a provider that
 * registers its callbacks) and resolves once it is ready ({@link ready}).
 */
export async function startCrashServer(flagsFor: (port: number) => string[] | Promise<string[]>): Promise<CrashServer> {
  let port = 0;
  let child: ChildProcess | undefined;
  const start = (first?: number): Promise<void> =>
    onFreePort(async (p) => {
      port = p;
      const c = (child = launch(await flagsFor(p)));
      try {
        await ready(`http://127.0.0.1:${p}`, c, READY_MS);
      } catch (err) {
        c.kill('SIGKILL');
        throw err;
      }
    }, first);
  await start();
  return {
    get url() {
      return `http://127.0.0.1:${port}`;
    },
    get port() {
      return port;
    },
    get child() {
      return child as ChildProcess;
    },
    restart: () => start(port),
  };
}

export async function post(url: string, path: string, body: unknown, admin = false): Promise<{ status: number; body: Record<string, unknown> }> {
  const headers: Record<string, string> = { 'content-type': 'application/json', origin: url };
  if (admin) headers['x-service-admin-secret'] = ADMIN;
  const res = await fetch(`${url}${path}`, { method: 'POST', headers, body: JSON.stringify(body) });
  const text = await res.text();
  return { status: res.status, body: text ? (JSON.parse(text) as Record<string, unknown>) : {} };
}

export async function count(sequelize: Sequelize, sql: string, replacements: unknown[] = []): Promise<number> {
  const [row] = await sequelize.query<{ n: number | string }>(sql, { replacements, type: QueryTypes.SELECT });
  return Number(row?.n ?? 0);
}

export function serverFlags(backend: SqlBackend, dbUrl: string, port: number, smtpPort: number): string[] {
  const url = `http://127.0.0.1:${port}`;
  return [
    `--database-type=${backend}`,
    `--database-url=${dbUrl}`,
    `--admin-secret=${ADMIN}`,
    '--client-id=crash-client',
    '--client-secret=crash-client-secret',
    '--jwt-type=HS256',
    '--jwt-secret=crash-jwt-secret-0123456789abcdef0123456789',
    '--host=127.0.0.1',
    `--http-port=${port}`,
    '--grpc-port=0',
    '--metrics-port=0',
    // The start line tells ready() that the server it launched is the one listening.
    '--log-level=info',
    '--rate-limit-rps=100000',
    '--rate-limit-burst=100000',
    '--enable-email-verification=true',
    '--smtp-host=127.0.0.1',
    `--smtp-port=${smtpPort}`,
    '--smtp-sender-email=noreply@crash.test',
    '--webhook-allow-private-networks=true',
    `--url=${url}`,
  ];
}

/** Registers a `user.signup` webhook that posts to `receiver`. */
export async function addSignupWebhook(url: string, receiver: Receiver): Promise<void> {
  const r = await post(url, '/v1/admin/add_webhook', { event_name: 'user.signup', endpoint: receiver.url }, true);
  if (r.status !== 200) throw new Error(`add_webhook answered ${r.status}: ${JSON.stringify(r.body)}`);
}

/** The stored `user.signup` deliveries: delivery id by the email of their user. */
export async function storedDeliveries(sequelize: Sequelize): Promise<Map<string, string[]>> {
  const rows = await sequelize.query<{ id: string; payload: string }>("SELECT id, payload FROM webhook_deliveries WHERE event_name = 'user.signup'", { type: QueryTypes.SELECT });
  const out = new Map<string, string[]>();
  for (const r of rows) {
    const email = String((JSON.parse(r.payload) as { user: { email: string } }).user.email);
    out.set(email, [...(out.get(email) ?? []), r.id]);
  }
  return out;
}

/** The delivery ids (`webhook-id`) of the `user.signup` posts the receiver got, by the email of their user. */
export function receivedDeliveries(receiver: Receiver): Map<string, Set<string>> {
  const out = new Map<string, Set<string>>();
  for (const r of receiver.received) {
    const body = JSON.parse(r.body) as { event_name: string; user: { email: string } };
    if (body.event_name !== 'user.signup') continue;
    out.set(body.user.email, (out.get(body.user.email) ?? new Set()).add(String(r.headers['webhook-id'])));
  }
  return out;
}

/** The backoff of the deliveries the receiver refused has run out, as after a long enough outage. */
async function backoffRunsOut(sequelize: Sequelize): Promise<void> {
  await sequelize.query("UPDATE webhook_deliveries SET next_attempt_at = ? WHERE status = 'pending'", { replacements: [Date.now() - 1] });
}

/**
 * The receiver is up again and the backoff of the deliveries it refused has run out, as after a
 * long enough outage (5 s, then 5 min, ...); so has the lease (45 s) of a delivery a killed process
 * had claimed. Simulated, not waited for.
 */
export async function deliveriesDue(sequelize: Sequelize): Promise<void> {
  await backoffRunsOut(sequelize);
  await sequelize.query("UPDATE webhook_deliveries SET lease_until = ? WHERE status = 'delivering'", { replacements: [Date.now() - 1] });
}

/** The deliveries claimed now (`delivering`): the attempt count of each, by delivery id. */
async function claimedDeliveries(sequelize: Sequelize): Promise<Map<string, number>> {
  const rows = await sequelize.query<{ id: string; attempts: number | string }>("SELECT id, attempts FROM webhook_deliveries WHERE status = 'delivering'", { type: QueryTypes.SELECT });
  return new Map(rows.map((r) => [r.id, Number(r.attempts)]));
}

/**
 * Waits until the receiver has a `user.signup` post for each of `emails` (or 25 s have passed), then
 * asserts that each arrived once, under the id it was stored with (`stored`, from {@link storedDeliveries}).
 */
export async function deliveredAsStored(t: ExecutionContext, receiver: Receiver, stored: Map<string, string[]>, emails: Iterable<string>): Promise<void> {
  const want = [...emails];
  const deadline = Date.now() + 25_000;
  while (want.some((e) => !receivedDeliveries(receiver).has(e)) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
  const arrived = receivedDeliveries(receiver);
  for (const email of want) t.deepEqual([...(arrived.get(email) ?? [])], stored.get(email), `the user.signup delivery of ${email}`);
}

/**
 * The receiver, down across the kills and restarts, is back: the `user.signup` deliveries stored
 * now are made due ({@link deliveriesDue}) and the one of each of `emails` must arrive, once, under
 * the id it was stored with.
 *
 * The running server may have an attempt in flight that the receiver refused while it was down.
 * That attempt ends after the deliveries were made due and sets its delivery's next attempt on
 * the schedule (5 min after a second attempt), past the wait. So every delivery claimed when the
 * receiver comes back is waited for until that claim has ended (the attempt in flight records its
 * end; a killed process's claim, its lease run out, is taken over), and the backoff runs out
 * again then. An attempt claimed after the receiver is back reaches it.
 */
export async function deliveriesResume(t: ExecutionContext, sequelize: Sequelize, receiver: Receiver, emails: Iterable<string>): Promise<void> {
  const stored = await storedDeliveries(sequelize);
  receiver.down = false;
  const claimed = await claimedDeliveries(sequelize);
  await deliveriesDue(sequelize);
  const until = Date.now() + 20_000;
  for (;;) {
    const now = await claimedDeliveries(sequelize);
    const held = [...claimed].filter(([id, attempts]) => now.get(id) === attempts).map(([id]) => id);
    if (held.length === 0) break;
    if (Date.now() > until) throw new Error(`deliveries still claimed by an attempt made while the receiver was down: ${held.join(', ')}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  await backoffRunsOut(sequelize);
  await deliveredAsStored(t, receiver, stored, emails);
}

export async function exited(child: ChildProcess): Promise<void> {
  await new Promise<void>((resolve) => (child.exitCode !== null || child.signalCode !== null ? resolve() : child.once('exit', () => resolve())));
}

/** What stalls an insert into `table` (a trigger) and how to find and end the stalled statement of the killed process. */
export interface Stall {
  install(table: string): Promise<void>;
  remove(table: string): Promise<void>;
  /** Resolves once the server's statement inserting into `table` is stalled (its transaction holds the user row). */
  stalled(table: string): Promise<void>;
  /** Ends the killed process's connection at once (the database would, once it noticed the dead client). */
  endOrphan(): Promise<void>;
}

export function stallOf(backend: SqlBackend, sequelize: Sequelize, dbUrl: string): Stall {
  const q = (sql: string) => sequelize.query(sql);
  const poll = async (find: () => Promise<boolean>, what: string): Promise<void> => {
    const until = Date.now() + 20_000;
    while (!(await find())) {
      if (Date.now() > until) throw new Error(`never stalled: ${what}`);
      await new Promise((r) => setTimeout(r, 20));
    }
  };
  if (backend === 'postgres') {
    let orphan: number | undefined;
    return {
      install: async (table) => {
        await q(`CREATE OR REPLACE FUNCTION lk_stall() RETURNS trigger AS $$ BEGIN PERFORM pg_sleep(60); RETURN NEW; END $$ LANGUAGE plpgsql`);
        await q(`CREATE TRIGGER lk_stall_${table} BEFORE INSERT ON ${table} FOR EACH ROW EXECUTE FUNCTION lk_stall()`);
      },
      remove: async (table) => void (await q(`DROP TRIGGER lk_stall_${table} ON ${table}`)),
      stalled: (table) =>
        poll(async () => {
          const rows = await sequelize.query<{ pid: number }>(
            `SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND wait_event = 'PgSleep' AND query LIKE 'INSERT INTO ${table}%'`,
            { type: QueryTypes.SELECT },
          );
          orphan = rows[0]?.pid;
          return orphan !== undefined;
        }, table),
      endOrphan: async () => void (await sequelize.query('SELECT pg_terminate_backend(?)', { replacements: [orphan] })),
    };
  }
  if (backend === 'mysql') {
    let orphan: number | undefined;
    return {
      install: async (table) => void (await q(`CREATE TRIGGER lk_stall_${table} BEFORE INSERT ON ${table} FOR EACH ROW SET @lk_stall_${table} = SLEEP(60)`)),
      remove: async (table) => void (await q(`DROP TRIGGER lk_stall_${table}`)),
      stalled: (table) =>
        poll(async () => {
          const rows = await sequelize.query<{ id: number }>(
            // A statement inside a trigger is the one MariaDB shows.
            `SELECT ID AS id FROM information_schema.PROCESSLIST WHERE DB = DATABASE() AND INFO LIKE 'SET @lk_stall_${table} = SLEEP%'`,
            { type: QueryTypes.SELECT },
          );
          orphan = rows[0]?.id;
          return orphan !== undefined;
        }, table),
      endOrphan: async () => void (await q(`KILL ${Number(orphan)}`)),
    };
  }
  // SQLite: the trigger keeps the writer busy for seconds (no sleep function); the file's write lock,
  // taken when the sign-up transaction begins, shows that it is under way.
  const file = dbUrl.slice('sqlite:'.length);
  return {
    install: async (table) =>
      void (await q(
        `CREATE TRIGGER lk_stall_${table} BEFORE INSERT ON ${table} BEGIN SELECT COUNT(*) FROM (WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 100000000) SELECT x FROM c); END`,
      )),
    remove: async (table) => void (await q(`DROP TRIGGER lk_stall_${table}`)),
    stalled: async (table) => {
      // Held for a whole second without a break: not one of the server's millisecond writes, but the
      // sign-up transaction in the stalled statement (its statements before it take milliseconds).
      const probe = new DatabaseSync(file, { timeout: 0 });
      let busySince: number | undefined;
      try {
        await poll(async () => {
          try {
            probe.exec('BEGIN IMMEDIATE');
            probe.exec('ROLLBACK');
            busySince = undefined;
          } catch {
            busySince ??= Date.now();
          }
          return busySince !== undefined && Date.now() - busySince >= 1000;
        }, table);
      } finally {
        probe.close();
      }
    },
    endOrphan: async () => undefined,
  };
}
