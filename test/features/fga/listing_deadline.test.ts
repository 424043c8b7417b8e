/**
 * The listing deadline on the listing surfaces: `list_permissions`
 * (Permissions, through the engine adapter the server uses) and
 * `fga_list_users` answer a page that runs out of time with what they found
 * in time, `deadline_exceeded: true` and a `continuation_token` that
 * continues it; calling on with the token reassembles the whole answer, with
 * nothing twice and nothing missed. The store's reads are slowed (a real
 * memory store behind a delaying wrapper) and the deadline shortened, so the
 * deadline passes on every run without depending on the machine's speed.
 */
import test from 'ava';
import { Engine, MemoryStore, type TupleKey, type TupleStore } from '../../../engine/index.ts';
import { Permissions, engineAsPermissionEngine } from '../../../auth/index.ts';
import { fgaListUsers } from '../../../admin/fga_admin.ts';

const MODEL = `model
  schema 1.1
type user
type group
  relations
    define member: [user]
type doc
  relations
    define viewer: [user, group#member]
`;

/** `inner`, with each forward and reverse read delayed by `ms`. */
function slowed(inner: TupleStore, ms: number): TupleStore {
  const slow = new Set(['readObjectRelations', 'readStartingWithUsers', 'readUserTuples']);
  return new Proxy(inner, {
    get(target, prop) {
      const v = Reflect.get(target, prop, target) as unknown;
      if (typeof v !== 'function') return v;
      const f = (v as (...a: unknown[]) => unknown).bind(target);
      if (typeof prop === 'string' && slow.has(prop)) {
        return async (...args: unknown[]) => {
          await new Promise((r) => setTimeout(r, ms));
          return f(...args);
        };
      }
      return f;
    },
  });
}

async function seeded(): Promise<{ engine: Engine; inner: MemoryStore }> {
  const inner = new MemoryStore();
  const engine = new Engine({ store: slowed(inner, 60) });
  await engine.writeModel({ dsl: MODEL });
  const writes: TupleKey[] = [{ user: 'user:anne', relation: 'member', object: 'group:g' }];
  for (let i = 0; i < 30; i++) writes.push({ user: i % 2 === 0 ? 'user:anne' : 'group:g#member', relation: 'viewer', object: `doc:${String(i).padStart(2, '0')}` });
  await engine.write({ writes });
  return { engine, inner };
}

test('list_permissions: a page past the listing deadline says so, holds what was found, and its token continues to the whole answer', async (t) => {
  const { engine } = await seeded();
  const permissions = new Permissions(engineAsPermissionEngine(engine), { listingDeadlineMs: 20 });
  const admin = { kind: 'super_admin' } as const;
  const want = Array.from({ length: 30 }, (_, i) => `doc:${String(i).padStart(2, '0')}`);
  const first = await permissions.list({ user: 'user:anne', object_type: 'doc', relation: 'viewer', page_size: 7 }, admin);
  t.true(first.deadline_exceeded);
  t.true(first.permissions.length < 7);
  t.not(first.continuation_token, '');
  t.true(first.truncated);
  const got = first.permissions.map((p) => p.object);
  let token = first.continuation_token;
  let stopped = 1;
  for (let calls = 0; token !== '' && calls < 200; calls++) {
    const page = await permissions.list({ user: 'user:anne', object_type: 'doc', relation: 'viewer', page_size: 7, continuation_token: token }, admin);
    if (page.deadline_exceeded) stopped++;
    t.is(page.truncated, page.continuation_token !== '');
    got.push(...page.permissions.map((p) => p.object));
    token = page.continuation_token;
  }
  t.is(token, '');
  t.deepEqual(got, want);
  t.true(stopped >= 1);
});

test('fga_list_users: a page past the listing deadline says so, holds what was found, and its token continues to the whole answer', async (t) => {
  const { engine } = await seeded();
  const input = { object: 'doc:00', relation: 'viewer', user_type: 'user', page_size: 10 };
  const first = await fgaListUsers(engine, input, { deadlineMs: 20 });
  t.true(first.deadline_exceeded);
  t.deepEqual(first.users, []);
  t.not(first.continuation_token, '');
  const got = [...first.users];
  let token = first.continuation_token;
  for (let calls = 0; token !== '' && calls < 200; calls++) {
    const page = await fgaListUsers(engine, { ...input, continuation_token: token }, { deadlineMs: 20 });
    got.push(...page.users);
    token = page.continuation_token;
  }
  t.is(token, '');
  t.deepEqual(got, ['user:anne']);
  // Without a deadline to meet, the answer is whole and says nothing of one.
  const whole = await fgaListUsers(engine, { object: 'doc:00', relation: 'viewer', user_type: 'user' });
  t.deepEqual(whole, { users: ['user:anne'], continuation_token: '', deadline_exceeded: false });
});
