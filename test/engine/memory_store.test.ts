import test from 'ava';
import fc from 'fast-check';
import { Engine, MemoryStore } from '../../engine/index.ts';
import type { TupleKey } from '../../engine/store.ts';
import { runStoreSuite } from '../conformance/store_suite.ts';

runStoreSuite(test, 'memory', () => new MemoryStore());

test('memory store: a closed store refuses calls with unavailable', async (t) => {
  const s = new MemoryStore();
  await s.close();
  const err = await t.throwsAsync(s.revision());
  t.is((err as { code?: string }).code, 'unavailable');
});

test('memory store: the synchronous reverse read gives the rows of readStartingWithUsers, with conditions, after writes and deletes', async (t) => {
  await fc.assert(
    fc.asyncProperty(
      fc.array(
        fc.record({
          type: fc.constantFrom('doc', 'folder'),
          id: fc.constantFrom('1', '2', '3', 'a:b'),
          relation: fc.constantFrom('viewer', 'owner'),
          user: fc.constantFrom('user:a', 'user:b', 'user:*', 'group:g#member', 'folder:1', 'folder:1#viewer'),
          cond: fc.constantFrom(undefined, 'c1', 'c2'),
          keep: fc.boolean(),
        }),
        { maxLength: 40 },
      ),
      fc.subarray(['user:a', 'user:b', 'user:*', 'group:g#member', 'folder:1', 'folder:1#viewer', 'user:none']),
      async (rows, users) => {
        const s = new MemoryStore();
        const byKey = new Map<string, TupleKey>();
        for (const r of rows) {
          const tk: TupleKey = { object: `${r.type}:${r.id}`, relation: r.relation, user: r.user };
          if (r.cond !== undefined) tk.condition = { name: r.cond, context: { x: r.id } };
          byKey.set(`${tk.object}#${tk.relation}@${tk.user}`, tk);
        }
        const all = [...byKey.values()];
        await s.write([], all);
        const dropped = all.filter((_, i) => !rows[i % rows.length]!.keep);
        await s.write(dropped, []);
        // Written again without their conditions: a condition must not outlive its tuple.
        await s.write([], dropped.filter((_, i) => i % 2 === 0).map((x) => ({ object: x.object, relation: x.relation, user: x.user })));
        for (const objectType of ['doc', 'folder']) {
          for (const relation of ['viewer', 'owner', 'missing']) {
            const expected = (await s.readStartingWithUsers({ objectType, relation, users })).map((x) => `${x.object}@${x.user}|${JSON.stringify(x.condition ?? null)}`);
            const got: string[] = [];
            s.readStartingWithUsersSync(objectType, relation, users, (i, id, condition) => got.push(`${objectType}:${id}@${users[i]!}|${JSON.stringify(condition ?? null)}`));
            t.deepEqual(got.sort(), expected.sort());
          }
        }
      },
    ),
    { numRuns: 150 },
  );
});

// Compaction (MemoryStore.write folds the index's map-held users into sorted runs once at least 4096 are
// held in maps and at least as many as in runs): triggered by the store's own write and by Engine.write,
// and invisible in every answer.

type Expected = Map<string, { revision: number; condition?: string }>;

const line = (t: { object: string; relation: string; user: string; revision: number; condition?: { name: string } | undefined }): string =>
  `${t.object}#${t.relation}@${t.user}|${t.revision}|${t.condition?.name ?? ''}`;

async function writeAll(s: MemoryStore, expected: Expected, tuples: TupleKey[], batch = 1000): Promise<void> {
  for (let i = 0; i < tuples.length; i += batch) {
    const chunk = tuples.slice(i, i + batch);
    const revision = await s.write([], chunk);
    for (const t of chunk) expected.set(`${t.object}#${t.relation}@${t.user}`, { revision, ...(t.condition === undefined ? {} : { condition: t.condition.name }) });
  }
}

/** Every read path of the store against the expected tuples. */
async function assertReads(t: import('ava').ExecutionContext, s: MemoryStore, expected: Expected): Promise<void> {
  const want = [...expected].map(([k, v]) => `${k}|${v.revision}|${v.condition ?? ''}`).sort();
  const paged: string[] = [];
  let token: string | undefined;
  do {
    const page = await s.readPage({}, { pageSize: 1000, continuationToken: token });
    paged.push(...page.items.map(line));
    token = page.continuationToken;
  } while (token !== undefined);
  t.deepEqual(paged.sort(), want, 'readPage');
  const objects = [...new Set([...expected.keys()].map((k) => k.slice(0, k.indexOf('#'))))];
  const keys = objects.map((o) => ({ objectType: o.split(':')[0]!, objectId: o.split(':')[1]!, relation: 'viewer' }));
  const all = (await s.readObjectRelations(keys, 'all')).flat().map(line).sort();
  t.deepEqual(all, want, 'readObjectRelations all');
  const usersets = (await s.readObjectRelations(keys, 'usersets')).flat().map(line).sort();
  t.deepEqual(usersets, want.filter((w) => w.includes('#member|')), 'readObjectRelations usersets');
  const points = [...expected.keys()].map((k) => {
    const [object, rest] = k.split('#viewer@') as [string, string];
    const [objectType, objectId] = object.split(':') as [string, string];
    return { objectType, objectId, relation: 'viewer', user: rest };
  });
  const got = await s.readUserTuples([...points, { objectType: 'doc', objectId: '1', relation: 'viewer', user: 'user:absent' }]);
  t.deepEqual(got.slice(0, -1).map((x) => (x === undefined ? 'missing' : line(x))).sort(), want, 'readUserTuples');
  t.is(got.at(-1), undefined, 'readUserTuples of an absent tuple');
  for (const p of points.filter((_, i) => i % 97 === 0)) {
    const x = s.readUserTupleSync(p.objectType, p.objectId, p.relation, p.user);
    t.is(x === undefined ? 'missing' : line(x), `${p.objectType}:${p.objectId}#viewer@${p.user}|${expected.get(`${p.objectType}:${p.objectId}#viewer@${p.user}`)!.revision}|${expected.get(`${p.objectType}:${p.objectId}#viewer@${p.user}`)!.condition ?? ''}`);
  }
  const reverse = await s.readStartingWithUsers({ objectType: 'doc', relation: 'viewer', users: ['user:7', 'group:g#member'] });
  const reverseWant = want.filter((w) => w.includes('#viewer@user:7|') || w.includes('#viewer@group:g#member|'));
  t.deepEqual(reverse.map(line).sort(), reverseWant, 'readStartingWithUsers');
}

test('memory store: a write that brings 4096 users into the index maps compacts them into runs, and every read answers the same', async (t) => {
  const s = new MemoryStore();
  const expected: Expected = new Map();
  const tuples: TupleKey[] = [];
  for (let i = 0; i < 4093; i++) {
    const tk: TupleKey = { object: 'doc:1', relation: 'viewer', user: `user:${i}` };
    if (i % 100 === 0) tk.condition = { name: 'c', context: { i } };
    tuples.push(tk);
  }
  tuples.push({ object: 'doc:1', relation: 'viewer', user: 'user:*' }, { object: 'doc:1', relation: 'viewer', user: 'group:g#member' });
  await writeAll(s, expected, tuples);
  t.deepEqual(s.stats(), { tuples: 4095, mapHeld: 4095, runHeld: 0 }, 'below 4096 map-held users nothing is compacted');
  await assertReads(t, s, expected);

  await writeAll(s, expected, [{ object: 'doc:1', relation: 'viewer', user: 'user:last' }]);
  t.deepEqual(s.stats(), { tuples: 4096, mapHeld: 0, runHeld: 4096 }, 'the 4096th map-held user compacts');
  await assertReads(t, s, expected);

  // A write to the compacted node moves it back into maps; answers stay the same, the counts stay whole.
  const revision = await s.write([{ object: 'doc:1', relation: 'viewer', user: 'user:5' }], [{ object: 'doc:1', relation: 'viewer', user: 'user:new' }]);
  expected.delete('doc:1#viewer@user:5');
  expected.set('doc:1#viewer@user:new', { revision });
  const after = s.stats();
  t.is(after.tuples, 4096);
  t.is(after.mapHeld + after.runHeld, 4096);
  await assertReads(t, s, expected);
});

test('memory store: compaction waits until the map-held users are at least as many as those in runs', async (t) => {
  const s = new MemoryStore();
  const expected: Expected = new Map();
  const range = (object: string, n: number): TupleKey[] => Array.from({ length: n }, (_, i) => ({ object, relation: 'viewer', user: `user:${i}` }));
  await writeAll(s, expected, range('doc:1', 9000), 9000);
  t.deepEqual(s.stats(), { tuples: 9000, mapHeld: 0, runHeld: 9000 });
  await writeAll(s, expected, range('doc:2', 4096));
  t.deepEqual(s.stats(), { tuples: 13096, mapHeld: 4096, runHeld: 9000 }, '4096 in maps but fewer than in runs: not compacted');
  await assertReads(t, s, expected);
  await writeAll(s, expected, range('doc:3', 4903));
  t.deepEqual(s.stats(), { tuples: 17999, mapHeld: 8999, runHeld: 9000 }, 'one short of as many: not compacted');
  await writeAll(s, expected, [{ object: 'doc:3', relation: 'viewer', user: 'user:last' }]);
  t.deepEqual(s.stats(), { tuples: 18000, mapHeld: 0, runHeld: 18000 }, 'as many in maps as in runs: compacted');
  await assertReads(t, s, expected);
});

test('memory store: Engine.write compacts the store index once 4096 users are map-held, and check, read and listObjects answer the same', async (t) => {
  const store = new MemoryStore();
  const engine = new Engine({ store, maxTuplesPerWrite: 1000 });
  await engine.writeModel({
    dsl: 'model\n  schema 1.1\ntype user\ntype group\n  relations\n    define member: [user]\ntype doc\n  relations\n    define viewer: [user, group#member]\n',
  });
  await engine.write({ writes: [{ object: 'group:g', relation: 'member', user: 'user:alice' }, { object: 'group:g', relation: 'member', user: 'user:bob' }] });
  const viewers: TupleKey[] = [{ object: 'doc:1', relation: 'viewer', user: 'group:g#member' }];
  for (let i = 0; i < 4095; i++) viewers.push({ object: 'doc:1', relation: 'viewer', user: `user:${i}` });
  const last = viewers.splice(4000);
  for (let i = 0; i < viewers.length; i += 1000) await engine.write({ writes: viewers.slice(i, i + 1000) });
  t.deepEqual(store.stats(), { tuples: 4002, mapHeld: 4002, runHeld: 0 });

  const probe = ['user:0', 'user:1234', 'user:3998', 'user:alice', 'user:bob', 'user:carol', 'user:4000', 'user:4094'];
  const answers = async (): Promise<Record<string, unknown>> => {
    const out: Record<string, unknown> = {};
    for (const user of probe) {
      out[`check ${user}`] = (await engine.check({ user, relation: 'viewer', object: 'doc:1' })).allowed;
      out[`check ${user} higher_consistency`] = (await engine.check({ user, relation: 'viewer', object: 'doc:1', consistency: 'higher_consistency' })).allowed;
      out[`listObjects ${user}`] = (await engine.listObjects({ user, relation: 'viewer', type: 'doc' })).objects;
    }
    const read: string[] = [];
    let token = '';
    do {
      const page = await engine.read({ object: 'doc:1', relation: 'viewer' }, { pageSize: 100, continuationToken: token });
      read.push(...page.tuples.map((x) => x.user));
      token = page.continuationToken;
    } while (token !== '');
    out['read'] = read.sort();
    return out;
  };
  const before = await answers();
  t.is(before['check user:0'], true);
  t.is(before['check user:alice'], true);
  t.is(before['check user:carol'], false);
  t.is(before['check user:4000'], false);
  t.is((before['read'] as string[]).length, 4000);

  await engine.write({ writes: last });
  t.deepEqual(store.stats(), { tuples: 4098, mapHeld: 0, runHeld: 4098 }, 'Engine.write triggered the compaction');
  const after = await answers();
  // The tuples just written now hold; every other answer is what it was before compaction.
  t.is(after['check user:4000'], true);
  t.is(after['check user:4094'], true);
  t.deepEqual(after['listObjects user:4094'], ['doc:1']);
  t.deepEqual(after['read'], [...(before['read'] as string[]), ...last.map((x) => x.user)].sort());
  const unchanged = (o: Record<string, unknown>): Record<string, unknown> => Object.fromEntries(Object.entries(o).filter(([k]) => k !== 'read' && !k.includes('user:4000') && !k.includes('user:4094')));
  t.deepEqual(unchanged(after), unchanged(before));
});
