import test from 'ava';
import { CheckCache, Engine, LatchkeyError, MemoryStore } from '../../engine/index.ts';

const MODEL = `model
  schema 1.1
type user
type group
  relations
    define member: [user, group#member]
type doc
  relations
    define parent: [doc]
    define viewer: [user, group#member, user with in_hours] or viewer from parent
condition in_hours(hour: int) {
  hour >= 9 && hour < 17
}
`;

async function setup(options: { maxEntries?: number; revisionPollMs?: number; now?: () => number } = {}) {
  const inner = new MemoryStore();
  const cache = new CheckCache({ store: inner, ...options });
  const engine = new Engine({ store: cache.store, resolver: cache.resolver() });
  await engine.writeModel({ dsl: MODEL });
  return { inner, cache, engine };
}

const anneOnDoc = { user: 'user:anne', relation: 'viewer', object: 'doc:1' };

test('a repeated check is answered from the cache with the same answer', async (t) => {
  const { cache, engine } = await setup();
  await engine.write({ writes: [{ user: 'group:g#member', relation: 'viewer', object: 'doc:1' }, { user: 'user:anne', relation: 'member', object: 'group:g' }] });
  t.true((await engine.check(anneOnDoc)).allowed);
  const before = cache.stats().hits;
  t.true((await engine.check(anneOnDoc)).allowed);
  t.true(cache.stats().hits > before);
});

test('a revoke is visible to the next check in this process, before any poll', async (t) => {
  let clock = 0;
  const { engine } = await setup({ revisionPollMs: 3_600_000, now: () => clock });
  const grant = { user: 'user:anne', relation: 'member', object: 'group:g' };
  await engine.write({ writes: [{ user: 'group:g#member', relation: 'viewer', object: 'doc:2' }, grant, { user: 'doc:2', relation: 'parent', object: 'doc:1' }] });
  t.true((await engine.check(anneOnDoc)).allowed);
  t.true((await engine.check(anneOnDoc)).allowed);
  await engine.write({ deletes: [grant] });
  t.false((await engine.check(anneOnDoc)).allowed);
  // And a grant is visible as well.
  await engine.write({ writes: [grant] });
  t.true((await engine.check(anneOnDoc)).allowed);
  clock += 1;
});

test('the condition context is part of the key', async (t) => {
  const { engine } = await setup();
  await engine.write({ writes: [{ user: 'user:anne', relation: 'viewer', object: 'doc:1', condition: { name: 'in_hours' } }] });
  t.true((await engine.check({ ...anneOnDoc, context: { hour: 10 } })).allowed);
  t.false((await engine.check({ ...anneOnDoc, context: { hour: 20 } })).allowed);
  t.true((await engine.check({ ...anneOnDoc, context: { hour: 10 } })).allowed);
});

test('checks with contextual tuples bypass the cache and leave nothing behind', async (t) => {
  const { cache, engine } = await setup();
  const ctx = [{ user: 'user:anne', relation: 'viewer', object: 'doc:1' }];
  t.true((await engine.check({ ...anneOnDoc, contextualTuples: ctx })).allowed);
  t.true(cache.stats().bypasses > 0);
  t.false((await engine.check(anneOnDoc)).allowed);
});

test('full-consistency reads bypass the cache', async (t) => {
  const { cache, engine } = await setup();
  await engine.write({ writes: [{ user: 'user:anne', relation: 'viewer', object: 'doc:1' }] });
  await engine.check(anneOnDoc);
  const { hits, bypasses } = cache.stats();
  t.true((await engine.check({ ...anneOnDoc, consistency: 'higher_consistency' })).allowed);
  t.is(cache.stats().hits, hits);
  t.true(cache.stats().bypasses > bypasses);
});

test('another process\'s write is observed once the poll delay has passed, and not served stale after it', async (t) => {
  let clock = 0;
  const shared = new MemoryStore();
  // Process A writes through its own cache; process B only shares the store.
  const a = new CheckCache({ store: shared, revisionPollMs: 1000, now: () => clock });
  const b = new CheckCache({ store: shared, revisionPollMs: 1000, now: () => clock });
  const engineA = new Engine({ store: a.store, resolver: a.resolver() });
  const engineB = new Engine({ store: b.store, resolver: b.resolver() });
  await engineA.writeModel({ dsl: MODEL });
  await engineA.write({ writes: [{ user: 'user:anne', relation: 'viewer', object: 'doc:1' }] });
  t.true((await engineB.check(anneOnDoc)).allowed);
  await engineA.write({ deletes: [{ user: 'user:anne', relation: 'viewer', object: 'doc:1' }] });
  t.false((await engineA.check(anneOnDoc)).allowed);
  // Within the delay B may still answer from its cache ...
  clock += 999;
  t.true((await engineB.check(anneOnDoc)).allowed);
  // ... but never after it, and a full-consistency read is never stale.
  t.false((await engineB.check({ ...anneOnDoc, consistency: 'higher_consistency' })).allowed);
  clock += 2;
  t.false((await engineB.check(anneOnDoc)).allowed);
  // Asked again, now from B's cache: the answer found before the poll is gone for good.
  t.false((await engineB.check(anneOnDoc)).allowed);
  t.false((await engineB.check(anneOnDoc)).allowed);
  t.true(b.stats().revisionReads >= 2);
});

test('a model written by another process is used within the poll delay', async (t) => {
  let clock = 0;
  const shared = new MemoryStore();
  const a = new CheckCache({ store: shared, revisionPollMs: 1000, now: () => clock });
  const b = new CheckCache({ store: shared, revisionPollMs: 1000, now: () => clock });
  const engineA = new Engine({ store: a.store, resolver: a.resolver() });
  const engineB = new Engine({ store: b.store, resolver: b.resolver() });
  const first = await engineA.writeModel({ dsl: MODEL });
  t.is(await b.store.latestModelId(), first.id);
  const second = await engineA.writeModel({ dsl: MODEL });
  t.is(await a.store.latestModelId(), second.id);
  // Model writes do not move the tuple revision; the id is re-read after the delay anyway.
  clock += 1001;
  t.is(await engineB.store.latestModelId(), second.id);
});

test('a cached answer under the latest model is served only while that model id is fresh', async (t) => {
  let clock = 0;
  const shared = new MemoryStore();
  const a = new CheckCache({ store: shared, revisionPollMs: 1000, now: () => clock });
  const b = new CheckCache({ store: shared, revisionPollMs: 1000, now: () => clock });
  const engineA = new Engine({ store: a.store, resolver: a.resolver() });
  const engineB = new Engine({ store: b.store, resolver: b.resolver() });
  const first = await engineA.writeModel({ dsl: MODEL });
  await engineA.write({ writes: [{ user: 'user:anne', relation: 'viewer', object: 'doc:1' }] });
  t.true((await engineB.check(anneOnDoc)).allowed);
  const hits = b.stats().hits;
  t.true((await engineB.check(anneOnDoc)).allowed);
  t.true(b.stats().hits > hits);
  // A model under which anne's unconditional tuple no longer counts.
  await engineA.writeModel({ dsl: MODEL.replace('define viewer: [user, group#member, user with in_hours] or viewer from parent', 'define viewer: [group#member, user with in_hours]') });
  clock += 999;
  t.true((await engineB.check(anneOnDoc)).allowed);
  // A check naming the first model confirms the revision again; it does not re-read the latest model id.
  clock += 2;
  t.true((await engineB.check({ ...anneOnDoc, modelId: first.id })).allowed);
  // So the revision is fresh but the latest id read at 0 is not: the answer comes from the new model.
  clock += 1;
  t.false((await engineB.check(anneOnDoc)).allowed);
});

test('the cache is bounded by maxEntries', async (t) => {
  const { cache, engine } = await setup({ maxEntries: 10 });
  for (let i = 0; i < 50; i++) await engine.check({ user: `user:u${i}`, relation: 'viewer', object: `doc:${i}` });
  t.true(cache.stats().size <= 10);
});

test('maxEntries 0 or revisionPollMs 0 disables caching', async (t) => {
  for (const options of [{ maxEntries: 0 }, { revisionPollMs: 0 }]) {
    const { cache, engine } = await setup(options);
    t.false(cache.enabled);
    await engine.check(anneOnDoc);
    await engine.check(anneOnDoc);
    t.is(cache.stats().hits, 0);
    t.is(cache.stats().size, 0);
  }
});

test('cache options are validated', (t) => {
  const store = new MemoryStore();
  for (const bad of [{ store, bogus: 1 }, { store, maxEntries: -1 }, { store, revisionPollMs: 1.5 }, { store: {} }]) {
    const err = t.throws(() => new CheckCache(bad as never));
    t.true(err instanceof LatchkeyError);
    t.is((err as LatchkeyError).code, 'invalid_argument');
    t.is((err as LatchkeyError).reason, 'invalid_option');
  }
});

test('the cache passes the memory store synchronous reverse read through, and ListObjects behind it answers as without it', async (t) => {
  const { inner, cache, engine } = await setup();
  t.is(typeof (cache.store as { readStartingWithUsersSync?: unknown }).readStartingWithUsersSync, 'function');
  const plain = new Engine({ store: inner });
  await engine.write({
    writes: [
      { user: 'user:anne', relation: 'member', object: 'group:eng' },
      { user: 'group:eng#member', relation: 'viewer', object: 'doc:1' },
      { user: 'doc:1', relation: 'parent', object: 'doc:2' },
      { user: 'user:anne', relation: 'viewer', object: 'doc:3', condition: { name: 'in_hours' } },
      { user: 'user:bob', relation: 'viewer', object: 'doc:4' },
    ],
  });
  for (const context of [{ hour: 10 }, { hour: 20 }]) {
    const viaCache = await engine.listObjects({ user: 'user:anne', relation: 'viewer', type: 'doc', context });
    const direct = await plain.listObjects({ user: 'user:anne', relation: 'viewer', type: 'doc', context });
    t.deepEqual(viaCache, direct);
  }
  t.deepEqual((await engine.listObjects({ user: 'user:anne', relation: 'viewer', type: 'doc', context: { hour: 10 } })).objects, ['doc:1', 'doc:2', 'doc:3']);
});
