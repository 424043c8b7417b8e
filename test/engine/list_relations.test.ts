/**
 * Engine.listRelations: the relations held on one object in the model's
 * order, agreeing with Check relation by relation; `relations` narrows the
 * question; a condition lacking parameters leaves its relation undecided
 * (never held); unknown types and relations are refused with OpenFGA's codes.
 */
import test from 'ava';
import { Engine } from '../../engine/index.ts';

const DSL = `model
  schema 1.1
type user
type doc
  relations
    define owner: [user]
    define editor: [user] or owner
    define viewer: [user with in_hours] or editor
    define banned: [user]
    define reader: viewer but not banned
condition in_hours(hour: int) {
  hour >= 9 && hour < 18
}
`;

async function setup(): Promise<Engine> {
  const e = new Engine();
  await e.writeModel({ dsl: DSL });
  await e.write({
    writes: [
      { user: 'user:anne', relation: 'owner', object: 'doc:1' },
      { user: 'user:anne', relation: 'banned', object: 'doc:1' },
      { user: 'user:bob', relation: 'viewer', object: 'doc:1', condition: { name: 'in_hours' } },
    ],
  });
  return e;
}

test('listRelations agrees with Check for every relation of the type', async (t) => {
  const e = await setup();
  const all = ['owner', 'editor', 'viewer', 'banned', 'reader'];
  for (const user of ['user:anne', 'user:bob', 'user:carl']) {
    const got = await e.listRelations({ user, object: 'doc:1', context: { hour: 10 } });
    const want: string[] = [];
    for (const relation of all) if ((await e.check({ user, relation, object: 'doc:1', context: { hour: 10 } })).allowed) want.push(relation);
    t.deepEqual(got, { relations: want, undecided: [] }, user);
  }
  t.deepEqual((await e.listRelations({ user: 'user:anne', object: 'doc:1' })).relations, ['owner', 'editor', 'viewer', 'banned']);
});

test('listRelations: a missing condition parameter leaves the relation undecided, not held', async (t) => {
  const e = await setup();
  const r = await e.listRelations({ user: 'user:bob', object: 'doc:1' });
  t.deepEqual(r.relations, []);
  t.deepEqual(r.undecided.map((u) => [u.relation, u.missingParameters]), [['viewer', ['hour']], ['reader', ['hour']]]);
  t.deepEqual((await e.listRelations({ user: 'user:bob', object: 'doc:1', context: { hour: 20 } })).relations, []);
});

test('listRelations: `relations` narrows the question; unknown types and relations are refused', async (t) => {
  const e = await setup();
  t.deepEqual((await e.listRelations({ user: 'user:anne', object: 'doc:1', relations: ['reader', 'editor'] })).relations, ['editor']);
  const type = await t.throwsAsync(e.listRelations({ user: 'user:anne', object: 'folder:1' }));
  t.is((type as { reason?: string }).reason, 'type_not_found');
  const rel = await t.throwsAsync(e.listRelations({ user: 'user:anne', object: 'doc:1', relations: ['nope'] }));
  t.is((rel as { reason?: string }).reason, 'relation_not_found');
  const obj = await t.throwsAsync(e.listRelations({ user: 'user:anne', object: 'doc' }));
  t.is((obj as { code?: string }).code, 'invalid_argument');
  const user = await t.throwsAsync(e.listRelations({ user: 'anne', object: 'doc:1' }));
  t.is((user as { code?: string }).code, 'invalid_argument');
});
