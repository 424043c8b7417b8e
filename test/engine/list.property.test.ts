/**
 * Property tests: ListObjects and ListUsers agree with Check on random
 * models and tuples, including intersections, exclusions (of any relation,
 * so cycles may run through the subtracted side), tuple conditions (true,
 * false, and missing parameters), wildcards, usersets as users, cycles
 * through data, contextual tuples and small depth limits (so Check's depth
 * error is common).
 *
 * The rules (OpenFGA's, with every result confirmed by Check):
 * - ListObjects succeeds → its objects are exactly those for which Check
 *   answers true (an object whose Check fails is never listed);
 *   ListObjects fails → Check fails for some object of the type.
 * - ListUsers succeeds → every listed user passes Check, and every probe
 *   user passing Check is listed or covered by a listed `user:*`; usersets
 *   are listed exactly when Check passes for them. ListUsers fails → Check
 *   fails for some probe user, or a traversed tuple's condition cannot be
 *   evaluated (OpenFGA's ListUsers fails on those).
 *
 * Replay a failure with FC_SEED=<seed> (and FC_PATH=<path>).
 */
import test from 'ava';
import fc from 'fast-check';
import { Engine, LatchkeyError, MemoryStore, type AuthorizationModel, type RelationReference, type TupleKey, type Userset } from '../../engine/index.ts';

const RUNS = process.env['CI'] ? 150 : 40;
const params = (): fc.Parameters<unknown> => {
  const p: fc.Parameters<unknown> = { numRuns: RUNS };
  if (process.env['FC_SEED'] !== undefined) p.seed = Number(process.env['FC_SEED']);
  if (process.env['FC_PATH'] !== undefined) p.path = process.env['FC_PATH'];
  return p;
};

const USERS = ['user:u0', 'user:u1', 'user:u2'];
const OBJECTS: Record<string, string[]> = {
  group: ['group:g0', 'group:g1', 'group:g2'],
  folder: ['folder:f0', 'folder:f1', 'folder:f2'],
  doc: ['doc:d0', 'doc:d1'],
};
const RELS = ['r0', 'r1', 'r2'];
const PROBES = [...USERS, 'user:*', 'user:nobody', ...OBJECTS['group']!.map((g) => `${g}#member`)];

type Expr =
  | { k: 'this' }
  | { k: 'computed'; j: number }
  | { k: 'ttu'; target: number }
  | { k: 'union' | 'and' | 'butnot'; a: Expr; b: Expr };

function exprArb(i: number, depth: number): fc.Arbitrary<Expr> {
  const leaves: fc.Arbitrary<Expr>[] = [fc.constant({ k: 'this' } as Expr), fc.integer({ min: 0, max: 2 }).map((target) => ({ k: 'ttu', target }) as Expr)];
  if (i > 0) leaves.push(fc.integer({ min: 0, max: i - 1 }).map((j) => ({ k: 'computed', j }) as Expr));
  const leaf = fc.oneof(...leaves);
  if (depth === 0) return leaf;
  const sub = exprArb(i, depth - 1);
  return fc.oneof(
    { weight: 3, arbitrary: leaf },
    ...(['union', 'and', 'butnot'] as const).map((k) => ({ weight: 1, arbitrary: fc.record({ a: sub, b: sub }).map(({ a, b }) => ({ k, a, b }) as Expr) })),
  );
}

const REFS = ['user', 'user:*', 'group#member', 'user with c', 'group#member with c'] as const;
const refArb = fc.subarray([...REFS], { minLength: 1 });

function toRef(s: (typeof REFS)[number]): RelationReference {
  switch (s) {
    case 'user':
      return { type: 'user' };
    case 'user:*':
      return { type: 'user', wildcard: {} };
    case 'group#member':
      return { type: 'group', relation: 'member' };
    case 'user with c':
      return { type: 'user', condition: 'c' };
    case 'group#member with c':
      return { type: 'group', relation: 'member', condition: 'c' };
  }
}

interface Spec {
  folder: Expr[];
  doc: Expr[];
  refs: Record<string, (typeof REFS)[number][]>;
  parentWithCondition: boolean;
}

const specArb: fc.Arbitrary<Spec> = fc.record({
  folder: fc.tuple(exprArb(0, 2), exprArb(1, 2), exprArb(2, 2)),
  doc: fc.tuple(exprArb(0, 2), exprArb(1, 2), exprArb(2, 2)),
  refs: fc.record(Object.fromEntries(['folder', 'doc'].flatMap((t) => RELS.map((r) => [`${t}#${r}`, refArb]))) as Record<string, typeof refArb>),
  parentWithCondition: fc.boolean(),
});

function usesThis(e: Expr): boolean {
  if (e.k === 'this') return true;
  if (e.k === 'union' || e.k === 'and' || e.k === 'butnot') return usesThis(e.a) || usesThis(e.b);
  return false;
}

function toUserset(e: Expr): Userset {
  switch (e.k) {
    case 'this':
      return { this: {} };
    case 'computed':
      return { computedUserset: { relation: RELS[e.j]! } };
    case 'ttu':
      return { tupleToUserset: { tupleset: { relation: 'parent' }, computedUserset: { relation: RELS[e.target]! } } };
    case 'union':
      return { union: { child: [toUserset(e.a), toUserset(e.b)] } };
    case 'and':
      return { intersection: { child: [toUserset(e.a), toUserset(e.b)] } };
    case 'butnot':
      return { difference: { base: toUserset(e.a), subtract: toUserset(e.b) } };
  }
}

function buildModel(spec: Spec): AuthorizationModel {
  const parentRefs: RelationReference[] = [{ type: 'folder' }];
  if (spec.parentWithCondition) parentRefs.push({ type: 'folder', condition: 'c' });
  const objType = (type: 'folder' | 'doc') => {
    const relations: Record<string, Userset> = { parent: { this: {} } };
    const meta: Record<string, { directly_related_user_types: RelationReference[] }> = { parent: { directly_related_user_types: parentRefs } };
    spec[type].forEach((e, i) => {
      relations[RELS[i]!] = toUserset(e);
      meta[RELS[i]!] = { directly_related_user_types: usesThis(e) ? spec.refs[`${type}#${RELS[i]}`]!.map(toRef) : [] };
    });
    return { type, relations, metadata: { relations: meta } };
  };
  return {
    schema_version: '1.1',
    type_definitions: [
      { type: 'user' },
      {
        type: 'group',
        relations: { member: { this: {} } },
        metadata: { relations: { member: { directly_related_user_types: [...REFS].map(toRef) } } },
      },
      objType('folder'),
      objType('doc'),
    ],
    conditions: { c: { name: 'c', expression: 'x < 5', parameters: { x: { type_name: 'TYPE_NAME_INT' } } } },
  };
}

/** Condition variants of a conditioned tuple: true, false, or needing the request context. */
const CONDITIONS = [{ name: 'c', context: { x: 3 } }, { name: 'c', context: { x: 7 } }, { name: 'c' }];

/** Every tuple the model admits over the small universe (several condition variants per key). */
function candidateTuples(spec: Spec): TupleKey[] {
  const out: TupleKey[] = [];
  const usersFor = (refs: readonly (typeof REFS)[number][], push: (user: string, conditioned: boolean) => void): void => {
    for (const r of refs) {
      if (r === 'user:*') push('user:*', false);
      else if (r === 'user' || r === 'user with c') for (const u of USERS) push(u, r === 'user with c');
      else for (const g of OBJECTS['group']!) push(`${g}#member`, r === 'group#member with c');
    }
  };
  const add = (object: string, relation: string, user: string, conditioned: boolean): void => {
    if (!conditioned) out.push({ object, relation, user });
    else for (const condition of CONDITIONS) out.push({ object, relation, user, condition });
  };
  for (const g of OBJECTS['group']!) usersFor(REFS, (u, c) => add(g, 'member', u, c));
  for (const type of ['folder', 'doc'] as const) {
    for (const o of OBJECTS[type]!) {
      for (const f of OBJECTS['folder']!) {
        add(o, 'parent', f, false);
        if (spec.parentWithCondition) add(o, 'parent', f, true);
      }
      spec[type].forEach((e, i) => {
        if (usesThis(e)) usersFor(spec.refs[`${type}#${RELS[i]}`]!, (u, c) => add(o, RELS[i]!, u, c));
      });
    }
  }
  return out;
}

/** Keeps the first tuple of each key (a store holds one tuple per object, relation and user). */
function distinct(tuples: TupleKey[]): TupleKey[] {
  const seen = new Set<string>();
  return tuples.filter((t) => {
    const k = `${t.object}#${t.relation}@${t.user}`;
    if (seen.has(k)) return false;
    seen.add(k);
    return true;
  });
}

const scenarioArb = specArb.chain((spec) =>
  fc.record({
    spec: fc.constant(spec),
    tuples: fc.shuffledSubarray(candidateTuples(spec), { maxLength: 40 }).map(distinct),
    contextual: fc.integer({ min: 0, max: 12 }),
    context: fc.constantFrom(undefined, { x: 1 }, { x: 9 }),
    maxDepth: fc.constantFrom(2, 3, 4, 6, 25),
  }),
);

interface World {
  engine: Engine;
  contextualTuples: TupleKey[];
  context: Record<string, unknown> | undefined;
  tuples: TupleKey[];
}

async function setup(s: { spec: Spec; tuples: TupleKey[]; contextual: number; context: Record<string, unknown> | undefined; maxDepth: number }): Promise<World | undefined> {
  const engine = new Engine({ maxResolutionDepth: s.maxDepth });
  try {
    await engine.writeModel(buildModel(s.spec));
  } catch {
    return undefined;
  }
  const stored = s.tuples.slice(s.contextual);
  for (let i = 0; i < stored.length; i += 100) await engine.write({ writes: stored.slice(i, i + 100) });
  return { engine, contextualTuples: s.tuples.slice(0, s.contextual), context: s.context, tuples: s.tuples };
}

type Outcome = boolean | LatchkeyError;

async function check(w: World, user: string, relation: string, object: string): Promise<Outcome> {
  try {
    return (await w.engine.check({ user, relation, object, contextualTuples: w.contextualTuples, ...(w.context === undefined ? {} : { context: w.context }) })).allowed;
  } catch (err) {
    if (!(err instanceof LatchkeyError)) throw err;
    return err;
  }
}

const req = (w: World) => ({ contextualTuples: w.contextualTuples, ...(w.context === undefined ? {} : { context: w.context }) });

test('ListObjects returns exactly the objects that pass Check, and fails only where Check fails', async (t) => {
  let runs = 0;
  let errors = 0;
  let nonEmpty = 0;
  await t.notThrowsAsync(
    fc.assert(
      fc.asyncProperty(scenarioArb, async (s) => {
        const w = await setup(s);
        if (w === undefined) return;
        runs++;
        for (const type of ['group', 'folder', 'doc']) {
          for (const relation of type === 'group' ? ['member'] : RELS) {
            for (const user of PROBES) {
              const outcomes = new Map<string, Outcome>();
              for (const o of OBJECTS[type]!) outcomes.set(o, await check(w, user, relation, o));
              const what = `listObjects ${user} ${type}#${relation} (checks ${JSON.stringify([...outcomes].map(([o, r]) => [o, typeof r === 'boolean' ? r : r.message]))})`;
              let objects: string[];
              try {
                const r = await w.engine.listObjects({ user, relation, type, ...req(w) });
                if (r.truncated) throw new Error(`${what}: truncated`);
                objects = r.objects;
              } catch (err) {
                if (!(err instanceof LatchkeyError)) throw err;
                errors++;
                if (![...outcomes.values()].some((r) => r instanceof LatchkeyError)) throw new Error(`${what}: failed (${err.message}) where no Check fails`);
                continue;
              }
              const expected = [...outcomes].filter(([, r]) => r === true).map(([o]) => o).sort();
              if (expected.length > 0) nonEmpty++;
              if (JSON.stringify(objects) !== JSON.stringify(expected)) throw new Error(`${what}: ${JSON.stringify(objects)}`);
            }
          }
        }
      }),
      params(),
    ),
  );
  t.log(`valid models ${runs}, non-empty answers ${nonEmpty}, errors ${errors}`);
  t.true(runs > 0 && nonEmpty > 0);
});

/** True when some tuple's condition cannot be evaluated with the request context. */
function someConditionFails(w: World): boolean {
  return w.tuples.some((t) => t.condition !== undefined && t.condition.context === undefined && (w.context === undefined || !('x' in w.context)));
}

test('ListUsers returns exactly the users that pass Check, and fails only where Check or a condition fails', async (t) => {
  let runs = 0;
  let nonEmpty = 0;
  await t.notThrowsAsync(
    fc.assert(
      fc.asyncProperty(scenarioArb, async (s) => {
        const w = await setup(s);
        if (w === undefined) return;
        runs++;
        const queries: [string, string][] = [
          ...OBJECTS['group']!.map((g): [string, string] => [g, 'member']),
          ...(['folder', 'doc'] as const).flatMap((type) => OBJECTS[type]!.flatMap((o) => RELS.map((r): [string, string] => [o, r]))),
        ];
        for (const [object, relation] of queries) {
          const outcomes = new Map<string, Outcome>();
          for (const u of PROBES) outcomes.set(u, await check(w, u, relation, object));
          for (const filter of [{ type: 'user' }, { type: 'group', relation: 'member' }]) {
            const what = `listUsers ${object}#${relation} ${JSON.stringify(filter)} (checks ${JSON.stringify([...outcomes].map(([u, r]) => [u, typeof r === 'boolean' ? r : r.message]))})`;
            let users: string[];
            try {
              users = (await w.engine.listUsers({ object, relation, userFilters: [filter], ...req(w) })).users;
            } catch (err) {
              if (!(err instanceof LatchkeyError)) throw err;
              if (![...outcomes.values()].some((r) => r instanceof LatchkeyError) && !someConditionFails(w)) throw new Error(`${what}: failed (${err.message})`);
              continue;
            }
            if (users.length > 0) nonEmpty++;
            if (JSON.stringify(users) !== JSON.stringify([...users].sort())) throw new Error(`${what}: not sorted ${JSON.stringify(users)}`);
            for (const u of users) {
              if (filter.relation === undefined ? !u.startsWith('user:') || u.includes('#') : !/^group:[^#]+#member$/u.test(u)) throw new Error(`${what}: ${u} does not match the filter`);
              const r = outcomes.has(u) ? outcomes.get(u) : await check(w, u, relation, object);
              if (r !== true) throw new Error(`${what}: lists ${u}, Check says ${String(r)}`);
            }
            const probes = filter.relation === undefined ? [...USERS, 'user:*'] : OBJECTS['group']!.map((g) => `${g}#member`);
            for (const u of probes) {
              const covered = users.includes(u) || (filter.relation === undefined && u !== 'user:*' && users.includes('user:*'));
              const r = outcomes.get(u) ?? (await check(w, u, relation, object));
              if (r === true && !covered) throw new Error(`${what}: misses ${u} in ${JSON.stringify(users)}`);
              if (filter.relation !== undefined && r !== true && users.includes(u)) throw new Error(`${what}: lists ${u}`);
            }
          }
        }
      }),
      params(),
    ),
  );
  t.log(`valid models ${runs}, non-empty answers ${nonEmpty}`);
  t.true(runs > 0 && nonEmpty > 0);
});

/** A memory store without its synchronous reverse read: ListObjects then reads through `readStartingWithUsers`. */
function withoutReverseSync(store: MemoryStore): MemoryStore {
  return new Proxy(store, {
    get(target, prop) {
      if (prop === 'readStartingWithUsersSync') return undefined;
      const v: unknown = Reflect.get(target, prop, target);
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
}

test('ListObjects answers the same, errors included, through the synchronous and the asynchronous reverse read', async (t) => {
  let runs = 0;
  let nonEmpty = 0;
  await t.notThrowsAsync(
    fc.assert(
      fc.asyncProperty(scenarioArb, async (s) => {
        const engines: Engine[] = [];
        for (const store of [new MemoryStore(), withoutReverseSync(new MemoryStore())]) {
          const engine = new Engine({ store, maxResolutionDepth: s.maxDepth });
          try {
            await engine.writeModel(buildModel(s.spec));
          } catch {
            return;
          }
          const stored = s.tuples.slice(s.contextual);
          for (let i = 0; i < stored.length; i += 100) await engine.write({ writes: stored.slice(i, i + 100) });
          engines.push(engine);
        }
        runs++;
        const w = { contextualTuples: s.tuples.slice(0, s.contextual), context: s.context };
        for (const type of ['group', 'folder', 'doc']) {
          for (const relation of type === 'group' ? ['member'] : RELS) {
            for (const user of PROBES) {
              const answers: string[] = [];
              for (const engine of engines) {
                try {
                  answers.push(JSON.stringify(await engine.listObjects({ user, relation, type, contextualTuples: w.contextualTuples, ...(w.context === undefined ? {} : { context: w.context }) })));
                } catch (err) {
                  if (!(err instanceof LatchkeyError)) throw err;
                  answers.push(`error ${err.code}`);
                }
              }
              // Both reads explore the same graph in different orders, so near the depth limit one may
              // meet the depth error first and the other another branch's error (both fail the call).
              const bothErrors = answers[0]!.startsWith('error ') && answers[1]!.startsWith('error ');
              const depthFirst = answers[0] === 'error failed_precondition' || answers[1] === 'error failed_precondition';
              if (answers[0] !== answers[1] && !(bothErrors && depthFirst)) throw new Error(`listObjects ${user} ${type}#${relation}: synchronous ${answers[0]}, asynchronous ${answers[1]}`);
              if (answers[0]!.includes(':')) nonEmpty++;
            }
          }
        }
      }),
      params(),
    ),
  );
  t.log(`valid models ${runs}, non-empty answers ${nonEmpty}`);
  t.true(runs > 0 && nonEmpty > 0);
});
