/**
 * Validating a token or a session in an organization answers the membership
 * as it is at that call, however often the same token or cookie was
 * validated before (on SQLite the second and later calls are answered from
 * the membership kept in process, auth/org_store.ts `memberNow`): a role
 * changed since the token was issued makes it stale, `validate_session`
 * reports the role of now, and a membership or organization removed, by the
 * server or by another process writing to the same file, refuses both at the
 * next call.
 */
import test from 'ava';
import { DatabaseSync } from 'node:sqlite';
import { sqlBackends } from '../../helpers/databases.ts';
import { PROTOCOLS, startTestServer, sessionCookieOf, type TestServer } from '../../helpers/server.ts';

const PASSWORD = 'a long enough passphrase';

async function ok(srv: TestServer, op: string, input: Record<string, unknown>, headers: Record<string, string> = {}): Promise<Record<string, unknown>> {
  const r = await srv.call(op, input, { protocol: 'rest', headers });
  if (r.error !== undefined) throw new Error(`${op}: ${JSON.stringify(r.error)}`);
  return r.body!;
}

for (const backend of sqlBackends()) {
  test(`validation in an organization answers the membership of now, call after call (${backend})`, async (t) => {
    const srv = await startTestServer({}, { backend });
    // On SQLite, another connection to the server's file: to SQLite what another process's would be.
    const other = backend === 'sqlite' ? new DatabaseSync(srv.database.url.replace(/^sqlite:/, ''), { timeout: 5000 }) : undefined;
    try {
      const owner = await ok(srv, 'signup', { email: `owner-${backend}@example.com`, password: PASSWORD });
      const ownerBearer = { authorization: `Bearer ${String(owner['access_token'])}` };
      const orgId = String((await ok(srv, 'create_organization', { name: 'Acme' }, ownerBearer))['id']);
      const signedUp = await srv.call('signup', { email: `member-${backend}@example.com`, password: PASSWORD }, { protocol: 'rest' });
      const memberId = (signedUp.body!['user'] as { id: string }).id;
      await ok(srv, 'add_organization_member', { organization_id: orgId, user_id: memberId }, ownerBearer);
      const switched = await srv.call('switch_organization', { organization_id: orgId }, { protocol: 'rest', headers: { cookie: `cookie_session=${sessionCookieOf(signedUp)}` } });
      t.is(switched.error, undefined);
      const access = String(switched.body!['access_token']);
      const cookie = sessionCookieOf(switched);

      const jwt = (protocol: (typeof PROTOCOLS)[number]) => srv.call('validate_jwt_token', { token_type: 'access_token', token: access }, { protocol });
      const session = (protocol: (typeof PROTOCOLS)[number]) => srv.call('validate_session', { cookie }, { protocol });
      for (let round = 0; round < 3; round++) {
        for (const protocol of PROTOCOLS) {
          const v = await jwt(protocol);
          t.is(v.error, undefined, `${protocol}, round ${round}`);
          t.deepEqual((v.body!['claims'] as Record<string, unknown>)['org_roles'], ['member']);
          const s = await session(protocol);
          t.is(s.body?.['org_id'], orgId, `${protocol}, round ${round}`);
          t.deepEqual(s.body?.['org_roles'], ['member']);
        }
      }

      // A role changed since the token was issued: the token is stale, the session reports the role of now.
      await ok(srv, 'update_organization_member', { organization_id: orgId, user_id: memberId, role: 'admin' }, ownerBearer);
      for (const protocol of PROTOCOLS) {
        t.is((await jwt(protocol)).error?.reason, 'stale_organization', protocol);
        t.deepEqual((await session(protocol)).body?.['org_roles'], ['admin'], protocol);
      }

      if (other !== undefined) {
        // Changes committed by another process are seen at the next call.
        other.prepare('UPDATE organization_members SET role = ? WHERE organization_id = ? AND user_id = ?').run('member', orgId, memberId);
        for (const protocol of PROTOCOLS) {
          t.is((await jwt(protocol)).error, undefined, `the role restored elsewhere, over ${protocol}`);
          t.deepEqual((await session(protocol)).body?.['org_roles'], ['member'], protocol);
        }
        other.prepare('UPDATE organizations SET deleted_at = ? WHERE id = ?').run(Math.floor(Date.now() / 1000), orgId);
        for (const protocol of PROTOCOLS) {
          t.is((await jwt(protocol)).error?.reason, 'stale_organization', `the organization deleted elsewhere, over ${protocol}`);
          t.is((await session(protocol)).error?.reason, 'stale_organization', protocol);
        }
        other.prepare('UPDATE organizations SET deleted_at = NULL WHERE id = ?').run(orgId);
        t.is((await jwt('rest')).error, undefined, 'the organization restored elsewhere');
      }

      // The membership removed by the server: both are refused at the next call.
      await ok(srv, 'remove_organization_member', { organization_id: orgId, user_id: memberId }, ownerBearer);
      for (const protocol of PROTOCOLS) {
        t.is((await jwt(protocol)).error?.reason, 'stale_organization', protocol);
        t.is((await session(protocol)).error?.reason, 'stale_organization', protocol);
      }
    } finally {
      other?.close();
      await srv.close();
    }
  });
}
