/**
 * Two engine instances on one database, as two server processes would be
 * (each with its own connection, store and cache): a revoke written through
 * one is seen by the other within the configured delay, and immediately by a
 * full-consistency read. The deterministic version of the delay bound, with an
 * injected clock, is in cache.test.ts.
 */
import test from 'ava';
import { CheckCache, Engine } from '../../engine/index.ts';
import { SqlStore } from '../../engine/sql/sql_store.ts';
import { createTestDatabase, sqlBackends } from '../helpers/databases.ts';
import { connect } from './sql_helpers.ts';

const MODEL = `model
  schema 1.1
type user
type group
  relations
    define member: [user, group#member]
type doc
  relations
    define viewer: [user, group#member]
`;

const POLL_MS = 250;
/** Time for one check on a loaded machine. */
const SLACK_MS = 150;

for (const backend of sqlBackends()) {
  test(`sql ${backend}: a revoke through one engine is seen by another within the poll delay, and at once with full consistency`, async (t) => {
    const db = await createTestDatabase(backend, 'lk_two');
    const seqA = await connect(db);
    const seqB = await connect(db);
    try {
      const [storeA, storeB] = await Promise.all([SqlStore.open({ sequelize: seqA }), SqlStore.open({ sequelize: seqB })]);
      const cacheA = new CheckCache({ store: storeA, revisionPollMs: POLL_MS });
      const cacheB = new CheckCache({ store: storeB, revisionPollMs: POLL_MS });
      const a = new Engine({ store: cacheA.store, resolver: cacheA.resolver() });
      const b = new Engine({ store: cacheB.store, resolver: cacheB.resolver() });
      await a.writeModel({ dsl: MODEL });
      const grant = { user: 'user:anne', relation: 'member', object: 'group:eng' };
      await a.write({ writes: [grant, { user: 'group:eng#member', relation: 'viewer', object: 'doc:plan' }] });
      const q = { user: 'user:anne', relation: 'viewer', object: 'doc:plan' };

      // B sees the grant (its first revision read is fresh) and caches it.
      t.true((await b.check(q)).allowed);
      t.true((await b.check(q)).allowed);
      t.true(cacheB.stats().hits > 0);

      await a.write({ deletes: [grant] });
      // The revoke committed before this instant; a stale answer can only come from a check started within POLL_MS of the commit.
      const revokedAt = performance.now();
      t.false((await a.check(q)).allowed, 'the writer never answers stale');
      t.false((await b.check({ ...q, consistency: 'higher_consistency' })).allowed, 'a full-consistency read is never stale');

      // B may answer from its cache for at most POLL_MS after the revoke committed.
      let seenAt: number | undefined;
      while (performance.now() - revokedAt < POLL_MS * 4) {
        const allowed = (await b.check(q)).allowed;
        const now = performance.now();
        if (!allowed) {
          seenAt ??= now;
        } else {
          t.is(seenAt, undefined, 'once revoked, never allowed again');
          t.true(now - revokedAt <= POLL_MS + SLACK_MS, `stale allow ${Math.round(now - revokedAt)} ms after the revoke`);
        }
        await new Promise((r) => setTimeout(r, 10));
      }
      t.not(seenAt, undefined);
      t.true(seenAt! - revokedAt <= POLL_MS + SLACK_MS);
      await storeA.close();
      await storeB.close();
    } finally {
      await seqA.close();
      await seqB.close();
      await db.drop();
    }
  });
}
