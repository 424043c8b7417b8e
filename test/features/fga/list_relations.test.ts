/**
 * `list_relations` over GraphQL, REST and gRPC alike: every relation the
 * caller holds on one object (direct, computed, through a parent and a
 * group), a conditional grant listed only when `context` satisfies its
 * condition, `user` under check_permissions' trust rules (the caller itself,
 * anyone for a super-admin, 403 for another user), 401 without credentials,
 * 400 for a malformed object or an unknown type.
 */
import test from 'ava';
import { PROTOCOLS, TEST_ADMIN_SECRET, startTestServer, type TestServer } from '../../helpers/server.ts';

const ADMIN = { 'x-service-admin-secret': TEST_ADMIN_SECRET };
const MODEL = `model
  schema 1.1
type user
type group
  relations
    define member: [user]
type folder
  relations
    define viewer: [user]
type doc
  relations
    define parent: [folder]
    define owner: [user]
    define editor: [user, group#member] or owner
    define viewer: [user, user with in_hours] or editor or viewer from parent
    define auditor: [user]
condition in_hours(hour: int) {
  hour >= 9 && hour < 18
}
`;

let srv: TestServer;
test.before(async () => {
  srv = await startTestServer();
  const r = await srv.call('fga_write_model', { dsl: MODEL }, { protocol: 'rest', headers: ADMIN });
  if (r.status !== 200) throw new Error(JSON.stringify(r.error));
});
test.after.always(async () => {
  await srv?.close();
});

async function signup(name: string): Promise<{ subject: string; bearer: Record<string, string> }> {
  const r = await srv.call('signup', { email: `${name}@example.com`, password: 'a long enough passphrase' }, { protocol: 'rest' });
  if (r.status !== 200) throw new Error(JSON.stringify(r.error));
  return { subject: `user:${(r.body!['user'] as { id: string }).id}`, bearer: { authorization: `Bearer ${r.body!['access_token'] as string}` } };
}

for (const protocol of PROTOCOLS) {
  test(`${protocol}: list_relations answers every relation held, in the model's order, under check_permissions' trust rules`, async (t) => {
    const anne = await signup(`lr-anne-${protocol}`);
    const bob = await signup(`lr-bob-${protocol}`);
    const doc = `doc:${protocol}`;
    const w = await srv.call('fga_write_tuples', {
      tuples: [
        { user: `folder:${protocol}`, relation: 'parent', object: doc },
        { user: anne.subject, relation: 'viewer', object: `folder:${protocol}` },
        { user: anne.subject, relation: 'member', object: `group:${protocol}` },
        { user: `group:${protocol}#member`, relation: 'editor', object: doc },
        { user: bob.subject, relation: 'owner', object: doc },
        { user: bob.subject, relation: 'viewer', object: `doc:${protocol}-cond`, condition: { name: 'in_hours' } },
      ],
    }, { protocol: 'rest', headers: ADMIN });
    t.is(w.error, undefined);

    const mine = await srv.call('list_relations', { object: doc }, { protocol, headers: anne.bearer });
    t.is(mine.error, undefined);
    t.deepEqual(mine.body, { relations: ['editor', 'viewer'] });
    // `user` naming the caller itself is the same question.
    const self = await srv.call('list_relations', { object: doc, user: anne.subject }, { protocol, headers: anne.bearer });
    t.deepEqual(self.body, { relations: ['editor', 'viewer'] });
    // Another user's relations: refused to a user, answered to a super-admin.
    const foreign = await srv.call('list_relations', { object: doc, user: bob.subject }, { protocol, headers: anne.bearer });
    t.is(foreign.error?.code, 'permission_denied');
    const admin = await srv.call('list_relations', { object: doc, user: bob.subject }, { protocol, headers: ADMIN });
    t.deepEqual(admin.body, { relations: ['owner', 'editor', 'viewer'] });
    const adminNoUser = await srv.call('list_relations', { object: doc }, { protocol, headers: ADMIN });
    t.is(adminNoUser.error?.code, 'invalid_argument');
    // Nothing held: an empty list.
    const none = await srv.call('list_relations', { object: `doc:${protocol}-other` }, { protocol, headers: anne.bearer });
    t.deepEqual(none.body, { relations: [] });

    // A conditional grant: listed only when the context satisfies it; without its parameter it is not listed (not proven).
    const cond = `doc:${protocol}-cond`;
    t.deepEqual((await srv.call('list_relations', { object: cond, context: { hour: 10 } }, { protocol, headers: bob.bearer })).body, { relations: ['viewer'] });
    t.deepEqual((await srv.call('list_relations', { object: cond, context: { hour: 20 } }, { protocol, headers: bob.bearer })).body, { relations: [] });
    t.deepEqual((await srv.call('list_relations', { object: cond }, { protocol, headers: bob.bearer })).body, { relations: [] });
    const badContext = await srv.call('list_relations', { object: cond, context: { hour: 'ten' } }, { protocol, headers: bob.bearer });
    t.is(badContext.error?.code, 'invalid_argument');

    // Refusals.
    t.is((await srv.call('list_relations', { object: doc }, { protocol })).error?.code, 'unauthenticated');
    t.is((await srv.call('list_relations', { object: 'no-colon' }, { protocol, headers: anne.bearer })).error?.code, 'invalid_argument');
    const unknown = await srv.call('list_relations', { object: 'planet:earth' }, { protocol, headers: anne.bearer });
    t.is(unknown.error?.code, 'invalid_argument');
    t.is(unknown.error?.reason, 'type_not_found');
  });
}
