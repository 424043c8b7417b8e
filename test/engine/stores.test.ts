/**
 * The engine's stores API on the memory store: createStore / readStore /
 * listStores / deleteStore, engines per store (forStore) that share nothing
 * but the backend, assertions per model version, and the errors of each.
 */
import test from 'ava';
import { DEFAULT_STORE_ID, Engine, LatchkeyError, MemoryStore, type TupleStore } from '../../engine/index.ts';

const DSL = 'model\n  schema 1.1\ntype user\ntype doc\n  relations\n    define viewer: [user]\n';

function code(err: unknown): string {
  return err instanceof LatchkeyError ? `${err.code}/${err.reason ?? ''}` : `not a LatchkeyError: ${String(err)}`;
}

test('engine: stores are created, read, listed and deleted; each has its own models and tuples', async (t) => {
  const engine = new Engine();
  t.is(engine.storeId, DEFAULT_STORE_ID);
  await engine.writeModel({ dsl: DSL });
  await engine.write({ writes: [{ user: 'user:anne', relation: 'viewer', object: 'doc:1' }] });

  const a = await engine.createStore({ name: 'tenant a' });
  t.regex(a.id, /^[0-7][0-9A-HJKMNP-TV-Z]{25}$/);
  t.deepEqual(await engine.readStore(a.id), a);
  t.is(await engine.readStore('not a ulid'), undefined);
  const b = await engine.createStore({ name: 'tenant b' });
  t.deepEqual((await engine.listStores()).stores.map((s) => s.id), [DEFAULT_STORE_ID, a.id, b.id]);
  t.deepEqual((await engine.listStores({ name: 'tenant b' })).stores.map((s) => s.id), [b.id]);
  const page = await engine.listStores({ pageSize: 2 });
  t.is(page.stores.length, 2);
  t.deepEqual((await engine.listStores({ pageSize: 2, continuationToken: page.continuationToken })).stores.map((s) => s.id), [b.id]);

  const ea = engine.forStore(a.id);
  t.is(ea, engine.forStore(a.id));
  t.is(engine.forStore(DEFAULT_STORE_ID), engine);
  t.is(ea.storeId, a.id);
  t.is(await ea.readModel(), undefined);
  t.is(code(await t.throwsAsync(ea.check({ user: 'user:anne', relation: 'viewer', object: 'doc:1' }))), 'failed_precondition/model_not_found');
  await ea.writeModel({ dsl: DSL });
  t.false((await ea.check({ user: 'user:anne', relation: 'viewer', object: 'doc:1' })).allowed);
  await ea.write({ writes: [{ user: 'user:bob', relation: 'viewer', object: 'doc:1' }] });
  t.true((await ea.check({ user: 'user:bob', relation: 'viewer', object: 'doc:1' })).allowed);
  t.false((await engine.check({ user: 'user:bob', relation: 'viewer', object: 'doc:1' })).allowed);
  t.deepEqual((await ea.listObjects({ user: 'user:bob', relation: 'viewer', type: 'doc' })).objects, ['doc:1']);
  t.deepEqual((await engine.listObjects({ user: 'user:bob', relation: 'viewer', type: 'doc' })).objects, []);

  await engine.deleteStore(a.id);
  t.is(await engine.readStore(a.id), undefined);
  t.is(code(await t.throwsAsync(engine.forStore(a.id).check({ user: 'user:bob', relation: 'viewer', object: 'doc:1' }))), 'not_found/store_not_found');
  t.is(code(await t.throwsAsync(engine.deleteStore(a.id))), 'not_found/store_not_found');
  t.is(code(await t.throwsAsync(engine.deleteStore(DEFAULT_STORE_ID))), 'failed_precondition/default_store');
  t.is(code(await t.throwsAsync(engine.deleteStore('x'))), 'not_found/store_not_found');
  t.true((await engine.check({ user: 'user:anne', relation: 'viewer', object: 'doc:1' })).allowed);
});

test('engine: store names and options are validated', async (t) => {
  const engine = new Engine();
  t.is(code(await t.throwsAsync(engine.createStore({ name: '' }))), 'invalid_argument/invalid_store_name');
  t.is(code(await t.throwsAsync(engine.createStore({ name: 'a\u0000b' }))), 'invalid_argument/invalid_store_name');
  t.is(code(await t.throwsAsync(engine.createStore({ name: 'x'.repeat(257) }))), 'invalid_argument/invalid_store_name');
  t.is(code(await t.throwsAsync(engine.listStores({ pageSize: 101 }))), 'invalid_argument/invalid_page_size');
  t.is(code(await t.throwsAsync(engine.listStores({ continuationToken: 'nope' }))), 'invalid_argument/invalid_continuation_token');
  t.is(code(t.throws(() => engine.forStore('lower-case-is-not-an-id'))), 'not_found/store_not_found');
});

test('engine: a tuple store without a catalog serves its one store and refuses the others', async (t) => {
  const inner = new MemoryStore();
  // A single-store implementation: every TupleStore member except the optional ones.
  const single = new Proxy(inner, {
    get(target, prop) {
      if (prop === 'catalog' || prop === 'writeAssertions' || prop === 'readAssertions' || prop === 'storeId') return undefined;
      const v = Reflect.get(target, prop, target) as unknown;
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  }) as TupleStore;
  const engine = new Engine({ store: single });
  t.is(engine.storeId, DEFAULT_STORE_ID);
  await engine.writeModel({ dsl: DSL });
  t.false((await engine.check({ user: 'user:anne', relation: 'viewer', object: 'doc:1' })).allowed);
  t.is(code(await t.throwsAsync(engine.createStore({ name: 'other' }))), 'unimplemented/stores_unsupported');
  t.is(code(await t.throwsAsync(engine.readAssertions((await engine.readModel())!.id))), 'unimplemented/assertions_unsupported');
});

test('engine: read tells when each tuple was written, when asked', async (t) => {
  let now = 1_700_000_000_000;
  const engine = new Engine({ store: new MemoryStore({ now: () => now }) });
  await engine.writeModel({ dsl: DSL });
  await engine.write({ writes: [{ user: 'user:anne', relation: 'viewer', object: 'doc:1' }] });
  now += 5000;
  await engine.write({ writes: [{ user: 'user:bob', relation: 'viewer', object: 'doc:1' }] });
  const page = await engine.read({ object: 'doc:1' }, { writtenAt: true });
  t.deepEqual(page.tuples.map((x) => x.user), ['user:anne', 'user:bob']);
  t.deepEqual(page.writtenAt, [1_700_000_000_000, 1_700_000_005_000]);
  t.false('writtenAt' in (await engine.read({ object: 'doc:1' })));
});

test('engine: assertions are kept per model version and validated against it', async (t) => {
  const engine = new Engine();
  const m1 = await engine.writeModel({ dsl: DSL });
  const m2 = await engine.writeModel({ dsl: DSL });
  await engine.writeAssertions(m1.id, [
    { tupleKey: { user: 'user:anne', relation: 'viewer', object: 'doc:1' }, expectation: true },
    { tupleKey: { user: 'user:bob', relation: 'viewer', object: 'doc:1' }, expectation: false, contextualTuples: [{ user: 'user:bob', relation: 'viewer', object: 'doc:2' }], context: { x: 1 } },
  ]);
  t.deepEqual((await engine.readAssertions(m1.id)).map((a) => [a.tupleKey.user, a.expectation, a.contextualTuples?.length ?? 0, a.context]), [
    ['user:anne', true, 0, undefined],
    ['user:bob', false, 1, { x: 1 }],
  ]);
  t.deepEqual(await engine.readAssertions(m2.id), []);
  await engine.writeAssertions(m1.id, []);
  t.deepEqual(await engine.readAssertions(m1.id), []);
  t.is(code(await t.throwsAsync(engine.readAssertions('01ARZ3NDEKTSV4RRFFQ69G5FAV'))), 'not_found/model_not_found');
  t.is(code(await t.throwsAsync(engine.writeAssertions(m1.id, [{ tupleKey: { user: 'user:anne', relation: 'nope', object: 'doc:1' }, expectation: true }]))), 'invalid_argument/relation_not_found');
  const many = Array.from({ length: 101 }, () => ({ tupleKey: { user: 'user:anne', relation: 'viewer', object: 'doc:1' }, expectation: true }));
  t.is(code(await t.throwsAsync(engine.writeAssertions(m1.id, many))), 'invalid_argument/too_many_assertions');
});
