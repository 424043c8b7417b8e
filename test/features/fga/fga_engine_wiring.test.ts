/**
 * The FGA engine as the server composes it (graph mirror with the
 * synchronous evaluator on SQL stores, check cache in front): a revoke is
 * visible to the very next check on every protocol, on every SQL backend,
 * with the cache on; checks of a relation with an exclusion and
 * list_permissions (ListObjects) are answered from the mirror, without a
 * tuple read on the SQL store; and the flags turn the cache and the mirror
 * off. A stopped server has closed the FGA store: nothing opens its SQLite
 * file afterwards.
 */
import test from 'ava';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { sqliteSequelize } from '../../../engine/sql/index.ts';

import { PROTOCOLS, TEST_ADMIN_SECRET, startTestServer, type TestServer } from '../../helpers/server.ts';
import { sqlBackends } from '../../helpers/databases.ts';

const admin = { 'x-service-admin-secret': TEST_ADMIN_SECRET };
const DSL = 'model\n  schema 1.1\ntype user\ntype group\n  relations\n    define member: [user, group#member]\ntype folder\n  relations\n    define parent: [folder]\n    define viewer: [user, group#member] or viewer from parent\n';

async function allowed(srv: TestServer, token: string, object: string): Promise<boolean[]> {
  const out: boolean[] = [];
  for (const protocol of PROTOCOLS) {
    const r = await srv.call('check_permissions', { checks: [{ relation: 'viewer', object }] }, { protocol, headers: { authorization: `Bearer ${token}` } });
    if (r.error) throw new Error(`${protocol}: ${r.error.code} ${r.error.message}`);
    out.push((r.body!['results'] as Array<{ allowed: boolean }>)[0]!.allowed);
  }
  return out;
}

async function scenario(srv: TestServer, t: import('ava').ExecutionContext): Promise<void> {
  t.is((await srv.call('fga_write_model', { dsl: DSL }, { protocol: 'rest', headers: admin })).error, undefined);
  const s = await srv.call('signup', { email: `wiring-${Date.now()}@example.com`, password: 'correct horse battery' }, { protocol: 'rest' });
  const token = s.body!['access_token'] as string;
  const uid = (s.body!['user'] as Record<string, unknown>)['id'] as string;
  const grant = [
    { user: `user:${uid}`, relation: 'member', object: 'group:eng' },
    { user: 'group:eng#member', relation: 'viewer', object: 'folder:root' },
    { user: 'folder:root', relation: 'parent', object: 'folder:a' },
    { user: 'folder:a', relation: 'parent', object: 'folder:b' },
  ];
  t.is((await srv.call('fga_write_tuples', { tuples: grant }, { protocol: 'rest', headers: admin })).error, undefined);
  // Asked twice so that the second answer could come from a cache.
  t.deepEqual(await allowed(srv, token, 'folder:b'), [true, true, true]);
  t.deepEqual(await allowed(srv, token, 'folder:b'), [true, true, true]);
  t.is((await srv.call('fga_delete_tuples', { tuples: [grant[0]!] }, { protocol: 'rest', headers: admin })).error, undefined);
  t.deepEqual(await allowed(srv, token, 'folder:b'), [false, false, false], 'no stale allow after the revoke');
  t.is((await srv.call('fga_write_tuples', { tuples: [grant[0]!] }, { protocol: 'grpc', headers: admin })).error, undefined);
  t.deepEqual(await allowed(srv, token, 'folder:b'), [true, true, true], 'a new grant is visible at once');
}

for (const backend of sqlBackends()) {
  test(`revoke then check through cache and mirror (${backend})`, async (t) => {
    const srv = await startTestServer({}, { backend });
    try {
      await scenario(srv, t);
    } finally {
      await srv.close();
    }
  });
}

test('with the cache and mirror turned off by flags, answers are the same', async (t) => {
  const srv = await startTestServer({ 'fga-cache-size': 0, 'fga-mirror': false });
  try {
    await scenario(srv, t);
  } finally {
    await srv.close();
  }
});

test('the memory FGA store serves the same answers', async (t) => {
  const srv = await startTestServer({ 'fga-store': 'memory' });
  try {
    await scenario(srv, t);
  } finally {
    await srv.close();
  }
});

test('a separate SQLite FGA store (--fga-store sqlite --fga-store-url) serves the same answers and keeps its tuples in its own file', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'lk-fga-store-'));
  const file = join(dir, 'fga.sqlite');
  const srv = await startTestServer({ 'fga-store': 'sqlite', 'fga-store-url': file });
  try {
    await scenario(srv, t);
  } finally {
    await srv.close();
  }
  // The tuples are in the FGA file (read through the same SQLite library the server uses).
  const own = sqliteSequelize(file, { logging: false });
  try {
    const [rows] = await own.query("SELECT COUNT(*) AS n FROM fga_tuple WHERE relation = 'parent'");
    t.is(Number((rows as Array<{ n: number }>)[0]!.n), 2);
  } finally {
    await own.close();
    await rm(dir, { recursive: true, force: true });
  }
});

const EXCLUSION_DSL =
  'model\n  schema 1.1\ntype user\ntype group\n  relations\n    define member: [user, group#member]\ntype doc\n  relations\n    define blocked: [user, group#member]\n    define viewer: [user, group#member]\n    define can_read: viewer but not blocked\n';

/** Counts the tuple reads that reach the SQL store under the server's engine. */
function countSqlReads(srv: TestServer): () => number {
  const store = srv.server.services.engineHooks!.sqlStore!;
  let reads = 0;
  for (const m of ['readUserTuples', 'readObjectRelations', 'readStartingWithUsers'] as const) {
    const original = store[m].bind(store) as (...a: unknown[]) => Promise<never>;
    (store as unknown as Record<string, unknown>)[m] = (...a: unknown[]) => {
      reads++;
      return original(...a);
    };
  }
  return () => reads;
}

for (const backend of sqlBackends()) {
  test(`an exclusion and list_permissions are answered from the mirror, and a revoke is seen at once (${backend})`, async (t) => {
    const srv = await startTestServer({}, { backend });
    try {
      t.is((await srv.call('fga_write_model', { dsl: EXCLUSION_DSL }, { protocol: 'rest', headers: admin })).error, undefined);
      const s = await srv.call('signup', { email: `exclusion-${Date.now()}@example.com`, password: 'correct horse battery' }, { protocol: 'rest' });
      const headers = { authorization: `Bearer ${s.body!['access_token'] as string}` };
      const uid = (s.body!['user'] as Record<string, unknown>)['id'] as string;
      const tuples = [
        { user: `user:${uid}`, relation: 'member', object: 'group:eng' },
        { user: 'group:eng#member', relation: 'viewer', object: 'doc:a' },
        { user: 'group:eng#member', relation: 'viewer', object: 'doc:b' },
        { user: 'user:other', relation: 'blocked', object: 'doc:a' },
      ];
      t.is((await srv.call('fga_write_tuples', { tuples }, { protocol: 'rest', headers: admin })).error, undefined);
      const reads = countSqlReads(srv);
      const state = async (protocol: (typeof PROTOCOLS)[number]): Promise<{ a: boolean; b: boolean; objects: string[] }> => {
        const c = await srv.call('check_permissions', { checks: [{ relation: 'can_read', object: 'doc:a' }, { relation: 'can_read', object: 'doc:b' }] }, { protocol, headers });
        if (c.error) throw new Error(`${protocol}: ${c.error.code} ${c.error.message}`);
        const l = await srv.call('list_permissions', { relation: 'can_read', object_type: 'doc' }, { protocol, headers });
        if (l.error) throw new Error(`${protocol}: ${l.error.code} ${l.error.message}`);
        const [a, b] = (c.body!['results'] as Array<{ allowed: boolean }>).map((r) => r.allowed);
        return { a: a!, b: b!, objects: [...(l.body!['objects'] as string[])].sort() };
      };
      for (const protocol of PROTOCOLS) t.deepEqual(await state(protocol), { a: true, b: true, objects: ['doc:a', 'doc:b'] }, protocol);
      t.is(reads(), 0, 'no tuple read reached the SQL store');
      // A revoke by exclusion, through another protocol: seen by the very next check and listing.
      t.is((await srv.call('fga_write_tuples', { tuples: [{ user: 'group:eng#member', relation: 'blocked', object: 'doc:b' }] }, { protocol: 'grpc', headers: admin })).error, undefined);
      for (const protocol of PROTOCOLS) t.deepEqual(await state(protocol), { a: true, b: false, objects: ['doc:a'] }, protocol);
      t.is(reads(), 0);
    } finally {
      await srv.close();
    }
  });
}

test('a stopped server leaves its SQLite files alone: the FGA store and its checkpoint thread are closed with it', async (t) => {
  const srv = await startTestServer();
  const file = srv.database.url.slice('sqlite:'.length);
  const dir = dirname(file);
  let stopped = false;
  try {
    await scenario(srv, t);
    // A write's commit wakes the checkpoint thread a few milliseconds later; the server stops right after it.
    t.is((await srv.call('fga_write_tuples', { tuples: [{ user: 'user:late', relation: 'member', object: 'group:late' }] }, { protocol: 'rest', headers: admin })).error, undefined);
    await srv.server.close();
    stopped = true;
    // Once stopped, every connection to the file is closed: SQLite has folded the log into the file and
    // removed it, and no thread opens the file again (one did, creating -wal and -shm, while its store was left open).
    const seen = new Set<string>();
    for (let i = 0; i < 20; i++) {
      seen.add((await readdir(dir)).sort().join(','));
      await new Promise((r) => setTimeout(r, 15));
    }
    t.deepEqual([...seen], [basename(file)]);
  } finally {
    if (stopped) await srv.database.drop();
    else await srv.close();
  }
});
