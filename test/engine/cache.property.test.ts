/**
 * Property: under random interleavings of writes, deletes and checks (with
 * and without condition context, contextual tuples and full consistency), an
 * engine behind the check cache answers exactly as an engine without it.
 * Any write therefore makes every affected cached answer invisible (the
 * cache invalidates by the model's dependencies, so this also checks that the
 * dependencies it computes are complete), and a write the cache does not see,
 * followed by emptying the cache (as a revision poll that notices it does),
 * leaves no earlier answer served.
 */
import test from 'ava';
import fc from 'fast-check';
import { CheckCache, Engine, LatchkeyError, LocalChecker, MemoryStore, type TupleKey } from '../../engine/index.ts';

const MODEL = `model
  schema 1.1
type user
type group
  relations
    define member: [user, user:*, group#member]
type doc
  relations
    define parent: [doc]
    define owner: [user]
    define blocked: [user, user with big]
    define editor: [user, group#member] or owner
    define viewer: [user, user:*, group#member] or editor or viewer from parent
    define can_read: viewer but not blocked
    define can_edit: editor and viewer
condition big(x: int) {
  x > 5
}
`;

// A small universe, so writes often change answers already asked.
const users = ['user:u0', 'user:u1'];
const groups = ['group:g0', 'group:g1'];
const docs = ['doc:d0', 'doc:d1'];

/** Every tuple the model admits over the small universe. */
const UNIVERSE: TupleKey[] = [];
for (const g of groups) {
  for (const u of [...users, 'user:*']) UNIVERSE.push({ object: g, relation: 'member', user: u });
  for (const h of groups) UNIVERSE.push({ object: g, relation: 'member', user: `${h}#member` });
}
for (const d of docs) {
  for (const p of docs) UNIVERSE.push({ object: d, relation: 'parent', user: p });
  for (const u of users) {
    UNIVERSE.push({ object: d, relation: 'owner', user: u });
    UNIVERSE.push({ object: d, relation: 'editor', user: u });
    UNIVERSE.push({ object: d, relation: 'viewer', user: u });
    UNIVERSE.push(u === 'user:u0' ? { object: d, relation: 'blocked', user: u, condition: { name: 'big' } } : { object: d, relation: 'blocked', user: u });
  }
  UNIVERSE.push({ object: d, relation: 'viewer', user: 'user:*' });
  for (const g of groups) {
    UNIVERSE.push({ object: d, relation: 'viewer', user: `${g}#member` });
    UNIVERSE.push({ object: d, relation: 'editor', user: `${g}#member` });
  }
}

type Op =
  | { kind: 'toggle'; tuple: number; external: boolean }
  | { kind: 'check'; object: string; relation: string; user: string; context: number | undefined; contextual: number | undefined; consistent: boolean };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  // Now and then a write the cache does not see (another process's), after which the cache is emptied (as a revision
  // poll that sees it does): answers found before it must not be served after it.
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('toggle' as const), tuple: fc.nat({ max: UNIVERSE.length - 1 }), external: fc.integer({ min: 0, max: 2 }).map((n) => n === 0) }) },
  {
    weight: 3,
    // A small pool of queries, so the same question comes back after writes that change its answer.
    arbitrary: fc.record({
      kind: fc.constant('check' as const),
      object: fc.constantFrom('doc:d0', 'doc:d1', 'group:g0'),
      relation: fc.constantFrom('viewer', 'can_read', 'can_edit'),
      user: fc.constantFrom('user:u0', 'user:u1', 'group:g1#member'),
      context: fc.option(fc.constantFrom(3, 8), { freq: 3, nil: undefined }),
      // Mostly without contextual tuples (those bypass the cache): fc.option's freq is the odds of nil, so weights here.
      contextual: fc.oneof({ weight: 7, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: fc.nat({ max: UNIVERSE.length - 1 }) }),
      consistent: fc.integer({ min: 0, max: 9 }).map((n) => n === 0),
    }),
  },
);

async function outcome(engine: Engine, op: Extract<Op, { kind: 'check' }>): Promise<string> {
  const isGroup = op.object.startsWith('group:');
  const relation = isGroup ? 'member' : op.relation === 'member' ? 'viewer' : op.relation;
  try {
    const r = await engine.check({
      object: op.object,
      relation,
      user: op.user,
      ...(op.context === undefined ? {} : { context: { x: op.context } }),
      ...(op.contextual === undefined ? {} : { contextualTuples: [UNIVERSE[op.contextual]!] }),
      ...(op.consistent ? { consistency: 'higher_consistency' as const } : {}),
    });
    return String(r.allowed);
  } catch (err) {
    return err instanceof LatchkeyError ? `error ${err.code}/${err.reason ?? ''}` : `non-latchkey error ${String(err)}`;
  }
}

test('cached and uncached engines answer alike under random writes and checks', async (t) => {
  await t.notThrowsAsync(
    fc.assert(
      fc.asyncProperty(fc.array(opArb, { minLength: 10, maxLength: 60, size: 'max' }), fc.integer({ min: 1, max: 50 }), fc.boolean(), async (ops, maxEntries, asyncInner) => {
        const inner = new MemoryStore();
        const cache = new CheckCache({ store: inner, maxEntries });
        const beside = new Engine({ store: inner });
        // The asynchronous evaluator dispatches every sub-problem through the cache, so nested answers are cached too.
        const cached = new Engine({ store: cache.store, resolver: cache.resolver(asyncInner ? new LocalChecker({ sync: false }) : undefined) });
        const plain = new Engine({ store: new MemoryStore() });
        await cached.writeModel({ dsl: MODEL });
        await plain.writeModel({ dsl: MODEL });
        const present = new Set<number>();
        for (const op of ops) {
          if (op.kind === 'toggle') {
            const tuple = UNIVERSE[op.tuple]!;
            const req = present.has(op.tuple) ? { deletes: [tuple] } : { writes: [tuple] };
            if (present.has(op.tuple)) present.delete(op.tuple);
            else present.add(op.tuple);
            if (op.external) {
              await beside.write(req);
              cache.invalidate();
            } else {
              await cached.write(req);
            }
            await plain.write(req);
            continue;
          }
          // Ask twice: the second answer comes from the cache when the first was cacheable.
          const want = await outcome(plain, op);
          const first = await outcome(cached, op);
          const second = await outcome(cached, op);
          if (first !== want || second !== want) {
            throw new Error(`${op.object}#${op.relation}@${op.user} ctx=${String(op.context)}: uncached ${want}, cached ${first} then ${second}`);
          }
        }
        return true;
      }),
      { numRuns: process.env.CI ? 300 : 60 },
    ),
  );
});
