/**
 * `Engine.checkSync`: the answer of `check` without a promise where it is at
 * hand synchronously (memory store, fresh graph mirror, cache hit), the same
 * errors, and `sync_unavailable` where a read or a model load is needed.
 * That it answers exactly as `check` on random models is the property "the
 * synchronous and asynchronous evaluators answer alike" in
 * engine.property.test.ts. `Engine.checkAtHand`: the answer of `check`, itself
 * where it is at hand and a promise where a read is needed.
 */
import test from 'ava';
import { CheckCache, Engine, GraphMirror, LatchkeyError, MemoryStore } from '../../engine/index.ts';
import { openSqlStore } from './sql_helpers.ts';

const MODEL = `model
  schema 1.1
type user
type group
  relations
    define member: [user, group#member]
type doc
  relations
    define parent: [doc]
    define blocked: [user]
    define viewer: [user, group#member, user with small] or viewer from parent
    define can_read: viewer but not blocked
condition small(x: int) {
  x < 5
}
`;

const TUPLES = [
  { object: 'group:eng', relation: 'member', user: 'user:anne' },
  { object: 'group:all', relation: 'member', user: 'group:eng#member' },
  { object: 'doc:root', relation: 'viewer', user: 'group:all#member' },
  { object: 'doc:a', relation: 'parent', user: 'doc:root' },
  { object: 'doc:a', relation: 'blocked', user: 'user:bob' },
  { object: 'doc:a', relation: 'viewer', user: 'user:bob' },
  { object: 'doc:b', relation: 'viewer', user: 'user:carl', condition: { name: 'small' } },
];

const QUERIES = [
  { user: 'user:anne', relation: 'viewer', object: 'doc:a' },
  { user: 'user:anne', relation: 'can_read', object: 'doc:a' },
  { user: 'user:bob', relation: 'viewer', object: 'doc:a' },
  { user: 'user:bob', relation: 'can_read', object: 'doc:a' },
  { user: 'user:dan', relation: 'viewer', object: 'doc:a' },
  { user: 'group:eng#member', relation: 'viewer', object: 'doc:a' },
  { user: 'user:carl', relation: 'viewer', object: 'doc:b', context: { x: 3 } },
  { user: 'user:carl', relation: 'viewer', object: 'doc:b', context: { x: 7 } },
  { user: 'user:dan', relation: 'viewer', object: 'doc:b', contextualTuples: [{ object: 'doc:b', relation: 'viewer', user: 'user:dan' }] },
];

/** An error as `code/reason` (anything but a LatchkeyError is rethrown). */
function described(err: unknown): string {
  if (!(err instanceof LatchkeyError)) throw err;
  return `${err.code}/${err.reason ?? ''}`;
}

/** The outcome of a synchronous call: the answer, or the error. */
function outcome(f: () => { allowed: boolean }): string {
  try {
    return String(f().allowed);
  } catch (err) {
    return described(err);
  }
}

/** The outcome of an asynchronous call. */
async function outcomeOf(f: () => Promise<{ allowed: boolean }>): Promise<string> {
  try {
    return String((await f()).allowed);
  } catch (err) {
    return described(err);
  }
}

async function memoryEngine(): Promise<{ engine: Engine; store: MemoryStore }> {
  const store = new MemoryStore();
  const engine = new Engine({ store });
  await engine.writeModel({ dsl: MODEL });
  await engine.write({ writes: TUPLES });
  return { engine, store };
}

test('on the memory store, checkSync answers every check as check does', async (t) => {
  const { engine } = await memoryEngine();
  for (const q of QUERIES) t.is(outcome(() => engine.checkSync(q)), await outcomeOf(() => engine.check(q)), JSON.stringify(q));
  t.true(engine.checkSync(QUERIES[0]!).allowed);
  t.false(engine.checkSync(QUERIES[3]!).allowed);
  t.true(engine.checkSync(QUERIES[8]!).allowed, 'contextual tuples are honoured');
});

test('checkSync reports invalid input with the errors check gives', async (t) => {
  const { engine } = await memoryEngine();
  const bad = [
    { user: 'user:anne', relation: 'viewer', object: 'doc:*' },
    { user: 'user:anne', relation: 'viewer', object: 'nope:a' },
    { user: 'user:anne', relation: 'owner', object: 'doc:a' },
    { user: 'robot:x', relation: 'viewer', object: 'doc:a' },
    { user: 'user:anne', relation: 'viewer', object: 'doc:b' },
    { user: 'user:anne', relation: 'viewer', object: 'doc:a', context: 'x' as never },
    { user: 'user:anne', relation: 'viewer', object: 'doc:a', modelId: 'not-a-ulid' },
    { user: 'user:anne', relation: 'viewer', object: 'doc:a', contextualTuples: [{ object: 'doc:a', relation: 'nope', user: 'user:anne' }] },
  ];
  for (const q of bad) {
    const sync = outcome(() => engine.checkSync(q));
    t.is(sync, await outcomeOf(() => engine.check(q)), JSON.stringify(q));
    t.not(sync, 'true');
  }
  // The condition needs `x`: both answer with the same evaluation error.
  t.regex(outcome(() => engine.checkSync(bad[4]!)), /^(false|invalid_argument\/)/u);
  t.is(outcome(() => engine.checkSync(null as never)), 'invalid_argument/invalid_check_input');
});

test('checks the direct walk declines (a userset user, a relation that is not monotone) answer and fail alike on check, checkSync and batchCheck', async (t) => {
  const { engine } = await memoryEngine();
  // batchCheck never takes the walk: it validates and resolves each check on the general path.
  const cases: [{ user: string; relation: string; object: string }, string][] = [
    [{ user: 'group:eng#member', relation: 'viewer', object: 'doc:a' }, 'true'],
    [{ user: 'group:all#member', relation: 'viewer', object: 'doc:b' }, 'false'],
    [{ user: 'user:anne', relation: 'can_read', object: 'doc:a' }, 'true'],
    [{ user: 'user:bob', relation: 'can_read', object: 'doc:a' }, 'false'],
    [{ user: 'group:eng#member', relation: 'can_read', object: 'doc:a' }, 'true'],
    [{ user: 'group:eng#nope', relation: 'viewer', object: 'doc:a' }, 'invalid_argument/relation_not_found'],
    [{ user: 'robot:x#member', relation: 'viewer', object: 'doc:a' }, 'invalid_argument/type_not_found'],
    [{ user: 'robot:x', relation: 'can_read', object: 'doc:a' }, 'invalid_argument/type_not_found'],
    [{ user: 'user:', relation: 'can_read', object: 'doc:a' }, 'invalid_argument/invalid_user'],
    [{ user: 'group:eng#member', relation: 'owner', object: 'doc:a' }, 'invalid_argument/relation_not_found'],
    [{ user: 'user:anne', relation: 'can_read', object: 'doc:*' }, 'invalid_argument/invalid_object'],
  ];
  const batch = await engine.batchCheck(cases.map(([q]) => q));
  for (const [i, [q, want]] of cases.entries()) {
    const name = JSON.stringify(q);
    t.is(await outcomeOf(() => engine.check(q)), want, `check ${name}`);
    t.is(outcome(() => engine.checkSync(q)), want, `checkSync ${name}`);
    const b = batch[i]!;
    t.is(b.error === undefined ? String(b.allowed) : described(b.error), want, `batchCheck ${name}`);
  }
});

test('checkSync needs the model loaded in the engine; loadModel loads it', async (t) => {
  const { store } = await memoryEngine();
  const fresh = new Engine({ store });
  t.is(outcome(() => fresh.checkSync(QUERIES[0]!)), 'failed_precondition/sync_unavailable');
  const id = await fresh.loadModel();
  t.is(id, (await store.latestModelId())!);
  t.true(fresh.checkSync(QUERIES[0]!).allowed);
  t.true(fresh.checkSync({ ...QUERIES[0]!, modelId: id }).allowed);
  const empty = new Engine({ store: new MemoryStore() });
  await t.throwsAsync(empty.loadModel(), { instanceOf: LatchkeyError, message: /no authorization model/u });
});

test('on a SQL store checkSync answers only where no read is needed: a fresh mirror or a cache hit', async (t) => {
  const opened = await openSqlStore('sqlite');
  t.teardown(() => opened.teardown());
  const direct = new Engine({ store: opened.store });
  await direct.writeModel({ dsl: MODEL });
  await direct.write({ writes: TUPLES });
  t.is(outcome(() => direct.checkSync(QUERIES[0]!)), 'failed_precondition/sync_unavailable', 'the SQL store reads asynchronously');
  t.true((await direct.check(QUERIES[0]!)).allowed);

  const mirror = await GraphMirror.load({ store: opened.store, revisionPollMs: 60_000 });
  const mirrored = new Engine({ store: mirror.store, resolver: mirror.resolver() });
  await mirrored.loadModel();
  for (const q of QUERIES) t.is(outcome(() => mirrored.checkSync(q)), await outcomeOf(() => direct.check(q)), JSON.stringify(q));
  t.is(outcome(() => mirrored.checkSync({ ...QUERIES[0]!, consistency: 'higher_consistency' })), 'failed_precondition/sync_unavailable', 'full consistency reads the database');

  const cache = new CheckCache({ store: opened.store, revisionPollMs: 60_000 });
  const cached = new Engine({ store: cache.store, resolver: cache.resolver() });
  await cached.loadModel();
  t.is(outcome(() => cached.checkSync(QUERIES[0]!)), 'failed_precondition/sync_unavailable', 'a miss needs a read');
  t.true((await cached.check(QUERIES[0]!)).allowed);
  t.true(cached.checkSync(QUERIES[0]!).allowed, 'a hit is answered');
  // A revoke through the cached engine is seen by the next synchronous check.
  await cached.write({ deletes: [{ object: 'group:eng', relation: 'member', user: 'user:anne' }] });
  t.is(outcome(() => cached.checkSync(QUERIES[0]!)), 'failed_precondition/sync_unavailable', 'the revoke made the cached answer invisible');
  t.false((await cached.check(QUERIES[0]!)).allowed);
  t.false(cached.checkSync(QUERIES[0]!).allowed);
});

test('answers are frozen: a caller that tries to change its answer cannot change the next caller\'s, on check and checkSync, cold and cached', async (t) => {
  const { engine, store } = await memoryEngine();
  const cache = new CheckCache({ store, maxEntries: 100, revisionPollMs: 3_600_000 });
  const cached = new Engine({ store: cache.store, resolver: cache.resolver() });
  for (const e of [engine, cached]) {
    for (const q of QUERIES.slice(0, 5)) {
      const expected = (await engine.check(q)).allowed;
      for (const answer of [await e.check(q), e.checkSync(q)]) {
        t.true(Object.isFrozen(answer));
        t.throws(() => ((answer as { allowed: boolean }).allowed = !expected), { instanceOf: TypeError });
        t.is(answer.allowed, expected);
      }
      t.is((await e.check(q)).allowed, expected);
      t.is(e.checkSync(q).allowed, expected);
    }
  }
});

/** The outcome of `checkAtHand`: its answer (awaited when it is a promise) or its error, and whether a promise came back. */
async function atHand(engine: Engine, q: Parameters<Engine['check']>[0]): Promise<{ outcome: string; promise: boolean }> {
  let r: ReturnType<Engine['checkAtHand']>;
  try {
    r = engine.checkAtHand(q);
  } catch (err) {
    return { outcome: described(err), promise: false };
  }
  if (!(r instanceof Promise)) return { outcome: String(r.allowed), promise: false };
  return { outcome: await outcomeOf(() => r as Promise<{ allowed: boolean }>), promise: true };
}

test('checkAtHand answers as check does, with the answer itself where check has it at hand, a promise where a read is needed', async (t) => {
  const { engine } = await memoryEngine();
  const bad = [
    { user: 'user:anne', relation: 'viewer', object: 'doc:*' },
    { user: 'user:anne', relation: 'owner', object: 'doc:a' },
    { user: 'robot:x', relation: 'viewer', object: 'doc:a' },
    { user: 'user:anne', relation: 'viewer', object: 'doc:a', modelId: 'not-a-ulid' },
    { user: 'user:anne', relation: 'viewer', object: 'doc:a', atLeastRevision: -1 },
  ];
  for (const q of [...QUERIES, ...bad]) t.is((await atHand(engine, q)).outcome, await outcomeOf(() => engine.check(q)), JSON.stringify(q));
  // The memory store has direct answers at hand once the model is loaded.
  t.deepEqual(await atHand(engine, QUERIES[0]!), { outcome: 'true', promise: false });

  const opened = await openSqlStore('sqlite');
  t.teardown(() => opened.teardown());
  const cache = new CheckCache({ store: opened.store, revisionPollMs: 60_000 });
  const cached = new Engine({ store: cache.store, resolver: cache.resolver() });
  await cached.writeModel({ dsl: MODEL });
  await cached.write({ writes: TUPLES });
  await cached.loadModel();
  t.deepEqual(await atHand(cached, QUERIES[0]!), { outcome: 'true', promise: true }, 'a miss reads the database');
  t.deepEqual(await atHand(cached, QUERIES[0]!), { outcome: 'true', promise: false }, 'a hit is the answer itself');
  await cached.write({ deletes: [{ object: 'group:eng', relation: 'member', user: 'user:anne' }] });
  t.deepEqual(await atHand(cached, QUERIES[0]!), { outcome: 'false', promise: true }, 'a revoke is seen by the next check');
  t.deepEqual(await atHand(cached, QUERIES[0]!), { outcome: 'false', promise: false });
  for (const q of QUERIES) t.is((await atHand(cached, q)).outcome, await outcomeOf(() => cached.check(q)), `cached ${JSON.stringify(q)}`);
});
