/**
 * watch_fga across two server processes on one PostgreSQL database: writes
 * go to both replicas concurrently, and a client reading Server-Sent Events
 * that disconnects at random points (fast-check) and resumes after its last
 * token on the other replica each time sees every change exactly once, in
 * commit order (the changelog's). A watcher on one replica is woken by the
 * other's write through the PostgreSQL notification, well before its poll.
 */
import test from 'ava';
import fc from 'fast-check';
import { randomBytes } from 'node:crypto';
import { createTestDatabase, redisUrl } from '../../helpers/databases.ts';
import { needs } from '../../helpers/needs.ts';
import { freePort } from '../../helpers/instances.ts';
import { CLUSTER_ADMIN_SECRET, startReplicas, stopReplicas } from '../../helpers/cluster.ts';
import { readSse } from '../../helpers/sse.ts';

const DSL = 'model\n  schema 1.1\ntype user\ntype doc\n  relations\n    define viewer: [user]\n';
const admin = { 'x-service-admin-secret': CLUSTER_ADMIN_SECRET };

interface Change { token: string; operation: string; tuple: { object: string; relation: string; user: string } }
const show = (c: Change): string => `${c.token} ${c.operation} ${c.tuple.object}#${c.tuple.relation}@${c.tuple.user}`;

needs(test, 'postgres', 'redis')('two replicas on PostgreSQL serve one watch feed: resumed at random points on either, every change once, in commit order', async (t) => {
  t.timeout(240_000);
  const db = await createTestDatabase('postgres', 'lk_watch_replicas');
  t.teardown(() => db.drop());
  const publicUrl = `http://127.0.0.1:${await freePort()}`;
  const replicas = await startReplicas({ count: 2, databaseUrl: db.url, redisUrl: redisUrl()!, publicUrl, clientId: `watch-${randomBytes(4).toString('hex')}` });
  t.teardown(() => stopReplicas(replicas));
  const post = async (i: number, path: string, body: unknown): Promise<void> => {
    const res = await fetch(`${replicas[i % 2]!.url}${path}`, { method: 'POST', headers: { ...admin, 'content-type': 'application/json', origin: publicUrl }, body: JSON.stringify(body) });
    if (res.status !== 200) throw new Error(`${path}: ${res.status} ${await res.text()}`);
  };
  await post(0, '/v1/admin/fga/model', { dsl: DSL });
  let n = 0;
  /** `count` writes spread over both replicas, two at a time (concurrent commits), some followed by a delete. */
  const writeSome = async (count: number): Promise<void> => {
    const one = async (w: number): Promise<void> => {
      const k = n++;
      const tuple = { object: `doc:${k}`, relation: 'viewer', user: `user:${w}` };
      await post(w, '/v1/admin/fga/tuples', { tuples: [tuple] });
      if (k % 3 === 2) await post(w + 1, '/v1/admin/fga/tuples/delete', { tuples: [tuple] });
    };
    for (let i = 0; i < count; i += 2) await Promise.all([one(0), ...(i + 1 < count ? [one(1)] : [])]);
  };
  /** Changes after `token` from replica `r`, until `limit` were read or `quietMs` passed without one. */
  const read = async (r: number, token: string, limit: number, quietMs = 400): Promise<Change[]> => {
    const stream = await readSse(`${replicas[r % 2]!.url}/v1/admin/fga/watch`, { ...admin, 'last-event-id': token });
    const got: Change[] = [];
    try {
      while (got.length < limit) {
        const b = await stream.next(quietMs).catch(() => undefined);
        if (b === undefined) break;
        if (b.data !== undefined) got.push(JSON.parse(b.data) as Change);
      }
    } finally {
      stream.close();
    }
    return got;
  };

  let token = '0';
  const seen: string[] = [];
  let connection = 0;
  let runs = 0;
  await fc.assert(
    fc.asyncProperty(fc.array(fc.tuple(fc.integer({ min: 0, max: 6 }), fc.integer({ min: 0, max: 4 })), { minLength: 1, maxLength: 5 }), async (plan) => {
      // Writers and the reader run at once: cuts land inside bursts of concurrent commits.
      for (const [cut, more] of plan) {
        const [changes] = await Promise.all([read(connection++, token, cut, 300), writeSome(more)]);
        for (const c of changes) seen.push(show(c));
        if (changes.length > 0) token = changes.at(-1)!.token;
      }
      runs++;
    }),
    { numRuns: 6 },
  );
  // Everything left, from either replica; then the whole feed from the beginning must be what was seen.
  for (;;) {
    const rest = await read(connection++, token, 1000, 1000);
    if (rest.length === 0) break;
    seen.push(...rest.map(show));
    token = rest.at(-1)!.token;
  }
  const whole = await read(0, '0', 100_000, 1000);
  t.true(runs > 0);
  t.true(whole.length > 0);
  t.deepEqual(seen, whole.map(show));
  t.is(new Set(seen).size, seen.length, 'no change twice');

  // A watcher on replica 2 hears of a write on replica 1 at once (notification), not at its 1 s poll... nor later.
  const stream = await readSse(`${replicas[1]!.url}/v1/admin/fga/watch`, admin);
  await stream.next(5_000);
  const began = performance.now();
  await post(0, '/v1/admin/fga/tuples', { tuples: [{ object: 'doc:late', relation: 'viewer', user: 'user:z' }] });
  const b = await stream.next(5_000);
  const ms = performance.now() - began;
  stream.close();
  t.like(JSON.parse(b.data!), { kind: 'change', operation: 'write', tuple: { object: 'doc:late' } });
  t.log(`cross-replica delivery: ${ms.toFixed(0)} ms`);
  t.true(ms < 3_000);
});
