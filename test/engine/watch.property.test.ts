/**
 * Engine.watch on every backend: a watcher that disconnects at random points
 * and resumes after its last token sees every change exactly once, in the
 * changelog's (commit) order, while writers run concurrently; on the SQL
 * backends the writes go through two engines on two connections (two
 * processes) and each resumption is served by either one, which is what a
 * restart or another replica amounts to. Also: start now, the object-type
 * filter, a write waking a waiting watcher at once, and bad tokens.
 */
import test from 'ava';
import fc from 'fast-check';
import { Engine, MemoryStore, type TupleStore, type WatchEvent } from '../../engine/index.ts';
import { SqlStore } from '../../engine/sql/sql_store.ts';
import { createTestDatabase, sqlBackends, type SqlBackend } from '../helpers/databases.ts';
import { connect } from './sql_helpers.ts';

const MODEL = `model
  schema 1.1
type user
type doc
  relations
    define viewer: [user]
type folder
  relations
    define viewer: [user]
`;

const RUNS = Number(process.env['WATCH_RUNS'] ?? 12);

interface Backend {
  /** Engines on one store (two on SQL: two connections, as two processes). */
  engines: Engine[];
  stores: TupleStore[];
  close(): Promise<void>;
}

async function open(backend: 'memory' | SqlBackend): Promise<Backend> {
  if (backend === 'memory') {
    const store = new MemoryStore();
    const engine = new Engine({ store });
    await engine.writeModel({ dsl: MODEL });
    return { engines: [engine], stores: [store], close: () => store.close() };
  }
  const db = await createTestDatabase(backend, 'lk_watch');
  const seqs = [await connect(db), await connect(db)];
  const stores: SqlStore[] = [];
  for (const sequelize of seqs) stores.push(await SqlStore.open({ sequelize }));
  const engines = stores.map((store) => new Engine({ store }));
  await engines[0]!.writeModel({ dsl: MODEL });
  return {
    engines,
    stores,
    async close() {
      for (const s of stores) await s.close();
      for (const s of seqs) await s.close();
      await db.drop();
    },
  };
}

const key = (e: { revision: number; seq: number; operation: string; tuple: { object: string; relation: string; user: string } }): string =>
  `${e.revision}.${e.seq} ${e.operation} ${e.tuple.object}#${e.tuple.relation}@${e.tuple.user}`;

/** One write call: writes of fresh tuples and deletes of the writer's present ones. */
type Step = { writer: number; adds: number; removes: number; type: 'doc' | 'folder' };

const steps = fc.array(fc.record({ writer: fc.nat(1), adds: fc.integer({ min: 0, max: 3 }), removes: fc.integer({ min: 0, max: 2 }), type: fc.constantFrom('doc' as const, 'folder' as const) }), { minLength: 1, maxLength: 12 });

/** Runs the writers (two, concurrently, each on its own objects and engine) and resolves to the changes made. */
async function write(b: Backend, plan: Step[]): Promise<number> {
  let made = 0;
  const present: string[][] = [[], []];
  let n = 0;
  const writer = async (w: number): Promise<void> => {
    const engine = b.engines[w % b.engines.length]!;
    for (const s of plan.filter((p) => p.writer === w)) {
      const deletes = present[w]!.splice(0, s.removes).map((o) => ({ object: o, relation: 'viewer', user: 'user:u' }));
      const adds = Array.from({ length: s.adds }, () => `${s.type}:w${w}n${n++}`);
      if (deletes.length + adds.length === 0) continue;
      await engine.write({ deletes, writes: adds.map((o) => ({ object: o, relation: 'viewer', user: 'user:u' })) });
      present[w]!.push(...adds);
      made += deletes.length + adds.length;
      await new Promise((r) => setImmediate(r));
    }
  };
  await Promise.all([writer(0), writer(1)]);
  return made;
}

/**
 * Reads into `got` until `done` aborts, disconnecting after `cuts[i]`
 * events of the i-th connection and resuming after the last token, each
 * time on the next engine in turn.
 */
async function watchWithCuts(b: Backend, start: string, got: WatchEvent[], cuts: number[], done: AbortSignal, objectType?: string): Promise<void> {
  let token = start;
  for (let i = 0; !done.aborted; i++) {
    const limit = cuts[i] ?? Number.POSITIVE_INFINITY;
    const engine = b.engines[i % b.engines.length]!;
    const ac = new AbortController();
    const w = await engine.watch({ after: token, signal: AbortSignal.any([ac.signal, done]), pollMs: 20, ...(objectType === undefined ? {} : { objectType }) });
    if (limit > 0) {
      let n = 0;
      for await (const e of w) {
        got.push(e);
        token = e.token;
        if (++n >= limit) break;
      }
    }
    ac.abort();
    await new Promise((r) => setTimeout(r, 1));
  }
}

for (const backend of ['memory', ...sqlBackends()] as const) {
  test(`${backend}: a watcher cut off at random points and resuming after its last token sees every change once, in commit order`, async (t) => {
    t.timeout(180_000);
    let runs = 0;
    await fc.assert(
      fc.asyncProperty(steps, fc.array(fc.nat(6), { maxLength: 12 }), fc.constantFrom<string | undefined>(undefined, 'doc'), async (plan, cuts, objectType) => {
        const b = await open(backend);
        try {
          const start = (await b.engines[0]!.watch({ signal: AbortSignal.abort() })).start;
          const got: WatchEvent[] = [];
          const done = new AbortController();
          const watching = watchWithCuts(b, start, got, cuts, done.signal, objectType);
          await write(b, plan);
          const all = await b.stores[0]!.readChanges({ afterRevision: Number(start), limit: 1000 });
          const expected = all.filter((c) => objectType === undefined || c.tuple.object.startsWith(`${objectType}:`));
          // The watcher has until 10 s after the last commit to deliver every change, then a little longer for any extra one.
          const until = performance.now() + 10_000;
          while (got.length < expected.length && performance.now() < until) await new Promise((r) => setTimeout(r, 10));
          await new Promise((r) => setTimeout(r, 60));
          done.abort();
          await watching;
          t.deepEqual(got.map(key), expected.map(key));
          t.deepEqual(got.map((e) => e.token), expected.map((c) => `${c.revision}.${c.seq}`));
          runs++;
        } finally {
          await b.close();
        }
      }),
      { numRuns: backend === 'memory' ? RUNS * 2 : RUNS },
    );
    t.true(runs > 0);
  });

  test(`${backend}: start now, the type filter, a waiting watcher woken by a write, and bad tokens`, async (t) => {
    const b = await open(backend);
    t.teardown(() => b.close());
    const e = b.engines[0]!;
    await e.write({ writes: [{ object: 'doc:old', relation: 'viewer', user: 'user:a' }] });
    const ac = new AbortController();
    // pollMs at its longest: the change must come from the engine's own wake-up.
    const w = await e.watch({ signal: ac.signal, pollMs: 60_000, objectType: 'doc' });
    t.is(w.start, '1');
    const it = w[Symbol.asyncIterator]();
    const next = it.next();
    await new Promise((r) => setTimeout(r, 50));
    const began = performance.now();
    await e.write({ writes: [{ object: 'folder:f', relation: 'viewer', user: 'user:a' }, { object: 'doc:new', relation: 'viewer', user: 'user:a' }] });
    const first = await next;
    t.true(performance.now() - began < 5_000);
    t.false(first.done);
    t.like(first.value, { token: '2.1', revision: 2, seq: 1, operation: 'write', tuple: { object: 'doc:new', relation: 'viewer', user: 'user:a' } });
    ac.abort();
    t.true((await it.next()).done, 'an aborted watch ends');

    for (const bad of ['', 'x', '1.', '.1', '01', '1.2.3', '-1', '1e3', ' 1']) {
      const err = await t.throwsAsync(e.watch({ after: bad }));
      t.like(err, { code: 'invalid_argument', reason: 'invalid_watch_token' }, bad);
    }
    const ahead = await t.throwsAsync(e.watch({ after: '99.0' }));
    t.like(ahead, { code: 'invalid_argument', reason: 'invalid_watch_token' });
    t.like(await t.throwsAsync(e.watch({ pollMs: 1 })), { code: 'invalid_argument', reason: 'invalid_option' });
    t.like(await t.throwsAsync(e.watch({ objectType: 'doc:1' })), { code: 'invalid_argument', reason: 'invalid_option' });
    // Resuming inside a revision: after change 0 of revision 2 comes change 1.
    const ac2 = new AbortController();
    const inside = (await e.watch({ after: '2.0', signal: ac2.signal }))[Symbol.asyncIterator]();
    t.is((await inside.next()).value?.token, '2.1');
    ac2.abort();
  });
}
