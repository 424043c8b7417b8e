/**
 * Explain (`Engine.explain`): the witness of an allow and the failure reasons
 * of a denial, each on a small model: conditions (false, missing parameters,
 * with the context used), exclusion, intersection, tuple-to-userset,
 * contextual and expiring tuples, cycles, and the depth limit.
 */
import test from 'ava';
import { Engine, LatchkeyError, MemoryStore, TypeSystem, type ExplainNode, type TupleKey } from '../../engine/index.ts';

const DSL = `model
  schema 1.1
type user
type group
  relations
    define member: [user, group#member]
type folder
  relations
    define viewer: [user, group#member]
type doc
  relations
    define parent: [folder]
    define owner: [user]
    define blocked: [user]
    define approved: [user]
    define timed: [user with in_hours]
    define gated: [group#member with in_hours]
    define viewer: [user, group#member] or owner or viewer from parent
    define editor: viewer and approved
    define reader: viewer but not blocked
condition in_hours(hour: int, start: int) {
  hour >= start && hour < 18
}
`;

async function engine(now?: () => number): Promise<Engine> {
  const e = new Engine(now === undefined ? {} : { now, store: new MemoryStore({ now }) });
  await e.writeModel({ dsl: DSL });
  return e;
}

/** Every node of `tree`, depth first. */
function nodes(tree: ExplainNode): ExplainNode[] {
  return [tree, ...(tree.children ?? []).flatMap(nodes)];
}

/** The tuples of a witness, as `object#relation@user`. */
function tuples(tree: ExplainNode): string[] {
  return nodes(tree)
    .filter((n) => n.kind === 'tuple')
    .map((n) => `${n.tuple!.object}#${n.tuple!.relation}@${n.tuple!.user}`);
}

test('an allow through a group and a parent folder is one witness path of tuples and rewrite steps', async (t) => {
  const e = await engine();
  await e.write({
    writes: [
      { user: 'folder:f', relation: 'parent', object: 'doc:1' },
      { user: 'group:g#member', relation: 'viewer', object: 'folder:f' },
      { user: 'user:anne', relation: 'member', object: 'group:g' },
    ],
  });
  const r = await e.explain({ user: 'user:anne', relation: 'viewer', object: 'doc:1' });
  t.true(r.allowed);
  t.is(r.tree.kind, 'relation');
  t.is(r.tree.outcome, 'allowed');
  t.deepEqual(tuples(r.tree), ['doc:1#parent@folder:f', 'folder:f#viewer@group:g#member', 'group:g#member@user:anne']);
  t.deepEqual(
    nodes(r.tree).map((n) => n.kind),
    ['relation', 'union', 'tuple_to_userset', 'tuple', 'relation', 'direct', 'tuple', 'relation', 'direct', 'tuple'],
  );
  // The union shows only the operand that allowed it, with its index in the model.
  t.is(r.tree.children![0]!.children!.length, 1);
  t.is(r.tree.children![0]!.children![0]!.operand, 2);
  t.true(nodes(r.tree).every((n) => n.outcome === 'allowed'));
});

test('a denial lists each branch tried and why it failed', async (t) => {
  const e = await engine();
  await e.write({ writes: [{ user: 'user:bob', relation: 'owner', object: 'doc:1' }] });
  const r = await e.explain({ user: 'user:anne', relation: 'viewer', object: 'doc:1' });
  t.false(r.allowed);
  t.is(r.tree.outcome, 'denied');
  const union = r.tree.children![0]!;
  t.is(union.kind, 'union');
  t.is(union.because, 'no_branch_allowed');
  t.deepEqual(
    union.children!.map((c) => [c.kind, c.because]),
    [
      ['direct', 'no_branch_allowed'],
      ['computed_userset', 'no_branch_allowed'],
      ['tuple_to_userset', 'no_tuple'],
    ],
  );
  const exact = union.children![0]!.children![0]!;
  t.deepEqual(exact.tuple, { object: 'doc:1', relation: 'viewer', user: 'user:anne' });
  t.is(exact.because, 'no_tuple');
});

test('conditions: the result and context used, false, and the missing parameters by name', async (t) => {
  const e = await engine();
  await e.write({ writes: [{ user: 'user:anne', relation: 'timed', object: 'doc:1', condition: { name: 'in_hours', context: { start: 9 } } }] });
  const yes = await e.explain({ user: 'user:anne', relation: 'timed', object: 'doc:1', context: { hour: 10 } });
  t.true(yes.allowed);
  const held = nodes(yes.tree).find((n) => n.kind === 'tuple')!;
  t.deepEqual(held.condition, { name: 'in_hours', result: 'true', context: { hour: 10, start: 9 } });

  const no = await e.explain({ user: 'user:anne', relation: 'timed', object: 'doc:1', context: { hour: 20 } });
  t.false(no.allowed);
  const falseNode = nodes(no.tree).find((n) => n.kind === 'tuple' && n.condition !== undefined)!;
  t.is(falseNode.because, 'condition_false');
  t.is(falseNode.condition!.result, 'false');

  // Check fails with missing_condition_parameters; Explain returns that error with the tree showing where.
  await t.throwsAsync(e.check({ user: 'user:anne', relation: 'timed', object: 'doc:1' }), { instanceOf: LatchkeyError });
  const missing = await e.explain({ user: 'user:anne', relation: 'timed', object: 'doc:1' });
  t.false(missing.allowed);
  t.is(missing.error?.reason, 'missing_condition_parameters');
  const m = nodes(missing.tree).find((n) => n.because === 'missing_condition_parameters' && n.kind === 'tuple')!;
  t.deepEqual(m.condition!.missing_parameters, ['hour']);
  t.is(m.outcome, 'error');
  t.is(missing.tree.outcome, 'error');
});

test('exclusion: the witness shows the subtracted branch denied; a denial names the subtracted branch that allowed', async (t) => {
  const e = await engine();
  await e.write({ writes: [{ user: 'user:anne', relation: 'viewer', object: 'doc:1' }] });
  const yes = await e.explain({ user: 'user:anne', relation: 'reader', object: 'doc:1' });
  t.true(yes.allowed);
  const ex = yes.tree.children![0]!;
  t.is(ex.kind, 'exclusion');
  t.is(ex.because, 'base_allowed_subtract_denied');
  t.deepEqual(
    ex.children!.map((c) => [c.role, c.outcome]),
    [
      ['base', 'allowed'],
      ['subtract', 'denied'],
    ],
  );
  await e.write({ writes: [{ user: 'user:anne', relation: 'blocked', object: 'doc:1' }] });
  const no = await e.explain({ user: 'user:anne', relation: 'reader', object: 'doc:1' });
  t.false(no.allowed);
  const ex2 = no.tree.children![0]!;
  t.is(ex2.because, 'subtract_allowed');
  t.deepEqual(tuples(ex2.children![1]!), ['doc:1#blocked@user:anne']);
});

test('intersection: every operand in the witness; a denial names the operand denied', async (t) => {
  const e = await engine();
  await e.write({ writes: [{ user: 'user:anne', relation: 'owner', object: 'doc:1' }] });
  const no = await e.explain({ user: 'user:anne', relation: 'editor', object: 'doc:1' });
  t.false(no.allowed);
  const and = no.tree.children![0]!;
  t.is(and.kind, 'intersection');
  t.is(and.because, 'operand_denied');
  t.deepEqual(
    and.children!.map((c) => [c.operand, c.outcome]),
    [
      [0, 'allowed'],
      [1, 'denied'],
    ],
  );
  await e.write({ writes: [{ user: 'user:anne', relation: 'approved', object: 'doc:1' }] });
  const yes = await e.explain({ user: 'user:anne', relation: 'editor', object: 'doc:1' });
  t.true(yes.allowed);
  t.is(yes.tree.children![0]!.because, 'all_operands_allowed');
  t.deepEqual(tuples(yes.tree), ['doc:1#owner@user:anne', 'doc:1#approved@user:anne']);
});

test('contextual tuples count and are shown; an expired tuple grants nothing', async (t) => {
  let now = Date.parse('2030-01-01T00:00:00Z');
  const e = await engine(() => now);
  const ctx = await e.explain({ user: 'user:anne', relation: 'viewer', object: 'doc:1', contextualTuples: [{ user: 'user:anne', relation: 'owner', object: 'doc:1' }] });
  t.true(ctx.allowed);
  t.deepEqual(tuples(ctx.tree), ['doc:1#owner@user:anne']);
  await e.write({ writes: [{ user: 'user:anne', relation: 'owner', object: 'doc:1', expires_at: '2030-01-01T01:00:00Z' }] });
  t.true((await e.explain({ user: 'user:anne', relation: 'viewer', object: 'doc:1' })).allowed);
  now = Date.parse('2030-01-01T01:00:00Z');
  const after = await e.explain({ user: 'user:anne', relation: 'viewer', object: 'doc:1' });
  t.false(after.allowed);
  t.false((await e.check({ user: 'user:anne', relation: 'viewer', object: 'doc:1' })).allowed);
  t.true(nodes(after.tree).some((n) => n.kind === 'tuple' && n.because === 'no_tuple' && n.tuple!.relation === 'owner'));
});

test('a cycle is cut and marked; the depth limit is the error Check gives', async (t) => {
  const e = await engine();
  await e.write({
    writes: [
      { user: 'group:b#member', relation: 'member', object: 'group:a' },
      { user: 'group:a#member', relation: 'member', object: 'group:b' },
    ],
  });
  const r = await e.explain({ user: 'user:anne', relation: 'member', object: 'group:a' });
  t.false(r.allowed);
  t.true(nodes(r.tree).some((n) => n.kind === 'relation' && n.because === 'cycle' && n.cycle === true));

  const writes: TupleKey[] = [{ user: 'user:a', relation: 'member', object: 'group:0' }];
  for (let i = 1; i < 40; i++) writes.push({ user: `group:${i - 1}#member`, relation: 'member', object: `group:${i}` });
  await e.write({ writes });
  t.true((await e.explain({ user: 'user:a', relation: 'member', object: 'group:10' })).allowed);
  const err = await t.throwsAsync(e.explain({ user: 'user:a', relation: 'member', object: 'group:39' }), { instanceOf: LatchkeyError });
  t.is(err?.code, 'failed_precondition');
  t.is(err?.reason, 'resolution_too_complex');
});

test('the dispatch budget ends an explanation with resolution_too_complex where Check, reusing answers, decides', async (t) => {
  const e = new Engine({ maxDispatchesPerCheck: 100 });
  await e.writeModel({ dsl: DSL });
  // Six layers of three groups, each a member of every group of the layer above: 3^6 paths, 18 sub-problems.
  const writes: TupleKey[] = [];
  for (let layer = 1; layer <= 6; layer++) {
    for (let i = 0; i < 3; i++) for (let j = 0; j < 3; j++) writes.push({ user: `group:l${layer}_${j}#member`, relation: 'member', object: `group:l${layer - 1}_${i}` });
  }
  await e.write({ writes });
  t.false((await e.check({ user: 'user:a', relation: 'member', object: 'group:l0_0' })).allowed);
  const err = await t.throwsAsync(e.explain({ user: 'user:a', relation: 'member', object: 'group:l0_0' }), { instanceOf: LatchkeyError });
  t.is(err?.code, 'failed_precondition');
  t.is(err?.reason, 'resolution_too_complex');
});

test('invalid input is refused as Check refuses it', async (t) => {
  const e = await engine();
  for (const req of [
    { user: 'user:anne', relation: 'nope', object: 'doc:1' },
    { user: 'user:anne', relation: 'viewer', object: 'nope:1' },
    { user: 'anne', relation: 'viewer', object: 'doc:1' },
  ]) {
    const c = await t.throwsAsync(e.check(req), { instanceOf: LatchkeyError });
    const x = await t.throwsAsync(e.explain(req), { instanceOf: LatchkeyError });
    t.is(x?.code, c?.code);
    t.is(x?.reason, c?.reason);
  }
});

test('a wide fan-out of tuples whose conditions fail ends an explanation with resolution_too_complex past four tuples per sub-problem allowed; within it, every tuple is shown', async (t) => {
  const writes: TupleKey[] = Array.from({ length: 401 }, (_, i) => ({ user: `group:g${i}#member`, relation: 'gated', object: 'doc:wide', condition: { name: 'in_hours', context: { start: 9 } } }));
  const req = { user: 'user:a', relation: 'gated', object: 'doc:wide', context: { hour: 20 } };
  const tight = new Engine({ maxDispatchesPerCheck: 100 });
  await tight.writeModel({ dsl: DSL });
  for (let i = 0; i < writes.length; i += 100) await tight.write({ writes: writes.slice(i, i + 100) });
  // Check reads the 401 tuples and dispatches none (every condition is false).
  t.false((await tight.check(req)).allowed);
  const err = await t.throwsAsync(tight.explain(req), { instanceOf: LatchkeyError });
  t.is(err?.code, 'failed_precondition');
  t.is(err?.reason, 'resolution_too_complex');
  const roomy = new Engine({ maxDispatchesPerCheck: 101 });
  await roomy.writeModel({ dsl: DSL });
  for (let i = 0; i < writes.length; i += 100) await roomy.write({ writes: writes.slice(i, i + 100) });
  const r = await roomy.explain(req);
  t.false(r.allowed);
  const shown = nodes(r.tree).filter((n) => n.kind === 'tuple' && n.tuple!.relation === 'gated' && n.tuple!.user.startsWith('group:'));
  t.is(shown.length, 401);
  t.true(shown.every((n) => n.because === 'condition_false' && n.condition?.result === 'false'));
});

test('explainCheck (internal): where its own walk differs from Check\'s outcome, the tree is undecided and the answer is Check\'s', async (t) => {
  const { explainCheck } = await import('../../engine/explain.ts');
  const { TupleReader } = await import('../../engine/reader.ts');
  const { parseUser } = await import('../../engine/tuple.ts');
  const e = await engine();
  const model = (await e.readModel())!;
  const ts = new TypeSystem(model);
  const store = new MemoryStore();
  await store.write([], [{ user: 'user:anne', relation: 'owner', object: 'doc:1' }]);
  const ctx = { ts, reader: new TupleReader(store, ts), context: undefined, maxDepth: 25, maxDispatches: 10_000 };
  const agree = await explainCheck(ctx, 'doc', '1', 'viewer', parseUser('user:anne'), { allowed: true });
  t.true(agree.allowed);
  t.is(agree.tree.outcome, 'allowed');
  // Told Check denied what the walk allows: Check's answer stands, the tree says undecided.
  const differ = await explainCheck(ctx, 'doc', '1', 'viewer', parseUser('user:anne'), { allowed: false });
  t.false(differ.allowed);
  t.is(differ.tree.outcome, 'undecided');
  t.is(differ.tree.because, 'evaluation_order');
  const other = await explainCheck(ctx, 'doc', '1', 'viewer', parseUser('user:bob'), { allowed: true });
  t.true(other.allowed);
  t.is(other.tree.outcome, 'undecided');
});
