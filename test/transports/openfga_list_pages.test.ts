/**
 * The OpenFGA API's list endpoints with Latchkey's optional paging fields:
 * ListObjects and ListUsers bodies take `page_size` and
 * `continuation_token` and then answer `continuation_token`, each walk at
 * its first page's revision (a tuple written between pages is not listed,
 * one deleted still is); without them the answer is OpenFGA's (no
 * `continuation_token`, capped at the list limit); StreamedListObjects
 * streams every result, past the list limit.
 */
import test from 'ava';
import { startTestServer, type TestServer } from '../helpers/server.ts';

const KEY = 'openfga-pages-key-0123456789';
let srv: TestServer;
let store: string;

async function call(path: string, body: unknown): Promise<{ status: number; text: string; json: Record<string, unknown> }> {
  const res = await fetch(`${srv.httpUrl}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${KEY}` }, body: JSON.stringify(body) });
  const text = await res.text();
  let json: Record<string, unknown> = {};
  try {
    json = JSON.parse(text) as Record<string, unknown>;
  } catch {
    // a stream: several JSON lines
  }
  return { status: res.status, text, json };
}

test.before(async () => {
  srv = await startTestServer({ 'openfga-preshared-keys': KEY });
  store = ((await call('/stores', { name: 'pages' })).json['id'] as string);
  const model = await call(`/stores/${store}/authorization-models`, {
    schema_version: '1.1',
    type_definitions: [{ type: 'user' }, { type: 'doc', relations: { viewer: { this: {} } }, metadata: { relations: { viewer: { directly_related_user_types: [{ type: 'user' }] } } } }],
  });
  if (model.status !== 201) throw new Error(model.text);
  // 1003 documents for anne; doc:0000 is also bob's and carl's.
  for (let i = 0; i < 1003; i += 100) {
    const writes = Array.from({ length: Math.min(100, 1003 - i) }, (_, j) => ({ user: 'user:anne', relation: 'viewer', object: `doc:${String(i + j).padStart(4, '0')}` }));
    const w = await call(`/stores/${store}/write`, { writes: { tuple_keys: writes } });
    if (w.status !== 200) throw new Error(w.text);
  }
  await call(`/stores/${store}/write`, { writes: { tuple_keys: [{ user: 'user:bob', relation: 'viewer', object: 'doc:0000' }, { user: 'user:carl', relation: 'viewer', object: 'doc:0000' }] } });
});
test.after.always(async () => {
  await srv?.close();
});

test('ListObjects: without paging fields OpenFGA\'s capped answer; with them pages at one revision that reassemble every object', async (t) => {
  const q = { type: 'doc', relation: 'viewer', user: 'user:anne' };
  const plain = await call(`/stores/${store}/list-objects`, q);
  t.is(plain.status, 200);
  t.deepEqual(Object.keys(plain.json), ['objects']);
  t.is((plain.json['objects'] as string[]).length, 1000);

  const got: string[] = [];
  let token = '';
  let pages = 0;
  do {
    const r = await call(`/stores/${store}/list-objects`, { ...q, page_size: 400, ...(token === '' ? {} : { continuation_token: token }) });
    t.is(r.status, 200, r.text);
    got.push(...(r.json['objects'] as string[]));
    token = r.json['continuation_token'] as string;
    if (pages === 0) {
      await call(`/stores/${store}/write`, { writes: { tuple_keys: [{ user: 'user:anne', relation: 'viewer', object: 'doc:9999' }] }, deletes: { tuple_keys: [{ user: 'user:anne', relation: 'viewer', object: 'doc:1002' }] } });
    }
    pages++;
  } while (token !== '');
  t.is(pages, 3);
  t.is(got.length, 1003);
  t.is(new Set(got).size, 1003);
  t.is(got[got.length - 1], 'doc:1002');
  t.false(got.includes('doc:9999'));
  // Put it back.
  await call(`/stores/${store}/write`, { writes: { tuple_keys: [{ user: 'user:anne', relation: 'viewer', object: 'doc:1002' }] }, deletes: { tuple_keys: [{ user: 'user:anne', relation: 'viewer', object: 'doc:9999' }] } });

  // Bad paging fields: OpenFGA's validation errors.
  t.is((await call(`/stores/${store}/list-objects`, { ...q, page_size: 0 })).status, 400);
  t.is((await call(`/stores/${store}/list-objects`, { ...q, page_size: 1001 })).status, 400);
  t.is((await call(`/stores/${store}/list-objects`, { ...q, continuation_token: 'forged' })).status, 400);
});

test.serial('StreamedListObjects streams every result, past the list limit', async (t) => {
  const r = await call(`/stores/${store}/streamed-list-objects`, { type: 'doc', relation: 'viewer', user: 'user:anne' });
  t.is(r.status, 200);
  const lines = r.text.trim().split('\n').map((l) => (JSON.parse(l) as { result: { object: string } }).result.object);
  t.is(lines.length, 1003);
  t.is(new Set(lines).size, 1003);
});

test('ListUsers: paged with continuation_token; without the fields OpenFGA\'s answer', async (t) => {
  const q = { object: { type: 'doc', id: '0000' }, relation: 'viewer', user_filters: [{ type: 'user' }] };
  const plain = await call(`/stores/${store}/list-users`, q);
  t.deepEqual(Object.keys(plain.json), ['users']);
  t.is((plain.json['users'] as unknown[]).length, 3);
  const p1 = await call(`/stores/${store}/list-users`, { ...q, page_size: 2 });
  t.deepEqual(p1.json['users'], [{ object: { type: 'user', id: 'anne' } }, { object: { type: 'user', id: 'bob' } }]);
  const p2 = await call(`/stores/${store}/list-users`, { ...q, page_size: 2, continuation_token: p1.json['continuation_token'] });
  t.deepEqual(p2.json, { users: [{ object: { type: 'user', id: 'carl' } }], continuation_token: '' });
});
