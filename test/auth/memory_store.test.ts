import test from 'ava';
import { randomBytes } from 'node:crypto';
import { DynamoMemoryStore, InProcessMemoryStore, RedisMemoryStore, type MemoryStore } from '../../auth/index.ts';
import { createTestDynamo, type TestDynamo } from '../helpers/dynamodb.ts';
import { createTestDatabase, redisUrl } from '../helpers/databases.ts';
import { STRONG_PASSWORD, errorOf, makeService } from './fixtures.ts';

const stores: Array<[string, () => MemoryStore | Promise<MemoryStore>]> = [['in-process', () => new InProcessMemoryStore()]];
const redis = redisUrl();
if (redis) stores.push(['redis', () => new RedisMemoryStore({ url: redis, keyPrefix: `lk_test_${randomBytes(4).toString('hex')}:` })]);
const dynamos: TestDynamo[] = [];
stores.push([
  'dynamodb',
  async () => {
    const d = await createTestDynamo();
    dynamos.push(d);
    const store = new DynamoMemoryStore({ db: d.db });
    await store.init();
    return store;
  },
]);
test.after.always(async () => {
  for (const d of dynamos) await d.drop();
});

for (const [name, make] of stores) {
  test(`memory store contract (${name}): get/set/setIfAbsent/compareAndSet/del/incr/ttl/sets`, async (t) => {
    const s = await make();
    try {
      t.is(await s.get('a'), undefined);
      await s.set('a', '1', 60);
      t.is(await s.get('a'), '1');
      t.false(await s.setIfAbsent('a', '2', 60));
      t.true(await s.setIfAbsent('b', '2', 60));
      t.false(await s.compareAndSet('a', 'x', 'y', 60));
      t.true(await s.compareAndSet('a', '1', '3', 60));
      t.is(await s.get('a'), '3');
      t.false(await s.compareAndSet('missing', '1', '2', 60));
      t.is(await s.del('a', 'b', 'nothing'), 2);
      t.is(await s.incr('n', 100), 1);
      t.is(await s.incr('n', 100), 2);
      const ttl = await s.ttl('n');
      t.true(ttl > 0 && ttl <= 100);
      t.is(await s.ttl('absent'), 0);
      await s.addToSet('set', 'x', 60);
      await s.addToSet('set', 'y', 60);
      await s.removeFromSet('set', 'x');
      t.deepEqual(await s.members('set'), ['y']);
      t.deepEqual(await s.members('none'), []);
      // compareAndSet is atomic under concurrency: exactly one of 20 racers wins.
      await s.set('cas', 'v0', 60);
      const wins = await Promise.all(Array.from({ length: 20 }, (_, i) => s.compareAndSet('cas', 'v0', `v${i + 1}`, 60)));
      t.is(wins.filter(Boolean).length, 1);
      const counts = await Promise.all(Array.from({ length: 20 }, () => s.incr('race', 60)));
      t.deepEqual([...counts].sort((a, b) => a - b), Array.from({ length: 20 }, (_, i) => i + 1));
      await s.del('n', 'set', 'cas', 'race');
    } finally {
      await s.close();
    }
  });
}

test('DynamoDB memory store: an expired key is absent to every operation, and a new window starts after it', async (t) => {
  const d = await createTestDynamo();
  let now = 1_700_000_000_000;
  const s = new DynamoMemoryStore({ db: d.db, now: () => now });
  try {
    await s.init();
    await s.set('k', 'v', 10);
    t.is(await s.incr('c', 10), 1);
    await s.addToSet('set', 'old', 10);
    now += 9_000;
    t.is(await s.get('k'), 'v');
    t.is(await s.ttl('k'), 1);
    now += 1_000;
    t.is(await s.get('k'), undefined, 'gone at its expiry');
    t.is(await s.ttl('k'), 0);
    t.false(await s.compareAndSet('k', 'v', 'w', 10), 'an expired value cannot be swapped');
    t.true(await s.setIfAbsent('k', 'new', 10), 'an expired key counts as absent');
    t.is(await s.incr('c', 10), 1, 'the counter starts a new window');
    await s.addToSet('set', 'fresh', 10);
    t.deepEqual(await s.members('set'), ['fresh'], 'an expired set starts empty');
    t.is(await s.del('set', 'gone'), 1);
  } finally {
    await d.drop();
  }
});

if (redis) {
  test('two server instances sharing Redis and one database share sessions: login on one, use and logout on the other', async (t) => {
    const db = await createTestDatabase('sqlite', 'lk_auth');
    const prefix = `lk_test_${randomBytes(4).toString('hex')}:`;
    const a = await makeService({}, { databaseUrl: db.url, store: new RedisMemoryStore({ url: redis, keyPrefix: prefix }) });
    const b = await makeService({}, { databaseUrl: db.url, store: new RedisMemoryStore({ url: redis, keyPrefix: prefix }) });
    try {
      const s = await a.auth.signup({ email: 'shared@example.com', password: STRONG_PASSWORD });
      const onB = await b.auth.authenticate({ bearer: s.response.access_token });
      t.is(onB?.userId, s.response.user?.id);
      t.truthy(await b.auth.authenticate({ cookies: { cookie_session: s.session!.token } }));
      // Refresh rotation is shared too: B rotates, A sees the replay.
      const r = await b.auth.refresh(s.response.refresh_token!);
      t.is((await errorOf(a.auth.refresh(s.response.refresh_token!))).reason, 'refresh_token_reused');
      await b.auth.logout({ principal: onB! });
      t.is((await errorOf(a.auth.authenticate({ bearer: r.access_token }))).code, 'unauthenticated');
      t.is((await errorOf(a.auth.authenticate({ cookies: { cookie_session: s.session!.token } }))).code, 'unauthenticated');
      // Lockout counters are shared across processes as well.
      for (let i = 0; i < 3; i++) await errorOf(a.auth.login({ email: 'shared@example.com', password: 'wrong wrong wrong' }));
      for (let i = 0; i < 2; i++) await errorOf(b.auth.login({ email: 'shared@example.com', password: 'wrong wrong wrong' }));
      t.is((await errorOf(a.auth.login({ email: 'shared@example.com', password: STRONG_PASSWORD }))).reason, 'too_many_attempts');
    } finally {
      await a.store.close();
      await b.store.close();
      await a.close();
      await b.close();
      await db.drop();
    }
  });

  test('Redis unreachable: session validation fails closed with unavailable, never accepts', async (t) => {
    const good = await makeService();
    const s = await good.auth.signup({ email: 'closed@example.com', password: STRONG_PASSWORD });
    const dead = new RedisMemoryStore({ url: 'redis://127.0.0.1:1', keyPrefix: 'lk_dead:' });
    const f = await makeService({}, { store: dead });
    try {
      const err = await errorOf(f.auth.authenticate({ cookies: { cookie_session: 'anything' } }));
      t.is(err.code, 'unavailable');
      const err2 = await errorOf(f.auth.authenticate({ bearer: s.response.access_token }));
      t.is(err2.code, 'unavailable');
    } finally {
      await dead.close();
      await f.close();
      await good.close();
    }
  });
}
