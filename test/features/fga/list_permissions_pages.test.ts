/**
 * `list_permissions` in pages, on GraphQL, REST and gRPC alike: with
 * `page_size`, each page continues from the last with `continuation_token`
 * and the walk answers at its first page's revision (grants written and
 * revoked between pages change nothing in it), across object types and
 * relations; `truncated` is true exactly while a token is returned. Without
 * `page_size`, the first 1000 entries come with `truncated` and a token that
 * continues them. A token of another question is refused.
 */
import test from 'ava';
import { PROTOCOLS, TEST_ADMIN_SECRET, startTestServer, type TestServer } from '../../helpers/server.ts';

const ADMIN = { 'x-service-admin-secret': TEST_ADMIN_SECRET };
const MODEL = `model
  schema 1.1
type user
type folder
  relations
    define viewer: [user]
type doc
  relations
    define editor: [user]
    define viewer: [user] or editor
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

async function grant(tuples: Array<{ user: string; relation: string; object: string }>, revoke = false): Promise<void> {
  for (let i = 0; i < tuples.length; i += 100) {
    const r = await srv.call(revoke ? 'fga_delete_tuples' : 'fga_write_tuples', { tuples: tuples.slice(i, i + 100) }, { protocol: 'rest', headers: ADMIN });
    if (r.error !== undefined) throw new Error(JSON.stringify(r.error));
  }
}

type Entry = { object: string; relation: string };

for (const protocol of PROTOCOLS) {
  test(`${protocol}: page_size and continuation_token walk every permission at the first page's revision`, async (t) => {
    const me = await signup(`lpp-${protocol}`);
    await grant([
      ...['a', 'b', 'c'].map((id) => ({ user: me.subject, relation: 'viewer', object: `folder:${protocol}-${id}` })),
      ...['1', '2', '3', '4'].map((id) => ({ user: me.subject, relation: 'editor', object: `doc:${protocol}-${id}` })),
    ]);
    const all = await srv.call('list_permissions', {}, { protocol, headers: me.bearer });
    t.is(all.error, undefined);
    t.is(all.body!['truncated'], false);
    t.is(all.body!['continuation_token'] ?? '', '');
    const want = all.body!['permissions'] as Entry[];
    t.is(want.length, 11);

    const got: Entry[] = [];
    let token = '';
    let pages = 0;
    do {
      const r = await srv.call('list_permissions', { page_size: 2, ...(token === '' ? {} : { continuation_token: token }) }, { protocol, headers: me.bearer });
      t.is(r.error, undefined, JSON.stringify(r.error));
      const page = r.body!['permissions'] as Entry[];
      t.true(page.length <= 2);
      got.push(...page);
      token = (r.body!['continuation_token'] as string | null) ?? '';
      t.is(r.body!['truncated'], token !== '');
      if (pages === 1) {
        // Between pages: a new grant and a revoked one; the walk keeps its revision.
        await grant([{ user: me.subject, relation: 'viewer', object: `folder:${protocol}-z` }]);
        await grant([{ user: me.subject, relation: 'editor', object: `doc:${protocol}-4` }], true);
      }
      pages++;
    } while (token !== '' && pages < 50);
    t.deepEqual(got, want);
    // A new walk sees the change.
    const now = (await srv.call('list_permissions', {}, { protocol, headers: me.bearer })).body!['permissions'] as Entry[];
    t.true(now.some((e) => e.object === `folder:${protocol}-z`));
    t.false(now.some((e) => e.object === `doc:${protocol}-4`));

    // A token of another question, or made up, is refused; so is a page size out of range.
    const first = await srv.call('list_permissions', { page_size: 1 }, { protocol, headers: me.bearer });
    const tok = first.body!['continuation_token'] as string;
    const other = await srv.call('list_permissions', { page_size: 1, object_type: 'doc', continuation_token: tok }, { protocol, headers: me.bearer });
    t.is(other.error?.code, 'invalid_argument');
    t.is((await srv.call('list_permissions', { continuation_token: 'forged' }, { protocol, headers: me.bearer })).error?.code, 'invalid_argument');
    t.is((await srv.call('list_permissions', { page_size: 1001 }, { protocol, headers: me.bearer })).error?.code, 'invalid_argument');
  });
}

test('without page_size: 1000 entries with truncated and a token that continues them', async (t) => {
  const me = await signup('lpp-many');
  await grant(Array.from({ length: 1003 }, (_, i) => ({ user: me.subject, relation: 'viewer', object: `folder:many-${String(i).padStart(4, '0')}` })));
  const first = await srv.call('list_permissions', { object_type: 'folder' }, { protocol: 'rest', headers: me.bearer });
  t.is(first.error, undefined);
  t.is((first.body!['permissions'] as Entry[]).length, 1000);
  t.is(first.body!['truncated'], true);
  const token = first.body!['continuation_token'] as string;
  t.not(token, '');
  const rest = await srv.call('list_permissions', { object_type: 'folder', continuation_token: token }, { protocol: 'rest', headers: me.bearer });
  t.is(rest.error, undefined, JSON.stringify(rest.error));
  t.deepEqual((rest.body!['permissions'] as Entry[]).map((e) => e.object), ['folder:many-1000', 'folder:many-1001', 'folder:many-1002']);
  t.is(rest.body!['truncated'], false);
  t.is(rest.body!['continuation_token'], '');
});
