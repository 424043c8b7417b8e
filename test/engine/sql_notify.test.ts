/**
 * Two engines on one PostgreSQL database, composed as the server composes
 * them (graph mirror, check cache, revision listener), with a revision poll of
 * 30 s: only the commit's notification can explain a revoke, a model write or
 * a store deletion through one being seen by the other, and it must be seen
 * well before the poll. Measures the propagation delay (write call start →
 * first denial by the other engine).
 */
import test from 'ava';
import { CheckCache, Engine, GraphMirror, LocalChecker } from '../../engine/index.ts';
import { RevisionListener, SqlStore } from '../../engine/sql/index.ts';
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

const POLL_MS = 30_000;
const TOKEN_STEPS = 60;
const ROUNDS = 40;

for (const backend of sqlBackends().filter((b) => b === 'postgres')) {
  test(`sql ${backend}: a revoke through one engine reaches the other through NOTIFY, long before the poll`, async (t) => {
    t.timeout(40_000);
    const db = await createTestDatabase(backend, 'lk_notify');
    const seqA = await connect(db);
    const seqB = await connect(db);
    const listeners: RevisionListener[] = [];
    try {
      const open = async (sequelize: typeof seqA) => {
        const store = await SqlStore.open({ sequelize });
        const mirror = await GraphMirror.load({ store, revisionPollMs: POLL_MS });
        const cache = new CheckCache({ store: mirror.store, revisionPollMs: POLL_MS });
        const engine = new Engine({ store: cache.store, resolver: cache.resolver(mirror.resolver(new LocalChecker())) });
        const listener = await RevisionListener.start({
          sequelize,
          storeId: store.storeId,
          onRevision: (r) => {
            mirror.observeRevision(r);
            cache.observeRevision(r);
          },
        });
        t.truthy(listener);
        listeners.push(listener!);
        return { store, mirror, cache, engine };
      };
      const a = await open(seqA);
      const b = await open(seqB);
      await a.engine.writeModel({ dsl: MODEL });
      await a.engine.write({ writes: [{ user: 'group:eng#member', relation: 'viewer', object: 'doc:plan' }] });
      const q = { user: 'user:anne', relation: 'viewer', object: 'doc:plan' };
      const grant = { user: 'user:anne', relation: 'member', object: 'group:eng' };
      const delays: number[] = [];
      for (let i = 0; i < ROUNDS; i++) {
        await a.engine.write({ writes: [grant] });
        // The grant reaches B through the notification too (its poll is 30 s away).
        const grantDeadline = performance.now() + 2000;
        while (!(await b.engine.check(q)).allowed) {
          t.true(performance.now() < grantDeadline, 'the grant reached the other engine');
          await new Promise((r) => setImmediate(r));
        }
        t.true((await b.engine.check(q)).allowed); // cached
        const started = performance.now();
        await a.engine.write({ deletes: [grant] });
        const returned = performance.now();
        let seen = performance.now();
        while ((await b.engine.check(q)).allowed) {
          seen = performance.now();
          t.true(seen - returned < 2000, `still allowed ${Math.round(seen - returned)} ms after the revoke returned`);
          if (seen - returned >= 2000) break;
          await new Promise((r) => setImmediate(r));
        }
        seen = performance.now();
        delays.push(seen - started);
      }
      delays.sort((x, y) => x - y);
      const p = (q: number) => delays[Math.min(delays.length - 1, Math.floor(q * delays.length))]!;
      t.log(`revoke propagation over NOTIFY (write start → denied by the other engine), ${ROUNDS} rounds: p50 ${p(0.5).toFixed(1)} ms, p99 ${p(0.99).toFixed(1)} ms, max ${delays.at(-1)!.toFixed(1)} ms`);
      t.true(p(0.99) < 1000, 'well before the 30 s poll');
      t.true(b.cache.stats().hits > 0, 'the other engine answered from its cache between writes');
      t.true(b.mirror.stats().revision >= 2 * ROUNDS, 'the mirror followed the changelog');
      await a.store.close();
      await b.store.close();
    } finally {
      for (const l of listeners) await l.close();
      await seqA.close();
      await seqB.close();
      await db.drop();
    }
  });
}

for (const backend of sqlBackends()) {
  test(`sql ${backend}: with the consistency token of a write, a check or list on another engine never sees older data (no notifications, 30 s poll)`, async (t) => {
    t.timeout(40_000);
    const db = await createTestDatabase(backend, 'lk_token');
    const seqA = await connect(db);
    const seqB = await connect(db);
    try {
      // No listener: without the token, B would answer from its cache and mirror for 30 s.
      const open = async (sequelize: typeof seqA) => {
        const store = await SqlStore.open({ sequelize });
        const mirror = await GraphMirror.load({ store, revisionPollMs: POLL_MS });
        const cache = new CheckCache({ store: mirror.store, revisionPollMs: POLL_MS });
        return { store, cache, engine: new Engine({ store: cache.store, resolver: cache.resolver(mirror.resolver(new LocalChecker())) }) };
      };
      const a = await open(seqA);
      const b = await open(seqB);
      await a.engine.writeModel({ dsl: MODEL });
      await a.engine.write({ writes: [{ user: 'group:eng#member', relation: 'viewer', object: 'doc:plan' }] });
      // A seeded walk of grants and revokes over three users; after each write, B with the token must agree with A's truth.
      let seed = 0x5eed;
      const rand = () => ((seed = (seed * 1103515245 + 12345) & 0x7fffffff) % 1000) / 1000;
      const held = new Set<string>();
      let staleWithoutToken = 0;
      for (let i = 0; i < TOKEN_STEPS; i++) {
        const u = `user:u${Math.floor(rand() * 3)}`;
        const grant = { user: u, relation: 'member', object: 'group:eng' };
        // Warm B's cache with the answer before the write.
        await b.engine.check({ user: u, relation: 'viewer', object: 'doc:plan' });
        const { revision } = held.has(u) ? await a.engine.write({ deletes: [grant] }) : await a.engine.write({ writes: [grant] });
        if (held.has(u)) held.delete(u);
        else held.add(u);
        const q = { user: u, relation: 'viewer', object: 'doc:plan' };
        // Without the token first (a check with one starts B's catch-up).
        if ((await b.engine.check(q)).allowed !== held.has(u)) staleWithoutToken++;
        t.is((await b.engine.check({ ...q, atLeastRevision: revision })).allowed, held.has(u), `step ${i}: check with the token`);
        const listed = await b.engine.listObjects({ user: u, relation: 'viewer', type: 'doc', atLeastRevision: revision });
        t.deepEqual(listed.objects, held.has(u) ? ['doc:plan'] : [], `step ${i}: list with the token`);
      }
      // The control: the same checks without the token did see older data (so the token is what made the difference).
      t.true(staleWithoutToken > 0, 'without the token the other engine answered from older data');
      await t.throwsAsync(b.engine.check({ user: 'user:u0', relation: 'viewer', object: 'doc:plan', atLeastRevision: -1 }), { message: /consistency token/ });
      await a.store.close();
      await b.store.close();
    } finally {
      await seqA.close();
      await seqB.close();
      await db.drop();
    }
  });
}

for (const backend of sqlBackends().filter((b) => b === 'postgres')) {
  test(`sql ${backend}: the revision listener reconnects after its connection is killed, reports the gap, and notifications flow again`, async (t) => {
    t.timeout(30_000);
    const db = await createTestDatabase(backend, 'lk_listen');
    const seq = await connect(db);
    const writer = await connect(db);
    let listener: RevisionListener | undefined;
    try {
      const store = await SqlStore.open({ sequelize: writer });
      const seen: number[] = [];
      let gaps = 0;
      listener = await RevisionListener.start({ sequelize: seq, storeId: store.storeId, onRevision: (r) => seen.push(r), onGap: () => gaps++, minBackoffMs: 20, maxBackoffMs: 200 });
      t.true(listener!.listening);
      const until = async (f: () => boolean, what: string) => {
        const deadline = performance.now() + 10_000;
        while (!f()) {
          t.true(performance.now() < deadline, what);
          if (performance.now() >= deadline) return;
          await new Promise((r) => setTimeout(r, 10));
        }
      };
      const r1 = await store.write([], [{ user: 'user:a', relation: 'viewer', object: 'doc:1' }]);
      await until(() => seen.includes(r1), 'the first write was notified');
      // A failed write (the tuple exists) rolls back: nothing is notified for it.
      await t.throwsAsync(store.write([], [{ user: 'user:a', relation: 'viewer', object: 'doc:1' }]));
      await writer.query(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND query = 'LISTEN latchkey_fga_revision'`);
      await until(() => gaps === 1 && listener!.listening, 'the listener reconnected and reported the gap');
      const r2 = await store.write([{ user: 'user:a', relation: 'viewer', object: 'doc:1' }], []);
      t.is(r2, r1 + 1, 'the rolled-back write took no revision');
      await until(() => seen.includes(r2), 'notifications flow after the reconnect');
      t.deepEqual(seen, [r1, r2]);
      await store.close();
    } finally {
      await listener?.close();
      await seq.close();
      await writer.close();
      await db.drop();
    }
  });
}

/** An engine composed as the server composes it over `store`, with a listener that feeds its cache and mirror (or none). */
async function composed(sequelize: import('sequelize').Sequelize, store: import('../../engine/index.ts').TupleStore, listen: boolean, events: string[] = []) {
  const mirror = await GraphMirror.load({ store, revisionPollMs: POLL_MS });
  const cache = new CheckCache({ store: mirror.store, revisionPollMs: POLL_MS });
  const engine = new Engine({ store: cache.store, resolver: cache.resolver(mirror.resolver(new LocalChecker())) });
  const listener = !listen
    ? undefined
    : await RevisionListener.start({
        sequelize,
        storeId: store.storeId!,
        onRevision: (r) => {
          events.push(`revision ${r}`);
          mirror.observeRevision(r);
          cache.observeRevision(r);
        },
        onModel: () => {
          events.push('model');
          mirror.observeModel();
          cache.observeModel();
        },
        onStoreDeleted: () => void events.push('deleted'),
      });
  return { engine, listener };
}

const MODEL_EDITORS_VIEW = `model
  schema 1.1
type user
type group
  relations
    define member: [user, group#member]
type doc
  relations
    define editor: [user]
    define viewer: [user, group#member] or editor
`;

for (const backend of sqlBackends().filter((b) => b === 'postgres')) {
  test(`sql ${backend}: a model written through one engine is used by the other at once through NOTIFY (30 s poll); an engine without the listener keeps the old one`, async (t) => {
    t.timeout(40_000);
    const db = await createTestDatabase(backend, 'lk_notify_model');
    const seqA = await connect(db);
    const seqB = await connect(db);
    const seqC = await connect(db);
    const listeners: RevisionListener[] = [];
    try {
      const storeA = await SqlStore.open({ sequelize: seqA });
      const a = await composed(seqA, storeA, true);
      await a.engine.writeModel({ dsl: MODEL });
      // editor is not a relation of the first model.
      await t.throwsAsync(a.engine.write({ writes: [{ user: 'user:anne', relation: 'editor', object: 'doc:plan' }] }));
      const events: string[] = [];
      const b = await composed(seqB, await SqlStore.open({ sequelize: seqB }), true, events);
      const c = await composed(seqC, await SqlStore.open({ sequelize: seqC }), false);
      listeners.push(a.listener!, b.listener!);
      const q = { user: 'user:anne', relation: 'viewer', object: 'doc:plan' };
      // Both remember the latest model id now (for 30 s without a notification).
      t.false((await b.engine.check(q)).allowed);
      t.false((await c.engine.check(q)).allowed);
      const started = performance.now();
      await a.engine.writeModel({ dsl: MODEL_EDITORS_VIEW });
      const returned = performance.now();
      // The new model's relation, written through A, and read through B under the new model.
      await a.engine.write({ writes: [{ user: 'user:anne', relation: 'editor', object: 'doc:plan' }] });
      let seen = performance.now();
      while (!(await b.engine.check(q)).allowed) {
        seen = performance.now();
        t.true(seen - returned < 2000, `the other engine still used the old model ${Math.round(seen - returned)} ms after the write returned`);
        if (seen - returned >= 2000) break;
        await new Promise((r) => setImmediate(r));
      }
      t.true(events.includes('model'), 'the model write was notified');
      t.log(`model write → the other engine answers under the new model: ${(performance.now() - started).toFixed(1)} ms`);
      // The control: without the notification the latest model id is remembered for the poll (30 s), and the engine
      // checks under the old model, whose viewer does not include editor.
      t.false((await c.engine.check(q)).allowed, 'without the listener the old model is still used');
      await storeA.close();
    } finally {
      for (const l of listeners) await l.close();
      await seqA.close();
      await seqB.close();
      await seqC.close();
      await db.drop();
    }
  });

  test(`sql ${backend}: a store deleted through one engine is notified to the other's listener, whose engine then fails closed at once (30 s poll)`, async (t) => {
    t.timeout(40_000);
    const db = await createTestDatabase(backend, 'lk_notify_store');
    const seqA = await connect(db);
    const seqB = await connect(db);
    let listener: RevisionListener | undefined;
    try {
      const rootA = await SqlStore.open({ sequelize: seqA });
      const a = new Engine({ store: rootA });
      const record = await a.createStore({ name: 'doomed' });
      const viewA = a.forStore(record.id);
      await viewA.writeModel({ dsl: MODEL });
      await viewA.write({ writes: [{ user: 'user:anne', relation: 'viewer', object: 'doc:plan' }] });
      const rootB = await SqlStore.open({ sequelize: seqB });
      const events: string[] = [];
      const b = await composed(seqB, rootB.catalog().store(record.id), true, events);
      listener = b.listener;
      const q = { user: 'user:anne', relation: 'viewer', object: 'doc:plan' };
      t.true((await b.engine.check(q)).allowed);
      t.true((await b.engine.check(q)).allowed); // from the cache now
      // Another store's changes are not this listener's.
      const other = await a.createStore({ name: 'kept' });
      await a.forStore(other.id).writeModel({ dsl: MODEL });
      await a.forStore(other.id).write({ writes: [{ user: 'user:bob', relation: 'viewer', object: 'doc:plan' }] });
      const started = performance.now();
      await a.deleteStore(record.id);
      const returned = performance.now();
      const deadline = returned + 2000;
      while (!events.includes('deleted') && performance.now() < deadline) await new Promise((r) => setTimeout(r, 2));
      t.true(events.includes('deleted'), 'the deletion was notified');
      t.deepEqual(events, ['revision 2', 'deleted'], "only this store's changes: its deletion, after its last revision");
      await t.throwsAsync(b.engine.check(q), { code: 'not_found' }, 'the other engine no longer answers from its cache or mirror');
      t.log(`store deletion → the other engine fails closed: ${(performance.now() - started).toFixed(1)} ms`);
      await rootA.close();
      await rootB.close();
    } finally {
      await listener?.close();
      await seqA.close();
      await seqB.close();
      await db.drop();
    }
  });
}
