/**
 * The graph index's reverse index (engine/graph_index.ts): kept on every
 * write, or built at once after a bulk load (`reverse: 'deferred'`, then
 * `buildReverse`, as the graph mirror loads), it lists for each user exactly
 * the objects of the tuples present, with their conditions, through any later
 * writes and deletes.
 */
import test from 'ava';
import fc from 'fast-check';
import { GraphIndex } from '../../engine/graph_index.ts';
import { LatchkeyError, type TupleKey } from '../../engine/index.ts';

const OBJECTS = ['doc:a', 'doc:b', 'doc:c', 'folder:x', 'folder:y'];
const RELATIONS = ['viewer', 'parent'];
const USERS = ['user:1', 'user:2', 'user:*', 'folder:x', 'group:g#member', 'group:h#member'];

const tupleArb = fc.record({
  object: fc.constantFrom(...OBJECTS),
  relation: fc.constantFrom(...RELATIONS),
  user: fc.constantFrom(...USERS),
  cond: fc.option(fc.constantFrom('c1', 'c2'), { nil: undefined }),
});
type Gen = { object: string; relation: string; user: string; cond: string | undefined };
const key = (t: Gen): string => `${t.object}#${t.relation}@${t.user}`;
const toTuple = (t: Gen): TupleKey => (t.cond === undefined ? { object: t.object, relation: t.relation, user: t.user } : { object: t.object, relation: t.relation, user: t.user, condition: { name: t.cond } });

/** What a reverse read returns, as sorted `user|objectId|condition` lines. */
function read(index: GraphIndex, type: string, relation: string): string[] {
  const out: string[] = [];
  index.reverseRead(type, relation, USERS, (i, id, c) => out.push(`${USERS[i]!}|${id}|${c?.name ?? ''}`));
  return out.sort();
}

/** The same from the tuples themselves. */
function expected(tuples: Map<string, Gen>, type: string, relation: string): string[] {
  const out: string[] = [];
  for (const t of tuples.values()) {
    if (t.relation !== relation || !t.object.startsWith(`${type}:`)) continue;
    out.push(`${t.user}|${t.object.slice(type.length + 1)}|${t.cond ?? ''}`);
  }
  return out.sort();
}

test('reverse reads list exactly the tuples present, whether the reverse index is kept per write or built after a bulk load (property)', (t) => {
  fc.assert(
    fc.property(
      fc.array(tupleArb, { maxLength: 40 }),
      fc.array(fc.record({ add: fc.boolean(), tuple: tupleArb }), { maxLength: 40 }),
      (initial, ops) => {
        const present = new Map<string, Gen>();
        const kept = new GraphIndex();
        const bulk = new GraphIndex({ reverse: 'deferred' });
        for (const g of initial) {
          const added = kept.add(toTuple(g), 0);
          t.is(bulk.add(toTuple(g), 0), added);
          if (added) present.set(key(g), g);
        }
        bulk.buildReverse();
        for (const { add, tuple: g } of ops) {
          if (add) {
            const added = kept.add(toTuple(g), 1);
            t.is(bulk.add(toTuple(g), 1), added);
            if (added) present.set(key(g), g);
          } else {
            const deleted = kept.delete(toTuple(g));
            t.is(bulk.delete(toTuple(g)), deleted);
            if (deleted) present.delete(key(g));
          }
        }
        for (const type of ['doc', 'folder']) {
          for (const relation of RELATIONS) {
            const want = expected(present, type, relation);
            t.deepEqual(read(kept, type, relation), want);
            t.deepEqual(read(bulk, type, relation), want);
          }
        }
        for (const user of USERS) {
          for (const relation of RELATIONS) {
            const want = [...present.values()].filter((g) => g.user === user && g.relation === relation).map((g) => g.object).sort();
            for (const index of [kept, bulk]) {
              const got = [...(index.objectsOf(user, relation) ?? [])].map((o) => index.str(o)).sort();
              t.deepEqual(got, want);
            }
          }
        }
      },
    ),
  );
});

test('an index whose reverse index is deferred refuses reverse reads until it is built', (t) => {
  const index = new GraphIndex({ reverse: 'deferred' });
  index.add({ object: 'doc:a', relation: 'viewer', user: 'user:1' }, 0);
  const err = t.throws(() => index.reverseRead('doc', 'viewer', ['user:1'], () => undefined), { instanceOf: LatchkeyError });
  t.is(err?.code, 'internal');
  t.is(err?.reason, 'index_reverse_deferred');
  index.buildReverse();
  const got: string[] = [];
  index.reverseRead('doc', 'viewer', ['user:1'], (_, id) => got.push(id));
  t.deepEqual(got, ['a']);
});
