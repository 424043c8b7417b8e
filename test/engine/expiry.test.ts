/**
 * Expiring tuples (`expires_at`) on every backend and every evaluation
 * layout: the plain engine, and the chain the server runs (answer cache,
 * graph mirror and level checker on SQL). Time is the tests' own clock.
 */
import test from 'ava';
import { buildEngine, Engine, LatchkeyError, MemoryStore, type TupleKey, type TupleStore } from '../../engine/index.ts';
import { SqlStore } from '../../engine/sql/sql_store.ts';
import { sqlBackends, createTestDatabase } from '../helpers/databases.ts';
import { connect } from './sql_helpers.ts';

const MODEL = `model
  schema 1.1
type user
type group
  relations
    define member: [user, group#member]
type folder
  relations
    define viewer: [user, group#member]
type doc
  relations
    define parent: [folder]
    define blocked: [user]
    define owner: [user]
    define viewer: [user, group#member] or viewer from parent
    define can_read: viewer but not blocked
    define both: viewer and owner
`;

const T0 = Date.parse('2030-01-01T00:00:00.000Z');
const iso = (ms: number): string => new Date(ms).toISOString();

interface Clock {
  t: number;
  now: () => number;
}

interface Fixture {
  engine: Engine;
  close(): Promise<void>;
}

type Layout = 'plain' | 'chain';

async function openStore(backend: string, clock: Clock): Promise<{ store: TupleStore; close(): Promise<void> }> {
  if (backend === 'memory') {
    const store = new MemoryStore({ now: clock.now });
    return { store, close: () => store.close() };
  }
  const db = await createTestDatabase(backend as 'sqlite', 'lk_expiry');
  const sequelize = await connect(db);
  const store = await SqlStore.open({ sequelize, now: clock.now });
  return {
    store,
    async close() {
      await store.close();
      await sequelize.close();
      await db.drop();
    },
  };
}

async function fixture(backend: string, layout: Layout, clock: Clock): Promise<Fixture> {
  const { store, close } = await openStore(backend, clock);
  const engine = layout === 'plain' ? new Engine({ store, now: clock.now }) : (await buildEngine({ store, now: clock.now, revisionPollMs: 60_000 })).engine;
  await engine.writeModel({ dsl: MODEL });
  return { engine, close };
}

const backends = ['memory', ...sqlBackends()];

for (const backend of backends) {
  for (const layout of ['plain', 'chain'] as const) {
    const name = `${backend} ${layout}`;

    test(`${name}: expires_at must be RFC 3339 and in the future`, async (t) => {
      const clock: Clock = { t: T0, now: () => clock.t };
      const f = await fixture(backend, layout, clock);
      try {
        for (const bad of ['tomorrow', '2030-01-01', '2030-02-30T00:00:00Z', '2030-01-01T24:00:00Z', 42, iso(T0), iso(T0 - 1)]) {
          const err = await t.throwsAsync(f.engine.write({ writes: [{ object: 'doc:1', relation: 'owner', user: 'user:a', expires_at: bad as string }] }), { instanceOf: LatchkeyError });
          t.is(err?.code, 'invalid_argument', String(bad));
          t.is(err?.reason, 'invalid_expires_at', String(bad));
        }
        t.deepEqual((await f.engine.read({})).tuples, [], 'nothing written');
        // Offsets are accepted and stored in their canonical UTC form.
        await f.engine.write({ writes: [{ object: 'doc:1', relation: 'owner', user: 'user:a', expires_at: '2030-01-01T02:00:00+01:00' }] });
        t.deepEqual((await f.engine.read({})).tuples, [{ object: 'doc:1', relation: 'owner', user: 'user:a', expires_at: '2030-01-01T01:00:00.000Z' }]);
        // Contextual tuples hold for one request: they cannot expire.
        const ctxErr = await t.throwsAsync(f.engine.check({ user: 'user:a', relation: 'owner', object: 'doc:2', contextualTuples: [{ object: 'doc:2', relation: 'owner', user: 'user:a', expires_at: iso(T0 + 5000) }] }));
        t.is((ctxErr as LatchkeyError).reason, 'invalid_expires_at');
      } finally {
        await f.close();
      }
    });

    test(`${name}: an expired tuple grants nothing on any path from the instant it expires`, async (t) => {
      const clock: Clock = { t: T0, now: () => clock.t };
      const f = await fixture(backend, layout, clock);
      const e = f.engine;
      const E = T0 + 60_000;
      const w = (object: string, relation: string, user: string, expires?: number): TupleKey => (expires === undefined ? { object, relation, user } : { object, relation, user, expires_at: iso(expires) });
      try {
        await e.write({
          writes: [
            w('doc:direct', 'viewer', 'user:a', E),
            w('group:g', 'member', 'user:b', E),
            w('doc:userset', 'viewer', 'group:g#member'),
            w('folder:f', 'viewer', 'user:c'),
            w('doc:ttu', 'parent', 'folder:f', E),
            w('doc:excl', 'viewer', 'user:d'),
            w('doc:excl', 'blocked', 'user:d', E),
            w('doc:and', 'viewer', 'user:e'),
            w('doc:and', 'owner', 'user:e', E),
            w('doc:keep', 'viewer', 'user:a'),
          ],
        });
        const ask = async (user: string, relation: string, object: string): Promise<boolean> => (await e.check({ user, relation, object })).allowed;
        const snapshot = async (): Promise<Record<string, unknown>> => ({
          direct: await ask('user:a', 'viewer', 'doc:direct'),
          userset: await ask('user:b', 'viewer', 'doc:userset'),
          ttu: await ask('user:c', 'viewer', 'doc:ttu'),
          exclusion: await ask('user:d', 'can_read', 'doc:excl'),
          intersection: await ask('user:e', 'both', 'doc:and'),
          keep: await ask('user:a', 'viewer', 'doc:keep'),
          listObjectsA: (await e.listObjects({ user: 'user:a', relation: 'viewer', type: 'doc' })).objects,
          listObjectsB: (await e.listObjects({ user: 'user:b', relation: 'viewer', type: 'doc' })).objects,
          listUsers: (await e.listUsers({ object: 'doc:userset', relation: 'viewer', userFilters: [{ type: 'user' }] })).users,
          listUsersTtu: (await e.listUsers({ object: 'doc:ttu', relation: 'viewer', userFilters: [{ type: 'user' }] })).users,
          expand: JSON.stringify((await e.expand({ object: 'doc:direct', relation: 'viewer' })).tree).includes('user:a'),
          read: (await e.read({ object: 'doc:direct' })).tuples.length,
        });
        const before = {
          direct: true, userset: true, ttu: true, exclusion: false, intersection: true, keep: true,
          listObjectsA: ['doc:direct', 'doc:keep'], listObjectsB: ['doc:userset'], listUsers: ['user:b'], listUsersTtu: ['user:c'], expand: true, read: 1,
        };
        const after = {
          direct: false, userset: false, ttu: false, exclusion: true, intersection: false, keep: true,
          listObjectsA: ['doc:keep'], listObjectsB: [], listUsers: [], listUsersTtu: [], expand: false, read: 0,
        };
        t.deepEqual(await snapshot(), before, 'before expiry');
        clock.t = E - 1;
        t.deepEqual(await snapshot(), before, 'one millisecond before expiry (answers cached at T0 are still right)');
        clock.t = E;
        t.deepEqual(await snapshot(), after, 'at the instant of expiry');
        clock.t = E + 1;
        t.deepEqual(await snapshot(), after, 'after expiry');
      } finally {
        await f.close();
      }
    });

    test(`${name}: a cached allow computed before expiry is a deny one millisecond after`, async (t) => {
      const clock: Clock = { t: T0, now: () => clock.t };
      const f = await fixture(backend, layout, clock);
      const E = T0 + 1000;
      try {
        await f.engine.write({ writes: [{ object: 'group:g', relation: 'member', user: 'user:a', expires_at: iso(E) }, { object: 'doc:1', relation: 'viewer', user: 'group:g#member' }] });
        for (let i = 0; i < 3; i++) t.true((await f.engine.check({ user: 'user:a', relation: 'viewer', object: 'doc:1' })).allowed);
        clock.t = E - 1;
        t.true((await f.engine.check({ user: 'user:a', relation: 'viewer', object: 'doc:1' })).allowed);
        clock.t = E + 1;
        t.false((await f.engine.check({ user: 'user:a', relation: 'viewer', object: 'doc:1' })).allowed);
        const atHand = f.engine.checkAtHand({ user: 'user:a', relation: 'viewer', object: 'doc:1' });
        t.false((atHand instanceof Promise ? await atHand : atHand).allowed, 'the synchronous path agrees');
      } finally {
        await f.close();
      }
    });

    test(`${name}: collection deletes expired tuples as delete changes; an expired tuple can be written again`, async (t) => {
      const clock: Clock = { t: T0, now: () => clock.t };
      const f = await fixture(backend, layout, clock);
      const e = f.engine;
      const E = T0 + 5000;
      try {
        await e.write({ writes: [{ object: 'doc:1', relation: 'viewer', user: 'user:a', expires_at: iso(E) }, { object: 'doc:2', relation: 'viewer', user: 'user:a' }] });
        const changes = await e.readChanges({});
        t.deepEqual(changes.map((c) => [c.operation, c.tuple.object, c.tuple.expires_at]), [['write', 'doc:1', iso(E)], ['write', 'doc:2', undefined]]);
        t.is(await e.collectExpired(), 0, 'nothing has expired yet');
        const rev = (await e.readChanges({})).at(-1)!.revision;
        clock.t = E;
        t.is(await e.collectExpired(), 1);
        t.is(await e.collectExpired(), 0);
        const after = await e.readChanges({ afterRevision: rev });
        t.deepEqual(after.map((c) => [c.operation, `${c.tuple.object}#${c.tuple.relation}@${c.tuple.user}`]), [['delete', 'doc:1#viewer@user:a']]);
        // Written again (before or after collection), it grants again until its new expiry.
        await e.write({ writes: [{ object: 'doc:2', relation: 'owner', user: 'user:b', expires_at: iso(E + 1000) }] });
        clock.t = E + 1000;
        await e.write({ writes: [{ object: 'doc:2', relation: 'owner', user: 'user:b', expires_at: iso(E + 5000) }] });
        t.true((await e.check({ user: 'user:b', relation: 'owner', object: 'doc:2' })).allowed);
        t.deepEqual((await e.read({ object: 'doc:2', relation: 'owner' })).tuples, [{ object: 'doc:2', relation: 'owner', user: 'user:b', expires_at: iso(E + 5000) }]);
        // Writing without expiry replaces an expired one: it never expires.
        clock.t = E + 5000;
        t.false((await e.check({ user: 'user:b', relation: 'owner', object: 'doc:2' })).allowed);
        await e.write({ writes: [{ object: 'doc:2', relation: 'owner', user: 'user:b' }] });
        clock.t = E + 1_000_000;
        t.true((await e.check({ user: 'user:b', relation: 'owner', object: 'doc:2' })).allowed);
      } finally {
        await f.close();
      }
    });
  }
}
