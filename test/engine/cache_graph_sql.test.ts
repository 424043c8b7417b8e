/**
 * The graph mirror on the SQL store, as the server composes it (the
 * synchronous evaluator over the mirror, the level checker for full
 * consistency): answers equal the SQL store's under random interleavings of
 * writes through the mirror, writes straight to the database (another
 * process) and checks/ListObjects, once the mirror has synced; and two
 * server stacks on one database see each other's revokes within the delay,
 * at once with full consistency.
 */
import test from 'ava';
import fc from 'fast-check';
import type { Sequelize } from 'sequelize';
import { buildEngine, Engine, LatchkeyError, type GraphMirror, type TupleKey, type TupleStore } from '../../engine/index.ts';
import { SqlStore } from '../../engine/sql/sql_store.ts';
import { createTestDatabase, sqlBackends } from '../helpers/databases.ts';
import { connect } from './sql_helpers.ts';

const MODEL = `model
  schema 1.1
type user
type group
  relations
    define member: [user, user:*, group#member, user with big]
type doc
  relations
    define parent: [doc]
    define blocked: [user, group#member]
    define editor: [user, group#member]
    define viewer: [user, user:*, group#member] or editor or viewer from parent
    define can_read: viewer but not blocked
    define can_edit: editor and viewer
condition big(x: int) {
  x > 5
}
`;

const users = ['user:u0', 'user:u1'];
const groups = ['group:g0', 'group:g1'];
const docs = ['doc:d0', 'doc:d1', 'doc:d2'];
const UNIVERSE: TupleKey[] = [];
for (const g of groups) {
  for (const u of [...users, 'user:*']) UNIVERSE.push({ object: g, relation: 'member', user: u });
  for (const h of groups) UNIVERSE.push({ object: g, relation: 'member', user: `${h}#member` });
}
UNIVERSE.push({ object: 'group:g1', relation: 'member', user: 'user:u1', condition: { name: 'big' } });
for (const d of docs) {
  for (const p of docs) if (p !== d) UNIVERSE.push({ object: d, relation: 'parent', user: p });
  for (const u of users) for (const relation of ['editor', 'viewer', 'blocked']) UNIVERSE.push({ object: d, relation, user: u });
  UNIVERSE.push({ object: d, relation: 'viewer', user: 'user:*' });
  for (const g of groups) for (const relation of ['viewer', 'editor', 'blocked']) UNIVERSE.push({ object: d, relation, user: `${g}#member` });
}
const key = (t: TupleKey): string => `${t.object}#${t.relation}@${t.user}`;

/** The server's stack over `store` (`buildEngine`, as server/compose/engine.ts builds it), with or without the check cache. */
async function serverStack(store: TupleStore, options: { pollMs: number; cache: boolean }): Promise<{ engine: Engine; mirror: GraphMirror }> {
  const built = await buildEngine({ store, revisionPollMs: options.pollMs, ...(options.cache ? {} : { cacheSize: 0 }) });
  return { engine: built.engine, mirror: built.mirror! };
}

async function outcome(f: () => Promise<unknown>): Promise<string> {
  try {
    return JSON.stringify(await f());
  } catch (err) {
    return err instanceof LatchkeyError ? `error ${err.code}/${err.reason ?? ''}` : `non-latchkey ${String(err)}`;
  }
}

for (const backend of sqlBackends()) {
  test(`sql ${backend}: answers through the mirror equal the SQL store's under random writes here and in another process (property)`, async (t) => {
    const db = await createTestDatabase(backend, 'lk_mirror');
    const sequelize: Sequelize = await connect(db);
    try {
      const store = await SqlStore.open({ sequelize });
      const op = fc.oneof(
        fc.record({ kind: fc.constantFrom('here' as const, 'other' as const), i: fc.nat({ max: UNIVERSE.length - 1 }) }),
        fc.record({
          kind: fc.constant('check' as const),
          object: fc.constantFrom(...docs, ...groups),
          relation: fc.constantFrom('viewer', 'can_read', 'can_edit'),
          user: fc.constantFrom(...users, 'user:*', 'group:g0#member'),
          x: fc.option(fc.integer({ min: 0, max: 10 }), { nil: undefined }),
        }),
        fc.record({ kind: fc.constant('list' as const), relation: fc.constantFrom('viewer', 'can_read', 'can_edit'), user: fc.constantFrom(...users, 'group:g1#member') }),
      );
      await t.notThrowsAsync(
        fc.assert(
          fc.asyncProperty(fc.array(op, { minLength: 5, maxLength: 30, size: 'max' }), async (ops) => {
            for (const table of ['fga_tuple', 'fga_model', 'fga_changelog']) await sequelize.query(`DELETE FROM ${table}`);
            // The reference reads the SQL store directly; it is also the other process writing past the mirror.
            const plain = new Engine({ store });
            await plain.writeModel({ dsl: MODEL });
            // A long delay: another process's writes are seen only once the mirror has synced.
            const { engine, mirror } = await serverStack(store, { pollMs: 3_600_000, cache: false });
            const present = new Map<string, TupleKey>();
            let pending = false;
            for (const o of ops) {
              if (o.kind === 'here' || o.kind === 'other') {
                const tuple = UNIVERSE[o.i]!;
                const there = present.get(key(tuple));
                const req = there !== undefined ? { deletes: [there] } : { writes: [tuple] };
                if (there !== undefined) present.delete(key(tuple));
                else present.set(key(tuple), tuple);
                if (o.kind === 'here') await engine.write(req);
                else {
                  await plain.write(req);
                  pending = true;
                }
                continue;
              }
              if (pending) {
                await mirror.sync();
                pending = false;
              }
              const q = o as Extract<typeof o, { kind: 'check' | 'list' }>;
              const run = (e: Engine, full: boolean): Promise<string> => {
                const consistency = full ? { consistency: 'higher_consistency' as const } : {};
                if (q.kind === 'list') return outcome(() => e.listObjects({ type: 'doc', relation: q.relation, user: q.user, ...consistency }).then((r) => r.objects));
                const relation = q.object.startsWith('group:') ? 'member' : q.relation;
                const context = q.x === undefined ? {} : { context: { x: q.x } };
                return outcome(() => e.check({ object: q.object, relation, user: q.user, ...context, ...consistency }).then((r) => r.allowed));
              };
              const want = await run(plain, false);
              for (const full of [false, true]) {
                const got = await run(engine, full);
                if (want !== got) throw new Error(`${JSON.stringify(o)} full=${full}: store ${want}, mirror ${got}`);
              }
            }
            return true;
          }),
          { numRuns: backend === 'sqlite' ? 40 : 12 },
        ),
      );
      await store.close();
    } finally {
      await sequelize.close();
      await db.drop();
    }
  });

  test(`sql ${backend}: two server stacks with mirrors see each other's revokes within the delay, at once with full consistency`, async (t) => {
    const POLL_MS = 250;
    const SLACK_MS = 150;
    const db = await createTestDatabase(backend, 'lk_mirror2');
    const seqA = await connect(db);
    const seqB = await connect(db);
    try {
      const [storeA, storeB] = await Promise.all([SqlStore.open({ sequelize: seqA }), SqlStore.open({ sequelize: seqB })]);
      const { engine: a } = await serverStack(storeA, { pollMs: POLL_MS, cache: true });
      await a.writeModel({ dsl: MODEL });
      const grant = { user: 'user:u0', relation: 'member', object: 'group:g0' };
      await a.write({ writes: [grant, { user: 'group:g0#member', relation: 'viewer', object: 'doc:d0' }, { user: 'user:u1', relation: 'blocked', object: 'doc:d0' }] });
      const { engine: b } = await serverStack(storeB, { pollMs: POLL_MS, cache: true });
      const q = { user: 'user:u0', relation: 'can_read', object: 'doc:d0' };
      const lo = { user: 'user:u0', relation: 'can_read', type: 'doc' };
      t.true((await b.check(q)).allowed);
      t.deepEqual((await b.listObjects(lo)).objects, ['doc:d0']);

      await a.write({ deletes: [grant] });
      const revokedAt = performance.now();
      t.false((await a.check(q)).allowed, 'the writer never answers stale');
      t.deepEqual((await a.listObjects(lo)).objects, []);
      t.false((await b.check({ ...q, consistency: 'higher_consistency' })).allowed, 'a full-consistency read is never stale');
      t.deepEqual((await b.listObjects({ ...lo, consistency: 'higher_consistency' })).objects, []);

      let seenAt: number | undefined;
      while (performance.now() - revokedAt < POLL_MS * 4) {
        const started = performance.now();
        const allowed = (await b.check(q)).allowed;
        const objects = (await b.listObjects(lo)).objects;
        if (!allowed && objects.length === 0) {
          seenAt ??= started;
        } else {
          t.is(seenAt, undefined, 'once seen, the revoke stays seen');
          t.true(started - revokedAt <= POLL_MS + SLACK_MS, `stale answer ${Math.round(started - revokedAt)} ms after the revoke`);
        }
        await new Promise((r) => setTimeout(r, 20));
      }
      t.not(seenAt, undefined);
      await Promise.all([storeA.close(), storeB.close()]);
    } finally {
      await Promise.all([seqA.close(), seqB.close()]);
      await db.drop();
    }
  });
}
