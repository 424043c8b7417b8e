import test from 'ava';
import fc from 'fast-check';
import { MemoryStore } from '../../engine/index.ts';
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
