/**
 * Security matrix C6 through the running server, on every SQL backend: a
 * tuple deleted is denied by the very next check (no cached allow survives
 * it, also after the allow was served from the cache), and after the model is
 * replaced, checks follow the new model at once: a relation the new model no
 * longer has is refused explicitly, never answered from the old one.
 */
import test from 'ava';
import { sqlBackends } from '../../helpers/databases.ts';
import { PROTOCOLS, TEST_ADMIN_SECRET, startTestServer, type TestServer } from '../../helpers/server.ts';

const admin = { 'x-service-admin-secret': TEST_ADMIN_SECRET };
const V1 = 'model\n  schema 1.1\ntype user\ntype doc\n  relations\n    define viewer: [user]\n    define editor: [user]\n';
const V2 = 'model\n  schema 1.1\ntype user\ntype doc\n  relations\n    define editor: [user]\n    define viewer: editor\n';
const V3 = 'model\n  schema 1.1\ntype user\ntype doc\n  relations\n    define editor: [user]\n';

async function ok(srv: TestServer, op: string, input: Record<string, unknown>): Promise<Record<string, unknown>> {
  const r = await srv.call(op, input, { protocol: 'rest', headers: admin });
  if (r.error) throw new Error(`${op}: ${r.error.code} ${r.error.message}`);
  return r.body!;
}

for (const backend of sqlBackends()) {
  test(`C6: a delete is seen by the next check, and a replaced model is followed at once (${backend})`, async (t) => {
    const srv = await startTestServer({}, { backend });
    t.teardown(() => srv.close());
    await ok(srv, 'fga_write_model', { dsl: V1 });
    const check = async (relation: string, protocol: (typeof PROTOCOLS)[number] = 'rest') => {
      const r = await srv.call('check_permissions', { user: 'user:ann', checks: [{ relation, object: 'doc:1' }] }, { protocol, headers: admin });
      return r.error ? r.error : (r.body!['results'] as { allowed: boolean }[])[0]!.allowed;
    };
    for (let round = 0; round < 3; round++) {
      await ok(srv, 'fga_write_tuples', { tuples: [{ user: 'user:ann', relation: 'viewer', object: 'doc:1' }] });
      for (const protocol of PROTOCOLS) t.is(await check('viewer', protocol), true, `allowed (${protocol})`);
      await ok(srv, 'fga_delete_tuples', { tuples: [{ user: 'user:ann', relation: 'viewer', object: 'doc:1' }] });
      for (const protocol of PROTOCOLS) t.is(await check('viewer', protocol), false, `denied right after the delete (${protocol}, round ${round})`);
    }

    // The model changes meaning: viewer now comes from editor.
    await ok(srv, 'fga_write_tuples', { tuples: [{ user: 'user:ann', relation: 'viewer', object: 'doc:1' }] });
    t.is(await check('viewer'), true);
    await ok(srv, 'fga_write_model', { dsl: V2 });
    t.is(await check('viewer'), false, 'the direct viewer tuple no longer grants under the new model');
    await ok(srv, 'fga_write_tuples', { tuples: [{ user: 'user:ann', relation: 'editor', object: 'doc:1' }] });
    t.is(await check('viewer'), true, 'viewer through editor');

    // The relation disappears: refused explicitly, not answered from the old model.
    await ok(srv, 'fga_write_model', { dsl: V3 });
    for (const protocol of PROTOCOLS) {
      const answer = await check('viewer', protocol);
      t.is(typeof answer, 'object', `a check of a removed relation is an error (${protocol})`);
      t.is((answer as { code: string }).code, 'invalid_argument', protocol);
    }
    t.is(await check('editor'), true);
  });
}
