/**
 * The FGA engine as the server composes it (level checker, graph mirror on
 * SQL stores, check cache in front): a revoke is visible to the very next
 * check on every protocol, on every SQL backend, with the cache on; and the
 * cache flags turn it off.
 */
import test from 'ava';
import { PROTOCOLS, TEST_ADMIN_SECRET, startTestServer, type TestServer } from '../helpers/server.ts';
import { sqlBackends } from '../helpers/databases.ts';

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
