/**
 * The graph index (engine/graph/graph_index.ts), loaded tuple by tuple or in bulk
 * (`bulk: true`, then `finishBulk`, as the graph mirror loads): its forward
 * reads (a node's tuples, a tuple's revision) and reverse reads list exactly
 * the tuples present, with their conditions, through any later writes and
 * deletes, and after compactions (`compact`: map-held users moved into
 * runs) at any point, with each tuple's revision kept.
 */
import test from 'ava';
import fc from 'fast-check';
import { GraphIndex } from '../../engine/graph/graph_index.ts';
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

test('reads list exactly the tuples present, whether the index was loaded tuple by tuple or in bulk, through later writes, deletes and compactions (property)', (t) => {
  fc.assert(
    fc.property(
      fc.array(tupleArb, { maxLength: 40 }),
      fc.array(fc.record({ add: fc.boolean(), tuple: tupleArb, compact: fc.boolean() }), { maxLength: 40 }),
      (initial, ops) => {
        // A tuple staged twice in bulk keeps the last one: the same tuples one by one.
        const present = new Map<string, Gen & { revision: number }>();
        for (const g of initial) present.set(key(g), { ...g, revision: 0 });
        const kept = new GraphIndex();
        for (const g of present.values()) kept.add(toTuple(g), 0);
        const bulk = new GraphIndex({ bulk: true });
        for (const g of initial) bulk.add(toTuple(g), 0);
        bulk.finishBulk();
        t.is(bulk.size, present.size);
        // Compacted after the load and whenever an operation asks: the same answers and revisions.
        const compacted = new GraphIndex();
        for (const g of present.values()) compacted.add(toTuple(g), 0);
        compacted.compact();
        t.is(compacted.mapHeld, 0);
        let revision = 0;
        for (const { add, tuple: g, compact } of ops) {
          const k = key(g);
          revision++;
          if (add) {
            const added = kept.add(toTuple(g), revision);
            t.is(bulk.add(toTuple(g), revision), added);
            t.is(compacted.add(toTuple(g), revision), added);
            t.is(added, !present.has(k));
            if (added) present.set(k, { ...g, revision });
          } else {
            const deleted = kept.delete(toTuple(g));
            t.is(bulk.delete(toTuple(g)), deleted);
            t.is(compacted.delete(toTuple(g)), deleted);
            t.is(deleted, present.has(k));
            present.delete(k);
          }
          if (compact) {
            compacted.compact();
            t.is(compacted.mapHeld, 0);
          }
        }
        for (const index of [kept, bulk, compacted]) {
          t.is(index.size, present.size);
          for (const type of ['doc', 'folder']) for (const relation of RELATIONS) t.deepEqual(read(index, type, relation), expected(present, type, relation));
          for (const user of USERS) {
            for (const relation of RELATIONS) {
              const want = [...present.values()].filter((g) => g.user === user && g.relation === relation).map((g) => g.object).sort();
              t.deepEqual([...(index.objectsOf(user, relation) ?? [])].map((o) => index.str(o)).sort(), want);
            }
          }
          for (const object of OBJECTS) {
            for (const relation of RELATIONS) {
              const want = [...present.values()].filter((g) => g.object === object && g.relation === relation);
              const n = index.node(object, relation);
              const all: (TupleKey & { revision: number })[] = [];
              const sets: (TupleKey & { revision: number })[] = [];
              if (n !== undefined) {
                index.nodeTuples(index.id(object)!, index.relId(relation)!, n, 'all', all);
                index.nodeTuples(index.id(object)!, index.relId(relation)!, n, 'usersets', sets);
              }
              const line = (x: { user: string; revision: number; condition?: { name: string } | undefined; cond?: string | undefined }): string => `${x.user}|${x.revision}|${x.condition?.name ?? x.cond ?? ''}`;
              t.deepEqual(all.map(line).sort(), want.map(line).sort());
              t.deepEqual(sets.map(line).sort(), want.filter((g) => g.user.includes('#')).map(line).sort());
              for (const user of USERS) t.is(index.revisionOf(object, relation, user), present.get(`${object}#${relation}@${user}`)?.revision);
            }
          }
        }
      },
    ),
  );
});

test('an index loading in bulk refuses reads until the load is finished, and takes one revision', (t) => {
  const index = new GraphIndex({ bulk: true });
  index.add({ object: 'doc:a', relation: 'viewer', user: 'user:1' }, 0);
  const err = t.throws(() => index.reverseRead('doc', 'viewer', ['user:1'], () => undefined), { instanceOf: LatchkeyError });
  t.is(err?.code, 'internal');
  t.is(err?.reason, 'index_loading');
  t.is(t.throws(() => index.revisionOf('doc:a', 'viewer', 'user:1'), { instanceOf: LatchkeyError })?.reason, 'index_loading');
  t.is(t.throws(() => index.add({ object: 'doc:b', relation: 'viewer', user: 'user:1' }, 1), { instanceOf: LatchkeyError })?.reason, 'index_bulk_revision');
  index.finishBulk();
  const got: string[] = [];
  index.reverseRead('doc', 'viewer', ['user:1'], (_, id) => got.push(id));
  t.deepEqual(got, ['a']);
  t.is(index.revisionOf('doc:a', 'viewer', 'user:1'), 0);
});
