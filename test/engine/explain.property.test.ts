/**
 * Property tests of Explain on the random models and tuples of
 * test/engine/random_models.ts, against Check and the reference evaluator
 * (a least fixpoint over facts `object#relation@user`):
 * (a) the explanation's answer is Check's, and its tree reaches the same answer;
 * (b) every witness replays to an allow against the tuples and the model;
 * (c) an explained denial lists no branch that would allow.
 *
 * Replay a failure with FC_SEED=<seed> (and FC_PATH=<path>).
 */
import test from 'ava';
import fc from 'fast-check';
import { Engine, type AuthorizationModel, type ExplainNode, type LatchkeyError, type TupleKey, type Userset } from '../../engine/index.ts';
import { QUERIES, USERS, buildModel, reference, scenarioArb, type Spec } from './random_models.ts';

const RUNS = process.env['CI'] ? 100 : 25;
const params = (): fc.Parameters<unknown> => {
  const p: fc.Parameters<unknown> = { numRuns: RUNS };
  if (process.env['FC_SEED'] !== undefined) p.seed = Number(process.env['FC_SEED']);
  if (process.env['FC_PATH'] !== undefined) p.path = process.env['FC_PATH'];
  return p;
};

async function setup(spec: Spec, tuples: TupleKey[]): Promise<{ engine: Engine; model: AuthorizationModel } | undefined> {
  const engine = new Engine();
  const model = buildModel(spec);
  try {
    await engine.writeModel(model);
  } catch {
    return undefined;
  }
  for (let i = 0; i < tuples.length; i += 100) await engine.write({ writes: tuples.slice(i, i + 100) });
  return { engine, model };
}

function rewriteOf(model: AuthorizationModel, object: string, relation: string): Userset | undefined {
  const type = object.slice(0, object.indexOf(':'));
  return model.type_definitions?.find((t) => t.type === type)?.relations?.[relation];
}

/**
 * Whether `node` (a witness, kind `relation`) replays to an allow: each hop is
 * a rewrite step the model has for that relation, or a tuple that is stored;
 * an exclusion's subtracted branch is denied by the reference.
 */
function replay(node: ExplainNode, model: AuthorizationModel, has: Set<string>, facts: Set<string>): string | undefined {
  if (node.kind !== 'relation' || node.outcome !== 'allowed') return `not an allowed relation node: ${JSON.stringify(node)}`;
  if (node.because === 'self') return node.user === `${node.object}#${node.relation}` ? undefined : 'self on another userset';
  const rw = rewriteOf(model, node.object!, node.relation!);
  if (rw === undefined || node.children?.length !== 1) return `relation ${node.object}#${node.relation} has no rewrite or no one child`;
  return step(node.children[0]!, rw, node.object!, node.relation!, node.user!, model, has, facts);
}

function step(n: ExplainNode, rw: Userset, object: string, relation: string, user: string, model: AuthorizationModel, has: Set<string>, facts: Set<string>): string | undefined {
  if (n.outcome !== 'allowed') return `a hop that is not allowed: ${n.kind}`;
  if ('union' in rw && rw.union.child.length === 1) return step(n, rw.union.child[0]!, object, relation, user, model, has, facts);
  const sub = (c: ExplainNode, o: string, r: string): string | undefined =>
    c.kind === 'relation' && c.object === o && c.relation === r && c.user === user ? replay(c, model, has, facts) : `dispatch to ${c.object}#${c.relation}@${c.user}, expected ${o}#${r}@${user}`;
  if ('this' in rw) {
    if (n.kind !== 'direct' || n.children?.length !== 1) return 'expected one direct tuple';
    const t = n.children[0]!;
    if (t.kind !== 'tuple' || t.tuple === undefined) return 'expected a tuple';
    if (t.tuple.object !== object || t.tuple.relation !== relation) return 'a tuple on another relation';
    if (!has.has(`${t.tuple.object}#${t.tuple.relation}@${t.tuple.user}`)) return `tuple ${JSON.stringify(t.tuple)} is not stored`;
    if (t.tuple.user === user || t.tuple.user === `${user.slice(0, user.indexOf(':'))}:*`) return t.children === undefined ? undefined : 'a direct tuple with a dispatch';
    const hash = t.tuple.user.indexOf('#');
    if (hash < 0 || t.children?.length !== 1) return 'a tuple that neither names the user nor is a userset';
    return sub(t.children[0]!, t.tuple.user.slice(0, hash), t.tuple.user.slice(hash + 1));
  }
  if ('computedUserset' in rw) {
    if (n.kind !== 'computed_userset' || n.children?.length !== 1) return 'expected a computed userset';
    return sub(n.children[0]!, object, rw.computedUserset.relation!);
  }
  if ('tupleToUserset' in rw) {
    const ts = rw.tupleToUserset.tupleset.relation!;
    if (n.kind !== 'tuple_to_userset' || n.children?.length !== 1) return 'expected a tuple-to-userset';
    const t = n.children[0]!;
    if (t.tuple?.object !== object || t.tuple.relation !== ts || !has.has(`${object}#${ts}@${t.tuple.user}`)) return 'tupleset tuple not stored';
    if (t.children?.length !== 1) return 'tupleset tuple without dispatch';
    return sub(t.children[0]!, t.tuple.user, rw.tupleToUserset.computedUserset.relation!);
  }
  if ('union' in rw) {
    if (n.kind !== 'union' || n.children?.length !== 1) return 'expected one union operand';
    const c = n.children[0]!;
    const op = rw.union.child[c.operand ?? -1];
    return op === undefined ? 'union operand out of range' : step(c, op, object, relation, user, model, has, facts);
  }
  if ('intersection' in rw) {
    if (n.kind !== 'intersection' || n.children?.length !== rw.intersection.child.length) return 'expected every intersection operand';
    for (const c of n.children) {
      const op = rw.intersection.child[c.operand ?? -1];
      if (op === undefined) return 'intersection operand out of range';
      const e = step(c, op, object, relation, user, model, has, facts);
      if (e !== undefined) return e;
    }
    return undefined;
  }
  if ('difference' in rw) {
    if (n.kind !== 'exclusion' || n.children?.length !== 2) return 'expected base and subtract';
    const [base, subtract] = n.children as [ExplainNode, ExplainNode];
    if (base.role !== 'base' || subtract.role !== 'subtract' || subtract.outcome !== 'denied') return 'exclusion roles';
    // The random models subtract `blocked`, a direct relation: the reference decides it.
    const sr = rw.difference.subtract;
    if (!('computedUserset' in sr) || facts.has(`${object}#${sr.computedUserset.relation}@${user}`) || isBlocked(has, object, user)) return 'the subtracted branch allows';
    return step(base, rw.difference.base, object, relation, user, model, has, facts);
  }
  return 'unknown rewrite';
}

function isBlocked(has: Set<string>, object: string, user: string): boolean {
  return has.has(`${object}#blocked@${user}`) || has.has(`${object}#blocked@user:*`);
}

/** Every node of a denial that says it failed really does: absent tuples are absent, denied sub-problems are not facts. */
function denialSound(n: ExplainNode, has: Set<string>, facts: Set<string>): string | undefined {
  if (n.kind === 'tuple' && n.because === 'no_tuple' && has.has(`${n.tuple!.object}#${n.tuple!.relation}@${n.tuple!.user}`)) return `tuple ${JSON.stringify(n.tuple)} said absent`;
  if (n.kind === 'relation' && n.outcome === 'denied' && n.cycle === undefined && USERS.includes(n.user!)) {
    const k = `${n.object}#${n.relation}@${n.user}`;
    if (n.relation === 'blocked' ? isBlocked(has, n.object!, n.user!) : facts.has(k)) return `${k} said denied but holds`;
  }
  if (n.kind === 'relation' && n.outcome === 'allowed' && USERS.includes(n.user!) && n.relation !== 'blocked' && !facts.has(`${n.object}#${n.relation}@${n.user}`)) return `${n.object}#${n.relation}@${n.user} said allowed but does not hold`;
  for (const c of n.children ?? []) {
    const e = denialSound(c, has, facts);
    if (e !== undefined) return e;
  }
  return undefined;
}

test("Explain: the answer is Check's, witnesses replay to an allow, denials list no allowing branch", async (t) => {
  let models = 0;
  // The property's own message, logged (fast-check reports only the counterexample).
  const fail = (message: string): never => {
    t.log(message);
    throw new Error(message);
  };
  let allowed = 0;
  let denied = 0;
  await fc.assert(
    fc.asyncProperty(scenarioArb, async ({ spec, tuples }) => {
      const s = await setup(spec, tuples);
      if (s === undefined) return;
      models++;
      const has = new Set(tuples.map((x) => `${x.object}#${x.relation}@${x.user}`));
      const facts = reference(spec, tuples);
      for (const [object, relation] of QUERIES) {
        for (const user of USERS) {
          const req = { user, relation, object };
          const { allowed: expected } = await s.engine.check(req);
          const ex = await s.engine.explain(req);
          const name = `${object}#${relation}@${user}`;
          if (ex.allowed !== expected) fail(`${name}: explain ${ex.allowed}, check ${expected}`);
          // These models have no cycle through a subtracted side: the walk itself reaches Check's answer.
          if (ex.tree.outcome !== (expected ? 'allowed' : 'denied')) fail(`${name}: tree ${ex.tree.outcome}, check ${expected}`);
          if (expected) {
            allowed++;
            const e = replay(ex.tree, s.model, has, facts);
            if (e !== undefined) fail(`${name}: witness does not replay: ${e}\n${JSON.stringify(ex.tree)}`);
          } else {
            denied++;
          }
          const e = denialSound(ex.tree, has, facts);
          if (e !== undefined) fail(`${name}: ${e}\n${JSON.stringify(ex.tree)}`);
        }
      }
    }),
    params(),
  );
  t.true(models > 0, 'some random models were valid');
  t.log(`${models} models, ${allowed} allowed and ${denied} denied explained`);
  t.true(allowed > 0 && denied > 0, `both answers were explained (${allowed} allowed, ${denied} denied)`);
});

test('Explain on models whose subtracted relations reach through groups (cycles may reach a subtracted side): the answer is Check\'s, the tree agrees or says undecided, absent tuples are absent', async (t) => {
  let models = 0;
  let undecided = 0;
  const fail = (message: string): never => {
    t.log(message);
    throw new Error(message);
  };
  await fc.assert(
    fc.asyncProperty(scenarioArb, fc.subarray(USERS.flatMap((u) => ['folder:f0', 'doc:d0'].map((o) => ({ object: o, relation: 'blocked', user: u }))).concat([{ object: 'doc:d1', relation: 'blocked', user: 'group:g0#member' }, { object: 'folder:f1', relation: 'blocked', user: 'group:g1#member' }])), async ({ spec, tuples }, blocked) => {
      const engine = new Engine();
      try {
        await engine.writeModel(buildModel(spec, true));
      } catch {
        return;
      }
      models++;
      const all = [...tuples, ...blocked.filter((b) => !tuples.some((x) => x.object === b.object && x.relation === b.relation && x.user === b.user))];
      for (let i = 0; i < all.length; i += 100) await engine.write({ writes: all.slice(i, i + 100) });
      const has = new Set(all.map((x) => `${x.object}#${x.relation}@${x.user}`));
      for (const [object, relation] of QUERIES) {
        for (const user of USERS) {
          const req = { user, relation, object };
          const { allowed: expected } = await engine.check(req);
          const ex = await engine.explain(req);
          const name = `${object}#${relation}@${user}`;
          if (ex.allowed !== expected) fail(`${name}: explain ${ex.allowed}, check ${expected}`);
          if (ex.tree.outcome === 'undecided') undecided++;
          if (ex.tree.outcome !== (expected ? 'allowed' : 'denied') && ex.tree.outcome !== 'undecided') fail(`${name}: tree ${ex.tree.outcome}, check ${expected}`);
          const stack = [ex.tree];
          while (stack.length > 0) {
            const n = stack.pop()!;
            if (n.kind === 'tuple' && n.because === 'no_tuple' && has.has(`${n.tuple!.object}#${n.tuple!.relation}@${n.tuple!.user}`)) fail(`${name}: ${JSON.stringify(n.tuple)} said absent`);
            if (n.kind === 'tuple' && n.outcome === 'allowed' && !has.has(`${n.tuple!.object}#${n.tuple!.relation}@${n.tuple!.user}`)) fail(`${name}: ${JSON.stringify(n.tuple)} said read but not stored`);
            stack.push(...(n.children ?? []));
          }
        }
      }
    }),
    params(),
  );
  t.log(`${models} models, ${undecided} explanations undecided`);
  t.true(models > 0, 'some random models were valid');
});

const CONDITION_MODEL = `model
  schema 1.1
type user
type group
  relations
    define member: [user, user with gt5, group#member, group#member with gt5]
type folder
  relations
    define viewer: [user with gt5, group#member]
type doc
  relations
    define parent: [folder, folder with gt5]
    define viewer: [user, user with gt5, group#member with gt5] or viewer from parent
condition gt5(x: int) {
  x > 5
}
`;

const conditionTupleArb = fc.record({
  object: fc.constantFrom('group:g0', 'group:g1', 'folder:f0', 'doc:d0'),
  user: fc.constantFrom('user:u0', 'user:u1', 'group:g0#member', 'group:g1#member', 'folder:f0'),
  conditioned: fc.boolean(),
  x: fc.option(fc.integer({ min: 0, max: 10 }), { nil: undefined }),
});

test('Explain with conditions: the answer (or the condition error) is Check\'s, and every condition shown evaluated as its context says', async (t) => {
  let explained = 0;
  let conditions = 0;
  const fail = (message: string): never => {
    t.log(message);
    throw new Error(message);
  };
  await fc.assert(
    fc.asyncProperty(fc.array(conditionTupleArb, { maxLength: 12 }), fc.option(fc.integer({ min: 0, max: 10 }), { nil: undefined }), async (raw, requestX) => {
      const engine = new Engine();
      await engine.writeModel({ dsl: CONDITION_MODEL });
      const seen = new Set<string>();
      const tuples: TupleKey[] = [];
      for (const r of raw) {
        const parentLink = r.user.startsWith('folder:');
        if (parentLink && !r.object.startsWith('doc:')) continue;
        const relation = parentLink ? 'parent' : r.object.startsWith('group:') ? 'member' : 'viewer';
        const k = `${r.object}#${relation}@${r.user}`;
        if (seen.has(k)) continue;
        const tuple: TupleKey = { object: r.object, relation, user: r.user };
        if (r.conditioned) tuple.condition = r.x === undefined ? { name: 'gt5' } : { name: 'gt5', context: { x: r.x } };
        try {
          await engine.write({ writes: [tuple] });
        } catch {
          continue; // not admitted by the model (a type restriction without or with the condition)
        }
        seen.add(k);
        tuples.push(tuple);
      }
      const context = requestX === undefined ? undefined : { x: requestX };
      for (const object of ['doc:d0', 'folder:f0', 'group:g0', 'group:g1']) {
        for (const user of ['user:u0', 'user:u1']) {
          const req = { user, relation: object.startsWith('group:') ? 'member' : 'viewer', object, ...(context === undefined ? {} : { context }) };
          let expected: { allowed: boolean; reason?: string };
          try {
            expected = { allowed: (await engine.check(req)).allowed };
          } catch (err) {
            expected = { allowed: false, reason: (err as LatchkeyError).reason ?? 'none' };
          }
          const ex = await engine.explain(req);
          explained++;
          const name = `${req.object}#${req.relation}@${user} ${JSON.stringify(context)} ${JSON.stringify(tuples)}`;
          if (ex.allowed !== expected.allowed || ex.error?.reason !== expected.reason) fail(`${name}: explain ${ex.allowed}/${ex.error?.reason}, check ${expected.allowed}/${expected.reason}`);
          if (ex.tree.outcome === 'undecided') fail(`${name}: undecided`);
          const stack = [ex.tree];
          while (stack.length > 0) {
            const n = stack.pop()!;
            stack.push(...(n.children ?? []));
            if (n.kind !== 'tuple' || n.condition === undefined) continue;
            conditions++;
            const stored = tuples.find((x) => x.object === n.tuple!.object && x.relation === n.tuple!.relation && x.user === n.tuple!.user);
            if (stored === undefined) fail(`${name}: ${JSON.stringify(n.tuple)} is not stored`);
            const x = (stored!.condition?.context as { x?: number } | undefined)?.x ?? requestX;
            const want = x === undefined ? 'missing_parameters' : x > 5 ? 'true' : 'false';
            if (n.condition.result !== want) fail(`${name}: ${JSON.stringify(n)} should be ${want}`);
            if (want === 'missing_parameters' && JSON.stringify(n.condition.missing_parameters) !== '["x"]') fail(`${name}: missing parameters ${JSON.stringify(n.condition.missing_parameters)}`);
            if (x !== undefined && n.condition.context?.['x'] !== x) fail(`${name}: context ${JSON.stringify(n.condition.context)}`);
          }
        }
      }
    }),
    params(),
  );
  t.log(`${explained} explanations, ${conditions} conditions shown`);
  t.true(conditions > 0);
});
