/**
 * ListObjects and ListUsers: which answers need a Check (only the
 * candidates behind intersections, exclusions and failing conditions),
 * the result cap with exact answers and confirmed candidates together, and
 * conditions evaluated during the walk.
 */
import test from 'ava';
import { Engine, LatchkeyError, LocalChecker, type CheckResolver, type ResolutionContext, type ResolveCheckRequest, type ResolveCheckResult } from '../../engine/index.ts';

const DSL = `model
  schema 1.1
type user
type group
  relations
    define member: [user, group#member]
type folder
  relations
    define parent: [folder]
    define viewer: [user, group#member, user with in_hours] or viewer from parent
type doc
  relations
    define parent: [folder]
    define blocked: [user]
    define owner: [user]
    define viewer: [user, user:*] or viewer from parent
    define safe: viewer but not blocked
    define both: viewer and owner
condition in_hours(hour: int) {
  hour >= 9 && hour < 17
}
`;

/** Counts top-level resolutions (depth 0): one per Check a list operation asks for. */
class Counting implements CheckResolver {
  readonly inner = new LocalChecker();
  topLevel = 0;
  resolveCheck(req: ResolveCheckRequest, ctx: ResolutionContext): Promise<ResolveCheckResult> {
    if (req.depth === 0) this.topLevel++;
    return this.inner.resolveCheck(req, { ...ctx, resolver: this });
  }
}

async function setup(options: { listObjectsMaxResults?: number; listUsersMaxResults?: number } = {}): Promise<{ e: Engine; counter: Counting }> {
  const counter = new Counting();
  const e = new Engine({ resolver: counter, ...options });
  await e.writeModel({ dsl: DSL });
  await e.write({
    writes: [
      { user: 'user:anne', relation: 'member', object: 'group:eng' },
      { user: 'group:eng#member', relation: 'viewer', object: 'folder:root' },
      { user: 'folder:root', relation: 'parent', object: 'folder:sub' },
      ...Array.from({ length: 6 }, (_, i) => ({ user: 'folder:sub', relation: 'parent', object: `doc:${i}` })),
      { user: 'user:anne', relation: 'viewer', object: 'doc:9' },
      { user: 'user:anne', relation: 'blocked', object: 'doc:2' },
      { user: 'user:anne', relation: 'owner', object: 'doc:1' },
      { user: 'user:anne', relation: 'owner', object: 'doc:3' },
      { user: 'user:anne', relation: 'viewer', object: 'folder:late', condition: { name: 'in_hours' } },
      { user: 'folder:late', relation: 'parent', object: 'doc:7' },
    ],
  });
  return { e, counter };
}

test('answers reached only through unions need no Check', async (t) => {
  const { e, counter } = await setup();
  const r = await e.listObjects({ user: 'user:anne', relation: 'viewer', type: 'doc', context: { hour: 10 } });
  t.deepEqual(r, { objects: ['doc:0', 'doc:1', 'doc:2', 'doc:3', 'doc:4', 'doc:5', 'doc:7', 'doc:9'], truncated: false });
  t.is(counter.topLevel, 0);
  const u = await e.listUsers({ object: 'doc:4', relation: 'viewer', userFilters: [{ type: 'user' }], context: { hour: 10 } });
  t.deepEqual(u, { users: ['user:anne'], truncated: false });
  t.is(counter.topLevel, 0);
});

test('a condition that is false prunes the walk; one that cannot be evaluated makes a candidate whose Check fails', async (t) => {
  const { e, counter } = await setup();
  const late = await e.listObjects({ user: 'user:anne', relation: 'viewer', type: 'doc', context: { hour: 20 } });
  t.false(late.objects.includes('doc:7'));
  t.is(counter.topLevel, 0);
  const err = await t.throwsAsync(e.listObjects({ user: 'user:anne', relation: 'viewer', type: 'doc' }));
  t.true(err instanceof LatchkeyError && err.details?.['openfga_code'] === 2000, String(err));
  t.true(counter.topLevel > 0);
});

test('reportUndecided: an object whose Check lacks a condition parameter is reported, not listed, and the call succeeds', async (t) => {
  const { e } = await setup();
  const r = await e.listObjects({ user: 'user:anne', relation: 'viewer', type: 'doc', reportUndecided: true });
  t.deepEqual(r, { objects: ['doc:0', 'doc:1', 'doc:2', 'doc:3', 'doc:4', 'doc:5', 'doc:9'], truncated: false, undecided: [{ object: 'doc:7', missingParameters: ['hour'] }] });
  const decided = await e.listObjects({ user: 'user:anne', relation: 'viewer', type: 'doc', context: { hour: 20 }, reportUndecided: true });
  t.deepEqual(decided.undecided, [], 'a condition that evaluated is decided');
  t.false(decided.objects.includes('doc:7'));
  const wrongType = await t.throwsAsync(e.listObjects({ user: 'user:anne', relation: 'viewer', type: 'doc', context: { hour: 'ten' }, reportUndecided: true }));
  t.true(wrongType instanceof LatchkeyError && wrongType.code === 'invalid_argument', 'other condition errors still fail the call');

  // Behind an exclusion: a subtracted grant whose condition cannot be decided leaves the object undecided, never listed.
  const x = new Engine();
  await x.writeModel({ dsl: 'model\n  schema 1.1\ntype user\ntype doc\n  relations\n    define blocked: [user with in_hours]\n    define viewer: [user]\n    define safe: viewer but not blocked\ncondition in_hours(hour: int) {\n  hour >= 9 && hour < 17\n}\n' });
  await x.write({
    writes: [
      { user: 'user:anne', relation: 'viewer', object: 'doc:a' },
      { user: 'user:anne', relation: 'viewer', object: 'doc:b' },
      { user: 'user:anne', relation: 'blocked', object: 'doc:b', condition: { name: 'in_hours' } },
    ],
  });
  t.deepEqual(await x.listObjects({ user: 'user:anne', relation: 'safe', type: 'doc', reportUndecided: true }), { objects: ['doc:a'], truncated: false, undecided: [{ object: 'doc:b', missingParameters: ['hour'] }] });
  t.deepEqual((await x.listObjects({ user: 'user:anne', relation: 'safe', type: 'doc', context: { hour: 10 }, reportUndecided: true })).objects, ['doc:a'], 'blocked in hours');
  t.deepEqual((await x.listObjects({ user: 'user:anne', relation: 'safe', type: 'doc', context: { hour: 20 }, reportUndecided: true })).objects, ['doc:a', 'doc:b']);
});

test('only candidates behind an exclusion or an intersection are checked', async (t) => {
  const { e, counter } = await setup();
  const safe = await e.listObjects({ user: 'user:anne', relation: 'safe', type: 'doc', context: { hour: 20 } });
  t.deepEqual(safe.objects, ['doc:0', 'doc:1', 'doc:3', 'doc:4', 'doc:5', 'doc:9']);
  t.is(counter.topLevel, 7, 'one Check per candidate of the base (seven viewable documents)');
  counter.topLevel = 0;
  const both = await e.listObjects({ user: 'user:anne', relation: 'both', type: 'doc', context: { hour: 20 } });
  t.deepEqual(both.objects, ['doc:1', 'doc:3']);
  t.is(counter.topLevel, 7, 'candidates are the union of the operands');
});

test('the cap counts exact answers and confirmed candidates together; output is sorted', async (t) => {
  const { e } = await setup({ listObjectsMaxResults: 3 });
  const exact = await e.listObjects({ user: 'user:anne', relation: 'viewer', type: 'doc', context: { hour: 10 } });
  t.deepEqual(exact, { objects: ['doc:0', 'doc:1', 'doc:2'], truncated: true });
  const checked = await e.listObjects({ user: 'user:anne', relation: 'safe', type: 'doc', context: { hour: 10 } });
  t.is(checked.objects.length, 3);
  t.true(checked.truncated);
  t.deepEqual(checked.objects, [...checked.objects].sort());
  t.false(checked.objects.includes('doc:2'));
});

test('an exact answer deeper than the depth limit is confirmed, so Check\'s depth error is not hidden', async (t) => {
  const e = new Engine({ maxResolutionDepth: 4 });
  await e.writeModel({ dsl: DSL });
  // doc → f3 → f2 → f1 → f0 (viewer): Check of the document meets the user
  // four dispatches down, at the limit; of folder f3, three down.
  await e.write({
    writes: [
      { user: 'user:anne', relation: 'viewer', object: 'folder:f0' },
      { user: 'folder:f0', relation: 'parent', object: 'folder:f1' },
      { user: 'folder:f1', relation: 'parent', object: 'folder:f2' },
      { user: 'folder:f2', relation: 'parent', object: 'folder:f3' },
      { user: 'folder:f3', relation: 'parent', object: 'doc:deep' },
      { user: 'user:anne', relation: 'viewer', object: 'doc:near' },
    ],
  });
  const checkErr = await t.throwsAsync(e.check({ user: 'user:anne', relation: 'viewer', object: 'doc:deep' }));
  t.is((checkErr as LatchkeyError).details?.['openfga_code'], 2002);
  const listErr = await t.throwsAsync(e.listObjects({ user: 'user:anne', relation: 'viewer', type: 'doc' }));
  t.is((listErr as LatchkeyError).details?.['openfga_code'], 2002);
  t.deepEqual((await e.listObjects({ user: 'user:anne', relation: 'viewer', type: 'folder' })).objects, ['folder:f0', 'folder:f1', 'folder:f2', 'folder:f3']);
});
