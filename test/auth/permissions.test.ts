import test from 'ava';
import { Engine } from '../../engine/index.ts';
import { FGA_DISABLED_MESSAGE, engineAsPermissionEngine } from '../../auth/index.ts';
import { DirectTupleEngine, STRONG_PASSWORD, errorOf, makeService } from './fixtures.ts';

test('check_permissions: order kept, relation/object echoed, subject pinned to the caller, contextual tuples not persisted', async (t) => {
  const engine = new DirectTupleEngine();
  const f = await makeService({}, { engine });
  try {
    const s = await f.auth.signup({ email: 'p@example.com', password: STRONG_PASSWORD });
    const principal = (await f.auth.authenticate({ bearer: s.response.access_token }))!;
    engine.add(principal.subject, 'viewer', 'document:2');
    engine.add('user:someone-else', 'viewer', 'document:1');
    const checks = [
      { relation: 'viewer', object: 'document:1' },
      { relation: 'viewer', object: 'document:2' },
      { relation: 'editor', object: 'document:3', contextual_tuples: [{ user: principal.subject, relation: 'editor', object: 'document:3' }] },
    ];
    const r = await f.auth.checkPermissions({ checks }, { principal });
    t.deepEqual(r.results, [
      { relation: 'viewer', object: 'document:1', allowed: false },
      { relation: 'viewer', object: 'document:2', allowed: true },
      { relation: 'editor', object: 'document:3', allowed: true },
    ]);
    // The contextual tuple was for that one call only.
    const again = await f.auth.checkPermissions({ checks: [{ relation: 'editor', object: 'document:3' }] }, { principal });
    t.false(again.results[0]!.allowed);
    t.false([...engine.tuples].some((x) => x.includes('document:3')));
    // Own subject given explicitly (type:id or bare id) is fine.
    t.true((await f.auth.checkPermissions({ checks: [checks[1]!], user: principal.subject }, { principal })).results[0]!.allowed);
    t.true((await f.auth.checkPermissions({ checks: [checks[1]!], user: principal.userId }, { principal })).results[0]!.allowed);
  } finally {
    await f.close();
  }
});

test('C5: a user naming another subject gets permission_denied; a super-admin may name anyone', async (t) => {
  const engine = new DirectTupleEngine();
  const f = await makeService({}, { engine });
  try {
    const s = await f.auth.signup({ email: 'c5@example.com', password: STRONG_PASSWORD });
    const principal = (await f.auth.authenticate({ bearer: s.response.access_token }))!;
    engine.add('user:someone-else', 'viewer', 'document:1');
    const before = engine.checks;
    const err = await errorOf(f.auth.checkPermissions({ checks: [{ relation: 'viewer', object: 'document:1' }], user: 'user:someone-else' }, { principal }));
    t.is(err.code, 'permission_denied');
    t.is(engine.checks, before, 'no check ran for a refused subject');
    t.is((await errorOf(f.auth.listPermissions({ user: 'someone-else' }, { principal }))).code, 'permission_denied');
    const admin = { kind: 'super_admin' } as const;
    t.true((await f.auth.checkPermissions({ checks: [{ relation: 'viewer', object: 'document:1' }], user: 'someone-else' }, { principal: admin })).results[0]!.allowed);
  } finally {
    await f.close();
  }
});

test('check_permissions limits and preconditions: 1..100 checks, 401 anonymous, fga disabled message', async (t) => {
  const engine = new DirectTupleEngine();
  const f = await makeService({}, { engine });
  try {
    const s = await f.auth.signup({ email: 'lim@example.com', password: STRONG_PASSWORD });
    const principal = (await f.auth.authenticate({ bearer: s.response.access_token }))!;
    const one = { relation: 'viewer', object: 'document:1' };
    t.is((await errorOf(f.auth.checkPermissions({ checks: [] }, { principal }))).code, 'invalid_argument');
    t.is((await errorOf(f.auth.checkPermissions({ checks: Array(101).fill(one) }, { principal }))).code, 'invalid_argument');
    t.is((await f.auth.checkPermissions({ checks: Array(100).fill(one) }, { principal })).results.length, 100);
    t.is((await errorOf(f.auth.checkPermissions({ checks: [one] }, {}))).code, 'unauthenticated');
    t.is((await errorOf(f.auth.checkPermissions({ checks: [one] }, { principal: { kind: 'anonymous' } }))).code, 'unauthenticated');
  } finally {
    await f.close();
  }
  const g = await makeService();
  try {
    const s = await g.auth.signup({ email: 'off@example.com', password: STRONG_PASSWORD });
    const principal = (await g.auth.authenticate({ bearer: s.response.access_token }))!;
    const err = await errorOf(g.auth.checkPermissions({ checks: [{ relation: 'viewer', object: 'document:1' }] }, { principal }));
    t.is(err.code, 'failed_precondition');
    t.is(err.message, FGA_DISABLED_MESSAGE);
    t.is((await errorOf(g.auth.listPermissions({}, { principal }))).message, FGA_DISABLED_MESSAGE);
  } finally {
    await g.close();
  }
});

test('list_permissions: everything held, narrowed by relation and type, capped at 1000 with truncated', async (t) => {
  const engine = new DirectTupleEngine();
  const f = await makeService({}, { engine });
  try {
    const s = await f.auth.signup({ email: 'lp@example.com', password: STRONG_PASSWORD });
    const principal = (await f.auth.authenticate({ bearer: s.response.access_token }))!;
    engine.add(principal.subject, 'viewer', 'document:a');
    engine.add(principal.subject, 'editor', 'document:a');
    engine.add(principal.subject, 'viewer', 'folder:f');
    const all = await f.auth.listPermissions({}, { principal });
    t.false(all.truncated);
    t.deepEqual(new Set(all.objects), new Set(['document:a', 'folder:f']));
    t.is(all.permissions.length, 3);
    const narrowed = await f.auth.listPermissions({ relation: 'viewer', object_type: 'document' }, { principal });
    t.deepEqual(narrowed, { objects: ['document:a'], permissions: [{ object: 'document:a', relation: 'viewer' }], undecided_permissions: [], truncated: false, continuation_token: '', deadline_exceeded: false });
    for (let i = 0; i < 1005; i++) engine.add(principal.subject, 'viewer', `document:d${String(i).padStart(4, '0')}`);
    const capped = await f.auth.listPermissions({}, { principal });
    t.true(capped.truncated);
    t.is(capped.permissions.length, 1000);
    // The capped answer carries the token that continues it: the 8 entries left.
    t.not(capped.continuation_token, '');
    const rest = await f.auth.listPermissions({ continuation_token: capped.continuation_token }, { principal });
    t.is(rest.permissions.length, 1008 - 1000);
    t.false(rest.truncated);
    t.is((await errorOf(f.auth.listPermissions({ object_type: 'nosuchtype' }, { principal }))).code, 'invalid_argument');
  } finally {
    await f.close();
  }
});

test('with the real FGA engine: computed and tuple-to-userset relations, contextual tuples, and list_permissions across the model', async (t) => {
  const fga = new Engine();
  await fga.writeModel({
    dsl: `model
  schema 1.1
type user
type folder
  relations
    define viewer: [user]
type document
  relations
    define parent: [folder]
    define editor: [user]
    define viewer: [user] or editor or viewer from parent
`,
  });
  const f = await makeService({}, { engine: engineAsPermissionEngine(fga) });
  try {
    const s = await f.auth.signup({ email: 'real@example.com', password: STRONG_PASSWORD });
    const principal = (await f.auth.authenticate({ bearer: s.response.access_token }))!;
    const me = principal.subject;
    await fga.write({
      writes: [
        { user: me, relation: 'viewer', object: 'folder:f' },
        { user: 'folder:f', relation: 'parent', object: 'document:d' },
        { user: me, relation: 'editor', object: 'document:e' },
      ],
    });
    const r = await f.auth.checkPermissions(
      {
        checks: [
          { relation: 'viewer', object: 'document:d' },
          { relation: 'viewer', object: 'document:e' },
          { relation: 'editor', object: 'document:d' },
          { relation: 'viewer', object: 'document:x', contextual_tuples: [{ user: 'folder:f', relation: 'parent', object: 'document:x' }] },
        ],
      },
      { principal },
    );
    t.deepEqual(r.results.map((x) => x.allowed), [true, true, false, true]);
    t.false((await f.auth.checkPermissions({ checks: [{ relation: 'viewer', object: 'document:x' }] }, { principal })).results[0]!.allowed);
    const viewer = await f.auth.listPermissions({ relation: 'viewer', object_type: 'document' }, { principal });
    t.deepEqual(viewer.objects, ['document:d', 'document:e']);
    const all = await f.auth.listPermissions({}, { principal });
    t.deepEqual(
      [...all.permissions].sort((a, b) => `${a.object}#${a.relation}`.localeCompare(`${b.object}#${b.relation}`)),
      [
        { object: 'document:d', relation: 'viewer' },
        { object: 'document:e', relation: 'editor' },
        { object: 'document:e', relation: 'viewer' },
        { object: 'folder:f', relation: 'viewer' },
      ],
    );
    // A malformed question is an error, never a silent "false".
    t.is((await errorOf(f.auth.checkPermissions({ checks: [{ relation: 'owner', object: 'document:d' }] }, { principal }))).code, 'invalid_argument');
    // session's required_relations go through the same engine.
    const ok = await f.auth.session({ required_relations: [{ relation: 'viewer', object: 'document:d' }] }, { principal, sessionCookie: s.session!.token });
    t.truthy(ok.response.access_token);
    t.is((await errorOf(f.auth.session({ required_relations: [{ relation: 'editor', object: 'document:d' }] }, { principal, sessionCookie: ok.session!.token }))).reason, 'relation_denied');
  } finally {
    await f.close();
  }
});
