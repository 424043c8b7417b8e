/**
 * Security matrix F1 (database outage at runtime) and F2 (Redis killed): each
 * test starts its own PostgreSQL, MariaDB or Redis (test/helpers/instances.ts),
 * runs a bounded stream of sign-ups, logins, FGA writes, deletes and checks
 * against the real server, stops the dependency (the database for the
 * matrix's 10 s, Redis for a few seconds) and starts it again. Asserted: only
 * success or `503 unavailable` (with `Retry-After`; reason
 * `storage_unavailable`, or the FGA store's `store_unavailable`, for the
 * database) is answered, no answer takes more
 * than 5 s, no error-level log line (no stack traces), `/readyz` is 503
 * during and 200 after, the server recovers by itself, no acknowledged
 * sign-up or tuple write/delete is lost, no partial rows (a claim without its
 * user or a user without its claim), no email has two users, and a tuple
 * acknowledged as deleted is never allowed again.
 */
import test from 'ava';
import pg from 'pg';
import mysql from 'mysql2/promise';
import { parseFlags, startServer, type RunningServer } from '../../../cmd/index.ts';
import { startMariadbInstance, startPostgresInstance, startRedisInstance, type Instance } from '../../helpers/instances.ts';
import { needs } from '../../helpers/needs.ts';

const ADMIN = 'outage-admin-secret';
const PASSWORD = 'correct horse battery staple';
const DSL = 'model\n  schema 1.1\ntype user\ntype doc\n  relations\n    define viewer: [user]\n';
/** The database outage of security matrix F1: 10 s. */
const OUTAGE_MS = 10_000;
/** No answer may take longer (F1: "no hang > 5 s"). */
const MAX_ANSWER_MS = 5000;

interface Answer {
  status: number;
  body: Record<string, unknown>;
  retryAfter: string | null;
  ms: number;
}

async function start(flags: Record<string, string>, lines: string[]): Promise<RunningServer> {
  const parsed = parseFlags(
    Object.entries({
      'admin-secret': ADMIN,
      'client-id': 'outage-client',
      'client-secret': 'outage-client-secret',
      'jwt-type': 'HS256',
      'jwt-secret': 'outage-jwt-secret-0123456789abcdef0123456789',
      host: '127.0.0.1',
      'http-port': '0',
      'grpc-port': '0',
      'metrics-port': '0',
      'log-level': 'warn',
      'rate-limit-rps': '100000',
      'rate-limit-burst': '100000',
      'shutdown-timeout': '2s',
      ...flags,
    }).map(([k, v]) => `--${k}=${v}`),
  );
  if (!parsed.ok) throw new Error(parsed.problems.join('\n'));
  return startServer(parsed.config, { logSink: (line) => lines.push(line) });
}

function client(server: RunningServer) {
  const post = async (path: string, body: unknown, admin = false): Promise<Answer> => {
    const started = performance.now();
    const headers: Record<string, string> = { 'content-type': 'application/json', origin: server.httpUrl };
    if (admin) headers['x-service-admin-secret'] = ADMIN;
    const res = await fetch(`${server.httpUrl}${path}`, { method: 'POST', headers, body: JSON.stringify(body) });
    const text = await res.text();
    let json: Record<string, unknown> = {};
    try {
      json = JSON.parse(text) as Record<string, unknown>;
    } catch {
      json = { raw: text };
    }
    return { status: res.status, body: json, retryAfter: res.headers.get('retry-after'), ms: performance.now() - started };
  };
  const ready = async (): Promise<number> => (await fetch(`${server.httpUrl}/readyz`)).status;
  return { post, ready };
}

/** Every answer is success or `503 unavailable` with a retry hint, and came back in time. */
function acceptable(a: Answer): string | undefined {
  if (a.ms > MAX_ANSWER_MS) return `took ${Math.round(a.ms)} ms`;
  if (a.status === 200) return undefined;
  if (a.status === 503 && a.body['code'] === 'unavailable' && a.retryAfter !== null) return undefined;
  return `${a.status} ${JSON.stringify(a.body)}`;
}

async function sqlScenario(t: import('ava').ExecutionContext, instance: Instance, type: 'postgres' | 'mysql', url: string, count: (sql: string) => Promise<number>): Promise<void> {
  const lines: string[] = [];
  const server = await start({ 'database-type': type, 'database-url': url }, lines);
  t.teardown(() => server.close());
  const { post, ready } = client(server);
  t.is((await post('/v1/admin/fga/model', { dsl: DSL }, true)).status, 200);

  const problems: string[] = [];
  const acknowledgedUsers: string[] = [];
  const written = new Set<string>();
  const deleted = new Set<string>();
  let n = 0;
  let outage: 'before' | 'during' | 'after' = 'before';
  const seen = { during503: 0, readyDuring: [] as number[], successesAfter: 0, reasons: new Set<string>(), slowest: 0 };
  const note = (what: string, a: Answer): boolean => {
    const bad = acceptable(a);
    if (bad !== undefined) problems.push(`${what} (${outage}): ${bad}`);
    seen.slowest = Math.max(seen.slowest, a.ms);
    if (a.status === 503) seen.reasons.add(String(a.body['reason']));
    if (outage === 'during' && a.status === 503) seen.during503++;
    if (outage === 'after' && a.status === 200) seen.successesAfter++;
    return a.status === 200;
  };

  let stop = false;
  const worker = async (w: number): Promise<void> => {
    // Each worker deletes only its own tuples, so that a refusal is never another worker's race.
    const mine: string[] = [];
    let retrying: string | undefined;
    while (!stop) {
      const i = n++;
      const email = `u${w}-${i}@outage.test`;
      if (note('signup', await post('/v1/signup', { email, password: PASSWORD }))) acknowledgedUsers.push(email);
      const known = acknowledgedUsers[Math.floor(acknowledgedUsers.length / 2)];
      if (known !== undefined) note('login', await post('/v1/login', { email: known, password: PASSWORD }));
      const tuple = { user: `user:u${i}`, relation: 'viewer', object: `doc:d${i}` };
      if (note('fga_write_tuples', await post('/v1/admin/fga/tuples', { tuples: [tuple] }, true))) {
        written.add(`${i}`);
        mine.push(`${i}`);
      }
      const old = retrying ?? (mine.length > 1 ? mine.shift() : undefined);
      if (old !== undefined) {
        const del = await post('/v1/admin/fga/tuples/delete', { tuples: [{ user: `user:u${old}`, relation: 'viewer', object: `doc:d${old}` }] }, true);
        // A delete refused with 503 may have committed (the answer was lost with the connection):
        // retried, it then answers tuple_not_found, which is its documented outcome.
        if (retrying !== undefined && del.status === 404 && del.body['reason'] === 'tuple_not_found') deleted.add(old);
        else if (note('fga_delete_tuples', del)) deleted.add(old);
        retrying = deleted.has(old) ? undefined : old;
        const check = await post('/v1/check_permissions', { user: `user:u${old}`, checks: [{ relation: 'viewer', object: `doc:d${old}` }] }, true);
        if (note('check_permissions', check) && deleted.has(old) && (check.body['results'] as { allowed: boolean }[])[0]?.allowed) problems.push(`stale allow for deleted tuple ${old}`);
      }
    }
  };
  const workers = [0, 1, 2].map((w) => worker(w));
  await new Promise((r) => setTimeout(r, 1500));
  t.is(await ready(), 200);

  outage = 'during';
  await instance.stop();
  const outageEnds = Date.now() + OUTAGE_MS;
  while (Date.now() < outageEnds) {
    seen.readyDuring.push(await ready());
    await new Promise((r) => setTimeout(r, 300));
  }
  await instance.start();
  outage = 'after';
  // Recovery without a restart: ready again, and requests succeed, within a bound.
  const until = Date.now() + 30_000;
  while ((await ready()) !== 200 && Date.now() < until) await new Promise((r) => setTimeout(r, 200));
  while (seen.successesAfter < 12 && Date.now() < until) await new Promise((r) => setTimeout(r, 100));
  stop = true;
  await Promise.all(workers);

  t.deepEqual(problems, []);
  t.true(seen.during503 > 0, 'requests during the outage were refused with 503');
  t.true(seen.readyDuring.includes(503), `/readyz during the outage: ${seen.readyDuring.join(',')}`);
  t.is(await ready(), 200);
  t.true(seen.successesAfter >= 12, 'requests succeed again after the outage');

  // Nothing acknowledged was lost: every acknowledged sign-up logs in, every written tuple is there.
  for (const email of acknowledgedUsers) {
    const login = await post('/v1/login', { email, password: PASSWORD });
    if (login.status !== 200) problems.push(`acknowledged user ${email} cannot log in: ${login.status}`);
  }
  for (const k of written) {
    const check = await post('/v1/check_permissions', { user: `user:u${k}`, checks: [{ relation: 'viewer', object: `doc:d${k}` }] }, true);
    const allowed = (check.body['results'] as { allowed: boolean }[] | undefined)?.[0]?.allowed;
    if (allowed !== !deleted.has(k)) problems.push(`tuple ${k}: allowed=${String(allowed)}, deleted=${deleted.has(k)}`);
  }
  t.deepEqual(problems, []);
  // The identity and admin stores say storage_unavailable, the FGA store store_unavailable (docs/errors.md).
  t.deepEqual([...seen.reasons].filter((r) => r !== 'storage_unavailable' && r !== 'store_unavailable'), [], 'a database outage is storage_unavailable');
  t.true(seen.reasons.has('storage_unavailable'));
  t.is(await count('SELECT COUNT(*) AS n FROM (SELECT email FROM users WHERE email IS NOT NULL GROUP BY email HAVING COUNT(*) > 1) d'), 0, 'no email has two users');
  // No partial writes: a sign-up cut by the outage left its user and its claim, or neither.
  t.is(await count('SELECT COUNT(*) AS n FROM user_identifiers c LEFT JOIN users u ON u.id = c.user_id WHERE u.id IS NULL'), 0, 'claims without a user');
  t.is(await count("SELECT COUNT(*) AS n FROM users u LEFT JOIN user_identifiers c ON c.user_id = u.id AND c.kind = 'email' WHERE u.email IS NOT NULL AND c.user_id IS NULL"), 0, 'users without their claim');
  const errors = lines.filter((l) => (JSON.parse(l) as { level?: string }).level === 'error');
  t.deepEqual(errors, [], 'no error-level log lines (no stack traces) for an expected outage');
  t.true(lines.some((l) => l.includes('dependency unavailable')), 'the outage is logged as a warning');
  t.log(`${OUTAGE_MS / 1000} s outage: signups acknowledged ${acknowledgedUsers.length}, tuples ${written.size} written / ${deleted.size} deleted, 503s during ${seen.during503}, slowest answer ${Math.round(seen.slowest)} ms`);
}

needs(test, 'postgres-server')('F1 PostgreSQL stopped and restarted under traffic: 503 unavailable, /readyz 503, automatic recovery, nothing lost', async (t) => {
  const instance = await startPostgresInstance();
  t.teardown(() => instance.destroy());
  const admin = new pg.Client({ connectionString: instance.url });
  await admin.connect();
  await admin.query('CREATE DATABASE latchkey');
  await admin.end();
  const url = instance.url.replace(/\/postgres$/, '/latchkey');
  await sqlScenario(t, instance, 'postgres', url, async (sql) => {
    const c = new pg.Client({ connectionString: url });
    await c.connect();
    try {
      const r = await c.query(sql);
      return Number(r.rows[0].n);
    } finally {
      await c.end();
    }
  });
});

needs(test, 'mariadb-server')('F1 MariaDB stopped and restarted under traffic: 503 unavailable, /readyz 503, automatic recovery, nothing lost', async (t) => {
  const instance = await startMariadbInstance();
  t.teardown(() => instance.destroy());
  const admin = await mysql.createConnection(instance.url);
  await admin.query('CREATE DATABASE latchkey');
  await admin.end();
  const url = instance.url.replace(/\/mysql$/, '/latchkey');
  await sqlScenario(t, instance, 'mysql', url, async (sql) => {
    const c = await mysql.createConnection(url);
    try {
      const [rows] = await c.query(sql);
      return Number((rows as { n: number }[])[0]!.n);
    } finally {
      await c.end();
    }
  });
});

needs(test, 'redis-server')('F2 Redis stopped and restarted: logins answer 503 unavailable, sessions fail closed, /readyz 503, recovery by itself', async (t) => {
  const redis = await startRedisInstance();
  t.teardown(() => redis.destroy());
  const lines: string[] = [];
  const { mkdtempSync, rmSync } = await import('node:fs');
  const { tmpdir } = await import('node:os');
  const { join } = await import('node:path');
  const dir = mkdtempSync(join(tmpdir(), 'latchkey-outage-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const server = await start({ 'database-type': 'sqlite', 'database-url': join(dir, 'db.sqlite'), 'redis-url': redis.url }, lines);
  t.teardown(() => server.close());
  const { post, ready } = client(server);
  t.is((await post('/v1/signup', { email: 'r@outage.test', password: PASSWORD })).status, 200);
  const login = await post('/v1/login', { email: 'r@outage.test', password: PASSWORD });
  t.is(login.status, 200);
  const token = login.body['access_token'] as string;
  t.is(await ready(), 200);

  await redis.stop();
  const during = await post('/v1/login', { email: 'r@outage.test', password: PASSWORD });
  t.is(acceptable(during), undefined);
  t.is(during.status, 503);
  t.is(during.body['code'], 'unavailable');
  // A session that cannot be checked against the store is refused, never accepted.
  const profile = await fetch(`${server.httpUrl}/v1/profile`, { headers: { authorization: `Bearer ${token}` } });
  t.true(profile.status === 401 || profile.status === 503, `profile during the outage: ${profile.status}`);
  t.is(await ready(), 503);

  await redis.start();
  const until = Date.now() + 20_000;
  let again = await post('/v1/login', { email: 'r@outage.test', password: PASSWORD });
  while (again.status !== 200 && Date.now() < until) {
    t.is(acceptable(again), undefined);
    await new Promise((r) => setTimeout(r, 200));
    again = await post('/v1/login', { email: 'r@outage.test', password: PASSWORD });
  }
  t.is(again.status, 200);
  t.is(await ready(), 200);
  t.deepEqual(
    lines.filter((l) => (JSON.parse(l) as { level?: string }).level === 'error'),
    [],
  );
});

test("F1 SQLite held by another process's exclusive lock: writes answer 503 unavailable, bounded by the busy timeout, reads go on, recovery by itself", async (t) => {
  const { mkdtempSync, rmSync } = await import('node:fs');
  const { tmpdir } = await import('node:os');
  const { join } = await import('node:path');
  const { DatabaseSync } = await import('node:sqlite');
  const dir = mkdtempSync(join(tmpdir(), 'latchkey-outage-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'db.sqlite');
  const lines: string[] = [];
  const server = await start({ 'database-type': 'sqlite', 'database-url': file }, lines);
  t.teardown(() => server.close());
  const { post, ready } = client(server);
  t.is((await post('/v1/signup', { email: 'before@outage.test', password: PASSWORD })).status, 200);

  // Another process (here: another connection) takes the database for itself, as a backup tool or a migration might.
  const other = new DatabaseSync(file);
  other.exec('BEGIN EXCLUSIVE');
  const during = await Promise.all([0, 1, 2].map((i) => post('/v1/signup', { email: `during${i}@outage.test`, password: PASSWORD })));
  const readyDuring = await ready();
  const login = await post('/v1/login', { email: 'before@outage.test', password: PASSWORD });
  other.exec('ROLLBACK');
  other.close();
  for (const a of during) {
    t.is(a.status, 503, JSON.stringify(a.body));
    t.is(acceptable({ ...a, ms: 0 }), undefined);
  }
  // The write waits the busy timeout (5 s); a connection sequelize reopens under the lock (after a
  // failed BEGIN it drops the old one) waits once more: answered within twice the timeout.
  t.true(during.every((a) => a.ms < 12_000), `answered within twice the busy timeout: ${during.map((a) => Math.round(a.ms)).join(', ')} ms`);
  t.log(`during the lock: sign-ups ${during.map((a) => `${a.status} in ${Math.round(a.ms)} ms`).join(', ')}; /readyz ${readyDuring}; login ${login.status}`);
  t.is((await post('/v1/signup', { email: 'after@outage.test', password: PASSWORD })).status, 200);
  t.is((await post('/v1/login', { email: 'before@outage.test', password: PASSWORD })).status, 200);
  for (const i of [0, 1, 2]) t.is((await post('/v1/signup', { email: `during${i}@outage.test`, password: PASSWORD })).status, 200, 'a refused sign-up left nothing behind');
  t.is(await ready(), 200);
  t.deepEqual(lines.filter((l) => (JSON.parse(l) as { level?: string }).level === 'error'), []);
});
